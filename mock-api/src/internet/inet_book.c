/* inet_book: the internet's stubs and journal (inet_book.h); its sites and
 * upstream patterns are inet_site.c's.
 *
 * Stubs are kept in match order in an array behind a read-write lock: a
 * connection takes the read lock for the scan and a reference to the stub
 * it answers with, so an admin's delete or clear never frees one in use. */
#define _GNU_SOURCE
#include "internet/inet_book_internal.h"
#include "internet/inet_tape.h"
#include "internet/inet_http.h"

#include "sbx/strbuf.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

typedef enum path_kind { PATH_ANY, PATH_EXACT, PATH_PREFIX, PATH_REGEX } path_kind;

/* A stub with its match (the public part first: the servers see that). */
typedef struct stub {
	mock_inet_stub pub;
	atomic_int refs;
	char *tenant;          /* NULL: every tenant's sandboxes */
	char *host;            /* lower case; "*.x" a wildcard */
	bool wildcard;
	int scheme;            /* 0 any, 1 http, 2 https */
	char *method;          /* NULL: any */
	path_kind pk;
	char *path;
	regex_t re;
	char *hname, *hvalue;  /* a header it needs (value NULL: present) */
	cJSON *view;
} stub;

static const char *const fault_names[] = {"", "reset", "hang", "close_mid_body", "slow_body"};

const char *mock_inet_fault_name(mock_inet_fault f)
{
	return (size_t)f < sizeof(fault_names) / sizeof(fault_names[0]) ? fault_names[f] : "";
}

mock_inet_book *mock_inet_book_new(void)
{
	mock_inet_book *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	pthread_rwlock_init(&b->slock, NULL);
	pthread_rwlock_init(&b->tlock, NULL);
	pthread_mutex_init(&b->jlock, NULL);
	b->next_id = 1;
	b->jseq = 0;
	return b;
}

static void stub_free(stub *s)
{
	if (s == NULL)
		return;
	if (s->pk == PATH_REGEX)
		regfree(&s->re);
	free(s->tenant);
	free(s->host);
	free(s->method);
	free(s->path);
	free(s->hname);
	free(s->hvalue);
	free(s->pub.head);
	free(s->pub.body);
	cJSON_Delete(s->view);
	free(s);
}

void mock_inet_stub_put(mock_inet_stub *pub)
{
	stub *s = (stub *)pub;

	if (s != NULL && atomic_fetch_sub(&s->refs, 1) == 1)
		stub_free(s);
}

static void journal_entry_free(mock_inet_jentry *e)
{
	free(e->text);
	memset(e, 0, sizeof(*e));
}

void mock_inet_book_free(mock_inet_book *b)
{
	if (b == NULL)
		return;
	mock_inet_stubs_clear(b);
	free(b->stubs);
	free(b->keys);
	for (size_t i = 0; i < MOCK_INET_JOURNAL_SIZE; i++)
		journal_entry_free(&b->journal[i]);
	mock_inet_sites_free(b);
	pthread_rwlock_destroy(&b->slock);
	pthread_rwlock_destroy(&b->tlock);
	pthread_mutex_destroy(&b->jlock);
	free(b);
}

void mock_inet_book_set_tenant_fn(mock_inet_book *b, mock_inet_tenant_fn fn, void *arg)
{
	pthread_rwlock_wrlock(&b->tlock); /* waits out every lookup under way */
	b->tenant_fn = fn;
	b->tenant_arg = arg;
	pthread_rwlock_unlock(&b->tlock);
}

void mock_inet_book_tenant(mock_inet_book *b, const char *sandbox, char *out, size_t cap)
{
	out[0] = '\0';
	if (sandbox[0] == '\0')
		return;
	pthread_rwlock_rdlock(&b->tlock);
	if (b->tenant_fn != NULL)
		b->tenant_fn(b->tenant_arg, sandbox, out, cap);
	pthread_rwlock_unlock(&b->tlock);
}

/* ---- parsing ---- */

/* Every member of o is one of keys (NULL-terminated): a typo ("pth")
 * would otherwise leave a match wider than asked. */
static int keys_known(const cJSON *o, const char *const *keys, size_t idx, const char *where, sbx_err *err)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, o) {
		sbx_strbuf list = SBX_STRBUF_INIT;
		size_t i;

		for (i = 0; keys[i] != NULL && strcmp(keys[i], it->string) != 0; i++)
			;
		if (keys[i] != NULL)
			continue;
		for (i = 0; keys[i] != NULL; i++)
			sbx_strbuf_printf(&list, "%s%s", i > 0 ? ", " : "", keys[i]);
		sbx_err_set(err, "stub %zu: %s%.40s is not a known key (known: %s)", idx, where, it->string,
			    sbx_strbuf_str(&list));
		sbx_strbuf_free(&list);
		return -1;
	}
	return 0;
}

/* An optional string member into *out (a copy; NULL when absent). */
static int opt_str(const cJSON *o, const char *key, char **out, size_t max, size_t idx, const char *where,
		   sbx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*out = NULL;
	if (v == NULL)
		return 0;
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0' || strlen(v->valuestring) > max) {
		sbx_err_set(err, "stub %zu: %s%s must be a string of 1-%zu bytes", idx, where, key, max);
		return -1;
	}
	*out = strdup(v->valuestring);
	if (*out == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	return 0;
}

static int opt_int(const cJSON *o, const char *key, int *out, int lo, int hi, size_t idx, const char *where,
		   sbx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (v == NULL)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int)v->valuedouble || v->valuedouble < lo ||
	    v->valuedouble > hi) {
		sbx_err_set(err, "stub %zu: %s%s must be an integer in [%d, %d]", idx, where, key, lo, hi);
		return -1;
	}
	*out = (int)v->valuedouble;
	return 0;
}

/* A host name pattern: letters, digits, '.', '-', '_', optionally "*."
 * first; lower-cased in place. */
static bool host_pattern_ok(char *h)
{
	char *p = strncmp(h, "*.", 2) == 0 ? h + 2 : h;

	if (*p == '\0' || strlen(h) > 253)
		return false;
	for (; *p != '\0'; p++) {
		*p = (char)tolower((unsigned char)*p);
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
			return false;
	}
	return true;
}

static bool token_ok(const char *t)
{
	for (; *t != '\0'; t++) {
		if (!isalnum((unsigned char)*t) && strchr("!#$%&'*+-.^_`|~", *t) == NULL)
			return false;
	}
	return true;
}

/* FNV-1a, never 0 (0 is "any" in a key). */
static uint64_t text_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h != 0 ? h : 1;
}

static int parse_path(const cJSON *m, stub *s, size_t idx, sbx_err *err)
{
	static const char *const kinds[] = {"path", "path_prefix", "path_regex"};
	int given = 0;

	for (int k = 0; k < 3; k++) {
		char *v = NULL;

		if (opt_str(m, kinds[k], &v, 1024, idx, "match.", err) != 0)
			return -1;
		if (v == NULL)
			continue;
		if (++given > 1) {
			free(v);
			sbx_err_set(err, "stub %zu: match takes one of path, path_prefix, path_regex", idx);
			return -1;
		}
		s->path = v;
		s->pk = (path_kind)(PATH_EXACT + k);
	}
	if (s->pk == PATH_REGEX) {
		int rc = regcomp(&s->re, s->path, REG_EXTENDED | REG_NOSUB);

		if (rc != 0) {
			char why[128];

			regerror(rc, &s->re, why, sizeof(why));
			s->pk = PATH_ANY; /* nothing compiled to free */
			sbx_err_set(err, "stub %zu: match.path_regex: %s", idx, why);
			return -1;
		}
	} else if (s->path != NULL && s->path[0] != '/') {
		sbx_err_set(err, "stub %zu: match.%s must start with '/'", idx, s->pk == PATH_EXACT ? "path" : "path_prefix");
		return -1;
	}
	return 0;
}

static int parse_header_match(const cJSON *m, stub *s, size_t idx, sbx_err *err)
{
	static const char *const keys[] = {"name", "value", NULL};
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(m, "header");

	if (h == NULL)
		return 0;
	if (!cJSON_IsObject(h)) {
		sbx_err_set(err, "stub %zu: match.header must be {name, value?}", idx);
		return -1;
	}
	if (keys_known(h, keys, idx, "match.header.", err) != 0 ||
	    opt_str(h, "name", &s->hname, 256, idx, "match.header.", err) != 0 ||
	    opt_str(h, "value", &s->hvalue, 4096, idx, "match.header.", err) != 0)
		return -1;
	if (s->hname == NULL || !token_ok(s->hname)) {
		sbx_err_set(err, "stub %zu: match.header.name must be a header name", idx);
		return -1;
	}
	return 0;
}

static int parse_match(const cJSON *m, stub *s, size_t idx, sbx_err *err)
{
	static const char *const keys[] = {"host", "scheme", "method", "path", "path_prefix", "path_regex",
					   "header", NULL};
	char *scheme = NULL;

	if (!cJSON_IsObject(m)) {
		sbx_err_set(err, "stub %zu: match must be an object with at least host", idx);
		return -1;
	}
	if (keys_known(m, keys, idx, "match.", err) != 0 || opt_str(m, "host", &s->host, 255, idx, "match.", err) != 0 ||
	    opt_str(m, "scheme", &scheme, 8, idx, "match.", err) != 0 ||
	    opt_str(m, "method", &s->method, 32, idx, "match.", err) != 0)
		goto fail;
	if (s->host == NULL || !host_pattern_ok(s->host)) {
		sbx_err_set(err, "stub %zu: match.host must be a host name or \"*.suffix\"", idx);
		goto fail;
	}
	s->wildcard = s->host[0] == '*';
	if (scheme != NULL) {
		s->scheme = strcmp(scheme, "http") == 0 ? 1 : strcmp(scheme, "https") == 0 ? 2 : -1;
		if (s->scheme < 0) {
			sbx_err_set(err, "stub %zu: match.scheme must be http or https", idx);
			goto fail;
		}
	}
	if (s->method != NULL && !token_ok(s->method)) {
		sbx_err_set(err, "stub %zu: match.method must be a method name", idx);
		goto fail;
	}
	free(scheme);
	return parse_path(m, s, idx, err) != 0 || parse_header_match(m, s, idx, err) != 0 ? -1 : 0;
fail:
	free(scheme);
	return -1;
}

/* A header line's value: no CR, LF or NUL (no smuggled lines). */
static bool header_value_ok(const char *v)
{
	return strpbrk(v, "\r\n") == NULL;
}

static int parse_headers(const cJSON *hs, sbx_strbuf *head, bool *has_type, size_t idx, sbx_err *err)
{
	const cJSON *h;
	int n = 0;

	if (hs == NULL)
		return 0;
	if (!cJSON_IsObject(hs)) {
		sbx_err_set(err, "stub %zu: respond.headers must be an object of strings", idx);
		return -1;
	}
	cJSON_ArrayForEach(h, hs) {
		if (++n > MOCK_INET_STUB_HEADERS_MAX || !cJSON_IsString(h) || !token_ok(h->string) ||
		    h->string[0] == '\0' || !header_value_ok(h->valuestring)) {
			sbx_err_set(err, "stub %zu: respond.headers: at most %d, each a header name and a string "
				    "without line breaks (\"%.40s\")", idx, MOCK_INET_STUB_HEADERS_MAX, h->string);
			return -1;
		}
		if (strcasecmp(h->string, "Content-Length") == 0 || strcasecmp(h->string, "Connection") == 0 ||
		    strcasecmp(h->string, "Transfer-Encoding") == 0) {
			sbx_err_set(err, "stub %zu: respond.headers.%s is the internet's to send", idx, h->string);
			return -1;
		}
		if (strcasecmp(h->string, "Content-Type") == 0)
			*has_type = true;
		sbx_strbuf_printf(head, "%s: %s\r\n", h->string, h->valuestring);
	}
	if (head->len > MOCK_INET_STUB_HEADER_BYTES) {
		sbx_err_set(err, "stub %zu: respond.headers are over %d bytes", idx, MOCK_INET_STUB_HEADER_BYTES);
		return -1;
	}
	return 0;
}

/* The file's bytes (at most MOCK_INET_STUB_FILE_MAX). */
static int read_body_file(const char *base, const char *name, stub *s, size_t idx, sbx_err *err)
{
	char path[4096];
	FILE *fp;
	struct stat st;

	if (name[0] == '/' || base == NULL)
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%s/%s", base, name);
	fp = fopen(path, "rb");
	if (fp == NULL || fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > MOCK_INET_STUB_FILE_MAX) {
		sbx_err_set(err, "stub %zu: respond.body_file %s: %s", idx, path,
			    fp == NULL ? strerror(errno) : "not a regular file of at most 16 MiB");
		if (fp != NULL)
			fclose(fp);
		return -1;
	}
	s->pub.body = malloc((size_t)st.st_size + 1);
	s->pub.body_len = s->pub.body != NULL ? fread(s->pub.body, 1, (size_t)st.st_size, fp) : 0;
	fclose(fp);
	if (s->pub.body == NULL || s->pub.body_len != (size_t)st.st_size) {
		sbx_err_set(err, "stub %zu: respond.body_file %s: short read", idx, path);
		return -1;
	}
	return 0;
}

static int parse_fault(const cJSON *r, stub *s, size_t idx, sbx_err *err)
{
	char *f = NULL;

	if (opt_str(r, "fault", &f, 32, idx, "respond.", err) != 0)
		return -1;
	if (f != NULL) {
		for (size_t i = 1; i < sizeof(fault_names) / sizeof(fault_names[0]); i++) {
			if (strcmp(f, fault_names[i]) == 0)
				s->pub.fault = (mock_inet_fault)i;
		}
		if (s->pub.fault == MOCK_INET_FAULT_NONE) {
			sbx_err_set(err, "stub %zu: respond.fault \"%.32s\" is not reset, hang, close_mid_body or slow_body",
				    idx, f);
			free(f);
			return -1;
		}
		free(f);
	}
	s->pub.hang_ms = 30000;
	s->pub.chunk_bytes = 64;
	s->pub.interval_ms = 100;
	return opt_int(r, "hang_ms", &s->pub.hang_ms, 0, MOCK_INET_STUB_DELAY_MAX_MS, idx, "respond.", err) != 0 ||
			       opt_int(r, "chunk_bytes", &s->pub.chunk_bytes, 1, 1 << 20, idx, "respond.", err) != 0 ||
			       opt_int(r, "interval_ms", &s->pub.interval_ms, 0, 10000, idx, "respond.", err) != 0
		       ? -1
		       : 0;
}

static int parse_respond(const cJSON *r, const char *base, stub *s, size_t idx, sbx_err *err)
{
	static const char *const keys[] = {"status", "headers", "body", "body_file", "delay_ms", "fault",
					   "hang_ms", "chunk_bytes", "interval_ms", NULL};
	const cJSON *body, *file;
	sbx_strbuf head = SBX_STRBUF_INIT;
	bool has_type = false;

	if (r != NULL && !cJSON_IsObject(r)) {
		sbx_err_set(err, "stub %zu: respond must be an object", idx);
		return -1;
	}
	s->pub.status = 200;
	if (r != NULL && (keys_known(r, keys, idx, "respond.", err) != 0 ||
			  opt_int(r, "status", &s->pub.status, 100, 599, idx, "respond.", err) != 0 ||
			  opt_int(r, "delay_ms", &s->pub.delay_ms, 0, MOCK_INET_STUB_DELAY_MAX_MS, idx, "respond.",
				  err) != 0 ||
			  parse_fault(r, s, idx, err) != 0 ||
			  parse_headers(cJSON_GetObjectItemCaseSensitive(r, "headers"), &head, &has_type, idx, err) != 0)) {
		sbx_strbuf_free(&head);
		return -1;
	}
	if (!has_type)
		sbx_strbuf_puts(&head, "Content-Type: text/plain\r\n");
	s->pub.head = sbx_strbuf_detach(&head, NULL);
	body = r != NULL ? cJSON_GetObjectItemCaseSensitive(r, "body") : NULL;
	file = r != NULL ? cJSON_GetObjectItemCaseSensitive(r, "body_file") : NULL;
	if (body != NULL && file != NULL) {
		sbx_err_set(err, "stub %zu: respond takes body or body_file, not both", idx);
		return -1;
	}
	if (file != NULL)
		return cJSON_IsString(file) ? read_body_file(base, file->valuestring, s, idx, err)
					    : (sbx_err_set(err, "stub %zu: respond.body_file must be a path", idx), -1);
	if (body != NULL && (!cJSON_IsString(body) || strlen(body->valuestring) > MOCK_INET_STUB_BODY_MAX)) {
		sbx_err_set(err, "stub %zu: respond.body must be a string of at most %d bytes", idx,
			    MOCK_INET_STUB_BODY_MAX);
		return -1;
	}
	s->pub.body = strdup(body != NULL ? body->valuestring : "");
	s->pub.body_len = body != NULL ? strlen(body->valuestring) : 0;
	if (s->pub.head == NULL || s->pub.body == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	return 0;
}

static stub *parse_stub(const cJSON *o, const char *base, size_t idx, sbx_err *err)
{
	static const char *const keys[] = {"id", "tenant", "match", "respond", "comment", NULL};
	stub *s;

	if (!cJSON_IsObject(o)) {
		sbx_err_set(err, "stub %zu: must be an object {match, respond}", idx);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	atomic_init(&s->refs, 1);
	if (keys_known(o, keys, idx, "", err) != 0 || opt_str(o, "tenant", &s->tenant, 512, idx, "", err) != 0 ||
	    parse_match(cJSON_GetObjectItemCaseSensitive(o, "match"), s, idx, err) != 0 ||
	    parse_respond(cJSON_GetObjectItemCaseSensitive(o, "respond"), base, s, idx, err) != 0) {
		stub_free(s);
		return NULL;
	}
	s->view = cJSON_Duplicate(o, true);
	if (s->view == NULL) {
		stub_free(s);
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(s->view, "id");
	return s;
}

int mock_inet_stubs_add_json(mock_inet_book *b, const cJSON *body, const char *base_dir, cJSON *ids,
			     sbx_err *err)
{
	const cJSON *list = cJSON_IsArray(body) ? body : cJSON_GetObjectItemCaseSensitive(body, "stubs");
	size_t n = list != NULL ? (size_t)cJSON_GetArraySize(list) : 1, i = 0, bytes = 0;
	stub **made;
	const cJSON *it;
	int rc = 0;

	if (list != NULL && (!cJSON_IsArray(list) || (cJSON_IsObject(body) && cJSON_GetArraySize(body) != 1))) {
		sbx_err_set(err, "stubs: {stubs:[...]} takes nothing else, and stubs must be an array");
		return -1;
	}
	made = calloc(n + 1, sizeof(*made));
	if (made == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	if (list == NULL) {
		made[0] = parse_stub(body, base_dir, 0, err);
		rc = made[0] != NULL ? 0 : -1;
	} else {
		cJSON_ArrayForEach(it, list) {
			made[i] = parse_stub(it, base_dir, i, err);
			if (made[i++] == NULL) {
				rc = -1;
				break;
			}
		}
	}
	for (i = 0; rc == 0 && i < n; i++)
		bytes += made[i]->pub.body_len;
	pthread_rwlock_wrlock(&b->slock);
	if (rc == 0 && b->nstubs + n > MOCK_INET_STUBS_MAX) {
		sbx_err_set(err, "stubs: at most %d (%zu kept, %zu more asked)", MOCK_INET_STUBS_MAX, b->nstubs, n);
		rc = -1;
	} else if (rc == 0 && b->body_bytes + bytes > MOCK_INET_STUB_BYTES_MAX) {
		sbx_err_set(err, "stubs: their bodies together would be over %d MiB", MOCK_INET_STUB_BYTES_MAX >> 20);
		rc = -1;
	}
	if (rc == 0 && b->capstubs < b->nstubs + n) {
		size_t cap = b->nstubs + n + 16;
		stub **grown = realloc(b->stubs, cap * sizeof(*grown));
		mock_inet_stub_key *kg = grown != NULL ? realloc(b->keys, cap * sizeof(*kg)) : NULL;

		if (grown != NULL)
			b->stubs = (void **)grown;
		if (kg != NULL)
			b->keys = kg;
		if (grown == NULL || kg == NULL) {
			sbx_err_set(err, "out of memory");
			rc = -1;
		} else {
			b->capstubs = cap;
		}
	}
	for (i = 0; rc == 0 && i < n; i++) {
		made[i]->pub.id = b->next_id++;
		b->keys[b->nstubs].host = made[i]->wildcard ? 0 : text_hash(made[i]->host);
		b->keys[b->nstubs].path = made[i]->pk == PATH_EXACT ? text_hash(made[i]->path) : 0;
		b->stubs[b->nstubs++] = made[i];
		if (ids != NULL)
			cJSON_AddItemToArray(ids, cJSON_CreateNumber(made[i]->pub.id));
		made[i] = NULL;
	}
	if (rc == 0)
		b->body_bytes += bytes;
	pthread_rwlock_unlock(&b->slock);
	for (i = 0; i < n; i++)
		stub_free(made[i]);
	free(made);
	return rc;
}

int mock_inet_stubs_add_file(mock_inet_book *b, const char *path, sbx_err *err)
{
	FILE *fp = fopen(path, "rb");
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char buf[4096], dir[4096];
	size_t n;
	cJSON *j;
	int rc;

	if (fp == NULL) {
		sbx_err_set(err, "--internet-stubs %s: %s", path, strerror(errno));
		return -1;
	}
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0 && sb.len < 64 * 1024 * 1024)
		sbx_strbuf_append(&sb, buf, n);
	fclose(fp);
	j = cJSON_ParseWithLength(sbx_strbuf_str(&sb), sb.len);
	sbx_strbuf_free(&sb);
	if (j == NULL) {
		sbx_err_set(err, "--internet-stubs %s: not JSON", path);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	if (strrchr(dir, '/') != NULL)
		*strrchr(dir, '/') = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	rc = mock_inet_stubs_add_json(b, j, dir, NULL, err);
	cJSON_Delete(j);
	if (rc != 0)
		sbx_err_prefix(err, "%s", path);
	return rc;
}

static cJSON *stub_view(const stub *s)
{
	cJSON *v = cJSON_Duplicate(s->view, true);

	if (v != NULL)
		cJSON_AddNumberToObject(v, "id", s->pub.id);
	return v;
}

cJSON *mock_inet_stubs_list_json(mock_inet_book *b)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "stubs");

	pthread_rwlock_rdlock(&b->slock);
	for (size_t i = 0; i < b->nstubs; i++)
		cJSON_AddItemToArray(a, stub_view(b->stubs[i]));
	pthread_rwlock_unlock(&b->slock);
	return o;
}

cJSON *mock_inet_stub_json(mock_inet_book *b, unsigned id)
{
	cJSON *v = NULL;

	pthread_rwlock_rdlock(&b->slock);
	for (size_t i = 0; i < b->nstubs && v == NULL; i++) {
		if (((stub *)b->stubs[i])->pub.id == id)
			v = stub_view(b->stubs[i]);
	}
	pthread_rwlock_unlock(&b->slock);
	return v;
}

int mock_inet_stub_delete(mock_inet_book *b, unsigned id)
{
	stub *gone = NULL;

	pthread_rwlock_wrlock(&b->slock);
	for (size_t i = 0; i < b->nstubs && gone == NULL; i++) {
		if (((stub *)b->stubs[i])->pub.id == id) {
			gone = b->stubs[i];
			memmove(&b->stubs[i], &b->stubs[i + 1], (b->nstubs - i - 1) * sizeof(b->stubs[0]));
			memmove(&b->keys[i], &b->keys[i + 1], (b->nstubs - i - 1) * sizeof(b->keys[0]));
			b->nstubs--;
			b->body_bytes -= gone->pub.body_len;
		}
	}
	pthread_rwlock_unlock(&b->slock);
	mock_inet_stub_put(&gone->pub);
	return gone != NULL ? 0 : -1;
}

void mock_inet_stubs_clear(mock_inet_book *b)
{
	pthread_rwlock_wrlock(&b->slock);
	for (size_t i = 0; i < b->nstubs; i++)
		mock_inet_stub_put(&((stub *)b->stubs[i])->pub);
	b->nstubs = 0;
	b->body_bytes = 0;
	pthread_rwlock_unlock(&b->slock);
}

size_t mock_inet_stubs_count(mock_inet_book *b)
{
	size_t n;

	pthread_rwlock_rdlock(&b->slock);
	n = b->nstubs;
	pthread_rwlock_unlock(&b->slock);
	return n;
}

/* ---- matching ---- */

static bool stub_matches(const stub *s, const mock_inet_req *r, const char *tenant)
{
	if (!mock_inet_host_match(s->host, s->wildcard, r->host))
		return false;
	if ((s->scheme == 1 && r->tls) || (s->scheme == 2 && !r->tls))
		return false;
	if (s->method != NULL && strcmp(s->method, r->method) != 0)
		return false;
	if ((s->pk == PATH_EXACT && strcmp(s->path, r->path) != 0) ||
	    (s->pk == PATH_PREFIX && strncmp(s->path, r->path, strlen(s->path)) != 0) ||
	    (s->pk == PATH_REGEX && regexec(&s->re, r->path, 0, NULL, 0) != 0))
		return false;
	if (s->tenant != NULL && strcmp(s->tenant, tenant) != 0)
		return false;
	if (s->hname != NULL) {
		char v[4096];

		if (!mock_inet_head_header(r->head, s->hname, v, sizeof(v)) ||
		    (s->hvalue != NULL && strcmp(v, s->hvalue) != 0))
			return false;
	}
	return true;
}

mock_inet_stub *mock_inet_stub_match(mock_inet_book *b, const mock_inet_req *r)
{
	stub *hit = NULL;
	uint64_t hh = text_hash(r->host), ph = text_hash(r->path);

	pthread_rwlock_rdlock(&b->slock);
	for (size_t i = 0; i < b->nstubs && hit == NULL; i++) {
		const mock_inet_stub_key *k = &b->keys[i];

		if ((k->host == 0 || k->host == hh) && (k->path == 0 || k->path == ph) &&
		    stub_matches(b->stubs[i], r, r->tenant))
			hit = b->stubs[i];
	}
	if (hit != NULL)
		atomic_fetch_add(&hit->refs, 1);
	pthread_rwlock_unlock(&b->slock);
	return hit != NULL ? &hit->pub : NULL;
}

/* ---- the journal ---- */

bool mock_inet_book_names(mock_inet_book *b, const char *name)
{
	bool found = mock_inet_site_dir(b, name) >= 0 || mock_inet_tape_names(atomic_load(&b->tape), name);

	pthread_rwlock_rdlock(&b->slock);
	for (size_t i = 0; i < b->nstubs && !found; i++) {
		const stub *s = b->stubs[i];

		found = mock_inet_host_match(s->host, s->wildcard, name);
	}
	pthread_rwlock_unlock(&b->slock);
	return found;
}

void mock_inet_book_set_tape(mock_inet_book *b, struct mock_inet_tape *t)
{
	atomic_store(&b->tape, t);
}

struct mock_inet_tape *mock_inet_book_tape(mock_inet_book *b)
{
	return atomic_load(&b->tape);
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mock_inet_journal_add(mock_inet_book *b, const mock_inet_entry *e)
{
	cJSON *o = cJSON_CreateObject();
	char *text;
	mock_inet_jentry *slot;

	if (o == NULL)
		return;
	cJSON_AddNumberToObject(o, "ts_ms", (double)wall_ms());
	cJSON_AddStringToObject(o, "tenant", e->tenant != NULL ? e->tenant : "");
	cJSON_AddStringToObject(o, "sandbox_id", e->sandbox != NULL ? e->sandbox : "");
	cJSON_AddStringToObject(o, "host", e->host != NULL ? e->host : "");
	cJSON_AddStringToObject(o, "scheme", e->scheme != NULL ? e->scheme : "");
	cJSON_AddStringToObject(o, "method", e->method != NULL ? e->method : "");
	cJSON_AddStringToObject(o, "path", e->path != NULL ? e->path : "");
	cJSON_AddNumberToObject(o, "status", e->status);
	if (e->stub != 0)
		cJSON_AddNumberToObject(o, "stub", e->stub);
	cJSON_AddStringToObject(o, "via", e->via);
	if (e->fault != NULL && e->fault[0] != '\0')
		cJSON_AddStringToObject(o, "fault", e->fault);
	if (e->port != 0)
		cJSON_AddNumberToObject(o, "port", e->port);
	if (e->tls_error != NULL && e->tls_error[0] != '\0')
		cJSON_AddStringToObject(o, "tls_error", e->tls_error);
	if (e->cassette_miss != NULL && e->cassette_miss[0] != '\0')
		cJSON_AddStringToObject(o, "cassette_miss", e->cassette_miss);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (text == NULL)
		return;
	pthread_mutex_lock(&b->jlock);
	slot = &b->journal[b->jseq % MOCK_INET_JOURNAL_SIZE];
	free(slot->text);
	slot->seq = ++b->jseq;
	slot->text = text;
	snprintf(slot->sandbox, sizeof(slot->sandbox), "%s", e->sandbox != NULL ? e->sandbox : "");
	snprintf(slot->host, sizeof(slot->host), "%s", e->host != NULL ? e->host : "");
	pthread_mutex_unlock(&b->jlock);
}

cJSON *mock_inet_journal_json(mock_inet_book *b, uint64_t since, const char *sandbox, const char *host,
			      size_t limit)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "entries");
	size_t n = 0;

	pthread_mutex_lock(&b->jlock);
	uint64_t first = b->jseq > MOCK_INET_JOURNAL_SIZE ? b->jseq - MOCK_INET_JOURNAL_SIZE + 1 : 1;

	for (uint64_t seq = since + 1 > first ? since + 1 : first; seq <= b->jseq; seq++) {
		const mock_inet_jentry *e = &b->journal[(seq - 1) % MOCK_INET_JOURNAL_SIZE];
		cJSON *v;

		if (e->text == NULL || (sandbox != NULL && strcmp(sandbox, e->sandbox) != 0) ||
		    (host != NULL && strcmp(host, e->host) != 0))
			continue;
		if (limit != 0 && n == limit)
			break;
		v = cJSON_Parse(e->text);
		if (v != NULL) {
			cJSON_AddNumberToObject(v, "seq", (double)e->seq);
			cJSON_AddItemToArray(a, v);
			n++;
		}
	}
	cJSON_AddNumberToObject(o, "next_seq", (double)b->jseq);
	cJSON_AddBoolToObject(o, "wrapped", first > 1);
	pthread_mutex_unlock(&b->jlock);
	return o;
}

void mock_inet_journal_clear(mock_inet_book *b)
{
	pthread_mutex_lock(&b->jlock);
	for (size_t i = 0; i < MOCK_INET_JOURNAL_SIZE; i++)
		journal_entry_free(&b->journal[i]); /* seq goes on: a reader's since stays valid */
	pthread_mutex_unlock(&b->jlock);
}

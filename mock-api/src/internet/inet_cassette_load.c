/* inet_cassette_load: reading a cassette and checking it whole before
 * anything is served from it (inet_cassette.h): every line parsed and
 * checked (a bad one refused naming the file, its line number and what is
 * wrong), every body named present with the hash its name says. What a
 * cassette holds is input: each string, header list and line is bounded
 * (LIMITS.md) before it is kept. */
#define _GNU_SOURCE
#include "internet/inet_cassette.h"
#include "internet/inet_cassette_internal.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const ex_keys[] = {"scheme", "host", "port", "method", "target", "request_headers",
				      "request_body", "status", "reason", "response_headers", "chunked", "body",
				      "n"};

/* "cassette NAME: cassette.jsonl line N: " + what, into err: -1. */
__attribute__((format(printf, 4, 5))) static int bad(const mock_cassette *c, size_t line, sbx_err *err,
						     const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	sbx_err_set(err, "cassette %s: cassette.jsonl line %zu: %s", c->name, line, what);
	return -1;
}

static mock_cassette *cassette_new(const char *name)
{
	mock_cassette *c = calloc(1, sizeof(*c));
	const char *slash;
	size_t len;

	if (c == NULL)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	len = strlen(name);
	while (len > 1 && name[len - 1] == '/')
		len--;
	slash = memrchr(name, '/', len);
	if (slash != NULL && (size_t)(slash - name) + 1 < len)
		snprintf(c->name, sizeof(c->name), "%.*s", (int)(len - (size_t)(slash - name) - 1), slash + 1);
	else
		snprintf(c->name, sizeof(c->name), "%.*s", (int)len, name);
	c->first_token = 1;
	return c;
}

void mock_cassette_free(mock_cassette *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->nex; i++)
		mock_cassette_ex_clear(&c->ex[i]);
	for (size_t i = 0; i < c->ntok; i++)
		free(c->tok_vals[i]);
	for (size_t i = 0; i < c->nredact; i++)
		free(c->redact[i]);
	free(c->tok_vals);
	free(c->ex);
	free(c->dir);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* A redacted query name: from the header (line 1 of cassette.jsonl) or,
 * line 0, from --internet-redact-query; a bad one is refused saying which. */
static int add_redact(mock_cassette *c, size_t line, const char *name, sbx_err *err)
{
	if (mock_cassette_in_list((const char *const *)c->redact, c->nredact, name))
		return 0;
	if (name[0] == '\0' || strlen(name) > 255 || strpbrk(name, "=&#? ") != NULL) {
		if (line > 0)
			return bad(c, line, err, "redacted query name \"%.80s\": 1-255 bytes, none of = & # ? or space",
				   name);
		sbx_err_set(err, "--internet-redact-query \"%.80s\": 1-255 bytes, none of = & # ? or space", name);
		return -1;
	}
	if (c->nredact == MOCK_CASSETTE_REDACT_MAX) {
		if (line > 0)
			return bad(c, line, err, "more than %d redacted query names", MOCK_CASSETTE_REDACT_MAX);
		sbx_err_set(err, "cassette %s: more than %d redacted query names", c->name, MOCK_CASSETTE_REDACT_MAX);
		return -1;
	}
	c->redact[c->nredact] = strdup(name);
	if (c->redact[c->nredact] == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	c->nredact++;
	return 0;
}

static int parse_header(mock_cassette *c, const cJSON *o, sbx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "sbx_cassette");
	const cJSON *cr = cJSON_GetObjectItemCaseSensitive(o, "created");
	const cJSON *rq = cJSON_GetObjectItemCaseSensitive(o, "redacted_query"), *it;

	if (!cJSON_IsNumber(v) || v->valuedouble != MOCK_CASSETTE_VERSION) {
		bad(c, 1, err, "not a cassette header of version %d ({\"sbx_cassette\":%d,...}): %s",
		    MOCK_CASSETTE_VERSION, MOCK_CASSETTE_VERSION,
		    cJSON_IsNumber(v) ? "another version" : "no \"sbx_cassette\" number");
		return -1;
	}
	if (!cJSON_IsString(cr) || strlen(cr->valuestring) >= sizeof(c->created)) {
		bad(c, 1, err, "\"created\" must be an RFC 3339 time string");
		return -1;
	}
	snprintf(c->created, sizeof(c->created), "%s", cr->valuestring);
	if (rq != NULL && !cJSON_IsArray(rq)) {
		bad(c, 1, err, "\"redacted_query\" must be an array of names");
		return -1;
	}
	cJSON_ArrayForEach(it, rq)
	{
		if (!cJSON_IsString(it)) {
			bad(c, 1, err, "\"redacted_query\" must be an array of names");
			return -1;
		}
		if (add_redact(c, 1, it->valuestring, err) != 0)
			return -1;
	}
	return 0;
}

/* A header list [[name, value], ...] into *out: 0, or -1 with err. */
static int parse_hdrs(mock_cassette *c, size_t line, const cJSON *a, const char *key, mock_cassette_hdr **out,
		      size_t *n, sbx_err *err)
{
	const cJSON *p;
	size_t bytes = 0, i = 0, count = (size_t)cJSON_GetArraySize(a);

	if (!cJSON_IsArray(a) || count > MOCK_CASSETTE_HEADERS_MAX) {
		bad(c, line, err, "\"%s\" must be an array of at most %d [name, value] pairs", key,
		    MOCK_CASSETTE_HEADERS_MAX);
		return -1;
	}
	*out = calloc(count > 0 ? count : 1, sizeof(**out));
	if (*out == NULL)
		return -1;
	cJSON_ArrayForEach(p, a)
	{
		const cJSON *nm = cJSON_GetArrayItem(p, 0), *val = cJSON_GetArrayItem(p, 1);

		if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsString(nm) || !cJSON_IsString(val) ||
		    nm->valuestring[0] == '\0' || strpbrk(nm->valuestring, ": \t\r\n") != NULL ||
		    strpbrk(val->valuestring, "\r\n") != NULL) {
			bad(c, line, err, "\"%s\" item %zu: must be [name, value]: a token name, a value without line ends",
			    key, i + 1);
			return -1;
		}
		bytes += strlen(nm->valuestring) + strlen(val->valuestring);
		if (bytes > MOCK_CASSETTE_HEADER_BYTES) {
			bad(c, line, err, "\"%s\": over %d bytes in all", key, MOCK_CASSETTE_HEADER_BYTES);
			return -1;
		}
		(*out)[i].name = strdup(nm->valuestring);
		(*out)[i].value = strdup(val->valuestring);
		*n = ++i;
		if ((*out)[i - 1].name == NULL || (*out)[i - 1].value == NULL)
			return -1;
	}
	return 0;
}

/* {"sha256":hex,"size":N} into sha/size: 0, or -1 with err. */
static int parse_body(mock_cassette *c, size_t line, const cJSON *o, const char *key, char sha[65],
		      long long *size, sbx_err *err)
{
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "sha256");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "size");

	if (!cJSON_IsObject(o) || cJSON_GetArraySize(o) != 2 || !cJSON_IsString(h) ||
	    !mock_cassette_hex64(h->valuestring) || !cJSON_IsNumber(s) || s->valuedouble < 0 ||
	    s->valuedouble > 9007199254740992.0 || s->valuedouble != (double)(long long)s->valuedouble) {
		bad(c, line, err, "\"%s\" must be {\"sha256\": 64 lower-case hex digits, \"size\": bytes}", key);
		return -1;
	}
	snprintf(sha, 65, "%s", h->valuestring);
	*size = (long long)s->valuedouble;
	return 0;
}

/* A string of 1..max bytes without controls or spaces (allow_space: the
 * reason phrase may have spaces). */
static const char *str_field(const cJSON *o, const char *key, size_t max, bool allow_space)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	size_t len;

	if (!cJSON_IsString(v))
		return NULL;
	len = strlen(v->valuestring);
	if ((len == 0 && !allow_space) || len > max)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)v->valuestring[i];

		if (ch < 0x20 || ch == 0x7f || (ch == ' ' && !allow_space))
			return NULL;
	}
	return v->valuestring;
}

static bool int_field(const cJSON *o, const char *key, double lo, double hi, long long *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi ||
	    v->valuedouble != (double)(long long)v->valuedouble)
		return false;
	*out = (long long)v->valuedouble;
	return true;
}

/* The keys of an exchange line: all of the spec's, no other. */
static int check_keys(mock_cassette *c, size_t line, const cJSON *o, sbx_err *err)
{
	const cJSON *it;
	size_t nkeys = sizeof(ex_keys) / sizeof(ex_keys[0]);

	cJSON_ArrayForEach(it, o)
	{
		if (!mock_cassette_in_list(ex_keys, nkeys, it->string)) {
			bad(c, line, err, "unknown key \"%.64s\"", it->string);
			return -1;
		}
	}
	for (size_t i = 0; i < nkeys; i++) {
		if (cJSON_GetObjectItemCaseSensitive(o, ex_keys[i]) == NULL) {
			bad(c, line, err, "no \"%s\"", ex_keys[i]);
			return -1;
		}
	}
	return 0;
}

static bool host_ok(const char *h)
{
	size_t len = strlen(h);

	if (len == 0 || len > 253 || h[len - 1] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!(islower((unsigned char)h[i]) || isdigit((unsigned char)h[i]) || strchr(".-_:", h[i]) != NULL))
			return false;
	}
	return true;
}

/* The scalar fields of an exchange line: 0, or -1 with err. */
static int parse_scalars(mock_cassette *c, size_t line, const cJSON *o, mock_cassette_ex *e, sbx_err *err)
{
	const char *scheme = str_field(o, "scheme", 5, false), *host = str_field(o, "host", 253, false);
	const char *method = str_field(o, "method", 31, false);
	const char *target = str_field(o, "target", MOCK_CASSETTE_TARGET_MAX, false);
	const char *reason = str_field(o, "reason", 256, true);
	long long port, status, n;

	if (scheme == NULL || (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0))
		return bad(c, line, err, "\"scheme\" must be \"https\" or \"http\"");
	if (host == NULL || !host_ok(host))
		return bad(c, line, err, "\"host\" must be a lower-case name or address, no trailing dot");
	if (!int_field(o, "port", 1, 65535, &port))
		return bad(c, line, err, "\"port\" must be an integer 1-65535");
	if (method == NULL)
		return bad(c, line, err, "\"method\" must be a token of 1-31 bytes");
	if (target == NULL || target[0] != '/')
		return bad(c, line, err, "\"target\" must be an origin-form target (\"/...\", at most %d bytes)",
			   MOCK_CASSETTE_TARGET_MAX);
	if (!int_field(o, "status", 100, 999, &status))
		return bad(c, line, err, "\"status\" must be an integer 100-999");
	if (reason == NULL)
		return bad(c, line, err, "\"reason\" must be a string of at most 256 bytes, no control characters");
	if (!cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(o, "chunked")))
		return bad(c, line, err, "\"chunked\" must be true or false");
	if (!int_field(o, "n", 1, 1e9, &n))
		return bad(c, line, err, "\"n\" must be an integer from 1");
	snprintf(e->scheme, sizeof(e->scheme), "%s", scheme);
	e->host = strdup(host);
	e->port = (unsigned)port;
	e->method = strdup(method);
	e->target = strdup(target);
	e->status = (int)status;
	e->reason = strdup(reason);
	e->chunked = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "chunked"));
	e->n = (unsigned)n;
	e->match_target = e->target != NULL ? mock_cassette_redact_locked(c, e->target, true) : NULL;
	if (e->host == NULL || e->method == NULL || e->target == NULL || e->reason == NULL || e->match_target == NULL)
		return sbx_err_set(err, "out of memory"), -1;
	return 0;
}

static int parse_exchange(mock_cassette *c, size_t line, const cJSON *o, mock_cassette_ex *e, sbx_err *err)
{
	const cJSON *rb = cJSON_GetObjectItemCaseSensitive(o, "request_body");

	if (!cJSON_IsObject(o)) {
		bad(c, line, err, "not a JSON object");
		return -1;
	}
	if (check_keys(c, line, o, err) != 0 || parse_scalars(c, line, o, e, err) != 0)
		return -1;
	if (parse_hdrs(c, line, cJSON_GetObjectItemCaseSensitive(o, "request_headers"), "request_headers",
		       &e->req_headers, &e->nreq_headers, err) != 0 ||
	    parse_hdrs(c, line, cJSON_GetObjectItemCaseSensitive(o, "response_headers"), "response_headers",
		       &e->resp_headers, &e->nresp_headers, err) != 0)
		return -1;
	if (!cJSON_IsNull(rb) && parse_body(c, line, rb, "request_body", e->req_sha, &e->req_size, err) != 0)
		return -1;
	return parse_body(c, line, cJSON_GetObjectItemCaseSensitive(o, "body"), "body", e->body_sha,
			  &e->body_size, err);
}

/* An exchange with the same key and n as one before it: refused. */
static int check_unique(mock_cassette *c, size_t line, const mock_cassette_ex *e, sbx_err *err)
{
	for (size_t i = 0; i < c->nex; i++) {
		const mock_cassette_ex *x = &c->ex[i];

		if (x->n == e->n && x->port == e->port && strcmp(x->scheme, e->scheme) == 0 &&
		    strcmp(x->host, e->host) == 0 && strcmp(x->method, e->method) == 0 &&
		    strcmp(x->match_target, e->match_target) == 0 && strcmp(x->req_sha, e->req_sha) == 0) {
			bad(c, line, err, "%s %s://%s:%u%s n=%u is there twice", e->method, e->scheme, e->host,
			    e->port, e->target, e->n);
			return -1;
		}
	}
	return 0;
}

/* One line (NUL-terminated, no "\n"), number line: 0, or -1 with err. */
static int parse_line(mock_cassette *c, size_t line, const char *text, sbx_err *err)
{
	cJSON *o = cJSON_Parse(text);
	mock_cassette_ex e = {0};
	int rc = -1;

	if (o == NULL) {
		bad(c, line, err, "not JSON (near byte %zu)",
		    cJSON_GetErrorPtr() != NULL ? (size_t)(cJSON_GetErrorPtr() - text) + 1 : (size_t)0);
		return -1;
	}
	if (line == 1) {
		rc = parse_header(c, o, err);
		cJSON_Delete(o);
		return rc;
	}
	if (c->nex >= MOCK_CASSETTE_EXCHANGES_MAX)
		bad(c, line, err, "more than %d exchanges (LIMITS.md)", MOCK_CASSETTE_EXCHANGES_MAX);
	else if (parse_exchange(c, line, o, &e, err) == 0 && check_unique(c, line, &e, err) == 0)
		rc = mock_cassette_grow(c);
	if (rc == 0) {
		c->ex[c->nex++] = e;
		memset(&e, 0, sizeof(e));
	}
	cJSON_Delete(o);
	mock_cassette_ex_clear(&e);
	return rc;
}

/* The header first: the query names to redact apply to every line after. */
static int parse_text(mock_cassette *c, const char *text, size_t len, sbx_err *err)
{
	size_t line = 0, at = 0;
	char *buf = NULL;

	if (len == 0) {
		sbx_err_set(err, "cassette %s: cassette.jsonl is empty (its first line is the header)", c->name);
		return -1;
	}
	while (at < len) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t l = (nl != NULL ? (size_t)(nl - text) : len) - at;

		line++;
		if (l > MOCK_CASSETTE_LINE_MAX) {
			bad(c, line, err, "longer than %d bytes", MOCK_CASSETTE_LINE_MAX);
			return -1;
		}
		if (memchr(text + at, '\0', l) != NULL) {
			bad(c, line, err, "a NUL byte (not JSON)");
			return -1;
		}
		buf = strndup(text + at, l);
		if (buf == NULL || parse_line(c, line, buf, err) != 0) {
			free(buf);
			return -1;
		}
		free(buf);
		at += l + 1;
	}
	for (size_t i = 0; i < c->nex; i++) {
		c->first_token = mock_cassette_max_token(c->ex[i].target, c->first_token);
		for (size_t j = 0; j < c->ex[i].nreq_headers; j++)
			c->first_token = mock_cassette_max_token(c->ex[i].req_headers[j].value, c->first_token);
		for (size_t j = 0; j < c->ex[i].nresp_headers; j++)
			c->first_token = mock_cassette_max_token(c->ex[i].resp_headers[j].value, c->first_token);
	}
	return 0;
}

mock_cassette *mock_cassette_parse(const char *text, size_t len, const char *name, sbx_err *err)
{
	mock_cassette *c = cassette_new(name != NULL ? name : "-");

	if (c == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	if (parse_text(c, text, len, err) != 0) {
		mock_cassette_free(c);
		return NULL;
	}
	return c;
}

/* Every body a line names, present with its hash and size. */
static int check_bodies(mock_cassette *c, sbx_err *err)
{
	for (size_t i = 0; i < c->nex; i++) {
		const mock_cassette_ex *e = &c->ex[i];
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(c->ex[j].body_sha, e->body_sha) == 0;
		if (!seen && mock_cassette_body_check(c, e->body_sha, e->body_size, err) != 0)
			return -1;
		if (e->req_sha[0] != '\0' && mock_cassette_body_check(c, e->req_sha, e->req_size, err) != 0)
			return -1;
	}
	return 0;
}

/* Reads dir/cassette.jsonl whole (bounded by the limits): malloc'd, or
 * NULL with errno (ENOENT: none). */
static char *read_all(const char *path, size_t *len)
{
	size_t max = (size_t)(MOCK_CASSETTE_EXCHANGES_MAX + 1) * 4096 + MOCK_CASSETTE_LINE_MAX;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;
	size_t at = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
		close(fd);
		errno = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf != NULL && at < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + at, (size_t)st.st_size - at);

		if (r <= 0) {
			free(buf);
			buf = NULL;
			break;
		}
		at += (size_t)r;
	}
	close(fd);
	if (buf != NULL)
		buf[at] = '\0';
	*len = at;
	return buf;
}

/* A new cassette's directory and header: 0, or -1 with err. */
static int make_new(mock_cassette *c, const char *dir, sbx_err *err)
{
	char sub[4096];
	time_t now = time(NULL);
	struct tm tm;

	snprintf(sub, sizeof(sub), "%s/bodies", dir);
	if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || (mkdir(sub, 0755) != 0 && errno != EEXIST)) {
		sbx_err_set(err, "cassette %s: making %s: %s", c->name, sub, strerror(errno));
		return -1;
	}
	gmtime_r(&now, &tm);
	strftime(c->created, sizeof(c->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return 0;
}

mock_cassette *mock_cassette_open(const char *dir, bool create, const char *const *redact, size_t nredact,
				  sbx_err *err)
{
	mock_cassette *c = cassette_new(dir);
	char path[4096], sub[4096], *text;
	size_t len = 0;

	if (c == NULL || (c->dir = strdup(dir)) == NULL) {
		mock_cassette_free(c);
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/cassette.jsonl", dir);
	text = read_all(path, &len);
	if (text == NULL && !(create && errno == ENOENT)) {
		sbx_err_set(err, "cassette %s: %s: %s", c->name, path,
			    errno == EFBIG ? "larger than the limits allow (LIMITS.md)" : strerror(errno));
		goto fail;
	}
	if (text == NULL && make_new(c, dir, err) != 0)
		goto fail;
	if (text != NULL) {
		int rc = parse_text(c, text, len, err);

		free(text);
		if (rc != 0 || check_bodies(c, err) != 0)
			goto fail;
		snprintf(sub, sizeof(sub), "%s/bodies", dir);
		if (create && mkdir(sub, 0755) != 0 && errno != EEXIST) {
			sbx_err_set(err, "cassette %s: making %s: %s", c->name, sub, strerror(errno));
			goto fail;
		}
	}
	for (size_t i = 0; i < nredact; i++) {
		if (add_redact(c, 0, redact[i], err) != 0)
			goto fail;
	}
	return c;
fail:
	mock_cassette_free(c);
	return NULL;
}

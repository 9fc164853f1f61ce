/* Fuzz target: sbx-mock's recordings (--record-to writes them, --replay
 * reads them: record.c, replay.c) and replay matching.
 *
 * Input: a recording (the bytes of a --replay file) up to a line "%%",
 * then a request program, one request per line:
 *   "e<i>"        exchange i (modulo the count) as recorded: its method,
 *                 path, query, body, and the key "key-N" for "redacted-N"
 *                 (none for no key)
 *   "m<i><f>"     the same with one thing changed (f: m method, p path,
 *                 q query, b body, k another key, n no key, x "key-0")
 *   "r<M> <P> <K> <body>"  a request as given (K "-": no key)
 *
 * Properties, each abort()s when broken (the reference below states the
 * format and the matching rules independently of replay.c):
 * - the recording is accepted exactly when the reference accepts it, with
 *   the same exchanges (method, path, query, key, request body bytes,
 *   status, Content-Type, X-Request-Id, response body bytes); a refused one
 *   gets "replay fuzz line N: <what>", N the first bad line, and the
 *   message says what kind of thing is wrong (JSON, a NUL byte, the member
 *   it names, base64, no exchange);
 * - an accepted recording round-trips: every exchange written back as a
 *   recording line (mock_rec_exchange_json) reads back to the same
 *   exchanges and kept headers;
 * - replay matching answers a request with the exchange the reference
 *   model picks (the next one, when method, path, query and body are
 *   equal and the key is the Nth distinct key the replay has seen for
 *   "redacted-N", or no key for none), moving on only then; otherwise NULL
 *   and a divergence message naming the exchange expected or the end. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../mock-api/src/proxy/record.h"
#include "sbx/strbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REC_FUZZ_MAX_INPUT (128u * 1024)

static void check(bool ok, const char *what, const char *detail)
{
	if (!ok) {
		fprintf(stderr, "mock_record property broken: %s%s%s\n", what, detail != NULL ? ": " : "",
			detail != NULL ? detail : "");
		abort();
	}
}

/* ---- the reference reader ---- */

typedef struct ref_ex {
	char *method, *path, *query, *key, *body, *ctype, *rid, *resp;
	size_t body_len, resp_len;
	int status;
} ref_ex;

typedef struct ref_rec {
	ref_ex *ex;
	size_t n;
	size_t bad_line;  /* 0: accepted */
	const char *kind; /* what the message must mention */
} ref_rec;

static void ref_ex_free(ref_ex *e)
{
	free(e->method);
	free(e->path);
	free(e->query);
	free(e->key);
	free(e->body);
	free(e->ctype);
	free(e->rid);
	free(e->resp);
}

static void ref_free(ref_rec *r)
{
	for (size_t i = 0; i < r->n; i++)
		ref_ex_free(&r->ex[i]);
	free(r->ex);
}

static int b64v(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Padded base64 (RFC 4648 section 4): groups of 4 from the alphabet, one
 * or two '=' only at the very end. NULL when it is not. */
static char *ref_b64(const char *s, size_t *len)
{
	size_t n = strlen(s), pad = 0;
	char *o;
	uint32_t acc = 0;
	size_t bits = 0, j = 0;

	if (n % 4 != 0)
		return NULL;
	if (n >= 1 && s[n - 1] == '=')
		pad++;
	if (n >= 2 && s[n - 2] == '=')
		pad++;
	if (pad == 1 && n >= 2 && s[n - 2] == '=')
		return NULL;
	o = malloc(n / 4 * 3 + 1);
	check(o != NULL, "out of memory", NULL);
	for (size_t i = 0; i < n - pad; i++) {
		int v = b64v(s[i]);

		if (v < 0) {
			free(o);
			return NULL;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			o[j++] = (char)(acc >> bits & 0xff);
		}
	}
	*len = j;
	return o;
}

/* body: "<name>" as text (up to a NUL), else "<name>_b64", else "". */
static const char *ref_body(const cJSON *o, const char *name, char **out, size_t *len)
{
	char k[32];
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (cJSON_IsString(v)) {
		*out = strdup(v->valuestring);
		*len = strlen(v->valuestring);
		return NULL;
	}
	snprintf(k, sizeof(k), "%s_b64", name);
	v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (cJSON_IsString(v)) {
		*out = ref_b64(v->valuestring, len);
		return *out == NULL ? "base64" : NULL;
	}
	*out = strdup("");
	*len = 0;
	return NULL;
}

static const char *ref_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* The problem with one line's object, or NULL (e filled). */
static const char *ref_exchange(const cJSON *o, ref_ex *e)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
	const cJSON *rh = cJSON_GetObjectItemCaseSensitive(o, "request_headers");
	const cJSON *hd = cJSON_GetObjectItemCaseSensitive(o, "response_headers");
	static const char *const auth[] = {"X-Auth-Token", "X-Access-Token", "X-Api-Key"};
	const char *bad;

	memset(e, 0, sizeof(*e));
	if (!cJSON_IsObject(o))
		return "exchange object";
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "method")))
		return "\"method\"";
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "path")))
		return "\"path\"";
	if (!cJSON_IsNumber(st) || st->valuedouble < 100 || st->valuedouble > 599 ||
	    st->valuedouble != (double)(long)st->valuedouble)
		return "\"status\"";
	e->status = (int)st->valuedouble;
	e->method = strdup(cJSON_GetObjectItemCaseSensitive(o, "method")->valuestring);
	e->path = strdup(cJSON_GetObjectItemCaseSensitive(o, "path")->valuestring);
	e->query = strdup(ref_str(o, "query"));
	for (int i = 0; i < 3 && e->key == NULL; i++) {
		if (cJSON_IsObject(rh) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rh, auth[i])))
			e->key = strdup(ref_str(rh, auth[i]));
	}
	if (e->key == NULL)
		e->key = strdup("");
	e->ctype = strdup(ref_str(hd, "Content-Type"));
	e->rid = strdup(ref_str(hd, "X-Request-Id"));
	bad = ref_body(o, "request_body", &e->body, &e->body_len);
	if (bad == NULL)
		bad = ref_body(o, "body", &e->resp, &e->resp_len);
	return bad;
}

static void ref_read(const char *text, size_t len, ref_rec *r)
{
	size_t at = 0, lineno = 0;

	memset(r, 0, sizeof(*r));
	while (at < len && r->bad_line == 0) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t n = (size_t)((nl != NULL ? nl : text + len) - (text + at));
		char *line;
		cJSON *o;

		lineno++;
		if (n > 0) {
			line = malloc(n + 1);
			check(line != NULL, "out of memory", NULL);
			memcpy(line, text + at, n);
			line[n] = '\0';
			o = memchr(line, '\0', n) == NULL ? cJSON_ParseWithOpts(line, NULL, true) : NULL;
			if (o == NULL) {
				r->bad_line = lineno;
				r->kind = memchr(line, '\0', n) != NULL ? "NUL" : "JSON";
			} else {
				ref_ex e;
				const char *bad = ref_exchange(o, &e);

				if (bad != NULL) {
					r->bad_line = lineno;
					r->kind = bad;
					ref_ex_free(&e);
				} else {
					ref_ex *g = realloc(r->ex, (r->n + 1) * sizeof(*g));

					check(g != NULL, "out of memory", NULL);
					r->ex = g;
					r->ex[r->n++] = e;
				}
			}
			cJSON_Delete(o);
			free(line);
		}
		at += n + (nl != NULL);
	}
	if (r->bad_line == 0 && r->n == 0)
		r->kind = "no exchange";
}

/* ---- comparing ---- */

static bool bytes_eq(const char *a, size_t an, const char *b, size_t bn)
{
	return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

static void same_exchange(const mock_rec_exchange *x, const ref_ex *e, size_t i, const char *what)
{
	char d[96];

	snprintf(d, sizeof(d), "%s, exchange %zu", what, i + 1);
	check(strcmp(x->method, e->method) == 0, "method differs from the reference", d);
	check(strcmp(x->path, e->path) == 0, "path differs from the reference", d);
	check(strcmp(x->query, e->query) == 0, "query differs from the reference", d);
	check(strcmp(x->key, e->key) == 0, "key differs from the reference", d);
	check(x->status == e->status, "status differs from the reference", d);
	check(strcmp(x->ctype, e->ctype) == 0, "Content-Type differs from the reference", d);
	check(strcmp(x->request_id, e->rid) == 0, "X-Request-Id differs from the reference", d);
	check(bytes_eq(x->body, x->body_len, e->body, e->body_len), "request body differs from the reference", d);
	check(bytes_eq(x->resp, x->resp_len, e->resp, e->resp_len), "response body differs from the reference", d);
	check(cJSON_GetObjectItemCaseSensitive(x->headers, "Content-Type") == NULL &&
		      cJSON_GetObjectItemCaseSensitive(x->headers, "X-Request-Id") == NULL,
	      "Content-Type or X-Request-Id left among the kept headers", d);
}

/* Name by name, value by value, in order: cJSON_Compare looks each name up
 * by the first of its copies, so an object with a repeated name (a
 * recording may have one) differs from itself there. */
static bool same_headers(const cJSON *a, const cJSON *b)
{
	const cJSON *x = a != NULL ? a->child : NULL, *y = b != NULL ? b->child : NULL;

	for (; x != NULL && y != NULL; x = x->next, y = y->next)
		if (x->string == NULL || y->string == NULL || strcmp(x->string, y->string) != 0 ||
		    !cJSON_Compare(x, y, true))
			return false;
	return x == NULL && y == NULL;
}

static void round_trip(const mock_rec *rc, const ref_rec *ref)
{
	sbx_strbuf text = SBX_STRBUF_INIT;
	sbx_err err = {{0}};
	mock_rec *again;

	for (size_t i = 0; i < rc->nex; i++) {
		cJSON *o = mock_rec_exchange_json(&rc->ex[i]);
		char *line = cJSON_PrintUnformatted(o);

		check(line != NULL, "out of memory", NULL);
		sbx_strbuf_puts(&text, line);
		sbx_strbuf_puts(&text, "\n");
		free(line);
		cJSON_Delete(o);
	}
	again = mock_rec_from_text(text.data, text.len, "fuzz-again", true, &err);
	check(again != NULL, "a recording written back is refused", err.msg);
	check(again->nex == rc->nex, "a recording written back has another number of exchanges", NULL);
	for (size_t i = 0; i < again->nex; i++) {
		same_exchange(&again->ex[i], &ref->ex[i], i, "written back");
		check(same_headers(again->ex[i].headers, rc->ex[i].headers),
		      "kept headers differ after writing back", NULL);
	}
	mock_rec_free(again);
	sbx_strbuf_free(&text);
}

/* ---- replay matching against a reference model ---- */

typedef struct ref_replay {
	size_t next;
	char *keys[REC_MAX_KEYS];
	size_t nkeys;
} ref_replay;

/* The index ref expects rq to match, or -1; learns a new key on a match. */
static long ref_match(ref_replay *m, const ref_rec *ref, const mock_rec_request *rq)
{
	const ref_ex *e;
	char name[32] = "";
	size_t idx = m->nkeys;

	if (m->next >= ref->n)
		return -1;
	e = &ref->ex[m->next];
	if (rq->key != NULL) {
		for (size_t i = 0; i < m->nkeys; i++) {
			if (strcmp(m->keys[i], rq->key) == 0)
				idx = i;
		}
		snprintf(name, sizeof(name), "redacted-%zu", idx + 1);
	}
	if (strcmp(name, e->key) != 0 || strcmp(rq->method, e->method) != 0 || strcmp(rq->path, e->path) != 0 ||
	    strcmp(rq->query, e->query) != 0 || !bytes_eq(rq->body, rq->body_len, e->body, e->body_len))
		return -1;
	/* the replay learns at most REC_MAX_KEYS keys */
	if (rq->key != NULL && idx == m->nkeys && m->nkeys < REC_MAX_KEYS)
		m->keys[m->nkeys++] = strdup(rq->key);
	return (long)m->next++;
}

/* "key-N" for "redacted-N", NULL for "" (and for a key of another form). */
static const char *key_for(const char *redacted, char *buf, size_t cap)
{
	unsigned long n;
	char *end = NULL;

	if (strncmp(redacted, "redacted-", 9) != 0)
		return NULL;
	n = strtoul(redacted + 9, &end, 10);
	if (end == redacted + 9 || *end != '\0' || n == 0 || n > 12)
		return NULL;
	snprintf(buf, cap, "key-%lu", n);
	return buf;
}

static void run_request(mock_rec *rc, ref_replay *m, const ref_rec *ref, const mock_rec_request *rq)
{
	sbx_strbuf why = SBX_STRBUF_INIT;
	long want = ref_match(m, ref, rq);
	const mock_rec_exchange *got = mock_rec_match(rc, rq, &why);
	char d[200];

	snprintf(d, sizeof(d), "%s %s?%s key %s: expected exchange %ld, got %ld; %s", rq->method, rq->path,
		 rq->query, rq->key != NULL ? rq->key : "-", want + 1, got != NULL ? (long)(got - rc->ex) + 1 : 0,
		 why.data != NULL ? why.data : "");
	check(want < 0 ? got == NULL : got == &rc->ex[want], "replay matching differs from the reference", d);
	check(rc->next == m->next, "the replay cursor differs from the reference", d);
	if (got == NULL) {
		check(why.data != NULL && strncmp(why.data, "replay divergence", 17) == 0,
		      "a divergence without its message", d);
		check(strstr(why.data, m->next < ref->n ? "expected" : "the recording ended") != NULL,
		      "a divergence message does not say what was expected", d);
	}
	sbx_strbuf_free(&why);
}

/* One program line as a request. */
static void program_line(mock_rec *rc, ref_replay *m, const ref_rec *ref, const char *line)
{
	mock_rec_request rq = {0};
	char kbuf[32], *dup = NULL;
	const ref_ex *e;

	if (line[0] == 'r') {
		char *save = NULL, *meth, *path, *key;

		dup = strdup(line + 1);
		meth = strtok_r(dup, " ", &save);
		path = strtok_r(NULL, " ", &save);
		key = strtok_r(NULL, " ", &save);
		rq.method = meth != NULL ? meth : "GET";
		rq.path = path != NULL ? path : "/";
		rq.query = "";
		rq.key = key != NULL && strcmp(key, "-") != 0 ? key : NULL;
		rq.body = save != NULL ? save : "";
		rq.body_len = strlen(rq.body);
	} else if ((line[0] == 'e' || line[0] == 'm') && ref->n > 0) {
		unsigned long i = strtoul(line + 1, NULL, 10) % ref->n;
		const char *f = line + 1 + strspn(line + 1, "0123456789");

		e = &ref->ex[i];
		rq = (mock_rec_request){e->method, e->path, e->query, key_for(e->key, kbuf, sizeof(kbuf)), e->body,
					e->body_len};
		if (line[0] == 'm') {
			switch (*f) {
			case 'm': rq.method = strcmp(e->method, "GET") == 0 ? "POST" : "GET"; break;
			case 'p': rq.path = "/v1/other"; break;
			case 'q': rq.query = e->query[0] != '\0' ? "" : "a=1"; break;
			case 'b': rq.body_len = e->body_len > 0 ? e->body_len - 1 : 1; rq.body = e->body_len > 0 ? e->body : "x"; break;
			case 'k': rq.key = "key-other"; break;
			case 'n': rq.key = NULL; break;
			default: rq.key = "key-0"; break;
			}
		}
	} else {
		return;
	}
	run_request(rc, m, ref, &rq);
	free(dup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *sep;
	size_t rec_len = size;
	sbx_err err = {{0}};
	ref_rec ref;
	mock_rec *rc;
	char want[64];

	if (size > REC_FUZZ_MAX_INPUT)
		return 0;
	sep = memmem(text, size, "\n%%\n", 4);
	if (sep != NULL)
		rec_len = (size_t)(sep - text) + 1;
	ref_read(text, rec_len, &ref);
	rc = mock_rec_from_text(text, rec_len, "fuzz", true, &err);
	if (ref.bad_line != 0 || ref.n == 0) {
		check(rc == NULL, "a recording the reference refuses is accepted", ref.kind);
		if (ref.bad_line != 0)
			snprintf(want, sizeof(want), "replay fuzz line %zu: ", ref.bad_line);
		else
			snprintf(want, sizeof(want), "replay fuzz: ");
		check(strncmp(err.msg, want, strlen(want)) == 0, "the message does not name the line", err.msg);
		check(strstr(err.msg, ref.kind) != NULL || (strcmp(ref.kind, "exchange object") == 0 &&
							    strstr(err.msg, "not an exchange object") != NULL),
		      "the message does not say what is wrong", err.msg);
		check(strlen(err.msg) > strlen(want) + 8, "the message is too short to say anything", err.msg);
		ref_free(&ref);
		return 0;
	}
	check(rc != NULL, "a recording the reference accepts is refused", err.msg);
	check(rc->nex == ref.n, "the number of exchanges differs from the reference", NULL);
	for (size_t i = 0; i < rc->nex; i++)
		same_exchange(&rc->ex[i], &ref.ex[i], i, "read");
	round_trip(rc, &ref);
	if (sep != NULL) {
		ref_replay m = {0};
		const char *p = sep + 4, *end = text + size;

		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t n = (size_t)((nl != NULL ? nl : end) - p);
			char *line = strndup(p, n);

			check(line != NULL, "out of memory", NULL);
			program_line(rc, &m, &ref, line);
			free(line);
			p += n + (nl != NULL);
		}
		for (size_t i = 0; i < m.nkeys; i++)
			free(m.keys[i]);
	}
	mock_rec_free(rc);
	ref_free(&ref);
	return 0;
}

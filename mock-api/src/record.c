/* record: record and replay of control-plane sessions.
 *
 * Record (`--record-upstream URL --record-to FILE`): the mock becomes a proxy
 * in front of any control plane (the real one or another mock). Every
 * control-plane request is forwarded with libsbx's HTTP client (a new
 * connection for each, never retried), answered with the
 * upstream's status, body and relevant headers, and written to FILE as one
 * JSON line per exchange. Credentials never reach the file: the value of
 * X-Api-Key / X-Auth-Token / X-Access-Token becomes "redacted-N", stable per
 * distinct key in order of first use.
 *
 * Replay (`--replay FILE`): the mock answers requests in recorded order with
 * the recorded status, headers and body (so ids and timestamps are the
 * recording's). A request that is not the next recorded one — method, path,
 * query, body or key identity differ — gets a 599 JSend error whose message
 * shows the expected and the received request; it is logged on stderr and
 * the cursor does not move.
 *
 * Never stores a credential, never forwards the admin token, and never
 * touches the model: in these modes the mock holds no sandbox state. */
#define _GNU_SOURCE
#include "server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>

#include "sbx/http.h"

#define REC_MAX_KEYS 256

static const char *const auth_headers[] = {"X-Auth-Token", "X-Access-Token", "X-Api-Key"};
/* Response headers worth keeping (besides Content-Type and X-Request-Id). */
static const char *const kept_headers[] = {"Retry-After", "X-Poll-After", "Allow",
					   "Cache-Control", "Location"};

typedef struct exchange {
	char *method, *path, *query, *key, *body;
	size_t body_len;
	int status;
	char *ctype, *request_id;
	cJSON *headers;      /* kept response headers {name: value} */
	char *resp;
	size_t resp_len;
} exchange;

struct mock_rec {
	pthread_mutex_t lock;
	/* record */
	char *upstream;
	sbx_http_client *http; /* threaded, a new connection per request */
	FILE *out;
	uint64_t seq;
	/* key redaction (both modes): keys[i] ↔ "redacted-(i+1)" */
	char *keys[REC_MAX_KEYS];
	size_t nkeys;
	/* replay */
	exchange *ex;
	size_t nex, next;
	bool quiet;
};

/* ---- helpers ---- */

/* Copies src into dst, truncated to cap - 1 bytes. */
static void scopy(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const unsigned char *p, size_t n)
{
	char *o = malloc((n + 2) / 3 * 4 + 1);
	size_t j = 0;

	if (o == NULL)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		o[j++] = b64chars[(v >> 18) & 63];
		o[j++] = b64chars[(v >> 12) & 63];
		o[j++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
		o[j++] = i + 2 < n ? b64chars[v & 63] : '=';
	}
	o[j] = '\0';
	return o;
}

static int b64_val(char c)
{
	const char *p = c != '\0' ? strchr(b64chars, c) : NULL;

	return p != NULL ? (int)(p - b64chars) : -1;
}

/* What makes s not canonical padded base64 (RFC 4648 section 4), written
 * into buf; NULL when it is valid. */
static const char *b64_problem(const char *s, char *buf, size_t cap)
{
	size_t n = strlen(s);

	if (n % 4 != 0) {
		snprintf(buf, cap, "not valid base64: %zu characters, not a multiple of 4", n);
		return buf;
	}
	for (size_t i = 0; i < n; i++) {
		bool pad_ok = i >= n - 2 && (i == n - 1 || s[n - 1] == '=');

		if (s[i] == '=' && !pad_ok) {
			snprintf(buf, cap, "not valid base64: '=' at character %zu, before the end", i + 1);
			return buf;
		}
		if (s[i] != '=' && b64_val(s[i]) < 0) {
			snprintf(buf, cap, "not valid base64: character %zu is %s%c%s", i + 1,
				 (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? "'" : "byte ",
				 (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?',
				 (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? "'" : "");
			return buf;
		}
	}
	return NULL;
}

static char *b64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s), j = 0;
	char *o = malloc(n / 4 * 3 + 1);

	if (o == NULL || n % 4 != 0) {
		free(o);
		return NULL;
	}
	for (size_t i = 0; i < n; i += 4) {
		int a = b64_val(s[i]), b = b64_val(s[i + 1]);
		int c = s[i + 2] == '=' ? 0 : b64_val(s[i + 2]);
		int d = s[i + 3] == '=' ? 0 : b64_val(s[i + 3]);

		if (a < 0 || b < 0 || c < 0 || d < 0) {
			free(o);
			return NULL;
		}
		o[j++] = (char)((a << 2) | (b >> 4));
		if (s[i + 2] != '=')
			o[j++] = (char)(((b & 15) << 4) | (c >> 2));
		if (s[i + 3] != '=')
			o[j++] = (char)(((c & 3) << 6) | d);
	}
	o[j] = '\0';
	*len = j;
	return o;
}

/* Valid UTF-8 without NUL: storable as a JSON string as is. */
static bool text_ok(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		size_t need;

		if (p[i] == 0)
			return false;
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((p[i] & 0xe0) == 0xc0 && p[i] >= 0xc2)
			need = 2;
		else if ((p[i] & 0xf0) == 0xe0)
			need = 3;
		else if ((p[i] & 0xf8) == 0xf0 && p[i] <= 0xf4)
			need = 4;
		else
			return false;
		if (i + need > n)
			return false;
		for (size_t k = 1; k < need; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
		}
		i += need;
	}
	return true;
}

/* Adds body as "<name>" (text) or "<name>_b64". */
static void add_body(cJSON *o, const char *name, const char *body, size_t len)
{
	char key[32];

	if (body == NULL || len == 0) {
		cJSON_AddStringToObject(o, name, "");
		return;
	}
	if (text_ok(body, len)) {
		char *t = strndup(body, len);

		cJSON_AddStringToObject(o, name, t != NULL ? t : "");
		free(t);
		return;
	}
	snprintf(key, sizeof(key), "%s_b64", name);
	{
		char *b = b64_encode((const unsigned char *)body, len);

		cJSON_AddStringToObject(o, key, b != NULL ? b : "");
		free(b);
	}
}

/* Reads "<name>" or "<name>_b64" back; malloc'ed, NUL-terminated. */
/* The body `name` (text) or `name`_b64 (base64) of a recorded exchange;
 * "" when neither is there. NULL with *why set (what is wrong with the
 * base64, written into whybuf, or "out of memory"). */
static char *get_body(const cJSON *o, const char *name, size_t *len, const char **why, char *whybuf,
		      size_t whycap)
{
	char key[32];
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	char *out;

	*why = "out of memory";
	if (cJSON_IsString(v)) {
		*len = strlen(v->valuestring);
		return strdup(v->valuestring);
	}
	snprintf(key, sizeof(key), "%s_b64", name);
	v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (cJSON_IsString(v)) {
		const char *bad = b64_problem(v->valuestring, whybuf, whycap);

		if (bad != NULL) {
			*why = bad;
			return NULL;
		}
		out = b64_decode(v->valuestring, len);
		return out;
	}
	*len = 0;
	return strdup("");
}

/* "redacted-N" for a key (lock held); "" for no key. */
static void redact(mock_rec *rc, const char *key, char *buf, size_t cap)
{
	size_t i;

	if (key == NULL) {
		snprintf(buf, cap, "%s", "");
		return;
	}
	for (i = 0; i < rc->nkeys; i++) {
		if (strcmp(rc->keys[i], key) == 0)
			break;
	}
	if (i == rc->nkeys && rc->nkeys < REC_MAX_KEYS) {
		rc->keys[i] = strdup(key);
		if (rc->keys[i] != NULL)
			rc->nkeys++;
	}
	snprintf(buf, cap, "redacted-%zu", i + 1);
}

/* The "redacted-N" name of a key the replay has already seen (lock held):
 * N, or 0 when it is new (buf untouched). Never learns the key. */
static size_t key_known(const mock_rec *rc, const char *key, char *buf, size_t cap)
{
	for (size_t i = 0; i < rc->nkeys; i++) {
		if (strcmp(rc->keys[i], key) == 0) {
			snprintf(buf, cap, "redacted-%zu", i + 1);
			return i + 1;
		}
	}
	return 0;
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *value)
{
	sbx_strbuf *sb = cls;

	(void)kind;
	if (sb->len > 0)
		sbx_strbuf_puts(sb, "&");
	sbx_http_escape(sb, key);
	if (value != NULL) {
		sbx_strbuf_puts(sb, "=");
		sbx_http_escape(sb, value);
	}
	return MHD_YES;
}

/* The query string, rebuilt (escaped) from the parsed arguments in order. */
static char *raw_query(const mreq *r)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_arg, &sb);
	return sbx_strbuf_detach(&sb, NULL);
}

static const char *header_in(const mreq *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

static void log_line(const mock_rec *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_line(const mock_rec *rc, const char *fmt, ...)
{
	va_list ap;

	if (rc->quiet)
		return;
	fputs("sbx-mock: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- record ---- */

typedef struct upstream_resp {
	sbx_strbuf body;
	cJSON *headers;
	char ctype[128];
	char request_id[64];
	size_t max;
} upstream_resp;

/* Content-Type, X-Request-Id and the kept headers of the upstream's answer. */
static void take_headers(const sbx_http_resp *hr, upstream_resp *u)
{
	char value[300];

	if (sbx_http_header(hr, "Content-Type", value, sizeof(value)))
		scopy(u->ctype, sizeof(u->ctype), value);
	if (sbx_http_header(hr, "X-Request-Id", value, sizeof(value)))
		scopy(u->request_id, sizeof(u->request_id), value);
	for (size_t i = 0; i < sizeof(kept_headers) / sizeof(kept_headers[0]); i++) {
		if (sbx_http_header(hr, kept_headers[i], value, sizeof(value)))
			cJSON_AddStringToObject(u->headers, kept_headers[i], value);
	}
}

/* The proxy's upstream deadline is long (a slow exec), so a stopping mock
 * must not wait for it: sbx_mock_stop sets `stopping` first. */
static bool mock_stopping(void *ud)
{
	const sbx_mock *mock = ud;

	return atomic_load(&mock->stopping);
}

/* Forwards r upstream; fills u and returns the status, or -1 with err. */
static long forward(mock_rec *rc, mreq *r, const char *query, upstream_resp *u, sbx_err *err)
{
	char lines[3][600];
	const char *ctype = header_in(r, "Content-Type");
	sbx_http_req hq = {
		.method = r->method,
		.path = r->path,
		.query = query,
		.body = r->body.len > 0 ? r->body.data : NULL,
		.body_len = r->body.len,
		.content_type = ctype != NULL ? ctype : "", /* a proxy adds none */
		.max_body = u->max,
		.cancel = mock_stopping,
		.cancel_ud = r->mock,
	};
	sbx_http_resp hr;
	sbx_err herr;
	long status = -1;

	for (size_t i = 0; i < 3; i++) {
		const char *v = header_in(r, auth_headers[i]);

		if (v != NULL) {
			snprintf(lines[i], sizeof(lines[i]), "%s: %s", auth_headers[i], v);
			hq.headers[i] = lines[i];
		}
	}
	if (sbx_http_request(rc->http, &hq, &hr, &herr) != 0) {
		/* libcurl's short words, as the recording proxy always said. */
		if (hr.fail == SBX_HTTP_FAIL_CANCELLED)
			sbx_err_set(err, "upstream %s: request abandoned, the mock is stopping", rc->upstream);
		else
			sbx_err_set(err, "upstream %s: %s", rc->upstream, sbx_http_code_str(hr.curl_code));
		goto out_free_resp;
	}
	status = hr.status;
	take_headers(&hr, u);
	u->body = hr.body;
	sbx_strbuf_init(&hr.body);
out_free_resp:
	sbx_http_resp_free(&hr);
	return status;
}

static void write_exchange(mock_rec *rc, mreq *r, const char *query, long status,
			   const upstream_resp *u)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *rh = cJSON_CreateObject();
	char red[32];
	char *line;

	pthread_mutex_lock(&rc->lock);
	cJSON_AddNumberToObject(o, "seq", (double)++rc->seq);
	cJSON_AddStringToObject(o, "method", r->method);
	cJSON_AddStringToObject(o, "path", r->path);
	cJSON_AddStringToObject(o, "query", query);
	for (size_t i = 0; i < 3; i++) {
		if (header_in(r, auth_headers[i]) != NULL) {
			redact(rc, header_in(r, auth_headers[i]), red, sizeof(red));
			cJSON_AddStringToObject(rh, auth_headers[i], red);
		}
	}
	if (header_in(r, "Content-Type") != NULL)
		cJSON_AddStringToObject(rh, "Content-Type", header_in(r, "Content-Type"));
	cJSON_AddItemToObject(o, "request_headers", rh);
	add_body(o, "request_body", r->body.data, r->body.len);
	cJSON_AddNumberToObject(o, "status", (double)status);
	{
		cJSON *hd = cJSON_Duplicate(u->headers, true);

		if (u->ctype[0] != '\0')
			cJSON_AddStringToObject(hd, "Content-Type", u->ctype);
		if (u->request_id[0] != '\0')
			cJSON_AddStringToObject(hd, "X-Request-Id", u->request_id);
		cJSON_AddItemToObject(o, "response_headers", hd);
	}
	add_body(o, "body", u->body.data, u->body.len);
	line = cJSON_PrintUnformatted(o);
	if (line != NULL) {
		fputs(line, rc->out);
		fputc('\n', rc->out);
		fflush(rc->out);
	}
	pthread_mutex_unlock(&rc->lock);
	free(line);
	cJSON_Delete(o);
}

static void rec_proxy(mock_rec *rc, mreq *r, mresp *out)
{
	upstream_resp u;
	char *query = raw_query(r);
	sbx_err err = {{0}};
	long status;
	const cJSON *h;

	memset(&u, 0, sizeof(u));
	sbx_strbuf_init(&u.body);
	u.headers = cJSON_CreateObject();
	u.max = r->mock->max_file + 1024;
	status = forward(rc, r, query != NULL ? query : "", &u, &err);
	if (status < 0) {
		char msg[600];

		log_line(rc, "record: %s %s: %s", r->method, r->path, err.msg);
		snprintf(msg, sizeof(msg), "recording proxy: %s", err.msg);
		resp_error(out, 502, msg);
		goto out_free;
	}
	write_exchange(rc, r, query != NULL ? query : "", status, &u);
	if (u.request_id[0] != '\0')
		scopy(r->request_id, sizeof(r->request_id), u.request_id);
	resp_raw(out, (int)status, NULL, NULL, 0);
	out->len = u.body.len;
	out->body = sbx_strbuf_detach(&u.body, NULL);
	if (out->body == NULL)
		out->body = strdup("");
	if (u.ctype[0] != '\0') {
		resp_header(out, "Content-Type", u.ctype);
	}
	cJSON_ArrayForEach(h, u.headers)
		resp_header(out, h->string, h->valuestring);
out_free:
	sbx_strbuf_free(&u.body);
	cJSON_Delete(u.headers);
	free(query);
}

/* ---- replay ---- */

static void exchange_free(exchange *e)
{
	free(e->method);
	free(e->path);
	free(e->query);
	free(e->key);
	free(e->body);
	free(e->ctype);
	free(e->request_id);
	cJSON_Delete(e->headers);
	free(e->resp);
}

static char *str_or(const cJSON *o, const char *k, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return strdup(cJSON_IsString(v) ? v->valuestring : dflt);
}

/* What is missing or wrong in a recorded exchange ("no \"method\"", "status 700
 * is not 100-599"), NULL when the required members are there. */
static const char *exchange_shape_error(const cJSON *o, char *buf, size_t cap)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
	static const char *const need[] = {"method", "path"};

	if (!cJSON_IsObject(o))
		return cJSON_IsArray(o) ? "a JSON array, not an exchange object"
					: "a JSON scalar, not an exchange object";
	for (size_t i = 0; i < 2; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, need[i]);

		if (v == NULL) {
			snprintf(buf, cap, "the exchange has no \"%s\"", need[i]);
			return buf;
		}
		if (!cJSON_IsString(v)) {
			snprintf(buf, cap, "\"%s\" is not a string", need[i]);
			return buf;
		}
	}
	if (st == NULL)
		return "the exchange has no \"status\"";
	if (!cJSON_IsNumber(st) || st->valuedouble != (double)(int)st->valuedouble || st->valueint < 100 ||
	    st->valueint > 599)
		return "\"status\" is not a whole number 100-599";
	return NULL;
}

static int parse_exchange(const cJSON *o, exchange *e, sbx_err *err)
{
	const cJSON *rh = cJSON_GetObjectItemCaseSensitive(o, "request_headers");
	const cJSON *hd = cJSON_GetObjectItemCaseSensitive(o, "response_headers");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
	const char *why = NULL, *bad;
	char buf[96], whybuf[96];

	memset(e, 0, sizeof(*e));
	bad = exchange_shape_error(o, buf, sizeof(buf));
	if (bad != NULL) {
		sbx_err_set(err, "%s", bad);
		return -1;
	}
	e->method = strdup(cJSON_GetObjectItemCaseSensitive(o, "method")->valuestring);
	e->path = strdup(cJSON_GetObjectItemCaseSensitive(o, "path")->valuestring);
	e->query = str_or(o, "query", "");
	e->key = strdup("");
	for (size_t i = 0; i < 3 && rh != NULL; i++) {
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(rh, auth_headers[i]);

		if (cJSON_IsString(k)) {
			free(e->key);
			e->key = strdup(k->valuestring);
			break;
		}
	}
	e->body = get_body(o, "request_body", &e->body_len, &why, whybuf, sizeof(whybuf));
	if (e->body == NULL) {
		sbx_err_set(err, "\"request_body_b64\": %s", why);
		return -1;
	}
	e->status = st->valueint;
	e->headers = cJSON_IsObject(hd) ? cJSON_Duplicate(hd, true) : cJSON_CreateObject();
	e->ctype = str_or(e->headers, "Content-Type", "");
	e->request_id = str_or(e->headers, "X-Request-Id", "");
	cJSON_DeleteItemFromObjectCaseSensitive(e->headers, "Content-Type");
	cJSON_DeleteItemFromObjectCaseSensitive(e->headers, "X-Request-Id");
	e->resp = get_body(o, "body", &e->resp_len, &why, whybuf, sizeof(whybuf));
	if (e->resp == NULL) {
		sbx_err_set(err, "\"body_b64\": %s", why);
		return -1;
	}
	if (e->method == NULL || e->path == NULL || e->query == NULL || e->key == NULL ||
	    e->headers == NULL || e->ctype == NULL || e->request_id == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	return 0;
}

/* Why a recording line is not JSON: where the parser stopped, and whether
 * the line was cut off (the last line of the file without its newline). */
static void json_line_error(const char *line, size_t n, bool last_unterminated, sbx_err *err)
{
	const char *end = NULL;
	cJSON *o = cJSON_ParseWithLengthOpts(line, n, &end, false);

	cJSON_Delete(o);
	if (o != NULL && end != NULL && end >= line)
		sbx_err_set(err, "data after the JSON object, from byte %zu (one exchange per line)",
			    (size_t)(end - line) + 1);
	else if (last_unterminated)
		sbx_err_set(err, "not valid JSON: the last line has no newline and stops at byte %zu "
			    "(a truncated recording?)", n);
	else
		sbx_err_set(err, "not valid JSON (the parser stopped at byte %zu of %zu)",
			    end != NULL && end >= line ? (size_t)(end - line) + 1 : (size_t)0, n);
}

static int load_recording(mock_rec *rc, const char *path, sbx_err *err)
{
	FILE *fp = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0, alloc = 0;
	ssize_t n;
	int rc_ = -1;

	struct stat st;

	if (fp == NULL) {
		sbx_err_set(err, "replay %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
		sbx_err_set(err, "replay %s: not a regular file", path);
		fclose(fp);
		return -1;
	}
	while ((n = getline(&line, &cap, fp)) >= 0) {
		cJSON *o;

		lineno++;
		if (n <= 1)
			continue;
		o = cJSON_ParseWithOpts(line, NULL, true); /* nothing may follow the object */
		if (rc->nex == alloc) {
			size_t na = alloc == 0 ? 64 : alloc * 2;
			exchange *ne = realloc(rc->ex, na * sizeof(*ne));

			if (ne == NULL) {
				cJSON_Delete(o);
				sbx_err_set(err, "out of memory");
				goto out_close;
			}
			rc->ex = ne;
			alloc = na;
		}
		if (o == NULL || parse_exchange(o, &rc->ex[rc->nex], err) != 0) {
			if (o == NULL)
				json_line_error(line, (size_t)n - (line[n - 1] == '\n'), line[n - 1] != '\n', err);
			else
				exchange_free(&rc->ex[rc->nex]);
			sbx_err_prefix(err, "replay %s line %zu", path, lineno);
			cJSON_Delete(o);
			goto out_close;
		}
		rc->nex++;
		cJSON_Delete(o);
	}
	if (ferror(fp))
		sbx_err_set(err, "replay %s: read error after line %zu", path, lineno);
	else if (rc->nex == 0)
		sbx_err_set(err, "replay %s: no exchange in it (an empty recording answers nothing)",
			    path);
	else
		rc_ = 0;
out_close:
	free(line);
	fclose(fp);
	return rc_;
}

static void describe(sbx_strbuf *sb, const char *method, const char *path, const char *query,
		     const char *key, const char *body, size_t len)
{
	sbx_strbuf_printf(sb, "%s %s%s%s (key %s, body %zu bytes%s%.*s%s)", method, path,
			  query[0] != '\0' ? "?" : "", query, key[0] != '\0' ? key : "none", len,
			  len > 0 ? ": " : "", len > 120 ? 120 : (int)len, body,
			  len > 120 ? "..." : "");
}

static void replay_answer(mock_rec *rc, mreq *r, mresp *out)
{
	char *query = raw_query(r);
	char key[32] = "";
	const char *k = NULL;
	exchange *e = NULL;
	bool match = false;
	size_t at;
	const cJSON *h;

	for (size_t i = 0; i < 3 && k == NULL; i++)
		k = header_in(r, auth_headers[i]);
	pthread_mutex_lock(&rc->lock);
	at = rc->next;
	if (k != NULL && key_known(rc, k, key, sizeof(key)) == 0 && at >= rc->nex)
		snprintf(key, sizeof(key), "%s", "a key new to this replay");
	if (at < rc->nex) {
		e = &rc->ex[at];
		/* key identity: the Nth distinct key of the replay is redacted-N */
		if (k != NULL) {
			size_t before = rc->nkeys;

			redact(rc, k, key, sizeof(key));
			match = strcmp(key, e->key) == 0;
			if (!match && rc->nkeys > before) {
				free(rc->keys[--rc->nkeys]); /* do not learn from a divergent request */
				rc->keys[rc->nkeys] = NULL;
				snprintf(key, sizeof(key), "%s", "a key new to this replay");
			}
		} else {
			match = e->key[0] == '\0';
		}
		match = match && strcmp(e->method, r->method) == 0 && strcmp(e->path, r->path) == 0 &&
			strcmp(e->query, query != NULL ? query : "") == 0 && e->body_len == r->body.len &&
			(r->body.len == 0 || memcmp(e->body, r->body.data, r->body.len) == 0);
		if (match)
			rc->next++;
	}
	pthread_mutex_unlock(&rc->lock);
	if (!match) {
		sbx_strbuf msg = SBX_STRBUF_INIT;

		if (e == NULL)
			sbx_strbuf_printf(&msg, "replay divergence: the recording ended after %zu exchanges; "
					  "received ", rc->nex);
		else
			sbx_strbuf_printf(&msg, "replay divergence at exchange %zu of %zu: expected ", at + 1,
					  rc->nex);
		if (e != NULL) {
			describe(&msg, e->method, e->path, e->query, e->key, e->body, e->body_len);
			sbx_strbuf_puts(&msg, "; received ");
		}
		describe(&msg, r->method, r->path, query != NULL ? query : "", key,
			 r->body.data != NULL ? r->body.data : "", r->body.len);
		log_line(rc, "%s", sbx_strbuf_str(&msg));
		resp_error(out, 599, sbx_strbuf_str(&msg));
		sbx_strbuf_free(&msg);
		free(query);
		return;
	}
	free(query);
	if (e->request_id[0] != '\0')
		scopy(r->request_id, sizeof(r->request_id), e->request_id);
	resp_raw(out, e->status, NULL, NULL, 0);
	out->body = malloc(e->resp_len + 1);
	if (out->body == NULL) {
		resp_error(out, 500, "out of memory");
		return;
	}
	memcpy(out->body, e->resp, e->resp_len);
	out->len = e->resp_len;
	if (e->ctype[0] != '\0')
		resp_header(out, "Content-Type", e->ctype);
	cJSON_ArrayForEach(h, e->headers) {
		if (cJSON_IsString(h))
			resp_header(out, h->string, h->valuestring);
	}
}

/* ---- lifecycle ---- */

static sbx_http_client *new_upstream_client(const char *upstream, sbx_err *err)
{
	sbx_http_opts o = {
		.base_url = upstream,
		.timeout_ms = 900000,
		.threaded = true,  /* every MHD worker forwards at once */
		.no_reuse = true,  /* a dead reused connection would make libcurl resend */
	};

	return sbx_http_client_new(&o, err);
}

mock_rec *mock_rec_new(const sbx_mock_config *cfg, sbx_err *err)
{
	mock_rec *rc;

	if (cfg->record_upstream == NULL && cfg->replay == NULL)
		return NULL;
	rc = calloc(1, sizeof(*rc));
	if (rc == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&rc->lock, NULL);
	rc->quiet = cfg->quiet;
	if (cfg->record_upstream != NULL && cfg->replay != NULL) {
		sbx_err_set(err, "record and replay exclude each other");
		goto out_free;
	}
	if (cfg->record_upstream != NULL) {
		size_t len = strlen(cfg->record_upstream);

		if (strncmp(cfg->record_upstream, "http://", 7) != 0 &&
		    strncmp(cfg->record_upstream, "https://", 8) != 0) {
			sbx_err_set(err, "record upstream \"%s\" must be an http:// or https:// URL",
				    cfg->record_upstream);
			goto out_free;
		}
		if (cfg->record_to == NULL) {
			sbx_err_set(err, "recording needs a file to record to (--record-to)");
			goto out_free;
		}
		rc->upstream = strndup(cfg->record_upstream,
				       len > 0 && cfg->record_upstream[len - 1] == '/' ? len - 1 : len);
		if (rc->upstream == NULL) {
			sbx_err_set(err, "out of memory");
			goto out_free;
		}
		rc->http = new_upstream_client(rc->upstream, err);
		if (rc->http == NULL)
			goto out_free;
		rc->out = fopen(cfg->record_to, "w");
		if (rc->out == NULL) {
			sbx_err_set(err, "record to %s: %s", cfg->record_to, strerror(errno));
			goto out_free;
		}
		return rc;
	}
	if (load_recording(rc, cfg->replay, err) != 0)
		goto out_free;
	return rc;

out_free:
	mock_rec_free(rc);
	return NULL;
}

void mock_rec_free(mock_rec *rc)
{
	if (rc == NULL)
		return;
	if (rc->out != NULL)
		fclose(rc->out);
	sbx_http_client_free(rc->http);
	free(rc->upstream);
	for (size_t i = 0; i < rc->nkeys; i++)
		free(rc->keys[i]);
	for (size_t i = 0; i < rc->nex; i++)
		exchange_free(&rc->ex[i]);
	free(rc->ex);
	pthread_mutex_destroy(&rc->lock);
	free(rc);
}

bool mock_rec_dispatch(mreq *r, mresp *out)
{
	mock_rec *rc = r->mock->rec;

	if (rc == NULL)
		return false;
	if (rc->upstream != NULL)
		rec_proxy(rc, r, out);
	else
		replay_answer(rc, r, out);
	return true;
}

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
#include "proxy/record.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>

#include "sbx/http_client.h"

const char *const mock_rec_auth_headers[3] = {"X-Auth-Token", "X-Access-Token", "X-Api-Key"};
/* Response headers worth keeping (besides Content-Type and X-Request-Id). */
static const char *const kept_headers[] = {"Retry-After", "X-Poll-After", "Allow",
					   "Cache-Control", "Location"};

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

const char mock_rec_b64chars[] =
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
		o[j++] = mock_rec_b64chars[(v >> 18) & 63];
		o[j++] = mock_rec_b64chars[(v >> 12) & 63];
		o[j++] = i + 1 < n ? mock_rec_b64chars[(v >> 6) & 63] : '=';
		o[j++] = i + 2 < n ? mock_rec_b64chars[v & 63] : '=';
	}
	o[j] = '\0';
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
void mock_rec_add_body(cJSON *o, const char *name, const char *body, size_t len)
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

/* "redacted-N" for a key (lock held); "" for no key. */
void mock_rec_redact(mock_rec *rc, const char *key, char *buf, size_t cap)
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
char *mock_rec_raw_query(const mreq *r)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_arg, &sb);
	return sbx_strbuf_detach(&sb, NULL);
}

const char *mock_rec_header(const mreq *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

void mock_rec_log(const mock_rec *rc, const char *fmt, ...)
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

cJSON *mock_rec_exchange_json(const mock_rec_exchange *e)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *rh = cJSON_AddObjectToObject(o, "request_headers");
	cJSON *hd = cJSON_Duplicate(e->headers, true);

	cJSON_AddStringToObject(o, "method", e->method);
	cJSON_AddStringToObject(o, "path", e->path);
	cJSON_AddStringToObject(o, "query", e->query);
	if (e->key[0] != '\0')
		cJSON_AddStringToObject(rh, "X-Api-Key", e->key);
	mock_rec_add_body(o, "request_body", e->body, e->body_len);
	cJSON_AddNumberToObject(o, "status", e->status);
	if (hd == NULL)
		hd = cJSON_CreateObject();
	if (e->ctype[0] != '\0')
		cJSON_AddStringToObject(hd, "Content-Type", e->ctype);
	if (e->request_id[0] != '\0')
		cJSON_AddStringToObject(hd, "X-Request-Id", e->request_id);
	cJSON_AddItemToObject(o, "response_headers", hd);
	mock_rec_add_body(o, "body", e->resp, e->resp_len);
	return o;
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
	const char *ctype = mock_rec_header(r, "Content-Type");
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
		const char *v = mock_rec_header(r, mock_rec_auth_headers[i]);

		if (v != NULL) {
			snprintf(lines[i], sizeof(lines[i]), "%s: %s", mock_rec_auth_headers[i], v);
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
		if (mock_rec_header(r, mock_rec_auth_headers[i]) != NULL) {
			mock_rec_redact(rc, mock_rec_header(r, mock_rec_auth_headers[i]), red, sizeof(red));
			cJSON_AddStringToObject(rh, mock_rec_auth_headers[i], red);
		}
	}
	if (mock_rec_header(r, "Content-Type") != NULL)
		cJSON_AddStringToObject(rh, "Content-Type", mock_rec_header(r, "Content-Type"));
	cJSON_AddItemToObject(o, "request_headers", rh);
	mock_rec_add_body(o, "request_body", r->body.data, r->body.len);
	cJSON_AddNumberToObject(o, "status", (double)status);
	{
		cJSON *hd = cJSON_Duplicate(u->headers, true);

		if (u->ctype[0] != '\0')
			cJSON_AddStringToObject(hd, "Content-Type", u->ctype);
		if (u->request_id[0] != '\0')
			cJSON_AddStringToObject(hd, "X-Request-Id", u->request_id);
		cJSON_AddItemToObject(o, "response_headers", hd);
	}
	mock_rec_add_body(o, "body", u->body.data, u->body.len);
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

void mock_rec_proxy(mock_rec *rc, mreq *r, mresp *out)
{
	upstream_resp u;
	char *query = mock_rec_raw_query(r);
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

		mock_rec_log(rc, "record: %s %s: %s", r->method, r->path, err.msg);
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

void mock_rec_exchange_free(mock_rec_exchange *e)
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

/* A recording proxy for cfg->record_upstream (record mode of mock_rec_new). */
mock_rec *mock_rec_recorder_new(const sbx_mock_config *cfg, sbx_err *err)
{
	mock_rec *rc;

	rc = calloc(1, sizeof(*rc));
	if (rc == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&rc->lock, NULL);
	rc->quiet = cfg->quiet;
	{
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
		mock_rec_exchange_free(&rc->ex[i]);
	free(rc->ex);
	pthread_mutex_destroy(&rc->lock);
	free(rc);
}

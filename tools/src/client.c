/* client: requests through libsbx's HTTP client (sbx/http_client.h), JSend parsing
 * and error mapping; see client.h. Never prints, never retries, never exits. */
#include "client.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sbx/http_client.h"
#include "sbx/strbuf.h"

#define CTL_USER_AGENT "sbxctl/0.1"

const char *ctl_errclass_name(ctl_errclass cls)
{
	switch (cls) {
	case CTL_E_NONE: return "OK";
	case CTL_E_AUTH: return "AuthError";
	case CTL_E_PAYMENT: return "PaymentRequiredError";
	case CTL_E_PERMISSION: return "PermissionError";
	case CTL_E_NOT_FOUND: return "NotFoundError";
	case CTL_E_VALIDATION: return "ValidationError";
	case CTL_E_RATE_LIMIT: return "RateLimitError";
	case CTL_E_SERVER: return "ServerError";
	case CTL_E_API: return "ApiError";
	case CTL_E_CONNECTION: return "ConnectionError";
	case CTL_E_TIMEOUT: return "TimeoutError";
	case CTL_E_PROTOCOL: return "ProtocolError";
	case CTL_E_LOCAL: return "LocalError";
	}
	return "Error";
}

ctl_errclass ctl_errclass_for_status(long status)
{
	switch (status) {
	case 401: return CTL_E_AUTH;
	case 402: return CTL_E_PAYMENT;
	case 403: return CTL_E_PERMISSION;
	case 404: return CTL_E_NOT_FOUND;
	case 400:
	case 409:
	case 422: return CTL_E_VALIDATION;
	case 429: return CTL_E_RATE_LIMIT;
	default: break;
	}
	return status >= 500 ? CTL_E_SERVER : CTL_E_API;
}

int ctl_client_init(ctl_client *c, const char *base_url, const char *api_key, const char *admin_token)
{
	memset(c, 0, sizeof *c);
	c->base_url = sbx_strdup(base_url);
	if (c->base_url == NULL)
		goto out_fail;
	size_t n = strlen(c->base_url);
	while (n > 0 && c->base_url[n - 1] == '/')
		c->base_url[--n] = '\0';
	if (api_key != NULL && (c->api_key = sbx_strdup(api_key)) == NULL)
		goto out_fail;
	if (admin_token != NULL && (c->admin_token = sbx_strdup(admin_token)) == NULL)
		goto out_fail;
	sbx_http_opts o = {
		.base_url = c->base_url,
		.headers = {"Accept: application/json, application/x-ndjson"},
		.user_agent = CTL_USER_AGENT,
		.connect_timeout_ms = 10000,
	};
	c->http = sbx_http_client_new(&o, NULL);
	if (c->http == NULL)
		goto out_fail;
	return 0;
out_fail:
	ctl_client_free(c);
	return -1;
}

void ctl_client_free(ctl_client *c)
{
	sbx_http_client_free(c->http);
	free(c->base_url);
	free(c->api_key);
	free(c->admin_token);
	memset(c, 0, sizeof *c);
}

void ctl_response_free(ctl_response *resp)
{
	sbx_strbuf_free(&resp->body);
	cJSON_Delete(resp->envelope);
	memset(resp, 0, sizeof *resp);
}

cJSON *ctl_json_parse_exact(const char *text, size_t len)
{
	const char *end = NULL;
	cJSON *v = cJSON_ParseWithLengthOpts(text, len, &end, false);

	/* (cJSON's own require_null_terminated wants a NUL inside len) */
	while (v != NULL && end < text + len && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
		end++;
	if (v != NULL && end != text + len) {
		cJSON_Delete(v);
		v = NULL;
	}
	return v;
}

bool ctl_escape(sbx_strbuf *sb, const char *s)
{
	return sbx_http_escape(sb, s);
}

double ctl_parse_retry_after(const char *v)
{
	double d = sbx_http_parse_retry_after(v);

	/* "inf", "nan", "1e999": not a delay anyone can wait (-1: none) */
	if (!isfinite(d) || d > 86400.0 * 365)
		return -1;
	return d;
}

long ctl_parse_poll_after_ms(const char *v)
{
	if (v == NULL || *v == '\0')
		return -1;
	char *end = NULL;
	double n = strtod(v, &end);
	while (end != v && *end == ' ')
		end++;
	if (end != v && strcmp(end, "s") == 0)
		n *= 1000;
	else if (end == v || (*end != '\0' && strcmp(end, "ms") != 0))
		return -1;
	/* at most a day, in either unit; !(n >= 0) also refuses NaN, whose
	 * cast to long is undefined */
	if (!(n >= 0) || n > 86400000.0)
		return -1;
	return (long)n;
}

/* The 2xx body of a streaming request goes to the caller's on_chunk. */
typedef struct chunk_ctx {
	const ctl_request *req;
	bool aborted; /* on_chunk asked to stop */
} chunk_ctx;

static bool on_chunk(void *ud, const void *data, size_t len)
{
	chunk_ctx *cc = ud;

	if (cc->req->on_chunk(cc->req->ud, data, len))
		return true;
	cc->aborted = true;
	return false;
}

static void header_copy(const sbx_http_resp *hr, const char *name, char *dst, size_t cap)
{
	if (!sbx_http_header(hr, name, dst, cap))
		dst[0] = '\0';
}

/* Takes the body and the headers sbxctl cares about from the exchange. */
static void take_answer(ctl_response *resp, sbx_http_resp *hr)
{
	resp->status = hr->status;
	resp->body = hr->body;
	sbx_strbuf_init(&hr->body);
	header_copy(hr, "x-request-id", resp->request_id, sizeof resp->request_id);
	if (resp->request_id[0] == '\0')
		header_copy(hr, "x-fc-request-id", resp->request_id, sizeof resp->request_id);
	header_copy(hr, "retry-after", resp->retry_after, sizeof resp->retry_after);
	header_copy(hr, "x-poll-after", resp->poll_after, sizeof resp->poll_after);
	header_copy(hr, "content-type", resp->content_type, sizeof resp->content_type);
}

static void err_init(ctl_error *err, const ctl_request *req)
{
	memset(err, 0, sizeof *err);
	err->retry_after = -1;
	snprintf(err->method, sizeof err->method, "%s", req->method);
	snprintf(err->path, sizeof err->path, "%s", req->path);
}

static void err_from_headers(ctl_error *err, const ctl_response *resp)
{
	snprintf(err->request_id, sizeof err->request_id, "%s", resp->request_id);
	err->retry_after = ctl_parse_retry_after(resp->retry_after);
}

static const char *default_message(long status)
{
	switch (status) {
	case 401: return "missing or invalid API key (set CREATEOS_SANDBOX_API_KEY or pass --api-key)";
	case 402: return "payment required: insufficient credit";
	case 403: return "the API key cannot access this resource";
	case 404: return "not found";
	case 429: return "rate limited: retry after the Retry-After delay";
	case 503: return "service unavailable: no host with capacity, retry shortly";
	default: return "request failed";
	}
}

static void append_scalar(sbx_strbuf *sb, const cJSON *v)
{
	if (cJSON_IsString(v)) {
		sbx_strbuf_puts(sb, v->valuestring);
		return;
	}
	char *s = cJSON_PrintUnformatted(v);
	if (s != NULL)
		sbx_strbuf_puts(sb, s);
	free(s);
}

/* JSend fail data: a string, or {"field": "message", "code": "X"}. */
static void message_from_fail(ctl_error *err, const cJSON *data)
{
	if (cJSON_IsString(data)) {
		snprintf(err->message, sizeof err->message, "%s", data->valuestring);
		return;
	}
	if (!cJSON_IsObject(data))
		return;
	sbx_strbuf sb = SBX_STRBUF_INIT;
	const cJSON *it = NULL;
	cJSON_ArrayForEach(it, data) {
		if (strcmp(it->string, "code") == 0 && cJSON_IsString(it)) {
			snprintf(err->code, sizeof err->code, "%s", it->valuestring);
			continue;
		}
		if (sb.len > 0)
			sbx_strbuf_puts(&sb, ", ");
		/* {"error": "sandbox not found"} is the message itself, not a
		 * field named "error" (which printed "...NotFoundError...: error: ..."). */
		if (strcmp(it->string, "error") != 0 && strcmp(it->string, "message") != 0)
			sbx_strbuf_printf(&sb, "%s: ", it->string);
		append_scalar(&sb, it);
	}
	snprintf(err->message, sizeof err->message, "%s", sbx_strbuf_str(&sb));
	sbx_strbuf_free(&sb);
}

static void body_excerpt(char *dst, size_t cap, const sbx_strbuf *body);

/* The body as one JSON value with nothing but blanks after it, or NULL. */
static cJSON *parse_body(const sbx_strbuf *body)
{
	return body->len > 0 ? ctl_json_parse_exact(body->data, body->len) : NULL;
}

static void map_http_error(ctl_error *err, ctl_response *resp)
{
	err->cls = ctl_errclass_for_status(resp->status);
	err->status = resp->status;
	err_from_headers(err, resp);
	cJSON *env = parse_body(&resp->body);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(env, "status");
	if (cJSON_IsString(st) && strcmp(st->valuestring, "error") == 0) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(env, "message");
		if (cJSON_IsString(m))
			snprintf(err->message, sizeof err->message, "%s", m->valuestring);
	} else if (cJSON_IsString(st) && strcmp(st->valuestring, "fail") == 0) {
		message_from_fail(err, cJSON_GetObjectItemCaseSensitive(env, "data"));
	}
	if (err->message[0] == '\0' && resp->body.len > 0 && !(cJSON_IsString(st) &&
	    (strcmp(st->valuestring, "error") == 0 || strcmp(st->valuestring, "fail") == 0))) {
		/* A proxy's HTML page or a truncated body: say so, not only the
		 * status's default. */
		char ex[300];

		body_excerpt(ex, sizeof ex, &resp->body);
		snprintf(err->message, sizeof err->message, "%s (the answer is not a JSend envelope: body starts '%s')",
			 default_message(resp->status), ex);
	}
	if (err->message[0] == '\0')
		snprintf(err->message, sizeof err->message, "%s", default_message(resp->status));
	resp->envelope = env;
	resp->data = cJSON_GetObjectItemCaseSensitive(env, "data");
}

static void body_excerpt(char *dst, size_t cap, const sbx_strbuf *body)
{
	size_t n = body->len < 60 ? body->len : 60;
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		unsigned char ch = (unsigned char)body->data[i];
		if (isprint(ch)) {
			dst[o++] = (char)ch;
		} else {
			o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", ch);
		}
	}
	dst[o] = '\0';
}

/* A 2xx answer must carry {"status":"success","data":...} (or be 204/205). */
static int parse_success(ctl_response *resp, ctl_error *err)
{
	char ex[300];
	if (resp->body.len == 0) {
		if (resp->status == 204 || resp->status == 205)
			return 0;
		err->cls = CTL_E_PROTOCOL;
		snprintf(err->message, sizeof err->message, "empty body in an HTTP %ld answer", resp->status);
		return -1;
	}
	resp->envelope = parse_body(&resp->body);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(resp->envelope, "status");
	if (resp->envelope == NULL || !cJSON_IsString(st) || strcmp(st->valuestring, "success") != 0 ||
	    cJSON_GetObjectItemCaseSensitive(resp->envelope, "data") == NULL) {
		body_excerpt(ex, sizeof ex, &resp->body);
		err->cls = CTL_E_PROTOCOL;
		snprintf(err->message, sizeof err->message, "%s in an HTTP %ld answer (body starts '%s')",
			 resp->envelope == NULL ? "malformed JSON (not a JSend envelope)"
			 : !cJSON_IsString(st) || strcmp(st->valuestring, "success") != 0
				 ? "no JSend success envelope"
				 : "a JSend success envelope without `data`",
			 resp->status, ex);
		cJSON_Delete(resp->envelope);
		resp->envelope = NULL;
		return -1;
	}
	resp->data = cJSON_GetObjectItemCaseSensitive(resp->envelope, "data");
	return 0;
}

static void map_transport_error(ctl_error *err, const sbx_http_resp *hr, const char *what)
{
	err->status = hr->status;
	if (hr->fail == SBX_HTTP_FAIL_LOCAL) {
		err->cls = CTL_E_LOCAL;
		snprintf(err->message, sizeof err->message, "%s", what);
		return;
	}
	if (hr->fail == SBX_HTTP_FAIL_TIMEOUT) {
		err->cls = CTL_E_TIMEOUT;
		snprintf(err->message, sizeof err->message, "no complete answer before the deadline: %s", what);
		return;
	}
	err->cls = CTL_E_CONNECTION;
	if (hr->status > 0)
		snprintf(err->message, sizeof err->message, "connection broke during the HTTP %ld answer: %s",
			 hr->status, what);
	else
		snprintf(err->message, sizeof err->message, "%s", what);
}

/* Sends one request; 0 when a complete answer came (any status). */
static int send_request(ctl_client *c, const ctl_request *req, ctl_response *resp, ctl_error *err)
{
	sbx_strbuf key = SBX_STRBUF_INIT;
	chunk_ctx cc = {.req = req};
	const char *secret = req->admin ? c->admin_token : c->api_key;
	sbx_http_req hq = {
		.method = req->method,
		.path = req->path,
		.query = req->query,
		.body = req->body,
		.body_len = req->body_len,
		.content_type = req->body != NULL ? req->content_type : NULL,
		.timeout_ms = c->timeout_ms,
		.sink = req->on_chunk != NULL ? on_chunk : NULL,
		.sink_ud = &cc,
		.sink_2xx_only = true,
	};
	sbx_http_resp hr;
	sbx_err herr = {{0}};
	int ret = -1;

	if (secret != NULL) {
		sbx_strbuf_printf(&key, "%s: %s", req->admin ? "X-Mock-Admin-Token" : "X-Api-Key", secret);
		hq.headers[0] = sbx_strbuf_str(&key);
	}
	if (key.oom) {
		err->cls = CTL_E_LOCAL;
		snprintf(err->message, sizeof err->message, "out of memory");
		goto out_free_key;
	}
	ret = sbx_http_request(c->http, &hq, &hr, &herr);
	take_answer(resp, &hr);
	if (cc.aborted) {
		err->cls = CTL_E_LOCAL;
		err->status = resp->status;
		snprintf(err->message, sizeof err->message, "could not write the received data");
		ret = -1;
	} else if (ret != 0) {
		map_transport_error(err, &hr, herr.msg);
		err_from_headers(err, resp);
	} else {
		err_from_headers(err, resp);
	}
	sbx_http_resp_free(&hr);
out_free_key:
	sbx_strbuf_free(&key);
	return ret;
}

int ctl_answer_read(ctl_response *resp, bool raw, ctl_error *err)
{
	err->status = resp->status;
	err_from_headers(err, resp);
	if (resp->status < 200 || resp->status >= 300) {
		map_http_error(err, resp);
		return -1;
	}
	if (raw)
		return 0;
	return parse_success(resp, err);
}

int ctl_request_do(ctl_client *c, const ctl_request *req, ctl_response *resp, ctl_error *err)
{
	memset(resp, 0, sizeof *resp);
	err_init(err, req);
	if (send_request(c, req, resp, err) != 0)
		return -1;
	return ctl_answer_read(resp, req->raw || req->on_chunk != NULL, err);
}

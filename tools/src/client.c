/* client: libcurl requests, JSend parsing and error mapping; see client.h.
 * Never prints, never retries, never exits. */
#include "client.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

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

static char *dup_str(const char *s)
{
	if (s == NULL)
		return NULL;
	size_t n = strlen(s) + 1;
	char *r = malloc(n);
	if (r != NULL)
		memcpy(r, s, n);
	return r;
}

int ctl_client_init(ctl_client *c, const char *base_url, const char *api_key, const char *admin_token)
{
	memset(c, 0, sizeof *c);
	c->base_url = dup_str(base_url);
	if (c->base_url == NULL)
		goto out_fail;
	size_t n = strlen(c->base_url);
	while (n > 0 && c->base_url[n - 1] == '/')
		c->base_url[--n] = '\0';
	if (api_key != NULL && (c->api_key = dup_str(api_key)) == NULL)
		goto out_fail;
	if (admin_token != NULL && (c->admin_token = dup_str(admin_token)) == NULL)
		goto out_fail;
	c->curl = curl_easy_init();
	if (c->curl == NULL)
		goto out_fail;
	return 0;
out_fail:
	ctl_client_free(c);
	return -1;
}

void ctl_client_free(ctl_client *c)
{
	if (c->curl != NULL)
		curl_easy_cleanup(c->curl);
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

bool ctl_escape(sbx_strbuf *sb, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~') {
			sbx_strbuf_append(sb, p, 1);
		} else {
			char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
			sbx_strbuf_append(sb, e, 3);
		}
	}
	return !sb->oom;
}

double ctl_parse_retry_after(const char *v)
{
	if (v == NULL || *v == '\0')
		return -1;
	char *end = NULL;
	double secs = strtod(v, &end);
	if (end != v && *end == '\0')
		return secs < 0 ? 0 : secs;
	time_t when = curl_getdate(v, NULL);
	if (when == -1)
		return -1;
	double d = difftime(when, time(NULL));
	return d < 0 ? 0 : d;
}

long ctl_parse_poll_after_ms(const char *v)
{
	if (v == NULL || *v == '\0')
		return -1;
	char *end = NULL;
	double n = strtod(v, &end);
	if (end == v || n < 0 || n > 86400000.0)
		return -1;
	while (*end == ' ')
		end++;
	if (*end == '\0' || strcmp(end, "ms") == 0)
		return (long)n;
	if (strcmp(end, "s") == 0)
		return (long)(n * 1000);
	return -1;
}

/* Per-transfer state for the curl callbacks. */
typedef struct xfer {
	CURL *curl;
	const ctl_request *req;
	ctl_response *resp;
	bool aborted; /* on_chunk asked to stop */
} xfer;

static void copy_trimmed(char *dst, size_t cap, const char *s, size_t len)
{
	while (len > 0 && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	if (len >= cap)
		len = cap - 1;
	memcpy(dst, s, len);
	dst[len] = '\0';
}

static bool header_is(const char *line, size_t len, const char *name, const char **val, size_t *vlen)
{
	size_t n = strlen(name);
	if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
		return false;
	*val = line + n + 1;
	*vlen = len - n - 1;
	return true;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	xfer *x = ud;
	size_t len = size * nmemb;
	ctl_response *r = x->resp;
	const char *v = NULL;
	size_t vlen = 0;
	if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
		/* A new status line (after 100 Continue): forget earlier headers. */
		r->request_id[0] = r->retry_after[0] = r->poll_after[0] = r->content_type[0] = '\0';
	} else if (header_is(data, len, "x-request-id", &v, &vlen)) {
		copy_trimmed(r->request_id, sizeof r->request_id, v, vlen);
	} else if (header_is(data, len, "x-fc-request-id", &v, &vlen) && r->request_id[0] == '\0') {
		copy_trimmed(r->request_id, sizeof r->request_id, v, vlen);
	} else if (header_is(data, len, "retry-after", &v, &vlen)) {
		copy_trimmed(r->retry_after, sizeof r->retry_after, v, vlen);
	} else if (header_is(data, len, "x-poll-after", &v, &vlen)) {
		copy_trimmed(r->poll_after, sizeof r->poll_after, v, vlen);
	} else if (header_is(data, len, "content-type", &v, &vlen)) {
		copy_trimmed(r->content_type, sizeof r->content_type, v, vlen);
	}
	return len;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	xfer *x = ud;
	size_t len = size * nmemb;
	long status = 0;
	curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300 && x->req->on_chunk != NULL) {
		if (!x->req->on_chunk(x->req->ud, data, len)) {
			x->aborted = true;
			return 0;
		}
		return len;
	}
	if (!sbx_strbuf_append(&x->resp->body, data, len))
		return 0;
	return len;
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
		sbx_strbuf_printf(&sb, "%s: ", it->string);
		append_scalar(&sb, it);
	}
	snprintf(err->message, sizeof err->message, "%s", sbx_strbuf_str(&sb));
	sbx_strbuf_free(&sb);
}

static void map_http_error(ctl_error *err, ctl_response *resp)
{
	err->cls = ctl_errclass_for_status(resp->status);
	err->status = resp->status;
	err_from_headers(err, resp);
	cJSON *env = resp->body.len > 0 ? cJSON_ParseWithLength(resp->body.data, resp->body.len) : NULL;
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(env, "status");
	if (cJSON_IsString(st) && strcmp(st->valuestring, "error") == 0) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(env, "message");
		if (cJSON_IsString(m))
			snprintf(err->message, sizeof err->message, "%s", m->valuestring);
	} else if (cJSON_IsString(st) && strcmp(st->valuestring, "fail") == 0) {
		message_from_fail(err, cJSON_GetObjectItemCaseSensitive(env, "data"));
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
	resp->envelope = cJSON_ParseWithLength(resp->body.data, resp->body.len);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(resp->envelope, "status");
	if (resp->envelope == NULL || !cJSON_IsString(st) || strcmp(st->valuestring, "success") != 0) {
		body_excerpt(ex, sizeof ex, &resp->body);
		err->cls = CTL_E_PROTOCOL;
		snprintf(err->message, sizeof err->message, "%s in an HTTP %ld answer (body starts '%s')",
			 resp->envelope == NULL ? "malformed JSON" : "no JSend success envelope",
			 resp->status, ex);
		return -1;
	}
	resp->data = cJSON_GetObjectItemCaseSensitive(resp->envelope, "data");
	return 0;
}

static void map_curl_error(ctl_error *err, CURLcode rc, const char *detail, long status)
{
	const char *what = detail[0] != '\0' ? detail : curl_easy_strerror(rc);
	err->status = status;
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		err->cls = CTL_E_TIMEOUT;
		snprintf(err->message, sizeof err->message, "no complete answer before the deadline: %s", what);
		return;
	}
	err->cls = CTL_E_CONNECTION;
	if (status > 0)
		snprintf(err->message, sizeof err->message, "connection broke during the HTTP %ld answer: %s",
			 status, what);
	else
		snprintf(err->message, sizeof err->message, "%s", what);
}

static struct curl_slist *build_headers(ctl_client *c, const ctl_request *req, sbx_strbuf *tmp)
{
	struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json, application/x-ndjson");
	h = curl_slist_append(h, "Expect:");
	const char *secret = req->admin ? c->admin_token : c->api_key;
	const char *name = req->admin ? "X-Mock-Admin-Token" : "X-Api-Key";
	if (secret != NULL) {
		sbx_strbuf_reset(tmp);
		sbx_strbuf_printf(tmp, "%s: %s", name, secret);
		h = curl_slist_append(h, sbx_strbuf_str(tmp));
	}
	if (req->body != NULL) {
		sbx_strbuf_reset(tmp);
		sbx_strbuf_printf(tmp, "Content-Type: %s",
				  req->content_type != NULL ? req->content_type : "application/json");
		h = curl_slist_append(h, sbx_strbuf_str(tmp));
	}
	return h;
}

static void setup_easy(ctl_client *c, const ctl_request *req, const char *url, struct curl_slist *h,
		       xfer *x, char *errbuf)
{
	CURL *cu = c->curl;
	curl_easy_reset(cu);
	curl_easy_setopt(cu, CURLOPT_URL, url);
	curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(cu, CURLOPT_USERAGENT, CTL_USER_AGENT);
	curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(cu, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(cu, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(cu, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(cu, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(cu, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	if (c->timeout_ms > 0)
		curl_easy_setopt(cu, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	if (req->body != NULL) {
		curl_easy_setopt(cu, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(cu, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	} else if (strcmp(req->method, "POST") == 0) {
		curl_easy_setopt(cu, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(cu, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	if (strcmp(req->method, "GET") != 0)
		curl_easy_setopt(cu, CURLOPT_CUSTOMREQUEST, req->method);
}

int ctl_request_do(ctl_client *c, const ctl_request *req, ctl_response *resp, ctl_error *err)
{
	int ret = -1;
	char errbuf[CURL_ERROR_SIZE] = "";
	sbx_strbuf url = SBX_STRBUF_INIT;
	sbx_strbuf tmp = SBX_STRBUF_INIT;
	memset(resp, 0, sizeof *resp);
	err_init(err, req);
	sbx_strbuf_printf(&url, "%s%s", c->base_url, req->path);
	if (req->query != NULL && req->query[0] != '\0')
		sbx_strbuf_printf(&url, "?%s", req->query);
	struct curl_slist *h = build_headers(c, req, &tmp);
	if (url.oom || tmp.oom || h == NULL) {
		err->cls = CTL_E_LOCAL;
		snprintf(err->message, sizeof err->message, "out of memory");
		goto out_free_headers;
	}
	xfer x = {.curl = c->curl, .req = req, .resp = resp};
	setup_easy(c, req, sbx_strbuf_str(&url), h, &x, errbuf);
	CURLcode rc = curl_easy_perform(c->curl);
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &resp->status);
	if (x.aborted) {
		err->cls = CTL_E_LOCAL;
		err->status = resp->status;
		snprintf(err->message, sizeof err->message, "could not write the received data");
		goto out_free_headers;
	}
	if (rc != CURLE_OK) {
		map_curl_error(err, rc, errbuf, resp->status);
		err_from_headers(err, resp);
		goto out_free_headers;
	}
	err->status = resp->status;
	err_from_headers(err, resp);
	if (resp->status < 200 || resp->status >= 300) {
		map_http_error(err, resp);
		goto out_free_headers;
	}
	if (req->raw || req->on_chunk != NULL) {
		ret = 0;
		goto out_free_headers;
	}
	ret = parse_success(resp, err);
out_free_headers:
	curl_slist_free_all(h);
	sbx_strbuf_free(&tmp);
	sbx_strbuf_free(&url);
	return ret;
}

/* ref_http: see ref_http.h. Must never retry a request and never hide a
 * failed exchange as a success. */
#include "ref_http.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

struct ref_http {
	char *base_url;
	char *api_key;
	long timeout_ms;
	CURLSH *share;
	pthread_mutex_t *lock; /* heap, so a forked child can abandon it */
};

static void share_lock(CURL *c, curl_lock_data d, curl_lock_access a, void *u)
{
	pthread_mutex_lock(u);
}

static void share_unlock(CURL *c, curl_lock_data d, void *u)
{
	pthread_mutex_unlock(u);
}

static void make_share(ref_http *h)
{
	pthread_mutexattr_t attr;

	/* curl may take the DNS lock while holding the connection lock: one
	 * recursive mutex covers both without self-deadlock. */
	h->lock = malloc(sizeof(*h->lock));
	if (h->lock != NULL) {
		pthread_mutexattr_init(&attr);
		pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
		pthread_mutex_init(h->lock, &attr);
		pthread_mutexattr_destroy(&attr);
	}
	h->share = curl_share_init();
	if (h->share != NULL && h->lock != NULL) {
		curl_share_setopt(h->share, CURLSHOPT_LOCKFUNC, share_lock);
		curl_share_setopt(h->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
		curl_share_setopt(h->share, CURLSHOPT_USERDATA, h->lock);
		curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
		curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	}
}

ref_http *ref_http_new(const char *base_url, const char *api_key)
{
	ref_http *h = calloc(1, sizeof(*h));
	size_t n;

	if (h == NULL)
		return NULL;
	h->base_url = strdup(base_url);
	h->api_key = strdup(api_key ? api_key : "");
	n = strlen(h->base_url);
	while (n > 0 && h->base_url[n - 1] == '/')
		h->base_url[--n] = '\0';
	h->timeout_ms = 30000;
	make_share(h);
	return h;
}

void ref_http_free(ref_http *h)
{
	if (h == NULL)
		return;
	if (h->share != NULL)
		curl_share_cleanup(h->share);
	if (h->lock != NULL) {
		pthread_mutex_destroy(h->lock);
		free(h->lock);
	}
	free(h->base_url);
	free(h->api_key);
	free(h);
}

void ref_http_reset_after_fork(ref_http *h)
{
	/* The parent's share holds the parent's sockets and maybe a held lock:
	 * leak both on purpose rather than touch them from the child. */
	h->share = NULL;
	h->lock = NULL;
	make_share(h);
}

void ref_http_set_timeout_ms(ref_http *h, long ms)
{
	h->timeout_ms = ms;
}

struct sink_wrap {
	ref_resp *resp;
	ref_sink sink;
	void *ctx;
};

static size_t on_data(char *p, size_t size, size_t n, void *u)
{
	struct sink_wrap *w = u;
	size_t len = size * n;

	if (w->sink != NULL)
		return w->sink(w->ctx, p, len) ? len : 0;
	if (!sbx_strbuf_append(&w->resp->body, p, len))
		return 0;
	return len;
}

void ref_resp_free(ref_resp *r)
{
	sbx_strbuf_free(&r->body);
}

int ref_http_raw(ref_http *h, const char *method, const char *path, const void *body,
		 size_t body_len, const char *ctype, ref_sink sink, void *sink_ctx, ref_resp *resp)
{
	struct sink_wrap w = {resp, sink, sink_ctx};
	struct curl_slist *hdrs = NULL;
	sbx_strbuf url = SBX_STRBUF_INIT;
	sbx_strbuf hv = SBX_STRBUF_INIT;
	CURL *c;
	CURLcode rc;

	memset(resp, 0, sizeof(*resp));
	sbx_strbuf_init(&resp->body);
	c = curl_easy_init();
	if (c == NULL) {
		resp->curl_code = CURLE_OUT_OF_MEMORY;
		snprintf(resp->curl_msg, sizeof(resp->curl_msg), "curl_easy_init failed");
		return -1;
	}
	sbx_strbuf_printf(&url, "%s%s", h->base_url, path);
	sbx_strbuf_printf(&hv, "X-Api-Key: %s", h->api_key);
	hdrs = curl_slist_append(hdrs, sbx_strbuf_str(&hv));
	sbx_strbuf_reset(&hv);
	sbx_strbuf_printf(&hv, "Content-Type: %s", ctype ? ctype : "application/json");
	if (body != NULL)
		hdrs = curl_slist_append(hdrs, sbx_strbuf_str(&hv));
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(c, CURLOPT_URL, sbx_strbuf_str(&url));
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
	if (h->share != NULL)
		curl_easy_setopt(c, CURLOPT_SHARE, h->share);
	if (strcmp(method, "POST") == 0 || strcmp(method, "PATCH") == 0) {
		/* libcurl silently resends a request whose reused connection died
		 * before the answer: for a non-idempotent call that is a hidden
		 * retry (a lost create answer became a second create). */
		curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
	}
	if (body != NULL) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	}
	rc = curl_easy_perform(c);
	resp->curl_code = (int)rc;
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
	else
		snprintf(resp->curl_msg, sizeof(resp->curl_msg), "%s", curl_easy_strerror(rc));
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	sbx_strbuf_free(&url);
	sbx_strbuf_free(&hv);
	return rc == CURLE_OK ? 0 : -1;
}

/* The control plane's own words for a failure, when the body says them. */
static void envelope_message(const ref_resp *r, char *out, size_t cap)
{
	cJSON *j = cJSON_ParseWithLength(r->body.data ? r->body.data : "", r->body.len);
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(j, "message");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");
	char *flat = NULL;

	out[0] = '\0';
	if (cJSON_IsString(msg))
		snprintf(out, cap, "%s", msg->valuestring);
	else if (cJSON_IsString(data))
		snprintf(out, cap, "%s", data->valuestring);
	else if (data != NULL && (flat = cJSON_PrintUnformatted(data)) != NULL)
		snprintf(out, cap, "%s", flat);
	free(flat);
	cJSON_Delete(j);
}

bool ref_http_classify(const ref_resp *r, const char *method, const char *path, const char *what,
		       sbxd_error *err)
{
	char detail[512];

	if (r->curl_code != 0) {
		sbxd_error_set(err, SBXD_EXECUTION, "%s: %s %s failed: %s", what, method, path, r->curl_msg);
		return true;
	}
	if (r->status >= 200 && r->status < 300)
		return false;
	envelope_message(r, detail, sizeof(detail));
	if (r->status == 429 || r->status >= 500)
		sbxd_error_set(err, SBXD_EXECUTION, "%s: control plane answered %ld to %s %s%s%s", what,
			       r->status, method, path, detail[0] ? ": " : "", detail);
	else
		sbxd_error_set(err, SBXD_UNAVAILABLE, "%s: control plane answered %ld to %s %s%s%s", what,
			       r->status, method, path, detail[0] ? ": " : "", detail);
	return true;
}

cJSON *ref_http_json(ref_http *h, const char *method, const char *path, const cJSON *body,
		     const char *what, long *status_out, sbxd_error *err)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	cJSON *j = NULL;
	cJSON *data = NULL;
	const cJSON *st;
	ref_resp r = {0};

	ref_http_raw(h, method, path, text, text ? strlen(text) : 0, "application/json", NULL, NULL, &r);
	if (status_out != NULL)
		*status_out = r.status;
	if (ref_http_classify(&r, method, path, what, err))
		goto out;
	j = cJSON_ParseWithLength(r.body.data ? r.body.data : "", r.body.len);
	st = cJSON_GetObjectItemCaseSensitive(j, "status");
	if (j == NULL || !cJSON_IsString(st)) {
		sbxd_error_set(err, SBXD_EXECUTION, "%s: %s %s: answer %ld is not a JSend envelope (%zu bytes)",
			       what, method, path, r.status, r.body.len);
		goto out;
	}
	if (strcmp(st->valuestring, "success") != 0) {
		sbxd_error_set(err, SBXD_EXECUTION, "%s: %s %s: answer %ld carries status \"%s\"", what,
			       method, path, r.status, st->valuestring);
		goto out;
	}
	data = cJSON_DetachItemFromObjectCaseSensitive(j, "data");
	if (data == NULL)
		sbxd_error_set(err, SBXD_EXECUTION, "%s: %s %s: success envelope without data", what,
			       method, path);
out:
	cJSON_Delete(j);
	free(text);
	ref_resp_free(&r);
	return data;
}

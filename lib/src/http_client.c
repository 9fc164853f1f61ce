/* http: the one libcurl client of sbx-harness; see sbx/http_client.h.
 * The only source file that creates libcurl handles. Never retries, never
 * prints, never follows redirects. */
#include "sbx/http_client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

struct sbx_http_client {
	char *base_url;                       /* owned, no trailing '/'; NULL: paths are URLs */
	char *headers[SBX_HTTP_MAX_HEADERS];  /* owned "Name: value" lines */
	char *user_agent;                     /* owned or NULL */
	char *ca_pem;                         /* owned or NULL: the system's CAs */
	long timeout_ms;
	long connect_timeout_ms;
	bool threaded, fresh_for_post, no_reuse;
	CURL *easy;                           /* the reused handle (not threaded) */
	CURLSH *share;                        /* connections and DNS (threaded) */
	pthread_mutex_t *lock;                /* heap, so a forked child can abandon it */
};

/* Per-exchange state for the libcurl callbacks. */
typedef struct xfer {
	CURL *easy;
	const sbx_http_req *req;
	sbx_http_resp *resp;
	bool sink_stopped;  /* the sink returned false */
	bool too_big;       /* resp->body would pass req->max_body */
	bool oom;
	bool cancelled;     /* req->cancel said stop */
} xfer;

int sbx_http_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

void sbx_http_global_cleanup(void)
{
	curl_global_cleanup();
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *r;

	if (s == NULL)
		return NULL;
	r = strdup(s);
	if (r == NULL)
		*oom = true;
	return r;
}

static void share_lock(CURL *c, curl_lock_data d, curl_lock_access a, void *u)
{
	pthread_mutex_lock(u);
}

static void share_unlock(CURL *c, curl_lock_data d, void *u)
{
	pthread_mutex_unlock(u);
}

/* The threaded client's pool. Without a lock there is no share: each
 * request then simply runs alone. */
static void make_share(sbx_http_client *c)
{
	pthread_mutexattr_t attr;

	/* curl may take the DNS lock while holding the connection lock: one
	 * recursive mutex covers both without self-deadlock. */
	c->lock = malloc(sizeof(*c->lock));
	if (c->lock == NULL)
		return;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(c->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	c->share = curl_share_init();
	if (c->share == NULL)
		return;
	curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(c->share, CURLSHOPT_USERDATA, c->lock);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
}

/* Handles: one reused easy handle, or a share for the threaded client. */
static int make_handles(sbx_http_client *c)
{
	if (c->threaded) {
		make_share(c);
		return 0;
	}
	c->easy = curl_easy_init();
	return c->easy != NULL ? 0 : -1;
}

sbx_http_client *sbx_http_client_new(const sbx_http_opts *opts, sbx_err *err)
{
	sbx_http_client *c = calloc(1, sizeof(*c));
	bool oom = false;
	size_t n;

	if (c == NULL)
		goto out_oom;
	c->base_url = dup_or_null(opts->base_url, &oom);
	c->user_agent = dup_or_null(opts->user_agent, &oom);
	c->ca_pem = dup_or_null(opts->ca_pem, &oom);
	for (size_t i = 0; i < SBX_HTTP_MAX_HEADERS; i++)
		c->headers[i] = dup_or_null(opts->headers[i], &oom);
	if (oom)
		goto out_free_client;
	n = c->base_url != NULL ? strlen(c->base_url) : 0;
	while (n > 0 && c->base_url[n - 1] == '/')
		c->base_url[--n] = '\0';
	c->timeout_ms = opts->timeout_ms;
	c->connect_timeout_ms = opts->connect_timeout_ms;
	c->threaded = opts->threaded;
	c->fresh_for_post = opts->fresh_for_post;
	c->no_reuse = opts->no_reuse;
	if (make_handles(c) != 0)
		goto out_free_client;
	return c;
out_free_client:
	sbx_http_client_free(c);
out_oom:
	sbx_err_set(err, "http client: out of memory");
	return NULL;
}

static void drop_handles(sbx_http_client *c)
{
	if (c->easy != NULL)
		curl_easy_cleanup(c->easy);
	if (c->share != NULL)
		curl_share_cleanup(c->share);
	if (c->lock != NULL) {
		pthread_mutex_destroy(c->lock);
		free(c->lock);
	}
	c->easy = NULL;
	c->share = NULL;
	c->lock = NULL;
}

void sbx_http_client_free(sbx_http_client *c)
{
	if (c == NULL)
		return;
	drop_handles(c);
	free(c->base_url);
	free(c->user_agent);
	free(c->ca_pem);
	for (size_t i = 0; i < SBX_HTTP_MAX_HEADERS; i++)
		free(c->headers[i]);
	free(c);
}

void sbx_http_client_set_timeout_ms(sbx_http_client *c, long ms)
{
	c->timeout_ms = ms;
}

void sbx_http_client_reset_after_fork(sbx_http_client *c)
{
	/* The parent's handles hold the parent's sockets and maybe a held
	 * lock: leak them on purpose rather than touch them from the child. */
	c->easy = NULL;
	c->share = NULL;
	c->lock = NULL;
	(void)make_handles(c);
}

void sbx_http_resp_free(sbx_http_resp *r)
{
	sbx_strbuf_free(&r->headers);
	sbx_strbuf_free(&r->body);
}

const char *sbx_http_code_str(int curl_code)
{
	return curl_easy_strerror((CURLcode)curl_code);
}

/* ---- one exchange ---- */

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	xfer *x = ud;
	size_t len = size * nmemb;

	/* A new status line (after 100 Continue): forget earlier headers. */
	if (len >= 5 && memcmp(data, "HTTP/", 5) == 0)
		sbx_strbuf_reset(&x->resp->headers);
	if (!sbx_strbuf_append(&x->resp->headers, data, len)) {
		x->oom = true;
		return 0;
	}
	return len;
}

static bool status_2xx(CURL *easy)
{
	long status = 0;

	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
	return status >= 200 && status < 300;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	xfer *x = ud;
	const sbx_http_req *req = x->req;
	size_t len = size * nmemb;

	if (req->sink != NULL && (!req->sink_2xx_only || status_2xx(x->easy))) {
		if (req->sink(req->sink_ud, data, len))
			return len;
		x->sink_stopped = true;
		return 0;
	}
	if (req->max_body > 0 && x->resp->body.len + len > req->max_body) {
		x->too_big = true;
		return 0;
	}
	if (!sbx_strbuf_append(&x->resp->body, data, len)) {
		x->oom = true;
		return 0;
	}
	return len;
}

/* libcurl calls this several times a second while a transfer runs, also
 * while it waits for an answer that never comes; that is what lets a
 * stopping program end a request whose deadline is minutes away. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	xfer *x = ud;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if (x->req->cancel(x->req->cancel_ud)) {
		x->cancelled = true;
		return 1;
	}
	return 0;
}

static bool method_is(const char *method, const char *name)
{
	return strcmp(method, name) == 0;
}

static void build_url(const sbx_http_client *c, const sbx_http_req *req, sbx_strbuf *url)
{
	if (c->base_url != NULL)
		sbx_strbuf_puts(url, c->base_url);
	if (req->path != NULL)
		sbx_strbuf_puts(url, req->path);
	if (req->query != NULL && req->query[0] != '\0')
		sbx_strbuf_printf(url, "?%s", req->query);
}

static struct curl_slist *add_line(struct curl_slist *h, const char *line, bool *oom)
{
	struct curl_slist *n = curl_slist_append(h, line);

	if (n == NULL)
		*oom = true;
	return n != NULL ? n : h;
}

/* Client lines, request lines, Content-Type, and "Expect:" (never wait for
 * 100 Continue). NULL with *oom set on allocation failure. */
static struct curl_slist *build_headers(const sbx_http_client *c, const sbx_http_req *req,
					bool *oom)
{
	struct curl_slist *h = NULL;
	sbx_strbuf ct = SBX_STRBUF_INIT;
	const char *type = req->content_type;

	for (size_t i = 0; i < SBX_HTTP_MAX_HEADERS; i++) {
		if (c->headers[i] != NULL)
			h = add_line(h, c->headers[i], oom);
	}
	for (size_t i = 0; i < SBX_HTTP_MAX_HEADERS; i++) {
		if (req->headers[i] != NULL)
			h = add_line(h, req->headers[i], oom);
	}
	if (type == NULL && req->body != NULL)
		type = "application/json";
	if (type != NULL) {
		/* "": none at all ("Content-Type:" removes libcurl's own). */
		sbx_strbuf_printf(&ct, "Content-Type:%s%s", type[0] != '\0' ? " " : "", type);
		h = add_line(h, sbx_strbuf_str(&ct), oom);
		*oom = *oom || ct.oom;
	}
	h = add_line(h, "Expect:", oom);
	sbx_strbuf_free(&ct);
	if (*oom) {
		curl_slist_free_all(h);
		return NULL;
	}
	return h;
}

static void set_method_and_body(CURL *e, const sbx_http_req *req, const char *method)
{
	if (req->body != NULL) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	} else if (method_is(method, "POST") || method_is(method, "PUT") || method_is(method, "PATCH")) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	if (method_is(method, "HEAD"))
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	else if (!method_is(method, "GET") || req->body != NULL)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
}

static void set_connection_policy(const sbx_http_client *c, CURL *e, const char *method)
{
	/* libcurl silently resends a request whose reused connection died
	 * before the answer: for a non-idempotent call that is a hidden retry
	 * (a lost create answer became a second create). */
	bool fresh = c->no_reuse ||
		     (c->fresh_for_post && (method_is(method, "POST") || method_is(method, "PATCH")));

	if (c->share != NULL)
		curl_easy_setopt(e, CURLOPT_SHARE, c->share);
	if (fresh) {
		curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	}
}

static void setup_easy(const sbx_http_client *c, CURL *e, const sbx_http_req *req,
		       const char *url, struct curl_slist *h, xfer *x, char *errbuf)
{
	const char *method = req->method != NULL ? req->method : "GET";
	long timeout = req->timeout_ms > 0 ? req->timeout_ms : c->timeout_ms;

	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	if (c->user_agent != NULL)
		curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
	if (c->ca_pem != NULL) {
		struct curl_blob ca = {.data = c->ca_pem, .len = strlen(c->ca_pem), .flags = CURL_BLOB_COPY};

		curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca);
	}
	if (timeout > 0)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout);
	if (c->connect_timeout_ms > 0)
		curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	if (req->cancel != NULL) {
		curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(e, CURLOPT_XFERINFODATA, x);
		curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	}
	set_connection_policy(c, e, method);
	set_method_and_body(e, req, method);
}

/* Fills resp->fail and *err from how the transfer ended. */
static int classify(const xfer *x, CURLcode rc, const char *errbuf, sbx_err *err)
{
	sbx_http_resp *resp = x->resp;

	resp->curl_code = (int)rc;
	if (x->oom) {
		resp->fail = SBX_HTTP_FAIL_LOCAL;
		sbx_err_set(err, "out of memory while receiving the answer");
	} else if (x->sink_stopped) {
		resp->fail = SBX_HTTP_FAIL_SINK;
		sbx_err_set(err, "the receiver of the body stopped the transfer");
	} else if (x->too_big) {
		resp->fail = SBX_HTTP_FAIL_SINK;
		sbx_err_set(err, "answer body over %zu bytes", x->req->max_body);
	} else if (x->cancelled) {
		resp->fail = SBX_HTTP_FAIL_CANCELLED;
		sbx_err_set(err, "the request was cancelled before its answer came");
	} else if (rc == CURLE_OK) {
		resp->fail = SBX_HTTP_OK;
		return 0;
	} else {
		resp->fail = rc == CURLE_OPERATION_TIMEDOUT ? SBX_HTTP_FAIL_TIMEOUT
							    : SBX_HTTP_FAIL_CONNECTION;
		sbx_err_set(err, "%s", errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc));
	}
	return -1;
}

static int fail_local(sbx_http_resp *resp, sbx_err *err, const char *what)
{
	resp->fail = SBX_HTTP_FAIL_LOCAL;
	resp->curl_code = (int)CURLE_OUT_OF_MEMORY;
	sbx_err_set(err, "%s", what);
	return -1;
}

int sbx_http_request(sbx_http_client *c, const sbx_http_req *req, sbx_http_resp *resp,
		     sbx_err *err)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	sbx_strbuf url = SBX_STRBUF_INIT;
	struct curl_slist *h = NULL;
	bool oom = false;
	xfer x = {.req = req, .resp = resp};
	CURL *e = c->threaded ? curl_easy_init() : c->easy;
	CURLcode rc;
	int ret;

	memset(resp, 0, sizeof(*resp));
	if (e == NULL) {
		ret = fail_local(resp, err, "no libcurl handle");
		goto out;
	}
	if (!c->threaded)
		curl_easy_reset(e);
	build_url(c, req, &url);
	h = build_headers(c, req, &oom);
	if (url.oom || oom) {
		ret = fail_local(resp, err, "out of memory");
		goto out_free_url;
	}
	x.easy = e;
	setup_easy(c, e, req, sbx_strbuf_str(&url), h, &x, errbuf);
	rc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &resp->status);
	curl_easy_getinfo(e, CURLINFO_TOTAL_TIME, &resp->seconds);
	ret = classify(&x, rc, errbuf, err);
	/* The reused handle must not keep pointers into this call's frame. */
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, NULL);
out_free_url:
	curl_slist_free_all(h);
	sbx_strbuf_free(&url);
	if (c->threaded && e != NULL)
		curl_easy_cleanup(e);
out:
	return ret;
}

/* ---- helpers ---- */

bool sbx_http_header(const sbx_http_resp *r, const char *name, char *buf, size_t cap)
{
	const char *p = sbx_strbuf_str(&r->headers);
	size_t nlen = strlen(name);

	while (*p != '\0') {
		size_t len = strcspn(p, "\r\n");

		if (len > nlen && p[nlen] == ':' && strncasecmp(p, name, nlen) == 0) {
			const char *v = p + nlen + 1;
			size_t vlen;

			while (*v == ' ' || *v == '\t')
				v++;
			vlen = len - (size_t)(v - p);
			while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
				vlen--;
			snprintf(buf, cap, "%.*s", (int)vlen, v);
			return true;
		}
		p += len;
		p += strspn(p, "\r\n");
	}
	return false;
}

static bool unreserved(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

bool sbx_http_escape(sbx_strbuf *sb, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (unreserved(*p)) {
			sbx_strbuf_append(sb, p, 1);
		} else {
			char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};

			sbx_strbuf_append(sb, e, 3);
		}
	}
	return !sb->oom;
}

double sbx_http_parse_retry_after(const char *v)
{
	char *end = NULL;
	double secs;
	time_t when;
	double d;

	if (v == NULL || *v == '\0')
		return -1;
	secs = strtod(v, &end);
	if (end != v && *end == '\0')
		return secs < 0 ? 0 : secs;
	when = curl_getdate(v, NULL);
	if (when == -1)
		return -1;
	d = difftime(when, time(NULL));
	return d < 0 ? 0 : d;
}

/* ref_http: the reference backend's control-plane client, on libsbx's HTTP
 * client (threaded: one locked pool of connections and DNS answers, a fresh
 * connection for POST/PATCH), recreated by ref_http_reset_after_fork so a
 * forked child never touches the parent's sockets or locks. Every call maps the answer to the CreateOS integration's
 * error classes: transport failure, 429 and 5xx -> SandboxExecutionError,
 * any other non-success -> SandboxUnavailableError. Never retries. */
#ifndef REF_HTTP_H
#define REF_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "sbx/driver.h"
#include "sbx/strbuf.h"

typedef struct ref_http ref_http;

ref_http *ref_http_new(const char *base_url, const char *api_key);
void ref_http_free(ref_http *h);
/* In a forked child: abandon the parent's share and lock, make new ones. */
void ref_http_reset_after_fork(ref_http *h);
void ref_http_set_timeout_ms(ref_http *h, long ms);

typedef struct ref_resp {
	long status;      /* 0 when the transport failed */
	int curl_code;    /* 0 (CURLE_OK) when an answer came */
	char curl_msg[256]; /* libcurl's words when it did not */
	sbx_strbuf body;
} ref_resp;

/* Raw request. body may be NULL. ctype names the body's type. When sink is
 * set, the body is streamed to it instead of resp->body; the sink returns
 * false to abort the transfer. Returns 0 when an HTTP answer came. */
typedef bool (*ref_sink)(void *ctx, const void *data, size_t len);
int ref_http_raw(ref_http *h, const char *method, const char *path, const void *body,
		 size_t body_len, const char *ctype, ref_sink sink, void *sink_ctx, ref_resp *resp);
void ref_resp_free(ref_resp *r);

/* JSON request with JSend unwrapping: returns the `data` payload (caller
 * frees) or NULL with *err set by the integration's mapping. `what` names
 * the operation in messages ("create sandbox"). body may be NULL. */
cJSON *ref_http_json(ref_http *h, const char *method, const char *path, const cJSON *body,
		     const char *what, long *status_out, sbxd_error *err);

/* Maps a completed exchange to an error (returns true) or success (false). */
bool ref_http_classify(const ref_resp *r, const char *method, const char *path, const char *what,
		       sbxd_error *err);

#endif

/* http: the one HTTP client of sbx-harness (on libcurl).
 *
 * sbxctl, the conformance runner, the reference backend, the mock's record
 * mode, the mock's tests and the benchmarks all send their requests through
 * this module, so that timeouts, connection reuse and error messages behave
 * the same everywhere and only lib/src/http_client.c knows libcurl.
 *
 * A client holds a base URL, header lines sent on every request (X-Api-Key,
 * Accept...), timeouts and a connection policy. A request names a method, a
 * path (appended to the base URL), an optional query, extra header lines and
 * an optional body; the answer's status, header block and body (or a
 * streaming sink) come back in an sbx_http_resp.
 *
 * It never retries and never hides a failed exchange: one call is at most one
 * exchange on the wire. libcurl silently resends a request whose reused
 * connection died before the answer; for a POST that is a hidden second
 * create, so clients that must not do that set fresh_for_post. It never
 * follows redirects, never parses the body (JSend is the caller's business)
 * and never prints. */
#ifndef SBX_HTTP_H
#define SBX_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "sbx/err.h"
#include "sbx/strbuf.h"

/* Header lines per client and per request ("Name: value"). */
#define SBX_HTTP_MAX_HEADERS 8

typedef struct sbx_http_client sbx_http_client;

typedef struct sbx_http_opts {
	const char *base_url;        /* prefix of every path, trailing '/' dropped; NULL: paths are URLs */
	const char *headers[SBX_HTTP_MAX_HEADERS]; /* sent on every request; NULL slots skipped; copied */
	const char *user_agent;      /* NULL: no User-Agent header */
	/* https: trust this CA (PEM) alone, e.g. sbx-mock's (sbx_mock_ca_pem);
	 * NULL: the system's store. Copied. */
	const char *ca_pem;
	long timeout_ms;             /* whole exchange; 0: no deadline */
	long connect_timeout_ms;     /* 0: libcurl's default */
	/* Many threads may call sbx_http_request on this client at once: each
	 * request then runs on its own handle over a shared, locked pool of
	 * connections and DNS answers. Otherwise one handle is reused (keeps
	 * its connection) and the client belongs to one thread. */
	bool threaded;
	/* POST and PATCH open a new connection and never leave it for reuse. */
	bool fresh_for_post;
	/* Every request opens a new connection and closes it afterwards. */
	bool no_reuse;
} sbx_http_opts;

/* Receives body bytes as they arrive; return false to abort the transfer
 * (the request then fails with fail == SBX_HTTP_FAIL_SINK). */
typedef bool (*sbx_http_sink)(void *ud, const void *data, size_t len);

typedef struct sbx_http_req {
	const char *method;          /* "GET", "POST", ...; NULL: GET */
	const char *path;            /* appended to base_url, already escaped */
	const char *query;           /* "a=1&b=2" (escaped), added after '?'; NULL or "": none */
	const char *headers[SBX_HTTP_MAX_HEADERS]; /* extra lines for this request; NULL slots skipped */
	const void *body;            /* NULL: no body (POST, PUT, PATCH then send an empty one) */
	size_t body_len;
	const char *content_type;    /* sent when set; "": never any (a proxy); NULL with a body:
				      * application/json */
	long timeout_ms;             /* 0: the client's */
	sbx_http_sink sink;          /* body goes here instead of resp->body */
	void *sink_ud;
	bool sink_2xx_only;          /* only 2xx bodies go to the sink, others to resp->body */
	size_t max_body;             /* resp->body over this many bytes aborts; 0: no limit */
	/* Asked several times a second (at least about once a second) while
	 * the exchange runs, also while no byte moves; true ends it at once
	 * (fail == SBX_HTTP_FAIL_CANCELLED). NULL: never cancelled. */
	bool (*cancel)(void *ud);
	void *cancel_ud;
} sbx_http_req;

typedef enum sbx_http_fail {
	SBX_HTTP_OK = 0,             /* a complete answer came (any status) */
	SBX_HTTP_FAIL_CONNECTION,    /* refused, reset, closed, DNS, truncated answer */
	SBX_HTTP_FAIL_TIMEOUT,       /* the deadline passed */
	SBX_HTTP_FAIL_SINK,          /* the sink said stop, or the body passed max_body */
	SBX_HTTP_FAIL_LOCAL,         /* out of memory, bad URL, no handle */
	SBX_HTTP_FAIL_CANCELLED,     /* req->cancel said stop */
} sbx_http_fail;

typedef struct sbx_http_resp {
	long status;                 /* answer status; also set when the transfer broke after the
				      * status line; 0 when no status line came */
	sbx_http_fail fail;
	int curl_code;               /* the CURLcode (0 = CURLE_OK), for tests that assert on it */
	sbx_strbuf headers;          /* the last answer's header block, status line first, raw */
	sbx_strbuf body;             /* empty when the sink took the body */
	double seconds;              /* total time of the exchange */
} sbx_http_resp;

/* Process-wide libcurl setup; call once from main before any thread starts.
 * Returns 0 or -1. */
int sbx_http_global_init(void);
void sbx_http_global_cleanup(void);

/* Copies what opts points to. NULL on allocation failure (err says why). */
sbx_http_client *sbx_http_client_new(const sbx_http_opts *opts, sbx_err *err);
void sbx_http_client_free(sbx_http_client *c);
void sbx_http_client_set_timeout_ms(sbx_http_client *c, long ms);
/* In a forked child: abandon the parent's handles, connections and locks
 * (leaked on purpose, never touched) and start with new ones. */
void sbx_http_client_reset_after_fork(sbx_http_client *c);

/* Performs one exchange. Returns 0 when a complete answer came, whatever its
 * status; else -1 with resp->fail, resp->curl_code and *err set ("Failed to
 * connect to 127.0.0.1 port 9: Connection refused", libcurl's own words).
 * resp is always initialised; free it with sbx_http_resp_free. */
int sbx_http_request(sbx_http_client *c, const sbx_http_req *req, sbx_http_resp *resp,
		     sbx_err *err);
void sbx_http_resp_free(sbx_http_resp *r);

/* The first value of response header `name` (case-insensitive), trimmed and
 * copied into buf (truncated to cap). False when absent. */
bool sbx_http_header(const sbx_http_resp *r, const char *name, char *buf, size_t cap);
/* libcurl's message for a curl_code ("Couldn't connect to server"). */
const char *sbx_http_code_str(int curl_code);

/* Percent-escapes one path segment or query value into sb (everything but
 * ALPHA DIGIT - . _ ~, upper-case hex). False on allocation failure. */
bool sbx_http_escape(sbx_strbuf *sb, const char *s);
/* Retry-After (delta-seconds or HTTP date) in seconds, never negative; -1
 * when absent or not parseable. */
double sbx_http_parse_retry_after(const char *v);

#endif

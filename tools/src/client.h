/* client: the one place where sbxctl talks HTTP. It sends requests with
 * libsbx's HTTP client (sbx/http_client.h), parses the JSend envelope, and maps failures to the SDK's error
 * classes (AuthError, NotFoundError, ...) with the status, the server's
 * message and the request id.
 *
 * It never prints and never retries: a reproduction tool must show every
 * fault the server injects, so the caller decides what to do with one. */
#ifndef SBXCTL_CLIENT_H
#define SBXCTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "sbx/http_client.h"
#include "sbx/strbuf.h"

typedef enum ctl_errclass {
	CTL_E_NONE = 0,
	CTL_E_AUTH,        /* 401 */
	CTL_E_PAYMENT,     /* 402 */
	CTL_E_PERMISSION,  /* 403 */
	CTL_E_NOT_FOUND,   /* 404 */
	CTL_E_VALIDATION,  /* 400, 409, 422 */
	CTL_E_RATE_LIMIT,  /* 429 */
	CTL_E_SERVER,      /* >= 500 */
	CTL_E_API,         /* any other non-2xx */
	CTL_E_CONNECTION,  /* no answer: refused, reset, closed, DNS */
	CTL_E_TIMEOUT,     /* the client's deadline passed */
	CTL_E_PROTOCOL,    /* an answer that is not what the contract says */
	CTL_E_LOCAL,       /* a local problem: file I/O, out of memory */
} ctl_errclass;

/* "AuthError", "ServerError", ... as the SDK names them (without the
 * CreateosSandbox prefix). */
const char *ctl_errclass_name(ctl_errclass cls);
ctl_errclass ctl_errclass_for_status(long status);

typedef struct ctl_error {
	ctl_errclass cls;
	long status;           /* HTTP status, 0 when there was no answer */
	char method[8];
	char path[256];        /* request path without query */
	char message[1024];    /* the server's message, or what went wrong locally */
	char code[64];         /* JSend fail data.code, when present */
	char request_id[128];  /* X-Request-Id (or X-Fc-Request-Id) */
	double retry_after;    /* seconds from Retry-After; < 0 when absent */
	char hint[256];        /* what the user can do about it (set by the caller), or "" */
} ctl_error;

typedef struct ctl_client {
	char *base_url;      /* owned, no trailing slash */
	char *api_key;       /* owned or NULL */
	char *admin_token;   /* owned or NULL */
	long timeout_ms;     /* whole-request deadline; 0 = none */
	sbx_http_client *http; /* owned; one reused handle (keeps the connection) */
} ctl_client;

/* Called with each body chunk of a 2xx answer as it arrives (streams and
 * downloads). Return false to abort the transfer. */
typedef bool (*ctl_chunk_fn)(void *ud, const char *data, size_t len);

typedef struct ctl_request {
	const char *method;       /* "GET", "POST", ... */
	const char *path;         /* "/v1/sandboxes/sb-1/exec", segments already escaped */
	const char *query;        /* "a=1&b=2" (escaped) or NULL */
	const char *body;         /* NULL: no body */
	size_t body_len;
	const char *content_type; /* default application/json when body is set */
	bool admin;               /* send X-Mock-Admin-Token instead of X-Api-Key */
	bool raw;                 /* 2xx body is not JSend (file download) */
	ctl_chunk_fn on_chunk;    /* 2xx body goes here instead of resp->body */
	void *ud;
} ctl_request;

typedef struct ctl_response {
	long status;
	sbx_strbuf body;         /* owned; empty when on_chunk took the body */
	char request_id[128];
	char retry_after[64];
	char poll_after[64];     /* X-Poll-After */
	char content_type[128];
	cJSON *envelope;         /* owned; parsed JSend envelope (NULL for raw) */
	const cJSON *data;       /* borrowed from envelope: its "data" member */
} ctl_response;

/* base_url, api_key and admin_token are copied. Returns -1 on allocation
 * failure. */
int ctl_client_init(ctl_client *c, const char *base_url, const char *api_key, const char *admin_token);
void ctl_client_free(ctl_client *c);

/* Performs one request. Returns 0 for a 2xx answer with a valid envelope
 * (or a raw body), else -1 with *err filled (class, status, message, request
 * id). resp is always initialised and must be freed with ctl_response_free. */
int ctl_request_do(ctl_client *c, const ctl_request *req, ctl_response *resp, ctl_error *err);
void ctl_response_free(ctl_response *resp);
/* The second half of ctl_request_do, without a socket (tests and the
 * ctl_answer fuzz target fill resp->status, body and the header strings):
 * a non-2xx answer is mapped to its error class with the server's JSend
 * message (or the status's default and the start of a body that is not
 * JSend); a 2xx one must be exactly one JSend success envelope with `data`
 * (or 204/205 without a body) unless raw. 0, or -1 with *err filled (its
 * method and path are left as they are). */
int ctl_answer_read(ctl_response *resp, bool raw, ctl_error *err);

/* Exactly one JSON value in text[0..len) (blanks around it allowed), or
 * NULL: "{...} garbage" is not an answer. */
cJSON *ctl_json_parse_exact(const char *text, size_t len);
/* Percent-escapes one path segment or query value into sb. */
bool ctl_escape(sbx_strbuf *sb, const char *s);
/* Parses Retry-After (delta-seconds or HTTP date) into seconds; -1 when not
 * parseable. */
double ctl_parse_retry_after(const char *v);
/* Parses X-Poll-After into milliseconds: a plain number is milliseconds
 * (what sbx-mock sends; the vendor's unit is unconfirmed), "Ns" seconds,
 * "NNNms" milliseconds. -1 when absent or unparseable. */
long ctl_parse_poll_after_ms(const char *v);

#endif

/* record.h: what record.c (the recording proxy, the lifecycle of record and
 * replay mode) and replay.c (reading a recording, matching requests
 * against it) share, and the replay API the mock_record fuzz target drives
 * without a server (read a recording from memory, write an exchange back
 * as a recording line, match a request). */
#ifndef SBX_MOCK_RECORD_H
#define SBX_MOCK_RECORD_H

#include "http/request.h"
#include "sbx/http_client.h"
#include "sbx/strbuf.h"

#define REC_MAX_KEYS 256

/* record.c: NULL when neither record nor replay is configured (err unset). */
mock_rec *mock_rec_new(const sbx_mock_config *cfg, sbx_err *err);
void mock_rec_free(mock_rec *rc);
/* In record/replay mode answers the control-plane request and returns true. */
bool mock_rec_dispatch(mreq *r, mresp *out);

/* One recorded exchange: the request it answers and the answer. */
typedef struct mock_rec_exchange {
	char *method, *path, *query, *key, *body;
	size_t body_len;
	int status;
	char *ctype, *request_id;
	cJSON *headers;      /* kept response headers {name: value} */
	char *resp;
	size_t resp_len;
} mock_rec_exchange;

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
	mock_rec_exchange *ex;
	size_t nex, next;
	bool quiet;
};

/* The request headers that carry an API key, in the order they are read. */
extern const char *const mock_rec_auth_headers[3];
extern const char mock_rec_b64chars[];

/* record.c */
/* "redacted-N" for a key (lock held), learning it when new; "" for none. */
void mock_rec_redact(mock_rec *rc, const char *key, char *buf, size_t cap);
/* The query string, rebuilt (escaped) from the parsed arguments in order. */
char *mock_rec_raw_query(const mreq *r);
const char *mock_rec_header(const mreq *r, const char *name);
void mock_rec_log(const mock_rec *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds body as "<name>" (text) or "<name>_b64". */
void mock_rec_add_body(cJSON *o, const char *name, const char *body, size_t len);
/* An exchange as a recording line's object (what record mode writes,
 * without "seq"; the key as its "redacted-N" name in X-Api-Key). */
cJSON *mock_rec_exchange_json(const mock_rec_exchange *e);

/* replay.c */
/* A replay-mode recorder from the text of a recording (what --replay
 * reads; name is how messages call it: "replay NAME line N: ..."). NULL
 * with err when a line is not an exchange or there is none. */
mock_rec *mock_rec_from_text(const char *text, size_t len, const char *name, bool quiet, sbx_err *err);
/* The same from the file path. */
mock_rec *mock_rec_from_file(const char *path, bool quiet, sbx_err *err);
void mock_rec_exchange_free(mock_rec_exchange *e);
/* Record mode (record.c): a proxy to cfg->record_upstream writing to
 * cfg->record_to, and the forwarding of one request. */
mock_rec *mock_rec_recorder_new(const sbx_mock_config *cfg, sbx_err *err);
void mock_rec_proxy(mock_rec *rc, mreq *r, mresp *out);

/* A request as replay matching sees it: key is the value of the first
 * auth header present (NULL: none), query the escaped query string. */
typedef struct mock_rec_request {
	const char *method, *path, *query, *key;
	const char *body;   /* may be NULL when body_len is 0 */
	size_t body_len;
} mock_rec_request;

/* Replay matching: the next recorded exchange when rq is it (method, path,
 * query and body equal, and the key is the one the recording names
 * redacted-N for the Nth distinct key of the replay, or no key for no
 * key), moving on; else NULL, nothing moves, and why (when not NULL) gets
 * the divergence message ("replay divergence at exchange N of M: expected
 * ...; received ..."). Thread-safe. */
const mock_rec_exchange *mock_rec_match(mock_rec *rc, const mock_rec_request *rq, sbx_strbuf *why);
/* Answers r from the recording (599 with the divergence message). */
void mock_rec_replay_answer(mock_rec *rc, mreq *r, mresp *out);

#endif

/* inet_cassette: the guests' internet as a cassette (issue 47,
 * mock-api/INTERNET.md "Record and replay the guests' internet") — the
 * format of /work/notes' cassette spec, shared with sbxctl's cassette
 * verbs: a directory with cassette.jsonl (a header line, then one line per
 * exchange) and bodies/ab/<sha256>, each body once, by its hash.
 *
 * This module reads, checks, matches, adds and writes; it knows no socket,
 * no HTTP server and no origin (inet_tape.c does the serving). Bodies are
 * streamed to and from their files, never held whole. Thread-safe: one
 * lock per cassette over its exchanges, counters and redaction tokens. */
#ifndef SBX_MOCK_INET_CASSETTE_H
#define SBX_MOCK_INET_CASSETTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx/cassette.h"
#include "sbx/err.h"

/* Limits (LIMITS.md, "Cassettes"): libsbx's, the one set every reader of
 * the format uses (sbx/cassette.h); a load or an add past one is refused
 * naming it. The mock's own: */
#define MOCK_CASSETTE_EXCHANGES_MAX ((int)SBX_CASSETTE_MAX_EXCHANGES)
#define MOCK_CASSETTE_HEADERS_MAX ((int)SBX_CASSETTE_HEADERS_MAX)
#define MOCK_CASSETTE_HEADER_BYTES ((int)SBX_CASSETTE_HEADER_BYTES)
#define MOCK_CASSETTE_TARGET_MAX ((int)SBX_CASSETTE_TARGET_MAX)
#define MOCK_CASSETTE_REDACT_MAX ((int)SBX_CASSETTE_REDACT_MAX)
#define MOCK_CASSETTE_REQ_BODY_MAX (8 * 1024 * 1024) /* a request body (held while it is sent) */
#define MOCK_CASSETTE_WRITE_EVERY 100          /* exchanges added between periodic writes */
#define MOCK_CASSETTE_WRITE_MS 5000            /* ... or this long, whichever first */

typedef struct mock_cassette mock_cassette;

/* A header as [name, value]. */
typedef struct mock_cassette_hdr {
	char *name;
	char *value;
} mock_cassette_hdr;

/* One exchange: what a line of cassette.jsonl holds. A body's hash is
 * 64 lower-case hex digits; req_sha "" when the request had no body. */
typedef struct mock_cassette_ex {
	char scheme[8];           /* "https" or "http" */
	char *host;               /* lower case, no trailing dot */
	unsigned port;
	char *method;
	char *target;             /* as sent, redacted query values replaced */
	mock_cassette_hdr *req_headers;
	size_t nreq_headers;
	char req_sha[65];
	long long req_size;
	int status;
	char *reason;
	mock_cassette_hdr *resp_headers;
	size_t nresp_headers;
	bool chunked;
	char body_sha[65];
	long long body_size;
	unsigned n;               /* the occurrence of its request key, from 1 */
	/* not in the file: */
	char *match_target;       /* target with redacted query values blanked */
	unsigned hits;            /* replay: requests of its key answered (on its key's n=1) */
} mock_cassette_ex;

/* A request as replay matches it (the spec's request key). target as the
 * guest sent it (redaction is applied here); body_sha NULL or "": none. */
typedef struct mock_cassette_key {
	const char *scheme;
	const char *host;
	unsigned port;
	const char *method;
	const char *target;
	const char *body_sha;
} mock_cassette_key;

/* Opens the cassette directory dir and checks it whole: every line, every
 * body file there and its hash. create: a missing directory (or one
 * without cassette.jsonl) is made, empty, for recording (redact: the
 * query names to redact, nredact of them, recorded in the header and
 * unioned with those the file has). NULL + err naming the file, the line
 * and what is wrong. */
mock_cassette *mock_cassette_open(const char *dir, bool create, const char *const *redact, size_t nredact,
				  sbx_err *err);
/* The same from the text of a cassette.jsonl alone (no directory, no
 * bodies checked): for the fuzzer and unit tests. name: for messages. */
mock_cassette *mock_cassette_parse(const char *text, size_t len, const char *name, sbx_err *err);
void mock_cassette_free(mock_cassette *c);

const char *mock_cassette_name(const mock_cassette *c); /* the directory's last part */
size_t mock_cassette_count(mock_cassette *c);
/* Whether any exchange is for host (lower case): its name resolves. */
bool mock_cassette_has_host(mock_cassette *c, const char *host);

/* Replay: the exchange for the k-th request of key (k counted here, from
 * 1): n = k, or past the last recorded n the last one. Copied into out
 * (mock_cassette_ex_clear when done); false when the key has none. */
bool mock_cassette_take(mock_cassette *c, const mock_cassette_key *key, mock_cassette_ex *out);
/* The miss's two lines: "sbx-mock cassette NAME: no recorded answer for
 * METHOD URL\nnearest recorded: METHOD URL\n" ("none for this host"). */
void mock_cassette_miss(mock_cassette *c, const mock_cassette_key *key, char *out, size_t cap);
/* A read-only descriptor of a body file, or -1. */
int mock_cassette_body_open(const mock_cassette *c, const char *sha);

/* Recording: a body written as it comes, hashed and kept once. */
typedef struct mock_cassette_body mock_cassette_body;
mock_cassette_body *mock_cassette_body_begin(mock_cassette *c, sbx_err *err);
int mock_cassette_body_write(mock_cassette_body *b, const void *data, size_t len);
/* Moves it to bodies/ab/<sha> (a body kept already: dropped): 0 with its
 * hash and size, or -1 with err. Frees b either way. */
int mock_cassette_body_end(mock_cassette_body *b, char sha[65], long long *size, sbx_err *err);
void mock_cassette_body_abort(mock_cassette_body *b);
/* A whole small body (a request's): 0 with its hash, or -1. */
int mock_cassette_body_put(mock_cassette *c, const void *data, size_t len, char sha[65], sbx_err *err);

/* Adds one exchange (copied; n, the redactions and match_target are made
 * here from e's fields, whatever e says of them), then writes the file
 * when MOCK_CASSETTE_WRITE_EVERY or MOCK_CASSETTE_WRITE_MS is due. 0, or
 * -1 with err (a limit). */
int mock_cassette_add(mock_cassette *c, const mock_cassette_ex *e, sbx_err *err);
/* Writes cassette.jsonl anew, sorted (temp, fsync, rename): 0 or -1. */
int mock_cassette_write(mock_cassette *c, sbx_err *err);
/* The whole file as it would be written (malloc'd, NUL-terminated). */
char *mock_cassette_text(mock_cassette *c);

/* The target with redacted query values replaced: each distinct value
 * of a redacted name becomes "redacted-N" (tokens shared with the
 * headers'), or with blank true, "" (for matching). malloc'd. */
char *mock_cassette_redact_target(mock_cassette *c, const char *target, bool blank);
void mock_cassette_ex_clear(mock_cassette_ex *e);
/* Whether header i of h (n headers) is hop-by-hop: Connection,
 * Keep-Alive, Proxy-Connection, Transfer-Encoding, TE, Trailer, Upgrade,
 * or a name the Connection header lists. Never kept, never replayed. */
bool mock_cassette_hop(const mock_cassette_hdr *h, size_t n, size_t i);

#endif

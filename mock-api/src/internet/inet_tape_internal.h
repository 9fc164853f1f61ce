/* inet_tape_internal: what inet_tape.c (the tape, requests, replay) and
 * inet_tape_record.c (the recorder's trip to the origin) share. Not for
 * other modules: inet_tape.h is the interface. */
#ifndef SBX_MOCK_INET_TAPE_INTERNAL_H
#define SBX_MOCK_INET_TAPE_INTERNAL_H

#include "internet/inet_cassette.h"
#include "internet/inet_tape.h"

#include <stdatomic.h>

typedef struct tape_pattern {
	char name[256];   /* a name or "*.suffix" ("" for a CIDR) */
	int family;       /* CIDR: 4 or 6 */
	uint8_t addr[16];
	int bits;
} tape_pattern;

typedef struct tape_resolve {
	char name[256];
	unsigned port;
	char addr[64];
} tape_resolve;

struct mock_inet_tape {
	mock_cassette *cas;
	bool record;
	char *dir;
	char *ca;
	tape_pattern allow[MOCK_INET_TAPE_ALLOW_MAX];
	size_t nallow;
	tape_resolve resolve[MOCK_INET_TAPE_RESOLVE_MAX];
	size_t nresolve;
	/* Bytes of bodies this recording wrote (each counted as it is written:
	 * a body is hashed, so found kept already, only at its end) and the
	 * bound; a write past it ends the exchange, later ones are refused. */
	atomic_llong rec_bytes;
	long long rec_max;
	atomic_bool rec_said;   /* the bound was said on stderr */
};

/* A guest's request as the tape reads it: the target as sent, the
 * headers in order, its body (at most MOCK_CASSETTE_REQ_BODY_MAX, held). */
typedef struct tape_req {
	char method[32];
	char target[MOCK_CASSETTE_TARGET_MAX + 1];
	mock_cassette_hdr hdrs[MOCK_CASSETTE_HEADERS_MAX];
	size_t nhdrs;
	char *body;
	size_t body_len;
	bool has_body;
	char body_sha[65];
} tape_req;

/* Sends a whole small answer (status, text body) to the guest. */
void mock_tape_send_text(mock_inet_io *io, int status, const char *reason, const char *text);
/* A head to the guest: status, the headers but hop-by-hop ones, the
 * framing (chunked when chunked, else the origin's Content-Length, else
 * length when >= 0, else none: the connection then ends with the body),
 * Connection. 0, or -1 (the guest is gone). */
int mock_tape_send_head(mock_inet_io *io, int status, const char *reason, const mock_cassette_hdr *h, size_t n,
			bool chunked, bool body, long long length);
/* Whether the header list says the body's framing is chunked. */
bool mock_tape_is_chunked(const mock_cassette_hdr *h, size_t n);
/* Whether an answer to method with status carries a body. */
bool mock_tape_has_body(const char *method, int status);
/* Records r's exchange from the origin, answering io as it streams. */
void mock_tape_record(mock_inet_tape *t, mock_inet_io *io, tape_req *r);

#endif

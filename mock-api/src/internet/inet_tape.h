/* inet_tape: recording and replaying the guests' internet
 * (mock-api/INTERNET.md, "Record and replay the guests' internet"; issue
 * 47) — the part of the simulated internet's proxy that answers a request
 * no stub or site answered from a cassette (inet_cassette.h), or, while
 * recording, from the real origin through a connection of the mock's own.
 *
 * Replay never goes upstream: a request the cassette lacks is a 502 whose
 * body names it and the nearest recorded one. Recording sends a request
 * out only when its host matches the operator's patterns; the origin's
 * certificate is verified (the host's trust store, or the CA file given),
 * and the answer is streamed to the guest while its body is hashed to a
 * file: never held whole. Thread-safe. */
#ifndef SBX_MOCK_INET_TAPE_H
#define SBX_MOCK_INET_TAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internet/inet_upstream.h"
#include "sbx/err.h"

#define MOCK_INET_TAPE_ALLOW_MAX 64   /* --internet-record-allow patterns */
#define MOCK_INET_TAPE_RESOLVE_MAX 64 /* --internet-record-resolve entries */
/* What a recording may write of bodies (--internet-record-max-mib): a
 * guest's downloads from an allowed origin must not fill the host's disk. */
#define MOCK_INET_TAPE_RECORD_MIB 8192
#define MOCK_INET_TAPE_RECORD_MIB_MAX 16777216

typedef struct mock_inet_tape mock_inet_tape;

typedef struct mock_inet_tape_conf {
	const char *dir;            /* the cassette directory */
	bool record;                /* record into it (made if missing); else replay it */
	const char *allow;          /* record: "PATTERN,..." names, *.suffix, addresses, CIDRs */
	const char *ca;             /* record: the origins' CA bundle; NULL: the host's trust store */
	const char *const *resolve; /* record: "NAME:PORT:ADDR", as curl's --resolve */
	size_t nresolve;
	const char *const *redact;  /* query parameter names whose values are redacted */
	size_t nredact;
	unsigned record_max_mib;    /* record: MiB of bodies it may write; 0: MOCK_INET_TAPE_RECORD_MIB */
} mock_inet_tape_conf;

/* Opens (and checks) the cassette: NULL + err naming the flag's value and
 * what is wrong with it. */
mock_inet_tape *mock_inet_tape_new(const mock_inet_tape_conf *conf, sbx_err *err);
/* Writes the cassette when recording (err: why it could not be: 0 or -1),
 * then frees. */
int mock_inet_tape_free(mock_inet_tape *t, sbx_err *err);
bool mock_inet_tape_recording(const mock_inet_tape *t);
const char *mock_inet_tape_dir(const mock_inet_tape *t);
size_t mock_inet_tape_count(mock_inet_tape *t);
/* Whether the resolver gives name (lower case) an address: a host the
 * cassette holds, or while recording one the patterns name. */
bool mock_inet_tape_names(mock_inet_tape *t, const char *name);
/* A --internet-record-allow / --internet-record-resolve / redact value's
 * check alone (for the command line): 0, or -1 with err. */
int mock_inet_tape_check_allow(const char *patterns, sbx_err *err);
int mock_inet_tape_check_resolve(const char *entry, sbx_err *err);

/* One request on a guest's connection, as the proxy hands it over. */
typedef struct mock_inet_io {
	void *arg;
	/* all of buf to the guest: 0, or -1 (gone) */
	int (*send)(void *arg, const char *buf, size_t len);
	/* up to cap bytes from the guest, waiting until end_ms: > 0, or 0 */
	size_t (*recv)(void *arg, char *buf, size_t cap, int64_t end_ms);
	const char *head;           /* the request head, NUL-terminated */
	char *rest;                 /* bytes read past the head (a body's start) */
	size_t *rest_len;
	const char *scheme;         /* "https" or "http" */
	const char *host;           /* lower case, no port */
	unsigned port;              /* the port the guest dialled */
	mock_inet_outside *outside; /* record: the host namespace's sockets */
	int stopfd;
	bool keep;                  /* in: the connection may carry another request; out: still may */
	/* out, for the journal: */
	int status;                 /* 0: none sent (the connection is to be reset) */
	bool reset;
	const char *via;            /* "cassette" or "record" */
	char miss[1024];            /* a miss's two lines, "" otherwise */
} mock_inet_io;

/* Answers io's request from the cassette (replay) or the origin (record):
 * true when it did (io's out fields say how), false when the request is
 * not the tape's (recording, a host the patterns do not name): the proxy
 * answers as without a tape. Reads the request's body itself (io->keep
 * false after a body it could not read). */
bool mock_inet_tape_serve(mock_inet_tape *t, mock_inet_io *io);

#endif

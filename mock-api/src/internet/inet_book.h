/* inet_book: what the simulated internet answers besides its "reached"
 * page (mock-api/INTERNET.md, "Stubs, sites, journal, upstream") — the
 * stubs a test configures (match a request, answer it or fail it), the
 * static sites served from directories, the upstream patterns whose flows
 * are forwarded to the real destination, and the journal of the
 * internet's requests.
 *
 * Owned by the mock (it outlives a restart of the internet and exists when
 * egress is not enforced, so the admin API answers the same); the
 * internet's servers read it on every connection. Knows no sockets and no
 * HTTP server: internet_serve.c asks it what to do and does it.
 * Thread-safe: stubs are immutable once added and reference counted, so a
 * connection answering with one is never hurt by its deletion. */
#ifndef SBX_MOCK_INET_BOOK_H
#define SBX_MOCK_INET_BOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sbx/err.h"

struct mock_hosts;

/* Limits (INTERNET.md lists them; a stub over one is refused with a 400
 * naming it). */
#define MOCK_INET_STUBS_MAX 4096
#define MOCK_INET_STUB_BODY_MAX (1024 * 1024)       /* inline body */
#define MOCK_INET_STUB_FILE_MAX (16 * 1024 * 1024)  /* body_file, read when added */
#define MOCK_INET_STUB_BYTES_MAX (256 * 1024 * 1024) /* all stubs' bodies together */
#define MOCK_INET_STUB_HEADERS_MAX 32
#define MOCK_INET_STUB_HEADER_BYTES 8192            /* one stub's headers, as sent */
#define MOCK_INET_STUB_DELAY_MAX_MS 60000
#define MOCK_INET_SITES_MAX 32
#define MOCK_INET_UPSTREAM_MAX 64
#define MOCK_INET_JOURNAL_SIZE 4096

typedef struct mock_inet_book mock_inet_book;

/* How a stub fails the request instead of answering it in full. */
typedef enum mock_inet_fault {
	MOCK_INET_FAULT_NONE,
	MOCK_INET_FAULT_RESET,      /* the connection is reset (RST), nothing sent */
	MOCK_INET_FAULT_HANG,       /* nothing sent for hang_ms, then closed */
	MOCK_INET_FAULT_CLOSE_MID,  /* the head and half the body, then closed */
	MOCK_INET_FAULT_SLOW_BODY,  /* the body in chunk_bytes every interval_ms */
} mock_inet_fault;

/* One stub, as the servers see it (immutable; mock_inet_stub_put when
 * done). */
typedef struct mock_inet_stub {
	unsigned id;
	int status;
	char *head;            /* the header lines it answers with, each ending "\r\n" */
	char *body;
	size_t body_len;
	int delay_ms;
	mock_inet_fault fault;
	int hang_ms, chunk_bytes, interval_ms;
} mock_inet_stub;

/* A request as the internet read it. host: lower case, no port (the Host
 * header's, else the TLS name, else the dialled address). */
typedef struct mock_inet_req {
	const char *tenant;    /* the sandbox's tenant key, "" when none */
	const char *sandbox;   /* "" when none */
	const char *host;
	bool tls;
	const char *method;
	const char *path;      /* the request target's path, no query */
	const char *head;      /* the whole head, for a header match */
} mock_inet_req;

mock_inet_book *mock_inet_book_new(void);
void mock_inet_book_free(mock_inet_book *b);

/* The tenant key of a sandbox ("" when none): per-tenant stubs match on
 * it. The mock sets it (the model is above the internet); unset, every
 * sandbox has none. */
typedef void (*mock_inet_tenant_fn)(void *arg, const char *sandbox, char *key, size_t cap);
void mock_inet_book_set_tenant_fn(mock_inet_book *b, mock_inet_tenant_fn fn, void *arg);
void mock_inet_book_tenant(mock_inet_book *b, const char *sandbox, char *key, size_t cap);

/* Whether host matches a pattern (lower case; wildcard: "*.suffix",
 * which the suffix itself does not match). */
bool mock_inet_host_match(const char *pattern, bool wildcard, const char *host);

/* ---- stubs ---- */

/* Adds one stub (an object) or {stubs:[...]}, all or none; their ids
 * appended to ids. base_dir: where a relative body_file is (NULL: the
 * working directory). -1 with err naming the stub, the key and what is
 * wrong (an unknown key included). */
int mock_inet_stubs_add_json(mock_inet_book *b, const cJSON *body, const char *base_dir, cJSON *ids,
			     sbx_err *err);
/* Reads a stubs file ({stubs:[...]} or an array): 0, or -1 with err. */
int mock_inet_stubs_add_file(mock_inet_book *b, const char *path, sbx_err *err);
/* {stubs:[...]} in match order; one stub's view, or NULL. */
cJSON *mock_inet_stubs_list_json(mock_inet_book *b);
cJSON *mock_inet_stub_json(mock_inet_book *b, unsigned id);
/* 0, or -1 (no such stub). */
int mock_inet_stub_delete(mock_inet_book *b, unsigned id);
void mock_inet_stubs_clear(mock_inet_book *b);
size_t mock_inet_stubs_count(mock_inet_book *b);
/* The first stub that matches r (a reference: mock_inet_stub_put), or
 * NULL. */
mock_inet_stub *mock_inet_stub_match(mock_inet_book *b, const mock_inet_req *r);
void mock_inet_stub_put(mock_inet_stub *s);

/* ---- sites ---- */

/* "HOST=DIR": DIR served for HOST (exact, lower-cased). -1 with err (not
 * HOST=DIR, DIR not a directory, too many). */
int mock_inet_site_add(mock_inet_book *b, const char *spec, sbx_err *err);
/* The site directory's descriptor (O_PATH) for host, or -1: valid while
 * the book lives (sites are only added before the servers start). */
int mock_inet_site_dir(mock_inet_book *b, const char *host);
/* Site i's host (i < mock_inet_site_count), for the start-up note. */
size_t mock_inet_site_count(const mock_inet_book *b);
const char *mock_inet_site_host(const mock_inet_book *b, size_t i);
/* Whether name (lower case) is a site's, a stub's match.host (exact,
 * or under a "*.suffix"), or the tape's (a host its cassette holds, or
 * while recording one the operator allowed): a name the resolver answers
 * when the hosts file lacks it. */
bool mock_inet_book_names(mock_inet_book *b, const char *name);
/* The sites whose names hosts lacks, with the address the resolver gives
 * each (MOCK_INET_SYNTH_CIDR): "a.test=198.18.x.y, ..." into out, "" for
 * none; cut at cap (each still resolves). */
void mock_inet_sites_note(const mock_inet_book *b, const struct mock_hosts *hosts, char *out, size_t cap);
/* Opens path (a request's, %-decoded here) beneath dirfd, never outside
 * it (no "..", no symlink out, no magic links); a directory gives its
 * index.html. The fd (read-only), or -1 with *status 404 (missing), 403
 * (outside, or not a regular file) or 400 (a bad escape). */
int mock_inet_site_open(int dirfd, const char *path, int *status);
/* The Content-Type for a file name by its extension. */
const char *mock_inet_content_type(const char *path);

/* ---- upstream ---- */

/* "PATTERN,PATTERN...": names (exact or "*.suffix") and CIDRs (v4/v6; a
 * bare address is /32 or /128). -1 with err naming the bad pattern. */
int mock_inet_upstream_set(mock_inet_book *b, const char *patterns, sbx_err *err);
bool mock_inet_upstream_any(mock_inet_book *b);
/* The patterns as given, "" when none. */
const char *mock_inet_upstream_text(mock_inet_book *b);
/* Binds each name pattern to the addresses the hosts file gives the names
 * it matches (the internet calls it at start, with its resolver's table):
 * -1 with err naming a pattern that matches no name with an address. */
int mock_inet_upstream_resolve(mock_inet_book *b, const struct mock_hosts *hosts, sbx_err *err);
/* Whether a flow is forwarded: its address (family 4/6, raw bytes) is in
 * a CIDR, or it names host (SNI or Host, lower case; NULL: none) that a
 * name pattern matches and dials one of that pattern's addresses. */
bool mock_inet_upstream_match(mock_inet_book *b, int family, const uint8_t *addr, const char *host);

/* ---- the cassette (inet_tape.h) ---- */

struct mock_inet_tape;
/* The tape the servers record into or replay from (not owned; set before
 * the internet starts, cleared after it stopped); NULL: none. Its hosts
 * resolve as sites' and stubs' do (mock_inet_book_names). */
void mock_inet_book_set_tape(mock_inet_book *b, struct mock_inet_tape *t);
struct mock_inet_tape *mock_inet_book_tape(mock_inet_book *b);

/* ---- the journal ---- */

typedef struct mock_inet_entry {
	const char *tenant, *sandbox, *host, *scheme, *method, *path;
	int status;            /* 0: none was sent (a fault, an upstream flow) */
	unsigned stub;         /* 0: none */
	const char *via;       /* "stub", "site", "upstream", "page" or "tls" (a failed handshake) */
	const char *fault;     /* NULL, or the stub's fault */
	unsigned port;         /* the port dialled (0: not known) */
	const char *tls_error; /* NULL, or why there was no TLS (a failed handshake, plain text on 443) */
	const char *cassette_miss; /* NULL, or what the cassette lacked (via "cassette") or why a
				    * recording failed (via "record") */
} mock_inet_entry;

void mock_inet_journal_add(mock_inet_book *b, const mock_inet_entry *e);
/* {entries:[{seq, ts_ms, tenant, sandbox_id, host, scheme, method, path,
 * status, stub?, via, fault?, port?, tls_error?, cassette_miss?}], next_seq, wrapped}; since: exclusive seq,
 * sandbox/host: filters (NULL: all); limit 0: all. */
cJSON *mock_inet_journal_json(mock_inet_book *b, uint64_t since, const char *sandbox, const char *host,
			      size_t limit);
void mock_inet_journal_clear(mock_inet_book *b);
const char *mock_inet_fault_name(mock_inet_fault f);

#endif

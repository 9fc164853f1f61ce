/* cassette: the guests' internet recorded once and replayed offline (issue
 * 47): a directory holding cassette.jsonl (a header line, then one line per
 * exchange) and bodies/ab/<sha256> (each body once, named by its hash). The
 * format is written down in lib/README.md ("Cassettes"); this
 * module reads it, checks it whole (every line, every body's size and hash),
 * sorts and writes it, and knows the request key, the redaction tokens and
 * the union of two cassettes.
 *
 * It does no HTTP and never prints: every problem comes back as a message
 * naming the file and the line (or the body file) and what is wrong, so
 * sbxctl and the mock can show it unchanged. Nothing here keeps state
 * between calls; a cassette value belongs to its caller (sbx_cassette_free). */
#ifndef SBX_CASSETTE_H
#define SBX_CASSETTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sbx/err.h"
#include "sbx/strbuf.h"

#define SBX_CASSETTE_VERSION 1
#define SBX_CASSETTE_FILE "cassette.jsonl"
#define SBX_CASSETTE_BODIES "bodies"
/* Limits: one set for every reader (sbxctl's verbs and sbx-mock's
 * --internet-replay/--internet-record read through this module), written
 * once in mock-api/LIMITS.md ("Cassettes"). The mock holds a cassette's
 * exchanges in memory while it serves and scans them per request, and a
 * guest's request-target is read into a buffer of TARGET_MAX: a cassette
 * past these could be checked here but never replayed, so it is refused
 * here too. A line or a file longer than its bound is refused before it is
 * parsed. */
#define SBX_CASSETTE_LINE_MAX (1024u * 1024u)
#define SBX_CASSETTE_MAX_EXCHANGES 65536u
#define SBX_CASSETTE_FILE_MAX (1024u * 1024u * 1024u)
#define SBX_CASSETTE_TARGET_MAX 8192u
#define SBX_CASSETTE_HOST_MAX 253u
#define SBX_CASSETTE_METHOD_MAX 31u
#define SBX_CASSETTE_REASON_MAX 256u
#define SBX_CASSETTE_HEADERS_MAX 128u           /* [name, value] pairs of one request or answer */
#define SBX_CASSETTE_HEADER_BYTES 65536u        /* their names and values together */
#define SBX_CASSETTE_REDACT_MAX 32u             /* redacted query names in the header */
#define SBX_CASSETTE_QUERY_NAME_MAX 255u        /* one such name */
#define SBX_CASSETTE_FRACTION_MAX 9u            /* digits of a fraction of a second in "created" */
/* 2^53: the largest integer a JSON number holds exactly. */
#define SBX_CASSETTE_SIZE_MAX 9007199254740992.0
/* How many problems a load collects before it stops reading. */
#define SBX_CASSETTE_MAX_PROBLEMS 100u

typedef struct sbx_cassette_body {
	char sha256[65]; /* lowercase hex */
	uint64_t size;
} sbx_cassette_body;

typedef struct sbx_cassette_exchange {
	cJSON *obj;          /* owned: the line as read; written back as it is */
	size_t line;         /* 1-based line of the file it was read from (0: made here) */
	/* The fields below point into obj (valid while obj lives). */
	const char *scheme, *host, *method, *target, *reason;
	/* owned: target with the values of the header's redacted query names
	 * blanked ("?token=&x=1"): the request key's target, what replay
	 * matches and the order sorts by (one request recorded twice with two
	 * secrets is one key, n=1 and n=2). */
	char *key_target;
	int port, status;
	unsigned long n;
	bool chunked;
	bool has_request_body;
	sbx_cassette_body request_body, body;
} sbx_cassette_exchange;

typedef struct sbx_cassette {
	char *created;          /* owned: RFC 3339 */
	char **redacted_query;  /* owned: the query parameter names redacted */
	size_t nredacted;
	sbx_cassette_exchange *ex; /* owned, nex of them */
	size_t nex;
} sbx_cassette;

/* The problems a load found, one message a line ("FILE:LINE: what"). */
typedef struct sbx_cassette_problems {
	sbx_strbuf text;
	size_t count;
	bool truncated; /* more than SBX_CASSETTE_MAX_PROBLEMS: reading stopped */
} sbx_cassette_problems;

void sbx_cassette_problems_free(sbx_cassette_problems *p);

enum {
	SBX_CASSETTE_LINES = 0,      /* the lines only: no body is opened */
	SBX_CASSETTE_BODY_SIZES = 1, /* also every body file exists, is a regular file of its size */
	SBX_CASSETTE_BODY_HASHES = 3 /* also its SHA-256 is its name (reads every body) */
};

/* Parses the header line (line 1). name: what to call the file in a
 * message. 0, or -1 with *err "NAME:1: what is wrong". */
int sbx_cassette_parse_header(const char *line, size_t len, const char *name, sbx_cassette *cas, sbx_err *err);
/* Parses one exchange line (no '\n') into *ex (the caller frees it with
 * sbx_cassette_exchange_free, also after a failure). redacted: the header's
 * query names, whose values in the target must be redaction tokens. */
int sbx_cassette_parse_exchange(const char *line, size_t len, const char *name, size_t lineno,
				const sbx_cassette *cas, sbx_cassette_exchange *ex, sbx_err *err);
void sbx_cassette_exchange_free(sbx_cassette_exchange *ex);
/* The same checks on an exchange already a JSON object (a writer's, such
 * as the mock's recorder): *ex takes obj whatever the result (free it with
 * sbx_cassette_exchange_free). lineno 0: a line not in a file, *err "NAME:
 * what". */
int sbx_cassette_exchange_from_json(cJSON *obj, const char *name, size_t lineno, const sbx_cassette *cas,
				    sbx_cassette_exchange *ex, sbx_err *err);
/* Whether s may be a redacted query name (the header's, or one for the
 * mock's --internet-redact-query): 1 to SBX_CASSETTE_QUERY_NAME_MAX bytes
 * of printable ASCII, no space, none of "&=?#". */
bool sbx_cassette_query_name_ok(const char *s);
/* target with the values of the query parameters names[0..n) blanked
 * (the parameters between '?' and the end or a '#'): malloc'd, NULL when
 * out of memory. */
char *sbx_cassette_key_target(const char *target, char *const *names, size_t n);

/* Parses a whole cassette.jsonl text: the header, every exchange, the order
 * of the lines, repeated keys and the n sequence of each key. Every problem
 * is added to *probs (when not NULL); returns 0 when there is none. *cas
 * holds what could be read either way (free it). */
int sbx_cassette_parse_text(const char *text, size_t len, const char *name, sbx_cassette *cas,
			    sbx_cassette_problems *probs);

/* Reads DIR/cassette.jsonl and checks the bodies as `what` says. 0 when
 * there is no problem. Body files no line names are not problems: *orphans
 * (may be NULL) gets their count. */
int sbx_cassette_load(const char *dir, int what, sbx_cassette *cas, sbx_cassette_problems *probs,
		      size_t *orphans);
void sbx_cassette_free(sbx_cassette *cas);

/* Orders two exchanges as the file does: by the request key (scheme, host,
 * port, key_target, method, the request body's hash, none first), then n. */
int sbx_cassette_compare(const sbx_cassette_exchange *a, const sbx_cassette_exchange *b);
/* Whether two exchanges have the same request key and n. */
bool sbx_cassette_same_key(const sbx_cassette_exchange *a, const sbx_cassette_exchange *b);
/* The request key's order alone (n not compared): 0 when a and b are one
 * request. */
int sbx_cassette_compare_key(const sbx_cassette_exchange *a, const sbx_cassette_exchange *b);
void sbx_cassette_sort(sbx_cassette *cas);

/* cas as cassette.jsonl's text (sorted first; a header without `created`
 * gets the time now), appended to out. 0, or -1 when out of memory. */
int sbx_cassette_text(sbx_cassette *cas, sbx_strbuf *out);
/* Writes cas (sorted first) as DIR/cassette.jsonl: a temporary file in DIR,
 * fsynced, renamed over the old one, DIR fsynced; a failure leaves the old
 * file as it was. 0, or -1 with *err. */
int sbx_cassette_write(const char *dir, sbx_cassette *cas, sbx_err *err);

/* "DIR/bodies/ab/abcdef..." into out. */
void sbx_cassette_body_path(sbx_strbuf *out, const char *dir, const char *sha256);
/* The SHA-256 (lowercase hex) and size of a file. 0, or -1 with *err. */
int sbx_cassette_hash_file(const char *path, char hex[65], uint64_t *size, sbx_err *err);

/* Every body file under DIR/bodies (a name of 64 hex digits in the folder
 * of its first two): fn gets its hash, size and whether a line of cas names
 * it. Other files are skipped. A missing bodies folder holds none. 0, or -1
 * with *err (a folder that cannot be read), or what fn returned if not 0. */
typedef int (*sbx_cassette_body_fn)(const char *sha256, uint64_t size, bool named, void *ud);
int sbx_cassette_walk_bodies(const char *dir, const sbx_cassette *cas, sbx_cassette_body_fn fn, void *ud,
			     sbx_err *err);

/* The highest N of a "redacted-N" token in cas (0: none). */
unsigned long sbx_cassette_max_token(const sbx_cassette *cas);
/* Adds `offset` to every redaction token of ex (credential headers, the
 * redacted query names' values in the target). 0, or -1 when out of memory. */
int sbx_cassette_renumber(sbx_cassette_exchange *ex, const sbx_cassette *cas, unsigned long offset);

/* One line of `sbxctl mock cassette list`: "METHOD scheme://host:port/target". */
void sbx_cassette_request_text(sbx_strbuf *out, const sbx_cassette_exchange *ex);

#endif

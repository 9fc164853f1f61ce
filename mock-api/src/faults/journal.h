/* journal: the bounded request journal of sbx-mock (a ring of entries).
 *
 * Records what the HTTP layer tells it; never touches sockets. Thread-safe
 * (own mutex). Memory is bounded by the ring size: when it wraps, the
 * oldest entries are dropped and counted. */
#ifndef SBX_MOCK_JOURNAL_H
#define SBX_MOCK_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

typedef struct mock_journal_entry {
	uint64_t seq;
	int64_t ts_ms;         /* mock clock */
	char method[12];
	char *path;
	char *query;           /* may be NULL */
	char *tenant;          /* may be NULL */
	int status;            /* 0: no answer (reset/close/hang) */
	char sandbox_id[40];
	int64_t duration_us;   /* end_us - start_us */
	int64_t start_us;      /* the mock's monotonic clock (us) when the request's
	                        * headers arrived ... */
	int64_t end_us;        /* ... and when it was answered (or given up): one
	                        * clock for every entry of a mock, so "B started after
	                        * A completed" is b.start_us > a.end_us */
	uint64_t conn;         /* serial of the TCP connection it came on (1, 2, ...), 0 unknown */
	char *fault;           /* label of the fired rule, may be NULL */
	char agent[96];        /* User-Agent header (truncated), "" when absent: tells
	                        * a conformance harness's own requests from the backend's */
} mock_journal_entry;

typedef struct mock_journal_filter {
	uint64_t since;        /* exclusive */
	const char *method;
	const char *path;      /* pattern, see mock_path_match */
	const char *tenant;
	int status;            /* 0: any */
	size_t limit;          /* 0: all */
} mock_journal_filter;

typedef struct mock_journal mock_journal;

/* size 0 disables recording. */
mock_journal *mock_journal_new(size_t size);
void mock_journal_free(mock_journal *j);
/* Copies every string. */
void mock_journal_add(mock_journal *j, const mock_journal_entry *e);
void mock_journal_clear(mock_journal *j);
/* {entries:[...], next_seq, wrapped, dropped} */
cJSON *mock_journal_query(mock_journal *j, const mock_journal_filter *flt);
size_t mock_journal_count(mock_journal *j, const mock_journal_filter *flt);

#endif

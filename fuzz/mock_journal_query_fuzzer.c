/* Fuzz target: sbx-mock's request journal (mock-api/src/faults/journal.h), its
 * ring and its filters, against a plain reference list.
 *
 * The query-string parsing of GET /_mock/journal is a static function of
 * the admin handlers (journal_filter in admin.c) and not reachable without a
 * daemon; this target drives what it feeds: mock_journal_query and
 * mock_journal_count with a mock_journal_filter, over a ring of
 * fuzzer-chosen size and entries.
 * The input is a little program: the first byte sizes the ring (0..8, 0 =
 * disabled), then each step adds an entry, runs a query or clears, its
 * fields taken from small pools or from the input bytes (paths, patterns).
 *
 * Properties, each abort()s when broken:
 * - a query returns exactly the retained entries (the newest `size` since
 *   the last clear) that the reference filter accepts, oldest first, with
 *   their fields, and no more than `limit`;
 * - mock_journal_count agrees with an unlimited query;
 * - `dropped`/`wrapped` count the entries pushed out of the ring;
 * - paging with since = next_seq and a limit visits every match exactly
 *   once, in order, and stops. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "../mock-api/src/faults/faults.h"
#include "../mock-api/src/faults/journal.h"
#include "../mock-api/src/util/path_match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_STEPS 200
#define MAX_REF (MAX_STEPS + 1)

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "mock_journal_query property broken: %s\n", what);
		abort();
	}
}

typedef struct input {
	const uint8_t *p;
	size_t n;
} input;

static uint8_t byte(input *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

/* A NUL-terminated string of up to 15 input bytes, into buf. */
static const char *bytes_str(input *in, char *buf)
{
	size_t len = byte(in) % 16, o = 0;

	for (size_t i = 0; i < len; i++) {
		char c = (char)byte(in);

		if (c != '\0')
			buf[o++] = c;
	}
	buf[o] = '\0';
	return buf;
}

static const char *const methods[] = {"GET", "POST", "DELETE", "get", "PATCH"};
static const char *const paths[] = {"/v1/sandboxes", "/v1/sandboxes/sb-1", "/v1/sandboxes/sb-1/exec",
				     "/_mock/faults", "/", ""};
static const char *const patterns[] = {"/v1/sandboxes/{id}", "/v1/*", "*", "/v1/sandboxes",
				       "/v1/sandboxes/{id}/exec", "{x}"};
static const char *const tenants[] = {"k1", "k2", ""};
static const int statuses[] = {200, 201, 404, 500, 0, 429};

typedef struct ref_entry {
	uint64_t seq;
	char method[12];
	char path[32];
	bool has_path;
	char tenant[4];
	bool has_tenant;
	int status;
	int64_t ts, start_us, end_us;
} ref_entry;

typedef struct ref {
	ref_entry e[MAX_REF];
	size_t n;       /* entries since the last clear */
	uint64_t next_seq;
	uint64_t dropped;
	size_t size;
} ref;

static bool ref_matches(const ref_entry *e, const mock_journal_filter *f)
{
	if (e->seq <= f->since)
		return false;
	if (f->method != NULL && strcasecmp(f->method, e->method) != 0)
		return false;
	if (f->path != NULL && (!e->has_path || !mock_path_match(f->path, e->path)))
		return false;
	if (f->tenant != NULL && (!e->has_tenant || strcmp(f->tenant, e->tenant) != 0))
		return false;
	return f->status == 0 || f->status == e->status;
}

static void do_add(mock_journal *j, ref *r, input *in)
{
	mock_journal_entry e;
	char pbuf[16];
	uint8_t b = byte(in);
	ref_entry *re;

	memset(&e, 0, sizeof(e));
	snprintf(e.method, sizeof(e.method), "%s", methods[b % 5]);
	b = byte(in);
	e.path = b % 8 < 6 ? (char *)paths[b % 8] : b % 8 == 6 ? NULL : (char *)bytes_str(in, pbuf);
	b = byte(in);
	e.tenant = b % 4 < 3 ? (char *)tenants[b % 4] : NULL;
	e.status = statuses[byte(in) % 6];
	e.ts_ms = (int64_t)r->next_seq * 10;
	e.start_us = (int64_t)r->next_seq * 1000 + 7; /* no input byte: the corpus keeps its meaning */
	e.end_us = e.start_us + 13;
	e.query = (char *)"a=1";
	e.fault = byte(in) % 2 ? (char *)"rule 1 (reset)" : NULL;
	mock_journal_add(j, &e);
	if (r->size == 0)
		return;
	if (r->n >= r->size)
		r->dropped++;
	re = &r->e[r->n++];
	re->seq = r->next_seq++;
	snprintf(re->method, sizeof(re->method), "%s", e.method);
	re->has_path = e.path != NULL;
	snprintf(re->path, sizeof(re->path), "%s", e.path != NULL ? e.path : "");
	re->has_tenant = e.tenant != NULL;
	snprintf(re->tenant, sizeof(re->tenant), "%s", e.tenant != NULL ? e.tenant : "");
	re->status = e.status;
	re->ts = e.ts_ms;
	re->start_us = e.start_us;
	re->end_us = e.end_us;
}

static void check_entry(const cJSON *o, const ref_entry *e)
{
	const cJSON *tenant = cJSON_GetObjectItemCaseSensitive(o, "tenant");

	check(cJSON_GetObjectItemCaseSensitive(o, "seq")->valuedouble == (double)e->seq, "entry seq");
	check(strcmp(cJSON_GetObjectItemCaseSensitive(o, "method")->valuestring, e->method) == 0,
	      "entry method");
	check(strcmp(cJSON_GetObjectItemCaseSensitive(o, "path")->valuestring, e->path) == 0,
	      "entry path");
	check(e->has_tenant ? cJSON_IsString(tenant) && strcmp(tenant->valuestring, e->tenant) == 0
			    : cJSON_IsNull(tenant), "entry tenant");
	check(cJSON_GetObjectItemCaseSensitive(o, "status")->valuedouble == e->status, "entry status");
	check(cJSON_GetObjectItemCaseSensitive(o, "ts_ms")->valuedouble == (double)e->ts, "entry ts");
	check(cJSON_GetObjectItemCaseSensitive(o, "start_us")->valuedouble == (double)e->start_us, "entry start_us");
	check(cJSON_GetObjectItemCaseSensitive(o, "end_us")->valuedouble == (double)e->end_us, "entry end_us");
}

/* The retained reference entries: the newest `size`. */
static size_t first_kept(const ref *r)
{
	return r->n > r->size ? r->n - r->size : 0;
}

static void do_query(mock_journal *j, const ref *r, input *in)
{
	mock_journal_filter f;
	char pbuf[16];
	uint8_t b;
	cJSON *res, *entries;
	const cJSON *it;
	size_t want = 0, got = 0, k;

	memset(&f, 0, sizeof(f));
	f.since = byte(in) % 4 == 0 ? byte(in) % (r->next_seq + 1) : 0;
	b = byte(in);
	f.method = b % 7 < 5 ? methods[b % 7] : NULL;
	b = byte(in);
	f.path = b % 8 < 6 ? patterns[b % 8] : b % 8 == 6 ? NULL : bytes_str(in, pbuf);
	b = byte(in);
	f.tenant = b % 4 < 3 ? tenants[b % 4] : NULL;
	f.status = byte(in) % 3 == 0 ? statuses[byte(in) % 6] : 0;
	f.limit = byte(in) % 4;
	res = mock_journal_query(j, &f);
	entries = cJSON_GetObjectItemCaseSensitive(res, "entries");
	check(cJSON_IsArray(entries), "query without entries");
	it = entries->child;
	for (k = first_kept(r); k < r->n; k++) {
		if (!ref_matches(&r->e[k], &f))
			continue;
		want++;
		if (f.limit != 0 && got == f.limit)
			continue;
		check(it != NULL, "query misses a matching entry");
		check_entry(it, &r->e[k]);
		it = it->next;
		got++;
	}
	check(it == NULL, "query returns an entry the filter rejects");
	check(cJSON_GetObjectItemCaseSensitive(res, "dropped")->valuedouble == (double)r->dropped,
	      "dropped count");
	check(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "wrapped")) == (r->dropped > 0),
	      "wrapped flag");
	{
		size_t lim = f.limit;

		f.limit = 0;
		check(mock_journal_count(j, &f) == want, "count disagrees with the query");
		f.limit = lim;
	}
	cJSON_Delete(res);
	if (f.limit == 0)
		return;
	/* paging: since = next_seq until an empty page visits every match once */
	{
		size_t seen = 0;
		uint64_t last = f.since;

		for (int guard = 0; guard < MAX_REF + 2; guard++) {
			cJSON *page = mock_journal_query(j, &f);
			const cJSON *pe = cJSON_GetObjectItemCaseSensitive(page, "entries");
			int n = cJSON_GetArraySize(pe);

			cJSON_ArrayForEach(it, pe) {
				double s = cJSON_GetObjectItemCaseSensitive(it, "seq")->valuedouble;

				check(s > (double)last, "paging repeats or reorders entries");
				last = (uint64_t)s;
			}
			seen += (size_t)n;
			f.since = (uint64_t)cJSON_GetObjectItemCaseSensitive(page, "next_seq")->valuedouble;
			cJSON_Delete(page);
			if (n == 0)
				break;
			check(guard < MAX_REF, "paging does not end");
		}
		check(seen == want, "paging does not visit every match exactly once");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	input in = {data, size};
	static ref r;
	mock_journal *j;
	uint8_t b0 = byte(&in);

	memset(&r, 0, sizeof(r));
	r.size = b0 % 9;
	r.next_seq = 1;
	j = mock_journal_new(r.size);
	if (j == NULL)
		return 0;
	for (int step = 0; step < MAX_STEPS && in.n > 0; step++) {
		uint8_t op = byte(&in);

		if (op % 16 == 15) {
			mock_journal_clear(j);
			/* clear keeps the sequence going */
			r.n = 0;
			r.dropped = 0;
		} else if (op % 2 == 0) {
			do_add(j, &r, &in);
		} else {
			do_query(j, &r, &in);
		}
	}
	mock_journal_free(j);
	return 0;
}

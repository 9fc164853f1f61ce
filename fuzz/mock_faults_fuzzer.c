/* Fuzz target: sbx-mock's fault-rule parser (mock_faults_add_json) on
 * arbitrary JSON as POST /_mock/faults and scenario files deliver it (one
 * rule object, {rules:[...]} or a whole scenario object).
 *
 * Properties, each abort()s when broken:
 * - a rejected body leaves the engine untouched (all-or-nothing), adds no id
 *   and carries a message that starts with "rule N:" (N a valid index),
 *   "rules must" or "out of memory";
 * - an accepted body adds one rule per item with consecutive ids;
 * - the listing (mock_faults_list_json, the only to-JSON there is) is
 *   accepted again by a fresh engine, lists the same, and the two engines
 *   answer a sequence of requests derived from the rules with the same
 *   actions and labels (same seed, so the same probability draws);
 * - a fired action is well formed (kind in range, status 100..599 where it
 *   has one, header names/values without CR/LF, terminated buffers) and a
 *   latency draw is a finite number in [0, 3600000];
 * - mock_path_match: "*" matches any path, a pattern without '{' or '*'
 *   matches itself;
 * - every id deletes once, then the engine is empty. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../mock-api/src/faults/faults.h"
#include "../mock-api/src/util/path_match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_REQS 64

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "mock_faults property broken: %s\n", what);
		abort();
	}
}

static bool terminated(const char *buf, size_t cap)
{
	return memchr(buf, '\0', cap) != NULL;
}

static void check_error(const sbx_err *err, size_t nitems)
{
	const char *m = err->msg;

	check(terminated(m, sizeof(err->msg)) && m[0] != '\0', "rejection without a message");
	if (strncmp(m, "rule ", 5) == 0) {
		char *end = NULL;
		unsigned long idx = strtoul(m + 5, &end, 10);

		check(end != m + 5 && *end == ':', "rule error does not say `rule N:`");
		check(idx < (nitems == 0 ? 1 : nitems), "rule error names an index past the list");
		return;
	}
	check(strncmp(m, "rules must", 10) == 0 || strcmp(m, "out of memory") == 0,
	      "error message names neither a rule nor the list");
}

static void check_action(const mock_fault_action *a, const char *label, size_t label_cap)
{
	check((int)a->kind >= 0 && a->kind < FK__COUNT, "action kind out of range");
	check(terminated(label, label_cap) && label[0] != '\0', "empty label");
	check(terminated(a->envelope, sizeof(a->envelope)) && terminated(a->code, sizeof(a->code)) &&
	      terminated(a->message, sizeof(a->message)) && terminated(a->host_id, sizeof(a->host_id)),
	      "unterminated action buffer");
	check(a->envelope[0] == '\0' || strcmp(a->envelope, "fail") == 0 ||
	      strcmp(a->envelope, "error") == 0, "envelope neither fail nor error");
	if (a->kind == FK_HTTP || (a->kind == FK_COMMIT_THEN_FAIL && a->then == THEN_STATUS))
		check(a->status >= 100 && a->status <= 599, "status outside 100..599");
	check(a->retry_after >= -1 && a->retry_after <= 86400, "retry_after out of range");
	check(a->nheaders <= MOCK_FAULT_MAX_HEADERS, "too many headers");
	for (size_t i = 0; i < a->nheaders; i++) {
		check(terminated(a->hname[i], sizeof(a->hname[i])) &&
		      terminated(a->hvalue[i], sizeof(a->hvalue[i])), "unterminated header");
		check(strpbrk(a->hname[i], "\r\n:") == NULL && strpbrk(a->hvalue[i], "\r\n") == NULL,
		      "header with CR, LF or a colon in its name");
	}
	if (a->kind == FK_HANG)
		check(a->max_ms >= 0 && a->max_ms <= 3600000, "hang max_ms out of range");
	if (a->kind == FK_LATENCY && a->dist == LAT_UNIFORM)
		check(a->min_ms <= a->max_lat_ms, "uniform latency with min above max");
}

/* Bit-for-bit equality (NaN equals NaN, 0.0 differs from -0.0): the same seed
 * and input must give the very same double. */
static bool same_bits(double x, double y)
{
	uint64_t bx, by;

	memcpy(&bx, &x, sizeof bx);
	memcpy(&by, &y, sizeof by);
	return bx == by;
}

static bool same_action(const mock_fault_action *a, const mock_fault_action *b)
{
	if (a->kind != b->kind || a->status != b->status || a->retry_after != b->retry_after ||
	    a->nheaders != b->nheaders || a->max_ms != b->max_ms || a->dist != b->dist ||
	    a->then != b->then || a->bytes_per_sec != b->bytes_per_sec ||
	    a->after_frames != b->after_frames || a->polls != b->polls ||
	    a->not_ready_ms != b->not_ready_ms)
		return false;
	if (!same_bits(a->ms, b->ms) ||
	    !same_bits(a->min_ms, b->min_ms) ||
	    !same_bits(a->max_lat_ms, b->max_lat_ms) ||
	    !same_bits(a->mu, b->mu) ||
	    !same_bits(a->sigma, b->sigma))
		return false;
	if (strcmp(a->envelope, b->envelope) != 0 || strcmp(a->code, b->code) != 0 ||
	    strcmp(a->message, b->message) != 0 || strcmp(a->host_id, b->host_id) != 0)
		return false;
	for (size_t i = 0; i < a->nheaders; i++) {
		if (strcmp(a->hname[i], b->hname[i]) != 0 || strcmp(a->hvalue[i], b->hvalue[i]) != 0)
			return false;
	}
	return true;
}

/* A concrete path a pattern should match: "{...}" -> "x", a trailing "*"
 * dropped. Caller frees. */
static char *path_for(const char *pattern)
{
	size_t n = strlen(pattern);
	char *out = malloc(n + 2);
	size_t o = 0;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (pattern[i] == '*' && i + 1 == n)
			break;
		if (pattern[i] == '{') {
			const char *close = strchr(pattern + i, '}');

			if (close == NULL)
				break;
			out[o++] = 'x';
			i = (size_t)(close - pattern);
			continue;
		}
		out[o++] = pattern[i];
	}
	out[o] = '\0';
	return out;
}

static const char *str_at(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

typedef struct req_set {
	mock_fault_req req[MAX_REQS];
	char *owned[MAX_REQS * 2];
	size_t n, nowned;
} req_set;

/* Stores p in s (freed by free_requests); NULL when p is NULL or s is full. */
static char *keep(req_set *s, char *p)
{
	if (p == NULL || s->nowned == MAX_REQS * 2) {
		free(p);
		return NULL;
	}
	s->owned[s->nowned++] = p;
	return p;
}

static void add_req(req_set *s, const mock_fault_req *q)
{
	if (s->n < MAX_REQS)
		s->req[s->n++] = *q;
}

/* Requests aimed at each listed rule, plus a few generic ones. */
static void build_requests(const cJSON *list, req_set *s)
{
	const cJSON *rules = cJSON_GetObjectItemCaseSensitive(list, "rules");
	const cJSON *r;
	mock_fault_req q = {"GET", "/v1/sandboxes", "", NULL, 1, false};

	add_req(s, &q);
	q.method = "POST";
	q.path = "/v1/sandboxes/sb-1/exec";
	q.is_exec = true;
	q.name = "demo";
	add_req(s, &q);
	cJSON_ArrayForEach(r, rules) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "match");
		const char *pat = str_at(m, "path", "/v1/sandboxes");
		const char *prefix = str_at(m, "name_prefix", NULL);
		const cJSON *rq = cJSON_GetObjectItemCaseSensitive(m, "request");
		char *path = keep(s, path_for(pat));
		char *name = NULL;

		if (path == NULL)
			continue;
		if (prefix != NULL) {
			size_t pl = strlen(prefix);

			name = malloc(pl + 2);
			if (name != NULL) {
				memcpy(name, prefix, pl);
				memcpy(name + pl, "x", 2);
			}
			name = keep(s, name);
		}
		q.method = str_at(m, "method", "GET");
		q.path = path;
		q.tenant = str_at(m, "tenant", "");
		q.name = name;
		q.request_no = cJSON_IsNumber(rq) && rq->valuedouble >= 1 && rq->valuedouble <= 1e15 ?
				       (uint64_t)rq->valuedouble : 1;
		q.is_exec = false;
		add_req(s, &q);
		q.is_exec = true;
		add_req(s, &q);
		/* the same again: exercises after/times counters */
		add_req(s, &q);
	}
}

static void free_requests(req_set *s)
{
	for (size_t i = 0; i < s->nowned; i++)
		free(s->owned[i]);
}

/* Upper-cases a method the way the parser does, so "get" rules match. */
static void upcase_methods(req_set *s, char bufs[][16])
{
	for (size_t i = 0; i < s->n; i++) {
		snprintf(bufs[i], 16, "%s", s->req[i].method);
		for (char *p = bufs[i]; *p != '\0'; p++) {
			if (*p >= 'a' && *p <= 'z')
				*p = (char)(*p - 'a' + 'A');
		}
		s->req[i].method = bufs[i];
	}
}

static void compare_engines(mock_faults *a, mock_faults *b, const cJSON *list)
{
	req_set s;
	char methods[MAX_REQS][16];

	memset(&s, 0, sizeof(s));
	build_requests(list, &s);
	upcase_methods(&s, methods);
	for (size_t i = 0; i < s.n; i++) {
		mock_fault_action aa, ab;
		char la[96], lb[96];
		bool ha = mock_faults_eval(a, &s.req[i], &aa, la, sizeof(la));
		bool hb = mock_faults_eval(b, &s.req[i], &ab, lb, sizeof(lb));

		check(ha == hb, "re-parsed rules fire differently");
		if (!ha)
			continue;
		check_action(&aa, la, sizeof(la));
		check(same_action(&aa, &ab) && strcmp(la, lb) == 0,
		      "re-parsed rules give another action or label");
		if (aa.kind == FK_LATENCY) {
			double da = mock_faults_latency_ms(a, &aa);
			double db = mock_faults_latency_ms(b, &ab);

			check(isfinite(da) && da >= 0 && da <= 3600000, "latency draw out of range");
			check(same_bits(da, db), "latency draws differ for the same seed");
		}
	}
	free_requests(&s);
}

static void check_ids(const cJSON *ids, int expect, unsigned first)
{
	const cJSON *id;
	unsigned want = first;

	check(cJSON_GetArraySize(ids) == expect, "id count differs from the rule count");
	cJSON_ArrayForEach(id, ids) {
		check(cJSON_IsNumber(id) && id->valuedouble == (double)want, "ids not consecutive");
		want++;
	}
}

/* Removes every "id", "matched" and "fired" member from each listed rule.
 * A listing can be posted back as it is (the listing replaces one posted
 * copy of each with the engine's own values), but a rule posted with one of
 * these keys twice keeps the other copy, so the two engines' listings are
 * compared without them. */
static void strip_counters(cJSON *listed)
{
	static const char *const keys[] = {"id", "matched", "fired"};
	cJSON *r;

	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(listed, "rules")) {
		for (size_t k = 0; k < 3; k++) {
			while (cJSON_GetObjectItemCaseSensitive(r, keys[k]) != NULL)
				cJSON_DeleteItemFromObjectCaseSensitive(r, keys[k]);
		}
	}
}

/* Compares the printed forms (cJSON_Compare is not reflexive for objects
 * with duplicate keys, which cJSON accepts). */
static bool same_text(const cJSON *a, const cJSON *b)
{
	char *ta = cJSON_PrintUnformatted(a), *tb = cJSON_PrintUnformatted(b);
	bool same = ta != NULL && tb != NULL && strcmp(ta, tb) == 0;

	free(ta);
	free(tb);
	return same;
}

static void fuzz_paths(const char *text)
{
	check(mock_path_match("*", text), "\"*\" does not match every path");
	if (strpbrk(text, "{*") == NULL)
		check(mock_path_match(text, text), "a literal pattern does not match itself");
	(void)mock_path_match(text, "/v1/sandboxes/sb-1/exec");
	(void)mock_path_match("/v1/sandboxes/{id}/*", text);
}

static void fuzz_rules(const cJSON *body)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(body, "rules");
	size_t nitems = cJSON_IsArray(list) ? (size_t)cJSON_GetArraySize(list) : 1;
	mock_faults *a = mock_faults_new(7), *b = mock_faults_new(7);
	cJSON *ids = cJSON_CreateArray(), *ids_b = cJSON_CreateArray();
	cJSON *listed = NULL, *listed_b = NULL;
	sbx_err err;

	if (a == NULL || b == NULL || ids == NULL || ids_b == NULL)
		goto out;
	memset(&err, 0, sizeof(err));
	if (mock_faults_add_json(a, body, ids, &err) != 0) {
		check_error(&err, nitems);
		check(mock_faults_count(a) == 0, "a rejected body added rules");
		check(cJSON_GetArraySize(ids) == 0, "a rejected body returned ids");
		goto out;
	}
	check(mock_faults_count(a) == nitems, "accepted count differs from the item count");
	check_ids(ids, (int)nitems, 1);
	/* all-or-nothing on a non-empty engine too: a bad rule after the good ones */
	{
		cJSON *bad = cJSON_Parse("{\"rules\":[{\"action\":{\"kind\":\"reset\"}},{\"action\":7}]}");
		cJSON *ids_bad = cJSON_CreateArray();

		check(bad != NULL && ids_bad != NULL, "out of memory");
		check(mock_faults_add_json(a, bad, ids_bad, &err) != 0, "a bad second rule was accepted");
		check(strncmp(err.msg, "rule 1:", 7) == 0, "the bad rule is not named rule 1");
		check(mock_faults_count(a) == nitems, "a rejected list left rules behind");
		cJSON_Delete(bad);
		cJSON_Delete(ids_bad);
	}
	listed = mock_faults_list_json(a);
	check(listed != NULL, "no listing");
	strip_counters(listed);
	check(mock_faults_add_json(b, listed, ids_b, &err) == 0, "the listing is rejected");
	check_ids(ids_b, (int)nitems, 1);
	listed_b = mock_faults_list_json(b);
	check(listed_b != NULL, "no listing");
	strip_counters(listed_b);
	check(same_text(listed, listed_b), "re-parsed listing differs");
	compare_engines(a, b, listed);
	for (unsigned id = 1; id <= nitems; id++)
		check(mock_faults_delete(a, id) == 0, "a listed id does not delete");
	check(mock_faults_delete(a, 1) != 0, "an id deleted twice");
	check(mock_faults_count(a) == 0, "rules left after deleting every id");
out:
	cJSON_Delete(listed);
	cJSON_Delete(listed_b);
	cJSON_Delete(ids);
	cJSON_Delete(ids_b);
	mock_faults_free(a);
	mock_faults_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size heap copy, so ASan sees any read past the end. */
	char *text = malloc(size + 1);
	cJSON *body;

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	fuzz_paths(text);
	body = cJSON_ParseWithLength(text, size);
	if (body != NULL)
		fuzz_rules(body);
	cJSON_Delete(body);
	free(text);
	return 0;
}

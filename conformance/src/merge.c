/* merge: `sbx-conform merge [--json F] [--junit F] [--html F] [--tap]
 * REPORT.json...` combines the JSON reports of the shards of one run
 * (`--shard 1/N` .. `--shard N/N`, e.g. a CI matrix) into the report the
 * whole run would have written: the same checks in catalogue order, their
 * verdicts and evidence unchanged, the summary recounted, one result, then
 * rendered by the report library like a run's. Exit codes as for a run.
 *
 * Refuses (exit 2, naming the files and the check) rather than guess:
 * reports that are not sbx-conform JSON (schema 1), reports of different
 * suites (tool, version, profiles, backend, seed, timeout scale, kind of
 * control plane), a check present in two inputs (overlapping shards, or a
 * file given twice), and an incomplete set when the reports are shards
 * (i/N with N > 1: every i from 1 to N exactly once). Never runs a check. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conform.h"
#include "report.h"

#define MG_MAX_BYTES (256L * 1024 * 1024)

struct mg_input {
	const char *path;
	cJSON *doc;       /* owned */
	unsigned index;   /* shard i/N; 1/1 when the report has no shard */
	unsigned count;
};

struct mg_opts {
	const char *json_file, *junit_file, *html_file;
	const char *summary_md_file, *annotations_file;
	bool tap;
};

static void merge_usage(FILE *f)
{
	fputs("usage: sbx-conform merge [options] REPORT.json...\n"
	      "Combines the JSON reports of the shards of one run (--shard 1/N .. N/N)\n"
	      "into the report of the whole run, and renders it like a run.\n\n"
	      "  --tap                   TAP 13 on stdout instead of the human report\n"
	      "  --junit FILE, --json FILE, --html FILE   also write these reports\n"
	      "  --summary-md FILE       also write a Markdown summary (GitHub job summary)\n"
	      "  --github-annotations FILE  also write one ::error line per failed check\n"
	      "  -h, --help              this help\n\n"
	      "Refuses reports of different suites, versions, profiles or backends,\n"
	      "a check present in two reports, and a set of shards with one missing.\n"
	      "exit: 0 all passed, 1 a check or its cleanup failed, 2 usage or input error\n", f);
}

/* ---- loading ---- */

static bool read_whole(const char *path, sbx_strbuf *out, sbx_err *err)
{
	char buf[65536];
	FILE *f = fopen(path, "rb");
	size_t n;
	bool ok = true;

	if (f == NULL) {
		sbx_err_set(err, "%s: cannot open: %s", path, strerror(errno));
		return false;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (out->len + n > (size_t)MG_MAX_BYTES) {
			sbx_err_set(err, "%s: larger than %ld MiB, not a report", path, MG_MAX_BYTES >> 20);
			ok = false;
			goto out_close;
		}
		sbx_strbuf_append(out, buf, n);
	}
	if (ferror(f)) {
		sbx_err_set(err, "%s: cannot read: %s", path, strerror(errno));
		ok = false;
	}
out_close:
	fclose(f);
	return ok;
}

/* Every check needs an id, a profile and a verdict to be merged at all. */
static bool checks_usable(const char *path, const cJSON *checks, sbx_err *err)
{
	const cJSON *k;
	int i = 0;

	cJSON_ArrayForEach(k, checks) {
		if (!cJSON_IsObject(k) || cf_str(k, "id") == NULL || cf_str(k, "profile") == NULL ||
		    cf_str(k, "verdict") == NULL) {
			sbx_err_set(err, "%s: checks[%d] has no string id, profile and verdict: "
				    "not an sbx-conform report", path, i);
			return false;
		}
		i++;
	}
	return true;
}

static bool shard_of(struct mg_input *in, sbx_err *err)
{
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(in->doc, "shard");
	double i = cf_num(sh, "index", 1), n = cf_num(sh, "count", 1);

	if (sh != NULL && !cJSON_IsObject(sh))
		i = 0;
	if (!(n >= 1 && n <= 1000 && i >= 1 && i <= n) || i != (double)(unsigned)i || n != (double)(unsigned)n) {
		sbx_err_set(err, "%s: \"shard\" is not {\"index\": I, \"count\": N} with 1 <= I <= N", in->path);
		return false;
	}
	in->index = (unsigned)i;
	in->count = (unsigned)n;
	return true;
}

static bool load_input(struct mg_input *in, sbx_err *err)
{
	sbx_strbuf text = SBX_STRBUF_INIT;
	const char *end = NULL;
	const cJSON *checks;
	bool ok = false;

	if (!read_whole(in->path, &text, err))
		goto out_free;
	in->doc = cJSON_ParseWithLengthOpts(sbx_strbuf_str(&text), text.len, &end, false);
	if (in->doc == NULL) {
		sbx_err_set(err, "%s: not valid JSON (near byte %ld)", in->path,
			    end != NULL ? (long)(end - sbx_strbuf_str(&text)) : 0L);
		goto out_free;
	}
	checks = cJSON_GetObjectItemCaseSensitive(in->doc, "checks");
	if (!cJSON_IsObject(in->doc) || cf_num(in->doc, "schema", 0) != 1 || cf_str(in->doc, "tool") == NULL ||
	    strcmp(cf_str(in->doc, "tool"), "sbx-conform") != 0 || !cJSON_IsArray(checks)) {
		sbx_err_set(err, "%s: not an sbx-conform JSON report (schema 1, tool \"sbx-conform\", "
			    "a \"checks\" array)", in->path);
		goto out_free;
	}
	ok = checks_usable(in->path, checks, err) && shard_of(in, err);
out_free:
	sbx_strbuf_free(&text);
	return ok;
}

/* ---- refusals ---- */

static const cJSON *field(const cJSON *doc, const char *obj, const char *key)
{
	if (obj != NULL)
		doc = cJSON_GetObjectItemCaseSensitive(doc, obj);
	return cJSON_GetObjectItemCaseSensitive(doc, key);
}

static char *shown(const cJSON *v)
{
	char *s = v != NULL ? cJSON_PrintUnformatted(v) : NULL;

	return s != NULL ? s : strdup("(absent)");
}

/* What makes two reports parts of one run: a row per field that must agree. */
static const struct {
	const char *obj, *key, *what;
} SAME[] = {
	{NULL, "schema", "report schema"},
	{NULL, "version", "sbx-conform version"},
	{NULL, "profiles", "profile list"},
	{"backend", "name", "backend name"},
	{"backend", "driver", "backend driver"},
	{"backend", "capabilities", "backend capabilities"},
	{"control_plane", "kind", "kind of control plane"},
	{NULL, "seed", "seed"},
	{NULL, "timeout_scale", "timeout scale"},
};

static bool same_suite(const struct mg_input *a, const struct mg_input *b, sbx_err *err)
{
	size_t i;

	for (i = 0; i < sizeof(SAME) / sizeof(SAME[0]); i++) {
		const cJSON *x = field(a->doc, SAME[i].obj, SAME[i].key);
		const cJSON *y = field(b->doc, SAME[i].obj, SAME[i].key);
		char *sx, *sy;

		if ((x == NULL && y == NULL) || (x != NULL && y != NULL && cJSON_Compare(x, y, true)))
			continue;
		sx = shown(x);
		sy = shown(y);
		sbx_err_set(err, "%s and %s are not from the same suite: the %s differs (%s vs %s)",
			    a->path, b->path, SAME[i].what, sx, sy);
		free(sx);
		free(sy);
		return false;
	}
	return true;
}

/* true when check k of input a also appears in input b (at or after from). */
static bool in_report(const cJSON *k, const cJSON *checks, int from)
{
	int i, n = cJSON_GetArraySize(checks);

	for (i = from; i < n; i++) {
		const cJSON *o = cJSON_GetArrayItem(checks, i);

		if (strcmp(cf_str(o, "id"), cf_str(k, "id")) == 0 &&
		    strcmp(cf_str(o, "profile"), cf_str(k, "profile")) == 0)
			return true;
	}
	return false;
}

/* A check in two inputs (or twice in one) would be counted twice. */
static bool no_overlap(const struct mg_input *in, size_t n, sbx_err *err)
{
	size_t a, b;

	for (a = 0; a < n; a++) {
		const cJSON *ca = cJSON_GetObjectItemCaseSensitive(in[a].doc, "checks");
		const cJSON *k;
		int pos = 0;

		cJSON_ArrayForEach(k, ca) {
			pos++;
			for (b = a; b < n; b++) {
				const cJSON *cb = cJSON_GetObjectItemCaseSensitive(in[b].doc, "checks");

				if (!in_report(k, cb, b == a ? pos : 0))
					continue;
				if (b == a) {
					sbx_err_set(err, "check %s (%s) appears twice in %s", cf_str(k, "id"),
						    cf_str(k, "profile"), in[a].path);
					return false;
				}
				sbx_err_set(err, "check %s (%s) is in both %s and %s: the reports overlap "
					    "(merge takes the disjoint shards of one run)", cf_str(k, "id"),
					    cf_str(k, "profile"), in[a].path, in[b].path);
				return false;
			}
		}
	}
	return true;
}

/* Shards of one run: the same N everywhere and each i from 1 to N once. */
static bool complete_set(const struct mg_input *in, size_t n, sbx_err *err)
{
	unsigned want = in[0].count, i;
	size_t a, b;
	bool found;

	for (a = 0; a < n; a++) {
		if (in[a].count != want) {
			sbx_err_set(err, "%s is shard %u/%u but %s is shard %u/%u: not the shards of one run",
				    in[0].path, in[0].index, in[0].count, in[a].path, in[a].index, in[a].count);
			return false;
		}
		for (b = a + 1; b < n && want > 1; b++)
			if (in[a].index == in[b].index) {
				sbx_err_set(err, "%s and %s are both shard %u/%u", in[a].path, in[b].path,
					    in[a].index, want);
				return false;
			}
	}
	for (i = 1; want > 1 && i <= want; i++) {
		found = false;
		for (a = 0; a < n; a++)
			found = found || in[a].index == i;
		if (!found) {
			sbx_err_set(err, "incomplete set: shard %u/%u is missing (%zu report%s given)", i, want,
				    n, n == 1 ? "" : "s");
			return false;
		}
	}
	return true;
}

/* ---- combining ---- */

struct mg_item {
	cJSON *check;     /* detached from its input */
	long rank;        /* catalogue order; unknown checks after all known ones */
	long seq;         /* input order, to keep the sort stable */
};

static long catalogue_rank(const cJSON *k)
{
	const struct cf_profile *p;
	const struct cf_check *c;
	long pi, ci;

	for (p = cf_profiles, pi = 0; p->name != NULL; p++, pi++) {
		if (strcmp(p->name, cf_str(k, "profile")) != 0)
			continue;
		for (c = p->checks, ci = 0; c->id != NULL; c++, ci++)
			if (strcmp(c->id, cf_str(k, "id")) == 0)
				return pi * 10000 + ci;
	}
	return 100000000L;
}

static int item_cmp(const void *x, const void *y)
{
	const struct mg_item *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Moves every input's checks into one array in catalogue order. */
static cJSON *all_checks(struct mg_input *in, size_t n)
{
	struct mg_item *items;
	size_t count = 0, total = 0, a, i;
	cJSON *out = cJSON_CreateArray();
	cJSON *checks, *k;

	for (a = 0; a < n; a++)
		total += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(in[a].doc, "checks"));
	items = calloc(total + 1, sizeof(*items));
	if (items == NULL || out == NULL)
		goto out_free;
	for (a = 0; a < n; a++) {
		checks = cJSON_GetObjectItemCaseSensitive(in[a].doc, "checks");
		while (count < total && (k = cJSON_DetachItemFromArray(checks, 0)) != NULL) {
			items[count] = (struct mg_item){k, catalogue_rank(k), (long)count};
			count++;
		}
	}
	qsort(items, count, sizeof(*items), item_cmp);
	for (i = 0; i < count; i++)
		cJSON_AddItemToArray(out, items[i].check);
out_free:
	free(items);
	return out;
}

static bool parse_started(const char *s, time_t *t)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	if (s == NULL)
		return false;
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (end == NULL || *end != '\0')
		return false;
	*t = timegm(&tm);
	return true;
}

/* The whole run: from the earliest start to the latest end of a shard (the
 * longest shard when a start time is missing). */
static void set_times(cJSON *merged, const struct mg_input *in, size_t n)
{
	double first = 0, last = 0, longest = 0, d;
	const char *earliest = NULL;
	bool times = true;
	time_t t;
	size_t a;

	for (a = 0; a < n; a++) {
		d = cf_num(in[a].doc, "duration_ms", 0);
		longest = d > longest ? d : longest;
		if (!parse_started(cf_str(in[a].doc, "started_at"), &t)) {
			times = false;
			continue;
		}
		if (earliest == NULL || (double)t * 1000 < first) {
			earliest = cf_str(in[a].doc, "started_at");
			first = (double)t * 1000;
		}
		last = (double)t * 1000 + d > last ? (double)t * 1000 + d : last;
	}
	if (earliest != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(merged, "started_at", cJSON_CreateString(earliest));
	cJSON_DeleteItemFromObjectCaseSensitive(merged, "duration_ms");
	cJSON_AddNumberToObject(merged, "duration_ms", (double)(long)(times ? last - first : longest));
}

static int input_cmp(const void *x, const void *y)
{
	const struct mg_input *a = x, *b = y;

	return a->index < b->index ? -1 : a->index > b->index;
}

/* The merged report in the field order of a run's: header from the first
 * shard, times spanning all, shard 1/1, summary recounted, checks. */
static cJSON *combine(struct mg_input *in, size_t n)
{
	cJSON *merged = cJSON_Duplicate(in[0].doc, true);
	cJSON *checks = all_checks(in, n);
	cJSON *sh;

	set_times(merged, in, n);
	cJSON_DeleteItemFromObjectCaseSensitive(merged, "shard");
	cJSON_DeleteItemFromObjectCaseSensitive(merged, "summary");
	cJSON_DeleteItemFromObjectCaseSensitive(merged, "checks");
	sh = cJSON_AddObjectToObject(merged, "shard");
	cJSON_AddNumberToObject(sh, "index", 1);
	cJSON_AddNumberToObject(sh, "count", 1);
	cJSON_AddItemToObject(merged, "summary", cf_report_summary(checks));
	cJSON_AddItemToObject(merged, "checks", checks);
	return merged;
}

static int write_merged(const struct mg_opts *o, const cJSON *report)
{
	sbx_err err = {{0}};
	int rc = 0;

	if (!sbx_report_save(report, o->tap ? SBX_REPORT_TAP : SBX_REPORT_HUMAN, "-", &err))
		rc = (fprintf(stderr, "sbx-conform merge: %s\n", err.msg), -1);
	if (o->json_file != NULL && !sbx_report_save(report, SBX_REPORT_JSON, o->json_file, &err))
		rc = (fprintf(stderr, "sbx-conform merge: --json: %s\n", err.msg), -1);
	if (o->junit_file != NULL && !sbx_report_save(report, SBX_REPORT_JUNIT, o->junit_file, &err))
		rc = (fprintf(stderr, "sbx-conform merge: --junit: %s\n", err.msg), -1);
	if (o->html_file != NULL && !sbx_report_save(report, SBX_REPORT_HTML, o->html_file, &err))
		rc = (fprintf(stderr, "sbx-conform merge: --html: %s\n", err.msg), -1);
	if (o->summary_md_file != NULL &&
	    !sbx_report_save(report, SBX_REPORT_MARKDOWN, o->summary_md_file, &err))
		rc = (fprintf(stderr, "sbx-conform merge: --summary-md: %s\n", err.msg), -1);
	if (o->annotations_file != NULL &&
	    !sbx_report_save(report, SBX_REPORT_GITHUB, o->annotations_file, &err))
		rc = (fprintf(stderr, "sbx-conform merge: --github-annotations: %s\n", err.msg), -1);
	return rc;
}

/* ---- the command ---- */

enum { M_TAP = 256, M_JUNIT, M_JSON, M_HTML, M_SUMMARY_MD, M_ANNOTATIONS };

static const struct option MERGE_OPTS[] = {
	{"tap", no_argument, NULL, M_TAP}, {"junit", required_argument, NULL, M_JUNIT},
	{"json", required_argument, NULL, M_JSON}, {"html", required_argument, NULL, M_HTML},
	{"summary-md", required_argument, NULL, M_SUMMARY_MD},
	{"github-annotations", required_argument, NULL, M_ANNOTATIONS},
	{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
};

/* Returns -1 to continue, else the exit code. */
static int merge_args(struct mg_opts *o, int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, "h", MERGE_OPTS, NULL)) != -1) {
		if (c == 'h') {
			merge_usage(stdout);
			return 0;
		} else if (c == M_TAP) {
			o->tap = true;
		} else if (c == M_JUNIT) {
			o->junit_file = optarg;
		} else if (c == M_JSON) {
			o->json_file = optarg;
		} else if (c == M_HTML) {
			o->html_file = optarg;
		} else if (c == M_SUMMARY_MD) {
			o->summary_md_file = optarg;
		} else if (c == M_ANNOTATIONS) {
			o->annotations_file = optarg;
		} else {
			merge_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fputs("sbx-conform merge: no report given\n", stderr);
		merge_usage(stderr);
		return 2;
	}
	return -1;
}

/* Loads and vets the inputs; false with err set when they cannot be merged. */
static bool vet_inputs(struct mg_input *in, size_t n, sbx_err *err)
{
	size_t a, b;

	for (a = 0; a < n; a++)
		if (!load_input(&in[a], err))
			return false;
	for (a = 1; a < n; a++)
		if (!same_suite(&in[0], &in[a], err))
			return false;
	for (a = 0; a < n; a++)
		for (b = a + 1; b < n; b++)
			if (strcmp(in[a].path, in[b].path) == 0) {
				sbx_err_set(err, "%s is given twice", in[a].path);
				return false;
			}
	if (!no_overlap(in, n, err) || !complete_set(in, n, err))
		return false;
	qsort(in, n, sizeof(*in), input_cmp);
	return true;
}

int cf_merge_main(int argc, char **argv)
{
	struct mg_opts o = {.tap = false};
	struct mg_input *in = NULL;
	sbx_err err = {{0}};
	cJSON *merged = NULL;
	size_t n = 0, a;
	int rc;

	rc = merge_args(&o, argc, argv);
	if (rc >= 0)
		return rc;
	rc = 2;
	n = (size_t)(argc - optind);
	in = calloc(n, sizeof(*in));
	if (in == NULL)
		goto out;
	for (a = 0; a < n; a++)
		in[a].path = argv[optind + (int)a];
	if (!vet_inputs(in, n, &err)) {
		fprintf(stderr, "sbx-conform merge: %s\n", err.msg);
		goto out_free;
	}
	merged = combine(in, n);
	if (write_merged(&o, merged) == 0)
		rc = cf_report_exit_code(merged);
	cJSON_Delete(merged);
out_free:
	for (a = 0; a < n; a++)
		cJSON_Delete(in[a].doc);
	free(in);
out:
	return rc;
}

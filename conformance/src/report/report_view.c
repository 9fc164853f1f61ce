/* report_view: the read side every writer shares: tolerant field access, a
 * flat view of each check, grouping by profile and area, and the totals
 * (sbx_report_count, sbx_report_totals_ok).
 *
 * Borrows from the report tree and never alters it; never renders, so it
 * never calls a writer or report.c. */
#include "report.h"
#include "report_priv.h"

#include <stdlib.h>
#include <string.h>

const char *rp_str_or_null(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!cJSON_IsString(it) || it->valuestring == NULL)
		return NULL;
	return it->valuestring;
}

const char *rp_str(const cJSON *obj, const char *key)
{
	const char *s = rp_str_or_null(obj, key);
	return s != NULL ? s : "";
}

double rp_num(const cJSON *obj, const char *key, double dflt)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!cJSON_IsNumber(it))
		return dflt;
	return it->valuedouble;
}

static const cJSON *rp_array(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsArray(it) ? it : NULL;
}

const char *rp_verdict_name(enum rp_verdict v)
{
	switch (v) {
	case RP_PASS:
		return "pass";
	case RP_FAIL:
		return "fail";
	case RP_SKIP:
		return "skip";
	case RP_ERROR:
		return "error";
	}
	return "error";
}

static enum rp_verdict parse_verdict(const char *s)
{
	if (strcmp(s, "pass") == 0)
		return RP_PASS;
	if (strcmp(s, "fail") == 0)
		return RP_FAIL;
	if (strcmp(s, "skip") == 0)
		return RP_SKIP;
	return RP_ERROR;
}

static void check_from_json(struct rp_check *c, const cJSON *j)
{
	const cJSON *cleanup = cJSON_GetObjectItemCaseSensitive(j, "cleanup");
	const cJSON *evidence = cJSON_GetObjectItemCaseSensitive(j, "evidence");

	memset(c, 0, sizeof(*c));
	c->json = j;
	c->id = rp_str(j, "id");
	c->profile = rp_str(j, "profile");
	c->area = rp_str(j, "area");
	c->title = rp_str(j, "title");
	c->clause = rp_str(j, "clause");
	c->clause_text = rp_str(j, "clause_text");
	c->rerun = rp_str(j, "rerun");
	c->verdict_text = rp_str(j, "verdict");
	c->verdict = parse_verdict(c->verdict_text);
	c->reason = rp_str(j, "reason");
	c->advisory = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "advisory"));
	c->cleanup_verdict = rp_str(cleanup, "verdict");
	c->cleanup_reason = rp_str(cleanup, "reason");
	c->leftover = rp_array(cleanup, "leftover");
	c->duration_ms = rp_num(j, "duration_ms", 0);
	if (c->duration_ms < 0)
		c->duration_ms = 0;
	c->journal = rp_array(evidence, "journal");
	c->driver_stderr = rp_str(evidence, "driver_stderr");
	c->details = rp_array(evidence, "details");
	c->cleanup_failed = strcmp(c->cleanup_verdict, "fail") == 0;
	c->not_ok = c->verdict == RP_FAIL || c->verdict == RP_ERROR || c->cleanup_failed;
}

static void tally(struct sbx_report_totals *t, const struct rp_check *c)
{
	t->total++;
	t->duration_ms += c->duration_ms;
	if (c->advisory && c->not_ok) {
		t->advisory++;
		return;
	}
	switch (c->verdict) {
	case RP_PASS:
		t->pass++;
		break;
	case RP_FAIL:
		t->fail++;
		break;
	case RP_SKIP:
		t->skip++;
		break;
	case RP_ERROR:
		t->error++;
		break;
	}
	if (c->cleanup_failed)
		t->cleanup_fail++;
}

/* Appends name to names[] unless present; the caller sized names for every
 * distinct name it can see. */
static void add_unique(const char **names, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(names[i], name) == 0)
			return;
	names[(*n)++] = name;
}

/* Builds the (profile, area) groups and the grouped order. */
static bool build_groups(struct rp_view *v)
{
	const cJSON *listed = rp_array(v->report, "profiles");
	size_t cap = v->n + (size_t)(listed != NULL ? cJSON_GetArraySize(listed) : 0) + 1;
	const char **profiles = calloc(cap, sizeof(*profiles));
	const char **areas = calloc(v->n + 1, sizeof(*areas));
	size_t np = 0;
	bool ok = false;

	v->order = calloc(v->n + 1, sizeof(*v->order));
	v->groups = calloc(v->n + 1, sizeof(*v->groups));
	if (profiles == NULL || areas == NULL || v->order == NULL || v->groups == NULL)
		goto out_free_names;

	const cJSON *p;
	cJSON_ArrayForEach(p, listed)
		if (cJSON_IsString(p) && p->valuestring != NULL)
			add_unique(profiles, &np, p->valuestring);
	for (size_t i = 0; i < v->n; i++)
		add_unique(profiles, &np, v->checks[i].profile);

	size_t placed = 0;
	for (size_t pi = 0; pi < np; pi++) {
		size_t na = 0;
		for (size_t i = 0; i < v->n; i++)
			if (strcmp(v->checks[i].profile, profiles[pi]) == 0)
				add_unique(areas, &na, v->checks[i].area);
		for (size_t ai = 0; ai < na; ai++) {
			struct rp_group *g = &v->groups[v->ngroups++];
			g->profile = profiles[pi];
			g->area = areas[ai];
			g->first = placed;
			for (size_t i = 0; i < v->n; i++) {
				const struct rp_check *c = &v->checks[i];
				if (strcmp(c->profile, g->profile) == 0 && strcmp(c->area, g->area) == 0)
					v->order[placed++] = i;
			}
			g->count = placed - g->first;
		}
	}
	ok = true;
out_free_names:
	free(areas);
	free(profiles);
	return ok;
}

bool rp_view_init(struct rp_view *v, const cJSON *report, sbx_err *err)
{
	memset(v, 0, sizeof(*v));
	v->report = report;
	if (!cJSON_IsObject(report)) {
		sbx_err_set(err, "report: the report is not a JSON object");
		return false;
	}
	const cJSON *checks = cJSON_GetObjectItemCaseSensitive(report, "checks");
	if (!cJSON_IsArray(checks)) {
		sbx_err_set(err, "report: \"checks\" is missing or not an array");
		return false;
	}
	int n = cJSON_GetArraySize(checks);
	v->checks = calloc((size_t)n + 1, sizeof(*v->checks));
	if (v->checks == NULL)
		goto out_oom;
	const cJSON *j;
	cJSON_ArrayForEach(j, checks) {
		check_from_json(&v->checks[v->n], j);
		tally(&v->totals, &v->checks[v->n]);
		v->n++;
	}
	if (!build_groups(v))
		goto out_oom;
	return true;
out_oom:
	rp_view_free(v);
	sbx_err_set(err, "report: out of memory");
	return false;
}

void rp_view_free(struct rp_view *v)
{
	free(v->checks);
	free(v->order);
	free(v->groups);
	memset(v, 0, sizeof(*v));
}

bool sbx_report_count(const cJSON *report, struct sbx_report_totals *t, sbx_err *err)
{
	struct rp_view v;
	if (!rp_view_init(&v, report, err))
		return false;
	*t = v.totals;
	rp_view_free(&v);
	return true;
}

bool sbx_report_totals_ok(const struct sbx_report_totals *t)
{
	return t->fail == 0 && t->error == 0 && t->cleanup_fail == 0;
}

bool sbx_report_nothing_checked(const struct sbx_report_totals *t)
{
	return t->skip == t->total;
}

const char *sbx_report_result_word(const struct sbx_report_totals *t)
{
	if (!sbx_report_totals_ok(t))
		return "FAIL";
	return sbx_report_nothing_checked(t) ? "NOTHING CHECKED" : "PASS";
}

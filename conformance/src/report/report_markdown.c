/* report_markdown: the run as GitHub Flavored Markdown for a CI job summary
 * ($GITHUB_STEP_SUMMARY): a heading with the result, one table of counts,
 * one line naming the backend, and a table of the checks that failed (then
 * one of advisory warnings), each with its reason and the command that
 * re-runs it alone.
 *
 * Tables only, no HTML beyond <br> and <code>; every string from the report
 * goes through rp_put_md, so a reason cannot break a table row, open a link
 * or inject markup. Reasons are cut at MD_REASON_MAX characters: a summary
 * is for finding the failure, the JSON/HTML reports carry the rest. */
#include "report.h"
#include "report_priv.h"

#include <string.h>

#define MD_REASON_MAX 400

static void counts_table(sbx_strbuf *out, const cJSON *r, const struct sbx_report_totals *t)
{
	sbx_strbuf_puts(out, "| Result | Checks | Pass | Fail | Error | Skip | Advisory warnings "
			     "| Cleanup failed | Time |\n"
			     "|:--|--:|--:|--:|--:|--:|--:|--:|--:|\n");
	sbx_strbuf_printf(out, "| **%s** | %d | %d | %d | %d | %d | %d | %d | ",
			  sbx_report_result_word(t), t->total, t->pass, t->fail, t->error, t->skip,
			  t->advisory, t->cleanup_fail);
	rp_put_duration(out, rp_num(r, "duration_ms", t->duration_ms));
	sbx_strbuf_puts(out, " |\n");
}

static void run_line(sbx_strbuf *out, const cJSON *r)
{
	const cJSON *backend = cJSON_GetObjectItemCaseSensitive(r, "backend");
	const cJSON *cp = cJSON_GetObjectItemCaseSensitive(r, "control_plane");
	const cJSON *shard = cJSON_GetObjectItemCaseSensitive(r, "shard");
	const cJSON *p;
	bool first = true;

	sbx_strbuf_puts(out, "\nBackend ");
	rp_put_md(out, rp_str(backend, "name")[0] != '\0' ? rp_str(backend, "name") : "(unnamed)", 80);
	if (rp_str(backend, "driver")[0] != '\0') {
		sbx_strbuf_puts(out, " (");
		rp_put_md(out, rp_str(backend, "driver"), 80);
		sbx_strbuf_puts(out, ")");
	}
	sbx_strbuf_puts(out, ", control plane ");
	rp_put_md(out, rp_str(cp, "kind")[0] != '\0' ? rp_str(cp, "kind") : "(unknown)", 40);
	sbx_strbuf_puts(out, ", profiles ");
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(r, "profiles")) {
		if (!cJSON_IsString(p))
			continue;
		sbx_strbuf_puts(out, first ? "" : ", ");
		rp_put_md(out, p->valuestring, 40);
		first = false;
	}
	if (first)
		sbx_strbuf_puts(out, "(none)");
	sbx_strbuf_printf(out, ", seed %.0f, shard %.0f/%.0f; sbx-conform ", rp_num(r, "seed", 0),
			  rp_num(shard, "index", 1), rp_num(shard, "count", 1));
	rp_put_md(out, rp_str(r, "version"), 40);
	sbx_strbuf_puts(out, ".\n");
}

/* The verdict cell: the check's verdict, plus the cleanup's when it failed. */
static void verdict_cell(sbx_strbuf *out, const struct rp_check *c)
{
	if (c->verdict != RP_PASS)
		sbx_strbuf_puts(out, rp_verdict_name(c->verdict));
	if (c->cleanup_failed)
		sbx_strbuf_puts(out, c->verdict != RP_PASS ? ", cleanup fail" : "cleanup fail");
}

static void reason_cell(sbx_strbuf *out, const struct rp_check *c)
{
	if (c->verdict != RP_PASS)
		rp_put_md(out, c->reason[0] != '\0' ? c->reason : "(no reason given)", MD_REASON_MAX);
	if (c->cleanup_failed) {
		sbx_strbuf_puts(out, c->verdict != RP_PASS ? "<br>cleanup: " : "cleanup: ");
		rp_put_md(out, c->cleanup_reason[0] != '\0' ? c->cleanup_reason : "(no reason given)",
			  MD_REASON_MAX);
	}
}

/* The checks that are not ok, advisory ones or the others, as one table
 * under a heading; nothing when there are none. */
static void checks_table(sbx_strbuf *out, const struct rp_view *v, bool advisory, const char *heading)
{
	size_t shown = 0;

	for (size_t i = 0; i < v->n; i++)
		if (v->checks[i].not_ok && v->checks[i].advisory == advisory)
			shown++;
	if (shown == 0)
		return;
	sbx_strbuf_printf(out, "\n#### %s: %zu\n\n", heading, shown);
	sbx_strbuf_puts(out, "| Check | Profile | Title | Verdict | Reason | Re-run |\n"
			     "|:--|:--|:--|:--|:--|:--|\n");
	for (size_t k = 0; k < v->n; k++) {
		const struct rp_check *c = &v->checks[v->order[k]];

		if (!c->not_ok || c->advisory != advisory)
			continue;
		sbx_strbuf_puts(out, "| **");
		rp_put_md(out, c->id, 80);
		sbx_strbuf_puts(out, "** | ");
		rp_put_md(out, c->profile, 80);
		sbx_strbuf_puts(out, " | ");
		rp_put_md(out, c->title, 200);
		sbx_strbuf_puts(out, " | ");
		verdict_cell(out, c);
		sbx_strbuf_puts(out, " | ");
		reason_cell(out, c);
		sbx_strbuf_puts(out, " | ");
		if (c->rerun[0] != '\0') {
			sbx_strbuf_puts(out, "<code>");
			rp_put_md(out, c->rerun, 0);
			sbx_strbuf_puts(out, "</code>");
		}
		sbx_strbuf_puts(out, " |\n");
	}
}

bool sbx_report_markdown(const cJSON *report, sbx_strbuf *out, sbx_err *err)
{
	struct rp_view v;

	if (!rp_view_init(&v, report, err))
		return false;
	sbx_strbuf_printf(out, "### sbx-conform: %s\n\n", sbx_report_result_word(&v.totals));
	counts_table(out, report, &v.totals);
	run_line(out, report);
	if (v.n == 0)
		sbx_strbuf_puts(out, "\nNo checks were selected.\n");
	else if (sbx_report_nothing_checked(&v.totals))
		sbx_strbuf_puts(out, "\nEvery selected check was skipped: nothing was checked.\n");
	checks_table(out, &v, false, "Failed checks");
	checks_table(out, &v, true, "Advisory warnings (they do not fail the run)");
	rp_view_free(&v);
	if (out->oom) {
		sbx_err_set(err, "report: out of memory");
		return false;
	}
	return true;
}

/* report_github: GitHub Actions workflow commands for the checks that are not
 * ok, one line each, so a failed run shows clickable annotations:
 *   ::error title=FB-001::<reason>%0Acleanup: <reason>%0Are-run: <command>
 * (::warning for an advisory check that is not ok; it does not fail the
 * run). Nothing for passing and skipped checks, nothing at all for a run
 * that passed.
 *
 * Every value goes through rp_put_gha (GitHub's escaping: % CR LF in the
 * message, also : and , in the title), so a reason from a backend stays one
 * line and cannot issue a workflow command of its own. */
#include "report.h"
#include "report_priv.h"

static void annotation(sbx_strbuf *out, const struct rp_check *c)
{
	sbx_strbuf_puts(out, c->advisory ? "::warning title=" : "::error title=");
	rp_put_gha(out, c->id, true);
	if (c->advisory)
		rp_put_gha(out, " (advisory)", true);
	sbx_strbuf_puts(out, "::");
	if (c->verdict != RP_PASS)
		rp_put_gha(out, c->reason[0] != '\0' ? c->reason : "(no reason given)", false);
	if (c->cleanup_failed) {
		rp_put_gha(out, c->verdict != RP_PASS ? "\ncleanup: " : "cleanup: ", false);
		rp_put_gha(out, c->cleanup_reason[0] != '\0' ? c->cleanup_reason : "(no reason given)",
			   false);
	}
	if (c->rerun[0] != '\0') {
		rp_put_gha(out, "\nre-run: ", false);
		rp_put_gha(out, c->rerun, false);
	}
	sbx_strbuf_puts(out, "\n");
}

bool sbx_report_github(const cJSON *report, sbx_strbuf *out, sbx_err *err)
{
	struct rp_view v;

	if (!rp_view_init(&v, report, err))
		return false;
	for (size_t k = 0; k < v.n; k++) {
		const struct rp_check *c = &v.checks[v.order[k]];

		if (c->not_ok)
			annotation(out, c);
	}
	rp_view_free(&v);
	if (out->oom) {
		sbx_err_set(err, "report: out of memory");
		return false;
	}
	return true;
}

/* report_html: a single-file HTML report (inline CSS and a little inline JS,
 * no external assets): run metadata, totals, verdict filters and a table of
 * checks (id, profile, title, verdict, reason, cleanup, time); each check
 * that is not ok carries its evidence (journal excerpt, driver stderr,
 * details) in a <details> element.
 *
 * Report text only ever appears HTML-escaped in element content or quoted
 * attributes; the script is a constant and reads nothing but data-*
 * attributes whose values this file chooses, so a report cannot inject
 * markup or script. Filtering: the URL hash "#filter=fail" (pass, fail,
 * skip, error, cleanup, advisory, problems, all) hides the other rows and
 * opens the evidence of the rows shown when the filter selects problems.
 * Never loads anything from outside the page. */
#include "report.h"
#include "report_priv.h"

#include <string.h>

static const char STYLE[] =
	"<style>\n"
	":root{--pass:#1a7f37;--fail:#cf222e;--skip:#9a6700;--error:#8250df;--muted:#57606a;"
	"--line:#d0d7de;--bg:#f6f8fa}\n"
	"body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5rem;color:#1f2328}\n"
	"h1{font-size:1.4rem;margin:0 0 .5rem}\n"
	".result{display:inline-block;padding:.1rem .6rem;border-radius:4px;color:#fff;font-weight:700}\n"
	".result.pass{background:var(--pass)}.result.fail{background:var(--fail)}.result.none{background:var(--skip)}\n"
	"dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;margin:.8rem 0}\n"
	"dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;word-break:break-all}\n"
	"nav.filters{margin:.8rem 0}nav.filters a{display:inline-block;margin:0 .3rem .3rem 0;"
	"padding:.15rem .6rem;border:1px solid var(--line);border-radius:999px;text-decoration:none;color:inherit}\n"
	"nav.filters a[aria-current=true]{background:#1f2328;color:#fff}\n"
	"table{border-collapse:collapse;width:100%}\n"
	"th,td{border-bottom:1px solid var(--line);padding:.3rem .5rem;text-align:left;vertical-align:top}\n"
	"th{background:var(--bg);position:sticky;top:0}\n"
	"td.id,td.time{white-space:nowrap;font-family:ui-monospace,monospace}td.time{text-align:right}\n"
	".v{font-weight:700;text-transform:uppercase;font-size:.8rem}\n"
	".v.pass{color:var(--pass)}.v.fail{color:var(--fail)}.v.skip{color:var(--skip)}"
	".v.error{color:var(--error)}.v.advisory{color:var(--skip)}\n"
	"tr.notok{background:#fff5f5}tr.advisory{background:#fffbea}\n"
	"details{margin-top:.3rem}summary{cursor:pointer;color:var(--muted)}\n"
	"table.journal{width:auto;margin:.3rem 0;font-family:ui-monospace,monospace;font-size:.85rem}\n"
	"table.journal td,table.journal th{padding:.1rem .5rem}\n"
	"pre{background:var(--bg);padding:.5rem;overflow:auto;max-height:24rem;white-space:pre-wrap;"
	"word-break:break-all;font-size:.85rem}\n"
	".muted{color:var(--muted)}.why{white-space:pre-wrap}\n"
	"blockquote.clause{margin:.3rem 0;padding:.2rem .8rem;border-left:3px solid var(--line);color:var(--muted)}\n"
	"</style>\n";

static const char SCRIPT[] =
	"<script>\n"
	"(function () {\n"
	"  'use strict';\n"
	"  var problems = {fail: 1, error: 1, cleanup: 1, advisory: 1, problems: 1};\n"
	"  function matches(row, f) {\n"
	"    if (f === 'all') return true;\n"
	"    if (f === 'cleanup') return row.dataset.cleanup === 'fail';\n"
	"    if (f === 'advisory') return row.dataset.advisory === 'true';\n"
	"    if (f === 'problems') return row.dataset.notok === 'true';\n"
	"    if (row.dataset.advisory === 'true' && (f === 'fail' || f === 'error')) return false;\n"
	"    return row.dataset.verdict === f;\n"
	"  }\n"
	"  function apply() {\n"
	"    var m = /^#filter=([a-z]+)$/.exec(window.location.hash);\n"
	"    var f = m ? m[1] : 'all';\n"
	"    var rows = document.querySelectorAll('#checks tbody tr.check');\n"
	"    var shown = 0;\n"
	"    for (var i = 0; i < rows.length; i++) {\n"
	"      var ok = matches(rows[i], f);\n"
	"      rows[i].hidden = !ok;\n"
	"      if (ok) shown++;\n"
	"      var d = rows[i].querySelector('details.evidence');\n"
	"      if (d && ok && problems[f]) d.open = true;\n"
	"    }\n"
	"    var links = document.querySelectorAll('nav.filters a');\n"
	"    for (var j = 0; j < links.length; j++)\n"
	"      links[j].setAttribute('aria-current', links[j].dataset.filter === f ? 'true' : 'false');\n"
	"    document.getElementById('shown').textContent = shown + ' of ' + rows.length + ' checks shown';\n"
	"    document.body.dataset.filter = f;\n"
	"  }\n"
	"  window.addEventListener('hashchange', apply);\n"
	"  apply();\n"
	"})();\n"
	"</script>\n";

static void text(sbx_strbuf *sb, const char *s)
{
	rp_put_markup(sb, s, false);
}

static void meta(sbx_strbuf *sb, const char *label, const char *value)
{
	sbx_strbuf_printf(sb, "<dt>%s</dt><dd>", label);
	text(sb, value);
	sbx_strbuf_puts(sb, "</dd>\n");
}

static void header(sbx_strbuf *sb, const cJSON *r, const struct sbx_report_totals *t)
{
	const cJSON *backend = cJSON_GetObjectItemCaseSensitive(r, "backend");
	const cJSON *cp = cJSON_GetObjectItemCaseSensitive(r, "control_plane");
	const cJSON *shard = cJSON_GetObjectItemCaseSensitive(r, "shard");
	const cJSON *p;
	bool ok = sbx_report_totals_ok(t);
	bool first = true;

	sbx_strbuf_printf(sb, "<header>\n<h1>sbx-conform report <span class=\"result %s\" id=\"result\">%s</span></h1>\n",
			  !ok ? "fail" : sbx_report_nothing_checked(t) ? "none" : "pass", sbx_report_result_word(t));
	sbx_strbuf_puts(sb, "<dl class=\"meta\">\n");
	meta(sb, "Backend", rp_str(backend, "name"));
	meta(sb, "Driver", rp_str(backend, "driver"));
	meta(sb, "Command", rp_str(backend, "command"));
	if (rp_str(backend, "python")[0] != '\0')
		meta(sb, "Python", rp_str(backend, "python"));
	sbx_strbuf_puts(sb, "<dt>Control plane</dt><dd>");
	text(sb, rp_str(cp, "kind"));
	sbx_strbuf_puts(sb, " ");
	text(sb, rp_str(cp, "url"));
	sbx_strbuf_puts(sb, "</dd>\n<dt>Profiles</dt><dd>");
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(r, "profiles")) {
		if (!cJSON_IsString(p))
			continue;
		sbx_strbuf_puts(sb, first ? "" : ", ");
		text(sb, p->valuestring);
		first = false;
	}
	sbx_strbuf_puts(sb, "</dd>\n");
	meta(sb, "Started", rp_str(r, "started_at"));
	sbx_strbuf_puts(sb, "<dt>Run</dt><dd>");
	sbx_strbuf_printf(sb, "seed %.0f, timeout scale %g, shard %.0f/%.0f, sbx-conform ",
			  rp_num(r, "seed", 0), rp_num(r, "timeout_scale", 1),
			  rp_num(shard, "index", 1), rp_num(shard, "count", 1));
	text(sb, rp_str(r, "version"));
	sbx_strbuf_puts(sb, ", ");
	rp_put_duration(sb, rp_num(r, "duration_ms", t->duration_ms));
	sbx_strbuf_puts(sb, "</dd>\n</dl>\n");
	sbx_strbuf_printf(sb, "<p class=\"totals\" id=\"totals\">%d checks: %d pass, %d fail, %d skip, "
			  "%d error, %d advisory; cleanup failed: %d</p>\n",
			  t->total, t->pass, t->fail, t->skip, t->error, t->advisory, t->cleanup_fail);
}

static void filters(sbx_strbuf *sb, const struct sbx_report_totals *t)
{
	const struct {
		const char *key;
		const char *label;
		int n;
	} f[] = {
		{"all", "All", t->total},
		{"problems", "Problems", t->fail + t->error + t->advisory + t->cleanup_fail},
		{"fail", "Failed", t->fail},
		{"error", "Errors", t->error},
		{"cleanup", "Cleanup failed", t->cleanup_fail},
		{"advisory", "Advisory", t->advisory},
		{"skip", "Skipped", t->skip},
		{"pass", "Passed", t->pass},
	};
	sbx_strbuf_puts(sb, "<nav class=\"filters\">");
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		sbx_strbuf_printf(sb, "<a href=\"#filter=%s\" data-filter=\"%s\">%s (%d)</a>",
				  f[i].key, f[i].key, f[i].label, f[i].n);
	sbx_strbuf_puts(sb, " <span class=\"muted\" id=\"shown\"></span></nav>\n</header>\n");
}

static void journal_table(sbx_strbuf *sb, const cJSON *journal)
{
	const cJSON *e;

	if (cJSON_GetArraySize(journal) == 0) {
		sbx_strbuf_puts(sb, "<p class=\"muted\">No control-plane requests in the journal.</p>\n");
		return;
	}
	sbx_strbuf_puts(sb, "<table class=\"journal\"><thead><tr><th>#</th><th>By</th><th>Method</th><th>Path</th>"
			"<th>Status</th><th>Fault</th></tr></thead><tbody>\n");
	cJSON_ArrayForEach(e, journal) {
		const char *fault = rp_str_or_null(e, "fault");
		sbx_strbuf_printf(sb, "<tr><td>%.0f</td><td>", rp_num(e, "seq", 0));
		text(sb, rp_str(e, "by"));
		sbx_strbuf_puts(sb, "</td><td>");
		text(sb, rp_str(e, "method"));
		sbx_strbuf_puts(sb, "</td><td>");
		text(sb, rp_str(e, "path"));
		sbx_strbuf_printf(sb, "</td><td>%.0f</td><td>", rp_num(e, "status", 0));
		text(sb, fault != NULL ? fault : "");
		sbx_strbuf_puts(sb, "</td></tr>\n");
	}
	sbx_strbuf_puts(sb, "</tbody></table>\n");
}

static void evidence(sbx_strbuf *sb, const struct rp_check *c)
{
	const cJSON *e;

	sbx_strbuf_printf(sb, "<details class=\"evidence\"><summary>Evidence (%d request%s)</summary>\n",
			  cJSON_GetArraySize(c->journal), cJSON_GetArraySize(c->journal) == 1 ? "" : "s");
	if (c->rerun[0] != '\0') {
		sbx_strbuf_puts(sb, "<p>Re-run this check alone:</p><pre class=\"rerun\">");
		text(sb, c->rerun);
		sbx_strbuf_puts(sb, "</pre>\n");
	}
	if (c->clause[0] != '\0') {
		sbx_strbuf_puts(sb, "<p>Clause: <code>");
		text(sb, c->clause);
		sbx_strbuf_puts(sb, "</code></p>\n");
	}
	if (c->clause_text[0] != '\0') {
		sbx_strbuf_puts(sb, "<blockquote class=\"clause\">");
		text(sb, c->clause_text);
		sbx_strbuf_puts(sb, "</blockquote>\n");
	}
	journal_table(sb, c->journal);
	sbx_strbuf_puts(sb, "<p>Driver stderr:</p>");
	if (c->driver_stderr[0] != '\0') {
		sbx_strbuf_puts(sb, "<pre class=\"stderr\">");
		text(sb, c->driver_stderr);
		sbx_strbuf_puts(sb, "</pre>\n");
	} else {
		sbx_strbuf_puts(sb, "<p class=\"muted\">(the driver wrote nothing to stderr in this case)</p>\n");
	}
	if (cJSON_GetArraySize(c->details) > 0) {
		sbx_strbuf_puts(sb, "<ul class=\"details\">");
		cJSON_ArrayForEach(e, c->details) {
			sbx_strbuf_puts(sb, "<li>");
			text(sb, cJSON_IsString(e) ? e->valuestring : "");
			sbx_strbuf_puts(sb, "</li>");
		}
		sbx_strbuf_puts(sb, "</ul>\n");
	}
	sbx_strbuf_puts(sb, "</details>");
}

static void cleanup_cell(sbx_strbuf *sb, const struct rp_check *c)
{
	const cJSON *e;
	const char *v = c->cleanup_verdict[0] != '\0' ? c->cleanup_verdict : "none";
	const char *cls = c->cleanup_failed ? "fail" : strcmp(v, "pass") == 0 ? "pass" : "skip";

	sbx_strbuf_printf(sb, "<td class=\"cleanup\"><span class=\"v %s\">", cls);
	text(sb, v);
	sbx_strbuf_puts(sb, "</span>");
	if (c->cleanup_reason[0] != '\0') {
		sbx_strbuf_puts(sb, "<div>");
		text(sb, c->cleanup_reason);
		sbx_strbuf_puts(sb, "</div>");
	}
	cJSON_ArrayForEach(e, c->leftover) {
		sbx_strbuf_puts(sb, "<div class=\"leftover\">left: <code>");
		text(sb, cJSON_IsString(e) ? e->valuestring : "");
		sbx_strbuf_puts(sb, "</code></div>");
	}
	sbx_strbuf_puts(sb, "</td>");
}

static void row(sbx_strbuf *sb, size_t index, const struct rp_check *c)
{
	const char *verdict = rp_verdict_name(c->verdict);
	bool advisory = c->advisory && c->not_ok;
	const char *cls = advisory ? "advisory" : c->not_ok ? "notok" : "ok";

	sbx_strbuf_printf(sb, "<tr class=\"check %s\" id=\"check-%zu\" data-verdict=\"%s\" "
			  "data-cleanup=\"%s\" data-advisory=\"%s\" data-notok=\"%s\">",
			  cls, index, verdict, c->cleanup_failed ? "fail" : "ok",
			  advisory ? "true" : "false", c->not_ok ? "true" : "false");
	sbx_strbuf_puts(sb, "<td class=\"id\">");
	text(sb, c->id);
	sbx_strbuf_puts(sb, "</td><td class=\"profile\">");
	text(sb, c->profile);
	sbx_strbuf_puts(sb, "</td><td class=\"title\">");
	text(sb, c->title);
	sbx_strbuf_printf(sb, "</td><td class=\"verdict\"><span class=\"v %s\">%s</span></td>",
			  advisory ? "advisory" : verdict, advisory ? "advisory" : verdict);
	sbx_strbuf_puts(sb, "<td class=\"reason\"><div class=\"why\">");
	text(sb, c->reason);
	sbx_strbuf_puts(sb, "</div>");
	if (c->not_ok)
		evidence(sb, c);
	sbx_strbuf_puts(sb, "</td>");
	cleanup_cell(sb, c);
	sbx_strbuf_puts(sb, "<td class=\"time\">");
	rp_put_duration(sb, c->duration_ms);
	sbx_strbuf_puts(sb, "</td></tr>\n");
}

bool sbx_report_html(const cJSON *report, sbx_strbuf *out, sbx_err *err)
{
	struct rp_view v;
	const cJSON *backend = cJSON_GetObjectItemCaseSensitive(report, "backend");

	if (!rp_view_init(&v, report, err))
		return false;
	sbx_strbuf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
			"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
			"<title>sbx-conform: ");
	sbx_strbuf_puts(out, sbx_report_result_word(&v.totals));
	sbx_strbuf_puts(out, " \xe2\x80\x94 ");
	text(out, rp_str(backend, "name"));
	sbx_strbuf_puts(out, "</title>\n");
	sbx_strbuf_puts(out, STYLE);
	sbx_strbuf_puts(out, "</head>\n<body>\n");
	header(out, report, &v.totals);
	filters(out, &v.totals);
	sbx_strbuf_puts(out, "<main>\n<table id=\"checks\"><thead><tr><th>Id</th><th>Profile</th>"
			"<th>Title</th><th>Verdict</th><th>Reason and evidence</th><th>Cleanup</th>"
			"<th>Time</th></tr></thead>\n<tbody>\n");
	for (size_t i = 0; i < v.n; i++)
		row(out, i + 1, &v.checks[v.order[i]]);
	sbx_strbuf_puts(out, "</tbody></table>\n");
	if (v.n == 0)
		sbx_strbuf_puts(out, "<p>No checks were selected.</p>\n");
	sbx_strbuf_puts(out, "</main>\n");
	sbx_strbuf_puts(out, SCRIPT);
	sbx_strbuf_puts(out, "</body>\n</html>\n");
	rp_view_free(&v);
	if (out->oom) {
		sbx_err_set(err, "report: out of memory");
		return false;
	}
	return true;
}

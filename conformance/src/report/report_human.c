/* report_human: the summary sbx-conform prints on a terminal, grouped by
 * profile and area, one line per check with a separate cleanup column,
 * reasons under every check that is not a plain pass, and totals. Colours
 * only when the caller asks (it decides from the TTY and NO_COLOR); text from
 * the report never carries raw control bytes to the terminal. */
#include "report.h"
#include "report_priv.h"

#include <string.h>

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_MAGENTA "\033[35m"

struct human {
	sbx_strbuf *out;
	bool color;
	int id_width;
};

static void paint(struct human *h, const char *code, const char *text)
{
	if (h->color)
		sbx_strbuf_printf(h->out, "%s%s%s", code, text, C_RESET);
	else
		sbx_strbuf_puts(h->out, text);
}

/* Report text (escaped), optionally coloured, padded to width bytes. */
static void paint_term(struct human *h, const char *code, const char *text, int width)
{
	size_t before;

	if (h->color && code != NULL)
		sbx_strbuf_puts(h->out, code);
	before = h->out->len;
	rp_put_term(h->out, text, "");
	for (int i = (int)(h->out->len - before); i < width; i++)
		sbx_strbuf_puts(h->out, " ");
	if (h->color && code != NULL)
		sbx_strbuf_puts(h->out, C_RESET);
}

static void verdict_label(const struct rp_check *c, const char **text, const char **code)
{
	*text = "ERROR";
	*code = C_BOLD C_MAGENTA;
	if (c->advisory && c->not_ok) {
		*text = "WARN";
		*code = C_YELLOW;
		return;
	}
	switch (c->verdict) {
	case RP_PASS:
		*text = "PASS";
		*code = C_GREEN;
		return;
	case RP_FAIL:
		*text = "FAIL";
		*code = C_BOLD C_RED;
		return;
	case RP_SKIP:
		*text = "SKIP";
		*code = C_YELLOW;
		return;
	case RP_ERROR:
		return;
	}
}

static void cleanup_label(const struct rp_check *c, const char **text, const char **code)
{
	if (c->cleanup_failed) {
		*text = "FAIL";
		*code = C_BOLD C_RED;
	} else if (strcmp(c->cleanup_verdict, "pass") == 0) {
		*text = "ok";
		*code = C_GREEN;
	} else if (strcmp(c->cleanup_verdict, "skip") == 0) {
		*text = "skip";
		*code = C_DIM;
	} else {
		*text = "-";
		*code = C_DIM;
	}
}

static void header(struct human *h, const cJSON *r)
{
	const cJSON *backend = cJSON_GetObjectItemCaseSensitive(r, "backend");
	const cJSON *cp = cJSON_GetObjectItemCaseSensitive(r, "control_plane");
	const cJSON *shard = cJSON_GetObjectItemCaseSensitive(r, "shard");
	const cJSON *profiles = cJSON_GetObjectItemCaseSensitive(r, "profiles");
	const cJSON *p;
	bool first = true;

	paint(h, C_BOLD, "sbx-conform");
	sbx_strbuf_puts(h->out, " ");
	rp_put_term(h->out, rp_str(r, "version"), "");
	sbx_strbuf_puts(h->out, " report\n  backend:       ");
	rp_put_term(h->out, rp_str(backend, "name"), "");
	if (rp_str(backend, "driver")[0] != '\0') {
		sbx_strbuf_puts(h->out, " (");
		rp_put_term(h->out, rp_str(backend, "driver"), "");
		sbx_strbuf_puts(h->out, ")");
	}
	if (rp_str(backend, "command")[0] != '\0') {
		sbx_strbuf_puts(h->out, "\n  command:       ");
		rp_put_term(h->out, rp_str(backend, "command"), "                 ");
	}
	if (rp_str(backend, "python")[0] != '\0') {
		sbx_strbuf_puts(h->out, "\n  python:        ");
		rp_put_term(h->out, rp_str(backend, "python"), "");
	}
	sbx_strbuf_puts(h->out, "\n  control plane: ");
	rp_put_term(h->out, rp_str(cp, "kind"), "");
	sbx_strbuf_puts(h->out, " ");
	rp_put_term(h->out, rp_str(cp, "url"), "");
	if (rp_str(cp, "guests_root")[0] != '\0') {
		sbx_strbuf_puts(h->out, "\n  guests' root:  ");
		rp_put_term(h->out, rp_str(cp, "guests_root"), "");
	}
	sbx_strbuf_puts(h->out, "\n  profiles:      ");
	cJSON_ArrayForEach(p, profiles) {
		if (!cJSON_IsString(p))
			continue;
		sbx_strbuf_puts(h->out, first ? "" : ", ");
		rp_put_term(h->out, p->valuestring, "");
		first = false;
	}
	sbx_strbuf_printf(h->out, "\n  run:           seed %.0f, timeout scale %g, shard %.0f/%.0f",
			  rp_num(r, "seed", 0), rp_num(r, "timeout_scale", 1),
			  rp_num(shard, "index", 1), rp_num(shard, "count", 1));
	if (rp_str(r, "started_at")[0] != '\0') {
		sbx_strbuf_puts(h->out, ", started ");
		rp_put_term(h->out, rp_str(r, "started_at"), "");
	}
	sbx_strbuf_puts(h->out, "\n");
}

static void leftovers(struct human *h, const struct rp_check *c)
{
	const cJSON *it;
	bool first = true;

	if (cJSON_GetArraySize(c->leftover) == 0)
		return;
	sbx_strbuf_puts(h->out, "; leftover: ");
	cJSON_ArrayForEach(it, c->leftover) {
		if (!cJSON_IsString(it))
			continue;
		sbx_strbuf_puts(h->out, first ? "" : ", ");
		rp_put_term(h->out, it->valuestring, "");
		first = false;
	}
}

static void check_line(struct human *h, const struct rp_check *c)
{
	const char *text;
	const char *code;
	const char *indent = "            "; /* under the id column */

	verdict_label(c, &text, &code);
	sbx_strbuf_puts(h->out, "    ");
	paint_term(h, code, text, 8);
	paint_term(h, NULL, c->id, h->id_width + 2);
	cleanup_label(c, &text, &code);
	paint_term(h, code, text, 9);
	sbx_strbuf_printf(h->out, "%8.0f ms  ", c->duration_ms);
	rp_put_term(h->out, c->title, indent);
	sbx_strbuf_puts(h->out, "\n");

	if (c->verdict != RP_PASS || (c->advisory && c->not_ok)) {
		sbx_strbuf_printf(h->out, "%s%s", indent, c->advisory && c->not_ok ?
				  "advisory (does not fail the run): " : "reason: ");
		rp_put_term(h->out, c->reason[0] != '\0' ? c->reason : "(no reason given)", indent);
		sbx_strbuf_puts(h->out, "\n");
	}
	if (c->cleanup_failed) {
		sbx_strbuf_printf(h->out, "%scleanup: ", indent);
		rp_put_term(h->out, c->cleanup_reason[0] != '\0' ? c->cleanup_reason :
			    "(no reason given)", indent);
		leftovers(h, c);
		sbx_strbuf_puts(h->out, "\n");
	}
}

static void totals(struct human *h, const struct sbx_report_totals *t, const cJSON *r)
{
	bool ok = sbx_report_totals_ok(t);

	sbx_strbuf_printf(h->out, "\nTotals: %d check%s: %d pass, %d fail, %d skip, %d error",
			  t->total, t->total == 1 ? "" : "s", t->pass, t->fail, t->skip, t->error);
	if (t->advisory > 0)
		sbx_strbuf_printf(h->out, ", %d advisory warning%s", t->advisory,
				  t->advisory == 1 ? "" : "s");
	sbx_strbuf_printf(h->out, "; cleanup failed: %d; time ", t->cleanup_fail);
	rp_put_duration(h->out, rp_num(r, "duration_ms", t->duration_ms));
	sbx_strbuf_puts(h->out, "\nResult: ");
	paint(h, ok && !sbx_report_nothing_checked(t) ? C_BOLD C_GREEN : ok ? C_BOLD C_YELLOW : C_BOLD C_RED,
	      sbx_report_result_word(t));
	if (ok && sbx_report_nothing_checked(t))
		sbx_strbuf_puts(h->out, t->total > 0 ? " (every selected check was skipped: nothing was checked)"
						      : " (no check ran: nothing was checked)");
	sbx_strbuf_puts(h->out, "\n");
}

bool sbx_report_human(const cJSON *report, bool color, sbx_strbuf *out, sbx_err *err)
{
	struct rp_view v;
	struct human h = {.out = out, .color = color, .id_width = 2};

	if (!rp_view_init(&v, report, err))
		return false;
	for (size_t i = 0; i < v.n; i++)
		if ((int)strlen(v.checks[i].id) > h.id_width)
			h.id_width = (int)strlen(v.checks[i].id);

	header(&h, report);
	if (v.n == 0)
		sbx_strbuf_puts(out, "\nNo checks were selected.\n");
	else
		sbx_strbuf_printf(out, "\n    %-8s%-*s  %-9s%11s  %s\n", "VERDICT", h.id_width, "ID",
				  "CLEANUP", "TIME", "TITLE");
	const char *profile = NULL;
	for (size_t g = 0; g < v.ngroups; g++) {
		const struct rp_group *grp = &v.groups[g];
		if (profile == NULL || strcmp(profile, grp->profile) != 0) {
			sbx_strbuf_puts(out, "\n");
			paint_term(&h, C_BOLD, grp->profile[0] != '\0' ? grp->profile : "(no profile)", 0);
			sbx_strbuf_puts(out, "\n");
			profile = grp->profile;
		}
		sbx_strbuf_puts(out, "  ");
		rp_put_term(out, grp->area[0] != '\0' ? grp->area : "(no area)", "");
		sbx_strbuf_puts(out, "\n");
		for (size_t k = 0; k < grp->count; k++)
			check_line(&h, &v.checks[v.order[grp->first + k]]);
	}
	totals(&h, &v.totals, report);
	rp_view_free(&v);
	if (out->oom) {
		sbx_err_set(err, "report: out of memory");
		return false;
	}
	return true;
}

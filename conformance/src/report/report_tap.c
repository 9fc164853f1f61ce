/* report_tap: TAP version 13, one test point per check (in profile/area
 * order), "# SKIP reason" for skips, "# TODO advisory" for advisory checks
 * that are not ok, and a YAML diagnostics block (reason, cleanup, evidence)
 * under every point that is not ok. Descriptions never carry a newline or an
 * unescaped '#', and every YAML scalar is double-quoted and escaped, so a
 * report string cannot break the stream. */
#include "report.h"
#include "report_priv.h"

#include <string.h>

/* A description or directive text: one line, '#' and '\' escaped. */
static void put_desc(sbx_strbuf *sb, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n > 0) {
		uint32_t cp;
		size_t len = rp_utf8_next(p, n, &cp);
		p += len;
		n -= len;
		if (cp == '#' || cp == '\\') {
			sbx_strbuf_printf(sb, "\\%c", (char)cp);
		} else if (cp == '\n' || cp == '\r' || cp == '\t') {
			sbx_strbuf_puts(sb, " ");
		} else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
			sbx_strbuf_printf(sb, "\\x%02X", (unsigned)cp);
		} else if (cp == 0xFFFE || cp == 0xFFFF) {
			sbx_strbuf_printf(sb, "\\u%04X", (unsigned)cp);
		} else {
			rp_put_cp(sb, cp);
		}
	}
}

static void yaml_kv(sbx_strbuf *sb, const char *indent, const char *key, const char *value)
{
	sbx_strbuf_printf(sb, "%s%s: ", indent, key);
	rp_put_yaml(sb, value);
	sbx_strbuf_puts(sb, "\n");
}

static void yaml_str_list(sbx_strbuf *sb, const char *indent, const char *key, const cJSON *arr)
{
	const cJSON *it;

	if (cJSON_GetArraySize(arr) == 0) {
		sbx_strbuf_printf(sb, "%s%s: []\n", indent, key);
		return;
	}
	sbx_strbuf_printf(sb, "%s%s:\n", indent, key);
	cJSON_ArrayForEach(it, arr) {
		sbx_strbuf_printf(sb, "%s  - ", indent);
		rp_put_yaml(sb, cJSON_IsString(it) ? it->valuestring : "");
		sbx_strbuf_puts(sb, "\n");
	}
}

static void yaml_journal(sbx_strbuf *sb, const cJSON *journal)
{
	const cJSON *e;

	if (cJSON_GetArraySize(journal) == 0) {
		sbx_strbuf_puts(sb, "    journal: []\n");
		return;
	}
	sbx_strbuf_puts(sb, "    journal:\n");
	cJSON_ArrayForEach(e, journal) {
		const char *fault = rp_str_or_null(e, "fault");
		sbx_strbuf_printf(sb, "      - seq: %.0f\n", rp_num(e, "seq", 0));
		if (rp_str(e, "by")[0] != '\0')
			yaml_kv(sb, "        ", "by", rp_str(e, "by"));
		yaml_kv(sb, "        ", "method", rp_str(e, "method"));
		yaml_kv(sb, "        ", "path", rp_str(e, "path"));
		sbx_strbuf_printf(sb, "        status: %.0f\n", rp_num(e, "status", 0));
		if (fault != NULL)
			yaml_kv(sb, "        ", "fault", fault);
		else
			sbx_strbuf_puts(sb, "        fault: null\n");
	}
}

static const char *severity(const struct rp_check *c)
{
	if (c->verdict == RP_ERROR)
		return "error";
	if (c->verdict == RP_FAIL)
		return "fail";
	return "cleanup";
}

static void diagnostics(sbx_strbuf *sb, const struct rp_check *c)
{
	sbx_strbuf_puts(sb, "  ---\n");
	yaml_kv(sb, "  ", "message", c->verdict == RP_PASS ? c->cleanup_reason : c->reason);
	yaml_kv(sb, "  ", "severity", severity(c));
	yaml_kv(sb, "  ", "id", c->id);
	yaml_kv(sb, "  ", "profile", c->profile);
	yaml_kv(sb, "  ", "area", c->area);
	yaml_kv(sb, "  ", "clause", c->clause);
	yaml_kv(sb, "  ", "verdict", c->verdict_text);
	yaml_kv(sb, "  ", "reason", c->reason);
	sbx_strbuf_printf(sb, "  advisory: %s\n", c->advisory ? "true" : "false");
	sbx_strbuf_printf(sb, "  duration_ms: %.0f\n", c->duration_ms);
	sbx_strbuf_puts(sb, "  cleanup:\n");
	yaml_kv(sb, "    ", "verdict", c->cleanup_verdict);
	yaml_kv(sb, "    ", "reason", c->cleanup_reason);
	yaml_str_list(sb, "    ", "leftover", c->leftover);
	sbx_strbuf_puts(sb, "  evidence:\n");
	yaml_journal(sb, c->journal);
	yaml_kv(sb, "    ", "driver_stderr", c->driver_stderr);
	yaml_str_list(sb, "    ", "details", c->details);
	sbx_strbuf_puts(sb, "  ...\n");
}

static void test_point(sbx_strbuf *sb, size_t num, const struct rp_check *c)
{
	sbx_strbuf_printf(sb, "%s %zu - ", c->not_ok ? "not ok" : "ok", num);
	put_desc(sb, c->id);
	sbx_strbuf_puts(sb, " (");
	put_desc(sb, c->profile);
	sbx_strbuf_puts(sb, ") ");
	put_desc(sb, c->title);
	if (c->not_ok && c->advisory) {
		sbx_strbuf_puts(sb, " # TODO advisory: ");
		put_desc(sb, c->verdict == RP_PASS ? c->cleanup_reason : c->reason);
	} else if (c->verdict == RP_SKIP && !c->not_ok) {
		sbx_strbuf_puts(sb, " # SKIP ");
		put_desc(sb, c->reason[0] != '\0' ? c->reason : "no reason given");
	} else if (c->cleanup_failed && c->verdict == RP_PASS) {
		sbx_strbuf_puts(sb, " - cleanup failed");
	}
	sbx_strbuf_puts(sb, "\n");
	if (c->not_ok)
		diagnostics(sb, c);
}

bool sbx_report_tap(const cJSON *report, sbx_strbuf *out, sbx_err *err)
{
	struct rp_view v;
	const cJSON *backend = cJSON_GetObjectItemCaseSensitive(report, "backend");

	if (!rp_view_init(&v, report, err))
		return false;
	sbx_strbuf_puts(out, "TAP version 13\n");
	if (v.n == 0)
		sbx_strbuf_puts(out, "1..0 # SKIP no checks selected\n");
	else
		sbx_strbuf_printf(out, "1..%zu\n", v.n);
	sbx_strbuf_puts(out, "# sbx-conform ");
	put_desc(out, rp_str(report, "version"));
	sbx_strbuf_puts(out, ", backend ");
	put_desc(out, rp_str(backend, "name"));
	sbx_strbuf_puts(out, "\n");
	for (size_t i = 0; i < v.n; i++)
		test_point(out, i + 1, &v.checks[v.order[i]]);
	sbx_strbuf_printf(out, "# pass %d, fail %d, skip %d, error %d, advisory %d, cleanup failed %d\n",
			  v.totals.pass, v.totals.fail, v.totals.skip, v.totals.error,
			  v.totals.advisory, v.totals.cleanup_fail);
	rp_view_free(&v);
	if (out->oom) {
		sbx_err_set(err, "report: out of memory");
		return false;
	}
	return true;
}

/* The report writers render every verdict (pass, fail, skip, error, cleanup
 * failure, advisory) the way CI systems and people read them, and never let
 * a hostile string from the report (markup, ]]>, quotes, control bytes,
 * invalid UTF-8) break the output format.
 * Argument 1: the fixture report (conformance/tests/report/fixture_report.json). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "report.h"
#include "sbx/strbuf.h"

static const char *fixture_path;

static cJSON *load_fixture(void)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char buf[4096];
	size_t n;
	FILE *f = fopen(fixture_path, "rb");
	assert_non_null(f);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sbx_strbuf_append(&sb, buf, n);
	fclose(f);
	cJSON *j = cJSON_ParseWithLength(sbx_strbuf_str(&sb), sb.len);
	sbx_strbuf_free(&sb);
	assert_non_null(j);
	return j;
}

/* Renders the fixture; the caller frees the returned string. */
static char *render(const cJSON *report, enum sbx_report_format fmt, bool color)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;
	sbx_err err = {{0}};
	bool ok = sbx_report_render(report, fmt, color, &sb, &err);
	if (!ok)
		fail_msg("render failed: %s", err.msg);
	return sbx_strbuf_detach(&sb, NULL);
}

static char *render_fixture(enum sbx_report_format fmt, bool color)
{
	cJSON *r = load_fixture();
	char *out = render(r, fmt, color);
	cJSON_Delete(r);
	return out;
}

static const char *find(const char *hay, const char *needle)
{
	const char *p = strstr(hay, needle);
	if (p == NULL) {
		fprintf(stderr, "---- output searched ----\n%s\n---- end ----\n", hay);
		fail_msg("expected to find \"%s\" in the output above", needle);
	}
	return p;
}

static int occurrences(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* true when s is valid UTF-8 and carries only characters XML 1.0 allows. */
static bool valid_xml_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p != '\0') {
		uint32_t cp;
		int len;
		if (*p < 0x80) {
			cp = *p;
			len = 1;
		} else if ((*p & 0xE0) == 0xC0) {
			cp = *p & 0x1F;
			len = 2;
		} else if ((*p & 0xF0) == 0xE0) {
			cp = *p & 0x0F;
			len = 3;
		} else if ((*p & 0xF8) == 0xF0) {
			cp = *p & 0x07;
			len = 4;
		} else {
			return false;
		}
		for (int i = 1; i < len; i++) {
			if ((p[i] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3F);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
			return false;
		if (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r')
			return false;
		if ((cp >= 0x7F && cp <= 0x9F) || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE ||
		    cp == 0xFFFF || cp > 0x10FFFF)
			return false;
		p += len;
	}
	return true;
}

static void human_groups_checks_by_profile_then_area(void **state)
{
	(void)state;
	char *out = render_fixture(SBX_REPORT_HUMAN, false);
	const char *lb = find(out, "\nlangflow-backend\n");
	const char *cb = find(out, "\ncreateos-backend\n");
	assert_true(lb < cb);
	/* CAP-002 comes after REF-001 in the report but is grouped with CAP. */
	const char *cap2 = find(lb, "CAP-002");
	const char *ref = find(lb, "  REF\n");
	const char *cln = find(lb, "  CLN\n");
	assert_true(cap2 < ref);
	assert_true(ref < cln);
	assert_true(find(lb, "  CAP\n") < cap2);
	/* The same id under another profile is listed there too. */
	find(cb, "CAP-001");
	find(cb, "  CREATEOS\n");
	free(out);
}

static void human_shows_reasons_cleanup_column_and_totals(void **state)
{
	(void)state;
	char *out = render_fixture(SBX_REPORT_HUMAN, false);
	find(out, "    VERDICT");
	find(out, "CLEANUP");
	find(out, "reason: run executed outside a guest: FAILMARK-CAP003");
	find(out, "reason: backend declares no refusals # nothing to refuse");
	find(out, "reason: ERRORMARK driver exited");
	find(out, "advisory (does not fail the run): ADVISORYMARK");
	find(out, "cleanup: CLEANUPMARK guest still running; leftover: sb-01LEFTOVER<1>, sb-02");
	/* A passing check with a failed cleanup shows PASS and a FAIL cleanup. */
	const char *cln = find(out, "CLN-001");
	const char *line = cln;
	while (line > out && line[-1] != '\n')
		line--;
	assert_true(strncmp(line, "    PASS", 8) == 0);
	assert_non_null(strstr(cln, "FAIL"));
	assert_true(strstr(cln, "FAIL") < strchr(cln, '\n'));
	find(out, "Totals: 8 checks: 4 pass, 1 fail, 1 skip, 1 error, 1 advisory warning; cleanup failed: 1");
	find(out, "Result: FAIL\n");
	/* The multi-line reason keeps its indent on the second line. */
	find(out, "\n            second line");
	free(out);
}

static void human_colours_only_when_asked_and_never_from_report_text(void **state)
{
	(void)state;
	char *plain = render_fixture(SBX_REPORT_HUMAN, false);
	assert_null(strchr(plain, '\033'));
	/* The report's own ESC and other control bytes are shown, not sent. */
	find(plain, "\\x01\\x1B[31mred\\x7F");
	for (const unsigned char *p = (const unsigned char *)plain; *p != '\0'; p++)
		assert_true(*p >= 0x20 || *p == '\n');
	free(plain);

	char *color = render_fixture(SBX_REPORT_HUMAN, true);
	find(color, "\033[32mPASS");
	find(color, "\033[31mFAIL");
	assert_null(strstr(color, "\033[31mred"));
	find(color, "\\x1B[31mred");
	free(color);
}

static void tap_has_one_point_per_check_with_directives(void **state)
{
	(void)state;
	char *out = render_fixture(SBX_REPORT_TAP, false);
	assert_true(strncmp(out, "TAP version 13\n1..8\n", 20) == 0);
	int points = 0;
	int expect = 1;
	for (const char *line = out; line != NULL && *line != '\0';) {
		int num = 0;
		const char *p = NULL;
		if (strncmp(line, "ok ", 3) == 0)
			p = line + 3;
		else if (strncmp(line, "not ok ", 7) == 0)
			p = line + 7;
		if (p != NULL) {
			while (*p >= '0' && *p <= '9')
				num = num * 10 + (*p++ - '0');
			assert_int_equal(num, expect);
			expect++;
			points++;
		}
		line = strchr(line, '\n');
		if (line != NULL)
			line++;
	}
	assert_int_equal(points, 8);
	find(out, "\nok 1 - CAP-001 (langflow-backend) capabilities() makes no control-plane request\n");
	find(out, "\nnot ok 2 - CAP-003 (langflow-backend) isolation <claimed> & \"verified\" ]]> 'quoted' \\# hash\n");
	find(out, "\nok 4 - REF-001 (langflow-backend) refusals happen before any mutating request"
		  " # SKIP backend declares no refusals \\# nothing to refuse\n");
	find(out, "\nnot ok 5 - CLN-001 (langflow-backend) no guest left after a run - cleanup failed\n");
	find(out, "\nnot ok 6 - CLN-004 (langflow-backend) lost create answer leaves no orphan forever"
		  " # TODO advisory: ADVISORYMARK");
	find(out, "\nnot ok 7 - CREATEOS-004 (createos-backend) no retries on 503\n  ---\n");
	free(out);
}

static void tap_yaml_block_carries_reason_cleanup_and_evidence(void **state)
{
	(void)state;
	char *out = render_fixture(SBX_REPORT_TAP, false);
	const char *block = find(out, "not ok 2 - CAP-003");
	const char *end = find(block, "\n  ...\n");
	find(block, "\n  ---\n  message: \"run executed outside a guest: FAILMARK-CAP003 <b>not bold</b> & ]]> "
		    "\\x01\\x1B[31mred\\x7F caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\\nsecond line\"\n");
	find(block, "\n  severity: \"fail\"\n");
	find(block, "\n      - seq: 2\n        by: \"backend\"\n        method: \"POST\"\n        path: \"/v1/sandboxes?x=<y>&z=1\"\n"
		    "        status: 503\n        fault: \"JOURNALMARK-503 \\\"inject\\\"\"\n");
	/* the harness's own request is marked as such, not blamed on the backend */
	find(block, "\n      - seq: 3\n        by: \"harness\"\n        method: \"GET\"\n");
	find(block, "\n        fault: null\n");
	find(block, "\n    driver_stderr: \"Traceback (most recent call last):\\n  File \\\"<stdin>\\\", line 1\\nSTDERRMARK");
	assert_true(strstr(block, "JOURNALMARK") < end);

	const char *cln = find(out, "not ok 5 - CLN-001");
	find(cln, "\n  severity: \"cleanup\"\n");
	find(cln, "\n    leftover:\n      - \"sb-01LEFTOVER<1>\"\n      - \"sb-02\"\n");
	/* A skipped check has no diagnostics block. */
	const char *skip = find(out, "ok 4 - REF-001");
	assert_true(strncmp(strchr(skip, '\n') + 1, "not ok 5", 8) == 0);
	/* No raw control byte anywhere. */
	for (const unsigned char *p = (const unsigned char *)out; *p != '\0'; p++)
		assert_true(*p >= 0x20 || *p == '\n');
	free(out);
}

static void junit_maps_verdicts_to_elements_and_counts(void **state)
{
	(void)state;
	char *out = render_fixture(SBX_REPORT_JUNIT, false);
	assert_true(valid_xml_text(out));
	find(out, "<testsuites name=\"sbx-conform\" tests=\"8\" failures=\"2\" errors=\"1\" skipped=\"2\" time=\"1.632\">");
	find(out, "<testsuite name=\"langflow-backend\" tests=\"6\" failures=\"2\" errors=\"0\" skipped=\"2\"");
	find(out, "<testsuite name=\"createos-backend\" tests=\"2\" failures=\"0\" errors=\"1\" skipped=\"0\"");
	find(out, "timestamp=\"2025-03-04T04:06:07\"");
	find(out, "<testcase name=\"CAP-001: capabilities() makes no control-plane request\" "
		  "classname=\"langflow-backend.CAP\" time=\"0.003\"/>");
	find(out, "classname=\"createos-backend.CREATEOS\" time=\"1.500\">\n"
		  "      <error message=\"ERRORMARK driver exited with status 1 before answering\" type=\"harness-error\">");
	find(out, "<skipped message=\"backend declares no refusals # nothing to refuse\">");
	find(out, "<skipped message=\"advisory check did not pass (does not fail the run): ADVISORYMARK");
	find(out, "<failure message=\"cleanup: CLEANUPMARK guest still running\" type=\"cleanup-failed\">");
	find(out, "leftover: sb-01LEFTOVER&lt;1&gt;");
	find(out, "  #2 backend: POST /v1/sandboxes?x=&lt;y&gt;&amp;z=1 -> 503 [fault: JOURNALMARK-503 &quot;inject&quot;]");
	free(out);
}

static void junit_escapes_markup_cdata_end_quotes_and_control_bytes(void **state)
{
	(void)state;
	char *out = render_fixture(SBX_REPORT_JUNIT, false);
	find(out, "name=\"CAP-003: isolation &lt;claimed&gt; &amp; &quot;verified&quot; ]]&gt; &#39;quoted&#39; # hash\"");
	find(out, "<failure message=\"run executed outside a guest: FAILMARK-CAP003 &lt;b&gt;not bold&lt;/b&gt; "
		  "&amp; ]]&gt; \\x01\\x1B[31mred\\x7F caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80&#10;second line\" "
		  "type=\"check-failed\">");
	assert_null(strstr(out, "]]>"));
	assert_null(strstr(out, "<b>"));
	assert_null(strstr(out, "<script>"));
	free(out);
}

static cJSON *one_check_report(const char *title, const char *started_at)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *checks = cJSON_AddArrayToObject(r, "checks");
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "started_at", started_at);
	cJSON_AddStringToObject(c, "id", "X-001");
	cJSON_AddStringToObject(c, "profile", "p");
	cJSON_AddStringToObject(c, "area", "X");
	cJSON_AddStringToObject(c, "title", title);
	cJSON_AddStringToObject(c, "verdict", "fail");
	cJSON_AddStringToObject(c, "reason", title);
	cJSON_AddItemToArray(checks, c);
	return r;
}

static void invalid_utf8_and_every_control_byte_stay_out_of_xml_and_html(void **state)
{
	(void)state;
	char nasty[64];
	size_t n = 0;
	for (int b = 1; b < 0x20; b++)
		nasty[n++] = (char)b;
	memcpy(nasty + n, "\xff\xfe\xc3(\xed\xa0\x80\xef\xbf\xbe", 11); /* bad bytes, surrogate, U+FFFE */
	n += 11;
	nasty[n] = '\0';
	cJSON *r = one_check_report(nasty, "2025-01-01T00:30:00-01:00");
	char *junit = render(r, SBX_REPORT_JUNIT, false);
	assert_true(valid_xml_text(junit));
	find(junit, "\\x01\\x02\\x03");
	find(junit, "\xef\xbf\xbd"); /* U+FFFD for each invalid byte */
	find(junit, "\\uFFFE");
	find(junit, "timestamp=\"2025-01-01T01:30:00\"");
	char *html = render(r, SBX_REPORT_HTML, false);
	assert_true(valid_xml_text(html));
	char *tap = render(r, SBX_REPORT_TAP, false);
	assert_true(valid_xml_text(tap));
	free(tap);
	free(html);
	free(junit);
	cJSON_Delete(r);
}

static void junit_timestamp_is_utc_without_zone_or_absent(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		const char *want; /* NULL: no timestamp attribute */
	} cases[] = {
		{"2025-03-01T01:00:00+02:00", "2025-02-28T23:00:00"},
		{"2024-12-31T23:59:59.999Z", "2024-12-31T23:59:59"},
		{"2024-02-29T22:00:00-03:00", "2024-03-01T01:00:00"},
		{"yesterday", NULL},
		{"2024-02-29T22:00:00", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *r = one_check_report("t", cases[i].in);
		char *out = render(r, SBX_REPORT_JUNIT, false);
		char want[64];
		if (cases[i].want != NULL) {
			snprintf(want, sizeof(want), "timestamp=\"%s\"", cases[i].want);
			find(out, want);
		} else {
			assert_null(strstr(out, "timestamp="));
		}
		free(out);
		cJSON_Delete(r);
	}
}

static void json_is_the_report_unchanged(void **state)
{
	(void)state;
	cJSON *r = load_fixture();
	char *out = render(r, SBX_REPORT_JSON, false);
	cJSON *back = cJSON_Parse(out);
	assert_non_null(back);
	assert_true(cJSON_Compare(r, back, true));
	assert_non_null(strchr(out, '\n')); /* pretty, not one line */
	cJSON_Delete(back);
	free(out);
	cJSON_Delete(r);
}

static void html_escapes_everything_and_has_evidence_for_each_problem(void **state)
{
	(void)state;
	char *out = render_fixture(SBX_REPORT_HTML, false);
	assert_true(strncmp(out, "<!DOCTYPE html>", 15) == 0);
	/* The only script element is ours; report text arrives escaped. */
	assert_int_equal(occurrences(out, "<script"), 1);
	find(out, "&lt;script&gt;document.body.dataset.pwned=&#39;script&#39;&lt;/script&gt;");
	find(out, "&lt;img src=x onerror=&quot;document.body.dataset.pwned=&#39;img&#39;&quot;&gt;");
	assert_null(strstr(out, "<img"));
	assert_null(strstr(out, "<b>"));
	/* No external asset of any kind. */
	assert_null(strstr(out, "src=\""));
	assert_null(strstr(out, "<link"));
	assert_null(strstr(out, "@import"));
	/* One evidence block per check that is not ok (fail, error, cleanup, advisory). */
	assert_int_equal(occurrences(out, "<details class=\"evidence\">"), 4);
	const char *row = find(out, "data-verdict=\"fail\" data-cleanup=\"ok\" data-advisory=\"false\" data-notok=\"true\">"
				    "<td class=\"id\">CAP-003</td>");
	const char *row_end = find(row, "<tr class=\"check");
	const char *journal = find(row, "JOURNALMARK-503");
	const char *stderr_mark = find(row, "STDERRMARK");
	assert_true(journal < row_end);
	assert_true(stderr_mark < row_end);
	/* the failed check says how to re-run it alone and quotes its clause */
	const char *rerun = find(row, "<p>Re-run this check alone:</p><pre class=\"rerun\">sbx-conform --backend-cmd "
				      "&#39;RERUNMARK &lt;drv&gt; &amp; &quot;q&quot;&#39; --profile langflow-backend "
				      "--filter CAP-003</pre>");
	const char *clause = find(row, "<blockquote class=\"clause\">CLAUSEMARK isolation claimed hardware-virtualized "
				      "\xe2\x87\x92 every run &lt;b&gt;executed&lt;/b&gt; in a guest</blockquote>");
	assert_true(rerun < row_end);
	assert_true(clause < row_end);
	/* a failed check whose driver wrote nothing says so */
	const char *cln = find(out, "<td class=\"id\">CLN-001</td>");
	find(cln, "(the driver wrote nothing to stderr in this case)");
	find(out, "<title>sbx-conform: FAIL \xe2\x80\x94 fixture &lt;backend&gt; &amp; &quot;co&quot;</title>");
	find(out, "<span class=\"result fail\" id=\"result\">FAIL</span>");
	free(out);
}

static void unusable_reports_are_refused_with_a_reason(void **state)
{
	(void)state;
	sbx_strbuf sb = SBX_STRBUF_INIT;
	sbx_err err = {{0}};
	cJSON *arr = cJSON_CreateArray();
	cJSON *obj = cJSON_CreateObject();
	assert_false(sbx_report_tap(arr, &sb, &err));
	assert_non_null(strstr(err.msg, "not a JSON object"));
	assert_false(sbx_report_junit(obj, &sb, &err));
	assert_non_null(strstr(err.msg, "\"checks\""));
	assert_false(sbx_report_json(arr, &sb, &err));
	enum sbx_report_format fmt;
	assert_true(sbx_report_format_parse("junit", &fmt));
	assert_int_equal(fmt, SBX_REPORT_JUNIT);
	assert_true(sbx_report_format_parse("markdown", &fmt));
	assert_int_equal(fmt, SBX_REPORT_MARKDOWN);
	assert_true(sbx_report_format_parse("github", &fmt));
	assert_int_equal(fmt, SBX_REPORT_GITHUB);
	assert_false(sbx_report_format_parse("xml", &fmt));
	cJSON_Delete(obj);
	cJSON_Delete(arr);
	sbx_strbuf_free(&sb);
}

static void empty_run_renders_in_every_format(void **state)
{
	(void)state;
	cJSON *r = cJSON_CreateObject();
	cJSON_AddArrayToObject(r, "checks");
	char *tap = render(r, SBX_REPORT_TAP, false);
	find(tap, "TAP version 13\n1..0 # SKIP no checks selected\n");
	char *human = render(r, SBX_REPORT_HUMAN, false);
	find(human, "No checks were selected.");
	find(human, "Result: NOTHING CHECKED (no check ran: nothing was checked)");
	char *junit = render(r, SBX_REPORT_JUNIT, false);
	find(junit, "tests=\"0\"");
	char *html = render(r, SBX_REPORT_HTML, false);
	find(html, "No checks were selected.");
	free(html);
	free(junit);
	free(human);
	free(tap);
	cJSON_Delete(r);
}

static void totals_pass_with_skips_and_advisories_only(void **state)
{
	(void)state;
	struct sbx_report_totals t;
	sbx_err err = {{0}};
	cJSON *r = load_fixture();
	assert_true(sbx_report_count(r, &t, &err));
	assert_int_equal(t.total, 8);
	assert_int_equal(t.pass, 4);
	assert_int_equal(t.fail, 1);
	assert_int_equal(t.skip, 1);
	assert_int_equal(t.error, 1);
	assert_int_equal(t.advisory, 1);
	assert_int_equal(t.cleanup_fail, 1);
	assert_false(sbx_report_totals_ok(&t));
	cJSON_Delete(r);

	r = one_check_report("t", "");
	cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "checks"), 0);
	cJSON_AddTrueToObject(c, "advisory");
	assert_true(sbx_report_count(r, &t, &err));
	assert_int_equal(t.advisory, 1);
	assert_true(sbx_report_totals_ok(&t));
	cJSON_ReplaceItemInObject(c, "verdict", cJSON_CreateString("surprise"));
	cJSON_ReplaceItemInObject(c, "advisory", cJSON_CreateFalse());
	assert_true(sbx_report_count(r, &t, &err));
	assert_int_equal(t.error, 1); /* an unknown verdict is an error */
	assert_false(sbx_report_totals_ok(&t));
	cJSON_Delete(r);
}

/* A run whose every check was skipped proved nothing: it is not a PASS in
 * any format, and a single judged check (even a pass) makes it a real run. */
static void all_skipped_is_nothing_checked_not_pass(void **state)
{
	(void)state;
	struct sbx_report_totals t;
	sbx_err err = {{0}};
	cJSON *r = one_check_report("skipped", "");
	cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "checks"), 0);
	cJSON_ReplaceItemInObject(c, "verdict", cJSON_CreateString("skip"));
	cJSON_ReplaceItemInObject(c, "reason", cJSON_CreateString("surface not served"));
	assert_true(sbx_report_count(r, &t, &err));
	assert_true(sbx_report_totals_ok(&t));
	assert_true(sbx_report_nothing_checked(&t));
	assert_string_equal(sbx_report_result_word(&t), "NOTHING CHECKED");
	char *human = render(r, SBX_REPORT_HUMAN, false);
	find(human, "Result: NOTHING CHECKED (every selected check was skipped: nothing was checked)\n");
	assert_null(strstr(human, "Result: PASS"));
	char *html = render(r, SBX_REPORT_HTML, false);
	find(html, "<span class=\"result none\" id=\"result\">NOTHING CHECKED</span>");
	free(html);
	free(human);

	cJSON *pass = cJSON_Duplicate(c, true);
	cJSON_ReplaceItemInObject(pass, "verdict", cJSON_CreateString("pass"));
	cJSON_AddItemToArray(cJSON_GetObjectItem(r, "checks"), pass);
	assert_true(sbx_report_count(r, &t, &err));
	assert_false(sbx_report_nothing_checked(&t));
	assert_string_equal(sbx_report_result_word(&t), "PASS");
	cJSON_Delete(r);
}

static void save_writes_the_whole_file_or_reports_why_not(void **state)
{
	(void)state;
	char dir[] = "/tmp/sbx-report-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/report.xml", dir);
	cJSON *r = load_fixture();
	sbx_err err = {{0}};
	assert_true(sbx_report_save(r, SBX_REPORT_JUNIT, path, &err));
	char *want = render(r, SBX_REPORT_JUNIT, false);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	sbx_strbuf got = SBX_STRBUF_INIT;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sbx_strbuf_append(&got, buf, n);
	fclose(f);
	assert_string_equal(sbx_strbuf_str(&got), want);
	sbx_strbuf_free(&got);
	free(want);
	unlink(path);

	char bad[300];
	snprintf(bad, sizeof(bad), "%s/missing/dir/report.html", dir);
	assert_false(sbx_report_save(r, SBX_REPORT_HTML, bad, &err));
	assert_non_null(strstr(err.msg, "missing/dir/report.html"));
	rmdir(dir);
	cJSON_Delete(r);
}

/* The line of out that starts with prefix (a copy, without the newline). */
static char *line_starting(const char *out, const char *prefix)
{
	const char *p = out;
	while (p != NULL && strncmp(p, prefix, strlen(prefix)) != 0) {
		p = strchr(p, '\n');
		p = p != NULL ? p + 1 : NULL;
	}
	if (p == NULL) {
		fprintf(stderr, "---- output searched ----\n%s\n---- end ----\n", out);
		fail_msg("no line starts with \"%s\"", prefix);
		p = ""; /* not reached: fail_msg ends the test */
	}
	const char *end = strchr(p, '\n');
	size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
	char *l = malloc(n + 1);
	assert_non_null(l);
	memcpy(l, p, n);
	l[n] = '\0';
	return l;
}

/* Unescaped | in a table row (GFM splits cells on them). */
static int cells(const char *row)
{
	return occurrences(row, "|") - 1;
}

static void markdown_has_counts_and_one_row_per_failed_check(void **state)
{
	(void)state;
	char *out = render_fixture(SBX_REPORT_MARKDOWN, false);
	assert_ptr_equal(strstr(out, "### sbx-conform: FAIL\n"), out);
	find(out, "| Result | Checks | Pass | Fail | Error | Skip | Advisory warnings | Cleanup failed | Time |\n"
		  "|:--|--:|--:|--:|--:|--:|--:|--:|--:|\n"
		  "| **FAIL** | 8 | 4 | 1 | 1 | 1 | 1 | 1 | 1.83 s |\n");
	const char *failed = find(out, "\n#### Failed checks: 3\n\n| Check | Profile | Title | Verdict | Reason | Re-run |\n");
	const char *advisory = find(out, "\n#### Advisory warnings (they do not fail the run): 1\n");
	assert_true(failed < advisory);
	/* fail, cleanup failure and error each have a row with 6 cells; passes
	 * and skips have none; the advisory check is only in its own table. */
	char *cap3 = line_starting(failed, "| **CAP-003** |");
	assert_int_equal(cells(cap3), 6);
	find(cap3, " | fail | run executed outside a guest: FAILMARK-CAP003 ");
	find(cap3, "<br>second line | <code>sbx-conform --backend-cmd 'RERUNMARK &#60;drv&#62; &#38; \"q\"' "
		   "--profile langflow-backend --filter CAP-003</code> |");
	char *cln1 = line_starting(failed, "| **CLN-001** |");
	find(cln1, " | cleanup fail | cleanup: CLEANUPMARK guest still running |");
	char *err = line_starting(failed, "| **CREATEOS-004** |");
	find(err, " | error | ERRORMARK driver exited with status 1 before answering |");
	assert_true(strstr(failed, "CLN-004") > advisory);
	free(line_starting(advisory, "| **CLN-004** |"));
	assert_null(strstr(out, "CAP-001"));
	assert_null(strstr(out, "REF-001"));
	find(out, "\nBackend fixture &#60;backend&#62; &#38; \"co\" (langflow&#95;backend.py 1), control plane "
		  "embedded-mock, profiles langflow-backend, createos-backend, seed 42, shard 1/1");
	free(err);
	free(cln1);
	free(cap3);
	free(out);
}

static void markdown_cells_escape_pipes_markup_newlines_and_control_bytes(void **state)
{
	(void)state;
	cJSON *r = one_check_report("t|i*t_l`e", "");
	cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "checks"), 0);
	cJSON_ReplaceItemInObject(c, "reason",
				  cJSON_CreateString("a|b\\|c `x` *e* _u_ [l](http://x) ~~s~~ $m$ <b>&amp;\r\n"
						     "next\x1b[31m\xff end"));
	cJSON_AddStringToObject(c, "rerun", "sbx-conform --filter 'X|Y' --backend-cmd \"a`b\"");
	char *out = render(r, SBX_REPORT_MARKDOWN, false);
	char *row = line_starting(out, "| **X-001** |");
	assert_int_equal(cells(row), 6);
	find(row, "| t&#124;i&#42;t&#95;l&#96;e |");
	find(row, "| a&#124;b&#92;&#124;c &#96;x&#96; &#42;e&#42; &#95;u&#95; &#91;l&#93;(http://x) "
		  "&#126;&#126;s&#126;&#126; &#36;m&#36; &#60;b&#62;&#38;amp;<br>next&#92;x1B&#91;31m\xEF\xBF\xBD end |");
	find(row, "<code>sbx-conform --filter 'X&#124;Y' --backend-cmd \"a&#96;b\"</code> |");
	assert_null(strchr(row, '\x1b'));
	assert_null(strchr(row, '\r'));
	free(row);
	free(out);
	/* A long reason is cut, on a character boundary, with a mark. */
	sbx_strbuf long_reason = SBX_STRBUF_INIT;
	for (int i = 0; i < 300; i++)
		sbx_strbuf_puts(&long_reason, "\xC3\xA9!");
	cJSON_ReplaceItemInObject(c, "reason", cJSON_CreateString(sbx_strbuf_str(&long_reason)));
	out = render(r, SBX_REPORT_MARKDOWN, false);
	row = line_starting(out, "| **X-001** |");
	find(row, "\xC3\xA9! \xE2\x80\xA6 |");
	assert_int_equal(occurrences(row, "\xC3\xA9"), 200);
	free(row);
	free(out);
	sbx_strbuf_free(&long_reason);
	cJSON_Delete(r);
}

static void markdown_says_pass_and_nothing_checked_without_failure_tables(void **state)
{
	(void)state;
	cJSON *r = cJSON_CreateObject();
	cJSON_AddArrayToObject(r, "checks");
	char *out = render(r, SBX_REPORT_MARKDOWN, false);
	find(out, "### sbx-conform: NOTHING CHECKED\n");
	find(out, "| **NOTHING CHECKED** | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 ms |\n");
	find(out, "\nNo checks were selected.\n");
	assert_null(strstr(out, "####"));
	free(out);
	cJSON_Delete(r);
	r = one_check_report("ok", "");
	cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "checks"), 0);
	cJSON_ReplaceItemInObject(c, "verdict", cJSON_CreateString("pass"));
	out = render(r, SBX_REPORT_MARKDOWN, false);
	find(out, "### sbx-conform: PASS\n");
	find(out, "| **PASS** | 1 | 1 | 0 | 0 | 0 | 0 | 0 |");
	assert_null(strstr(out, "####"));
	free(out);
	char *gh = render(r, SBX_REPORT_GITHUB, false);
	assert_string_equal(gh, "");
	free(gh);
	cJSON_Delete(r);
}

static void github_has_one_annotation_per_check_not_ok(void **state)
{
	(void)state;
	char *out = render_fixture(SBX_REPORT_GITHUB, false);
	assert_int_equal(occurrences(out, "\n"), 4);
	assert_int_equal(occurrences(out, "::error title="), 3);
	find(out, "::error title=CAP-003::run executed outside a guest: FAILMARK-CAP003 <b>not bold</b> & ]]> "
		  "\\x01\\x1B[31mred\\x7F caf\xC3\xA9");
	find(out, "%0Asecond line%0Are-run: sbx-conform --backend-cmd 'RERUNMARK <drv> & \"q\"' "
		  "--profile langflow-backend --filter CAP-003\n");
	find(out, "\n::error title=CLN-001::cleanup: CLEANUPMARK guest still running\n");
	find(out, "\n::error title=CREATEOS-004::ERRORMARK driver exited with status 1 before answering\n");
	find(out, "\n::warning title=CLN-004 (advisory)::ADVISORYMARK orphan sb-9 still running after 60 s\n");
	assert_null(strstr(out, "CAP-001"));
	assert_null(strchr(out, '\x1b'));
	free(out);
}

static void github_escapes_percent_newlines_and_property_separators(void **state)
{
	(void)state;
	cJSON *r = one_check_report("t", "");
	cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "checks"), 0);
	cJSON_ReplaceItemInObject(c, "id", cJSON_CreateString("X:1,2%"));
	cJSON_ReplaceItemInObject(c, "reason", cJSON_CreateString("50% a:b,c\r\n::error::forged\x07\xfe"));
	char *out = render(r, SBX_REPORT_GITHUB, false);
	assert_string_equal(out, "::error title=X%3A1%2C2%25::50%25 a:b,c%0D%0A::error::forged\\x07\xEF\xBF\xBD\n");
	free(out);
	cJSON_Delete(r);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FIXTURE.json\n", argv[0]);
		return 2;
	}
	fixture_path = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(human_groups_checks_by_profile_then_area),
		cmocka_unit_test(human_shows_reasons_cleanup_column_and_totals),
		cmocka_unit_test(human_colours_only_when_asked_and_never_from_report_text),
		cmocka_unit_test(tap_has_one_point_per_check_with_directives),
		cmocka_unit_test(tap_yaml_block_carries_reason_cleanup_and_evidence),
		cmocka_unit_test(junit_maps_verdicts_to_elements_and_counts),
		cmocka_unit_test(junit_escapes_markup_cdata_end_quotes_and_control_bytes),
		cmocka_unit_test(invalid_utf8_and_every_control_byte_stay_out_of_xml_and_html),
		cmocka_unit_test(junit_timestamp_is_utc_without_zone_or_absent),
		cmocka_unit_test(json_is_the_report_unchanged),
		cmocka_unit_test(html_escapes_everything_and_has_evidence_for_each_problem),
		cmocka_unit_test(unusable_reports_are_refused_with_a_reason),
		cmocka_unit_test(empty_run_renders_in_every_format),
		cmocka_unit_test(totals_pass_with_skips_and_advisories_only),
		cmocka_unit_test(all_skipped_is_nothing_checked_not_pass),
		cmocka_unit_test(save_writes_the_whole_file_or_reports_why_not),
		cmocka_unit_test(markdown_has_counts_and_one_row_per_failed_check),
		cmocka_unit_test(markdown_cells_escape_pipes_markup_newlines_and_control_bytes),
		cmocka_unit_test(markdown_says_pass_and_nothing_checked_without_failure_tables),
		cmocka_unit_test(github_has_one_annotation_per_check_not_ok),
		cmocka_unit_test(github_escapes_percent_newlines_and_property_separators),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

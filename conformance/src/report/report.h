/* report: turns the sbx-conform JSON report (schema v1, described with the
 * format mapping in conformance/tests/report/README.md) into the formats
 * people and CI systems read: a human summary, TAP version 13, JUnit XML,
 * pretty JSON, a single-file HTML page, a Markdown job summary and GitHub
 * Actions annotations (workflow commands).
 *
 * The writers only read the cJSON tree they are given; they never modify it,
 * never run checks, never touch the network and never decide the exit code
 * of sbx-conform. Missing or mistyped fields are rendered as absent instead
 * of failing, so a partly written report (a crashed run) still renders.
 * Every string from the report is escaped for its output format: control
 * bytes, invalid UTF-8 and markup never reach the output raw.
 *
 * Verdict rules shared by every format:
 *   - a check is "not ok" when its verdict is fail or error, or its cleanup
 *     verdict is fail;
 *   - an advisory check (advisory: true) that is not ok is reported as such
 *     but does not fail the run (TAP: # TODO, JUnit: <skipped>, human and
 *     HTML: "advisory");
 *   - an unknown verdict string is treated as error. */
#ifndef SBX_CONFORM_REPORT_H
#define SBX_CONFORM_REPORT_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "sbx/err.h"
#include "sbx/strbuf.h"

enum sbx_report_format {
	SBX_REPORT_HUMAN,
	SBX_REPORT_TAP,
	SBX_REPORT_JUNIT,
	SBX_REPORT_JSON,
	SBX_REPORT_HTML,
	SBX_REPORT_MARKDOWN, /* a job summary: counts and failed checks as tables */
	SBX_REPORT_GITHUB,   /* one ::error / ::warning line per check not ok */
};

/* Tallies over report->checks, computed from the checks themselves (the
 * report's own "summary" object is not trusted for rendering). */
struct sbx_report_totals {
	int total;
	int pass;
	int fail;          /* non-advisory fail verdicts */
	int skip;
	int error;         /* error and unknown verdicts */
	int advisory;      /* advisory checks that were not ok */
	int cleanup_fail;  /* non-advisory checks whose cleanup verdict is fail */
	double duration_ms; /* sum of the checks' duration_ms */
};

/* Each writer appends to *out (owned by the caller) and returns false with a
 * message in err when the report is unusable (not an object, "checks" not an
 * array) or memory ran out. */
bool sbx_report_human(const cJSON *report, bool color, sbx_strbuf *out, sbx_err *err);
bool sbx_report_tap(const cJSON *report, sbx_strbuf *out, sbx_err *err);
bool sbx_report_junit(const cJSON *report, sbx_strbuf *out, sbx_err *err);
bool sbx_report_json(const cJSON *report, sbx_strbuf *out, sbx_err *err);
bool sbx_report_html(const cJSON *report, sbx_strbuf *out, sbx_err *err);
bool sbx_report_markdown(const cJSON *report, sbx_strbuf *out, sbx_err *err);
bool sbx_report_github(const cJSON *report, sbx_strbuf *out, sbx_err *err);

/* Dispatches to one of the writers above; color only affects HUMAN. */
bool sbx_report_render(const cJSON *report, enum sbx_report_format fmt, bool color,
		       sbx_strbuf *out, sbx_err *err);

/* Renders and writes to path: "-" is stdout (HUMAN colours then follow
 * sbx_report_color_auto(1)); any other path is written to "path.tmp.PID"
 * and renamed over path, so a reader never sees half a report. */
bool sbx_report_save(const cJSON *report, enum sbx_report_format fmt, const char *path,
		     sbx_err *err);

/* true when fd is a terminal, NO_COLOR is unset or empty and TERM is not
 * "dumb" (https://no-color.org). */
bool sbx_report_color_auto(int fd);

/* Parses "human", "tap", "junit", "json", "html", "markdown" or "github". */
bool sbx_report_format_parse(const char *name, enum sbx_report_format *fmt);

/* Fills *t from report->checks; false when the report is unusable. */
bool sbx_report_count(const cJSON *report, struct sbx_report_totals *t, sbx_err *err);

/* true when the totals mean the run passed: no failing, erroring or
 * cleanup-failing non-advisory check. */
bool sbx_report_totals_ok(const struct sbx_report_totals *t);

/* true when no check could be judged: every check was skipped (or there were
 * none). Such a run proves nothing, so it is neither a pass nor a fail:
 * the writers say "NOTHING CHECKED" and sbx-conform exits 2. */
bool sbx_report_nothing_checked(const struct sbx_report_totals *t);

/* The one-word result of a run: "PASS", "FAIL" or "NOTHING CHECKED". */
const char *sbx_report_result_word(const struct sbx_report_totals *t);

#endif

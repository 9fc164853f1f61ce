/* report_junit: JUnit XML in the common Ant/Jenkins shape that CI systems
 * import: <testsuites>, one <testsuite> per profile, one <testcase> per
 * check with classname "profile.area" and time in seconds; <failure>,
 * <error> and <skipped> carry the reason, a cleanup failure is its own
 * <failure type="cleanup">, and the evidence goes to <system-out>.
 * Validated against conformance/tests/report/junit.xsd by the tests.
 * Every string is XML-escaped; characters XML 1.0 cannot carry (control
 * bytes, invalid UTF-8) appear as visible \xNN text, never raw. */
#include "report.h"
#include "report_priv.h"

#include <stdio.h>
#include <string.h>

enum tc_status { TC_PASS, TC_FAILURE, TC_ERROR, TC_SKIPPED };

struct suite_counts {
	int tests;
	int failures;
	int errors;
	int skipped;
	double ms;
};

static enum tc_status status_of(const struct rp_check *c)
{
	if (c->advisory && c->not_ok)
		return TC_SKIPPED;
	if (c->verdict == RP_ERROR)
		return TC_ERROR;
	if (c->verdict == RP_FAIL || c->cleanup_failed)
		return TC_FAILURE;
	if (c->verdict == RP_SKIP)
		return TC_SKIPPED;
	return TC_PASS;
}

static void count(struct suite_counts *s, const struct rp_check *c)
{
	s->tests++;
	s->ms += c->duration_ms;
	switch (status_of(c)) {
	case TC_FAILURE:
		s->failures++;
		break;
	case TC_ERROR:
		s->errors++;
		break;
	case TC_SKIPPED:
		s->skipped++;
		break;
	case TC_PASS:
		break;
	}
}

static void attr(sbx_strbuf *sb, const char *name, const char *value)
{
	sbx_strbuf_printf(sb, " %s=\"", name);
	rp_put_markup(sb, value, true);
	sbx_strbuf_puts(sb, "\"");
}

static void counts_attrs(sbx_strbuf *sb, const struct suite_counts *s)
{
	sbx_strbuf_printf(sb, " tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\"",
			  s->tests, s->failures, s->errors, s->skipped, s->ms / 1000.0);
}

static bool take_digits(const char **p, int n, int *value)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		char ch = (*p)[i];
		if (ch < '0' || ch > '9')
			return false;
		v = v * 10 + (ch - '0');
	}
	*p += n;
	*value = v;
	return true;
}

static bool take_char(const char **p, char ch)
{
	if (**p != ch)
		return false;
	(*p)++;
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static long days_from_civil(long y, long m, long d)
{
	y -= m <= 2;
	long era = (y >= 0 ? y : y - 399) / 400;
	long yoe = y - era * 400;
	long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(long z, long *y, long *m, long *d)
{
	z += 719468;
	long era = (z >= 0 ? z : z - 146096) / 146097;
	long doe = z - era * 146097;
	long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	long mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp + (mp < 10 ? 3 : -9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* RFC 3339 ("2024-05-01T12:00:00.5+02:00") to the JUnit timestamp form
 * ("2024-05-01T10:00:00", UTC, no zone). false when it does not parse. */
static bool junit_timestamp(const char *rfc3339, char out[32])
{
	const char *p = rfc3339;
	int y, mo, d, h, mi, s, oh = 0, om = 0, sign = 0;

	if (!take_digits(&p, 4, &y) || !take_char(&p, '-') || !take_digits(&p, 2, &mo) ||
	    !take_char(&p, '-') || !take_digits(&p, 2, &d))
		return false;
	if (!take_char(&p, 'T') && !take_char(&p, 't') && !take_char(&p, ' '))
		return false;
	if (!take_digits(&p, 2, &h) || !take_char(&p, ':') || !take_digits(&p, 2, &mi) ||
	    !take_char(&p, ':') || !take_digits(&p, 2, &s))
		return false;
	if (take_char(&p, '.'))
		while (*p >= '0' && *p <= '9')
			p++;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '+' ? 1 : -1;
		p++;
		if (!take_digits(&p, 2, &oh) || !take_char(&p, ':') || !take_digits(&p, 2, &om))
			return false;
	} else {
		return false;
	}
	if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
		return false;
	long secs = days_from_civil(y, mo, d) * 86400L + h * 3600L + mi * 60L + (s == 60 ? 59 : s);
	secs -= sign * (oh * 3600L + om * 60L);
	long days = secs / 86400 - (secs % 86400 < 0);
	long rem = secs - days * 86400;
	long cy, cm, cd;
	civil_from_days(days, &cy, &cm, &cd);
	if (cy < 0 || cy > 9999)
		return false;
	snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d", (int)cy, (int)(cm % 100),
		 (int)(cd % 100), (int)(rem / 3600 % 100), (int)(rem / 60 % 60), (int)(rem % 60));
	return true;
}

static void property(sbx_strbuf *sb, const char *name, const char *value)
{
	sbx_strbuf_puts(sb, "      <property");
	attr(sb, "name", name);
	attr(sb, "value", value);
	sbx_strbuf_puts(sb, "/>\n");
}

static void properties(sbx_strbuf *sb, const cJSON *r)
{
	const cJSON *backend = cJSON_GetObjectItemCaseSensitive(r, "backend");
	const cJSON *cp = cJSON_GetObjectItemCaseSensitive(r, "control_plane");
	char num[64];

	sbx_strbuf_puts(sb, "    <properties>\n");
	property(sb, "sbx-conform.version", rp_str(r, "version"));
	property(sb, "backend.name", rp_str(backend, "name"));
	property(sb, "backend.driver", rp_str(backend, "driver"));
	property(sb, "backend.command", rp_str(backend, "command"));
	property(sb, "control_plane.kind", rp_str(cp, "kind"));
	property(sb, "control_plane.url", rp_str(cp, "url"));
	snprintf(num, sizeof(num), "%.0f", rp_num(r, "seed", 0));
	property(sb, "seed", num);
	snprintf(num, sizeof(num), "%g", rp_num(r, "timeout_scale", 1));
	property(sb, "timeout_scale", num);
	property(sb, "started_at", rp_str(r, "started_at"));
	sbx_strbuf_puts(sb, "    </properties>\n");
}

/* The evidence as readable text, for <system-out>. */
static void evidence_text(sbx_strbuf *sb, const struct rp_check *c)
{
	const cJSON *e;

	sbx_strbuf_puts(sb, "clause: ");
	rp_put_markup(sb, c->clause, false);
	sbx_strbuf_puts(sb, "\nverdict: ");
	rp_put_markup(sb, c->verdict_text, false);
	sbx_strbuf_puts(sb, "\nreason: ");
	rp_put_markup(sb, c->reason, false);
	sbx_strbuf_puts(sb, "\ncleanup: ");
	rp_put_markup(sb, c->cleanup_verdict, false);
	if (c->cleanup_reason[0] != '\0') {
		sbx_strbuf_puts(sb, ": ");
		rp_put_markup(sb, c->cleanup_reason, false);
	}
	cJSON_ArrayForEach(e, c->leftover) {
		sbx_strbuf_puts(sb, "\nleftover: ");
		rp_put_markup(sb, cJSON_IsString(e) ? e->valuestring : "", false);
	}
	if (cJSON_GetArraySize(c->journal) > 0)
		sbx_strbuf_puts(sb, "\njournal:");
	cJSON_ArrayForEach(e, c->journal) {
		const char *fault = rp_str_or_null(e, "fault");
		sbx_strbuf_printf(sb, "\n  #%.0f ", rp_num(e, "seq", 0));
		if (rp_str(e, "by")[0] != '\0') {
			rp_put_markup(sb, rp_str(e, "by"), false);
			sbx_strbuf_puts(sb, ": ");
		}
		rp_put_markup(sb, rp_str(e, "method"), false);
		sbx_strbuf_puts(sb, " ");
		rp_put_markup(sb, rp_str(e, "path"), false);
		sbx_strbuf_printf(sb, " -> %.0f", rp_num(e, "status", 0));
		if (fault != NULL) {
			sbx_strbuf_puts(sb, " [fault: ");
			rp_put_markup(sb, fault, false);
			sbx_strbuf_puts(sb, "]");
		}
	}
	if (c->driver_stderr[0] != '\0') {
		sbx_strbuf_puts(sb, "\ndriver stderr:\n");
		rp_put_markup(sb, c->driver_stderr, false);
	}
	cJSON_ArrayForEach(e, c->details) {
		sbx_strbuf_puts(sb, "\ndetail: ");
		rp_put_markup(sb, cJSON_IsString(e) ? e->valuestring : "", false);
	}
}

static void message_element(sbx_strbuf *sb, const char *tag, const char *type,
			    const char *prefix, const char *message)
{
	sbx_strbuf_printf(sb, "      <%s", tag);
	sbx_strbuf_puts(sb, " message=\"");
	rp_put_markup(sb, prefix, true);
	rp_put_markup(sb, message[0] != '\0' ? message : "(no reason given)", true);
	sbx_strbuf_puts(sb, "\"");
	if (type != NULL)
		attr(sb, "type", type);
	sbx_strbuf_puts(sb, ">");
	rp_put_markup(sb, message, false);
	sbx_strbuf_printf(sb, "</%s>\n", tag);
}

static void testcase(sbx_strbuf *sb, const struct rp_check *c)
{
	enum tc_status st = status_of(c);
	char secs[64];

	snprintf(secs, sizeof(secs), "%.3f", c->duration_ms / 1000.0);
	sbx_strbuf_puts(sb, "    <testcase");
	sbx_strbuf_puts(sb, " name=\"");
	rp_put_markup(sb, c->id, true);
	sbx_strbuf_puts(sb, ": ");
	rp_put_markup(sb, c->title, true);
	sbx_strbuf_puts(sb, "\" classname=\"");
	rp_put_markup(sb, c->profile, true);
	sbx_strbuf_puts(sb, ".");
	rp_put_markup(sb, c->area, true);
	sbx_strbuf_printf(sb, "\" time=\"%s\"", secs);
	if (st == TC_PASS) {
		sbx_strbuf_puts(sb, "/>\n");
		return;
	}
	sbx_strbuf_puts(sb, ">\n");
	if (st == TC_SKIPPED && c->not_ok)
		message_element(sb, "skipped", NULL, "advisory check did not pass (does not fail the run): ",
				c->verdict == RP_PASS ? c->cleanup_reason : c->reason);
	else if (st == TC_SKIPPED)
		message_element(sb, "skipped", NULL, "", c->reason);
	if (st == TC_ERROR)
		message_element(sb, "error", "harness-error", "", c->reason);
	if (st != TC_SKIPPED && c->verdict == RP_FAIL)
		message_element(sb, "failure", "check-failed", "", c->reason);
	if (st != TC_SKIPPED && c->cleanup_failed)
		message_element(sb, "failure", "cleanup-failed", "cleanup: ", c->cleanup_reason);
	sbx_strbuf_puts(sb, "      <system-out>");
	evidence_text(sb, c);
	sbx_strbuf_puts(sb, "</system-out>\n    </testcase>\n");
}

static void suite(sbx_strbuf *sb, const struct rp_view *v, size_t g0, size_t g1, int index,
		  const char *timestamp)
{
	struct suite_counts s = {0};

	for (size_t g = g0; g < g1; g++)
		for (size_t k = 0; k < v->groups[g].count; k++)
			count(&s, &v->checks[v->order[v->groups[g].first + k]]);
	sbx_strbuf_puts(sb, "  <testsuite");
	attr(sb, "name", v->groups[g0].profile);
	counts_attrs(sb, &s);
	sbx_strbuf_printf(sb, " id=\"%d\" package=\"sbx-conform\"", index);
	if (timestamp != NULL)
		sbx_strbuf_printf(sb, " timestamp=\"%s\"", timestamp);
	sbx_strbuf_puts(sb, ">\n");
	properties(sb, v->report);
	for (size_t g = g0; g < g1; g++)
		for (size_t k = 0; k < v->groups[g].count; k++)
			testcase(sb, &v->checks[v->order[v->groups[g].first + k]]);
	sbx_strbuf_puts(sb, "  </testsuite>\n");
}

bool sbx_report_junit(const cJSON *report, sbx_strbuf *out, sbx_err *err)
{
	struct rp_view v;
	struct suite_counts all = {0};
	char ts[32];
	const char *timestamp = NULL;
	int index = 0;

	if (!rp_view_init(&v, report, err))
		return false;
	if (junit_timestamp(rp_str(report, "started_at"), ts))
		timestamp = ts;
	for (size_t i = 0; i < v.n; i++)
		count(&all, &v.checks[i]);
	sbx_strbuf_puts(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"sbx-conform\"");
	counts_attrs(out, &all);
	sbx_strbuf_puts(out, ">\n");
	for (size_t g0 = 0; g0 < v.ngroups;) {
		size_t g1 = g0 + 1;
		while (g1 < v.ngroups && strcmp(v.groups[g1].profile, v.groups[g0].profile) == 0)
			g1++;
		suite(out, &v, g0, g1, index++, timestamp);
		g0 = g1;
	}
	sbx_strbuf_puts(out, "</testsuites>\n");
	rp_view_free(&v);
	if (out->oom) {
		sbx_err_set(err, "report: out of memory");
		return false;
	}
	return true;
}

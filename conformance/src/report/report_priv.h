/* report_priv: what the report writers (report_*.c) share: a flat view of
 * one check, grouping by profile and area (report_view.c), and escaping for
 * each output syntax (report_escape.c). Internal to the library; never
 * included outside conformance/src/report/ and its tests. */
#ifndef SBX_CONFORM_REPORT_PRIV_H
#define SBX_CONFORM_REPORT_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "report.h"
#include "sbx/strbuf.h"

enum rp_verdict { RP_PASS, RP_FAIL, RP_SKIP, RP_ERROR };

/* A borrowed, flattened view of one entry of report->checks. Strings point
 * into the cJSON tree (never NULL: absent strings are ""). */
struct rp_check {
	const cJSON *json;
	const char *id;
	const char *profile;
	const char *area;
	const char *title;
	const char *clause;
	const char *clause_text;    /* the spec row's text, "" when absent */
	const char *rerun;          /* command that re-runs this check alone, "" when absent */
	const char *verdict_text;   /* as written in the report */
	enum rp_verdict verdict;
	const char *reason;
	bool advisory;
	const char *cleanup_verdict; /* "" when absent */
	const char *cleanup_reason;
	const cJSON *leftover;       /* array or NULL */
	double duration_ms;          /* 0 when absent */
	const cJSON *journal;        /* array or NULL */
	const char *driver_stderr;
	const cJSON *details;        /* array or NULL */
	bool cleanup_failed;         /* cleanup verdict is "fail" */
	bool not_ok;                 /* fail, error or cleanup failed */
};

/* Checks grouped by profile, then area, each in first-seen order (profiles
 * listed in report->profiles come first, in that order). Owns its arrays;
 * the rp_check entries borrow from the report. */
struct rp_group {
	const char *profile;
	const char *area;
	size_t first;  /* index into rp_view.order */
	size_t count;
};

struct rp_view {
	const cJSON *report;
	struct rp_check *checks; /* in report order */
	size_t n;
	size_t *order;           /* check indexes, grouped */
	struct rp_group *groups; /* one per (profile, area) */
	size_t ngroups;
	struct sbx_report_totals totals;
};

/* ---- report_view.c ---- */
bool rp_view_init(struct rp_view *v, const cJSON *report, sbx_err *err);
void rp_view_free(struct rp_view *v);

/* Field access that tolerates absence and wrong types. */
const char *rp_str(const cJSON *obj, const char *key);       /* "" when absent */
const char *rp_str_or_null(const cJSON *obj, const char *key);
double rp_num(const cJSON *obj, const char *key, double dflt);
const char *rp_verdict_name(enum rp_verdict v);

/* ---- report_escape.c ---- */
/* Decodes one UTF-8 sequence from s[0..n): returns its length (>= 1) and the
 * code point, or length 1 and U+FFFD for an invalid or overlong byte. */
size_t rp_utf8_next(const unsigned char *s, size_t n, uint32_t *cp);
void rp_put_cp(sbx_strbuf *sb, uint32_t cp);

/* XML/HTML text or attribute value: escapes & < > " ', keeps tab, newline and
 * CR (as character references inside attributes), and writes any character
 * XML 1.0 cannot carry as the visible text "\xNN" / "\uNNNN". */
void rp_put_markup(sbx_strbuf *sb, const char *s, bool attr);
/* A YAML 1.2 double-quoted scalar, quotes included. */
void rp_put_yaml(sbx_strbuf *sb, const char *s);
/* Terminal-safe text: control characters shown as \xNN / \uNNNN; each
 * newline becomes a newline followed by indent. */
void rp_put_term(sbx_strbuf *sb, const char *s, const char *indent);
/* One line of Markdown table-cell text (GitHub Flavored Markdown and
 * Python-Markdown's tables read it alike): every Markdown-significant ASCII
 * character (| \ ` * _ [ ] ~ $ < > & ...) as a numeric character reference,
 * newlines as <br>, other control characters as the visible text "\xNN";
 * at most max_cps characters (0: no limit), then " ..." (U+2026). Returns
 * true when it cut the text. */
bool rp_put_md(sbx_strbuf *sb, const char *s, size_t max_cps);
/* A GitHub workflow-command value (::error title=P::M): % CR LF as %25 %0D
 * %0A, and in a property (title=...) also : and , as %3A %2C; other control
 * characters as the visible text "\xNN". */
void rp_put_gha(sbx_strbuf *sb, const char *s, bool property);
/* A duration in ms as "12 ms" / "1.25 s". */
void rp_put_duration(sbx_strbuf *sb, double ms);

#endif

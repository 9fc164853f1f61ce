/* report: the shared core of the report writers (see report.h): a grouped,
 * flattened view of the checks, totals, escaping helpers, the JSON writer,
 * format dispatch and atomic saving. It never alters the report tree. */
#include "report.h"
#include "report_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

size_t rp_utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char b = s[0];
	size_t len;
	uint32_t c;
	uint32_t min;

	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	if (b >= 0xC2 && b <= 0xDF) {
		len = 2;
		c = b & 0x1F;
		min = 0x80;
	} else if (b >= 0xE0 && b <= 0xEF) {
		len = 3;
		c = b & 0x0F;
		min = 0x800;
	} else if (b >= 0xF0 && b <= 0xF4) {
		len = 4;
		c = b & 0x07;
		min = 0x10000;
	} else {
		goto out_invalid;
	}
	if (len > n)
		goto out_invalid;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			goto out_invalid;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		goto out_invalid;
	*cp = c;
	return len;
out_invalid:
	*cp = 0xFFFD;
	return 1;
}

void rp_put_cp(sbx_strbuf *sb, uint32_t cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xE0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		b[0] = (char)(0xF0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	sbx_strbuf_append(sb, b, n);
}

/* The visible stand-in for a character an output syntax cannot carry. */
static void put_visible_escape(sbx_strbuf *sb, uint32_t cp)
{
	if (cp < 0x100)
		sbx_strbuf_printf(sb, "\\x%02X", (unsigned)cp);
	else
		sbx_strbuf_printf(sb, "\\u%04X", (unsigned)cp);
}

static bool xml_char_ok(uint32_t cp)
{
	if (cp == 0x9 || cp == 0xA || cp == 0xD)
		return true;
	if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) /* C1 is legal but discouraged */
		return false;
	return cp <= 0xD7FF || (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

void rp_put_markup(sbx_strbuf *sb, const char *s, bool attr)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n > 0) {
		uint32_t cp;
		size_t len = rp_utf8_next(p, n, &cp);
		p += len;
		n -= len;
		if (!xml_char_ok(cp)) {
			put_visible_escape(sb, cp);
			continue;
		}
		switch (cp) {
		case '&':
			sbx_strbuf_puts(sb, "&amp;");
			break;
		case '<':
			sbx_strbuf_puts(sb, "&lt;");
			break;
		case '>':
			sbx_strbuf_puts(sb, "&gt;");
			break;
		case '"':
			sbx_strbuf_puts(sb, "&quot;");
			break;
		case '\'':
			sbx_strbuf_puts(sb, "&#39;");
			break;
		case '\t':
		case '\n':
		case '\r':
			if (attr)
				sbx_strbuf_printf(sb, "&#%u;", (unsigned)cp);
			else if (cp == '\r')
				sbx_strbuf_puts(sb, "&#13;"); /* a raw CR would be normalised away */
			else
				rp_put_cp(sb, cp);
			break;
		default:
			rp_put_cp(sb, cp);
			break;
		}
	}
}

/* YAML 1.2 printable set; everything else is escaped in double quotes. */
static bool yaml_printable(uint32_t cp)
{
	if (cp == 0x9 || (cp >= 0x20 && cp <= 0x7E) || cp == 0x85)
		return true;
	return (cp >= 0xA0 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
	       (cp >= 0x10000 && cp <= 0x10FFFF);
}

void rp_put_yaml(sbx_strbuf *sb, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	sbx_strbuf_puts(sb, "\"");
	while (n > 0) {
		uint32_t cp;
		size_t len = rp_utf8_next(p, n, &cp);
		p += len;
		n -= len;
		if (cp == '"')
			sbx_strbuf_puts(sb, "\\\"");
		else if (cp == '\\')
			sbx_strbuf_puts(sb, "\\\\");
		else if (cp == '\n')
			sbx_strbuf_puts(sb, "\\n");
		else if (cp == '\t')
			sbx_strbuf_puts(sb, "\\t");
		else if (cp == '\r')
			sbx_strbuf_puts(sb, "\\r");
		else if (cp == 0x85 || !yaml_printable(cp))
			put_visible_escape(sb, cp); /* \xNN and \uNNNN are YAML escapes */
		else
			rp_put_cp(sb, cp);
	}
	sbx_strbuf_puts(sb, "\"");
}

void rp_put_term(sbx_strbuf *sb, const char *s, const char *indent)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n > 0) {
		uint32_t cp;
		size_t len = rp_utf8_next(p, n, &cp);
		p += len;
		n -= len;
		if (cp == '\n') {
			sbx_strbuf_puts(sb, "\n");
			sbx_strbuf_puts(sb, indent);
		} else if (cp == '\t') {
			sbx_strbuf_puts(sb, "    ");
		} else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
			put_visible_escape(sb, cp);
		} else {
			rp_put_cp(sb, cp);
		}
	}
}

void rp_put_duration(sbx_strbuf *sb, double ms)
{
	if (ms < 1000)
		sbx_strbuf_printf(sb, "%.0f ms", ms);
	else
		sbx_strbuf_printf(sb, "%.2f s", ms / 1000.0);
}

bool sbx_report_json(const cJSON *report, sbx_strbuf *out, sbx_err *err)
{
	if (!cJSON_IsObject(report)) {
		sbx_err_set(err, "report: the report is not a JSON object");
		return false;
	}
	char *text = cJSON_Print(report);
	if (text == NULL) {
		sbx_err_set(err, "report: out of memory while printing JSON");
		return false;
	}
	sbx_strbuf_puts(out, text);
	sbx_strbuf_puts(out, "\n");
	free(text);
	if (out->oom) {
		sbx_err_set(err, "report: out of memory");
		return false;
	}
	return true;
}

bool sbx_report_render(const cJSON *report, enum sbx_report_format fmt, bool color,
		       sbx_strbuf *out, sbx_err *err)
{
	switch (fmt) {
	case SBX_REPORT_HUMAN:
		return sbx_report_human(report, color, out, err);
	case SBX_REPORT_TAP:
		return sbx_report_tap(report, out, err);
	case SBX_REPORT_JUNIT:
		return sbx_report_junit(report, out, err);
	case SBX_REPORT_JSON:
		return sbx_report_json(report, out, err);
	case SBX_REPORT_HTML:
		return sbx_report_html(report, out, err);
	}
	sbx_err_set(err, "report: unknown format %d", (int)fmt);
	return false;
}

bool sbx_report_format_parse(const char *name, enum sbx_report_format *fmt)
{
	static const struct {
		const char *name;
		enum sbx_report_format fmt;
	} names[] = {
		{"human", SBX_REPORT_HUMAN}, {"tap", SBX_REPORT_TAP}, {"junit", SBX_REPORT_JUNIT},
		{"json", SBX_REPORT_JSON},   {"html", SBX_REPORT_HTML},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(name, names[i].name) == 0) {
			*fmt = names[i].fmt;
			return true;
		}
	}
	return false;
}

bool sbx_report_color_auto(int fd)
{
	const char *no_color = getenv("NO_COLOR");
	const char *term = getenv("TERM");
	if (no_color != NULL && no_color[0] != '\0')
		return false;
	if (term != NULL && strcmp(term, "dumb") == 0)
		return false;
	return isatty(fd) == 1;
}

static bool write_all(FILE *f, const sbx_strbuf *sb)
{
	if (sb->len == 0)
		return true;
	return fwrite(sb->data, 1, sb->len, f) == sb->len;
}

static bool save_to_path(const sbx_strbuf *sb, const char *path, sbx_err *err)
{
	char tmp[4096];
	int n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		sbx_err_set(err, "report: path too long: %s", path);
		return false;
	}
	FILE *f = fopen(tmp, "wb");
	if (f == NULL) {
		sbx_err_set(err, "report: cannot create %s: %s", tmp, strerror(errno));
		return false;
	}
	bool written = write_all(f, sb);
	int saved = errno;
	if (fclose(f) != 0 && written) {
		written = false;
		saved = errno;
	}
	if (!written) {
		sbx_err_set(err, "report: cannot write %s: %s", tmp, strerror(saved));
		goto out_unlink;
	}
	if (rename(tmp, path) != 0) {
		sbx_err_set(err, "report: cannot rename %s to %s: %s", tmp, path, strerror(errno));
		goto out_unlink;
	}
	return true;
out_unlink:
	unlink(tmp);
	return false;
}

bool sbx_report_save(const cJSON *report, enum sbx_report_format fmt, const char *path,
		     sbx_err *err)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;
	bool to_stdout = strcmp(path, "-") == 0;
	bool ok = false;

	if (!sbx_report_render(report, fmt, to_stdout && sbx_report_color_auto(1), &sb, err))
		goto out_free;
	if (to_stdout) {
		if (!write_all(stdout, &sb) || fflush(stdout) != 0) {
			sbx_err_set(err, "report: cannot write to stdout: %s", strerror(errno));
			goto out_free;
		}
	} else if (!save_to_path(&sb, path, err)) {
		goto out_free;
	}
	ok = true;
out_free:
	sbx_strbuf_free(&sb);
	return ok;
}

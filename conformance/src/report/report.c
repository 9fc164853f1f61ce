/* report: the library's front door (see report.h): format names, the
 * dispatch to one writer per format (report_human/tap/junit/json/html/
 * markdown/github.c),
 * colour detection and atomic saving.
 *
 * Writers depend on report_view.c and report_escape.c, never on this file;
 * it never alters the report tree and never decides sbx-conform's exit code. */
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	case SBX_REPORT_MARKDOWN:
		return sbx_report_markdown(report, out, err);
	case SBX_REPORT_GITHUB:
		return sbx_report_github(report, out, err);
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
		{"markdown", SBX_REPORT_MARKDOWN}, {"github", SBX_REPORT_GITHUB},
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

/* report_render: test helper that renders a JSON report file in one format.
 * Usage: conform_report_render FORMAT IN.json OUT|-
 * Exit 0 on success, 2 on usage, read, parse or render errors. Used by the
 * JUnit schema and headless-Chromium tests; never part of sbx-conform. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report.h"
#include "sbx/strbuf.h"

static bool read_file(const char *path, sbx_strbuf *sb)
{
	char buf[8192];
	size_t n;
	FILE *f = fopen(path, "rb");

	if (f == NULL)
		return false;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sbx_strbuf_append(sb, buf, n);
	bool ok = !ferror(f) && !sb->oom;
	fclose(f);
	return ok;
}

int main(int argc, char **argv)
{
	enum sbx_report_format fmt;
	sbx_strbuf in = SBX_STRBUF_INIT;
	sbx_err err = {{0}};
	cJSON *report = NULL;
	int rc = 2;

	if (argc != 4 || !sbx_report_format_parse(argv[1], &fmt)) {
		fprintf(stderr, "usage: %s human|tap|junit|json|html|markdown|github IN.json OUT|-\n", argv[0]);
		return 2;
	}
	if (!read_file(argv[2], &in)) {
		fprintf(stderr, "report_render: cannot read %s\n", argv[2]);
		goto out_free_in;
	}
	report = cJSON_ParseWithLength(sbx_strbuf_str(&in), in.len);
	if (report == NULL) {
		fprintf(stderr, "report_render: %s is not JSON\n", argv[2]);
		goto out_free_in;
	}
	if (!sbx_report_save(report, fmt, argv[3], &err)) {
		fprintf(stderr, "report_render: %s\n", err.msg);
		goto out_free_report;
	}
	rc = 0;
out_free_report:
	cJSON_Delete(report);
out_free_in:
	sbx_strbuf_free(&in);
	return rc;
}

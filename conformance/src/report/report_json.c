/* report_json: the JSON writer (the report tree itself, pretty-printed).
 * Never alters the tree. */
#include "report.h"

#include <stdlib.h>

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

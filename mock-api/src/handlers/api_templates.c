/* api_templates: a tenant's templates (list, create, get, delete) and a
 * template's build log, plain or NDJSON (?follow=true).
 *
 * Never take the model lock here (ops.h); the build progresses on the
 * virtual clock inside mock_template_view. */
#define _GNU_SOURCE
#include "handlers/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void api_templates_list(mreq *r, mresp *out, mock_tenant *t)
{
	api_coll_list(r, out, t, MOCK_TEMPLATES);
}

void api_templates_create(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	mock_err e;
	cJSON *v;

	if (b == NULL)
		return;
	v = mock_op_coll_create(r->mock, t, MOCK_TEMPLATES, b, &e);
	if (v == NULL)
		resp_mock_err(out, &e);
	else
		resp_success(out, 200, v);
}

/* The dockerfile only with ?include=dockerfile. */
void api_templates_get(mreq *r, mresp *out, mock_tenant *t)
{
	const char *inc = req_query(r, "include");
	cJSON *v = api_coll_get(r, out, t, MOCK_TEMPLATES, "template");

	if (v == NULL)
		return;
	if (inc == NULL || strcmp(inc, "dockerfile") != 0)
		cJSON_DeleteItemFromObjectCaseSensitive(v, "dockerfile");
	resp_success(out, 200, v);
}

void api_templates_delete(mreq *r, mresp *out, mock_tenant *t)
{
	api_coll_delete(r, out, t, MOCK_TEMPLATES, "template", "ok");
}

/* The build's log so far: more lines the further the build is. */
void api_templates_logs(mreq *r, mresp *out, mock_tenant *t)
{
	static const char *const lines[] = {
		"queued build", "pulling base image", "running dockerfile steps",
		"exporting rootfs to ext4", "build finished",
	};
	const char *follow = req_query(r, "follow");
	const char *attempt = req_query(r, "attempt");
	bool nd = follow != NULL && strcmp(follow, "true") == 0;
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char status[16] = "";
	cJSON *v = api_coll_get(r, out, t, MOCK_TEMPLATES, "template");
	size_t shown;

	if (v == NULL)
		return;
	snprintf(status, sizeof(status), "%s", cJSON_GetObjectItem(v, "status")->valuestring);
	cJSON_Delete(v);
	/* the mock builds every template once: attempt 1 is the only one */
	if (attempt != NULL) {
		char *end = NULL;
		long n = strtol(attempt, &end, 10);

		if (attempt[0] == '\0' || end == NULL || *end != '\0' || n < 1) {
			resp_fail(out, 400, "attempt", "INVALID_REQUEST",
				  "attempt must be a positive integer");
			return;
		}
		if (n != 1) {
			resp_fail(out, 404, "error", "NOT_FOUND", "no such build attempt");
			return;
		}
	}
	shown = strcmp(status, "ready") == 0 ? 5 : (strcmp(status, "building") == 0 ? 3 : 1);
	for (size_t i = 0; i < shown; i++) {
		if (nd) {
			sbx_strbuf_puts(&sb, "{\"level\":\"info\",\"attempt\":1,\"line\":");
			json_escape(&sb, lines[i], strlen(lines[i]));
			sbx_strbuf_puts(&sb, "}\n");
		} else {
			sbx_strbuf_printf(&sb, "%s\n", lines[i]);
		}
	}
	if (nd)
		sbx_strbuf_printf(&sb, "{\"final\":true,\"status\":\"%s\"}\n", status);
	{
		size_t len = 0;
		char *body = sbx_strbuf_detach(&sb, &len);

		resp_raw(out, 200, nd ? "application/x-ndjson" : "text/plain; charset=utf-8",
			 body != NULL ? body : strdup(""), len);
	}
}


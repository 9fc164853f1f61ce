/* api_templates: a tenant's templates (list, create, get, delete) and a
 * template's build log, plain or NDJSON (?follow=true).
 *
 * Never take the model lock here (ops.h); the build runs in the
 * operations layer (build/template_build.c), on a thread of its own. */
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

/* The build's log: the lines the build wrote so far as text, or with
 * ?follow=true NDJSON events streamed as the build writes them, ending
 * with {"final":true,"status"} (TEMPLATES.md). */
void api_templates_logs(mreq *r, mresp *out, mock_tenant *t)
{
	const char *follow = req_query(r, "follow");
	const char *attempt = req_query(r, "attempt");
	bool nd = follow != NULL && strcmp(follow, "true") == 0;
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char id[128];
	cJSON *v = api_coll_get(r, out, t, MOCK_TEMPLATES, "template");

	if (v == NULL)
		return;
	snprintf(id, sizeof(id), "%s", cJSON_GetObjectItem(v, "id")->valuestring);
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
	if (nd) {
		mock_op_stream *s = mock_op_template_follow(r->mock, t, id);

		if (s == NULL)
			resp_error(out, 500, "out of memory");
		else
			api_stream_answer(r, out, s);
		return;
	}
	if (mock_op_template_log(r->mock, t, id, &sb) != 0) {
		sbx_strbuf_free(&sb);
		resp_fail(out, 404, "error", "NOT_FOUND", "template not found");
		return;
	}
	{
		size_t len = 0;
		char *body = sbx_strbuf_detach(&sb, &len);

		resp_raw(out, 200, "text/plain; charset=utf-8", body != NULL ? body : strdup(""), len);
	}
}

/* api_templates: a tenant's templates (list, create, get, delete) and a
 * template's build log, plain or NDJSON (?follow=true): each parses,
 * calls one template operation (templates/templates.h) and answers.
 *
 * Never take the model lock here (ops.h); the build runs in
 * templates/template_build.c, on a thread of its own. */
#define _GNU_SOURCE
#include "handlers/api.h"
#include "templates/templates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void api_templates_list(mreq *r, mresp *out, mock_tenant *t)
{
	api_resp_page(r, out, mock_op_template_list(r->mock, t));
}

void api_templates_create(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	mock_err e;
	cJSON *v;

	if (b == NULL)
		return;
	v = mock_op_template_create(r->mock, t, b, &e);
	if (v == NULL)
		resp_mock_err(out, &e);
	else
		resp_success(out, 200, v);
}

/* The dockerfile only with ?include=dockerfile. */
void api_templates_get(mreq *r, mresp *out, mock_tenant *t)
{
	const char *inc = req_query(r, "include");
	char id[128];
	cJSON *v = NULL;

	if (req_seg(r, 2, id, sizeof(id)))
		v = mock_op_template_get(r->mock, t, id, inc != NULL && strcmp(inc, "dockerfile") == 0);
	if (v == NULL)
		resp_fail(out, 404, "error", "NOT_FOUND", "template not found");
	else
		resp_success(out, 200, v);
}

void api_templates_delete(mreq *r, mresp *out, mock_tenant *t)
{
	char id[128];
	mock_err e;

	mock_err_set(&e, 404, "NOT_FOUND", "error", "template not found");
	if (!req_seg(r, 2, id, sizeof(id)) || mock_op_template_delete(r->mock, t, id, &e) != 0)
		resp_mock_err(out, &e);
	else
		api_ok(out, "ok");
}

/* ?attempt=: 0 when not given, -1 when it is no positive integer. */
static long attempt_of(const mreq *r)
{
	const char *attempt = req_query(r, "attempt");
	char *end = NULL;
	long n;

	if (attempt == NULL)
		return 0;
	n = strtol(attempt, &end, 10);
	return attempt[0] == '\0' || end == NULL || *end != '\0' || n < 1 ? -1 : n;
}

/* The build's log: the lines the build wrote so far as text, or with
 * ?follow=true NDJSON events streamed as the build writes them, ending
 * with {"final":true,"status"} (TEMPLATES.md). */
void api_templates_logs(mreq *r, mresp *out, mock_tenant *t)
{
	const char *follow = req_query(r, "follow");
	mock_tpl_logs q = {.attempt = attempt_of(r), .follow = follow != NULL && strcmp(follow, "true") == 0,
			   .text = SBX_STRBUF_INIT};
	char id[128];
	mock_err e;
	size_t len = 0;
	char *body;

	mock_err_set(&e, 404, "NOT_FOUND", "error", "template not found");
	if (!req_seg(r, 2, id, sizeof(id)) || mock_op_template_logs(r->mock, t, id, &q, &e) != 0) {
		resp_mock_err(out, &e);
	} else if (q.follow) {
		if (q.stream == NULL)
			resp_error(out, 500, "out of memory");
		else
			api_stream_answer(r, out, q.stream);
	} else {
		body = sbx_strbuf_detach(&q.text, &len);
		resp_raw(out, 200, "text/plain; charset=utf-8", body != NULL ? body : strdup(""), len);
	}
}

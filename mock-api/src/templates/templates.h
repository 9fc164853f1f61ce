/* templates: a tenant's templates as operations (TEMPLATES.md): create
 * (which starts the build), get, list, delete and the build's log; and
 * the builds' life beside the mock's (cancel at a reset, stop, free, the
 * check after a durable replay, a sandbox's seed from a layer).
 *
 * Each operation takes the model lock once: the model
 * (model/model_template.c) keeps the template and renders its view; the
 * builder (template_build.c) is started from the create, under that
 * lock, with what it needs. Never called below templates/ by name: ops.c
 * reaches the builds through the hooks in ops/core.h. */
#ifndef SBX_MOCK_TEMPLATES_H
#define SBX_MOCK_TEMPLATES_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/ops.h"

/* ---- the operations (templates.c) ---- */

/* Creates t's template from the request body {name, dockerfile, base?}
 * and starts its build on a thread of its own: its view as created
 * (pending; the dockerfile shown), or NULL with the refusal in *e. A build
 * that cannot start ends failed, saying why in its log. */
cJSON *mock_op_template_create(sbx_mock *mock, mock_tenant *t, const cJSON *body, mock_err *e);
/* The view of t's template id_or_name (with its dockerfile when asked),
 * NULL when t has none. */
cJSON *mock_op_template_get(sbx_mock *mock, mock_tenant *t, const char *id_or_name, bool dockerfile);
/* The views of t's templates, without their dockerfiles. */
cJSON *mock_op_template_list(sbx_mock *mock, mock_tenant *t);
/* Deletes t's template and its layer; a build still running ends. -1
 * with a 404 in *e when t has none. */
int mock_op_template_delete(sbx_mock *mock, mock_tenant *t, const char *id_or_name, mock_err *e);

/* A build's log as GET /v1/templates/{id}/logs asks it. */
typedef struct mock_tpl_logs {
	/* in: the attempt asked, 0 when none; -1 when it was not a positive
	 * integer. The mock builds a template once: attempt 1 is the only one */
	long attempt;
	bool follow;              /* in: as NDJSON events, as the build writes them */
	sbx_strbuf text;          /* out, without follow: the lines so far, a line each */
	mock_op_stream *stream;   /* out, with follow; NULL: out of memory */
} mock_tpl_logs;
/* The log of t's template id_or_name into q: 0, or -1 with *e (404 no
 * such template or attempt, 400 an attempt that is no positive integer,
 * in that order). The stream ends with {"final":true,"status"}. */
int mock_op_template_logs(sbx_mock *mock, mock_tenant *t, const char *id_or_name, mock_tpl_logs *q,
			  mock_err *e);

/* ---- the builds beside the mock's life (template_build.c, template_layer.c) ---- */

/* Cancels every build (reset): each ends without a status change. */
void mock_op_templates_cancel(sbx_mock *mock);
/* Stop: cancels and joins every build; a create after it starts none
 * (its template ends failed, "the mock is stopping"). */
void mock_op_templates_stop(sbx_mock *mock);
/* Frees what the builds' bookkeeping holds (its followers' condition):
 * once no request can come (after the HTTP daemon stopped). */
void mock_op_templates_free(sbx_mock *mock);
/* Model lock held, after a durable replay: a ready template whose layer
 * is not in this mock's work dir (another --work-dir) ends failed saying
 * so, rather than failing each create on it. */
void mock_op_templates_restored(sbx_mock *mock);
/* Model lock held: the API key of the tenant whose build runs in the
 * builder named name (the internet's id of its cell), "" when none (the
 * internet's stubs of a tenant answer its builds too). */
void mock_op_template_builder_tenant(sbx_mock *mock, const char *name, char *key, size_t cap);
/* A sandbox on a template: copies the template's layer into the seed its
 * cell starts its root's upper layer from. 0 (nothing to do too), or -1. */
int mock_op_template_seed(sbx_mock *mock, const mock_sandbox *sb, sbx_err *err);

#endif

/* templates_internal: what the files of templates/ share (templates.c,
 * the operations; template_build.c, the builds; template_log.c, the log's
 * followers; template_layer.c, the layers). Outside templates/ include
 * templates.h. */
#ifndef SBX_MOCK_TEMPLATES_INTERNAL_H
#define SBX_MOCK_TEMPLATES_INTERNAL_H

#include <pthread.h>

#include "ops/core.h"
#include "ops/ops.h"

/* Lock held: starts the build of t's template tpl (just created,
 * pending) on a thread of its own, with a copy of what it runs (its
 * steps, base, id and the disk its create reserved); a build that cannot
 * start ends failed at once, saying why in the log. */
void mock_build_start(sbx_mock *mock, mock_tenant *t, cJSON *tpl);
/* Lock held: the mock's condition its builds signal (a log line, a status
 * change), on CLOCK_MONOTONIC, made at first use; NULL when out of
 * memory. Freed by mock_op_templates_free. */
pthread_cond_t *mock_builds_grew(sbx_mock *mock);
/* The follower of template id's log (t's; id resolved, not a name): NDJSON
 * events as the build writes its lines, then {"final":true,"status"};
 * NULL: out of memory. */
mock_op_stream *mock_build_follow(sbx_mock *mock, mock_tenant *t, const char *id);
/* Removes a deleted template's layer (template_layer.c). */
void mock_build_forget(sbx_mock *mock, const char *id);

#endif

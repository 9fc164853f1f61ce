/* template_log: a template build's log, followed (GET
 * /v1/templates/{id}/logs?follow=true, TEMPLATES.md "Logs"): NDJSON
 * events as the build writes its lines (template_build.c), then the
 * final one. A follower waits on the mock's build condition
 * (mock_builds_grew) under the model lock, never polls; it only reads the
 * model. */
#define _GNU_SOURCE
#include "templates/templates_internal.h"
#include "ops/ops_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ops/core.h"
#include "sbx/sys.h"

typedef struct log_stream {
	mock_op_stream s;
	mock_tenant *t;
	char id[64];
	size_t next;     /* the next line to send */
	bool ended;
} log_stream;

/* Lock held: what the follower has not seen of template ls->id into out
 * (its final frame too once the build ended); true when it ended. */
static bool log_take(log_stream *ls, sbx_strbuf *out)
{
	cJSON *tpl = mock_template_find(ls->t, ls->id);
	bool done;

	if (tpl == NULL) { /* deleted while followed */
		sbx_strbuf_puts(out, "{\"final\":true,\"status\":\"failed\"}\n");
		return true;
	}
	done = mock_template_done(tpl);
	ls->next = mock_template_log_lines(tpl, ls->next, true, out);
	if (done)
		sbx_strbuf_printf(out, "{\"final\":true,\"status\":\"%s\"}\n",
				  cJSON_GetObjectItemCaseSensitive(tpl, "status")->valuestring);
	return done;
}

static int log_next(mock_op_stream *s, sbx_strbuf *out)
{
	log_stream *ls = (log_stream *)s;
	mock_model *m = s->mock->model;
	struct timespec until;
	pthread_cond_t *grew;
	bool done;

	if (ls->ended)
		return MOCK_STREAM_DONE;
	until = sbx_mono_deadline(MOCK_STREAM_WAIT_MS);
	pthread_mutex_lock(&m->lock);
	done = log_take(ls, out);
	grew = mock_builds_grew(s->mock);
	/* nothing new: wait for a line or the status (or the wait's end,
	 * when a heartbeat may be due), then look once more */
	if (!done && out->len == 0 && grew != NULL &&
	    pthread_cond_timedwait(grew, &m->lock, &until) == 0)
		done = log_take(ls, out);
	pthread_mutex_unlock(&m->lock);
	if (done) {
		ls->ended = true;
		return MOCK_STREAM_MORE; /* the final frame goes out; DONE next */
	}
	if (out->len == 0 && ops_stream_quiet(s))
		sbx_strbuf_puts(out, "{\"hb\":true}\n");
	return MOCK_STREAM_MORE;
}

static void log_end(mock_op_stream *s)
{
	free(s);
}

mock_op_stream *mock_build_follow(sbx_mock *mock, mock_tenant *t, const char *id)
{
	log_stream *ls = calloc(1, sizeof(*ls));

	if (ls == NULL)
		return NULL;
	ls->s.mock = mock;
	ls->s.next = log_next;
	ls->s.end = log_end;
	ls->t = t;
	snprintf(ls->id, sizeof(ls->id), "%s", id);
	return &ls->s;
}

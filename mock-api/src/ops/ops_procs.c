/* ops_procs: the operations under /v1/sandboxes/{id}/processes (ops.h)
 * — each finds the caller's sandbox (404 for another tenant's), marks it
 * busy around one call of the guest's managed processes (guest_procs.h)
 * and hands back its view. Starting one takes exec's begin (running, the
 * env rules of exec); the connect stream holds the sandbox busy until its
 * end. */
#define _GNU_SOURCE
#include "ops/ops.h"
#include "ops/ops_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest/guest_procs.h"
#include "ops/core.h" /* struct sbx_mock */

_Static_assert(MOCK_PROCESS_ID_MAX == MOCK_MPROC_ID_MAX, "ops.h's process id length is the guest's");
_Static_assert(MOCK_PROCESS_PTY_MAX == MOCK_MPROC_PTY_MAX, "ops.h's PTY limit is the guest's");
_Static_assert(MOCK_PROCESS_INPUT_MAX == MOCK_MPROC_INPUT_MAX, "ops.h's input limit is the guest's");

/* The sandbox's guest, marked busy (pair with ops_io_end), or NULL with
 * op->err set: 404 no such sandbox of op->t, 409 when its guest is gone
 * or, with running, it is not running (changes; reads also serve a paused
 * sandbox). */
static mock_guest *procs_begin(mock_op *op, bool running)
{
	mock_model *m = op->mock->model;
	mock_sandbox *sb = NULL;
	mock_guest *g = NULL;

	sb = ops_begin(op, true);
	if (sb == NULL) {
		/* 404 set */
	} else if (sb->guest == NULL || mock_guest_dead(sb->guest) ||
		   (running && sb->status != ST_RUNNING)) {
		mock_err_set(&op->err, 409, "NOT_RUNNING", "status", "sandbox is not running");
	} else {
		g = sb->guest;
		sb->busy++;
		if (running)
			mock_sandbox_touch(m, sb);
		op->sb = sb;
	}
	pthread_mutex_unlock(&m->lock);
	return g;
}

static void not_found(mock_op *op, const char *pid)
{
	mock_err_set(&op->err, 404, "NOT_FOUND", "process_id", "process %s not found", pid);
}

cJSON *mock_op_process_create(mock_op *op, const mock_process_req *q)
{
	mock_mproc_req mq;
	sbx_err err = {{0}};
	int status = 500;
	ops_env env;
	mock_guest *g = ops_io_begin(op, &q->cmd, &env);
	cJSON *v = NULL;

	if (g != NULL) {
		memset(&mq, 0, sizeof(mq));
		ops_exec_spec(&mq.exec, &q->cmd, &env);
		mq.pty = q->pty;
		mq.rows = q->rows;
		mq.cols = q->cols;
		v = mock_mproc_create(g, &mq, &status, &err);
		ops_io_end(op->mock, op->sb);
		if (v == NULL)
			mock_err_set(&op->err, status, status == 400 ? "INVALID_REQUEST" : "",
				     status == 400 ? "cmd" : "error", "%s", err.msg);
	}
	ops_env_free(&env);
	return v;
}

cJSON *mock_op_process_list(mock_op *op)
{
	mock_guest *g = procs_begin(op, false);
	cJSON *v;

	if (g == NULL)
		return NULL;
	v = mock_mproc_list(g);
	ops_io_end(op->mock, op->sb);
	return v;
}

/* get, wait and terminate: the process's view, a 404 when it has none. */
typedef enum { VIEW_GET, VIEW_WAIT, VIEW_TERMINATE } view_kind;

static cJSON *process_view(mock_op *op, const char *pid, view_kind k, bool tree, int64_t ms,
			   bool (*stop)(void *arg), void *arg)
{
	mock_guest *g = procs_begin(op, k == VIEW_TERMINATE);
	cJSON *v;

	if (g == NULL)
		return NULL;
	if (k == VIEW_GET)
		v = mock_mproc_get(g, pid);
	else if (k == VIEW_WAIT)
		v = mock_mproc_wait(g, pid, tree, ms, stop, arg);
	else
		v = mock_mproc_terminate(g, pid, ms);
	ops_io_end(op->mock, op->sb);
	if (v == NULL)
		not_found(op, pid);
	return v;
}

cJSON *mock_op_process_get(mock_op *op, const char *pid)
{
	return process_view(op, pid, VIEW_GET, false, 0, NULL, NULL);
}

cJSON *mock_op_process_wait(mock_op *op, const char *pid, bool tree, int64_t timeout_ms,
			    bool (*stop)(void *arg), void *arg)
{
	return process_view(op, pid, VIEW_WAIT, tree, timeout_ms, stop, arg);
}

cJSON *mock_op_process_terminate(mock_op *op, const char *pid, int64_t grace_ms)
{
	return process_view(op, pid, VIEW_TERMINATE, false, grace_ms, NULL, NULL);
}

/* One control call of the guest: 0, or -1 with op->err. */
static int control(mock_op *op, mock_guest *g, const char *pid, const mock_process_ctl *c,
		   uint64_t *seq)
{
	sbx_err err = {{0}};
	int status = 500, rc;

	if (c->kind == MOCK_PROCESS_INPUT)
		rc = mock_mproc_input(g, pid, c->data, c->len, seq, &status, &err);
	else if (c->kind == MOCK_PROCESS_STDIN_CLOSE)
		rc = mock_mproc_stdin_close(g, pid, &status, &err);
	else if (c->kind == MOCK_PROCESS_RESIZE)
		rc = mock_mproc_resize(g, pid, c->rows, c->cols, &status, &err);
	else
		rc = mock_mproc_signal(g, pid, c->sig, &status, &err);
	if (rc != 0)
		mock_err_set(&op->err, status,
			     status == 404   ? "NOT_FOUND"
			     : status == 409 ? "INVALID_STATE"
					     : "",
			     status == 404 ? "process_id" : "error", "%s", err.msg);
	return rc;
}

cJSON *mock_op_process_control(mock_op *op, const char *pid, const mock_process_ctl *c)
{
	mock_guest *g = procs_begin(op, true);
	uint64_t seq = 0;
	cJSON *d;
	int rc;

	if (g == NULL)
		return NULL;
	rc = control(op, g, pid, c, &seq);
	ops_io_end(op->mock, op->sb);
	if (rc != 0)
		return NULL;
	d = cJSON_CreateObject();
	if (c->kind == MOCK_PROCESS_INPUT) {
		cJSON_AddNumberToObject(d, "input_seq", (double)seq);
	} else if (c->kind == MOCK_PROCESS_RESIZE) {
		cJSON_AddNumberToObject(d, "rows", c->rows);
		cJSON_AddNumberToObject(d, "cols", c->cols);
	} else {
		cJSON_AddBoolToObject(d, c->kind == MOCK_PROCESS_STDIN_CLOSE ? "closed" : "signaled",
				      true);
	}
	return d;
}

int mock_op_signal_number(const char *name)
{
	return mock_mproc_signal_number(name);
}

/* ---- the connect stream ---- */

typedef struct connect_stream {
	mock_op_stream s;
	char pid[MOCK_PROCESS_ID_MAX + 1];
	uint64_t after; /* the last event number sent */
	bool first;
} connect_stream;

static int connect_next(mock_op_stream *s, sbx_strbuf *out)
{
	connect_stream *c = (connect_stream *)s;
	size_t before = out->len;
	int rc = mock_mproc_events(s->g, c->pid, &c->after, c->first, MOCK_STREAM_WAIT_MS, out);

	c->first = false;
	if (rc < 0) {
		sbx_strbuf_printf(out, "{\"type\":\"error\",\"error\":\"process %s is gone\"}\n",
				  c->pid);
		return MOCK_STREAM_DONE;
	}
	if (rc == 1)
		return MOCK_STREAM_DONE;
	if (out->len == before && ops_stream_quiet(s))
		sbx_strbuf_puts(out, "{\"type\":\"heartbeat\"}\n");
	return MOCK_STREAM_MORE;
}

static void connect_end(mock_op_stream *s)
{
	free(s);
}

mock_op_stream *mock_op_process_connect(mock_op *op, const char *pid, uint64_t after)
{
	connect_stream *c;
	mock_guest *g = procs_begin(op, false);
	cJSON *v;
	bool found;

	if (g == NULL)
		return NULL;
	v = mock_mproc_get(g, pid);
	found = v != NULL;
	cJSON_Delete(v);
	c = found ? calloc(1, sizeof(*c)) : NULL;
	if (c == NULL) {
		ops_io_end(op->mock, op->sb);
		if (!found)
			not_found(op, pid);
		else
			mock_err_set(&op->err, 500, "", "error", "out of memory");
		return NULL;
	}
	c->s = (mock_op_stream){.mock = op->mock, .sb = op->sb, .g = g, .next = connect_next,
				.end = connect_end};
	snprintf(c->pid, sizeof(c->pid), "%s", pid);
	c->after = after;
	c->first = true;
	return &c->s;
}

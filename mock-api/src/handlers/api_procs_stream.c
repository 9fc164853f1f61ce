/* api_procs_stream: GET /v1/sandboxes/{id}/processes/{pid}/connect?after=N
 * — a managed process's numbered events as NDJSON (application/x-ndjson,
 * chunked): {"type":"data","seq":N,"stream":"stdout|stderr|pty",
 * "data_base64":"…"}, a heartbeat {"type":"heartbeat"} while silent (the
 * exec stream's interval), {"type":"exit","seq":N,"exit_code":…,
 * "signal":…} last. Events numbered up to N are skipped, so a client that
 * lost its connection resumes where it was; a gap (output the ring
 * dropped) is announced by a first heartbeat carrying
 * oldest_available_seq. The client leaving only ends this stream: the
 * process runs on (its reader thread never depends on a client).
 *
 * The stream holds the sandbox busy (its guest cannot be freed under it)
 * and is read on a worker thread (mock_blocking_response). */
#define _GNU_SOURCE
#include "handlers/api.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest/guest_procs.h"

#define EVENT_WAIT_MS 200

typedef struct conn_ctx {
	sbx_mock *mock;
	mock_sandbox *sb;
	mock_guest *g;
	char pid[MOCK_MPROC_ID_MAX + 1];
	uint64_t after;
	bool first, done;
	sbx_strbuf pending;
	size_t pend_off;
	int64_t quiet_ms; /* since the last frame */
	atomic_bool gone; /* the client went away (conn_cancel) */
	int conn_fd;	  /* polled while silent, as the exec stream does */
} conn_ctx;

static void conn_next(conn_ctx *c)
{
	for (;;) {
		int rc;

		if (atomic_load(&c->mock->stopping) || atomic_load(&c->gone))
			return;
		if (mock_fd_gone(c->conn_fd)) {
			atomic_store(&c->gone, true);
			return;
		}
		rc = mock_mproc_events(c->g, c->pid, &c->after, c->first, EVENT_WAIT_MS,
				       &c->pending);
		c->first = false;
		if (rc < 0) {
			sbx_strbuf_printf(&c->pending,
					  "{\"type\":\"error\",\"error\":\"process %s is gone\"}\n",
					  c->pid);
			c->done = true;
			return;
		}
		if (rc == 1)
			c->done = true;
		if (c->pending.len > 0) {
			c->quiet_ms = 0;
			return;
		}
		c->quiet_ms += EVENT_WAIT_MS;
		if (c->quiet_ms >= atomic_load(&c->mock->hb_ms)) {
			sbx_strbuf_puts(&c->pending, "{\"type\":\"heartbeat\"}\n");
			c->quiet_ms = 0;
			return;
		}
	}
}

static ssize_t conn_reader(void *cls, uint64_t pos, char *out, size_t max)
{
	conn_ctx *c = cls;
	size_t n;

	(void)pos;
	while ((n = api_pending_take(&c->pending, &c->pend_off, out, max)) == 0) {
		if (c->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (atomic_load(&c->mock->stopping) || atomic_load(&c->gone))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		conn_next(c);
	}
	return (ssize_t)n;
}

static void conn_free(void *cls)
{
	conn_ctx *c = cls;

	mock_op_io_end(c->mock, c->sb);
	sbx_strbuf_free(&c->pending);
	free(c);
}

static void conn_cancel(void *cls)
{
	conn_ctx *c = cls;

	atomic_store(&c->gone, true);
}

/* Starts the stream over g (busy: the stream ends the op). */
static void conn_start(mreq *r, mresp *out, const mock_op *op, mock_guest *g, const char *pid,
		       uint64_t after)
{
	conn_ctx *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		mock_op_io_end(r->mock, op->sb);
		resp_error(out, 500, "out of memory");
		return;
	}
	c->mock = r->mock;
	c->sb = op->sb;
	c->g = g;
	snprintf(c->pid, sizeof(c->pid), "%s", pid);
	c->after = after;
	c->first = true;
	c->conn_fd = req_conn_fd(r);
	sbx_strbuf_init(&c->pending);
	api_ndjson_response(r, out, conn_reader, c, conn_free, conn_cancel);
}

void api_procs_connect(mreq *r, mresp *out, mock_tenant *t)
{
	char id[64], pid[MOCK_MPROC_ID_MAX + 1];
	uint64_t after = 0;
	mock_op op;
	mock_guest *g;
	cJSON *v;

	if (!api_procs_id(r, out, pid, sizeof(pid)) ||
	    !api_query_u(r, out, "after", 0, UINT64_MAX, 0, &after))
		return;
	api_op_init(&op, r, t, id, sizeof(id));
	g = mock_op_procs_begin(&op, false);
	if (g == NULL) {
		api_op_answer(r, out, &op, 200, NULL);
		return;
	}
	snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", op.found);
	v = mock_mproc_get(g, pid);
	if (v == NULL) {
		mock_op_io_end(r->mock, op.sb);
		mock_err_set(&op.err, 404, "NOT_FOUND", "process_id", "process %s not found", pid);
		api_op_answer(r, out, &op, 200, NULL);
		return;
	}
	cJSON_Delete(v);
	if (strcmp(r->method, "HEAD") == 0) {
		/* the stream's status and type, no body: a chunked answer to HEAD
		 * would still carry its terminating chunk */
		mock_op_io_end(r->mock, op.sb);
		resp_raw(out, 200, "application/x-ndjson", strdup(""), 0);
		return;
	}
	conn_start(r, out, &op, g, pid, after);
}

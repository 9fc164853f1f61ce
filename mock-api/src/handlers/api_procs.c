/* api_procs: /v1/sandboxes/{id}/processes — managed processes (README,
 * "Managed processes"): create, list, inspect, terminate, input,
 * stdin/close, resize, signal, wait. The NDJSON connect stream is
 * api_procs_stream.c's. Field names are the Python SDK's (ManagedProcess,
 * ManagedProcessCreateRequest, PTYSize).
 *
 * Each handler parses, calls one operation (mock_op_process_*,
 * ops_procs.c) and renders its view or refusal. */
#define _GNU_SOURCE
#include "handlers/api.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"

#define WAIT_DEFAULT_MS	 30000
#define WAIT_MAX_MS	 300000
#define GRACE_MAX_MS	 600000 /* a DELETE holds a worker thread that long at most */
#define PTY_DEFAULT_ROWS 24
#define PTY_DEFAULT_COLS 80
/* A PTY created with no cmd: the guest root's login shell (cell/root.c's
 * /etc/passwd), what both vendor SDKs' examples ask for as "an interactive
 * PTY shell" (README, "Managed processes") */
#define PTY_DEFAULT_SHELL "/bin/sh"

bool api_procs_id(mreq *r, mresp *out, char *buf, size_t cap)
{
	if (req_seg(r, 4, buf, cap) && buf[0] != '\0')
		return true;
	resp_fail(out, 400, "process_id", "INVALID_REQUEST", "process id is missing or too long");
	return false;
}

/* ---- create ---- */

/* pty: {rows, cols}, each 1..MOCK_PROCESS_PTY_MAX (0 or absent: 24x80). */
static bool parse_pty(const cJSON *pty, unsigned *rows, unsigned *cols, mresp *out)
{
	int64_t rv = 0, cv = 0;

	if (!api_get_int(pty, "rows", 0, MOCK_PROCESS_PTY_MAX, &rv, NULL, out) ||
	    !api_get_int(pty, "cols", 0, MOCK_PROCESS_PTY_MAX, &cv, NULL, out))
		return false;
	*rows = rv > 0 ? (unsigned)rv : PTY_DEFAULT_ROWS;
	*cols = cv > 0 ? (unsigned)cv : PTY_DEFAULT_COLS;
	return true;
}

static bool parse_create(const cJSON *b, mock_process_req *q, mresp *out)
{
	const cJSON *args = NULL, *env = NULL, *pty = NULL;
	mock_cmd_req *c = &q->cmd;

	if (!api_get_str(b, "cmd", &c->cmd, out) || !api_get_str(b, "cwd", &c->cwd, out) ||
	    !api_get_kind(b, "env", false, &env, out) || !api_get_kind(b, "pty", false, &pty, out) ||
	    !api_get_kind(b, "args", true, &args, out) || !api_cmd_args(args, c, out))
		return false;
	if ((c->cmd == NULL || c->cmd[0] == '\0') && pty != NULL)
		c->cmd = PTY_DEFAULT_SHELL;
	if (c->cmd == NULL || c->cmd[0] == '\0') {
		resp_fail(out, 400, "cmd", "INVALID_REQUEST",
			  "cmd is required for a pipe process (an executable, not a shell line; "
			  "a PTY without one runs the shell " PTY_DEFAULT_SHELL ")");
		return false;
	}
	if (c->cwd != NULL && c->cwd[0] != '\0' && c->cwd[0] != '/') {
		resp_fail(out, 400, "cwd", "INVALID_REQUEST", "cwd must be an absolute path");
		return false;
	}
	if (!api_cmd_env(env, c, out))
		return false;
	q->pty = pty != NULL;
	return pty == NULL || parse_pty(pty, &q->rows, &q->cols, out);
}

void api_procs_create(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	mock_process_req q;
	mock_op op;
	char id[64];

	memset(&q, 0, sizeof(q));
	if (b != NULL && parse_create(b, &q, out)) {
		api_op_init(&op, r, t, id, sizeof(id));
		api_op_answer(r, out, &op, 200, mock_op_process_create(&op, &q));
	}
	api_cmd_free(&q.cmd);
}

/* ---- list, get, wait, delete ---- */

void api_procs_list(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char id[64];

	api_op_init(&op, r, t, id, sizeof(id));
	api_op_answer(r, out, &op, 200, mock_op_process_list(&op));
}

static bool gone_cb(void *arg)
{
	return req_client_gone(arg) || atomic_load(&((mreq *)arg)->mock->stopping);
}

/* The shared frame of get, wait and delete: parse, one operation, its view. */
typedef enum { PROC_GET, PROC_WAIT, PROC_DELETE } proc_view_kind;

static void proc_view(mreq *r, mresp *out, mock_tenant *t, proc_view_kind k)
{
	const char *scope = req_query(r, "scope");
	char id[64], pid[MOCK_PROCESS_ID_MAX + 1];
	uint64_t ms = 0;
	mock_op op;
	cJSON *v;

	if (!api_procs_id(r, out, pid, sizeof(pid)))
		return;
	if (k == PROC_WAIT && scope != NULL && strcmp(scope, "leader") != 0 &&
	    strcmp(scope, "tree") != 0) {
		resp_fail(out, 400, "scope", "INVALID_REQUEST", "scope must be leader or tree");
		return;
	}
	if ((k == PROC_WAIT &&
	     !api_query_u(r, out, "timeout_ms", 0, WAIT_MAX_MS, WAIT_DEFAULT_MS, &ms)) ||
	    (k == PROC_DELETE && !api_query_u(r, out, "grace_ms", 0, GRACE_MAX_MS, 0, &ms)))
		return;
	api_op_init(&op, r, t, id, sizeof(id));
	if (k == PROC_GET)
		v = mock_op_process_get(&op, pid);
	else if (k == PROC_WAIT)
		v = mock_op_process_wait(&op, pid, scope != NULL && strcmp(scope, "tree") == 0,
					 (int64_t)ms, gone_cb, r);
	else
		v = mock_op_process_terminate(&op, pid, (int64_t)ms);
	api_op_answer(r, out, &op, 200, v);
}

void api_procs_get(mreq *r, mresp *out, mock_tenant *t)
{
	proc_view(r, out, t, PROC_GET);
}

void api_procs_wait(mreq *r, mresp *out, mock_tenant *t)
{
	proc_view(r, out, t, PROC_WAIT);
}

void api_procs_delete(mreq *r, mresp *out, mock_tenant *t)
{
	proc_view(r, out, t, PROC_DELETE);
}

/* ---- input, stdin/close, resize, signal ---- */

/* The control request; an input's data is decoded into *data (the
 * caller frees it). */
static bool parse_input(const cJSON *b, mock_process_ctl *a, char **data, mresp *out)
{
	const char *b64 = NULL, *text = NULL;
	char why[128];

	if (!api_get_str(b, "data_base64", &b64, out) || !api_get_str(b, "data", &text, out))
		return false;
	if (b64 == NULL && text == NULL) {
		resp_fail(out, 400, "data_base64", "INVALID_REQUEST", "data_base64 is required");
		return false;
	}
	*data = b64 != NULL ? mock_b64_decode(b64, &a->len, why, sizeof(why)) : strdup(text);
	a->data = *data;
	if (a->data == NULL) {
		resp_fail(out, 400, "data_base64", "INVALID_REQUEST",
			  b64 != NULL ? why : "out of memory");
		return false;
	}
	if (b64 == NULL)
		a->len = strlen(text);
	if (a->len > MOCK_PROCESS_INPUT_MAX) {
		snprintf(why, sizeof(why), "input is %zu bytes, over the limit of %u per request",
			 a->len, MOCK_PROCESS_INPUT_MAX);
		resp_fail(out, 400, "data_base64", "INVALID_REQUEST", why);
		return false;
	}
	return true;
}

static bool parse_ctl(mreq *r, mresp *out, mock_process_ctl *a, char **data)
{
	cJSON *b = a->kind == MOCK_PROCESS_STDIN_CLOSE ? NULL : api_body_object(r, out, true);
	const char *name = NULL;
	int64_t rows = 0, cols = 0;

	if (a->kind == MOCK_PROCESS_STDIN_CLOSE)
		return true;
	if (b == NULL)
		return false;
	if (a->kind == MOCK_PROCESS_INPUT)
		return parse_input(b, a, data, out);
	if (a->kind == MOCK_PROCESS_SIGNAL) {
		if (!api_get_str(b, "signal", &name, out))
			return false;
		a->sig = mock_op_signal_number(name);
		if (a->sig == 0)
			resp_fail(
				out, 400, "signal", "INVALID_REQUEST",
				"signal must be one of SIGHUP, SIGINT, SIGQUIT, SIGKILL, SIGTERM, "
				"SIGUSR1, SIGUSR2, SIGWINCH");
		return a->sig != 0;
	}
	if (!api_get_int(b, "rows", 1, MOCK_PROCESS_PTY_MAX, &rows, NULL, out) ||
	    !api_get_int(b, "cols", 1, MOCK_PROCESS_PTY_MAX, &cols, NULL, out))
		return false;
	if (rows == 0 || cols == 0) {
		resp_fail(out, 400, rows == 0 ? "rows" : "cols", "INVALID_REQUEST",
			  "rows and cols are required (1 to 1000 each)");
		return false;
	}
	a->rows = (unsigned)rows;
	a->cols = (unsigned)cols;
	return true;
}

static void proc_ctl(mreq *r, mresp *out, mock_tenant *t, mock_process_ctl_kind k)
{
	char id[64], pid[MOCK_PROCESS_ID_MAX + 1], *data = NULL;
	mock_process_ctl a = {.kind = k};
	mock_op op;

	if (api_procs_id(r, out, pid, sizeof(pid)) && parse_ctl(r, out, &a, &data)) {
		api_op_init(&op, r, t, id, sizeof(id));
		api_op_answer(r, out, &op, 200, mock_op_process_control(&op, pid, &a));
	}
	free(data);
}

void api_procs_input(mreq *r, mresp *out, mock_tenant *t)
{
	proc_ctl(r, out, t, MOCK_PROCESS_INPUT);
}

void api_procs_stdin_close(mreq *r, mresp *out, mock_tenant *t)
{
	proc_ctl(r, out, t, MOCK_PROCESS_STDIN_CLOSE);
}

void api_procs_resize(mreq *r, mresp *out, mock_tenant *t)
{
	proc_ctl(r, out, t, MOCK_PROCESS_RESIZE);
}

void api_procs_signal(mreq *r, mresp *out, mock_tenant *t)
{
	proc_ctl(r, out, t, MOCK_PROCESS_SIGNAL);
}

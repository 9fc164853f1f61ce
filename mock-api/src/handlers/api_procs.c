/* api_procs: /v1/sandboxes/{id}/processes — managed processes (README,
 * "Managed processes"): create, list, inspect, terminate, input,
 * stdin/close, resize, signal, wait. The NDJSON connect stream is
 * api_procs_stream.c's. Field names are the Python SDK's (ManagedProcess,
 * ManagedProcessCreateRequest, PTYSize).
 *
 * Each handler parses, marks the sandbox busy (mock_op_procs_begin or, to
 * start one, mock_op_exec_begin), makes one guest call and renders. Never
 * take the model lock here. */
#define _GNU_SOURCE
#include "handlers/api.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "guest/guest_procs.h"

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

typedef struct create_args {
	mock_mproc_req q;
	const char **args;
	mock_exec_env env;
} create_args;

static bool parse_args(const cJSON *b, create_args *a, mresp *out)
{
	const cJSON *args = NULL, *it;
	size_t i = 0;

	if (!api_get_kind(b, "args", true, &args, out))
		return false;
	a->q.exec.nargs = args != NULL ? (size_t)cJSON_GetArraySize(args) : 0;
	a->args = calloc(a->q.exec.nargs + 1, sizeof(char *));
	if (a->args == NULL) {
		resp_error(out, 500, "out of memory");
		return false;
	}
	cJSON_ArrayForEach(it, args)
	{
		if (!cJSON_IsString(it)) {
			resp_fail(out, 400, "args", "INVALID_REQUEST",
				  "args must be an array of strings");
			return false;
		}
		a->args[i++] = it->valuestring;
	}
	a->q.exec.args = a->args;
	return true;
}

/* pty: {rows, cols}, each 1..MOCK_MPROC_PTY_MAX (0 or absent: 24x80). */
static bool parse_pty(const cJSON *pty, unsigned *rows, unsigned *cols, mresp *out)
{
	int64_t rv = 0, cv = 0;

	if (!api_get_int(pty, "rows", 0, MOCK_MPROC_PTY_MAX, &rv, NULL, out) ||
	    !api_get_int(pty, "cols", 0, MOCK_MPROC_PTY_MAX, &cv, NULL, out))
		return false;
	*rows = rv > 0 ? (unsigned)rv : PTY_DEFAULT_ROWS;
	*cols = cv > 0 ? (unsigned)cv : PTY_DEFAULT_COLS;
	return true;
}

static bool parse_create(const cJSON *b, create_args *a, mresp *out)
{
	const cJSON *env = NULL, *pty = NULL, *it;

	if (!api_get_str(b, "cmd", &a->q.exec.cmd, out) ||
	    !api_get_str(b, "cwd", &a->q.exec.cwd, out) ||
	    !api_get_kind(b, "env", false, &env, out) ||
	    !api_get_kind(b, "pty", false, &pty, out) || !parse_args(b, a, out))
		return false;
	if ((a->q.exec.cmd == NULL || a->q.exec.cmd[0] == '\0') && pty != NULL)
		a->q.exec.cmd = PTY_DEFAULT_SHELL;
	if (a->q.exec.cmd == NULL || a->q.exec.cmd[0] == '\0') {
		resp_fail(out, 400, "cmd", "INVALID_REQUEST",
			  "cmd is required for a pipe process (an executable, not a shell line; "
			  "a PTY without one runs the shell " PTY_DEFAULT_SHELL ")");
		return false;
	}
	if (a->q.exec.cwd != NULL && a->q.exec.cwd[0] != '\0' && a->q.exec.cwd[0] != '/') {
		resp_fail(out, 400, "cwd", "INVALID_REQUEST", "cwd must be an absolute path");
		return false;
	}
	cJSON_ArrayForEach(it, env)
	{
		if (!cJSON_IsString(it)) {
			resp_fail(out, 400, "env", "INVALID_REQUEST", "env values must be strings");
			return false;
		}
	}
	a->q.pty = pty != NULL;
	return pty == NULL || parse_pty(pty, &a->q.rows, &a->q.cols, out);
}

void api_procs_create(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true), *v = NULL;
	create_args a;
	mock_op op;
	char id[64];
	mock_guest *g;
	sbx_err err = {{0}};
	int status = 500;

	memset(&a, 0, sizeof(a));
	if (b == NULL || !parse_create(b, &a, out))
		goto out_free;
	api_op_init(&op, r, t, id, sizeof(id));
	g = mock_op_exec_begin(&op, cJSON_GetObjectItemCaseSensitive(b, "env"), &a.env);
	if (g != NULL) {
		a.q.exec.env = (const char *const *)a.env.kv;
		a.q.exec.nenv = a.env.n;
		v = mock_mproc_create(g, &a.q, &status, &err);
		mock_op_io_end(r->mock, op.sb);
		if (v == NULL)
			mock_err_set(&op.err, status, status == 400 ? "INVALID_REQUEST" : "",
				     status == 400 ? "cmd" : "error", "%s", err.msg);
	}
	api_op_answer(r, out, &op, 200, v);
out_free:
	free(a.args);
	mock_exec_env_free(&a.env);
}

/* ---- list, get, wait, delete ---- */

void api_procs_list(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char id[64];
	mock_guest *g;
	cJSON *v = NULL;

	api_op_init(&op, r, t, id, sizeof(id));
	g = mock_op_procs_begin(&op, false);
	if (g != NULL) {
		v = mock_mproc_list(g);
		mock_op_io_end(r->mock, op.sb);
	}
	api_op_answer(r, out, &op, 200, v);
}

static bool gone_cb(void *arg)
{
	return req_client_gone(arg) || atomic_load(&((mreq *)arg)->mock->stopping);
}

/* The shared frame of get, wait and delete: the process's view from fn. */
typedef enum { PROC_GET, PROC_WAIT, PROC_DELETE } proc_view_kind;

static void proc_view(mreq *r, mresp *out, mock_tenant *t, proc_view_kind k)
{
	const char *scope = req_query(r, "scope");
	char id[64], pid[MOCK_MPROC_ID_MAX + 1];
	uint64_t ms = 0;
	mock_op op;
	mock_guest *g;
	cJSON *v = NULL;

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
	g = mock_op_procs_begin(&op, k == PROC_DELETE);
	if (g == NULL) {
		api_op_answer(r, out, &op, 200, NULL);
		return;
	}
	if (k == PROC_GET)
		v = mock_mproc_get(g, pid);
	else if (k == PROC_WAIT)
		v = mock_mproc_wait(g, pid, scope != NULL && strcmp(scope, "tree") == 0,
				    (int64_t)ms, gone_cb, r);
	else
		v = mock_mproc_terminate(g, pid, (int64_t)ms);
	mock_op_io_end(r->mock, op.sb);
	if (v == NULL)
		mock_err_set(&op.err, 404, "NOT_FOUND", "process_id", "process %s not found", pid);
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

typedef enum { CTL_INPUT, CTL_CLOSE, CTL_RESIZE, CTL_SIGNAL } ctl_kind;

typedef struct ctl_args {
	char *data; /* input, decoded */
	size_t len;
	unsigned rows, cols; /* resize */
	int sig;	     /* signal */
} ctl_args;

static bool parse_input(const cJSON *b, ctl_args *a, mresp *out)
{
	const char *b64 = NULL, *text = NULL;
	char why[128];

	if (!api_get_str(b, "data_base64", &b64, out) || !api_get_str(b, "data", &text, out))
		return false;
	if (b64 == NULL && text == NULL) {
		resp_fail(out, 400, "data_base64", "INVALID_REQUEST", "data_base64 is required");
		return false;
	}
	a->data = b64 != NULL ? mock_b64_decode(b64, &a->len, why, sizeof(why)) : strdup(text);
	if (a->data == NULL) {
		resp_fail(out, 400, "data_base64", "INVALID_REQUEST",
			  b64 != NULL ? why : "out of memory");
		return false;
	}
	if (b64 == NULL)
		a->len = strlen(text);
	if (a->len > MOCK_MPROC_INPUT_MAX) {
		snprintf(why, sizeof(why), "input is %zu bytes, over the limit of %u per request",
			 a->len, MOCK_MPROC_INPUT_MAX);
		resp_fail(out, 400, "data_base64", "INVALID_REQUEST", why);
		return false;
	}
	return true;
}

static bool parse_ctl(mreq *r, mresp *out, ctl_kind k, ctl_args *a)
{
	cJSON *b = k == CTL_CLOSE ? NULL : api_body_object(r, out, true);
	const char *name = NULL;
	int64_t rows = 0, cols = 0;

	if (k == CTL_CLOSE)
		return true;
	if (b == NULL)
		return false;
	if (k == CTL_INPUT)
		return parse_input(b, a, out);
	if (k == CTL_SIGNAL) {
		if (!api_get_str(b, "signal", &name, out))
			return false;
		a->sig = mock_mproc_signal_number(name);
		if (a->sig == 0)
			resp_fail(
				out, 400, "signal", "INVALID_REQUEST",
				"signal must be one of SIGHUP, SIGINT, SIGQUIT, SIGKILL, SIGTERM, "
				"SIGUSR1, SIGUSR2, SIGWINCH");
		return a->sig != 0;
	}
	if (!api_get_int(b, "rows", 1, MOCK_MPROC_PTY_MAX, &rows, NULL, out) ||
	    !api_get_int(b, "cols", 1, MOCK_MPROC_PTY_MAX, &cols, NULL, out))
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

static cJSON *ctl_run(mock_guest *g, const char *pid, ctl_kind k, const ctl_args *a, mock_err *e)
{
	sbx_err err = {{0}};
	uint64_t seq = 0;
	int status = 500, rc;
	cJSON *d;

	if (k == CTL_INPUT)
		rc = mock_mproc_input(g, pid, a->data, a->len, &seq, &status, &err);
	else if (k == CTL_CLOSE)
		rc = mock_mproc_stdin_close(g, pid, &status, &err);
	else if (k == CTL_RESIZE)
		rc = mock_mproc_resize(g, pid, a->rows, a->cols, &status, &err);
	else
		rc = mock_mproc_signal(g, pid, a->sig, &status, &err);
	if (rc != 0) {
		mock_err_set(e, status,
			     status == 404   ? "NOT_FOUND"
			     : status == 409 ? "INVALID_STATE"
					     : "",
			     status == 404 ? "process_id" : "error", "%s", err.msg);
		return NULL;
	}
	d = cJSON_CreateObject();
	if (k == CTL_INPUT)
		cJSON_AddNumberToObject(d, "input_seq", (double)seq);
	else if (k == CTL_RESIZE)
		cJSON_AddNumberToObject(d, "rows", a->rows),
			cJSON_AddNumberToObject(d, "cols", a->cols);
	else
		cJSON_AddBoolToObject(d, k == CTL_CLOSE ? "closed" : "signaled", true);
	return d;
}

static void proc_ctl(mreq *r, mresp *out, mock_tenant *t, ctl_kind k)
{
	char id[64], pid[MOCK_MPROC_ID_MAX + 1];
	ctl_args a;
	mock_op op;
	mock_guest *g;
	cJSON *v = NULL;

	memset(&a, 0, sizeof(a));
	if (!api_procs_id(r, out, pid, sizeof(pid)) || !parse_ctl(r, out, k, &a))
		goto out_free;
	api_op_init(&op, r, t, id, sizeof(id));
	g = mock_op_procs_begin(&op, true);
	if (g != NULL) {
		v = ctl_run(g, pid, k, &a, &op.err);
		mock_op_io_end(r->mock, op.sb);
	}
	api_op_answer(r, out, &op, 200, v);
out_free:
	free(a.data);
}

void api_procs_input(mreq *r, mresp *out, mock_tenant *t)
{
	proc_ctl(r, out, t, CTL_INPUT);
}

void api_procs_stdin_close(mreq *r, mresp *out, mock_tenant *t)
{
	proc_ctl(r, out, t, CTL_CLOSE);
}

void api_procs_resize(mreq *r, mresp *out, mock_tenant *t)
{
	proc_ctl(r, out, t, CTL_RESIZE);
}

void api_procs_signal(mreq *r, mresp *out, mock_tenant *t)
{
	proc_ctl(r, out, t, CTL_SIGNAL);
}

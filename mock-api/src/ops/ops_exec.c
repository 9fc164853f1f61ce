/* ops_exec: POST /v1/sandboxes/{id}/exec as one operation (ops.h), run
 * to its end or read as a stream; and what every operation that drives a
 * guest shares (ops_internal.h): the begin that finds the running sandbox
 * and marks it busy, the command's environment, the end, the streams'
 * heartbeat, and ops_guest_run, which runs a command to its end for exec,
 * a template build's steps and the desktop's tools alike.
 *
 * The exec fault kinds are applied here and nowhere else: exec_agent_error
 * and exec_oom replace the command, exec_heartbeats_only keeps a stream
 * silent, exec_stream_cut breaks it off after its frames. Never hold the
 * model lock across guest I/O: the sandbox is busy instead. */
#define _GNU_SOURCE
#include "ops/ops.h"
#include "ops/ops_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest/cell.h" /* mock_cell_host_root */
#include "ops/core.h" /* struct sbx_mock, mock_sleep_ms */
#include "sbx/sys.h"
#include "util/json_print.h"

/* ---- begin and end ---- */

/* Exec runs without a network when every egress rule is a 240.0.0.0/4
 * block (the SDK's "no egress"). */
static bool egress_is_off(const sbx_egress_list *l)
{
	if (l->is_null || l->count == 0)
		return false;
	for (size_t i = 0; i < l->count; i++) {
		const sbx_egress_rule *rule = &l->rules[i];

		if (rule->kind != SBX_RULE_IPV4 || rule->prefix_len < 4 || (rule->addr[0] & 0xf0) != 0xf0)
			return false;
	}
	return true;
}

void ops_env_free(ops_env *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->kv[i]);
	free(e->kv);
	e->kv = NULL;
	e->n = 0;
}

/* The override of key in cmd's env (the first one), NULL when none. */
static const char *env_override(const mock_cmd_req *cmd, const char *key)
{
	for (size_t i = 0; i < cmd->nenv; i++) {
		if (strcmp(cmd->env[i].key, key) == 0)
			return cmd->env[i].value;
	}
	return NULL;
}

/* "K=V" from the sandbox envs overridden by cmd's env; a key the sandbox
 * did not declare is a 400. Lock held. */
static bool build_env(mock_op *op, const mock_sandbox *sb, const mock_cmd_req *cmd, ops_env *e)
{
	const cJSON *it;
	size_t n = (size_t)cJSON_GetArraySize(sb->envs);

	for (size_t i = 0; i < cmd->nenv; i++) {
		if (cJSON_GetObjectItemCaseSensitive(sb->envs, cmd->env[i].key) == NULL) {
			mock_err_set(&op->err, 400, "INVALID_ENV", "env",
				     "env key \"%.64s\" is not declared in the sandbox's envs; exec may only override declared keys",
				     cmd->env[i].key);
			return false;
		}
	}
	e->kv = calloc(n + 1, sizeof(char *));
	if (e->kv == NULL)
		goto out_oom;
	cJSON_ArrayForEach(it, sb->envs) {
		const char *ov = env_override(cmd, it->string);
		const char *val = ov != NULL ? ov : it->valuestring;
		size_t len = strlen(it->string) + strlen(val) + 2;
		char *kv = malloc(len);

		if (kv == NULL)
			goto out_oom;
		snprintf(kv, len, "%s=%s", it->string, val);
		e->kv[e->n++] = kv;
	}
	return true;
out_oom:
	mock_err_set(&op->err, 500, "", "error", "out of memory");
	return false;
}

mock_guest *ops_io_begin(mock_op *op, const mock_cmd_req *cmd, ops_env *env)
{
	mock_model *m = op->mock->model;
	mock_sandbox *sb;
	mock_guest *g = NULL;

	if (env != NULL)
		memset(env, 0, sizeof(*env));
	pthread_mutex_lock(&m->lock);
	ops_tick(op->mock);
	sb = ops_find(op);
	if (sb != NULL && (sb->status != ST_RUNNING || sb->guest == NULL))
		mock_err_set(&op->err, 409, "NOT_RUNNING", "status", "sandbox is not running");
	else if (sb != NULL && (cmd == NULL || build_env(op, sb, cmd, env)))
		g = sb->guest;
	if (g != NULL) {
		sb->busy++;
		mock_sandbox_touch(m, sb);
		if (env != NULL)
			env->isolate_net = egress_is_off(&sb->egress);
		op->sb = sb;
	}
	pthread_mutex_unlock(&m->lock);
	return g;
}

void ops_io_end(sbx_mock *mock, mock_sandbox *sb)
{
	pthread_mutex_lock(&mock->model->lock);
	sb->busy--;
	mock_sandbox_touch(mock->model, sb);
	mock_op_guest_release(mock, sb); /* the last holder of a destroyed one */
	pthread_mutex_unlock(&mock->model->lock);
	mock_op_reap_guests(mock);
}

void ops_exec_spec(mock_exec_spec *spec, const mock_cmd_req *cmd, const ops_env *env)
{
	memset(spec, 0, sizeof(*spec));
	spec->cmd = cmd->cmd;
	spec->args = cmd->args;
	spec->nargs = cmd->nargs;
	spec->cwd = cmd->cwd;
	spec->env = (const char *const *)env->kv;
	spec->nenv = env->n;
}

/* ---- a command in a guest, run to its end ---- */

static void run_output(void *arg, int which, const char *buf, size_t n)
{
	const mock_exec_sink *sink = arg;

	sink->output(sink->ctx, which, buf, n);
}

static bool run_gone(void *arg)
{
	const mock_exec_sink *sink = arg;

	return sink->gone != NULL && sink->gone(sink->ctx);
}

/* c's spec as it runs: through "runuser -u user --" for an account but
 * root (its words in *words, malloc'd: the caller frees them). False
 * with why when it cannot run so. */
static bool run_as(const ops_guest_cmd *c, mock_exec_spec *spec, const char ***words, char *why,
		   size_t cap)
{
	const char *u = c->user;
	const char **w;

	*spec = c->spec;
	*words = NULL;
	if (u == NULL || u[0] == '\0' || strcmp(u, "root") == 0 || strcmp(u, "0") == 0)
		return true;
	/* an unprivileged mock's cells map only root: no other uid exists
	 * there (runuser said only "cannot set groups"); why nothing maps
	 * more: TEMPLATES.md "A non-root USER" */
	if (!mock_cell_host_root()) {
		snprintf(why, cap,
			 "USER %s: this mock runs unprivileged, so its cells map only root (uid 0 inside is the "
			 "mock's own uid outside) and no uid for %s exists in them: a command cannot run as any "
			 "account but root here; a mock run as root can (mock-api/TEMPLATES.md)",
			 u, u);
		return false;
	}
	w = calloc(c->spec.nargs + 4, sizeof(*w));
	if (w == NULL) {
		snprintf(why, cap, "out of memory for the command's %zu arguments", c->spec.nargs + 4);
		return false;
	}
	w[0] = "-u";
	w[1] = u;
	w[2] = "--";
	w[3] = c->spec.cmd;
	if (c->spec.nargs > 0)
		memcpy(w + 4, c->spec.args, c->spec.nargs * sizeof(*w));
	spec->cmd = "runuser"; /* util-linux's, in the image */
	spec->args = w;
	spec->nargs = c->spec.nargs + 4;
	*words = w;
	return true;
}

void ops_guest_run(mock_guest *g, const ops_guest_cmd *c, const mock_exec_sink *sink, ops_guest_ran *ran)
{
	mock_exec_io io = {.output = run_output, .abort = run_gone, .arg = (void *)sink};
	mock_exec_spec spec;
	mock_exec_result r;
	const char **words = NULL;
	sbx_err err = {{0}};
	int64_t t0;

	memset(ran, 0, sizeof(*ran));
	ran->exit_code = -1;
	if (sink->start != NULL && !sink->start(sink->ctx)) {
		ran->refused = true;
		return;
	}
	t0 = sbx_mono_us();
	if (!run_as(c, &spec, &words, ran->error, sizeof(ran->error)))
		goto out;
	if (mock_guest_exec(g, &spec, c->timeout_ms, &io, &r, &err) != 0) {
		snprintf(ran->error, sizeof(ran->error), "%s", err.msg);
		goto out;
	}
	ran->started = true;
	ran->timed_out = r.timed_out;
	ran->aborted = r.aborted || (r.exit_code >= 128 && run_gone((void *)sink));
	ran->exit_code = r.exit_code;
out:
	ran->ms = (sbx_mono_us() - t0) / 1000;
	free(words);
}

/* ---- exec, run to its end ---- */

/* The guest's spec of q run with env (buffered or streamed). */
static void exec_req_spec(mock_exec_spec *spec, const mock_exec_req *q, const ops_env *env)
{
	ops_exec_spec(spec, &q->cmd, env);
	spec->isolate_net = env->isolate_net;
	spec->stdin_data = q->stdin_data;
	spec->stdin_len = q->stdin_len;
}

/* Runs the command (guest running, sandbox busy) into res. */
static void exec_run_command(mock_guest *g, const mock_exec_req *q, const ops_env *env,
			     const mock_exec_sink *sink, mock_exec_outcome *res)
{
	ops_guest_cmd c = {.timeout_ms = q->timeout_ms};
	ops_guest_ran ran;

	exec_req_spec(&c.spec, q, env);
	ops_guest_run(g, &c, sink, &ran);
	if (ran.refused) {
		res->refused = true;
		return;
	}
	res->exec_ms = ran.ms;
	res->exit_code = ran.exit_code;
	if (!ran.started) {
		snprintf(res->error, sizeof(res->error), "%s", ran.error);
	} else if (ran.timed_out) {
		res->exit_code = 124;
		snprintf(res->error, sizeof(res->error), "exec timed out after %lld ms",
			 (long long)q->timeout_ms);
	}
}

int mock_op_exec(mock_op *op, const mock_exec_req *q, const mock_exec_sink *sink,
		 mock_exec_outcome *res)
{
	ops_env env;
	mock_guest *g = ops_io_begin(op, &q->cmd, &env);

	memset(res, 0, sizeof(*res));
	if (g == NULL) {
		ops_env_free(&env);
		return -1;
	}
	if (ops_fault_is(op, FK_EXEC_AGENT_ERROR)) {
		res->exit_code = -1;
		snprintf(res->error, sizeof(res->error), "%s", op->fault->message);
	} else if (ops_fault_is(op, FK_EXEC_OOM)) {
		sink->output(sink->ctx, 2, "Killed\n", 7);
		res->exit_code = 137;
	} else {
		exec_run_command(g, q, &env, sink, res);
	}
	ops_io_end(op->mock, op->sb);
	ops_env_free(&env);
	return 0;
}

/* ---- streams ---- */

bool ops_stream_quiet(mock_op_stream *s)
{
	s->quiet_ms += MOCK_STREAM_WAIT_MS;
	if (s->quiet_ms < atomic_load(&s->mock->hb_ms))
		return false;
	s->quiet_ms = 0;
	return true;
}

int mock_op_stream_next(mock_op_stream *s, sbx_strbuf *out)
{
	size_t before = out->len;
	int rc = s->next(s, out);

	if (out->len > before)
		s->quiet_ms = 0;
	return rc;
}

void mock_op_stream_end(mock_op_stream *s)
{
	sbx_mock *mock = s->mock;
	mock_sandbox *sb = s->sb;

	s->end(s);
	if (sb != NULL) /* a template's log holds no sandbox */
		ops_io_end(mock, sb);
}

/* ---- exec, as a stream ---- */

typedef struct exec_stream {
	mock_op_stream s;
	mock_proc proc;
	bool started;
	unsigned frames;    /* data frames and heartbeats sent */
	int cut_after;      /* exec_stream_cut: frames before the cut, -1 off */
	bool hb_only;       /* exec_heartbeats_only */
	bool fixed;         /* no process (exec_agent_error, exec_oom, spawn failed): */
	bool has_error;     /* an error frame */
	char error[512];
	int fixed_exit;     /* then this exit code */
} exec_stream;

static void frame_data(exec_stream *x, sbx_strbuf *out, const char *key, const char *buf, size_t n)
{
	sbx_strbuf_printf(out, "{\"%s\":", key);
	json_escape(out, buf, n);
	sbx_strbuf_puts(out, "}\n");
	x->frames++;
}

static int exec_next(mock_op_stream *s, sbx_strbuf *out)
{
	exec_stream *x = (exec_stream *)s;
	char buf[8192];
	int which = 0;
	ssize_t n;

	if (x->cut_after >= 0 && x->frames >= (unsigned)x->cut_after)
		return MOCK_STREAM_CUT;
	if (x->fixed) {
		if (x->has_error)
			frame_data(x, out, "error", x->error, strlen(x->error));
		sbx_strbuf_printf(out, "{\"exit_code\":%d}\n", x->fixed_exit);
		return MOCK_STREAM_DONE;
	}
	if (x->hb_only) {
		mock_sleep_ms(s->mock, MOCK_STREAM_WAIT_MS);
		n = 0;
	} else {
		n = mock_proc_read(&x->proc, MOCK_STREAM_WAIT_MS, buf, sizeof(buf), &which);
	}
	if (n > 0) {
		frame_data(x, out, which == 1 ? "stdout" : "stderr", buf, (size_t)n);
	} else if (n < 0) {
		sbx_strbuf_printf(out, "{\"exit_code\":%d}\n", mock_proc_finish(&x->proc));
		return MOCK_STREAM_DONE;
	} else if (ops_stream_quiet(s)) {
		sbx_strbuf_puts(out, "{\"hb\":true}\n");
		x->frames++;
	}
	return MOCK_STREAM_MORE;
}

static void exec_end(mock_op_stream *s)
{
	exec_stream *x = (exec_stream *)s;

	if (x->started && x->proc.pid > 0) {
		mock_proc_kill(&x->proc);
		mock_proc_finish(&x->proc);
	}
	free(x);
}

mock_op_stream *mock_op_exec_stream(mock_op *op, const mock_exec_req *q)
{
	exec_stream *x = calloc(1, sizeof(*x));
	mock_exec_spec spec;
	sbx_err err = {{0}};
	ops_env env;
	mock_guest *g;

	if (x == NULL) {
		mock_err_set(&op->err, 500, "", "error", "out of memory");
		return NULL;
	}
	g = ops_io_begin(op, &q->cmd, &env);
	if (g == NULL) {
		ops_env_free(&env);
		free(x);
		return NULL;
	}
	x->s = (mock_op_stream){.mock = op->mock, .sb = op->sb, .g = g, .next = exec_next, .end = exec_end};
	x->cut_after = ops_fault_is(op, FK_EXEC_STREAM_CUT) ? (int)op->fault->after_frames : -1;
	x->hb_only = ops_fault_is(op, FK_EXEC_HEARTBEATS_ONLY);
	x->fixed_exit = -1;
	if (ops_fault_is(op, FK_EXEC_AGENT_ERROR)) {
		x->fixed = x->has_error = true;
		snprintf(x->error, sizeof(x->error), "%s", op->fault->message);
	} else if (ops_fault_is(op, FK_EXEC_OOM)) {
		x->fixed = true;
		x->fixed_exit = 137;
	} else if (!x->hb_only) {
		exec_req_spec(&spec, q, &env);
		if (mock_proc_spawn(g, &spec, &x->proc, &err) == 0)
			x->started = true;
		else {
			x->fixed = x->has_error = true;
			snprintf(x->error, sizeof(x->error), "%s", err.msg);
		}
	}
	ops_env_free(&env);
	return &x->s;
}

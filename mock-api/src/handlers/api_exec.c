/* api_exec: POST /v1/sandboxes/{id}/exec — one command in the sandbox's
 * guest, answered as one JSON result or, with stream, as NDJSON frames
 * (stdout/stderr chunks, heartbeats while silent, the exit code last). The
 * exec fault kinds (agent error, oom, stream cut, heartbeats only) shape
 * the answer here; they change no model state.
 *
 * Never take the model lock here: mock_op_exec_begin/mock_op_io_end mark
 * the sandbox busy around the command. Never block an MHD pool thread: the
 * route blocks (worker thread) and a stream is read by
 * mock_blocking_response's worker. */
#define _GNU_SOURCE
#include "handlers/api.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Buffered answers: each stream's output is held JSON-escaped (what the
 * answer sends), at most EXEC_OUTPUT_CAP bytes of it; all buffered execs
 * together hold at most EXEC_OUTPUT_BUDGET (from the first byte kept to
 * the answer's last byte sent). Past either, output is dropped (the
 * command's pipes are still drained) and the answer's `truncated` says so;
 * an exec that finds the budget full is not started (503, Retry-After). */
#define EXEC_OUTPUT_CAP ((size_t)16 * 1024 * 1024)
#define EXEC_OUTPUT_BUDGET ((size_t)128 * 1024 * 1024)
#define BODY_HEAD "{\"status\":\"success\",\"data\":{\"result\":{\"stdout\":\""
#define BODY_MID "\",\"stderr\":\""
#define SMALL_ANSWER ((size_t)64 * 1024)

typedef struct exec_args {
	const char *cmd;
	const char **args;
	size_t nargs;
	mock_exec_env env;
	const char *stdin_data;
	int64_t timeout_ms;
	bool stream;
} exec_args;

static void exec_args_free(exec_args *a)
{
	free(a->args);
	mock_exec_env_free(&a->env);
}

static bool parse_exec(mreq *r, mresp *out, const cJSON *b, exec_args *a)
{
	const cJSON *args = NULL, *env = NULL, *it;
	const char *sq = req_query(r, "stream");
	bool stream = false;
	size_t i = 0;

	memset(a, 0, sizeof(a[0]));
	a->timeout_ms = r->mock->exec_timeout_ms;
	if (!api_get_str(b, "cmd", &a->cmd, out) || !api_get_kind(b, "args", true, &args, out) ||
	    !api_get_kind(b, "env", false, &env, out) || !api_get_str(b, "stdin", &a->stdin_data, out) ||
	    !api_get_bool(b, "stream", &stream, NULL, out) ||
	    !api_get_int(b, "timeout_ms", 0, 86400000, &a->timeout_ms, NULL, out))
		return false;
	if (a->cmd == NULL || a->cmd[0] == '\0') {
		resp_fail(out, 400, "cmd", "INVALID_REQUEST", "cmd is required (an executable, not a shell line)");
		return false;
	}
	a->stream = stream || (sq != NULL && (strcmp(sq, "true") == 0 || strcmp(sq, "1") == 0));
	a->nargs = args != NULL ? (size_t)cJSON_GetArraySize(args) : 0;
	a->args = calloc(a->nargs + 1, sizeof(char *));
	if (a->args == NULL)
		return false;
	if (args != NULL) {
		cJSON_ArrayForEach(it, args) {
			if (!cJSON_IsString(it)) {
				resp_fail(out, 400, "args", "INVALID_REQUEST", "args must be an array of strings");
				return false;
			}
			a->args[i++] = it->valuestring;
		}
	}
	if (env != NULL) {
		cJSON_ArrayForEach(it, env) {
			if (!cJSON_IsString(it)) {
				resp_fail(out, 400, "env", "INVALID_REQUEST", "env values must be strings");
				return false;
			}
		}
	}
	return true;
}

static char *exec_result_json(const char *out, size_t olen, const char *err, size_t elen,
			      int code, const char *error, int64_t ms, size_t *len)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;

	sbx_strbuf_puts(&sb, "{\"status\":\"success\",\"data\":{\"result\":{\"stdout\":");
	json_escape(&sb, out, olen);
	sbx_strbuf_puts(&sb, ",\"stderr\":");
	json_escape(&sb, err, elen);
	sbx_strbuf_printf(&sb, ",\"exit_code\":%d", code);
	if (error != NULL) {
		sbx_strbuf_puts(&sb, ",\"error\":");
		json_escape(&sb, error, strlen(error));
	}
	sbx_strbuf_printf(&sb, "},\"exec_ms\":%lld}}", (long long)ms);
	if (sb.oom) {
		sbx_strbuf_free(&sb);
		return NULL;
	}
	return sbx_strbuf_detach(&sb, len);
}

/* Streaming: an MHD callback response fed from the command's pipes. */
typedef struct stream_ctx {
	sbx_mock *mock;
	mock_sandbox *sb;
	mock_proc proc;
	bool started;
	bool done;
	sbx_strbuf pending;
	size_t pend_off;
	unsigned frames;
	int cut_after;         /* exec_stream_cut: frames before the cut, -1 off */
	bool hb_only;
	char *spawn_error;     /* spawn failed: an error frame then exit -1 */
	int fixed_exit;        /* agent error / oom: no process */
	char *fixed_error;
	atomic_bool gone;      /* the client went away (stream_cancel) */
	/* The client's socket, polled while the command is silent (the
	 * suspended connection does not notice a hang-up by itself). Once the
	 * connection is closed the number may be reused: then it can only say
	 * "gone" about a stream whose client is gone anyway, or "alive" until
	 * stream_cancel comes. */
	int conn_fd;
} stream_ctx;

static void frame_data(stream_ctx *c, const char *key, const char *buf, size_t n)
{
	sbx_strbuf_printf(&c->pending, "{\"%s\":", key);
	json_escape(&c->pending, buf, n);
	sbx_strbuf_puts(&c->pending, "}\n");
	c->frames++;
}

static void stream_next(stream_ctx *c)
{
	char buf[8192];
	int hb = atomic_load(&c->mock->hb_ms);
	int64_t waited = 0;

	if (c->spawn_error != NULL || c->fixed_error != NULL || c->fixed_exit >= 0) {
		const char *msg = c->spawn_error != NULL ? c->spawn_error : c->fixed_error;

		if (msg != NULL)
			frame_data(c, "error", msg, strlen(msg));
		sbx_strbuf_printf(&c->pending, "{\"exit_code\":%d}\n",
				  c->fixed_exit >= 0 ? c->fixed_exit : -1);
		c->done = true;
		return;
	}
	for (;;) {
		int which = 0;
		ssize_t n;

		if (atomic_load(&c->mock->stopping) || atomic_load(&c->gone))
			return;
		if (mock_fd_gone(c->conn_fd)) {
			atomic_store(&c->gone, true);
			return;
		}
		n = c->hb_only ? 0 : mock_proc_read(&c->proc, 200, buf, sizeof(buf), &which);
		if (c->hb_only)
			mock_sleep_ms(c->mock, 200);
		if (n > 0) {
			frame_data(c, which == 1 ? "stdout" : "stderr", buf, (size_t)n);
			return;
		}
		if (n < 0) {
			int code = mock_proc_finish(&c->proc);

			sbx_strbuf_printf(&c->pending, "{\"exit_code\":%d}\n", code);
			c->done = true;
			return;
		}
		waited += 200;
		if (waited >= hb) {
			sbx_strbuf_puts(&c->pending, "{\"hb\":true}\n");
			c->frames++;
			return;
		}
	}
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *out, size_t max)
{
	stream_ctx *c = cls;
	size_t n;

	(void)pos;
	while ((n = api_pending_take(&c->pending, &c->pend_off, out, max)) == 0) {
		if (c->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (atomic_load(&c->mock->stopping) || atomic_load(&c->gone))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (c->cut_after >= 0 && c->frames >= (unsigned)c->cut_after)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		stream_next(c);
	}
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	stream_ctx *c = cls;

	if (c->started && c->proc.pid > 0) {
		mock_proc_kill(&c->proc);
		mock_proc_finish(&c->proc);
	}
	mock_op_io_end(c->mock, c->sb);
	sbx_strbuf_free(&c->pending);
	free(c->spawn_error);
	free(c->fixed_error);
	free(c);
}

/* From the server thread: the client is gone, stop waiting for output. */
static void stream_cancel(void *cls)
{
	stream_ctx *c = cls;

	atomic_store(&c->gone, true);
}

static void exec_stream(mreq *r, mresp *out, mock_sandbox *sb, mock_guest *g,
			const mock_exec_spec *spec)
{
	stream_ctx *c = calloc(1, sizeof(*c));
	sbx_err err = {{0}};

	if (c == NULL) {
		mock_op_io_end(r->mock, sb);
		resp_error(out, 500, "out of memory");
		return;
	}
	c->mock = r->mock;
	c->sb = sb;
	c->conn_fd = req_conn_fd(r);
	c->cut_after = api_fault_is(r, FK_EXEC_STREAM_CUT) ? (int)r->fault.after_frames : -1;
	c->hb_only = api_fault_is(r, FK_EXEC_HEARTBEATS_ONLY);
	c->fixed_exit = -1;
	sbx_strbuf_init(&c->pending);
	if (api_fault_is(r, FK_EXEC_AGENT_ERROR)) {
		c->fixed_error = strdup(r->fault.message);
	} else if (api_fault_is(r, FK_EXEC_OOM)) {
		c->fixed_exit = 137;
	} else if (!c->hb_only) {
		if (mock_proc_spawn(g, spec, &c->proc, &err) == 0)
			c->started = true;
		else
			c->spawn_error = strdup(err.msg);
	}
	/* stream_reader waits for the command: it runs on a worker thread */
	api_ndjson_response(r, out, stream_reader, c, stream_free, stream_cancel);
}

/* ---- buffered output: escaped as it comes, within the cap and budget ---- */

/* Takes up to want bytes of the budget; returns how many it got. */
static size_t budget_take(sbx_mock *m, size_t want)
{
	size_t held = atomic_load(&m->exec_out_held), got;

	do {
		got = held >= EXEC_OUTPUT_BUDGET ? 0 : EXEC_OUTPUT_BUDGET - held;
		if (got > want)
			got = want;
		if (got == 0)
			return 0;
	} while (!atomic_compare_exchange_weak(&m->exec_out_held, &held, held + got));
	return got;
}

static void budget_give(sbx_mock *m, size_t n)
{
	if (n > 0)
		atomic_fetch_sub(&m->exec_out_held, n);
}

/* One buffered exec's output, which becomes the answer without a copy:
 * text[0] is BODY_HEAD then stdout escaped, text[1] BODY_MID then stderr
 * escaped, then the rest of the answer; charged: bytes of the budget they
 * hold. */
typedef struct capture {
	sbx_mock *mock;
	mreq *r;
	sbx_strbuf text[2];
	size_t base[2];
	char carry[2][4]; /* an incomplete UTF-8 sequence at a read's end */
	size_t ncarry[2];
	size_t charged;
	const char *cut[2]; /* why output was dropped: NULL, "cap", "budget", "memory" */
} capture;

/* Escapes s[0..len) of stream k into its text, within the cap and budget. */
static void capture_piece(capture *c, int k, const char *s, size_t len, bool more)
{
	sbx_strbuf *sb = &c->text[k];
	size_t room = c->base[k] + EXEC_OUTPUT_CAP - sb->len, before = sb->len;
	size_t want = len < room / 6 ? len * 6 : room, got = budget_take(c->mock, want), done, left;

	done = json_escape_some(sb, s, len, sb->len + got, more);
	budget_give(c->mock, got - (sb->len - before));
	c->charged += sb->len - before;
	left = len - done;
	if (left == 0)
		return;
	if (more && left < sizeof(c->carry[k]) && mock_utf8_incomplete(s + done, left) && !sb->oom) {
		memcpy(c->carry[k], s + done, left);
		c->ncarry[k] = left;
		return;
	}
	c->cut[k] = sb->oom ? "memory" : got < want ? "budget" : "cap";
}

static void capture_output(void *arg, int which, const char *buf, size_t n)
{
	capture *c = arg;
	int k = which == 1 ? 0 : 1;

	while (n > 0 && c->cut[k] == NULL) {
		char tmp[4 + 4096];
		size_t take, len;

		if (c->ncarry[k] == 0) {
			capture_piece(c, k, buf, n, true);
			return;
		}
		take = n < 4096 ? n : 4096;
		memcpy(tmp, c->carry[k], c->ncarry[k]);
		memcpy(tmp + c->ncarry[k], buf, take);
		len = c->ncarry[k] + take;
		c->ncarry[k] = 0;
		capture_piece(c, k, tmp, len, true);
		buf += take;
		n -= take;
	}
}

static bool capture_gone(void *arg)
{
	return req_client_gone(((capture *)arg)->r);
}

static void capture_free(capture *c)
{
	sbx_strbuf_free(&c->text[0]);
	sbx_strbuf_free(&c->text[1]);
	budget_give(c->mock, c->charged);
	c->charged = 0;
}

/* Completes the answer's text (the end goes after stderr, in text[1]);
 * false when out of memory. */
static bool capture_end(capture *c, int code, const char *error, int64_t ms)
{
	sbx_strbuf *sb = &c->text[1];
	const char *sep = "";

	for (int k = 0; k < 2; k++) {
		if (c->ncarry[k] > 0 && c->cut[k] == NULL)
			capture_piece(c, k, c->carry[k], c->ncarry[k], false);
	}
	sbx_strbuf_printf(sb, "\",\"exit_code\":%d", code);
	if (error != NULL) {
		sbx_strbuf_puts(sb, ",\"error\":");
		json_escape(sb, error, strlen(error));
	}
	if (c->cut[0] != NULL || c->cut[1] != NULL)
		sbx_strbuf_puts(sb, ",\"truncated\":{");
	for (int k = 0; k < 2; k++) {
		if (c->cut[k] != NULL) {
			sbx_strbuf_printf(sb, "%s\"%s\":\"%s\"", sep, k == 0 ? "stdout" : "stderr", c->cut[k]);
			sep = ",";
		}
	}
	if (c->cut[0] != NULL || c->cut[1] != NULL)
		sbx_strbuf_puts(sb, "}");
	sbx_strbuf_printf(sb, "},\"exec_ms\":%lld}}", (long long)ms);
	return !c->text[0].oom && !sb->oom;
}

/* An answer of two pieces that gives its share of the budget back once
 * it is sent. */
typedef struct held_body {
	sbx_mock *mock;
	char *piece[2];
	size_t charged;
} held_body;

static void held_body_free(void *cls)
{
	held_body *h = cls;

	budget_give(h->mock, h->charged);
	free(h->piece[0]);
	free(h->piece[1]);
	free(h);
}

/* Answers c's text, which holds its charge until it is sent. A small
 * answer (most are) is one plain body, as any other answer: a copy of at
 * most SMALL_ANSWER bytes, and its charge is given back at once; so is one
 * for a fault that reshapes answers. */
static void answer_held(mreq *r, mresp *out, capture *c)
{
	bool small = c->text[0].len + c->text[1].len <= SMALL_ANSWER;
	held_body *h = r->fault_fired || small ? NULL : calloc(1, sizeof(*h));
	struct MHD_IoVec iov[2];
	char *body;
	size_t len;

	if (h != NULL) {
		h->mock = r->mock;
		for (int k = 0; k < 2; k++) {
			iov[k].iov_len = c->text[k].len;
			iov[k].iov_base = h->piece[k] = sbx_strbuf_detach(&c->text[k], &len);
		}
		h->charged = c->charged;
		c->charged = 0;
		out->custom = MHD_create_response_from_iovec(iov, 2, held_body_free, h);
		if (out->custom == NULL) {
			held_body_free(h);
			resp_error(out, 500, "out of memory");
			return;
		}
		out->status = 200;
		out->ctype = "application/json";
		return;
	}
	sbx_strbuf_append(&c->text[0], c->text[1].data, c->text[1].len);
	if (c->text[0].oom) {
		capture_free(c);
		resp_error(out, 500, "out of memory");
		return;
	}
	body = sbx_strbuf_detach(&c->text[0], &len);
	capture_free(c);
	resp_raw(out, 200, "application/json", body, len);
}

/* Runs the command to its end and answers its result (an exec fault
 * replaces the command). */
static void exec_run(mreq *r, mresp *out, mock_guest *g, const mock_exec_spec *spec, int64_t timeout_ms)
{
	capture c = {.mock = r->mock, .r = r};
	mock_exec_io io = {.output = capture_output, .abort = capture_gone, .arg = &c};
	mock_exec_result res;
	sbx_err err = {{0}};
	int64_t t0 = sbx_mono_us();
	char msg[96], *body;
	size_t len = 0;

	if (atomic_load(&r->mock->exec_out_held) >= EXEC_OUTPUT_BUDGET) {
		resp_header(out, "Retry-After", "1");
		resp_error(out, 503,
			   "the mock holds its whole budget of buffered exec output; the command was not "
			   "started, retry later");
		return;
	}
	sbx_strbuf_init(&c.text[0]);
	sbx_strbuf_init(&c.text[1]);
	sbx_strbuf_puts(&c.text[0], BODY_HEAD);
	sbx_strbuf_puts(&c.text[1], BODY_MID);
	c.base[0] = c.text[0].len;
	c.base[1] = c.text[1].len;
	if (mock_guest_exec(g, spec, timeout_ms, &io, &res, &err) != 0) {
		capture_free(&c);
		body = exec_result_json("", 0, "", 0, -1, err.msg, (sbx_mono_us() - t0) / 1000, &len);
		if (body == NULL)
			resp_error(out, 500, "out of memory");
		else
			resp_raw(out, 200, "application/json", body, len);
		return;
	}
	if (res.timed_out) {
		snprintf(msg, sizeof(msg), "exec timed out after %lld ms", (long long)timeout_ms);
		res.exit_code = 124;
	}
	if (!capture_end(&c, res.exit_code, res.timed_out ? msg : NULL, (sbx_mono_us() - t0) / 1000)) {
		capture_free(&c);
		resp_error(out, 500, "out of memory");
		return;
	}
	answer_held(r, out, &c);
}

static void exec_once(mreq *r, mresp *out, mock_guest *g, const mock_exec_spec *spec,
		      int64_t timeout_ms)
{
	char *body = NULL;
	size_t len = 0;

	if (api_fault_is(r, FK_EXEC_AGENT_ERROR))
		body = exec_result_json("", 0, "", 0, -1, r->fault.message, 0, &len);
	else if (api_fault_is(r, FK_EXEC_OOM))
		body = exec_result_json("", 0, "Killed\n", 7, 137, NULL, 0, &len);
	else {
		exec_run(r, out, g, spec, timeout_ms);
		return;
	}
	if (body == NULL)
		resp_error(out, 500, "out of memory");
	else
		resp_raw(out, 200, "application/json", body, len);
}

void api_exec(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	exec_args a;
	mock_op op;
	char id[64];
	mock_guest *g;
	mock_exec_spec spec;

	memset(&a, 0, sizeof(a));
	if (b == NULL || !parse_exec(r, out, b, &a))
		goto out_free;
	api_op_init(&op, r, t, id, sizeof(id));
	g = mock_op_exec_begin(&op, cJSON_GetObjectItemCaseSensitive(b, "env"), &a.env);
	if (op.found[0] != '\0')
		snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", op.found);
	if (g == NULL) {
		resp_mock_err(out, &op.err);
		goto out_free;
	}
	memset(&spec, 0, sizeof(spec));
	spec.isolate_net = a.env.isolate_net;
	spec.cmd = a.cmd;
	spec.args = a.args;
	spec.nargs = a.nargs;
	spec.env = (const char *const *)a.env.kv;
	spec.nenv = a.env.n;
	spec.stdin_data = a.stdin_data;
	spec.stdin_len = a.stdin_data != NULL ? strlen(a.stdin_data) : 0;
	if (a.stream) {
		exec_stream(r, out, op.sb, g, &spec); /* the stream ends the op */
	} else {
		exec_once(r, out, g, &spec, a.timeout_ms);
		mock_op_io_end(r->mock, op.sb);
	}
out_free:
	exec_args_free(&a);
}

/* api_exec: POST /v1/sandboxes/{id}/exec — parses the command, runs it
 * with one operation (mock_op_exec, ops_exec.c, which applies the exec
 * faults) and answers one JSON result, its output gathered here as it
 * comes; or, with stream, answers the operation's NDJSON frames
 * (mock_op_exec_stream: stdout/stderr chunks, heartbeats while silent,
 * the exit code last) through api_stream_answer.
 *
 * Never block an MHD pool thread: the route blocks (worker thread) and a
 * stream is read by mock_blocking_response's worker. */
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
	mock_exec_req q;
	bool stream;
} exec_args;

static bool parse_exec(mreq *r, mresp *out, const cJSON *b, exec_args *a)
{
	const cJSON *args = NULL, *env = NULL;
	const char *sq = req_query(r, "stream");
	bool stream = false;

	a->q.timeout_ms = r->mock->exec_timeout_ms;
	if (!api_get_str(b, "cmd", &a->q.cmd.cmd, out) || !api_get_kind(b, "args", true, &args, out) ||
	    !api_get_kind(b, "env", false, &env, out) ||
	    !api_get_str(b, "stdin", &a->q.stdin_data, out) ||
	    !api_get_bool(b, "stream", &stream, NULL, out) ||
	    !api_get_int(b, "timeout_ms", 0, 86400000, &a->q.timeout_ms, NULL, out))
		return false;
	if (a->q.cmd.cmd == NULL || a->q.cmd.cmd[0] == '\0') {
		resp_fail(out, 400, "cmd", "INVALID_REQUEST", "cmd is required (an executable, not a shell line)");
		return false;
	}
	a->stream = stream || (sq != NULL && (strcmp(sq, "true") == 0 || strcmp(sq, "1") == 0));
	a->q.stdin_len = a->q.stdin_data != NULL ? strlen(a->q.stdin_data) : 0;
	return api_cmd_args(args, &a->q.cmd, out) && api_cmd_env(env, &a->q.cmd, out);
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
	mresp *out;
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

/* The command starts only while the budget has room; else a 503. */
static bool capture_start(void *arg)
{
	capture *c = arg;

	if (atomic_load(&c->mock->exec_out_held) < EXEC_OUTPUT_BUDGET)
		return true;
	resp_header(c->out, "Retry-After", "1");
	resp_error(c->out, 503,
		   "the mock holds its whole budget of buffered exec output; the command was not "
		   "started, retry later");
	return false;
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

/* Runs the command to its end and answers its result. */
static void exec_run(mreq *r, mresp *out, mock_op *op, const mock_exec_req *q)
{
	capture c = {.mock = r->mock, .r = r, .out = out};
	mock_exec_sink sink = {.start = capture_start, .output = capture_output,
			       .gone = capture_gone, .ctx = &c};
	mock_exec_outcome res;
	int rc;

	sbx_strbuf_init(&c.text[0]);
	sbx_strbuf_init(&c.text[1]);
	sbx_strbuf_puts(&c.text[0], BODY_HEAD);
	sbx_strbuf_puts(&c.text[1], BODY_MID);
	c.base[0] = c.text[0].len;
	c.base[1] = c.text[1].len;
	rc = mock_op_exec(op, q, &sink, &res);
	api_op_found(r, op);
	if (rc != 0 || res.refused) {
		capture_free(&c);
		if (rc != 0)
			resp_mock_err(out, &op->err);
		return;
	}
	if (!capture_end(&c, res.exit_code, res.error[0] != '\0' ? res.error : NULL, res.exec_ms)) {
		capture_free(&c);
		resp_error(out, 500, "out of memory");
		return;
	}
	answer_held(r, out, &c);
}

void api_exec(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	exec_args a;
	mock_op op;
	char id[64];
	mock_op_stream *s;

	memset(&a, 0, sizeof(a));
	if (b == NULL || !parse_exec(r, out, b, &a))
		goto out_free;
	api_op_init(&op, r, t, id, sizeof(id));
	if (!a.stream) {
		exec_run(r, out, &op, &a.q);
		goto out_free;
	}
	s = mock_op_exec_stream(&op, &a.q);
	api_op_found(r, &op);
	if (s == NULL)
		resp_mock_err(out, &op.err);
	else
		api_stream_answer(r, out, s);
out_free:
	api_cmd_free(&a.q.cmd);
}

/* cmd_exec: `exec`, buffered or streamed (NDJSON), and the mapping of the
 * remote exit code to sbxctl's. The stream is written to stdout/stderr as
 * each frame arrives; nothing is held back until the end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "output.h"
#include "stream.h"

const ctl_opt ctl_opts_exec[] = {
	{"stream", NULL, false, "print output as it arrives (NDJSON stream)"},
	{"env", "K=V", true, "override a variable declared in envs"},
	{NULL, NULL, false, NULL},
};

static void put(FILE *f, const char *s)
{
	fwrite(s, 1, strlen(s), f);
	fflush(f);
}

/* The stream's frames as they arrive (stream.c decodes them): text to
 * stdout/stderr, or every frame as one JSON line with --json. */
static void sink_out(void *ud, const char *text)
{
	ctl_ctx *ctx = ud;
	if (!ctx->json)
		put(ctx->out, text);
}

static void sink_err(void *ud, const char *text)
{
	ctl_ctx *ctx = ud;
	if (!ctx->json)
		put(ctx->err, text);
}

static void sink_error(void *ud, const char *message)
{
	ctl_ctx *ctx = ud;
	if (!ctx->json)
		fprintf(ctx->err, "sbxctl: exec error: %s\n", message);
}

static void sink_frame(void *ud, const cJSON *frame)
{
	ctl_ctx *ctx = ud;
	if (!ctx->json)
		return;
	char *s = cJSON_PrintUnformatted(frame);
	if (s != NULL) {
		fprintf(ctx->out, "%s\n", s);
		fflush(ctx->out);
	}
	free(s);
}

static void sink_bad(void *ud, const char *why)
{
	ctl_ctx *ctx = ud;
	fprintf(ctx->err, "sbxctl: exec: %s\n", why);
}

static bool on_chunk(void *ud, const char *data, size_t len)
{
	return ctl_stream_feed(ud, data, len);
}

static int run_streamed(ctl_ctx *ctx, const char *path, const char *body)
{
	ctl_stream_sink sink = {.out = sink_out, .err = sink_err, .error = sink_error, .frame = sink_frame,
				.bad = sink_bad, .ud = ctx};
	ctl_stream st;
	ctl_stream_init(&st, &sink);
	ctl_request req = {.method = "POST", .path = path, .query = "stream=true", .body = body,
			   .body_len = strlen(body), .on_chunk = on_chunk, .ud = &st};
	ctl_response resp;
	int rc = CTL_EXIT_FAIL;
	if (ctl_call(ctx, &req, &resp) != 0)
		goto out_free;
	ctl_stream_finish(&st);
	if (st.exit_code < 0) {
		ctl_fail(ctx, "exec: the stream ended without an exit code%s",
			 st.failed ? " (and had unparseable frames)" : "");
		goto out_free;
	}
	rc = st.exit_code;
out_free:
	ctl_response_free(&resp);
	ctl_stream_free(&st);
	return rc;
}

static int run_buffered(ctl_ctx *ctx, const char *path, const char *body)
{
	ctl_request req = {.method = "POST", .path = path, .body = body, .body_len = strlen(body)};
	ctl_response resp;
	if (ctl_call(ctx, &req, &resp) != 0) {
		ctl_response_free(&resp);
		return CTL_EXIT_FAIL;
	}
	const cJSON *result = cJSON_GetObjectItemCaseSensitive(resp.data, "result");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(result, "exit_code");
	const char *err = ctl_json_str(result, "error");
	if (ctx->json) {
		ctl_print_json(ctx->out, resp.data);
	} else {
		const char *o = ctl_json_str(result, "stdout");
		const char *e = ctl_json_str(result, "stderr");
		if (o != NULL)
			put(ctx->out, o);
		if (e != NULL)
			put(ctx->err, e);
		if (err != NULL && err[0] != '\0')
			fprintf(ctx->err, "sbxctl: exec error: %s\n", err);
	}
	int rc = CTL_EXIT_FAIL;
	if (cJSON_IsNumber(code))
		rc = ctl_exit_code_of(code);
	else if (!ctx->json)
		fprintf(ctx->err, "sbxctl: exec: the answer has no exit code\n");
	ctl_response_free(&resp);
	return rc;
}

int ctl_cmd_exec(ctl_ctx *ctx)
{
	const ctl_args *a = &ctx->args;
	if (a->dashdash == 0)
		return ctl_usage_error(ctx, "the sandbox ID goes before '--': sbxctl exec ID -- CMD [ARG...]");
	if (a->npos < 2)
		return ctl_usage_error(ctx, "missing the command to run: sbxctl exec ID -- CMD [ARG...]");
	if (a->dashdash != SIZE_MAX && a->dashdash > 1)
		return ctl_usage_error(ctx, "unexpected argument '%s' before '--' (only the sandbox ID goes there)",
				       a->pos[1]);
	bool stream = ctl_args_has(a, "stream");
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "cmd", a->pos[1]);
	cJSON *args = cJSON_AddArrayToObject(body, "args");
	for (size_t i = 2; i < a->npos; i++)
		cJSON_AddItemToArray(args, cJSON_CreateString(a->pos[i]));
	if (stream)
		cJSON_AddTrueToObject(body, "stream");
	int rc = CTL_EXIT_USAGE;
	if (ctl_add_env(ctx, body, "env", "env") != 0)
		goto out_free_body;
	if (ctx->timeout_ms < 0)
		ctx->timeout_ms = 0; /* a command may run long: no deadline unless asked */
	char *text = cJSON_PrintUnformatted(body);
	sbx_strbuf path = SBX_STRBUF_INIT;
	ctl_sandbox_path(&path, a->pos[0], "/exec");
	if (text == NULL || path.oom)
		rc = ctl_fail(ctx, "out of memory");
	else if (stream)
		rc = run_streamed(ctx, sbx_strbuf_str(&path), text);
	else
		rc = run_buffered(ctx, sbx_strbuf_str(&path), text);
	sbx_strbuf_free(&path);
	free(text);
out_free_body:
	cJSON_Delete(body);
	return rc;
}

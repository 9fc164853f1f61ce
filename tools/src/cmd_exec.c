/* cmd_exec: `exec`, buffered or streamed (NDJSON), and the mapping of the
 * remote exit code to sbxctl's. The stream is written to stdout/stderr as
 * each frame arrives; nothing is held back until the end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "output.h"

const ctl_opt ctl_opts_exec[] = {
	{"stream", NULL, false, "print output as it arrives (NDJSON stream)"},
	{"env", "K=V", true, "override a variable declared in envs"},
	{NULL, NULL, false, NULL},
};

/* Exit codes 0-255 pass through; anything else (negative, > 255) is 255. */
static int exit_code_of(const cJSON *v)
{
	double d = v->valuedouble;
	if (d < 0 || d > 255)
		return 255;
	return (int)d;
}

typedef struct stream_state {
	ctl_ctx *ctx;
	sbx_strbuf line;  /* partial line carried between chunks */
	int exit_code;    /* -1 until the final frame */
	bool failed;      /* an unparseable frame */
} stream_state;

static void put(FILE *f, const char *s)
{
	fwrite(s, 1, strlen(s), f);
	fflush(f);
}

static void handle_frame(stream_state *st, const char *text, size_t len)
{
	ctl_ctx *ctx = st->ctx;
	while (len > 0 && (text[len - 1] == '\r' || text[len - 1] == ' '))
		len--;
	if (len == 0)
		return;
	cJSON *f = cJSON_ParseWithLength(text, len);
	if (f == NULL) {
		fprintf(ctx->err, "sbxctl: exec: unparseable stream frame '%.*s'\n", (int)(len > 80 ? 80 : len), text);
		st->failed = true;
		return;
	}
	if (ctx->json) {
		char *s = cJSON_PrintUnformatted(f);
		if (s != NULL) {
			fprintf(ctx->out, "%s\n", s);
			fflush(ctx->out);
		}
		free(s);
	}
	const cJSON *v = NULL;
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "data"), "result");
	if (res != NULL) {
		/* A server that answered with the buffered form despite ?stream=true. */
		cJSON *copy = cJSON_Duplicate(res, true);
		cJSON_Delete(f);
		f = copy;
	}
	if (f == NULL)
		return;
	if (!ctx->json && (v = cJSON_GetObjectItemCaseSensitive(f, "stdout")) != NULL && cJSON_IsString(v))
		put(ctx->out, v->valuestring);
	if (!ctx->json && (v = cJSON_GetObjectItemCaseSensitive(f, "stderr")) != NULL && cJSON_IsString(v))
		put(ctx->err, v->valuestring);
	if ((v = cJSON_GetObjectItemCaseSensitive(f, "error")) != NULL && cJSON_IsString(v) && !ctx->json)
		fprintf(ctx->err, "sbxctl: exec error: %s\n", v->valuestring);
	if ((v = cJSON_GetObjectItemCaseSensitive(f, "exit_code")) != NULL && cJSON_IsNumber(v))
		st->exit_code = exit_code_of(v);
	cJSON_Delete(f);
}

static bool on_chunk(void *ud, const char *data, size_t len)
{
	stream_state *st = ud;
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		if (nl == NULL) {
			sbx_strbuf_append(&st->line, data, len);
			break;
		}
		size_t n = (size_t)(nl - data);
		if (st->line.len > 0) {
			sbx_strbuf_append(&st->line, data, n);
			handle_frame(st, sbx_strbuf_str(&st->line), st->line.len);
			sbx_strbuf_reset(&st->line);
		} else {
			handle_frame(st, data, n);
		}
		data += n + 1;
		len -= n + 1;
	}
	return !st->line.oom;
}

static int run_streamed(ctl_ctx *ctx, const char *path, const char *body)
{
	stream_state st = {.ctx = ctx, .line = SBX_STRBUF_INIT, .exit_code = -1};
	ctl_request req = {.method = "POST", .path = path, .query = "stream=true", .body = body,
			   .body_len = strlen(body), .on_chunk = on_chunk, .ud = &st};
	ctl_response resp;
	int rc = CTL_EXIT_FAIL;
	if (ctl_call(ctx, &req, &resp) != 0)
		goto out_free;
	if (st.line.len > 0)
		handle_frame(&st, sbx_strbuf_str(&st.line), st.line.len);
	if (st.exit_code < 0) {
		ctl_fail(ctx, "exec: the stream ended without an exit code%s",
			 st.failed ? " (and had unparseable frames)" : "");
		goto out_free;
	}
	rc = st.exit_code;
out_free:
	ctl_response_free(&resp);
	sbx_strbuf_free(&st.line);
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
		rc = exit_code_of(code);
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

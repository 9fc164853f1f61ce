/* cmd_sandbox: the sandbox lifecycle commands (create, ls, get, rm, pause,
 * resume, fork) and the --wait poller. Requests go through ctl_call only;
 * this file never touches curl. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "output.h"
#include "sbx/sys.h"

const ctl_opt ctl_opts_create[] = {
	{"shape", "SHAPE", false, "machine shape, e.g. s-1vcpu-1gb (see 'sbxctl shapes')"},
	{"rootfs", "NAME", false, "root filesystem, e.g. devbox:1 (see 'sbxctl rootfs')"},
	{"name", "NAME", false, "sandbox name (<= 22 chars, unique per key)"},
	{"egress", "'R1,R2'", false, "egress rules, comma-separated ('' = empty list)"},
	{"env", "K=V", true, "environment variable"},
	{"auto-pause", "SECONDS", false, "pause after this many idle seconds (60-86400)"},
	{NULL, NULL, false, NULL},
};

const ctl_opt ctl_opts_ls[] = {
	{"status", "STATUS", false, "only sandboxes in this state (running, paused, ...)"},
	{"page-size", "N", false, "sandboxes per request, 1-500 (default 100)"},
	{NULL, NULL, false, NULL},
};

const ctl_opt ctl_opts_wait[] = {
	{"wait", NULL, false, "poll until done (honours X-Poll-After)"},
	{"wait-timeout", "DURATION", false, "give up waiting after this long (default 5m)"},
	{NULL, NULL, false, NULL},
};

const ctl_opt ctl_opts_fork[] = {
	{"wait", NULL, false, "poll until the new sandbox is running (or paused)"},
	{"wait-timeout", "DURATION", false, "give up waiting after this long (default 5m)"},
	{"start-paused", NULL, false, "leave the fork paused"},
	{"egress", "'R1,R2'", false, "egress rules of the fork"},
	{"env", "K=V", true, "environment variable of the fork"},
	{NULL, NULL, false, NULL},
};

static void print_view(ctl_ctx *ctx, const cJSON *data)
{
	if (ctx->json)
		ctl_print_json(ctx->out, data);
	else
		ctl_print_kv(ctx->out, data);
}

int ctl_cmd_create(ctl_ctx *ctx)
{
	int rc = CTL_EXIT_USAGE;
	cJSON *body = cJSON_CreateObject();
	const char *v = NULL;
	static const char *const plain[][2] = {{"shape", "shape"}, {"rootfs", "rootfs"}, {"name", "name"}};
	for (size_t i = 0; i < 3; i++) {
		if ((v = ctl_args_get(&ctx->args, plain[i][0])) != NULL)
			cJSON_AddStringToObject(body, plain[i][1], v);
	}
	if ((v = ctl_args_get(&ctx->args, "egress")) != NULL) {
		cJSON_AddArrayToObject(body, "egress");
		if (ctl_add_rules(ctx, body, "egress", v) != 0)
			goto out_free_body;
	}
	if (ctl_add_env(ctx, body, "envs", "env") != 0)
		goto out_free_body;
	if ((v = ctl_args_get(&ctx->args, "auto-pause")) != NULL) {
		long secs = 0;
		sbx_err e = {""};
		/* the range the API accepts (spec: 60-86400, else 400) and --help names */
		if (ctl_parse_long(v, 60, 86400, "--auto-pause", &secs, &e) != 0) {
			rc = ctl_usage_error(ctx, "%s", e.msg);
			goto out_free_body;
		}
		cJSON_AddNumberToObject(body, "auto_pause_after_seconds", (double)secs);
	}
	ctl_response resp;
	rc = CTL_EXIT_FAIL;
	if (ctl_call_json(ctx, "POST", "/v1/sandboxes", NULL, body, false, &resp) == 0) {
		print_view(ctx, resp.data);
		rc = CTL_EXIT_OK;
	}
	ctl_response_free(&resp);
out_free_body:
	cJSON_Delete(body);
	return rc;
}

int ctl_cmd_ls(ctl_ctx *ctx)
{
	long page = 100;
	sbx_err e = {""};
	const char *ps = ctl_args_get(&ctx->args, "page-size");
	if (ps != NULL && ctl_parse_long(ps, 1, 500, "--page-size", &page, &e) != 0)
		return ctl_usage_error(ctx, "%s", e.msg);
	sbx_strbuf filter = SBX_STRBUF_INIT;
	const char *st = ctl_args_get(&ctx->args, "status");
	if (st != NULL) {
		sbx_strbuf_puts(&filter, "status=");
		ctl_escape(&filter, st);
	}
	cJSON *all = ctl_fetch_all(ctx, "/v1/sandboxes", st != NULL ? sbx_strbuf_str(&filter) : NULL, page);
	sbx_strbuf_free(&filter);
	if (all == NULL)
		return CTL_EXIT_FAIL;
	if (ctx->json) {
		ctl_print_json(ctx->out, all);
	} else {
		static const char *const hdr[] = {"ID", "NAME", "STATUS", "SHAPE", "IP", "CREATED"};
		static const char *const keys[] = {"id", "name", "status", "shape", "ip", "created_at"};
		ctl_table t;
		ctl_table_init(&t, 6, hdr);
		const cJSON *it = NULL;
		cJSON_ArrayForEach(it, all) {
			char *cells[6];
			for (size_t i = 0; i < 6; i++)
				cells[i] = ctl_json_field(it, keys[i]);
			ctl_table_add(&t, (const char *const *)cells);
			for (size_t i = 0; i < 6; i++)
				free(cells[i]);
		}
		ctl_table_print(&t, ctx->out);
		ctl_table_free(&t);
	}
	cJSON_Delete(all);
	return CTL_EXIT_OK;
}

static int simple_call(ctl_ctx *ctx, const char *method, const char *suffix, const cJSON *body,
		       ctl_response *resp)
{
	sbx_strbuf path = SBX_STRBUF_INIT;
	ctl_sandbox_path(&path, ctx->args.pos[0], suffix);
	int rc = ctl_call_json(ctx, method, sbx_strbuf_str(&path), NULL, body, false, resp);
	sbx_strbuf_free(&path);
	return rc;
}

int ctl_cmd_get(ctl_ctx *ctx)
{
	ctl_response resp;
	int rc = CTL_EXIT_FAIL;
	if (simple_call(ctx, "GET", "", NULL, &resp) == 0) {
		print_view(ctx, resp.data);
		rc = CTL_EXIT_OK;
	}
	ctl_response_free(&resp);
	return rc;
}

int ctl_cmd_rm(ctl_ctx *ctx)
{
	ctl_response resp;
	int rc = CTL_EXIT_FAIL;
	if (simple_call(ctx, "DELETE", "", NULL, &resp) == 0) {
		if (ctx->json) {
			ctl_print_json(ctx->out, resp.data);
		} else {
			const char *id = ctl_json_str(resp.data, "id");
			const char *st = ctl_json_str(resp.data, "status");
			fprintf(ctx->out, "%s %s\n", id != NULL ? id : ctx->args.pos[0], st != NULL ? st : "");
		}
		rc = CTL_EXIT_OK;
	}
	ctl_response_free(&resp);
	return rc;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static bool is_terminal_other(const char *st, const char *target)
{
	static const char *const bad[] = {"error", "failed", "destroying", "destroyed"};
	for (size_t i = 0; i < 4; i++) {
		if (strcmp(st, bad[i]) == 0 && strcmp(st, target) != 0)
			return true;
	}
	return false;
}

/* The next poll delay: the server's X-Poll-After when it sent one, else the
 * SDK's backoff (250 ms, growing after 5 s, capped at 2 s). */
static long next_delay(const ctl_response *resp, long *backoff, int64_t waited)
{
	long pa = ctl_parse_poll_after_ms(resp->poll_after);
	if (pa >= 0)
		return pa < 10 ? 10 : pa > 10000 ? 10000 : pa;
	long d = *backoff;
	if (waited > 5000)
		*backoff = *backoff * 5 / 4 > 2000 ? 2000 : *backoff * 5 / 4;
	return d;
}

/* Polls GET /v1/sandboxes/{id} until status == target. *resp holds the
 * answer that started the wait and, on return, the last one. */
static int wait_for(ctl_ctx *ctx, const char *id, const char *target, ctl_response *resp)
{
	int64_t limit = 300000;
	const char *wt = ctl_args_get(&ctx->args, "wait-timeout");
	sbx_err e = {""};
	if (wt != NULL && ctl_parse_duration_ms(wt, "--wait-timeout", &limit, &e) != 0)
		return ctl_usage_error(ctx, "%s", e.msg);
	sbx_strbuf path = SBX_STRBUF_INIT;
	ctl_sandbox_path(&path, id, "");
	int64_t start = sbx_mono_ms();
	long backoff = 250;
	int rc = CTL_EXIT_FAIL;
	for (;;) {
		const char *st = ctl_json_str(resp->data, "status");
		if (st != NULL && strcmp(st, target) == 0) {
			rc = CTL_EXIT_OK;
			break;
		}
		if (st != NULL && is_terminal_other(st, target)) {
			ctl_fail(ctx, "sandbox %s is '%s' while waiting for '%s'", id, st, target);
			break;
		}
		int64_t waited = sbx_mono_ms() - start;
		if (waited >= limit) {
			ctl_fail(ctx, "TimeoutError: sandbox %s still '%s' after %lld ms waiting for '%s'", id,
				 st != NULL ? st : "?", (long long)waited, target);
			break;
		}
		long d = next_delay(resp, &backoff, waited);
		if (d > limit - waited)
			d = (long)(limit - waited);
		sleep_ms(d);
		ctl_response_free(resp);
		if (ctl_call_json(ctx, "GET", sbx_strbuf_str(&path), NULL, NULL, false, resp) != 0)
			break;
	}
	sbx_strbuf_free(&path);
	return rc;
}

static int transition(ctl_ctx *ctx, const char *suffix, const cJSON *body, const char *target)
{
	ctl_response resp;
	int rc = CTL_EXIT_FAIL;
	if (simple_call(ctx, "POST", suffix, body, &resp) != 0)
		goto out_free_resp;
	if (ctl_args_has(&ctx->args, "wait")) {
		const char *id = ctl_json_str(resp.data, "id");
		char idbuf[256];
		snprintf(idbuf, sizeof idbuf, "%s", id != NULL ? id : ctx->args.pos[0]);
		rc = wait_for(ctx, idbuf, target, &resp);
		if (rc != CTL_EXIT_OK)
			goto out_free_resp;
	}
	print_view(ctx, resp.data);
	rc = CTL_EXIT_OK;
out_free_resp:
	ctl_response_free(&resp);
	return rc;
}

int ctl_cmd_pause(ctl_ctx *ctx)
{
	return transition(ctx, "/pause", NULL, "paused");
}

int ctl_cmd_resume(ctl_ctx *ctx)
{
	return transition(ctx, "/resume", NULL, "running");
}

int ctl_cmd_fork(ctl_ctx *ctx)
{
	int rc = CTL_EXIT_USAGE;
	cJSON *body = cJSON_CreateObject();
	bool paused = ctl_args_has(&ctx->args, "start-paused");
	if (paused)
		cJSON_AddTrueToObject(body, "start_paused");
	const char *eg = ctl_args_get(&ctx->args, "egress");
	if (eg != NULL) {
		cJSON_AddArrayToObject(body, "egress");
		if (ctl_add_rules(ctx, body, "egress", eg) != 0)
			goto out_free_body;
	}
	if (ctl_add_env(ctx, body, "envs", "env") != 0)
		goto out_free_body;
	rc = transition(ctx, "/fork", body, paused ? "paused" : "running");
out_free_body:
	cJSON_Delete(body);
	return rc;
}

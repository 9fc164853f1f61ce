/* ctl_helpers: what sbxctl's commands share — failing with a message,
 * calling the control plane (one client per run), reading files, building
 * env and egress lists, and fetching every page of a list. The commands
 * (cmd_*.c) call these; nothing here knows the command table. Never calls
 * exit(), never prints an answer (output.c does). */
#include "ctl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

__attribute__((format(printf, 2, 0)))
static int vreport(ctl_ctx *ctx, const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON *e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "class", "LocalError");
		cJSON_AddStringToObject(e, "message", msg);
		char *s = cJSON_PrintUnformatted(o);
		fprintf(ctx->err, "%s\n", s != NULL ? s : "");
		free(s);
		cJSON_Delete(o);
	} else {
		fprintf(ctx->err, "sbxctl: %s\n", msg);
	}
	return CTL_EXIT_FAIL;
}

int ctl_fail(ctl_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(ctx, fmt, ap);
	va_end(ap);
	return CTL_EXIT_FAIL;
}

int ctl_usage_error_in(ctl_ctx *ctx, const char *name, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (ctx->json) {
		/* README: with --json every failure is one {"error":...} object. */
		cJSON *o = cJSON_CreateObject();
		cJSON *e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "class", "UsageError");
		cJSON_AddNullToObject(e, "status");
		cJSON_AddStringToObject(e, "message", msg);
		if (name != NULL)
			cJSON_AddStringToObject(e, "command", name);
		char *j = cJSON_PrintUnformatted(o);
		fprintf(ctx->err, "%s\n", j != NULL ? j : "{\"error\":{}}");
		free(j);
		cJSON_Delete(o);
		return CTL_EXIT_USAGE;
	}
	fprintf(ctx->err, "sbxctl%s%s: %s\n", name != NULL ? " " : "", name != NULL ? name : "", msg);
	fprintf(ctx->err, "Try 'sbxctl%s%s --help'.\n", name != NULL ? " " : "", name != NULL ? name : "");
	return CTL_EXIT_USAGE;
}

int ctl_usage_error(ctl_ctx *ctx, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ctl_usage_error_in(ctx, ctx->cmd != NULL ? ctx->cmd->name : NULL, "%s", msg);
}

ctl_client *ctl_get_client(ctl_ctx *ctx)
{
	if (ctx->client_ready)
		return &ctx->client;
	if (ctl_client_init(&ctx->client, ctx->base_url, ctx->api_key, ctx->admin_token) != 0) {
		ctl_fail(ctx, "cannot set up the HTTP client (out of memory)");
		return NULL;
	}
	ctx->client.timeout_ms = ctx->timeout_ms >= 0 ? ctx->timeout_ms : CTL_DEFAULT_TIMEOUT_MS;
	ctx->client_ready = true;
	return &ctx->client;
}

int ctl_call(ctl_ctx *ctx, const ctl_request *req, ctl_response *resp)
{
	ctl_error e;
	memset(resp, 0, sizeof *resp);
	ctl_client *c = ctl_get_client(ctx);
	if (c == NULL)
		return -1;
	if (ctl_request_do(c, req, resp, &e) != 0) {
		/* The server's 401 alone does not say which setting was missing. */
		if (e.status == 401 && !req->admin && (ctx->api_key == NULL || ctx->api_key[0] == '\0'))
			snprintf(e.hint, sizeof e.hint, "no API key was sent: pass --api-key KEY or set "
				 "CREATEOS_SANDBOX_API_KEY");
		else if (e.status == 401 && req->admin)
			snprintf(e.hint, sizeof e.hint, "the mock refused the admin token (--admin-token or "
				 "SBX_MOCK_ADMIN_TOKEN; sbx-mock prints it at start)");
		ctl_print_error(ctx->err, ctx->json, &e);
		return -1;
	}
	return 0;
}

int ctl_call_json(ctl_ctx *ctx, const char *method, const char *path, const char *query,
		  const cJSON *body, bool admin, ctl_response *resp)
{
	char *text = body != NULL ? cJSON_PrintUnformatted(body) : NULL;
	if (body != NULL && text == NULL) {
		memset(resp, 0, sizeof *resp);
		ctl_fail(ctx, "out of memory");
		return -1;
	}
	ctl_request req = {.method = method, .path = path, .query = query, .admin = admin,
			   .body = text, .body_len = text != NULL ? strlen(text) : 0};
	int rc = ctl_call(ctx, &req, resp);
	free(text);
	return rc;
}

void ctl_sandbox_path(sbx_strbuf *sb, const char *id, const char *suffix)
{
	sbx_strbuf_puts(sb, "/v1/sandboxes/");
	ctl_escape(sb, id);
	sbx_strbuf_puts(sb, suffix);
}

int ctl_read_file(ctl_ctx *ctx, const char *path, sbx_strbuf *sb)
{
	bool is_stdin = strcmp(path, "-") == 0;
	FILE *f = is_stdin ? stdin : fopen(path, "rb");
	if (f == NULL) {
		ctl_fail(ctx, "cannot open '%s': %s", path, strerror(errno));
		return -1;
	}
	char buf[65536];
	size_t n = 0;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		sbx_strbuf_append(sb, buf, n);
	int bad = ferror(f);
	if (!is_stdin)
		fclose(f);
	if (bad != 0 || sb->oom) {
		ctl_fail(ctx, "cannot read '%s': %s", path, bad != 0 ? "read error" : "out of memory");
		return -1;
	}
	return 0;
}

int ctl_add_env(ctl_ctx *ctx, cJSON *body, const char *key, const char *opt)
{
	size_t n = 0;
	const char *const *vals = ctl_args_all(&ctx->args, opt, &n);
	if (n == 0)
		return 0;
	cJSON *obj = cJSON_AddObjectToObject(body, key);
	char what[64];
	snprintf(what, sizeof what, "--%s", opt);
	for (size_t i = 0; i < n; i++) {
		size_t klen = 0;
		sbx_err e = {""};
		if (ctl_parse_kv(vals[i], what, &klen, &e) != 0) {
			ctl_usage_error(ctx, "%s", e.msg);
			return -1;
		}
		char k[256];
		if (klen >= sizeof k) {
			ctl_usage_error(ctx, "%s: key of '%.40s...' is too long", what, vals[i]);
			return -1;
		}
		memcpy(k, vals[i], klen);
		k[klen] = '\0';
		cJSON_DeleteItemFromObjectCaseSensitive(obj, k);
		cJSON_AddStringToObject(obj, k, vals[i] + klen + 1);
	}
	return 0;
}

int ctl_add_rules(ctl_ctx *ctx, cJSON *body, const char *key, const char *list)
{
	size_t n = 0;
	char **v = ctl_split_commas(list, &n);
	if (v == NULL) {
		ctl_fail(ctx, "out of memory");
		return -1;
	}
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(body, key);
	if (arr == NULL)
		arr = cJSON_AddArrayToObject(body, key);
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(v[i]));
	ctl_strv_free(v);
	return 0;
}

cJSON *ctl_fetch_all(ctl_ctx *ctx, const char *path, const char *filter, long page_size)
{
	cJSON *all = cJSON_CreateArray();
	long offset = 0;
	for (int pages = 0; pages < 100000; pages++) {
		char query[512];
		snprintf(query, sizeof query, "limit=%ld&offset=%ld%s%s", page_size, offset,
			 filter != NULL ? "&" : "", filter != NULL ? filter : "");
		ctl_response resp;
		if (ctl_call_json(ctx, "GET", path, query, NULL, false, &resp) != 0) {
			ctl_response_free(&resp);
			cJSON_Delete(all);
			return NULL;
		}
		const cJSON *items = cJSON_GetObjectItemCaseSensitive(resp.data, "data");
		const cJSON *pg = cJSON_GetObjectItemCaseSensitive(resp.data, "pagination");
		const cJSON *total = cJSON_GetObjectItemCaseSensitive(pg, "total");
		int count = cJSON_GetArraySize(items);
		const cJSON *it = NULL;
		cJSON_ArrayForEach(it, items) {
			cJSON_AddItemToArray(all, cJSON_Duplicate(it, true));
		}
		bool more = count > 0 && cJSON_IsNumber(total) && (double)(offset + count) < total->valuedouble;
		ctl_response_free(&resp);
		if (!more)
			break;
		offset += count;
	}
	return all;
}

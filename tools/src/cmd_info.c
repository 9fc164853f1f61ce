/* cmd_info: read-only account and catalog commands (whoami, shapes,
 * rootfs) and the online egress commands (show, set, clear). Requests go
 * through ctl_call only. */
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "output.h"

int ctl_cmd_whoami(ctl_ctx *ctx)
{
	ctl_response resp;
	int rc = CTL_EXIT_FAIL;
	if (ctl_call_json(ctx, "GET", "/v1/whoami", NULL, NULL, false, &resp) == 0) {
		if (ctx->json)
			ctl_print_json(ctx->out, resp.data);
		else
			ctl_print_kv(ctx->out, resp.data);
		rc = CTL_EXIT_OK;
	}
	ctl_response_free(&resp);
	return rc;
}

static void table_from(ctl_ctx *ctx, const cJSON *items, size_t ncols, const char *const *hdr,
		       const char *const *keys)
{
	ctl_table t;
	ctl_table_init(&t, ncols, hdr);
	const cJSON *it = NULL;
	cJSON_ArrayForEach(it, items) {
		char *cells[8] = {NULL};
		for (size_t i = 0; i < ncols && i < 8; i++)
			cells[i] = ctl_json_field(it, keys[i]);
		ctl_table_add(&t, (const char *const *)cells);
		for (size_t i = 0; i < ncols && i < 8; i++)
			free(cells[i]);
	}
	ctl_table_print(&t, ctx->out);
	ctl_table_free(&t);
}

int ctl_cmd_shapes(ctl_ctx *ctx)
{
	cJSON *all = ctl_fetch_all(ctx, "/v1/shapes", NULL, 500);
	if (all == NULL)
		return CTL_EXIT_FAIL;
	if (ctx->json) {
		ctl_print_json(ctx->out, all);
	} else {
		static const char *const hdr[] = {"ID", "VCPU", "MEM_MIB", "DISK_MIB", "CPU_QUOTA_PCT"};
		static const char *const keys[] = {"id", "vcpu", "mem_mib", "default_disk_mib", "cpu_quota_pct"};
		table_from(ctx, all, 5, hdr, keys);
	}
	cJSON_Delete(all);
	return CTL_EXIT_OK;
}

int ctl_cmd_rootfs(ctl_ctx *ctx)
{
	ctl_response resp;
	if (ctl_call_json(ctx, "GET", "/v1/rootfs", NULL, NULL, false, &resp) != 0) {
		ctl_response_free(&resp);
		return CTL_EXIT_FAIL;
	}
	if (ctx->json) {
		ctl_print_json(ctx->out, resp.data);
		ctl_response_free(&resp);
		return CTL_EXIT_OK;
	}
	const char *def = ctl_json_str(resp.data, "default");
	const cJSON *entries = cJSON_GetObjectItemCaseSensitive(resp.data, "entries");
	const cJSON *names = cJSON_GetObjectItemCaseSensitive(resp.data, "rootfs");
	static const char *const hdr[] = {"NAME", "DEFAULT", "DEPRECATED", "SUCCESSOR", "DESCRIPTION"};
	ctl_table t;
	ctl_table_init(&t, 5, hdr);
	const cJSON *it = NULL;
	const cJSON *list = cJSON_GetArraySize(entries) > 0 ? entries : names;
	cJSON_ArrayForEach(it, list) {
		const char *name = cJSON_IsString(it) ? it->valuestring : ctl_json_str(it, "name");
		char *dep = ctl_json_field(it, "deprecated");
		const char *cells[] = {name, def != NULL && name != NULL && strcmp(def, name) == 0 ? "yes" : "",
				       dep != NULL ? dep : "", ctl_json_str(it, "successor"),
				       ctl_json_str(it, "description")};
		ctl_table_add(&t, cells);
		free(dep);
	}
	ctl_table_print(&t, ctx->out);
	ctl_table_free(&t);
	ctl_response_free(&resp);
	return CTL_EXIT_OK;
}

/* ---- egress show / set / clear ---- */

static void print_egress(ctl_ctx *ctx, const cJSON *data)
{
	if (ctx->json) {
		ctl_print_json(ctx->out, data);
		return;
	}
	const cJSON *rules = cJSON_GetObjectItemCaseSensitive(data, "egress");
	if (cJSON_GetArraySize(rules) == 0) {
		fprintf(ctx->out, "no egress rules: all egress allowed\n");
		return;
	}
	static const char *const hdr[] = {"#", "RULE"};
	ctl_table t;
	ctl_table_init(&t, 2, hdr);
	const cJSON *it = NULL;
	int i = 0;
	cJSON_ArrayForEach(it, rules) {
		char idx[16];
		snprintf(idx, sizeof idx, "%d", i++);
		char *r = ctl_json_text(it);
		const char *cells[] = {idx, r};
		ctl_table_add(&t, cells);
		free(r);
	}
	ctl_table_print(&t, ctx->out);
	ctl_table_free(&t);
}

static int egress_call(ctl_ctx *ctx, const char *method, const cJSON *body)
{
	sbx_strbuf path = SBX_STRBUF_INIT;
	ctl_sandbox_path(&path, ctx->args.pos[0], "/egress");
	ctl_response resp;
	int rc = CTL_EXIT_FAIL;
	if (ctl_call_json(ctx, method, sbx_strbuf_str(&path), NULL, body, false, &resp) == 0) {
		print_egress(ctx, resp.data);
		rc = CTL_EXIT_OK;
	}
	ctl_response_free(&resp);
	sbx_strbuf_free(&path);
	return rc;
}

int ctl_cmd_egress_show(ctl_ctx *ctx)
{
	return egress_call(ctx, "GET", NULL);
}

int ctl_cmd_egress_set(ctl_ctx *ctx)
{
	cJSON *body = cJSON_CreateObject();
	cJSON_AddArrayToObject(body, "egress");
	int rc = CTL_EXIT_FAIL;
	for (size_t i = 1; i < ctx->args.npos; i++) {
		if (ctl_add_rules(ctx, body, "egress", ctx->args.pos[i]) != 0)
			goto out_free_body;
	}
	rc = egress_call(ctx, "PUT", body);
out_free_body:
	cJSON_Delete(body);
	return rc;
}

int ctl_cmd_egress_clear(ctl_ctx *ctx)
{
	cJSON *body = cJSON_CreateObject();
	cJSON_AddNullToObject(body, "egress");
	int rc = egress_call(ctx, "PUT", body);
	cJSON_Delete(body);
	return rc;
}

/* api_sandbox: the sandbox routes — create, list, get, by-ip, patch,
 * delete, pause, resume, fork, resize and ssh keys: parse the request
 * (naming the offending field), call the operation, render its answer.
 *
 * Never take the model lock or write a sandbox's fields here: lifecycle
 * rules are model.c's, their orchestration ops.c's. */
#include "handlers/api.h"

#include <stdio.h>
#include <string.h>

static bool parse_create(mreq *r, mresp *out, const cJSON *b, mock_create_req *q)
{
	int64_t disk = 0, ap = 0, bw = 0;
	const cJSON *egress = cJSON_GetObjectItemCaseSensitive(b, "egress");
	const cJSON *node_sel;

	memset(q, 0, sizeof(*q));
	q->egress.is_null = true;
	if (!api_get_str(b, "shape", &q->shape, out) || !api_get_str(b, "rootfs", &q->rootfs, out) ||
	    !api_get_str(b, "name", &q->name, out) || !api_get_str(b, "region", &q->region, out) ||
	    !api_get_str(b, "host_id", &q->host_id, out) ||
	    !api_get_int(b, "disk_mib", 0, 16 * 1024 * 1024, &disk, NULL, out) ||
	    !api_get_bool(b, "ingress_enabled", &q->ingress_enabled, NULL, out) ||
	    !api_get_int(b, "auto_pause_after_seconds", INT32_MIN, INT32_MAX, &ap, &q->has_auto_pause,
			 out) ||
	    !api_get_int(b, "bandwidth_quota_bytes", -1, INT64_MAX / 2, &bw, NULL, out) ||
	    !api_get_kind(b, "envs", false, &q->envs, out) ||
	    !api_get_kind(b, "ssh_pubkeys", true, &q->ssh_pubkeys, out) ||
	    !api_get_kind(b, "networks", true, &q->networks, out) ||
	    !api_get_kind(b, "disks", true, &q->disks, out) ||
	    !api_get_kind(b, "node_selector", false, &node_sel, out))
		return false;
	if (q->shape == NULL) {
		resp_fail(out, 400, "shape", "INVALID_REQUEST", "shape is required (see GET /v1/shapes)");
		return false;
	}
	q->disk_mib = (unsigned)disk;
	q->auto_pause_s = (int)ap;
	q->bw_quota = bw;
	if (q->envs != NULL) {
		mock_err e;

		if (mock_validate_envs(q->envs, &e) != 0) {
			resp_mock_err(out, &e);
			return false;
		}
	}
	if (egress != NULL && !api_parse_egress(r->mock, egress, &q->egress, out))
		return false;
	return true;
}

void api_sandbox_create(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	mock_create_req q;
	mock_op op;
	char none[1];
	cJSON *v;

	if (b == NULL)
		return;
	if (!parse_create(r, out, b, &q))
		goto out_free;
	api_op_init(&op, r, t, none, sizeof(none));
	v = mock_op_create(&op, &q);
	api_op_answer(r, out, &op, 200, v);
out_free:
	sbx_egress_list_free(&q.egress);
}

void api_sandbox_list(mreq *r, mresp *out, mock_tenant *t)
{
	const char *st = req_query(r, "status");
	int want = -1;
	size_t limit, offset, total = 0;
	cJSON *data;

	if (st != NULL && st[0] != '\0') {
		want = mock_status_parse(st);
		if (want < 0) {
			resp_fail(out, 400, "status", "INVALID_REQUEST", "status is not a sandbox status");
			return;
		}
	}
	if (!api_page_params(r, out, &limit, &offset))
		return;
	data = mock_op_list(r->mock, t, want, limit, offset, &total);
	resp_success(out, 200, api_page_wrap(data, total, limit, offset));
}

void api_sandbox_get(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char id[64];

	api_op_init(&op, r, t, id, sizeof(id));
	api_op_answer(r, out, &op, 200, mock_op_get(&op));
}

void api_sandbox_by_ip(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char ip[64], none[1];

	api_op_init(&op, r, t, none, sizeof(none));
	api_op_answer(r, out, &op, 200, mock_op_by_ip(&op, req_seg(r, 3, ip, sizeof(ip)) ? ip : NULL));
}

void api_sandbox_patch(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	mock_patch_req p;
	bool disable = false, has_disable = false;
	int64_t ap = 0;
	mock_op op;
	char id[64];

	if (b == NULL)
		return;
	memset(&p, 0, sizeof(p));
	if (!api_get_bool(b, "ingress_enabled", &p.ingress, &p.has_ingress, out) ||
	    !api_get_bool(b, "disable_auto_pause", &disable, &has_disable, out) ||
	    !api_get_int(b, "auto_pause_after_seconds", INT32_MIN, INT32_MAX, &ap, &p.has_auto_pause, out))
		return;
	if (p.has_auto_pause && (ap < 60 || ap > 86400)) {
		resp_fail(out, 400, "auto_pause_after_seconds", "INVALID_AUTO_PAUSE",
			  "auto_pause_after_seconds must be between 60 and 86400");
		return;
	}
	p.auto_pause_s = (int)ap;
	p.disable_auto_pause = has_disable && disable;
	api_op_init(&op, r, t, id, sizeof(id));
	api_op_answer(r, out, &op, 200, mock_op_patch(&op, &p));
}

void api_sandbox_delete(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char id[64];

	api_op_init(&op, r, t, id, sizeof(id));
	api_op_answer(r, out, &op, 200, mock_op_destroy(&op));
}

/* A 202 tells the client when to poll again (never sooner than 100 ms). */
static void poll_after(mresp *out, int64_t ms)
{
	char v[32];

	snprintf(v, sizeof(v), "%lld", (long long)(ms < 100 ? 100 : ms));
	resp_header(out, "X-Poll-After", v);
}

void api_sandbox_pause(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char id[64];
	int status = 200;
	cJSON *v;

	api_op_init(&op, r, t, id, sizeof(id));
	v = mock_op_pause(&op, &status);
	if (api_op_answer(r, out, &op, status, v) && status == 202)
		poll_after(out, op.poll_ms);
}

void api_sandbox_resume(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char id[64];
	int status = 200;
	cJSON *v;

	api_op_init(&op, r, t, id, sizeof(id));
	v = mock_op_resume(&op, &status);
	if (api_op_answer(r, out, &op, status, v) && status == 202)
		poll_after(out, op.poll_ms);
}

/* The body is optional; every field in it too. */
static bool parse_fork(mreq *r, mresp *out, const cJSON *b, mock_fork_req *q)
{
	const cJSON *egress;
	int64_t bw = 0;

	memset(q, 0, sizeof(*q));
	q->egress.is_null = true;
	if (b == NULL)
		return true;
	if (!api_get_bool(b, "start_paused", &q->start_paused, NULL, out) ||
	    !api_get_bool(b, "ingress_enabled", &q->ingress_enabled, &q->has_ingress, out) ||
	    !api_get_kind(b, "envs", false, &q->envs, out) ||
	    !api_get_kind(b, "ssh_pubkeys", true, &q->ssh_pubkeys, out) ||
	    !api_get_int(b, "bandwidth_quota_bytes", -1, INT64_MAX / 2, &bw, NULL, out))
		return false;
	q->bw_quota = bw;
	egress = cJSON_GetObjectItemCaseSensitive(b, "egress");
	if (egress != NULL) {
		q->has_egress = true;
		if (!api_parse_egress(r->mock, egress, &q->egress, out))
			return false;
	}
	return true;
}

void api_sandbox_fork(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, false);
	mock_fork_req q;
	mock_op op;
	char id[64];
	cJSON *v;

	if (b == NULL && r->body.len > 0)
		return;
	if (!parse_fork(r, out, b, &q))
		goto out_free;
	api_op_init(&op, r, t, id, sizeof(id));
	v = mock_op_fork(&op, &q);
	api_op_answer(r, out, &op, 200, v);
out_free:
	sbx_egress_list_free(&q.egress);
}

void api_sandbox_resize(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	int64_t disk = 0;
	bool has = false;
	mock_op op;
	char id[64];

	if (b == NULL || !api_get_int(b, "disk_mib", 1, 16 * 1024 * 1024, &disk, &has, out))
		return;
	if (!has) {
		resp_fail(out, 400, "disk_mib", "INVALID_REQUEST", "disk_mib is required");
		return;
	}
	api_op_init(&op, r, t, id, sizeof(id));
	api_op_answer(r, out, &op, 200, mock_op_resize(&op, (unsigned)disk));
}

void api_sandbox_ssh_keys(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	const cJSON *keys = NULL, *k;
	mock_op op;
	char id[64];

	if (b == NULL || !api_get_kind(b, "keys", true, &keys, out))
		return;
	if (keys == NULL) {
		resp_fail(out, 400, "keys", "INVALID_REQUEST", "keys is required (array of strings)");
		return;
	}
	cJSON_ArrayForEach(k, keys) {
		if (!cJSON_IsString(k) || k->valuestring[0] == '\0') {
			resp_fail(out, 400, "keys", "INVALID_REQUEST", "keys items must be non-empty strings");
			return;
		}
	}
	api_op_init(&op, r, t, id, sizeof(id));
	api_op_answer(r, out, &op, 200, mock_op_add_ssh_keys(&op, keys));
}

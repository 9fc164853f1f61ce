/* api: the control-plane routes of sbx-mock — request parsing and
 * validation (naming the field), auth, pagination and response shaping.
 * Lifecycle rules live in model.c, processes and files in guest.c; this
 * file glues them to HTTP and must not grow rules of its own. */
#define _GNU_SOURCE
#include "server.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXEC_OUTPUT_CAP (16u * 1024 * 1024)

typedef void (*handler_fn)(mreq *r, mresp *out, mock_tenant *t);

/* ---- small parsing helpers ---- */

static void tick(sbx_mock *mock)
{
	mock_tick(mock->model, mock_on_state_change, mock);
}

/* The JSON body as an object. Empty body: an empty object when optional. */
static cJSON *body_object(mreq *r, mresp *out, bool required)
{
	if (r->body.len == 0) {
		if (!required)
			return NULL;
		resp_fail(out, 400, "body", "INVALID_REQUEST", "request body is required (a JSON object)");
		return NULL;
	}
	if (r->json == NULL) {
		resp_fail(out, 400, "body", "INVALID_JSON", "request body is not valid JSON");
		return NULL;
	}
	/* cJSON cuts strings at \u0000, so "pypi.org\u0000.evil" would be stored
	 * as "pypi.org": refuse NUL anywhere rather than act on a shortened value. */
	if (sbx_egress_json_has_nul_escape(r->body.data, r->body.len)) {
		resp_fail(out, 400, "body", "INVALID_JSON",
			  "request body contains a \\u0000 escape: NUL is not allowed in any string");
		return NULL;
	}
	if (!cJSON_IsObject(r->json)) {
		resp_fail(out, 400, "body", "INVALID_REQUEST", "request body must be a JSON object");
		return NULL;
	}
	return r->json;
}

static bool type_error(mresp *out, const char *field, const char *what)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "%s must be %s", field, what);
	resp_fail(out, 400, field, "INVALID_REQUEST", msg);
	return false;
}

/* Optional string field; false (answer set) on a wrong type. */
static bool get_str(const cJSON *o, const char *k, const char **v, mresp *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	*v = NULL;
	if (it == NULL || cJSON_IsNull(it))
		return true;
	if (!cJSON_IsString(it))
		return type_error(out, k, "a string");
	*v = it->valuestring;
	return true;
}

static bool get_bool(const cJSON *o, const char *k, bool *v, bool *present, mresp *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	if (present != NULL)
		*present = false;
	if (it == NULL || cJSON_IsNull(it))
		return true;
	if (!cJSON_IsBool(it))
		return type_error(out, k, "a boolean");
	*v = cJSON_IsTrue(it);
	if (present != NULL)
		*present = true;
	return true;
}

static bool get_int(const cJSON *o, const char *k, int64_t lo, int64_t hi, int64_t *v,
		    bool *present, mresp *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
	char what[96];

	if (present != NULL)
		*present = false;
	if (it == NULL || cJSON_IsNull(it))
		return true;
	snprintf(what, sizeof(what), "an integer between %lld and %lld", (long long)lo, (long long)hi);
	/* Range first: converting an out-of-range double to int64_t is undefined. */
	if (!cJSON_IsNumber(it) || !(it->valuedouble >= (double)lo && it->valuedouble <= (double)hi) ||
	    it->valuedouble != (double)(int64_t)it->valuedouble)
		return type_error(out, k, what);
	*v = (int64_t)it->valuedouble;
	if (present != NULL)
		*present = true;
	return true;
}

static bool get_kind(const cJSON *o, const char *k, bool want_array, const cJSON **v, mresp *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	*v = NULL;
	if (it == NULL || cJSON_IsNull(it))
		return true;
	if (want_array ? !cJSON_IsArray(it) : !cJSON_IsObject(it))
		return type_error(out, k, want_array ? "an array" : "an object");
	*v = it;
	return true;
}

static bool parse_egress(sbx_mock *mock, const cJSON *item, sbx_egress_list *list, mresp *out)
{
	sbx_egress_error ee;
	size_t max;

	pthread_mutex_lock(&mock->model->lock);
	max = mock->model->set.max_egress_rules;
	pthread_mutex_unlock(&mock->model->lock);
	memset(&ee, 0, sizeof(ee));
	if (sbx_egress_list_from_json(item, max, list, &ee) != 0) {
		char code[48];

		snprintf(code, sizeof(code), "INVALID_EGRESS");
		resp_fail(out, 400, "egress", code, ee.message);
		return false;
	}
	return true;
}

static bool parse_u(const char *s, uint64_t max, uint64_t *v)
{
	char *end = NULL;
	unsigned long long x;

	if (s == NULL || s[0] == '\0' || s[0] == '-' || s[0] == '+')
		return false;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || x > max)
		return false;
	*v = x;
	return true;
}

/* limit (default 50, clamped to 500) and offset; false with a 400 set. */
static bool page_params(mreq *r, mresp *out, size_t *limit, size_t *offset)
{
	const char *l = req_query(r, "limit"), *o = req_query(r, "offset");
	uint64_t v;

	*limit = 50;
	*offset = 0;
	if (l != NULL) {
		if (!parse_u(l, UINT32_MAX, &v)) {
			resp_fail(out, 400, "limit", "INVALID_REQUEST", "limit must be a non-negative integer");
			return false;
		}
		*limit = v == 0 ? 50 : (v > 500 ? 500 : (size_t)v);
	}
	if (o != NULL) {
		if (!parse_u(o, UINT32_MAX, &v)) {
			resp_fail(out, 400, "offset", "INVALID_REQUEST",
				  "offset must be a non-negative integer");
			return false;
		}
		*offset = (size_t)v;
	}
	return true;
}

/* Wraps items [offset, offset+limit) of all (owned) into the paginated payload. */
static cJSON *page_of(cJSON *all, size_t limit, size_t offset)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *data = cJSON_AddArrayToObject(o, "data");
	cJSON *p;
	size_t total = (size_t)cJSON_GetArraySize(all), count = 0;

	for (size_t i = offset; i < total && count < limit; i++, count++)
		cJSON_AddItemToArray(data, cJSON_DetachItemFromArray(all, (int)offset));
	cJSON_Delete(all);
	p = cJSON_AddObjectToObject(o, "pagination");
	cJSON_AddNumberToObject(p, "total", (double)total);
	cJSON_AddNumberToObject(p, "limit", (double)limit);
	cJSON_AddNumberToObject(p, "offset", (double)offset);
	cJSON_AddNumberToObject(p, "count", (double)count);
	return o;
}

static void resp_page(mreq *r, mresp *out, cJSON *all)
{
	size_t limit, offset;

	if (!page_params(r, out, &limit, &offset)) {
		cJSON_Delete(all);
		return;
	}
	resp_success(out, 200, page_of(all, limit, offset));
}

/* Sandbox of path segment 2, or a 404 (also for another tenant's). Lock held. */
static mock_sandbox *sandbox_arg(mreq *r, mresp *out, mock_tenant *t)
{
	char id[64];
	mock_sandbox *sb = NULL;

	if (req_seg(r, 2, id, sizeof(id)))
		sb = mock_sandbox_find(r->mock->model, t, id);
	if (sb == NULL) {
		resp_fail(out, 404, "error", "NOT_FOUND", "sandbox not found");
		return NULL;
	}
	snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", sb->id);
	return sb;
}

static bool fault_is(const mreq *r, mock_fault_kind k)
{
	return r->fault_fired && r->fault.kind == k;
}

/* ---- health, catalog, identity ---- */

static void h_healthz(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *d = cJSON_CreateObject();

	(void)r;
	(void)t;
	cJSON_AddBoolToObject(d, "up", true);
	resp_success(out, 200, d);
}

static void h_readyz(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *d = cJSON_CreateObject();
	bool ready;

	(void)t;
	pthread_mutex_lock(&r->mock->model->lock);
	ready = mock_ready(r->mock->model);
	pthread_mutex_unlock(&r->mock->model->lock);
	cJSON_AddBoolToObject(d, "ready", ready);
	if (ready) {
		cJSON_AddNumberToObject(d, "scheduler_last_ok_ms_ago", 0);
		resp_success(out, 200, d);
		return;
	}
	cJSON_AddStringToObject(d, "reason",
				"control plane not ready (restarting, or set by the mock admin API)");
	/* The SDK reads data from a 503 readiness answer too. */
	resp_success(out, 503, d);
}

static void h_whoami(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *d;

	pthread_mutex_lock(&r->mock->model->lock);
	tick(r->mock);
	d = mock_whoami_view(r->mock->model, t);
	pthread_mutex_unlock(&r->mock->model->lock);
	resp_success(out, 200, d);
}

static void h_shapes(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *all = cJSON_CreateArray();

	(void)t;
	for (size_t i = 0; i < mock_shape_count; i++)
		cJSON_AddItemToArray(all, mock_shape_view(&mock_shapes[i]));
	resp_page(r, out, all);
}

static void h_rootfs(mreq *r, mresp *out, mock_tenant *t)
{
	(void)r;
	(void)t;
	resp_success(out, 200, mock_rootfs_view());
}

/* Every host the mock had: the dead ones (fault host_dies) and the active
 * one, where every live VM is. */
static void h_hosts(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *all = cJSON_CreateArray();
	unsigned vms = 0, dead;
	char active[40];

	(void)t;
	pthread_mutex_lock(&r->mock->model->lock);
	tick(r->mock);
	mock_active_host(r->mock->model, active, sizeof(active));
	dead = r->mock->model->hosts_dead;
	for (size_t i = 0; i < r->mock->model->nlive; i++) {
		const mock_sandbox *sb = r->mock->model->live[i];

		if (!mock_status_terminal(sb->status) && strcmp(sb->host_id, active) == 0)
			vms++;
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	for (unsigned n = 1; n <= dead + 1; n++) {
		cJSON *h = cJSON_CreateObject();
		char id[40];

		snprintf(id, sizeof(id), "host-local-%u", n);
		cJSON_AddStringToObject(h, "id", id);
		cJSON_AddStringToObject(h, "status", n <= dead ? "dead" : "active");
		cJSON_AddNumberToObject(h, "free_mib", n <= dead ? 0 : 65536);
		cJSON_AddNumberToObject(h, "vm_count", n <= dead ? 0 : vms);
		if (n > dead) {
			cJSON *rf = cJSON_AddArrayToObject(h, "rootfses");

			for (size_t i = 0; i < mock_rootfs_count; i++)
				cJSON_AddItemToArray(rf, cJSON_CreateString(mock_rootfses[i].name));
		}
		cJSON_AddItemToArray(all, h);
	}
	resp_page(r, out, all);
}

/* ---- sandboxes ---- */

static bool parse_create(mreq *r, mresp *out, const cJSON *b, mock_create_req *q)
{
	int64_t disk = 0, ap = 0, bw = 0;
	const cJSON *egress = cJSON_GetObjectItemCaseSensitive(b, "egress");
	const cJSON *node_sel;

	memset(q, 0, sizeof(*q));
	q->egress.is_null = true;
	if (!get_str(b, "shape", &q->shape, out) || !get_str(b, "rootfs", &q->rootfs, out) ||
	    !get_str(b, "name", &q->name, out) || !get_str(b, "region", &q->region, out) ||
	    !get_str(b, "host_id", &q->host_id, out) ||
	    !get_int(b, "disk_mib", 0, 16 * 1024 * 1024, &disk, NULL, out) ||
	    !get_bool(b, "ingress_enabled", &q->ingress_enabled, NULL, out) ||
	    !get_int(b, "auto_pause_after_seconds", INT32_MIN, INT32_MAX, &ap, &q->has_auto_pause, out) ||
	    !get_int(b, "bandwidth_quota_bytes", -1, INT64_MAX / 2, &bw, NULL, out) ||
	    !get_kind(b, "envs", false, &q->envs, out) ||
	    !get_kind(b, "ssh_pubkeys", true, &q->ssh_pubkeys, out) ||
	    !get_kind(b, "networks", true, &q->networks, out) ||
	    !get_kind(b, "disks", true, &q->disks, out) ||
	    !get_kind(b, "node_selector", false, &node_sel, out))
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
	if (egress != NULL && !parse_egress(r->mock, egress, &q->egress, out))
		return false;
	return true;
}

static void h_create(mreq *r, mresp *out, mock_tenant *t)
{
	sbx_mock *mock = r->mock;
	cJSON *b = body_object(r, out, true);
	mock_create_req q;
	mock_sandbox *sb;
	mock_guest *g;
	mock_err e;
	sbx_err gerr = {{0}};
	cJSON *view = NULL;
	bool failed = fault_is(r, FK_CREATE_FAILED);

	if (b == NULL)
		return;
	if (!parse_create(r, out, b, &q)) {
		sbx_egress_list_free(&q.egress);
		return;
	}
	pthread_mutex_lock(&mock->model->lock);
	tick(mock);
	sb = mock_sandbox_create(mock->model, t, &q, &e);
	if (sb != NULL) {
		snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", sb->id);
		sb->busy++;
	}
	pthread_mutex_unlock(&mock->model->lock);
	sbx_egress_list_free(&q.egress);
	if (sb == NULL) {
		resp_mock_err(out, &e);
		return;
	}
	g = mock_guest_new(mock->work_dir, sb->id, mock->gmode, mock->pidns, &gerr);
	{
		int64_t ms;

		pthread_mutex_lock(&mock->model->lock);
		ms = mock_timing_ms(mock->model, "create");
		pthread_mutex_unlock(&mock->model->lock);
		if (ms > 0)
			mock_sleep_ms(mock, ms);
	}
	pthread_mutex_lock(&mock->model->lock);
	sb->busy--;
	sb->guest = g;
	if (g == NULL || failed) {
		sb->status = ST_FAILED;
	} else if (sb->status == ST_CREATING) {
		mock_sandbox_set_running(mock->model, sb);
		view = mock_sandbox_create_view(mock->model, sb);
	} else {
		mock_guest_kill(g); /* destroyed while booting */
	}
	pthread_mutex_unlock(&mock->model->lock);
	if (g == NULL) {
		char msg[600];

		snprintf(msg, sizeof(msg), "sandbox failed to boot: %s", gerr.msg);
		resp_error(out, 500, msg);
	} else if (failed) {
		resp_error(out, 500, "sandbox failed to boot (injected create_failed)");
	} else if (view == NULL) {
		resp_fail(out, 409, "status", "INVALID_STATE", "sandbox was destroyed while creating");
	} else {
		resp_success(out, 200, view);
	}
}

static void h_list(mreq *r, mresp *out, mock_tenant *t)
{
	sbx_mock *mock = r->mock;
	const char *st = req_query(r, "status");
	int want = -1;
	size_t limit, offset, total = 0, count = 0;
	cJSON *o, *data, *p;

	if (st != NULL && st[0] != '\0') {
		want = mock_status_parse(st);
		if (want < 0) {
			resp_fail(out, 400, "status", "INVALID_REQUEST", "status is not a sandbox status");
			return;
		}
	}
	if (!page_params(r, out, &limit, &offset))
		return;
	o = cJSON_CreateObject();
	data = cJSON_AddArrayToObject(o, "data");
	pthread_mutex_lock(&mock->model->lock);
	tick(mock);
	for (size_t i = 0; i < mock->model->nsbx; i++) {
		mock_sandbox *sb = mock->model->sbx[i];

		if (sb->tenant != t)
			continue;
		if (want >= 0 ? (int)sb->status != want : sb->status == ST_DESTROYED)
			continue;
		if (total >= offset && count < limit) {
			cJSON_AddItemToArray(data, mock_sandbox_view(mock->model, sb));
			count++;
		}
		total++;
	}
	pthread_mutex_unlock(&mock->model->lock);
	p = cJSON_AddObjectToObject(o, "pagination");
	cJSON_AddNumberToObject(p, "total", (double)total);
	cJSON_AddNumberToObject(p, "limit", (double)limit);
	cJSON_AddNumberToObject(p, "offset", (double)offset);
	cJSON_AddNumberToObject(p, "count", (double)count);
	resp_success(out, 200, o);
}

static void h_get(mreq *r, mresp *out, mock_tenant *t)
{
	mock_sandbox *sb;
	cJSON *v = NULL;

	pthread_mutex_lock(&r->mock->model->lock);
	tick(r->mock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL) {
		if (sb->status == ST_RESUMING && sb->resume_polls > 0) {
			sb->resume_polls--;
			if (sb->resume_polls == 0)
				tick(r->mock);
		}
		v = mock_sandbox_view(r->mock->model, sb);
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v != NULL)
		resp_success(out, 200, v);
}

static void h_by_ip(mreq *r, mresp *out, mock_tenant *t)
{
	char ip[64];
	mock_sandbox *sb = NULL;
	cJSON *v = NULL;

	pthread_mutex_lock(&r->mock->model->lock);
	tick(r->mock);
	if (req_seg(r, 3, ip, sizeof(ip)))
		sb = mock_sandbox_find_ip(r->mock->model, t, ip);
	if (sb != NULL) {
		snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", sb->id);
		v = mock_sandbox_view(r->mock->model, sb);
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v == NULL)
		resp_fail(out, 404, "error", "NOT_FOUND", "no sandbox with that IP");
	else
		resp_success(out, 200, v);
}

static void h_patch(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = body_object(r, out, true);
	bool ingress = false, has_ingress = false, disable = false, has_disable = false, has_ap = false;
	int64_t ap = 0;
	mock_sandbox *sb;
	cJSON *v = NULL;

	if (b == NULL)
		return;
	if (!get_bool(b, "ingress_enabled", &ingress, &has_ingress, out) ||
	    !get_bool(b, "disable_auto_pause", &disable, &has_disable, out) ||
	    !get_int(b, "auto_pause_after_seconds", INT32_MIN, INT32_MAX, &ap, &has_ap, out))
		return;
	if (has_ap && (ap < 60 || ap > 86400)) {
		resp_fail(out, 400, "auto_pause_after_seconds", "INVALID_AUTO_PAUSE",
			  "auto_pause_after_seconds must be between 60 and 86400");
		return;
	}
	pthread_mutex_lock(&r->mock->model->lock);
	tick(r->mock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL && mock_status_terminal(sb->status)) {
		resp_fail(out, 409, "status", "INVALID_STATE", "sandbox is destroyed");
		sb = NULL;
	}
	if (sb != NULL) {
		if (has_ingress)
			sb->ingress_enabled = ingress;
		if (has_ap)
			sb->auto_pause_s = (int)ap;
		if (has_disable && disable)
			sb->auto_pause_s = 0;
		mock_sandbox_touch(r->mock->model, sb);
		v = mock_sandbox_view(r->mock->model, sb);
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v != NULL)
		resp_success(out, 200, v);
}

static void h_delete(mreq *r, mresp *out, mock_tenant *t)
{
	mock_sandbox *sb;
	mock_err e;
	bool now = false;
	cJSON *d = NULL;

	pthread_mutex_lock(&r->mock->model->lock);
	tick(r->mock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL) {
		if (fault_is(r, FK_DESTROY_STUCK))
			sb->destroy_stuck = true;
		mock_sandbox_destroy(r->mock->model, sb, &now, &e);
		mock_guest_kill(sb->guest);
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "id", sb->id);
		cJSON_AddStringToObject(d, "status", mock_status_name(sb->status));
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (d != NULL)
		resp_success(out, 200, d);
}

static void poll_after(mreq *r, mresp *out, const char *what)
{
	char v[32];
	int64_t ms;

	pthread_mutex_lock(&r->mock->model->lock);
	ms = mock_timing_ms(r->mock->model, what);
	pthread_mutex_unlock(&r->mock->model->lock);
	snprintf(v, sizeof(v), "%lld", (long long)(ms < 100 ? 100 : ms));
	resp_header(out, "X-Poll-After", v);
}

static void h_pause(mreq *r, mresp *out, mock_tenant *t)
{
	mock_sandbox *sb;
	mock_err e;
	int rc = -1;
	cJSON *v = NULL;

	pthread_mutex_lock(&r->mock->model->lock);
	tick(r->mock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL) {
		rc = mock_sandbox_pause(r->mock->model, sb, &e);
		if (rc < 0) {
			resp_mock_err(out, &e);
		} else {
			if (rc == 202 && fault_is(r, FK_PAUSE_ERROR))
				sb->due_status = ST_ERROR;
			mock_guest_signal(sb->guest, SIGSTOP);
			v = mock_sandbox_view(r->mock->model, sb);
		}
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v != NULL) {
		resp_success(out, rc, v);
		if (rc == 202)
			poll_after(r, out, "pause");
	}
}

static void h_resume(mreq *r, mresp *out, mock_tenant *t)
{
	mock_sandbox *sb;
	mock_err e;
	int rc = -1;
	cJSON *v = NULL;
	const char *timing = "resume";

	pthread_mutex_lock(&r->mock->model->lock);
	tick(r->mock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL) {
		timing = mock_resume_timing(sb);
		rc = mock_sandbox_resume(r->mock->model, sb, &e);
		if (rc < 0) {
			resp_mock_err(out, &e);
		} else {
			if (rc == 202 && fault_is(r, FK_RESUME_POLLS))
				sb->resume_polls = r->fault.polls;
			mock_guest_signal(sb->guest, SIGCONT);
			v = mock_sandbox_view(r->mock->model, sb);
		}
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v != NULL) {
		resp_success(out, rc, v);
		if (rc == 202)
			poll_after(r, out, timing);
	}
}

static void h_fork(mreq *r, mresp *out, mock_tenant *t)
{
	sbx_mock *mock = r->mock;
	cJSON *b = body_object(r, out, false);
	mock_fork_req q;
	const cJSON *egress;
	mock_sandbox *src, *sb = NULL;
	mock_guest *g = NULL;
	mock_err e;
	sbx_err gerr = {{0}};
	cJSON *v = NULL;

	if (b == NULL && r->body.len > 0)
		return;
	memset(&q, 0, sizeof(q));
	q.egress.is_null = true;
	if (b != NULL) {
		int64_t bw = 0;

		if (!get_bool(b, "start_paused", &q.start_paused, NULL, out) ||
		    !get_bool(b, "ingress_enabled", &q.ingress_enabled, &q.has_ingress, out) ||
		    !get_kind(b, "envs", false, &q.envs, out) ||
		    !get_kind(b, "ssh_pubkeys", true, &q.ssh_pubkeys, out) ||
		    !get_int(b, "bandwidth_quota_bytes", -1, INT64_MAX / 2, &bw, NULL, out))
			return;
		q.bw_quota = bw;
		egress = cJSON_GetObjectItemCaseSensitive(b, "egress");
		if (egress != NULL) {
			q.has_egress = true;
			if (!parse_egress(mock, egress, &q.egress, out))
				return;
		}
	}
	pthread_mutex_lock(&mock->model->lock);
	tick(mock);
	src = sandbox_arg(r, out, t);
	if (src != NULL) {
		sb = mock_sandbox_fork(mock->model, src, &q, &e);
		if (sb == NULL) {
			resp_mock_err(out, &e);
		} else {
			src->busy++;
			sb->busy++;
		}
	}
	pthread_mutex_unlock(&mock->model->lock);
	sbx_egress_list_free(&q.egress);
	if (sb == NULL)
		return;
	g = mock_guest_new(mock->work_dir, sb->id, mock->gmode, mock->pidns, &gerr);
	if (g != NULL && src->guest != NULL && mock_guest_copy(g, src->guest, &gerr) != 0) {
		mock_guest_free(g, true);
		g = NULL;
	}
	pthread_mutex_lock(&mock->model->lock);
	src->busy--;
	sb->busy--;
	sb->guest = g;
	if (g == NULL)
		sb->status = ST_FAILED;
	else
		v = mock_sandbox_view(mock->model, sb);
	pthread_mutex_unlock(&mock->model->lock);
	if (v == NULL) {
		char msg[600];

		snprintf(msg, sizeof(msg), "fork failed: %s", gerr.msg);
		resp_error(out, 500, msg);
		return;
	}
	resp_success(out, 200, v);
}

static void h_resize(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = body_object(r, out, true);
	int64_t disk = 0;
	bool has = false;
	mock_sandbox *sb;
	cJSON *d = NULL;

	if (b == NULL || !get_int(b, "disk_mib", 1, 16 * 1024 * 1024, &disk, &has, out))
		return;
	if (!has) {
		resp_fail(out, 400, "disk_mib", "INVALID_REQUEST", "disk_mib is required");
		return;
	}
	pthread_mutex_lock(&r->mock->model->lock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL && (int64_t)sb->disk_mib >= disk) {
		resp_fail(out, 400, "disk_mib", "INVALID_DISK", "disk_mib must grow the disk");
		sb = NULL;
	} else if (sb != NULL && mock_status_terminal(sb->status)) {
		resp_fail(out, 409, "status", "INVALID_STATE", "sandbox is destroyed");
		sb = NULL;
	}
	if (sb != NULL) {
		sb->disk_mib = (unsigned)disk;
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "id", sb->id);
		cJSON_AddNumberToObject(d, "disk_mib", sb->disk_mib);
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (d != NULL)
		resp_success(out, 200, d);
}

static void h_ssh(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = body_object(r, out, true);
	const cJSON *keys = NULL, *k;
	mock_sandbox *sb;
	cJSON *d = NULL;

	if (b == NULL || !get_kind(b, "keys", true, &keys, out))
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
	pthread_mutex_lock(&r->mock->model->lock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL) {
		cJSON_ArrayForEach(k, keys) {
			const cJSON *have;
			bool dup = false;

			cJSON_ArrayForEach(have, sb->ssh_pubkeys) {
				if (strcmp(have->valuestring, k->valuestring) == 0)
					dup = true;
			}
			if (!dup)
				cJSON_AddItemToArray(sb->ssh_pubkeys, cJSON_CreateString(k->valuestring));
		}
		d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "count", cJSON_GetArraySize(sb->ssh_pubkeys));
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (d != NULL)
		resp_success(out, 200, d);
}

static cJSON *egress_view(const mock_sandbox *sb)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "id", sb->id);
	cJSON_AddItemToObject(d, "egress", sbx_egress_list_to_json(&sb->egress));
	return d;
}

static void h_egress_get(mreq *r, mresp *out, mock_tenant *t)
{
	mock_sandbox *sb;
	cJSON *d = NULL;

	pthread_mutex_lock(&r->mock->model->lock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL)
		d = egress_view(sb);
	pthread_mutex_unlock(&r->mock->model->lock);
	if (d != NULL)
		resp_success(out, 200, d);
}

static void h_egress_put(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = body_object(r, out, true);
	const cJSON *item;
	sbx_egress_list list;
	mock_sandbox *sb;
	cJSON *d = NULL;

	if (b == NULL)
		return;
	item = cJSON_GetObjectItemCaseSensitive(b, "egress");
	if (item == NULL) {
		resp_fail(out, 400, "egress", "INVALID_REQUEST",
			  "egress is required (an array of rules, or null for open)");
		return;
	}
	memset(&list, 0, sizeof(list));
	if (!parse_egress(r->mock, item, &list, out))
		return;
	pthread_mutex_lock(&r->mock->model->lock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL && mock_status_terminal(sb->status)) {
		resp_fail(out, 409, "status", "INVALID_STATE", "sandbox is destroyed");
		sb = NULL;
	}
	if (sb != NULL) {
		sbx_egress_list tmp = sb->egress;

		sb->egress = list;
		list = tmp;
		d = egress_view(sb);
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	sbx_egress_list_free(&list);
	if (d != NULL)
		resp_success(out, 200, d);
}

static void h_bw_get(mreq *r, mresp *out, mock_tenant *t)
{
	mock_sandbox *sb;
	cJSON *d = NULL;

	pthread_mutex_lock(&r->mock->model->lock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL)
		d = mock_bandwidth_view(sb);
	pthread_mutex_unlock(&r->mock->model->lock);
	if (d != NULL)
		resp_success(out, 200, d);
}

static void h_bw_recharge(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = body_object(r, out, true);
	int64_t add = 0;
	bool has = false;
	mock_sandbox *sb;
	cJSON *d = NULL;

	if (b == NULL || !get_int(b, "add_bytes", 1, INT64_MAX / 4, &add, &has, out))
		return;
	if (!has) {
		resp_fail(out, 400, "add_bytes", "INVALID_REQUEST", "add_bytes is required (positive)");
		return;
	}
	pthread_mutex_lock(&r->mock->model->lock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL && !mock_tenant_credit(r->mock->model, t)) {
		resp_fail(out, 402, "error", "PAYMENT_REQUIRED", "out of credit: top up to continue");
		sb = NULL;
	}
	if (sb != NULL) {
		if (sb->bw_quota >= 0)
			sb->bw_quota += add;
		d = mock_bandwidth_view(sb);
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (d != NULL)
		resp_success(out, 200, d);
}

/* ---- exec ---- */

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

typedef struct exec_args {
	const char *cmd;
	const char **args;
	size_t nargs;
	char **env;
	size_t nenv;
	const char *stdin_data;
	int64_t timeout_ms;
	bool stream;
} exec_args;

static void exec_args_free(exec_args *a)
{
	free(a->args);
	for (size_t i = 0; i < a->nenv; i++)
		free(a->env[i]);
	free(a->env);
}

static bool parse_exec(mreq *r, mresp *out, const cJSON *b, exec_args *a)
{
	const cJSON *args = NULL, *env = NULL, *it;
	const char *sq = req_query(r, "stream");
	bool stream = false;
	size_t i = 0;

	memset(a, 0, sizeof(a[0]));
	a->timeout_ms = r->mock->exec_timeout_ms;
	if (!get_str(b, "cmd", &a->cmd, out) || !get_kind(b, "args", true, &args, out) ||
	    !get_kind(b, "env", false, &env, out) || !get_str(b, "stdin", &a->stdin_data, out) ||
	    !get_bool(b, "stream", &stream, NULL, out) ||
	    !get_int(b, "timeout_ms", 0, 86400000, &a->timeout_ms, NULL, out))
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

/* Builds "K=V" from the sandbox envs overridden by exec env; lock held.
 * An exec env key the sandbox did not declare is a 400. */
static bool build_env(mresp *out, const mock_sandbox *sb, const cJSON *env, exec_args *a)
{
	const cJSON *it;
	size_t n = (size_t)cJSON_GetArraySize(sb->envs);

	if (env != NULL) {
		cJSON_ArrayForEach(it, env) {
			if (cJSON_GetObjectItemCaseSensitive(sb->envs, it->string) == NULL) {
				char msg[200];

				snprintf(msg, sizeof(msg),
					 "env key \"%.64s\" is not declared in the sandbox's envs; exec may only override declared keys",
					 it->string);
				resp_fail(out, 400, "env", "INVALID_ENV", msg);
				return false;
			}
		}
	}
	a->env = calloc(n + 1, sizeof(char *));
	if (a->env == NULL)
		return false;
	cJSON_ArrayForEach(it, sb->envs) {
		const cJSON *ov = env != NULL ? cJSON_GetObjectItemCaseSensitive(env, it->string) : NULL;
		const char *val = ov != NULL ? ov->valuestring : it->valuestring;
		size_t len = strlen(it->string) + strlen(val) + 2;
		char *kv = malloc(len);

		if (kv == NULL)
			return false;
		snprintf(kv, len, "%s=%s", it->string, val);
		a->env[a->nenv++] = kv;
	}
	return true;
}

static void exec_done(sbx_mock *mock, mock_sandbox *sb)
{
	pthread_mutex_lock(&mock->model->lock);
	sb->busy--;
	mock_sandbox_touch(mock->model, sb);
	pthread_mutex_unlock(&mock->model->lock);
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

static bool gone_cb(void *arg)
{
	return req_client_gone(arg);
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
	while (c->pend_off >= c->pending.len) {
		sbx_strbuf_reset(&c->pending);
		c->pend_off = 0;
		if (c->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (atomic_load(&c->mock->stopping) || atomic_load(&c->gone))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (c->cut_after >= 0 && c->frames >= (unsigned)c->cut_after)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		stream_next(c);
	}
	n = c->pending.len - c->pend_off;
	if (n > max)
		n = max;
	memcpy(out, c->pending.data + c->pend_off, n);
	c->pend_off += n;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	stream_ctx *c = cls;

	if (c->started && c->proc.pid > 0) {
		mock_proc_kill(&c->proc);
		mock_proc_finish(&c->proc);
	}
	exec_done(c->mock, c->sb);
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
		exec_done(r->mock, sb);
		resp_error(out, 500, "out of memory");
		return;
	}
	c->mock = r->mock;
	c->sb = sb;
	c->conn_fd = req_conn_fd(r);
	c->cut_after = fault_is(r, FK_EXEC_STREAM_CUT) ? (int)r->fault.after_frames : -1;
	c->hb_only = fault_is(r, FK_EXEC_HEARTBEATS_ONLY);
	c->fixed_exit = -1;
	sbx_strbuf_init(&c->pending);
	if (fault_is(r, FK_EXEC_AGENT_ERROR)) {
		c->fixed_error = strdup(r->fault.message);
	} else if (fault_is(r, FK_EXEC_OOM)) {
		c->fixed_exit = 137;
	} else if (!c->hb_only) {
		if (mock_proc_spawn(g, spec, &c->proc, &err) == 0)
			c->started = true;
		else
			c->spawn_error = strdup(err.msg);
	}
	/* stream_reader waits for the command: it runs on a worker thread */
	out->custom = mock_blocking_response(r, MHD_SIZE_UNKNOWN, stream_reader, c, stream_free,
					     stream_cancel);
	if (out->custom == NULL) {
		resp_error(out, 500, "out of memory");
		return;
	}
	out->status = 200;
	out->ctype = "application/x-ndjson";
	resp_header(out, "Cache-Control", "no-cache");
}

static void h_exec(mreq *r, mresp *out, mock_tenant *t)
{
	sbx_mock *mock = r->mock;
	cJSON *b = body_object(r, out, true);
	exec_args a;
	mock_sandbox *sb;
	mock_guest *g = NULL;
	mock_exec_spec spec;
	mock_exec_result res;
	sbx_err err = {{0}};
	int64_t t0;
	char *body;
	size_t len = 0;
	bool ok = false;

	memset(&a, 0, sizeof(a));
	if (b == NULL || !parse_exec(r, out, b, &a))
		goto out_free;
	memset(&spec, 0, sizeof(spec));
	pthread_mutex_lock(&mock->model->lock);
	tick(mock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL && (sb->status != ST_RUNNING || sb->guest == NULL)) {
		resp_fail(out, 409, "status", "NOT_RUNNING", "sandbox is not running");
		sb = NULL;
	}
	if (sb != NULL && build_env(out, sb, cJSON_GetObjectItemCaseSensitive(b, "env"), &a)) {
		sb->busy++;
		mock_sandbox_touch(mock->model, sb);
		g = sb->guest;
		spec.isolate_net = egress_is_off(&sb->egress);
		ok = true;
	}
	pthread_mutex_unlock(&mock->model->lock);
	if (!ok)
		goto out_free;
	spec.cmd = a.cmd;
	spec.args = a.args;
	spec.nargs = a.nargs;
	spec.env = (const char *const *)a.env;
	spec.nenv = a.nenv;
	spec.stdin_data = a.stdin_data;
	spec.stdin_len = a.stdin_data != NULL ? strlen(a.stdin_data) : 0;
	if (a.stream) {
		exec_stream(r, out, sb, g, &spec);
		goto out_free;
	}
	t0 = mono_us();
	if (fault_is(r, FK_EXEC_AGENT_ERROR)) {
		body = exec_result_json("", 0, "", 0, -1, r->fault.message, 0, &len);
	} else if (fault_is(r, FK_EXEC_OOM)) {
		body = exec_result_json("", 0, "Killed\n", 7, 137, NULL, 0, &len);
	} else if (mock_guest_exec(g, &spec, a.timeout_ms, EXEC_OUTPUT_CAP, gone_cb, r, &res, &err) != 0) {
		body = exec_result_json("", 0, "", 0, -1, err.msg, (mono_us() - t0) / 1000, &len);
	} else {
		char msg[96];
		const char *error = NULL;

		if (res.timed_out) {
			snprintf(msg, sizeof(msg), "exec timed out after %lld ms", (long long)a.timeout_ms);
			error = msg;
			res.exit_code = 124;
		}
		body = exec_result_json(sbx_strbuf_str(&res.out), res.out.len, sbx_strbuf_str(&res.err),
					res.err.len, res.exit_code, error, (mono_us() - t0) / 1000, &len);
		sbx_strbuf_free(&res.out);
		sbx_strbuf_free(&res.err);
	}
	exec_done(mock, sb);
	if (body == NULL)
		resp_error(out, 500, "out of memory");
	else
		resp_raw(out, 200, "application/json", body, len);
out_free:
	exec_args_free(&a);
}

/* ---- files ---- */

static mock_guest *files_guest(mreq *r, mresp *out, mock_tenant *t, mock_sandbox **sbp)
{
	mock_sandbox *sb;
	mock_guest *g = NULL;

	pthread_mutex_lock(&r->mock->model->lock);
	tick(r->mock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL && (sb->status != ST_RUNNING || sb->guest == NULL)) {
		resp_fail(out, 409, "status", "NOT_RUNNING", "sandbox is not running");
		sb = NULL;
	}
	if (sb != NULL) {
		sb->busy++;
		mock_sandbox_touch(r->mock->model, sb);
		g = sb->guest;
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	*sbp = sb;
	return g;
}

static void h_files_put(mreq *r, mresp *out, mock_tenant *t)
{
	const char *path = req_query(r, "path");
	mock_sandbox *sb;
	mock_guest *g;
	sbx_err err = {{0}};
	int status = 0, fd;
	size_t off = 0;

	if (path == NULL || path[0] == '\0') {
		resp_fail(out, 400, "path", "INVALID_REQUEST", "query parameter path is required (absolute)");
		return;
	}
	g = files_guest(r, out, t, &sb);
	if (g == NULL)
		return;
	fd = mock_guest_open(g, path, true, &status, &err);
	if (fd < 0) {
		resp_fail(out, status, "path", status == 404 ? "NOT_FOUND" : "INVALID_PATH", err.msg);
		goto out_done;
	}
	while (off < r->body.len) {
		ssize_t w = write(fd, r->body.data + off, r->body.len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(fd);
	if (off < r->body.len)
		resp_error(out, 500, "short write into the sandbox tree");
	else
		resp_success(out, 200, cJSON_CreateObject());
out_done:
	exec_done(r->mock, sb);
}

static void h_files_get(mreq *r, mresp *out, mock_tenant *t)
{
	const char *path = req_query(r, "path");
	mock_sandbox *sb;
	mock_guest *g;
	sbx_err err = {{0}};
	int status = 0, fd;
	struct stat st;
	char *buf;
	size_t off = 0;

	if (path == NULL || path[0] == '\0') {
		resp_fail(out, 400, "path", "INVALID_REQUEST", "query parameter path is required (absolute)");
		return;
	}
	g = files_guest(r, out, t, &sb);
	if (g == NULL)
		return;
	fd = mock_guest_open(g, path, false, &status, &err);
	if (fd < 0) {
		resp_fail(out, status, "path", status == 404 ? "NOT_FOUND" : "INVALID_PATH", err.msg);
		goto out_done;
	}
	if (fstat(fd, &st) != 0 || (size_t)st.st_size > r->mock->max_file) {
		close(fd);
		resp_fail(out, 413, "path", "PAYLOAD_TOO_LARGE", "file is over the file size limit");
		goto out_done;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		close(fd);
		resp_error(out, 500, "out of memory");
		goto out_done;
	}
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	resp_raw(out, 200, "application/octet-stream", buf, off);
out_done:
	exec_done(r->mock, sb);
}

/* ---- sandbox networks and disks ---- */

static void h_sb_net_attach(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = body_object(r, out, true);
	const char *id = NULL;
	mock_sandbox *sb;
	cJSON *net = NULL;
	bool ok = false;

	if (b == NULL || !get_str(b, "id", &id, out))
		return;
	if (id == NULL) {
		resp_fail(out, 400, "id", "INVALID_REQUEST", "id is required (network id or name)");
		return;
	}
	pthread_mutex_lock(&r->mock->model->lock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL) {
		net = mock_network_find(t, id);
		if (net == NULL) {
			resp_fail(out, 404, "error", "NOT_FOUND", "network not found");
		} else {
			const char *nid = cJSON_GetObjectItem(net, "id")->valuestring;
			const cJSON *have;
			bool dup = false;

			cJSON_ArrayForEach(have, sb->networks) {
				if (strcmp(have->valuestring, nid) == 0)
					dup = true;
			}
			if (!dup) {
				cJSON_AddItemToArray(sb->networks, cJSON_CreateString(nid));
				cJSON_AddItemToArray(cJSON_GetObjectItem(net, "members"),
						     cJSON_CreateString(sb->id));
			}
			ok = true;
		}
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (ok) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddBoolToObject(d, "ok", true);
		resp_success(out, 200, d);
	}
}

static void remove_string(cJSON *arr, const char *s)
{
	int i = 0;
	const cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		if (cJSON_IsString(it) && strcmp(it->valuestring, s) == 0) {
			cJSON_DeleteItemFromArray(arr, i);
			return;
		}
		i++;
	}
}

static void h_sb_net_detach(mreq *r, mresp *out, mock_tenant *t)
{
	char nid_arg[128];
	mock_sandbox *sb;
	bool ok = false;

	pthread_mutex_lock(&r->mock->model->lock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL && req_seg(r, 4, nid_arg, sizeof(nid_arg))) {
		cJSON *net = mock_network_find(t, nid_arg);

		if (net == NULL) {
			resp_fail(out, 404, "error", "NOT_FOUND", "network not found");
		} else {
			remove_string(sb->networks, cJSON_GetObjectItem(net, "id")->valuestring);
			remove_string(cJSON_GetObjectItem(net, "members"), sb->id);
			ok = true;
		}
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (ok) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddBoolToObject(d, "ok", true);
		resp_success(out, 200, d);
	}
}

static void h_sb_disks_list(mreq *r, mresp *out, mock_tenant *t)
{
	mock_sandbox *sb;
	cJSON *all = NULL;

	pthread_mutex_lock(&r->mock->model->lock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL)
		all = cJSON_Duplicate(sb->disks, true);
	pthread_mutex_unlock(&r->mock->model->lock);
	if (all != NULL)
		resp_page(r, out, all);
}

static void h_sb_disks_attach(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = body_object(r, out, true);
	const char *disk_id = NULL, *mount = NULL, *sub = NULL;
	mock_sandbox *sb;
	bool ok = false;

	if (b == NULL || !get_str(b, "disk_id", &disk_id, out) ||
	    !get_str(b, "mount_path", &mount, out) || !get_str(b, "sub_path", &sub, out))
		return;
	if (disk_id == NULL) {
		resp_fail(out, 400, "disk_id", "INVALID_REQUEST", "disk_id is required");
		return;
	}
	if (mount == NULL || mount[0] != '/') {
		resp_fail(out, 400, "mount_path", "INVALID_REQUEST", "mount_path is required (absolute)");
		return;
	}
	pthread_mutex_lock(&r->mock->model->lock);
	tick(r->mock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL && sb->status != ST_RUNNING) {
		resp_fail(out, 409, "status", "NOT_RUNNING", "disks attach only to a running sandbox");
		sb = NULL;
	}
	if (sb != NULL) {
		cJSON *disk = mock_disk_find(t, disk_id);

		if (disk == NULL) {
			resp_fail(out, 404, "error", "NOT_FOUND", "disk not found");
		} else {
			cJSON *att = cJSON_CreateObject();

			cJSON_AddStringToObject(att, "disk_id", cJSON_GetObjectItem(disk, "id")->valuestring);
			cJSON_AddStringToObject(att, "mount_path", mount);
			if (sub != NULL)
				cJSON_AddStringToObject(att, "sub_path", sub);
			cJSON_AddItemToArray(sb->disks, att);
			ok = true;
		}
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (ok) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddBoolToObject(d, "ok", true);
		resp_success(out, 200, d);
	}
}

static void h_sb_disks_detach(mreq *r, mresp *out, mock_tenant *t)
{
	const char *mount = req_query(r, "mount_path");
	char did[128];
	mock_sandbox *sb;
	bool ok = false;

	if (mount == NULL || mount[0] == '\0') {
		resp_fail(out, 400, "mount_path", "INVALID_REQUEST", "query parameter mount_path is required");
		return;
	}
	pthread_mutex_lock(&r->mock->model->lock);
	sb = sandbox_arg(r, out, t);
	if (sb != NULL && req_seg(r, 4, did, sizeof(did))) {
		cJSON *disk = mock_disk_find(t, did);
		const char *id = disk != NULL ? cJSON_GetObjectItem(disk, "id")->valuestring : did;
		int i = 0;
		const cJSON *att;

		cJSON_ArrayForEach(att, sb->disks) {
			const cJSON *a_id = cJSON_GetObjectItem(att, "disk_id");
			const cJSON *a_mp = cJSON_GetObjectItem(att, "mount_path");

			if (cJSON_IsString(a_id) && cJSON_IsString(a_mp) && strcmp(a_id->valuestring, id) == 0 &&
			    strcmp(a_mp->valuestring, mount) == 0) {
				cJSON_DeleteItemFromArray(sb->disks, i);
				ok = true;
				break;
			}
			i++;
		}
		if (!ok)
			resp_fail(out, 404, "error", "NOT_FOUND", "no such disk attachment");
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (ok) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddBoolToObject(d, "detached", true);
		resp_success(out, 200, d);
	}
}

/* ---- networks, disks, templates ---- */

static cJSON *network_view(const cJSON *net)
{
	cJSON *v = cJSON_Duplicate(net, true);

	cJSON_AddNumberToObject(v, "member_count", cJSON_GetArraySize(cJSON_GetObjectItem(net, "members")));
	return v;
}

static void h_networks_list(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *all = cJSON_CreateArray();
	const cJSON *it;

	pthread_mutex_lock(&r->mock->model->lock);
	cJSON_ArrayForEach(it, t->networks)
		cJSON_AddItemToArray(all, network_view(it));
	pthread_mutex_unlock(&r->mock->model->lock);
	resp_page(r, out, all);
}

static void h_networks_create(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = body_object(r, out, true);
	const char *name = NULL;
	cJSON *net, *v = NULL;
	mock_err e;

	if (b == NULL || !get_str(b, "name", &name, out))
		return;
	if (name == NULL) {
		resp_fail(out, 400, "name", "INVALID_REQUEST", "name is required");
		return;
	}
	pthread_mutex_lock(&r->mock->model->lock);
	net = mock_network_create(r->mock->model, t, name, &e);
	if (net != NULL)
		v = network_view(net);
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v == NULL)
		resp_mock_err(out, &e);
	else
		resp_success(out, 200, v);
}

static void h_networks_get(mreq *r, mresp *out, mock_tenant *t)
{
	char id[128];
	cJSON *v = NULL;

	pthread_mutex_lock(&r->mock->model->lock);
	if (req_seg(r, 2, id, sizeof(id))) {
		cJSON *net = mock_network_find(t, id);

		if (net != NULL)
			v = network_view(net);
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v == NULL)
		resp_fail(out, 404, "error", "NOT_FOUND", "network not found");
	else
		resp_success(out, 200, v);
}

static void h_networks_delete(mreq *r, mresp *out, mock_tenant *t)
{
	char id[128];
	mock_err e;
	int rc = -1;

	mock_err_set(&e, 404, "NOT_FOUND", "error", "network not found");
	pthread_mutex_lock(&r->mock->model->lock);
	if (req_seg(r, 2, id, sizeof(id)))
		rc = mock_network_delete(r->mock->model, t, id, &e);
	pthread_mutex_unlock(&r->mock->model->lock);
	if (rc != 0) {
		resp_mock_err(out, &e);
	} else {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddBoolToObject(d, "ok", true);
		resp_success(out, 200, d);
	}
}

static void h_disks_list(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *all = cJSON_CreateArray();
	const cJSON *it;

	pthread_mutex_lock(&r->mock->model->lock);
	cJSON_ArrayForEach(it, t->disks)
		cJSON_AddItemToArray(all, mock_disk_view(it));
	pthread_mutex_unlock(&r->mock->model->lock);
	resp_page(r, out, all);
}

static void h_disks_create(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = body_object(r, out, true);
	cJSON *d, *v = NULL;
	mock_err e;

	if (b == NULL)
		return;
	pthread_mutex_lock(&r->mock->model->lock);
	d = mock_disk_create(r->mock->model, t, b, &e);
	if (d != NULL)
		v = mock_disk_view(d);
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v == NULL)
		resp_mock_err(out, &e);
	else
		resp_success(out, 200, v);
}

static void h_disks_get(mreq *r, mresp *out, mock_tenant *t)
{
	char id[128];
	cJSON *v = NULL;

	pthread_mutex_lock(&r->mock->model->lock);
	if (req_seg(r, 2, id, sizeof(id))) {
		cJSON *d = mock_disk_find(t, id);

		if (d != NULL)
			v = mock_disk_view(d);
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v == NULL)
		resp_fail(out, 404, "error", "NOT_FOUND", "disk not found");
	else
		resp_success(out, 200, v);
}

static void h_disks_patch(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = body_object(r, out, true);
	const cJSON *cred = NULL;
	const char *ak = NULL, *sk = NULL;
	char id[128];
	cJSON *v = NULL;

	if (b == NULL || !get_kind(b, "credentials", false, &cred, out))
		return;
	if (cred == NULL || !get_str(cred, "access_key", &ak, out) || !get_str(cred, "secret_key", &sk, out) ||
	    ak == NULL || sk == NULL || ak[0] == '\0' || sk[0] == '\0') {
		if (out->body == NULL)
			resp_fail(out, 400, "credentials", "INVALID_REQUEST",
				  "credentials needs non-empty access_key and secret_key");
		return;
	}
	pthread_mutex_lock(&r->mock->model->lock);
	if (req_seg(r, 2, id, sizeof(id))) {
		cJSON *d = mock_disk_find(t, id);

		if (d != NULL) {
			cJSON_ReplaceItemInObject(d, "_credentials", cJSON_Duplicate(cred, true));
			v = mock_disk_view(d);
		}
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v == NULL)
		resp_fail(out, 404, "error", "NOT_FOUND", "disk not found");
	else
		resp_success(out, 200, v);
}

static void h_disks_delete(mreq *r, mresp *out, mock_tenant *t)
{
	char id[128];
	mock_err e;
	int rc = -1;

	mock_err_set(&e, 404, "NOT_FOUND", "error", "disk not found");
	pthread_mutex_lock(&r->mock->model->lock);
	if (req_seg(r, 2, id, sizeof(id)))
		rc = mock_disk_delete(r->mock->model, t, id, &e);
	pthread_mutex_unlock(&r->mock->model->lock);
	if (rc != 0) {
		resp_mock_err(out, &e);
	} else {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddBoolToObject(d, "deleted", true);
		resp_success(out, 200, d);
	}
}

static void h_templates_list(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *all = cJSON_CreateArray();
	cJSON *it;

	pthread_mutex_lock(&r->mock->model->lock);
	cJSON_ArrayForEach(it, t->templates) {
		cJSON *v = mock_template_view(r->mock->model, it);

		cJSON_DeleteItemFromObjectCaseSensitive(v, "dockerfile");
		cJSON_AddItemToArray(all, v);
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	resp_page(r, out, all);
}

static void h_templates_create(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = body_object(r, out, true);
	cJSON *tpl, *v = NULL;
	mock_err e;

	if (b == NULL)
		return;
	pthread_mutex_lock(&r->mock->model->lock);
	tpl = mock_template_create(r->mock->model, t, b, &e);
	if (tpl != NULL)
		v = mock_template_view(r->mock->model, tpl);
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v == NULL)
		resp_mock_err(out, &e);
	else
		resp_success(out, 200, v);
}

static void h_templates_get(mreq *r, mresp *out, mock_tenant *t)
{
	char id[128];
	const char *inc = req_query(r, "include");
	cJSON *v = NULL;

	pthread_mutex_lock(&r->mock->model->lock);
	if (req_seg(r, 2, id, sizeof(id))) {
		cJSON *tpl = mock_template_find(t, id);

		if (tpl != NULL)
			v = mock_template_view(r->mock->model, tpl);
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v == NULL) {
		resp_fail(out, 404, "error", "NOT_FOUND", "template not found");
		return;
	}
	if (inc == NULL || strcmp(inc, "dockerfile") != 0)
		cJSON_DeleteItemFromObjectCaseSensitive(v, "dockerfile");
	resp_success(out, 200, v);
}

static void h_templates_delete(mreq *r, mresp *out, mock_tenant *t)
{
	char id[128];
	bool ok = false;

	pthread_mutex_lock(&r->mock->model->lock);
	if (req_seg(r, 2, id, sizeof(id))) {
		cJSON *tpl = mock_template_find(t, id);

		if (tpl != NULL) {
			cJSON_Delete(cJSON_DetachItemViaPointer(t->templates, tpl));
			ok = true;
		}
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (!ok) {
		resp_fail(out, 404, "error", "NOT_FOUND", "template not found");
	} else {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddBoolToObject(d, "deleted", true);
		resp_success(out, 200, d);
	}
}

static void h_templates_logs(mreq *r, mresp *out, mock_tenant *t)
{
	static const char *const lines[] = {
		"queued build", "pulling base image", "running dockerfile steps",
		"exporting rootfs to ext4", "build finished",
	};
	char id[128];
	const char *follow = req_query(r, "follow");
	bool nd = follow != NULL && strcmp(follow, "true") == 0;
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char status[16] = "";
	cJSON *v = NULL;
	size_t shown;

	pthread_mutex_lock(&r->mock->model->lock);
	if (req_seg(r, 2, id, sizeof(id))) {
		cJSON *tpl = mock_template_find(t, id);

		if (tpl != NULL)
			v = mock_template_view(r->mock->model, tpl);
	}
	pthread_mutex_unlock(&r->mock->model->lock);
	if (v == NULL) {
		resp_fail(out, 404, "error", "NOT_FOUND", "template not found");
		return;
	}
	snprintf(status, sizeof(status), "%s", cJSON_GetObjectItem(v, "status")->valuestring);
	cJSON_Delete(v);
	shown = strcmp(status, "ready") == 0 ? 5 : (strcmp(status, "building") == 0 ? 3 : 1);
	for (size_t i = 0; i < shown; i++) {
		if (nd) {
			sbx_strbuf_puts(&sb, "{\"level\":\"info\",\"attempt\":1,\"line\":");
			json_escape(&sb, lines[i], strlen(lines[i]));
			sbx_strbuf_puts(&sb, "}\n");
		} else {
			sbx_strbuf_printf(&sb, "%s\n", lines[i]);
		}
	}
	if (nd)
		sbx_strbuf_printf(&sb, "{\"final\":true,\"status\":\"%s\"}\n", status);
	{
		size_t len = 0;
		char *body = sbx_strbuf_detach(&sb, &len);

		resp_raw(out, 200, nd ? "application/x-ndjson" : "text/plain; charset=utf-8",
			 body != NULL ? body : strdup(""), len);
	}
}

/* ---- routing ---- */

typedef struct route {
	const char *method;
	const char *pattern;
	bool auth;
	handler_fn fn;
} route;

static const route routes[] = {
	{"GET", "/healthz", false, h_healthz},
	{"GET", "/readyz", false, h_readyz},
	{"GET", "/v1/whoami", true, h_whoami},
	{"GET", "/v1/shapes", false, h_shapes},
	{"GET", "/v1/rootfs", false, h_rootfs},
	{"GET", "/v1/hosts", true, h_hosts},
	{"GET", "/v1/sandboxes", true, h_list},
	{"POST", "/v1/sandboxes", true, h_create},
	{"GET", "/v1/sandboxes/by-ip/{ip}", true, h_by_ip},
	{"GET", "/v1/sandboxes/{id}", true, h_get},
	{"PATCH", "/v1/sandboxes/{id}", true, h_patch},
	{"DELETE", "/v1/sandboxes/{id}", true, h_delete},
	{"POST", "/v1/sandboxes/{id}/exec", true, h_exec},
	{"PUT", "/v1/sandboxes/{id}/files", true, h_files_put},
	{"GET", "/v1/sandboxes/{id}/files", true, h_files_get},
	{"POST", "/v1/sandboxes/{id}/pause", true, h_pause},
	{"POST", "/v1/sandboxes/{id}/resume", true, h_resume},
	{"POST", "/v1/sandboxes/{id}/fork", true, h_fork},
	{"POST", "/v1/sandboxes/{id}/resize", true, h_resize},
	{"POST", "/v1/sandboxes/{id}/ssh-pubkeys", true, h_ssh},
	{"GET", "/v1/sandboxes/{id}/egress", true, h_egress_get},
	{"PUT", "/v1/sandboxes/{id}/egress", true, h_egress_put},
	{"GET", "/v1/sandboxes/{id}/bandwidth", true, h_bw_get},
	{"POST", "/v1/sandboxes/{id}/bandwidth/recharge", true, h_bw_recharge},
	{"POST", "/v1/sandboxes/{id}/networks", true, h_sb_net_attach},
	{"DELETE", "/v1/sandboxes/{id}/networks/{net}", true, h_sb_net_detach},
	{"GET", "/v1/sandboxes/{id}/disks", true, h_sb_disks_list},
	{"POST", "/v1/sandboxes/{id}/disks", true, h_sb_disks_attach},
	{"DELETE", "/v1/sandboxes/{id}/disks/{disk}", true, h_sb_disks_detach},
	{"GET", "/v1/networks", true, h_networks_list},
	{"POST", "/v1/networks", true, h_networks_create},
	{"GET", "/v1/networks/{id}", true, h_networks_get},
	{"DELETE", "/v1/networks/{id}", true, h_networks_delete},
	{"GET", "/v1/disks", true, h_disks_list},
	{"POST", "/v1/disks", true, h_disks_create},
	{"GET", "/v1/disks/{id}", true, h_disks_get},
	{"PATCH", "/v1/disks/{id}", true, h_disks_patch},
	{"DELETE", "/v1/disks/{id}", true, h_disks_delete},
	{"GET", "/v1/templates", true, h_templates_list},
	{"POST", "/v1/templates", true, h_templates_create},
	{"GET", "/v1/templates/{id}", true, h_templates_get},
	{"DELETE", "/v1/templates/{id}", true, h_templates_delete},
	{"GET", "/v1/templates/{id}/logs", true, h_templates_logs},
};

static mock_tenant *authenticate(mreq *r, mresp *out)
{
	sbx_mock *mock = r->mock;
	mock_tenant *t;

	if (r->api_key == NULL) {
		const char *authz = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");

		resp_fail(out, 401, "error", "UNAUTHORIZED",
			  authz != NULL ? "Authorization: Bearer is not accepted; send X-Api-Key"
					: "missing API key (send X-Api-Key)");
		return NULL;
	}
	pthread_mutex_lock(&mock->model->lock);
	t = mock_tenant_get(mock->model, r->api_key, mock->model->set.accept_any_key);
	pthread_mutex_unlock(&mock->model->lock);
	if (t == NULL)
		resp_fail(out, 401, "error", "UNAUTHORIZED", "unknown API key");
	return t;
}

/* Durable state: an acknowledged (2xx) mutation is logged and fsync'd
 * before the answer goes out; if that fails, the client gets a 500 rather
 * than an acknowledgement the log does not back. Exec and file uploads
 * change guest files, not the control-plane state. */
void mock_persist_mutation(mreq *r, mresp *out, mock_tenant *t)
{
	sbx_err err = {{0}};
	char msg[600];

	if (strcmp(r->method, "GET") == 0 || out->status < 200 || out->status > 299 ||
	    mock_path_match("/v1/sandboxes/{id}/exec", r->path) ||
	    mock_path_match("/v1/sandboxes/{id}/files", r->path))
		return;
	if (mock_durable_persist(r->mock, t, &err) == 0)
		return;
	if (!r->mock->quiet)
		fprintf(stderr, "sbx-mock: %s %s: %s\n", r->method, r->path, err.msg);
	if (out->custom != NULL) {
		MHD_destroy_response(out->custom);
		out->custom = NULL;
	}
	snprintf(msg, sizeof(msg), "the change could not be made durable: %s", err.msg);
	resp_error(out, 500, msg);
}

void api_dispatch(mreq *r, mresp *out)
{
	char allow[128] = "";
	size_t alen = 0;

	if (mock_rec_dispatch(r, out))
		return; /* record or replay mode: no local state */
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const route *rt = &routes[i];
		mock_tenant *t = NULL;

		if (!mock_path_match(rt->pattern, r->path))
			continue;
		if (strcmp(rt->method, r->method) != 0) {
			if (strstr(allow, rt->method) == NULL && alen + strlen(rt->method) + 3 < sizeof(allow))
				alen += (size_t)snprintf(allow + alen, sizeof(allow) - alen, "%s%s",
							 alen > 0 ? ", " : "", rt->method);
			continue;
		}
		if (rt->auth) {
			t = authenticate(r, out);
			if (t == NULL)
				return;
		}
		rt->fn(r, out, t);
		if (r->mock->state != NULL && t != NULL)
			mock_persist_mutation(r, out, t);
		return;
	}
	if (alen > 0) {
		char msg[200];

		snprintf(msg, sizeof(msg), "method %s is not allowed here (allowed: %s)", r->method, allow);
		resp_fail(out, 405, "error", "METHOD_NOT_ALLOWED", msg);
		resp_header(out, "Allow", allow);
		return;
	}
	{
		char msg[300];

		snprintf(msg, sizeof(msg), "no route for %s %.200s", r->method, r->path);
		resp_fail(out, 404, "error", "NOT_FOUND", msg);
	}
}

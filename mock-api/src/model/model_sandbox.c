/* model_sandbox: sandboxes — validation of a create or fork, the lifecycle
 * state machine (pause, resume, destroy, fork, host death, the transitions
 * mock_tick applies on the virtual clock, auto-pause) and the sandbox views;
 * see model.h.
 *
 * Only this file (and model_persist.c, restoring) decides a sandbox's
 * status. Never touches a guest process or a socket: callers get an
 * on_change callback and act on the guest themselves. */
#include "model/model_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- validation ---- */

static bool env_key_ok(const char *k)
{
	if (!(isalpha((unsigned char)k[0]) || k[0] == '_'))
		return false;
	for (const char *p = k + 1; *p != '\0'; p++) {
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	}
	return true;
}

int mock_validate_envs(const cJSON *envs, mock_err *e)
{
	size_t n = 0, total = 0;
	const cJSON *it;

	if (envs == NULL || cJSON_IsNull(envs))
		return 0;
	if (!cJSON_IsObject(envs)) {
		mock_err_set(e, 400, "INVALID_ENVS", "envs", "envs must be an object of strings");
		return -1;
	}
	n = (size_t)cJSON_GetArraySize(envs);
	if (n > MOCK_ENVS_MAX) { /* first: the duplicate check below is quadratic */
		mock_err_set(e, 400, "INVALID_ENVS", "envs", "envs has %zu entries, over the limit of 64", n);
		return -1;
	}
	cJSON_ArrayForEach(it, envs) {
		size_t vlen;

		if (!env_key_ok(it->string)) {
			mock_err_set(e, 400, "INVALID_ENVS", "envs",
				     "envs key \"%.64s\" must match ^[A-Za-z_][A-Za-z0-9_]*$", it->string);
			return -1;
		}
		if (!cJSON_IsString(it)) {
			mock_err_set(e, 400, "INVALID_ENVS", "envs", "envs.%.64s must be a string",
				     it->string);
			return -1;
		}
		vlen = strlen(it->valuestring);
		if (vlen > MOCK_ENV_VALUE_MAX) {
			mock_err_set(e, 400, "INVALID_ENVS", "envs",
				     "envs.%.64s is %zu bytes, over the 4096-byte limit", it->string, vlen);
			return -1;
		}
		/* JSON leaves a repeated name's meaning open (RFC 8259 section
		 * 4), and a guest's environment would hold the name twice */
		for (const cJSON *before = envs->child; before != it; before = before->next) {
			if (strcmp(before->string, it->string) == 0) {
				mock_err_set(e, 400, "INVALID_ENVS", "envs", "envs key \"%.64s\" is given twice",
					     it->string);
				return -1;
			}
		}
		total += vlen + strlen(it->string);
	}
	if (total > MOCK_ENVS_TOTAL_MAX) {
		mock_err_set(e, 400, "INVALID_ENVS", "envs", "envs total %zu bytes, over the 64 KiB limit",
			     total);
		return -1;
	}
	return 0;
}

static bool name_taken(const mock_model *m, const mock_tenant *t, const char *name)
{
	for (size_t i = 0; i < m->nlive; i++) {
		const mock_sandbox *sb = m->live[i];

		if (sb->tenant == t && !mock_status_terminal(sb->status) && strcmp(sb->name, name) == 0)
			return true;
	}
	return false;
}

static int check_cap_and_credit(mock_model *m, mock_tenant *t, mock_err *e)
{
	unsigned cap = mock_tenant_cap(m, t);

	if (model_need_credit(m, t, e) != 0)
		return -1;
	if (mock_tenant_live_count(m, t) >= cap) {
		mock_err_set(e, (int)m->set.cap_status, m->set.cap_code, "error",
			     "concurrent sandbox limit reached (%u); paused sandboxes count", cap);
		return -1;
	}
	return 0;
}

static int copy_ssh_keys(cJSON *dst, const cJSON *keys, const char *field, mock_err *e)
{
	const cJSON *k;

	if (keys == NULL || cJSON_IsNull(keys))
		return 0;
	if (!cJSON_IsArray(keys)) {
		mock_err_set(e, 400, "INVALID_REQUEST", field, "%s must be an array of strings", field);
		return -1;
	}
	cJSON_ArrayForEach(k, keys) {
		const cJSON *have;
		bool dup = false;

		if (!cJSON_IsString(k) || k->valuestring[0] == '\0') {
			mock_err_set(e, 400, "INVALID_REQUEST", field, "%s items must be non-empty strings",
				     field);
			return -1;
		}
		cJSON_ArrayForEach(have, dst) {
			if (strcmp(have->valuestring, k->valuestring) == 0)
				dup = true;
		}
		if (!dup)
			cJSON_AddItemToArray(dst, cJSON_CreateString(k->valuestring));
	}
	return 0;
}

static int validate_create(mock_model *m, mock_tenant *t, const mock_create_req *req,
			   const mock_shape **shape, mock_err *e)
{
	*shape = mock_shape_find(req->shape);
	if (*shape == NULL) {
		mock_err_set(e, 400, "INVALID_SHAPE", "shape", "unknown shape \"%.64s\" (see GET /v1/shapes)",
			     req->shape);
		return -1;
	}
	if (req->rootfs != NULL && req->rootfs[0] != '\0' && !model_rootfs_known(req->rootfs)) {
		/* not in the catalog: one of the caller's templates (id or name), ready */
		cJSON *tpl = mock_template_find(t, req->rootfs);
		cJSON *tv = tpl != NULL ? mock_template_view(m, tpl, false) : NULL;
		const char *st = tv != NULL ? model_str(tv, "status") : NULL;

		if (tpl == NULL) {
			mock_err_set(e, 400, "INVALID_ROOTFS", "rootfs",
				     "unknown rootfs \"%.64s\" (see GET /v1/rootfs, or a ready template)",
				     req->rootfs);
			return -1;
		}
		if (st == NULL || strcmp(st, "ready") != 0) {
			mock_err_set(e, 400, "INVALID_ROOTFS", "rootfs",
				     "template \"%.64s\" is %s, not ready", req->rootfs,
				     st != NULL ? st : "unknown");
			cJSON_Delete(tv);
			return -1;
		}
		cJSON_Delete(tv);
	}
	if (req->region != NULL && strcmp(req->region, m->set.region) != 0) {
		mock_err_set(e, 400, "INVALID_REGION", "region",
			     "region \"%.64s\" is not served here (this control plane serves \"%s\")",
			     req->region, m->set.region);
		return -1;
	}
	if (req->name != NULL && req->name[0] != '\0' && mock_validate_name(req->name, e) != 0)
		return -1;
	if (req->has_auto_pause && (req->auto_pause_s < 60 || req->auto_pause_s > 86400)) {
		mock_err_set(e, 400, "INVALID_AUTO_PAUSE", "auto_pause_after_seconds",
			     "auto_pause_after_seconds must be between 60 and 86400");
		return -1;
	}
	if (req->bw_quota != 0) {
		mock_err_set(e, 400, "INVALID_REQUEST", "bandwidth_quota_bytes",
			     "bandwidth_quota_bytes cannot be set on create; use bandwidth/recharge");
		return -1;
	}
	if (req->disk_mib != 0 && req->disk_mib < (*shape)->default_disk_mib) {
		mock_err_set(e, 400, "INVALID_DISK", "disk_mib",
			     "disk_mib must be 0 or at least the shape default (%u)",
			     (*shape)->default_disk_mib);
		return -1;
	}
	if (mock_validate_envs(req->envs, e) != 0)
		return -1;
	/* SDK: "Empty = scheduler picks", like an empty name or rootfs */
	if (req->host_id != NULL && req->host_id[0] != '\0') {
		char active[40];
		unsigned n = model_host_number(req->host_id);

		mock_active_host(m, active, sizeof(active));
		if (n >= 1 && n <= m->hosts_dead) {
			mock_err_set(e, 400, "INVALID_HOST", "host_id", "host \"%s\" is dead", req->host_id);
			return -1;
		}
		if (strcmp(req->host_id, active) != 0) {
			mock_err_set(e, 400, "INVALID_HOST", "host_id", "unknown host \"%.64s\"", req->host_id);
			return -1;
		}
	}
	if (req->name != NULL && req->name[0] != '\0' && name_taken(m, t, req->name)) {
		mock_err_set(e, 409, "NAME_TAKEN", "name",
			     "a sandbox named \"%s\" already exists", req->name);
		return -1;
	}
	return 0;
}

/* "Empty = auto-generated" (SDK): "sandbox-" and the id's last 14
 * characters, lower case (22 characters, the name limit), unique among the
 * tenant's live sandboxes. */
static void auto_name(mock_model *m, mock_tenant *t, mock_sandbox *sb)
{
	size_t len = strlen(sb->id);
	const char *tail = len > 14 ? sb->id + len - 14 : sb->id;

	for (int k = 0; k < 100; k++) {
		char *p;

		if (k == 0)
			snprintf(sb->name, sizeof(sb->name), "sandbox-%.14s", tail);
		else
			snprintf(sb->name, sizeof(sb->name), "sandbox-%.10s-%02d", tail, k);
		for (p = sb->name; *p != '\0'; p++)
			*p = (char)tolower((unsigned char)*p);
		if (!name_taken(m, t, sb->name))
			return;
	}
}

/* ---- pending transitions ---- */

static void schedule(mock_model *m, mock_sandbox *sb, mock_status to, int64_t in_ms)
{
	sb->due_status = to;
	sb->due_ms = mock_now(m) + in_ms;
	if (sb->due_ms < m->next_due_ms)
		m->next_due_ms = sb->due_ms;
}

static void auto_pause_arm(mock_model *m, mock_sandbox *sb)
{
	if (sb->auto_pause_s > 0) {
		int64_t at = sb->last_active_ms + (int64_t)sb->auto_pause_s * 1000;

		if (at < m->next_due_ms)
			m->next_due_ms = at;
	}
}

/* ---- create and fork ---- */

/* A new sandbox of t with a fresh id, address and host, in no index yet;
 * NULL with a 500 in *e when out of memory. */
static mock_sandbox *sandbox_alloc(mock_model *m, mock_tenant *t, mock_err *e)
{
	mock_sandbox *sb = calloc(1, sizeof(*sb));
	uint32_t n;

	if (sb == NULL)
		goto out_oom;
	sb->tenant = t;
	sb->due_ms = -1;
	sb->egress.is_null = true;
	sb->bw_quota = MOCK_BW_DEFAULT_QUOTA;
	sb->created_ms = mock_now(m);
	sb->last_active_ms = sb->created_ms;
	mock_new_id(m, "sb-", sb->id, sizeof(sb->id));
	n = m->ip_next++;
	snprintf(sb->ip, sizeof(sb->ip), "10.%u.%u.%u", 200 + ((n >> 16) & 0x1f),
		 (n >> 8) & 0xff, n & 0xff);
	snprintf(sb->region, sizeof(sb->region), "%s", m->set.region);
	mock_active_host(m, sb->host_id, sizeof(sb->host_id));
	sb->networks = cJSON_CreateArray();
	sb->disks = cJSON_CreateArray();
	sb->envs = cJSON_CreateObject();
	sb->ssh_pubkeys = cJSON_CreateArray();
	if (sb->networks == NULL || sb->disks == NULL || sb->envs == NULL || sb->ssh_pubkeys == NULL)
		goto out_free;
	return sb;

out_free:
	model_sandbox_free(sb);
out_oom:
	model_err_oom(e);
	return NULL;
}

/* *slot becomes a deep copy of src (the old value freed): -1 when out of
 * memory, *slot then NULL. */
static int replace_with_copy(cJSON **slot, const cJSON *src)
{
	cJSON_Delete(*slot);
	*slot = cJSON_Duplicate(src, true);
	return *slot == NULL ? -1 : 0;
}

/* Puts a finished sandbox into the model, or frees it when out of memory. */
static mock_sandbox *sandbox_commit(mock_model *m, mock_sandbox *sb, mock_err *e)
{
	if (model_sandbox_add(m, sb))
		return sb;
	model_sandbox_free(sb);
	model_err_oom(e);
	return NULL;
}

mock_sandbox *mock_sandbox_create(mock_model *m, mock_tenant *t, const mock_create_req *req,
				  mock_err *e)
{
	const mock_shape *shape;
	mock_sandbox *sb;

	if (validate_create(m, t, req, &shape, e) != 0)
		return NULL;
	if (check_cap_and_credit(m, t, e) != 0)
		return NULL;
	sb = sandbox_alloc(m, t, e);
	if (sb == NULL)
		return NULL;
	sb->shape = shape;
	sb->vcpu = shape->vcpu;
	sb->mem_mib = shape->mem_mib;
	sb->disk_mib = req->disk_mib != 0 ? req->disk_mib : shape->default_disk_mib;
	snprintf(sb->rootfs, sizeof(sb->rootfs), "%s",
		 req->rootfs != NULL && req->rootfs[0] != '\0' ? req->rootfs : MOCK_ROOTFS_DEFAULT);
	if (!model_rootfs_known(sb->rootfs)) {
		/* a ready template (checked above): its layer over its base */
		const cJSON *tpl = mock_template_find(t, sb->rootfs);

		snprintf(sb->tpl_id, sizeof(sb->tpl_id), "%s", model_str(tpl, "id"));
		snprintf(sb->tpl_base, sizeof(sb->tpl_base), "%s", model_str(tpl, "base"));
	}
	if (req->name != NULL && req->name[0] != '\0')
		snprintf(sb->name, sizeof(sb->name), "%s", req->name);
	else
		auto_name(m, t, sb);
	sb->ingress_enabled = req->ingress_enabled;
	sb->auto_pause_s = req->has_auto_pause ? req->auto_pause_s : 0;
	sb->status = ST_CREATING;
	if (sbx_egress_list_copy(&req->egress, &sb->egress) != 0)
		goto out_free_oom;
	if (req->envs != NULL && cJSON_IsObject(req->envs) &&
	    replace_with_copy(&sb->envs, req->envs) != 0)
		goto out_free_oom;
	if (copy_ssh_keys(sb->ssh_pubkeys, req->ssh_pubkeys, "ssh_pubkeys", e) != 0)
		goto out_free;
	{
		cJSON *disks = mock_disks_resolve(t, req->disks, e);

		if (disks == NULL)
			goto out_free;
		cJSON_Delete(sb->disks);
		sb->disks = disks;
	}
	if (model_network_join(sb, t, req->networks, e) != 0)
		goto out_free;
	return sandbox_commit(m, sb, e);

out_free_oom:
	model_err_oom(e);
out_free:
	model_sandbox_free(sb);
	return NULL;
}

/* What a fork may be refused for, checked before anything is allocated. */
static int fork_check(mock_model *m, const mock_sandbox *src, const mock_fork_req *req,
		      mock_err *e)
{
	if (src->status != ST_PAUSED && src->status != ST_PAUSING) {
		mock_err_set(e, 409, "INVALID_STATE", "status",
			     "fork needs a paused sandbox; this one is %s (pause it first)",
			     mock_status_name(src->status));
		return -1;
	}
	if (mock_validate_envs(req->envs, e) != 0)
		return -1;
	if (req->bw_quota < 0 && req->bw_quota != -1) {
		mock_err_set(e, 400, "INVALID_REQUEST", "bandwidth_quota_bytes",
			     "bandwidth_quota_bytes must be -1 (unmetered) or positive");
		return -1;
	}
	return check_cap_and_credit(m, src->tenant, e);
}

/* The fork's envs: src's, with the request's applied over them. */
static int fork_envs(mock_sandbox *sb, const mock_sandbox *src, const cJSON *overlay)
{
	const cJSON *it;

	if (replace_with_copy(&sb->envs, src->envs) != 0)
		return -1;
	if (overlay == NULL || !cJSON_IsObject(overlay))
		return 0;
	cJSON_ArrayForEach(it, overlay) {
		cJSON_DeleteItemFromObjectCaseSensitive(sb->envs, it->string);
		cJSON_AddItemToObject(sb->envs, it->string, cJSON_CreateString(it->valuestring));
	}
	return 0;
}

mock_sandbox *mock_sandbox_fork(mock_model *m, mock_sandbox *src, const mock_fork_req *req,
				mock_err *e)
{
	mock_sandbox *sb;

	if (fork_check(m, src, req, e) != 0)
		return NULL;
	sb = sandbox_alloc(m, src->tenant, e);
	if (sb == NULL)
		return NULL;
	sb->shape = src->shape;
	sb->vcpu = src->vcpu;
	sb->mem_mib = src->mem_mib;
	sb->disk_mib = src->disk_mib;
	snprintf(sb->rootfs, sizeof(sb->rootfs), "%s", src->rootfs);
	/* the fork copies the source's root, the template's files with it */
	snprintf(sb->tpl_base, sizeof(sb->tpl_base), "%s", src->tpl_base);
	snprintf(sb->forked_from, sizeof(sb->forked_from), "%s", src->id);
	sb->ingress_enabled = req->has_ingress ? req->ingress_enabled : src->ingress_enabled;
	sb->auto_pause_s = src->auto_pause_s;
	if (req->bw_quota != 0)
		sb->bw_quota = req->bw_quota;
	if (sbx_egress_list_copy(req->has_egress ? &req->egress : &src->egress, &sb->egress) != 0)
		goto out_free_oom;
	if (fork_envs(sb, src, req->envs) != 0)
		goto out_free_oom;
	if (replace_with_copy(&sb->ssh_pubkeys, src->ssh_pubkeys) != 0)
		goto out_free_oom;
	if (copy_ssh_keys(sb->ssh_pubkeys, req->ssh_pubkeys, "ssh_pubkeys", e) != 0)
		goto out_free;
	if (req->start_paused) {
		sb->status = ST_PAUSED;
		sb->paused_ms = mock_now(m);
		sb->running_ms = sb->paused_ms;
	} else {
		sb->status = ST_FORKING;
		schedule(m, sb, ST_RUNNING, mock_timing_ms(m, "fork"));
	}
	return sandbox_commit(m, sb, e);

out_free_oom:
	model_err_oom(e);
out_free:
	model_sandbox_free(sb);
	return NULL;
}

/* ---- lifecycle ---- */

void mock_sandbox_set_running(mock_model *m, mock_sandbox *sb)
{
	sb->status = ST_RUNNING;
	sb->running_ms = mock_now(m);
	sb->spawn_ms = sb->running_ms - sb->created_ms;
	sb->last_active_ms = sb->running_ms;
	auto_pause_arm(m, sb);
}

void mock_sandbox_set_boot_failed(mock_model *m, mock_sandbox *sb)
{
	(void)m;
	sb->status = ST_FAILED;
}

void mock_sandbox_set_guest_lost(mock_model *m, mock_sandbox *sb)
{
	(void)m;
	sb->status = ST_ERROR;
}

void mock_sandbox_pause_ends_in_error(mock_model *m, mock_sandbox *sb)
{
	(void)m;
	sb->due_status = ST_ERROR;
}

void mock_sandbox_touch(mock_model *m, mock_sandbox *sb)
{
	sb->last_active_ms = mock_now(m);
	auto_pause_arm(m, sb);
}

int mock_sandbox_pause(mock_model *m, mock_sandbox *sb, mock_err *e)
{
	switch (sb->status) {
	case ST_PAUSED:
		return 200;
	case ST_PAUSING:
		return 202;
	case ST_RUNNING:
		sb->status = ST_PAUSING;
		schedule(m, sb, ST_PAUSED, mock_timing_ms(m, "pause"));
		return 202;
	default:
		mock_err_set(e, 409, "INVALID_STATE", "status", "cannot pause a sandbox that is %s",
			     mock_status_name(sb->status));
		return -1;
	}
}

const char *mock_resume_timing(const mock_sandbox *sb)
{
	return sb->cold_start ? "cold_start" : "resume";
}

int mock_sandbox_resume(mock_model *m, mock_sandbox *sb, mock_err *e)
{
	switch (sb->status) {
	case ST_RUNNING:
		return 200;
	case ST_RESUMING:
		return 202;
	case ST_PAUSED:
	case ST_ERROR:
		if (model_need_credit(m, sb->tenant, e) != 0)
			return -1;
		sb->status = ST_RESUMING;
		schedule(m, sb, ST_RUNNING, mock_timing_ms(m, mock_resume_timing(sb)));
		return 202;
	default:
		mock_err_set(e, 409, "INVALID_STATE", "status", "cannot resume a sandbox that is %s",
			     mock_status_name(sb->status));
		return -1;
	}
}

void model_sandbox_set_destroyed(mock_model *m, mock_sandbox *sb)
{
	sb->status = ST_DESTROYED;
	sb->destroyed_ms = mock_now(m);
	sb->due_ms = -1;
	model_network_leave_all(sb);
}

int mock_sandbox_destroy(mock_model *m, mock_sandbox *sb, bool *now_destroyed, mock_err *e)
{
	int64_t ms = mock_timing_ms(m, "destroy");

	(void)e;
	*now_destroyed = false;
	switch (sb->status) {
	case ST_DESTROYED:
	case ST_FAILED:
		*now_destroyed = true;
		return 200;
	case ST_DESTROYING:
		return 200;
	case ST_PAUSED:
	case ST_ERROR:
	case ST_CREATING:
		model_sandbox_set_destroyed(m, sb);
		*now_destroyed = true;
		return 200;
	default:
		break;
	}
	if (sb->destroy_stuck) {
		sb->status = ST_DESTROYING;
		sb->due_ms = -1;
		return 200;
	}
	if (ms == 0) {
		model_sandbox_set_destroyed(m, sb);
		*now_destroyed = true;
		return 200;
	}
	sb->status = ST_DESTROYING;
	schedule(m, sb, ST_DESTROYED, ms);
	return 200;
}

size_t mock_host_die(mock_model *m, const char *host_id,
		     void (*on_change)(mock_sandbox *sb, mock_status from, void *arg), void *arg)
{
	size_t hit = 0;
	char active[40];

	mock_active_host(m, active, sizeof(active));
	/* the fleet replaces a dead active host, so there is always one */
	if (host_id == NULL || host_id[0] == '\0' || strcmp(host_id, active) == 0)
		m->hosts_dead++;

	for (size_t i = 0; i < m->nlive; i++) {
		mock_sandbox *sb = m->live[i];
		mock_status from = sb->status;

		if (host_id != NULL && host_id[0] != '\0' && strcmp(sb->host_id, host_id) != 0)
			continue;
		if (mock_status_terminal(from) || from == ST_DESTROYING)
			continue;
		sb->status = from == ST_CREATING ? ST_FAILED : ST_ERROR;
		sb->due_ms = -1;
		sb->resume_polls = 0;
		sb->cold_start = true;
		hit++;
		if (on_change != NULL)
			on_change(sb, from, arg);
	}
	return hit;
}

/* ---- transitions on the virtual clock ---- */

static void apply_due(mock_model *m, mock_sandbox *sb, int64_t now)
{
	mock_status to = sb->due_status;

	sb->due_ms = -1;
	switch (to) {
	case ST_PAUSED:
		sb->status = ST_PAUSED;
		sb->paused_ms = now;
		break;
	case ST_RUNNING:
		if (sb->resume_polls > 0) {
			/* lifecycle fault: stays resuming until polled enough */
			sb->due_ms = now;
			sb->due_status = ST_RUNNING;
			return;
		}
		if (sb->status == ST_RESUMING) {
			sb->resumed_ms = now;
			if (sb->cold_start) /* now on a live host */
				mock_active_host(m, sb->host_id, sizeof(sb->host_id));
			sb->cold_start = false;
		}
		if (sb->running_ms == 0 || sb->status == ST_FORKING)
			sb->running_ms = now;
		sb->status = ST_RUNNING;
		sb->last_active_ms = now;
		break;
	case ST_DESTROYED:
		model_sandbox_set_destroyed(m, sb);
		break;
	default:
		sb->status = to;
		break;
	}
}

void mock_tick(mock_model *m, void (*on_change)(mock_sandbox *sb, mock_status from, void *arg),
	       void *arg)
{
	int64_t now = mock_now(m);
	int64_t next = INT64_MAX;

	model_live_compact(m);
	model_trim_destroyed(m);
	if (now < m->next_due_ms)
		return;
	/* a destroyed sandbox has nothing due (destroy clears due_ms) */
	for (size_t i = 0; i < m->nlive; i++) {
		mock_sandbox *sb = m->live[i];
		mock_status from = sb->status;

		if (sb->due_ms >= 0 && sb->due_ms <= now)
			apply_due(m, sb, now);
		if (sb->status == ST_RUNNING && sb->auto_pause_s > 0 && sb->busy == 0 &&
		    sb->last_active_ms + (int64_t)sb->auto_pause_s * 1000 <= now) {
			sb->status = ST_PAUSED;
			sb->paused_ms = now;
		}
		if (sb->status != from && on_change != NULL)
			on_change(sb, from, arg);
		if (sb->due_ms >= 0 && sb->due_ms < next)
			next = sb->due_ms;
		if (sb->status == ST_RUNNING && sb->auto_pause_s > 0) {
			int64_t at = sb->last_active_ms + (int64_t)sb->auto_pause_s * 1000;

			if (at <= now)
				at = now + 1000; /* busy: look again shortly */
			if (at < next)
				next = at;
		}
	}
	m->next_due_ms = next;
}

/* ---- views ---- */

static void add_time(const mock_model *m, cJSON *o, const char *key, int64_t ms, bool present)
{
	char buf[40];

	if (!present)
		return;
	mock_rfc3339(m, ms, buf, sizeof(buf));
	cJSON_AddStringToObject(o, key, buf);
}

/* With the ingress proxy: a path under it on loopback (names under
 * .localhost do not resolve through glibc or Node on a stock Debian, so
 * the live service's host-per-port form cannot be copied). No trailing
 * slash: the live template is a bare origin, and clients append "/path". */
static void add_ingress_template(cJSON *o, const mock_model *m, const mock_sandbox *sb)
{
	char buf[160];

	if (!sb->ingress_enabled)
		return;
	if (m->ingress_base[0] != '\0')
		snprintf(buf, sizeof(buf), "%s/%s/<port>", m->ingress_base, sb->id);
	else
		snprintf(buf, sizeof(buf), "https://%s-<port>.sb.localhost", sb->id);
	cJSON_AddStringToObject(o, "ingress_url_template", buf);
}

cJSON *mock_sandbox_view(const mock_model *m, const mock_sandbox *sb)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "id", sb->id);
	cJSON_AddStringToObject(o, "status", mock_status_name(sb->status));
	cJSON_AddNumberToObject(o, "vcpu", sb->vcpu);
	cJSON_AddNumberToObject(o, "mem_mib", sb->mem_mib);
	cJSON_AddNumberToObject(o, "disk_mib", sb->disk_mib);
	add_time(m, o, "created_at", sb->created_ms, true);
	cJSON_AddBoolToObject(o, "ingress_enabled", sb->ingress_enabled);
	if (sb->status != ST_CREATING)
		cJSON_AddStringToObject(o, "ip", sb->ip);
	if (sb->name[0] != '\0')
		cJSON_AddStringToObject(o, "name", sb->name);
	cJSON_AddStringToObject(o, "shape", sb->shape->id);
	cJSON_AddStringToObject(o, "rootfs", sb->rootfs);
	cJSON_AddStringToObject(o, "region", sb->region);
	if (!sb->egress.is_null && sb->egress.count > 0)
		cJSON_AddItemToObject(o, "egress", sbx_egress_list_to_json(&sb->egress));
	if (cJSON_GetArraySize(sb->envs) > 0) {
		cJSON *names = cJSON_AddArrayToObject(o, "envs");
		const cJSON *it;

		cJSON_ArrayForEach(it, sb->envs)
			cJSON_AddItemToArray(names, cJSON_CreateString(it->string));
	}
	if (cJSON_GetArraySize(sb->ssh_pubkeys) > 0)
		cJSON_AddItemToObject(o, "ssh_pubkeys", cJSON_Duplicate(sb->ssh_pubkeys, true));
	if (sb->running_ms > 0)
		cJSON_AddNumberToObject(o, "spawn_ms", (double)sb->spawn_ms);
	if (sb->tenant != NULL)
		cJSON_AddStringToObject(o, "created_by", sb->tenant->user_id);
	if (sb->forked_from[0] != '\0')
		cJSON_AddStringToObject(o, "forked_from", sb->forked_from);
	if (sb->auto_pause_s > 0)
		cJSON_AddNumberToObject(o, "auto_pause_after_seconds", sb->auto_pause_s);
	add_ingress_template(o, m, sb);
	if (sb->bw_ingress > 0)
		cJSON_AddNumberToObject(o, "bandwidth_ingress_bytes", (double)sb->bw_ingress);
	add_time(m, o, "running_at", sb->running_ms, sb->running_ms > 0);
	add_time(m, o, "destroyed_at", sb->destroyed_ms, sb->status == ST_DESTROYED);
	add_time(m, o, "paused_at", sb->paused_ms,
		 sb->paused_ms > 0 && (sb->status == ST_PAUSED || sb->status == ST_RESUMING));
	add_time(m, o, "last_resumed_at", sb->resumed_ms, sb->resumed_ms > 0);
	return o;
}

cJSON *mock_sandbox_create_view(const mock_model *m, const mock_sandbox *sb)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "id", sb->id);
	cJSON_AddStringToObject(o, "name", sb->name);
	/* beyond CreateSandboxResponse: the SDK builds its Sandbox handle (a
	 * SandboxView, created_at required) from this answer alone */
	add_time(m, o, "created_at", sb->created_ms, true);
	cJSON_AddStringToObject(o, "ip", sb->ip);
	cJSON_AddStringToObject(o, "shape", sb->shape->id);
	cJSON_AddStringToObject(o, "rootfs", sb->rootfs);
	cJSON_AddNumberToObject(o, "vcpu", sb->vcpu);
	cJSON_AddNumberToObject(o, "mem_mib", sb->mem_mib);
	cJSON_AddNumberToObject(o, "disk_mib", sb->disk_mib);
	cJSON_AddNumberToObject(o, "spawn_ms", (double)sb->spawn_ms);
	cJSON_AddItemToObject(o, "egress", sbx_egress_list_to_json(&sb->egress));
	if (cJSON_GetArraySize(sb->ssh_pubkeys) > 0)
		cJSON_AddItemToObject(o, "ssh_pubkeys", cJSON_Duplicate(sb->ssh_pubkeys, true));
	cJSON_AddNumberToObject(o, "bandwidth_quota_bytes", (double)sb->bw_quota);
	add_ingress_template(o, m, sb);
	return o;
}

cJSON *mock_bandwidth_view(const mock_sandbox *sb)
{
	cJSON *o = cJSON_CreateObject();
	int64_t remaining = sb->bw_quota < 0 ? -1 : sb->bw_quota - sb->bw_used;

	if (o == NULL)
		return NULL;
	if (remaining < -1)
		remaining = 0;
	cJSON_AddStringToObject(o, "id", sb->id);
	cJSON_AddNumberToObject(o, "quota_bytes", (double)sb->bw_quota);
	cJSON_AddNumberToObject(o, "used_bytes", (double)sb->bw_used);
	cJSON_AddNumberToObject(o, "ingress_bytes", (double)sb->bw_ingress);
	cJSON_AddNumberToObject(o, "remaining_bytes", (double)remaining);
	cJSON_AddBoolToObject(o, "capped", sb->bw_quota >= 0 && sb->bw_used >= sb->bw_quota);
	return o;
}

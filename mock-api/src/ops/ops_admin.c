/* ops_admin: the model work of the admin API (admin.c) and of the request
 * pipeline (http.c), fault effects included (ops.h): settings, the state
 * and sandbox listings, bandwidth and tenant edits, the virtual clock, the
 * egress oracle's inputs, the fault matcher's per-request facts, the
 * journal's timestamp, host death and control-plane restarts, the warm
 * pool's counters. Each takes the model lock itself (the pool view takes
 * the pool's), so the callers above never do.
 *
 * Never parse a request or shape an HTTP answer here: inputs are plain
 * values, outputs views (owned by the caller). */
#define _GNU_SOURCE
#include "ops/ops.h"
#include "ops/ops_internal.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "guest/cell_pool.h"
#include "internet/internet.h"
#include "ops/core.h" /* struct sbx_mock */
#include "ops/settings.h"

#define LOCK(mock) pthread_mutex_lock(&(mock)->model->lock)
#define UNLOCK(mock) pthread_mutex_unlock(&(mock)->model->lock)

/* ---- settings ---- */

int mock_op_settings_apply(sbx_mock *mock, const cJSON *b, sbx_err *err)
{
	sbx_host_rule_mode before;
	bool changed;
	int rc;

	LOCK(mock);
	before = mock->model->set.host_rule_mode;
	rc = mock_settings_apply(mock, b, err);
	changed = rc == 0 && before != mock->model->set.host_rule_mode;
	UNLOCK(mock);
	if (changed)
		mock_egress_sync_all(mock); /* host rules compile differently now */
	return rc;
}

cJSON *mock_op_settings_view(sbx_mock *mock)
{
	cJSON *v;

	LOCK(mock);
	v = mock_settings_view(mock);
	UNLOCK(mock);
	return v;
}

/* ---- state, sandboxes, tenants ---- */

/* The admin view of a sandbox: the API view plus tenant and raw egress. */
static cJSON *admin_sandbox_view(mock_model *m, const mock_sandbox *sb)
{
	cJSON *v = mock_sandbox_view(m, sb);

	/* a tenant restored from the durable log has no key until it is used */
	if (sb->tenant != NULL && sb->tenant->key == NULL)
		cJSON_AddNullToObject(v, "tenant");
	else
		cJSON_AddStringToObject(v, "tenant", sb->tenant != NULL ? sb->tenant->key : "");
	cJSON_AddBoolToObject(v, "egress_is_null", sb->egress.is_null);
	if (!cJSON_HasObjectItem(v, "egress"))
		cJSON_AddItemToObject(v, "egress", sbx_egress_list_to_json(&sb->egress));
	return v;
}

static cJSON *tenant_view(mock_model *m, const mock_tenant *t)
{
	cJSON *to = cJSON_CreateObject();

	if (t->key != NULL)
		cJSON_AddStringToObject(to, "key", t->key);
	else
		cJSON_AddNullToObject(to, "key"); /* restored, its key not presented yet */
	cJSON_AddStringToObject(to, "user_id", t->user_id);
	cJSON_AddNumberToObject(to, "cap", mock_tenant_cap(m, t));
	cJSON_AddBoolToObject(to, "credit", mock_tenant_credit(m, t));
	return to;
}

cJSON *mock_op_admin_state(sbx_mock *mock, const char *tenant)
{
	mock_model *m = mock->model;
	cJSON *d = cJSON_CreateObject();
	cJSON *tenants;

	mock_tenant *want;

	LOCK(mock);
	ops_tick(mock);
	/* by key, so a tenant restored from the durable log is found too */
	want = tenant != NULL ? mock_tenant_get(m, tenant, false) : NULL;
	cJSON_AddNumberToObject(d, "clock_ms", (double)mock_now(m));
	tenants = cJSON_AddArrayToObject(d, "tenants");
	for (mock_tenant *t = m->tenants; t != NULL; t = t->next) {
		cJSON *to, *arr;

		if (tenant != NULL && t != want)
			continue;
		to = tenant_view(m, t);
		arr = cJSON_AddArrayToObject(to, "sandboxes");
		for (size_t i = 0; i < m->nsbx; i++) {
			if (m->sbx[i]->tenant == t)
				cJSON_AddItemToArray(arr, admin_sandbox_view(m, m->sbx[i]));
		}
		cJSON_AddItemToArray(tenants, to);
	}
	UNLOCK(mock);
	return d;
}

cJSON *mock_op_admin_sandboxes(sbx_mock *mock, const char *tenant, int want)
{
	mock_model *m = mock->model;
	cJSON *d = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(d, "sandboxes");
	mock_tenant *owner;

	LOCK(mock);
	ops_tick(mock);
	owner = tenant != NULL ? mock_tenant_get(m, tenant, false) : NULL;
	for (size_t i = 0; i < m->nsbx; i++) {
		mock_sandbox *sb = m->sbx[i];

		if (tenant != NULL && (owner == NULL || sb->tenant != owner))
			continue;
		if (want >= 0 && (int)sb->status != want)
			continue;
		cJSON_AddItemToArray(arr, admin_sandbox_view(m, sb));
	}
	UNLOCK(mock);
	return d;
}

cJSON *mock_op_admin_bandwidth(sbx_mock *mock, const char *id, const int64_t *used,
			       const int64_t *ingress)
{
	mock_sandbox *sb;
	cJSON *v = NULL;

	LOCK(mock);
	sb = id != NULL ? mock_sandbox_find_any(mock->model, id) : NULL;
	if (sb != NULL) {
		if (used != NULL)
			sb->bw_used = *used;
		if (ingress != NULL)
			sb->bw_ingress = *ingress;
		v = mock_bandwidth_view(sb);
	}
	UNLOCK(mock);
	return v;
}

cJSON *mock_op_admin_tenant(sbx_mock *mock, const char *key, const int *cap, const int *credit)
{
	mock_tenant *t;
	cJSON *v = NULL;

	LOCK(mock);
	t = mock_tenant_get(mock->model, key, true);
	if (t != NULL) {
		if (cap != NULL)
			t->cap = *cap;
		if (credit != NULL)
			t->credit = *credit;
		v = tenant_view(mock->model, t);
	}
	UNLOCK(mock);
	return v;
}

cJSON *mock_op_clock_advance(sbx_mock *mock, int64_t ms)
{
	mock_model *m = mock->model;
	cJSON *d;

	LOCK(mock);
	mock_advance(m, ms);
	m->next_due_ms = INT64_MIN; /* re-scan: idle timers may be due now */
	ops_tick(mock);
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "clock_ms", (double)mock_now(m));
	UNLOCK(mock);
	return d;
}

int mock_op_egress_facts(sbx_mock *mock, const char *id, sbx_egress_list *list, bool *capped,
			 sbx_host_rule_mode *hm)
{
	mock_sandbox *sb;

	LOCK(mock);
	*hm = mock->model->set.host_rule_mode;
	sb = mock_sandbox_find_any(mock->model, id);
	if (sb != NULL) {
		sbx_egress_list_copy(&sb->egress, list);
		*capped = sb->bw_quota >= 0 && sb->bw_used >= sb->bw_quota;
	}
	UNLOCK(mock);
	return sb != NULL ? 0 : -1;
}

/* ---- the request pipeline's facts ---- */

uint64_t mock_op_count_request(sbx_mock *mock, const char *api_key, const char *sandbox_id,
			       char *name, size_t cap)
{
	uint64_t no;

	name[0] = '\0';
	LOCK(mock);
	if (api_key != NULL) {
		mock_tenant *t = mock_tenant_get(mock->model, api_key, false);

		no = t != NULL ? ++t->requests : ++mock->anon_requests;
	} else {
		no = ++mock->anon_requests;
	}
	if (sandbox_id != NULL) {
		const mock_sandbox *sb = mock_sandbox_find_any(mock->model, sandbox_id);

		if (sb != NULL)
			snprintf(name, cap, "%s", sb->name);
	}
	UNLOCK(mock);
	return no;
}

int64_t mock_op_now(sbx_mock *mock)
{
	int64_t now;

	LOCK(mock);
	now = mock_now(mock->model);
	UNLOCK(mock);
	return now;
}

/* ---- fault effects ---- */

/* The host died: its VMs are gone, so their processes die too (the tree,
 * the "disk", survives for the cold start elsewhere). */
static void on_host_death(mock_sandbox *sb, mock_status from, void *arg)
{
	(void)from;
	(void)arg;
	mock_guest_signal(sb->guest, SIGKILL);
	mock_guest_signal(sb->guest, SIGCONT);
}

void mock_op_host_dies(sbx_mock *mock, const char *host_id)
{
	LOCK(mock);
	ops_tick(mock);
	mock_host_die(mock->model, host_id, on_host_death, mock);
	UNLOCK(mock);
}

void mock_op_cp_restart(sbx_mock *mock, int64_t not_ready_ms)
{
	LOCK(mock);
	mock->model->not_ready_until_ms = mock_now(mock->model) + not_ready_ms;
	UNLOCK(mock);
}

cJSON *mock_op_pool_view(sbx_mock *mock)
{
	cJSON *d = cJSON_CreateObject();
	mock_pool_stats st;

	memset(&st, 0, sizeof(st));
	if (mock->pool != NULL)
		mock_pool_stats_get(mock->pool, &st);
	cJSON_AddBoolToObject(d, "enabled", mock->pool != NULL);
	cJSON_AddStringToObject(d, "note", mock->pool_note);
	cJSON_AddNumberToObject(d, "size", st.size);
	cJSON_AddNumberToObject(d, "idle", st.idle);
	cJSON_AddNumberToObject(d, "building", st.building);
	cJSON_AddNumberToObject(d, "retiring", st.retiring);
	cJSON_AddNumberToObject(d, "built", (double)st.built);
	cJSON_AddNumberToObject(d, "handed_out", (double)st.handed_out);
	cJSON_AddNumberToObject(d, "misses", (double)st.misses);
	cJSON_AddNumberToObject(d, "build_failures", (double)st.build_failures);
	cJSON_AddNumberToObject(d, "retired", (double)st.retired);
	cJSON_AddStringToObject(d, "last_error", st.last_error);
	return d;
}

cJSON *mock_op_egress_links_view(sbx_mock *mock, sbx_err *err)
{
	mock_internet_links l;
	cJSON *d;

	if (mock->inet != NULL && mock_internet_links_get(mock->inet, &l, err) != 0)
		return NULL;
	d = cJSON_CreateObject();
	cJSON_AddBoolToObject(d, "enforced", mock->inet != NULL);
	if (mock->inet != NULL) {
		cJSON_AddNumberToObject(d, "sandboxes", (double)l.sandboxes);
		cJSON_AddNumberToObject(d, "builders", (double)l.builders);
		cJSON_AddNumberToObject(d, "made_ahead", (double)l.made_ahead);
		cJSON_AddNumberToObject(d, "kernel_chains", (double)l.chains);
		cJSON_AddNumberToObject(d, "kernel_map_entries", (double)l.map_entries);
	}
	return d;
}

void mock_op_kill_guests(sbx_mock *mock)
{
	LOCK(mock);
	for (size_t i = 0; i < mock->model->nsbx; i++)
		mock_guest_kill(mock->model->sbx[i]->guest);
	UNLOCK(mock);
}

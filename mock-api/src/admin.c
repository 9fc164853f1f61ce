/* admin: the /_mock/ admin API (ADMIN.md) — reset, state, settings, clock,
 * egress oracle, fault rules, scenarios and the journal. Protected by the
 * admin token; never journaled and never subject to fault rules. The
 * handlers parse and render: validating and applying settings is
 * settings.c's, finding and applying scenarios scenario.c's. Never calls
 * into the request pipeline (http.c): it only fills the answer. */
#define _GNU_SOURCE
#include "route.h"
#include "ops.h"
#include "server.h"

#include "scenario.h"
#include "settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ok_empty(mresp *out)
{
	resp_success(out, 200, cJSON_CreateObject());
}

static cJSON *admin_body(mreq *r, mresp *out)
{
	if (r->body.len == 0)
		return r->json; /* NULL: callers treat a missing body as {} */
	if (r->json == NULL || !cJSON_IsObject(r->json)) {
		resp_fail(out, 400, "body", "INVALID_JSON", "admin request body must be a JSON object");
		return NULL;
	}
	return r->json;
}

/* ---- settings ---- */


static void a_settings(mreq *r, mresp *out)
{
	sbx_mock *mock = r->mock;
	cJSON *v;

	if (strcmp(r->method, "PUT") == 0) {
		cJSON *b = admin_body(r, out);
		sbx_err err = {{0}};
		int rc = 0;

		if (b == NULL) {
			if (out->body == NULL)
				resp_fail(out, 400, "body", "INVALID_REQUEST", "settings body is required");
			return;
		}
		pthread_mutex_lock(&mock->model->lock);
		rc = mock_settings_apply(mock, b, &err);
		pthread_mutex_unlock(&mock->model->lock);
		if (rc != 0) {
			resp_fail(out, 400, "settings", "INVALID_SETTING", err.msg);
			return;
		}
	}
	pthread_mutex_lock(&mock->model->lock);
	v = mock_settings_view(mock);
	pthread_mutex_unlock(&mock->model->lock);
	resp_success(out, 200, v);
}

/* ---- state ---- */

static cJSON *admin_sandbox_view(mock_model *m, const mock_sandbox *sb)
{
	cJSON *v = mock_sandbox_view(m, sb);

	cJSON_AddStringToObject(v, "tenant", sb->tenant != NULL ? sb->tenant->key : "");
	cJSON_AddBoolToObject(v, "egress_is_null", sb->egress.is_null);
	if (!cJSON_HasObjectItem(v, "egress"))
		cJSON_AddItemToObject(v, "egress", sbx_egress_list_to_json(&sb->egress));
	return v;
}

static void a_state(mreq *r, mresp *out)
{
	mock_model *m = r->mock->model;
	const char *want = req_query(r, "tenant");
	cJSON *d = cJSON_CreateObject();
	cJSON *tenants;

	pthread_mutex_lock(&m->lock);
	mock_tick(m, mock_on_state_change, r->mock);
	cJSON_AddNumberToObject(d, "clock_ms", (double)mock_now(m));
	tenants = cJSON_AddArrayToObject(d, "tenants");
	for (mock_tenant *t = m->tenants; t != NULL; t = t->next) {
		cJSON *to, *arr;

		if (want != NULL && strcmp(want, t->key) != 0)
			continue;
		to = cJSON_CreateObject();
		cJSON_AddStringToObject(to, "key", t->key);
		cJSON_AddStringToObject(to, "user_id", t->user_id);
		cJSON_AddNumberToObject(to, "cap", mock_tenant_cap(m, t));
		cJSON_AddBoolToObject(to, "credit", mock_tenant_credit(m, t));
		arr = cJSON_AddArrayToObject(to, "sandboxes");
		for (size_t i = 0; i < m->nsbx; i++) {
			if (m->sbx[i]->tenant == t)
				cJSON_AddItemToArray(arr, admin_sandbox_view(m, m->sbx[i]));
		}
		cJSON_AddItemToArray(tenants, to);
	}
	pthread_mutex_unlock(&m->lock);
	resp_success(out, 200, d);
}

static void a_sandboxes(mreq *r, mresp *out)
{
	mock_model *m = r->mock->model;
	const char *want = req_query(r, "tenant");
	const char *st = req_query(r, "status");
	int want_st = st != NULL ? mock_status_parse(st) : -1;
	cJSON *d, *arr;

	if (st != NULL && want_st < 0) {
		resp_fail(out, 400, "status", "INVALID_REQUEST", "status is not a sandbox status");
		return;
	}
	d = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(d, "sandboxes");
	pthread_mutex_lock(&m->lock);
	mock_tick(m, mock_on_state_change, r->mock);
	for (size_t i = 0; i < m->nsbx; i++) {
		mock_sandbox *sb = m->sbx[i];

		if (want != NULL && (sb->tenant == NULL || strcmp(sb->tenant->key, want) != 0))
			continue;
		if (want_st >= 0 && (int)sb->status != want_st)
			continue;
		cJSON_AddItemToArray(arr, admin_sandbox_view(m, sb));
	}
	pthread_mutex_unlock(&m->lock);
	resp_success(out, 200, d);
}

/* POST /_mock/sandboxes/{id}/bandwidth {used_bytes?, ingress_bytes?}: lets
 * tests drive the bandwidth quota (the mock moves no real traffic). */
static void a_sandbox_bandwidth(mreq *r, mresp *out)
{
	mock_model *m = r->mock->model;
	cJSON *b = admin_body(r, out);
	char id[64];
	mock_sandbox *sb;
	cJSON *v = NULL;
	const cJSON *used, *ing;

	if (b == NULL) {
		if (out->body == NULL)
			resp_fail(out, 400, "body", "INVALID_REQUEST", "body is required");
		return;
	}
	used = cJSON_GetObjectItemCaseSensitive(b, "used_bytes");
	ing = cJSON_GetObjectItemCaseSensitive(b, "ingress_bytes");
	if ((used != NULL && (!cJSON_IsNumber(used) || used->valuedouble < 0)) ||
	    (ing != NULL && (!cJSON_IsNumber(ing) || ing->valuedouble < 0))) {
		resp_fail(out, 400, "used_bytes", "INVALID_REQUEST",
			  "used_bytes and ingress_bytes must be non-negative numbers");
		return;
	}
	pthread_mutex_lock(&m->lock);
	sb = req_seg(r, 2, id, sizeof(id)) ? mock_sandbox_find_any(m, id) : NULL;
	if (sb != NULL) {
		if (used != NULL)
			sb->bw_used = (int64_t)used->valuedouble;
		if (ing != NULL)
			sb->bw_ingress = (int64_t)ing->valuedouble;
		v = mock_bandwidth_view(sb);
	}
	pthread_mutex_unlock(&m->lock);
	if (v == NULL)
		resp_fail(out, 404, "error", "NOT_FOUND", "sandbox not found");
	else
		resp_success(out, 200, v);
}

static void a_tenants(mreq *r, mresp *out)
{
	mock_model *m = r->mock->model;
	cJSON *b = admin_body(r, out);
	const cJSON *key, *cap, *credit;
	mock_tenant *t;
	cJSON *v;

	if (b == NULL) {
		if (out->body == NULL)
			resp_fail(out, 400, "key", "INVALID_REQUEST", "key is required");
		return;
	}
	key = cJSON_GetObjectItemCaseSensitive(b, "key");
	cap = cJSON_GetObjectItemCaseSensitive(b, "cap");
	credit = cJSON_GetObjectItemCaseSensitive(b, "credit");
	if (!cJSON_IsString(key) || key->valuestring[0] == '\0') {
		resp_fail(out, 400, "key", "INVALID_REQUEST", "key must be a non-empty string");
		return;
	}
	if (cap != NULL && (!cJSON_IsNumber(cap) || cap->valuedouble < 0 || cap->valuedouble > 1e6)) {
		resp_fail(out, 400, "cap", "INVALID_REQUEST", "cap must be a number 0-1000000");
		return;
	}
	if (credit != NULL && !cJSON_IsBool(credit)) {
		resp_fail(out, 400, "credit", "INVALID_REQUEST", "credit must be a boolean");
		return;
	}
	pthread_mutex_lock(&m->lock);
	t = mock_tenant_get(m, key->valuestring, true);
	if (t != NULL) {
		if (cap != NULL)
			t->cap = (int)cap->valuedouble;
		if (credit != NULL)
			t->credit = cJSON_IsTrue(credit) ? 1 : 0;
		v = cJSON_CreateObject();
		cJSON_AddStringToObject(v, "key", t->key);
		cJSON_AddStringToObject(v, "user_id", t->user_id);
		cJSON_AddNumberToObject(v, "cap", mock_tenant_cap(m, t));
		cJSON_AddBoolToObject(v, "credit", mock_tenant_credit(m, t));
	} else {
		v = NULL;
	}
	pthread_mutex_unlock(&m->lock);
	if (v == NULL)
		resp_error(out, 500, "out of memory");
	else
		resp_success(out, 200, v);
}

static void a_clock(mreq *r, mresp *out)
{
	mock_model *m = r->mock->model;
	cJSON *b = admin_body(r, out);
	const cJSON *ms = b != NULL ? cJSON_GetObjectItemCaseSensitive(b, "ms") : NULL;
	cJSON *d;

	if (!cJSON_IsNumber(ms) || ms->valuedouble < 0 || ms->valuedouble > 1e13) {
		if (out->body == NULL)
			resp_fail(out, 400, "ms", "INVALID_REQUEST", "ms must be a non-negative number");
		return;
	}
	pthread_mutex_lock(&m->lock);
	mock_advance(m, (int64_t)ms->valuedouble);
	m->next_due_ms = INT64_MIN; /* re-scan: idle timers may be due now */
	mock_tick(m, mock_on_state_change, r->mock);
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "clock_ms", (double)mock_now(m));
	pthread_mutex_unlock(&m->lock);
	resp_success(out, 200, d);
}

static void a_egress_check(mreq *r, mresp *out)
{
	mock_model *m = r->mock->model;
	cJSON *b = admin_body(r, out);
	const cJSON *sid, *dest, *mode;
	sbx_egress_dest d;
	sbx_egress_error ee;
	char host[SBX_EGRESS_HOST_MAX + 1];
	sbx_host_rule_mode hm;
	mock_sandbox *sb;
	sbx_egress_list list = {true, 0, NULL};
	sbx_egress_policy *pol;
	sbx_egress_decision dec;
	bool capped = false;
	cJSON *v;

	if (b == NULL) {
		if (out->body == NULL)
			resp_fail(out, 400, "sandbox_id", "INVALID_REQUEST", "body is required");
		return;
	}
	sid = cJSON_GetObjectItemCaseSensitive(b, "sandbox_id");
	dest = cJSON_GetObjectItemCaseSensitive(b, "dest");
	mode = cJSON_GetObjectItemCaseSensitive(b, "mode");
	if (!cJSON_IsString(sid)) {
		resp_fail(out, 400, "sandbox_id", "INVALID_REQUEST", "sandbox_id must be a string");
		return;
	}
	if (!cJSON_IsString(dest)) {
		resp_fail(out, 400, "dest", "INVALID_REQUEST",
			  "dest must be \"ADDR:PORT\", \"NAME@ADDR:PORT\" or \"NAME:PORT\"");
		return;
	}
	memset(&ee, 0, sizeof(ee));
	if (sbx_egress_dest_parse(dest->valuestring, strlen(dest->valuestring), &d, host, sizeof(host),
				  &ee) != 0) {
		resp_fail(out, 400, "dest", "INVALID_DEST", ee.message);
		return;
	}
	pthread_mutex_lock(&m->lock);
	hm = m->set.host_rule_mode;
	sb = mock_sandbox_find_any(m, sid->valuestring);
	if (sb != NULL) {
		sbx_egress_list_copy(&sb->egress, &list);
		capped = sb->bw_quota >= 0 && sb->bw_used >= sb->bw_quota;
	}
	pthread_mutex_unlock(&m->lock);
	if (sb == NULL) {
		resp_fail(out, 404, "sandbox_id", "NOT_FOUND", "sandbox not found");
		return;
	}
	if (mode != NULL) {
		if (cJSON_IsString(mode) && strcmp(mode->valuestring, "documented") == 0) {
			hm = SBX_HOST_RULES_DOCUMENTED;
		} else if (cJSON_IsString(mode) && strcmp(mode->valuestring, "observed") == 0) {
			hm = SBX_HOST_RULES_OBSERVED;
		} else {
			sbx_egress_list_free(&list);
			resp_fail(out, 400, "mode", "INVALID_REQUEST", "mode must be documented or observed");
			return;
		}
	}
	pol = sbx_egress_policy_compile(&list, hm);
	if (pol == NULL) {
		sbx_egress_list_free(&list);
		resp_error(out, 500, "out of memory");
		return;
	}
	dec = sbx_egress_policy_eval(pol, &d);
	sbx_egress_policy_free(pol);
	v = cJSON_CreateObject();
	if (capped && dec.allowed && dec.reason != SBX_REASON_LOOPBACK) {
		/* bandwidth used up: egress is blocked on the host */
		cJSON_AddBoolToObject(v, "allowed", false);
		cJSON_AddStringToObject(v, "reason", "bandwidth capped");
	} else {
		cJSON_AddBoolToObject(v, "allowed", dec.allowed);
		cJSON_AddStringToObject(v, "reason", sbx_egress_reason_name(dec.reason));
		if (dec.reason == SBX_REASON_RULE && dec.rule_index < list.count) {
			char canon[SBX_EGRESS_CANON_MAX];

			sbx_egress_rule_format(&list.rules[dec.rule_index], canon, sizeof(canon));
			cJSON_AddNumberToObject(v, "rule_index", (double)dec.rule_index);
			cJSON_AddStringToObject(v, "rule", canon);
		}
	}
	sbx_egress_list_free(&list);
	resp_success(out, 200, v);
}

/* ---- faults and scenarios ---- */

static void a_faults(mreq *r, mresp *out)
{
	mock_faults *f = r->mock->faults;
	char id[32];

	if (req_seg(r, 2, id, sizeof(id))) {
		uint64_t n = 0;
		char *end = NULL;

		if (strcmp(r->method, "DELETE") != 0) {
			resp_fail(out, 405, "error", "METHOD_NOT_ALLOWED", "use DELETE /_mock/faults/{id}");
			return;
		}
		errno = 0;
		n = strtoull(id, &end, 10);
		if (errno != 0 || *end != '\0' || n > UINT32_MAX || mock_faults_delete(f, (unsigned)n) != 0) {
			resp_fail(out, 404, "error", "NOT_FOUND", "no fault rule with that id");
			return;
		}
		ok_empty(out);
		return;
	}
	if (strcmp(r->method, "GET") == 0) {
		resp_success(out, 200, mock_faults_list_json(f));
	} else if (strcmp(r->method, "DELETE") == 0) {
		mock_faults_clear(f);
		ok_empty(out);
	} else if (strcmp(r->method, "POST") == 0) {
		cJSON *b = admin_body(r, out);
		cJSON *ids, *d;
		sbx_err err = {{0}};

		if (b == NULL) {
			if (out->body == NULL)
				resp_fail(out, 400, "body", "INVALID_REQUEST", "a rule or {rules:[...]} is required");
			return;
		}
		ids = cJSON_CreateArray();
		if (mock_faults_add_json(f, b, ids, &err) != 0) {
			cJSON_Delete(ids);
			resp_fail(out, 400, "rule", "INVALID_RULE", err.msg);
			return;
		}
		d = cJSON_CreateObject();
		cJSON_AddItemToObject(d, "ids", ids);
		resp_success(out, 200, d);
	} else {
		resp_fail(out, 405, "error", "METHOD_NOT_ALLOWED", "use GET, POST or DELETE");
	}
}


static void a_scenario(mreq *r, mresp *out)
{
	cJSON *b = admin_body(r, out);
	const cJSON *name;
	cJSON *loaded = NULL, *ids, *d;
	sbx_err err = {{0}};

	if (b == NULL) {
		if (out->body == NULL)
			resp_fail(out, 400, "name", "INVALID_REQUEST", "{name} or a scenario object is required");
		return;
	}
	name = cJSON_GetObjectItemCaseSensitive(b, "name");
	if (cJSON_IsString(name) && cJSON_GetObjectItemCaseSensitive(b, "rules") == NULL &&
	    cJSON_GetObjectItemCaseSensitive(b, "settings") == NULL) {
		loaded = mock_scenario_load(r->mock, name->valuestring, &err);
		if (loaded == NULL) {
			resp_fail(out, 404, "name", "NOT_FOUND", err.msg);
			return;
		}
		b = loaded;
	}
	ids = cJSON_CreateArray();
	if (mock_scenario_apply(r->mock, b, ids, &err) != 0) {
		cJSON_Delete(ids);
		cJSON_Delete(loaded);
		resp_fail(out, 400, "scenario", "INVALID_SCENARIO", err.msg);
		return;
	}
	cJSON_Delete(loaded);
	d = cJSON_CreateObject();
	cJSON_AddItemToObject(d, "ids", ids);
	resp_success(out, 200, d);
}

/* ---- journal ---- */

static bool journal_filter(mreq *r, mresp *out, mock_journal_filter *f)
{
	const char *since = req_query(r, "since"), *status = req_query(r, "status");
	const char *limit = req_query(r, "limit");
	char *end = NULL;

	memset(f, 0, sizeof(*f));
	f->method = req_query(r, "method");
	f->path = req_query(r, "path");
	f->tenant = req_query(r, "tenant");
	errno = 0;
	if (since != NULL) {
		f->since = strtoull(since, &end, 10);
		if (errno != 0 || *end != '\0' || since[0] == '-') {
			resp_fail(out, 400, "since", "INVALID_REQUEST", "since must be a sequence number");
			return false;
		}
	}
	if (status != NULL) {
		long v = strtol(status, &end, 10);

		if (errno != 0 || *end != '\0' || v < 0 || v > 999) {
			resp_fail(out, 400, "status", "INVALID_REQUEST", "status must be an HTTP status");
			return false;
		}
		f->status = (int)v;
	}
	if (limit != NULL) {
		unsigned long long v = strtoull(limit, &end, 10);

		if (errno != 0 || *end != '\0' || limit[0] == '-') {
			resp_fail(out, 400, "limit", "INVALID_REQUEST", "limit must be a non-negative integer");
			return false;
		}
		f->limit = (size_t)v;
	}
	return true;
}

static void a_journal(mreq *r, mresp *out)
{
	mock_journal_filter f;
	char sub[16];
	bool count = req_seg(r, 2, sub, sizeof(sub));

	if (count && strcmp(sub, "count") != 0) {
		resp_fail(out, 404, "error", "NOT_FOUND", "no such journal endpoint");
		return;
	}
	if (strcmp(r->method, "DELETE") == 0 && !count) {
		mock_journal_clear(r->mock->journal);
		ok_empty(out);
		return;
	}
	if (strcmp(r->method, "GET") != 0) {
		resp_fail(out, 405, "error", "METHOD_NOT_ALLOWED", "use GET or DELETE");
		return;
	}
	if (!journal_filter(r, out, &f))
		return;
	if (count) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddNumberToObject(d, "count", (double)mock_journal_count(r->mock->journal, &f));
		resp_success(out, 200, d);
		return;
	}
	resp_success(out, 200, mock_journal_query(r->mock->journal, &f));
}

/* ---- dispatch ---- */

static void a_reset(mreq *r, mresp *out)
{
	sbx_err err = {{0}};

	mock_reset_all(r->mock);
	if (mock_durable_reset(r->mock, &err) != 0) {
		resp_error(out, 500, err.msg);
		return;
	}
	ok_empty(out);
}

/* The route table's handlers take the caller's tenant; admin requests
 * have none (the admin token guards the whole table). */
#define ADMIN_ROUTE(h)                                          \
	static void h##_route(mreq *r, mresp *out, mock_tenant *t) \
	{                                                           \
		(void)t;                                            \
		h(r, out);                                          \
	}
ADMIN_ROUTE(a_reset)
ADMIN_ROUTE(a_state)
ADMIN_ROUTE(a_sandboxes)
ADMIN_ROUTE(a_sandbox_bandwidth)
ADMIN_ROUTE(a_tenants)
ADMIN_ROUTE(a_settings)
ADMIN_ROUTE(a_clock)
ADMIN_ROUTE(a_egress_check)
ADMIN_ROUTE(a_faults)
ADMIN_ROUTE(a_scenario)
ADMIN_ROUTE(a_journal)

/* Admin requests are never durable; the non-GET ones block (as every
 * mutation does). */
const mock_route mock_admin_routes[] = {
	{"POST", "/_mock/reset", ROUTE_BLOCKS, a_reset_route},
	{"GET", "/_mock/state", 0, a_state_route},
	{"GET", "/_mock/sandboxes", 0, a_sandboxes_route},
	{"POST", "/_mock/sandboxes/{id}/bandwidth", ROUTE_BLOCKS, a_sandbox_bandwidth_route},
	{"POST", "/_mock/tenants", ROUTE_BLOCKS, a_tenants_route},
	{"GET", "/_mock/settings", 0, a_settings_route},
	{"PUT", "/_mock/settings", ROUTE_BLOCKS, a_settings_route},
	{"POST", "/_mock/clock/advance", ROUTE_BLOCKS, a_clock_route},
	{"POST", "/_mock/egress/check", ROUTE_BLOCKS, a_egress_check_route},
	{"GET", "/_mock/faults", 0, a_faults_route},
	{"POST", "/_mock/faults", ROUTE_BLOCKS, a_faults_route},
	{"DELETE", "/_mock/faults", ROUTE_BLOCKS, a_faults_route},
	{"DELETE", "/_mock/faults/{id}", ROUTE_BLOCKS, a_faults_route},
	{"POST", "/_mock/scenario", ROUTE_BLOCKS, a_scenario_route},
	{"GET", "/_mock/journal", 0, a_journal_route},
	{"DELETE", "/_mock/journal", ROUTE_BLOCKS, a_journal_route},
	{"GET", "/_mock/journal/count", 0, a_journal_route},
};
const size_t mock_admin_nroutes = sizeof(mock_admin_routes) / sizeof(mock_admin_routes[0]);

void admin_dispatch(mreq *r, mresp *out)
{
	const char *tok = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Mock-Admin-Token");

	if (tok == NULL || strcmp(tok, r->mock->admin_token) != 0) {
		resp_fail(out, 401, "error", "UNAUTHORIZED", "admin API needs X-Mock-Admin-Token");
		return;
	}
	mock_route_serve(mock_admin_routes, mock_admin_nroutes, r, out, NULL);
}

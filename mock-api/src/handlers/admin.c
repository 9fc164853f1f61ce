/* admin: the /_mock/ admin API (ADMIN.md) — reset, state, settings, clock,
 * egress oracle, fault rules, scenarios, the journal and the warm pool's
 * counters. Protected by the
 * admin token; never journaled and never subject to fault rules. The
 * handlers parse and render: the model work is ops_admin.c's (which
 * validates and applies settings through settings.c), finding and applying
 * scenarios scenario.c's; no handler takes the model lock. Never calls
 * into the request pipeline (http.c): it only fills the answer. */
#define _GNU_SOURCE
#include "http/route.h"
#include "ops/ops.h"
#include "handlers/dispatch.h"
#include "http/request.h"
#include "state/durable.h"

#include "ops/scenario.h"
#include "internet/inet_book.h"
#include "tls/inet_tls.h"
#include "ops/rootfs.h"
#include "util/sha256.h"

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
		rc = mock_op_settings_apply(mock, b, &err);
		if (rc != 0) {
			resp_fail(out, 400, "settings", "INVALID_SETTING", err.msg);
			return;
		}
	}
	v = mock_op_settings_view(mock);
	resp_success(out, 200, v);
}

/* ---- state ---- */

static void a_state(mreq *r, mresp *out)
{
	resp_success(out, 200, mock_op_admin_state(r->mock, req_query(r, "tenant")));
}

static void a_sandboxes(mreq *r, mresp *out)
{
	const char *want = req_query(r, "tenant");
	const char *st = req_query(r, "status");
	int want_st = st != NULL ? mock_status_parse(st) : -1;

	if (st != NULL && want_st < 0) {
		resp_fail(out, 400, "status", "INVALID_REQUEST", "status is not a sandbox status");
		return;
	}
	resp_success(out, 200, mock_op_admin_sandboxes(r->mock, want, want_st));
}

/* POST /_mock/sandboxes/{id}/bandwidth {used_bytes?, ingress_bytes?}: lets
 * tests drive the bandwidth quota (the mock moves no real traffic). */
static void a_sandbox_bandwidth(mreq *r, mresp *out)
{
	cJSON *b = admin_body(r, out);
	char id[64];
	cJSON *v;
	const cJSON *used, *ing;
	int64_t used_v = 0, ing_v = 0;

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
	if (used != NULL)
		used_v = (int64_t)used->valuedouble;
	if (ing != NULL)
		ing_v = (int64_t)ing->valuedouble;
	v = mock_op_admin_bandwidth(r->mock, req_seg(r, 2, id, sizeof(id)) ? id : NULL,
				    used != NULL ? &used_v : NULL, ing != NULL ? &ing_v : NULL);
	if (v == NULL)
		resp_fail(out, 404, "error", "NOT_FOUND", "sandbox not found");
	else
		resp_success(out, 200, v);
}

static void a_tenants(mreq *r, mresp *out)
{
	cJSON *b = admin_body(r, out);
	const cJSON *key, *cap, *credit;
	int cap_v = 0, credit_v = 0;
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
	if (cap != NULL)
		cap_v = (int)cap->valuedouble;
	if (credit != NULL)
		credit_v = cJSON_IsTrue(credit) ? 1 : 0;
	v = mock_op_admin_tenant(r->mock, key->valuestring, cap != NULL ? &cap_v : NULL,
				 credit != NULL ? &credit_v : NULL);
	if (v == NULL)
		resp_error(out, 500, "out of memory");
	else
		resp_success(out, 200, v);
}

static void a_clock(mreq *r, mresp *out)
{
	cJSON *b = admin_body(r, out);
	const cJSON *ms = b != NULL ? cJSON_GetObjectItemCaseSensitive(b, "ms") : NULL;

	if (!cJSON_IsNumber(ms) || ms->valuedouble < 0 || ms->valuedouble > 1e13) {
		if (out->body == NULL)
			resp_fail(out, 400, "ms", "INVALID_REQUEST", "ms must be a non-negative number");
		return;
	}
	resp_success(out, 200, mock_op_clock_advance(r->mock, (int64_t)ms->valuedouble));
}

static void a_egress_check(mreq *r, mresp *out)
{
	cJSON *b = admin_body(r, out);
	const cJSON *sid, *dest, *mode;
	sbx_egress_dest d;
	sbx_egress_error ee;
	char host[SBX_EGRESS_HOST_MAX + 1];
	sbx_host_rule_mode hm;
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
	if (mock_op_egress_facts(r->mock, sid->valuestring, &list, &capped, &hm) != 0) {
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

/* The route table matches the methods: each handler serves one. */
static void a_faults_list(mreq *r, mresp *out)
{
	resp_success(out, 200, mock_faults_list_json(r->mock->faults));
}

static void a_faults_clear(mreq *r, mresp *out)
{
	mock_faults_clear(r->mock->faults);
	ok_empty(out);
}

static void a_fault_delete(mreq *r, mresp *out)
{
	char id[32];
	uint64_t n = 0;
	char *end = NULL;

	if (!req_seg(r, 2, id, sizeof(id))) {
		resp_fail(out, 404, "error", "NOT_FOUND", "no fault rule with that id");
		return;
	}
	errno = 0;
	n = strtoull(id, &end, 10);
	if (errno != 0 || *end != '\0' || n > UINT32_MAX ||
	    mock_faults_delete(r->mock->faults, (unsigned)n) != 0) {
		resp_fail(out, 404, "error", "NOT_FOUND", "no fault rule with that id");
		return;
	}
	ok_empty(out);
}

static void a_faults_add(mreq *r, mresp *out)
{
	cJSON *b = admin_body(r, out);
	cJSON *ids, *d;
	sbx_err err = {{0}};

	if (b == NULL) {
		if (out->body == NULL)
			resp_fail(out, 400, "body", "INVALID_REQUEST", "a rule or {rules:[...]} is required");
		return;
	}
	ids = cJSON_CreateArray();
	if (mock_faults_add_json(r->mock->faults, b, ids, &err) != 0) {
		cJSON_Delete(ids);
		resp_fail(out, 400, "rule", "INVALID_RULE", err.msg);
		return;
	}
	d = cJSON_CreateObject();
	cJSON_AddItemToObject(d, "ids", ids);
	resp_success(out, 200, d);
}

static void a_scenario(mreq *r, mresp *out)
{
	cJSON *b = admin_body(r, out);
	const cJSON *name;
	cJSON *loaded = NULL, *ids, *d;
	sbx_err err = {{0}};
	char dir[PATH_MAX] = "";

	if (b == NULL) {
		if (out->body == NULL)
			resp_fail(out, 400, "name", "INVALID_REQUEST", "{name} or a scenario object is required");
		return;
	}
	name = cJSON_GetObjectItemCaseSensitive(b, "name");
	if (cJSON_IsString(name) && cJSON_GetObjectItemCaseSensitive(b, "rules") == NULL &&
	    cJSON_GetObjectItemCaseSensitive(b, "internet_stubs") == NULL &&
	    cJSON_GetObjectItemCaseSensitive(b, "settings") == NULL) {
		loaded = mock_scenario_load(r->mock, name->valuestring, dir, sizeof(dir), &err);
		if (loaded == NULL) {
			resp_fail(out, 404, "name", "NOT_FOUND", err.msg);
			return;
		}
		b = loaded;
	}
	if (loaded == NULL) /* a scenario in the body: its files are --scenario-dir's */
		snprintf(dir, sizeof(dir), "%s", r->mock->scenario_dir);
	ids = cJSON_CreateArray();
	if (mock_scenario_apply(r->mock, b, dir[0] != '\0' ? dir : NULL, ids, &err) != 0) {
		if (loaded != NULL) /* which file: the body named it only */
			sbx_err_prefix(&err, "scenario %s", name->valuestring);
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

	if (journal_filter(r, out, &f))
		resp_success(out, 200, mock_journal_query(r->mock->journal, &f));
}

static void a_journal_count(mreq *r, mresp *out)
{
	mock_journal_filter f;
	cJSON *d;

	if (!journal_filter(r, out, &f))
		return;
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "count", (double)mock_journal_count(r->mock->journal, &f));
	resp_success(out, 200, d);
}

static void a_journal_clear(mreq *r, mresp *out)
{
	mock_journal_clear(r->mock->journal);
	ok_empty(out);
}

/* ---- the simulated internet's stubs and journal (INTERNET.md) ---- */

/* The {id} segment of /_mock/internet/stubs/{id}: false when none. */
static bool stub_id(mreq *r, unsigned *id)
{
	char seg[32], *end = NULL;
	unsigned long long n;

	if (!req_seg(r, 3, seg, sizeof(seg)))
		return false;
	errno = 0;
	n = strtoull(seg, &end, 10);
	*id = (unsigned)n;
	return errno == 0 && *end == '\0' && seg[0] != '-' && n > 0 && n <= UINT32_MAX;
}

static void a_stubs_list(mreq *r, mresp *out)
{
	resp_success(out, 200, mock_inet_stubs_list_json(r->mock->inet_book));
}

static void a_stubs_add(mreq *r, mresp *out)
{
	cJSON *ids, *d;
	sbx_err err = {{0}};

	/* an array of stubs is a body too, so admin_body (objects) is not used */
	if (r->json == NULL || (!cJSON_IsObject(r->json) && !cJSON_IsArray(r->json))) {
		resp_fail(out, 400, "body", "INVALID_JSON", "a stub, {stubs:[...]} or an array of stubs is required");
		return;
	}
	ids = cJSON_CreateArray();
	if (mock_inet_stubs_add_json(r->mock->inet_book, r->json, NULL, ids, &err) != 0) {
		cJSON_Delete(ids);
		resp_fail(out, 400, "stub", "INVALID_STUB", err.msg);
		return;
	}
	d = cJSON_CreateObject();
	cJSON_AddItemToObject(d, "ids", ids);
	resp_success(out, 200, d);
}

static void a_stubs_clear(mreq *r, mresp *out)
{
	mock_inet_stubs_clear(r->mock->inet_book);
	ok_empty(out);
}

static void a_stub_get(mreq *r, mresp *out)
{
	unsigned id;
	cJSON *v = stub_id(r, &id) ? mock_inet_stub_json(r->mock->inet_book, id) : NULL;

	if (v == NULL)
		resp_fail(out, 404, "error", "NOT_FOUND", "no stub with that id");
	else
		resp_success(out, 200, v);
}

static void a_stub_delete(mreq *r, mresp *out)
{
	unsigned id;

	if (!stub_id(r, &id) || mock_inet_stub_delete(r->mock->inet_book, id) != 0)
		resp_fail(out, 404, "error", "NOT_FOUND", "no stub with that id");
	else
		ok_empty(out);
}

static void a_inet_journal(mreq *r, mresp *out)
{
	const char *since = req_query(r, "since"), *limit = req_query(r, "limit");
	unsigned long long s = 0, l = 0;
	char *end = NULL;

	errno = 0;
	if (since != NULL && ((s = strtoull(since, &end, 10)), errno != 0 || *end != '\0' || since[0] == '-')) {
		resp_fail(out, 400, "since", "INVALID_REQUEST", "since must be a sequence number");
		return;
	}
	if (limit != NULL && ((l = strtoull(limit, &end, 10)), errno != 0 || *end != '\0' || limit[0] == '-')) {
		resp_fail(out, 400, "limit", "INVALID_REQUEST", "limit must be a non-negative integer");
		return;
	}
	resp_success(out, 200,
		     mock_inet_journal_json(r->mock->inet_book, s, req_query(r, "sandbox_id"), req_query(r, "host"),
					    (size_t)l));
}

static void a_inet_journal_clear(mreq *r, mresp *out)
{
	mock_inet_journal_clear(r->mock->inet_book);
	ok_empty(out);
}

/* ---- the warm pool ---- */

/* GET /_mock/pool: the warm pool's counters (issue 24), or why it is off. */
/* The mock's CA certificate, PEM: what host-side clients trust to reach
 * the ingress over https (README "Ingress"). */
static void a_ca(mreq *r, mresp *out)
{
	const char *pem = r->mock->tls != NULL ? mock_inet_tls_ca_pem(r->mock->tls) : NULL;
	char *body = pem != NULL ? strdup(pem) : NULL;

	if (pem == NULL) {
		resp_fail(out, 404, "error", "NOT_FOUND", "no CA: the ingress is off and egress is not enforced");
		return;
	}
	if (body == NULL) {
		resp_fail(out, 500, "error", "INTERNAL", "out of memory");
		return;
	}
	resp_raw(out, 200, "application/x-pem-file", body, strlen(body));
}

static void a_pool(mreq *r, mresp *out)
{
	resp_success(out, 200, mock_op_pool_view(r->mock));
}

/* GET /_mock/images: the rootfs images and which root each name gets
 * (IMAGES.md). */
static void a_images(mreq *r, mresp *out)
{
	resp_success(out, 200, mock_op_images_view(r->mock));
}

/* GET /_mock/egress/links: the simulated internet's links and chains. */
static void a_egress_links(mreq *r, mresp *out)
{
	sbx_err err = {{0}};
	cJSON *d = mock_op_egress_links_view(r->mock, &err);

	if (d == NULL)
		resp_error(out, 500, err.msg);
	else
		resp_success(out, 200, d);
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
ADMIN_ROUTE(a_faults_list)
ADMIN_ROUTE(a_faults_add)
ADMIN_ROUTE(a_faults_clear)
ADMIN_ROUTE(a_fault_delete)
ADMIN_ROUTE(a_scenario)
ADMIN_ROUTE(a_journal)
ADMIN_ROUTE(a_journal_count)
ADMIN_ROUTE(a_journal_clear)
ADMIN_ROUTE(a_pool)
ADMIN_ROUTE(a_ca)
ADMIN_ROUTE(a_images)
ADMIN_ROUTE(a_egress_links)
ADMIN_ROUTE(a_stubs_list)
ADMIN_ROUTE(a_stubs_add)
ADMIN_ROUTE(a_stubs_clear)
ADMIN_ROUTE(a_stub_get)
ADMIN_ROUTE(a_stub_delete)
ADMIN_ROUTE(a_inet_journal)
ADMIN_ROUTE(a_inet_journal_clear)

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
	{"GET", "/_mock/faults", 0, a_faults_list_route},
	{"POST", "/_mock/faults", ROUTE_BLOCKS, a_faults_add_route},
	{"DELETE", "/_mock/faults", ROUTE_BLOCKS, a_faults_clear_route},
	{"DELETE", "/_mock/faults/{id}", ROUTE_BLOCKS, a_fault_delete_route},
	{"POST", "/_mock/scenario", ROUTE_BLOCKS, a_scenario_route},
	{"GET", "/_mock/journal", 0, a_journal_route},
	{"DELETE", "/_mock/journal", ROUTE_BLOCKS, a_journal_clear_route},
	{"GET", "/_mock/journal/count", 0, a_journal_count_route},
	{"GET", "/_mock/pool", 0, a_pool_route},
	{"GET", "/_mock/ca", 0, a_ca_route},
	{"GET", "/_mock/images", 0, a_images_route},
	{"GET", "/_mock/egress/links", 0, a_egress_links_route},
	{"GET", "/_mock/internet/stubs", 0, a_stubs_list_route},
	{"POST", "/_mock/internet/stubs", ROUTE_BLOCKS, a_stubs_add_route},
	{"DELETE", "/_mock/internet/stubs", ROUTE_BLOCKS, a_stubs_clear_route},
	{"GET", "/_mock/internet/stubs/{id}", 0, a_stub_get_route},
	{"DELETE", "/_mock/internet/stubs/{id}", ROUTE_BLOCKS, a_stub_delete_route},
	{"GET", "/_mock/internet/journal", 0, a_inet_journal_route},
	{"DELETE", "/_mock/internet/journal", ROUTE_BLOCKS, a_inet_journal_clear_route},
};
const size_t mock_admin_nroutes = sizeof(mock_admin_routes) / sizeof(mock_admin_routes[0]);

void admin_dispatch(mreq *r, mresp *out)
{
	const char *tok = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Mock-Admin-Token");

	/* in constant time, as the noVNC token: the admin API can reset, fault
	 * and read every tenant's journal */
	if (tok == NULL || !mock_equal_ct(tok, strlen(tok), r->mock->admin_token, strlen(r->mock->admin_token))) {
		resp_fail(out, 401, "error", "UNAUTHORIZED", "admin API needs X-Mock-Admin-Token");
		return;
	}
	mock_route_serve(mock_admin_routes, mock_admin_nroutes, r, out, NULL);
}

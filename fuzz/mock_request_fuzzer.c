/* Fuzz target: sbx-mock's create and fork requests, driven without a
 * socket but through the real handlers: the fuzzer's bytes become the body
 * of POST /v1/sandboxes (api_sandbox_create: the HTTP field mapping of
 * api_sandbox.c, then mock_op_create with a plain guest on a listener-less
 * mock) and of POST /v1/sandboxes/{id}/fork of the new sandbox; the same
 * JSON is also a disk, a template and a network create, and a durable-state
 * record for mock_sandbox_restore / mock_tenant_restore.
 *
 * The oracle is an independent statement of the contract (the "contract"
 * section below, from spec/control-plane-api.md and the SDK's
 * dist/types.d.ts: field names, JSON types, ranges, defaults), not the
 * mock's validators. Properties, each abort()s when broken:
 * - a body that breaks the contract is refused with a 400 whose field is
 *   one at fault; a body that keeps it is accepted (fields whose outcome
 *   the spec leaves open may go either way, but a refusal names one of
 *   them); an accepted create is running with a guest and stored what the
 *   body asked for, with the spec's defaults (name given or generated and
 *   valid, shape, rootfs or devbox:1, disk or 10240, auto-pause or none,
 *   ingress, region, envs, egress); its view shows env names only; the
 *   same named request again is a 409 naming `name`; dump -> restore ->
 *   dump is a fixed point;
 * - a refused create adds no sandbox and leaves the tenant's networks as
 *   they were (also when a good network precedes a bad item);
 * - a fork of a typed-wrong body is a 400 naming a field at fault; an
 *   accepted fork is a new sandbox of the tenant, forking (or paused when
 *   asked), with a guest and envs within the limits; a refusal adds nothing;
 * - mock_validate_envs / mock_validate_name agree with the rules above;
 * - disk/template/network creates accept only valid names; a disk view never
 *   shows credentials;
 * - restore of an arbitrary record never crashes, and a restored sandbox
 *   dumps to a record that restores to the same dump. Records reach restore
 *   as the fuzzer wrote them, numbers of any size and sign included: restore
 *   clamps every number to its field's range before converting it (rn() in
 *   model.c), so under UBSan this also checks that no conversion is
 *   undefined. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <unistd.h>

#include "../mock-api/src/handlers/api.h"
#include "../mock-api/src/model/model.h"
#include "../mock-api/src/ops/ops.h"
#include "../mock-api/src/server/server.h"
#include "sbx/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "mock_request property broken: %s\n", what);
		abort();
	}
}

static mock_model *new_model(void)
{
	static const uint8_t secret[32] = {1, 2, 3};
	mock_settings set;
	mock_model *m;

	memset(&set, 0, sizeof(set));
	set.sandbox_cap = 5;
	set.cap_status = 403;
	snprintf(set.cap_code, sizeof(set.cap_code), "QUOTA_EXCEEDED");
	set.credit = true;
	set.host_rule_mode = SBX_HOST_RULES_OBSERVED;
	set.accept_any_key = true;
	set.max_egress_rules = SBX_EGRESS_MAX_RULES_DEFAULT;
	snprintf(set.region, sizeof(set.region), "local");
	set.ready = true;
	/* the start's defaults: a fuzzer's templates stay pending (no build
	 * runs), so its creates reach both build caps */
	set.tpl_build_cap = MOCK_TPL_BUILD_CAP;
	set.tpl_build_cap_global = MOCK_TPL_BUILD_CAP_GLOBAL;
	m = mock_model_new(&set);
	/* records name tenants by a keyed hash: a model that dumps and
	 * restores needs the secret, as with --state-dir */
	if (m != NULL)
		mock_model_set_key_secret(m, secret);
	return m;
}

static char *print(const cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);

	check(s != NULL, "print failed");
	return s;
}

static bool name_ok(const char *n)
{
	size_t len = strlen(n);

	if (len == 0 || len > 22) /* spec: at most 22 characters */
		return false;
	for (const char *p = n; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if (!(isalnum(c) || c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

/* Disks, per the spec: ^[a-z0-9][a-z0-9-]{0,62}$. */
static bool disk_name_ok(const char *n)
{
	size_t len = strlen(n);

	if (len == 0 || len > 63 || n[0] == '-')
		return false;
	for (const char *p = n; *p != '\0'; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return false;
	}
	return true;
}

/* Networks and templates: the live service is known to take names the
 * sandbox rule refuses (a 26-character network name, issue 25); the mock
 * keeps only what a URL path segment needs: 1 to 255 bytes, no '/', no
 * control character. */
static bool path_name_ok(const char *n)
{
	size_t len = strlen(n);

	if (len == 0 || len > 255)
		return false;
	for (const char *p = n; *p != '\0'; p++) {
		if (*p == '/' || (unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	}
	return true;
}

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

/* The envs rules of the contract, written out independently. */
static bool envs_ok(const cJSON *envs)
{
	size_t n = 0, total = 0;
	const cJSON *it;

	if (envs == NULL || cJSON_IsNull(envs))
		return true;
	if (!cJSON_IsObject(envs))
		return false;
	cJSON_ArrayForEach(it, envs) {
		if (!env_key_ok(it->string) || !cJSON_IsString(it) || strlen(it->valuestring) > 4096)
			return false;
		/* a name given twice: which value is meant is open (RFC 8259) */
		if (n < 64 && cJSON_GetObjectItemCaseSensitive(envs, it->string) != it)
			return false;
		total += strlen(it->valuestring) + strlen(it->string);
		n++;
	}
	return n <= 64 && total <= 65536; /* spec: 64 entries, 64 KiB in all */
}

static void check_err(const mock_err *e, const char *what)
{
	check(e->status >= 400 && e->status <= 499, what);
	check(e->field[0] != '\0' && e->msg[0] != '\0', "error without field or message");
}

static const char *str(const cJSON *b, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A field of the body, JSON null being "not given" (as for Go's decoder). */
static const cJSON *given(const cJSON *b, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, k);

	return v == NULL || cJSON_IsNull(v) ? NULL : v;
}

/* An accepted create stored what the body asked for, defaults where it
 * was silent (spec: disk 0 = the shape default 10240 MiB, empty name =
 * generated, empty rootfs = devbox:1, no auto-pause when omitted). */
static void check_accepted(mock_model *m, const mock_sandbox *sb, const cJSON *b)
{
	const cJSON *v, *names, *it;
	const char *name = str(b, "name"), *rootfs = str(b, "rootfs");
	cJSON *view;

	check(name_ok(sb->name), "an accepted create has no valid (given or generated) name");
	check(name == NULL || name[0] == '\0' || strcmp(name, sb->name) == 0, "stored name differs");
	check(strcmp(sb->shape->id, str(b, "shape")) == 0, "stored shape differs");
	check(strcmp(sb->rootfs, rootfs != NULL && rootfs[0] != '\0' ? rootfs : "devbox:1") == 0,
	      "stored rootfs differs");
	v = given(b, "disk_mib");
	check(sb->disk_mib == (v == NULL || v->valuedouble == 0 ? 10240 : v->valuedouble),
	      "stored disk_mib differs");
	v = given(b, "auto_pause_after_seconds");
	check(sb->auto_pause_s == (v == NULL ? 0 : v->valuedouble), "stored auto-pause differs");
	check(sb->ingress_enabled == cJSON_IsTrue(given(b, "ingress_enabled")), "stored ingress differs");
	check(strcmp(sb->region, "local") == 0, "sandbox in another region");
	v = given(b, "envs");
	check(cJSON_Compare(sb->envs, v, true) || (v == NULL && cJSON_GetArraySize(sb->envs) == 0),
	      "stored envs differ");
	v = given(b, "egress");
	check(sb->egress.is_null == (v == NULL) &&
		      (v == NULL || sb->egress.count == (size_t)cJSON_GetArraySize(v)),
	      "stored egress differs");
	check(strlen(sb->id) > 3 && strncmp(sb->id, "sb-", 3) == 0, "sandbox id without sb- prefix");
	view = mock_sandbox_view(m, sb);
	check(view != NULL, "no view");
	names = cJSON_GetObjectItemCaseSensitive(view, "envs");
	cJSON_ArrayForEach(it, names)
		check(cJSON_IsString(it) && cJSON_GetObjectItemCaseSensitive(sb->envs, it->valuestring) != NULL,
		      "view shows something other than env names");
	check(names == NULL || cJSON_IsArray(names), "view shows env values");
	cJSON_Delete(view);
}

/* dump -> restore in a fresh model -> dump gives the same text. */
static void check_dump_fixed_point(const mock_sandbox *sb)
{
	cJSON *d1 = mock_sandbox_dump(sb), *d2;
	mock_model *m2 = new_model();
	char why[256] = "";
	char *t1, *t2;

	check(d1 != NULL && m2 != NULL, "out of memory");
	check(mock_sandbox_restore(m2, d1, why, sizeof(why)) == 0, "a dumped sandbox does not restore");
	check(m2->nsbx == 1, "restore did not add exactly one sandbox");
	d2 = mock_sandbox_dump(m2->sbx[0]);
	t1 = print(d1);
	t2 = print(d2);
	check(strcmp(t1, t2) == 0, "dump -> restore -> dump differs");
	free(t1);
	free(t2);
	cJSON_Delete(d1);
	cJSON_Delete(d2);
	mock_model_free(m2);
}

/* ---- the operations layer: create and fork as the handlers call them ---- */

static char g_work[64];

static void remove_work_dir(void)
{
	if (g_work[0] != '\0')
		rmdir(g_work);
}

/* A mock with no listener: the model, plain guests in a scratch work dir
 * (one for the whole run; every iteration removes its trees). */
static sbx_mock *new_mock(void)
{
	sbx_mock *mk;

	if (g_work[0] == '\0') {
		const char *tmp = getenv("TMPDIR");

		snprintf(g_work, sizeof(g_work), "%.40s/sbx-fuzz-XXXXXX",
			 tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
		check(mkdtemp(g_work) != NULL, "cannot make the work dir");
		atexit(remove_work_dir);
	}
	mk = calloc(1, sizeof(*mk));
	check(mk != NULL, "out of memory");
	mk->model = new_model();
	check(mk->model != NULL, "out of memory");
	mk->gmode = GUEST_PLAIN;
	snprintf(mk->work_dir, sizeof(mk->work_dir), "%s", g_work);
	return mk;
}

static void free_mock(sbx_mock *mk)
{
	mock_free_guests(mk, true);
	mock_model_free(mk->model);
	free(mk);
}

static void check_view_id(const cJSON *view, const char *id, const char *what)
{
	const char *vid = str(view, "id");

	check(vid != NULL && strcmp(vid, id) == 0, what);
}

static void destroy(sbx_mock *mk, mock_tenant *t, const char *id, const char *what)
{
	mock_op op;
	cJSON *view;

	memset(&op, 0, sizeof(op));
	op.mock = mk;
	op.t = t;
	op.id = id;
	view = mock_op_destroy(&op);
	check(view != NULL, what);
	cJSON_Delete(view);
}

/* ---- the contract, stated independently of the mock ----
 *
 * From spec/control-plane-api.md ("Create request", "Shapes") and the
 * SDK's dist/types.d.ts (CreateSandboxRequest, ForkSandboxRequest): field
 * names, JSON types, ranges and defaults, written out here without calling
 * the mock's validators. A field breaks the contract ("bad": the answer
 * must be a 400 naming a bad or unsure field) or its outcome depends on
 * what the oracle cannot know ("unsure": a rootfs outside the one catalog
 * name the spec gives, a host id, an array of more than one network, an
 * envs/ssh key edge the spec leaves open); a body with neither must be
 * accepted. Egress lists are judged by lib's parser (sbx_egress_list_*,
 * fuzzed against its own oracle in egress_*): here only whether the list
 * is accepted, not how. */

#define FIELDS_MAX 24

typedef struct verdict {
	const char *bad[FIELDS_MAX];
	size_t nbad;
	const char *unsure[FIELDS_MAX];
	size_t nunsure;
} verdict;

static void mark(const char **set, size_t *n, const char *field)
{
	for (size_t i = 0; i < *n; i++) {
		if (strcmp(set[i], field) == 0)
			return;
	}
	if (*n < FIELDS_MAX)
		set[(*n)++] = field;
}

static bool in_set(const char *const *set, size_t n, const char *field)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(set[i], field) == 0)
			return true;
	}
	return false;
}

#define BAD(v, f) mark((v)->bad, &(v)->nbad, (f))
#define UNSURE(v, f) mark((v)->unsure, &(v)->nunsure, (f))

static bool whole(const cJSON *v, double lo, double hi)
{
	return cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= hi &&
	       v->valuedouble == floor(v->valuedouble);
}

static void judge_strings(const cJSON *b, verdict *v)
{
	static const char *const shapes[] = {"s-0.25vcpu-512mb", "s-0.5vcpu-1gb", "s-1vcpu-256mb",
					     "s-1vcpu-1gb", "s-1vcpu-2gb", "s-2vcpu-2gb",
					     "s-2vcpu-4gb", "s-4vcpu-4gb", "s-4vcpu-8gb",
					     "s-8vcpu-8gb", "s-8vcpu-16gb"};
	static const char *const fields[] = {"shape", "rootfs", "name", "region", "host_id"};
	const cJSON *f;

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		f = given(b, fields[i]);
		if (f != NULL && !cJSON_IsString(f))
			BAD(v, fields[i]);
	}
	f = given(b, "shape");
	if (!cJSON_IsString(f) || !in_set(shapes, sizeof(shapes) / sizeof(shapes[0]), f->valuestring))
		BAD(v, "shape"); /* required, one of GET /v1/shapes */
	f = given(b, "rootfs");
	if (cJSON_IsString(f) && f->valuestring[0] != '\0' && strcmp(f->valuestring, "devbox:1") != 0)
		UNSURE(v, "rootfs");
	f = given(b, "name"); /* empty = generated */
	if (cJSON_IsString(f) && f->valuestring[0] != '\0' && !name_ok(f->valuestring))
		BAD(v, "name");
	f = given(b, "region"); /* must equal the server's ("local" here) */
	if (cJSON_IsString(f) && strcmp(f->valuestring, "local") != 0)
		BAD(v, "region");
	f = given(b, "host_id"); /* empty = the scheduler picks */
	if (cJSON_IsString(f) && f->valuestring[0] != '\0')
		UNSURE(v, "host_id");
}

static void judge_numbers(const cJSON *b, verdict *v)
{
	const cJSON *f = given(b, "disk_mib");

	/* 0 = the shape default (10240 MiB for every shape); smaller refused */
	if (f != NULL && (!whole(f, 0, 1e15) || (f->valuedouble != 0 && f->valuedouble < 10240)))
		BAD(v, "disk_mib");
	else if (f != NULL && f->valuedouble > 16 * 1024 * 1024)
		UNSURE(v, "disk_mib"); /* an upper limit the spec does not give */
	f = given(b, "auto_pause_after_seconds");
	if (f != NULL && !whole(f, 60, 86400))
		BAD(v, "auto_pause_after_seconds");
	f = given(b, "bandwidth_quota_bytes");
	if (f != NULL && (!cJSON_IsNumber(f) || f->valuedouble != 0))
		BAD(v, "bandwidth_quota_bytes"); /* non-zero on create is 400 */
	f = given(b, "ingress_enabled");
	if (f != NULL && !cJSON_IsBool(f))
		BAD(v, "ingress_enabled");
}

/* ssh_pubkeys: string[] (an empty string is an edge the spec leaves open). */
static void judge_keys(const cJSON *f, verdict *v)
{
	const cJSON *it;

	if (f == NULL)
		return;
	if (!cJSON_IsArray(f)) {
		BAD(v, "ssh_pubkeys");
		return;
	}
	cJSON_ArrayForEach(it, f) {
		if (!cJSON_IsString(it))
			BAD(v, "ssh_pubkeys");
		else if (it->valuestring[0] == '\0')
			UNSURE(v, "ssh_pubkeys");
	}
}

/* egress: string[] or null; envs: the envs rules. */
static void judge_lists(const cJSON *b, verdict *v)
{
	const cJSON *f = given(b, "egress");
	sbx_egress_list l;
	sbx_egress_error ee;

	if (f != NULL) {
		if (sbx_egress_list_from_json(f, 1024, &l, &ee) != 0)
			BAD(v, "egress");
		else
			sbx_egress_list_free(&l);
	}
	f = given(b, "envs");
	if (f != NULL && !envs_ok(f))
		BAD(v, "envs");
	judge_keys(given(b, "ssh_pubkeys"), v);
}

/* networks: [{id}] naming the caller's networks (this tenant has "net1");
 * disks: [{disk_id, mount_path}] naming the caller's disks (it has none);
 * node_selector: Record<string, string>. */
static void judge_refs(const cJSON *b, verdict *v)
{
	const cJSON *f = given(b, "networks"), *it;

	if (f != NULL && !cJSON_IsArray(f)) {
		BAD(v, "networks");
		f = NULL;
	}
	cJSON_ArrayForEach(it, f) {
		const cJSON *id = cJSON_IsObject(it) ? given(it, "id") : NULL;

		if (!cJSON_IsString(id) || strcmp(id->valuestring, "net1") != 0)
			BAD(v, "networks");
		else if (cJSON_GetArraySize(f) > 1)
			UNSURE(v, "networks"); /* the same network twice */
	}
	f = given(b, "disks");
	if (f != NULL && (!cJSON_IsArray(f) || cJSON_GetArraySize(f) > 0))
		BAD(v, "disks");
	f = given(b, "node_selector");
	if (f != NULL && !cJSON_IsObject(f)) {
		BAD(v, "node_selector");
		f = NULL;
	}
	cJSON_ArrayForEach(it, f) {
		if (!cJSON_IsString(it))
			UNSURE(v, "node_selector");
	}
}

static void judge_create(const cJSON *b, const char *raw, size_t len, verdict *v)
{
	memset(v, 0, sizeof(*v));
	if (!cJSON_IsObject(b) || sbx_egress_json_has_nul_escape(raw, len)) {
		BAD(v, "body"); /* an object; no \u0000 in any string */
		return;
	}
	judge_strings(b, v);
	judge_numbers(b, v);
	judge_lists(b, v);
	judge_refs(b, v);
}

/* ForkSandboxRequest: every field optional, typed. */
static void judge_fork(const cJSON *b, verdict *v)
{
	const cJSON *f;

	memset(v, 0, sizeof(*v));
	if (!cJSON_IsObject(b)) {
		BAD(v, "body");
		return;
	}
	f = given(b, "start_paused");
	if (f != NULL && !cJSON_IsBool(f))
		BAD(v, "start_paused");
	f = given(b, "ingress_enabled");
	if (f != NULL && !cJSON_IsBool(f))
		BAD(v, "ingress_enabled");
	f = given(b, "bandwidth_quota_bytes");
	if (f != NULL && !cJSON_IsNumber(f))
		BAD(v, "bandwidth_quota_bytes");
	else if (f != NULL)
		UNSURE(v, "bandwidth_quota_bytes"); /* a range the spec does not give */
	judge_lists(b, v);
}

/* ---- the real HTTP handlers, called as the router calls them ---- */

typedef struct answer {
	int status;
	cJSON *env;        /* the parsed envelope */
	const cJSON *data; /* its data */
	char field[64];    /* a refusal's field */
} answer;

/* One request through handler h: the body is the fuzzer's bytes, parsed as
 * the HTTP layer hands them over (r->json, r->body). */
static void call(sbx_mock *mk, mock_tenant *t, void (*h)(mreq *, mresp *, mock_tenant *),
		 const char *path, const uint8_t *data, size_t size, cJSON *json, answer *a)
{
	mreq r;
	mresp out;
	const cJSON *it;

	memset(&r, 0, sizeof(r));
	memset(&out, 0, sizeof(out));
	memset(a, 0, sizeof(*a));
	r.mock = mk;
	r.method = "POST";
	r.path = (char *)path;
	r.json = json;
	r.json_bad = json == NULL && size > 0;
	sbx_strbuf_append(&r.body, (const char *)data, size);
	h(&r, &out, t);
	sbx_strbuf_free(&r.body);
	check(out.body != NULL, "a handler gave no answer");
	a->status = out.status;
	a->env = cJSON_ParseWithLength(out.body, out.len);
	mresp_release(&out);
	check(a->env != NULL, "a handler's answer is not JSON");
	a->data = cJSON_GetObjectItemCaseSensitive(a->env, "data");
	check(cJSON_IsObject(a->data), "an answer without a data object");
	if (a->status == 200)
		return;
	cJSON_ArrayForEach(it, a->data) {
		if (strcmp(it->string, "code") != 0)
			snprintf(a->field, sizeof(a->field), "%s", it->string);
	}
}

/* The answer agrees with the verdict: a 400 naming a bad (or unsure) field
 * when something is bad, a 200 when nothing is bad or unsure. */
static void check_verdict(const verdict *v, const answer *a, const char *what)
{
	char msg[160];

	if (a->status == 200) {
		snprintf(msg, sizeof(msg), "%s accepted a body whose %s breaks the contract", what,
			 v->nbad > 0 ? v->bad[0] : "");
		check(v->nbad == 0, msg);
		return;
	}
	snprintf(msg, sizeof(msg), "%s refused (%d, field %s) a body that keeps the contract", what,
		 a->status, a->field);
	check(v->nbad > 0 || v->nunsure > 0, msg);
	snprintf(msg, sizeof(msg), "%s refused with %d naming %s, not one of the fields at fault",
		 what, a->status, a->field);
	check(a->status == 400 && (in_set(v->bad, v->nbad, a->field) ||
				   in_set(v->unsure, v->nunsure, a->field)), msg);
}

/* Forks the sandbox (the body as the fork request), then destroys the fork. */
static void fuzz_fork(sbx_mock *mk, mock_tenant *t, const uint8_t *data, size_t size, cJSON *b,
		      const char *src_id)
{
	size_t before = mk->model->nsbx;
	char path[128];
	verdict v;
	answer a;
	const mock_sandbox *child;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/fork", src_id);
	judge_fork(b, &v);
	call(mk, t, api_sandbox_fork, path, data, size, b, &a);
	if (a.status != 200) {
		check(a.status >= 400 && a.status <= 499, "fork refused with a status outside 4xx");
		check(v.nbad == 0 || (a.status == 400 && (in_set(v.bad, v.nbad, a.field) ||
							  in_set(v.unsure, v.nunsure, a.field))),
		      "fork refused a bad body without naming a field at fault");
		check(mk->model->nsbx == before, "a refused fork added a sandbox");
		cJSON_Delete(a.env);
		return;
	}
	check(v.nbad == 0, "fork accepted a body that breaks the contract");
	check(mk->model->nsbx == before + 1, "an accepted fork did not add one sandbox");
	child = mk->model->sbx[before];
	check(strcmp(child->id, src_id) != 0, "the fork has its source's id");
	check_view_id(a.data, child->id, "the fork's view is another sandbox's");
	check(child->tenant == t, "the fork belongs to another tenant");
	check(child->guest != NULL, "the fork has no guest");
	check(child->status == (cJSON_IsTrue(given(b, "start_paused")) ? ST_PAUSED : ST_FORKING),
	      "a new fork is neither forking nor (start_paused) paused");
	check(envs_ok(child->envs), "a fork accepted envs over the limits");
	cJSON_Delete(a.env);
	destroy(mk, t, child->id, "the fork does not destroy");
}

/* POST /v1/sandboxes with the fuzzer's bytes through the real handler
 * (api_sandbox.c: the field mapping, then mock_op_create), judged by the
 * contract; an accepted one runs, is stored as asked, dumps and restores
 * to itself, refuses its name again, forks and destroys. */
static void fuzz_http(const uint8_t *data, size_t size, cJSON *b)
{
	sbx_mock *mk = new_mock();
	mock_tenant *t = mock_tenant_get(mk->model, "fuzz-key", true);
	const mock_sandbox *sb;
	char *nets_before, *nets_after;
	const char *id;
	mock_err e;
	verdict v;
	answer a, again;

	check(t != NULL, "out of memory");
	memset(&e, 0, sizeof(e));
	check(mock_network_create(mk->model, t, "net1", &e) != NULL, "cannot create the fixture network");
	nets_before = print(t->networks);
	judge_create(b, (const char *)data, size, &v);
	call(mk, t, api_sandbox_create, "/v1/sandboxes", data, size, b, &a);
	check_verdict(&v, &a, "create");
	if (a.status != 200) {
		nets_after = print(t->networks);
		check(mk->model->nsbx == 0, "a refused create added a sandbox");
		check(strcmp(nets_before, nets_after) == 0, "a refused create changed the tenant's networks");
		free(nets_after);
		goto out;
	}
	id = str(a.data, "id");
	check(id != NULL && mk->model->nsbx == 1, "an accepted create did not add one sandbox");
	sb = mock_sandbox_find(mk->model, t, id);
	check(sb != NULL, "the created sandbox cannot be found");
	check(sb->status == ST_RUNNING && sb->guest != NULL, "a created sandbox does not run");
	check_accepted(mk->model, sb, b);
	check_dump_fixed_point(sb);
	if (str(b, "name") != NULL && str(b, "name")[0] != '\0') {
		call(mk, t, api_sandbox_create, "/v1/sandboxes", data, size, b, &again);
		check(again.status == 409 && strcmp(again.field, "name") == 0,
		      "a taken name was accepted again");
		cJSON_Delete(again.env);
	}
	fuzz_fork(mk, t, data, size, b, sb->id);
	destroy(mk, t, sb->id, "the sandbox does not destroy");
out:
	free(nets_before);
	cJSON_Delete(a.env);
	free_mock(mk);
}
static void fuzz_validators(const cJSON *b)
{
	const cJSON *envs = cJSON_GetObjectItemCaseSensitive(b, "envs");
	const char *name = str(b, "name");
	mock_err e;

	memset(&e, 0, sizeof(e));
	if (mock_validate_envs(envs, &e) == 0)
		check(envs_ok(envs), "mock_validate_envs accepted invalid envs");
	else
		check(!envs_ok(envs) && e.status == 400 && strcmp(e.field, "envs") == 0,
		      "mock_validate_envs refused valid envs or without naming the field");
	if (name != NULL)
		check((mock_validate_name(name, &e) == 0) == name_ok(name),
		      "mock_validate_name disagrees with the name rules");
}

static void fuzz_others(mock_model *m, mock_tenant *t, const cJSON *b)
{
	const char *name = str(b, "name");
	mock_err e;
	cJSON *disk, *tpl, *net;

	memset(&e, 0, sizeof(e));
	disk = mock_disk_create(m, t, b, &e);
	if (disk != NULL) {
		cJSON *view = mock_disk_view(disk);

		check(name != NULL && disk_name_ok(name), "disk with an invalid name");
		check(view != NULL && cJSON_GetObjectItemCaseSensitive(view, "_credentials") == NULL,
		      "disk view shows credentials");
		cJSON_Delete(view);
		check(mock_disk_delete(m, t, name, &e) == 0, "a new disk does not delete");
	} else {
		check_err(&e, "disk refused with a status outside 4xx");
	}
	memset(&e, 0, sizeof(e));
	tpl = mock_template_create(m, t, b, &e);
	if (tpl != NULL) {
		cJSON *view = mock_template_view(m, tpl, false);
		const char *st = str(view, "status");

		check(name != NULL && path_name_ok(name), "template with an invalid name");
		check(st != NULL && (strcmp(st, "pending") == 0 || strcmp(st, "building") == 0 ||
				     strcmp(st, "ready") == 0), "template status unknown");
		check(cJSON_GetObjectItemCaseSensitive(view, "_created_ms") == NULL,
		      "template view shows internals");
		check(cJSON_GetObjectItemCaseSensitive(view, "dockerfile") == NULL,
		      "template view shows its dockerfile unasked");
		cJSON_Delete(view);
	} else if (e.status == 503) {
		/* the mock's own capacity, as the live fleet's (LIMITS.md) */
		check(strstr(e.msg, "concurrent template build limit is reached") != NULL,
		      "template refused with a 5xx other than the mock's build cap");
	} else {
		check_err(&e, "template refused with a status outside 4xx");
	}
	if (name != NULL) {
		memset(&e, 0, sizeof(e));
		net = mock_network_create(m, t, name, &e);
		check(net == NULL || path_name_ok(name), "network with an invalid name");
		if (net != NULL)
			check(mock_network_delete(m, t, name, &e) == 0, "a new network does not delete");
	}
}

static void fuzz_restore(cJSON *b)
{
	mock_model *m = new_model();
	char why[256] = "";

	if (m == NULL)
		return;
	(void)mock_tenant_restore(m, b, why, sizeof(why));
	if (mock_sandbox_restore(m, b, why, sizeof(why)) == 0) {
		check(m->nsbx == 1, "restore did not add one sandbox");
		cJSON_Delete(mock_sandbox_view(m, m->sbx[0]));
		check_dump_fixed_point(m->sbx[0]);
		mock_model_after_restore(m);
	} else {
		check(why[0] != '\0', "restore failed without a reason");
	}
	mock_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *b = cJSON_ParseWithLength((const char *)data, size);
	mock_model *m;
	mock_tenant *t;
	mock_err e;

	if (b == NULL)
		return 0;
	m = new_model();
	t = m != NULL ? mock_tenant_get(m, "fuzz-key", true) : NULL;
	if (t == NULL)
		goto out;
	memset(&e, 0, sizeof(e));
	check(mock_network_create(m, t, "net1", &e) != NULL, "cannot create the fixture network");
	fuzz_validators(b);
	fuzz_http(data, size, b);
	fuzz_others(m, t, b);
	if (cJSON_IsObject(b))
		fuzz_restore(b);
out:
	mock_model_free(m);
	cJSON_Delete(b);
	return 0;
}

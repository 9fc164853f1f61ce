/* Fuzz target: sbx-mock's request validation in the model layer
 * (mock-api/src/model.h), driven without a socket: one JSON body from the
 * fuzzer becomes a create-sandbox request (fields mapped by their contract
 * types, as the HTTP layer does; egress through sbx_egress_list_from_json),
 * a disk, a template and a network create, and a durable-state record for
 * mock_sandbox_restore / mock_tenant_restore.
 *
 * The same body then goes through the operations layer (ops.h) on a mock
 * with no listener, as the handlers call it: mock_op_create, mock_op_fork
 * of the new sandbox (the body's start_paused, ingress, envs, keys, egress
 * and quota as the fork request) and mock_op_destroy of both.
 *
 * Properties, each abort()s when broken:
 * - create accepted: the name is 1..22 of [A-Za-z0-9._-], the envs have at
 *   most 64 keys matching ^[A-Za-z_][A-Za-z0-9_]*$ with string values of at
 *   most 4 KiB and 64 KiB in all, shape/rootfs/region/host are the known
 *   ones, disk_mib is at least the shape default, auto-pause is 0 or
 *   60..86400; the view shows env names only; the same named request again
 *   is a 409 NAME_TAKEN; dump -> restore -> dump is a fixed point;
 * - create refused: a 4xx status with a field and a message, and the model
 *   is unchanged (no sandbox added, tenant networks and their members as
 *   before), for every refusal: also when the networks list names a good
 *   network before a bad item, since attach_networks (model.c) checks every
 *   item before it adds a member (once a bug, fixed and checked here);
 * - op create refuses exactly what the model refuses, with the same status,
 *   adding nothing; an accepted one is running with a guest; a fork is a
 *   new sandbox of the same tenant, forking (or paused when asked), with
 *   a guest and envs within the limits, or a 4xx refusal adding nothing;
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

#include "../mock-api/src/model.h"
#include "../mock-api/src/ops.h"
#include "../mock-api/src/server.h"
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

	if (len == 0 || len > MOCK_NAME_MAX)
		return false;
	for (const char *p = n; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if (!(isalnum(c) || c == '-' || c == '_' || c == '.'))
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
		if (!env_key_ok(it->string) || !cJSON_IsString(it) ||
		    strlen(it->valuestring) > MOCK_ENV_VALUE_MAX)
			return false;
		total += strlen(it->valuestring) + strlen(it->string);
		n++;
	}
	return n <= MOCK_ENVS_MAX && total <= MOCK_ENVS_TOTAL_MAX;
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

/* An integer field in [lo, hi], as the HTTP layer accepts it. */
static bool integer(const cJSON *b, const char *k, double lo, double hi, int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, k);

	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
	    v->valuedouble != floor(v->valuedouble))
		return false;
	*out = (int64_t)v->valuedouble;
	return true;
}

static const cJSON *kind(const cJSON *b, const char *k, bool array)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, k);

	return (array ? cJSON_IsArray(v) : cJSON_IsObject(v)) ? v : NULL;
}

static void check_accepted(mock_model *m, const mock_sandbox *sb, const mock_create_req *q)
{
	cJSON *view;
	const cJSON *names, *it;

	check(sb->status == ST_CREATING, "a new sandbox is not creating");
	check(sb->name[0] == '\0' || name_ok(sb->name), "accepted an invalid name");
	check(q->name == NULL || q->name[0] == '\0' || strcmp(q->name, sb->name) == 0,
	      "stored name differs");
	check(envs_ok(sb->envs), "accepted envs over the limits");
	check(mock_shape_find(sb->shape->id) == sb->shape, "unknown shape accepted");
	check(strcmp(sb->region, m->set.region) == 0, "sandbox in another region");
	check(sb->disk_mib >= sb->shape->default_disk_mib, "disk below the shape default");
	check(sb->auto_pause_s == 0 || (sb->auto_pause_s >= 60 && sb->auto_pause_s <= 86400),
	      "auto-pause out of range");
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

/* The create request the body maps to (q->egress is the caller's to
 * free). */
static void create_req(const mock_model *m, const cJSON *b, mock_create_req *q)
{
	int64_t disk = 0, ap = 0, bw = 0;
	const cJSON *egress = cJSON_GetObjectItemCaseSensitive(b, "egress");
	sbx_egress_error ee;

	memset(q, 0, sizeof(*q));
	q->egress.is_null = true;
	q->shape = str(b, "shape");
	if (q->shape == NULL)
		q->shape = "s-1vcpu-1gb";
	q->rootfs = str(b, "rootfs");
	q->name = str(b, "name");
	q->region = str(b, "region");
	q->host_id = str(b, "host_id");
	if (integer(b, "disk_mib", 0, 16 * 1024 * 1024, &disk))
		q->disk_mib = (unsigned)disk;
	q->ingress_enabled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "ingress_enabled"));
	q->has_auto_pause = integer(b, "auto_pause_after_seconds", INT32_MIN, INT32_MAX, &ap);
	q->auto_pause_s = (int)ap;
	if (integer(b, "bandwidth_quota_bytes", -1, 1e15, &bw))
		q->bw_quota = bw;
	q->envs = kind(b, "envs", false);
	q->ssh_pubkeys = kind(b, "ssh_pubkeys", true);
	q->networks = kind(b, "networks", true);
	q->disks = kind(b, "disks", true);
	if (egress != NULL &&
	    sbx_egress_list_from_json(egress, m->set.max_egress_rules, &q->egress, &ee) != 0)
		q->egress.is_null = true;
}

/* Returns the refusal's status, 0 when the create was accepted. */
static int fuzz_create(mock_model *m, mock_tenant *t, const cJSON *b)
{
	mock_create_req q;
	mock_err e;
	size_t before = m->nsbx;
	char *nets_before = print(t->networks);
	mock_sandbox *sb;
	int refused = 0;

	memset(&e, 0, sizeof(e));
	create_req(m, b, &q);
	sb = mock_sandbox_create(m, t, &q, &e);
	if (sb == NULL) {
		char *nets_after = print(t->networks);

		check_err(&e, "create refused with a status outside 4xx");
		check(m->nsbx == before, "a refused create added a sandbox");
		check(strcmp(nets_before, nets_after) == 0,
		      "a refused create changed the tenant's networks");
		free(nets_after);
		refused = e.status;
		goto out;
	}
	check(m->nsbx == before + 1, "an accepted create did not add one sandbox");
	check(mock_sandbox_find(m, t, sb->id) == sb, "the new sandbox cannot be found");
	check(q.name == NULL || q.name[0] == '\0' || name_ok(q.name), "accepted an invalid name");
	check(name_ok(sb->name), "an accepted create has no valid (given or generated) name");
	check(envs_ok(q.envs), "accepted invalid envs");
	check_accepted(m, sb, &q);
	check_dump_fixed_point(sb);
	if (q.name != NULL && q.name[0] != '\0') {
		memset(&e, 0, sizeof(e));
		check(mock_sandbox_create(m, t, &q, &e) == NULL && e.status == 409 &&
		      strcmp(e.code, "NAME_TAKEN") == 0, "a taken name was accepted again");
	}
out:
	free(nets_before);
	sbx_egress_list_free(&q.egress);
	return refused;
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

/* The fork request the body maps to (egress borrowed from the create's). */
static void fork_req(const cJSON *b, const mock_create_req *q, mock_fork_req *f)
{
	const cJSON *ing = cJSON_GetObjectItemCaseSensitive(b, "ingress_enabled");
	int64_t bw = 0;

	memset(f, 0, sizeof(*f));
	f->start_paused = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "start_paused"));
	f->has_ingress = cJSON_IsBool(ing);
	f->ingress_enabled = cJSON_IsTrue(ing);
	f->has_egress = !q->egress.is_null;
	f->egress = q->egress;
	f->envs = kind(b, "envs", false);
	f->ssh_pubkeys = kind(b, "ssh_pubkeys", true);
	if (integer(b, "bandwidth_quota_bytes", -1, 1e15, &bw))
		f->bw_quota = bw;
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

/* Forks the sandbox op created, then destroys the fork. */
static void fuzz_fork(sbx_mock *mk, mock_tenant *t, const cJSON *b, const mock_create_req *q,
		      const char *src_id)
{
	mock_fork_req f;
	mock_op op;
	size_t before = mk->model->nsbx;
	cJSON *view;
	const mock_sandbox *child;

	fork_req(b, q, &f);
	memset(&op, 0, sizeof(op));
	op.mock = mk;
	op.t = t;
	op.id = src_id;
	view = mock_op_fork(&op, &f);
	if (view == NULL) {
		check_err(&op.err, "fork refused with a status outside 4xx");
		check(mk->model->nsbx == before, "a refused fork added a sandbox");
		return;
	}
	check(mk->model->nsbx == before + 1, "an accepted fork did not add one sandbox");
	child = mk->model->sbx[before];
	check(strcmp(child->id, src_id) != 0, "the fork has its source's id");
	check_view_id(view, child->id, "the fork's view is another sandbox's");
	check(child->tenant == t, "the fork belongs to another tenant");
	check(child->guest != NULL, "the fork has no guest");
	check(child->status == (f.start_paused ? ST_PAUSED : ST_FORKING),
	      "a new fork is neither forking nor (start_paused) paused");
	check(envs_ok(child->envs), "a fork accepted envs over the limits");
	cJSON_Delete(view);
	destroy(mk, t, child->id, "the fork does not destroy");
}

/* Create through the operations layer agrees with the model's create
 * (refused_status: fuzz_create's answer for the same body); an accepted
 * one runs, has a guest, and forks. */
static void fuzz_ops(const cJSON *b, int refused_status)
{
	sbx_mock *mk = new_mock();
	mock_tenant *t = mock_tenant_get(mk->model, "fuzz-key", true);
	mock_create_req q;
	mock_op op;
	mock_err e;
	cJSON *view;
	const mock_sandbox *sb;

	check(t != NULL, "out of memory");
	memset(&e, 0, sizeof(e));
	check(mock_network_create(mk->model, t, "net1", &e) != NULL, "cannot create the fixture network");
	create_req(mk->model, b, &q);
	memset(&op, 0, sizeof(op));
	op.mock = mk;
	op.t = t;
	view = mock_op_create(&op, &q);
	if (view == NULL) {
		check_err(&op.err, "op create refused with a status outside 4xx");
		check(op.err.status == refused_status, "op create and model create disagree");
		check(mk->model->nsbx == 0, "a refused op create added a sandbox");
		goto out;
	}
	check(refused_status == 0, "op create accepted what the model refused");
	sb = mock_sandbox_find(mk->model, t, op.found);
	check(sb != NULL, "the created sandbox cannot be found");
	check_view_id(view, sb->id, "the create's view is another sandbox's");
	check(sb->status == ST_RUNNING && sb->guest != NULL, "an op-created sandbox does not run");
	cJSON_Delete(view);
	fuzz_fork(mk, t, b, &q, sb->id);
	destroy(mk, t, sb->id, "the sandbox does not destroy");
out:
	sbx_egress_list_free(&q.egress);
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

		check(name != NULL && name_ok(name), "disk with an invalid name");
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
		cJSON *view = mock_template_view(m, tpl);
		const char *st = str(view, "status");

		check(name != NULL && name_ok(name), "template with an invalid name");
		check(st != NULL && (strcmp(st, "pending") == 0 || strcmp(st, "building") == 0 ||
				     strcmp(st, "ready") == 0), "template status unknown");
		check(cJSON_GetObjectItemCaseSensitive(view, "_created_ms") == NULL,
		      "template view shows internals");
		cJSON_Delete(view);
	} else {
		check_err(&e, "template refused with a status outside 4xx");
	}
	if (name != NULL) {
		memset(&e, 0, sizeof(e));
		net = mock_network_create(m, t, name, &e);
		check(net == NULL || name_ok(name), "network with an invalid name");
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
	int refused;

	if (b == NULL)
		return 0;
	m = new_model();
	t = m != NULL ? mock_tenant_get(m, "fuzz-key", true) : NULL;
	if (t == NULL)
		goto out;
	memset(&e, 0, sizeof(e));
	check(mock_network_create(m, t, "net1", &e) != NULL, "cannot create the fixture network");
	fuzz_validators(b);
	refused = fuzz_create(m, t, b);
	fuzz_ops(b, refused);
	fuzz_others(m, t, b);
	if (cJSON_IsObject(b))
		fuzz_restore(b);
out:
	mock_model_free(m);
	cJSON_Delete(b);
	return 0;
}

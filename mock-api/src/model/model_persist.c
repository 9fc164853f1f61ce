/* model_persist: the durable part of the model as JSON — a tenant or a
 * sandbox dumped into a record, and rebuilt from one at start
 * (mutation_log.c frames and syncs the records, durable.c decides when);
 * see model.h.
 *
 * Volatile fields (idle timer, pending transitions, in-flight counters,
 * guests) are never stored. A record read back may be damaged or hostile:
 * every field is checked or clamped, and a bad record is refused with a
 * reason, never trusted. Never knows about HTTP or files. */
#include "model/model_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dump ---- */

cJSON *mock_tenant_dump(const mock_tenant *t)
{
	cJSON *o = cJSON_CreateObject(), *tpls;
	const cJSON *tpl;

	/* never the key itself: its keyed hash (model.h) */
	cJSON_AddStringToObject(o, "key_hash", t->key_hash);
	cJSON_AddStringToObject(o, "user_id", t->user_id);
	cJSON_AddNumberToObject(o, "cap", t->cap);
	cJSON_AddNumberToObject(o, "credit", t->credit);
	cJSON_AddItemToObject(o, "networks", cJSON_Duplicate(t->networks, true));
	cJSON_AddItemToObject(o, "disks", cJSON_Duplicate(t->disks, true));
	/* a template's log is not the tenant's state: the record is printed,
	 * checksummed and synced under the model lock at each change of the
	 * tenant, so it carries only the log's last lines (TEMPLATES.md) */
	tpls = cJSON_AddArrayToObject(o, "templates");
	cJSON_ArrayForEach(tpl, t->templates)
		cJSON_AddItemToArray(tpls, mock_template_record(tpl));
	return o;
}

cJSON *mock_sandbox_dump(const mock_sandbox *sb)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "id", sb->id);
	cJSON_AddStringToObject(o, "name", sb->name);
	cJSON_AddStringToObject(o, "tenant_hash", sb->tenant != NULL ? sb->tenant->key_hash : "");
	cJSON_AddStringToObject(o, "status", mock_status_name(sb->status));
	cJSON_AddStringToObject(o, "shape", sb->shape->id);
	cJSON_AddStringToObject(o, "rootfs", sb->rootfs);
	cJSON_AddStringToObject(o, "region", sb->region);
	cJSON_AddNumberToObject(o, "vcpu", sb->vcpu);
	cJSON_AddNumberToObject(o, "mem_mib", sb->mem_mib);
	cJSON_AddNumberToObject(o, "disk_mib", sb->disk_mib);
	cJSON_AddStringToObject(o, "ip", sb->ip);
	cJSON_AddNumberToObject(o, "created_ms", (double)sb->created_ms);
	cJSON_AddNumberToObject(o, "running_ms", (double)sb->running_ms);
	cJSON_AddNumberToObject(o, "paused_ms", (double)sb->paused_ms);
	cJSON_AddNumberToObject(o, "resumed_ms", (double)sb->resumed_ms);
	cJSON_AddNumberToObject(o, "destroyed_ms", (double)sb->destroyed_ms);
	cJSON_AddNumberToObject(o, "spawn_ms", (double)sb->spawn_ms);
	cJSON_AddNumberToObject(o, "auto_pause_s", sb->auto_pause_s);
	cJSON_AddBoolToObject(o, "ingress_enabled", sb->ingress_enabled);
	if (sb->egress.is_null)
		cJSON_AddNullToObject(o, "egress");
	else
		cJSON_AddItemToObject(o, "egress", sbx_egress_list_to_json(&sb->egress));
	cJSON_AddItemToObject(o, "envs", cJSON_Duplicate(sb->envs, true));
	cJSON_AddItemToObject(o, "ssh_pubkeys", cJSON_Duplicate(sb->ssh_pubkeys, true));
	cJSON_AddItemToObject(o, "disks", cJSON_Duplicate(sb->disks, true));
	cJSON_AddItemToObject(o, "networks", cJSON_Duplicate(sb->networks, true));
	cJSON_AddStringToObject(o, "forked_from", sb->forked_from);
	cJSON_AddStringToObject(o, "host_id", sb->host_id);
	cJSON_AddNumberToObject(o, "bw_quota", (double)sb->bw_quota);
	cJSON_AddNumberToObject(o, "bw_used", (double)sb->bw_used);
	cJSON_AddNumberToObject(o, "bw_ingress", (double)sb->bw_ingress);
	cJSON_AddBoolToObject(o, "destroy_stuck", sb->destroy_stuck);
	cJSON_AddBoolToObject(o, "cold_start", sb->cold_start);
	return o;
}

/* ---- restore ---- */

/* A number from a state record, clamped to [lo, hi] (NaN and absent: 0), so
 * that a damaged or hostile record cannot make the conversions below
 * undefined. */
static double rn(const cJSON *o, const char *k, double lo, double hi)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	double d = cJSON_IsNumber(v) ? v->valuedouble : 0;

	if (!(d == d))
		return 0;
	return d < lo ? lo : d > hi ? hi : d;
}

#define RN_INT(o, k) ((int)rn((o), (k), INT_MIN, INT_MAX))
#define RN_UINT(o, k) ((unsigned)rn((o), (k), 0, UINT_MAX))
#define RN_I64(o, k) ((int64_t)rn((o), (k), -9.0e18, 9.0e18))

static cJSON *rj(const cJSON *o, const char *k, bool array)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (v == NULL || (array ? !cJSON_IsArray(v) : !cJSON_IsObject(v)))
		return array ? cJSON_CreateArray() : cJSON_CreateObject();
	return cJSON_Duplicate(v, true);
}

/* Every item of an array is a string. */
static bool all_strings(const cJSON *arr)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		if (!cJSON_IsString(it))
			return false;
	}
	return true;
}

/* The first thing wrong with one stored network, disk or template (the
 * views and lookups read these fields without checking), or NULL. */
static const char *resource_fault(const char *what, const cJSON *r, char *buf, size_t cap)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "id");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");

	if (!cJSON_IsObject(r))
		snprintf(buf, cap, "%s item is not an object", what);
	else if (!cJSON_IsString(id) || id->valuestring[0] == '\0' ||
		 strlen(id->valuestring) >= MOCK_ID_MAX)
		snprintf(buf, cap, "%s item without a string id", what);
	else if (!cJSON_IsString(name))
		snprintf(buf, cap, "%s %s: name is not a string", what, id->valuestring);
	else if (strcmp(what, "networks") == 0 &&
		 (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "members")) ||
		  !all_strings(cJSON_GetObjectItemCaseSensitive(r, "members"))))
		snprintf(buf, cap, "networks %s: members is not an array of strings", id->valuestring);
	else if (strcmp(what, "templates") == 0) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(r, "_created_ms");

		/* the clock is ms since start: a year each way is more than enough */
		if (!cJSON_IsNumber(c) || !(c->valuedouble >= -3.2e10 && c->valuedouble <= 3.2e13))
			snprintf(buf, cap, "templates %s: _created_ms is not a clock time",
				 id->valuestring);
		else
			return NULL;
	} else
		return NULL;
	return buf;
}

/* How a warning names a tenant record: its user id, else its key hash's
 * start (never a key). */
static const char *tenant_name(const cJSON *o)
{
	const char *u = model_str(o, "user_id"), *h = model_str(o, "key_hash");

	return u != NULL ? u : h != NULL ? h : "(unnamed)";
}

/* The tenant record's networks, disks and templates are arrays of valid
 * items (absent: empty); else why says which and the record is refused. */
static int tenant_arrays_ok(const cJSON *o, char *why, size_t cap)
{
	static const char *const keys[] = {"networks", "disks", "templates"};
	char buf[160];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
		const cJSON *it;

		if (arr == NULL)
			continue;
		if (!cJSON_IsArray(arr)) {
			snprintf(why, cap, "tenant %s: %s is not an array", tenant_name(o), keys[i]);
			return -1;
		}
		cJSON_ArrayForEach(it, arr) {
			if (resource_fault(keys[i], it, buf, sizeof(buf)) != NULL) {
				snprintf(why, cap, "tenant %s: %s", tenant_name(o), buf);
				return -1;
			}
		}
	}
	return 0;
}

/* A key hash as written by mock_tenant_dump: 64 lower-case hex digits. */
static bool is_key_hash(const char *h)
{
	size_t n = 0;

	for (; h != NULL && h[n] != '\0'; n++) {
		if (!((h[n] >= '0' && h[n] <= '9') || (h[n] >= 'a' && h[n] <= 'f')))
			return false;
	}
	return n == 64;
}

/* Another tenant (not the one under hash) has user id uid: whoami would
 * answer two keys with one account. */
static bool user_id_taken(const mock_model *m, const char *uid, const char *hash)
{
	for (const mock_tenant *t = m->tenants; t != NULL; t = t->next) {
		if (strcmp(t->key_hash, hash) != 0 && strncmp(t->user_id, uid, sizeof(t->user_id) - 1) == 0)
			return true;
	}
	return false;
}

/* New tenants are numbered after a restored "usr_mockNNNN" (so a later
 * tenant never gets a user id a restored one has); numbers past UINT_MAX/2
 * are never reached by the counter and are left alone. */
static void note_user_id(mock_model *m, const char *uid)
{
	unsigned long k;

	if (strncmp(uid, "usr_mock", 8) != 0)
		return;
	k = strtoul(uid + 8, NULL, 10);
	if (k > m->tenant_counter && k <= UINT_MAX / 2)
		m->tenant_counter = (unsigned)k;
}

bool mock_record_has_raw_key(const cJSON *o)
{
	return cJSON_HasObjectItem(o, "key") || cJSON_HasObjectItem(o, "tenant");
}

int mock_tenant_restore(mock_model *m, const cJSON *o, char *why, size_t cap)
{
	const char *hash = model_str(o, "key_hash"), *uid = model_str(o, "user_id");
	mock_tenant *t;

	if (!is_key_hash(hash)) {
		snprintf(why, cap, "tenant record without a valid key_hash");
		return -1;
	}
	if (tenant_arrays_ok(o, why, cap) != 0)
		return -1;
	if (uid != NULL && user_id_taken(m, uid, hash)) {
		snprintf(why, cap, "tenant %.64s: user_id is another tenant's", uid);
		return -1;
	}
	t = mock_tenant_by_hash(m, hash, true);
	if (t == NULL) {
		snprintf(why, cap, "out of memory");
		return -1;
	}
	if (uid != NULL) {
		snprintf(t->user_id, sizeof(t->user_id), "%s", uid);
		note_user_id(m, t->user_id);
	}
	t->cap = RN_INT(o, "cap");
	t->credit = RN_INT(o, "credit");
	cJSON_Delete(t->networks);
	cJSON_Delete(t->disks);
	cJSON_Delete(t->templates);
	t->networks = rj(o, "networks", true);
	t->disks = rj(o, "disks", true);
	t->templates = rj(o, "templates", true);
	/* a build in the record was the old process's: it ended with it (a
	 * later record of this tenant replaces these, so each is said once) */
	mock_template_after_restore(t);
	return 0;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src != NULL ? src : "");
}


/* The fields of a sandbox record that need no allocation (copied into sb,
 * clamped where numeric). */
static void sandbox_fields_from(mock_sandbox *sb, const cJSON *o)
{
	copy_str(sb->name, sizeof(sb->name), model_str(o, "name"));
	copy_str(sb->rootfs, sizeof(sb->rootfs), model_str(o, "rootfs"));
	copy_str(sb->region, sizeof(sb->region), model_str(o, "region"));
	sb->vcpu = RN_UINT(o, "vcpu");
	sb->mem_mib = RN_UINT(o, "mem_mib");
	sb->disk_mib = RN_UINT(o, "disk_mib");
	copy_str(sb->ip, sizeof(sb->ip), model_str(o, "ip"));
	sb->created_ms = RN_I64(o, "created_ms");
	sb->running_ms = RN_I64(o, "running_ms");
	sb->paused_ms = RN_I64(o, "paused_ms");
	sb->resumed_ms = RN_I64(o, "resumed_ms");
	sb->destroyed_ms = RN_I64(o, "destroyed_ms");
	sb->spawn_ms = RN_I64(o, "spawn_ms");
	sb->auto_pause_s = RN_INT(o, "auto_pause_s");
	sb->ingress_enabled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ingress_enabled"));
	copy_str(sb->forked_from, sizeof(sb->forked_from), model_str(o, "forked_from"));
	copy_str(sb->host_id, sizeof(sb->host_id), model_str(o, "host_id"));
	sb->bw_quota = RN_I64(o, "bw_quota");
	sb->bw_used = RN_I64(o, "bw_used");
	sb->bw_ingress = RN_I64(o, "bw_ingress");
	sb->destroy_stuck = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "destroy_stuck"));
	sb->cold_start = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "cold_start"));
}

/* Whether a sandbox record's stored lists are unusable (networks: an
 * array of network ids; ssh_pubkeys an array of strings; disks an array;
 * envs an object of strings: what the model and the guests read without
 * checking, and what a create stores); why says which. */
static bool sandbox_arrays_bad(const cJSON *o, char *why, size_t cap)
{
	const cJSON *nets = cJSON_GetObjectItemCaseSensitive(o, "networks");
	const cJSON *keys = cJSON_GetObjectItemCaseSensitive(o, "ssh_pubkeys");
	const cJSON *disks = cJSON_GetObjectItemCaseSensitive(o, "disks");
	const cJSON *envs = cJSON_GetObjectItemCaseSensitive(o, "envs");
	const char *bad = NULL;

	if (nets != NULL && (!cJSON_IsArray(nets) || !all_strings(nets)))
		bad = "networks is not an array of network ids";
	else if (keys != NULL && (!cJSON_IsArray(keys) || !all_strings(keys)))
		bad = "ssh_pubkeys is not an array of strings";
	else if (envs != NULL && (!cJSON_IsObject(envs) || !all_strings(envs)))
		bad = "envs is not an object of strings";
	else if (disks != NULL && !cJSON_IsArray(disks))
		bad = "disks is not an array";
	if (bad != NULL)
		snprintf(why, cap, "sandbox %s: %s", model_str(o, "id"), bad);
	return bad != NULL;
}

/* A sandbox id as the mock makes them ("sb-" + ULID): [A-Za-z0-9_-], so
 * that it is safe as the name of its guest's directory (no "/" or "..").
 * Ids are case-sensitive. */
static bool sandbox_id_ok(const char *id)
{
	size_t n = 0;

	for (; id != NULL && id[n] != '\0'; n++) {
		char c = id[n];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-'))
			return false;
	}
	return n > 0 && n < MOCK_ID_MAX;
}

/* A sandbox rebuilt from its record, not yet in the model; NULL with why
 * set when the record is refused or memory runs out. */
static mock_sandbox *sandbox_from_record(mock_model *m, const cJSON *o, char *why, size_t cap)
{
	const char *id = model_str(o, "id"), *tk = model_str(o, "tenant_hash");
	const char *st = model_str(o, "status");
	const mock_shape *shape = model_str(o, "shape") != NULL ? mock_shape_find(model_str(o, "shape")) : NULL;
	const cJSON *eg = cJSON_GetObjectItemCaseSensitive(o, "egress");
	int status = st != NULL ? mock_status_parse(st) : -1;
	sbx_egress_error ee;
	mock_sandbox *sb;

	if (id == NULL || !is_key_hash(tk) || status < 0 || shape == NULL) {
		snprintf(why, cap, "sandbox record needs id, tenant_hash, a known status and shape");
		return NULL;
	}
	if (!sandbox_id_ok(id)) {
		snprintf(why, cap, "sandbox record: id \"%.48s\" is not 1..%d of [A-Za-z0-9_-]", id,
			 MOCK_ID_MAX - 1);
		return NULL;
	}
	sb = calloc(1, sizeof(*sb));
	if (sb == NULL)
		goto out_oom;
	sb->tenant = mock_tenant_by_hash(m, tk, true);
	sb->due_ms = -1;
	copy_str(sb->id, sizeof(sb->id), id);
	sb->status = (mock_status)status;
	sb->shape = shape;
	sandbox_fields_from(sb, o);
	sb->egress.is_null = true;
	if (eg != NULL && !cJSON_IsNull(eg) &&
	    sbx_egress_list_from_json(eg, 1u << 20, &sb->egress, &ee) != 0) {
		snprintf(why, cap, "sandbox %s: stored egress list is invalid: %s", id, ee.message);
		model_sandbox_free(sb);
		return NULL;
	}
	if (sandbox_arrays_bad(o, why, cap)) {
		model_sandbox_free(sb);
		return NULL;
	}
	sb->envs = rj(o, "envs", false);
	sb->ssh_pubkeys = rj(o, "ssh_pubkeys", true);
	sb->disks = rj(o, "disks", true);
	sb->networks = rj(o, "networks", true);
	if (sb->tenant == NULL || sb->envs == NULL || sb->ssh_pubkeys == NULL || sb->disks == NULL ||
	    sb->networks == NULL)
		goto out_free_sb;
	return sb;

out_free_sb:
	model_sandbox_free(sb);
out_oom:
	snprintf(why, cap, "out of memory");
	return NULL;
}

/* A later record of the same sandbox: sb takes old's place in every index
 * and old is freed (at start nothing else holds it). */
static int sandbox_replace(mock_model *m, mock_sandbox *old, mock_sandbox *sb)
{
	int rc = 0;

	for (size_t i = 0; i < m->nsbx; i++) {
		if (m->sbx[i] == old)
			m->sbx[i] = sb;
	}
	for (size_t i = 0; i < m->nlive; i++) {
		if (m->live[i] == old)
			m->live[i] = sb;
	}
	model_by_id_put(m, sb); /* same id, same slot: cannot fail */
	if (old->status == ST_DESTROYED && sb->status != ST_DESTROYED &&
	    !model_sandbox_array_push(&m->live, &m->nlive, &m->caplive, sb))
		rc = -1; /* sb is in sbx: the model frees it */
	model_sandbox_free(old);
	return rc;
}

/* Holds its address: not destroyed or failed (those never come back). */
static bool holds_ip(const mock_sandbox *sb)
{
	return sb->ip[0] != '\0' && sb->status != ST_DESTROYED && sb->status != ST_FAILED;
}

/* Another sandbox that holds sb's address (two guests answering one IP:
 * by-ip lookups and egress rules would pick either), or NULL. */
static const mock_sandbox *ip_owner(const mock_model *m, const mock_sandbox *sb)
{
	if (!holds_ip(sb))
		return NULL;
	for (size_t i = 0; i < m->nsbx; i++) {
		if (holds_ip(m->sbx[i]) && strcmp(m->sbx[i]->id, sb->id) != 0 &&
		    strcmp(m->sbx[i]->ip, sb->ip) == 0)
			return m->sbx[i];
	}
	return NULL;
}

int mock_sandbox_restore(mock_model *m, const cJSON *o, char *why, size_t cap)
{
	mock_sandbox *sb = sandbox_from_record(m, o, why, cap);
	const mock_sandbox *other;
	mock_sandbox *old;

	if (sb == NULL)
		return -1;
	other = ip_owner(m, sb);
	if (other != NULL) {
		snprintf(why, cap, "sandbox %s: ip %s is sandbox %s's", sb->id, sb->ip, other->id);
		model_sandbox_free(sb);
		return -1;
	}
	old = mock_sandbox_find_any(m, sb->id);
	if (old != NULL) {
		if (sandbox_replace(m, old, sb) != 0)
			goto out_oom;
		return 0;
	}
	if (!model_sandbox_add(m, sb)) {
		model_sandbox_free(sb);
		goto out_oom;
	}
	return 0;

out_oom:
	snprintf(why, cap, "out of memory");
	return -1;
}

/* The ip_next count behind an address sandbox_alloc handed out
 * (10.<200 + high>.<mid>.<low>), 0 for any other address. */
static uint32_t ip_index(const char *ip)
{
	char *end = NULL;
	const char *p = ip;
	unsigned long part[4];

	for (int i = 0; i < 4; i++) {
		part[i] = strtoul(p, &end, 10);
		if (end == p || (i < 3 && *end != '.'))
			return 0;
		p = end + 1;
	}
	if (part[1] < 200)
		return 0;
	return (uint32_t)(((part[1] - 200) << 16) | (part[2] << 8) | part[3]);
}

void mock_model_after_restore(mock_model *m)
{
	int64_t now = mock_now(m);

	for (size_t i = 0; i < m->nsbx; i++) {
		mock_sandbox *sb = m->sbx[i];
		uint32_t n = ip_index(sb->ip);
		unsigned host = model_host_number(sb->host_id);

		if (n >= m->ip_next)
			m->ip_next = n + 1;
		/* the active host is the newest one any sandbox was on */
		if (host > m->hosts_dead + 1)
			m->hosts_dead = host - 1;
		sb->due_ms = -1;
		sb->last_active_ms = now;
		switch (sb->status) {
		case ST_RUNNING:
		case ST_PAUSING:
		case ST_RESUMING:
		case ST_FORKING:
			sb->status = ST_PAUSED;
			sb->paused_ms = now;
			break;
		case ST_CREATING:
			sb->status = ST_FAILED;
			break;
		case ST_DESTROYING:
			if (!sb->destroy_stuck)
				model_sandbox_set_destroyed(m, sb);
			break;
		default:
			break;
		}
	}
	for (mock_tenant *t = m->tenants; t != NULL; t = t->next)
		note_user_id(m, t->user_id);
	m->next_due_ms = INT64_MIN;
}

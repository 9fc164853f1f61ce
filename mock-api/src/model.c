/* model: tenants, sandboxes, lifecycle, caps, clock; see model.h.
 * Never does I/O beyond reading the clock and never knows about HTTP. */
#include "model.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

const mock_shape mock_shapes[] = {
	{"s-0.25vcpu-512mb", 1, 512, 10240, 25},
	{"s-0.5vcpu-1gb", 1, 1024, 10240, 50},
	{"s-1vcpu-256mb", 1, 256, 10240, 0},
	{"s-1vcpu-1gb", 1, 1024, 10240, 0},
	{"s-1vcpu-2gb", 1, 2048, 10240, 0},
	{"s-2vcpu-2gb", 2, 2048, 10240, 0},
	{"s-2vcpu-4gb", 2, 4096, 10240, 0},
	{"s-4vcpu-4gb", 4, 4096, 10240, 0},
	{"s-4vcpu-8gb", 4, 8192, 10240, 0},
	{"s-8vcpu-8gb", 8, 8192, 10240, 0},
	{"s-8vcpu-16gb", 8, 16384, 10240, 0},
};
const size_t mock_shape_count = sizeof(mock_shapes) / sizeof(mock_shapes[0]);

const mock_rootfs mock_rootfses[] = {
	{"devbox:1", "Debian with common developer tools (default)", false, NULL},
	{"ubuntu:24.04", "Ubuntu 24.04 base", false, NULL},
	{"python:3.12", "Python 3.12 on Debian", false, NULL},
	{"node:22", "Node.js 22 on Debian", false, NULL},
	{"devbox:0", "Previous devbox image", true, "devbox:1"},
};
const size_t mock_rootfs_count = sizeof(mock_rootfses) / sizeof(mock_rootfses[0]);

static const char *const status_names[ST__COUNT] = {
	"creating", "running", "pausing", "paused", "resuming",
	"forking", "error", "destroying", "destroyed", "failed",
};

const char *mock_status_name(mock_status st)
{
	if ((int)st < 0 || st >= ST__COUNT)
		return "unknown";
	return status_names[st];
}

int mock_status_parse(const char *name)
{
	for (int i = 0; i < ST__COUNT; i++) {
		if (strcmp(name, status_names[i]) == 0)
			return i;
	}
	return -1;
}

bool mock_status_terminal(mock_status st)
{
	return st == ST_DESTROYED || st == ST_FAILED;
}

void mock_err_set(mock_err *e, int status, const char *code, const char *field,
		  const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return;
	e->status = status;
	snprintf(e->code, sizeof(e->code), "%s", code != NULL ? code : "");
	snprintf(e->field, sizeof(e->field), "%s", field != NULL ? field : "error");
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}

const mock_shape *mock_shape_find(const char *id)
{
	for (size_t i = 0; i < mock_shape_count; i++) {
		if (strcmp(mock_shapes[i].id, id) == 0)
			return &mock_shapes[i];
	}
	return NULL;
}

static bool rootfs_known(const char *name)
{
	for (size_t i = 0; i < mock_rootfs_count; i++) {
		if (strcmp(mock_rootfses[i].name, name) == 0)
			return true;
	}
	return false;
}

/* ---- clock and ids ---- */

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t mock_now(const mock_model *m)
{
	return mono_ms() - m->start_mono_ms + m->clock_offset_ms;
}

void mock_advance(mock_model *m, int64_t ms)
{
	if (ms > 0)
		m->clock_offset_ms += ms;
}

void mock_rfc3339(const mock_model *m, int64_t clock_ms, char *buf, size_t cap)
{
	int64_t w = m->start_wall_ms + clock_ms;
	time_t secs = (time_t)(w / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(w % 1000));
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void mock_new_id(mock_model *m, const char *prefix, char *buf, size_t cap)
{
	static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	char ulid[27];
	uint64_t t = (uint64_t)(m->start_wall_ms + mock_now(m));
	uint64_t r1 = splitmix64(&m->id_counter);
	uint64_t r2 = splitmix64(&m->id_counter);

	/* 10 chars of time (50 bits, top 2 zero), 16 chars of randomness. */
	for (int i = 9; i >= 0; i--) {
		ulid[i] = b32[t & 31];
		t >>= 5;
	}
	for (int i = 0; i < 16; i++) {
		uint64_t *src = i < 12 ? &r1 : &r2;
		ulid[10 + i] = b32[*src & 31];
		*src >>= 5;
	}
	ulid[26] = '\0';
	snprintf(buf, cap, "%s%s", prefix, ulid);
}

/* ---- lifecycle timing ---- */

int64_t mock_timing_ms(const mock_model *m, const char *what)
{
	static const struct {
		const char *what;
		int64_t ms;
	} realistic[] = {
		{"create", 210}, {"pause", 1400}, {"resume", 700},
		{"fork", 700}, {"destroy", 300}, {"cold_start", 12000},
		{"template_pending", 2000}, {"template_build", 8000},
	};
	double s = m->set.timing_scale;

	if (s <= 0)
		return 0;
	for (size_t i = 0; i < sizeof(realistic) / sizeof(realistic[0]); i++) {
		if (strcmp(realistic[i].what, what) == 0)
			return (int64_t)((double)realistic[i].ms * s);
	}
	return 0;
}

/* ---- model ---- */

mock_model *mock_model_new(const mock_settings *set)
{
	mock_model *m = calloc(1, sizeof(*m));
	uint64_t seed = 0;

	if (m == NULL)
		return NULL;
	if (pthread_mutex_init(&m->lock, NULL) != 0) {
		free(m);
		return NULL;
	}
	m->set = *set;
	m->start_mono_ms = mono_ms();
	m->start_wall_ms = wall_ms();
	m->next_due_ms = INT64_MAX;
	m->ip_next = 2;
	if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
		seed = (uint64_t)m->start_wall_ms;
	m->id_counter = seed;
	return m;
}

static void sandbox_free(mock_sandbox *sb)
{
	sbx_egress_list_free(&sb->egress);
	cJSON_Delete(sb->envs);
	cJSON_Delete(sb->ssh_pubkeys);
	cJSON_Delete(sb->disks);
	cJSON_Delete(sb->networks);
	free(sb);
}

static void tenants_free(mock_tenant *t)
{
	while (t != NULL) {
		mock_tenant *next = t->next;

		free(t->key);
		cJSON_Delete(t->networks);
		cJSON_Delete(t->disks);
		cJSON_Delete(t->templates);
		free(t);
		t = next;
	}
}

/* Appends sb to a growable array of sandbox pointers (doubling, from 64). */
static bool sandbox_array_push(mock_sandbox ***arr, size_t *n, size_t *cap, mock_sandbox *sb)
{
	if (*n == *cap) {
		size_t grown = *cap == 0 ? 64 : *cap * 2;
		mock_sandbox **a = realloc(*arr, grown * sizeof(*a));

		if (a == NULL)
			return false;
		*arr = a;
		*cap = grown;
	}
	(*arr)[(*n)++] = sb;
	return true;
}

static bool grave_push(mock_model *m, mock_sandbox *sb)
{
	return sandbox_array_push(&m->grave, &m->ngrave, &m->capgrave, sb);
}

/* ---- indexes (see mock_model) ---- */

static size_t id_slot(const char *id, size_t cap)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)id; *p != '\0'; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return (size_t)h & (cap - 1);
}

/* Maps sb->id to sb, replacing an entry with the same id. */
static bool by_id_put(mock_model *m, mock_sandbox *sb)
{
	size_t i;

	if ((m->by_id_n + 1) * 2 > m->by_id_cap) {
		size_t cap = m->by_id_cap == 0 ? 1024 : m->by_id_cap * 2;
		mock_sandbox **t = calloc(cap, sizeof(*t));

		if (t == NULL)
			return false;
		for (size_t k = 0; k < m->by_id_cap; k++) {
			if (m->by_id[k] == NULL)
				continue;
			for (i = id_slot(m->by_id[k]->id, cap); t[i] != NULL; i = (i + 1) & (cap - 1))
				;
			t[i] = m->by_id[k];
		}
		free(m->by_id);
		m->by_id = t;
		m->by_id_cap = cap;
	}
	for (i = id_slot(sb->id, m->by_id_cap); m->by_id[i] != NULL; i = (i + 1) & (m->by_id_cap - 1)) {
		if (strcmp(m->by_id[i]->id, sb->id) == 0) {
			m->by_id[i] = sb;
			return true;
		}
	}
	m->by_id[i] = sb;
	m->by_id_n++;
	return true;
}

static void indexes_clear(mock_model *m)
{
	if (m->by_id != NULL)
		memset(m->by_id, 0, m->by_id_cap * sizeof(*m->by_id));
	m->by_id_n = 0;
	m->nlive = 0;
}

/* Drops destroyed sandboxes from the live index (they stay in sbx). */
static void live_compact(mock_model *m)
{
	size_t j = 0;

	for (size_t i = 0; i < m->nlive; i++) {
		if (m->live[i]->status != ST_DESTROYED)
			m->live[j++] = m->live[i];
	}
	m->nlive = j;
}

void mock_model_reset(mock_model *m)
{
	for (size_t i = 0; i < m->nsbx; i++) {
		mock_sandbox *sb = m->sbx[i];

		sb->tenant = NULL;
		if (!grave_push(m, sb))
			sandbox_free(sb); /* out of memory: nothing in flight can be saved */
	}
	m->nsbx = 0;
	indexes_clear(m);
	/* In-flight requests may still hold a tenant pointer: keep them. */
	while (m->tenants != NULL) {
		mock_tenant *t = m->tenants;

		m->tenants = t->next;
		t->next = m->dead_tenants;
		m->dead_tenants = t;
	}
	m->next_due_ms = INT64_MAX;
	m->not_ready_until_ms = 0;
	m->ip_next = 2;
	m->hosts_dead = 0;
}

void mock_model_free(mock_model *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->nsbx; i++)
		sandbox_free(m->sbx[i]);
	for (size_t i = 0; i < m->ngrave; i++)
		sandbox_free(m->grave[i]);
	free(m->sbx);
	free(m->grave);
	free(m->by_id);
	free(m->live);
	tenants_free(m->tenants);
	tenants_free(m->dead_tenants);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* ---- tenants ---- */

mock_tenant *mock_tenant_add(mock_model *m, const char *key)
{
	mock_tenant *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->key = strdup(key);
	t->networks = cJSON_CreateArray();
	t->disks = cJSON_CreateArray();
	t->templates = cJSON_CreateArray();
	if (t->key == NULL || t->networks == NULL || t->disks == NULL || t->templates == NULL) {
		t->next = NULL;
		tenants_free(t);
		return NULL;
	}
	t->cap = -1;
	t->credit = -1;
	m->tenant_counter++;
	snprintf(t->user_id, sizeof(t->user_id), "usr_mock%04u", m->tenant_counter);
	t->next = m->tenants;
	m->tenants = t;
	return t;
}

mock_tenant *mock_tenant_get(mock_model *m, const char *key, bool create)
{
	for (mock_tenant *t = m->tenants; t != NULL; t = t->next) {
		if (strcmp(t->key, key) == 0)
			return t;
	}
	if (!create)
		return NULL;
	return mock_tenant_add(m, key);
}

unsigned mock_tenant_cap(const mock_model *m, const mock_tenant *t)
{
	return t->cap >= 0 ? (unsigned)t->cap : m->set.sandbox_cap;
}

bool mock_tenant_credit(const mock_model *m, const mock_tenant *t)
{
	if (!m->set.credit)
		return false;
	return t->credit != 0;
}

unsigned mock_tenant_live_count(const mock_model *m, const mock_tenant *t)
{
	unsigned n = 0;

	for (size_t i = 0; i < m->nlive; i++) {
		const mock_sandbox *sb = m->live[i];

		if (sb->tenant == t && !mock_status_terminal(sb->status))
			n++;
	}
	return n;
}

/* ---- sandboxes ---- */

mock_sandbox *mock_sandbox_find_any(mock_model *m, const char *id)
{
	if (m->by_id_cap == 0)
		return NULL;
	for (size_t i = id_slot(id, m->by_id_cap); m->by_id[i] != NULL; i = (i + 1) & (m->by_id_cap - 1)) {
		if (strcmp(m->by_id[i]->id, id) == 0)
			return m->by_id[i];
	}
	return NULL;
}

mock_sandbox *mock_sandbox_find(mock_model *m, const mock_tenant *t, const char *id)
{
	mock_sandbox *sb = mock_sandbox_find_any(m, id);

	if (sb == NULL || sb->tenant != t)
		return NULL;
	return sb;
}

mock_sandbox *mock_sandbox_find_ip(mock_model *m, const mock_tenant *t, const char *ip)
{
	for (size_t i = m->nlive; i-- > 0;) {
		mock_sandbox *sb = m->live[i];

		if (sb->tenant == t && strcmp(sb->ip, ip) == 0 && !mock_status_terminal(sb->status))
			return sb;
	}
	return NULL;
}

/* N of "host-local-N", 0 for any other name. */
static unsigned host_number(const char *host_id)
{
	char *end = NULL;
	unsigned long n;

	if (strncmp(host_id, "host-local-", 11) != 0 || host_id[11] < '1' || host_id[11] > '9')
		return 0;
	n = strtoul(host_id + 11, &end, 10);
	return *end == '\0' && n <= 1000000 ? (unsigned)n : 0;
}

void mock_active_host(const mock_model *m, char *buf, size_t cap)
{
	snprintf(buf, cap, "host-local-%u", m->hosts_dead + 1);
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
		total += vlen + strlen(it->string);
		n++;
	}
	if (n > MOCK_ENVS_MAX) {
		mock_err_set(e, 400, "INVALID_ENVS", "envs", "envs has %zu entries, over the limit of 64", n);
		return -1;
	}
	if (total > MOCK_ENVS_TOTAL_MAX) {
		mock_err_set(e, 400, "INVALID_ENVS", "envs", "envs total %zu bytes, over the 64 KiB limit",
			     total);
		return -1;
	}
	return 0;
}

int mock_validate_name(const char *name, mock_err *e)
{
	size_t len = strlen(name);

	if (len == 0) {
		mock_err_set(e, 400, "INVALID_NAME", "name", "name must not be empty");
		return -1;
	}
	if (len > MOCK_NAME_MAX) {
		mock_err_set(e, 400, "INVALID_NAME", "name",
			     "name is %zu characters, over the limit of 22", len);
		return -1;
	}
	for (const char *p = name; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if (!(isalnum(c) || c == '-' || c == '_' || c == '.')) {
			mock_err_set(e, 400, "INVALID_NAME", "name",
				     "name may contain letters, digits, '-', '_' and '.' only");
			return -1;
		}
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

	if (!mock_tenant_credit(m, t)) {
		mock_err_set(e, 402, "PAYMENT_REQUIRED", "error", "out of credit: top up to continue");
		return -1;
	}
	if (mock_tenant_live_count(m, t) >= cap) {
		mock_err_set(e, (int)m->set.cap_status, m->set.cap_code, "error",
			     "concurrent sandbox limit reached (%u); paused sandboxes count", cap);
		return -1;
	}
	return 0;
}

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

static bool sbx_push(mock_model *m, mock_sandbox *sb)
{
	if (!sandbox_array_push(&m->sbx, &m->nsbx, &m->capsbx, sb))
		return false;
	if ((sb->status != ST_DESTROYED && !sandbox_array_push(&m->live, &m->nlive, &m->caplive, sb)) ||
	    !by_id_put(m, sb)) {
		if (m->nlive > 0 && m->live[m->nlive - 1] == sb)
			m->nlive--;
		m->nsbx--;
		return false;
	}
	return true;
}

static mock_sandbox *sandbox_alloc(mock_model *m, mock_tenant *t)
{
	mock_sandbox *sb = calloc(1, sizeof(*sb));
	uint32_t n;

	if (sb == NULL)
		return NULL;
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
	if (sb->networks == NULL || sb->disks == NULL || sb->envs == NULL || sb->ssh_pubkeys == NULL) {
		sandbox_free(sb);
		return NULL;
	}
	return sb;
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
	if (req->rootfs != NULL && !rootfs_known(req->rootfs)) {
		mock_err_set(e, 400, "INVALID_ROOTFS", "rootfs",
			     "unknown rootfs \"%.64s\" (see GET /v1/rootfs)", req->rootfs);
		return -1;
	}
	if (req->region != NULL && strcmp(req->region, m->set.region) != 0) {
		mock_err_set(e, 400, "INVALID_REGION", "region",
			     "region \"%.64s\" is not served here (this control plane serves \"%s\")",
			     req->region, m->set.region);
		return -1;
	}
	if (req->name != NULL && mock_validate_name(req->name, e) != 0)
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
	if (req->host_id != NULL) {
		char active[40];
		unsigned n = host_number(req->host_id);

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
	if (req->name != NULL && name_taken(m, t, req->name)) {
		mock_err_set(e, 409, "NAME_TAKEN", "name",
			     "a sandbox named \"%s\" already exists", req->name);
		return -1;
	}
	return 0;
}

static int attach_networks(mock_sandbox *sb, mock_tenant *t, const cJSON *nets, mock_err *e)
{
	const cJSON *it;

	if (nets == NULL || cJSON_IsNull(nets))
		return 0;
	if (!cJSON_IsArray(nets)) {
		mock_err_set(e, 400, "INVALID_REQUEST", "networks", "networks must be an array of {id}");
		return -1;
	}
	/* Check every item before touching any network, so that a refused
	 * create leaves no member behind. */
	cJSON_ArrayForEach(it, nets) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");

		if (!cJSON_IsString(id)) {
			mock_err_set(e, 400, "INVALID_REQUEST", "networks", "networks items need a string id");
			return -1;
		}
		if (mock_network_find(t, id->valuestring) == NULL) {
			mock_err_set(e, 400, "UNKNOWN_NETWORK", "networks", "unknown network \"%.64s\"",
				     id->valuestring);
			return -1;
		}
	}
	cJSON_ArrayForEach(it, nets) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
		cJSON *net = mock_network_find(t, id->valuestring);

		cJSON_AddItemToArray(sb->networks,
				     cJSON_CreateString(cJSON_GetObjectItem(net, "id")->valuestring));
		cJSON_AddItemToArray(cJSON_GetObjectItem(net, "members"), cJSON_CreateString(sb->id));
	}
	return 0;
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
	sb = sandbox_alloc(m, t);
	if (sb == NULL)
		goto out_oom;
	sb->shape = shape;
	sb->vcpu = shape->vcpu;
	sb->mem_mib = shape->mem_mib;
	sb->disk_mib = req->disk_mib != 0 ? req->disk_mib : shape->default_disk_mib;
	snprintf(sb->rootfs, sizeof(sb->rootfs), "%s",
		 req->rootfs != NULL ? req->rootfs : MOCK_ROOTFS_DEFAULT);
	if (req->name != NULL)
		snprintf(sb->name, sizeof(sb->name), "%s", req->name);
	sb->ingress_enabled = req->ingress_enabled;
	sb->auto_pause_s = req->has_auto_pause ? req->auto_pause_s : 0;
	sb->status = ST_CREATING;
	if (sbx_egress_list_copy(&req->egress, &sb->egress) != 0)
		goto out_free;
	if (req->envs != NULL && cJSON_IsObject(req->envs)) {
		cJSON_Delete(sb->envs);
		sb->envs = cJSON_Duplicate(req->envs, true);
		if (sb->envs == NULL)
			goto out_free;
	}
	if (copy_ssh_keys(sb->ssh_pubkeys, req->ssh_pubkeys, "ssh_pubkeys", e) != 0)
		goto out_free_err;
	if (req->disks != NULL && cJSON_IsArray(req->disks)) {
		cJSON_Delete(sb->disks);
		sb->disks = cJSON_Duplicate(req->disks, true);
	}
	if (attach_networks(sb, t, req->networks, e) != 0)
		goto out_free_err;
	if (!sbx_push(m, sb))
		goto out_free;
	return sb;

out_free:
	sandbox_free(sb);
out_oom:
	mock_err_set(e, 500, "", "error", "out of memory");
	return NULL;
out_free_err:
	sandbox_free(sb);
	return NULL;
}

void mock_sandbox_set_running(mock_model *m, mock_sandbox *sb)
{
	sb->status = ST_RUNNING;
	sb->running_ms = mock_now(m);
	sb->spawn_ms = sb->running_ms - sb->created_ms;
	sb->last_active_ms = sb->running_ms;
	auto_pause_arm(m, sb);
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

int mock_sandbox_resume(mock_model *m, mock_sandbox *sb, mock_err *e)
{
	switch (sb->status) {
	case ST_RUNNING:
		return 200;
	case ST_RESUMING:
		return 202;
	case ST_PAUSED:
	case ST_ERROR:
		if (!mock_tenant_credit(m, sb->tenant)) {
			mock_err_set(e, 402, "PAYMENT_REQUIRED", "error", "out of credit: top up to continue");
			return -1;
		}
		sb->status = ST_RESUMING;
		schedule(m, sb, ST_RUNNING, mock_timing_ms(m, mock_resume_timing(sb)));
		return 202;
	default:
		mock_err_set(e, 409, "INVALID_STATE", "status", "cannot resume a sandbox that is %s",
			     mock_status_name(sb->status));
		return -1;
	}
}

static void set_destroyed(mock_model *m, mock_sandbox *sb)
{
	const cJSON *nid;

	sb->status = ST_DESTROYED;
	sb->destroyed_ms = mock_now(m);
	sb->due_ms = -1;
	/* Leave every network it was a member of. */
	cJSON_ArrayForEach(nid, sb->networks) {
		cJSON *net = sb->tenant != NULL ? mock_network_find(sb->tenant, nid->valuestring) : NULL;
		cJSON *members = net != NULL ? cJSON_GetObjectItem(net, "members") : NULL;
		int i = 0;
		const cJSON *mem;

		cJSON_ArrayForEach(mem, members) {
			if (strcmp(mem->valuestring, sb->id) == 0) {
				cJSON_DeleteItemFromArray(members, i);
				break;
			}
			i++;
		}
	}
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
		set_destroyed(m, sb);
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
		set_destroyed(m, sb);
		*now_destroyed = true;
		return 200;
	}
	sb->status = ST_DESTROYING;
	schedule(m, sb, ST_DESTROYED, ms);
	return 200;
}

mock_sandbox *mock_sandbox_fork(mock_model *m, mock_sandbox *src, const mock_fork_req *req,
				mock_err *e)
{
	mock_sandbox *sb;

	if (src->status != ST_PAUSED && src->status != ST_PAUSING) {
		mock_err_set(e, 409, "INVALID_STATE", "status",
			     "fork needs a paused sandbox; this one is %s (pause it first)",
			     mock_status_name(src->status));
		return NULL;
	}
	if (mock_validate_envs(req->envs, e) != 0)
		return NULL;
	if (req->bw_quota < 0 && req->bw_quota != -1) {
		mock_err_set(e, 400, "INVALID_REQUEST", "bandwidth_quota_bytes",
			     "bandwidth_quota_bytes must be -1 (unmetered) or positive");
		return NULL;
	}
	if (check_cap_and_credit(m, src->tenant, e) != 0)
		return NULL;
	sb = sandbox_alloc(m, src->tenant);
	if (sb == NULL)
		goto out_oom;
	sb->shape = src->shape;
	sb->vcpu = src->vcpu;
	sb->mem_mib = src->mem_mib;
	sb->disk_mib = src->disk_mib;
	snprintf(sb->rootfs, sizeof(sb->rootfs), "%s", src->rootfs);
	snprintf(sb->forked_from, sizeof(sb->forked_from), "%s", src->id);
	sb->ingress_enabled = req->has_ingress ? req->ingress_enabled : src->ingress_enabled;
	sb->auto_pause_s = src->auto_pause_s;
	if (req->bw_quota != 0)
		sb->bw_quota = req->bw_quota;
	if (sbx_egress_list_copy(req->has_egress ? &req->egress : &src->egress, &sb->egress) != 0)
		goto out_free;
	cJSON_Delete(sb->envs);
	sb->envs = cJSON_Duplicate(src->envs, true);
	if (sb->envs == NULL)
		goto out_free;
	if (req->envs != NULL && cJSON_IsObject(req->envs)) {
		const cJSON *it;

		cJSON_ArrayForEach(it, req->envs) {
			cJSON_DeleteItemFromObjectCaseSensitive(sb->envs, it->string);
			cJSON_AddItemToObject(sb->envs, it->string, cJSON_CreateString(it->valuestring));
		}
	}
	cJSON_Delete(sb->ssh_pubkeys);
	sb->ssh_pubkeys = cJSON_Duplicate(src->ssh_pubkeys, true);
	if (sb->ssh_pubkeys == NULL)
		goto out_free;
	if (copy_ssh_keys(sb->ssh_pubkeys, req->ssh_pubkeys, "ssh_pubkeys", e) != 0) {
		sandbox_free(sb);
		return NULL;
	}
	if (req->start_paused) {
		sb->status = ST_PAUSED;
		sb->paused_ms = mock_now(m);
		sb->running_ms = sb->paused_ms;
	} else {
		sb->status = ST_FORKING;
		schedule(m, sb, ST_RUNNING, mock_timing_ms(m, "fork"));
	}
	if (!sbx_push(m, sb))
		goto out_free;
	return sb;

out_free:
	sandbox_free(sb);
out_oom:
	mock_err_set(e, 500, "", "error", "out of memory");
	return NULL;
}

const char *mock_resume_timing(const mock_sandbox *sb)
{
	return sb->cold_start ? "cold_start" : "resume";
}

bool mock_ready(const mock_model *m)
{
	return m->set.ready && mock_now(m) >= m->not_ready_until_ms;
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
		set_destroyed(m, sb);
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

	live_compact(m);
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

static void add_ingress_template(cJSON *o, const mock_sandbox *sb)
{
	char buf[128];

	if (!sb->ingress_enabled)
		return;
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
	add_ingress_template(o, sb);
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

	(void)m;
	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "id", sb->id);
	cJSON_AddStringToObject(o, "name", sb->name);
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
	add_ingress_template(o, sb);
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

cJSON *mock_whoami_view(const mock_model *m, const mock_tenant *t)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *stats;
	unsigned running = 0, paused = 0, other = 0;

	if (o == NULL)
		return NULL;
	for (size_t i = 0; i < m->nlive; i++) {
		const mock_sandbox *sb = m->live[i];

		if (sb->tenant != t || sb->status == ST_DESTROYED)
			continue;
		if (sb->status == ST_RUNNING)
			running++;
		else if (sb->status == ST_PAUSED)
			paused++;
		else
			other++;
	}
	cJSON_AddStringToObject(o, "user_id", t->user_id);
	stats = cJSON_AddObjectToObject(o, "stats");
	cJSON_AddNumberToObject(stats, "running", running);
	cJSON_AddNumberToObject(stats, "paused", paused);
	cJSON_AddNumberToObject(stats, "other", other);
	cJSON_AddNumberToObject(stats, "total", running + paused + other);
	return o;
}

cJSON *mock_shape_view(const mock_shape *s)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "id", s->id);
	cJSON_AddNumberToObject(o, "vcpu", s->vcpu);
	cJSON_AddNumberToObject(o, "mem_mib", s->mem_mib);
	cJSON_AddNumberToObject(o, "default_disk_mib", s->default_disk_mib);
	if (s->cpu_quota_pct != 0)
		cJSON_AddNumberToObject(o, "cpu_quota_pct", s->cpu_quota_pct);
	return o;
}

cJSON *mock_rootfs_view(void)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *names, *entries;

	if (o == NULL)
		return NULL;
	names = cJSON_AddArrayToObject(o, "rootfs");
	cJSON_AddStringToObject(o, "default", MOCK_ROOTFS_DEFAULT);
	entries = cJSON_AddArrayToObject(o, "entries");
	for (size_t i = 0; i < mock_rootfs_count; i++) {
		const mock_rootfs *r = &mock_rootfses[i];
		cJSON *e = cJSON_CreateObject();

		cJSON_AddItemToArray(names, cJSON_CreateString(r->name));
		cJSON_AddStringToObject(e, "name", r->name);
		cJSON_AddStringToObject(e, "description", r->description);
		if (r->deprecated) {
			cJSON_AddBoolToObject(e, "deprecated", true);
			cJSON_AddStringToObject(e, "successor", r->successor);
		}
		cJSON_AddItemToArray(entries, e);
	}
	return o;
}

/* ---- networks, disks, templates ---- */

static cJSON *find_by_id_or_name(cJSON *arr, const char *id_or_name)
{
	cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		const cJSON *id = cJSON_GetObjectItem(it, "id");
		const cJSON *name = cJSON_GetObjectItem(it, "name");

		if ((cJSON_IsString(id) && strcmp(id->valuestring, id_or_name) == 0) ||
		    (cJSON_IsString(name) && strcmp(name->valuestring, id_or_name) == 0))
			return it;
	}
	return NULL;
}

static int index_of(cJSON *arr, const cJSON *item)
{
	int i = 0;
	const cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		if (it == item)
			return i;
		i++;
	}
	return -1;
}

cJSON *mock_network_find(mock_tenant *t, const char *id_or_name)
{
	return find_by_id_or_name(t->networks, id_or_name);
}

cJSON *mock_network_create(mock_model *m, mock_tenant *t, const char *name, mock_err *e)
{
	cJSON *net;
	char id[MOCK_ID_MAX], ts[40];

	if (mock_validate_name(name, e) != 0)
		return NULL;
	if (!mock_tenant_credit(m, t)) {
		mock_err_set(e, 402, "PAYMENT_REQUIRED", "error", "out of credit: top up to continue");
		return NULL;
	}
	if (find_by_id_or_name(t->networks, name) != NULL) {
		mock_err_set(e, 409, "NAME_TAKEN", "name", "a network named \"%s\" already exists", name);
		return NULL;
	}
	if (cJSON_GetArraySize(t->networks) >= MOCK_NETWORKS_PER_KEY) {
		mock_err_set(e, 403, "QUOTA_EXCEEDED", "error", "network limit reached (%d per key)",
			     MOCK_NETWORKS_PER_KEY);
		return NULL;
	}
	net = cJSON_CreateObject();
	if (net == NULL) {
		mock_err_set(e, 500, "", "error", "out of memory");
		return NULL;
	}
	mock_new_id(m, "net-", id, sizeof(id));
	mock_rfc3339(m, mock_now(m), ts, sizeof(ts));
	cJSON_AddStringToObject(net, "id", id);
	cJSON_AddStringToObject(net, "name", name);
	cJSON_AddStringToObject(net, "created_at", ts);
	cJSON_AddArrayToObject(net, "members");
	cJSON_AddItemToArray(t->networks, net);
	return net;
}

int mock_network_delete(mock_model *m, mock_tenant *t, const char *id_or_name, mock_err *e)
{
	cJSON *net = mock_network_find(t, id_or_name);

	(void)m;
	if (net == NULL) {
		mock_err_set(e, 404, "NOT_FOUND", "error", "network not found");
		return -1;
	}
	if (cJSON_GetArraySize(cJSON_GetObjectItem(net, "members")) > 0) {
		mock_err_set(e, 409, "IN_USE", "error", "network still has members; detach them first");
		return -1;
	}
	cJSON_DeleteItemFromArray(t->networks, index_of(t->networks, net));
	return 0;
}

cJSON *mock_disk_find(mock_tenant *t, const char *id_or_name)
{
	return find_by_id_or_name(t->disks, id_or_name);
}

static const char *str_field(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

cJSON *mock_disk_create(mock_model *m, mock_tenant *t, const cJSON *body, mock_err *e)
{
	const char *name = str_field(body, "name");
	const char *kind = str_field(body, "kind");
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(body, "config");
	const cJSON *cred = cJSON_GetObjectItemCaseSensitive(body, "credentials");
	cJSON *disk, *cfg;
	char id[MOCK_ID_MAX], ts[40];

	if (name == NULL) {
		mock_err_set(e, 400, "INVALID_REQUEST", "name", "name is required (string)");
		return NULL;
	}
	if (mock_validate_name(name, e) != 0)
		return NULL;
	if (kind == NULL || strcmp(kind, "s3") != 0) {
		mock_err_set(e, 400, "INVALID_REQUEST", "kind", "kind must be \"s3\"");
		return NULL;
	}
	if (!cJSON_IsObject(config) || str_field(config, "bucket") == NULL ||
	    str_field(config, "endpoint") == NULL) {
		mock_err_set(e, 400, "INVALID_REQUEST", "config",
			     "config needs string fields bucket and endpoint");
		return NULL;
	}
	if (!cJSON_IsObject(cred) || str_field(cred, "access_key") == NULL ||
	    str_field(cred, "secret_key") == NULL || str_field(cred, "access_key")[0] == '\0' ||
	    str_field(cred, "secret_key")[0] == '\0') {
		mock_err_set(e, 400, "INVALID_REQUEST", "credentials",
			     "credentials needs non-empty access_key and secret_key");
		return NULL;
	}
	if (!mock_tenant_credit(m, t)) {
		mock_err_set(e, 402, "PAYMENT_REQUIRED", "error", "out of credit: top up to continue");
		return NULL;
	}
	if (find_by_id_or_name(t->disks, name) != NULL) {
		mock_err_set(e, 409, "NAME_TAKEN", "name", "a disk named \"%s\" already exists", name);
		return NULL;
	}
	disk = cJSON_CreateObject();
	mock_new_id(m, "disk_", id, sizeof(id));
	mock_rfc3339(m, mock_now(m), ts, sizeof(ts));
	cJSON_AddStringToObject(disk, "id", id);
	cJSON_AddStringToObject(disk, "name", name);
	cJSON_AddStringToObject(disk, "kind", "s3");
	cfg = cJSON_AddObjectToObject(disk, "config");
	cJSON_AddStringToObject(cfg, "bucket", str_field(config, "bucket"));
	cJSON_AddStringToObject(cfg, "endpoint", str_field(config, "endpoint"));
	if (str_field(config, "region") != NULL)
		cJSON_AddStringToObject(cfg, "region", str_field(config, "region"));
	if (cJSON_IsBool(cJSON_GetObjectItem(config, "use_path_style")))
		cJSON_AddBoolToObject(cfg, "use_path_style",
				      cJSON_IsTrue(cJSON_GetObjectItem(config, "use_path_style")));
	cJSON_AddStringToObject(disk, "created_at", ts);
	cJSON_AddItemToObject(disk, "_credentials", cJSON_Duplicate(cred, true));
	cJSON_AddItemToArray(t->disks, disk);
	return disk;
}

int mock_disk_delete(mock_model *m, mock_tenant *t, const char *id_or_name, mock_err *e)
{
	cJSON *disk = mock_disk_find(t, id_or_name);
	const char *id;

	if (disk == NULL) {
		mock_err_set(e, 404, "NOT_FOUND", "error", "disk not found");
		return -1;
	}
	id = cJSON_GetObjectItem(disk, "id")->valuestring;
	for (size_t i = 0; i < m->nlive; i++) {
		const mock_sandbox *sb = m->live[i];
		const cJSON *att;

		if (sb->tenant != t || sb->status == ST_DESTROYED)
			continue;
		cJSON_ArrayForEach(att, sb->disks) {
			const char *did = str_field(att, "disk_id");

			if (did != NULL && strcmp(did, id) == 0) {
				mock_err_set(e, 409, "IN_USE", "error",
					     "disk is attached to sandbox %s; detach it first", sb->id);
				return -1;
			}
		}
	}
	cJSON_DeleteItemFromArray(t->disks, index_of(t->disks, disk));
	return 0;
}

cJSON *mock_disk_view(const cJSON *disk)
{
	cJSON *v = cJSON_Duplicate(disk, true);

	if (v != NULL)
		cJSON_DeleteItemFromObjectCaseSensitive(v, "_credentials");
	return v;
}

cJSON *mock_template_find(mock_tenant *t, const char *id)
{
	return find_by_id_or_name(t->templates, id);
}

cJSON *mock_template_create(mock_model *m, mock_tenant *t, const cJSON *body, mock_err *e)
{
	const char *name = str_field(body, "name");
	const char *dockerfile = str_field(body, "dockerfile");
	const char *base = str_field(body, "base");
	cJSON *tpl;
	char id[MOCK_ID_MAX], ts[40];

	if (name == NULL) {
		mock_err_set(e, 400, "INVALID_REQUEST", "name", "name is required (string)");
		return NULL;
	}
	if (mock_validate_name(name, e) != 0)
		return NULL;
	if (dockerfile == NULL || dockerfile[0] == '\0') {
		mock_err_set(e, 400, "INVALID_REQUEST", "dockerfile", "dockerfile is required (string)");
		return NULL;
	}
	if (base != NULL && !rootfs_known(base)) {
		mock_err_set(e, 400, "INVALID_ROOTFS", "base", "unknown base rootfs \"%.64s\"", base);
		return NULL;
	}
	if (!mock_tenant_credit(m, t)) {
		mock_err_set(e, 402, "PAYMENT_REQUIRED", "error", "out of credit: top up to continue");
		return NULL;
	}
	tpl = cJSON_CreateObject();
	mock_new_id(m, "tpl_", id, sizeof(id));
	mock_rfc3339(m, mock_now(m), ts, sizeof(ts));
	cJSON_AddStringToObject(tpl, "id", id);
	cJSON_AddStringToObject(tpl, "name", name);
	cJSON_AddStringToObject(tpl, "base", base != NULL ? base : MOCK_ROOTFS_DEFAULT);
	cJSON_AddStringToObject(tpl, "status", "pending");
	cJSON_AddNumberToObject(tpl, "ext4_size_bytes", 0);
	cJSON_AddStringToObject(tpl, "created_at", ts);
	cJSON_AddStringToObject(tpl, "dockerfile", dockerfile);
	cJSON_AddNumberToObject(tpl, "_created_ms", (double)mock_now(m));
	cJSON_AddItemToArray(t->templates, tpl);
	return tpl;
}

cJSON *mock_template_view(mock_model *m, cJSON *tpl)
{
	int64_t created = (int64_t)cJSON_GetObjectItem(tpl, "_created_ms")->valuedouble;
	int64_t age = mock_now(m) - created;
	int64_t pend = mock_timing_ms(m, "template_pending");
	int64_t build = mock_timing_ms(m, "template_build");
	const char *status = "ready";
	cJSON *v;

	if (age < pend)
		status = "pending";
	else if (age < pend + build)
		status = "building";
	cJSON_ReplaceItemInObject(tpl, "status", cJSON_CreateString(status));
	if (strcmp(status, "ready") == 0 && cJSON_GetObjectItem(tpl, "built_at") == NULL) {
		char ts[40];

		mock_rfc3339(m, created + pend + build, ts, sizeof(ts));
		cJSON_AddStringToObject(tpl, "built_at", ts);
		cJSON_ReplaceItemInObject(tpl, "ext4_size_bytes", cJSON_CreateNumber(536870912.0));
	}
	v = cJSON_Duplicate(tpl, true);
	if (v != NULL)
		cJSON_DeleteItemFromObjectCaseSensitive(v, "_created_ms");
	return v;
}

/* ---- durable state: dump and restore ---- */

cJSON *mock_tenant_dump(const mock_tenant *t)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "key", t->key);
	cJSON_AddStringToObject(o, "user_id", t->user_id);
	cJSON_AddNumberToObject(o, "cap", t->cap);
	cJSON_AddNumberToObject(o, "credit", t->credit);
	cJSON_AddItemToObject(o, "networks", cJSON_Duplicate(t->networks, true));
	cJSON_AddItemToObject(o, "disks", cJSON_Duplicate(t->disks, true));
	cJSON_AddItemToObject(o, "templates", cJSON_Duplicate(t->templates, true));
	return o;
}

cJSON *mock_sandbox_dump(const mock_sandbox *sb)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "id", sb->id);
	cJSON_AddStringToObject(o, "name", sb->name);
	cJSON_AddStringToObject(o, "tenant", sb->tenant != NULL ? sb->tenant->key : "");
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

static const char *rs(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

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

int mock_tenant_restore(mock_model *m, const cJSON *o, char *why, size_t cap)
{
	const char *key = rs(o, "key"), *uid = rs(o, "user_id");
	mock_tenant *t;

	if (key == NULL || key[0] == '\0') {
		snprintf(why, cap, "tenant record without a key");
		return -1;
	}
	t = mock_tenant_get(m, key, true);
	if (t == NULL) {
		snprintf(why, cap, "out of memory");
		return -1;
	}
	if (uid != NULL)
		snprintf(t->user_id, sizeof(t->user_id), "%s", uid);
	t->cap = RN_INT(o, "cap");
	t->credit = RN_INT(o, "credit");
	cJSON_Delete(t->networks);
	cJSON_Delete(t->disks);
	cJSON_Delete(t->templates);
	t->networks = rj(o, "networks", true);
	t->disks = rj(o, "disks", true);
	t->templates = rj(o, "templates", true);
	return 0;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src != NULL ? src : "");
}

int mock_sandbox_restore(mock_model *m, const cJSON *o, char *why, size_t cap)
{
	const char *id = rs(o, "id"), *tk = rs(o, "tenant"), *st = rs(o, "status");
	const mock_shape *shape = rs(o, "shape") != NULL ? mock_shape_find(rs(o, "shape")) : NULL;
	const cJSON *eg = cJSON_GetObjectItemCaseSensitive(o, "egress");
	mock_sandbox *sb, *old;
	sbx_egress_error ee;
	int status = st != NULL ? mock_status_parse(st) : -1;

	if (id == NULL || tk == NULL || status < 0 || shape == NULL || strlen(id) >= MOCK_ID_MAX) {
		snprintf(why, cap, "sandbox record needs id, tenant, a known status and shape");
		return -1;
	}
	sb = calloc(1, sizeof(*sb));
	if (sb == NULL)
		goto out_oom;
	sb->tenant = mock_tenant_get(m, tk, true);
	sb->due_ms = -1;
	copy_str(sb->id, sizeof(sb->id), id);
	copy_str(sb->name, sizeof(sb->name), rs(o, "name"));
	sb->status = (mock_status)status;
	sb->shape = shape;
	copy_str(sb->rootfs, sizeof(sb->rootfs), rs(o, "rootfs"));
	copy_str(sb->region, sizeof(sb->region), rs(o, "region"));
	sb->vcpu = RN_UINT(o, "vcpu");
	sb->mem_mib = RN_UINT(o, "mem_mib");
	sb->disk_mib = RN_UINT(o, "disk_mib");
	copy_str(sb->ip, sizeof(sb->ip), rs(o, "ip"));
	sb->created_ms = RN_I64(o, "created_ms");
	sb->running_ms = RN_I64(o, "running_ms");
	sb->paused_ms = RN_I64(o, "paused_ms");
	sb->resumed_ms = RN_I64(o, "resumed_ms");
	sb->destroyed_ms = RN_I64(o, "destroyed_ms");
	sb->spawn_ms = RN_I64(o, "spawn_ms");
	sb->auto_pause_s = RN_INT(o, "auto_pause_s");
	sb->ingress_enabled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ingress_enabled"));
	sb->egress.is_null = true;
	if (eg != NULL && !cJSON_IsNull(eg) &&
	    sbx_egress_list_from_json(eg, 1u << 20, &sb->egress, &ee) != 0) {
		snprintf(why, cap, "sandbox %s: stored egress list is invalid: %s", id, ee.message);
		sandbox_free(sb);
		return -1;
	}
	sb->envs = rj(o, "envs", false);
	sb->ssh_pubkeys = rj(o, "ssh_pubkeys", true);
	sb->disks = rj(o, "disks", true);
	sb->networks = rj(o, "networks", true);
	copy_str(sb->forked_from, sizeof(sb->forked_from), rs(o, "forked_from"));
	copy_str(sb->host_id, sizeof(sb->host_id), rs(o, "host_id"));
	sb->bw_quota = RN_I64(o, "bw_quota");
	sb->bw_used = RN_I64(o, "bw_used");
	sb->bw_ingress = RN_I64(o, "bw_ingress");
	sb->destroy_stuck = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "destroy_stuck"));
	sb->cold_start = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "cold_start"));
	if (sb->tenant == NULL || sb->envs == NULL || sb->ssh_pubkeys == NULL || sb->disks == NULL ||
	    sb->networks == NULL) {
		sandbox_free(sb);
		goto out_oom;
	}
	old = mock_sandbox_find_any(m, id);
	if (old != NULL) {
		for (size_t i = 0; i < m->nsbx; i++) {
			if (m->sbx[i] == old)
				m->sbx[i] = sb;
		}
		for (size_t i = 0; i < m->nlive; i++) {
			if (m->live[i] == old)
				m->live[i] = sb;
		}
		if (old->status == ST_DESTROYED && sb->status != ST_DESTROYED &&
		    !sandbox_array_push(&m->live, &m->nlive, &m->caplive, sb)) {
			sandbox_free(old);
			goto out_oom; /* sb is in sbx: the model frees it */
		}
		by_id_put(m, sb); /* same id, same slot: cannot fail */
		sandbox_free(old); /* at start nothing else holds it */
		return 0;
	}
	if (!sbx_push(m, sb)) {
		sandbox_free(sb);
		goto out_oom;
	}
	return 0;

out_oom:
	snprintf(why, cap, "out of memory");
	return -1;
}

void mock_model_restore_clock(mock_model *m, int64_t start_wall_ms)
{
	if (start_wall_ms <= 0 || start_wall_ms > m->start_wall_ms)
		return;
	m->clock_offset_ms = (wall_ms() - start_wall_ms) - (mono_ms() - m->start_mono_ms);
	m->start_wall_ms = start_wall_ms;
}

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
		unsigned host = host_number(sb->host_id);

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
				set_destroyed(m, sb);
			break;
		default:
			break;
		}
	}
	for (mock_tenant *t = m->tenants; t != NULL; t = t->next) {
		unsigned long k = strtoul(t->user_id + (strncmp(t->user_id, "usr_mock", 8) == 0 ? 8 : 0),
					  NULL, 10);

		if (k > m->tenant_counter)
			m->tenant_counter = (unsigned)k;
	}
	m->next_due_ms = INT64_MIN;
}

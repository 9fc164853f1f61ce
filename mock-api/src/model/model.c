/* model: the core of the mock's state model — the catalog (shapes, rootfs,
 * statuses), the virtual clock and ids, timing profiles, settings and the
 * fleet's hosts, tenants, and the sandbox storage with its indexes; plus the
 * small helpers every resource file shares (see model_internal.h).
 * Resources live beside it: model_sandbox.c, model_network.c, model_disk.c,
 * model_template.c; model_persist.c turns the state into JSON and back.
 *
 * Never does I/O beyond reading the clock and the id seed, never knows
 * about HTTP, and never calls up into a resource file (they call it). */
#include "model/model_internal.h"
#include "util/sha256.h"
#include "sbx/sys.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- catalog: shapes, rootfs, statuses, errors ---- */

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
	{"desktop:1", "Debian desktop for computer use: Xvfb, openbox, Chromium, noVNC", false, NULL},
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

bool model_rootfs_known(const char *name)
{
	for (size_t i = 0; i < mock_rootfs_count; i++) {
		if (strcmp(mock_rootfses[i].name, name) == 0)
			return true;
	}
	return false;
}

/* ---- clock and ids ---- */

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t mock_now(const mock_model *m)
{
	return sbx_mono_ms() - m->start_mono_ms + m->clock_offset_ms;
}

void mock_advance(mock_model *m, int64_t ms)
{
	if (ms > 0)
		m->clock_offset_ms += ms;
}

void mock_model_restore_clock(mock_model *m, int64_t start_wall_ms)
{
	if (start_wall_ms <= 0 || start_wall_ms > m->start_wall_ms)
		return;
	m->clock_offset_ms = (wall_ms() - start_wall_ms) - (sbx_mono_ms() - m->start_mono_ms);
	m->start_wall_ms = start_wall_ms;
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
	m->start_mono_ms = sbx_mono_ms();
	m->start_wall_ms = wall_ms();
	m->next_due_ms = INT64_MAX;
	m->ip_next = 2;
	if (sbx_random_bytes(&seed, sizeof(seed)) != 0)
		seed = (uint64_t)m->start_wall_ms; /* ids need not be secret */
	m->id_counter = seed;
	return m;
}

void model_sandbox_free(mock_sandbox *sb)
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

bool model_sandbox_array_push(mock_sandbox ***arr, size_t *n, size_t *cap, mock_sandbox *sb)
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
	return model_sandbox_array_push(&m->grave, &m->ngrave, &m->capgrave, sb);
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
bool model_by_id_put(mock_model *m, mock_sandbox *sb)
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
void model_live_compact(mock_model *m)
{
	size_t j = 0;

	for (size_t i = 0; i < m->nlive; i++) {
		if (m->live[i]->status != ST_DESTROYED)
			m->live[j++] = m->live[i];
	}
	m->nlive = j;
}

bool model_sandbox_add(mock_model *m, mock_sandbox *sb)
{
	if (!model_sandbox_array_push(&m->sbx, &m->nsbx, &m->capsbx, sb))
		return false;
	if ((sb->status != ST_DESTROYED && !model_sandbox_array_push(&m->live, &m->nlive, &m->caplive, sb)) ||
	    !model_by_id_put(m, sb)) {
		if (m->nlive > 0 && m->live[m->nlive - 1] == sb)
			m->nlive--;
		m->nsbx--;
		return false;
	}
	return true;
}

/* ---- retention of destroyed sandboxes (MOCK_DESTROYED_KEEP) ---- */

/* Nothing holds sb: no request has it busy and its guest was released. */
static bool sandbox_unheld(const mock_sandbox *sb)
{
	return sb->busy == 0 && sb->guest == NULL;
}

typedef struct dead_ref {
	mock_sandbox *sb;
	size_t pos; /* in sbx: creation order breaks ties */
} dead_ref;

/* By tenant, then the most recently destroyed first. */
static int dead_cmp(const void *a, const void *b)
{
	const dead_ref *x = a, *y = b;
	uintptr_t tx = (uintptr_t)x->sb->tenant, ty = (uintptr_t)y->sb->tenant;

	if (tx != ty)
		return tx < ty ? -1 : 1;
	if (x->sb->destroyed_ms != y->sb->destroyed_ms)
		return x->sb->destroyed_ms > y->sb->destroyed_ms ? -1 : 1;
	return x->pos > y->pos ? -1 : (x->pos < y->pos ? 1 : 0);
}

/* Puts every sandbox of sbx back into by_id (same capacity: cannot fail). */
static void by_id_rebuild(mock_model *m)
{
	if (m->by_id != NULL)
		memset(m->by_id, 0, m->by_id_cap * sizeof(*m->by_id));
	m->by_id_n = 0;
	for (size_t i = 0; i < m->nsbx; i++)
		model_by_id_put(m, m->sbx[i]);
}

/* Frees the graveyard's sandboxes that nothing holds any more. */
static void grave_sweep(mock_model *m)
{
	size_t j = 0;

	for (size_t i = 0; i < m->ngrave; i++) {
		if (sandbox_unheld(m->grave[i]))
			model_sandbox_free(m->grave[i]);
		else
			m->grave[j++] = m->grave[i];
	}
	m->ngrave = j;
}

/* Marks (NULL in sbx) the destroyed sandboxes past each tenant's
 * MOCK_DESTROYED_KEEP most recent ones that nothing holds, freeing them.
 * Returns how many. */
static size_t forget_old_destroyed(mock_model *m, dead_ref *refs, size_t n)
{
	size_t forgotten = 0, rank = 0;
	const mock_tenant *prev = NULL; /* the previous one's: it may be freed */

	qsort(refs, n, sizeof(*refs), dead_cmp);
	for (size_t i = 0; i < n; i++) {
		mock_sandbox *sb = refs[i].sb;

		rank = i > 0 && prev == sb->tenant ? rank + 1 : 0;
		prev = sb->tenant;
		if (rank < MOCK_DESTROYED_KEEP || !sandbox_unheld(sb))
			continue;
		m->sbx[refs[i].pos] = NULL;
		model_sandbox_free(sb);
		forgotten++;
	}
	return forgotten;
}

void model_trim_destroyed(mock_model *m)
{
	size_t ndead = m->nsbx - m->nlive, n = 0, j = 0;
	dead_ref *refs;

	if (ndead < m->trim_at)
		return;
	grave_sweep(m);
	/* amortised: the next pass once an eighth more (at least 256) died */
	m->trim_at = ndead + (ndead / 8 > 256 ? ndead / 8 : 256);
	if (ndead <= MOCK_DESTROYED_KEEP)
		return; /* no tenant can be over the bound */
	refs = malloc(ndead * sizeof(*refs));
	if (refs == NULL)
		return; /* out of memory: kept, tried again later */
	for (size_t i = 0; i < m->nsbx && n < ndead; i++) {
		if (m->sbx[i]->status == ST_DESTROYED)
			refs[n++] = (dead_ref){m->sbx[i], i};
	}
	if (forget_old_destroyed(m, refs, n) > 0) {
		for (size_t i = 0; i < m->nsbx; i++) {
			if (m->sbx[i] != NULL)
				m->sbx[j++] = m->sbx[i];
		}
		m->nsbx = j;
		by_id_rebuild(m);
		ndead = m->nsbx - m->nlive;
		m->trim_at = ndead + (ndead / 8 > 256 ? ndead / 8 : 256);
	}
	free(refs);
}

void mock_model_reset(mock_model *m)
{
	for (size_t i = 0; i < m->nsbx; i++) {
		mock_sandbox *sb = m->sbx[i];

		sb->tenant = NULL;
		if (sandbox_unheld(sb) || !grave_push(m, sb))
			model_sandbox_free(sb); /* out of memory: nothing in flight can be saved */
	}
	m->nsbx = 0;
	indexes_clear(m);
	m->trim_at = 0;
	/* In-flight requests may still hold a tenant pointer: keep them. */
	while (m->tenants != NULL) {
		mock_tenant *t = m->tenants;

		m->tenants = t->next;
		t->next = m->dead_tenants;
		m->dead_tenants = t;
	}
	m->dormant = 0;
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
		model_sandbox_free(m->sbx[i]);
	for (size_t i = 0; i < m->ngrave; i++)
		model_sandbox_free(m->grave[i]);
	free(m->sbx);
	free(m->grave);
	free(m->reap); /* emptied by the guest layer (mock_free_guests) */
	free(m->by_id);
	free(m->live);
	tenants_free(m->tenants);
	tenants_free(m->dead_tenants);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* ---- tenants ---- */

static void hash_key(const mock_model *m, mock_tenant *t)
{
	if (m->key_secret_set && t->key != NULL)
		mock_hmac_sha256_hex(m->key_secret, sizeof(m->key_secret), t->key, t->key_hash);
}

void mock_model_set_key_secret(mock_model *m, const uint8_t secret[32])
{
	memcpy(m->key_secret, secret, sizeof(m->key_secret));
	m->key_secret_set = true;
	for (mock_tenant *t = m->tenants; t != NULL; t = t->next)
		hash_key(m, t);
}

/* A new tenant with key, or without one (key NULL: restored from the log
 * under hash). */
static mock_tenant *tenant_new(mock_model *m, const char *key, const char *hash)
{
	mock_tenant *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->key = key != NULL ? strdup(key) : NULL;
	t->networks = cJSON_CreateArray();
	t->disks = cJSON_CreateArray();
	t->templates = cJSON_CreateArray();
	if ((key != NULL && t->key == NULL) || t->networks == NULL || t->disks == NULL ||
	    t->templates == NULL) {
		t->next = NULL;
		tenants_free(t);
		return NULL;
	}
	t->cap = -1;
	t->credit = -1;
	m->tenant_counter++;
	snprintf(t->user_id, sizeof(t->user_id), "usr_mock%04u", m->tenant_counter);
	if (key != NULL)
		hash_key(m, t);
	else
		snprintf(t->key_hash, sizeof(t->key_hash), "%s", hash);
	t->next = m->tenants;
	m->tenants = t;
	return t;
}

mock_tenant *mock_tenant_add(mock_model *m, const char *key)
{
	return tenant_new(m, key, NULL);
}

/* A tenant restored from the log whose hash is key's: it gets its key. */
static mock_tenant *tenant_claim(mock_model *m, const char *key)
{
	char hash[65];

	mock_hmac_sha256_hex(m->key_secret, sizeof(m->key_secret), key, hash);
	for (mock_tenant *t = m->tenants; t != NULL; t = t->next) {
		if (t->key != NULL || strcmp(t->key_hash, hash) != 0)
			continue;
		t->key = strdup(key);
		if (t->key == NULL)
			return NULL;
		m->dormant--;
		return t;
	}
	return NULL;
}

mock_tenant *mock_tenant_get(mock_model *m, const char *key, bool create)
{
	mock_tenant *t;

	for (t = m->tenants; t != NULL; t = t->next) {
		if (t->key != NULL && strcmp(t->key, key) == 0)
			return t;
	}
	/* hashing only while restored tenants wait for their keys */
	if (m->dormant > 0 && m->key_secret_set) {
		t = tenant_claim(m, key);
		if (t != NULL)
			return t;
	}
	if (!create)
		return NULL;
	return mock_tenant_add(m, key);
}

mock_tenant *mock_tenant_by_hash(mock_model *m, const char *hash, bool create)
{
	mock_tenant *t;

	for (t = m->tenants; t != NULL; t = t->next) {
		if (strcmp(t->key_hash, hash) == 0)
			return t;
	}
	if (!create)
		return NULL;
	t = tenant_new(m, NULL, hash);
	if (t != NULL)
		m->dormant++;
	return t;
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

int model_need_credit(const mock_model *m, const mock_tenant *t, mock_err *e)
{
	if (mock_tenant_credit(m, t))
		return 0;
	mock_err_set(e, 402, "PAYMENT_REQUIRED", "error", "out of credit: top up to continue");
	return -1;
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

/* ---- sandbox lookups (over the indexes) ---- */

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

/* ---- hosts and readiness ---- */

unsigned model_host_number(const char *host_id)
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

bool mock_ready(const mock_model *m)
{
	return m->set.ready && mock_now(m) >= m->not_ready_until_ms;
}

/* ---- shared by the resource files ---- */

void model_err_oom(mock_err *e)
{
	mock_err_set(e, 500, "", "error", "out of memory");
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

int mock_validate_disk_name(const char *name, mock_err *e)
{
	size_t len = strlen(name);
	bool ok = len >= 1 && len <= 63 && name[0] != '-';

	for (const char *p = name; ok && *p != '\0'; p++)
		ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-';
	if (!ok)
		mock_err_set(e, 400, "INVALID_NAME", "name",
			     "disk name must match ^[a-z0-9][a-z0-9-]{0,62}$ (lowercase letters, digits and "
			     "'-', 1-63 characters, not starting with '-')");
	return ok ? 0 : -1;
}

int mock_validate_res_name(const char *name, mock_err *e)
{
	size_t len = strlen(name);

	if (len == 0) {
		mock_err_set(e, 400, "INVALID_NAME", "name", "name must not be empty");
		return -1;
	}
	if (len > MOCK_RES_NAME_MAX) {
		mock_err_set(e, 400, "INVALID_NAME", "name",
			     "name is %zu bytes, over the mock's limit of %d (README \"Limits\")", len,
			     MOCK_RES_NAME_MAX);
		return -1;
	}
	for (const char *p = name; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '/' || c < 0x20 || c == 0x7f) {
			mock_err_set(e, 400, "INVALID_NAME", "name",
				     "name must not contain '/' or control characters (it is addressed in URL paths)");
			return -1;
		}
	}
	return 0;
}

const char *model_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

cJSON *model_find_by_id_or_name(cJSON *arr, const char *id_or_name)
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

cJSON *model_resource_new(mock_model *m, const char *prefix, const char *name,
			  char created_ts[40], mock_err *e)
{
	cJSON *o = cJSON_CreateObject();
	char id[MOCK_ID_MAX];

	if (o == NULL) {
		model_err_oom(e);
		return NULL;
	}
	mock_new_id(m, prefix, id, sizeof(id));
	mock_rfc3339(m, mock_now(m), created_ts, 40);
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "name", name);
	return o;
}

/* ---- catalog views ---- */

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

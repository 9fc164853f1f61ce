/* durable: sbx-mock's durable state (`--state-dir DIR`) — deciding what to
 * log and replaying it at start. Framing and fsync are mutation_log.c's; the
 * meaning of a tenant or sandbox record is the model's (model.c).
 *
 * One record per acknowledged control-plane mutation:
 *   {"t":"mut", "tenant":{...}?, "sbx":[{...}, ...]}
 * holding the tenant (when it changed) and every sandbox of that tenant whose
 * persistent fields changed since the last record; written and fdatasync'd
 * under the model lock, before the answer is queued, so the log order is the
 * order in which the mutations happened. Plus {"t":"boot","start_wall_ms"}
 * first (keeps the clock continuous across restarts) and {"t":"reset"} for
 * POST /_mock/reset.
 *
 * Guest trees live in DIR/guests/<id>/ and are kept at stop. After a restart
 * the processes are gone, so live sandboxes come back `paused` (see
 * mock_model_after_restore). Never writes for GETs, exec or file uploads.
 *
 * Secrets at rest: no record holds an API key. A tenant is named by
 * HMAC-SHA256(secret, key), the secret being DIR/state.key (32 random
 * bytes, made once, 0600); a restored tenant gets its key back when a
 * request presents one with that hash (model.c). DIR is 0700, its files
 * 0600. A log written before this (raw keys in it) is refused, not used. */
#define _GNU_SOURCE
#include "templates/templates.h"
#include "ops/ops.h"
#include "state/durable.h"
#include "state/mutation_log.h"
#include "ops/settings.h"
#include "util/sha256.h"
#include "sbx/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t dump_crc(cJSON *o, char **text)
{
	char *s = cJSON_PrintUnformatted(o);
	uint32_t c = s != NULL ? mock_crc32(s, strlen(s)) : 0;

	if (text != NULL)
		*text = s;
	else
		free(s);
	return c;
}

/* The replay's context: the records seen and the first one that makes the
 * log unusable (a raw API key in it). */
typedef struct replay_ctx {
	sbx_mock *mock;
	uint64_t n;
	char fatal[320]; /* "record N " + a restore reason (256) */
} replay_ctx;

/* A "mut" record that names a tenant by its raw key: the format before
 * keyed hashes. */
static bool names_raw_key(const cJSON *rec)
{
	const cJSON *it;

	if (mock_record_has_raw_key(cJSON_GetObjectItemCaseSensitive(rec, "tenant")))
		return true;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rec, "sbx")) {
		if (mock_record_has_raw_key(it))
			return true;
	}
	return false;
}

/* Applies one record to m; why gets the reason when it (or part of it) was
 * skipped. The one restore path: start (apply_record) and --check-state
 * (check_record) both come through here. True when the record makes the
 * whole log unusable (a raw API key: why says so). */
static bool restore_record(mock_model *m, const char *payload, size_t len, char *why, size_t cap)
{
	bool fatal = false;
	cJSON *rec = cJSON_ParseWithLength(payload, len);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(rec, "t");
	const cJSON *it;

	if (!cJSON_IsString(t)) {
		snprintf(why, cap, "record without a type");
	} else if (strcmp(t->valuestring, "boot") == 0) {
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(rec, "start_wall_ms");

		/* a wall clock in ms between 1970 and the year 5000 */
		if (cJSON_IsNumber(w) && w->valuedouble > 0 && w->valuedouble < 9.5e13)
			mock_model_restore_clock(m, (int64_t)w->valuedouble);
		else
			snprintf(why, cap, "boot record without a valid start_wall_ms");
	} else if (strcmp(t->valuestring, "reset") == 0) {
		mock_model_reset(m);
	} else if (strcmp(t->valuestring, "mut") == 0 && names_raw_key(rec)) {
		snprintf(why, cap, "names a tenant by its raw API key (a log written before keys were "
			 "stored as keyed hashes)");
		fatal = true;
	} else if (strcmp(t->valuestring, "mut") == 0) {
		it = cJSON_GetObjectItemCaseSensitive(rec, "tenant");
		if (it != NULL)
			mock_tenant_restore(m, it, why, cap);
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rec, "sbx")) {
			if (mock_sandbox_restore(m, it, why, cap) != 0)
				break;
		}
	} else {
		snprintf(why, cap, "unknown record type \"%.32s\"", t->valuestring);
	}
	cJSON_Delete(rec);
	return fatal;
}

static void apply_record(void *arg, const char *payload, size_t len)
{
	replay_ctx *ctx = arg;
	sbx_mock *mock = ctx->mock;
	char why[256] = "";

	if (restore_record(mock->model, payload, len, why, sizeof(why))) {
		if (ctx->fatal[0] == '\0')
			snprintf(ctx->fatal, sizeof(ctx->fatal), "record %llu %s", (unsigned long long)ctx->n + 1,
				 why);
	} else if (why[0] != '\0' && !mock->quiet) {
		fprintf(stderr, "sbx-mock: warning: state record skipped: %s\n", why);
	}
	ctx->n++;
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Makes DIR/state.key once: written to a private temporary name, then
 * linked into place, so a reader never sees half a key. */
static int make_secret(const char *dir, const char *path, sbx_err *err)
{
	char tmp[PATH_MAX], hex[65];
	int fd, rc = 0;

	snprintf(tmp, sizeof(tmp), "%s/state.key.%ld", dir, (long)getpid());
	if (sbx_random_hex(hex, 64) != 0) {
		sbx_err_set(err, "state key: getrandom: %s", strerror(errno));
		return -1;
	}
	hex[64] = '\n';
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || sbx_write_all(fd, hex, 65) != 0 || fsync(fd) != 0 ||
	    (link(tmp, path) != 0 && errno != EEXIST)) {
		sbx_err_set(err, "%s: %s", path, strerror(errno));
		rc = -1;
	}
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}

/* The secret from the n bytes read from state.key: 64 hex digits and an
 * optional newline. 0, or -1 when they are not that. */
static int parse_secret(const char *hex, ssize_t n, uint8_t secret[32])
{
	if (n < 64 || n > 65 || (n == 65 && hex[64] != '\n'))
		return -1;
	for (int i = 0; i < 32; i++) {
		int hi = hex_val(hex[2 * i]), lo = hex_val(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		secret[i] = (uint8_t)((unsigned)hi << 4 | (unsigned)lo);
	}
	return 0;
}

/* Reads (making it the first time) the secret that keys the tenants'
 * hashes: 64 hex digits in DIR/state.key, mode 0600. */
static int load_secret(const char *dir, uint8_t secret[32], sbx_err *err)
{
	char path[PATH_MAX], hex[80];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/state.key", dir);
	if (access(path, F_OK) != 0 && make_secret(dir, path, err) != 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		sbx_err_set(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	n = read(fd, hex, sizeof(hex));
	if (fchmod(fd, 0600) != 0)
		n = -1;
	close(fd);
	if (parse_secret(hex, n, secret) != 0) {
		sbx_err_set(err, "%s: not a state key (64 hex digits); it keys the tenants' hashes "
				 "in state.log, so without it the log cannot be used", path);
		return -1;
	}
	return 0;
}

/* DIR exists and is this user's alone (0700): it holds the key hashes'
 * secret and every tenant's state. */
static int private_dir(const char *dir, sbx_err *err)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		sbx_err_set(err, "state dir %s: %s", dir, strerror(errno));
		return -1;
	}
	if (chmod(dir, 0700) != 0) {
		sbx_err_set(err, "state dir %s: chmod 0700: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

static int append_json(sbx_mock *mock, cJSON *rec, sbx_err *err)
{
	char *text = cJSON_PrintUnformatted(rec);
	int rc;

	if (text == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	rc = mock_mutlog_append(mock->state, text, strlen(text), err);
	free(text);
	return rc;
}

/* Guest trees go under DIR/guests unless --work-dir says otherwise. */
static int use_state_work_dir(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	char dir[PATH_MAX];

	if (cfg->work_dir != NULL)
		return 0;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/guests", cfg->state_dir) >= sizeof(dir)) {
		sbx_err_set(err, "state dir path too long");
		return -1;
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		sbx_err_set(err, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (mock->own_work_dir)
		rmdir(mock->work_dir); /* the private temp dir is still empty */
	mock->own_work_dir = false;
	snprintf(mock->work_dir, sizeof(mock->work_dir), "%s", dir);
	return 0;
}

/* Baseline CRCs so the first mutation only logs what it changed. */
static void baseline(mock_model *m)
{
	for (mock_tenant *t = m->tenants; t != NULL; t = t->next) {
		cJSON *d = mock_tenant_dump(t);

		t->persist_crc = dump_crc(d, NULL);
		cJSON_Delete(d);
	}
	for (size_t i = 0; i < m->nsbx; i++) {
		cJSON *d = mock_sandbox_dump(m->sbx[i]);

		m->sbx[i]->persist_crc = dump_crc(d, NULL);
		cJSON_Delete(d);
	}
}

int mock_durable_start(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	mock_model *m = mock->model;
	size_t dropped = 0;
	replay_ctx ctx = {.mock = mock};
	uint8_t secret[32];

	if (cfg->state_dir == NULL)
		return 0;
	if (private_dir(cfg->state_dir, err) != 0 || load_secret(cfg->state_dir, secret, err) != 0)
		return -1;
	mock_model_set_key_secret(m, secret);
	mock->state = mock_mutlog_open(cfg->state_dir, cfg->quiet, cfg->state_repair, apply_record,
				       &ctx, &dropped, err);
	if (mock->state == NULL)
		return -1;
	if (ctx.fatal[0] != '\0') {
		sbx_err_set(err, "%s/state.log: %s. This sbx-mock keeps no API key at rest and does "
				 "not read such a log: start with a new --state-dir (the old one is left "
				 "as it is), or remove that state.log to discard its state",
			    cfg->state_dir, ctx.fatal);
		return -1;
	}
	if (use_state_work_dir(mock, cfg, err) != 0)
		return -1;
	pthread_mutex_lock(&m->lock);
	mock_model_after_restore(m);
	mock_op_templates_restored(mock);
	for (size_t i = 0; i < m->nsbx; i++) {
		mock_sandbox *sb = m->sbx[i];
		sbx_err gerr = {{0}};

		mock_guest *g;

		if (mock_status_terminal(sb->status))
			continue;
		/* outside the lock: wiring a guest's egress takes it
		 * (mock_egress_wire), and a restart with enforced egress
		 * deadlocked here; no request is served before this returns,
		 * so nothing else changes the sandboxes meanwhile */
		pthread_mutex_unlock(&m->lock);
		g = mock_op_guest_start(mock, sb, &gerr);
		pthread_mutex_lock(&m->lock);
		sb->guest = g;
		if (sb->guest == NULL) {
			if (!cfg->quiet)
				fprintf(stderr, "sbx-mock: warning: sandbox %s: %s; marked error\n", sb->id,
					gerr.msg);
			mock_sandbox_set_guest_lost(m, sb);
		}
	}
	baseline(m);
	pthread_mutex_unlock(&m->lock);
	if (mock_mutlog_records(mock->state) == 0) {
		cJSON *boot = cJSON_CreateObject();
		int rc;

		cJSON_AddStringToObject(boot, "t", "boot");
		cJSON_AddNumberToObject(boot, "start_wall_ms", (double)m->start_wall_ms);
		rc = append_json(mock, boot, err);
		cJSON_Delete(boot);
		return rc;
	}
	return 0;
}

int mock_durable_persist(sbx_mock *mock, mock_tenant *t, sbx_err *err)
{
	mock_model *m = mock->model;
	cJSON *rec, *arr, *d;
	uint32_t tcrc, *crcs;
	char *text = NULL;
	bool changed = false;
	int rc = 0;

	if (mock->state == NULL)
		return 0; /* not durable */
	rec = cJSON_CreateObject();
	if (rec == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	cJSON_AddStringToObject(rec, "t", "mut");
	pthread_mutex_lock(&m->lock);
	/* sized under the lock: a create in another thread grows m->nsbx */
	crcs = calloc(m->nsbx + 1, sizeof(*crcs));
	if (crcs == NULL) {
		pthread_mutex_unlock(&m->lock);
		cJSON_Delete(rec);
		sbx_err_set(err, "out of memory");
		return -1;
	}
	mock_tick(m, mock_on_state_change, mock);
	d = mock_tenant_dump(t);
	tcrc = dump_crc(d, NULL);
	if (tcrc != t->persist_crc) {
		cJSON_AddItemToObject(rec, "tenant", d);
		changed = true;
	} else {
		cJSON_Delete(d);
	}
	arr = cJSON_AddArrayToObject(rec, "sbx");
	for (size_t i = 0; i < m->nsbx; i++) {
		if (m->sbx[i]->tenant != t)
			continue;
		d = mock_sandbox_dump(m->sbx[i]);
		crcs[i] = dump_crc(d, NULL);
		if (crcs[i] == m->sbx[i]->persist_crc) {
			cJSON_Delete(d);
			continue;
		}
		cJSON_AddItemToArray(arr, d);
		changed = true;
	}
	if (changed) {
		text = cJSON_PrintUnformatted(rec);
		rc = text != NULL ? mock_mutlog_append(mock->state, text, strlen(text), err) : -1;
		if (text == NULL)
			sbx_err_set(err, "out of memory");
	}
	if (changed && rc == 0) {
		t->persist_crc = tcrc;
		for (size_t i = 0; i < m->nsbx; i++) {
			if (m->sbx[i]->tenant == t)
				m->sbx[i]->persist_crc = crcs[i];
		}
	}
	pthread_mutex_unlock(&m->lock);
	free(text);
	free(crcs);
	cJSON_Delete(rec);
	return rc;
}

int mock_durable_reset(sbx_mock *mock, sbx_err *err)
{
	cJSON *rec;
	int rc;

	if (mock->state == NULL)
		return 0;
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "t", "reset");
	rc = append_json(mock, rec, err);
	cJSON_Delete(rec);
	return rc;
}

/* ---- sbx-mock --check-state DIR ---- */

/* --check-state: what a start would make of DIR/state.key, read without
 * changing anything (load_secret makes a missing key and fixes its mode).
 * NULL when it is a key; else buf says why. tenants: how many the log
 * restores (a missing key matters only when some tenant waits for it). */
static const char *secret_problem(const char *dir, size_t tenants, char *buf, size_t cap)
{
	char path[PATH_MAX], hex[80];
	uint8_t secret[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/state.key", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT) {
		if (tenants == 0)
			return NULL;
		snprintf(buf, cap, "%s is missing: a start makes a new one, and no tenant of this log "
			 "gets its API key back (their hashes were keyed by the lost one)", path);
		return buf;
	}
	if (fd < 0) {
		snprintf(buf, cap, "%s: %s: a start refuses this log", path, strerror(errno));
		return buf;
	}
	n = read(fd, hex, sizeof(hex));
	close(fd);
	if (parse_secret(hex, n, secret) != 0) {
		snprintf(buf, cap, "%s is not a state key (64 hex digits): a start refuses this log", path);
		return buf;
	}
	return NULL;
}

typedef struct check_ctx {
	mock_model *model;
	FILE *out;
	uint64_t seen;
	unsigned skipped;
} check_ctx;

static void check_record(void *arg, const char *payload, size_t len)
{
	check_ctx *cc = arg;
	char why[256] = "";

	cc->seen++;
	if (restore_record(cc->model, payload, len, why, sizeof(why))) {
		cc->skipped++;
		fprintf(cc->out, "record %llu: a start refuses this log: it %s\n", (unsigned long long)cc->seen,
			why);
	} else if (why[0] != '\0') {
		cc->skipped++;
		fprintf(cc->out, "record %llu: skipped at start: %s\n", (unsigned long long)cc->seen, why);
	}
}

int sbx_mock_check_state(const sbx_mock_config *cfg, FILE *out, sbx_err *err)
{
	check_ctx cc = {NULL, out, 0, 0};
	mock_settings set;
	uint64_t records;
	size_t len, good, ntenants = 0, counts[ST__COUNT] = {0};
	const char *why, *key_bad;
	char keybuf[PATH_MAX + 128];
	bool torn = false;
	int rc;

	if (mock_settings_from_config(cfg, &set, err) != 0)
		return -1;
	cc.model = mock_model_new(&set);
	if (cc.model == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	if (mock_mutlog_check(cfg->state_dir, check_record, &cc, &records, &len, &good, &why, &torn, err) != 0) {
		mock_model_free(cc.model);
		return -1;
	}
	mock_model_after_restore(cc.model);
	for (mock_tenant *t = cc.model->tenants; t != NULL; t = t->next)
		ntenants++;
	for (size_t i = 0; i < cc.model->nsbx; i++)
		counts[cc.model->sbx[i]->status]++;
	fprintf(out, "%s/state.log: %zu bytes, %llu good records\n", cfg->state_dir, len,
		(unsigned long long)records);
	if (good < len && torn)
		fprintf(out, "problem: %s at byte %zu: a start sets the last %zu bytes aside (a dated copy) "
			     "and goes on\n", why, good, len - good);
	else if (good < len)
		fprintf(out, "problem: %s at byte %zu: a start refuses this log; --state-repair moves the "
			     "last %zu bytes aside (a dated copy) and starts from the good records\n",
			why, good, len - good);
	key_bad = secret_problem(cfg->state_dir, ntenants, keybuf, sizeof(keybuf));
	if (key_bad != NULL)
		fprintf(out, "problem: %s\n", key_bad);
	fprintf(out, "after a restart: %zu tenants, %zu sandboxes", ntenants, cc.model->nsbx);
	for (int st = 0; st < ST__COUNT; st++)
		if (counts[st] > 0)
			fprintf(out, ", %zu %s", counts[st], mock_status_name((mock_status)st));
	fputc('\n', out);
	rc = good < len || cc.skipped > 0 || key_bad != NULL ? 1 : 0;
	fprintf(out, "%s\n", rc == 0 ? "ok: a start restores every record"
				    : "not clean: see the problems above");
	mock_model_free(cc.model);
	return rc;
}

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
 * mock_model_after_restore). Never writes for GETs, exec or file uploads. */
#define _GNU_SOURCE
#include "ops.h"
#include "server.h"
#include "settings.h"

#include <errno.h>
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

/* Applies one record to m; why gets the reason when it (or part of it) was
 * skipped. The one restore path: start (apply_record) and --check-state
 * (check_record) both come through here. */
static void restore_record(mock_model *m, const char *payload, size_t len, char *why, size_t cap)
{
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
}

static void apply_record(void *arg, const char *payload, size_t len)
{
	sbx_mock *mock = arg;
	char why[256] = "";

	restore_record(mock->model, payload, len, why, sizeof(why));
	if (why[0] != '\0' && !mock->quiet)
		fprintf(stderr, "sbx-mock: warning: state record skipped: %s\n", why);
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

	if (cfg->state_dir == NULL)
		return 0;
	mock->state = mock_mutlog_open(cfg->state_dir, cfg->quiet, apply_record, mock, &dropped, err);
	if (mock->state == NULL)
		return -1;
	if (use_state_work_dir(mock, cfg, err) != 0)
		return -1;
	pthread_mutex_lock(&m->lock);
	mock_model_after_restore(m);
	for (size_t i = 0; i < m->nsbx; i++) {
		mock_sandbox *sb = m->sbx[i];
		sbx_err gerr = {{0}};

		if (mock_status_terminal(sb->status))
			continue;
		sb->guest = mock_guest_start(mock, sb, &gerr);
		if (sb->guest == NULL) {
			if (!cfg->quiet)
				fprintf(stderr, "sbx-mock: warning: sandbox %s: %s; marked error\n", sb->id,
					gerr.msg);
			sb->status = ST_ERROR;
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

	crcs = calloc(m->nsbx + 1, sizeof(*crcs));
	rec = cJSON_CreateObject();
	if (crcs == NULL || rec == NULL) {
		free(crcs);
		cJSON_Delete(rec);
		sbx_err_set(err, "out of memory");
		return -1;
	}
	cJSON_AddStringToObject(rec, "t", "mut");
	pthread_mutex_lock(&m->lock);
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
	restore_record(cc->model, payload, len, why, sizeof(why));
	if (why[0] != '\0') {
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
	const char *why;
	int rc;

	if (mock_settings_from_config(cfg, &set, err) != 0)
		return -1;
	cc.model = mock_model_new(&set);
	if (cc.model == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	if (mock_mutlog_check(cfg->state_dir, check_record, &cc, &records, &len, &good, &why, err) != 0) {
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
	if (good < len)
		fprintf(out, "problem: %s at byte %zu: a start would drop the last %zu bytes\n", why, good,
			len - good);
	fprintf(out, "after a restart: %zu tenants, %zu sandboxes", ntenants, cc.model->nsbx);
	for (int st = 0; st < ST__COUNT; st++)
		if (counts[st] > 0)
			fprintf(out, ", %zu %s", counts[st], mock_status_name((mock_status)st));
	fputc('\n', out);
	rc = good < len || cc.skipped > 0 ? 1 : 0;
	fprintf(out, "%s\n", rc == 0 ? "ok: a start restores every record"
				    : "not clean: see the problems above");
	mock_model_free(cc.model);
	return rc;
}

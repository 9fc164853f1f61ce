/* ops_metrics: the read-only metrics operations (ops.h) — one sandbox's
 * CPU and memory now, a tenant's usage now, and a tenant's usage over a
 * window of the virtual clock.
 *
 * The shapes are the mock's own (no public SDK declares them yet; README
 * "SDK compatibility"). Never hold the model lock while a guest's
 * accounting is read: the sandboxes read are marked busy instead. */
#define _GNU_SOURCE
#include "ops/ops.h"
#include "ops/ops_internal.h"

#include <stdlib.h>
#include <string.h>

#include "ops/core.h" /* struct sbx_mock */

#define METRICS_POINTS_MAX 1440

static void add_time(const mock_model *m, cJSON *o, const char *key, int64_t ms)
{
	char buf[40];

	mock_rfc3339(m, ms, buf, sizeof(buf));
	cJSON_AddStringToObject(o, key, buf);
}

static void add_usage(cJSON *o, const mock_guest_usage *u)
{
	cJSON_AddNumberToObject(o, "cpu_usage_usec", (double)u->cpu_usec);
	cJSON_AddNumberToObject(o, "memory_bytes", (double)u->mem_bytes);
}

/* Whether sb has a guest to read (running, pausing, paused). Lock held. */
static bool readable(const mock_sandbox *sb)
{
	return sb->guest != NULL && !mock_status_terminal(sb->status) && sb->status != ST_CREATING &&
	       sb->status != ST_FAILED;
}

cJSON *mock_op_sandbox_metrics(mock_op *op)
{
	mock_model *m = op->mock->model;
	mock_guest_usage u;
	mock_sandbox *sb;
	mock_guest *g = NULL;
	sbx_err err = {{0}};
	cJSON *o = NULL;

	sb = ops_begin(op, true);
	if (sb == NULL) {
		/* 404 set */
	} else if (!readable(sb)) {
		op->found[0] = '\0'; /* the journal names no sandbox for this 409 */
		mock_err_set(&op->err, 409, "NOT_RUNNING", "status", "sandbox is %s: it has no metrics",
			     mock_status_name(sb->status));
	} else {
		g = sb->guest;
		sb->busy++; /* not touched: reading metrics is not activity */
	}
	pthread_mutex_unlock(&m->lock);
	if (g == NULL)
		return NULL;
	if (mock_guest_usage_read(g, &u, &err) != 0) {
		mock_err_set(&op->err, 501, "NOT_SUPPORTED", "error", "%s", err.msg);
	} else {
		o = cJSON_CreateObject();
		pthread_mutex_lock(&m->lock);
		cJSON_AddStringToObject(o, "id", sb->id);
		cJSON_AddStringToObject(o, "status", mock_status_name(sb->status));
		add_time(m, o, "sampled_at", mock_now(m));
		cJSON_AddNumberToObject(o, "vcpu", sb->vcpu);
		cJSON_AddNumberToObject(o, "mem_mib", sb->mem_mib);
		pthread_mutex_unlock(&m->lock);
		add_usage(o, &u);
		cJSON_AddNumberToObject(o, "memory_peak_bytes", (double)u.mem_peak_bytes);
		cJSON_AddNumberToObject(o, "memory_limit_bytes", (double)u.mem_limit_bytes);
		cJSON_AddNumberToObject(o, "pids", (double)u.pids);
		cJSON_AddStringToObject(o, "source", u.source);
	}
	pthread_mutex_lock(&m->lock);
	sb->busy--;
	mock_op_guest_release(op->mock, sb); /* the last holder of a destroyed one */
	pthread_mutex_unlock(&m->lock);
	mock_op_reap_guests(op->mock);
	return o;
}

/* ---- a tenant's usage now ---- */

typedef struct user_sum {
	unsigned running, paused, other, total;
	uint64_t vcpu, mem_mib, disk_mib, bw_used;
	mock_sandbox **held; /* readable ones, marked busy */
	size_t nheld;
} user_sum;

/* Counts the tenant's live sandboxes and holds the readable ones. Lock held. */
static bool sum_tenant(mock_model *m, const mock_tenant *t, user_sum *s)
{
	s->held = calloc(m->nlive + 1, sizeof(*s->held));
	if (s->held == NULL)
		return false;
	for (size_t i = 0; i < m->nlive; i++) {
		mock_sandbox *sb = m->live[i];

		if (sb->tenant != t || mock_status_terminal(sb->status))
			continue;
		s->total++;
		if (sb->status == ST_RUNNING)
			s->running++;
		else if (sb->status == ST_PAUSED)
			s->paused++;
		else
			s->other++;
		s->vcpu += sb->vcpu;
		s->mem_mib += sb->mem_mib;
		s->disk_mib += sb->disk_mib;
		s->bw_used += sb->bw_used > 0 ? (uint64_t)sb->bw_used : 0;
		if (readable(sb)) {
			sb->busy++;
			s->held[s->nheld++] = sb;
		}
	}
	return true;
}

/* The tenant's templates and the storage they hold against its bounds
 * (LIMITS.md): a ready one its layer's bytes, a build not ended its
 * reserved disk. */
static void add_template_storage(const mock_model *m, cJSON *o, const mock_tenant *t)
{
	cJSON *ts = cJSON_AddObjectToObject(o, "template_storage");
	double layers, reserved;
	unsigned n;

	mock_template_storage(t, &n, &layers, &reserved);
	cJSON_AddNumberToObject(ts, "templates", n);
	cJSON_AddNumberToObject(ts, "template_cap", m->set.tpl_cap);
	cJSON_AddNumberToObject(ts, "layer_bytes", layers);
	cJSON_AddNumberToObject(ts, "reserved_bytes", reserved);
	cJSON_AddNumberToObject(ts, "limit_bytes", (double)m->set.tpl_storage_mib * 1024 * 1024);
}

static cJSON *user_view(mock_model *m, const mock_op *op, const user_sum *s, const mock_guest_usage *u,
			unsigned unread)
{
	cJSON *o = cJSON_CreateObject(), *st, *tb;
	unsigned pending, building;

	cJSON_AddStringToObject(o, "user_id", op->t->user_id);
	add_time(m, o, "sampled_at", mock_now(m));
	st = cJSON_AddObjectToObject(o, "sandboxes");
	cJSON_AddNumberToObject(st, "running", s->running);
	cJSON_AddNumberToObject(st, "paused", s->paused);
	cJSON_AddNumberToObject(st, "other", s->other);
	cJSON_AddNumberToObject(st, "total", s->total);
	/* the tenant's template builds not yet ended, as its sandboxes by
	 * status: what its build cap counts (LIMITS.md) */
	mock_template_builds(op->t, &pending, &building);
	tb = cJSON_AddObjectToObject(o, "template_builds");
	cJSON_AddNumberToObject(tb, "pending", pending);
	cJSON_AddNumberToObject(tb, "building", building);
	cJSON_AddNumberToObject(tb, "total", pending + building);
	add_template_storage(m, o, op->t);
	cJSON_AddNumberToObject(o, "vcpu", (double)s->vcpu);
	cJSON_AddNumberToObject(o, "mem_mib", (double)s->mem_mib);
	cJSON_AddNumberToObject(o, "disk_mib", (double)s->disk_mib);
	add_usage(o, u);
	cJSON_AddNumberToObject(o, "bandwidth_used_bytes", (double)s->bw_used);
	if (unread > 0)
		cJSON_AddNumberToObject(o, "unmeasured_sandboxes", unread);
	return o;
}

cJSON *mock_op_user_metrics(mock_op *op)
{
	mock_model *m = op->mock->model;
	user_sum s;
	mock_guest_usage sum, u;
	unsigned unread = 0;
	cJSON *o;

	memset(&s, 0, sizeof(s));
	memset(&sum, 0, sizeof(sum));
	pthread_mutex_lock(&m->lock);
	ops_tick(op->mock);
	if (!sum_tenant(m, op->t, &s)) {
		pthread_mutex_unlock(&m->lock);
		mock_err_set(&op->err, 500, "", "error", "out of memory");
		return NULL;
	}
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < s.nheld; i++) {
		if (mock_guest_usage_read(s.held[i]->guest, &u, NULL) != 0) {
			unread++;
			continue;
		}
		sum.cpu_usec += u.cpu_usec;
		sum.mem_bytes += u.mem_bytes;
	}
	pthread_mutex_lock(&m->lock);
	o = user_view(m, op, &s, &sum, unread);
	for (size_t i = 0; i < s.nheld; i++) {
		s.held[i]->busy--;
		mock_op_guest_release(op->mock, s.held[i]);
	}
	pthread_mutex_unlock(&m->lock);
	mock_op_reap_guests(op->mock);
	free(s.held);
	return o;
}

/* ---- a tenant's usage over a window ---- */

/* Whether sb was alive (created, not yet destroyed) at clock time t. */
static bool alive_at(const mock_sandbox *sb, int64_t t)
{
	return sb->created_ms <= t && (sb->destroyed_ms <= 0 || sb->destroyed_ms > t) &&
	       !(sb->status == ST_FAILED && sb->destroyed_ms <= 0);
}

cJSON *mock_op_user_timeseries(mock_op *op, int64_t window_s, int64_t step_s)
{
	mock_model *m = op->mock->model;
	cJSON *o = cJSON_CreateObject(), *pts = NULL;
	int64_t now, from, n;

	if (o == NULL) {
		mock_err_set(&op->err, 500, "", "error", "out of memory");
		return NULL;
	}
	n = window_s / step_s;
	pthread_mutex_lock(&m->lock);
	ops_tick(op->mock);
	now = mock_now(m);
	from = now - n * step_s * 1000;
	add_time(m, o, "from", from);
	add_time(m, o, "to", now);
	cJSON_AddNumberToObject(o, "step_seconds", (double)step_s);
	pts = cJSON_AddArrayToObject(o, "points");
	for (int64_t k = 0; k <= n; k++) {
		int64_t t = from + k * step_s * 1000;
		uint64_t count = 0, vcpu = 0, mem = 0;
		cJSON *p = cJSON_CreateObject();

		for (size_t i = 0; i < m->nsbx; i++) {
			const mock_sandbox *sb = m->sbx[i];

			if (sb->tenant != op->t || !alive_at(sb, t))
				continue;
			count++;
			vcpu += sb->vcpu;
			mem += sb->mem_mib;
		}
		add_time(m, p, "ts", t);
		cJSON_AddNumberToObject(p, "sandboxes", (double)count);
		cJSON_AddNumberToObject(p, "vcpu", (double)vcpu);
		cJSON_AddNumberToObject(p, "mem_mib", (double)mem);
		cJSON_AddItemToArray(pts, p);
	}
	pthread_mutex_unlock(&m->lock);
	return o;
}

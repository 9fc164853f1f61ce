/* ops: the sandbox lifecycle operations (ops.h) — create, fork, pause,
 * resume, destroy, reads and edits of one sandbox, tenants and readiness.
 * Each takes the model lock for as short as it can, never across a guest
 * boot or a timing sleep (the sandbox is marked busy instead).
 *
 * Never parse a request or shape an HTTP answer here: inputs are parsed
 * structs, outputs views and mock_errs. */
#define _GNU_SOURCE
#include "ops/ops.h"
#include "ops/ops_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest/cell_pool.h"
#include "ops/rootfs.h"
#include "images/images.h"
#include "internet/inet_book.h"
#include "ops/core.h" /* struct sbx_mock, mock_sleep_ms */

/* Cuts the sandbox's open ingress connections (through the server's hook:
 * the proxy is a layer above). */
static void ingress_cut(sbx_mock *mock, const mock_sandbox *sb)
{
	if (mock->ingress_cut != NULL)
		mock->ingress_cut(mock->ingress, sb->id);
}

void ops_tick(sbx_mock *mock)
{
	mock_tick(mock->model, mock_on_state_change, mock);
}

bool ops_fault_is(const mock_op *op, mock_fault_kind k)
{
	return op->fault != NULL && op->fault->kind == k;
}

mock_sandbox *ops_find(mock_op *op)
{
	mock_sandbox *sb = NULL;

	if (op->id != NULL)
		sb = op->t != NULL ? mock_sandbox_find(op->mock->model, op->t, op->id)
				   : mock_sandbox_find_any(op->mock->model, op->id);
	if (sb == NULL) {
		mock_err_set(&op->err, 404, "NOT_FOUND", "error", "sandbox not found");
		return NULL;
	}
	snprintf(op->found, sizeof(op->found), "%s", sb->id);
	return sb;
}

mock_sandbox *ops_begin(mock_op *op, bool tick)
{
	pthread_mutex_lock(&op->mock->model->lock);
	if (tick)
		ops_tick(op->mock);
	return ops_find(op);
}

mock_tenant *mock_op_tenant(sbx_mock *mock, const char *key)
{
	mock_tenant *t;

	pthread_mutex_lock(&mock->model->lock);
	t = mock_tenant_get(mock->model, key, mock->model->set.accept_any_key);
	pthread_mutex_unlock(&mock->model->lock);
	return t;
}

bool mock_op_ready(sbx_mock *mock)
{
	bool ready;

	pthread_mutex_lock(&mock->model->lock);
	ready = mock_ready(mock->model);
	pthread_mutex_unlock(&mock->model->lock);
	return ready;
}

cJSON *mock_op_whoami(sbx_mock *mock, mock_tenant *t)
{
	cJSON *d;

	pthread_mutex_lock(&mock->model->lock);
	ops_tick(mock);
	d = mock_whoami_view(mock->model, t);
	pthread_mutex_unlock(&mock->model->lock);
	return d;
}

unsigned mock_op_hosts(sbx_mock *mock, unsigned *active_vms)
{
	unsigned vms = 0, dead;
	char active[40];

	pthread_mutex_lock(&mock->model->lock);
	ops_tick(mock);
	mock_active_host(mock->model, active, sizeof(active));
	dead = mock->model->hosts_dead;
	for (size_t i = 0; i < mock->model->nlive; i++) {
		const mock_sandbox *sb = mock->model->live[i];

		if (!mock_status_terminal(sb->status) && strcmp(sb->host_id, active) == 0)
			vms++;
	}
	pthread_mutex_unlock(&mock->model->lock);
	*active_vms = vms;
	return dead;
}

size_t mock_op_max_egress_rules(sbx_mock *mock)
{
	size_t max;

	pthread_mutex_lock(&mock->model->lock);
	max = mock->model->set.max_egress_rules;
	pthread_mutex_unlock(&mock->model->lock);
	return max;
}

static int64_t timing_ms(sbx_mock *mock, const char *what)
{
	int64_t ms;

	pthread_mutex_lock(&mock->model->lock);
	ms = mock_timing_ms(mock->model, what);
	pthread_mutex_unlock(&mock->model->lock);
	return ms;
}

/* Creates the sandbox, boots its guest outside the lock (busy keeps it
 * alive), sleeps the create timing, then lets it run unless it was
 * destroyed meanwhile or a create_failed fault fired. */
cJSON *mock_op_create(mock_op *op, const mock_create_req *q)
{
	sbx_mock *mock = op->mock;
	bool failed = ops_fault_is(op, FK_CREATE_FAILED);
	sbx_err gerr = {{0}};
	mock_sandbox *sb;
	mock_guest *g;
	cJSON *view = NULL;
	int64_t ms;

	pthread_mutex_lock(&mock->model->lock);
	ops_tick(mock);
	sb = mock_sandbox_create(mock->model, op->t, q, &op->err);
	if (sb != NULL) {
		snprintf(op->found, sizeof(op->found), "%s", sb->id);
		sb->busy++;
	}
	pthread_mutex_unlock(&mock->model->lock);
	if (sb == NULL)
		return NULL;
	g = mock_op_guest_start_create(mock, sb, &gerr);
	ms = timing_ms(mock, "create");
	if (ms > 0)
		mock_sleep_ms(mock, ms);
	pthread_mutex_lock(&mock->model->lock);
	sb->busy--;
	sb->guest = g;
	if (g == NULL || failed) {
		mock_sandbox_set_boot_failed(mock->model, sb);
	} else if (sb->status == ST_CREATING) {
		mock_sandbox_set_running(mock->model, sb);
		view = mock_sandbox_create_view(mock->model, sb);
	} else {
		mock_destroy_guest(mock, sb); /* destroyed while booting */
	}
	pthread_mutex_unlock(&mock->model->lock);
	mock_op_reap_guests(mock);
	if (g == NULL)
		mock_err_set(&op->err, 500, "", "error", "sandbox failed to boot: %s", gerr.msg);
	else if (failed)
		mock_err_set(&op->err, 500, "", "error", "sandbox failed to boot (injected create_failed)");
	else if (view == NULL)
		mock_err_set(&op->err, 409, "INVALID_STATE", "status", "sandbox was destroyed while creating");
	return view;
}

/* Forks src: the child's guest is a copy of the source's tree, made
 * outside the lock with both marked busy. */
cJSON *mock_op_fork(mock_op *op, const mock_fork_req *q)
{
	sbx_mock *mock = op->mock;
	mock_sandbox *src, *sb = NULL;
	mock_guest *g;
	sbx_err gerr = {{0}};
	cJSON *v = NULL;

	src = ops_begin(op, true);
	if (src != NULL) {
		sb = mock_sandbox_fork(mock->model, src, q, &op->err);
		if (sb != NULL) {
			src->busy++;
			sb->busy++;
		}
	}
	pthread_mutex_unlock(&mock->model->lock);
	if (sb == NULL)
		return NULL;
	g = src->guest != NULL && mock_guest_seed(mock->work_dir, sb->id, src->guest, &gerr) != 0
		    ? NULL
		    : mock_op_guest_start(mock, sb, &gerr);
	if (g != NULL && src->guest != NULL && mock_guest_copy(g, src->guest, &gerr) != 0) {
		mock_guest_free(g, true);
		g = NULL;
	}
	pthread_mutex_lock(&mock->model->lock);
	src->busy--;
	sb->busy--;
	sb->guest = g;
	mock_op_guest_release(mock, src); /* destroyed while it was copied */
	if (g == NULL)
		mock_sandbox_set_boot_failed(mock->model, sb);
	else if (sb->status == ST_DESTROYED || sb->tenant == NULL)
		mock_destroy_guest(mock, sb); /* destroyed (or reset) while forking */
	else
		v = mock_sandbox_view(mock->model, sb);
	pthread_mutex_unlock(&mock->model->lock);
	mock_op_reap_guests(mock);
	if (v == NULL)
		mock_err_set(&op->err, 500, "", "error", "fork failed: %s", gerr.msg);
	return v;
}

cJSON *mock_op_pause(mock_op *op, int *status)
{
	mock_model *m = op->mock->model;
	mock_sandbox *sb;
	cJSON *v = NULL;
	int rc;

	sb = ops_begin(op, true);
	if (sb != NULL) {
		rc = mock_sandbox_pause(m, sb, &op->err);
		if (rc >= 0) {
			if (rc == 202 && ops_fault_is(op, FK_PAUSE_ERROR))
				mock_sandbox_pause_ends_in_error(m, sb);
			mock_guest_pause(sb->guest, true, NULL);
			v = mock_sandbox_view(m, sb);
			op->poll_ms = mock_timing_ms(m, "pause");
			*status = rc;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return v;
}

cJSON *mock_op_resume(mock_op *op, int *status)
{
	mock_model *m = op->mock->model;
	mock_sandbox *sb;
	cJSON *v = NULL;
	int rc;

	sb = ops_begin(op, true);
	if (sb != NULL) {
		const char *timing = mock_resume_timing(sb);

		rc = mock_sandbox_resume(m, sb, &op->err);
		if (rc >= 0) {
			if (rc == 202 && ops_fault_is(op, FK_RESUME_POLLS))
				sb->resume_polls = op->fault->polls;
			mock_guest_pause(sb->guest, false, NULL);
			v = mock_sandbox_view(m, sb);
			op->poll_ms = mock_timing_ms(m, timing);
			*status = rc;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return v;
}

/* A destroyed or dropped sandbox's guest dies: waited for here without a
 * warm pool; with one only SIGKILLed, and waited for by the pool's teardown
 * thread after the answer (mock_op_reap_guests hands the guest over). */
static void kill_guest(sbx_mock *mock, mock_guest *g)
{
	if (mock->pool != NULL)
		mock_guest_kill_nowait(g);
	else
		mock_guest_kill(g);
}

cJSON *mock_op_destroy(mock_op *op)
{
	mock_model *m = op->mock->model;
	mock_sandbox *sb;
	mock_err e;
	bool now = false;
	cJSON *d = NULL;

	sb = ops_begin(op, true);
	if (sb != NULL) {
		if (ops_fault_is(op, FK_DESTROY_STUCK))
			sb->destroy_stuck = true;
		mock_sandbox_destroy(m, sb, &now, &e);
		/* a guest's own /self/delete (no tenant: self.c) keeps its
		 * listener until reset or stop: removing it now would drop the
		 * very connection that carries the answer */
		if (op->t != NULL) {
			mock_destroy_guest(op->mock, sb);
		} else {
			if (!mock_guest_dead(sb->guest) && op->mock->pool == NULL)
				mock_egress_unwire(op->mock, sb);
			kill_guest(op->mock, sb->guest);
			sb->self_deleted = true;
			mock_op_guest_release(op->mock, sb);
		}
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "id", sb->id);
		cJSON_AddStringToObject(d, "status", mock_status_name(sb->status));
	}
	pthread_mutex_unlock(&m->lock);
	mock_op_reap_guests(op->mock);
	return d;
}

/* A GET counts down a resume_polls fault: the sandbox runs after that many. */
cJSON *mock_op_get(mock_op *op)
{
	mock_model *m = op->mock->model;
	mock_sandbox *sb;
	cJSON *v = NULL;

	sb = ops_begin(op, true);
	if (sb != NULL) {
		if (sb->status == ST_RESUMING && sb->resume_polls > 0) {
			sb->resume_polls--;
			if (sb->resume_polls == 0)
				ops_tick(op->mock);
		}
		v = mock_sandbox_view(m, sb);
	}
	pthread_mutex_unlock(&m->lock);
	return v;
}

cJSON *mock_op_by_ip(mock_op *op, const char *ip)
{
	mock_model *m = op->mock->model;
	mock_sandbox *sb = NULL;
	cJSON *v = NULL;

	pthread_mutex_lock(&m->lock);
	ops_tick(op->mock);
	if (ip != NULL)
		sb = mock_sandbox_find_ip(m, op->t, ip);
	if (sb != NULL) {
		snprintf(op->found, sizeof(op->found), "%s", sb->id);
		v = mock_sandbox_view(m, sb);
	}
	pthread_mutex_unlock(&m->lock);
	if (v == NULL)
		mock_err_set(&op->err, 404, "NOT_FOUND", "error", "no sandbox with that IP");
	return v;
}

cJSON *mock_op_list(sbx_mock *mock, mock_tenant *t, int want, size_t limit, size_t offset,
		    size_t *total)
{
	cJSON *data = cJSON_CreateArray();
	size_t n = 0, count = 0;

	pthread_mutex_lock(&mock->model->lock);
	ops_tick(mock);
	for (size_t i = 0; i < mock->model->nsbx; i++) {
		mock_sandbox *sb = mock->model->sbx[i];

		if (sb->tenant != t)
			continue;
		if (want >= 0 ? (int)sb->status != want : sb->status == ST_DESTROYED)
			continue;
		if (n >= offset && count < limit) {
			cJSON_AddItemToArray(data, mock_sandbox_view(mock->model, sb));
			count++;
		}
		n++;
	}
	pthread_mutex_unlock(&mock->model->lock);
	*total = n;
	return data;
}

/* The sandbox, unless it is destroyed (409). Lock held. */
static mock_sandbox *find_live(mock_op *op)
{
	mock_sandbox *sb = ops_find(op);

	if (sb != NULL && mock_status_terminal(sb->status)) {
		mock_err_set(&op->err, 409, "INVALID_STATE", "status", "sandbox is destroyed");
		return NULL;
	}
	return sb;
}

cJSON *mock_op_patch(mock_op *op, const mock_patch_req *p)
{
	mock_model *m = op->mock->model;
	mock_sandbox *sb;
	cJSON *v = NULL;

	pthread_mutex_lock(&m->lock);
	ops_tick(op->mock);
	sb = find_live(op);
	if (sb != NULL) {
		if (p->has_ingress)
			sb->ingress_enabled = p->ingress;
		if (p->has_ingress && !p->ingress)
			ingress_cut(op->mock, sb); /* "stops it at once" (spec) */
		if (p->has_auto_pause)
			sb->auto_pause_s = p->auto_pause_s;
		if (p->disable_auto_pause)
			sb->auto_pause_s = 0;
		mock_sandbox_touch(m, sb);
		v = mock_sandbox_view(m, sb);
	}
	pthread_mutex_unlock(&m->lock);
	return v;
}

cJSON *mock_op_resize(mock_op *op, unsigned disk_mib)
{
	mock_model *m = op->mock->model;
	mock_sandbox *sb;
	cJSON *d = NULL;
	sbx_err gerr = {{0}};

	sb = ops_begin(op, false);
	if (sb != NULL && sb->disk_mib >= disk_mib) {
		mock_err_set(&op->err, 400, "INVALID_DISK", "disk_mib", "disk_mib must grow the disk");
		sb = NULL;
	} else if (sb != NULL && mock_status_terminal(sb->status)) {
		mock_err_set(&op->err, 409, "INVALID_STATE", "status", "sandbox is destroyed");
		sb = NULL;
	}
	/* the guest's disk grows first: a disk that cannot grow is no resize */
	if (sb != NULL &&
	    mock_guest_resize(sb->guest, mock_op_guest_disk_mib(op->mock, disk_mib), &gerr) != 0) {
		mock_err_set(&op->err, 500, "", "error", "resize failed: %s", gerr.msg);
		sb = NULL;
	}
	if (sb != NULL) {
		sb->disk_mib = disk_mib;
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "id", sb->id);
		cJSON_AddNumberToObject(d, "disk_mib", sb->disk_mib);
	}
	pthread_mutex_unlock(&m->lock);
	return d;
}

cJSON *mock_op_add_ssh_keys(mock_op *op, const cJSON *keys)
{
	mock_sandbox *sb;
	const cJSON *k;
	cJSON *d = NULL;

	sb = ops_begin(op, false);
	if (sb != NULL) {
		cJSON_ArrayForEach(k, keys) {
			const cJSON *have;
			bool dup = false;

			cJSON_ArrayForEach(have, sb->ssh_pubkeys) {
				if (strcmp(have->valuestring, k->valuestring) == 0)
					dup = true;
			}
			if (!dup)
				cJSON_AddItemToArray(sb->ssh_pubkeys, cJSON_CreateString(k->valuestring));
		}
		d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "count", cJSON_GetArraySize(sb->ssh_pubkeys));
	}
	pthread_mutex_unlock(&op->mock->model->lock);
	return d;
}

size_t mock_op_guest_groups(sbx_mock *mock, mock_guest_group *out, size_t cap)
{
	size_t n = 0;

	pthread_mutex_lock(&mock->model->lock);
	for (size_t i = 0; i < mock->model->nlive && n < cap; i++) {
		const mock_sandbox *sb = mock->model->live[i];
		pid_t pg[64];
		size_t k;

		if (mock_status_terminal(sb->status) || sb->guest == NULL)
			continue;
		k = mock_guest_pgids(sb->guest, pg, sizeof(pg) / sizeof(pg[0]));
		for (size_t j = 0; j < k && n < cap; j++) {
			out[n].pgid = pg[j];
			snprintf(out[n].sandbox_id, sizeof(out[n].sandbox_id), "%s", sb->id);
			out[n].tenant = sb->tenant;
			n++;
		}
	}
	pthread_mutex_unlock(&mock->model->lock);
	return n;
}

mock_tenant *mock_op_sandbox_tenant(sbx_mock *mock, const char *id, mock_err *e)
{
	const mock_sandbox *sb;
	mock_tenant *t = NULL;

	pthread_mutex_lock(&mock->model->lock);
	sb = mock_sandbox_find_any(mock->model, id);
	if (sb == NULL)
		mock_err_set(e, 404, "NOT_FOUND", "caller", "the caller's sandbox no longer exists");
	else if (mock_status_terminal(sb->status))
		mock_err_set(e, 410, "GONE", "caller", "the caller's sandbox %s is %s", sb->id,
			     mock_status_name(sb->status));
	else
		t = sb->tenant;
	pthread_mutex_unlock(&mock->model->lock);
	return t;
}

/* ---- guests and lifecycle hooks ---- */

void mock_on_state_change(mock_sandbox *sb, mock_status from, void *arg)
{
	if (sb->status != ST_RUNNING && from == ST_RUNNING)
		ingress_cut(arg, sb);
	if (sb->status == ST_PAUSED && from == ST_RUNNING)
		mock_guest_pause(sb->guest, true, NULL);
	if (sb->status == ST_DESTROYED)
		mock_destroy_guest(arg, sb);
}

unsigned mock_op_guest_disk_mib(sbx_mock *mock, unsigned disk_mib)
{
	unsigned cap = atomic_load(&mock->disk_max_mib);

	/* durable: the files must outlive the mock, so they stay on the host's
	 * disk, unbounded (README) */
	if (mock->state != NULL)
		return 0;
	return cap != 0 && cap < disk_mib ? cap : disk_mib;
}

/* ---- the server's self-signal listeners, through the core's hooks ---- */

static uint16_t self_guest_port(sbx_mock *mock)
{
	return mock->self_guest_port != NULL ? mock->self_guest_port(mock) : 0;
}

/* Takes ownership of fd: without listeners it is closed. */
static void self_listen_add(sbx_mock *mock, int fd, const char *id)
{
	if (mock->self_listen_add != NULL)
		mock->self_listen_add(mock, fd, id);
	else
		close(fd);
}

static void self_listen_remove(sbx_mock *mock, const char *id)
{
	if (mock->self_listen_remove != NULL)
		mock->self_listen_remove(mock, id);
}

static mock_guest_opts guest_opts(sbx_mock *mock, const mock_sandbox *sb)
{
	mock_guest_opts o = {.self_port = self_guest_port(mock),
			     .cgroups = mock->cgroups,
			     .mem_bytes = (uint64_t)sb->mem_mib * 1024 * 1024,
			     .pids_max = MOCK_GUEST_PIDS_MAX,
			     /* durable: the files must outlive the mock, so they
			      * stay on the host's disk (unbounded; README) */
			     .disk_mib = mock_op_guest_disk_mib(mock, sb->disk_mib),
			     .filter = mock->cell_filter,
			     /* its rootfs's image, or NULL: the host skeleton;
			      * a template's: its base's (its layer is seeded) */
			     .root = mock_image_root(mock_rootfs_image(
				     mock, sb->tpl_base[0] != '\0' ? sb->tpl_base : sb->rootfs)),
			     .trust_pem = mock->inet_ca_pem};

	return o;
}

/* A pooled guest bound to sb (its id, memory limit and disk; built with
 * the mock's self port and cgroups, the only other things a create
 * chooses), or NULL: none ready, or sb needs what no pooled cell has. A
 * cell that fails its bind is torn down, never offered again. */
static mock_guest *guest_from_pool(sbx_mock *mock, const mock_sandbox *sb, const mock_guest_opts *o)
{
	sbx_err berr = {{0}};
	mock_guest *g;

	/* the pool's cells are built on one root (the default rootfs's),
	 * without a template's layer */
	if (mock->pool == NULL || o->disk_mib == 0 || o->root != mock_image_root(mock->pool_image) ||
	    sb->tpl_id[0] != '\0')
		return NULL;
	g = mock_pool_take(mock->pool);
	if (g == NULL || mock_guest_bind(g, mock->work_dir, sb->id, o->mem_bytes, o->disk_mib, &berr) == 0)
		return g;
	if (!mock->quiet)
		fprintf(stderr, "sbx-mock: warm pool: a pooled cell failed its hand-out to %s (%s); "
				"building a fresh one\n", sb->id, berr.msg);
	mock_egress_unprewire(mock, g);
	if (!mock_pool_retire(mock->pool, g))
		mock_guest_free(g, true);
	mock_pool_settled(mock->pool);
	return NULL;
}

/* The self-signal listener and the simulated internet for a started g. */
static mock_guest *guest_attach(sbx_mock *mock, const mock_sandbox *sb, mock_guest *g, sbx_err *err)
{
	int fd = mock_guest_take_self_fd(g);

	/* the cell's self-signal listener: the mock accepts on it, and which
	 * listener accepted names the caller's sandbox (listen/self_listen.h). Without an
	 * endpoint it is closed (add closes it), so a guest's connection is
	 * refused at once */
	if (fd >= 0)
		self_listen_add(mock, fd, sb->id);
	if (g != NULL && mock_egress_wire(mock, sb, g, err) != 0) {
		self_listen_remove(mock, sb->id);
		mock_guest_free(g, true);
		return NULL;
	}
	return g;
}

mock_guest *mock_op_guest_start(sbx_mock *mock, mock_sandbox *sb, sbx_err *err)
{
	mock_guest_opts o = guest_opts(mock, sb);
	mock_guest *g = guest_attach(mock, sb, mock_guest_new(mock->work_dir, sb->id, mock->gmode, &o, err), err);

	if (mock->guest_booted != NULL)
		mock->guest_booted(mock, sb, g); /* a desktop's screen-0 (ops_computer.h) */
	return g;
}

mock_guest *mock_op_guest_start_create(sbx_mock *mock, mock_sandbox *sb, sbx_err *err)
{
	mock_guest_opts o = guest_opts(mock, sb);
	mock_guest *g = guest_from_pool(mock, sb, &o);
	bool pooled = g != NULL;

	if (g == NULL && mock->guest_seed != NULL && mock->guest_seed(mock, sb, err) != 0)
		return NULL;
	if (g == NULL)
		g = mock_guest_new(mock->work_dir, sb->id, mock->gmode, &o, err);
	g = guest_attach(mock, sb, g, err);
	if (pooled)
		mock_pool_settled(mock->pool);
	if (mock->guest_booted != NULL)
		mock->guest_booted(mock, sb, g);
	return g;
}

/* Kills the guest's processes (the tree goes when the guest is freed). */
void mock_destroy_guest(sbx_mock *mock, mock_sandbox *sb)
{
	/* a guest already killed had its listener removed then; one that
	 * deleted itself keeps it until reset (mock_op_destroy) */
	if (sb->self_deleted || mock_guest_dead(sb->guest)) {
		mock_op_guest_release(mock, sb);
		return;
	}
	self_listen_remove(mock, sb->id);
	if (sb->guest == NULL)
		return;
	/* with a pool: by the guest's teardown, after the answer (its
	 * processes are SIGKILLed here first either way) */
	if (mock->pool == NULL)
		mock_egress_unwire(mock, sb);
	kill_guest(mock, sb->guest);
	mock_op_guest_release(mock, sb);
}

void mock_op_guest_release(sbx_mock *mock, mock_sandbox *sb)
{
	mock_model *m = mock->model;

	if (sb->busy > 0 || sb->guest == NULL || (sb->status != ST_DESTROYED && sb->tenant != NULL) ||
	    !mock_guest_dead(sb->guest))
		return;
	if (m->nreap == m->capreap) {
		size_t cap = m->capreap == 0 ? 16 : m->capreap * 2;
		struct mock_guest **q = realloc(m->reap, cap * sizeof(*q));

		if (q == NULL)
			return; /* out of memory: freed at stop instead */
		m->reap = q;
		m->capreap = cap;
	}
	m->reap[m->nreap++] = sb->guest;
	sb->guest = NULL;
}

/* Takes the queue under the lock, frees it without. */
void mock_op_reap_guests(sbx_mock *mock)
{
	mock_model *m = mock->model;
	struct mock_guest **q;
	size_t n;

	pthread_mutex_lock(&m->lock);
	q = m->reap;
	n = m->nreap;
	m->reap = NULL;
	m->nreap = m->capreap = 0;
	pthread_mutex_unlock(&m->lock);
	/* with a warm pool, after the answer (issue 24): its teardown thread
	 * waits for the cells and removes the trees */
	for (size_t i = 0; i < n; i++) {
		if (mock->pool != NULL && mock_pool_retire(mock->pool, q[i]))
			continue;
		mock_egress_unwire_guest(mock, q[i]); /* if a destroy left it */
		mock_guest_free(q[i], true);
	}
	free(q);
}

void mock_free_guests(sbx_mock *mock, bool remove)
{
	mock_model *m = mock->model;

	mock_op_reap_guests(mock);
	for (size_t i = 0; i < m->nsbx; i++) {
		mock_guest_free(m->sbx[i]->guest, remove);
		m->sbx[i]->guest = NULL;
	}
	for (size_t i = 0; i < m->ngrave; i++) {
		mock_guest_free(m->grave[i]->guest, remove);
		m->grave[i]->guest = NULL;
	}
}

/* A reset's part of the internet: API stubs and its journal gone, the
 * --internet-stubs file's stubs back. */
static void internet_reset(sbx_mock *mock)
{
	sbx_err err = {{0}};

	if (mock->inet_book == NULL)
		return;
	mock_inet_stubs_clear(mock->inet_book);
	mock_inet_journal_clear(mock->inet_book);
	/* read at start, so it was good then; a file changed since is said */
	if (mock->inet_stubs_file != NULL && mock_inet_stubs_add_file(mock->inet_book, mock->inet_stubs_file, &err) != 0)
		fprintf(stderr, "sbx-mock: reset: --internet-stubs: %s\n", err.msg);
}

void mock_reset_all(sbx_mock *mock)
{
	mock_model *m = mock->model;

	if (mock->builds_cancel != NULL)
		mock->builds_cancel(mock); /* their tenants go */
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->nsbx; i++) {
		mock_sandbox *sb = m->sbx[i];

		self_listen_remove(mock, sb->id);
		if (!mock_guest_dead(sb->guest))
			mock_egress_unwire(mock, sb);
		kill_guest(mock, sb->guest);
		sb->tenant = NULL; /* dropped: released like a destroyed one */
		mock_op_guest_release(mock, sb);
	}
	mock_model_reset(m);
	pthread_mutex_unlock(&m->lock);
	mock_op_reap_guests(mock);
	mock_faults_clear(mock->faults);
	mock_faults_reseed(mock->faults, mock->seed);
	mock_journal_clear(mock->journal);
	internet_reset(mock);
}

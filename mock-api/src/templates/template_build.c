/* template_build: a template's build, for real (TEMPLATES.md; templates.h).
 *
 * Each build is a thread of its own: it starts a builder cell (the cell
 * machinery of a sandbox) on the base's rootfs image, with a disk and a
 * memory limit of the build's, runs the Dockerfile's steps in it one by
 * one (RUN by exec, its output into the template's log a batch of lines
 * at a time; followers: template_log.c) and,
 * when every step exited 0, copies the cell's upper layer (what the steps
 * changed of the root) to <work>/templates/<id>/layer: the template's
 * layer, which a sandbox booted on the template gets as the start of its
 * own upper layer, over the same base image.
 *
 * The create (templates.c) starts it under the model lock with what it
 * runs copied (steps, base, limits). The template's status and log are
 * the model's; the build looks its template up by id at each change, so a
 * deleted one ends the build. Never reports ready without the layer made. */
#define _GNU_SOURCE
#include "templates/templates_internal.h"
#include "templates/templates.h"
#include "ops/ops_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest/cell_pool.h"
#include "images/images.h"
#include "internet/internet.h" /* MOCK_INET_BUILDER_PREFIX */
#include "ops/core.h"
#include "templates/template_layer.h"
#include "ops/rootfs.h"
#include "sbx/sys.h"

/* a longer output line goes in pieces (a piece is under TPL_LINE_MAX) */
#define BUILD_LINE_PIECE 4000
/* the output lines a failure's message repeats, and how much of each */
#define BUILD_TAIL_LINES 8
#define BUILD_TAIL_LINE_MAX 256
/* a step's output goes into the log at most every BUILD_FLUSH_MS (or
 * once BUILD_BATCH_MAX bytes wait): a flood then costs a lock and a
 * follower's wake-up per batch, not per read of the pipe (16 KiB). A line
 * after a burst waits for the next read's timeout at most (100 ms). */
#define BUILD_FLUSH_MS 20
#define BUILD_BATCH_MAX (1024 * 1024)

/* The settings a build runs with, copied under the model lock at create:
 * PUT /_mock/settings changes later builds, never a running one. */
typedef struct build_limits {
	unsigned timeout_s, disk_mib, mem_mib;
} build_limits;

typedef struct build {
	sbx_mock *mock;
	mock_tenant *t;      /* tenants outlive a reset (dead_tenants) */
	char id[64];         /* the template's */
	pthread_t th;
	mock_guest *g;       /* the builder, under the model lock */
	bool pooled;         /* g came from the warm pool, not yet settled */
	uint32_t net_k;      /* its builder address index (mock_egress_wire_builder) */
	bool cancel, done;   /* under the model lock */
	build_limits lim;    /* set at create, read-only after */
	cJSON *steps;        /* the template's, copied at create; the thread's */
	char base[64];       /* its base rootfs, copied at create */
	struct build *next;
	/* the thread's own */
	sbx_strbuf part;     /* a line not yet ended */
	sbx_strbuf batch;    /* ended lines not yet in the log, '\n' after each */
	int64_t flushed_ms;  /* when the batch last went into the log */
	char tail[BUILD_TAIL_LINES][BUILD_TAIL_LINE_MAX]; /* for a failure's message */
	unsigned ntail;
} build;

/* The mock's builds, made at its first build or log follower and freed
 * by mock_op_templates_free once nothing can reach it (after the HTTP
 * daemon stopped): a create that comes while the mock stops sees
 * stopping and starts nothing, where a freed and remade list let it start
 * a thread no one joined. Under the model lock. */
struct mock_builds {
	build *list;
	bool stopping;
	uint32_t last_net_k; /* the last builder address index handed out */
	/* Signalled when a build's log grows or its status changes: a
	 * follower waits on it instead of polling, so followLogs sees a line
	 * as it is written. The mock's own (waited on with its model lock;
	 * several mocks live in one process), on CLOCK_MONOTONIC. */
	pthread_cond_t grew;
};

/* Lock held: the mock's builds, made at first use; NULL when out of
 * memory. */
static struct mock_builds *builds_of(sbx_mock *mock)
{
	pthread_condattr_t ca;
	struct mock_builds *bs = mock->builds;

	if (bs != NULL)
		return bs;
	bs = calloc(1, sizeof(*bs));
	if (bs == NULL)
		return NULL;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&bs->grew, &ca) != 0) {
		free(bs);
		bs = NULL;
	}
	pthread_condattr_destroy(&ca);
	mock->builds = bs;
	return bs;
}

/* Lock held: wakes the followers (a line or a status). mock->builds is
 * there: a build or follower made it. */
static void log_grew(sbx_mock *mock)
{
	if (mock->builds != NULL)
		pthread_cond_broadcast(&mock->builds->grew);
}

/* ---- the template, under the lock ---- */

/* Lock held: the build's template, or NULL (deleted, or the build cancelled). */
static cJSON *tpl_of(build *b)
{
	if (b->cancel)
		return NULL;
	return mock_template_find(b->t, b->id);
}

static void log_line(build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_line(build *b, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	cJSON *tpl;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&b->mock->model->lock);
	tpl = tpl_of(b);
	if (tpl != NULL)
		mock_template_log(tpl, line);
	log_grew(b->mock);
	pthread_mutex_unlock(&b->mock->model->lock);
}

/* The build's end: its status, and with --state-dir the template as it
 * ended in the state log (no request logs it). A cancelled build: nothing. */
static void set_status(build *b, const char *status, double size)
{
	sbx_mock *mock = b->mock;
	sbx_err err = {{0}};
	cJSON *tpl;
	bool ended;

	pthread_mutex_lock(&mock->model->lock);
	tpl = tpl_of(b);
	if (tpl != NULL)
		mock_template_set_status(mock->model, tpl, status, size);
	ended = tpl != NULL && mock_template_done(tpl);
	log_grew(mock);
	pthread_mutex_unlock(&mock->model->lock);
	if (ended && mock->persist_tenant != NULL && mock->persist_tenant(mock, b->t, &err) != 0 &&
	    !mock->quiet)
		fprintf(stderr, "sbx-mock: template %s: its end could not be made durable: %s\n", b->id,
			err.msg);
}

/* ---- a step's output, a read at a time ---- */

/* A step prints as much as it likes (apt, npm, a compiler; a flood of
 * base64): each read of its output is cut into lines with memchr, its
 * ended lines go into the log under one lock, and the log keeps its last
 * lines only (model_template.c), so a build's cost follows the bytes, not
 * a lock and a printf per byte. */

/* The thread's own: one more line for the failure's tail. */
static void tail_keep(build *b, const char *s, size_t n)
{
	char *t = b->tail[b->ntail++ % BUILD_TAIL_LINES];

	if (n >= BUILD_TAIL_LINE_MAX)
		n = BUILD_TAIL_LINE_MAX - 1;
	memcpy(t, s, n);
	t[n] = '\0';
}

/* One ended line (the pending part first, then s) into the batch. */
static void batch_line(build *b, const char *s, size_t n)
{
	if (b->part.len > 0) {
		sbx_strbuf_append(&b->part, s, n);
		s = b->part.data;
		n = b->part.len;
	}
	tail_keep(b, s, n);
	sbx_strbuf_append(&b->batch, s, n);
	sbx_strbuf_append(&b->batch, "\n", 1);
	b->part.len = 0;
}

/* Lock held: the batch into the template's log (tpl, NULL when gone). */
static void batch_put(build *b, cJSON *tpl)
{
	if (b->batch.len == 0)
		return;
	if (tpl != NULL)
		mock_template_log_add(tpl, b->batch.data, b->batch.len);
	log_grew(b->mock);
	b->batch.len = 0;
	b->flushed_ms = sbx_mono_ms();
}

/* Whether the batch is due: old or big enough. */
static bool batch_due(const build *b)
{
	return b->batch.len > 0 &&
	       (b->batch.len >= BUILD_BATCH_MAX || sbx_mono_ms() - b->flushed_ms >= BUILD_FLUSH_MS);
}

static void batch_flush(build *b)
{
	if (b->batch.len == 0)
		return;
	pthread_mutex_lock(&b->mock->model->lock);
	batch_put(b, tpl_of(b));
	pthread_mutex_unlock(&b->mock->model->lock);
}

static void on_output(void *arg, int which, const char *buf, size_t n)
{
	build *b = arg;
	const char *p = buf, *end = buf + n;

	(void)which; /* one log: stdout and stderr interleaved as they came */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl != NULL ? nl : end) - p);
		size_t room = BUILD_LINE_PIECE - b->part.len; /* part.len < BUILD_LINE_PIECE */

		if (len >= room) { /* a line without end: in pieces */
			batch_line(b, p, room);
			p += room;
		} else if (nl != NULL) {
			batch_line(b, p, len);
			p = nl + 1;
		} else { /* the rest waits for its end */
			sbx_strbuf_append(&b->part, p, len);
			p = end;
		}
	}
	if (batch_due(b))
		batch_flush(b);
}

/* The step ended: a last line without its newline goes in as it is. */
static void flush_part(build *b)
{
	if (b->part.len > 0)
		batch_line(b, "", 0);
	batch_flush(b);
}

static bool on_abort(void *arg)
{
	build *b = arg;
	cJSON *tpl;

	/* after each read of the step's output, and each 100 ms without one:
	 * a batch held back comes out here once due, under the same lock */
	pthread_mutex_lock(&b->mock->model->lock);
	tpl = tpl_of(b);
	if (batch_due(b))
		batch_put(b, tpl);
	pthread_mutex_unlock(&b->mock->model->lock);
	return tpl == NULL;
}

/* ---- the steps ---- */

typedef struct build_env {
	char *kv[MOCK_TPL_ENV_MAX]; /* "K=V", malloc'd */
	bool by_env[MOCK_TPL_ENV_MAX]; /* set by ENV: an ARG of its name does not override it */
	size_t n;
	char cwd[1024];
	char user[MOCK_TPL_USER_MAX + 1];
} build_env;

/* K=V into the steps' environment; 0, or -1 with why. The parser bounds
 * the names (MOCK_TPL_ENV_MAX): one past them here fails the build, it is
 * never dropped. As Docker, ENV wins over an ARG of the same name. */
static int env_set(build_env *e, const char *k, const char *v, bool by_env, char *why, size_t cap)
{
	size_t kl = strlen(k), i;
	char *s = NULL;

	for (i = 0; i < e->n; i++) {
		if (strncmp(e->kv[i], k, kl) == 0 && e->kv[i][kl] == '=')
			break;
	}
	if (i < e->n && e->by_env[i] && !by_env)
		return 0;
	if (i == sizeof(e->kv) / sizeof(e->kv[0])) {
		snprintf(why, cap, "%.80s: more than %d variables in the build's environment", k, MOCK_TPL_ENV_MAX);
		return -1;
	}
	if (asprintf(&s, "%s=%s", k, v) < 0) {
		snprintf(why, cap, "%.80s: out of memory for its value (%zu bytes)", k, strlen(v));
		return -1;
	}
	if (i < e->n)
		free(e->kv[i]);
	else
		e->n++;
	e->kv[i] = s;
	e->by_env[i] = by_env;
	return 0;
}

static void env_free(build_env *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->kv[i]);
}

/* Runs argv in the builder (as e->user when one was set); its exit code,
 * or -1 with why (timed out, cancelled, not started). */
static int run_argv(build *b, mock_guest *g, build_env *e, const char *const *argv, size_t argc,
		    int64_t deadline_ms, char *why, size_t cap)
{
	ops_guest_cmd c = {.spec = {.env = (const char *const *)e->kv, .nenv = e->n, .cwd = e->cwd},
			   .user = e->user, .timeout_ms = deadline_ms - sbx_mono_ms()};
	mock_exec_sink sink = {.output = on_output, .gone = on_abort, .ctx = b};
	ops_guest_ran ran;

	if (argc == 0) {
		snprintf(why, cap, "an empty command");
		return -1;
	}
	if (c.timeout_ms <= 0) {
		snprintf(why, cap, "the build's time limit passed");
		return -1;
	}
	c.spec.cmd = argv[0];
	c.spec.args = argv + 1;
	c.spec.nargs = argc - 1;
	ops_guest_run(g, &c, &sink, &ran);
	flush_part(b);
	if (!ran.started)
		snprintf(why, cap, "%s", ran.error);
	else if (ran.timed_out)
		snprintf(why, cap, "the build's time limit (%lld s) passed", (long long)b->lim.timeout_s);
	else if (ran.aborted)
		snprintf(why, cap, "the build was cancelled (template deleted, or the mock stopping)");
	else
		return ran.exit_code;
	return -1;
}

/* One step; 0, or -1 with why (the step's failure). */
static int run_step(build *b, mock_guest *g, build_env *e, const cJSON *step, int64_t deadline_ms,
		    char *why, size_t cap)
{
	const char *op = cJSON_GetObjectItemCaseSensitive(step, "op")->valuestring;
	const char *arg = cJSON_GetObjectItemCaseSensitive(step, "arg")->valuestring;
	const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(step, "pairs");
	const cJSON *argv = cJSON_GetObjectItemCaseSensitive(step, "argv");
	const cJSON *kv;
	int rc;

	if (strcmp(op, "RUN") == 0) {
		const char *sh[3] = {"/bin/sh", "-c", arg};
		const char *av[MOCK_TPL_RUN_ARGS_MAX];
		size_t n = 0;
		const cJSON *it;

		cJSON_ArrayForEach(it, argv) {
			if (n == MOCK_TPL_RUN_ARGS_MAX) {
				snprintf(why, cap, "RUN [...]: more than %d arguments", MOCK_TPL_RUN_ARGS_MAX);
				return -1;
			}
			av[n++] = it->valuestring;
		}
		rc = argv != NULL ? run_argv(b, g, e, av, n, deadline_ms, why, cap)
				  : run_argv(b, g, e, sh, 3, deadline_ms, why, cap);
		if (rc > 0)
			snprintf(why, cap, "exit status %d", rc);
		return rc == 0 ? 0 : -1;
	}
	if (strcmp(op, "WORKDIR") == 0) {
		const char *mk[3] = {"mkdir", "-p", NULL};
		char path[1024];
		build_env root = *e;

		int len = arg[0] == '/' ? snprintf(path, sizeof(path), "%s", arg)
					: snprintf(path, sizeof(path), "%s/%s", e->cwd, arg);

		if (len < 0 || (size_t)len >= sizeof(path) || (size_t)len >= sizeof(e->cwd)) {
			snprintf(why, cap, "WORKDIR: the path is longer than %zu bytes", sizeof(e->cwd) - 1);
			return -1;
		}
		mk[2] = path;
		root.user[0] = '\0';
		root.cwd[0] = '/';
		root.cwd[1] = '\0';
		if (run_argv(b, g, &root, mk, 3, deadline_ms, why, cap) != 0) {
			if (why[0] == '\0')
				snprintf(why, cap, "mkdir -p %.200s failed", path);
			return -1;
		}
		snprintf(e->cwd, sizeof(e->cwd), "%s", path);
		return 0;
	}
	if (strcmp(op, "USER") == 0) {
		size_t n = strcspn(arg, ":");

		if (n >= sizeof(e->user)) {
			snprintf(why, cap, "USER: the name is %zu bytes; at most %d", n, MOCK_TPL_USER_MAX);
			return -1;
		}
		snprintf(e->user, sizeof(e->user), "%.*s", (int)n, arg);
		return 0;
	}
	/* ENV and ARG (with a value: no --build-arg reaches the API; one
	 * before FROM is no step, the parser's scope) are the environment of
	 * the steps after them */
	if (strcmp(op, "ENV") == 0 || strcmp(op, "ARG") == 0) {
		cJSON_ArrayForEach(kv, pairs) {
			if (cJSON_GetArraySize(kv) == 2 &&
			    env_set(e, cJSON_GetArrayItem(kv, 0)->valuestring, cJSON_GetArrayItem(kv, 1)->valuestring,
				    strcmp(op, "ENV") == 0, why, cap) != 0)
				return -1;
		}
	}
	/* LABEL, CMD, ENTRYPOINT: recorded in the log (a sandbox's process
	 * is what exec starts: the API has no image command) */
	return 0;
}

/* ---- the thread ---- */

static void fail_build(build *b, const char *step, const char *why)
{
	log_line(b, "build failed at %.200s: %.700s", step, why);
	if (b->ntail > 0) {
		unsigned first = b->ntail > BUILD_TAIL_LINES ? b->ntail - BUILD_TAIL_LINES : 0;

		log_line(b, "the log's tail:");
		for (unsigned i = first; i < b->ntail; i++)
			log_line(b, "| %s", b->tail[i % BUILD_TAIL_LINES]);
	}
	set_status(b, "failed", 0);
}

/* A warm-pool cell bound as the builder (its name, the build's memory and
 * disk limits), or NULL: no pool, none idle, or the base is not the image
 * the pool's cells are built on. A pooled cell is a fresh one started
 * ahead (issue 24): nothing ran in it, and the bind sets the limits a
 * fresh builder gets at its start. One that fails its bind is retired. */
static mock_guest *builder_from_pool(build *b, const char *name, const mock_guest_opts *o)
{
	sbx_mock *mock = b->mock;
	sbx_err err = {{0}};
	mock_guest *g;

	if (mock->pool == NULL || o->root != mock_image_root(mock->pool_image) || o->disk_mib == 0)
		return NULL;
	g = mock_pool_take(mock->pool);
	if (g == NULL)
		return NULL;
	if (mock_guest_bind(g, mock->work_dir, name, o->mem_bytes, o->disk_mib, &err) == 0) {
		b->pooled = true; /* settled when the build ends (build_main) */
		return g;
	}
	if (!mock->quiet)
		fprintf(stderr, "sbx-mock: warm pool: a pooled cell failed its hand-out to %s (%s); "
				"building a fresh one\n", name, err.msg);
	mock_egress_unprewire(mock, g);
	if (!mock_pool_retire(mock->pool, g))
		mock_guest_free(g, true);
	mock_pool_settled(mock->pool);
	return NULL;
}

/* The hand-out of a pooled builder ended (its build, or its wiring). */
static void builder_settled(build *b)
{
	if (b->pooled)
		mock_pool_settled(b->mock->pool);
	b->pooled = false;
}

static mock_guest *start_builder(build *b, const char *base, char *why, size_t cap)
{
	sbx_mock *mock = b->mock;
	const mock_image *im = mock_rootfs_image(mock, base);
	mock_guest_opts o = {.cgroups = mock->cgroups, .pids_max = MOCK_GUEST_PIDS_MAX, .filter = mock->cell_filter,
			     .root = mock_image_root(im), .trust_pem = mock->inet_ca_pem};
	char name[80];
	sbx_err err = {{0}};
	mock_guest *g;

	if (mock->gmode != GUEST_CONTAINED) {
		snprintf(why, cap, "template builds need contained guests (this mock runs plain guests)");
		return NULL;
	}
	if (im == NULL) {
		snprintf(why, cap,
			 "no rootfs image for base %.64s: this mock has none (%.400s). Build one with "
			 "mock-api/images/build-image devbox:1 (sbx-mock then uses the default store; --images STORE "
			 "for another; mock-api/IMAGES.md)",
			 base, mock->rootfs_note);
		return NULL;
	}
	o.mem_bytes = (uint64_t)b->lim.mem_mib * 1024 * 1024;
	o.disk_mib = b->lim.disk_mib;
	snprintf(name, sizeof(name), MOCK_INET_BUILDER_PREFIX "%s", b->id);
	g = builder_from_pool(b, name, &o);
	if (g == NULL)
		g = mock_guest_new(mock->work_dir, name, mock->gmode, &o, &err);
	if (g == NULL)
		snprintf(why, cap, "the builder cell did not start: %s", err.msg);
	else if (mock_guest_self_fd(g) >= 0)
		close(mock_guest_take_self_fd(g)); /* a builder signals nothing */
	return g;
}

/* The builder's egress: the simulated internet, all destinations allowed,
 * when this mock enforces egress; else none, said once in the log. */
static int join_network(build *b, mock_guest *g, char *why, size_t cap)
{
	sbx_mock *mock = b->mock;
	sbx_err err = {{0}};
	char ip[16];

	if (mock->inet == NULL) {
		log_line(b, "network: none: egress is not enforced on this mock (%.500s); the steps see loopback only",
			 mock->egress_note);
		return 0;
	}
	if (mock_egress_wire_builder(mock, b->net_k, g, &err) != 0) {
		snprintf(why, cap, "joining the builder to the simulated internet: %.900s", err.msg);
		return -1;
	}
	mock_egress_builder_ip(b->net_k, ip, sizeof(ip));
	log_line(b, "network: the simulated internet at %s, every destination allowed (INTERNET.md)", ip);
	return 0;
}

/* Its template is building; false when it went (deleted, or cancelled,
 * before the thread ran): nothing to build. */
static bool build_begin(build *b)
{
	mock_model *m = b->mock->model;
	cJSON *tpl;

	pthread_mutex_lock(&m->lock);
	tpl = tpl_of(b);
	if (tpl != NULL)
		mock_template_set_status(m, tpl, "building", 0);
	pthread_mutex_unlock(&m->lock);
	return tpl != NULL;
}

/* The builder cell started, published (a cancel kills it) and joined to
 * its network: 0, or -1 with why (*g set when the cell started). */
static int builder_up(build *b, mock_guest **g, char *why, size_t cap)
{
	log_line(b, "building on %s (limits: %u s, disk %u MiB, memory %u MiB)", b->base, b->lim.timeout_s,
		 b->lim.disk_mib, b->lim.mem_mib);
	*g = start_builder(b, b->base, why, cap);
	pthread_mutex_lock(&b->mock->model->lock);
	b->g = *g;
	pthread_mutex_unlock(&b->mock->model->lock);
	return *g == NULL || join_network(b, *g, why, cap) != 0 ? -1 : 0;
}

/* The Dockerfile's steps, in order, until one fails: 0, or -1 with the
 * failed step's name in step and why. */
static int run_steps(build *b, mock_guest *g, build_env *env, int64_t deadline, char *step, size_t step_cap,
		     char *why, size_t cap)
{
	int n = cJSON_GetArraySize(b->steps), i = 0;
	const cJSON *st;

	cJSON_ArrayForEach(st, b->steps) {
		i++;
		snprintf(step, step_cap, "step %d/%d (line %d) %s", i, n,
			 cJSON_GetObjectItemCaseSensitive(st, "line")->valueint,
			 cJSON_GetObjectItemCaseSensitive(st, "op")->valuestring);
		log_line(b, "%s %.900s", step, cJSON_GetObjectItemCaseSensitive(st, "arg")->valuestring);
		why[0] = '\0';
		if (run_step(b, g, env, st, deadline, why, cap) != 0)
			return -1;
	}
	return 0;
}

/* Every step exited 0: the layer saved and the template ready, or failed. */
static void keep_layer(build *b, mock_guest *g, char *why, size_t cap)
{
	double size;

	log_line(b, "saving the template's layer");
	size = mock_tpl_layer_save(b->mock, b->id, g, b->lim.disk_mib, why, cap);
	if (size < 0) {
		fail_build(b, "saving the layer", why);
		return;
	}
	log_line(b, "build finished: layer of %.0f bytes over %s", size, b->base);
	set_status(b, "ready", size);
}

/* The build's end, however it came: the builder settled, unwired and
 * freed, the build done, a layer no template owns removed. */
static void build_end(build *b, mock_guest *g)
{
	sbx_mock *mock = b->mock;
	bool gone;

	/* settled only now: a pool refill waits for the hand-outs in flight
	 * (POOL_YIELD_MS at most), and a new cell built beside the steps
	 * took the cores and locks they need (a one-RUN build went from
	 * 4.9-6.2 ms to 3.1-4.3 ms to ready) */
	builder_settled(b);
	pthread_mutex_lock(&mock->model->lock);
	/* a stop's cancel leaves the template (durable: its layer is kept) */
	gone = (b->cancel && !mock->builds->stopping) || mock_template_find(b->t, b->id) == NULL;
	b->g = NULL;
	b->done = true;
	pthread_mutex_unlock(&mock->model->lock);
	/* deleted or reset meanwhile: what it saved of a layer (the delete's
	 * or reset's removal may have run before) is no one's */
	if (gone)
		mock_build_forget(mock, b->id);
	mock_egress_unwire_guest(mock, g); /* its link and chain, however it ended */
	mock_guest_free(g, true);
}

/* A build's thread: begin, the builder up, the steps, the layer, the end. */
static void *build_main(void *arg)
{
	build *b = arg;
	build_env env = {.cwd = "/"};
	char why[1024] = "", step[160] = "setup";
	mock_guest *g = NULL;

	sbx_strbuf_init(&b->part);
	sbx_strbuf_init(&b->batch);
	if (build_begin(b)) {
		int64_t deadline = sbx_mono_ms() + (int64_t)b->lim.timeout_s * 1000;

		if (builder_up(b, &g, why, sizeof(why)) != 0 ||
		    run_steps(b, g, &env, deadline, step, sizeof(step), why, sizeof(why)) != 0)
			fail_build(b, step, why);
		else
			keep_layer(b, g, why, sizeof(why));
	}
	build_end(b, g);
	env_free(&env);
	sbx_strbuf_free(&b->part);
	sbx_strbuf_free(&b->batch);
	return NULL;
}

/* Lock held: a builder address index no running build holds (1..65535;
 * more builds than that at once cannot start: 0). */
static uint32_t net_k_take(struct mock_builds *bs)
{
	for (uint32_t tries = 0; tries < 0xffff; tries++) {
		uint32_t k = bs->last_net_k % 0xffff + 1;
		bool held = false;

		bs->last_net_k = k;
		for (const build *o = bs->list; o != NULL && !held; o = o->next)
			held = o->net_k == k;
		if (!held)
			return k;
	}
	return 0;
}

void mock_op_template_builder_tenant(sbx_mock *mock, const char *name, char *key, size_t cap)
{
	size_t plen = strlen(MOCK_INET_BUILDER_PREFIX);

	if (mock->builds == NULL || strncmp(name, MOCK_INET_BUILDER_PREFIX, plen) != 0)
		return;
	for (const build *b = mock->builds->list; b != NULL; b = b->next) {
		if (strcmp(b->id, name + plen) == 0 && b->t != NULL && b->t->key != NULL) {
			snprintf(key, cap, "%s", b->t->key);
			return;
		}
	}
}

/* Lock held: a build of t's template tpl at builder address net_k, what
 * it runs and its limits copied (settings change later builds); or NULL. */
static build *build_new(sbx_mock *mock, mock_tenant *t, const cJSON *tpl, uint32_t net_k)
{
	const mock_settings *set = &mock->model->set;
	build *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->steps = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(tpl, "_steps"), true);
	if (b->steps == NULL) {
		free(b);
		return NULL;
	}
	b->mock = mock;
	b->t = t;
	b->net_k = net_k;
	snprintf(b->id, sizeof(b->id), "%s", cJSON_GetObjectItemCaseSensitive(tpl, "id")->valuestring);
	snprintf(b->base, sizeof(b->base), "%s", cJSON_GetObjectItemCaseSensitive(tpl, "base")->valuestring);
	/* the disk is the storage the template's create reserved
	 * (model_template.c: at most tpl_build_disk_mib) */
	b->lim = (build_limits){set->tpl_build_timeout_s, mock_template_disk_mib(tpl), set->tpl_build_mem_mib};
	return b;
}

static void build_free(build *b)
{
	if (b != NULL)
		cJSON_Delete(b->steps);
	free(b);
}

/* Lock held: joins and frees the builds that ended. */
static void prune_done(struct mock_builds *bs)
{
	build **pp = &bs->list;

	while (*pp != NULL) {
		build *b = *pp;

		if (b->done) {
			*pp = b->next;
			pthread_join(b->th, NULL); /* it ended: no wait */
			build_free(b);
		} else {
			pp = &b->next;
		}
	}
}

void mock_build_start(sbx_mock *mock, mock_tenant *t, cJSON *tpl)
{
	struct mock_builds *bs = builds_of(mock);
	const char *why = "could not start a build thread";
	build *b = NULL;
	char line[80];

	if (bs != NULL && bs->stopping) {
		why = "the mock is stopping";
	} else if (bs != NULL) {
		prune_done(bs);
		b = build_new(mock, t, tpl, net_k_take(bs));
		if (b != NULL && b->net_k != 0 && pthread_create(&b->th, NULL, build_main, b) == 0) {
			b->next = bs->list;
			bs->list = b;
			return;
		}
	}
	build_free(b);
	snprintf(line, sizeof(line), "build failed: %s", why);
	mock_template_log(tpl, line);
	mock_template_set_status(mock->model, tpl, "failed", 0);
	log_grew(mock);
}

/* Lock held: ends every build's steps (the threads see the cancel). */
static void cancel_all(struct mock_builds *bs)
{
	for (build *b = bs->list; b != NULL; b = b->next) {
		b->cancel = true;
		if (b->g != NULL)
			mock_guest_signal(b->g, SIGKILL);
	}
}

void mock_op_templates_cancel(sbx_mock *mock)
{
	pthread_mutex_lock(&mock->model->lock);
	if (mock->builds != NULL)
		cancel_all(mock->builds);
	pthread_mutex_unlock(&mock->model->lock);
	mock_tpl_layers_drop(mock, true); /* their templates go with the reset */
}

/* Joins and frees the builds of list (taken off the mock's under the
 * lock; called without it: a build's end takes it). */
static void join_all(build *list)
{
	while (list != NULL) {
		build *next = list->next;

		pthread_join(list->th, NULL);
		build_free(list);
		list = next;
	}
}

void mock_op_templates_stop(sbx_mock *mock)
{
	struct mock_builds *bs;
	build *list = NULL;

	pthread_mutex_lock(&mock->model->lock);
	/* made if there is none yet: a create still in a worker must see
	 * stopping (the HTTP daemon stops after this) */
	bs = builds_of(mock);
	if (bs != NULL) {
		bs->stopping = true;
		cancel_all(bs);
		list = bs->list;
		bs->list = NULL;
	}
	pthread_mutex_unlock(&mock->model->lock);
	join_all(list);
	mock_tpl_layers_drop(mock, false);
}

void mock_op_templates_free(sbx_mock *mock)
{
	struct mock_builds *bs = mock->builds;

	if (bs == NULL)
		return;
	/* none left after a stop (stopping held every create off): a mock
	 * built by hand (the fuzzers') frees its builds here */
	pthread_mutex_lock(&mock->model->lock);
	bs->stopping = true;
	cancel_all(bs);
	pthread_mutex_unlock(&mock->model->lock);
	join_all(bs->list);
	pthread_cond_destroy(&bs->grew);
	free(bs);
	mock->builds = NULL;
}

pthread_cond_t *mock_builds_grew(sbx_mock *mock)
{
	struct mock_builds *bs = builds_of(mock);

	return bs != NULL ? &bs->grew : NULL;
}

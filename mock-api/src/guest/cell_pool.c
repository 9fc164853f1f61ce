/* cell_pool: the warm pool's threads and queues; see cell_pool.h.
 *
 * Lock order: p->lock is a leaf. No guest is built, bound or freed under
 * it: builds and teardowns take milliseconds (a clone with six namespaces,
 * waiting for a cell to die) and creates must never wait for them. */
#define _GNU_SOURCE
#include "guest/cell_pool.h"

#include "sbx/sys.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POOL_BACKOFF_MIN_MS 100
#define POOL_BACKOFF_MAX_MS 10000
/* How long a refill waits for the hand-outs in flight to finish: a new
 * cell's network namespace takes the locks a hand-out's link needs, so
 * building while a create binds makes that create slower; bounded, so
 * that a steady stream of creates does not starve the pool. */
#define POOL_YIELD_MS 25

struct mock_pool {
	unsigned size;
	char work_dir[PATH_MAX];
	mock_guest_opts opts;
	bool quiet;
	int (*prepare)(void *arg, mock_guest *g, sbx_err *err);
	void (*discard)(void *arg, mock_guest *g);
	void (*on_teardown)(void *arg, mock_guest *g);
	void *hook_arg;
	pthread_mutex_t lock;
	pthread_cond_t refill_cv;   /* a guest was taken, or stop */
	pthread_cond_t retire_cv;   /* a guest was retired, or stop */
	mock_guest *idle[MOCK_POOL_MAX];
	unsigned nidle, building, binding; /* binding: taken, not yet settled */
	mock_guest *dying[MOCK_POOL_RETIRE_MAX];
	unsigned ndying, tearing;   /* queued; being freed by the thread */
	bool stopping;
	pthread_t refill, teardown;
	bool refill_up, teardown_up;
	int64_t backoff_ms;         /* after a failed build; 0 after a good one */
	uint64_t built, handed_out, misses, build_failures, retired;
	char last_error[sizeof(((sbx_err *)0)->msg)];
};

/* Placeholder names, unique in this process (two embedded mocks may share
 * a work dir's parent) and never a sandbox id (those start "sb-"). */
static atomic_uint_fast64_t g_pool_seq;

/* One pooled guest, built outside the lock. */
static mock_guest *build_one(mock_pool *p, sbx_err *err)
{
	char name[64];

	mock_guest *g;

	snprintf(name, sizeof(name), "pool-%ld-%llu", (long)getpid(),
		 (unsigned long long)atomic_fetch_add(&g_pool_seq, 1) + 1);
	g = mock_guest_new(p->work_dir, name, GUEST_CONTAINED, &p->opts, err);
	if (g != NULL && p->prepare != NULL && p->prepare(p->hook_arg, g, err) != 0) {
		mock_guest_free(g, true);
		g = NULL;
	}
	return g;
}

/* A retired guest: its sandbox's parts outside it go, then it. */
static void teardown_one(mock_pool *p, mock_guest *g)
{
	if (p->on_teardown != NULL)
		p->on_teardown(p->hook_arg, g);
	mock_guest_free(g, true);
}

/* A guest never handed out: its prepared parts go back, then it. */
static void discard_one(mock_pool *p, mock_guest *g)
{
	if (p->discard != NULL)
		p->discard(p->hook_arg, g);
	mock_guest_free(g, true);
}

/* The result of a build, under the lock: kept, or a failure that slows
 * the next attempt (a host that cannot build now must not be hammered). */
static void built_locked(mock_pool *p, mock_guest *g, const sbx_err *err)
{
	if (g != NULL) {
		p->idle[p->nidle++] = g;
		p->built++;
		p->backoff_ms = 0;
		return;
	}
	p->build_failures++;
	snprintf(p->last_error, sizeof(p->last_error), "%s", err->msg);
	p->backoff_ms = p->backoff_ms == 0 ? POOL_BACKOFF_MIN_MS : p->backoff_ms * 2;
	if (p->backoff_ms > POOL_BACKOFF_MAX_MS)
		p->backoff_ms = POOL_BACKOFF_MAX_MS;
	if (!p->quiet)
		fprintf(stderr, "sbx-mock: warm pool: building a cell failed (next try in %lld ms): %s\n",
			(long long)p->backoff_ms, err->msg);
}

static void *refill_main(void *arg)
{
	mock_pool *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stopping) {
		sbx_err err = {{0}};
		mock_guest *g;

		if (p->nidle + p->building >= p->size) {
			pthread_cond_wait(&p->refill_cv, &p->lock);
			continue;
		}
		if (p->binding > 0) {
			struct timespec until = sbx_mono_deadline(POOL_YIELD_MS);

			while (!p->stopping && p->binding > 0 &&
			       pthread_cond_timedwait(&p->refill_cv, &p->lock, &until) != ETIMEDOUT)
				;
			if (p->stopping)
				break;
		}
		if (p->backoff_ms > 0) {
			struct timespec until = sbx_mono_deadline(p->backoff_ms);
			int64_t was = p->backoff_ms;

			while (!p->stopping && p->backoff_ms == was &&
			       pthread_cond_timedwait(&p->refill_cv, &p->lock, &until) != ETIMEDOUT)
				;
			if (p->stopping)
				break;
		}
		p->building++;
		pthread_mutex_unlock(&p->lock);
		g = build_one(p, &err);
		pthread_mutex_lock(&p->lock);
		p->building--;
		if (g != NULL && p->stopping) {
			pthread_mutex_unlock(&p->lock);
			discard_one(p, g);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		built_locked(p, g, &err);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Frees retired guests, oldest first, until stopped and none is left. */
static void *teardown_main(void *arg)
{
	mock_pool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		mock_guest *g;

		while (p->ndying == 0 && !p->stopping)
			pthread_cond_wait(&p->retire_cv, &p->lock);
		if (p->ndying == 0)
			break; /* stopping, and nothing left */
		g = p->dying[0];
		memmove(&p->dying[0], &p->dying[1], (p->ndying - 1) * sizeof(p->dying[0]));
		p->ndying--;
		p->tearing++;
		pthread_mutex_unlock(&p->lock);
		teardown_one(p, g);
		pthread_mutex_lock(&p->lock);
		p->tearing--;
		p->retired++;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

mock_pool *mock_pool_start(const mock_pool_conf *conf, sbx_err *err)
{
	mock_pool *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;

	if (p == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	p->size = conf->size < MOCK_POOL_MAX ? conf->size : MOCK_POOL_MAX;
	snprintf(p->work_dir, sizeof(p->work_dir), "%s", conf->work_dir);
	p->opts = conf->opts;
	p->opts.pooled = true;
	p->quiet = conf->quiet;
	p->prepare = conf->prepare;
	p->discard = conf->discard;
	p->on_teardown = conf->on_teardown;
	p->hook_arg = conf->hook_arg;
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->refill_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&p->retire_cv, NULL);
	p->teardown_up = pthread_create(&p->teardown, NULL, teardown_main, p) == 0;
	p->refill_up = p->teardown_up && pthread_create(&p->refill, NULL, refill_main, p) == 0;
	if (!p->refill_up) {
		sbx_err_set(err, "warm pool: cannot start its threads: %s", strerror(errno));
		mock_pool_stop(p);
		return NULL;
	}
	return p;
}

mock_guest *mock_pool_take(mock_pool *p)
{
	mock_guest *g = NULL;

	pthread_mutex_lock(&p->lock);
	if (p->nidle > 0) {
		/* the oldest first: every idle cell is alike, and a cell that
		 * waited longest is the likeliest to have died by some accident */
		g = p->idle[0];
		memmove(&p->idle[0], &p->idle[1], (p->nidle - 1) * sizeof(p->idle[0]));
		p->nidle--;
		p->handed_out++;
		p->binding++;
		pthread_cond_signal(&p->refill_cv);
	} else {
		p->misses++;
	}
	pthread_mutex_unlock(&p->lock);
	return g;
}

void mock_pool_settled(mock_pool *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->binding > 0)
		p->binding--;
	pthread_cond_signal(&p->refill_cv);
	pthread_mutex_unlock(&p->lock);
}

bool mock_pool_retire(mock_pool *p, mock_guest *g)
{
	bool queued = false;

	pthread_mutex_lock(&p->lock);
	if (!p->stopping && p->ndying < MOCK_POOL_RETIRE_MAX) {
		p->dying[p->ndying++] = g;
		queued = true;
		pthread_cond_signal(&p->retire_cv);
	}
	pthread_mutex_unlock(&p->lock);
	return queued;
}

void mock_pool_stats_get(mock_pool *p, mock_pool_stats *out)
{
	pthread_mutex_lock(&p->lock);
	out->size = p->size;
	out->idle = p->nidle;
	out->building = p->building;
	out->retiring = p->ndying + p->tearing;
	out->built = p->built;
	out->handed_out = p->handed_out;
	out->misses = p->misses;
	out->build_failures = p->build_failures;
	out->retired = p->retired;
	snprintf(out->last_error, sizeof(out->last_error), "%s", p->last_error);
	pthread_mutex_unlock(&p->lock);
}

void mock_pool_stop(mock_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->refill_cv);
	pthread_cond_broadcast(&p->retire_cv);
	pthread_mutex_unlock(&p->lock);
	/* a build in progress ends (READY or its 5 s bound) and is freed by
	 * the refill thread itself; the teardown thread empties its queue */
	if (p->refill_up)
		pthread_join(p->refill, NULL);
	if (p->teardown_up)
		pthread_join(p->teardown, NULL);
	for (unsigned i = 0; i < p->ndying; i++) /* only when its thread never ran */
		teardown_one(p, p->dying[i]);
	for (unsigned i = 0; i < p->nidle; i++)
		discard_one(p, p->idle[i]);
	pthread_cond_destroy(&p->retire_cv);
	pthread_cond_destroy(&p->refill_cv);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

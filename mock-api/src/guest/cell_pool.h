/* cell_pool: the warm pool of cells (issue 24; CONTAINMENT.md "The warm
 * pool"). Contained guests built ahead of any create — namespaces, root,
 * cgroup, self-signal listener, everything but what is one sandbox's — so
 * that a create only binds one (mock_guest_bind); and the deferred
 * teardown of destroyed sandboxes' guests, so that a DELETE is answered
 * before the cell is waited for and its tree removed.
 *
 * A pooled guest is used once: handed out to one create, never back into
 * the pool; a destroyed sandbox's guest is torn down, never reused.
 *
 * Two threads of its own: one refills (builds while fewer than `size` are
 * idle), one tears down (mock_guest_free of what was retired). Both are
 * joined by mock_pool_stop, which also tears down every idle guest and
 * every retired one still waiting: nothing of the pool outlives it.
 * Thread-safe; knows nothing of sandboxes, tenants or HTTP. */
#ifndef SBX_MOCK_CELL_POOL_H
#define SBX_MOCK_CELL_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "guest/guest.h"

/* --warm-pool: the default and the largest size. */
#define MOCK_POOL_DEFAULT 2
#define MOCK_POOL_MAX 64
/* Retired guests waiting for the teardown thread at most; past it a
 * retire is refused and the caller tears down itself (before its answer):
 * the host never holds more than this many dying cells beyond what the
 * tenants' caps allow. */
#define MOCK_POOL_RETIRE_MAX 16
/* An idle pooled cell's limits until its hand-out: it runs PID 1 only. */
#define MOCK_POOL_IDLE_MEM_BYTES (64ULL << 20)
#define MOCK_POOL_IDLE_DISK_MIB 64

typedef struct mock_pool mock_pool;

typedef struct mock_pool_conf {
	unsigned size;              /* idle guests kept, 1-MOCK_POOL_MAX */
	const char *work_dir;       /* where their trees are made (copied) */
	mock_guest_opts opts;       /* how each is built (pooled is set here) */
	bool quiet;                 /* no line on stderr for a failed build */
	/* optional: run on each built guest before it is idle (the mock wires
	 * its network link ahead); a failure is a failed build (the guest is
	 * freed). discard: on each guest freed without being handed out */
	int (*prepare)(void *arg, mock_guest *g, sbx_err *err);
	void (*discard)(void *arg, mock_guest *g);
	/* optional: run by the teardown thread on each retired guest before
	 * it is freed (the mock removes its sandbox's link rules there, after
	 * the DELETE's answer) */
	void (*on_teardown)(void *arg, mock_guest *g);
	void *hook_arg;
} mock_pool_conf;

typedef struct mock_pool_stats {
	unsigned size, idle, building, retiring;
	uint64_t built, handed_out, misses, build_failures, retired;
	char last_error[sizeof(((sbx_err *)0)->msg)];       /* the last failed build's message, or "" */
} mock_pool_stats;

/* Starts the two threads; the first builds begin at once. NULL with err
 * set when a thread cannot start. */
mock_pool *mock_pool_start(const mock_pool_conf *conf, sbx_err *err);
/* An idle pooled guest (the caller owns it: bind it, or free it), or NULL
 * when none is ready (a miss: the caller builds a fresh one). Never
 * waits for a build. */
mock_guest *mock_pool_take(mock_pool *p);
/* After a take that returned a guest: its hand-out (bind, links) is over,
 * whatever came of it; the refill, which waits for that, goes on. */
void mock_pool_settled(mock_pool *p);
/* Hands a dead or unwanted guest to the teardown thread (mock_guest_free
 * with its tree). false: the queue is full or the pool stops; the caller
 * frees it itself. */
bool mock_pool_retire(mock_pool *p, mock_guest *g);
void mock_pool_stats_get(mock_pool *p, mock_pool_stats *out);
/* Stops building, waits for a build in progress, tears down every idle
 * and retired guest, joins both threads, frees. NULL is fine. */
void mock_pool_stop(mock_pool *p);

#endif

/* server: the server's own calls — the registry of open connections
 * (chaos.c) — and, for the server's files and the tests and fuzzers that
 * drive a whole mock, every internal header of the request side at once:
 * the core (ops/core.h: struct sbx_mock), the request types
 * (http/request.h), the handlers' dispatchers (handlers/dispatch.h),
 * record/replay (proxy/record.h) and durable state (state/durable.h).
 *
 * Nothing outside server/ includes it (ci/layers.py): the layers below
 * see struct sbx_mock through ops/core.h, never the server's own calls. */
#ifndef SBX_MOCK_SERVER_H
#define SBX_MOCK_SERVER_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "handlers/dispatch.h"
#include "proxy/record.h"
#include "http/request.h"
#include "ops/core.h"
#include "state/durable.h"
#include "state/mutation_log.h"

/* The server's own state, which nothing below server/ sees: the API
 * daemon and its address, the self-signal endpoint's address, the cgroup
 * owner lock, the connection counters and registry (http.c, chaos.c).
 * sbx_mock_start allocates it with the mock (mock->srv). */
struct mock_server {
	struct MHD_Daemon *daemon;
	char url[96];
	uint16_t port;
	struct mock_cg_owner *cg_owner; /* the lock on our groups' owner file, or NULL */
	char self_url[96];
	char self_note[sizeof(((sbx_err *)0)->msg)];
	atomic_uint_fast64_t req_counter;
	atomic_uint_fast64_t conn_counter; /* serials of accepted connections (chaos.c) */
	atomic_uint conns_open;      /* open API connections (http.c) */
	unsigned max_conns;          /* past it, new API connections are closed at once */
	/* When set, every request runs on a worker thread, GETs included (a
	 * mode whose GETs may block, e.g. proxying to an upstream). */
	atomic_bool offload_all;
	/* Open connections (chaos.c), for cp_restart. */
	pthread_mutex_t conns_lock;
	bool conns_ready;
	int *conns;
	size_t nconns, capconns;
	struct mock_linger *linger; /* linger.c; NULL: closes are abrupt */
};

/* chaos.c: the registry of open connections (MHD_OPTION_NOTIFY_CONNECTION)
 * and cp_restart's drop of every one but `keep` (shut down, MHD closes). */
int chaos_init(sbx_mock *mock);
void chaos_free(sbx_mock *mock);
void chaos_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			 enum MHD_ConnectionNotificationCode toe);
size_t chaos_drop_connections(sbx_mock *mock, int keep);

/* linger.c: the graceful close of connections answered before their
 * request was read (RFC 9112 9.6). new starts its thread (NULL: no
 * lingering, closes stay abrupt; every call takes NULL); free closes what
 * still lingers. mark: connection conn (its serial, chaos.c) on fd is
 * answered early, its close is to linger; on_close (MHD's CLOSED
 * notification, before MHD closes fd): keeps the socket open, write side
 * shut, reading and dropping up to the bounds, when conn was marked or
 * unread bytes wait. Neither waits for the lingering thread's reads. */
struct mock_linger *linger_new(void);
void linger_free(struct mock_linger *l);
void linger_mark(struct mock_linger *l, int fd, uint64_t conn);
void linger_on_close(struct mock_linger *l, int fd, uint64_t conn);

#endif

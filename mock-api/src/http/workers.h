/* workers: the threads that do blocking work off MHD's pool — offloaded
 * requests (http.c) and the readers behind blocking response bodies (exec
 * streams, dribbled bodies).
 *
 * A pool thread of MHD must never wait on a guest, a fault or a slow
 * client; these threads may. They never queue an answer themselves: an
 * offloaded request resumes its connection and MHD's thread queues it. */
#ifndef SBX_MOCK_WORKERS_H
#define SBX_MOCK_WORKERS_H

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "sbx/mock.h"

typedef struct mreq mreq; /* server.h */

/* The pool's locks and condition variables (mock->work_*); _free after
 * mock_workers_wait, when no thread is left. */
void mock_workers_init(sbx_mock *mock);
void mock_workers_free(sbx_mock *mock);
/* Waits for every job to end and every pool thread to leave; the caller has
 * set mock->stopping, so idle threads leave at once. */
void mock_workers_wait(sbx_mock *mock);

/* Counts a job in; false when the mock is stopping (the caller then does
 * the work inline: every blocking wait returns at once on stop). Every
 * successful begin is paired with one mock_worker_end, the job's last
 * touch of mock. */
bool mock_worker_begin(sbx_mock *mock);
void mock_worker_end(sbx_mock *mock);
/* Runs fn(arg) on an idle pool thread, or on a new one; 0 or an errno. */
int mock_worker_start(sbx_mock *mock, void *(*fn)(void *), void *arg);

/* A response whose body comes from a reader that may block (exec streams,
 * dribbled bodies). The reader runs on a worker thread; MHD's pool thread
 * only copies what it produced and suspends the connection while there is
 * nothing to send, so no pool thread ever waits on a guest. cancel (may be
 * NULL) is called from the server thread when the client is gone, to make a
 * waiting reader return soon; free_fn(cls) is called once, after the
 * reader's last call. Returns NULL on failure (free_fn already called). */
struct MHD_Response *mock_blocking_response(mreq *r, uint64_t size, MHD_ContentReaderCallback reader,
					    void *cls, MHD_ContentReaderFreeCallback free_fn,
					    void (*cancel)(void *cls));

#endif

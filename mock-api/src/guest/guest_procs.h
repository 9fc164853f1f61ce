/* guest_procs: managed processes — long-lived commands of a guest, pipe- or
 * PTY-backed, whose output is kept in a bounded per-process ring of
 * numbered events that any number of clients may replay from a sequence
 * number (`connect?after=N`), with input, stdin close, resize, signals,
 * waits on the leader or the whole tree, and tree termination with a grace
 * period. The control plane's /v1/sandboxes/{id}/processes resource
 * (mock-api/README.md, "Managed processes") is built on this.
 *
 * They run like exec (guest.h): in the sandbox's cell, under its seccomp
 * filter and cgroup, each its own process group (a PTY-backed one its own
 * session, the PTY its controlling terminal); pause freezes them with the
 * rest of the cell, destroy kills them with it. A process's "tree" is its
 * process group as far as the output descriptors reach: the tree has
 * exited when the leader has and the last holder of its output (pipes, or
 * the PTY slave) closed it.
 *
 * One reader thread per live process moves output into the ring; a client
 * disconnecting changes nothing. Views are cJSON objects the caller owns,
 * with the field names of the Python SDK's ManagedProcess model.
 * Thread-safe; never takes the model lock (it knows no model). */
#ifndef SBX_MOCK_GUEST_PROCS_H
#define SBX_MOCK_GUEST_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "guest/guest.h"
#include "sbx/err.h"
#include "sbx/strbuf.h"

#define MOCK_MPROC_MAX	      16	 /* processes kept per sandbox, live or exited */
#define MOCK_MPROC_RING_BYTES (1u << 20) /* output kept per process; oldest events go first */
#define MOCK_MPROC_INPUT_MAX  65536u	 /* bytes of one input request */
#define MOCK_MPROC_PTY_MAX    1000u	 /* rows and cols of a PTY, each */
#define MOCK_MPROC_ID_MAX     24

typedef struct mock_mproc_req {
	mock_exec_spec exec; /* cmd, args, env, cwd; stdin/tty fields set here */
	bool pty;
	unsigned rows, cols; /* pty: 1..MOCK_MPROC_PTY_MAX */
} mock_mproc_req;

/* Starts a process: its view, or NULL with *status (400 the command cannot
 * start, 409 the sandbox's table is full of live processes, 500) and err. */
cJSON *mock_mproc_create(mock_guest *g, const mock_mproc_req *q, int *status, sbx_err *err);
/* {"processes": [views, oldest first]}. */
cJSON *mock_mproc_list(mock_guest *g);
/* The view, NULL when the guest has no such process. */
cJSON *mock_mproc_get(mock_guest *g, const char *id);

/* Control operations: 0, or -1 with *status (404 no such process, 409 not
 * possible in its state or kind, 503 input not taken in time) and err. */
int mock_mproc_input(mock_guest *g, const char *id, const void *data, size_t len, uint64_t *seq,
		     int *status, sbx_err *err);
int mock_mproc_stdin_close(mock_guest *g, const char *id, int *status, sbx_err *err);
int mock_mproc_resize(mock_guest *g, const char *id, unsigned rows, unsigned cols, int *status,
		      sbx_err *err);
int mock_mproc_signal(mock_guest *g, const char *id, int sig, int *status, sbx_err *err);

/* Waits up to timeout_ms (or until stop(arg) says so, checked every
 * 200 ms) for the leader (tree: the whole tree) to exit: the view then or
 * at the timeout; NULL when there is no such process. */
cJSON *mock_mproc_wait(mock_guest *g, const char *id, bool tree, int64_t timeout_ms,
		       bool (*stop)(void *arg), void *arg);
/* SIGTERM to the tree, up to grace_ms for it to exit, then SIGKILL; waits
 * (bounded) for the tree: the view, NULL when there is no such process. */
cJSON *mock_mproc_terminate(mock_guest *g, const char *id, int64_t grace_ms);

/* The connect stream: appends to out the NDJSON events numbered after
 * *after (advancing it), waiting up to timeout_ms for one. The first call
 * of a stream (first true) notes an output gap with oldest_available_seq.
 * 1 when the exit event went out (the stream is complete), 0 when more
 * may come, -1 when there is no such process. */
int mock_mproc_events(mock_guest *g, const char *id, uint64_t *after, bool first, int timeout_ms,
		      sbx_strbuf *out);

/* Signal names of the SDK's ManagedProcessSignal ("SIGTERM"...): the
 * number, 0 when not one of them. */
int mock_mproc_signal_number(const char *name);

#endif

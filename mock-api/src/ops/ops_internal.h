/* ops_internal: what the operations' files (ops*.c) share — the clock
 * tick, the prologue of an operation on one sandbox, the fault test, and
 * the begin and end of an operation that drives a guest (exec, files,
 * processes) with its streams — and lend the capabilities built on them
 * (templates/, computer/). Everything above those includes ops.h instead. */
#ifndef SBX_MOCK_OPS_INTERNAL_H
#define SBX_MOCK_OPS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "guest/guest.h"
#include "ops/core.h"
#include "ops/ops.h"

/* Runs the virtual clock (mock_tick with the guest hook). Lock held. */
void ops_tick(sbx_mock *mock);
/* The sandbox op names (any tenant's when op->t is NULL) with op->found
 * set, or NULL with a 404 in op->err. Lock held. */
mock_sandbox *ops_find(mock_op *op);
/* The prologue of an operation on one sandbox: takes the model lock, runs
 * the clock when tick, and finds the sandbox (ops_find). The lock is held
 * on return in both cases; the caller unlocks. */
mock_sandbox *ops_begin(mock_op *op, bool tick);
/* Whether op's fired fault rule is of kind k. */
bool ops_fault_is(const mock_op *op, mock_fault_kind k);

/* ---- guest I/O (ops_exec.c) ---- */

/* A command's environment: "K=V", the sandbox's envs overridden by the
 * request's. */
typedef struct ops_env {
	char **kv;
	size_t n;
	bool isolate_net; /* egress is closed: run without a network */
} ops_env;
void ops_env_free(ops_env *e);
/* The running sandbox's guest, marked busy and touched (op->sb set), or
 * NULL with op->err set. With cmd, its env is checked against the
 * sandbox's envs and built into *env. Every begin that succeeded is paired
 * with one ops_io_end(op->mock, op->sb). Takes the lock. */
mock_guest *ops_io_begin(mock_op *op, const mock_cmd_req *cmd, ops_env *env);
void ops_io_end(sbx_mock *mock, mock_sandbox *sb);
/* The guest's spec of cmd run with env. */
void ops_exec_spec(mock_exec_spec *spec, const mock_cmd_req *cmd, const ops_env *env);

/* A command run in a guest to its end (ops_guest_run): exec, a template
 * build's steps and the desktop's tools each say here what to run. */
typedef struct ops_guest_cmd {
	mock_exec_spec spec; /* program, arguments, env, cwd, stdin, network */
	const char *user;    /* NULL, "", "root" or "0": root; else through runuser -u */
	int64_t timeout_ms;  /* killed once it runs this long; 0: never */
} ops_guest_cmd;

/* How it ended; each caller answers in its own words. */
typedef struct ops_guest_ran {
	bool started;    /* false: error says why (no such program, no uid for user) */
	bool refused;    /* the sink's start said no: nothing ran */
	bool timed_out;  /* killed at timeout_ms */
	/* killed for the sink's gone(), or killed by a signal while gone()
	 * says so: a destroy kills the guest's processes itself, so such a
	 * death is the caller's going, not the command's failure */
	bool aborted;
	int exit_code;   /* -1 when it did not start; 128 + signal when killed */
	int64_t ms;      /* from its start to its reaping */
	char error[512];
} ops_guest_ran;

/* Runs c in g to its end: sink->start first (may be NULL), each piece
 * of stdout (which 1) and stderr (2) to sink->output, sink->gone (may be
 * NULL) asked after each read and each 100 ms without one. The one way
 * the operations run a command in a guest (guest_exec.c below it). */
void ops_guest_run(mock_guest *g, const ops_guest_cmd *c, const mock_exec_sink *sink, ops_guest_ran *ran);

/* A stream (ops.h): next appends the frames of one wait, end ends the
 * operation; the kinds embed it first. */
struct mock_op_stream {
	sbx_mock *mock;
	mock_sandbox *sb;  /* busy until end */
	mock_guest *g;
	int64_t quiet_ms;  /* since the last frame */
	int (*next)(mock_op_stream *s, sbx_strbuf *out);
	void (*end)(mock_op_stream *s);
};
/* Counts a silent wait of s; true when a heartbeat is due (and restarts
 * the count). */
bool ops_stream_quiet(mock_op_stream *s);

#endif

/* guest: the "VM" behind a mock sandbox — a private directory tree and the
 * processes that exec starts in it.
 *
 * Layout: <work_dir>/<sandbox id>/ is the guest's file system as the files
 * API sees it; its workspace/ and tmp/ are the guest's /workspace and /tmp.
 * Two modes:
 *  - ns: (root, or CAP_SYS_ADMIN) each exec runs in its own mount namespace
 *    with workspace/ bound on /workspace, tmp/ on /tmp and a proc of the
 *    guests' PID namespace on /proc, and in an empty network namespace
 *    (loopback only) when the sandbox's egress is the "network off" idiom.
 *    Every guest of a mock shares one PID namespace (mock_pidns): guests see
 *    and signal only guests, background processes outlive their exec as in
 *    a VM, and the namespace's init dies with the mock, taking every guest
 *    with it. A namespace per sandbox would need a resident init process per
 *    sandbox: one more process start per sandbox, as dear as the exec itself;
 *  - plain: cwd = workspace/, TMPDIR = tmp/, and cmd/args that start with
 *    /workspace or /tmp are rewritten to the sandbox tree.
 * Every exec is its own process group; the guest remembers the groups so
 * pause (SIGSTOP), resume (SIGCONT) and destroy (SIGKILL) reach every process
 * started in it, including background ones (unless they setsid away).
 *
 * This is a test double, not an isolation boundary: guests run as the user
 * running the mock. Never follows a symlink in the files API.
 *
 * Files: guest.c (modes, trees, process groups), guest_pidns.c (the PID
 * namespace and its init), guest_exec.c (spawning, mock_proc, exec),
 * guest_files.c (mock_guest_open); guest_internal.h is what they share. */
#ifndef SBX_MOCK_GUEST_H
#define SBX_MOCK_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sbx/err.h"
#include "sbx/strbuf.h"

typedef enum mock_guest_mode { GUEST_PLAIN, GUEST_NS } mock_guest_mode;

/* requested: "auto" (ns when it works), "plain" or "ns" (error if not). */
int mock_guest_mode_detect(const char *requested, mock_guest_mode *out, sbx_err *err);
const char *mock_guest_mode_name(mock_guest_mode mode);

/* The PID namespace every guest of a mock runs in (ns mode, where the
 * kernel allows it). NULL + err when it cannot be made; stop kills every
 * process in it. */
typedef struct mock_pidns mock_pidns;
mock_pidns *mock_pidns_start(sbx_err *err);
void mock_pidns_stop(mock_pidns *ns);

typedef struct mock_guest mock_guest;

/* pidns: NULL, or the namespace ns-mode execs run in. */
mock_guest *mock_guest_new(const char *work_dir, const char *id, mock_guest_mode mode,
			   const mock_pidns *pidns, sbx_err *err);
/* Copies src's files into dst (fork). */
int mock_guest_copy(mock_guest *dst, const mock_guest *src, sbx_err *err);
/* Copies up to cap of the live process groups the guest started. */
size_t mock_guest_pgids(mock_guest *g, pid_t *out, size_t cap);
/* Sends sig to every process group the guest started. */
void mock_guest_signal(mock_guest *g, int sig);
/* SIGKILLs everything and refuses new execs. */
void mock_guest_kill(mock_guest *g);
/* Kills, removes the tree when remove_tree, frees. NULL is fine. */
void mock_guest_free(mock_guest *g, bool remove_tree);

typedef struct mock_exec_spec {
	const char *cmd;
	const char *const *args;   /* args after cmd */
	size_t nargs;
	const char *const *env;    /* "K=V" strings, applied over the base env */
	size_t nenv;
	const char *stdin_data;    /* may be NULL */
	size_t stdin_len;
	bool isolate_net;          /* ns mode: loopback-only network */
} mock_exec_spec;

typedef struct mock_proc {
	pid_t pid;
	int out_fd, err_fd, in_fd;
	const char *stdin_data;
	size_t stdin_len, stdin_off;
	bool exited;
	int wstatus;
	mock_guest *guest;
} mock_proc;

/* Starts cmd. Returns 0, or -1 with err set ("exec: \"x\": executable file
 * not found in $PATH" or a system error). */
int mock_proc_spawn(mock_guest *g, const mock_exec_spec *spec, mock_proc *p, sbx_err *err);
/* Waits up to timeout_ms for output. Returns bytes read into buf (which = 1
 * stdout, 2 stderr), 0 on timeout, -1 when the process exited and its
 * output is drained. */
ssize_t mock_proc_read(mock_proc *p, int timeout_ms, char *buf, size_t cap, int *which);
/* Kills the process group (timeouts, client gone). */
void mock_proc_kill(mock_proc *p);
/* Reaps, closes fds; returns the exit code (128+signal when killed). */
int mock_proc_finish(mock_proc *p);

typedef struct mock_exec_result {
	sbx_strbuf out, err;
	int exit_code;
	bool timed_out;
	bool aborted;
} mock_exec_result;

/* Runs to completion (or timeout_ms, 0 = none; or abort() returning true),
 * capturing up to cap bytes of each stream. */
int mock_guest_exec(mock_guest *g, const mock_exec_spec *spec, int64_t timeout_ms, size_t cap,
		    bool (*abort_fn)(void *arg), void *arg, mock_exec_result *r, sbx_err *err);

/* Files API: opens a guest absolute path inside the tree. On failure returns
 * -1 with *status (400 bad path, 404 missing, 409 not a regular file) and
 * err set. write creates parents and truncates. */
int mock_guest_open(mock_guest *g, const char *path, bool write, int *status, sbx_err *err);

#endif

/* guest: the "VM" behind a mock sandbox — a private directory tree and the
 * processes that exec starts in it.
 *
 * Layout: <work_dir>/<sandbox id>/ is the guest's file system as the files
 * API sees it; its workspace/ and tmp/ are the guest's /workspace and /tmp.
 * Two modes:
 *  - contained (the default; "ns" and "auto" are its old names): each
 *    sandbox is a cell (cell.h, CONTAINMENT.md) — its own user, mount, PID,
 *    network, IPC and UTS namespaces, a root of read-only system binds plus
 *    its workspace and tmp, a seccomp filter, and PID 1 sbx-cell, started
 *    at mock_guest_new and kept for the sandbox's life. Every exec runs in
 *    it; background processes outlive their exec as in a VM and die with
 *    the cell (destroy, or the mock itself dying);
 *  - plain: explicit opt-in, no isolation at all: cwd = workspace/, TMPDIR
 *    = tmp/, cmd/args that start with /workspace or /tmp are rewritten to
 *    the sandbox tree, and the guest runs as the mock's user. Every exec is
 *    its own process group, remembered for pause/resume/destroy.
 *
 * The files API's reads follow symlinks inside the guest's root only (never
 * out of it); its writes never follow one.
 *
 * Files: guest.c (modes, trees, process groups), guest_exec.c (spawning,
 * mock_proc, exec), guest_files.c (mock_guest_open); guest_internal.h is
 * what they share. */
#ifndef SBX_MOCK_GUEST_H
#define SBX_MOCK_GUEST_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sbx/err.h"
#include "sbx/strbuf.h"

typedef enum mock_guest_mode { GUEST_PLAIN, GUEST_CONTAINED } mock_guest_mode;

/* requested: NULL, "contained", "ns" or "auto" (all: contained, an error
 * saying why and what to do when this host cannot contain), or "plain". */
int mock_guest_mode_detect(const char *requested, mock_guest_mode *out, sbx_err *err);
const char *mock_guest_mode_name(mock_guest_mode mode);

typedef struct mock_guest mock_guest;

struct mock_cgroups;
struct mock_cell_filter;

/* The root a contained guest's cell is built on, when it is an image
 * (images/images.h finds them): the directory, and how a cell uses it. */
typedef struct mock_guest_root {
	char dir[PATH_MAX];
	bool idmapped; /* dir is idmapped for each cell (the mock as root) */
	int userns;    /* then: a user namespace with the cells' map */
} mock_guest_root;

/* What a contained guest's cell needs from the mock besides its tree. */
typedef struct mock_guest_opts {
	uint16_t self_port;  /* the self-signal port inside the cell (0: 1029) */
	struct mock_cgroups *cgroups; /* NULL: no limits, pause by SIGSTOP */
	uint64_t mem_bytes;  /* the cgroup's memory limit (0: none) */
	uint64_t pids_max;   /* its pids limit (0: none) */
	unsigned disk_mib;   /* contained: its disk, a tmpfs (0: the host tree,
			      * unbounded: durable mode) */
	bool pooled;         /* contained: a warm pool's guest (cell_pool.h), id a
			      * placeholder until mock_guest_bind */
	/* contained: the cells' seccomp program, compiled once (cell.h); NULL:
	 * each cell compiles its own */
	const struct mock_cell_filter *filter;
	/* contained: the image root the cell is built on, or NULL: the
	 * host-skeleton root */
	const mock_guest_root *root;
	/* contained: a CA certificate (PEM) the guest's trust store adds to
	 * the host's (the simulated internet's, INTERNET.md "TLS"); NULL: none */
	const char *trust_pem;
} mock_guest_opts;

/* Makes the tree and, contained, starts the cell (opts may be NULL). */
mock_guest *mock_guest_new(const char *work_dir, const char *id, mock_guest_mode mode,
			   const mock_guest_opts *opts, sbx_err *err);
/* A pooled guest (opts->pooled) becomes sandbox id's: its tree is renamed
 * <work_dir>/<id>, its group gets the memory limit mem_bytes (0: none) and
 * its cell the name and a disk of disk_mib MiB (mock_cell_bind). Before it
 * is shared with any other thread. 0, or -1 with err set (free it). */
int mock_guest_bind(mock_guest *g, const char *work_dir, const char *id, uint64_t mem_bytes,
		    unsigned disk_mib, sbx_err *err);
/* Contained: the cell's self-signal listening socket (owned by the guest,
 * closed at free; take it to own it), else -1. */
int mock_guest_self_fd(const mock_guest *g);
/* Contained: the host pid of the guest's cell (PID 1 inside), else -1. */
pid_t mock_guest_cell_pid(const mock_guest *g);
int mock_guest_take_self_fd(mock_guest *g);
/* A pooled cell's network link made ahead (the internet's prewire number;
 * 0 none): set by the pool's prepare hook before the guest is shared,
 * taken (and cleared) by whoever wires or discards it. */
void mock_guest_set_net_link(mock_guest *g, uint32_t link);
uint32_t mock_guest_take_net_link(mock_guest *g);
/* What a sandbox uses now (GET /v1/sandboxes/{id}/metrics). */
typedef struct mock_guest_usage {
	uint64_t cpu_usec;        /* CPU time of every process it ran, alive or exited */
	uint64_t mem_bytes;       /* memory charged to it now */
	uint64_t mem_peak_bytes;  /* its high-water mark; 0 unknown */
	uint64_t mem_limit_bytes; /* 0 none */
	uint64_t pids;            /* processes now (its init included) */
	const char *source;       /* where the numbers come from */
} mock_guest_usage;
/* Contained: reads the cell's cgroup (memory, pids; CPU: v2 cpu.stat, v1
 * the times of its processes) or, without cgroups, its processes' /proc
 * entries. Plain mode: -1 with err set (no per-sandbox accounting). */
int mock_guest_usage_read(mock_guest *g, mock_guest_usage *u, sbx_err *err);
/* Contained: a fresh unconnected TCP socket of the guest's network
 * namespace (ingress). Plain mode or a killed guest: -1 with err set. */
int mock_guest_socket(mock_guest *g, sbx_err *err);
/* Contained fork, before the new guest exists: copies src's disk (its
 * root's changes, workspace, tmp) into <work_dir>/<id>/seed, which the new
 * cell copies into its own disk and mock_guest_new then removes. No-op in
 * plain mode. */
int mock_guest_seed(const char *work_dir, const char *id, const mock_guest *src, sbx_err *err);
/* Contained, with a disk of its own (not durable mode's host tree): grows
 * the guest's disk to mib MiB (the tmpfs's size, changed in place; its
 * files stay). 0 when done or nothing to do (plain mode, g NULL, mib 0),
 * else -1 with err set. */
int mock_guest_resize(mock_guest *g, unsigned mib, sbx_err *err);
/* Copies src's files into dst (fork; plain mode: contained, see
 * mock_guest_seed). */
int mock_guest_copy(mock_guest *dst, const mock_guest *src, sbx_err *err);
/* Plain mode: copies up to cap of the live process groups the guest
 * started (contained: 0, its groups are in the cell's PID namespace). */
size_t mock_guest_pgids(mock_guest *g, pid_t *out, size_t cap);
/* Sends sig to every process the guest started (contained: every process
 * of the cell but its PID 1). */
void mock_guest_signal(mock_guest *g, int sig);
/* Pause (true) or resume: contained with cgroups the sandbox's group is
 * frozen or thawed (waited for); otherwise SIGSTOP/SIGCONT to every process
 * the guest started. 0, or -1 with err set. */
int mock_guest_pause(mock_guest *g, bool paused, sbx_err *err);
/* Whether mock_guest_kill ran (NULL: false). */
bool mock_guest_dead(mock_guest *g);
/* The name its tree has: the sandbox id it was made or bound for (a
 * pooled guest not yet handed out: its pool name). */
const char *mock_guest_name(const mock_guest *g);
/* SIGKILLs everything and refuses new execs; contained, waits for the
 * cell and removes its cgroup. */
void mock_guest_kill(mock_guest *g);
/* The same without the wait (the warm pool's deferred teardown): the cell
 * is SIGKILLed and the guest dead at once; mock_guest_free waits for the
 * cell and removes its group. */
void mock_guest_kill_nowait(mock_guest *g);
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
	bool isolate_net;          /* unused: a contained guest is loopback-only */
	const char *cwd;           /* NULL or "": /workspace */
	bool keep_stdin;           /* keep in_fd open with no stdin_data (managed processes) */
	bool tty;                  /* stdin/out/err = tty_fd, a PTY slave: the child's ctty */
	int tty_fd;                /* the caller's; the mock_proc's pipes then carry nothing */
} mock_exec_spec;

typedef struct mock_proc {
	pid_t pid;                 /* contained: as the cell numbers it */
	int out_fd, err_fd, in_fd;
	int status_fd;             /* contained: the cell's STARTED/EXITED pipe */
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
/* Whether the process (the leader) exited, without waiting. */
bool mock_proc_exited(mock_proc *p);
/* Kills the process group (timeouts, client gone). */
void mock_proc_kill(mock_proc *p);
/* Reaps, closes fds; returns the exit code (128+signal when killed). */
int mock_proc_finish(mock_proc *p);

typedef struct mock_exec_result {
	int exit_code;
	bool timed_out;
	bool aborted;
} mock_exec_result;

/* Where a command's output goes while it runs: output() gets each piece
 * (which: 1 stdout, 2 stderr) and keeps what it wants (the command's
 * pipes are drained to the end either way); abort() returning true kills
 * the command. */
typedef struct mock_exec_io {
	void (*output)(void *arg, int which, const char *buf, size_t n);
	bool (*abort)(void *arg); /* may be NULL */
	void *arg;
} mock_exec_io;

/* Runs to completion (or timeout_ms, 0 = none; or io->abort). */
int mock_guest_exec(mock_guest *g, const mock_exec_spec *spec, int64_t timeout_ms, const mock_exec_io *io,
		    mock_exec_result *r, sbx_err *err);

/* Files API: opens a guest absolute path inside the tree (a read resolves
 * symlinks in the guest's root; a write refuses them). On failure returns
 * -1 with *status (400 bad path, 404 missing, 409 not a regular file) and
 * err set. write creates parents and truncates. */
int mock_guest_open(mock_guest *g, const char *path, bool write, int *status, sbx_err *err);

#endif

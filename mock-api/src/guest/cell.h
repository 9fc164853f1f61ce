/* cell: the mock's side of a sandbox's contained environment — starting
 * its sbx-cell (namespaces, id maps, cgroup placement), asking it to exec
 * and signal, stopping it. Design: mock-api/CONTAINMENT.md; wire format:
 * cell_proto.h; the program: mock-api/cell/.
 *
 * Thread-safe: any number of threads may exec and signal through one cell
 * at once. Never falls back to running a guest uncontained: what cannot be
 * contained fails with the reason. Knows nothing of sandboxes beyond an id
 * and two directories. */
#ifndef SBX_MOCK_CELL_H
#define SBX_MOCK_CELL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sbx/err.h"

/* Root inside a cell is this host uid/gid (and the 65535 after it) when
 * the mock runs as root: a range no real account uses. Unprivileged, the
 * mock's own uid/gid is root inside (the only one it may map). */
#define MOCK_CELL_UID_BASE 1000000000u
#define MOCK_CELL_ID_RANGE 65536u

/* 0 under ThreadSanitizer, else CLONE_VM: what the guest's starts (the
 * cell's and the probe's in cell.c, a plain exec's in guest_exec.c) add
 * to their clone flags. TSan's clone interceptor treats every clone as a
 * fork and runs its child-side bookkeeping in the child: sharing the
 * memory, that marks the mock itself a forked child (its next thread dies
 * with "starting new threads after multi-threaded fork"), and a child that
 * runs beside its parent (a cell's) corrupts the runtime. Under TSan the
 * child is a fork-like copy, as under valgrind (THREADING.md, "Under
 * ThreadSanitizer"). */
#if defined(__SANITIZE_THREAD__)
#define MOCK_CLONE_VM 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MOCK_CLONE_VM 0
#endif
#endif
#ifndef MOCK_CLONE_VM
#define MOCK_CLONE_VM CLONE_VM
#endif

typedef struct mock_cell mock_cell;

/* The cells' seccomp program, compiled once (`sbx-cell --seccomp-bpf`) into
 * a sealed memfd each cell reads instead of compiling its own. NULL when
 * it cannot be had (cells then compile theirs: the same filter, slower).
 * Read-only once made: any number of cell starts may use one at once. */
typedef struct mock_cell_filter mock_cell_filter;
mock_cell_filter *mock_cell_filter_new(void);
void mock_cell_filter_free(mock_cell_filter *f);

/* Called with the cell's host pid after the clone, before it runs
 * anything of its own (the place to put it in a cgroup). 0, or -1 with err
 * set: the start then fails. */
typedef int (*mock_cell_place_fn)(pid_t pid, void *arg, sbx_err *err);
/* Called around the clone by the cloning thread: join puts the thread
 * where the cell is to be born (a cgroup: the child inherits it), leave
 * takes it back, whatever the clone did. 0, or -1 with err set: the start
 * then fails. */
typedef int (*mock_cell_around_fn)(void *arg, sbx_err *err);

typedef struct mock_cell_conf {
	const char *id;          /* the sandbox id: the cell's hostname */
	const char *ws, *tmp;    /* host directories bound on /workspace, /tmp */
	uint16_t self_port;      /* the self-signal listener's port inside */
	unsigned disk_mib;       /* the disk's size (0: the host tree, unbounded) */
	/* a warm pool's cell (issue 24): id is a placeholder, and the cell
	 * serves nothing before mock_cell_bind makes it a sandbox's */
	bool pooled;
	const mock_cell_filter *filter; /* may be NULL */
	/* a CA certificate (PEM) for the guest's trust store, passed to the
	 * cell as CELL_TRUST_ENV; may be NULL */
	const char *trust_pem;
	/* with trust_pem: the system bundle with it (guest/trust.h), which the
	 * cell opens at its start and binds read-only over its root's (a file),
	 * or with image_dir mounts as an overlay layer above the image's */
	const char *trust_bundle;
	mock_cell_place_fn place; /* may be NULL */
	mock_cell_around_fn join, leave; /* both or neither */
	void *place_arg;		 /* place's, join's and leave's */
	/* a rootfs image as the root's lowest layer (IMAGES.md), or NULL: the
	 * host-skeleton root. With image_idmapped (the mock is root) the cell
	 * gets a read-only mount of image_dir idmapped by image_userns (a user
	 * namespace whose map is the cells'), made here for each cell; else
	 * image_dir itself, which must be owned by the ids root inside is */
	const char *image_dir;
	bool image_idmapped;
	int image_userns;
} mock_cell_conf;

/* Whether cells can start here: user namespaces, and the sbx-cell program
 * (SBX_MOCK_CELL env, else the build tree's, else the installed one). 0, or
 * -1 with err saying why and what to do. */
int mock_cell_probe(sbx_err *err);

/* Root of the host's own user namespace (not of one the mock entered). */
bool mock_cell_host_root(void);
/* The host uid/gid root inside a cell is; -1 when the mock is not root
 * (files it makes for a guest then need no chown). */
uid_t mock_cell_owner(void);

/* A detached read-only mount of dir, idmapped by userns's map: what a
 * cell with image_idmapped gets (one per cell). The fd, or -1 with err
 * set (not root, or dir's filesystem cannot be idmapped). */
int mock_cell_image_tree(const char *dir, int userns, sbx_err *err);

/* Starts the cell and waits (5 s at most) for READY. NULL + err: the
 * cell's own FAIL message, or what failed here. */
mock_cell *mock_cell_start(const mock_cell_conf *conf, sbx_err *err);

/* A pooled cell becomes sandbox id's (hostname, name files) with a disk of
 * disk_mib MiB (> 0), and only then loads its seccomp filter; waits 5 s at
 * most for the answer. Once per cell, before any other request, by the
 * one thread that owns it. 0, or -1 with err set (the cell then exits:
 * stop it). */
int mock_cell_bind(mock_cell *c, const char *id, unsigned disk_mib, sbx_err *err);

/* The self-signal listening socket the cell sent in READY (it lives in the
 * cell's network namespace). Owned by the cell until taken: take returns it
 * and forgets it (-1 when already taken). */
int mock_cell_self_fd(const mock_cell *c);
int mock_cell_take_self_fd(mock_cell *c);

/* Sends one EXEC: cwd, argv (argv[0] = cmd), envp; fds = stdin read end,
 * stdout and stderr write ends, the status pipe's write end (the caller
 * closes its copies afterwards). The answer comes on the status pipe.
 * tty: the three are one PTY slave, the child's controlling terminal
 * (EXEC_TTY). */
int mock_cell_exec(mock_cell *c, const char *cwd, char *const argv[], char *const envp[],
		   const int fds[4], bool tty, sbx_err *err);
/* A fresh unconnected TCP socket of the cell's network namespace (ingress
 * connects it to the guest's 127.0.0.1:port), or -1 with err set. Waits 5 s
 * at most for the cell's answer. */
int mock_cell_socket(mock_cell *c, sbx_err *err);
/* kill(-pgid, sig) inside; pgid 0 = every process but the cell itself. */
int mock_cell_signal(mock_cell *c, pid_t pgid, int sig);
/* SIGKILLs the cell: the kernel kills everything inside with it. */
void mock_cell_kill(mock_cell *c);
/* Waits for the killed cell (its namespace is empty then). Once per cell,
 * not concurrently with kill. */
void mock_cell_reap(mock_cell *c);
/* Kills, reaps and frees. NULL is fine. */
void mock_cell_stop(mock_cell *c);
pid_t mock_cell_pid(const mock_cell *c);

#endif

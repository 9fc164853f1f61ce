/* guest_internal: what the guest_*.c files share and nobody else may see —
 * the guest and PID-namespace structs and the process-group bookkeeping.
 * Outside mock-api/src/guest*.c include guest.h instead.
 *
 * Layering (no file calls one above it):
 *   guest.c        modes, trees, process groups, signal hygiene
 *   guest_pidns.c  guest.c
 *   guest_exec.c   guest.c (and the fields of struct mock_pidns)
 *   guest_files.c  (the fields of struct mock_guest only) */
#ifndef SBX_MOCK_GUEST_INTERNAL_H
#define SBX_MOCK_GUEST_INTERNAL_H

#include <limits.h>
#include <pthread.h>

#include "guest.h"

/* The guest PID namespace (ns mode): one per mock, held open by an init
 * process that reaps orphaned guest processes. Guests see and signal only
 * each other; when the init dies (mock stop, or the mock itself dies: the
 * init watches a pipe only the mock holds) the kernel kills every guest. */
struct mock_pidns {
	pid_t init;
	int ns_fd;   /* /proc/<init>/ns/pid */
	int self_fd; /* the mock's own PID namespace, to switch back */
	int life_w;  /* the init exits when this end closes */
};

struct mock_guest {
	pthread_mutex_t lock;
	mock_guest_mode mode;
	const mock_pidns *pidns; /* ns mode: the mock's guest PID namespace, or NULL */
	char fs[PATH_MAX];     /* <work>/<id> */
	char ws[PATH_MAX];     /* fs/workspace */
	char tmp[PATH_MAX];    /* fs/tmp */
	pid_t *pgids;          /* under lock: process groups started, maybe dead */
	size_t npg, cappg;
	bool dead;             /* under lock: killed, no new exec */
};

/* Remembers a process group the guest started (killing it at once when the
 * guest is dead). -1 when out of memory: the group is then not tracked. */
int guest_add_pgid(mock_guest *g, pid_t pgid);
/* In a fresh child, before execve: resets every caught signal to its
 * default, since a parent handler must never run in it. System calls
 * only. */
void guest_child_reset_signals(void);

#endif

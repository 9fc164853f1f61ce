/* guest_internal: what the guest_*.c files share and nobody else may see —
 * the guest struct and the process-group bookkeeping.
 * Outside mock-api/src/guest/guest*.c include guest.h instead.
 *
 * Layering (no file calls one above it):
 *   guest.c        modes, trees, process groups, signal hygiene
 *   guest_exec.c   guest.c, cell.h
 *   guest_files.c  (the fields of struct mock_guest only) */
#ifndef SBX_MOCK_GUEST_INTERNAL_H
#define SBX_MOCK_GUEST_INTERNAL_H

#include <limits.h>
#include <pthread.h>

#include "guest/cell.h"
#include "guest/cgroup.h"
#include "guest/guest.h"

struct mock_guest {
	pthread_mutex_t lock;
	mock_guest_mode mode;
	mock_cell *cell;       /* contained: the sandbox's cell (NULL in plain mode) */
	mock_cgroup *cg;       /* contained, where cgroups work: its group; calls under lock */
	uid_t owner;           /* contained as root: who root inside is; else -1 */
	char fs[PATH_MAX];     /* <work>/<id> */
	char ws[PATH_MAX];     /* fs/workspace */
	char tmp[PATH_MAX];    /* fs/tmp */
	long work_fs;          /* statfs f_type of fs (guest_files.c) */
	pid_t *pgids;          /* under lock: process groups started, maybe dead */
	size_t npg, cappg;
	bool dead;             /* under lock: killed, no new exec */
	bool reaped;           /* under lock: the cell was killed and reaped */
	uint32_t net_link;     /* a pooled cell's link made ahead, 0 none (guest.h) */
	bool trusts_ca;        /* its cell was given a CA (opts' trust_pem): Node is told too */
	struct mproc_table *procs; /* managed processes (guest_procs.c), made on first use */
	/* set with procs: stops and frees them (a hook, so that guest.c
	 * never calls up into guest_procs.c) */
	void (*procs_free)(mock_guest *g);
};

/* Remembers a process group the guest started (killing it at once when the
 * guest is dead). -1 when out of memory: the group is then not tracked. */
int guest_add_pgid(mock_guest *g, pid_t pgid);
/* In a fresh child, before execve: resets every caught signal to its
 * default, since a parent handler must never run in it. System calls
 * only. */
void guest_child_reset_signals(void);
/* In a fresh child (system calls only): a new session whose controlling
 * terminal is tty, a PTY slave (managed processes' PTYs). */
void guest_child_take_tty(int tty);


#endif

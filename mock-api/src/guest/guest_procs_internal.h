/* guest_procs_internal: what guest_procs.c (table, readers, ring) and
 * guest_procs_ops.c (views, events, control) share; nobody else includes
 * it. */
#ifndef SBX_MOCK_GUEST_PROCS_INTERNAL_H
#define SBX_MOCK_GUEST_PROCS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "guest/guest_internal.h"
#include "guest/guest_procs.h"

enum { MPROC_STREAM_STDOUT, MPROC_STREAM_STDERR, MPROC_STREAM_PTY, MPROC_STREAM_EXIT };
typedef enum { MPROC_RUNNING, MPROC_TERMINATING, MPROC_EXITED } mproc_state;

/* One numbered event of the ring: output bytes, or the exit (len 0). */
typedef struct mproc_event {
	struct mproc_event *next;
	uint64_t seq;
	int stream;
	size_t len;
	char data[];
} mproc_event;

typedef struct mproc_table mproc_table;

/* One managed process. Fields below "under lock" are read and written
 * with table->lock held; the descriptors belong to the reader thread
 * (out_fd, err_fd) or to the control operations under the lock (in_fd,
 * master). */
typedef struct mproc {
	char id[MOCK_MPROC_ID_MAX];
	mproc_table *table;
	mock_proc proc; /* the leader, as guest_exec.c runs it */
	pthread_t thread;
	bool thread_started;
	bool leader_seen;   /* reader thread only */
	int out_fd, err_fd; /* reader thread: stdout (or the PTY master's dup), stderr */
	int in_fd;	    /* pipe: stdin's write end, -1 once closed */
	int master;	    /* PTY: the master (input, resize), else -1 */
	bool pty;
	pid_t pid; /* as the guest numbers it; the group's and (PTY) session's id */
	char *cmd, *cwd;
	char **args;
	size_t nargs;
	int64_t created_ms;
	/* under lock */
	unsigned rows, cols;
	mproc_state state;
	bool leader_exited, tree_exited;
	int wstatus;
	int64_t finished_ms;
	uint64_t input_seq;
	unsigned waiters;	  /* calls holding p while the lock is released (wait, terminate,
				   * input): not evicted */
	mproc_event *head, *tail; /* the ring, oldest first */
	size_t bytes;
	uint64_t last_seq;
} mproc;

struct mproc_table {
	pthread_mutex_t lock;
	pthread_cond_t cv;    /* broadcast at every event and state change (CLOCK_MONOTONIC) */
	atomic_bool stopping; /* the guest is being freed: readers stop */
	mproc *v[MOCK_MPROC_MAX];
	size_t n, reserved; /* in v; slots held by creates in progress */
	unsigned next_id;
};

int64_t mproc_wall_ms(void);
/* The guest's table (made when make), NULL when none (or out of memory). */
mproc_table *mproc_table_of(mock_guest *g, bool make);
/* The process by id (lock held), NULL when none. */
mproc *mproc_find(mproc_table *t, const char *id);
/* The name of sig ("SIGTERM"; "SIG<n>" for one without a name here). */
void mproc_signal_name(int sig, char *buf, size_t cap);
/* p's view (lock held). */
cJSON *mproc_view(const mproc *p);
/* sig to p's process group (and SIGCONT after SIGKILL/SIGTERM, so a
 * stopped tree acts on it). */
void mproc_group_signal(mock_guest *g, pid_t pgid, int sig);

#endif

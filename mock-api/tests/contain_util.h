/* contain_util: helpers of the containment battery (test_contain.c): exec
 * through the real API, the host's view of guest processes (found by a
 * marker in their command line), cgroup and mount inspection, and cleanup.
 *
 * Needs <setjmp.h>, <stdarg.h>, <stddef.h>, <stdint.h> and <cmocka.h>
 * included before it (cmocka's rule). */
#ifndef SBX_MOCK_TEST_CONTAIN_UTIL_H
#define SBX_MOCK_TEST_CONTAIN_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "mock_fixture.h"

/* One exec's answer: HTTP status, and the result's fields (NULL/-1 when
 * the answer had none). */
typedef struct cx_res {
	long status;
	int code;    /* result.exit_code, -1 when absent */
	char *out;   /* result.stdout, never NULL ("" when absent) */
	char *err;   /* result.stderr, never NULL */
	char *error; /* result.error, or NULL */
	char *body;  /* the whole answer, for messages */
} cx_res;

/* POST /v1/sandboxes/{id}/exec with cmd and args (n of them), on url U with
 * key. timeout_ms 0: the mock's default. */
void cx_exec(const char *key, const char *id, const char *cmd, const char *const *args, size_t n,
	     long timeout_ms, cx_res *x);
/* sh -c script. */
void cx_sh(const char *key, const char *id, const char *script, long timeout_ms, cx_res *x);
void cx_free(cx_res *x);
/* Frees the results of a test that failed before its cx_free (call from
 * each test's setup and the group teardown). */
void cx_gc(void);
/* The sandbox's status ("running", "destroyed"...) into buf; false on no answer. */
bool cx_status(const char *key, const char *id, char *buf, size_t cap);
/* Polls the status until it is want, up to ms; true when it got there. */
bool cx_wait_status(const char *key, const char *id, const char *want, int ms);

/* A marker unique to this test process and a counter, usable as a `sleep`
 * duration: "9NN.<pid>s" (sleep accepts a decimal with a unit). And the same as a regex
 * that does not match itself ("9NN[.]<pid>s"), for grep inside a guest. */
void cx_marker(char *mark, size_t cap, char *regex, size_t rcap);
/* The markers find `sleep` processes only: a live (non-zombie) process
 * named "sleep" (its comm) with an argument equal to s. The shells that
 * start them also carry the marker in their script, but they are
 * transient, and counting them raced with their exit (issue 24).
 * The host pid of such a process (not this one), or -1. */
pid_t cx_find(const char *s);
/* How many such sleeps are alive. */
int cx_count(const char *s);
/* Waits up to ms for one such sleep; its pid, or -1 at the deadline. */
pid_t cx_wait_find(const char *s, int ms);
/* Waits up to ms until exactly n such sleeps are alive; returns the last
 * count (n on success). */
int cx_wait_count(const char *s, int n, int ms);
/* Waits up to ms until no such sleep is alive. */
bool cx_wait_gone(const char *s, int ms);
/* A deadline for "wait until it has started" polls: they return as soon as
 * the condition holds, so a long one costs nothing on a quiet machine and
 * keeps a loaded one (CI, ci/stress) from failing a correct mock. */
#define CX_START_MS 30000
/* SIGKILLs every process whose command line contains s, whatever its name
 * (cleanup: the shells too). */
void cx_kill_all(const char *s);
/* A process's state letter from /proc/pid/stat ('R', 'S', 'Z'...), or 0 when
 * it is gone. */
char cx_state(pid_t pid);
/* The first (real) uid in /proc/pid/status, or -1. */
long cx_host_uid(pid_t pid);
/* readlink of /proc/pid/ns/<ns> ("self" for pid 0) into buf. */
bool cx_ns(pid_t pid, const char *ns, char *buf, size_t cap);
/* The pids whose parent is ppid (up to cap); returns how many. */
size_t cx_children(pid_t ppid, pid_t *out, size_t cap);

/* A cgroup directory named name (or name-N) anywhere under /sys/fs/cgroup (depth-
 * limited walk): its path into buf, true when found. */
bool cx_cgroup_find(const char *name, char *buf, size_t cap);
/* Waits up to ms until no process is in a cgroup directory named name or
 * name-N, or below one (a killed mock's cells leave them when they are
 * gone, pooled ones and one still being cloned at the kill included);
 * true when they are empty (or there are none). */
bool cx_cgroup_wait_empty(const char *name, int ms);
/* The processes in the groups named name: "[pid comm state ppid in dir] ...". */
void cx_cgroup_who(const char *name, char *buf, size_t cap);
/* Removes (rmdir, deepest first) every cgroup directory named name or name-N. */
void cx_cgroup_remove(const char *name);
/* A line of the host's /proc/self/mountinfo that contains s, into buf. */
bool cx_mount_find(const char *s, char *buf, size_t cap);
/* Lazily unmounts every mount whose mountinfo line contains dir. */
void cx_umount_under(const char *dir);
/* Lazily unmounts whatever is mounted under dir (cleanup), then rm -rf. */
void cx_rmtree(const char *dir);
/* The number of lines of a host file, -1 when it cannot be read. */
long cx_lines(const char *path);
/* Whether text is the whole of the host file path (its first 64 KiB). */
bool cx_same_as_host_file(const char *text, const char *path);
/* Lines of path as the sandbox process pid sees it, read from the host
 * through /proc/<pid>/root (works while the sandbox is paused), or -1. */
long cx_root_lines(pid_t pid, const char *path);
/* The lines of the guest file path, read through the files API; -1 when
 * it cannot be read. */
long cx_guest_lines(const char *key, const char *id, const char *path);

/* The image store (IMAGES.md): build-image's, $SBX_IMAGE_STORE,
 * /var/cache/sbx-harness/images as root, else $XDG_CACHE_HOME (or
 * ~/.cache)/sbx-harness/images; and whether its index names devbox:1. */
void cx_store_path(char *buf, size_t cap);
int cx_store_has_devbox(const char *store);
/* The store's path into store; true when it has devbox:1, else false
 * with a SKIP line saying how to build it (the program then exits 77). */
bool cx_store_devbox(char *store, size_t cap);

#endif

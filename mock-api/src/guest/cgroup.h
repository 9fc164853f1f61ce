/* cgroup: one control group per sandbox, so that a guest's memory and
 * process count are bounded by its shape and pause can freeze it.
 *
 * cgroup v2 (the unified hierarchy, where memory and pids are available)
 * or, where that is what the host has, cgroup v1 (memory, pids and freezer
 * hierarchies). Detected once by mock_cgroups_open, which also creates the
 * mock's parent group `sbx-<tag>-<pid>`; each sandbox gets
 * `<parent>/<sandbox id>` in every hierarchy used:
 *  - v1: under the mock's own group of each hierarchy (/proc/self/cgroup);
 *  - v2: under the mock's own group when that group already gives memory
 *    and pids to its children (its cgroup.subtree_control), else under its
 *    nearest ancestor that does: the mock's own group holds the mock's
 *    process, and v2's "no internal processes" rule forbids enabling
 *    controllers for its children while it does.
 * Limits: memory (v1 memory.limit_in_bytes and memory.memsw.limit_in_bytes
 * when present; v2 memory.max and memory.swap.max = 0 when present), so
 * that going over the shape is an OOM kill (SIGKILL, exit 137); pids.max;
 * the freezer (v1 freezer.state, v2 cgroup.freeze) for pause.
 *
 * Never touches a group it did not create: it only reads the mock's own
 * and ancestor groups, never writes their files (but one: a thread of the
 * mock that joined a sandbox's group goes back to the mock's own group by
 * its tasks file, mock_cgroup_leave), never moves or signals a
 * process it did not find in one of its own groups, and refuses a sandbox
 * id that could name a path outside its parent group ('/', "..", a leading
 * '.', anything beyond [A-Za-z0-9._-], over MOCK_CGROUP_ID_MAX).
 *
 * Thread safety: a mock_cgroups is read-only after open, so calls on
 * distinct mock_cgroup may run concurrently; calls on one mock_cgroup must
 * not. Close only after every group was removed. */
#ifndef SBX_MOCK_CGROUP_H
#define SBX_MOCK_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sbx/err.h"

#define MOCK_CGROUP_ID_MAX 64

typedef struct mock_cgroups mock_cgroups; /* the mock's parent groups */
typedef struct mock_cgroup mock_cgroup;	  /* one sandbox's group */

/* Detects v2, then v1, and creates the parent group `sbx-<tag>-<pid>`
 * (`-<n>` appended if that exists; tag NULL or "" = "mock"). On success
 * note says what is used ("cgroups: v1 (memory, pids, freezer)"). NULL
 * with err empty means none can be used (not root and nothing delegated, a
 * controller missing, a read-only cgroupfs): note says why, as one line
 * for the user ("cgroups: none (...)"). NULL with err set is a real
 * failure (out of memory, an unexpected error from the kernel). */
mock_cgroups *mock_cgroups_open(const char *tag, char *note, size_t cap, sbx_err *err);
/* Removes the parent groups (they must be empty) and frees. NULL is fine. */
void mock_cgroups_close(mock_cgroups *cgs);
/* 1 or 2. */
int mock_cgroups_version(const mock_cgroups *cgs);
/* The i-th parent group directory (v1: one per distinct hierarchy used;
 * v2: one), NULL past the end. A sandbox's group is `<parent>/<id>`. */
const char *mock_cgroups_parent(const mock_cgroups *cgs, size_t i);

/* Creates `<parent>/<id>` in every hierarchy with the limits: mem_bytes
 * (0 = no limit) and pids_max (0 = no limit). Fails if the group exists. */
mock_cgroup *mock_cgroup_create(mock_cgroups *cgs, const char *id, uint64_t mem_bytes,
				uint64_t pids_max, sbx_err *err);
/* Sets the group's limits (0 leaves one as it is): up or down, v1's
 * memory+swap limit kept equal to the memory limit. */
int mock_cgroup_limit(mock_cgroup *cg, uint64_t mem_bytes, uint64_t pids_max, sbx_err *err);
/* Moves pid (a whole process) into the group, in every hierarchy. */
int mock_cgroup_add(mock_cgroup *cg, pid_t pid, sbx_err *err);
/* v1: moves the calling thread alone into the group, in every hierarchy,
 * so that what it clones next is born there; mock_cgroup_leave moves it
 * back to the mock's own groups (the one write to a file of the mock's
 * own group, and only ever of itself). A thread moving itself skips the
 * kernel's global lock that mock_cgroup_add takes, whose wait stalls every
 * fork on the host (issue 24). 0 joined, 1 not on this version (v2: use
 * mock_cgroup_add), -1 with err set (it left what it joined). */
int mock_cgroup_join(mock_cgroup *cg, sbx_err *err);
int mock_cgroup_leave(mock_cgroup *cg, sbx_err *err);
/* Freezes (true) or thaws (false) every process of the group and waits,
 * bounded (10 s), until the kernel reports it done; a freeze that does not
 * complete is undone and reported. */
int mock_cgroup_freeze(mock_cgroup *cg, bool frozen, sbx_err *err);
/* Kernel OOM kills in the group so far (v1 memory.oom_control, v2
 * memory.events `oom_kill`). */
int mock_cgroup_oom_kills(mock_cgroup *cg, uint64_t *out, sbx_err *err);
/* Reads the group's control file name whole (at most cap - 1 bytes) into
 * buf: in the pids hierarchy when pids, else the memory one (v2: the one
 * group either way). Metrics only: never a file of another group. */
int mock_cgroup_read(mock_cgroup *cg, bool pids, const char *name, char *buf, size_t cap, sbx_err *err);
/* Whether the OOM kill count is above `before` (read with
 * mock_cgroup_oom_kills when the process started): a SIGKILL then means
 * "over the memory limit" (exit 137). False when it cannot be read. */
bool mock_cgroup_oom_killed(mock_cgroup *cg, uint64_t before);
/* Thaws, SIGKILLs every process still in the group (v2: cgroup.kill when
 * present), waits (bounded, 5 s) until it is empty, removes the directory
 * in every hierarchy and frees cg, whatever the result (an error says what
 * was left behind). NULL is fine. */
int mock_cgroup_remove(mock_cgroup *cg, sbx_err *err);

#endif

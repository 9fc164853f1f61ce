/* cgroup_owner: the proof that a mock's parent groups (`sbx-<tag>-<pid>`,
 * cgroup.h) have an owner alive, so that a mock killed with SIGKILL, which
 * cannot remove its groups, has them removed by the next mock on the host.
 *
 * The proof is a lock held while the mock lives, on an owner file in the
 * run directory: $SBX_MOCK_RUN_DIR, else /run/sbx-mock for root, else
 * $XDG_RUNTIME_DIR/sbx-mock; made 0700, and refused unless it is a
 * directory of the mock's uid closed to others. Without one, nothing is
 * claimed or swept (the note says why): stale groups are then left, never
 * guessed at. A sweep removes only the groups an owner file names, only
 * when its lock can be taken (its owner is gone), and only empty ones
 * (rmdir refuses the rest). */
#ifndef SBX_MOCK_CGROUP_OWNER_H
#define SBX_MOCK_CGROUP_OWNER_H

#include <stddef.h>

typedef struct mock_cg_owner mock_cg_owner;

/* Removes the groups of every gone owner; note gets "; removed <path> (its
 * mock is gone)" per group, or why nothing was swept ("" when there was
 * nothing to do). */
void mock_cg_owner_sweep(char *note, size_t cap);
/* Writes and locks the owner file of parents[0..n) (the mock's parent
 * groups, in every hierarchy). NULL with why when there is no run
 * directory or the file cannot be written. */
mock_cg_owner *mock_cg_owner_claim(const char *const *parents, size_t n, char *why, size_t wcap);
/* Removes the owner file and drops the lock. NULL is fine. */
void mock_cg_owner_release(mock_cg_owner *o);

#endif

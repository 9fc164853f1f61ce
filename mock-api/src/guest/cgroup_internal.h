/* cgroup_internal: what cgroup.c and cgroup_remove.c share (the structs
 * and the small helpers on control files); see cgroup.h. */
#ifndef SBX_MOCK_CGROUP_INTERNAL_H
#define SBX_MOCK_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest/cgroup.h"
#include "sbx/err.h"

/* v1 hierarchies by controller; v2 uses CG_MEM's slot only. */
enum { CG_MEM, CG_PIDS, CG_FRZ, CG_NHIER };

#define CG_FREEZE_WAIT_MS 10000 /* returns when done; long for a loaded host */
#define CG_REMOVE_WAIT_MS 5000
#define CG_SMALL	  4096 /* control files read whole: states, counters, lists */

struct mock_cgroups {
	int version;		/* 1 or 2 */
	size_t nhier;		/* v1: CG_NHIER, v2: 1 */
	size_t same[CG_NHIER];	/* index of the first slot with the same directory
				 * (co-mounted v1 controllers share one hierarchy) */
	char *parent[CG_NHIER]; /* sbx-<tag>-<pid> in each slot (owned when same[i] == i) */
	char *own[CG_NHIER];	/* v1: the mock's own group in each slot (owned when
				 * same[i] == i), where a joined thread goes back */
};

struct mock_cgroup {
	const mock_cgroups *cgs;
	char *dir[CG_NHIER]; /* <parent>/<id>, owned when cgs->same[i] == i */
	bool gone[CG_NHIER]; /* removed already (by mock_cgroup_remove) */
};

/* Sleeps *us microseconds, then doubles *us up to 5 ms: quick answers for
 * fast kernels, little spinning for slow ones. */
void mock_cg_backoff(long *us);
/* The group's directory in hierarchy slot i. */
const char *mock_cg_dir(const mock_cgroup *cg, size_t i);
/* dir/name into out; -1 with err set when it does not fit. */
int mock_cg_path_of(char *out, size_t cap, const char *dir, const char *name, sbx_err *err);
/* Writes val to dir/name in one write(2), as cgroupfs wants. */
int mock_cg_write(const char *dir, const char *name, const char *val, sbx_err *err);
bool mock_cg_exists(const char *dir, const char *name);
/* Waits, bounded by wait_ms, until the freezer reports frozen (or
 * thawed), writing the state first. */
int mock_cg_freeze_wait(mock_cgroup *cg, bool frozen, int64_t wait_ms, sbx_err *err);
void mock_cg_free_group(mock_cgroup *cg);

#endif

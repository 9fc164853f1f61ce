/* cgroup_remove: killing what a sandbox's group holds and removing the
 * group (mock_cgroup_remove; see cgroup.h). Signals only processes listed
 * in the sandbox's own group, never the mock itself. */
#define _GNU_SOURCE
#include "guest/cgroup_internal.h"
#include "sbx/sys.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* SIGKILLs every process listed in dir/cgroup.procs; *left counts them. */
static int kill_listed(const char *dir, size_t *left, sbx_err *err)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	int rc = 0;
	FILE *f;

	if (mock_cg_path_of(path, sizeof path, dir, "cgroup.procs", err) != 0)
		return -1;
	f = fopen(path, "re");
	if (f == NULL) {
		sbx_err_set(err, "open %s: %s", path, strerror(errno));
		return -1;
	}
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		char *end;
		long pid = strtol(line, &end, 10);

		/* the mock itself, listed while a thread of it was joined
		 * (mock_cgroup_join) and could not leave: never signalled */
		if (end == line || pid <= 0 || pid == (long)getpid())
			continue;
		(*left)++;
		if (kill((pid_t)pid, SIGKILL) != 0 && errno != ESRCH) {
			sbx_err_set(err, "kill %ld (in %s): %s", pid, dir, strerror(errno));
			rc = -1;
		}
	}
	free(line);
	fclose(f);
	return rc;
}

/* One round of killing. v1: the group is frozen while its list is read and
 * signalled, so no listed process can exit and have its pid reused, nor
 * fork; v2: cgroup.kill does the same in the kernel when it exists. */
static int kill_round(mock_cgroup *cg, size_t *left, sbx_err *err)
{
	bool v1 = cg->cgs->version == 1;
	int rc = 0;

	*left = 0;
	v1 = v1 && !cg->gone[cg->cgs->same[CG_FRZ]];
	if (v1)
		mock_cg_freeze_wait(cg, true, 200, NULL);
	else if (!cg->gone[0] && mock_cg_exists(cg->dir[0], "cgroup.kill"))
		rc = mock_cg_write(cg->dir[0], "cgroup.kill", "1", err);
	for (size_t i = 0; rc == 0 && i < cg->cgs->nhier; i++)
		if (cg->cgs->same[i] == i && !cg->gone[i])
			rc = kill_listed(cg->dir[i], left, err);
	if (v1 && mock_cg_freeze_wait(cg, false, CG_FREEZE_WAIT_MS, rc == 0 ? err : NULL) != 0)
		rc = -1;
	return rc;
}

/* Removes the group's directories; 0 when all are gone. */
static int rmdir_all(mock_cgroup *cg, sbx_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < cg->cgs->nhier; i++) {
		if (cg->cgs->same[i] != i || cg->gone[i])
			continue;
		if (rmdir(cg->dir[i]) == 0 || errno == ENOENT) {
			cg->gone[i] = true;
		} else if (rc == 0) {
			sbx_err_set(err, "rmdir %s: %s", cg->dir[i], strerror(errno));
			rc = -1;
		}
	}
	return rc;
}

int mock_cgroup_remove(mock_cgroup *cg, sbx_err *err)
{
	int64_t deadline = sbx_mono_ms() + CG_REMOVE_WAIT_MS;
	size_t left = 0;
	long us = 50;
	int rc;

	if (cg == NULL)
		return 0;
	mock_cg_freeze_wait(cg, false, CG_FREEZE_WAIT_MS, NULL);
	sbx_err_clear(err);
	/* empty (its cell reaped): no kill round, whose v1 freeze switches the
	 * freezer's static key, i.e. patches kernel text (ms of every CPU) */
	rc = rmdir_all(cg, NULL);
	while (rc != 0) {
		rc = kill_round(cg, &left, err);
		if (rc == 0 && left == 0 && rmdir_all(cg, err) == 0)
			break;
		if (rc == 0 && left > 0)
			sbx_err_set(err, "%s: %zu processes still there", mock_cg_dir(cg, CG_MEM), left);
		rc = -1;
		if (sbx_mono_ms() >= deadline)
			break;
		mock_cg_backoff(&us);
	}
	if (rc != 0)
		sbx_err_prefix(err, "removing cgroup after %d ms", CG_REMOVE_WAIT_MS);
	mock_cg_free_group(cg);
	return rc;
}

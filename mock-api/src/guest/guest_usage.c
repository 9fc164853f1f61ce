/* guest_usage: what a contained sandbox uses now, for the metrics routes
 * (mock_guest_usage_read, guest.h).
 *
 * Memory and the process count come from the sandbox's cgroup when it has
 * one. CPU time: cgroup v2's cpu.stat usage_usec; cgroup v1 (the mock uses
 * no cpuacct hierarchy) and no cgroup at all: the sum over the sandbox's
 * live processes of their own and their reaped children's times, which
 * counts every process the sandbox ever ran exactly once (a dead one's
 * times are in the parent that reaped it; the cell's init reaps the rest).
 * Without a cgroup the processes are found by their PID namespace and
 * memory is their resident set.
 *
 * Reads only: never writes a control file or signals a process. */
#define _GNU_SOURCE
#include "guest/guest_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define USAGE_FILE 8192

/* The number after "key " in a "key value" file; false when absent. */
static bool keyed(const char *buf, const char *key, uint64_t *out)
{
	size_t kl = strlen(key);
	const char *p = buf;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
			*out = strtoull(p + kl + 1, NULL, 10);
			return true;
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return false;
}

/* A control file holding one number ("max" = 0: none); false unreadable. */
static bool cg_number(mock_cgroup *cg, bool pids, const char *name, uint64_t *out)
{
	char buf[64];
	char *end = NULL;

	if (mock_cgroup_read(cg, pids, name, buf, sizeof(buf), NULL) != 0)
		return false;
	if (strncmp(buf, "max", 3) == 0) {
		*out = 0;
		return true;
	}
	errno = 0;
	*out = strtoull(buf, &end, 10);
	return errno == 0 && end != buf;
}

/* /proc/<pid>/stat: utime+stime+cutime+cstime in ticks, and rss pages. */
static bool proc_times(pid_t pid, uint64_t *ticks, uint64_t *rss)
{
	char path[64], buf[1024];
	FILE *f;
	size_t n;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	if (p == NULL)
		return false;
	*ticks = 0;
	/* fields after ")": 3 state ... 14 utime 15 stime 16 cutime 17 cstime ... 24 rss */
	for (int field = 3; field <= 24 && p != NULL; field++) {
		p = strchr(p + 1, ' ');
		if (p == NULL)
			return false;
		if (field >= 14 && field <= 17)
			*ticks += strtoull(p + 1, NULL, 10);
		if (field == 24)
			*rss = strtoull(p + 1, NULL, 10);
	}
	return true;
}

static void add_pid(mock_guest_usage *u, pid_t pid, uint64_t *ticks, uint64_t *rss_pages)
{
	uint64_t t = 0, r = 0;

	if (!proc_times(pid, &t, &r))
		return; /* gone meanwhile */
	*ticks += t;
	*rss_pages += r;
	u->pids++;
}

/* The processes of the cgroup (cgroup.procs). */
static int scan_cgroup(mock_guest *g, mock_guest_usage *u, uint64_t *ticks, uint64_t *rss, sbx_err *err)
{
	char *buf = malloc(USAGE_FILE * 8);
	int rc = -1;

	if (buf == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	if (mock_cgroup_read(g->cg, true, "cgroup.procs", buf, USAGE_FILE * 8, err) == 0) {
		for (char *p = buf; *p != '\0';) {
			char *end = NULL;
			long pid = strtol(p, &end, 10);

			if (end == p)
				break;
			if (pid > 0)
				add_pid(u, (pid_t)pid, ticks, rss);
			p = end;
			while (*p == '\n')
				p++;
		}
		rc = 0;
	}
	free(buf);
	return rc;
}

/* The processes whose PID namespace is the cell's. */
static int scan_pidns(mock_guest *g, mock_guest_usage *u, uint64_t *ticks, uint64_t *rss, sbx_err *err)
{
	char path[64];
	struct stat cell_ns, st;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)mock_cell_pid(g->cell));
	if (stat(path, &cell_ns) != 0 || (d = opendir("/proc")) == NULL) {
		sbx_err_set(err, "sandbox processes: %s", strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		char *end = NULL;
		long pid = strtol(e->d_name, &end, 10);

		if (end == e->d_name || *end != '\0' || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
		if (stat(path, &st) == 0 && st.st_ino == cell_ns.st_ino && st.st_dev == cell_ns.st_dev)
			add_pid(u, (pid_t)pid, ticks, rss);
	}
	closedir(d);
	return 0;
}

/* Memory from the cgroup: v2 names first, then v1's. */
static void cg_memory(mock_cgroup *cg, mock_guest_usage *u)
{
	if (!cg_number(cg, false, "memory.current", &u->mem_bytes))
		cg_number(cg, false, "memory.usage_in_bytes", &u->mem_bytes);
	if (!cg_number(cg, false, "memory.peak", &u->mem_peak_bytes))
		cg_number(cg, false, "memory.max_usage_in_bytes", &u->mem_peak_bytes);
	if (!cg_number(cg, false, "memory.max", &u->mem_limit_bytes))
		cg_number(cg, false, "memory.limit_in_bytes", &u->mem_limit_bytes);
	if (u->mem_limit_bytes >= (uint64_t)LLONG_MAX / 2)
		u->mem_limit_bytes = 0; /* v1's "no limit" is a huge number */
}

int mock_guest_usage_read(mock_guest *g, mock_guest_usage *u, sbx_err *err)
{
	uint64_t ticks = 0, rss = 0, v2_usec = 0;
	long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	char stat[1024];
	int rc;

	memset(u, 0, sizeof(*u));
	if (g == NULL || g->cell == NULL) {
		sbx_err_set(err, "metrics need contained guests (--guest-mode plain keeps no per-sandbox accounting)");
		return -1;
	}
	pthread_mutex_lock(&g->lock);
	if (g->dead) {
		pthread_mutex_unlock(&g->lock);
		sbx_err_set(err, "sandbox environment is gone");
		return -1;
	}
	/* under the guest's lock: calls on one mock_cgroup must not overlap */
	rc = g->cg != NULL ? scan_cgroup(g, u, &ticks, &rss, err) : scan_pidns(g, u, &ticks, &rss, err);
	if (rc == 0 && g->cg != NULL) {
		cg_memory(g->cg, u);
		if (mock_cgroup_read(g->cg, false, "cpu.stat", stat, sizeof(stat), NULL) == 0 &&
		    keyed(stat, "usage_usec", &v2_usec))
			u->source = "cgroup v2 (cpu.stat, memory)";
		else
			u->source = "cgroup v1 (memory, pids) and /proc/<pid>/stat (CPU time)";
	}
	pthread_mutex_unlock(&g->lock);
	if (rc != 0)
		return -1;
	u->cpu_usec = v2_usec > 0 ? v2_usec : ticks * (uint64_t)(1000000 / (hz > 0 ? hz : 100));
	if (g->cg == NULL) {
		u->mem_bytes = rss * (uint64_t)(page > 0 ? page : 4096);
		u->source = "/proc (no cgroup: resident memory of its processes)";
	}
	return 0;
}

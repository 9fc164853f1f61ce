/* disk: the sandbox's writable space (CONTAINMENT.md, "The guest's disk").
 * A tmpfs of the shape's disk_mib, so that a write past it is ENOSPC and the
 * host's disk is never touched; with size 0 (durable mode, whose files
 * must outlive the mock) a bind of the host tree <work>/<id> instead.
 *
 * Layout: u and w (the root overlay's upper and work dirs), workspace and
 * tmp (bound at /workspace and /tmp), m (the merged root) and s (the
 * overlay's lower layer, a mount point). Must never hold anything of the
 * host's but what the mock copied into seed for a fork. */
#define _GNU_SOURCE
#include "cell.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(char *err, size_t cap, const char *what, const char *path)
{
	snprintf(err, cap, "%s %s: %s", what, path, strerror(errno));
	return -1;
}

/* The size in MiB the mock asked for; 0 when none (or unreadable). */
static unsigned long disk_mib(void)
{
	const char *v = getenv(CELL_DISK_ENV);
	char *end;
	unsigned long mib;

	if (v == NULL)
		return 0;
	mib = strtoul(v, &end, 10);
	return end != v && *end == '\0' && mib <= 16UL * 1024 * 1024 ? mib : 0;
}

/* cp -a seed/. dir/ as root of the cell: ownership, modes, overlay
 * whiteouts and xattrs come across as the source had them. */
static int copy_seed(const char *seed, const char *dir, char *err, size_t cap)
{
	char from[PATH_MAX], to[PATH_MAX];
	char *argv[] = {"cp", "-a", from, to, NULL};
	char *envp[] = {NULL};
	int st = 0;
	pid_t pid;

	snprintf(from, sizeof(from), "%s/.", seed);
	snprintf(to, sizeof(to), "%s/", dir);
	pid = fork();
	if (pid < 0)
		return fail(err, cap, "fork for", "the fork's files");
	if (pid == 0) {
		execve("/bin/cp", argv, envp);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return fail(err, cap, "wait for", "cp");
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(err, cap, "copy the fork's files into the disk: cp status %d", st);
		return -1;
	}
	return 0;
}

static int make_dirs(const char *dir, char *err, size_t cap)
{
	static const char *const names[] = {"u", "w", "m", "workspace", "tmp"};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return fail(err, cap, "mkdir", path);
	}
	snprintf(path, sizeof(path), "%s/tmp", dir);
	return chmod(path, 01777) == 0 ? 0 : fail(err, cap, "chmod", path);
}

int cell_disk_mount(const char *dir, const char *seed, char *err, size_t cap)
{
	unsigned long mib = disk_mib();
	char opts[96];
	int fd;

	if (mib > 0) {
		/* one inode per 4 KiB of disk: empty files are bounded too */
		snprintf(opts, sizeof(opts), "mode=0755,size=%lum,nr_inodes=%lu", mib, mib * 256);
		if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
			return fail(err, cap, "mount the disk (tmpfs) on", dir);
	} else if (mount("/proc/self/fd/4/..", dir, NULL, MS_BIND, NULL) != 0) {
		return fail(err, cap, "bind the sandbox tree on", dir);
	}
	if (access(seed, F_OK) == 0 && copy_seed(seed, dir, err, cap) != 0)
		return -1;
	if (make_dirs(dir, err, cap) != 0)
		return -1;
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || dup3(fd, CELL_DISK_FD, O_CLOEXEC) != CELL_DISK_FD)
		return fail(err, cap, "keep a handle of", dir);
	close(fd);
	return 0;
}

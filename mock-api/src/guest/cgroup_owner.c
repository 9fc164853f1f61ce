/* cgroup_owner: proof of who owns a mock's parent groups, so that what a
 * mock killed with SIGKILL left behind is removed by the next one; see
 * cgroup_owner.h.
 *
 * The proof is a lock: each mock writes the paths of its parent groups to
 * `<run dir>/cgroup-<name>.owner` and holds flock(LOCK_EX) on it while it
 * lives. The kernel drops the lock when the process dies, however it dies,
 * so a file whose lock can be taken belongs to a mock that is gone. The
 * file is written under a temporary name and renamed only once locked: a
 * sweeper never sees an owner file that is not locked by a live owner. */
#define _GNU_SOURCE
#include "guest/cgroup_owner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define OWNER_PREFIX "cgroup-"
#define OWNER_SUFFIX ".owner"
#define OWNER_FILE_MAX 8192 /* a few cgroup paths */
#define CGROUP_ROOT "/sys/fs/cgroup/"

struct mock_cg_owner {
	char path[PATH_MAX];
	int fd;
};

static void note_add(char *note, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note_add(char *note, size_t cap, const char *fmt, ...)
{
	size_t len = strnlen(note, cap);
	va_list ap;

	if (len + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(note + len, cap - len, fmt, ap);
	va_end(ap);
}

/* The run directory (made 0700 if missing) into out; false with why when
 * there is none we can trust: not a directory, not ours, or writable by
 * others (anyone could then plant an owner file naming any group). */
static bool run_dir(char *out, size_t cap, char *why, size_t wcap)
{
	const char *env = getenv("SBX_MOCK_RUN_DIR"), *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (env != NULL && env[0] != '\0')
		snprintf(out, cap, "%s", env);
	else if (geteuid() == 0)
		snprintf(out, cap, "/run/sbx-mock");
	else if (xdg != NULL && xdg[0] == '/')
		snprintf(out, cap, "%s/sbx-mock", xdg);
	else {
		snprintf(why, wcap, "no run directory (not root, no XDG_RUNTIME_DIR, no SBX_MOCK_RUN_DIR)");
		return false;
	}
	if (mkdir(out, 0700) != 0 && errno != EEXIST) {
		snprintf(why, wcap, "run directory %s: mkdir: %s", out, strerror(errno));
		return false;
	}
	if (lstat(out, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0) {
		snprintf(why, wcap,
			 "run directory %s is not a directory of uid %u closed to others",
			 out, (unsigned)geteuid());
		return false;
	}
	return true;
}

/* A path an owner file may name: under the cgroup root, a last component
 * `sbx-...`, no "..". Anything else is not ours to remove. */
static bool group_path_ok(const char *p)
{
	const char *base = strrchr(p, '/');

	return strncmp(p, CGROUP_ROOT, strlen(CGROUP_ROOT)) == 0 && strstr(p, "/..") == NULL &&
	       base != NULL && strncmp(base + 1, "sbx-", 4) == 0;
}

/* Removes the sandbox groups under parent, then parent; only empty groups
 * go (rmdir refuses the others). 0 when parent is gone. */
static int remove_group(const char *parent)
{
	DIR *d = opendir(parent);
	struct dirent *de;
	char sub[PATH_MAX];

	if (d == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", parent, de->d_name) < (int)sizeof(sub))
			rmdir(sub);
	}
	closedir(d);
	return rmdir(parent) == 0 || errno == ENOENT ? 0 : -1;
}

/* The groups named in a gone owner's file (fd, locked by us): each
 * removed; true when all are gone. Says what it did in note. */
static bool sweep_file(int fd, const char *name, char *note, size_t cap)
{
	char buf[OWNER_FILE_MAX + 1], *line, *next;
	ssize_t n = pread(fd, buf, OWNER_FILE_MAX, 0);
	bool all = true;

	if (n < 0)
		return false;
	buf[n] = '\0';
	for (line = buf; *line != '\0'; line = next) {
		next = line + strcspn(line, "\n");
		if (*next == '\n')
			*next++ = '\0';
		if (line[0] == '\0' || strncmp(line, "pid ", 4) == 0)
			continue;
		if (!group_path_ok(line)) {
			note_add(note, cap, "; %s names %s, not a mock's group: left alone", name,
				 line);
			all = false;
		} else if (remove_group(line) == 0) {
			note_add(note, cap, "; removed %s (its mock is gone)", line);
		} else {
			note_add(note, cap, "; could not remove %s: %s", line, strerror(errno));
			all = false;
		}
	}
	return all;
}

void mock_cg_owner_sweep(char *note, size_t cap)
{
	char dir[PATH_MAX], why[PATH_MAX + 128], path[PATH_MAX * 2];
	DIR *d;
	struct dirent *de;

	if (cap > 0)
		note[0] = '\0';
	if (!run_dir(dir, sizeof(dir), why, sizeof(why))) {
		note_add(note, cap, "; stale groups not swept: %s", why);
		return;
	}
	d = opendir(dir);
	while (d != NULL && (de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name), sl = strlen(OWNER_SUFFIX);
		int fd;

		if (strncmp(de->d_name, OWNER_PREFIX, strlen(OWNER_PREFIX)) != 0 || len <= sl ||
		    strcmp(de->d_name + len - sl, OWNER_SUFFIX) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		/* taken: its owner died (the kernel dropped its lock) */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && sweep_file(fd, de->d_name, note, cap))
			unlink(path);
		close(fd);
	}
	if (d != NULL)
		closedir(d);
}

mock_cg_owner *mock_cg_owner_claim(const char *const *parents, size_t n, char *why, size_t wcap)
{
	mock_cg_owner *o = calloc(1, sizeof(*o));
	char dir[PATH_MAX], tmp[PATH_MAX + 64], text[OWNER_FILE_MAX];
	const char *base;
	size_t len;

	if (o == NULL || n == 0 || !run_dir(dir, sizeof(dir), why, wcap)) {
		if (o == NULL)
			snprintf(why, wcap, "out of memory");
		free(o);
		return NULL;
	}
	base = strrchr(parents[0], '/');
	if (snprintf(o->path, sizeof(o->path), "%s/" OWNER_PREFIX "%s" OWNER_SUFFIX, dir,
		     base != NULL ? base + 1 : parents[0]) >= (int)sizeof(o->path)) {
		snprintf(why, wcap, "owner file name too long in %s", dir);
		free(o);
		return NULL;
	}
	snprintf(tmp, sizeof(tmp), "%s/.claim-%ld", dir, (long)getpid());
	len = (size_t)snprintf(text, sizeof(text), "pid %ld\n", (long)getpid());
	for (size_t i = 0; i < n && len < sizeof(text); i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\n", parents[i]);
	o->fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (o->fd < 0 || flock(o->fd, LOCK_EX) != 0 || len >= sizeof(text) ||
	    write(o->fd, text, len) != (ssize_t)len || rename(tmp, o->path) != 0) {
		snprintf(why, wcap, "owner file %s: %s", o->path,
			 len >= sizeof(text) ? "too many groups" : strerror(errno));
		if (o->fd >= 0)
			close(o->fd);
		unlink(tmp);
		free(o);
		return NULL;
	}
	return o;
}

void mock_cg_owner_release(mock_cg_owner *o)
{
	if (o == NULL)
		return;
	unlink(o->path);
	close(o->fd);
	free(o);
}

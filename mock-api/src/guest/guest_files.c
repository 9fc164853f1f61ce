/* guest_files: the files API's way into a guest's filesystem — a guest
 * absolute path resolved from the guest's root (contained: the cell's
 * root, /proc/<cell pid>/root, the one filesystem exec sees; plain: the
 * tree <work>/<id>); see guest.h.
 *
 * The tree is written by untrusted guest code, so every step is checked.
 * A read follows symlinks as the guest's own programs would (a Debian root
 * is full of them: /etc/os-release, /bin), but only inside the guest's
 * root (the walk resolves each link itself: "/" and ".." stop at the
 * root; /proc's magic links are only text), and what is opened is the
 * inode that was checked. A write never follows a symlink (every component is
 * opened O_NOFOLLOW) and never passes through anything but a directory.
 * Both: never step out of the tree (a literal "..": refused), and never
 * open anything but a regular file with exactly one
 * link — a hard link a guest planted to a host file (or to another
 * sandbox's) would otherwise let the API read or overwrite it. Sockets,
 * FIFOs and devices are refused before they are opened; a file is
 * truncated only after it passed the checks. Contained, every directory
 * and the file must be on the guest's own filesystems (its overlay root, a
 * tmpfs, or the work dir's filesystem in durable mode): its /proc (through
 * which the mock would reach PID 1's memory or the host's sysctls) is
 * refused. As root the walk runs with root inside's fsuid (the cell's
 * filesystems take no unmapped owner; and the mock gets no more access than
 * root inside has), so what it creates belongs to root inside, never to the
 * mock's own user. */
#define _GNU_SOURCE
#include "guest/guest_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FS_OVERLAY 0x794c7630L
#define FS_TMPFS 0x01021994L

/* Contained: whether fd is on one of the guest's own filesystems (the root
 * overlay, a tmpfs of the cell, or, durable, the work dir's filesystem whose
 * f_type is work_fs); never its proc, devpts or anything else. */
static bool guest_fs(const mock_guest *g, int fd)
{
	struct statfs sf;

	if (g->cell == NULL)
		return true;
	if (fstatfs(fd, &sf) != 0)
		return false;
	return (long)sf.f_type == FS_OVERLAY || (long)sf.f_type == FS_TMPFS ||
	       (long)sf.f_type == g->work_fs;
}

/* The next component of a guest path: copied into comp, *p moved past it
 * and the slashes after it. 1 with a component, 0 at the end of the path,
 * -1 with err set when a component is too long. */
static int next_component(const char **p, char comp[NAME_MAX + 1], sbx_err *err)
{
	size_t len;

	while (**p == '/')
		(*p)++;
	if (**p == '\0')
		return 0;
	len = strcspn(*p, "/");
	if (len > NAME_MAX) {
		sbx_err_set(err, "path component too long");
		return -1;
	}
	memcpy(comp, *p, len);
	comp[len] = '\0';
	*p += len;
	while (**p == '/')
		(*p)++;
	return 1;
}

/* The directory comp inside dirfd (made first when write), never through a
 * symlink: its fd, or -1 with *status and err set. */
static int descend(const mock_guest *g, int dirfd, const char *comp, const char *path, bool write,
		   int *status, sbx_err *err)
{
	uid_t owner = g->owner;
	struct stat st;
	int fd;

	if (write && mkdirat(dirfd, comp, 0755) == 0) {
		if (owner != (uid_t)-1)
			fchownat(dirfd, comp, owner, owner, AT_SYMLINK_NOFOLLOW);
	} else if (write && errno != EEXIST) {
		*status = 500;
		sbx_err_set(err, "mkdir %s: %s", comp, strerror(errno));
		return -1;
	}
	fd = openat(dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) {
			*status = 404;
			sbx_err_set(err, "no such file: %s", path);
		} else {
			sbx_err_set(err, "%s: a path component is a symlink or not a directory", path);
		}
		return -1;
	}
	if (!guest_fs(g, fd)) {
		sbx_err_set(err, "%s: the files API reads and writes the guest's files only, not /proc "
			    "or /dev", path);
		close(fd);
		return -1;
	}
	/* O_DIRECTORY already refused the rest: said again, as a checklist */
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
		sbx_err_set(err, "%s: a path component is not a directory", path);
		close(fd);
		return -1;
	}
	return fd;
}

/* The guest's root: the cell's (never a reaped cell's: its pid may be
 * another process's by now), or the tree in plain mode. */
static int open_root(mock_guest *g)
{
	char path[64];
	int fd;

	if (g->cell == NULL)
		return open(g->fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	pthread_mutex_lock(&g->lock);
	if (g->reaped) {
		pthread_mutex_unlock(&g->lock);
		errno = ESRCH;
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/root", (int)mock_cell_pid(g->cell));
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	pthread_mutex_unlock(&g->lock);
	if (fd >= 0 && !guest_fs(g, fd)) {
		close(fd);
		errno = EXDEV;
		return -1;
	}
	return fd;
}

/* Walks from the tree's root to the directory that holds the path's last
 * component: its fd, with that component in leaf; or -1 with *status and
 * err set. */
static int open_parent(mock_guest *g, const char *path, bool write, char leaf[NAME_MAX + 1],
		       int *status, sbx_err *err)
{
	char comp[NAME_MAX + 1];
	const char *p = path;
	bool have_leaf = false;
	int dirfd, fd, more;

	dirfd = open_root(g);
	if (dirfd < 0) {
		*status = 500;
		sbx_err_set(err, "sandbox tree is gone: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		more = next_component(&p, comp, err);
		if (more <= 0)
			break;
		if (strcmp(comp, "..") == 0) {
			sbx_err_set(err, "path must not contain \"..\"");
			goto out_close;
		}
		if (strcmp(comp, ".") == 0)
			continue;
		if (*p == '\0') {
			memcpy(leaf, comp, strlen(comp) + 1);
			have_leaf = true;
			break;
		}
		fd = descend(g, dirfd, comp, path, write, status, err);
		if (fd < 0)
			goto out_close;
		close(dirfd);
		dirfd = fd;
	}
	if (more < 0)
		goto out_close;
	if (!have_leaf) {
		sbx_err_set(err, "path names a directory, not a file");
		goto out_close;
	}
	return dirfd;

out_close:
	close(dirfd);
	return -1;
}

/* The kind of file st is, for a refusal. */
static const char *file_kind(const struct stat *st)
{
	if (S_ISDIR(st->st_mode))
		return "a directory";
	if (S_ISLNK(st->st_mode))
		return "a symlink";
	if (S_ISSOCK(st->st_mode))
		return "a socket";
	if (S_ISFIFO(st->st_mode))
		return "a FIFO";
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		return "a device";
	return "not a regular file";
}

/* 0 when st is a regular file with one link; else -1 with *status and
 * err set (400 for a symlink, as a symlink inside the path; 409 else). */
static int check_leaf(const struct stat *st, const char *path, int *status, sbx_err *err)
{
	if (S_ISLNK(st->st_mode)) {
		*status = 400;
		sbx_err_set(err, "%s is a symlink; the files API never follows symlinks", path);
		return -1;
	}
	*status = 409;
	if (!S_ISREG(st->st_mode)) {
		sbx_err_set(err, "%s is %s; the files API reads and writes regular files only", path,
			    file_kind(st));
		return -1;
	}
	if (st->st_nlink != 1) {
		sbx_err_set(err, "%s has %lu hard links; the files API only touches a file with "
			    "exactly one", path, (unsigned long)st->st_nlink);
		return -1;
	}
	return 0;
}

/* What is at leaf before it is opened: 0 (a file that passes check_leaf,
 * or nothing there when write may create it), else -1 with *status and
 * err set. A FIFO or device is thus never opened. */
static int check_before_open(int dirfd, const char *leaf, const char *path, bool write,
			     int *status, sbx_err *err)
{
	struct stat st;

	if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return check_leaf(&st, path, status, err);
	if (errno == ENOENT && write)
		return 0;
	if (errno == ENOENT) {
		*status = 404;
		sbx_err_set(err, "no such file: %s", path);
	} else {
		*status = 500;
		sbx_err_set(err, "stat %s: %s", path, strerror(errno));
	}
	return -1;
}

/* Opens leaf in dirfd, never through a symlink, and only a regular file
 * with one link: its fd (blocking), or -1 with *status and err set. The
 * open file is checked again (something else may have been swapped in
 * since check_before_open), and a write truncates only then. */
static int open_leaf(const mock_guest *g, int dirfd, const char *leaf, const char *path,
		     bool write, int *status, sbx_err *err)
{
	uid_t owner = g->owner;
	int flags = (write ? O_WRONLY | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		    O_CLOEXEC;
	struct stat stt;
	int fd;

	if (check_before_open(dirfd, leaf, path, write, status, err) != 0)
		return -1;
	fd = openat(dirfd, leaf, flags, 0644);
	if (fd < 0) {
		if (errno == ENOENT) {
			*status = 404;
			sbx_err_set(err, "no such file: %s", path);
		} else if (errno == ELOOP) {
			sbx_err_set(err, "%s is a symlink; the files API never follows symlinks", path);
		} else if (errno == EISDIR) {
			*status = 409;
			sbx_err_set(err, "%s is a directory", path);
		} else {
			*status = 500;
			sbx_err_set(err, "open %s: %s", path, strerror(errno));
		}
		return -1;
	}
	/* O_NONBLOCK above: opening a FIFO must not hang the request */
	if (fstat(fd, &stt) != 0) {
		*status = 500;
		sbx_err_set(err, "stat %s: %s", path, strerror(errno));
		goto out_close;
	}
	if (check_leaf(&stt, path, status, err) != 0)
		goto out_close;
	if (!guest_fs(g, fd)) {
		*status = 400;
		sbx_err_set(err, "%s: the files API reads and writes the guest's files only, not /proc "
			    "or /dev", path);
		goto out_close;
	}
	if (write && ftruncate(fd, 0) != 0) {
		*status = 500;
		sbx_err_set(err, "truncate %s: %s", path, strerror(errno));
		goto out_close;
	}
	/* root inside owns what is written for it (one link, in the tree:
	 * nothing of anyone else's can be reached this way) */
	if (write && owner != (uid_t)-1 && stt.st_uid != owner && fchown(fd, owner, owner) != 0) {
		*status = 500;
		sbx_err_set(err, "chown %s: %s", path, strerror(errno));
		goto out_close;
	}
	fcntl(fd, F_SETFL, 0);
	return fd;

out_close:
	close(fd);
	return -1;
}

/* A literal ".." component (however many slashes around it): refused in
 * every path, as is a component over NAME_MAX. 0, or -1 with err set. */
static int check_components(const char *path, sbx_err *err)
{
	char comp[NAME_MAX + 1];
	const char *p = path;
	int more;

	while ((more = next_component(&p, comp, err)) > 0) {
		if (strcmp(comp, "..") == 0) {
			sbx_err_set(err, "path must not contain \"..\"");
			return -1;
		}
	}
	return more;
}

/* A read's walk: symlinks followed as the kernel would (at most
 * MAXSYMLINKS, 40, per path), but by this code, inside the guest's root:
 * every component is opened O_PATH | O_NOFOLLOW from the directory the
 * walk holds, a symlink's target is read and spliced into what is left of
 * the path (an absolute one restarts at the guest's root), and ".." is
 * the walk's own (it drops the last directory it entered and walks again
 * from the root), so no step can leave the root however the guest swaps
 * its files meanwhile; /proc's magic links are only text here. Works
 * where openat2's RESOLVE_IN_ROOT does not (valgrind 3.19, old kernels). */
#define READ_SYMLINKS_MAX 40
typedef struct read_walk {
	mock_guest *g;
	const char *path; /* as asked, for messages */
	int root, cur;    /* O_PATH / directory fds */
	char rest[2 * PATH_MAX];    /* what is left to resolve */
	char resolved[PATH_MAX];    /* the directories entered, "/a/b" */
	int hops;
} read_walk;

/* cur := the directory w->resolved names, entered again from the root
 * without following anything (it held no symlink when it was entered; one
 * swapped in since fails the walk). 0, or -1 with errno set. */
static int walk_reenter(read_walk *w)
{
	char comp[NAME_MAX + 1];
	const char *p = w->resolved;
	sbx_err ignore = {{0}};
	int fd = dup(w->root);

	while (fd >= 0 && next_component(&p, comp, &ignore) > 0) {
		int next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		close(fd);
		fd = next;
	}
	if (fd < 0)
		return -1;
	close(w->cur);
	w->cur = fd;
	return 0;
}

/* Splices a symlink's target (at fd) in front of what is left. 0, or -1
 * with errno set (ELOOP, ENAMETOOLONG). */
static int walk_splice(read_walk *w, int fd)
{
	char target[PATH_MAX + 1], joined[sizeof(w->rest)];
	ssize_t n;

	if (++w->hops > READ_SYMLINKS_MAX) {
		errno = ELOOP;
		return -1;
	}
	n = readlinkat(fd, "", target, sizeof(target) - 1);
	if (n < 0)
		return -1;
	target[n] = '\0';
	if ((size_t)snprintf(joined, sizeof(joined), "%s/%s", target, w->rest) >= sizeof(joined)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(w->rest, joined, sizeof(joined));
	if (target[0] == '/') { /* absolute: from the guest's root */
		w->resolved[0] = '\0';
		return walk_reenter(w);
	}
	return 0;
}

/* One step of the walk over comp (neither "" nor "."). 0, or -1 with
 * errno set, or -2 when the directory stepped into is not the guest's. */
static int walk_step(read_walk *w, const char *comp, bool last)
{
	struct stat st;
	size_t len = strlen(w->resolved);
	int fd;

	if (strcmp(comp, "..") == 0) { /* the walk's own: never the kernel's */
		char *slash = strrchr(w->resolved, '/');

		if (slash != NULL)
			*slash = '\0';
		return walk_reenter(w);
	}
	fd = openat(w->cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0)
		goto fail;
	if (S_ISLNK(st.st_mode)) {
		if (walk_splice(w, fd) != 0)
			goto fail;
		close(fd);
		return 0;
	}
	if (!last && !S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		goto fail;
	}
	if (!last && !guest_fs(w->g, fd)) {
		close(fd);
		return -2;
	}
	if (len + 1 + strlen(comp) >= sizeof(w->resolved)) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	snprintf(w->resolved + len, sizeof(w->resolved) - len, "/%s", comp);
	close(w->cur);
	w->cur = fd;
	return 0;
fail:
	if (fd >= 0) {
		int code = errno;

		close(fd);
		errno = code;
	}
	return -1;
}

/* The walk's refusal, as an answer: *status and err set. */
static void walk_error(int rc, int code, const char *path, int *status, sbx_err *err)
{
	*status = 400;
	if (rc == -2) {
		sbx_err_set(err, "%s: the files API reads and writes the guest's files only, not /proc "
			    "or /dev", path);
	} else if (code == ENOENT) {
		*status = 404;
		sbx_err_set(err, "no such file: %s", path);
	} else if (code == ELOOP) {
		sbx_err_set(err, "%s: too many levels of symlinks", path);
	} else if (code == ENOTDIR) {
		sbx_err_set(err, "%s: a path component is not a directory", path);
	} else if (code == ENAMETOOLONG) {
		sbx_err_set(err, "%s: the path with its symlinks' targets is too long", path);
	} else {
		*status = 500;
		sbx_err_set(err, "open %s: %s", path, strerror(code));
	}
}

/* Resolves w->rest: the O_PATH fd of what it names, or -1 with *status and
 * err set. */
static int walk_all(read_walk *w, int *status, sbx_err *err)
{
	char comp[NAME_MAX + 1];
	int rc = 0, fd;

	for (;;) {
		const char *p = w->rest;
		int more = next_component(&p, comp, err);
		bool last;

		if (more < 0)
			return -1;
		if (more == 0)
			break;
		memmove(w->rest, p, strlen(p) + 1);
		last = w->rest[0] == '\0';
		if (strcmp(comp, ".") == 0)
			continue;
		rc = walk_step(w, comp, last);
		if (rc != 0)
			break;
	}
	if (rc != 0) {
		walk_error(rc, errno, w->path, status, err);
		return -1;
	}
	fd = w->cur;
	w->cur = -1;
	return fd;
}

/* A read: path resolved in the guest's root, symlinks followed inside it
 * (the walk above); the regular file with one link it names, on the
 * guest's own filesystems, opened (blocking) as the very inode that was
 * checked (reopened through its O_PATH descriptor, so nothing swapped in
 * meanwhile is opened); or -1 with *status and err set. */
static int open_read_in_root(mock_guest *g, const char *path, int *status, sbx_err *err)
{
	read_walk *w = calloc(1, sizeof(*w));
	struct stat st, opened;
	char self[64];
	int pfd = -1, fd = -1;

	*status = 500;
	if (w == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	w->g = g;
	w->path = path;
	w->root = open_root(g);
	w->cur = w->root < 0 ? -1 : dup(w->root);
	if (w->root < 0 || w->cur < 0) {
		sbx_err_set(err, "sandbox tree is gone: %s", strerror(errno));
		goto out;
	}
	snprintf(w->rest, sizeof(w->rest), "%s", path);
	pfd = walk_all(w, status, err);
	if (pfd < 0)
		goto out;
	*status = 500;
	if (fstat(pfd, &st) != 0) {
		sbx_err_set(err, "stat %s: %s", path, strerror(errno));
		goto out;
	}
	if (check_leaf(&st, path, status, err) != 0)
		goto out;
	if (!guest_fs(g, pfd)) {
		*status = 400;
		sbx_err_set(err, "%s: the files API reads and writes the guest's files only, not /proc "
			    "or /dev", path);
		goto out;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &opened) != 0 || opened.st_dev != st.st_dev || opened.st_ino != st.st_ino) {
		*status = 500;
		sbx_err_set(err, "open %s: %s", path, fd < 0 ? strerror(errno) : "the file changed");
		if (fd >= 0)
			close(fd);
		fd = -1;
		goto out;
	}
	fcntl(fd, F_SETFL, 0);
out:
	if (pfd >= 0)
		close(pfd);
	if (w->cur >= 0)
		close(w->cur);
	if (w->root >= 0)
		close(w->root);
	free(w);
	return fd;
}

int mock_guest_open(mock_guest *g, const char *path, bool write, int *status, sbx_err *err)
{
	char leaf[NAME_MAX + 1];
	int dirfd, fd;

	*status = 400;
	if (path == NULL || path[0] != '/') {
		sbx_err_set(err, "path must be absolute (start with /)");
		return -1;
	}
	if (strlen(path) >= PATH_MAX) {
		sbx_err_set(err, "path is too long");
		return -1;
	}
	/* as root: root inside's fsuid for the walk (this thread only) */
	if (g->cell != NULL && g->owner != (uid_t)-1) {
		syscall(SYS_setfsgid, g->owner);
		syscall(SYS_setfsuid, g->owner);
	}
	if (!write) {
		fd = check_components(path, err) != 0 ? -1 : open_read_in_root(g, path, status, err);
	} else {
		dirfd = open_parent(g, path, write, leaf, status, err);
		fd = dirfd < 0 ? -1 : open_leaf(g, dirfd, leaf, path, write, status, err);
		if (dirfd >= 0)
			close(dirfd);
	}
	if (g->cell != NULL && g->owner != (uid_t)-1) {
		syscall(SYS_setfsuid, 0);
		syscall(SYS_setfsgid, 0);
	}
	return fd;
}

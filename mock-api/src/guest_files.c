/* guest_files: the files API's way into a guest tree — a guest absolute
 * path resolved one component at a time under <work>/<id>; see guest.h.
 *
 * Must never follow a symlink (every component is opened O_NOFOLLOW) and
 * never step out of the tree ("..": refused). Opens only regular files.
 * What it creates for a contained guest belongs to root inside the cell
 * (mock_guest.owner), never to the mock's own user. */
#define _GNU_SOURCE
#include "guest_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
static int descend(int dirfd, const char *comp, const char *path, bool write, uid_t owner,
		   int *status, sbx_err *err)
{
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
	}
	return fd;
}

/* Walks from the tree's root to the directory that holds the path's last
 * component: its fd, with that component in leaf; or -1 with *status and
 * err set. */
static int open_parent(const mock_guest *g, const char *path, bool write, char leaf[NAME_MAX + 1],
		       int *status, sbx_err *err)
{
	char comp[NAME_MAX + 1];
	const char *p = path;
	bool have_leaf = false;
	int dirfd, fd, more;

	dirfd = open(g->fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
		fd = descend(dirfd, comp, path, write, g->owner, status, err);
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

/* Opens leaf in dirfd, never through a symlink, and only a regular file:
 * its fd (blocking), or -1 with *status and err set. */
static int open_leaf(int dirfd, const char *leaf, const char *path, bool write, uid_t owner,
		     int *status, sbx_err *err)
{
	int flags = (write ? O_WRONLY | O_TRUNC : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	struct stat stt;
	int fd = -1;

	/* a new file is chowned; an existing one never is (it could be a
	 * link to something that is not the guest's) */
	if (write) {
		fd = openat(dirfd, leaf, flags | O_CREAT | O_EXCL, 0644);
		if (fd >= 0 && owner != (uid_t)-1)
			fchown(fd, owner, owner);
	}
	if (fd < 0 && (!write || errno == EEXIST))
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
	if (fstat(fd, &stt) != 0 || !S_ISREG(stt.st_mode)) {
		*status = 409;
		sbx_err_set(err, "%s is not a regular file", path);
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, 0);
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
	dirfd = open_parent(g, path, write, leaf, status, err);
	if (dirfd < 0)
		return -1;
	fd = open_leaf(dirfd, leaf, path, write, g->owner, status, err);
	close(dirfd);
	return fd;
}

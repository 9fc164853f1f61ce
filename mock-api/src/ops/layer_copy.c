/* layer_copy: see layer_copy.h.
 *
 * Why not cp -a: a template build copies its layer once and each sandbox
 * on the template copies it again; the fork and exec of cp cost more than
 * the copy of a small layer. The attributes go on in cp -a's order: the
 * owner before the mode (a chown clears set-id bits) and before the
 * xattrs (it clears security.capability), the times last (a directory's
 * after its entries). */
#define _GNU_SOURCE
#include "ops/layer_copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

/* a layer deeper than this is refused, not walked (the stack's bound) */
#define LAYER_DEPTH_MAX 256

typedef struct linked {
	dev_t dev;
	ino_t ino;
	char *dst; /* its first copy's path */
} linked;

typedef struct copy_ctx {
	linked *links;
	size_t nlinks, caplinks;
	char *why;
	size_t cap;
} copy_ctx;

static int failed(copy_ctx *c, const char *what, const char *path)
{
	snprintf(c->why, c->cap, "copying the layer: %s %.400s: %s", what, path, strerror(errno));
	return -1;
}

/* The first copy of a file of several links, or NULL (then dst is its
 * first: remembered). */
static const char *link_of(copy_ctx *c, const struct stat *st, const char *dst)
{
	for (size_t i = 0; i < c->nlinks; i++) {
		if (c->links[i].dev == st->st_dev && c->links[i].ino == st->st_ino)
			return c->links[i].dst;
	}
	if (c->nlinks == c->caplinks) {
		size_t cap = c->caplinks == 0 ? 16 : c->caplinks * 2;
		linked *grown = realloc(c->links, cap * sizeof(*grown));

		if (grown == NULL)
			return NULL; /* copied apart: the content still right */
		c->links = grown;
		c->caplinks = cap;
	}
	c->links[c->nlinks].dev = st->st_dev;
	c->links[c->nlinks].ino = st->st_ino;
	c->links[c->nlinks].dst = strdup(dst);
	if (c->links[c->nlinks].dst != NULL)
		c->nlinks++;
	return NULL;
}

static int copy_xattrs(copy_ctx *c, const char *src, const char *dst)
{
	char names[8192], value[65536];
	ssize_t len = llistxattr(src, names, sizeof(names));

	if (len < 0)
		return errno == ENOTSUP ? 0 : failed(c, "listing the xattrs of", src);
	for (ssize_t off = 0; off < len; off += (ssize_t)strlen(names + off) + 1) {
		ssize_t n = lgetxattr(src, names + off, value, sizeof(value));

		if (n < 0)
			return failed(c, "reading an xattr of", src);
		if (lsetxattr(dst, names + off, value, (size_t)n, 0) != 0) {
			snprintf(c->why, c->cap, "copying the layer: setting xattr %.100s on %.400s: %s",
				 names + off, dst, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Owner, mode, xattrs and times of dst, src's. */
static int copy_attrs(copy_ctx *c, const char *src, const char *dst, const struct stat *st)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};

	if (lchown(dst, st->st_uid, st->st_gid) != 0)
		return failed(c, "chown", dst);
	/* a symlink's mode is not its own (Linux has no lchmod) */
	if (!S_ISLNK(st->st_mode) && chmod(dst, st->st_mode & 07777) != 0)
		return failed(c, "chmod", dst);
	if (copy_xattrs(c, src, dst) != 0)
		return -1;
	if (utimensat(AT_FDCWD, dst, ts, AT_SYMLINK_NOFOLLOW) != 0)
		return failed(c, "setting the times of", dst);
	return 0;
}

static int copy_data(copy_ctx *c, const char *src, const char *dst)
{
	int in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int out = in < 0 ? -1 : open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	char buf[65536];
	ssize_t n = 0;
	int rc = 0;

	if (in < 0 || out < 0) {
		rc = failed(c, "opening", in < 0 ? src : dst);
		goto done;
	}
	/* copy_file_range refuses some pairs of filesystems (EXDEV, EINVAL):
	 * then read and write */
	while ((n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0)) > 0)
		;
	if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
		while ((n = read(in, buf, sizeof(buf))) > 0) {
			for (ssize_t off = 0; off < n;) {
				ssize_t w = write(out, buf + off, (size_t)(n - off));

				if (w < 0 && errno != EINTR) {
					rc = failed(c, "writing", dst);
					goto done;
				}
				off += w > 0 ? w : 0;
			}
		}
	}
	if (n < 0)
		rc = failed(c, "copying the content of", src);
done:
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) != 0 && rc == 0)
		rc = failed(c, "closing", dst);
	return rc;
}

static int copy_tree(copy_ctx *c, const char *src, const char *dst, int depth);

/* One entry that is not a directory. */
static int copy_leaf(copy_ctx *c, const char *src, const char *dst, const struct stat *st)
{
	char target[PATH_MAX];
	const char *first = st->st_nlink > 1 ? link_of(c, st, dst) : NULL;

	if (first != NULL)
		return link(first, dst) == 0 ? 0 : failed(c, "linking", dst);
	if (S_ISREG(st->st_mode)) {
		if (copy_data(c, src, dst) != 0)
			return -1;
	} else if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlink(src, target, sizeof(target) - 1);

		if (n < 0)
			return failed(c, "reading the link", src);
		target[n] = '\0';
		if (symlink(target, dst) != 0)
			return failed(c, "making the link", dst);
	} else if (mknod(dst, st->st_mode & (S_IFMT | 0600), st->st_rdev) != 0) {
		return failed(c, "making the node", dst); /* devices (whiteouts), FIFOs, sockets */
	}
	return copy_attrs(c, src, dst, st);
}

static int copy_dir(copy_ctx *c, const char *src, const char *dst, const struct stat *st, int depth)
{
	char s[PATH_MAX], d[PATH_MAX];
	DIR *dir;
	struct dirent *e;
	int rc = 0;

	if (depth > LAYER_DEPTH_MAX) {
		snprintf(c->why, c->cap, "copying the layer: %.400s: deeper than %d directories", src,
			 LAYER_DEPTH_MAX);
		return -1;
	}
	if (mkdir(dst, 0700) != 0)
		return failed(c, "mkdir", dst);
	dir = opendir(src);
	if (dir == NULL)
		return failed(c, "opening the directory", src);
	while (rc == 0 && (errno = 0, e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(s, sizeof(s), "%s/%s", src, e->d_name) >= sizeof(s) ||
		    (size_t)snprintf(d, sizeof(d), "%s/%s", dst, e->d_name) >= sizeof(d)) {
			snprintf(c->why, c->cap, "copying the layer: %.400s/%.100s: path too long", src,
				 e->d_name);
			rc = -1;
			break;
		}
		rc = copy_tree(c, s, d, depth + 1);
	}
	if (rc == 0 && errno != 0)
		rc = failed(c, "reading the directory", src);
	closedir(dir);
	return rc != 0 ? rc : copy_attrs(c, src, dst, st);
}

static int copy_tree(copy_ctx *c, const char *src, const char *dst, int depth)
{
	struct stat st;

	if (lstat(src, &st) != 0)
		return failed(c, "lstat", src);
	if (S_ISDIR(st.st_mode))
		return copy_dir(c, src, dst, &st, depth);
	return copy_leaf(c, src, dst, &st);
}

int mock_layer_copy(const char *src, const char *dst, char *why, size_t cap)
{
	copy_ctx c = {.why = why, .cap = cap};
	int rc = copy_tree(&c, src, dst, 0);

	for (size_t i = 0; i < c.nlinks; i++)
		free(c.links[i].dst);
	free(c.links);
	return rc;
}

/* ---- the size: du -s's, without du ---- */

/* nftw passes no argument: the walk's sum is the thread's own */
static _Thread_local struct layer_sum {
	unsigned long long bytes;
	struct stat *linked; /* files of more than one link, counted once */
	size_t nlinked, caplinked;
} sum;

static bool counted_before(const struct stat *st)
{
	struct stat *grown;

	if (st->st_nlink < 2 || S_ISDIR(st->st_mode))
		return false;
	for (size_t i = 0; i < sum.nlinked; i++) {
		if (sum.linked[i].st_ino == st->st_ino && sum.linked[i].st_dev == st->st_dev)
			return true;
	}
	if (sum.nlinked == sum.caplinked) {
		size_t cap = sum.caplinked == 0 ? 16 : sum.caplinked * 2;

		grown = realloc(sum.linked, cap * sizeof(*grown));
		if (grown == NULL)
			return false; /* counted twice: a size a little high */
		sum.linked = grown;
		sum.caplinked = cap;
	}
	sum.linked[sum.nlinked++] = *st;
	return false;
}

static int add_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag != FTW_NS && !counted_before(st))
		sum.bytes += (unsigned long long)st->st_blocks * 512;
	return 0;
}

unsigned long long mock_layer_bytes(const char *dir)
{
	unsigned long long bytes;

	sum.bytes = 0;
	sum.nlinked = 0;
	if (nftw(dir, add_entry, 16, FTW_PHYS) != 0)
		sum.bytes = 0;
	bytes = sum.bytes;
	free(sum.linked);
	memset(&sum, 0, sizeof(sum));
	return bytes;
}

/* layer_copy: see layer_copy.h.
 *
 * Why not cp -a: a template build copies its layer once and each sandbox
 * on the template copies it again; the fork and exec of cp cost more than
 * the copy of a small layer. The attributes go on in cp -a's order: the
 * owner before the mode (a chown clears set-id bits) and before the
 * xattrs (it clears security.capability), the times last (a directory's
 * after its entries). */
#define _GNU_SOURCE
#include "util/layer_copy.h"

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
	unsigned long long limit; /* 0: none */
	unsigned long long bytes; /* the blocks of what was made so far */
	char *why;
	size_t cap;
} copy_ctx;

static int failed(copy_ctx *c, const char *what, const char *path)
{
	snprintf(c->why, c->cap, "copying the layer: %s %.400s: %s", what, path, strerror(errno));
	return -1;
}

static int over_limit(copy_ctx *c, const char *path)
{
	snprintf(c->why, c->cap,
		 "copying the layer: %.400s: the layer holds more than the %llu MiB it may keep (its "
		 "build's disk, out of the key's template storage: LIMITS.md)",
		 path, c->limit >> 20);
	return -1;
}

/* What dst (just made, complete) holds on the disk, added to the count. */
static int count_made(copy_ctx *c, const char *dst)
{
	struct stat st;

	if (lstat(dst, &st) != 0)
		return failed(c, "lstat", dst);
	c->bytes += (unsigned long long)st.st_blocks * 512;
	return c->limit != 0 && c->bytes > c->limit ? over_limit(c, dst) : 0;
}

/* An entry opened by name under its directory's descriptor must be the
 * one its lstat saw: a guest's process still dying could swap it (for a
 * symlink to a host path, say) between the two. */
static int same_entry(copy_ctx *c, int fd, const struct stat *seen, const char *src)
{
	struct stat now;

	if (fstat(fd, &now) != 0)
		return failed(c, "fstat", src);
	if (now.st_dev != seen->st_dev || now.st_ino != seen->st_ino ||
	    (now.st_mode & S_IFMT) != (seen->st_mode & S_IFMT)) {
		snprintf(c->why, c->cap, "copying the layer: %.400s changed during the copy", src);
		return -1;
	}
	return 0;
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

/* The xattrs of the source (fd when it is open, else lpath, a path whose
 * last name is not followed) onto dst. */
static int copy_xattrs(copy_ctx *c, int fd, const char *lpath, const char *src, const char *dst)
{
	char names[8192], value[65536];
	ssize_t len = fd >= 0 ? flistxattr(fd, names, sizeof(names)) : llistxattr(lpath, names, sizeof(names));

	if (len < 0)
		return errno == ENOTSUP ? 0 : failed(c, "listing the xattrs of", src);
	for (ssize_t off = 0; off < len; off += (ssize_t)strlen(names + off) + 1) {
		ssize_t n = fd >= 0 ? fgetxattr(fd, names + off, value, sizeof(value))
				    : lgetxattr(lpath, names + off, value, sizeof(value));

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

/* Owner, mode, xattrs and times of dst, the source's (st). */
static int copy_attrs(copy_ctx *c, int fd, const char *lpath, const char *src, const char *dst,
		      const struct stat *st)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};

	if (lchown(dst, st->st_uid, st->st_gid) != 0)
		return failed(c, "chown", dst);
	/* a symlink's mode is not its own (Linux has no lchmod) */
	if (!S_ISLNK(st->st_mode) && chmod(dst, st->st_mode & 07777) != 0)
		return failed(c, "chmod", dst);
	if (copy_xattrs(c, fd, lpath, src, dst) != 0)
		return -1;
	if (utimensat(AT_FDCWD, dst, ts, AT_SYMLINK_NOFOLLOW) != 0)
		return failed(c, "setting the times of", dst);
	return 0;
}

/* n bytes at off of in to the same offset of out. */
static int copy_range(copy_ctx *c, int in, int out, off_t off, off_t n, const char *src)
{
	char buf[65536];
	loff_t ro = off, wo = off;
	ssize_t k = 0;

	/* copy_file_range refuses some pairs of filesystems (EXDEV, EINVAL):
	 * then read and write */
	while (n > 0 && (k = copy_file_range(in, &ro, out, &wo, (size_t)(n < (1 << 30) ? n : (1 << 30)), 0)) > 0)
		n -= k;
	if (k < 0 && !(errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP))
		return failed(c, "copying the content of", src);
	while (n > 0 && (k = pread(in, buf, (size_t)(n < (off_t)sizeof(buf) ? n : (off_t)sizeof(buf)), ro)) != 0) {
		for (ssize_t w = 0, done = 0; k > 0 && done < k; done += w > 0 ? w : 0) {
			w = pwrite(out, buf + done, (size_t)(k - done), wo + done);
			if (w < 0 && errno != EINTR)
				return failed(c, "writing the copy of", src);
		}
		if (k < 0 && errno != EINTR)
			return failed(c, "reading", src);
		ro += k > 0 ? k : 0;
		wo += k > 0 ? k : 0;
		n -= k > 0 ? k : 0;
	}
	return 0;
}

/* The data of in, its holes kept as holes: a guest's sparse file of a
 * terabyte costs its tmpfs nothing, and written out in full it would fill
 * the host's disk. Bounded by what the copy may still make. */
static int copy_data(copy_ctx *c, int in, const struct stat *st, const char *src, const char *dst)
{
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	unsigned long long data = 0;
	off_t pos = 0;
	int rc = 0;

	if (out < 0)
		return failed(c, "opening", dst);
	while (rc == 0 && pos < st->st_size) {
		off_t at = lseek(in, pos, SEEK_DATA), end;

		if (at < 0 && errno == ENXIO)
			break; /* a hole to the end */
		end = at < 0 ? st->st_size : lseek(in, at, SEEK_HOLE); /* no SEEK_DATA: all data */
		at = at < 0 ? pos : at;
		if (end < 0 || end > st->st_size)
			end = st->st_size;
		data += (unsigned long long)(end - at);
		if (c->limit != 0 && c->bytes + data > c->limit)
			rc = over_limit(c, src);
		else if (end > at)
			rc = copy_range(c, in, out, at, end - at, src);
		pos = end > at ? end : at + 1;
	}
	if (rc == 0 && ftruncate(out, st->st_size) != 0)
		rc = failed(c, "sizing", dst);
	if (close(out) != 0 && rc == 0)
		rc = failed(c, "closing", dst);
	return rc;
}

/* "/proc/self/fd/DFD/NAME": the entry by its directory's descriptor, for
 * the calls that take only a path (the l* ones: NAME is not followed). */
static int at_path(copy_ctx *c, int dfd, const char *name, char *out, size_t cap, const char *src)
{
	if ((size_t)snprintf(out, cap, "/proc/self/fd/%d/%s", dfd, name) >= cap) {
		snprintf(c->why, c->cap, "copying the layer: %.400s: path too long", src);
		return -1;
	}
	return 0;
}

/* One entry that is not a directory: name under dfd (src names it in a
 * message), whose lstat is st. */
static int copy_leaf(copy_ctx *c, int dfd, const char *name, const char *src, const char *dst,
		     const struct stat *st)
{
	char target[PATH_MAX], lpath[PATH_MAX + 32];
	const char *first = st->st_nlink > 1 ? link_of(c, st, dst) : NULL;
	int in = -1, rc;

	if (first != NULL) /* its blocks were counted with the first */
		return link(first, dst) == 0 ? 0 : failed(c, "linking", dst);
	if (at_path(c, dfd, name, lpath, sizeof(lpath), src) != 0)
		return -1;
	if (S_ISREG(st->st_mode)) {
		/* O_NONBLOCK: what is now a FIFO in its place never blocks */
		in = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (in < 0)
			return failed(c, "opening", src);
		rc = same_entry(c, in, st, src) != 0 || copy_data(c, in, st, src, dst) != 0 ? -1 : 0;
	} else if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlinkat(dfd, name, target, sizeof(target));

		if (n < 0)
			return failed(c, "reading the link", src);
		if ((size_t)n >= sizeof(target)) {
			snprintf(c->why, c->cap, "copying the layer: the link %.400s: its target is longer than %zu bytes",
				 src, sizeof(target) - 1);
			return -1;
		}
		target[n] = '\0';
		rc = symlink(target, dst) == 0 ? 0 : failed(c, "making the link", dst);
	} else {
		/* devices (whiteouts), FIFOs, sockets */
		rc = mknod(dst, st->st_mode & (S_IFMT | 0600), st->st_rdev) == 0 ? 0 : failed(c, "making the node", dst);
	}
	rc = rc == 0 ? copy_attrs(c, in, lpath, src, dst, st) : rc;
	if (in >= 0)
		close(in);
	return rc == 0 ? count_made(c, dst) : rc;
}

static int copy_dir(copy_ctx *c, int sfd, const char *src, const char *dst, const struct stat *st, int depth);

/* The entry name of the directory dfd (src/name, dst/name). */
static int copy_entry(copy_ctx *c, int dfd, const char *name, const char *src, const char *dst, int depth)
{
	char s[PATH_MAX], d[PATH_MAX];
	struct stat st;
	int fd;

	if ((size_t)snprintf(s, sizeof(s), "%s/%s", src, name) >= sizeof(s) ||
	    (size_t)snprintf(d, sizeof(d), "%s/%s", dst, name) >= sizeof(d)) {
		snprintf(c->why, c->cap, "copying the layer: %.400s/%.100s: path too long", src, name);
		return -1;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return failed(c, "lstat", s);
	if (!S_ISDIR(st.st_mode))
		return copy_leaf(c, dfd, name, s, d, &st);
	/* by its directory's descriptor, never following a link: a path
	 * walked again by name could lead out of the layer */
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return failed(c, "opening the directory", s);
	if (same_entry(c, fd, &st, s) != 0) {
		close(fd);
		return -1;
	}
	return copy_dir(c, fd, s, d, &st, depth + 1);
}

/* The directory sfd (closed here) to dst. */
static int copy_dir(copy_ctx *c, int sfd, const char *src, const char *dst, const struct stat *st, int depth)
{
	DIR *dir;
	struct dirent *e;
	int rc = 0;

	if (depth > LAYER_DEPTH_MAX) {
		close(sfd);
		snprintf(c->why, c->cap, "copying the layer: %.400s: deeper than %d directories", src,
			 LAYER_DEPTH_MAX);
		return -1;
	}
	if (mkdir(dst, 0700) != 0) {
		close(sfd);
		return failed(c, "mkdir", dst);
	}
	dir = fdopendir(sfd);
	if (dir == NULL) {
		close(sfd);
		return failed(c, "opening the directory", src);
	}
	while (rc == 0 && (errno = 0, e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		rc = copy_entry(c, dirfd(dir), e->d_name, src, dst, depth);
	}
	if (rc == 0 && errno != 0)
		rc = failed(c, "reading the directory", src);
	rc = rc == 0 ? copy_attrs(c, dirfd(dir), NULL, src, dst, st) : rc;
	closedir(dir);
	return rc == 0 ? count_made(c, dst) : rc;
}

int mock_layer_copy(const char *src, const char *dst, unsigned long long limit, unsigned long long *bytes,
		    char *why, size_t cap)
{
	copy_ctx c = {.limit = limit, .why = why, .cap = cap};
	struct stat st;
	/* the root is the mock's own path (a descriptor it holds): followed */
	int fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc;

	if (fd < 0 || fstat(fd, &st) != 0) {
		rc = failed(&c, "opening the directory", src);
		if (fd >= 0)
			close(fd);
	} else {
		rc = copy_dir(&c, fd, src, dst, &st, 0);
	}
	for (size_t i = 0; i < c.nlinks; i++)
		free(c.links[i].dst);
	free(c.links);
	if (bytes != NULL)
		*bytes = c.bytes;
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

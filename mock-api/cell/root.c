/* root: the sandbox's file system, built by sbx-cell in its own mount
 * namespace and pivoted into (CONTAINMENT.md, "Inside the cell" step 1):
 * a tmpfs root, read-only binds of the host's system directories, a
 * minimal /etc written fresh, the sandbox's workspace and tmp, its own
 * /proc and a minimal /dev.
 *
 * Must never bind anything of the host that is not on the lists below
 * (no /etc/shadow, no homes, no /sys, no /run) and never leave the old root
 * attached: after pivot_root it is detached, so /proc/1/root is the new
 * root. Every failure is reported as "<what> <path>: <strerror>". */
#define _GNU_SOURCE
#include "cell.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* mount_setattr(2) by hand: glibc < 2.36 (Ubuntu 22.04) has no wrapper,
 * and <linux/mount.h> clashes with <sys/mount.h>. */
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#define CELL_ATTR_RDONLY 0x00000001ULL
#define CELL_ATTR_NOSUID 0x00000002ULL
#define CELL_ATTR_NODEV 0x00000004ULL
#define CELL_AT_RECURSIVE 0x8000
struct cell_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

/* The new root is assembled on a tmpfs mounted here (private to the
 * cell's mount namespace; the host's /tmp is untouched). */
#define NEWROOT "/tmp"

static int fail(char *err, size_t cap, const char *what, const char *path)
{
	snprintf(err, cap, "%s %s: %s", what, path, strerror(errno));
	return -1;
}

static int set_attr(const char *path, uint64_t set, unsigned flags)
{
	struct cell_mount_attr a = {.attr_set = set};

	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &a, sizeof(a));
}

/* Binds src (a directory or a file; recursive, since a submount the host
 * has there is locked to its parent in a user namespace) on dst, then makes
 * the whole tree nosuid, nodev and, when ro, read-only. */
static int bind(const char *src, const char *dst, bool ro, char *err, size_t cap)
{
	uint64_t attrs = CELL_ATTR_NOSUID | CELL_ATTR_NODEV | (ro ? CELL_ATTR_RDONLY : 0);

	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0)
		return fail(err, cap, "mount", dst);
	if (set_attr(dst, attrs, CELL_AT_RECURSIVE) != 0)
		return fail(err, cap, "make read-only", dst);
	return 0;
}

/* Recreates host path src at NEWROOT/src: a symlink as the same symlink, a
 * directory or a regular file as a read-only bind. Missing: skipped. */
static int mirror(const char *src, char *err, size_t cap)
{
	char dst[PATH_MAX], link[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (lstat(src, &st) != 0)
		return errno == ENOENT ? 0 : fail(err, cap, "stat", src);
	snprintf(dst, sizeof(dst), NEWROOT "%s", src);
	if (S_ISLNK(st.st_mode)) {
		n = readlink(src, link, sizeof(link) - 1);
		if (n < 0)
			return fail(err, cap, "readlink", src);
		link[n] = '\0';
		return symlink(link, dst) == 0 ? 0 : fail(err, cap, "symlink", dst);
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, 0755) != 0)
			return fail(err, cap, "mkdir", dst);
	} else if (S_ISREG(st.st_mode)) {
		fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			return fail(err, cap, "create", dst);
		close(fd);
	} else {
		return 0;
	}
	return bind(src, dst, true, err, cap);
}

static int write_file(const char *rel, const char *text, char *err, size_t cap)
{
	char path[PATH_MAX];
	size_t len = strlen(text);
	int fd;

	snprintf(path, sizeof(path), NEWROOT "%s", rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail(err, cap, "create", path);
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		return fail(err, cap, "write", path);
	}
	close(fd);
	return 0;
}

/* /etc: fresh accounts and name files (the host's users are nobody's
 * business here), plus read-only binds of what programs need to run. */
static int build_etc(const char *hostname, char *err, size_t cap)
{
	static const char *const binds[] = {"/etc/alternatives", "/etc/ssl", "/etc/ld.so.cache",
					    "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime"};
	char hosts[256], name[128];

	if (mkdir(NEWROOT "/etc", 0755) != 0)
		return fail(err, cap, "mkdir", NEWROOT "/etc");
	snprintf(hosts, sizeof(hosts), "127.0.0.1\tlocalhost %s\n::1\tlocalhost\n", hostname);
	snprintf(name, sizeof(name), "%s\n", hostname);
	if (write_file("/etc/passwd",
		       "root:x:0:0:root:/root:/bin/sh\n"
		       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		       err, cap) != 0 ||
	    write_file("/etc/group", "root:x:0:\nnogroup:x:65534:\n", err, cap) != 0 ||
	    write_file("/etc/hosts", hosts, err, cap) != 0 ||
	    write_file("/etc/hostname", name, err, cap) != 0 ||
	    write_file("/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n", err,
		       cap) != 0 ||
	    /* the simulated internet's resolver (mock-api/INTERNET.md); with
	     * egress stored only, nothing answers there and lookups fail fast */
	    write_file("/etc/resolv.conf", "nameserver 169.254.169.253\noptions timeout:1 attempts:1\n",
		       err, cap) != 0)
		return -1;
	for (size_t i = 0; i < sizeof(binds) / sizeof(binds[0]); i++) {
		if (mirror(binds[i], err, cap) != 0)
			return -1;
	}
	return 0;
}

/* /dev: a small tmpfs with binds of the harmless character devices (a
 * user namespace may not mknod), its own /dev/shm and, when the kernel
 * allows it, a private devpts. */
static int build_dev(char *err, size_t cap)
{
	static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
	static const char *const links[][2] = {{"/proc/self/fd", "fd"},   {"/proc/self/fd/0", "stdin"},
					       {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}};
	char src[64], dst[PATH_MAX];
	int fd;

	if (mkdir(NEWROOT "/dev", 0755) != 0 ||
	    mount("tmpfs", NEWROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") != 0)
		return fail(err, cap, "mount tmpfs on", NEWROOT "/dev");
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		snprintf(src, sizeof(src), "/dev/%s", nodes[i]);
		snprintf(dst, sizeof(dst), NEWROOT "/dev/%s", nodes[i]);
		fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0)
			return fail(err, cap, "create", dst);
		close(fd);
		if (mount(src, dst, NULL, MS_BIND, NULL) != 0)
			return fail(err, cap, "mount", dst);
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(dst, sizeof(dst), NEWROOT "/dev/%s", links[i][1]);
		if (symlink(links[i][0], dst) != 0)
			return fail(err, cap, "symlink", dst);
	}
	if (mkdir(NEWROOT "/dev/shm", 01777) != 0 ||
	    mount("tmpfs", NEWROOT "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0)
		return fail(err, cap, "mount tmpfs on", NEWROOT "/dev/shm");
	/* optional: without it, no pseudo-terminals, which exec never needs */
	if (mkdir(NEWROOT "/dev/pts", 0755) == 0 &&
	    mount("devpts", NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620") == 0 &&
	    symlink("pts/ptmx", NEWROOT "/dev/ptmx") != 0)
		return fail(err, cap, "symlink", NEWROOT "/dev/ptmx");
	return 0;
}

/* The system directories, read-only (merged-/usr symlinks stay symlinks),
 * and the sandbox's own writable directories. */
static int build_tree(char *err, size_t cap)
{
	static const char *const sys[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
	static const char *const dirs[] = {NEWROOT "/workspace", NEWROOT "/tmp", NEWROOT "/proc",
					   NEWROOT "/root"};

	for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++) {
		if (mirror(sys[i], err, cap) != 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (mkdir(dirs[i], i == 3 ? 0700 : 0755) != 0)
			return fail(err, cap, "mkdir", dirs[i]);
	}
	if (bind("/proc/self/fd/4", NEWROOT "/workspace", false, err, cap) != 0 ||
	    bind("/proc/self/fd/5", NEWROOT "/tmp", false, err, cap) != 0)
		return -1;
	/* a proc of this PID namespace: the guest sees its own processes only */
	if (mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		return fail(err, cap, "mount proc on", NEWROOT "/proc");
	return 0;
}

int cell_root_build(const char *hostname, char *err, size_t cap)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return fail(err, cap, "make private", "/");
	if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0)
		return fail(err, cap, "mount tmpfs on", NEWROOT);
	if (build_tree(err, cap) != 0 || build_etc(hostname, err, cap) != 0 || build_dev(err, cap) != 0)
		return -1;
	/* pivot_root(".", "."): the old root ends up under the new one and is
	 * detached at once; no directory for it is needed */
	if (chdir(NEWROOT) != 0)
		return fail(err, cap, "chdir", NEWROOT);
	if (syscall(SYS_pivot_root, ".", ".") != 0)
		return fail(err, cap, "pivot_root", NEWROOT);
	if (umount2(".", MNT_DETACH) != 0)
		return fail(err, cap, "detach", "the old root");
	if (chdir("/") != 0)
		return fail(err, cap, "chdir", "/");
	/* the root and /dev tmpfs: nothing to write there once built */
	if (set_attr("/", CELL_ATTR_RDONLY, 0) != 0 || set_attr("/dev", CELL_ATTR_RDONLY, 0) != 0)
		return fail(err, cap, "make read-only", "/ and /dev");
	if (sethostname(hostname, strlen(hostname)) != 0)
		return fail(err, cap, "sethostname", hostname);
	return 0;
}

/* root: the sandbox's file system, built by sbx-cell in its own mount
 * namespace and pivoted into (CONTAINMENT.md, "Inside the cell" step 1):
 * a tmpfs root, read-only binds of the host's system directories, a
 * minimal /etc written fresh, the sandbox's workspace and tmp, its own
 * /proc and a minimal /dev. With a rootfs image (CELL_IMAGE_FD; IMAGES.md)
 * the image is the overlay's lowest layer instead of the host's system
 * directories, and the skeleton above it holds only the mount points and
 * the sandbox's name files.
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
#include <stdlib.h>
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

/* The sandbox's disk (CONTAINMENT.md, "The guest's disk"): a tmpfs of
 * $SBX_CELL_DISK_MIB MiB (ENOSPC past it), or with 0 a bind of the host
 * tree <work>/<id> (durable mode: files must outlive the mock), mounted here
 * in the cell's private mount namespace (the host's /tmp is untouched). It
 * holds u and w (the root overlay's upper and work dirs), workspace and tmp,
 * and nothing else is writable in the cell. SKEL, a small tmpfs, is the
 * overlay's lower layer (mount points, a fresh /etc); NEWROOT is the merged
 * root the cell pivots into. */
#define DISK "/tmp"
#define SKEL DISK "/s"
#define NEWROOT DISK "/m"
/* the rootfs image's mount point (read-only; below SKEL in the overlay) */
#define IMAGE DISK "/i"
/* the mock's trust layer above an image (trust.c; between SKEL and IMAGE) */
#define TRUST DISK "/t"
/* fork: what the mock copied from the source's disk, copied in first, and
 * the source's name, which the name files it carries were written for */
#define SEED "/proc/self/fd/4/../seed"
#define SEED_FROM "/proc/self/fd/4/../seed.from"

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

/* Recreates host path src in the root, in two steps: at SKEL/src before
 * the overlay (a symlink as the same symlink, a directory or a regular file
 * as an empty one: a mount point), then at NEWROOT/src a read-only bind of a
 * directory or a regular file. Missing: skipped. */
static int mirror(const char *src, bool skel, char *err, size_t cap)
{
	char dst[PATH_MAX], link[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (lstat(src, &st) != 0)
		return errno == ENOENT ? 0 : fail(err, cap, "stat", src);
	if (!S_ISLNK(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return 0;
	snprintf(dst, sizeof(dst), "%s%s", skel ? SKEL : NEWROOT, src);
	if (!skel)
		return S_ISLNK(st.st_mode) ? 0 : bind(src, dst, true, err, cap);
	if (S_ISLNK(st.st_mode)) {
		n = readlink(src, link, sizeof(link) - 1);
		if (n < 0)
			return fail(err, cap, "readlink", src);
		link[n] = '\0';
		return symlink(link, dst) == 0 ? 0 : fail(err, cap, "symlink", dst);
	}
	if (S_ISDIR(st.st_mode))
		return mkdir(dst, 0755) == 0 ? 0 : fail(err, cap, "mkdir", dst);
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail(err, cap, "create", dst);
	close(fd);
	return 0;
}

/* The image the mock handed over (CELL_IMAGE_FD), mounted read-only at
 * IMAGE: its idmapped detached mount moved in, or its directory bound.
 * 0, 1 when there is none (the host-skeleton root), -1 with err set. */
static int mount_image(char *err, size_t cap)
{
	const char *kind = getenv(CELL_IMAGE_ENV);
	char src[32];

	if (kind == NULL)
		return 1;
	if (mkdir(IMAGE, 0755) != 0 && errno != EEXIST)
		return fail(err, cap, "mkdir", IMAGE);
	if (strcmp(kind, "idmapped") == 0) {
		if (syscall(CELL_SYS_MOVE_MOUNT, CELL_IMAGE_FD, "", AT_FDCWD, IMAGE,
			    CELL_MOVE_MOUNT_F_EMPTY_PATH) != 0)
			return fail(err, cap, "attach the rootfs image at", IMAGE);
	} else if (strcmp(kind, "dir") == 0) {
		snprintf(src, sizeof(src), "/proc/self/fd/%d", CELL_IMAGE_FD);
		if (mount(src, IMAGE, NULL, MS_BIND | MS_REC, NULL) != 0)
			return fail(err, cap, "bind the rootfs image at", IMAGE);
	} else {
		snprintf(err, cap, "%s=%.32s: expected idmapped or dir", CELL_IMAGE_ENV, kind);
		return -1;
	}
	close(CELL_IMAGE_FD);
	/* the overlay never writes its lower layers; read-only all the same */
	if (set_attr(IMAGE, CELL_ATTR_RDONLY | CELL_ATTR_NODEV, CELL_AT_RECURSIVE) != 0)
		return fail(err, cap, "make read-only", IMAGE);
	return 0;
}

static int write_file(const char *rel, const char *text, char *err, size_t cap)
{
	char path[PATH_MAX];
	size_t len = strlen(text);
	int fd;

	snprintf(path, sizeof(path), SKEL "%s", rel);
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

/* /etc/os-release: the host's text (the system directories are the
 * host's), a Debian-like default when it has none. */
static int write_os_release(char *err, size_t cap)
{
	char text[4096];
	ssize_t n = -1;
	int fd = open("/etc/os-release", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
	}
	if (n <= 0)
		snprintf(text, sizeof(text), "PRETTY_NAME=\"Debian GNU/Linux\"\nNAME=\"Debian "
					     "GNU/Linux\"\nID=debian\n");
	else
		text[n] = '\0';
	return write_file("/etc/os-release", text, err, cap);
}

/* the simulated internet's resolver (mock-api/INTERNET.md); with egress
 * stored only, nothing answers there and lookups fail fast */
#define CELL_RESOLV_CONF "nameserver 169.254.169.253\noptions timeout:1 attempts:1\n"

static const char *const etc_binds[] = {"/etc/alternatives", "/etc/ssl", "/etc/ld.so.cache",
					"/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime"};

/* /etc: fresh accounts and name files (the host's users are nobody's
 * business here), plus the mount points of what programs need to run. */
static int build_etc(const char *hostname, bool image, bool layer, char *err, size_t cap)
{
	char hosts[256], name[128];

	if (mkdir(SKEL "/etc", 0755) != 0)
		return fail(err, cap, "mkdir", SKEL "/etc");
	cell_name_texts(hostname, name, sizeof(name), hosts, sizeof(hosts));
	/* the sandbox's name and resolver above the image's /etc; its
	 * accounts, os-release and the rest are the image's own */
	if (image)
		return write_file("/etc/hosts", hosts, err, cap) != 0 ||
			       write_file("/etc/hostname", name, err, cap) != 0 ||
			       write_file("/etc/resolv.conf", CELL_RESOLV_CONF, err, cap) != 0 ||
			       cell_trust_write(SKEL, layer, err, cap) != 0
			       ? -1
			       : 0;
	if (write_file("/etc/passwd",
		       "root:x:0:0:root:/root:/bin/sh\n"
		       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		       err, cap) != 0 ||
	    write_file("/etc/group", "root:x:0:\nnogroup:x:65534:\n", err, cap) != 0 ||
	    write_file("/etc/hosts", hosts, err, cap) != 0 ||
	    write_file("/etc/hostname", name, err, cap) != 0 ||
	    write_file("/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n", err,
		       cap) != 0 ||
	    write_file("/etc/resolv.conf", CELL_RESOLV_CONF, err, cap) != 0 ||
	    write_os_release(err, cap) != 0)
		return -1;
	for (size_t i = 0; i < sizeof(etc_binds) / sizeof(etc_binds[0]); i++) {
		if (mirror(etc_binds[i], true, err, cap) != 0)
			return -1;
	}
	return cell_trust_write(SKEL, false, err, cap);
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

	if (mount("tmpfs", NEWROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") != 0)
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

static const char *const sys_dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

/* The overlay's lower layer: the directories of a Debian-like root (mount
 * points among them), the system directories' mount points (merged-/usr
 * symlinks stay symlinks) and /etc; above an image, the directories and
 * the name files only. */
static int build_skel(const char *hostname, bool image, bool layer, char *err, size_t cap)
{
	static const struct {
		const char *path;
		mode_t mode;
	} dirs[] = {{"/workspace", 0755}, {"/tmp", 01777}, {"/proc", 0555}, {"/dev", 0755},
		    {"/root", 0700},      {"/home", 0755},  {"/mnt", 0755},  {"/opt", 0755},
		    {"/srv", 0755},       {"/run", 0755},   {"/var", 0755},  {"/var/log", 0755},
		    {"/var/lib", 0755},   {"/var/tmp", 01777}};
	char path[PATH_MAX];

	if ((mkdir(SKEL, 0755) != 0 && errno != EEXIST) ||
	    /* a limit, not a reservation: the name files and mount points */
	    mount("tmpfs", SKEL, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4m") != 0)
		return fail(err, cap, "mount tmpfs on", SKEL);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), SKEL "%s", dirs[i].path);
		if (mkdir(path, 0755) != 0 || chmod(path, dirs[i].mode) != 0)
			return fail(err, cap, "mkdir", path);
	}
	for (size_t i = 0; !image && i < sizeof(sys_dirs) / sizeof(sys_dirs[0]); i++) {
		if (mirror(sys_dirs[i], true, err, cap) != 0)
			return -1;
	}
	if (build_etc(hostname, image, layer, err, cap) != 0)
		return -1;
	/* the lower layer must not change under the overlay */
	return set_attr(SKEL, CELL_ATTR_RDONLY, 0) == 0 ? 0 : fail(err, cap, "make read-only", SKEL);
}

/* What the guest's /proc would tell of the host and no program in a
 * sandbox needs (issue 27): the host kernel's command line and the host's
 * boot id read empty (/dev/null bound over them, as container runtimes
 * mask /proc paths). The rest that stays visible is listed in
 * CONTAINMENT.md ("What a guest still sees of the host"). */
static int mask_host_facts(char *err, size_t cap)
{
	static const char *const masked[] = {NEWROOT "/proc/cmdline",
					     NEWROOT "/proc/sys/kernel/random/boot_id"};

	for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++) {
		if (mount("/dev/null", masked[i], NULL, MS_BIND, NULL) != 0)
			return fail(err, cap, "mask", masked[i]);
	}
	return 0;
}

/* The merged root: the overlay (over the image, when there is one, or
 * else with the read-only system binds on it), the sandbox's workspace and
 * tmp (on the disk), its own /proc and /dev. */
static int build_tree(bool image, bool layer, char *err, size_t cap)
{
	const char *opts = layer ? "lowerdir=" SKEL ":" TRUST ":" IMAGE ",upperdir=" DISK "/u,workdir=" DISK
				   "/w,userxattr"
			   : image ? "lowerdir=" SKEL ":" IMAGE ",upperdir=" DISK "/u,workdir=" DISK "/w,userxattr"
				   : "lowerdir=" SKEL ",upperdir=" DISK "/u,workdir=" DISK "/w,userxattr";

	if (mount("overlay", NEWROOT, "overlay", MS_NOSUID | MS_NODEV, opts) != 0)
		return fail(err, cap, "mount overlay on", NEWROOT);
	for (size_t i = 0; !image && i < sizeof(sys_dirs) / sizeof(sys_dirs[0]); i++) {
		if (mirror(sys_dirs[i], false, err, cap) != 0)
			return -1;
	}
	for (size_t i = 0; !image && i < sizeof(etc_binds) / sizeof(etc_binds[0]); i++) {
		if (mirror(etc_binds[i], false, err, cap) != 0)
			return -1;
	}
	if (cell_trust_bind(NEWROOT, err, cap) != 0)
		return -1;
	if (bind(DISK "/workspace", NEWROOT "/workspace", false, err, cap) != 0 ||
	    bind(DISK "/tmp", NEWROOT "/tmp", false, err, cap) != 0)
		return -1;
	/* a proc of this PID namespace: the guest sees its own processes only */
	if (mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		return fail(err, cap, "mount proc on", NEWROOT "/proc");
	if (mask_host_facts(err, cap) != 0)
		return -1;
	return build_dev(err, cap);
}

/* The name a fork's source had (SEED_FROM, written by the mock), or "". */
static void seed_from(char *name, size_t cap)
{
	int fd = open(SEED_FROM, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, name, cap - 1) : -1;

	if (fd >= 0)
		close(fd);
	name[n > 0 ? n : 0] = '\0';
	if (!cell_name_ok(name))
		name[0] = '\0';
}

int cell_root_build(const char *hostname, char *err, size_t cap)
{
	char from[CELL_NAME_MAX + 2];
	int image, layer = 0;

	seed_from(from, sizeof(from));
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return fail(err, cap, "make private", "/");
	if (cell_disk_mount(DISK, SEED, err, cap) != 0)
		return -1;
	image = mount_image(err, cap);
	if (image == 0)
		layer = cell_trust_layer(TRUST, err, cap);
	if (image < 0 || layer < 0 || build_skel(hostname, image == 0, layer == 1, err, cap) != 0 ||
	    build_tree(image == 0, layer == 1, err, cap) != 0)
		return -1;
	/* pivot_root(".", "."): the old root ends up under the new one and is
	 * detached at once; no directory for it is needed. The disk goes with
	 * it: the guest reaches it through the overlay and the two binds only */
	if (chdir(NEWROOT) != 0)
		return fail(err, cap, "chdir", NEWROOT);
	if (syscall(SYS_pivot_root, ".", ".") != 0)
		return fail(err, cap, "pivot_root", NEWROOT);
	if (umount2(".", MNT_DETACH) != 0)
		return fail(err, cap, "detach", "the old root");
	if (chdir("/") != 0)
		return fail(err, cap, "chdir", "/");
	/* the /dev tmpfs: nothing to write there once built */
	if (set_attr("/dev", CELL_ATTR_RDONLY, 0) != 0)
		return fail(err, cap, "make read-only", "/dev");
	/* a fork's root came with its source's name files: they name this
	 * sandbox from here on, unless the source's guest made them its own */
	if (from[0] != '\0' && cell_name_files(from, hostname, err, cap) != 0)
		return -1;
	if (sethostname(hostname, strlen(hostname)) != 0)
		return fail(err, cap, "sethostname", hostname);
	return 0;
}

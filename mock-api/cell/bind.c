/* bind: what makes a cell one sandbox's and not another's, and the BIND a
 * pooled cell waits for (issue 24, CONTAINMENT.md "The warm pool").
 *
 * The sandbox's name lives in three places: the UTS hostname and the two
 * name files, /etc/hostname and /etc/hosts, which the skeleton is built
 * with. A pooled cell is built under a placeholder name and renamed here
 * at BIND, together with its disk's size; a fork's fresh cell renames the
 * files its source's copied root carries. A name file is only ever
 * rewritten when it holds exactly what the cell wrote for the old name: a
 * file a guest changed, replaced or removed is the guest's and stays. */
#define _GNU_SOURCE
#include "cell.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

void cell_name_texts(const char *name, char *hostname, size_t hcap, char *hosts, size_t cap)
{
	snprintf(hostname, hcap, "%s\n", name);
	snprintf(hosts, cap, "127.0.0.1\tlocalhost %s\n::1\tlocalhost\n", name);
}

bool cell_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > CELL_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '.' || ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

/* path (in the cell's own root) becomes now when it holds exactly was. Never
 * follows a symlink and never opens anything but a regular file (a FIFO a
 * source guest left would block PID 1); opened for writing only when it is
 * ours, since that copies it up into the disk. */
static int rewrite_if(const char *path, const char *was, const char *now, char *err, size_t cap)
{
	char cur[512] = "";
	size_t len = strlen(now);
	struct stat st;
	ssize_t n = -1;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		n = read(fd, cur, sizeof(cur));
	close(fd);
	if (n < 0 || (size_t)n != strlen(was) || memcmp(cur, was, (size_t)n) != 0)
		return 0;
	fd = open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || write(fd, now, len) != (ssize_t)len) {
		snprintf(err, cap, "rename the sandbox in %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int cell_name_files(const char *old, const char *name, char *err, size_t cap)
{
	char was[2][160], now[2][160];

	if (strcmp(old, name) == 0)
		return 0;
	cell_name_texts(old, was[0], sizeof(was[0]), was[1], sizeof(was[1]));
	cell_name_texts(name, now[0], sizeof(now[0]), now[1], sizeof(now[1]));
	return rewrite_if("/etc/hostname", was[0], now[0], err, cap) != 0 ||
			       rewrite_if("/etc/hosts", was[1], now[1], err, cap) != 0
		       ? -1
		       : 0;
}

/* The disk (a tmpfs whose handle is CELL_DISK_FD) set to mib MiB with one
 * inode per 4 KiB, as a fresh cell's is mounted (disk.c); the pooled cell's
 * disk is empty, so any size fits. */
static int disk_set(unsigned mib, char *err, size_t cap)
{
	char size[32], inodes[32];
	int fc = (int)syscall(CELL_SYS_FSPICK, CELL_DISK_FD, "", CELL_FSPICK_CLOEXEC | CELL_FSPICK_EMPTY_PATH);
	int rc = -1;

	snprintf(size, sizeof(size), "%um", mib);
	snprintf(inodes, sizeof(inodes), "%lu", (unsigned long)mib * 256UL);
	if (fc >= 0 &&
	    syscall(CELL_SYS_FSCONFIG, fc, CELL_FSCONFIG_SET_STRING, "size", size, 0) == 0 &&
	    syscall(CELL_SYS_FSCONFIG, fc, CELL_FSCONFIG_SET_STRING, "nr_inodes", inodes, 0) == 0 &&
	    syscall(CELL_SYS_FSCONFIG, fc, CELL_FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0) == 0)
		rc = 0;
	else
		snprintf(err, cap, "set the disk to %u MiB: %s", mib, strerror(errno));
	if (fc >= 0)
		close(fc);
	return rc;
}

int cell_bind_recv(int ctl, struct cell_bind_req *q)
{
	ssize_t r;

	do {
		r = recv(ctl, q, sizeof(*q), 0);
	} while (r < 0 && errno == EINTR);
	if (r != (ssize_t)sizeof(*q) || q->op != CELL_OP_BIND)
		return -1;
	q->name[CELL_NAME_MAX] = '\0';
	return 0;
}

int cell_bind_apply(const struct cell_bind_req *q, const char *old, char *err, size_t cap)
{
	if (!cell_name_ok(q->name) || q->disk_mib == 0 || q->disk_mib > 16U * 1024 * 1024) {
		snprintf(err, cap, "bind: bad sandbox name or disk size");
		errno = EINVAL;
		return -1;
	}
	if (sethostname(q->name, strlen(q->name)) != 0) {
		snprintf(err, cap, "sethostname %s: %s", q->name, strerror(errno));
		return -1;
	}
	if (cell_name_files(old, q->name, err, cap) != 0)
		return -1;
	return disk_set(q->disk_mib, err, cap);
}

void cell_bind_answer(int ctl, int code, const char *msg)
{
	struct cell_bind_ans a = {.err = code};

	snprintf(a.msg, sizeof(a.msg), "%s", msg);
	(void)cell_send_fd(ctl, &a, sizeof(a), -1, 0);
}

/* cell: starts, drives and stops one sandbox's sbx-cell; see cell.h and
 * CONTAINMENT.md ("Starting a cell").
 *
 * The clone child shares the mock's memory until it execs sbx-cell
 * (CLONE_VM: a fork of this big multi-threaded process costs ~10 ms of
 * page-table copying) and runs on a block of the starting thread's stack:
 * it must only make system calls there — no malloc, no locks, no glibc
 * set*id wrappers (they signal every thread of the process) — and the
 * starting thread must not return before the child has exec'd or died.
 * Never gives the child a capability in the host's user namespace. */
#define _GNU_SOURCE
#include "guest/cell.h"
#include "guest/cell_proto.h"
#include "sbx/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SBX_MOCK_CELL_BUILD
#define SBX_MOCK_CELL_BUILD ""
#endif
#ifndef SBX_MOCK_CELL_INSTALL
#define SBX_MOCK_CELL_INSTALL "/usr/local/libexec/sbx-harness/sbx-cell"
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SBX_CELL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SBX_CELL_ASAN 1
#endif
#endif
#ifdef SBX_CELL_ASAN
#include <sanitizer/asan_interface.h>
#endif
#ifdef SBX_HAVE_VALGRIND_H
#include <valgrind/valgrind.h>
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#define CELL_STACK_SIZE (64 * 1024)
/* the probe's child only exits; under TSan the clone interceptor's fork
 * bookkeeping runs on the child's stack first */
#if MOCK_CLONE_VM == 0
#define PROBE_STACK_SIZE (64 * 1024)
#else
#define PROBE_STACK_SIZE 4096
#endif
#define CELL_READY_MS 5000
#define CELL_NS_FLAGS \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)

struct mock_cell_filter {
	int fd; /* sealed memfd: the program, whole */
};

struct mock_cell {
	pid_t pid;        /* in the mock's PID namespace */
	int ctl;          /* our end of the control socket */
	int self_fd;      /* the READY socket, until taken */
	pthread_mutex_t lock; /* one sender at a time on ctl */
};

/* ---- where sbx-cell is ---- */

static const char *cell_path(void)
{
	const char *env = getenv("SBX_MOCK_CELL");

	if (env != NULL && env[0] != '\0')
		return env;
	if (SBX_MOCK_CELL_BUILD[0] != '\0' && access(SBX_MOCK_CELL_BUILD, X_OK) == 0)
		return SBX_MOCK_CELL_BUILD;
	return SBX_MOCK_CELL_INSTALL;
}

/* Root of the host's own user namespace (every id mapped), where the base
 * range exists. Root of a namespace of the mock's own (an unprivileged
 * sbx-mock that entered one for enforced egress) maps one id only. */
bool mock_cell_host_root(void)
{
	char line[128] = "";
	char *p = line, *end;
	unsigned long v[3] = {1, 1, 0};
	FILE *f;

	if (geteuid() != 0)
		return false;
	f = fopen("/proc/self/uid_map", "re");
	if (f == NULL || fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	if (f != NULL)
		fclose(f);
	for (int i = 0; i < 3; i++, p = end) {
		errno = 0;
		v[i] = strtoul(p, &end, 10);
		if (end == p || errno != 0)
			return false;
	}
	return v[0] == 0 && v[1] == 0 && v[2] == 4294967295UL;
}

uid_t mock_cell_owner(void)
{
	return mock_cell_host_root() ? (uid_t)MOCK_CELL_UID_BASE : (uid_t)-1;
}

/* ---- the clone child ---- */

/* Everything the child needs, prepared before the clone. */
typedef struct cell_child {
	int sync_r;       /* one byte: the id maps are written, go */
	int err_w;        /* an errno when something before execve failed */
	int ctl, devnull, exe;
	int bpf;          /* the filter's memfd, or -1 */
	int image;        /* the image's idmapped detached mount, or -1 */
	const char *ws, *tmp;
	const char *image_dir; /* an image directory to open as the cell's, or NULL */
	const char *trust_bundle; /* the trust bundle to open as the cell's, or NULL */
	char *argv[5];
	char *envp[6]; /* disk, bpf, image, trust, trust bundle, NULL */
	char *trust; /* CELL_TRUST_ENV=PEM, malloc'd before the clone; or NULL */
	char port[8];
	char disk[40];
} cell_child;

static _Noreturn void child_fail(int err_w)
{
	int code = errno;
	ssize_t w = write(err_w, &code, sizeof(code));

	(void)w;
	_exit(127);
}

/* Closes every descriptor but the ones the child uses (system calls only). */
static void close_others(const cell_child *cc)
{
	int keep[7] = {cc->sync_r, cc->err_w, cc->ctl, cc->devnull, cc->exe, cc->bpf, cc->image};
	unsigned lo = 0;

	for (size_t i = 1; i < 7; i++) /* ascending; -1 (no filter, no image) first */
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (size_t i = 0; i < 7; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < lo)
			continue;
		if ((unsigned)keep[i] > lo)
			syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0U);
		lo = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, lo, ~0U, 0U);
}

/* In the new namespaces, in the mock's memory: system calls only. */
static int cell_child_main(void *arg)
{
	const cell_child *cc = arg;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	char go = 0;
	int hi[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, ws, tmp, image = cc->image, bundle = -1;
	int err_w = cc->err_w; /* moved above the dup2 targets below, as the rest */

	/* the clone copied every descriptor of the mock; only the start's own
	 * stay. A copy held here keeps the mock's open: the sync pipe's write
	 * end (a mock killed before "go" left this child waiting forever on a
	 * pipe it held itself), other cells' control sockets (they never saw
	 * EOF: cells outlived a kill -9), removed self-signal listeners (still
	 * taking connections). close-on-exec alone waits for the exec. */
	close_others(cc);
	if (read(cc->sync_r, &go, 1) != 1)
		_exit(127); /* the mock gave up on this start */
	/* the sandbox dirs as handles, while this child is still the mock's
	 * uid on the host: the work dir may be closed to root inside */
	ws = open(cc->ws, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	tmp = open(cc->tmp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cc->image_dir != NULL)
		image = open(cc->image_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* a path of this mount namespace: only such a file can be bound here */
	if (cc->trust_bundle != NULL)
		bundle = open(cc->trust_bundle, O_PATH | O_NOFOLLOW | O_CLOEXEC); /* a file or a layer */
	if (ws < 0 || tmp < 0 || (cc->image_dir != NULL && image < 0) || (cc->trust_bundle != NULL && bundle < 0))
		child_fail(err_w);
	/* copies above 0-5 first (a source may sit on a target), then onto
	 * 0-5 with dup2, whose copies are not close-on-exec */
	hi[0] = fcntl(ws, F_DUPFD_CLOEXEC, 10);
	hi[1] = fcntl(tmp, F_DUPFD_CLOEXEC, 10);
	hi[2] = fcntl(cc->ctl, F_DUPFD_CLOEXEC, 10);
	hi[3] = fcntl(cc->devnull, F_DUPFD_CLOEXEC, 10);
	if (cc->bpf >= 0)
		hi[4] = fcntl(cc->bpf, F_DUPFD_CLOEXEC, 10);
	if (image >= 0)
		hi[5] = fcntl(image, F_DUPFD_CLOEXEC, 10);
	if (bundle >= 0)
		hi[6] = fcntl(bundle, F_DUPFD_CLOEXEC, 10);
	/* sbx-cell itself and the error pipe too: the mock opened them
	 * wherever a number was free, and 0-8 are overwritten below (sbx-cell's
	 * handle at 8 became the trust bundle's, which execveat then refused
	 * with EACCES, now and then) */
	hi[7] = fcntl(cc->exe, F_DUPFD_CLOEXEC, 10);
	err_w = fcntl(cc->err_w, F_DUPFD_CLOEXEC, 10);
	if (err_w < 0)
		child_fail(cc->err_w);
	if (hi[0] < 0 || hi[1] < 0 || hi[2] < 0 || hi[3] < 0 || hi[7] < 0 || (cc->bpf >= 0 && hi[4] < 0) ||
	    (image >= 0 && hi[5] < 0) || (bundle >= 0 && hi[6] < 0) || dup2(hi[3], 0) < 0 || dup2(hi[3], 1) < 0 ||
	    dup2(hi[3], 2) < 0 || dup2(hi[2], CELL_CTL_FD) < 0 || dup2(hi[0], 4) < 0 ||
	    dup2(hi[1], 5) < 0)
		child_fail(err_w);
	/* nothing else of the mock's crosses into the cell: all from 6 up
	 * close at exec but the filter, the image and the bundle, put there
	 * after */
	syscall(SYS_close_range, (unsigned)CELL_BPF_FD, ~0U, CLOSE_RANGE_CLOEXEC);
	if ((cc->bpf >= 0 && dup2(hi[4], CELL_BPF_FD) < 0) ||
	    (image >= 0 && dup2(hi[5], CELL_IMAGE_FD) < 0) || (bundle >= 0 && dup2(hi[6], CELL_TRUST_FD) < 0))
		child_fail(err_w);
	/* root of the new user namespace: raw calls, this task only */
	if (syscall(SYS_setresgid, 0, 0, 0) != 0)
		child_fail(err_w);
	if (syscall(SYS_setgroups, 0, NULL) != 0 && errno != EPERM)
		child_fail(err_w); /* EPERM: unprivileged, setgroups denied, none held */
	if (syscall(SYS_setresuid, 0, 0, 0) != 0)
		child_fail(err_w);
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	syscall(SYS_execveat, hi[7], "", cc->argv, cc->envp, AT_EMPTY_PATH);
	child_fail(err_w);
	return 127;
}

/* ---- id maps ---- */

static int write_proc(pid_t pid, const char *file, const char *text, sbx_err *err)
{
	char path[64];
	size_t len = strlen(text);
	int fd;
	ssize_t w;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		sbx_err_set(err, "cell: open %s: %s", path, strerror(errno));
		return -1;
	}
	w = write(fd, text, len);
	if (w != (ssize_t)len) {
		sbx_err_set(err, "cell: write %s (%s): %s", path, text, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Root inside = the uid base range (mock as root) or the mock's own ids. */
static int write_maps(pid_t pid, sbx_err *err)
{
	char map[64];

	if (mock_cell_host_root()) {
		snprintf(map, sizeof(map), "0 %u %u\n", MOCK_CELL_UID_BASE, MOCK_CELL_ID_RANGE);
		return write_proc(pid, "uid_map", map, err) != 0 || write_proc(pid, "gid_map", map, err) != 0
			       ? -1
			       : 0;
	}
	if (write_proc(pid, "setgroups", "deny", err) != 0)
		return -1;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)geteuid());
	if (write_proc(pid, "uid_map", map, err) != 0)
		return -1;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)getegid());
	return write_proc(pid, "gid_map", map, err);
}

/* ---- start ---- */

/* Clones the child on a block of this frame's stack, lets it go once the
 * maps are written and it sits in its cgroup, and returns only after it
 * exec'd sbx-cell (err_r reaches EOF) or failed (err_r carries errno).
 * The cell's pid, or -1 with err set. */
static pid_t clone_cell(cell_child *cc, int sync_w, int err_r, const mock_cell_conf *conf,
			sbx_err *err)
{
	_Alignas(64) char stack[CELL_STACK_SIZE];
	sigset_t all, old;
	pid_t pid;
	int code = 0;
	ssize_t r;
	bool left;

	/* valgrind runs only fork- and thread-like clones: under it (and under
	 * TSan: MOCK_CLONE_VM) the child is a plain (slower) copy instead,
	 * which changes nothing for it */
	unsigned long vm = RUNNING_ON_VALGRIND ? 0 : MOCK_CLONE_VM;

	if (conf->join != NULL && conf->join(conf->place_arg, err) != 0) {
		close(cc->sync_r);
		close(cc->err_w);
		close(sync_w);
		return -1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* no handler on the child's stack */
	/* no exit signal: a cell's death must not interrupt the mock's
	 * threads (valgrind turns even an ignored SIGCHLD into EINTR), and
	 * nothing waits for SIGCHLD; waitpid then needs __WALL */
	pid = clone(cell_child_main, stack + CELL_STACK_SIZE, (int)(vm | CELL_NS_FLAGS), cc);
	code = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* the child has its own copies; cc itself is the child's to read
	 * (shared memory) until it exec'd */
	close(cc->sync_r);
	close(cc->err_w);
	/* a failed leave still lets a child go only through the failure path
	 * below, which waits for it: it runs on this frame's stack */
	left = conf->leave == NULL || conf->leave(conf->place_arg, err) == 0;
	if (pid < 0) {
		close(sync_w);
		sbx_err_set(err, "cell: clone with new namespaces: %s", strerror(code));
		return -1;
	}
	code = 0;
	if (!left || write_maps(pid, err) != 0 ||
	    (conf->place != NULL && conf->place(pid, conf->place_arg, err) != 0)) {
		code = -1;
	} else if (write(sync_w, "g", 1) != 1) {
		sbx_err_set(err, "cell: sync: %s", strerror(errno));
		code = -1;
	}
	close(sync_w); /* on failure: the child reads EOF and exits */
	do {
		r = read(err_r, &code, sizeof(code));
	} while (r < 0 && errno == EINTR);
#ifdef SBX_CELL_ASAN
	__asan_unpoison_memory_region(stack, CELL_STACK_SIZE);
#endif
	if (r == (ssize_t)sizeof(code))
		sbx_err_set(err, "cell: starting %s: %s", cc->argv[0], strerror(code));
	if (r != 0 || code == -1) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
			;
		return -1;
	}
	return pid;
}

/* The cell's first message: READY (its listener into c->self_fd) or FAIL. */
static int wait_ready(mock_cell *c, sbx_err *err)
{
	struct cell_hello h;
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.space,
			   .msg_controllen = sizeof(cbuf.space)};
	struct pollfd pf = {.fd = c->ctl, .events = POLLIN};
	struct cmsghdr *cm;
	ssize_t r;

	if (poll(&pf, 1, CELL_READY_MS) <= 0) {
		sbx_err_set(err, "cell: no answer from sbx-cell within %d ms", CELL_READY_MS);
		return -1;
	}
	memset(&h, 0, sizeof(h));
	r = recvmsg(c->ctl, &m, MSG_CMSG_CLOEXEC);
	cm = r > 0 ? CMSG_FIRSTHDR(&m) : NULL;
	if (cm != NULL && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&c->self_fd, CMSG_DATA(cm), sizeof(int));
	h.msg[sizeof(h.msg) - 1] = '\0';
	if (r == (ssize_t)sizeof(h) && h.kind == CELL_READY && c->self_fd >= 0)
		return 0;
	if (r == (ssize_t)sizeof(h) && h.kind == CELL_FAIL)
		sbx_err_set(err, "sandbox environment: %s", h.msg);
	else
		sbx_err_set(err, "cell: sbx-cell exited before it was ready");
	return -1;
}

/* The image's ids are mapped by userns's map (image uid 0 = root inside
 * the cells); the mount is consumed by the cell's move into its mount
 * namespace, so one per cell. Needs CAP_SYS_ADMIN of the host. */
int mock_cell_image_tree(const char *dir, int userns, sbx_err *err)
{
	struct {
		uint64_t attr_set, attr_clr, propagation, userns_fd;
	} a = {.attr_set = CELL_MOUNT_ATTR_RDONLY | CELL_MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns};
	int fd = (int)syscall(CELL_SYS_OPEN_TREE, AT_FDCWD, dir,
			      CELL_OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE);

	if (fd < 0) {
		sbx_err_set(err, "cell: open_tree %s: %s", dir, strerror(errno));
		return -1;
	}
	if (syscall(CELL_SYS_MOUNT_SETATTR, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) != 0) {
		sbx_err_set(err, "cell: idmap the rootfs image %s: %s", dir, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* argv, envp and the descriptors for the child; -1 with err set. */
static int child_prepare(cell_child *cc, const mock_cell_conf *conf, const char *path, int ctl_child,
			 sbx_err *err)
{
	int e = 1;

	cc->ws = conf->ws;
	cc->tmp = conf->tmp;
	cc->ctl = ctl_child;
	snprintf(cc->port, sizeof(cc->port), "%u", conf->self_port != 0 ? conf->self_port : 1029u);
	cc->argv[0] = (char *)(uintptr_t)path;
	cc->argv[1] = (char *)(uintptr_t)conf->id;
	cc->argv[2] = cc->port;
	cc->argv[3] = conf->pooled ? "pooled" : NULL;
	cc->argv[4] = NULL;
	snprintf(cc->disk, sizeof(cc->disk), CELL_DISK_ENV "=%u", conf->disk_mib);
	cc->envp[0] = cc->disk;
	cc->bpf = conf->filter != NULL ? conf->filter->fd : -1;
	if (cc->bpf >= 0)
		cc->envp[e++] = CELL_BPF_ENV "=1";
	if (conf->image_dir != NULL && conf->image_idmapped) {
		cc->image = mock_cell_image_tree(conf->image_dir, conf->image_userns, err);
		if (cc->image < 0)
			return -1;
		cc->envp[e++] = CELL_IMAGE_ENV "=idmapped";
	} else if (conf->image_dir != NULL) {
		cc->image_dir = conf->image_dir;
		cc->envp[e++] = CELL_IMAGE_ENV "=dir";
	}
	if (conf->trust_pem != NULL && strlen(conf->trust_pem) <= CELL_TRUST_MAX &&
	    asprintf(&cc->trust, CELL_TRUST_ENV "=%s", conf->trust_pem) < 0) {
		cc->trust = NULL;
		sbx_err_set(err, "out of memory");
		return -1;
	}
	if (cc->trust != NULL)
		cc->envp[e++] = cc->trust;
	if (cc->trust != NULL && conf->trust_bundle != NULL) {
		cc->trust_bundle = conf->trust_bundle;
		cc->envp[e++] = conf->image_dir != NULL ? CELL_TRUST_BUNDLE_ENV "=layer" : CELL_TRUST_BUNDLE_ENV "=file";
	}
	cc->envp[e] = NULL;
	cc->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	cc->exe = open(path, O_PATH | O_CLOEXEC);
	if (cc->devnull < 0 || cc->exe < 0) {
		sbx_err_set(err, "cell: open %s: %s (set SBX_MOCK_CELL to the sbx-cell program)",
			    cc->exe < 0 ? path : "/dev/null", strerror(errno));
		return -1;
	}
	return 0;
}

mock_cell *mock_cell_start(const mock_cell_conf *conf, sbx_err *err)
{
	mock_cell *c = calloc(1, sizeof(*c));
	cell_child cc = {.sync_r = -1, .err_w = -1, .ctl = -1, .devnull = -1, .exe = -1, .bpf = -1,
			 .image = -1};
	int ctl[2] = {-1, -1}, sync[2] = {-1, -1}, ep[2] = {-1, -1};

	if (c == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	c->pid = -1;
	c->ctl = c->self_fd = -1;
	pthread_mutex_init(&c->lock, NULL);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) != 0 ||
	    pipe2(sync, O_CLOEXEC) != 0 || pipe2(ep, O_CLOEXEC) != 0) {
		sbx_err_set(err, "cell: %s", strerror(errno));
		goto out_close;
	}
	if (child_prepare(&cc, conf, cell_path(), ctl[1], err) != 0)
		goto out_close;
	cc.sync_r = sync[0];
	cc.err_w = ep[1];
	sync[0] = ep[1] = -1; /* clone_cell closes them, as cc's */
	c->pid = clone_cell(&cc, sync[1], ep[0], conf, err);
	sync[1] = cc.sync_r = cc.err_w = -1; /* clone_cell closed them */
	if (c->pid < 0)
		goto out_close;
	c->ctl = ctl[0];
	ctl[0] = -1;
	sbx_close_fd(&ctl[1]); /* now the cell's alone: its exit is our EOF */
	sbx_close_fd(&cc.image); /* the cell's copy is the one it mounts */
	if (wait_ready(c, err) != 0)
		goto out_close;
	sbx_close_fd(&ep[0]);
	sbx_close_fd(&cc.devnull);
	sbx_close_fd(&cc.exe);
	free(cc.trust);
	return c;

out_close:
	for (int i = 0; i < 2; i++) {
		sbx_close_fd(&ctl[i]);
		sbx_close_fd(&sync[i]);
		sbx_close_fd(&ep[i]);
	}
	sbx_close_fd(&cc.sync_r);
	sbx_close_fd(&cc.err_w);
	sbx_close_fd(&cc.devnull);
	sbx_close_fd(&cc.exe);
	sbx_close_fd(&cc.image);
	free(cc.trust);
	mock_cell_stop(c);
	return NULL;
}

/* ---- requests ---- */

/* Appends s and its NUL at *off; -1 when it does not fit. */
static int put_str(char *buf, size_t cap, size_t *off, const char *s)
{
	size_t n = strlen(s) + 1;

	if (n > cap - *off)
		return -1;
	memcpy(buf + *off, s, n);
	*off += n;
	return 0;
}

static int send_msg(mock_cell *c, const void *buf, size_t len, const int *fds, size_t nfds)
{
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(int) * 4)];
	} cbuf;
	struct iovec iov = {.iov_base = (void *)(uintptr_t)buf, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t w;

	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		m.msg_control = cbuf.space;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	pthread_mutex_lock(&c->lock);
	do {
		w = c->ctl >= 0 ? sendmsg(c->ctl, &m, MSG_NOSIGNAL) : -1;
	} while (w < 0 && errno == EINTR);
	pthread_mutex_unlock(&c->lock);
	return w == (ssize_t)len ? 0 : -1;
}

int mock_cell_exec(mock_cell *c, const char *cwd, char *const argv[], char *const envp[],
		   const int fds[4], bool tty, sbx_err *err)
{
	struct cell_exec_req h = {.op = tty ? CELL_OP_EXEC_TTY : CELL_OP_EXEC};
	char *buf = malloc(CELL_MSG_MAX);
	size_t off = sizeof(h);
	int rc = -1;

	if (buf == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	if (put_str(buf, CELL_MSG_MAX, &off, cwd) != 0)
		goto out_big;
	for (size_t i = 0; argv[i] != NULL; i++) {
		if (put_str(buf, CELL_MSG_MAX, &off, argv[i]) != 0 || i > CELL_MAX_ARGS)
			goto out_big;
		h.argc = (uint32_t)i; /* args after cmd */
	}
	for (size_t i = 0; envp[i] != NULL; i++) {
		if (put_str(buf, CELL_MSG_MAX, &off, envp[i]) != 0 || i >= CELL_MAX_ENV)
			goto out_big;
		h.envc = (uint32_t)i + 1;
	}
	h.len = (uint32_t)(off - sizeof(h));
	memcpy(buf, &h, sizeof(h));
	rc = send_msg(c, buf, off, fds, 4);
	if (rc != 0)
		sbx_err_set(err, "sandbox environment is gone: %s", strerror(errno));
	free(buf);
	return rc;

out_big:
	sbx_err_set(err, "command, arguments and environment are over %d bytes or %d entries",
		    CELL_MSG_MAX, CELL_MAX_ARGS);
	free(buf);
	return -1;
}

int mock_cell_signal(mock_cell *c, pid_t pgid, int sig)
{
	struct cell_signal_req s = {.op = CELL_OP_SIGNAL, .pgid = pgid, .sig = sig};

	return c == NULL ? -1 : send_msg(c, &s, sizeof(s), NULL, 0);
}

int mock_cell_bind(mock_cell *c, const char *id, unsigned disk_mib, sbx_err *err)
{
	struct cell_bind_req q = {.op = CELL_OP_BIND, .disk_mib = disk_mib};
	struct cell_bind_ans a = {.err = EPROTO};
	struct pollfd pf = {.fd = c->ctl, .events = POLLIN};
	size_t len = strlen(id);
	ssize_t r = -1;
	int pr;

	if (len == 0 || len > CELL_NAME_MAX || disk_mib == 0) {
		sbx_err_set(err, "cell: cannot bind \"%s\" with a disk of %u MiB", id, disk_mib);
		return -1;
	}
	memcpy(q.name, id, len + 1);
	if (send_msg(c, &q, sizeof(q), NULL, 0) != 0) {
		sbx_err_set(err, "cell: bind: the pooled cell is gone: %s", strerror(errno));
		return -1;
	}
	/* bounded: a cell that stopped answering must not hold a create */
	do {
		pr = poll(&pf, 1, CELL_READY_MS);
	} while (pr < 0 && errno == EINTR);
	if (pr == 1)
		r = recv(c->ctl, &a, sizeof(a), MSG_DONTWAIT);
	a.msg[sizeof(a.msg) - 1] = '\0';
	if (r == (ssize_t)sizeof(a) && a.err == 0)
		return 0;
	if (r == (ssize_t)sizeof(a))
		sbx_err_set(err, "sandbox environment: %s", a.msg);
	else
		sbx_err_set(err, "cell: the pooled cell did not answer its bind within %d ms",
			    CELL_READY_MS);
	return -1;
}

/* The cell's answer to SOCKET on sp (poll-bounded: a cell that stopped
 * serving must not hold an ingress connection forever). */
static int recv_socket(int sp, sbx_err *err)
{
	struct cell_socket_ans a = {.err = EPROTO};
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = {.iov_base = &a, .iov_len = sizeof(a)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.space,
			   .msg_controllen = sizeof(cbuf.space)};
	struct pollfd pf = {.fd = sp, .events = POLLIN};
	struct cmsghdr *cm;
	int fd = -1, pr;
	ssize_t r = -1;

	do {
		pr = poll(&pf, 1, 5000);
	} while (pr < 0 && errno == EINTR);
	if (pr == 1)
		r = recvmsg(sp, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	cm = r == (ssize_t)sizeof(a) ? CMSG_FIRSTHDR(&m) : NULL;
	if (cm != NULL && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (fd >= 0 && a.err == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	sbx_err_set(err, "sandbox network: %s",
		    r == (ssize_t)sizeof(a) && a.err != 0 ? strerror(a.err)
							   : "the sandbox environment did not answer");
	return -1;
}

int mock_cell_socket(mock_cell *c, sbx_err *err)
{
	struct cell_socket_req q = {.op = CELL_OP_SOCKET};
	int sp[2], fd;

	if (c == NULL || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) {
		sbx_err_set(err, "sandbox network: %s", c == NULL ? "no cell" : strerror(errno));
		return -1;
	}
	if (send_msg(c, &q, sizeof(q), &sp[1], 1) != 0) {
		sbx_err_set(err, "sandbox environment is gone: %s", strerror(errno));
		close(sp[0]);
		close(sp[1]);
		return -1;
	}
	close(sp[1]);
	fd = recv_socket(sp[0], err);
	close(sp[0]);
	return fd;
}

/* ---- stop ---- */

void mock_cell_kill(mock_cell *c)
{
	if (c != NULL && c->pid > 0)
		kill(c->pid, SIGKILL);
}

void mock_cell_reap(mock_cell *c)
{
	if (c == NULL || c->pid <= 0)
		return;
	while (waitpid(c->pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	c->pid = -1; /* a reaped pid may be anyone's by now: never signal it */
}

void mock_cell_stop(mock_cell *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	sbx_close_fd(&c->ctl); /* the cell's EOF: it exits by itself too */
	pthread_mutex_unlock(&c->lock);
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		while (waitpid(c->pid, NULL, __WALL) < 0 && errno == EINTR)
			;
	}
	sbx_close_fd(&c->self_fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

pid_t mock_cell_pid(const mock_cell *c)
{
	return c != NULL ? c->pid : -1;
}


int mock_cell_self_fd(const mock_cell *c)
{
	return c != NULL ? c->self_fd : -1;
}

int mock_cell_take_self_fd(mock_cell *c)
{
	int fd = c != NULL ? c->self_fd : -1;

	if (c != NULL)
		c->self_fd = -1;
	return fd;
}

/* ---- the seccomp program, once ---- */

mock_cell_filter *mock_cell_filter_new(void)
{
	const char *path = cell_path();
	char *argv[] = {(char *)(uintptr_t)path, "--seccomp-bpf", NULL};
	char *envp[] = {NULL};
	int fd = memfd_create("sbx-cell-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING), st = 0;
	posix_spawn_file_actions_t fa;
	struct stat sb;
	mock_cell_filter *f = NULL;
	pid_t pid = -1;

	if (fd < 0)
		return NULL;
	posix_spawn_file_actions_init(&fa);
	if (posix_spawn_file_actions_adddup2(&fa, fd, 1) != 0 ||
	    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
	    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) != 0 ||
	    posix_spawn(&pid, path, &fa, NULL, argv, envp) != 0)
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	/* a whole program, then never changed again: every cell reads it */
	if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && fstat(fd, &sb) == 0 && sb.st_size > 0 &&
	    sb.st_size % 8 == 0 &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0)
		f = malloc(sizeof(*f));
	if (f == NULL) {
		close(fd);
		return NULL;
	}
	f->fd = fd;
	return f;
}

void mock_cell_filter_free(mock_cell_filter *f)
{
	if (f == NULL)
		return;
	close(f->fd);
	free(f);
}

/* ---- probe ---- */

static int probe_child(void *arg)
{
	(void)arg;
	_exit(0);
}

int mock_cell_probe(sbx_err *err)
{
	_Alignas(64) char stack[PROBE_STACK_SIZE];
	const char *path = cell_path();
	sigset_t all, old;
	pid_t pid;
	int code;

	if (access(path, X_OK) != 0) {
		sbx_err_set(err, "guest containment: the sbx-cell program %s: %s (build it, install it, "
			    "or set SBX_MOCK_CELL to its path)", path, strerror(errno));
		return -1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = clone(probe_child, stack + sizeof(stack), MOCK_CLONE_VM | CLONE_VFORK | CELL_NS_FLAGS | SIGCHLD,
		    NULL);
	code = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
#ifdef SBX_CELL_ASAN
	__asan_unpoison_memory_region(stack, sizeof(stack));
#endif
	if (pid < 0) {
		sbx_err_set(err, "guest containment needs user namespaces and this host refuses them "
			    "(clone: %s). Allow them (sysctl kernel.unprivileged_userns_clone=1, "
			    "user.max_user_namespaces > 0, or the AppArmor restriction "
			    "kernel.apparmor_restrict_unprivileged_userns=0), run sbx-mock as root, or "
			    "run guests uncontained with --guest-mode plain", strerror(code));
		return -1;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}

/* exec: the cell's EXEC and SIGNAL service (CONTAINMENT.md, "Inside the
 * cell" steps 3-5). An EXEC request becomes a forked child in its own
 * process group that takes the passed stdin/stdout/stderr, drops to the
 * guests' capabilities (no_new_privs and the seccomp filter it inherits
 * from PID 1) and execs the command (PATH
 * searched inside the new root); the status pipe gets STARTED, later
 * EXITED. SIGNAL is kill(-pgid) inside the cell's PID namespace. SOCKET
 * hands the mock one unconnected TCP socket of the cell's network
 * namespace (ingress).
 *
 * Every request is guest-influenced data: lengths and counts are checked
 * before a byte is used, and a malformed request is answered (when it
 * carried a status pipe) or dropped, never trusted. A child must never
 * inherit a descriptor beyond 0, 1 and 2 (everything received is
 * close-on-exec). */
#define _GNU_SOURCE
#include "cell.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/seccomp.h>

#define GUEST_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define EXEC_FDS 4

/* Execs running: their pid and the status pipe EXITED goes to. */
struct running {
	pid_t pid;
	int status_fd;
};
static struct running *g_run;
static size_t g_nrun, g_caprun;

static void send_status(int fd, int kind, pid_t pid, int err, int wstatus)
{
	struct cell_status st = {.kind = kind, .pid = pid, .err = err, .wstatus = wstatus};
	ssize_t w = write(fd, &st, sizeof(st));

	(void)w; /* the mock stopped listening: nothing to do (SIGPIPE ignored) */
}

/* The strings of an EXEC request, checked: cwd, cmd, argc args, envc
 * K=V, each NUL-terminated within len bytes. argv/envp are malloc'd
 * arrays pointing into buf. */
struct exec_req {
	const char *cwd;
	char **argv;
	char **envp;
};

static int parse_exec(const struct cell_exec_req *h, const char *buf, size_t len,
		      struct exec_req *q)
{
	size_t want, off = 0;
	const char **slot;

	if (h->argc > CELL_MAX_ARGS || h->envc > CELL_MAX_ENV || h->len != len)
		return -1;
	want = 2 + (size_t)h->argc + (size_t)h->envc;
	q->argv = calloc((size_t)h->argc + 2, sizeof(char *));
	q->envp = calloc((size_t)h->envc + 1, sizeof(char *));
	if (q->argv == NULL || q->envp == NULL)
		return -1;
	for (size_t i = 0; i < want; i++) {
		const char *s = buf + off;
		const char *nul = off < len ? memchr(s, '\0', len - off) : NULL;

		if (nul == NULL)
			return -1;
		if (i == 0)
			slot = &q->cwd;
		else if (i < 2 + (size_t)h->argc)
			slot = (const char **)&q->argv[i - 1];
		else
			slot = (const char **)&q->envp[i - 2 - h->argc];
		*slot = s;
		off += (size_t)(nul - s) + 1;
	}
	return off == len && q->argv[0][0] != '\0' ? 0 : -1;
}

/* In the forked child (the cell is single-threaded: a plain fork). Never
 * returns; an errno goes back on errw when the exec cannot happen. */
static _Noreturn void child_exec(const struct exec_req *q, const int fds[EXEC_FDS], int errw)
{
	char path[PATH_MAX];
	const char *p = GUEST_PATH;
	sigset_t none;
	int code = ENOENT;

	setpgid(0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL); /* ignored in the cell; ignoring survives execve */
	if (dup2(fds[0], 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0 || chdir(q->cwd) != 0)
		goto out_fail;
	if (cell_caps_drop() != 0)
		goto out_fail;
	if (strchr(q->argv[0], '/') != NULL) {
		execve(q->argv[0], q->argv, q->envp);
		code = errno;
		goto out_report;
	}
	while (*p != '\0') {
		size_t n = strcspn(p, ":");

		snprintf(path, sizeof(path), "%.*s/%s", (int)n, p, q->argv[0]);
		execve(path, q->argv, q->envp);
		if (errno != ENOENT && errno != ENOTDIR)
			code = errno;
		p += n + (p[n] == ':');
	}
	goto out_report;
out_fail:
	code = errno;
out_report:
	if (write(errw, &code, sizeof(code)) < 0)
		_exit(126);
	_exit(127);
}

static int track(pid_t pid, int status_fd)
{
	if (g_nrun == g_caprun) {
		size_t cap = g_caprun == 0 ? 16 : g_caprun * 2;
		struct running *n = realloc(g_run, cap * sizeof(*n));

		if (n == NULL)
			return -1;
		g_run = n;
		g_caprun = cap;
	}
	g_run[g_nrun++] = (struct running){.pid = pid, .status_fd = status_fd};
	return 0;
}

/* Forks and execs; answers STARTED on fds[3] and keeps it for EXITED. */
static void start_exec(const struct exec_req *q, int fds[EXEC_FDS], bool tty)
{
	int ep[2], code = 0;
	pid_t pid;
	ssize_t r;

	if (pipe2(ep, O_CLOEXEC) != 0) {
		send_status(fds[3], CELL_STARTED, -1, errno, 0);
		return;
	}
	pid = fork();
	if (pid == 0) {
		if (tty)
			cell_child_take_tty(fds[0]);
		child_exec(q, fds, ep[1]);
	}
	close(ep[1]);
	if (pid < 0) {
		close(ep[0]);
		send_status(fds[3], CELL_STARTED, -1, errno, 0);
		return;
	}
	/* before any SIGNAL for it can arrive; a tty child makes its own
	 * session (a group leader could not), done before its execve below */
	if (!tty)
		setpgid(pid, pid);
	do {
		r = read(ep[0], &code, sizeof(code));
	} while (r < 0 && errno == EINTR);
	close(ep[0]);
	if (r == (ssize_t)sizeof(code)) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		send_status(fds[3], CELL_STARTED, -1, code, 0);
		return;
	}
	send_status(fds[3], CELL_STARTED, pid, 0, 0);
	if (track(pid, fds[3]) == 0)
		fds[3] = -1; /* kept open until EXITED */
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/* The SCM_RIGHTS descriptors of msg into fds (at most cap; extra ones are
 * closed at once). Returns how many. */
static size_t take_fds(struct msghdr *msg, int *fds, size_t cap)
{
	size_t n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
		size_t k;
		int *in = (int *)(void *)CMSG_DATA(c);

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			if (n < cap)
				fds[n++] = in[i];
			else
				close(in[i]);
		}
	}
	return n;
}

static void serve_exec(const char *buf, size_t len, int fds[EXEC_FDS], size_t nfds, bool tty)
{
	struct cell_exec_req h;
	struct exec_req q = {0};

	if (nfds != EXEC_FDS)
		return;
	memcpy(&h, buf, sizeof(h));
	if (parse_exec(&h, buf + sizeof(h), len - sizeof(h), &q) != 0)
		send_status(fds[3], CELL_STARTED, -1, EINVAL, 0);
	else
		start_exec(&q, fds, tty);
	free(q.argv);
	free(q.envp);
}

static void serve_signal(const char *buf, size_t len)
{
	struct cell_signal_req s;

	if (len != sizeof(s))
		return;
	memcpy(&s, buf, sizeof(s));
	if (s.sig < 0 || s.sig >= NSIG)
		return;
	if (s.pgid == 0)
		kill(-1, s.sig); /* every process here but PID 1 itself */
	else if (s.pgid > 1)
		kill(-s.pgid, s.sig);
}

int cell_send_fd(int sock, const void *buf, size_t len, int fd, int flags)
{
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = {.iov_base = (void *)(uintptr_t)buf, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&cbuf, 0, sizeof(cbuf));
		m.msg_control = cbuf.space;
		m.msg_controllen = sizeof(cbuf.space);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL | flags) < 0 ? -1 : 0;
}

/* SOCKET: one fresh stream socket of this namespace, sent on the reply
 * socket the request carried (never to a guest: the cell keeps no copy).
 * The mock waits on the other end; a full or closed one just drops it. */
static void serve_socket(int reply)
{
	struct cell_socket_ans a = {0};
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		a.err = errno;
	(void)cell_send_fd(reply, &a, sizeof(a), s, MSG_DONTWAIT);
	if (s >= 0)
		close(s);
}

/* One request from the mock. 1 at EOF (the mock is gone or stops the
 * sandbox), 0 otherwise. */
int cell_serve_request(int ctl)
{
	static char buf[CELL_MSG_MAX];
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(int) * EXEC_FDS)];
	} cbuf;
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.space,
			     .msg_controllen = sizeof(cbuf.space)};
	int fds[EXEC_FDS] = {-1, -1, -1, -1};
	size_t nfds;
	ssize_t r = recvmsg(ctl, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	uint32_t op;

	if (r == 0)
		return 1;
	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : 1;
	nfds = take_fds(&msg, fds, EXEC_FDS);
	if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0 && (size_t)r >= sizeof(op)) {
		memcpy(&op, buf, sizeof(op));
		if ((op == CELL_OP_EXEC || op == CELL_OP_EXEC_TTY) &&
		    (size_t)r >= sizeof(struct cell_exec_req))
			serve_exec(buf, (size_t)r, fds, nfds, op == CELL_OP_EXEC_TTY);
		else if (op == CELL_OP_SIGNAL)
			serve_signal(buf, (size_t)r);
		else if (op == CELL_OP_SOCKET && nfds == 1)
			serve_socket(fds[0]);
	}
	close_fds(fds, EXEC_FDS);
	return 0;
}

void cell_reap(void)
{
	int st;
	pid_t pid;

	for (;;) {
		pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			return;
		for (size_t i = 0; i < g_nrun; i++) {
			if (g_run[i].pid != pid)
				continue;
			send_status(g_run[i].status_fd, CELL_EXITED, pid, 0, st);
			close(g_run[i].status_fd);
			g_run[i] = g_run[--g_nrun];
			break;
		}
	}
}

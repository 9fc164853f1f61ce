/* fz_zygote: see fz_zygote.h. Why: a driver of the built-in reference
 * backend used to be this whole binary started again (`sh -c exec SELF`):
 * 20 ms of loading libcurl and its 30 libraries per start in a plain build,
 * 50-90 ms with ASan's start-up and LeakSanitizer's exit scan; and the
 * fuzzer starts a driver for most inputs (every new combination of
 * settings is a new driver). The zygote pays that once: it is this binary,
 * started once with nothing but its main thread, and each driver is a fork
 * of it that runs the reference backend's main.
 *
 * The driver must stay the harness's child (the runner waits for it, reads
 * its exit status and kills its process group), so the zygote forks with
 * CLONE_PARENT: the new process's parent is the zygote's parent. The raw
 * clone skips glibc's fork handlers; that is sound here because the zygote
 * is single-threaded and holds no lock when it forks, and glibc reads the
 * thread id from the kernel where it matters (raise, abort). */
#define _GNU_SOURCE
#include "fz_zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ENV_BYTES_MAX (256 * 1024)
#define ENV_VARS_MAX 4096

extern char **environ;

static struct {
	int sock;   /* the harness's end; -1: no zygote */
	pid_t pid;
} Z = {-1, -1};

/* ---- the zygote's side ---- */

/* One request: the environment (NUL-separated) and three descriptors. */
static ssize_t recv_request(int sock, char *buf, size_t cap, int fds[3])
{
	union {
		char b[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {buf, cap};
	struct msghdr m = {0};
	struct cmsghdr *c;
	ssize_t n;

	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl.b;
	m.msg_controllen = sizeof(ctl.b);
	fds[0] = fds[1] = fds[2] = -1;
	n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return n;
	c = CMSG_FIRSTHDR(&m);
	if (c != NULL && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(3 * sizeof(int)))
		memcpy(fds, CMSG_DATA(c), 3 * sizeof(int));
	if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || fds[2] < 0)
		return -2;
	return n;
}

/* The child: the request's descriptors as 0-2, its environment, its own
 * process group; then the reference backend. Never returns. */
static void become_driver(int sock, char *envbuf, size_t len, int fds[3], int argc, char **argv,
			  int (*backend_main)(int, char **))
{
	static char *envp[ENV_VARS_MAX + 1];
	size_t n = 0, i = 0;
	int rc;

	close(sock);
	setpgid(0, 0);
	for (int k = 0; k < 3; k++)
		if (dup2(fds[k], k) < 0)
			_exit(126);
	for (int k = 0; k < 3; k++)
		if (fds[k] > 2)
			close(fds[k]);
	while (i < len && n < ENV_VARS_MAX) {
		envp[n++] = envbuf + i;
		i += strlen(envbuf + i) + 1;
	}
	envp[n] = NULL;
	environ = envp;
	rc = backend_main(argc, argv);
	/* _exit, not exit: no LeakSanitizer scan of a process that is about to
	 * vanish (40 ms each under ASan); the reference backend's leaks are
	 * the asan and valgrind stages' business. */
	fflush(NULL);
	_exit(rc);
}

void fz_zygote_serve(int sock, int argc, char **argv, int (*backend_main)(int, char **))
{
	static char buf[ENV_BYTES_MAX];

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the harness */
	if (getppid() == 1)
		_exit(0);
	for (;;) {
		int fds[3];
		ssize_t n = recv_request(sock, buf, sizeof(buf) - 1, fds);
		int32_t answer;
		pid_t pid;

		if (n < 0 && n != -2 && errno == EINTR)
			continue;
		if (n == 0 || (n < 0 && n != -2))
			_exit(0); /* the harness closed its end */
		if (n < 0) {
			answer = -EMSGSIZE;
		} else {
			buf[n] = '\0';
			pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, NULL);
			if (pid == 0)
				become_driver(sock, buf, (size_t)n, fds, argc, argv, backend_main);
			answer = pid > 0 ? (int32_t)pid : -errno;
		}
		for (int k = 0; k < 3; k++)
			if (fds[k] >= 0)
				close(fds[k]);
		ssize_t sent;

		do
			sent = send(sock, &answer, sizeof(answer), MSG_NOSIGNAL);
		while (sent < 0 && errno == EINTR);
		if (sent != (ssize_t)sizeof(answer))
			_exit(0);
	}
}

/* ---- the harness's side ---- */

int fz_zygote_start_argv(char *const argv[], const char *fd_var, char *err, size_t errlen)
{
	int sv[2];
	char fdvar[64];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		return -1;
	}
	snprintf(fdvar, sizeof(fdvar), "%d", sv[1]);
	pid = fork(); /* before any thread of the harness: a plain fork is safe */
	if (pid == 0) {
		close(sv[0]);
		if (fcntl(sv[1], F_SETFD, 0) != 0)
			_exit(127);
		setenv(fd_var, fdvar, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(sv[1]);
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(sv[0]);
		return -1;
	}
	Z.sock = sv[0];
	Z.pid = pid;
	return 0;
}

int fz_zygote_start(const char *self_exe, const char *quirk, char *err, size_t errlen)
{
	const char *argv_q[] = {self_exe, "--quirk", quirk, NULL};
	const char *argv_p[] = {self_exe, NULL};

	return fz_zygote_start_argv((char *const *)(quirk != NULL && *quirk != '\0' ? argv_q : argv_p),
				    "SBX_FUZZ_AS_REF_ZYGOTE", err, errlen);
}

pid_t fz_zygote_spawn(void *arg, char *const *envp, int in_fd, int out_fd, int err_fd)
{
	static char buf[ENV_BYTES_MAX];
	union {
		char b[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov;
	struct msghdr m = {0};
	struct cmsghdr *c;
	size_t len = 0;
	ssize_t n;
	int32_t answer = 0;
	int fds[3] = {in_fd, out_fd, err_fd};

	(void)arg;
	if (Z.sock < 0) {
		errno = ENOTCONN;
		return -1;
	}
	for (size_t i = 0; envp[i] != NULL; i++) {
		size_t l = strlen(envp[i]) + 1;

		if (len + l > sizeof(buf) || i >= ENV_VARS_MAX) {
			errno = E2BIG;
			return -1;
		}
		memcpy(buf + len, envp[i], l);
		len += l;
	}
	iov.iov_base = buf;
	iov.iov_len = len;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl.b;
	m.msg_controllen = sizeof(ctl.b);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	/* libFuzzer's -timeout alarm interrupts calls every second: a packet
	 * socket sends whole or not at all, so both calls simply go again */
	do
		n = sendmsg(Z.sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)len)
		do
			n = recv(Z.sock, &answer, sizeof(answer), 0);
		while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(answer)) {
		errno = n < 0 ? errno : EPIPE;
		return -1;
	}
	if (answer <= 0) {
		errno = answer < 0 ? -answer : EIO;
		return -1;
	}
	return (pid_t)answer;
}

void fz_zygote_stop(void)
{
	if (Z.sock < 0)
		return;
	close(Z.sock); /* the zygote reads EOF and exits */
	Z.sock = -1;
	(void)waitpid(Z.pid, NULL, 0);
	Z.pid = -1;
}

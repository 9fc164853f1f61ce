/* sbx-cell: PID 1 of one sandbox (CONTAINMENT.md). Started by sbx-mock
 * (src/guest/cell.c) in fresh user, mount, PID, network, IPC and UTS namespaces
 * with fd 3 = its control socket, fds 4/5 = the sandbox's workspace and
 * tmp; argv: <sandbox id> <self-signal port> [pooled] (pooled: a warm
 * pool's cell, built under a placeholder name and handed its sandbox by
 * BIND before it serves; cell_proto.h). `sbx-cell --seccomp-bpf` only
 * writes the cell's seccomp program to stdout (the mock's copy, CELL_BPF_FD).
 *
 * Builds the sandbox's root, brings lo up, opens the self-signal listener
 * and answers READY (with that socket) or FAIL (with what failed), then
 * serves EXEC and SIGNAL requests and reaps until fd 3 reaches EOF. It
 * must never outlive the mock: at that EOF it exits, and as PID 1 of its
 * namespace takes every guest process with it. */
#define _GNU_SOURCE
#include "cell.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/seccomp.h>

static int lo_up(char *err, size_t cap)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;

	if (fd < 0) {
		snprintf(err, cap, "socket: %s", strerror(errno));
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	if (rc != 0)
		snprintf(err, cap, "bring lo up: %s", strerror(errno));
	close(fd);
	return rc;
}

/* 127.0.0.1:port listening inside the sandbox's network namespace; the
 * mock accepts on it (a guest reaches only its own sandbox's). */
static int self_listener(unsigned port, char *err, size_t cap)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 64) != 0) {
		snprintf(err, cap, "self-signal listener on 127.0.0.1:%u: %s", port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The first message: READY with the listener, or FAIL with msg. */
static void hello(int kind, const char *msg, int fd)
{
	struct cell_hello h = {.kind = (uint32_t)kind};

	snprintf(h.msg, sizeof(h.msg), "%s", msg);
	if (cell_send_fd(CELL_CTL_FD, &h, sizeof(h), fd, 0) != 0)
		_exit(1);
}

/* PID 1 under its own rules, last thing before READY: not dumpable (no
 * /proc/1/mem, no ptrace of it even for a guest that kept a capability),
 * no_new_privs, and the seccomp filter, which every process forked from
 * here on inherits. Nothing PID 1 does after READY (fork, kill, wait,
 * socket reads) is on the filter's list. */
static int lock_down(const struct sock_fprog *prog, char *err, size_t cap)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog) != 0) {
		snprintf(err, cap, "lock down PID 1 (dumpable, no_new_privs, seccomp): %s",
			 strerror(errno));
		return -1;
	}
	return 0;
}

/* Everything before READY. The listener's fd, or -1 with err set. A
 * pooled cell (issue 24) stops short of the filter: it loads it at BIND,
 * after the steps only PID 1 may take (its disk's size needs fspick), and
 * no request but BIND is served before (bind_pooled). */
static int setup(const char *id, unsigned port, bool pooled, struct sock_fprog *prog, char *err,
		 size_t cap)
{
	int lfd;

	if (fcntl(CELL_CTL_FD, F_SETFD, FD_CLOEXEC) != 0) {
		snprintf(err, cap, "fd 3: %s", strerror(errno));
		return -1;
	}
	setsid(); /* out of the mock's session: its terminal's signals are not ours */
	/* the name PID 1 of a guest PID namespace has had since before cells
	 * (guests and tests look for it in /proc/1/comm) */
	prctl(PR_SET_NAME, "sbx-guest-init");
	if (cell_seccomp_build(prog, err, cap) != 0 || cell_root_build(id, err, cap) != 0)
		return -1;
	close(CELL_WS_FD);
	close(CELL_TMP_FD);
	if (lo_up(err, cap) != 0)
		return -1;
	lfd = self_listener(port, err, cap);
	if (pooled && lfd >= 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
		snprintf(err, cap, "PID 1 not dumpable: %s", strerror(errno));
		close(lfd);
		return -1;
	}
	if (!pooled && lfd >= 0 && lock_down(prog, err, cap) != 0) {
		close(lfd);
		return -1;
	}
	return lfd;
}

/* A pooled cell's hand-out: the first request must be BIND (cell_proto.h);
 * the cell becomes that sandbox, locks PID 1 down and answers. 0, or -1:
 * the cell exits (the mock let it go, or the BIND failed). */
static int bind_pooled(const char *placeholder, const struct sock_fprog *prog)
{
	struct cell_bind_req q;
	char err[CELL_ERR_MAX] = "";
	int rc;

	if (cell_bind_recv(CELL_CTL_FD, &q) != 0)
		return -1;
	rc = cell_bind_apply(&q, placeholder, err, sizeof(err));
	if (rc == 0)
		rc = lock_down(prog, err, sizeof(err));
	cell_bind_answer(CELL_CTL_FD, rc == 0 ? 0 : (errno != 0 ? errno : EIO), err);
	return rc;
}

/* Serves until the mock closes fd 3. */
static int serve(void)
{
	sigset_t chld;
	int sfd;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return 1;
	for (;;) {
		struct pollfd pf[2] = {{.fd = CELL_CTL_FD, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		struct signalfd_siginfo si;

		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			return 1;
		if (pf[1].revents != 0) {
			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
			cell_reap();
		}
		if (pf[0].revents != 0 && cell_serve_request(CELL_CTL_FD) != 0)
			return 0; /* exiting kills every process of the namespace */
	}
}

int main(int argc, char **argv)
{
	char err[CELL_ERR_MAX] = "";
	struct sock_fprog prog = {0};
	char *end = NULL;
	unsigned long port;
	int lfd;

	bool pooled = argc == 4 && strcmp(argv[3], "pooled") == 0;

	if (argc == 2 && strcmp(argv[1], "--seccomp-bpf") == 0)
		return cell_seccomp_export(1) == 0 ? 0 : 1;

	if (argc != 3 && !pooled) {
		fprintf(stderr, "usage: sbx-cell SANDBOX-ID SELF-PORT [pooled] (started by sbx-mock only)\n");
		return 2;
	}
	port = strtoul(argv[2], &end, 10);
	if (end == argv[2] || *end != '\0' || port == 0 || port > 65535) {
		hello(CELL_FAIL, "sbx-cell: bad self-signal port", -1);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN); /* a status pipe whose reader left */
	lfd = setup(argv[1], (unsigned)port, pooled, &prog, err, sizeof(err));
	if (lfd < 0) {
		hello(CELL_FAIL, err, -1);
		return 1;
	}
	hello(CELL_READY, "", lfd);
	close(lfd);
	if (pooled && bind_pooled(argv[1], &prog) != 0)
		return 1;
	free(prog.filter); /* the kernel has its own copy */
	return serve();
}

/* guest_pidns: the PID namespace every ns-mode guest of a mock runs in,
 * and its init (PID 1), a fork of the mock that reaps orphaned guest
 * processes; see guest.h.
 *
 * The init must never outlive the mock: it exits when a pipe only the mock
 * holds closes, and the kernel then kills every guest. In the init only
 * system calls run (it is a fork of a multi-threaded process). */
#define _GNU_SOURCE
#include "guest_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void close_above(int keep_a, int keep_b)
{
	int lo = keep_a < keep_b ? keep_a : keep_b, hi = keep_a < keep_b ? keep_b : keep_a;

	syscall(SYS_close_range, 3U, (unsigned)lo - 1, 0U);
	syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0U);
	syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0U);
}

/* PID 1 of the guest namespace, in a fork of the mock: system calls only.
 * Reports on ready_w whether a proc of this namespace can be mounted (each
 * exec mounts one), then reaps orphans until life_r reports the mock gone. */
static _Noreturn void pidns_init_main(int life_r, int ready_w)
{
	sigset_t chld;
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC), sfd, code = 0;

	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
	}
	close_above(life_r, ready_w);
	prctl(PR_SET_NAME, "sbx-guest-init");
	guest_child_reset_signals(); /* no mock handler runs here, whoever signals */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_SETMASK, &chld, NULL);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC);
	if (sfd < 0 || unshare(CLONE_NEWNS) != 0 ||
	    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		code = errno != 0 ? errno : EINVAL;
	if (write(ready_w, &code, sizeof(code)) != (ssize_t)sizeof(code) || code != 0)
		_exit(1);
	close(ready_w);
	for (;;) {
		struct pollfd pf[2] = {{.fd = life_r, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		struct signalfd_siginfo si;

		while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
			;
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			_exit(2);
		if (pf[0].revents != 0)
			_exit(0); /* the mock is gone: the kernel kills the guests */
		if (pf[1].revents != 0 && read(sfd, &si, sizeof(si)) < 0 && errno != EAGAIN)
			_exit(3);
	}
}

mock_pidns *mock_pidns_start(sbx_err *err)
{
	mock_pidns *ns = calloc(1, sizeof(*ns));
	int life[2] = {-1, -1}, ready[2] = {-1, -1}, code = 0;
	char path[64];
	ssize_t r;

	if (ns == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	ns->init = -1;
	ns->ns_fd = -1;
	ns->life_w = -1;
	ns->self_fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	if (ns->self_fd < 0 || pipe2(life, O_CLOEXEC) != 0 || pipe2(ready, O_CLOEXEC) != 0) {
		sbx_err_set(err, "guest PID namespace: %s", strerror(errno));
		goto out_fail;
	}
	/* the next child of this thread is PID 1 of a new namespace */
	if (unshare(CLONE_NEWPID) != 0) {
		sbx_err_set(err, "guest PID namespace: unshare: %s", strerror(errno));
		goto out_fail;
	}
	ns->init = fork();
	if (ns->init == 0)
		pidns_init_main(life[0], ready[1]);
	code = errno;
	if (setns(ns->self_fd, CLONE_NEWPID) != 0 || ns->init < 0) {
		sbx_err_set(err, "guest PID namespace: %s", strerror(ns->init < 0 ? code : errno));
		goto out_fail;
	}
	close(life[0]);
	close(ready[1]);
	life[0] = ready[1] = -1;
	ns->life_w = life[1];
	life[1] = -1;
	do {
		r = read(ready[0], &code, sizeof(code));
	} while (r < 0 && errno == EINTR);
	if (r != (ssize_t)sizeof(code) || code != 0) {
		sbx_err_set(err, "guest PID namespace: cannot mount its proc: %s",
			    strerror(r == (ssize_t)sizeof(code) ? code : EIO));
		goto out_fail;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)ns->init);
	ns->ns_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ns->ns_fd < 0) {
		sbx_err_set(err, "guest PID namespace: %s: %s", path, strerror(errno));
		goto out_fail;
	}
	close(ready[0]);
	return ns;

out_fail:
	for (int i = 0; i < 2; i++) {
		if (life[i] >= 0)
			close(life[i]);
		if (ready[i] >= 0)
			close(ready[i]);
	}
	mock_pidns_stop(ns);
	return NULL;
}

/* Kills the init, so the kernel kills every guest. Call once the mock has
 * reaped the guests it started itself: the init's exit waits for them. */
void mock_pidns_stop(mock_pidns *ns)
{
	if (ns == NULL)
		return;
	if (ns->life_w >= 0)
		close(ns->life_w);
	if (ns->init > 0) {
		kill(ns->init, SIGKILL);
		/* bounded: a guest the mock started and never reaped keeps the
		 * init from being reaped (it is then reaped at the mock's exit) */
		for (int i = 0; i < 500 && waitpid(ns->init, NULL, WNOHANG) == 0; i++)
			usleep(10000);
	}
	if (ns->ns_fd >= 0)
		close(ns->ns_fd);
	if (ns->self_fd >= 0)
		close(ns->self_fd);
	free(ns);
}

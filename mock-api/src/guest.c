/* guest: directory trees and processes of mock sandboxes; see guest.h.
 * Must never follow a symlink in the files API and never leave a process
 * behind once mock_guest_free returns. */
#define _GNU_SOURCE
#include "guest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GUEST_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define CHILD_STACK_SIZE (64 * 1024)
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#if defined(__SANITIZE_ADDRESS__)
#define SBX_GUEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SBX_GUEST_ASAN 1
#endif
#endif
#ifdef SBX_GUEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* The guest PID namespace (ns mode): one per mock, held open by an init
 * process that reaps orphaned guest processes. Guests see and signal only
 * each other; when the init dies (mock stop, or the mock itself dies: the
 * init watches a pipe only the mock holds) the kernel kills every guest. */
struct mock_pidns {
	pid_t init;
	int ns_fd;   /* /proc/<init>/ns/pid */
	int self_fd; /* the mock's own PID namespace, to switch back */
	int life_w;  /* the init exits when this end closes */
};

struct mock_guest {
	pthread_mutex_t lock;
	mock_guest_mode mode;
	const mock_pidns *pidns; /* ns mode: the mock's guest PID namespace, or NULL */
	char fs[PATH_MAX];     /* <work>/<id> */
	char ws[PATH_MAX];     /* fs/workspace */
	char tmp[PATH_MAX];    /* fs/tmp */
	pid_t *pgids;
	size_t npg, cappg;
	bool dead;
};

const char *mock_guest_mode_name(mock_guest_mode mode)
{
	return mode == GUEST_NS ? "ns" : "plain";
}

/* Tries a mount namespace with a bind mount in a throwaway child. The
 * child reports through a pipe, not its exit status: under valgrind a
 * forked child's exit runs a leak check whose --error-exitcode replaces the
 * status. */
static bool ns_works(void)
{
	int fds[2];
	char step = 0;
	pid_t pid;
	ssize_t r;

	if (mkdir("/workspace", 0755) != 0 && errno != EEXIST)
		return false;
	if (pipe2(fds, O_CLOEXEC) != 0)
		return false;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) == 0 && mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0 &&
		    mount("/tmp", "/workspace", "none", MS_BIND, NULL) == 0)
			step = 1;
		r = write(fds[1], &step, 1);
		_exit(r == 1 ? 0 : 1);
	}
	close(fds[1]);
	do {
		r = read(fds[0], &step, 1);
	} while (r < 0 && errno == EINTR);
	close(fds[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return r == 1 && step == 1;
}

int mock_guest_mode_detect(const char *requested, mock_guest_mode *out, sbx_err *err)
{
	if (requested == NULL || strcmp(requested, "auto") == 0) {
		*out = geteuid() == 0 && ns_works() ? GUEST_NS : GUEST_PLAIN;
		return 0;
	}
	if (strcmp(requested, "plain") == 0) {
		*out = GUEST_PLAIN;
		return 0;
	}
	if (strcmp(requested, "ns") == 0) {
		if (!ns_works()) {
			sbx_err_set(err, "guest mode ns: mount namespaces are not available here "
				    "(need root or CAP_SYS_ADMIN); use --guest-mode plain");
			return -1;
		}
		*out = GUEST_NS;
		return 0;
	}
	sbx_err_set(err, "guest mode \"%s\": expected auto, plain or ns", requested);
	return -1;
}

static int mkdir_p(const char *path, sbx_err *err)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf)) {
		sbx_err_set(err, "path too long: %s", path);
		return -1;
	}
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
			sbx_err_set(err, "mkdir %s: %s", buf, strerror(errno));
			return -1;
		}
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
		sbx_err_set(err, "mkdir %s: %s", buf, strerror(errno));
		return -1;
	}
	return 0;
}

/* fs, fs/workspace, fs/tmp: three mkdir calls when the work dir exists
 * (the usual case), mkdir_p of every prefix otherwise. */
static int make_tree(const mock_guest *g, sbx_err *err)
{
	const char *const dirs[] = {g->fs, g->ws, g->tmp};

	for (size_t i = 0; i < 3; i++) {
		if (mkdir(dirs[i], 0755) == 0 || errno == EEXIST)
			continue;
		if (errno != ENOENT) {
			sbx_err_set(err, "mkdir %s: %s", dirs[i], strerror(errno));
			return -1;
		}
		return mkdir_p(g->ws, err) != 0 || mkdir_p(g->tmp, err) != 0 ? -1 : 0;
	}
	return 0;
}

const char *mock_guest_fs_root(const mock_guest *g)
{
	return g->fs;
}

mock_guest *mock_guest_new(const char *work_dir, const char *id, mock_guest_mode mode,
			   const mock_pidns *pidns, sbx_err *err)
{
	mock_guest *g = calloc(1, sizeof(*g));

	if (g == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&g->lock, NULL);
	g->mode = mode;
	g->pidns = mode == GUEST_NS ? pidns : NULL;
	if ((size_t)snprintf(g->fs, sizeof(g->fs), "%s/%s", work_dir, id) >= sizeof(g->fs) ||
	    (size_t)snprintf(g->ws, sizeof(g->ws), "%s/workspace", g->fs) >= sizeof(g->ws) ||
	    (size_t)snprintf(g->tmp, sizeof(g->tmp), "%s/tmp", g->fs) >= sizeof(g->tmp)) {
		sbx_err_set(err, "work dir path too long");
		goto out_free;
	}
	if (make_tree(g, err) != 0)
		goto out_free;
	chmod(g->tmp, 01777);
	return g;

out_free:
	pthread_mutex_destroy(&g->lock);
	free(g);
	return NULL;
}

static int run_cmd(char *const argv[], sbx_err *err)
{
	pid_t pid = fork();
	int st = 0;

	if (pid < 0) {
		sbx_err_set(err, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			sbx_err_set(err, "waitpid: %s", strerror(errno));
			return -1;
		}
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		sbx_err_set(err, "%s failed (status %d)", argv[0], st);
		return -1;
	}
	return 0;
}

int mock_guest_copy(mock_guest *dst, const mock_guest *src, sbx_err *err)
{
	char from[PATH_MAX + 4];
	char *argv[] = {"/bin/cp", "-a", from, dst->fs, NULL};

	snprintf(from, sizeof(from), "%s/.", src->fs);
	return run_cmd(argv, err);
}

static void prune_locked(mock_guest *g)
{
	size_t j = 0;

	for (size_t i = 0; i < g->npg; i++) {
		if (kill(-g->pgids[i], 0) == 0 || errno == EPERM)
			g->pgids[j++] = g->pgids[i];
	}
	g->npg = j;
}

size_t mock_guest_pgids(mock_guest *g, pid_t *out, size_t cap)
{
	size_t n;

	pthread_mutex_lock(&g->lock);
	prune_locked(g);
	n = g->npg < cap ? g->npg : cap;
	if (n > 0)
		memcpy(out, g->pgids, n * sizeof(*out));
	pthread_mutex_unlock(&g->lock);
	return n;
}

void mock_guest_signal(mock_guest *g, int sig)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < g->npg; i++)
		kill(-g->pgids[i], sig);
	pthread_mutex_unlock(&g->lock);
}

void mock_guest_kill(mock_guest *g)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	g->dead = true;
	for (size_t i = 0; i < g->npg; i++) {
		kill(-g->pgids[i], SIGKILL);
		kill(-g->pgids[i], SIGCONT);
	}
	pthread_mutex_unlock(&g->lock);
}

/* Removes a tree without following symlinks. */
static void remove_tree_at(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *de;

	if (fd < 0) {
		unlinkat(parent, name, 0);
		return;
	}
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (de->d_type == DT_DIR)
			remove_tree_at(dirfd(d), de->d_name);
		else if (unlinkat(dirfd(d), de->d_name, 0) != 0 && errno == EISDIR)
			remove_tree_at(dirfd(d), de->d_name);
	}
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);
}

void mock_guest_free(mock_guest *g, bool remove_tree)
{
	if (g == NULL)
		return;
	mock_guest_kill(g);
	if (remove_tree)
		remove_tree_at(AT_FDCWD, g->fs);
	free(g->pgids);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* ---- exec ---- */

static const char *map_plain(const mock_guest *g, const char *arg, char *buf, size_t cap)
{
	static const struct {
		const char *prefix;
		size_t len;
	} maps[] = {{"/workspace", 10}, {"/tmp", 4}};

	for (size_t i = 0; i < 2; i++) {
		if (strncmp(arg, maps[i].prefix, maps[i].len) == 0 &&
		    (arg[maps[i].len] == '\0' || arg[maps[i].len] == '/')) {
			const char *base = i == 0 ? g->ws : g->tmp;

			if ((size_t)snprintf(buf, cap, "%s%s", base, arg + maps[i].len) < cap)
				return buf;
		}
	}
	return arg;
}

/* Everything the child needs, prepared before the clone so the child only
 * makes system calls. */
typedef struct child_plan {
	char **argv;
	char **envp;
	char **candidates;   /* full paths to try with execve */
	size_t ncand;
	const char *cwd;
	bool ns;
	bool isolate_net;
	const mock_pidns *pidns;
	const char *ws, *tmp;
	int in_r, out_w, err_w, status_w;
} child_plan;

static void plan_free(child_plan *cp)
{
	if (cp->argv != NULL) {
		for (size_t i = 0; cp->argv[i] != NULL; i++)
			free(cp->argv[i]);
	}
	if (cp->envp != NULL) {
		for (size_t i = 0; cp->envp[i] != NULL; i++)
			free(cp->envp[i]);
	}
	for (size_t i = 0; i < cp->ncand; i++)
		free(cp->candidates[i]);
	free(cp->argv);
	free(cp->envp);
	free(cp->candidates);
}

static int env_add(char **envp, size_t *n, const char *kv)
{
	size_t klen = strcspn(kv, "=");

	for (size_t i = 0; i < *n; i++) {
		if (strncmp(envp[i], kv, klen) == 0 && envp[i][klen] == '=') {
			char *dup = strdup(kv);

			if (dup == NULL)
				return -1;
			free(envp[i]);
			envp[i] = dup;
			return 0;
		}
	}
	envp[*n] = strdup(kv);
	if (envp[*n] == NULL)
		return -1;
	(*n)++;
	return 0;
}

static int plan_build(mock_guest *g, const mock_exec_spec *s, child_plan *cp, sbx_err *err)
{
	char buf[PATH_MAX], kv[PATH_MAX + 16];
	bool plain = g->mode == GUEST_PLAIN;
	size_t n = 0;
	const char *cmd;

	cp->argv = calloc(s->nargs + 2, sizeof(char *));
	cp->envp = calloc(s->nenv + 8, sizeof(char *));
	cp->candidates = calloc(16, sizeof(char *));
	if (cp->argv == NULL || cp->envp == NULL || cp->candidates == NULL)
		goto out_oom;
	cmd = plain ? map_plain(g, s->cmd, buf, sizeof(buf)) : s->cmd;
	cp->argv[0] = strdup(s->cmd);
	if (cp->argv[0] == NULL)
		goto out_oom;
	for (size_t i = 0; i < s->nargs; i++) {
		char abuf[PATH_MAX];

		cp->argv[i + 1] = strdup(plain ? map_plain(g, s->args[i], abuf, sizeof(abuf)) : s->args[i]);
		if (cp->argv[i + 1] == NULL)
			goto out_oom;
	}
	if (env_add(cp->envp, &n, "PATH=" GUEST_PATH) != 0 || env_add(cp->envp, &n, "LANG=C.UTF-8") != 0)
		goto out_oom;
	snprintf(kv, sizeof(kv), "HOME=%s", plain ? g->ws : "/workspace");
	if (env_add(cp->envp, &n, kv) != 0)
		goto out_oom;
	snprintf(kv, sizeof(kv), "TMPDIR=%s", plain ? g->tmp : "/tmp");
	if (env_add(cp->envp, &n, kv) != 0)
		goto out_oom;
	for (size_t i = 0; i < s->nenv; i++) {
		if (env_add(cp->envp, &n, s->env[i]) != 0)
			goto out_oom;
	}
	if (strchr(cmd, '/') != NULL) {
		cp->candidates[cp->ncand] = strdup(cmd);
		if (cp->candidates[cp->ncand++] == NULL)
			goto out_oom;
	} else {
		const char *p = GUEST_PATH;

		while (*p != '\0' && cp->ncand < 16) {
			size_t len = strcspn(p, ":");

			snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, p, cmd);
			cp->candidates[cp->ncand] = strdup(buf);
			if (cp->candidates[cp->ncand++] == NULL)
				goto out_oom;
			p += len;
			if (*p == ':')
				p++;
		}
	}
	cp->cwd = plain ? g->ws : "/workspace";
	cp->ns = !plain;
	cp->isolate_net = !plain && s->isolate_net;
	cp->pidns = g->pidns;
	cp->ws = g->ws;
	cp->tmp = g->tmp;
	return 0;

out_oom:
	sbx_err_set(err, "out of memory");
	return -1;
}

static void lo_up(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
}

static void child_fail(int status_w, int code)
{
	ssize_t w = write(status_w, &code, sizeof(code));

	(void)w;
	_exit(127);
}

/* Resets every caught signal to its default: the child shares the parent's
 * memory until execve, so a parent handler must never run in it. */
static void child_reset_signals(void)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (sigaction(sig, NULL, &old) != 0)
			continue;
		if (old.sa_handler != SIG_DFL && (old.sa_handler != SIG_IGN || sig == SIGPIPE))
			sigaction(sig, &sa, NULL);
	}
}

/* Runs in the child, on its own stack and in the parent's memory
 * (CLONE_VM|CLONE_VFORK): raw system calls only, no malloc, no locks. The
 * parent sleeps until execve succeeds or the child exits. */
static int child_run(void *arg)
{
	const child_plan *cp = arg;
	sigset_t none;
	int last_errno = ENOENT;

	setpgid(0, 0);
	child_reset_signals();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(cp->in_r, 0) < 0 || dup2(cp->out_w, 1) < 0 || dup2(cp->err_w, 2) < 0)
		child_fail(cp->status_w, errno);
	/* the guest gets stdin/out/err only: descriptors the embedding program
	 * opened without O_CLOEXEC (a client's socket...) close at execve, or a
	 * hung-up client would stay connected through the guest (best effort:
	 * Linux >= 5.11) */
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
	if (cp->ns) {
		if (unshare(CLONE_NEWNS | (cp->isolate_net ? CLONE_NEWNET : 0)) != 0)
			child_fail(cp->status_w, errno);
		if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount(cp->ws, "/workspace", "none", MS_BIND, NULL) != 0 ||
		    mount(cp->tmp, "/tmp", "none", MS_BIND, NULL) != 0)
			child_fail(cp->status_w, errno);
		/* a proc of the guest PID namespace (this child's): ps and
		 * /proc show the guests only */
		if (cp->pidns != NULL &&
		    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
			child_fail(cp->status_w, errno);
		if (cp->isolate_net)
			lo_up();
	}
	if (chdir(cp->cwd) != 0)
		child_fail(cp->status_w, errno);
	for (size_t i = 0; i < cp->ncand; i++) {
		execve(cp->candidates[i], cp->argv, cp->envp);
		if (errno != ENOENT && errno != ENOTDIR)
			last_errno = errno;
	}
	child_fail(cp->status_w, last_errno);
	return 127;
}

/* Starts child_run in a vfork-style child: no copy of the server's page
 * tables (fork of this big multi-threaded process cost ~10 ms, mostly
 * copy-on-write faults and TLB shootdowns), the calling thread waits until
 * the child has called execve or exited. The child's stack is a block of
 * the caller's own frame, which stays untouched while the caller sleeps:
 * an mmap + munmap per exec cost a TLB shootdown on every CPU the server
 * runs on. All signals stay blocked in the caller meanwhile so no handler
 * runs on the child's stack. */
static pid_t spawn_child(child_plan *cp, int *err_out)
{
	_Alignas(64) char stack[CHILD_STACK_SIZE];
	sigset_t all, old;
	pid_t pid;

	/* the child is born in the guest PID namespace: setns sets where this
	 * thread's next children go, and is undone at once (a thread whose
	 * children would land in another namespace cannot create threads) */
	if (cp->pidns != NULL && setns(cp->pidns->ns_fd, CLONE_NEWPID) != 0) {
		*err_out = errno;
		return -1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = clone(child_run, stack + CHILD_STACK_SIZE, CLONE_VM | CLONE_VFORK | SIGCHLD, cp);
	*err_out = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (cp->pidns != NULL && setns(cp->pidns->self_fd, CLONE_NEWPID) != 0 && pid >= 0)
		*err_out = errno; /* cannot happen: back to the namespace we are in */
#ifdef SBX_GUEST_ASAN
	/* the child's frames left redzones in the shared shadow memory */
	__asan_unpoison_memory_region(stack, CHILD_STACK_SIZE);
#endif
	return pid;
}

/* ---- the guest PID namespace ---- */

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
	child_reset_signals(); /* no mock handler runs here, whoever signals */
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

static int guest_add_pgid(mock_guest *g, pid_t pgid)
{
	int rc = 0;

	pthread_mutex_lock(&g->lock);
	prune_locked(g);
	if (g->npg == g->cappg) {
		size_t cap = g->cappg == 0 ? 8 : g->cappg * 2;
		pid_t *np = realloc(g->pgids, cap * sizeof(*np));

		if (np == NULL) {
			rc = -1;
			goto out_unlock;
		}
		g->pgids = np;
		g->cappg = cap;
	}
	g->pgids[g->npg++] = pgid;
	if (g->dead)
		kill(-pgid, SIGKILL);
out_unlock:
	pthread_mutex_unlock(&g->lock);
	return rc;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int mock_proc_spawn(mock_guest *g, const mock_exec_spec *spec, mock_proc *p, sbx_err *err)
{
	child_plan cp;
	int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1}, st[2] = {-1, -1};
	int code = 0;
	ssize_t r;
	pid_t pid;

	memset(&cp, 0, sizeof(cp));
	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->out_fd = p->err_fd = p->in_fd = -1;
	p->guest = g;
	if (plan_build(g, spec, &cp, err) != 0)
		goto out_plan;
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(er, O_CLOEXEC) != 0 ||
	    pipe2(st, O_CLOEXEC) != 0) {
		sbx_err_set(err, "pipe: %s", strerror(errno));
		goto out_pipes;
	}
	cp.in_r = in[0];
	cp.out_w = out[1];
	cp.err_w = er[1];
	cp.status_w = st[1];
	pthread_mutex_lock(&g->lock);
	if (g->dead) {
		pthread_mutex_unlock(&g->lock);
		sbx_err_set(err, "sandbox is being destroyed");
		goto out_pipes;
	}
	pthread_mutex_unlock(&g->lock);
	pid = spawn_child(&cp, &code);
	if (pid < 0) {
		sbx_err_set(err, "clone: %s", strerror(code));
		goto out_pipes;
	}
	code = 0;
	setpgid(pid, pid);
	guest_add_pgid(g, pid);
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&er[1]);
	close_fd(&st[1]);
	do {
		r = read(st[0], &code, sizeof(code));
	} while (r < 0 && errno == EINTR);
	close_fd(&st[0]);
	p->pid = pid;
	p->in_fd = in[1];
	p->out_fd = out[0];
	p->err_fd = er[0];
	fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
	fcntl(p->in_fd, F_SETFL, O_NONBLOCK);
	p->stdin_data = spec->stdin_data;
	p->stdin_len = spec->stdin_data != NULL ? spec->stdin_len : 0;
	if (p->stdin_len == 0)
		close_fd(&p->in_fd);
	if (r == (ssize_t)sizeof(code)) {
		/* exec failed: the child wrote errno and exited */
		mock_proc_finish(p);
		if (code == ENOENT)
			sbx_err_set(err, "exec: \"%s\": executable file not found in $PATH", spec->cmd);
		else
			sbx_err_set(err, "exec: \"%s\": %s", spec->cmd, strerror(code));
		plan_free(&cp);
		return -1;
	}
	plan_free(&cp);
	return 0;

out_pipes:
	close_fd(&in[0]);
	close_fd(&in[1]);
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&er[0]);
	close_fd(&er[1]);
	close_fd(&st[0]);
	close_fd(&st[1]);
out_plan:
	plan_free(&cp);
	return -1;
}

static void feed_stdin(mock_proc *p)
{
	while (p->in_fd >= 0 && p->stdin_off < p->stdin_len) {
		ssize_t w = write(p->in_fd, p->stdin_data + p->stdin_off, p->stdin_len - p->stdin_off);

		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			break; /* EPIPE: the command does not read stdin */
		}
		p->stdin_off += (size_t)w;
	}
	close_fd(&p->in_fd);
}

static bool check_exit(mock_proc *p)
{
	if (!p->exited && p->pid > 0) {
		pid_t r = waitpid(p->pid, &p->wstatus, WNOHANG);

		if (r == p->pid)
			p->exited = true;
	}
	return p->exited;
}

static ssize_t read_some(int *fd, char *buf, size_t cap)
{
	ssize_t r;

	if (*fd < 0)
		return 0;
	r = read(*fd, buf, cap);
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
		close_fd(fd);
		return 0;
	}
	return r < 0 ? 0 : r;
}

ssize_t mock_proc_read(mock_proc *p, int timeout_ms, char *buf, size_t cap, int *which)
{
	struct pollfd pfd[3];
	int n = 0, slice;
	ssize_t r;

	for (;;) {
		r = read_some(&p->out_fd, buf, cap);
		if (r > 0) {
			*which = 1;
			return r;
		}
		r = read_some(&p->err_fd, buf, cap);
		if (r > 0) {
			*which = 2;
			return r;
		}
		if (p->out_fd < 0 && p->err_fd < 0) {
			if (!p->exited && p->pid > 0 && waitpid(p->pid, &p->wstatus, 0) == p->pid)
				p->exited = true;
			return -1;
		}
		/* The command exited: drain what it wrote before exiting (the
		 * reads above may have raced with its last writes), then stop,
		 * since a background child may keep the pipes open forever. */
		if (check_exit(p)) {
			r = read_some(&p->out_fd, buf, cap);
			if (r > 0) {
				*which = 1;
				return r;
			}
			r = read_some(&p->err_fd, buf, cap);
			if (r > 0) {
				*which = 2;
				return r;
			}
			return -1;
		}
		if (timeout_ms <= 0)
			return 0;
		n = 0;
		if (p->out_fd >= 0)
			pfd[n++] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
		if (p->err_fd >= 0)
			pfd[n++] = (struct pollfd){.fd = p->err_fd, .events = POLLIN};
		if (p->in_fd >= 0)
			pfd[n++] = (struct pollfd){.fd = p->in_fd, .events = POLLOUT};
		slice = timeout_ms < 50 ? timeout_ms : 50; /* notice exit of a child with open pipes */
		if (poll(pfd, (nfds_t)n, slice) == 0)
			timeout_ms -= slice;
		feed_stdin(p);
	}
}

void mock_proc_kill(mock_proc *p)
{
	if (p->pid > 0 && !p->exited) {
		kill(-p->pid, SIGKILL);
		kill(-p->pid, SIGCONT);
	}
}

int mock_proc_finish(mock_proc *p)
{
	int code = -1;

	close_fd(&p->in_fd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	if (p->pid > 0 && !p->exited) {
		while (waitpid(p->pid, &p->wstatus, 0) < 0 && errno == EINTR)
			;
		p->exited = true;
	}
	if (WIFEXITED(p->wstatus))
		code = WEXITSTATUS(p->wstatus);
	else if (WIFSIGNALED(p->wstatus))
		code = 128 + WTERMSIG(p->wstatus);
	p->pid = -1;
	return code;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mock_guest_exec(mock_guest *g, const mock_exec_spec *spec, int64_t timeout_ms, size_t cap,
		    bool (*abort_fn)(void *arg), void *arg, mock_exec_result *r, sbx_err *err)
{
	mock_proc p;
	char buf[16384];
	int64_t deadline = timeout_ms > 0 ? mono_ms() + timeout_ms : INT64_MAX;

	sbx_strbuf_init(&r->out);
	sbx_strbuf_init(&r->err);
	r->exit_code = -1;
	r->timed_out = false;
	r->aborted = false;
	if (mock_proc_spawn(g, spec, &p, err) != 0)
		return -1;
	for (;;) {
		int which = 0;
		ssize_t n = mock_proc_read(&p, 100, buf, sizeof(buf), &which);

		if (n < 0)
			break;
		if (n > 0) {
			sbx_strbuf *sb = which == 1 ? &r->out : &r->err;

			if (sb->len < cap)
				sbx_strbuf_append(sb, buf, (size_t)n < cap - sb->len ? (size_t)n : cap - sb->len);
		}
		if (mono_ms() >= deadline) {
			r->timed_out = true;
			mock_proc_kill(&p);
			break;
		}
		if (abort_fn != NULL && abort_fn(arg)) {
			r->aborted = true;
			mock_proc_kill(&p);
			break;
		}
	}
	r->exit_code = mock_proc_finish(&p);
	return 0;
}

/* ---- files ---- */

int mock_guest_open(mock_guest *g, const char *path, bool write, int *status, sbx_err *err)
{
	char comp[NAME_MAX + 1];
	const char *p = path, *last = NULL;
	int dirfd, fd = -1;
	struct stat stt;

	*status = 400;
	if (path == NULL || path[0] != '/') {
		sbx_err_set(err, "path must be absolute (start with /)");
		return -1;
	}
	if (strlen(path) >= PATH_MAX) {
		sbx_err_set(err, "path is too long");
		return -1;
	}
	dirfd = open(g->fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		*status = 500;
		sbx_err_set(err, "sandbox tree is gone: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		size_t len;

		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		len = strcspn(p, "/");
		if (len > NAME_MAX) {
			sbx_err_set(err, "path component too long");
			goto out_close;
		}
		memcpy(comp, p, len);
		comp[len] = '\0';
		p += len;
		while (*p == '/')
			p++;
		if (strcmp(comp, "..") == 0) {
			sbx_err_set(err, "path must not contain \"..\"");
			goto out_close;
		}
		if (strcmp(comp, ".") == 0)
			continue;
		if (*p == '\0') {
			last = comp;
			break;
		}
		if (write && mkdirat(dirfd, comp, 0755) != 0 && errno != EEXIST) {
			*status = 500;
			sbx_err_set(err, "mkdir %s: %s", comp, strerror(errno));
			goto out_close;
		}
		fd = openat(dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT) {
				*status = 404;
				sbx_err_set(err, "no such file: %s", path);
			} else {
				sbx_err_set(err, "%s: a path component is a symlink or not a directory", path);
			}
			goto out_close;
		}
		close(dirfd);
		dirfd = fd;
		fd = -1;
	}
	if (last == NULL) {
		sbx_err_set(err, "path names a directory, not a file");
		goto out_close;
	}
	fd = openat(dirfd, last,
		    (write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		    0644);
	if (fd < 0) {
		if (errno == ENOENT) {
			*status = 404;
			sbx_err_set(err, "no such file: %s", path);
		} else if (errno == ELOOP) {
			sbx_err_set(err, "%s is a symlink; the files API never follows symlinks", path);
		} else if (errno == EISDIR) {
			*status = 409;
			sbx_err_set(err, "%s is a directory", path);
		} else {
			*status = 500;
			sbx_err_set(err, "open %s: %s", path, strerror(errno));
		}
		goto out_close;
	}
	if (fstat(fd, &stt) != 0 || !S_ISREG(stt.st_mode)) {
		*status = 409;
		sbx_err_set(err, "%s is not a regular file", path);
		close(fd);
		fd = -1;
		goto out_close;
	}
	fcntl(fd, F_SETFL, 0);
	close(dirfd);
	return fd;

out_close:
	close(dirfd);
	return -1;
}

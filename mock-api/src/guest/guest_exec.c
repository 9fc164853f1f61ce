/* guest_exec: starting a command in a guest and collecting its output —
 * the child's plan (argv, env, PATH candidates), the request to the cell
 * (contained) or the vfork-style clone (plain), and the mock_proc
 * read/kill/finish calls; see guest.h.
 *
 * Plain mode: between clone and execve the child shares the mock's memory:
 * it must never allocate, lock or run a mock signal handler there, only
 * make system calls. Every exec is its own process group (plain: recorded
 * in the guest; contained: the cell's, signalled through the cell). */
#define _GNU_SOURCE
#include "guest/cell_proto.h"
#include "guest/guest_internal.h"
#include "sbx/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/* ---- the plan ---- */

/* Plain mode has no mount namespace to bind /workspace and /tmp: an
 * argument under either is rewritten into the sandbox tree (buf), any other
 * is returned as it is. */
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
	char cwd_buf[PATH_MAX]; /* plain: a cwd under /workspace or /tmp, mapped */
	int in_r, out_w, err_w, status_w;
	bool tty;            /* in_r = out_w = err_w: a PTY slave to take as ctty */
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

/* Sets K=V in envp (n entries so far), replacing an entry with the same K. */
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

/* argv: cmd as given, then the args (mapped into the tree in plain mode). */
static int plan_argv(const mock_guest *g, const mock_exec_spec *s, child_plan *cp)
{
	bool plain = g->mode == GUEST_PLAIN;

	cp->argv = calloc(s->nargs + 2, sizeof(char *));
	if (cp->argv == NULL)
		return -1;
	cp->argv[0] = strdup(s->cmd);
	if (cp->argv[0] == NULL)
		return -1;
	for (size_t i = 0; i < s->nargs; i++) {
		char abuf[PATH_MAX];

		cp->argv[i + 1] = strdup(plain ? map_plain(g, s->args[i], abuf, sizeof(abuf)) : s->args[i]);
		if (cp->argv[i + 1] == NULL)
			return -1;
	}
	return 0;
}

/* envp: the base environment (PATH, LANG, HOME, TMPDIR) with the exec's own
 * K=V strings applied over it. */
static int plan_env(const mock_guest *g, const mock_exec_spec *s, child_plan *cp)
{
	char kv[PATH_MAX + 16];
	bool plain = g->mode == GUEST_PLAIN;
	size_t n = 0;

	cp->envp = calloc(s->nenv + 8, sizeof(char *));
	if (cp->envp == NULL)
		return -1;
	if (env_add(cp->envp, &n, "PATH=" GUEST_PATH) != 0 || env_add(cp->envp, &n, "LANG=C.UTF-8") != 0)
		return -1;
	snprintf(kv, sizeof(kv), "HOME=%s", plain ? g->ws : "/root");
	if (env_add(cp->envp, &n, kv) != 0)
		return -1;
	snprintf(kv, sizeof(kv), "TMPDIR=%s", plain ? g->tmp : "/tmp");
	if (env_add(cp->envp, &n, kv) != 0)
		return -1;
	/* Node trusts its bundled roots, not the system bundle the
	 * simulated internet's CA is in (mock-api/INTERNET.md, "TLS") */
	if (g->trusts_ca && env_add(cp->envp, &n, "NODE_EXTRA_CA_CERTS=" CELL_TRUST_CA_FILE) != 0)
		return -1;
	for (size_t i = 0; i < s->nenv; i++) {
		if (env_add(cp->envp, &n, s->env[i]) != 0)
			return -1;
	}
	return 0;
}

/* The paths execve tries, in order: cmd itself when it names a path, else
 * cmd in each GUEST_PATH directory (the child cannot search PATH itself:
 * it may not allocate). */
static int plan_candidates(child_plan *cp, const char *cmd)
{
	char buf[PATH_MAX];
	const char *p = GUEST_PATH;

	cp->candidates = calloc(16, sizeof(char *));
	if (cp->candidates == NULL)
		return -1;
	if (strchr(cmd, '/') != NULL) {
		cp->candidates[cp->ncand] = strdup(cmd);
		return cp->candidates[cp->ncand++] == NULL ? -1 : 0;
	}
	while (*p != '\0' && cp->ncand < 16) {
		size_t len = strcspn(p, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, p, cmd);
		cp->candidates[cp->ncand] = strdup(buf);
		if (cp->candidates[cp->ncand++] == NULL)
			return -1;
		p += len;
		if (*p == ':')
			p++;
	}
	return 0;
}

static int plan_build(mock_guest *g, const mock_exec_spec *s, child_plan *cp, sbx_err *err)
{
	char buf[PATH_MAX];
	bool plain = g->mode == GUEST_PLAIN;
	const char *cmd = plain ? map_plain(g, s->cmd, buf, sizeof(buf)) : s->cmd;

	if (plan_argv(g, s, cp) != 0 || plan_env(g, s, cp) != 0 || plan_candidates(cp, cmd) != 0) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	cp->cwd = plain ? g->ws : "/workspace";
	if (s->cwd != NULL && s->cwd[0] != '\0')
		cp->cwd = plain ? map_plain(g, s->cwd, cp->cwd_buf, sizeof(cp->cwd_buf)) : s->cwd;
	cp->tty = s->tty;
	return 0;
}

/* ---- the child ---- */

static void child_fail(int status_w, int code)
{
	ssize_t w = write(status_w, &code, sizeof(code));

	(void)w;
	_exit(127);
}

/* Runs in the child, on its own stack and in the parent's memory
 * (CLONE_VM|CLONE_VFORK): raw system calls only, no malloc, no locks. The
 * parent sleeps until execve succeeds or the child exits. */
static int child_run(void *arg)
{
	const child_plan *cp = arg;
	sigset_t none;
	int last_errno = ENOENT;

	if (cp->tty)
		guest_child_take_tty(cp->in_r); /* a session, not only a group */
	else
		setpgid(0, 0);
	guest_child_reset_signals();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(cp->in_r, 0) < 0 || dup2(cp->out_w, 1) < 0 || dup2(cp->err_w, 2) < 0)
		child_fail(cp->status_w, errno);
	/* the guest gets stdin/out/err only: descriptors the embedding program
	 * opened without O_CLOEXEC (a client's socket...) close at execve, or a
	 * hung-up client would stay connected through the guest (best effort:
	 * Linux >= 5.11) */
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
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

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* MOCK_CLONE_VM: a copy under TSan (cell.h), still waited for */
	pid = clone(child_run, stack + CHILD_STACK_SIZE, MOCK_CLONE_VM | CLONE_VFORK | SIGCHLD, cp);
	*err_out = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
#ifdef SBX_GUEST_ASAN
	/* the child's frames left redzones in the shared shadow memory */
	__asan_unpoison_memory_region(stack, CHILD_STACK_SIZE);
#endif
	return pid;
}

/* ---- mock_proc ---- */

/* The pipes between the mock and a child: [0] read end, [1] write end. */
enum { PIPE_IN, PIPE_OUT, PIPE_ERR, PIPE_STATUS, NPIPES };

static int pipes_open(int pipes[NPIPES][2], sbx_err *err)
{
	for (int i = 0; i < NPIPES; i++) {
		if (pipe2(pipes[i], O_CLOEXEC) != 0) {
			sbx_err_set(err, "pipe: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void pipes_close(int pipes[NPIPES][2])
{
	for (int i = 0; i < NPIPES; i++) {
		sbx_close_fd(&pipes[i][0]);
		sbx_close_fd(&pipes[i][1]);
	}
}

/* After the clone or the request to the cell: closes the child's ends and
 * moves the mock's ends into p (non-blocking), the status pipe's read end
 * staying in pipes. */
static void proc_take_ends(mock_proc *p, int pipes[NPIPES][2], const mock_exec_spec *spec)
{
	sbx_close_fd(&pipes[PIPE_IN][0]);
	sbx_close_fd(&pipes[PIPE_OUT][1]);
	sbx_close_fd(&pipes[PIPE_ERR][1]);
	sbx_close_fd(&pipes[PIPE_STATUS][1]);
	p->in_fd = pipes[PIPE_IN][1];
	p->out_fd = pipes[PIPE_OUT][0];
	p->err_fd = pipes[PIPE_ERR][0];
	pipes[PIPE_IN][1] = pipes[PIPE_OUT][0] = pipes[PIPE_ERR][0] = -1;
	fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
	fcntl(p->in_fd, F_SETFL, O_NONBLOCK);
	p->stdin_data = spec->stdin_data;
	p->stdin_len = spec->stdin_data != NULL ? spec->stdin_len : 0;
	if (p->stdin_len == 0 && !spec->keep_stdin)
		sbx_close_fd(&p->in_fd);
}

/* Plain: reads the status pipe, which carries an errno only when execve
 * failed (it closes on a successful execve). True, with *code, when it
 * failed. */
static bool proc_adopt(mock_proc *p, pid_t pid, int pipes[NPIPES][2], const mock_exec_spec *spec,
		       int *code)
{
	ssize_t r;

	proc_take_ends(p, pipes, spec);
	*code = 0;
	do {
		r = read(pipes[PIPE_STATUS][0], code, sizeof(*code));
	} while (r < 0 && errno == EINTR);
	sbx_close_fd(&pipes[PIPE_STATUS][0]);
	p->pid = pid;
	return r == (ssize_t)sizeof(*code);
}

static ssize_t read_full(int fd, void *buf, size_t len)
{
	ssize_t r;

	do {
		r = read(fd, buf, len);
	} while (r < 0 && errno == EINTR);
	return r;
}

/* Contained: hands the child's ends to the cell and reads STARTED. 0, or
 * -1 with err set (and *code the exec's errno, 0 when the cell failed). */
static int cell_spawn(mock_guest *g, const child_plan *cp, mock_proc *p, int pipes[NPIPES][2],
		      const mock_exec_spec *spec, int *code, sbx_err *err)
{
	const int fds[4] = {cp->in_r, cp->out_w, cp->err_w, cp->status_w};
	struct cell_status st;

	*code = 0;
	if (mock_cell_exec(g->cell, cp->cwd, cp->argv, cp->envp, fds, cp->tty, err) != 0)
		return -1;
	proc_take_ends(p, pipes, spec);
	p->status_fd = pipes[PIPE_STATUS][0];
	pipes[PIPE_STATUS][0] = -1;
	if (read_full(p->status_fd, &st, sizeof(st)) != (ssize_t)sizeof(st) || st.kind != CELL_STARTED) {
		sbx_err_set(err, "sandbox environment is gone");
		return -1;
	}
	if (st.pid <= 0) {
		*code = st.err != 0 ? st.err : EIO;
		return -1;
	}
	p->pid = st.pid;
	return 0;
}

static bool guest_dead(mock_guest *g)
{
	bool dead;

	pthread_mutex_lock(&g->lock);
	dead = g->dead;
	pthread_mutex_unlock(&g->lock);
	return dead;
}

int mock_proc_spawn(mock_guest *g, const mock_exec_spec *spec, mock_proc *p, sbx_err *err)
{
	child_plan cp;
	int pipes[NPIPES][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
	int code = 0;
	pid_t pid;

	memset(&cp, 0, sizeof(cp));
	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->out_fd = p->err_fd = p->in_fd = p->status_fd = -1;
	p->guest = g;
	if (plan_build(g, spec, &cp, err) != 0)
		goto out_plan;
	if (pipes_open(pipes, err) != 0)
		goto out_pipes;
	cp.in_r = pipes[PIPE_IN][0];
	cp.out_w = pipes[PIPE_OUT][1];
	cp.err_w = pipes[PIPE_ERR][1];
	cp.status_w = pipes[PIPE_STATUS][1];
	if (spec->tty)
		cp.in_r = cp.out_w = cp.err_w = spec->tty_fd;
	if (guest_dead(g)) {
		sbx_err_set(err, "sandbox is being destroyed");
		goto out_pipes;
	}
	if (g->cell != NULL) {
		if (cell_spawn(g, &cp, p, pipes, spec, &code, err) == 0)
			goto out_started;
		p->exited = true; /* nothing runs: finish only closes */
		mock_proc_finish(p);
		if (code != 0)
			goto out_exec_failed;
		goto out_pipes;
	}
	pid = spawn_child(&cp, &code);
	if (pid < 0) {
		sbx_err_set(err, "clone: %s", strerror(code));
		goto out_pipes;
	}
	if (!spec->tty)
		setpgid(pid, pid); /* a tty child made its own session */
	guest_add_pgid(g, pid);
	if (proc_adopt(p, pid, pipes, spec, &code)) {
		/* exec failed: the child wrote errno and exited */
		mock_proc_finish(p);
		goto out_exec_failed;
	}
out_started:
	plan_free(&cp);
	return 0;

out_exec_failed:
	if (code == ENOENT)
		sbx_err_set(err, "exec: \"%s\": executable file not found in $PATH", spec->cmd);
	else
		sbx_err_set(err, "exec: \"%s\": %s", spec->cmd, strerror(code));
	goto out_plan;

out_pipes:
	pipes_close(pipes);
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
	sbx_close_fd(&p->in_fd);
}

/* Contained: EXITED from the cell's status pipe (when block, waiting for
 * it). A pipe that closes without it means the cell died, and the
 * process with it: reported as killed. */
static void cell_wait(mock_proc *p, bool block)
{
	struct pollfd pf = {.fd = p->status_fd, .events = POLLIN};
	struct cell_status st;

	if (poll(&pf, 1, block ? -1 : 0) <= 0 && !block)
		return;
	if (read_full(p->status_fd, &st, sizeof(st)) == (ssize_t)sizeof(st) && st.kind == CELL_EXITED)
		p->wstatus = st.wstatus;
	else
		p->wstatus = SIGKILL; /* as waitpid reports a SIGKILL death */
	p->exited = true;
	sbx_close_fd(&p->status_fd);
}

/* Whether the process exited, waiting for it when block. */
static bool proc_wait(mock_proc *p, bool block)
{
	if (p->exited || p->pid <= 0)
		return p->exited;
	if (p->status_fd >= 0) {
		cell_wait(p, block);
		return p->exited;
	}
	for (;;) {
		pid_t r = waitpid(p->pid, &p->wstatus, block ? 0 : WNOHANG);

		if (r == p->pid)
			p->exited = true;
		if (r >= 0 || errno != EINTR)
			break;
	}
	if (block)
		p->exited = true; /* reaped, or not ours to reap: either way done */
	return p->exited;
}

static bool check_exit(mock_proc *p)
{
	return proc_wait(p, false);
}

bool mock_proc_exited(mock_proc *p)
{
	return check_exit(p);
}

static ssize_t read_some(int *fd, char *buf, size_t cap)
{
	ssize_t r;

	if (*fd < 0)
		return 0;
	r = read(*fd, buf, cap);
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
		sbx_close_fd(fd);
		return 0;
	}
	return r < 0 ? 0 : r;
}

/* Whatever stdout, then stderr, has ready: bytes read (which = 1 or 2),
 * or 0 when neither has anything now. */
static ssize_t read_ready(mock_proc *p, char *buf, size_t cap, int *which)
{
	ssize_t r = read_some(&p->out_fd, buf, cap);

	if (r > 0) {
		*which = 1;
		return r;
	}
	r = read_some(&p->err_fd, buf, cap);
	if (r > 0)
		*which = 2;
	return r;
}

/* Sleeps up to slice_ms until output is ready or stdin can take more. */
static int wait_io(mock_proc *p, int slice_ms)
{
	struct pollfd pfd[3];
	int n = 0;

	if (p->out_fd >= 0)
		pfd[n++] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
	if (p->err_fd >= 0)
		pfd[n++] = (struct pollfd){.fd = p->err_fd, .events = POLLIN};
	if (p->in_fd >= 0)
		pfd[n++] = (struct pollfd){.fd = p->in_fd, .events = POLLOUT};
	return poll(pfd, (nfds_t)n, slice_ms);
}

ssize_t mock_proc_read(mock_proc *p, int timeout_ms, char *buf, size_t cap, int *which)
{
	int slice;
	ssize_t r;

	for (;;) {
		r = read_ready(p, buf, cap, which);
		if (r > 0)
			return r;
		/* Both outputs closed waits for the exit only once stdin is fed:
		 * a command can close them first (`exec cmd >/dev/null 2>&1`)
		 * and then wait for its stdin's end, which this must give it. */
		if (p->out_fd < 0 && p->err_fd < 0 && p->in_fd < 0) {
			proc_wait(p, true);
			return -1;
		}
		/* The command exited: drain what it wrote before exiting (the
		 * reads above may have raced with its last writes), then stop,
		 * since a background child may keep the pipes open forever. */
		if (check_exit(p)) {
			r = read_ready(p, buf, cap, which);
			return r > 0 ? r : -1;
		}
		if (timeout_ms <= 0)
			return 0;
		slice = timeout_ms < 50 ? timeout_ms : 50; /* notice exit of a child with open pipes */
		if (wait_io(p, slice) == 0)
			timeout_ms -= slice;
		feed_stdin(p);
	}
}

void mock_proc_kill(mock_proc *p)
{
	if (p->pid <= 0 || p->exited)
		return;
	if (p->status_fd >= 0) {
		mock_cell_signal(p->guest->cell, p->pid, SIGKILL);
		mock_cell_signal(p->guest->cell, p->pid, SIGCONT);
		return;
	}
	kill(-p->pid, SIGKILL);
	kill(-p->pid, SIGCONT);
}

int mock_proc_finish(mock_proc *p)
{
	int code = -1;

	sbx_close_fd(&p->in_fd);
	sbx_close_fd(&p->out_fd);
	sbx_close_fd(&p->err_fd);
	proc_wait(p, true);
	sbx_close_fd(&p->status_fd);
	if (WIFEXITED(p->wstatus))
		code = WEXITSTATUS(p->wstatus);
	else if (WIFSIGNALED(p->wstatus))
		code = 128 + WTERMSIG(p->wstatus);
	p->pid = -1;
	return code;
}

int mock_guest_exec(mock_guest *g, const mock_exec_spec *spec, int64_t timeout_ms, const mock_exec_io *io,
		    mock_exec_result *r, sbx_err *err)
{
	mock_proc p;
	char buf[16384];
	int64_t deadline = timeout_ms > 0 ? sbx_mono_ms() + timeout_ms : INT64_MAX;

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
		if (n > 0)
			io->output(io->arg, which, buf, (size_t)n);
		if (sbx_mono_ms() >= deadline) {
			r->timed_out = true;
			mock_proc_kill(&p);
			break;
		}
		if (io->abort != NULL && io->abort(io->arg)) {
			r->aborted = true;
			mock_proc_kill(&p);
			break;
		}
	}
	r->exit_code = mock_proc_finish(&p);
	return 0;
}

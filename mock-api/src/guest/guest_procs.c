/* guest_procs: managed processes of a guest, see guest_procs.h. This file:
 * the table, the reader threads and the output ring; the views, events and
 * control operations are in guest_procs_ops.c (guest_procs_internal.h is
 * what the two share).
 *
 * Locking: one mutex and one condition variable per guest's table guard
 * every process in it; a reader thread takes the mutex only to append, and
 * never while it reads or polls. A process is freed only after its reader
 * thread was joined (eviction of an exited one, or procs_free). */
#define _GNU_SOURCE
#include "guest/guest_procs_internal.h"
#include "sbx/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK    8192
#define POLL_SLICE_MS 50 /* plain mode notices a leader's exit this often */

int64_t mproc_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- signals ---- */

static const struct {
	const char *name;
	int sig;
} SIGNALS[] = {
	{"SIGHUP", SIGHUP},
	{"SIGINT", SIGINT},
	{"SIGQUIT", SIGQUIT},
	{"SIGKILL", SIGKILL},
	{"SIGTERM", SIGTERM},
	{"SIGUSR1", SIGUSR1},
	{"SIGUSR2", SIGUSR2},
	{"SIGWINCH", SIGWINCH},
	/* below: names for views only, not accepted by the signal route */
	{"SIGABRT", SIGABRT},
	{"SIGSEGV", SIGSEGV},
	{"SIGPIPE", SIGPIPE},
	{"SIGALRM", SIGALRM},
	{"SIGBUS", SIGBUS},
	{"SIGFPE", SIGFPE},
	{"SIGILL", SIGILL},
	{"SIGSYS", SIGSYS},
	{"SIGXCPU", SIGXCPU},
};
#define NACCEPTED 8

int mock_mproc_signal_number(const char *name)
{
	for (size_t i = 0; name != NULL && i < NACCEPTED; i++) {
		if (strcmp(SIGNALS[i].name, name) == 0)
			return SIGNALS[i].sig;
	}
	return 0;
}

void mproc_signal_name(int sig, char *buf, size_t cap)
{
	for (size_t i = 0; i < sizeof(SIGNALS) / sizeof(SIGNALS[0]); i++) {
		if (SIGNALS[i].sig == sig) {
			snprintf(buf, cap, "%s", SIGNALS[i].name);
			return;
		}
	}
	snprintf(buf, cap, "SIG%d", sig);
}

void mproc_group_signal(mock_guest *g, pid_t pgid, int sig)
{
	if (pgid <= 1)
		return;
	if (g->cell != NULL) {
		mock_cell_signal(g->cell, pgid, sig);
		if (sig == SIGKILL || sig == SIGTERM)
			mock_cell_signal(g->cell, pgid, SIGCONT);
		return;
	}
	kill(-pgid, sig);
	if (sig == SIGKILL || sig == SIGTERM)
		kill(-pgid, SIGCONT);
}

/* ---- views ---- */

static void add_time(cJSON *o, const char *key, int64_t ms)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	char buf[64];

	gmtime_r(&secs, &tm);
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
	cJSON_AddStringToObject(o, key, buf);
}

static const char *state_name(mproc_state s)
{
	return s == MPROC_RUNNING ? "running" : s == MPROC_TERMINATING ? "terminating" : "exited";
}

/* exit_code and signal: null while the leader runs; a leader killed by a
 * signal has exit_code 128 + its number (as exec reports it) and the
 * signal's name. */
static void add_exit(cJSON *o, const mproc *p)
{
	char name[16];

	if (!p->leader_exited) {
		cJSON_AddNullToObject(o, "exit_code");
		cJSON_AddNullToObject(o, "signal");
	} else if (WIFSIGNALED(p->wstatus)) {
		mproc_signal_name(WTERMSIG(p->wstatus), name, sizeof(name));
		cJSON_AddNumberToObject(o, "exit_code", 128 + WTERMSIG(p->wstatus));
		cJSON_AddStringToObject(o, "signal", name);
	} else {
		cJSON_AddNumberToObject(o, "exit_code", WEXITSTATUS(p->wstatus));
		cJSON_AddNullToObject(o, "signal");
	}
}

cJSON *mproc_view(const mproc *p)
{
	cJSON *o = cJSON_CreateObject(), *args = cJSON_AddArrayToObject(o, "args");
	cJSON *out = cJSON_AddObjectToObject(o, "output");

	cJSON_AddStringToObject(o, "process_id", p->id);
	cJSON_AddStringToObject(o, "kind", p->pty ? "pty" : "process");
	cJSON_AddNumberToObject(o, "pid", p->pid);
	cJSON_AddStringToObject(o, "state", state_name(p->state));
	cJSON_AddBoolToObject(o, "leader_exited", p->leader_exited);
	cJSON_AddBoolToObject(o, "tree_exited", p->tree_exited);
	add_time(o, "created_at", p->created_ms);
	if (p->tree_exited)
		add_time(o, "finished_at", p->finished_ms);
	else
		cJSON_AddNullToObject(o, "finished_at");
	add_exit(o, p);
	cJSON_AddStringToObject(o, "cmd", p->cmd);
	for (size_t i = 0; i < p->nargs; i++)
		cJSON_AddItemToArray(args, cJSON_CreateString(p->args[i]));
	cJSON_AddStringToObject(o, "cwd", p->cwd);
	cJSON_AddNullToObject(o, "foreground");
	cJSON_AddNumberToObject(out, "oldest_seq", p->head != NULL ? (double)p->head->seq : 0);
	cJSON_AddNumberToObject(out, "newest_seq", (double)p->last_seq);
	cJSON_AddNumberToObject(out, "bytes", (double)p->bytes);
	return o;
}

/* ---- the ring ---- */

/* Appends one event (lock held); drops the oldest while over the ring's
 * size, always keeping the newest. False when out of memory. */
static bool ring_push(mproc *p, int stream, const char *data, size_t len)
{
	mproc_event *e = malloc(sizeof(*e) + len);

	if (e == NULL)
		return false;
	e->next = NULL;
	e->seq = ++p->last_seq;
	e->stream = stream;
	e->len = len;
	if (len > 0)
		memcpy(e->data, data, len);
	if (p->tail != NULL)
		p->tail->next = e;
	else
		p->head = e;
	p->tail = e;
	p->bytes += len;
	while (p->bytes > MOCK_MPROC_RING_BYTES && p->head != p->tail) {
		mproc_event *old = p->head;

		p->head = old->next;
		p->bytes -= old->len;
		free(old);
	}
	return true;
}

static void ring_free(mproc *p)
{
	while (p->head != NULL) {
		mproc_event *e = p->head;

		p->head = e->next;
		free(e);
	}
	p->tail = NULL;
	p->bytes = 0;
}

/* ---- the reader thread ---- */

/* The descriptors the reader polls: output (stdout or the PTY master),
 * stderr, and the cell's status pipe (its EXITED wakes the reader). */
static nfds_t reader_fds(mproc *p, struct pollfd pf[3])
{
	nfds_t n = 0;

	if (p->out_fd >= 0)
		pf[n++] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
	if (p->err_fd >= 0)
		pf[n++] = (struct pollfd){.fd = p->err_fd, .events = POLLIN};
	if (!p->leader_seen && p->proc.status_fd >= 0)
		pf[n++] = (struct pollfd){.fd = p->proc.status_fd, .events = POLLIN};
	return n;
}

/* Reads what fd has into the ring; closes it at EOF (a PTY master says
 * EIO once the last slave is closed). */
static void reader_drain(mproc_table *t, mproc *p, int *fd, int stream, char *buf)
{
	ssize_t r;

	if (*fd < 0)
		return;
	r = read(*fd, buf, READ_CHUNK);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		sbx_close_fd(fd);
		return;
	}
	pthread_mutex_lock(&t->lock);
	ring_push(p, stream, buf, (size_t)r);
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
}

static void reader_leader(mproc_table *t, mproc *p)
{
	if (p->leader_seen || !mock_proc_exited(&p->proc))
		return;
	p->leader_seen = true;
	pthread_mutex_lock(&t->lock);
	p->leader_exited = true;
	p->wstatus = p->proc.wstatus;
	if (p->state == MPROC_RUNNING)
		p->state = MPROC_EXITED;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
}

static void *reader_main(void *arg)
{
	mproc *p = arg;
	mproc_table *t = p->table;
	char *buf = malloc(READ_CHUNK);
	struct pollfd pf[3];

	while (buf != NULL && !atomic_load(&t->stopping)) {
		nfds_t n = reader_fds(p, pf);

		if (n > 0)
			poll(pf, n, POLL_SLICE_MS);
		reader_drain(t, p, &p->out_fd, p->pty ? MPROC_STREAM_PTY : MPROC_STREAM_STDOUT,
			     buf);
		reader_drain(t, p, &p->err_fd, MPROC_STREAM_STDERR, buf);
		reader_leader(t, p);
		if (p->out_fd < 0 && p->err_fd < 0 && p->leader_seen)
			break;
		if (n == 0) /* nothing to poll: a plain leader whose output closed */
			usleep(POLL_SLICE_MS * 1000);
	}
	free(buf);
	mock_proc_finish(&p->proc); /* reaps (plain) or closes the status pipe */
	pthread_mutex_lock(&t->lock);
	if (!p->leader_exited) {
		p->leader_exited = true;
		p->wstatus = p->proc.wstatus;
	}
	p->tree_exited = true;
	p->state = MPROC_EXITED;
	p->finished_ms = mproc_wall_ms();
	ring_push(p, MPROC_STREAM_EXIT, NULL, 0);
	sbx_close_fd(&p->in_fd);
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* ---- the table ---- */

static void procs_free(mock_guest *g);

/* The guest's table, made on first use; NULL when out of memory. */
mproc_table *mproc_table_of(mock_guest *g, bool make)
{
	mproc_table *t;

	pthread_mutex_lock(&g->lock);
	t = g->procs;
	if (t == NULL && make) {
		t = calloc(1, sizeof(*t));
		if (t != NULL) {
			pthread_mutex_init(&t->lock, NULL);
			pthread_condattr_t ca;

			pthread_condattr_init(&ca);
			pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
			pthread_cond_init(&t->cv, &ca);
			pthread_condattr_destroy(&ca);
			g->procs = t;
			g->procs_free = procs_free;
		}
	}
	pthread_mutex_unlock(&g->lock);
	return t;
}

mproc *mproc_find(mproc_table *t, const char *id)
{
	for (size_t i = 0; t != NULL && i < t->n; i++) {
		if (strcmp(t->v[i]->id, id) == 0)
			return t->v[i];
	}
	return NULL;
}

static void mproc_free(mproc *p)
{
	if (p == NULL)
		return;
	if (p->thread_started)
		pthread_join(p->thread, NULL);
	else
		mock_proc_finish(&p->proc);
	sbx_close_fd(&p->out_fd);
	sbx_close_fd(&p->err_fd);
	sbx_close_fd(&p->in_fd);
	sbx_close_fd(&p->master);
	ring_free(p);
	free(p->cmd);
	free(p->cwd);
	for (size_t i = 0; i < p->nargs; i++)
		free(p->args[i]);
	free(p->args);
	free(p);
}

/* Makes room for one more (lock held): evicts the oldest process whose
 * tree has exited when the table is full. The evicted one comes back in
 * *gone, to be freed without the lock. False when every one is live. */
static bool table_room(mproc_table *t, mproc **gone)
{
	*gone = NULL;
	if (t->n + t->reserved < MOCK_MPROC_MAX)
		return true;
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i]->tree_exited && t->v[i]->waiters == 0) {
			*gone = t->v[i];
			memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(t->v[0]));
			t->n--;
			return true;
		}
	}
	return false;
}

/* The guest's procs_free hook: stops the reader threads (the guest is
 * killed by then, so they end) and frees everything. */
static void procs_free(mock_guest *g)
{
	mproc_table *t = g->procs;

	if (t == NULL)
		return;
	atomic_store(&t->stopping, true);
	for (size_t i = 0; i < t->n; i++)
		mproc_free(t->v[i]);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->lock);
	free(t);
	g->procs = NULL;
}

/* ---- starting one ---- */

/* A pseudo-terminal pair: contained, from the cell's own devpts (seen
 * through its PID 1's root), so the guest sees its terminal at
 * /dev/pts/N; else (plain, or a kernel without a private devpts) from the
 * host's /dev/ptmx. 0, or -1 with err. */
static int pty_open(mock_guest *g, unsigned rows, unsigned cols, int *master, int *slave,
		    sbx_err *err)
{
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	char path[64];
	pid_t cell = g->cell != NULL ? mock_cell_pid(g->cell) : -1;

	*master = -1;
	if (cell > 0) {
		snprintf(path, sizeof(path), "/proc/%d/root/dev/pts/ptmx", (int)cell);
		*master = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	}
	if (*master < 0)
		*master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*master < 0 || unlockpt(*master) != 0)
		goto out_fail;
	*slave = ioctl(*master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0 || ioctl(*master, TIOCSWINSZ, &ws) != 0)
		goto out_fail;
	return 0;

out_fail:
	sbx_err_set(err, "pseudo-terminal: %s", strerror(errno));
	sbx_close_fd(master);
	return -1;
}

static bool copy_command(mproc *p, const mock_exec_spec *s)
{
	p->cmd = strdup(s->cmd);
	p->cwd = strdup(s->cwd != NULL && s->cwd[0] != '\0' ? s->cwd : "/workspace");
	p->args = calloc(s->nargs + 1, sizeof(char *));
	if (p->cmd == NULL || p->cwd == NULL || p->args == NULL)
		return false;
	for (; p->nargs < s->nargs; p->nargs++) {
		p->args[p->nargs] = strdup(s->args[p->nargs]);
		if (p->args[p->nargs] == NULL)
			return false;
	}
	return true;
}

/* Spawns q's command for p (its descriptors set up, non-blocking). 0, or
 * -1 with *status and err. */
static int mproc_spawn(mock_guest *g, mproc *p, const mock_mproc_req *q, int *status, sbx_err *err)
{
	mock_exec_spec spec = q->exec;
	int slave = -1;

	*status = 500;
	spec.stdin_data = NULL;
	spec.stdin_len = 0;
	spec.keep_stdin = !q->pty;
	spec.tty = q->pty;
	if (q->pty && pty_open(g, q->rows, q->cols, &p->master, &slave, err) != 0)
		return -1;
	spec.tty_fd = slave;
	if (mock_proc_spawn(g, &spec, &p->proc, err) != 0) {
		sbx_close_fd(&slave);
		*status = strncmp(err->msg, "exec:", 5) == 0 ? 400 : 500;
		return -1;
	}
	sbx_close_fd(&slave); /* the guest holds it now: EIO on the master when it lets go */
	if (q->pty) {
		sbx_close_fd(&p->proc.out_fd); /* the pipes carried nothing */
		sbx_close_fd(&p->proc.err_fd);
		sbx_close_fd(&p->proc.in_fd);
		p->out_fd = fcntl(p->master, F_DUPFD_CLOEXEC, 0);
		fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	} else {
		p->out_fd = p->proc.out_fd;
		p->err_fd = p->proc.err_fd;
		p->in_fd = p->proc.in_fd;
		p->proc.out_fd = p->proc.err_fd = p->proc.in_fd = -1;
	}
	p->pid = p->proc.pid;
	return 0;
}

static mproc *mproc_new(const mock_mproc_req *q)
{
	mproc *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->out_fd = p->err_fd = p->in_fd = p->master = -1;
	p->proc.pid = -1;
	p->proc.out_fd = p->proc.err_fd = p->proc.in_fd = p->proc.status_fd = -1;
	p->proc.exited = true; /* nothing to wait for until spawned */
	p->pty = q->pty;
	p->rows = q->rows;
	p->cols = q->cols;
	p->state = MPROC_RUNNING;
	p->created_ms = mproc_wall_ms();
	if (!copy_command(p, &q->exec)) {
		mproc_free(p);
		return NULL;
	}
	return p;
}

/* Puts p in the table and starts its reader (lock held). */
static int table_add(mproc_table *t, mproc *p, sbx_err *err)
{
	snprintf(p->id, sizeof(p->id), "proc_%u", ++t->next_id);
	p->table = t;
	if (pthread_create(&p->thread, NULL, reader_main, p) != 0) {
		sbx_err_set(err, "thread: %s", strerror(errno));
		return -1;
	}
	p->thread_started = true;
	t->v[t->n++] = p;
	return 0;
}

cJSON *mock_mproc_create(mock_guest *g, const mock_mproc_req *q, int *status, sbx_err *err)
{
	mproc_table *t = mproc_table_of(g, true);
	mproc *p = NULL, *gone = NULL;
	cJSON *v = NULL;

	*status = 500;
	if (t == NULL || (p = mproc_new(q)) == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	pthread_mutex_lock(&t->lock);
	if (!table_room(t, &gone)) {
		pthread_mutex_unlock(&t->lock);
		*status = 409;
		sbx_err_set(err,
			    "sandbox has %d managed processes running, the most it keeps; "
			    "delete one first",
			    MOCK_MPROC_MAX);
		goto out_free;
	}
	t->reserved++; /* the slot is ours while we spawn without the lock */
	pthread_mutex_unlock(&t->lock);
	mproc_free(gone);
	if (mproc_spawn(g, p, q, status, err) != 0) {
		pthread_mutex_lock(&t->lock);
		t->reserved--;
		pthread_mutex_unlock(&t->lock);
		goto out_free;
	}
	pthread_mutex_lock(&t->lock);
	t->reserved--;
	if (table_add(t, p, err) == 0)
		v = mproc_view(p);
	pthread_mutex_unlock(&t->lock);
	if (v != NULL)
		return v;
	if (!p->thread_started) {
		mproc_group_signal(g, p->pid, SIGKILL);
		goto out_free;
	}
	sbx_err_set(err, "out of memory");
	return NULL;

out_free:
	mproc_free(p);
	return NULL;
}

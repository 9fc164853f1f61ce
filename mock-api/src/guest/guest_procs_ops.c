/* guest_procs_ops: the views, the connect events and the control
 * operations of managed processes (guest_procs.h); the table, readers and
 * ring are guest_procs.c's. */
#define _GNU_SOURCE
#include "guest/guest_procs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "util/base64.h"
#include "sbx/sys.h"

#define INPUT_DEADLINE_MS  5000 /* a process not reading its input: 503 after this */
#define TERMINATE_EXTRA_MS 5000 /* after SIGKILL, how long the tree may take to go */

cJSON *mock_mproc_list(mock_guest *g)
{
	mproc_table *t = mproc_table_of(g, false);
	cJSON *d = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(d, "processes");

	if (t == NULL)
		return d;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		cJSON_AddItemToArray(a, mproc_view(t->v[i]));
	pthread_mutex_unlock(&t->lock);
	return d;
}

cJSON *mock_mproc_get(mock_guest *g, const char *id)
{
	mproc_table *t = mproc_table_of(g, false);
	cJSON *v = NULL;
	mproc *p;

	if (t == NULL)
		return NULL;
	pthread_mutex_lock(&t->lock);
	p = mproc_find(t, id);
	if (p != NULL)
		v = mproc_view(p);
	pthread_mutex_unlock(&t->lock);
	return v;
}

/* ---- events ---- */

static void event_json(sbx_strbuf *out, const mproc *p, const mproc_event *e)
{
	static const char *const streams[] = {"stdout", "stderr", "pty"};
	char name[16];

	if (e->stream != MPROC_STREAM_EXIT) {
		sbx_strbuf_printf(
			out, "{\"type\":\"data\",\"seq\":%llu,\"stream\":\"%s\",\"data_base64\":\"",
			(unsigned long long)e->seq, streams[e->stream]);
		mock_b64_encode(out, e->data, e->len);
		sbx_strbuf_puts(out, "\"}\n");
		return;
	}
	sbx_strbuf_printf(out, "{\"type\":\"exit\",\"seq\":%llu", (unsigned long long)e->seq);
	if (WIFSIGNALED(p->wstatus)) {
		mproc_signal_name(WTERMSIG(p->wstatus), name, sizeof(name));
		sbx_strbuf_printf(out, ",\"exit_code\":%d,\"signal\":\"%s\"}\n",
				  128 + WTERMSIG(p->wstatus), name);
	} else {
		sbx_strbuf_printf(out, ",\"exit_code\":%d,\"signal\":null}\n",
				  WEXITSTATUS(p->wstatus));
	}
}

/* Appends the events after *after (lock held): 1 when the exit went. */
static int events_since(const mproc *p, uint64_t *after, bool first, sbx_strbuf *out)
{
	int done = 0;

	if (first && p->head != NULL && p->head->seq > *after + 1)
		sbx_strbuf_printf(out, "{\"type\":\"heartbeat\",\"oldest_available_seq\":%llu}\n",
				  (unsigned long long)p->head->seq);
	for (const mproc_event *e = p->head; e != NULL; e = e->next) {
		if (e->seq <= *after)
			continue;
		event_json(out, p, e);
		*after = e->seq;
		if (e->stream == MPROC_STREAM_EXIT)
			done = 1;
	}
	/* the exit is the last event: a client already past it is done */
	return done || (p->tree_exited && *after >= p->last_seq);
}

int mock_mproc_events(mock_guest *g, const char *id, uint64_t *after, bool first, int timeout_ms,
		      sbx_strbuf *out)
{
	mproc_table *t = mproc_table_of(g, false);
	struct timespec until = sbx_mono_deadline(timeout_ms);
	int rc = -1;
	mproc *p;

	if (t == NULL)
		return -1;
	pthread_mutex_lock(&t->lock);
	for (;;) {
		p = mproc_find(t, id);
		if (p == NULL || atomic_load(&t->stopping))
			break;
		rc = events_since(p, after, first, out);
		first = false;
		if (rc == 1 || out->len > 0 ||
		    pthread_cond_timedwait(&t->cv, &t->lock, &until) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&t->lock);
	return p == NULL ? -1 : rc;
}

/* ---- control ---- */

/* The process (lock taken: the caller unlocks t), or NULL with a 404. */
static mproc *locked_find(mock_guest *g, const char *id, mproc_table **tp, int *status,
			  sbx_err *err)
{
	mproc_table *t = mproc_table_of(g, false);
	mproc *p = NULL;

	*tp = t;
	if (t != NULL) {
		pthread_mutex_lock(&t->lock);
		p = mproc_find(t, id);
		if (p == NULL)
			pthread_mutex_unlock(&t->lock);
	}
	if (p == NULL) {
		*status = 404;
		sbx_err_set(err, "process %s not found", id);
	}
	return p;
}

/* locked_find for calls that answer NULL for "no such process". */
static mproc *locked_get(mock_guest *g, const char *id, mproc_table **tp)
{
	int status;
	sbx_err err;

	return locked_find(g, id, tp, &status, &err);
}

/* Writes all of data to fd (non-blocking), waiting for room up to the
 * deadline. 0, or -1 with errno (ETIMEDOUT: the process is not reading). */
static int write_all(int fd, const char *data, size_t len)
{
	int64_t end = sbx_mono_ms() + INPUT_DEADLINE_MS;

	while (len > 0) {
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		ssize_t w = write(fd, data, len);

		if (w > 0) {
			data += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (sbx_mono_ms() >= end) {
			errno = ETIMEDOUT;
			return -1;
		}
		poll(&pf, 1, 100);
	}
	return 0;
}

/* The descriptor input goes to, duplicated (lock held), and p held
 * (waiters) so that it outlives the write made without the lock; -1 with
 * *status and err when there is none. */
static int input_fd(mproc *p, const char *id, int *status, sbx_err *err)
{
	int fd = p->pty ? p->master : p->in_fd;

	*status = 409;
	if (p->tree_exited || fd < 0) {
		sbx_err_set(err, "process %s %s", id,
			    p->tree_exited ? "has exited" : "has its stdin closed");
		return -1;
	}
	fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0) {
		*status = 500;
		sbx_err_set(err, "process %s: input: %s", id, strerror(errno));
		return -1;
	}
	p->waiters++;
	return fd;
}

/* Writes without the table lock: a process slow to read its input never
 * holds up the reader threads of the others. */
int mock_mproc_input(mock_guest *g, const char *id, const void *data, size_t len, uint64_t *seq,
		     int *status, sbx_err *err)
{
	mproc_table *t;
	mproc *p = locked_find(g, id, &t, status, err);
	int fd, rc, werr;

	if (p == NULL)
		return -1;
	fd = input_fd(p, id, status, err);
	pthread_mutex_unlock(&t->lock);
	if (fd < 0)
		return -1;
	rc = write_all(fd, data, len);
	werr = errno;
	close(fd);
	pthread_mutex_lock(&t->lock);
	p->waiters--;
	if (rc == 0)
		*seq = ++p->input_seq;
	pthread_mutex_unlock(&t->lock);
	if (rc != 0) {
		*status = werr == ETIMEDOUT ? 503 : 409;
		sbx_err_set(err, "process %s: input: %s", id,
			    werr == ETIMEDOUT
				    ? "not read within 5 s (the process is not reading stdin)"
				    : strerror(werr));
	}
	return rc;
}

int mock_mproc_stdin_close(mock_guest *g, const char *id, int *status, sbx_err *err)
{
	mproc_table *t;
	mproc *p = locked_find(g, id, &t, status, err);
	int rc = -1;

	if (p == NULL)
		return -1;
	if (p->pty) {
		*status = 409;
		sbx_err_set(err,
			    "process %s is a PTY: it has no stdin pipe to close (send ^D, \\u0004, "
			    "as input)",
			    id);
	} else {
		if (p->in_fd >= 0)
			close(p->in_fd);
		p->in_fd = -1;
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int mock_mproc_resize(mock_guest *g, const char *id, unsigned rows, unsigned cols, int *status,
		      sbx_err *err)
{
	mproc_table *t;
	mproc *p = locked_find(g, id, &t, status, err);
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	int rc = -1;

	if (p == NULL)
		return -1;
	*status = 409;
	if (!p->pty) {
		sbx_err_set(err, "process %s is pipe-backed: only a PTY can be resized", id);
	} else if (ioctl(p->master, TIOCSWINSZ, &ws) != 0) {
		sbx_err_set(err, "process %s: resize: %s", id, strerror(errno));
	} else {
		p->rows = rows; /* the kernel sent SIGWINCH to its foreground group */
		p->cols = cols;
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int mock_mproc_signal(mock_guest *g, const char *id, int sig, int *status, sbx_err *err)
{
	mproc_table *t;
	mproc *p = locked_find(g, id, &t, status, err);
	pid_t pgid;
	bool gone;

	if (p == NULL)
		return -1;
	pgid = p->pid;
	gone = p->tree_exited;
	pthread_mutex_unlock(&t->lock);
	if (gone) {
		*status = 409;
		sbx_err_set(err, "process %s has exited", id);
		return -1;
	}
	mproc_group_signal(g, pgid, sig);
	return 0;
}

/* Waits (lock held) until p's leader (tree: its tree) exited or the
 * deadline. */
static void wait_cond(mproc_table *t, const mproc *p, bool tree, struct timespec until,
		      bool (*stop)(void *), void *arg)
{
	while (!(tree ? p->tree_exited : p->leader_exited) && !atomic_load(&t->stopping)) {
		struct timespec slice = sbx_mono_deadline(200);
		bool last = slice.tv_sec > until.tv_sec ||
			    (slice.tv_sec == until.tv_sec && slice.tv_nsec >= until.tv_nsec);

		if (stop != NULL && stop(arg))
			return;
		if (pthread_cond_timedwait(&t->cv, &t->lock, last ? &until : &slice) == ETIMEDOUT &&
		    last)
			return;
	}
}

/* wait_cond, p held (p->waiters) so that no create evicts and frees it
 * while the lock is released in the wait. */
static void wait_locked(mproc_table *t, mproc *p, bool tree, struct timespec until,
			bool (*stop)(void *), void *arg)
{
	p->waiters++;
	wait_cond(t, p, tree, until, stop, arg);
	p->waiters--;
}

cJSON *mock_mproc_wait(mock_guest *g, const char *id, bool tree, int64_t timeout_ms,
		       bool (*stop)(void *arg), void *arg)
{
	mproc_table *t;
	mproc *p = locked_get(g, id, &t);
	cJSON *v;

	if (p == NULL)
		return NULL;
	wait_locked(t, p, tree, sbx_mono_deadline(timeout_ms), stop, arg);
	v = mproc_view(p);
	pthread_mutex_unlock(&t->lock);
	return v;
}

cJSON *mock_mproc_terminate(mock_guest *g, const char *id, int64_t grace_ms)
{
	mproc_table *t;
	mproc *p = locked_get(g, id, &t);
	cJSON *v;

	if (p == NULL)
		return NULL;
	if (!p->tree_exited) {
		if (p->state == MPROC_RUNNING)
			p->state = MPROC_TERMINATING;
		mproc_group_signal(g, p->pid, grace_ms > 0 ? SIGTERM : SIGKILL);
		if (grace_ms > 0)
			wait_locked(t, p, true, sbx_mono_deadline(grace_ms), NULL, NULL);
		if (!p->tree_exited) {
			mproc_group_signal(g, p->pid, SIGKILL);
			wait_locked(t, p, true, sbx_mono_deadline(TERMINATE_EXTRA_MS), NULL, NULL);
		}
	}
	v = mproc_view(p);
	pthread_mutex_unlock(&t->lock);
	return v;
}

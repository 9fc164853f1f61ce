/* self_listen: the per-sandbox self-signal listeners of contained mode and
 * the record of which listener accepted which connection; see self_listen.h.
 *
 * One acceptor thread waits (epoll) on every registered listener and on an
 * eventfd that wakes it to stop. It accepts under the registry lock, so a
 * listener being removed is never accepted on after its removal, records
 * connection fd -> sandbox id, and hands the connection to the self-signal
 * daemon (MHD_add_connection). The daemon's connection callback marks the
 * record attached when MHD starts serving it and erases it before MHD
 * closes the socket, so every attached fd in the record is open while the
 * lock is held: removal may shut it down safely.
 *
 * Must never take the identity of a connection from anything but the
 * listener that accepted it, never call into MHD with the lock held (MHD
 * calls back into it), and never shut down a connection not yet attached
 * (MHD may already have closed and reused its fd). */
#define _GNU_SOURCE
#include "listen/self_listen.h"

#include "http/request.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#define SL_ACCEPT_BATCH 64 /* connections taken per wake-up of one listener */
/* Open connections per sandbox: one guest holding many open cannot use up
 * the ones every sandbox shares. In all: half the daemon's limit
 * (server.c), so MHD never refuses one itself (at its limit, libmicrohttpd
 * 0.9.75 was seen to hang in MHD_stop_daemon after external adds). */
#define SL_CONNS_PER_SANDBOX 32
#define SL_CONNS_MAX (SBX_SELF_CONN_LIMIT / 2)

typedef struct sl_listener {
	int fd;
	char id[MOCK_ID_MAX];
} sl_listener;

typedef struct sl_conn {
	int fd;
	char id[MOCK_ID_MAX];
	bool attached; /* MHD notified STARTED and not yet CLOSED */
} sl_conn;

struct mock_self_listen {
	pthread_mutex_t lock;
	int epfd;
	int wakefd;
	pthread_t thread;
	bool running;  /* the acceptor thread is to be joined */
	bool stopping; /* no more listeners, no more accepts */
	sl_listener *ls;
	size_t nls, capls;
	sl_conn *cs;
	size_t ncs, capcs;
};

/* Room for one more element in *arr (n used of *cap); 0 or -1. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap == 0 ? 16 : *cap * 2;
	p = realloc(*arr, ncap * elem);
	if (p == NULL)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

static sl_listener *find_listener(struct mock_self_listen *sl, int fd)
{
	for (size_t i = 0; i < sl->nls; i++) {
		if (sl->ls[i].fd == fd)
			return &sl->ls[i];
	}
	return NULL;
}

static sl_conn *find_conn(struct mock_self_listen *sl, int fd)
{
	for (size_t i = 0; i < sl->ncs; i++) {
		if (sl->cs[i].fd == fd)
			return &sl->cs[i];
	}
	return NULL;
}

/* Records fd as accepted for id; replaces a stale record of the same fd
 * (only this thread inserts, and an fd in use is never reused). Lock held. */
static int conn_insert(struct mock_self_listen *sl, int fd, const char *id)
{
	sl_conn *c = find_conn(sl, fd);

	if (c == NULL) {
		if (grow((void **)&sl->cs, &sl->capcs, sl->ncs, sizeof(*sl->cs)) != 0)
			return -1;
		c = &sl->cs[sl->ncs++];
	}
	c->fd = fd;
	c->attached = false;
	snprintf(c->id, sizeof(c->id), "%s", id);
	return 0;
}

static size_t conns_of(const struct mock_self_listen *sl, const char *id)
{
	size_t n = 0;

	for (size_t i = 0; i < sl->ncs; i++)
		n += strcmp(sl->cs[i].id, id) == 0;
	return n;
}

static void conn_erase(struct mock_self_listen *sl, sl_conn *c)
{
	*c = sl->cs[--sl->ncs];
}

/* Closes the listener at index i and drops it from the epoll set. Lock held. */
static void listener_close(struct mock_self_listen *sl, size_t i)
{
	epoll_ctl(sl->epfd, EPOLL_CTL_DEL, sl->ls[i].fd, NULL);
	/* shutdown acts on the socket, not this descriptor: it stops listening
	 * (TCP resets its backlog; a Unix socket refuses) even while a copy
	 * lives in a cell clone that has not yet closed what it inherited. A
	 * close alone leaves the port open until the last copy goes. */
	shutdown(sl->ls[i].fd, SHUT_RDWR);
	close(sl->ls[i].fd);
	sl->ls[i] = sl->ls[--sl->nls];
}

/* Accepts one connection on listener lfd and records it: the new fd, or
 * -1 with errno: EAGAIN (nothing to accept, or the listener is gone),
 * ECONNREFUSED (accepted and closed: its sandbox has its share open, or
 * the daemon holds SL_CONNS_MAX), else
 * accept's. */
static int accept_one(struct mock_self_listen *sl, int lfd, struct sockaddr_storage *ss,
		      socklen_t *len)
{
	const sl_listener *l;
	int cfd = -1;

	pthread_mutex_lock(&sl->lock);
	l = find_listener(sl, lfd);
	errno = EAGAIN;
	if (l == NULL || sl->stopping)
		goto out_unlock;
	*len = sizeof(*ss);
	cfd = accept4(lfd, (struct sockaddr *)ss, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0)
		goto out_unlock;
	if (sl->ncs >= SL_CONNS_MAX || conns_of(sl, l->id) >= SL_CONNS_PER_SANDBOX) {
		close(cfd); /* over its share: dropped; the caller goes on */
		cfd = -1;
		errno = ECONNREFUSED;
	} else if (conn_insert(sl, cfd, l->id) != 0) {
		close(cfd);
		cfd = -1;
		errno = ENOMEM;
	}
out_unlock:
	pthread_mutex_unlock(&sl->lock);
	return cfd;
}

/* Takes up to SL_ACCEPT_BATCH connections from listener lfd to the daemon. */
static void accept_from(sbx_mock *mock, int lfd)
{
	struct mock_self_listen *sl = mock->selfl;

	for (int k = 0; k < SL_ACCEPT_BATCH; k++) {
		struct sockaddr_storage ss;
		socklen_t len = 0;
		int cfd = accept_one(sl, lfd, &ss, &len);
		sl_conn *c;

		if (cfd < 0 && errno == ECONNREFUSED)
			continue;
		if (cfd < 0) {
			/* out of fds or memory: do not spin on a ready listener */
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				usleep(10000);
			return;
		}
		if (MHD_add_connection(mock->self_daemon, cfd, (struct sockaddr *)&ss, len) == MHD_YES)
			continue;
		/* MHD closed cfd without serving it; nobody else inserts, so the
		 * record is still this connection's */
		pthread_mutex_lock(&sl->lock);
		c = find_conn(sl, cfd);
		if (c != NULL && !c->attached)
			conn_erase(sl, c);
		pthread_mutex_unlock(&sl->lock);
	}
}

static void *acceptor_main(void *arg)
{
	sbx_mock *mock = arg;
	struct mock_self_listen *sl = mock->selfl;
	struct epoll_event ev[16];
	bool stop = false;

	while (!stop) {
		int n = epoll_wait(sl->epfd, ev, 16, -1);

		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			if (ev[i].data.fd == sl->wakefd) {
				uint64_t v;

				if (read(sl->wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
					stop = true;
			} else {
				accept_from(mock, ev[i].data.fd);
			}
		}
		pthread_mutex_lock(&sl->lock);
		stop = stop || sl->stopping;
		pthread_mutex_unlock(&sl->lock);
	}
	return NULL;
}

int mock_self_listen_start(sbx_mock *mock, sbx_err *err)
{
	struct mock_self_listen *sl = calloc(1, sizeof(*sl));
	struct epoll_event ev = {.events = EPOLLIN};

	if (sl == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	sl->epfd = -1;
	sl->wakefd = -1;
	if (pthread_mutex_init(&sl->lock, NULL) != 0) {
		sbx_err_set(err, "self-signal listeners: mutex: %s", strerror(errno));
		goto out_free;
	}
	sl->epfd = epoll_create1(EPOLL_CLOEXEC);
	sl->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ev.data.fd = sl->wakefd;
	if (sl->epfd < 0 || sl->wakefd < 0 || epoll_ctl(sl->epfd, EPOLL_CTL_ADD, sl->wakefd, &ev) != 0) {
		sbx_err_set(err, "self-signal listeners: epoll: %s", strerror(errno));
		goto out_close;
	}
	mock->selfl = sl;
	if (pthread_create(&sl->thread, NULL, acceptor_main, mock) != 0) {
		sbx_err_set(err, "self-signal listeners: thread: %s", strerror(errno));
		mock->selfl = NULL;
		goto out_close;
	}
	sl->running = true;
	return 0;

out_close:
	if (sl->epfd >= 0)
		close(sl->epfd);
	if (sl->wakefd >= 0)
		close(sl->wakefd);
	pthread_mutex_destroy(&sl->lock);
out_free:
	free(sl);
	return -1;
}

void mock_self_listen_stop(sbx_mock *mock)
{
	struct mock_self_listen *sl = mock->selfl;
	uint64_t one = 1;

	if (sl == NULL)
		return;
	pthread_mutex_lock(&sl->lock);
	sl->stopping = true;
	while (sl->nls > 0)
		listener_close(sl, sl->nls - 1);
	pthread_mutex_unlock(&sl->lock);
	if (sl->running) {
		if (write(sl->wakefd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			fprintf(stderr, "sbx-mock: self-signal acceptor: wake: %s\n", strerror(errno));
		pthread_join(sl->thread, NULL);
		sl->running = false;
	}
}

void mock_self_listen_free(sbx_mock *mock)
{
	struct mock_self_listen *sl = mock->selfl;

	if (sl == NULL)
		return;
	mock_self_listen_stop(mock);
	mock->selfl = NULL;
	close(sl->epfd);
	close(sl->wakefd);
	pthread_mutex_destroy(&sl->lock);
	free(sl->ls);
	free(sl->cs);
	free(sl);
}

uint16_t mock_self_guest_port(const sbx_mock *mock)
{
	return mock->selfl != NULL ? mock->self_port : 0;
}

/* The fd is a listening stream socket: made non-blocking (the acceptor
 * must never block in accept) and close-on-exec. */
static bool usable_listener(int fd)
{
	int v = 0, type = 0, fl;
	socklen_t len = sizeof(v), tlen = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) != 0 || v != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 || type != SOCK_STREAM)
		return false;
	fl = fcntl(fd, F_GETFL);
	return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0 &&
	       fcntl(fd, F_SETFD, FD_CLOEXEC) == 0;
}

int mock_self_listen_add(sbx_mock *mock, int fd, const char *sandbox_id)
{
	struct mock_self_listen *sl = mock->selfl;
	struct epoll_event ev = {.events = EPOLLIN};
	int e = EINVAL;

	if (sl == NULL) {
		e = ENOTSUP;
		goto out_close;
	}
	if (fd < 0 || sandbox_id == NULL || sandbox_id[0] == '\0' ||
	    strlen(sandbox_id) >= MOCK_ID_MAX || !usable_listener(fd))
		goto out_close;
	pthread_mutex_lock(&sl->lock);
	e = sl->stopping ? ESHUTDOWN : ENOMEM;
	if (sl->stopping || grow((void **)&sl->ls, &sl->capls, sl->nls, sizeof(*sl->ls)) != 0)
		goto out_unlock;
	ev.data.fd = fd;
	if (epoll_ctl(sl->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		e = errno;
		goto out_unlock;
	}
	sl->ls[sl->nls].fd = fd;
	snprintf(sl->ls[sl->nls].id, sizeof(sl->ls[sl->nls].id), "%s", sandbox_id);
	sl->nls++;
	pthread_mutex_unlock(&sl->lock);
	return 0;

out_unlock:
	pthread_mutex_unlock(&sl->lock);
out_close:
	if (fd >= 0)
		close(fd);
	errno = e;
	return -1;
}

void mock_self_listen_remove(sbx_mock *mock, const char *sandbox_id)
{
	struct mock_self_listen *sl = mock->selfl;
	size_t i = 0;

	if (sl == NULL || sandbox_id == NULL)
		return;
	pthread_mutex_lock(&sl->lock);
	while (i < sl->nls) {
		if (strcmp(sl->ls[i].id, sandbox_id) == 0)
			listener_close(sl, i);
		else
			i++;
	}
	i = 0;
	while (i < sl->ncs) {
		sl_conn *c = &sl->cs[i];

		if (strcmp(c->id, sandbox_id) != 0) {
			i++;
			continue;
		}
		/* attached: open until MHD's CLOSED, which waits for this lock */
		if (c->attached)
			shutdown(c->fd, SHUT_RDWR);
		conn_erase(sl, c);
	}
	pthread_mutex_unlock(&sl->lock);
}

void mock_self_listen_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
				    enum MHD_ConnectionNotificationCode toe)
{
	sbx_mock *mock = cls;
	struct mock_self_listen *sl = mock->selfl;
	int fd = mock_conn_fd(conn);
	sl_conn *c;

	(void)socket_context;
	if (sl == NULL || fd < 0)
		return;
	pthread_mutex_lock(&sl->lock);
	c = find_conn(sl, fd);
	if (c != NULL && toe == MHD_CONNECTION_NOTIFY_STARTED)
		c->attached = true;
	else if (c != NULL)
		conn_erase(sl, c);
	pthread_mutex_unlock(&sl->lock);
}

bool mock_self_listen_caller(sbx_mock *mock, struct MHD_Connection *conn, char *id, size_t cap)
{
	struct mock_self_listen *sl = mock->selfl;
	int fd = mock_conn_fd(conn);
	const sl_conn *c;
	bool found = false;

	if (sl == NULL || fd < 0)
		return false;
	pthread_mutex_lock(&sl->lock);
	c = find_conn(sl, fd);
	if (c != NULL) {
		snprintf(id, cap, "%s", c->id);
		found = true;
	}
	pthread_mutex_unlock(&sl->lock);
	return found;
}

/* linger: the graceful close of a connection answered while its request
 * was still arriving (RFC 9112 9.6), as nginx's lingering close does.
 *
 * A 413, or a 400 on framing, is answered before the body has been read.
 * Closing such a socket with unread bytes makes the kernel send RST, and
 * the RST can reach the client before it has read the answer: a client
 * still sending (Node's fetch, Python's http.client: no Expect:
 * 100-continue) sees EPIPE or ECONNRESET and no answer at all (an SDK then
 * retries an idempotent upload, sending it again). So when MHD closes such
 * a connection, its socket is kept open here: the write side is shut (the
 * client reads the answer and a FIN), and what the client still sends is
 * read and dropped until it closes, or a bound is reached (LINGER_*), then
 * the socket is closed. One thread serves every lingering socket (epoll):
 * no worker and no MHD thread ever waits for a slow sender.
 *
 * MHD notifies CLOSED before it closes its descriptor (chaos.c): the
 * socket is dup'ed then, so MHD's close leaves it open. */
#define _GNU_SOURCE
#include "server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* The documented bounds (mock-api/README.md, HTTP framing): a lingering
 * socket is closed when its client has sent nothing for LINGER_IDLE_MS,
 * after LINGER_TOTAL_MS in all, or past LINGER_MAX_BYTES read; at most
 * LINGER_MAX_SOCKETS linger at once (past it a socket closes at once, as
 * before). A close at a bound may still reset the connection: that is the
 * price of never holding a socket for an endless sender. */
#define LINGER_IDLE_MS 2000
#define LINGER_TOTAL_MS 10000
#define LINGER_MAX_BYTES ((uint64_t)128 * 1024 * 1024)
#define LINGER_MAX_SOCKETS 64
#define LINGER_MAX_MARKED 256

typedef struct lsock {
	int fd;
	int64_t start_us, last_us;
	uint64_t bytes;
} lsock;

struct mock_linger {
	pthread_mutex_t lock;
	pthread_t thread;
	int epfd, wakefd;
	atomic_bool stop;
	/* connections whose close is to linger (linger_mark), by descriptor */
	int marked[LINGER_MAX_MARKED];
	size_t nmarked;
	lsock socks[LINGER_MAX_SOCKETS];
	size_t nsocks;
};

static void drop_locked(struct mock_linger *l, size_t i)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, l->socks[i].fd, NULL);
	close(l->socks[i].fd);
	l->socks[i] = l->socks[--l->nsocks];
}

static int64_t deadline_us(const lsock *s)
{
	int64_t idle = s->last_us + (int64_t)LINGER_IDLE_MS * 1000;
	int64_t total = s->start_us + (int64_t)LINGER_TOTAL_MS * 1000;

	return idle < total ? idle : total;
}

/* Reads and drops what socket i holds; false when it is done with (the
 * client closed, an error, or the byte bound). */
static bool drain(lsock *s, int64_t now)
{
	static char sink[65536]; /* only the linger thread reads into it */

	for (;;) {
		ssize_t n = recv(s->fd, sink, sizeof(sink), MSG_DONTWAIT);

		if (n > 0) {
			s->bytes += (uint64_t)n;
			s->last_us = now;
			if (s->bytes > LINGER_MAX_BYTES)
				return false;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
	}
}

static void *linger_main(void *arg)
{
	struct mock_linger *l = arg;
	struct epoll_event ev[16];

	while (!atomic_load(&l->stop)) {
		int64_t now = sbx_mono_us(), next = now + (int64_t)LINGER_TOTAL_MS * 1000;
		int n, timeout_ms;

		pthread_mutex_lock(&l->lock);
		for (size_t i = 0; i < l->nsocks; i++) {
			if (deadline_us(&l->socks[i]) < next)
				next = deadline_us(&l->socks[i]);
		}
		pthread_mutex_unlock(&l->lock);
		timeout_ms = next > now ? (int)((next - now + 999) / 1000) : 0;
		n = epoll_wait(l->epfd, ev, 16, timeout_ms);
		now = sbx_mono_us();
		pthread_mutex_lock(&l->lock);
		for (int k = 0; k < n; k++) {
			uint64_t count;

			if (ev[k].data.fd == l->wakefd && read(l->wakefd, &count, sizeof(count)) >= 0)
				continue; /* a socket was added: its deadline counts now */
			for (size_t i = 0; i < l->nsocks; i++) {
				if (l->socks[i].fd == ev[k].data.fd) {
					if (!drain(&l->socks[i], now))
						drop_locked(l, i);
					break;
				}
			}
		}
		for (size_t i = 0; i < l->nsocks;) {
			if (deadline_us(&l->socks[i]) <= now)
				drop_locked(l, i); /* a slow or endless sender: cut */
			else
				i++;
		}
		pthread_mutex_unlock(&l->lock);
	}
	return NULL;
}

int linger_init(sbx_mock *mock)
{
	struct mock_linger *l = calloc(1, sizeof(*l));
	struct epoll_event ev = {.events = EPOLLIN};

	if (l == NULL)
		return -1;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ev.data.fd = l->wakefd;
	if (l->epfd < 0 || l->wakefd < 0 || pthread_mutex_init(&l->lock, NULL) != 0)
		goto out_free;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev) != 0 ||
	    pthread_create(&l->thread, NULL, linger_main, l) != 0) {
		pthread_mutex_destroy(&l->lock);
		goto out_free;
	}
	mock->srv->linger = l;
	return 0;

out_free:
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->wakefd >= 0)
		close(l->wakefd);
	free(l);
	return -1;
}

void linger_free(sbx_mock *mock)
{
	struct mock_linger *l = mock->srv->linger;
	uint64_t one = 1;

	if (l == NULL)
		return;
	atomic_store(&l->stop, true);
	if (write(l->wakefd, &one, sizeof(one)) < 0) {
		/* the eventfd cannot be full; the thread still ends at its
		 * next deadline */
	}
	pthread_join(l->thread, NULL);
	while (l->nsocks > 0)
		drop_locked(l, 0);
	close(l->epfd);
	close(l->wakefd);
	pthread_mutex_destroy(&l->lock);
	free(l);
	mock->srv->linger = NULL;
}

void linger_mark(sbx_mock *mock, int fd)
{
	struct mock_linger *l = mock->srv->linger;

	if (l == NULL || fd < 0)
		return;
	pthread_mutex_lock(&l->lock);
	if (l->nmarked < LINGER_MAX_MARKED)
		l->marked[l->nmarked++] = fd;
	pthread_mutex_unlock(&l->lock);
}

/* True when the socket was set to close abortively (a reset fault): that
 * RST is wanted. */
static bool abortive(int fd)
{
	struct linger lg;
	socklen_t len = sizeof(lg);

	return getsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, &len) == 0 && lg.l_onoff != 0 &&
	       lg.l_linger == 0;
}

void linger_on_close(sbx_mock *mock, int fd)
{
	struct mock_linger *l = mock->srv->linger;
	bool marked = false;
	int pending = 0, dup_fd;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP};
	int64_t now = sbx_mono_us();

	if (l == NULL || fd < 0)
		return;
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->nmarked; i++) {
		if (l->marked[i] == fd) {
			l->marked[i] = l->marked[--l->nmarked];
			marked = true;
			break;
		}
	}
	/* Unmarked: a close with unread bytes (libmicrohttpd's own 431 or
	 * 400, a request sent behind a Connection: close answer) would reset
	 * the connection just the same. */
	if ((!marked && (ioctl(fd, FIONREAD, &pending) != 0 || pending == 0)) || abortive(fd) ||
	    l->nsocks == LINGER_MAX_SOCKETS || atomic_load(&l->stop)) {
		pthread_mutex_unlock(&l->lock);
		return;
	}
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd >= 0) {
		shutdown(dup_fd, SHUT_WR); /* the answer is out: the client reads a FIN */
		ev.data.fd = dup_fd;
		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, dup_fd, &ev) == 0) {
			uint64_t one = 1;

			l->socks[l->nsocks++] = (lsock){.fd = dup_fd, .start_us = now, .last_us = now};
			if (write(l->wakefd, &one, sizeof(one)) < 0) {
				/* full: the thread is woken already */
			}
		} else {
			close(dup_fd);
		}
	}
	pthread_mutex_unlock(&l->lock);
}

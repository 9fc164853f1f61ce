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
 * no worker and no MHD thread ever waits for a slow sender, nor for that
 * thread: it reads with no lock held (the sockets it serves are its own;
 * a close hands it a new one through a short queue under the lock) and at
 * most LINGER_READ_TURN bytes of one socket per wake, so a fast sender
 * neither holds up the MHD thread closing the next connection nor starves
 * the other lingering sockets.
 *
 * A mark (an early answer) names its connection by descriptor and by the
 * connection's serial (chaos.c): descriptor numbers are reused as soon as
 * MHD closes one, so a mark by number alone, left over, would make a later
 * connection on that number linger; and every close clears what is marked
 * for its descriptor.
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

/* The documented bounds (mock-api/LIMITS.md, README.md Limits): a lingering
 * socket is closed when its client has sent nothing for LINGER_IDLE_MS,
 * after LINGER_TOTAL_MS in all, or past LINGER_MAX_BYTES read; at most
 * LINGER_MAX_SOCKETS linger at once (past it a socket closes at once, as
 * before). A close at a bound may still reset the connection: that is the
 * price of never holding a socket for an endless sender. LINGER_READ_TURN:
 * what one socket may read per wake of the thread (epoll is level
 * triggered: a socket with more is reported again at once). */
#define LINGER_IDLE_MS 2000
#define LINGER_TOTAL_MS 10000
#define LINGER_MAX_BYTES ((uint64_t)128 * 1024 * 1024)
#define LINGER_MAX_SOCKETS 64
#define LINGER_MAX_MARKED 256
#define LINGER_SINK 65536
#define LINGER_READ_TURN (4 * LINGER_SINK)

typedef struct lsock {
	int fd;
	int64_t start_us, last_us;
	uint64_t bytes;
} lsock;

typedef struct lmark {
	int fd;
	uint64_t conn; /* the connection's serial: fd numbers are reused */
} lmark;

struct mock_linger {
	pthread_t thread;
	int epfd, wakefd;
	atomic_bool stop;
	/* lock guards marked, incoming and nlive; the thread never holds it
	 * across a read */
	pthread_mutex_t lock;
	lmark marked[LINGER_MAX_MARKED]; /* connections whose close is to linger */
	size_t nmarked;
	lsock incoming[LINGER_MAX_SOCKETS]; /* closed, not yet taken by the thread */
	size_t nincoming;
	size_t nlive; /* incoming and socks: LINGER_MAX_SOCKETS bounds both */
	/* the thread's own (no lock): the sockets it serves */
	lsock socks[LINGER_MAX_SOCKETS];
	size_t nsocks;
	char sink[LINGER_SINK];
};

static void wake(struct mock_linger *l)
{
	uint64_t one = 1;

	if (write(l->wakefd, &one, sizeof(one)) < 0) {
		/* full: the thread is woken already */
	}
}

/* Closes the thread's socket i (its slot taken by the last). */
static void drop(struct mock_linger *l, size_t i)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, l->socks[i].fd, NULL);
	close(l->socks[i].fd);
	l->socks[i] = l->socks[--l->nsocks];
	pthread_mutex_lock(&l->lock);
	l->nlive--;
	pthread_mutex_unlock(&l->lock);
}

/* Takes the sockets closes handed over into the thread's own set. */
static void adopt(struct mock_linger *l)
{
	lsock in[LINGER_MAX_SOCKETS];
	size_t n;

	pthread_mutex_lock(&l->lock);
	n = l->nincoming;
	memcpy(in, l->incoming, n * sizeof(in[0]));
	l->nincoming = 0;
	pthread_mutex_unlock(&l->lock);
	for (size_t k = 0; k < n; k++) {
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = in[k].fd};

		/* nlive counted it: nsocks stays within LINGER_MAX_SOCKETS */
		l->socks[l->nsocks++] = in[k];
		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, in[k].fd, &ev) != 0)
			drop(l, l->nsocks - 1);
	}
}

static int64_t deadline_us(const lsock *s)
{
	int64_t idle = s->last_us + (int64_t)LINGER_IDLE_MS * 1000;
	int64_t total = s->start_us + (int64_t)LINGER_TOTAL_MS * 1000;

	return idle < total ? idle : total;
}

/* Reads and drops what s holds, at most LINGER_READ_TURN bytes; false
 * when it is done with (the client closed, an error, or the byte bound). */
static bool drain(struct mock_linger *l, lsock *s, int64_t now)
{
	for (size_t turn = 0; turn < LINGER_READ_TURN;) {
		ssize_t n = recv(s->fd, l->sink, sizeof(l->sink), MSG_DONTWAIT);

		if (n > 0) {
			s->bytes += (uint64_t)n;
			s->last_us = now;
			turn += (size_t)n;
			if (s->bytes > LINGER_MAX_BYTES)
				return false;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
	}
	return true; /* more to read: epoll reports it again */
}

static void serve(struct mock_linger *l, const struct epoll_event *ev, int n, int64_t now)
{
	for (int k = 0; k < n; k++) {
		uint64_t count;

		if (ev[k].data.fd == l->wakefd) {
			if (read(l->wakefd, &count, sizeof(count)) < 0) {
				/* nothing to reset: another wake read it */
			}
			continue;
		}
		for (size_t i = 0; i < l->nsocks; i++) {
			if (l->socks[i].fd == ev[k].data.fd) {
				if (!drain(l, &l->socks[i], now))
					drop(l, i);
				break;
			}
		}
	}
	for (size_t i = 0; i < l->nsocks;) {
		if (deadline_us(&l->socks[i]) <= now)
			drop(l, i); /* a slow or endless sender: cut */
		else
			i++;
	}
}

static void *linger_main(void *arg)
{
	struct mock_linger *l = arg;
	struct epoll_event ev[16];

	while (!atomic_load(&l->stop)) {
		int64_t now = sbx_mono_us(), next = now + (int64_t)LINGER_TOTAL_MS * 1000;
		int n, timeout_ms;

		adopt(l);
		for (size_t i = 0; i < l->nsocks; i++) {
			if (deadline_us(&l->socks[i]) < next)
				next = deadline_us(&l->socks[i]);
		}
		timeout_ms = next > now ? (int)((next - now + 999) / 1000) : 0;
		n = epoll_wait(l->epfd, ev, 16, timeout_ms);
		serve(l, ev, n, sbx_mono_us());
	}
	return NULL;
}

struct mock_linger *linger_new(void)
{
	struct mock_linger *l = calloc(1, sizeof(*l));
	struct epoll_event ev = {.events = EPOLLIN};

	if (l == NULL)
		return NULL;
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
	return l;

out_free:
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->wakefd >= 0)
		close(l->wakefd);
	free(l);
	return NULL;
}

void linger_free(struct mock_linger *l)
{
	if (l == NULL)
		return;
	atomic_store(&l->stop, true);
	wake(l);
	pthread_join(l->thread, NULL);
	adopt(l); /* what closes handed over since the thread's last turn */
	while (l->nsocks > 0)
		drop(l, 0);
	close(l->epfd);
	close(l->wakefd);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

void linger_mark(struct mock_linger *l, int fd, uint64_t conn)
{
	if (l == NULL || fd < 0)
		return;
	pthread_mutex_lock(&l->lock);
	if (l->nmarked < LINGER_MAX_MARKED)
		l->marked[l->nmarked++] = (lmark){.fd = fd, .conn = conn};
	pthread_mutex_unlock(&l->lock);
}

/* Clears every mark for fd (it is closing: a mark by its number is stale
 * from now on); true when one was this connection's. */
static bool take_marks_locked(struct mock_linger *l, int fd, uint64_t conn)
{
	bool mine = false;

	for (size_t i = 0; i < l->nmarked;) {
		if (l->marked[i].fd == fd) {
			mine = mine || l->marked[i].conn == conn;
			l->marked[i] = l->marked[--l->nmarked];
		} else {
			i++;
		}
	}
	return mine;
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

void linger_on_close(struct mock_linger *l, int fd, uint64_t conn)
{
	bool marked, taken = false;
	int pending = 0, dup_fd;

	if (l == NULL || fd < 0)
		return;
	pthread_mutex_lock(&l->lock);
	marked = take_marks_locked(l, fd, conn);
	pthread_mutex_unlock(&l->lock);
	/* Unmarked: a close with unread bytes (libmicrohttpd's own 431 or
	 * 400, a request sent behind a Connection: close answer) would reset
	 * the connection just the same. */
	if ((!marked && (ioctl(fd, FIONREAD, &pending) != 0 || pending == 0)) || abortive(fd))
		return;
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return;
	/* before the hand-over: from then on the thread may close dup_fd */
	shutdown(dup_fd, SHUT_WR); /* the answer is out: the client reads a FIN */
	pthread_mutex_lock(&l->lock);
	if (l->nlive < LINGER_MAX_SOCKETS && !atomic_load(&l->stop)) {
		int64_t now = sbx_mono_us();

		l->incoming[l->nincoming++] = (lsock){.fd = dup_fd, .start_us = now, .last_us = now};
		l->nlive++;
		taken = true;
	}
	pthread_mutex_unlock(&l->lock);
	if (taken)
		wake(l);
	else
		close(dup_fd); /* MHD's close then closes it at once, as before */
}

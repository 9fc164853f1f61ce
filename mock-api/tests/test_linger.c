/* The lingering close (src/server/linger.c) driven alone, on socketpairs
 * playing the client's and the mock's ends of a connection:
 *   - a close (MHD's thread) is not held up while the lingering thread
 *     reads another socket;
 *   - one socket whose client sends without end does not keep the thread
 *     from the others (a bounded read per wake);
 *   - a mark left by a connection whose close was never seen does not make
 *     a later connection on the same descriptor number linger.
 * The reads are the thread's recv calls, wrapped (-Wl,--wrap=recv): the
 * test holds one at its start, or answers one socket's as a sender that
 * never stops, so each race is played in a fixed order instead of hoped
 * for. The lingering seen from the client's end (tests/early_answer_test.py
 * does it over TCP with a real client). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/server.h"

/* Every wait here ends a hang, not a race: what it waits for happens at
 * once when the code is right, never when it is wrong. */
#define HANG_S 10

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool gate_armed, gate_entered, gate_open;
	ino_t endless;         /* this socket's recv reads len bytes, always */
	uint64_t endless_read; /* what it has "read" so far */
	ino_t watch;           /* this socket's first recv is noted */
	bool watch_seen;
	uint64_t endless_at_watch;
} w = {.lock = PTHREAD_MUTEX_INITIALIZER};

ssize_t __real_recv(int fd, void *buf, size_t len, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags);

static ino_t inode_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
	ino_t ino = inode_of(fd);
	bool endless;

	pthread_mutex_lock(&w.lock);
	if (w.gate_armed) {
		w.gate_armed = false;
		w.gate_entered = true;
		pthread_cond_broadcast(&w.cond);
		while (!w.gate_open)
			pthread_cond_wait(&w.cond, &w.lock);
	}
	if (ino != 0 && ino == w.watch && !w.watch_seen) {
		w.watch_seen = true;
		w.endless_at_watch = w.endless_read;
		pthread_cond_broadcast(&w.cond);
	}
	endless = ino != 0 && ino == w.endless;
	if (endless)
		w.endless_read += len;
	pthread_mutex_unlock(&w.lock);
	/* the endless socket's one real byte stays unread: epoll keeps
	 * reporting it, as it would a sender that never stops */
	return endless ? (ssize_t)len : __real_recv(fd, buf, len, flags);
}

static void wrap_reset(void)
{
	pthread_mutex_lock(&w.lock);
	w.gate_armed = w.gate_entered = w.gate_open = w.watch_seen = false;
	w.endless = w.watch = 0;
	w.endless_read = w.endless_at_watch = 0;
	pthread_mutex_unlock(&w.lock);
}

/* Waits (w.lock held) until *flag, at most HANG_S: whether it came. */
static bool wait_locked(const bool *flag)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until); /* w.cond's clock (main) */
	until.tv_sec += HANG_S;
	while (!*flag) {
		if (pthread_cond_timedwait(&w.cond, &w.lock, &until) == ETIMEDOUT)
			return *flag;
	}
	return true;
}

static void gate_open(void)
{
	pthread_mutex_lock(&w.lock);
	w.gate_open = true;
	pthread_cond_broadcast(&w.cond);
	pthread_mutex_unlock(&w.lock);
}

/* A connection: c[0] the mock's end, c[1] the client's. */
static void conn_pair(int c[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c), 0);
}

/* MHD's close of connection serial on fd: the notice, then the close. */
static void mhd_close(struct mock_linger *l, int fd, uint64_t serial)
{
	linger_on_close(l, fd, serial);
	close(fd);
}

/* Whether the mock's end of the client's connection c1 is still open
 * (lingering): a send to a closed socketpair fails with EPIPE. */
static bool still_open(int c1)
{
	return send(c1, "z", 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1;
}

typedef struct closer {
	struct mock_linger *l;
	int fd;
	bool done;
} closer;

static void *close_marked(void *arg)
{
	closer *c = arg;

	linger_mark(c->l, c->fd, 2);
	mhd_close(c->l, c->fd, 2);
	pthread_mutex_lock(&w.lock);
	c->done = true;
	pthread_cond_broadcast(&w.cond);
	pthread_mutex_unlock(&w.lock);
	return NULL;
}

static void a_close_does_not_wait_for_a_read_in_progress(void **state)
{
	struct mock_linger *l = linger_new();
	int a[2], b[2];
	closer c;
	pthread_t t;
	bool entered, done;

	(void)state;
	assert_non_null(l);
	wrap_reset();
	conn_pair(a);
	conn_pair(b);
	linger_mark(l, a[0], 1);
	mhd_close(l, a[0], 1);
	pthread_mutex_lock(&w.lock);
	w.gate_armed = true;
	pthread_mutex_unlock(&w.lock);
	assert_int_equal(write(a[1], "x", 1), 1); /* the thread reads: held in recv */
	pthread_mutex_lock(&w.lock);
	entered = wait_locked(&w.gate_entered);
	pthread_mutex_unlock(&w.lock);
	if (!entered)
		fail_msg("the lingering thread did not read a marked socket's byte in %d s", HANG_S);
	c = (closer){.l = l, .fd = b[0]};
	assert_int_equal(pthread_create(&t, NULL, close_marked, &c), 0);
	pthread_mutex_lock(&w.lock);
	done = wait_locked(&c.done);
	pthread_mutex_unlock(&w.lock);
	gate_open();
	pthread_join(t, NULL);
	if (!done)
		fail_msg("a connection's mark and close (MHD's thread) waited while the lingering "
			 "thread read another socket: its lock is held across the read");
	assert_true(still_open(b[1])); /* and it lingers */
	linger_free(l);
	close(a[1]);
	close(b[1]);
}

static void an_endless_sender_does_not_starve_the_others(void **state)
{
	struct mock_linger *l = linger_new();
	int a[2], b[2];
	bool seen, entered;
	uint64_t at;

	(void)state;
	assert_non_null(l);
	wrap_reset();
	conn_pair(a);
	conn_pair(b);
	pthread_mutex_lock(&w.lock);
	w.endless = inode_of(a[0]);
	w.watch = inode_of(b[0]);
	w.gate_armed = true;
	pthread_mutex_unlock(&w.lock);
	linger_mark(l, a[0], 1);
	mhd_close(l, a[0], 1);
	linger_mark(l, b[0], 2);
	mhd_close(l, b[0], 2);
	assert_int_equal(write(a[1], "x", 1), 1); /* a's sender starts: held in recv */
	pthread_mutex_lock(&w.lock);
	entered = wait_locked(&w.gate_entered);
	pthread_mutex_unlock(&w.lock);
	if (!entered)
		fail_msg("the lingering thread did not read a marked socket's byte in %d s", HANG_S);
	assert_int_equal(write(b[1], "y", 1), 1); /* b's client sends while a's is read */
	gate_open();
	pthread_mutex_lock(&w.lock);
	seen = wait_locked(&w.watch_seen);
	at = w.endless_at_watch;
	pthread_mutex_unlock(&w.lock);
	if (!seen)
		fail_msg("the other lingering socket was not read in %d s beside an endless sender", HANG_S);
	if (at > 4 * 1024 * 1024)
		fail_msg("the other lingering socket was read only after the endless sender's %llu "
			 "bytes (want a bounded read per wake: at most 4 MiB before it)",
			 (unsigned long long)at);
	linger_free(l);
	close(a[1]);
	close(b[1]);
}

static void a_leftover_mark_is_not_a_later_connections(void **state)
{
	struct mock_linger *l = linger_new();
	int old[2], later[2], own[2];
	int n;
	char c;

	(void)state;
	assert_non_null(l);
	wrap_reset();
	/* connection 1 on fd n is marked; its close notice never comes */
	conn_pair(old);
	n = old[0];
	linger_mark(l, n, 1);
	close(n);
	/* connection 2 gets the number n, is answered in full and closed */
	conn_pair(later);
	if (later[0] != n) {
		assert_int_equal(dup2(later[0], n), n);
		close(later[0]);
		later[0] = n;
	}
	mhd_close(l, n, 2);
	if (still_open(later[1]))
		fail_msg("connection 1's mark on fd %d made connection 2 on the same number linger", n);
	assert_int_equal(errno, EPIPE);
	/* the check's own control: a connection with its own mark lingers,
	 * write side shut (its client reads the end of the answer) */
	conn_pair(own);
	linger_mark(l, own[0], 3);
	mhd_close(l, own[0], 3);
	assert_true(still_open(own[1]));
	assert_int_equal(read(own[1], &c, 1), 0);
	linger_free(l);
	close(old[1]);
	close(later[1]);
	close(own[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_close_does_not_wait_for_a_read_in_progress),
		cmocka_unit_test(an_endless_sender_does_not_starve_the_others),
		cmocka_unit_test(a_leftover_mark_is_not_a_later_connections),
	};

	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w.cond, &ca);
	pthread_condattr_destroy(&ca);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

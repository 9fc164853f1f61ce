/* inet_upstream: the opt-in way out (INTERNET.md, "Upstream") — sockets
 * made in the host's network namespace, and the relay that forwards a
 * guest's connection through one to the address it dialled.
 *
 * A socket belongs to the network namespace its maker's thread was in when
 * it was made; every thread of the internet's servers is in the internet's
 * namespace, and an unprivileged mock could never step back into the
 * host's. So one thread, started from the host's namespace and never
 * moved, makes the sockets (socket(2) only: connecting and relaying work
 * from any thread once the socket exists). */
#define _GNU_SOURCE
#include "internet/inet_upstream.h"

#include "sbx/sys.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONNECT_MS 5000
#define IDLE_MS 60000
#define RELAY_BUF 16384

struct mock_inet_outside {
	pthread_t thread;
	pthread_mutex_t m;
	pthread_cond_t cv;
	int want_family;   /* AF_INET/AF_INET6 asked, 0: none */
	const char *want_name; /* a name to resolve (the recorder's), NULL: none */
	int made_fd;
	char made_addr[INET6_ADDRSTRLEN]; /* its first address, "" when none */
	char made_why[128];
	bool made, quit;
};

/* The host's resolver on o's want_name (the maker's thread is in the
 * host's namespace, so its queries reach the host's servers), with the
 * lock held: a recording is slow anyway, and one name at a time keeps the
 * maker one thread. */
static void resolve_here(mock_inet_outside *o)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	int rc = getaddrinfo(o->want_name, NULL, &hints, &res);

	o->made_addr[0] = '\0';
	if (rc != 0) {
		snprintf(o->made_why, sizeof(o->made_why), "%s", gai_strerror(rc));
	} else if (res->ai_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)(void *)res->ai_addr)->sin6_addr, o->made_addr,
			  sizeof(o->made_addr));
	} else {
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr, o->made_addr,
			  sizeof(o->made_addr));
	}
	if (res != NULL)
		freeaddrinfo(res);
}

static void *outside_main(void *arg)
{
	mock_inet_outside *o = arg;

	pthread_mutex_lock(&o->m);
	for (;;) {
		while (o->want_family == 0 && o->want_name == NULL && !o->quit)
			pthread_cond_wait(&o->cv, &o->m);
		if (o->quit)
			break;
		if (o->want_name != NULL)
			resolve_here(o);
		else
			o->made_fd = socket(o->want_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		o->want_family = 0;
		o->want_name = NULL;
		o->made = true;
		pthread_cond_broadcast(&o->cv);
	}
	pthread_mutex_unlock(&o->m);
	return NULL;
}

mock_inet_outside *mock_inet_outside_start(sbx_err *err)
{
	mock_inet_outside *o = calloc(1, sizeof(*o));

	if (o == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&o->m, NULL);
	pthread_cond_init(&o->cv, NULL);
	if (pthread_create(&o->thread, NULL, outside_main, o) != 0) {
		sbx_err_set(err, "internet: upstream thread: %s", strerror(errno));
		pthread_cond_destroy(&o->cv);
		pthread_mutex_destroy(&o->m);
		free(o);
		return NULL;
	}
	return o;
}

void mock_inet_outside_stop(mock_inet_outside *o)
{
	if (o == NULL)
		return;
	pthread_mutex_lock(&o->m);
	o->quit = true;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->m);
	pthread_join(o->thread, NULL);
	pthread_cond_destroy(&o->cv);
	pthread_mutex_destroy(&o->m);
	free(o);
}

/* A non-blocking TCP socket of the host's namespace, or -1. One request
 * at a time: the maker answers in microseconds. */
static int outside_socket(mock_inet_outside *o, int family)
{
	int fd;

	pthread_mutex_lock(&o->m);
	while (o->want_family != 0 || o->want_name != NULL || o->made)
		pthread_cond_wait(&o->cv, &o->m);
	o->want_family = family;
	pthread_cond_broadcast(&o->cv);
	while (!o->made && !o->quit)
		pthread_cond_wait(&o->cv, &o->m);
	fd = o->made ? o->made_fd : -1;
	o->made = false;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->m);
	return fd;
}

int mock_inet_outside_socket(mock_inet_outside *o, int family)
{
	return outside_socket(o, family);
}

int mock_inet_outside_resolve(mock_inet_outside *o, const char *name, char *addr, size_t cap, char *why,
			      size_t why_cap)
{
	int rc;

	pthread_mutex_lock(&o->m);
	while (o->want_family != 0 || o->want_name != NULL || o->made)
		pthread_cond_wait(&o->cv, &o->m);
	o->want_name = name;
	pthread_cond_broadcast(&o->cv);
	while (!o->made && !o->quit)
		pthread_cond_wait(&o->cv, &o->m);
	rc = o->made && o->made_addr[0] != '\0' ? 0 : -1;
	snprintf(addr, cap, "%s", o->made_addr);
	snprintf(why, why_cap, "%s", o->made ? o->made_why : "the mock is stopping");
	o->made = false;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->m);
	return rc;
}

/* Connects fd within CONNECT_MS (or stop): 0 or -1. */
static int connect_in_time(int fd, const struct sockaddr *sa, socklen_t sl, int stopfd)
{
	struct pollfd pf[2] = {{.fd = fd, .events = POLLOUT}, {.fd = stopfd, .events = POLLIN}};
	int soerr = 0;
	socklen_t el = sizeof(soerr);

	if (connect(fd, sa, sl) == 0)
		return 0;
	if (errno != EINPROGRESS || poll(pf, 2, CONNECT_MS) <= 0 || pf[1].revents != 0)
		return -1;
	return getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &el) == 0 && soerr == 0 ? 0 : -1;
}

/* Writes all of buf to a non-blocking fd, waiting up to IDLE_MS for room. */
static int send_all(int fd, const char *buf, size_t len, int stopfd)
{
	while (len > 0) {
		ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);

		if (w > 0) {
			buf += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		struct pollfd pf[2] = {{.fd = fd, .events = POLLOUT}, {.fd = stopfd, .events = POLLIN}};

		if (poll(pf, 2, IDLE_MS) <= 0 || pf[1].revents != 0)
			return -1;
	}
	return 0;
}

/* Relays both ways until both sides are done, IDLE_MS of silence, or
 * stop. A side's EOF is passed on as a half-close. */
static void relay(int a, int b, int stopfd)
{
	char buf[RELAY_BUF];
	int fds[2] = {a, b};
	bool open[2] = {true, true};

	while (open[0] || open[1]) {
		struct pollfd pf[3] = {{.fd = open[0] ? a : -1, .events = POLLIN},
				       {.fd = open[1] ? b : -1, .events = POLLIN},
				       {.fd = stopfd, .events = POLLIN}};

		if (poll(pf, 3, IDLE_MS) <= 0 || pf[2].revents != 0)
			return;
		for (int i = 0; i < 2; i++) {
			ssize_t r;

			if (!open[i] || pf[i].revents == 0)
				continue;
			r = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0) {
				open[i] = false;
				shutdown(fds[1 - i], SHUT_WR);
				continue;
			}
			if (send_all(fds[1 - i], buf, (size_t)r, stopfd) != 0)
				return;
		}
	}
}

int mock_inet_forward(mock_inet_outside *o, int guest_fd, const char *pre, size_t prelen, int family,
		      const uint8_t *addr, uint16_t port, int stopfd)
{
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = outside_socket(o, family == 6 ? AF_INET6 : AF_INET), one = 1, rc;

	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (family == 6) {
		memcpy(&a6.sin6_addr, addr, 16);
		rc = connect_in_time(fd, (struct sockaddr *)&a6, sizeof(a6), stopfd);
	} else {
		memcpy(&a4.sin_addr, addr, 4);
		rc = connect_in_time(fd, (struct sockaddr *)&a4, sizeof(a4), stopfd);
	}
	if (rc == 0 && prelen > 0)
		rc = send_all(fd, pre, prelen, stopfd);
	if (rc == 0) {
		int fl = fcntl(guest_fd, F_GETFL);

		fcntl(guest_fd, F_SETFL, fl | O_NONBLOCK);
		relay(guest_fd, fd, stopfd);
	}
	close(fd);
	return rc;
}

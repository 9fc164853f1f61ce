/* inet_resolver: see inet_resolver.h. */
#define _GNU_SOURCE
#include "internet/inet_resolver.h"
#include "internet/inet_book.h"
#include "internet/inet_rules.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sbx/sys.h"

#define DNS_MAX 512
#define DNS_RATE 200
#define DNS_BURST 200
#define DNS_BUCKETS 256
#define ID_MAX 64

/* A sandbox's DNS allowance (the resolver's thread only). */
typedef struct bucket {
	char id[ID_MAX];
	double tokens;
	int64_t at_ms;
} bucket;

struct mock_inet_resolver {
	int fd, stopfd;
	pthread_t thread;
	const mock_hosts *hosts;
	mock_inet_book *book; /* sites and stubs: names the hosts file may lack */
	mock_inet_who_fn who;
	void *who_arg;
	bucket buckets[DNS_BUCKETS];
	size_t nbuckets;
};

/* UDP port 53 of every IPv4 address: 169.254.169.253 is local here, and
 * queries a guest sends to any other server arrive by tproxy; the answer
 * goes out from the address the guest asked (IP_TRANSPARENT lets it). */
static int resolver_socket(sbx_err *err)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_TRANSPARENT, &one, sizeof(one)) != 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_RECVORIGDSTADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		sbx_err_set(err, "internet: resolver on UDP port 53: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* One query; *asked = the address the guest sent it to. */
static ssize_t recv_query(int fd, uint8_t *q, size_t cap, struct sockaddr_storage *from, socklen_t *fl,
			  struct in_addr *asked)
{
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(struct sockaddr_in))];
	} cbuf;
	struct iovec iov = {.iov_base = q, .iov_len = cap};
	struct msghdr m = {.msg_name = from, .msg_namelen = *fl, .msg_iov = &iov, .msg_iovlen = 1,
			   .msg_control = cbuf.space, .msg_controllen = sizeof(cbuf.space)};
	ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT);

	*fl = m.msg_namelen;
	for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&m) : NULL; c != NULL; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_ORIGDSTADDR) {
			struct sockaddr_in dst;

			memcpy(&dst, CMSG_DATA(c), sizeof(dst));
			*asked = dst.sin_addr;
		}
	}
	return n;
}

/* The answer, from the address the query went to. */
static void send_answer(int fd, const uint8_t *r, size_t len, const struct sockaddr_storage *to,
			socklen_t tl, const struct in_addr *asked)
{
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(struct in_pktinfo))];
	} cbuf;
	struct iovec iov = {.iov_base = (void *)(uintptr_t)r, .iov_len = len};
	struct msghdr m = {.msg_name = (void *)(uintptr_t)to, .msg_namelen = tl, .msg_iov = &iov,
			   .msg_iovlen = 1, .msg_control = cbuf.space, .msg_controllen = sizeof(cbuf.space)};
	struct cmsghdr *c;
	struct in_pktinfo pi = {.ipi_spec_dst = *asked};

	memset(&cbuf, 0, sizeof(cbuf));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_PKTINFO;
	c->cmsg_len = CMSG_LEN(sizeof(pi));
	memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	sendmsg(fd, &m, MSG_DONTWAIT);
}

/* True when the sandbox at from may have one more answer now (its bucket
 * refills at DNS_RATE a second up to DNS_BURST). With every bucket taken,
 * the one idle longest is reused. */
static bool dns_allowed(mock_inet_resolver *s, const struct sockaddr_storage *from)
{
	char id[ID_MAX];
	uint8_t raw[16] = {0};
	struct sockaddr_in s4;
	int64_t now = sbx_mono_ms();
	bucket *b = NULL;

	/* IPv4 only: the socket is (DNS over IPv6 is not served) */
	memcpy(&s4, from, sizeof(s4));
	memcpy(raw, &s4.sin_addr, 4);
	s->who(s->who_arg, 4, raw, id, sizeof(id));
	for (size_t i = 0; i < s->nbuckets && b == NULL; i++) {
		if (strcmp(s->buckets[i].id, id) == 0)
			b = &s->buckets[i];
	}
	if (b == NULL) {
		if (s->nbuckets < DNS_BUCKETS) {
			b = &s->buckets[s->nbuckets++];
		} else {
			b = &s->buckets[0];
			for (size_t i = 1; i < DNS_BUCKETS; i++) {
				if (s->buckets[i].at_ms < b->at_ms)
					b = &s->buckets[i];
			}
		}
		snprintf(b->id, sizeof(b->id), "%s", id);
		b->tokens = DNS_BURST;
		b->at_ms = now;
	}
	b->tokens += (double)(now - b->at_ms) * DNS_RATE / 1000.0;
	if (b->tokens > DNS_BURST)
		b->tokens = DNS_BURST;
	b->at_ms = now;
	if (b->tokens < 1.0)
		return false;
	b->tokens -= 1.0;
	return true;
}

/* mock_dns_more_fn: a site's or a stub's name the hosts file lacks. */
static bool book_name(void *arg, const char *name, mock_host *out)
{
	mock_inet_resolver *s = arg;
	size_t len = strlen(name);

	if (s->book == NULL || len == 0 || len >= sizeof(out->name))
		return false;
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < len; i++)
		out->name[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
	if (out->name[len - 1] == '.')
		out->name[len - 1] = '\0';
	if (!mock_inet_book_names(s->book, out->name))
		return false;
	out->naddr = 1;
	out->addr[0].family = 4;
	mock_inet_synth_addr(out->name, out->addr[0].addr);
	return true;
}

static void *resolver_main(void *arg)
{
	mock_inet_resolver *s = arg;
	uint8_t q[DNS_MAX], r[DNS_MAX];

	for (;;) {
		struct pollfd pf[2] = {{.fd = s->fd, .events = POLLIN}, {.fd = s->stopfd, .events = POLLIN}};
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		struct in_addr asked = {0};
		ssize_t n;
		size_t len;

		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents != 0)
			break;
		n = recv_query(s->fd, q, sizeof(q), &from, &fl, &asked);
		if (n <= 0 || !dns_allowed(s, &from))
			continue;
		len = mock_dns_answer(s->hosts, book_name, s, q, (size_t)n, r, sizeof(r));
		if (len > 0)
			send_answer(s->fd, r, len, &from, fl, &asked);
	}
	return NULL;
}

mock_inet_resolver *mock_inet_resolver_start(const mock_hosts *hosts, mock_inet_book *book, mock_inet_who_fn who,
					     void *who_arg, int stopfd, sbx_err *err)
{
	mock_inet_resolver *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	r->hosts = hosts;
	r->book = book;
	r->who = who;
	r->who_arg = who_arg;
	r->stopfd = stopfd;
	r->fd = resolver_socket(err);
	if (r->fd < 0) {
		free(r);
		return NULL;
	}
	if (pthread_create(&r->thread, NULL, resolver_main, r) != 0) {
		sbx_err_set(err, "internet: the resolver's thread: %s", strerror(errno));
		close(r->fd);
		free(r);
		return NULL;
	}
	return r;
}

void mock_inet_resolver_stop(mock_inet_resolver *r)
{
	if (r == NULL)
		return;
	pthread_join(r->thread, NULL);
	close(r->fd);
	free(r);
}

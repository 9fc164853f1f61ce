/* internet_serve: the listeners inside the simulated internet (internet.h)
 * — the transparent proxy that takes every TCP connection a guest's rules
 * let through, and (inet_resolver.c) the resolver.
 *
 * The proxy answers each request: after the request's head (or 2 s of
 * silence, for clients that wait to be spoken to) it writes an HTTP answer
 * (a stub's, a site's file, or the page naming the address and port the
 * guest dialled; the metadata document on 169.254.169.254:80). An HTTP/1.1
 * request that allows it leaves the connection open for the next one
 * (keep-alive, as every server a guest's apt, pip, npm or fetch talks to
 * does: a TLS handshake is paid once per connection, not per request), up
 * to KEEP_REQUESTS requests and KEEP_IDLE_MS of silence between them;
 * anything else (HTTP/1.0 without keep-alive, "Connection: close", a body
 * not framed by one Content-Length up to MOCK_INET_KEEP_BODY_MAX, Expect, Upgrade, a
 * fault) is answered and closed. A guest controls what it sends, so every
 * read is bounded, a request head has HEAD_DEADLINE_MS in all (however
 * slowly it trickles), and a connection costs one thread while it lives:
 * at most SANDBOX_CONNS at once per sandbox and MAX_CONNS in all (more are
 * closed at once), so one guest's flood leaves the others theirs.
 * A connection whose first byte opens a TLS handshake (on any port, 443
 * the usual one) is answered the same way under TLS (inet_tls.h): the
 * handshake shares the head's deadline, and one that fails is closed.
 * The resolver is inet_resolver.c. */
#define _GNU_SOURCE
#include "internet/internet.h"
#include "internet/inet_book.h"
#include "internet/inet_http.h"
#include "internet/inet_resolver.h"
#include "internet/inet_tape.h"
#include "tls/inet_tls.h"
#include "internet/inet_upstream.h"
#include "sbx/sys.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define SANDBOX_CONNS 64
#define HEAD_MAX 4096
#define QUIET_MS 2000
#define HEAD_DEADLINE_MS 5000
#define ID_MAX 64
#define TLS_HANDSHAKE_RECORD 0x16 /* the content type a TLS client's first record has */
#define WRITE_STALL_MS 30000 /* a client that takes none of an answer's bytes this long is dropped */
#define KEEP_REQUESTS 100      /* requests one kept-alive connection serves */
#define KEEP_IDLE_MS 5000      /* silence between them that closes it */

/* Who holds connections (an entry per sandbox with any; "" for addresses
 * no sandbox is wired at), under the servers' lock. */
typedef struct share {
	char id[ID_MAX];
	int n;
} share;

struct mock_inet_servers {
	int tcp4, tcp6, stopfd;
	pthread_t acceptor;
	bool acceptor_up;
	mock_inet_resolver *resolver;
	atomic_int conns;
	pthread_mutex_t lock;
	pthread_cond_t idle; /* conns reached 0 */
	share shares[MAX_CONNS];
	size_t nshares;
	const mock_hosts *hosts;
	mock_inet_tls *tls;
	mock_inet_who_fn who;
	void *who_arg;
	mock_inet_book *book;        /* stubs, sites, journal, upstream patterns */
	mock_inet_outside *outside;  /* NULL: nothing goes upstream */
};

typedef struct conn {
	mock_inet_servers *s;
	int fd;
	char id[ID_MAX]; /* the sandbox it came from, "" when none */
	int fam;
	uint8_t peer[16];
	char from[64];   /* its address as text */
	char dest[64];   /* where it dialled, ADDR:PORT */
	char dest_ip[INET6_ADDRSTRLEN];
	int dest_fam;
	uint8_t dest_raw[16];
	uint16_t dest_port;
	mock_inet_tls_conn *tls; /* under TLS, until closed */
	char head[HEAD_MAX + 1]; /* the request head as read */
	size_t head_len;
	char rest[HEAD_MAX];     /* read past the head: a body's start, the next request */
	size_t rest_len;
	int quiet_ms;            /* the silence the next read waits out (0: QUIET_MS) */
	bool keep;               /* the answer being written leaves the connection open */
	long long body;          /* the request's body bytes, dropped after a kept answer */
	unsigned served;         /* requests answered on this connection, this one included */
	char no_tls[96];         /* on port 443 without TLS: what came instead, for the journal */
} conn;

/* ---- sockets ---- */

static int listener(int family, sbx_err *err)
{
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(MOCK_INET_TPROXY_PORT)};
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(MOCK_INET_TPROXY_PORT)};
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	int ok = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0;

	if (ok && family == AF_INET6)
		ok = setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) == 0 &&
		     setsockopt(fd, IPPROTO_IPV6, IPV6_TRANSPARENT, &one, sizeof(one)) == 0 &&
		     bind(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0;
	else if (ok)
		ok = setsockopt(fd, IPPROTO_IP, IP_TRANSPARENT, &one, sizeof(one)) == 0 &&
		     bind(fd, (struct sockaddr *)&a4, sizeof(a4)) == 0;
	if (!ok || listen(fd, 1024) != 0) {
		sbx_err_set(err, "internet: transparent listener (IPv%d): %s", family == AF_INET ? 4 : 6,
			    strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* ---- the proxy ---- */

/* "ADDR:PORT" ("[ADDR]:PORT" for IPv6) of a socket address; family 4/6
 * and the raw address into fam/raw. */
static void addr_text(const struct sockaddr_storage *ss, char *out, size_t cap, int *fam, uint8_t raw[16])
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 s6;

		memcpy(&s6, ss, sizeof(s6));
		inet_ntop(AF_INET6, &s6.sin6_addr, a, sizeof(a));
		snprintf(out, cap, "[%s]:%u", a, (unsigned)ntohs(s6.sin6_port));
		*fam = 6;
		memcpy(raw, &s6.sin6_addr, 16);
	} else {
		struct sockaddr_in s4;

		memcpy(&s4, ss, sizeof(s4));
		inet_ntop(AF_INET, &s4.sin_addr, a, sizeof(a));
		snprintf(out, cap, "%s:%u", a, (unsigned)ntohs(s4.sin_port));
		*fam = 4;
		memcpy(raw, &s4.sin_addr, 4);
	}
}

/* Up to cap bytes from the client (the plaintext, under TLS), waiting
 * QUIET_MS at most and never past end: > 0, or 0 (EOF, silence, the end,
 * stop). */
static size_t conn_recv(const conn *c, char *buf, size_t cap, int64_t end)
{
	int64_t now = sbx_mono_ms(), quiet = c->quiet_ms > 0 ? c->quiet_ms : QUIET_MS;
	int64_t until = end < now + quiet ? end : now + quiet;
	struct pollfd pf[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = c->s->stopfd, .events = POLLIN}};
	ssize_t r;

	if (c->tls != NULL)
		return mock_inet_tls_read(c->tls, buf, cap, until, c->s->stopfd);
	if (until <= now || poll(pf, 2, (int)(until - now)) <= 0 || pf[1].revents != 0)
		return 0;
	r = recv(c->fd, buf, cap, 0);
	return r > 0 ? (size_t)r : 0;
}

/* Reads until the end of a request head, HEAD_MAX bytes, EOF, silence,
 * end, or stop: into c's head, starting with what the last request left
 * (c's rest); what came past the head's end goes to c's rest. */
static void read_head(conn *c, int64_t end)
{
	char *buf = c->head;
	size_t n = c->rest_len, at;

	memcpy(buf, c->rest, n);
	buf[n] = '\0';
	c->rest_len = 0;
	while (n < HEAD_MAX && mock_inet_head_end(buf) == 0) {
		size_t r = conn_recv(c, buf + n, HEAD_MAX - n, end);

		if (r == 0)
			break;
		c->quiet_ms = 0; /* the wait for a next request's first bytes is over */
		n += r;
		buf[n] = '\0';
	}
	at = mock_inet_head_end(buf);
	if (at > 0 && at < n) {
		c->rest_len = n - at;
		memcpy(c->rest, buf + at, c->rest_len);
		buf[at] = '\0';
		n = at;
	}
	c->head_len = n;
}

/* The first byte the client sends, left unread; -1 when none comes within
 * QUIET_MS (a client that waits to be spoken to), at EOF or stop. */
static int first_byte(const conn *c, int64_t end)
{
	struct pollfd pf[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = c->s->stopfd, .events = POLLIN}};
	int64_t left = end - sbx_mono_ms();
	unsigned char b;

	if (left <= 0 || poll(pf, 2, left < QUIET_MS ? (int)left : QUIET_MS) <= 0 || pf[1].revents != 0)
		return -1;
	return recv(c->fd, &b, 1, MSG_PEEK) == 1 ? b : -1;
}

/* Counts a connection of id in; false (nothing counted) when its sandbox
 * holds its share or all are taken. */
static bool share_take(mock_inet_servers *s, const char *id)
{
	share *e = NULL;
	bool ok = false;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->nshares && e == NULL; i++) {
		if (strcmp(s->shares[i].id, id) == 0)
			e = &s->shares[i];
	}
	if (atomic_load(&s->conns) < MAX_CONNS && (e == NULL || e->n < SANDBOX_CONNS)) {
		if (e == NULL) {
			e = &s->shares[s->nshares++]; /* fewer entries than connections */
			snprintf(e->id, sizeof(e->id), "%s", id);
			e->n = 0;
		}
		e->n++;
		atomic_fetch_add(&s->conns, 1);
		ok = true;
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

static void share_give(mock_inet_servers *s, const char *id)
{
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->nshares; i++) {
		if (strcmp(s->shares[i].id, id) == 0 && --s->shares[i].n == 0) {
			s->shares[i] = s->shares[--s->nshares];
			break;
		}
	}
	if (atomic_fetch_sub(&s->conns, 1) == 1)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

/* Where the client dialled (a transparent socket's own address): into
 * c's dest and dest_ip. */
static void dialled(conn *c)
{
	struct sockaddr_storage here = {0};
	socklen_t hl = sizeof(here);
	uint8_t raw[16] = {0};
	in_port_t port = 0;
	int fam = 4;

	if (getsockname(c->fd, (struct sockaddr *)&here, &hl) != 0)
		return; /* dest stays "": the page says nothing of where */
	addr_text(&here, c->dest, sizeof(c->dest), &fam, raw);
	inet_ntop(fam == 6 ? AF_INET6 : AF_INET, raw, c->dest_ip, sizeof(c->dest_ip));
	c->dest_fam = fam;
	memcpy(c->dest_raw, raw, sizeof(raw));
	if (here.ss_family == AF_INET6)
		memcpy(&port, (const char *)&here + offsetof(struct sockaddr_in6, sin6_port), sizeof(port));
	else
		memcpy(&port, (const char *)&here + offsetof(struct sockaddr_in, sin_port), sizeof(port));
	c->dest_port = ntohs(port);
}

/* Sends all of buf (under TLS, as records): 0, or -1 (the client is gone
 * or took nothing for WRITE_STALL_MS). */
static int conn_send(conn *c, const char *buf, size_t len)
{
	if (c->tls != NULL)
		return mock_inet_tls_write(c->tls, buf, len, sbx_mono_ms() + WRITE_STALL_MS, c->s->stopfd);
	while (len > 0) {
		ssize_t w = send(c->fd, buf, len, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The end of an answer: close_notify under TLS, then close after the
 * client read it (closing with its request unread would reset the
 * connection before it sees the answer). */
static void finish(conn *c, int sent)
{
	if (sent != 0)
		c->keep = false;
	if (c->keep)
		return; /* the next request may come */
	if (c->tls != NULL) {
		mock_inet_tls_close(c->tls); /* close_notify; what follows is drained raw */
		c->tls = NULL;
	}
	if (sent != 0)
		return;
	shutdown(c->fd, SHUT_WR);
	read_head(c, sbx_mono_ms() + HEAD_DEADLINE_MS);
}

/* Ends the connection with a reset: no close_notify, no FIN. */
static void reset_conn(conn *c)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	c->keep = false;
	mock_inet_tls_drop(c->tls);
	c->tls = NULL;
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* Waits ms, or less when the mock stops: false when it stopped. */
static bool pause_ms(const conn *c, int ms)
{
	struct pollfd pf = {.fd = c->s->stopfd, .events = POLLIN};

	return ms <= 0 || poll(&pf, 1, ms) == 0;
}

static const char *reason(int status)
{
	static const struct {
		int code;
		const char *text;
	} r[] = {{200, "OK"}, {201, "Created"}, {204, "No Content"}, {301, "Moved Permanently"},
		 {302, "Found"}, {304, "Not Modified"}, {400, "Bad Request"}, {401, "Unauthorized"},
		 {403, "Forbidden"}, {404, "Not Found"}, {405, "Method Not Allowed"},
		 {409, "Conflict"}, {429, "Too Many Requests"}, {500, "Internal Server Error"},
		 {502, "Bad Gateway"}, {503, "Service Unavailable"}, {504, "Gateway Timeout"}};

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		if (r[i].code == status)
			return r[i].text;
	}
	return "Status";
}

/* What a request without a Host header is taken to name: the TLS name,
 * else the address dialled. */
static const char *fallback_host(const conn *c)
{
	return c->tls != NULL ? mock_inet_tls_name(c->tls) : c->dest_ip;
}

static void journal(conn *c, const mock_inet_parsed *p, const char *tenant, int status, unsigned stub, const char *via,
		    const char *fault)
{
	mock_inet_entry e = {.tenant = tenant, .sandbox = c->id, .host = p->host,
			     .scheme = c->tls != NULL ? "https" : "http", .method = p->method,
			     .path = p->path, .status = status, .stub = stub, .via = via, .fault = fault,
			     .port = c->dest_port, .tls_error = c->no_tls[0] != '\0' ? c->no_tls : NULL};

	if (c->s->book != NULL)
		mock_inet_journal_add(c->s->book, &e);
}

/* The Connection header's value of the answer being written. */
static const char *conn_word(const conn *c)
{
	return c->keep ? "keep-alive" : "close";
}

/* Reads and drops a request body of len bytes (what read_head left in
 * c's rest first): false when it did not all come. */
static bool drop_body(conn *c, long long len)
{
	int64_t end = sbx_mono_ms() + HEAD_DEADLINE_MS;
	char buf[4096];

	if ((long long)c->rest_len >= len) {
		c->rest_len -= (size_t)len;
		memmove(c->rest, c->rest + len, c->rest_len);
		return true;
	}
	len -= (long long)c->rest_len;
	c->rest_len = 0;
	while (len > 0) {
		size_t r = conn_recv(c, buf, len < (long long)sizeof(buf) ? (size_t)len : sizeof(buf), end);

		if (r == 0)
			return false;
		len -= (long long)r;
	}
	return true;
}

/* Answers with a stub: its delay, then its answer or its fault. */
static void answer_stub(conn *c, const mock_inet_stub *st)
{
	char head[MOCK_INET_STUB_HEADER_BYTES + 256];
	size_t half = st->body_len / 2;
	int n, rc;

	if (!pause_ms(c, st->delay_ms))
		return;
	if (st->fault == MOCK_INET_FAULT_RESET) {
		reset_conn(c);
		return;
	}
	if (st->fault == MOCK_INET_FAULT_HANG) {
		pause_ms(c, st->hang_ms);
		reset_conn(c);
		return;
	}
	n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n%sContent-Length: %zu\r\nConnection: %s\r\n\r\n",
		     st->status, reason(st->status), st->head, st->body_len, conn_word(c));
	if (n < 0 || (size_t)n >= sizeof(head))
		return;
	if (st->fault == MOCK_INET_FAULT_NONE && (size_t)n + st->body_len <= sizeof(head)) {
		/* one write: a second would wait for the client's delayed ACK */
		memcpy(head + n, st->body, st->body_len);
		finish(c, conn_send(c, head, (size_t)n + st->body_len));
		return;
	}
	rc = conn_send(c, head, (size_t)n);
	if (st->fault == MOCK_INET_FAULT_CLOSE_MID) {
		if (rc == 0 && conn_send(c, st->body, half) == 0)
			pause_ms(c, 50); /* the half reaches the client before the reset */
		reset_conn(c);
		return;
	}
	if (st->fault == MOCK_INET_FAULT_SLOW_BODY) {
		for (size_t at = 0; rc == 0 && at < st->body_len; at += (size_t)st->chunk_bytes) {
			size_t k = st->body_len - at < (size_t)st->chunk_bytes ? st->body_len - at : (size_t)st->chunk_bytes;

			rc = (at > 0 && !pause_ms(c, st->interval_ms)) ? -1 : conn_send(c, st->body + at, k);
		}
	} else if (rc == 0 && st->body_len > 0) {
		rc = conn_send(c, st->body, st->body_len);
	}
	finish(c, rc);
}

/* Answers from a site directory: GET and HEAD of a file beneath it;
 * journaled before the answer. */
static void answer_site(conn *c, int dirfd, const mock_inet_parsed *p, const char *tenant)
{
	char head[512], buf[8192];
	bool get = strcmp(p->method, "GET") == 0, headonly = strcmp(p->method, "HEAD") == 0;
	int status = 405, fd = get || headonly ? mock_inet_site_open(dirfd, p->path, &status) : -1, n, rc;
	struct stat st;

	if (fd >= 0 && fstat(fd, &st) != 0) {
		close(fd);
		fd = -1;
		status = 403;
	}
	journal(c, p, tenant, status, 0, "site", NULL);
	if (fd < 0) {
		const char *why = status == 404 ? "not found\n" : status == 405 ? "GET or HEAD only\n" : "refused\n";

		n = snprintf(head, sizeof(head),
			     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s"
			     "Connection: %s\r\n\r\n%s",
			     status, reason(status), strlen(why), status == 405 ? "Allow: GET, HEAD\r\n" : "",
			     conn_word(c), why);
		finish(c, conn_send(c, head, (size_t)n));
		return;
	}
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %lld\r\nConnection: %s\r\n\r\n",
		     mock_inet_content_type(p->path), (long long)st.st_size, conn_word(c));
	rc = conn_send(c, head, (size_t)n);
	/* exactly the Content-Length said, whatever the file does meanwhile
	 * (rewritten, or a /proc file whose size says 0): more would be read
	 * as the next answer on a kept connection, less would leave the
	 * client waiting. A file that ends early cuts the connection. */
	for (off_t left = get ? st.st_size : 0; rc == 0 && left > 0;) {
		ssize_t r = read(fd, buf, left < (off_t)sizeof(buf) ? (size_t)left : sizeof(buf));

		if (r <= 0) {
			close(fd);
			reset_conn(c);
			return;
		}
		rc = conn_send(c, buf, (size_t)r);
		left -= r;
	}
	close(fd);
	finish(c, rc);
}

static void answer_page(conn *c)
{
	char body[512], msg[1024], tls_head[MOCK_INET_TLS_NAME_MAX + 32] = "";
	const char *id = c->id, *from = c->from;
	bool metadata = strcmp(c->dest, MOCK_INET_METADATA4 ":80") == 0;
	int n;

	if (metadata)
		snprintf(body, sizeof(body),
			 "{\"service\":\"sbx-mock simulated metadata\",\"sandbox_id\":\"%s\","
			 "\"local_address\":\"%s\",\"note\":\"169.254.0.0/16 is reachable whatever the "
			 "egress rules say, as on the live service\"}\n",
			 id, from);
	else
		snprintf(body, sizeof(body), "sbx-mock simulated internet: reached %s from %s\n", c->dest, from);
	if (c->tls != NULL)
		snprintf(tls_head, sizeof(tls_head), "X-Sbx-Tls-Name: %s\r\n", mock_inet_tls_name(c->tls));
	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "X-Sbx-Reached: %s\r\n%sConnection: %s\r\n\r\n%s",
		     metadata ? "application/json" : "text/plain", strlen(body), c->dest, tls_head, conn_word(c),
		     body);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return;
	finish(c, conn_send(c, msg, (size_t)n));
}

static int tape_send(void *arg, const char *buf, size_t len)
{
	return conn_send(arg, buf, len);
}

static size_t tape_recv(void *arg, char *buf, size_t cap, int64_t end)
{
	return conn_recv(arg, buf, cap, end);
}

/* The cassette's answer (inet_tape.h), which reads the body itself;
 * false when the request is not the tape's. */
static bool answer_tape(conn *c, mock_inet_tape *t, const mock_inet_parsed *p, const char *tenant)
{
	mock_inet_io io = {.arg = c, .send = tape_send, .recv = tape_recv, .head = c->head, .rest = c->rest,
			   .rest_len = &c->rest_len, .scheme = c->tls != NULL ? "https" : "http", .host = p->host,
			   .port = c->dest_port, .outside = c->s->outside, .stopfd = c->s->stopfd, .keep = c->keep};
	mock_inet_entry e = {.tenant = tenant, .sandbox = c->id, .host = p->host, .scheme = io.scheme,
			     .method = p->method, .path = p->path, .port = c->dest_port, .cassette_miss = io.miss};

	if (!mock_inet_tape_serve(t, &io))
		return false;
	c->keep = io.keep;
	c->body = 0;
	e.status = io.status;
	e.via = io.via;
	mock_inet_journal_add(c->s->book, &e);
	if (io.reset)
		reset_conn(c);
	else
		finish(c, 0);
	return true;
}

/* A request read: a stub's answer, a site's file, the cassette's, or the
 * page; journaled. */
static void answer(conn *c)
{
	mock_inet_book *b = c->s->book;
	bool metadata = strcmp(c->dest, MOCK_INET_METADATA4 ":80") == 0;
	char tenant[256] = "";
	mock_inet_stub *st = NULL;
	mock_inet_parsed p;
	int dirfd;

	mock_inet_parse_request(c->head, fallback_host(c), &p);
	c->keep = c->served < KEEP_REQUESTS && mock_inet_keep_alive(c->head, &p, &c->body);
	if (b == NULL || metadata) {
		answer_page(c);
		return;
	}
	mock_inet_book_tenant(b, c->id, tenant, sizeof(tenant));
	{
		mock_inet_req r = {.tenant = tenant, .sandbox = c->id, .host = p.host, .tls = c->tls != NULL,
				   .method = p.method, .path = p.path, .head = c->head};

		st = p.method[0] != '\0' ? mock_inet_stub_match(b, &r) : NULL;
	}
	if (st != NULL) {
		bool failed = st->fault == MOCK_INET_FAULT_RESET || st->fault == MOCK_INET_FAULT_HANG;

		/* journaled before the answer: a test that saw its answer
		 * (or its reset) finds the entry */
		journal(c, &p, tenant, failed ? 0 : st->status, st->id, "stub", mock_inet_fault_name(st->fault));
		answer_stub(c, st);
		mock_inet_stub_put(st);
	} else if (p.method[0] != '\0' && (dirfd = mock_inet_site_dir(b, p.host)) >= 0) {
		answer_site(c, dirfd, &p, tenant);
	} else if (p.method[0] == '\0' || mock_inet_book_tape(b) == NULL ||
		   !answer_tape(c, mock_inet_book_tape(b), &p, tenant)) {
		journal(c, &p, tenant, 200, 0, "page", NULL);
		answer_page(c);
	}
}

/* Forwards the connection upstream (the head read so far first) and
 * journals it. */
static void go_upstream(conn *c, const char *host, const mock_inet_parsed *p)
{
	mock_inet_parsed none;
	char tenant[256] = "";
	int rc;

	if (p == NULL) {
		memset(&none, 0, sizeof(none));
		snprintf(none.host, sizeof(none.host), "%s", host);
		p = &none;
	}
	mock_inet_book_tenant(c->s->book, c->id, tenant, sizeof(tenant));
	journal(c, p, tenant, 0, 0, "upstream", NULL);
	/* everything read so far goes first: the head, and what came past it */
	memcpy(c->head + c->head_len, c->rest, c->rest_len);
	c->head_len += c->rest_len;
	c->rest_len = 0;
	rc = mock_inet_forward(c->s->outside, c->fd, c->head, c->head_len, c->dest_fam, c->dest_raw, c->dest_port,
			       c->s->stopfd);
	if (rc != 0)
		reset_conn(c); /* the way out is closed: as a refused connection would */
}

/* The requests of one connection, answered in turn while each allows a
 * next (mock_inet_keep_alive); the first's head has the connection's deadline, each
 * later one KEEP_IDLE_MS to begin and HEAD_DEADLINE_MS more to end. A
 * plain request for an upstream destination hands the connection over
 * (go_upstream: everything after is the upstream's). */
static void serve_requests(conn *c, int64_t end, bool up, bool heard)
{
	for (unsigned i = 0; i < KEEP_REQUESTS; i++) {
		if (i > 0) {
			c->quiet_ms = c->rest_len == 0 ? KEEP_IDLE_MS : 0;
			end = sbx_mono_ms() + KEEP_IDLE_MS + HEAD_DEADLINE_MS;
		}
		if (i > 0 || heard)
			read_head(c, end);
		if (i > 0 && c->head_len == 0) {
			/* gone, or idle: a TLS client gets close_notify first */
			mock_inet_tls_close(c->tls);
			c->tls = NULL;
			return;
		}
		if (c->tls == NULL && up) {
			mock_inet_parsed p;

			mock_inet_parse_request(c->head, fallback_host(c), &p);
			if (mock_inet_upstream_match(c->s->book, c->dest_fam, c->dest_raw,
						     p.method[0] != '\0' ? p.host : NULL)) {
				go_upstream(c, p.host, &p);
				return;
			}
		}
		c->served = i + 1;
		answer(c);
		if (!c->keep || !drop_body(c, c->body))
			return;
	}
}

/* A handshake that did not complete: journaled with why (the client's
 * alert, the deadline, garbage), as a request is. */
static void journal_tls_fail(conn *c, const mock_inet_tls_fail *f)
{
	char tenant[256] = "";
	mock_inet_entry e = {.tenant = tenant, .sandbox = c->id, .host = f->name, .scheme = "https",
			     .method = "", .path = "", .status = 0, .via = "tls", .port = c->dest_port,
			     .tls_error = f->why};

	if (c->s->book == NULL)
		return;
	mock_inet_book_tenant(c->s->book, c->id, tenant, sizeof(tenant));
	mock_inet_journal_add(c->s->book, &e);
}

/* Port 443 is where clients speak TLS: a connection there that does not
 * is answered as plain HTTP, and its journal entries say what came. */
static void note_no_tls(conn *c, int first)
{
	if (c->dest_port != 443)
		return;
	if (first < 0)
		snprintf(c->no_tls, sizeof(c->no_tls), "no TLS on port 443: the client sent nothing for %d ms",
			 QUIET_MS);
	else
		snprintf(c->no_tls, sizeof(c->no_tls), "no TLS on port 443: plain text (first byte 0x%02x%s%c%s)",
			 (unsigned)first, isprint(first) ? " '" : "", isprint(first) ? first : ' ',
			 isprint(first) ? "'" : "");
}

static void *serve_conn(void *arg)
{
	conn *c = arg;
	int64_t end = sbx_mono_ms() + HEAD_DEADLINE_MS;
	int first = first_byte(c, end);
	bool up = c->s->outside != NULL && c->s->book != NULL;

	dialled(c);
	if (first == TLS_HANDSHAKE_RECORD && up) {
		char sni[MOCK_INET_TLS_NAME_MAX + 1];

		mock_inet_tls_peek_sni(c->fd, end, c->s->stopfd, sni, sizeof(sni));
		if (!mock_inet_tls_name_ok(sni))
			sni[0] = '\0'; /* no name (its handshake gets unrecognized_name): only a CIDR may take it */
		if (mock_inet_upstream_match(c->s->book, c->dest_fam, c->dest_raw, sni[0] != '\0' ? sni : NULL)) {
			c->head_len = 0; /* the hello is still unread: it goes as it is */
			go_upstream(c, sni[0] != '\0' ? sni : c->dest_ip, NULL);
			goto done;
		}
	}
	if (first == TLS_HANDSHAKE_RECORD && c->s->tls != NULL) {
		mock_inet_tls_fail fail;
		int one = 1;

		/* non-blocking: a record that trickles in must not hold the
		 * thread past the deadline; no Nagle: the answer's record and
		 * close_notify are two small writes, and the second would wait
		 * for the client's delayed ACK of the first (~40 ms) */
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK) == 0)
			c->tls = mock_inet_tls_accept(c->s->tls, c->fd, c->dest_ip, end, c->s->stopfd, &fail);
		if (c->tls != NULL)
			serve_requests(c, end, false, true);
		else
			journal_tls_fail(c, &fail);
	} else {
		struct timeval stall = {.tv_sec = WRITE_STALL_MS / 1000};

		setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &stall, sizeof(stall));
		note_no_tls(c, first);
		/* a client that waits to be spoken to gets the page (or its
		 * upstream) without a head */
		serve_requests(c, end, up, first >= 0);
	}
done:
	mock_inet_tls_drop(c->tls);
	close(c->fd);
	share_give(c->s, c->id);
	free(c);
	return NULL;
}

/* Who is at the other end of fd: into c's id, fam, peer and from. */
static void identify(mock_inet_servers *s, conn *c)
{
	struct sockaddr_storage peer = {0};
	socklen_t pl = sizeof(peer);

	getpeername(c->fd, (struct sockaddr *)&peer, &pl);
	addr_text(&peer, c->from, sizeof(c->from), &c->fam, c->peer);
	s->who(s->who_arg, c->fam, c->peer, c->id, sizeof(c->id));
}

static void accept_one(mock_inet_servers *s, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	conn *c;
	pthread_t t;
	pthread_attr_t at;

	if (fd < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(fd);
		return;
	}
	c->s = s;
	c->fd = fd;
	identify(s, c);
	if (!share_take(s, c->id)) {
		close(fd);
		free(c);
		return;
	}
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 64 * 1024);
	if (pthread_create(&t, &at, serve_conn, c) != 0) {
		close(fd);
		share_give(s, c->id);
		free(c);
	}
	pthread_attr_destroy(&at);
}

static void *acceptor_main(void *arg)
{
	mock_inet_servers *s = arg;

	for (;;) {
		struct pollfd pf[3] = {{.fd = s->tcp4, .events = POLLIN},
				       {.fd = s->tcp6, .events = POLLIN},
				       {.fd = s->stopfd, .events = POLLIN}};

		if (poll(pf, 3, -1) < 0 && errno != EINTR)
			break;
		if (pf[2].revents != 0)
			break;
		for (int i = 0; i < 2; i++) {
			if (pf[i].revents != 0)
				accept_one(s, pf[i].fd);
		}
	}
	return NULL;
}

/* ---- start and stop ---- */

mock_inet_servers *mock_inet_servers_start(const mock_hosts *hosts, mock_inet_tls *tls, mock_inet_who_fn who,
					   void *who_arg, mock_inet_book *book, mock_inet_outside *outside, sbx_err *err)
{
	mock_inet_servers *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	s->hosts = hosts;
	s->tls = tls;
	s->who = who;
	s->who_arg = who_arg;
	s->book = book;
	s->outside = outside;
	s->tcp4 = s->tcp6 = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	s->stopfd = eventfd(0, EFD_CLOEXEC);
	if (s->stopfd < 0 || (s->tcp4 = listener(AF_INET, err)) < 0 || (s->tcp6 = listener(AF_INET6, err)) < 0)
		goto fail;
	s->acceptor_up = pthread_create(&s->acceptor, NULL, acceptor_main, s) == 0;
	if (!s->acceptor_up) {
		sbx_err_set(err, "internet: threads: %s", strerror(errno));
		goto fail;
	}
	s->resolver = mock_inet_resolver_start(hosts, book, who, who_arg, s->stopfd, err);
	if (s->resolver == NULL)
		goto fail;
	return s;

fail:
	if (s->stopfd < 0)
		sbx_err_set(err, "internet: eventfd: %s", strerror(errno));
	mock_inet_servers_stop(s);
	return NULL;
}

void mock_inet_servers_stop(mock_inet_servers *s)
{
	uint64_t one = 1;

	if (s == NULL)
		return;
	if (s->stopfd >= 0 && write(s->stopfd, &one, sizeof(one)) < 0)
		abort(); /* an eventfd write of 1 cannot fail */
	if (s->acceptor_up)
		pthread_join(s->acceptor, NULL);
	mock_inet_resolver_stop(s->resolver); /* its thread saw stopfd */
	pthread_mutex_lock(&s->lock);
	while (atomic_load(&s->conns) > 0)
		pthread_cond_wait(&s->idle, &s->lock);
	pthread_mutex_unlock(&s->lock);
	int fds[] = {s->tcp4, s->tcp6, s->stopfd};

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

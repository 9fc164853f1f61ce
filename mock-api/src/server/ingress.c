/* ingress: the preview-URL proxy (see ingress.h). One acceptor thread; one
 * detached thread per connection, registered (client and guest fds, the
 * sandbox id) so that a cut or a stop can shut its sockets down. A
 * registered fd is closed only after it is unregistered, under the lock,
 * so a shutdown under the lock never hits a reused fd. */
#define _GNU_SOURCE
#include "server/ingress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tls/inet_tls.h"
#include "ops/ops.h"
#include "computer/ops_computer.h"
#include "sbx/sys.h"
#include "server/server.h"

#define ING_CONNS_MAX 256      /* open ingress connections; past it: 503 */
#define ING_HEAD_MAX 16384     /* request or response head */
#define ING_HEAD_MS 30000      /* to send a request head */
#define ING_CONNECT_MS 5000    /* to connect to the guest's port */
#define ING_IDLE_MS 120000     /* without a byte either way: closed */
#define ING_BUF 16384
#define TLS_HANDSHAKE_RECORD 0x16 /* a TLS record's first byte: a ClientHello comes first */

typedef struct ing_conn {
	int cfd, gfd;              /* client, guest (-1 until connected) */
	mock_inet_tls_conn *tls;   /* the client's TLS, or NULL: plain HTTP */
	char id[MOCK_ID_MAX];      /* "" until the request names one */
	sbx_mock *mock;
	struct mock_ingress *in;
} ing_conn;

struct mock_ingress {
	sbx_mock *mock;
	int lfd, wakefd;
	pthread_t thread;
	bool thread_up;
	mock_inet_tls *tls;        /* the mock's CA and leaves (borrowed), or NULL: plain only */
	char base[64];
	pthread_mutex_t lock;
	pthread_cond_t cv;         /* nconns dropped */
	ing_conn *conns[ING_CONNS_MAX];
	size_t nconns;
	bool stopping;
};

/* ---- listen address ---- */

int mock_ingress_parse_listen(const char *arg, uint32_t *addr, uint16_t *port, sbx_err *err)
{
	char host[64];
	const char *colon = arg != NULL ? strrchr(arg, ':') : NULL;
	struct in_addr a;
	char *end = NULL;
	unsigned long p;

	if (colon == NULL || (size_t)(colon - arg) >= sizeof(host) || colon[1] == '\0') {
		sbx_err_set(err, "--ingress-listen: want HOST:PORT or off, got \"%s\"", arg != NULL ? arg : "");
		return -1;
	}
	memcpy(host, arg, (size_t)(colon - arg));
	host[colon - arg] = '\0';
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (inet_pton(AF_INET, host, &a) != 1 || errno != 0 || *end != '\0' || p > 65535) {
		sbx_err_set(err, "--ingress-listen: \"%s\" is not an IPv4 address and port", arg);
		return -1;
	}
	if ((ntohl(a.s_addr) >> 24) != 127) {
		sbx_err_set(err, "--ingress-listen: %s is not a loopback address (ingress is loopback only)",
			    host);
		return -1;
	}
	*addr = a.s_addr;
	*port = (uint16_t)p;
	return 0;
}

/* ---- the registry ---- */

static void conn_shut(struct ing_conn *c)
{
	shutdown(c->cfd, SHUT_RDWR);
	if (c->gfd >= 0)
		shutdown(c->gfd, SHUT_RDWR);
}

static bool reg_add(mock_ingress *in, ing_conn *c)
{
	bool ok;

	pthread_mutex_lock(&in->lock);
	ok = !in->stopping && in->nconns < ING_CONNS_MAX;
	if (ok)
		in->conns[in->nconns++] = c;
	pthread_mutex_unlock(&in->lock);
	return ok;
}

/* Unregisters c and closes its fds (under the lock: see the top). */
static void reg_drop(ing_conn *c)
{
	mock_ingress *in = c->in;

	pthread_mutex_lock(&in->lock);
	for (size_t i = 0; i < in->nconns; i++) {
		if (in->conns[i] == c) {
			in->conns[i] = in->conns[--in->nconns];
			break;
		}
	}
	close(c->cfd);
	if (c->gfd >= 0)
		close(c->gfd);
	pthread_cond_broadcast(&in->cv);
	pthread_mutex_unlock(&in->lock);
	free(c);
}


void mock_ingress_cut(mock_ingress *in, const char *id)
{
	if (in == NULL || id == NULL)
		return;
	pthread_mutex_lock(&in->lock);
	for (size_t i = 0; i < in->nconns; i++) {
		if (strcmp(in->conns[i]->id, id) == 0)
			conn_shut(in->conns[i]);
	}
	pthread_mutex_unlock(&in->lock);
}

/* Sets the connection's sandbox (read by cut under the lock). */
static void conn_bind(ing_conn *c, const char *id, int gfd)
{
	pthread_mutex_lock(&c->in->lock);
	snprintf(c->id, sizeof(c->id), "%s", id);
	c->gfd = gfd;
	if (c->in->stopping) /* the stop's sweep may have run already */
		conn_shut(c);
	pthread_mutex_unlock(&c->in->lock);
}

/* ---- socket helpers ---- */

static bool write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = {.fd = fd, .events = POLLOUT};

			if (poll(&pf, 1, ING_IDLE_MS) == 1)
				continue;
			return false;
		}
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* ---- the client's side: plain or TLS ---- */

/* All of p to the client. */
static bool cli_send(ing_conn *c, const char *p, size_t n)
{
	if (c->tls != NULL)
		return mock_inet_tls_write(c->tls, p, n, sbx_mono_ms() + ING_IDLE_MS, -1) == 0;
	return write_all(c->cfd, p, n);
}

/* Whether the client's bytes can be read now without waiting (TLS keeps
 * a record's decrypted rest, which poll cannot see). */
static bool cli_buffered(const ing_conn *c)
{
	return c->tls != NULL && mock_inet_tls_pending(c->tls);
}

/* After poll said readable: > 0 bytes, 0 the client is done (EOF), -1 an
 * error, -2 nothing yet (EINTR, or a TLS record not whole). */
static ssize_t cli_recv(ing_conn *c, char *buf, size_t cap)
{
	ssize_t r;

	if (c->tls != NULL)
		return mock_inet_tls_try_read(c->tls, buf, cap);
	r = recv(c->cfd, buf, cap, 0);
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return -2;
	return r;
}

/* A short answer of the proxy itself, then the connection closes; into
 * buf, its length or 0. */
static size_t answer_text(char *buf, size_t cap, int status, const char *reason, const char *msg)
{
	int n = snprintf(buf, cap,
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
			 status, reason, strlen(msg) + 1, msg);

	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static void answer(ing_conn *c, int status, const char *reason, const char *msg)
{
	char buf[1024];
	size_t n = answer_text(buf, sizeof(buf), status, reason, msg);

	if (n > 0)
		cli_send(c, buf, n);
}

/* Reads until the head's blank line: its length (body bytes may follow in
 * buf, *got in all), 0 when the peer closed or the head is too big, -1 on
 * timeout or error. */
static ssize_t read_head(ing_conn *c, char *buf, size_t cap, size_t *got, int ms)
{
	*got = 0;
	for (;;) {
		struct pollfd pf = {.fd = c->cfd, .events = POLLIN};
		char *end;
		ssize_t r;

		buf[*got] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end != NULL)
			return end + 4 - buf;
		if (*got + 1 >= cap)
			return 0;
		if (!cli_buffered(c) && poll(&pf, 1, ms) != 1)
			return -1;
		r = cli_recv(c, buf + *got, cap - 1 - *got);
		if (r == -2)
			continue;
		if (r <= 0)
			return r == 0 ? 0 : -1;
		if (memchr(buf + *got, '\0', (size_t)r) != NULL)
			return 0; /* not HTTP */
		*got += (size_t)r;
	}
}

/* ---- the request ---- */

typedef struct ing_req {
	char id[MOCK_ID_MAX];
	unsigned port;
	const char *method;  /* into the head buffer, NUL-terminated */
	size_t method_len;
	const char *rest;    /* the path after the prefix ("/..." or "?...") */
	size_t rest_len;
	const char *version; /* "HTTP/1.x" */
	const char *headers; /* after the request line's CRLF, up to the blank line */
	size_t headers_len;
	long long body;      /* Content-Length, 0 when none */
	bool upgrade;
	bool tls;            /* the client came over TLS: X-Forwarded-Proto https */
} ing_req;

/* "/<id>/<port>" then "", "/..." or "?...". false with msg. */
static bool parse_target(const char *t, size_t n, ing_req *q, const char **msg)
{
	const char *slash, *p;
	char *end = NULL;
	unsigned long port;

	*msg = "want /<sandbox id>/<port>/ (the sandbox's ingress_url_template)";
	if (n < 2 || t[0] != '/')
		return false;
	slash = memchr(t + 1, '/', n - 1);
	if (slash == NULL || (size_t)(slash - t - 1) >= sizeof(q->id) || slash == t + 1)
		return false;
	memcpy(q->id, t + 1, (size_t)(slash - t - 1));
	q->id[slash - t - 1] = '\0';
	p = slash + 1;
	if (p >= t + n || *p < '0' || *p > '9')
		return false;
	errno = 0;
	port = strtoul(p, &end, 10);
	if (errno != 0 || port == 0 || port > 65535 || end > t + n ||
	    (end < t + n && *end != '/' && *end != '?')) {
		*msg = "the port must be 1-65535";
		return false;
	}
	q->port = (unsigned)port;
	q->rest = end;
	q->rest_len = (size_t)(t + n - end);
	return true;
}

/* The value of header name in [h, h+n), or NULL; *len its length. */
static const char *header(const char *h, size_t n, const char *name, size_t *len)
{
	size_t nl = strlen(name);
	const char *end = h + n;

	while (h < end) {
		const char *eol = memchr(h, '\n', (size_t)(end - h));
		const char *v;

		if (eol == NULL)
			eol = end;
		if ((size_t)(eol - h) > nl && strncasecmp(h, name, nl) == 0 && h[nl] == ':') {
			v = h + nl + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			*len = (size_t)(eol - v);
			while (*len > 0 && (v[*len - 1] == '\r' || v[*len - 1] == ' '))
				(*len)--;
			return v;
		}
		h = eol + 1;
	}
	return NULL;
}

/* Parses the head in buf (NUL-terminated at head_len). false: *status and
 * *msg say what to answer. */
static bool parse_request(char *buf, size_t head_len, ing_req *q, int *status, const char **msg)
{
	char *sp1 = memchr(buf, ' ', head_len), *sp2, *eol = strstr(buf, "\r\n");
	const char *v;
	size_t vl;

	*status = 400;
	*msg = "malformed request line";
	if (sp1 == NULL || eol == NULL || sp1 > eol)
		return false;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (sp2 == NULL || strncmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return false;
	q->method = buf;
	q->method_len = (size_t)(sp1 - buf);
	q->version = sp2 + 1;
	q->headers = eol + 2;
	q->headers_len = head_len - 2 - (size_t)(eol + 2 - buf);
	if (!parse_target(sp1 + 1, (size_t)(sp2 - sp1 - 1), q, msg))
		return false;
	v = header(q->headers, q->headers_len, "Transfer-Encoding", &vl);
	if (v != NULL) {
		*status = 411;
		*msg = "ingress takes request bodies with Content-Length only";
		return false;
	}
	q->body = 0;
	v = header(q->headers, q->headers_len, "Content-Length", &vl);
	if (v != NULL) {
		char *end = NULL;

		errno = 0;
		q->body = strtoll(v, &end, 10);
		if (errno != 0 || end != v + vl || vl == 0 || q->body < 0) {
			*msg = "bad Content-Length";
			return false;
		}
	}
	q->upgrade = header(q->headers, q->headers_len, "Upgrade", &vl) != NULL;
	return true;
}

/* Whether the header line [h, eol) is one the proxy replaces. */
static bool hop_header(const char *h, size_t n, bool keep_upgrade)
{
	static const char *const hop[] = {"Connection:", "Keep-Alive:", "Proxy-Connection:"};

	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++) {
		size_t l = strlen(hop[i]);

		if (n >= l && strncasecmp(h, hop[i], l) == 0)
			return !(keep_upgrade && i == 0);
	}
	return false;
}

/* Appends headers [h, h+n) minus the hop-by-hop ones to out. */
static bool copy_headers(sbx_strbuf *out, const char *h, size_t n, bool keep_upgrade)
{
	const char *end = h + n;

	while (h < end) {
		const char *eol = memchr(h, '\n', (size_t)(end - h));
		size_t l = eol != NULL ? (size_t)(eol + 1 - h) : (size_t)(end - h);

		if (!hop_header(h, l, keep_upgrade) && !sbx_strbuf_append(out, h, l))
			return false;
		h += l;
	}
	return true;
}

/* The request as the guest gets it. */
static bool build_request(const ing_req *q, sbx_strbuf *out)
{
	bool root = q->rest_len == 0 || q->rest[0] == '?';

	return sbx_strbuf_append(out, q->method, q->method_len) &&
	       sbx_strbuf_append(out, " /", root ? 2 : 1) && sbx_strbuf_append(out, q->rest, q->rest_len) &&
	       sbx_strbuf_puts(out, " HTTP/1.1\r\n") &&
	       copy_headers(out, q->headers, q->headers_len, q->upgrade) &&
	       sbx_strbuf_printf(out, "%sX-Forwarded-Prefix: /%s/%u\r\nX-Forwarded-Proto: %s\r\n\r\n",
				 q->upgrade ? "" : "Connection: close\r\n", q->id, q->port,
				 q->tls ? "https" : "http");
}

/* Every line of the head ends with CRLF, no CR, LF or NUL stands alone,
 * and the only empty line is the last: a guest's server that took
 * "\r\r\n", a bare LF or an inner empty line for the end of the head would
 * read the proxy's own headers as a body (found by the mock_ingress
 * fuzzer). */
static bool lines_well_formed(const char *h, size_t n)
{
	const char *blank = memmem(h, n, "\r\n\r\n", 4);

	if (blank == NULL || blank + 4 != h + n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (h[i] == '\0')
			return false;
		if (h[i] == '\r' && (i + 1 >= n || h[i + 1] != '\n'))
			return false;
		if (h[i] == '\n' && (i == 0 || h[i - 1] != '\r'))
			return false;
	}
	return true;
}

bool mock_ingress_rewrite_head(char *head, size_t head_len, sbx_strbuf *out, char *id, size_t idcap,
			       unsigned *port, int *status, const char **msg)
{
	ing_req q;

	memset(&q, 0, sizeof(q));
	if (head_len < 4 || memcmp(head + head_len - 4, "\r\n\r\n", 4) != 0) {
		*status = 400;
		*msg = "a request head ends with an empty line";
		return false;
	}
	if (!lines_well_formed(head, head_len)) {
		*status = 400;
		*msg = "a bare CR, a bare LF or a NUL in the request head (RFC 9112 2.2)";
		return false;
	}
	head[head_len - 2] = '\0'; /* as conn_main: ends the last header line's CRLF */
	if (!parse_request(head, head_len, &q, status, msg))
		return false;
	snprintf(id, idcap, "%s", q.id);
	*port = q.port;
	if (!build_request(&q, out) || out->oom) {
		*status = 500;
		*msg = "out of memory";
		return false;
	}
	return true;
}

/* ---- the answer ---- */

/* The guest's answer head in h (complete, head_len bytes) as the client
 * gets it: hop-by-hop headers replaced by "Connection: close" unless it is
 * a 101 (then the connection stays a tunnel to this sandbox). */
static bool build_answer(const char *h, size_t head_len, sbx_strbuf *out, bool *tunnel)
{
	const char *eol = strstr(h, "\r\n");

	if (strncmp(h, "HTTP/1.", 7) != 0 || eol == NULL || (size_t)(eol - h) < 12)
		return false;
	*tunnel = strncmp(h + 8, " 101", 4) == 0;
	return sbx_strbuf_append(out, h, (size_t)(eol + 2 - h)) &&
	       copy_headers(out, eol + 2, head_len - 2 - (size_t)(eol + 2 - h), *tunnel) &&
	       sbx_strbuf_puts(out, *tunnel ? "\r\n" : "Connection: close\r\n\r\n");
}

typedef struct relay {
	ing_conn *c;
	long long c2g_left;   /* request body bytes still to pass on */
	bool tunnel;          /* after a 101: both ways until either closes */
	bool head_done;       /* the answer's head went out */
	bool client_eof;      /* the client sent its last byte */
	char head[ING_HEAD_MAX];
	size_t head_got;
	char buf[ING_BUF];
} relay;

/* Guest -> client bytes; false when the connection is over. */
static bool from_guest(relay *r, const char *p, size_t n)
{
	sbx_strbuf out = SBX_STRBUF_INIT;
	char *end;
	bool ok;

	if (r->head_done)
		return cli_send(r->c, p, n);
	if (r->head_got + n >= sizeof(r->head)) {
		answer(r->c, 502, "Bad Gateway", "ingress: the guest's answer head is too big");
		return false;
	}
	memcpy(r->head + r->head_got, p, n);
	r->head_got += n;
	r->head[r->head_got] = '\0';
	end = strstr(r->head, "\r\n\r\n");
	if (end == NULL)
		return true;
	if (!build_answer(r->head, (size_t)(end + 4 - r->head), &out, &r->tunnel) || out.oom) {
		sbx_strbuf_free(&out);
		answer(r->c, 502, "Bad Gateway", "ingress: the guest's server did not answer HTTP");
		return false;
	}
	r->head_done = true;
	ok = cli_send(r->c, out.data, out.len) &&
	     cli_send(r->c, end + 4, r->head_got - (size_t)(end + 4 - r->head));
	sbx_strbuf_free(&out);
	return ok;
}

/* Client -> guest bytes (the request body, or a tunnel's). */
static bool from_client(relay *r, size_t n)
{
	if (!r->tunnel) {
		if ((long long)n > r->c2g_left)
			n = (size_t)r->c2g_left; /* a pipelined request: not passed on */
		r->c2g_left -= (long long)n;
	}
	return write_all(r->c->gfd, r->buf, n);
}

/* One poll round; false when the connection is over. */
static bool relay_step(relay *r)
{
	bool want_client = !r->client_eof && (r->tunnel || r->c2g_left > 0);
	bool buffered = want_client && cli_buffered(r->c);
	struct pollfd pf[2] = {{.fd = r->c->gfd, .events = POLLIN},
			       {.fd = want_client ? r->c->cfd : -1, .events = POLLIN}};
	int pr = poll(pf, 2, buffered ? 0 : ING_IDLE_MS);
	ssize_t n;

	if (pr < 0 && errno == EINTR)
		return true;
	if (pr < 0 || (pr == 0 && !buffered))
		return false;
	if (pf[1].revents != 0 || buffered) {
		n = cli_recv(r->c, r->buf, sizeof(r->buf));
		if (n == -2)
			return true;
		if (n <= 0) {
			shutdown(r->c->gfd, SHUT_WR); /* the client is done sending */
			r->client_eof = true;
		} else if (!from_client(r, (size_t)n)) {
			return false;
		}
	}
	if (pf[0].revents != 0) {
		n = recv(r->c->gfd, r->buf, sizeof(r->buf), 0);
		if (n <= 0) {
			if (!r->head_done)
				answer(r->c, 502, "Bad Gateway",
				       "ingress: the guest's server closed the connection without an answer");
			return false;
		}
		return from_guest(r, r->buf, (size_t)n);
	}
	return true;
}

/* Sends the rewritten request (and the body bytes that came with its
 * head), then relays until either side is done. */
static void relay_run(ing_conn *c, const ing_req *q, const char *extra, size_t nextra)
{
	relay *r = calloc(1, sizeof(*r));
	sbx_strbuf req = SBX_STRBUF_INIT;
	size_t body_now;

	if (r == NULL || !build_request(q, &req) || req.oom) {
		answer(c, 500, "Internal Server Error", "ingress: out of memory");
		goto out;
	}
	r->c = c;
	body_now = (long long)nextra > q->body ? (size_t)q->body : nextra;
	r->c2g_left = q->body - (long long)body_now;
	if (!write_all(c->gfd, req.data, req.len) || !write_all(c->gfd, extra, body_now))
		goto out;
	while (relay_step(r))
		;
out:
	sbx_strbuf_free(&req);
	free(r);
}

/* ---- a connection ---- */

/* A socket connected to the guest's 127.0.0.1:port, or -1 having answered. */
static int connect_guest(ing_conn *c, const ing_req *q)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)q->port)};
	struct pollfd pf;
	sbx_err err = {{0}};
	int status = 502, fd = mock_op_ingress_socket(c->mock, q->id, &status, &err), e = 0, one = 1;
	socklen_t el = sizeof(e);
	char msg[SBX_ERR_MAX + 64];

	if (fd < 0) {
		answer(c, status, status == 404 ? "Not Found" : status == 503 ? "Service Unavailable"
										: "Bad Gateway",
		       err.msg);
		return -1;
	}
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		e = errno;
		pf = (struct pollfd){.fd = fd, .events = POLLOUT};
		if (e == EINPROGRESS && poll(&pf, 1, ING_CONNECT_MS) == 1 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0)
			e = errno;
		else if (e == EINPROGRESS && pf.revents == 0)
			e = ETIMEDOUT;
	}
	if (e == 0)
		return fd;
	close(fd);
	snprintf(msg, sizeof(msg), "ingress: nothing answers on port %u in sandbox %s (%s)", q->port, q->id,
		 strerror(e));
	answer(c, 502, "Bad Gateway", msg);
	return -1;
}

/* A desktop's noVNC port takes only a live connection's token
 * (ops_computer.h), which leaves the path here; false having answered 403. */
static bool gate_pass(ing_conn *c, ing_req *q)
{
	char msg[256];
	size_t skip = 0;

	if (mock_op_computer_ingress_gate(c->mock, q->id, q->port, q->rest, q->rest_len, &skip, msg,
					  sizeof(msg)) != 0) {
		answer(c, 403, "Forbidden", msg);
		return false;
	}
	q->rest += skip;
	q->rest_len -= skip;
	return true;
}

/* The first byte says which: a TLS handshake record is a ClientHello
 * (answered with a leaf for the name the client asked for, else for the
 * address it dialled), anything else plain HTTP as before. false: the
 * client sent nothing in time, or its handshake failed (garbage after the
 * first byte, a stall past ING_HEAD_MS, a name refused): closed. */
static bool tls_sniff(ing_conn *c)
{
	struct pollfd pf = {.fd = c->cfd, .events = POLLIN};
	struct sockaddr_in a = {.sin_family = AF_UNSPEC};
	socklen_t al = sizeof(a);
	char dialled[INET_ADDRSTRLEN] = "127.0.0.1";
	unsigned char first = 0;

	if (c->in->tls == NULL)
		return true;
	if (poll(&pf, 1, ING_HEAD_MS) != 1 || recv(c->cfd, &first, 1, MSG_PEEK) != 1)
		return false;
	if (first != TLS_HANDSHAKE_RECORD)
		return true;
	if (getsockname(c->cfd, (struct sockaddr *)&a, &al) == 0 && a.sin_family == AF_INET)
		inet_ntop(AF_INET, &a.sin_addr, dialled, sizeof(dialled));
	c->tls = mock_inet_tls_accept(c->in->tls, c->cfd, dialled, sbx_mono_ms() + ING_HEAD_MS, -1, NULL);
	return c->tls != NULL;
}

static void *conn_main(void *arg)
{
	ing_conn *c = arg;
	char *head = malloc(ING_HEAD_MAX);
	ing_req q;
	size_t got = 0;
	ssize_t hl = head != NULL && tls_sniff(c) ? read_head(c, head, ING_HEAD_MAX, &got, ING_HEAD_MS) : -1;
	int status, gfd;
	const char *msg;

	if (hl == 0 && got > 0)
		answer(c, 431, "Request Header Fields Too Large", "ingress: request head too big");
	if (hl <= 0)
		goto out;
	head[hl - 2] = '\0'; /* ends the last header line's CRLF; the body stays after */
	memset(&q, 0, sizeof(q));
	q.tls = c->tls != NULL;
	if (!parse_request(head, (size_t)hl, &q, &status, &msg)) {
		answer(c, status, status == 411 ? "Length Required" : "Bad Request", msg);
		goto out;
	}
	if (!gate_pass(c, &q))
		goto out;
	gfd = connect_guest(c, &q);
	if (gfd < 0)
		goto out;
	conn_bind(c, q.id, gfd);
	relay_run(c, &q, head + hl, got - (size_t)hl);
out:
	free(head);
	mock_inet_tls_close(c->tls); /* close_notify before the fd goes */
	c->tls = NULL;
	reg_drop(c);
	return NULL;
}

/* ---- listening ---- */

static void accept_one(mock_ingress *in)
{
	int fd = accept4(in->lfd, NULL, NULL, SOCK_CLOEXEC), one = 1;
	struct timeval snd = {.tv_sec = ING_IDLE_MS / 1000};
	ing_conn *c;
	pthread_t t;
	pthread_attr_t at;

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			usleep(50 * 1000); /* out of fds: the listener stays readable; no busy loop */
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* a client that stops reading frees its thread after the idle time */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd));
	/* non-blocking: the TLS side waits with poll (inet_tls.h); the plain
	 * side polls before each read and write anyway */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	c = calloc(1, sizeof(*c));
	if (c == NULL || !reg_add(in, c)) {
		ing_conn plain = {.cfd = fd, .gfd = -1};

		answer(&plain, 503, "Service Unavailable", "ingress: too many open connections");
		close(fd);
		free(c);
		return;
	}
	c->cfd = fd;
	c->gfd = -1;
	c->mock = in->mock;
	c->in = in;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, conn_main, c) != 0) {
		answer(c, 503, "Service Unavailable", "ingress: no thread for the connection");
		reg_drop(c);
	}
	pthread_attr_destroy(&at);
}

static void *acceptor_main(void *arg)
{
	mock_ingress *in = arg;

	for (;;) {
		struct pollfd pf[2] = {{.fd = in->lfd, .events = POLLIN}, {.fd = in->wakefd, .events = POLLIN}};

		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents != 0)
			break;
		if (pf[0].revents != 0)
			accept_one(in);
	}
	return NULL;
}

mock_ingress *mock_ingress_start(sbx_mock *mock, uint32_t addr, uint16_t port, mock_inet_tls *tls,
				 bool https, sbx_err *err)
{
	mock_ingress *in = calloc(1, sizeof(*in));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = addr};
	socklen_t al = sizeof(a);
	int one = 1;
	char host[INET_ADDRSTRLEN] = "?";

	if (in == NULL) {
		sbx_err_set(err, "ingress: out of memory");
		return NULL;
	}
	in->mock = mock;
	in->tls = tls;
	pthread_mutex_init(&in->lock, NULL);
	pthread_cond_init(&in->cv, NULL);
	in->wakefd = eventfd(0, EFD_CLOEXEC);
	in->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (in->wakefd < 0 || in->lfd < 0 || setsockopt(in->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(in->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(in->lfd, 128) != 0 ||
	    getsockname(in->lfd, (struct sockaddr *)&a, &al) != 0) {
		inet_ntop(AF_INET, &a.sin_addr, host, sizeof(host));
		sbx_err_set(err, "ingress: listen on %s:%u: %s", host, (unsigned)port, strerror(errno));
		goto out_free;
	}
	inet_ntop(AF_INET, &a.sin_addr, host, sizeof(host));
	snprintf(in->base, sizeof(in->base), "%s://%s:%u", https && tls != NULL ? "https" : "http", host,
		 (unsigned)ntohs(a.sin_port));
	if (pthread_create(&in->thread, NULL, acceptor_main, in) != 0) {
		sbx_err_set(err, "ingress: no thread");
		goto out_free;
	}
	in->thread_up = true;
	return in;

out_free:
	mock_ingress_stop(in);
	return NULL;
}

const char *mock_ingress_base(const mock_ingress *in)
{
	return in != NULL ? in->base : "";
}

void mock_ingress_stop(mock_ingress *in)
{
	uint64_t one = 1;

	if (in == NULL)
		return;
	pthread_mutex_lock(&in->lock);
	in->stopping = true;
	pthread_mutex_unlock(&in->lock);
	if (in->thread_up) {
		if (write(in->wakefd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			pthread_cancel(in->thread); /* cannot happen for an eventfd */
		pthread_join(in->thread, NULL);
	}
	pthread_mutex_lock(&in->lock);
	for (size_t i = 0; i < in->nconns; i++)
		conn_shut(in->conns[i]);
	while (in->nconns > 0)
		pthread_cond_wait(&in->cv, &in->lock);
	pthread_mutex_unlock(&in->lock);
	if (in->lfd >= 0)
		close(in->lfd);
	if (in->wakefd >= 0)
		close(in->wakefd);
	pthread_cond_destroy(&in->cv);
	pthread_mutex_destroy(&in->lock);
	free(in);
}

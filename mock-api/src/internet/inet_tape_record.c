/* inet_tape_record: the recorder's trip to the origin (inet_tape.h).
 *
 * libcurl, one easy handle per request: it does the origin's TLS with
 * verification (the host's trust store or --internet-record-ca), framing
 * and de-chunking; what it must not do is set here — no content decoding
 * (a gzip body stays the gzip bytes the origin sent), no proxy from the
 * environment, HTTP/1.1 only, the request-target exactly as the guest
 * sent it (CURLOPT_REQUEST_TARGET), the guest's headers in its order with
 * curl's own defaults (Accept, Expect, a form Content-Type) suppressed.
 * Its sockets come from the maker in the host's namespace
 * (inet_upstream.h: this thread is in the internet's, which has no way
 * out) and names are resolved there too, or by --internet-record-resolve,
 * so curl itself never resolves.
 *
 * The answer goes to the guest as it comes (its head at the end of the
 * origin's, its body re-chunked when the origin's was), while the body is
 * hashed into the cassette's temporary file; the exchange is added when
 * the whole answer came. */
#define _GNU_SOURCE
#include "internet/inet_tape.h"
#include "internet/inet_tape_internal.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONNECT_MS 10000
#define STALL_S 60 /* an origin that sends nothing this long is given up */
#define BODY_BUF (256 * 1024)  /* curl's receive buffer: fewer, larger writes to the guest */

typedef struct rec {
	mock_inet_tape *t;
	mock_inet_io *io;
	const tape_req *r;
	mock_cassette_hdr hdrs[MOCK_CASSETTE_HEADERS_MAX];
	size_t nhdrs, hbytes;
	int status;
	char reason[257];
	bool head_sent, chunked, body_expected, failed;
	mock_cassette_body *body;
	sbx_err err;
} rec;

static void hdrs_reset(rec *x)
{
	for (size_t i = 0; i < x->nhdrs; i++) {
		free(x->hdrs[i].name);
		free(x->hdrs[i].value);
	}
	x->nhdrs = 0;
	x->hbytes = 0;
}

/* The origin's head as the guest gets it: 0, or -1 (the guest is gone). */
static int send_head(rec *x)
{
	int rc;

	x->chunked = mock_tape_is_chunked(x->hdrs, x->nhdrs);
	x->body_expected = mock_tape_has_body(x->r->method, x->status);
	rc = mock_tape_send_head(x->io, x->status, x->reason, x->hdrs, x->nhdrs, x->chunked, x->body_expected, -1);
	x->head_sent = rc == 0;
	return rc;
}

/* "HTTP/1.1 200 OK": the status and reason into x; a new head begins
 * (a 1xx's is dropped). */
static void status_line(rec *x, const char *line, size_t len)
{
	const char *sp = memchr(line, ' ', len);

	hdrs_reset(x);
	x->status = 0;
	x->reason[0] = '\0';
	if (sp == NULL || len - (size_t)(sp - line) < 4)
		return;
	x->status = (int)strtol(sp + 1, NULL, 10);
	if (len - (size_t)(sp - line) > 5)
		snprintf(x->reason, sizeof(x->reason), "%.*s", (int)(len - (size_t)(sp - line) - 5), sp + 5);
}

static int header_line(rec *x, const char *line, size_t len)
{
	const char *colon = memchr(line, ':', len), *v;
	size_t vl;

	if (colon == NULL)
		return 0; /* not a header: dropped, as a client would */
	if (x->nhdrs == MOCK_CASSETTE_HEADERS_MAX || x->hbytes + len > MOCK_CASSETTE_HEADER_BYTES) {
		sbx_err_set(&x->err, "the origin's answer has over %d headers or %d bytes of them (LIMITS.md)",
			    MOCK_CASSETTE_HEADERS_MAX, MOCK_CASSETTE_HEADER_BYTES);
		return -1;
	}
	v = colon + 1;
	while (v < line + len && (*v == ' ' || *v == '\t'))
		v++;
	vl = (size_t)(line + len - v);
	while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;
	x->hdrs[x->nhdrs].name = strndup(line, (size_t)(colon - line));
	x->hdrs[x->nhdrs].value = strndup(v, vl);
	x->nhdrs++;
	x->hbytes += len;
	return 0;
}

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
	rec *x = arg;
	size_t len = size * n, l = len;

	if (x->head_sent)
		return len; /* a chunked body's trailer: not kept (hop-by-hop) */
	while (l > 0 && (buf[l - 1] == '\n' || buf[l - 1] == '\r'))
		l--;
	if (l >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
		status_line(x, buf, l);
	} else if (l == 0 && x->status >= 200) {
		x->body = mock_cassette_body_begin(x->t->cas, &x->err);
		if (x->body == NULL || send_head(x) != 0)
			return 0;
	} else if (l > 0 && header_line(x, buf, l) != 0) {
		return 0;
	}
	return len;
}

/* Why a recording writes no more (into err), said once on stderr too:
 * the guests' downloads stop being recorded, which the operator must
 * know of. */
static void bound_reached(mock_inet_tape *t, sbx_err *err)
{
	sbx_err_set(err,
		    "the recording wrote its bound of %lld MiB of bodies to the cassette (--internet-record-max-mib): "
		    "nothing more is recorded",
		    t->rec_max / (1024 * 1024));
	if (!atomic_exchange(&t->rec_said, true))
		fprintf(stderr, "sbx-mock: cassette %s: %s\n", mock_cassette_name(t->cas), err->msg);
}

static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
	rec *x = arg;
	size_t len = size * n;
	char sz[24];
	int k;

	if (atomic_fetch_add(&x->t->rec_bytes, (long long)len) + (long long)len > x->t->rec_max) {
		bound_reached(x->t, &x->err);
		return 0;
	}
	if (x->body == NULL || mock_cassette_body_write(x->body, buf, len) != 0) {
		sbx_err_set(&x->err, "the body could not be written to the cassette");
		return 0;
	}
	if (!x->chunked)
		return x->io->send(x->io->arg, buf, len) == 0 ? len : 0;
	k = snprintf(sz, sizeof(sz), "%zx\r\n", len);
	if (len == 0)
		return 0;
	return x->io->send(x->io->arg, sz, (size_t)k) == 0 && x->io->send(x->io->arg, buf, len) == 0 &&
			       x->io->send(x->io->arg, "\r\n", 2) == 0
		       ? len
		       : 0;
}

/* A stop of the mock ends the transfer. */
static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	rec *x = arg;
	struct pollfd pf = {.fd = x->io->stopfd, .events = POLLIN};

	(void)a;
	(void)b;
	(void)c;
	(void)d;
	return x->io->stopfd >= 0 && poll(&pf, 1, 0) > 0 ? 1 : 0;
}

static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *addr)
{
	int fd;

	(void)purpose;
	fd = mock_inet_outside_socket(arg, addr->family);
	return fd >= 0 ? fd : CURL_SOCKET_BAD;
}

/* The guest's headers as curl sends them: hop-by-hop ones, Content-Length
 * (curl's from the body) and Expect out; curl's own defaults off. */
static struct curl_slist *request_headers(const tape_req *r)
{
	struct curl_slist *l = NULL;
	bool accept = false, ctype = false;

	for (size_t i = 0; i < r->nhdrs; i++) {
		const mock_cassette_hdr *h = &r->hdrs[i];
		char *line = NULL;

		if (h->name == NULL || h->value == NULL || mock_cassette_hop(r->hdrs, r->nhdrs, i) ||
		    strcasecmp(h->name, "Content-Length") == 0 || strcasecmp(h->name, "Expect") == 0)
			continue;
		accept = accept || strcasecmp(h->name, "Accept") == 0;
		ctype = ctype || strcasecmp(h->name, "Content-Type") == 0;
		/* "Name;" is curl's spelling of a header with an empty value */
		if (asprintf(&line, h->value[0] != '\0' ? "%s: %s" : "%s;%s", h->name, h->value) < 0)
			continue;
		l = curl_slist_append(l, line);
		free(line);
	}
	l = curl_slist_append(l, "Expect:");
	if (!accept)
		l = curl_slist_append(l, "Accept:");
	if (!ctype && r->has_body)
		l = curl_slist_append(l, "Content-Type:");
	return l;
}

/* What kind of the host's own addresses addr is — loopback, unspecified,
 * link-local (where clouds serve their metadata) or multicast — or NULL
 * for any other (public or private: a mirror on the LAN is a use). An
 * IPv4-mapped IPv6 address is its IPv4 one. */
static const char *host_only_kind(const char *addr)
{
	uint8_t a[16];
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	const uint8_t *v4 = NULL;

	if (inet_pton(AF_INET, addr, a) == 1)
		v4 = a;
	else if (inet_pton(AF_INET6, addr, a) != 1)
		return "unparsable";
	else if (memcmp(a, mapped, sizeof(mapped)) == 0)
		v4 = a + 12;
	if (v4 != NULL) {
		if (v4[0] == 127)
			return "loopback";
		if (v4[0] == 0)
			return "unspecified";
		if (v4[0] == 169 && v4[1] == 254)
			return "link-local";
		return v4[0] >= 224 ? "multicast or reserved" : NULL;
	}
	if (memcmp(a, in6addr_loopback.s6_addr, 16) == 0)
		return "loopback";
	if (memcmp(a, in6addr_any.s6_addr, 16) == 0)
		return "unspecified";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return "link-local";
	return a[0] == 0xff ? "multicast or reserved" : NULL;
}

/* Where host:port is: --internet-record-resolve, else the host's
 * resolver; an address literal is itself (the operator allowed it by
 * address). A name the host's resolver puts on one of the host's own
 * addresses is refused: an allowed name that resolves to 127.0.0.1
 * would let a guest reach, from the host's namespace, any service
 * listening on the host's loopback (the mock's own API among them) with
 * a method, path and headers of its choosing; the operator who means it
 * names that address with --internet-record-resolve. 0, or -1 with why. */
static int where(const mock_inet_tape *t, mock_inet_io *io, char *addr, size_t cap, char *why, size_t wcap)
{
	uint8_t raw[16];
	const char *kind;

	if (inet_pton(AF_INET, io->host, raw) == 1 || inet_pton(AF_INET6, io->host, raw) == 1) {
		snprintf(addr, cap, "%s", io->host);
		return 0;
	}
	for (size_t i = 0; i < t->nresolve; i++) {
		if (t->resolve[i].port == io->port && strcmp(t->resolve[i].name, io->host) == 0) {
			snprintf(addr, cap, "%s", t->resolve[i].addr);
			return 0;
		}
	}
	if (mock_inet_outside_resolve(io->outside, io->host, addr, cap, why, wcap) != 0) {
		char cause[160];

		snprintf(cause, sizeof(cause), "%.159s", why);
		snprintf(why, wcap, "%s cannot be resolved: %s", io->host, cause);
		return -1;
	}
	kind = host_only_kind(addr);
	if (kind == NULL)
		return 0;
	snprintf(why, wcap,
		 "%s resolves to %s, a %s address of the host: not recorded from (name it with "
		 "--internet-record-resolve %s:%u:%s to mean it)",
		 io->host, addr, kind, io->host, io->port, addr);
	return -1;
}

/* The easy handle's options for r to addr. NULL when out of memory. */
static CURL *easy_for(rec *x, const char *addr, struct curl_slist **hl, struct curl_slist **rl, char *ebuf)
{
	CURL *h = curl_easy_init();
	char url[512], res[512];
	bool v6 = strchr(x->io->host, ':') != NULL;

	if (h == NULL)
		return NULL;
	snprintf(url, sizeof(url), "%s://%s%s%s:%u/", x->io->scheme, v6 ? "[" : "", x->io->host, v6 ? "]" : "",
		 x->io->port);
	snprintf(res, sizeof(res), "%s:%u:%s%s%s", x->io->host, x->io->port, strchr(addr, ':') ? "[" : "", addr,
		 strchr(addr, ':') ? "]" : "");
	*rl = strcmp(addr, x->io->host) == 0 ? NULL : curl_slist_append(NULL, res); /* a literal is itself */
	*hl = request_headers(x->r);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_REQUEST_TARGET, x->r->target);
	curl_easy_setopt(h, CURLOPT_RESOLVE, *rl);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hl);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, (long)BODY_BUF); /* fewer, larger writes to the guest */
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (x->t->ca != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, x->t->ca);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_MS);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)STALL_S);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, x->io->outside);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
	if (strcmp(x->r->method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else if (strcmp(x->r->method, "GET") != 0 || x->r->has_body)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, x->r->method);
	if (x->r->has_body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->r->body_len);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, x->r->body);
	}
	return h;
}

/* The whole answer came: the exchange into the cassette. */
static void keep(rec *x)
{
	mock_inet_io *io = x->io;
	mock_cassette_ex e = {.host = (char *)io->host, .port = io->port, .method = (char *)x->r->method,
			      .target = (char *)x->r->target, .req_headers = (mock_cassette_hdr *)x->r->hdrs,
			      .nreq_headers = x->r->nhdrs, .status = x->status, .reason = x->reason,
			      .resp_headers = x->hdrs, .nresp_headers = x->nhdrs, .chunked = x->chunked};
	mock_cassette_body *b = x->body;

	x->body = NULL;
	snprintf(e.scheme, sizeof(e.scheme), "%s", io->scheme);
	if (x->r->has_body) {
		memcpy(e.req_sha, x->r->body_sha, sizeof(e.req_sha));
		e.req_size = (long long)x->r->body_len;
	}
	if (mock_cassette_body_end(b, e.body_sha, &e.body_size, &x->err) != 0 ||
	    mock_cassette_add(x->t->cas, &e, &x->err) != 0)
		fprintf(stderr, "sbx-mock: %s\n", x->err.msg); /* the guest has its answer; the cassette says why not */
}

/* The transfer's end: kept, or the guest told (a 502 when nothing was
 * sent yet, else a reset: a partial answer must not look whole). */
static void finish(rec *x, CURLcode rc, const char *ebuf)
{
	mock_inet_io *io = x->io;

	if (rc == CURLE_OK && x->head_sent) {
		if (x->chunked && x->body_expected && io->send(io->arg, "0\r\n\r\n", 5) != 0)
			io->keep = false;
		io->status = x->status;
		keep(x);
		return;
	}
	mock_cassette_body_abort(x->body);
	x->body = NULL;
	if (x->head_sent) { /* the guest's transfer is cut; its journal entry says why */
		io->keep = false;
		io->reset = true;
		io->status = x->status;
		if (x->err.msg[0] != '\0')
			snprintf(io->miss, sizeof(io->miss), "sbx-mock cassette %s: recording %s %s://%s:%u%.400s: %.300s\n",
				 mock_cassette_name(x->t->cas), x->r->method, io->scheme, io->host, io->port,
				 x->r->target, x->err.msg);
		return;
	}
	snprintf(io->miss, sizeof(io->miss), "sbx-mock cassette %s: recording %s %s://%s:%u%.400s: %.300s\n",
		 mock_cassette_name(x->t->cas), x->r->method, io->scheme, io->host, io->port, x->r->target,
		 x->err.msg[0] != '\0' ? x->err.msg : ebuf[0] != '\0' ? ebuf : curl_easy_strerror(rc));
	mock_tape_send_text(io, 502, "Bad Gateway", io->miss);
}

void mock_tape_record(mock_inet_tape *t, mock_inet_io *io, tape_req *r)
{
	rec *x = calloc(1, sizeof(*x));
	char addr[64], why[640] = "", ebuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hl = NULL, *rl = NULL;
	CURL *h;

	if (x == NULL) {
		io->keep = false;
		mock_tape_send_text(io, 500, "Internal Server Error", "sbx-mock cassette: out of memory\n");
		return;
	}
	x->t = t;
	x->io = io;
	x->r = r;
	if (atomic_load(&t->rec_bytes) >= t->rec_max)
		bound_reached(t, &x->err);
	if (x->err.msg[0] != '\0' || io->outside == NULL || where(t, io, addr, sizeof(addr), why, sizeof(why)) != 0) {
		snprintf(io->miss, sizeof(io->miss), "sbx-mock cassette %s: recording %s %s://%s:%u%.200s: %.640s\n",
			 mock_cassette_name(t->cas), r->method, io->scheme, io->host, io->port, r->target,
			 x->err.msg[0] != '\0' ? x->err.msg : io->outside == NULL ? "no way out" : why);
		mock_tape_send_text(io, 502, "Bad Gateway", io->miss);
		free(x);
		return;
	}
	h = easy_for(x, addr, &hl, &rl, ebuf);
	finish(x, h != NULL ? curl_easy_perform(h) : CURLE_OUT_OF_MEMORY, ebuf);
	curl_easy_cleanup(h);
	curl_slist_free_all(hl);
	curl_slist_free_all(rl);
	hdrs_reset(x);
	free(x);
}

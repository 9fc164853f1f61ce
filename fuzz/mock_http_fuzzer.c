/* libFuzzer target: the mock's whole HTTP layer in-process (issue 16). The
 * input is raw bytes a client sends on one connection — one or more
 * requests, pipelined, malformed or not. They go through the real request
 * path: an embedded sbx-mock's libmicrohttpd daemon gets one end of a
 * socketpair with MHD_add_connection, so framing, the body limit, the
 * strict JSON parse, %00 refusal, routing, auth, faults and the handlers
 * all run as for a TCP client.
 *
 * Invariants checked on what comes back:
 *   - it is a sequence of well-formed HTTP/1.1 answers (status line,
 *     headers, a body as long as Content-Length says, or valid chunks);
 *   - every answer with a JSON Content-Type is exactly one JSON value in
 *     valid UTF-8 (NDJSON: every line);
 *   - nothing follows an answer of the mock that says Connection: close
 *     (no request smuggled behind an ambiguous one is served);
 *     libmicrohttpd's own error answers end the check (0.9.75 sends the
 *     header block of its 400 for a bad Content-Length twice);
 *   - the mock answers within 5 s (no hang). A connection it keeps open
 *     once the answers are complete is closed after 5 quiet ms
 *     (libmicrohttpd waits for the idle timeout on a half-closed
 *     connection holding an unfinished request).
 * Side effects are kept in the model: every POST under /v1/sandboxes
 * (create, fork, exec, files...) is answered 503 by a fault rule, so no
 * guest process or tree is ever made; the model is reset after each input.
 * A NUL byte in the input is sent as is. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>

#include "../mock-api/src/faults/faults.h"
#include "../mock-api/src/util/json_print.h"
#include "../mock-api/src/model/model.h"
#include "../mock-api/src/server/server.h"
#include "sbx/mock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sbx_mock *g_mock;

static void stop_mock(void)
{
	sbx_mock_stop(g_mock);
	g_mock = NULL;
}

static void die(const char *what, const char *out, size_t len)
{
	fprintf(stderr, "mock_http invariant broken: %s\n--- answer (%zu bytes) ---\n%.*s\n", what,
		len, (int)(len > 2000 ? 2000 : len), out);
	abort();
}

static void start_mock(void)
{
	static const char rule[] = "{\"match\":{\"method\":\"POST\",\"path\":\"/v1/sandboxes/*\"},"
				   "\"action\":{\"kind\":\"http\",\"status\":503}}";
	static const char rule2[] = "{\"match\":{\"method\":\"POST\",\"path\":\"/v1/sandboxes\"},"
				    "\"action\":{\"kind\":\"http\",\"status\":503}}";
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	cJSON *r, *ids = cJSON_CreateArray();

	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.guest_mode = "plain"; /* no guest is ever started (the rules) */
	cfg.self_listen = NULL;
	cfg.admin_token = "fuzz-admin-token";
	/* a connection left with an unfinished request is closed by the
	 * idle timeout only: keep that short and the limit far above what
	 * piles up meanwhile (some hundred inputs a second) */
	cfg.max_connections = 4000;
	cfg.idle_timeout_s = 1;
	g_mock = sbx_mock_start(&cfg, &err);
	if (g_mock == NULL) {
		fprintf(stderr, "mock_http fuzzer: the mock did not start: %s\n", err.msg);
		abort();
	}
	for (int i = 0; i < 2; i++) {
		r = cJSON_Parse(i == 0 ? rule : rule2);
		if (r == NULL || mock_faults_add_json(g_mock->faults, r, ids, &err) != 0) {
			fprintf(stderr, "mock_http fuzzer: fault rule: %s\n", err.msg);
			abort();
		}
		cJSON_Delete(r);
	}
	cJSON_Delete(ids);
	atexit(stop_mock);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool check_answers(const char *out, size_t len, bool head_req, bool dry);

/* Sends in[0..n) on fd while collecting what comes back, then half-closes
 * and reads until the mock closes, or until 5 ms pass without a byte while
 * what came is complete answers: libmicrohttpd 0.9.75 keeps a half-closed
 * connection with an unfinished request open until the idle timeout. */
static size_t exchange(int fd, const uint8_t *in, size_t n, bool head_req, char **out)
{
	size_t sent = 0, len = 0, cap = 65536;
	char *buf = malloc(cap);
	int64_t deadline = now_ms() + 5000;
	bool shut = false;

	if (buf == NULL)
		abort();
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN | (shut ? 0 : POLLOUT)};
		int rc = poll(&p, 1, shut ? 5 : 100);
		ssize_t k;

		if (now_ms() > deadline)
			die("no answer and no close within 5 s", buf, len);
		if (rc == 0 && shut && check_answers(buf, len, head_req, true))
			break;
		if (rc <= 0)
			continue;
		if (!shut && (p.revents & POLLOUT) != 0) {
			k = sent < n ? send(fd, in + sent, n - sent, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
			if (k > 0)
				sent += (size_t)k;
			if (sent == n || k < 0) {
				shutdown(fd, SHUT_WR);
				shut = true;
			}
		}
		if ((p.revents & (POLLIN | POLLHUP | POLLERR)) == 0)
			continue;
		if (len == cap) {
			char *grown = realloc(buf, cap * 2);

			if (grown == NULL)
				abort();
			buf = grown;
			cap *= 2;
		}
		k = recv(fd, buf + len, cap - len, MSG_DONTWAIT);
		if (k > 0)
			len += (size_t)k;
		else if (k == 0 || (errno != EAGAIN && errno != EINTR))
			break;
	}
	*out = buf;
	return len;
}

/* A JSON answer body: one value, valid UTF-8. */
static bool strict_json(const char *b, size_t len)
{
	const char *end = NULL;
	cJSON *j;

	if (!mock_utf8_valid(b, len, NULL))
		return false;
	j = cJSON_ParseWithLengthOpts(b, len, &end, false);
	if (j == NULL)
		return false;
	cJSON_Delete(j);
	for (size_t i = (size_t)(end - b); i < len; i++) {
		if (b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n')
			return false;
	}
	return true;
}

static bool strict_ndjson(const char *b, size_t len)
{
	size_t start = 0;

	while (start < len) {
		const char *nl = memchr(b + start, '\n', len - start);
		size_t end = nl != NULL ? (size_t)(nl - b) : len;

		if (end > start && !strict_json(b + start, end - start))
			return false;
		start = end + 1;
	}
	return true;
}

typedef struct answer {
	int status;
	long long clen; /* -1: none */
	bool chunked, close, json, ndjson;
	bool mock; /* written by the mock (X-Request-Id), not by libmicrohttpd */
} answer;

/* Reads the header block at p (ends at "\r\n\r\n"); returns the body's
 * offset or 0 when malformed. */
static size_t parse_head(const char *p, size_t len, answer *a)
{
	const char *end = memmem(p, len, "\r\n\r\n", 4);
	const char *line = p;

	memset(a, 0, sizeof(*a));
	a->clen = -1;
	if (end == NULL || len < 12 || memcmp(p, "HTTP/1.1 ", 9) != 0)
		return 0;
	a->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (a->status < 100 || a->status > 599)
		return 0;
	while ((line = memmem(line, (size_t)(end - line), "\r\n", 2)) != NULL && line < end) {
		char name[64], value[256];
		const char *colon, *eol;
		size_t nl, vl;

		line += 2;
		eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
		colon = memchr(line, ':', (size_t)(eol - line));
		if (colon == NULL)
			return 0;
		nl = (size_t)(colon - line);
		vl = (size_t)(eol - colon - 1);
		snprintf(name, sizeof(name), "%.*s", (int)nl, line);
		snprintf(value, sizeof(value), "%.*s", (int)vl, colon + 1);
		if (strcasecmp(name, "Content-Length") == 0)
			a->clen = strtoll(value, NULL, 10);
		else if (strcasecmp(name, "Transfer-Encoding") == 0)
			a->chunked = strcasestr(value, "chunked") != NULL;
		else if (strcasecmp(name, "X-Request-Id") == 0)
			a->mock = true;
		else if (strcasecmp(name, "Connection") == 0)
			a->close = strcasestr(value, "close") != NULL;
		else if (strcasecmp(name, "Content-Type") == 0) {
			a->ndjson = strcasestr(value, "ndjson") != NULL;
			a->json = !a->ndjson && strcasestr(value, "json") != NULL;
		}
	}
	return (size_t)(end - p) + 4;
}

/* Decodes a chunked body at p into *body (malloc'ed); returns the bytes
 * consumed, 0 when malformed or incomplete. */
static size_t dechunk(const char *p, size_t len, char **body, size_t *blen)
{
	size_t off = 0, n = 0;
	char *b = malloc(len + 1);

	if (b == NULL)
		abort();
	for (;;) {
		char *endp;
		const char *eol = memmem(p + off, len - off, "\r\n", 2);
		unsigned long long sz;

		if (eol == NULL)
			break;
		sz = strtoull(p + off, &endp, 16);
		if (endp == p + off || (endp != eol && *endp != ';'))
			break;
		off = (size_t)(eol - p) + 2;
		if (sz == 0) {
			const char *fin = memmem(p + off, len - off, "\r\n", 2);

			if (fin == NULL)
				break;
			*body = b;
			*blen = n;
			return (size_t)(fin - p) + 2;
		}
		if (sz > len - off || len - off - sz < 2 || memcmp(p + off + sz, "\r\n", 2) != 0)
			break;
		memcpy(b + n, p + off, sz);
		n += sz;
		off += sz + 2;
	}
	free(b);
	return 0;
}

/* Checks the answers in out. head_req: the input holds a HEAD request,
 * whose answer has headers only (its Content-Length is the GET's). dry:
 * only says whether out is complete answers (false when one is cut short
 * or malformed), never aborts. */
static bool check_answers(const char *out, size_t len, bool head_req, bool dry)
{
	size_t off = 0;

	while (off < len) {
		answer a;
		size_t head = parse_head(out + off, len - off, &a), used;
		const char *body;
		char *chunks = NULL;
		size_t blen;

		if (head == 0 && dry)
			return false;
		if (head == 0)
			die("not an HTTP/1.1 answer", out + off, len - off);
		/* libmicrohttpd's own error answers (no X-Request-Id) end the
		 * check: 0.9.75 sends the header block of its 400 for a bad
		 * Content-Length twice, which the mock cannot prevent (it never
		 * sees that request) */
		if (!a.mock && a.close)
			return true;
		body = out + off + head;
		if (a.status < 200) { /* 100 Continue: no body, the answer follows */
			off += head;
			continue;
		}
		if (head_req && (off + head == len || (len - off - head >= 9 &&
							memcmp(body, "HTTP/1.1 ", 9) == 0))) {
			off += head; /* a HEAD answer: no body */
			continue;
		}
		if (a.chunked) {
			used = dechunk(body, len - off - head, &chunks, &blen);
			if (used == 0 && dry) {
				free(chunks); /* NULL: dechunk keeps nothing on failure */
				return false;
			}
			if (used == 0)
				die("a chunked body that does not decode", out + off, len - off);
			body = chunks;
		} else {
			if ((a.clen < 0 || (size_t)a.clen > len - off - head) && dry)
				return false;
			if (a.clen < 0 || (size_t)a.clen > len - off - head)
				die("a body shorter than its Content-Length", out + off, len - off);
			used = blen = (size_t)a.clen;
		}
		if (!dry && ((a.json && !strict_json(body, blen)) || (a.ndjson && !strict_ndjson(body, blen))))
			die("a JSON answer that is not one JSON value in UTF-8", out + off, len - off);
		free(chunks);
		off += head + used;
		if (a.close && off < len && !dry)
			die("bytes after an answer with Connection: close", out, len);
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_in peer;
	int sv[2];
	char *out = NULL;
	size_t len;

	if (g_mock == NULL)
		start_mock();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		abort();
	memset(&peer, 0, sizeof(peer));
	peer.sin_family = AF_INET;
	peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	peer.sin_port = htons(40000);
	/* MHD owns sv[1] from here */
	if (MHD_add_connection(g_mock->srv->daemon, sv[1], (struct sockaddr *)&peer, sizeof(peer)) !=
	    MHD_YES) {
		fprintf(stderr, "mock_http fuzzer: MHD_add_connection refused (%u open)\n",
			atomic_load(&g_mock->srv->conns_open));
		abort();
	}
	len = exchange(sv[0], data, size, memmem(data, size, "HEAD", 4) != NULL, &out);
	close(sv[0]);
	(void)check_answers(out, len, memmem(data, size, "HEAD", 4) != NULL, false);
	free(out);
	pthread_mutex_lock(&g_mock->model->lock);
	mock_model_reset(g_mock->model);
	pthread_mutex_unlock(&g_mock->model->lock);
	return 0;
}

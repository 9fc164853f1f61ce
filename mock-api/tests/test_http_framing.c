/* Integration over loopback (the shared embedded mock): HTTP framing and
 * declared body sizes, answered from the request's headers (issue 16).
 * Raw TCP, since a client library would not send these requests:
 *   - two differing Content-Length headers → 400 JSend, the connection
 *     closed, a request smuggled behind it never answered;
 *   - Content-Length with Transfer-Encoding: chunked → the same;
 *   - a declared Content-Length over the limit → 413 before any body byte
 *     is sent, and with Expect: 100-continue no 100 Continue first;
 *   - a Content-Length that is not a number, or a chunk size that is not
 *     hex → 400 and close (libmicrohttpd answers these itself, in HTML);
 *   - a chunked body a little past the limit → read and dropped, then a
 *     413 JSend and close; one far past it (limit + 1 MiB) → a 413 JSend
 *     there, mid-body, and a graceful close (the rest read and dropped up
 *     to the lingering bound, src/server/linger.c). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "mock_fixture.h"

#define SMUGGLED "GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\n\r\n"

/* A connected socket to the mock with a 3 s receive timeout, or -1. */
static int connect_mock(void)
{
	struct sockaddr_in sa;
	struct timeval tv = {.tv_sec = 3};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(sbx_mock_port(g_mock));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends req on a new connection and reads until the mock closes it or 3 s
 * pass without a byte; buf gets what arrived (NUL-terminated). True when
 * the mock closed the connection. */
static bool exchange(const char *req, char *buf, size_t cap)
{
	int fd = connect_mock();
	size_t len = 0;
	bool closed = false;

	assert_true(fd >= 0);
	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	while (len + 1 < cap) {
		ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);

		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		closed = n == 0 || errno == ECONNRESET;
		break;
	}
	buf[len] = '\0';
	close(fd);
	return closed;
}

/* How many answers (status lines) buf holds. */
static int answers(const char *buf)
{
	int n = 0;

	for (const char *p = buf; (p = strstr(p, "HTTP/1.1 ")) != NULL; p++)
		n++;
	return n;
}

/* One JSend failure answer with status, then the connection closed. */
static void expect_one_fail(const char *req, const char *status)
{
	char buf[8192];
	bool closed = exchange(req, buf, sizeof(buf));

	if (strncmp(buf, status, strlen(status)) != 0 || answers(buf) != 1 || !closed)
		fail_msg("want one '%s' answer then close; closed=%d, got:\n%s", status, closed,
			 buf);
	assert_non_null(strstr(buf, "\"status\":\"fail\""));
	assert_non_null(strcasestr(buf, "Connection: close"));
}

static void test_duplicate_content_length(void **state)
{
	(void)state;
	expect_one_fail("POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
			"Content-Type: application/json\r\n"
			"Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}" SMUGGLED,
			"HTTP/1.1 400");
}

static void test_content_length_with_chunked(void **state)
{
	(void)state;
	expect_one_fail("POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
			"Content-Type: application/json\r\n"
			"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" SMUGGLED,
			"HTTP/1.1 400");
}

/* Equal duplicates are one length (RFC 9110 8.6): served, and the
 * connection stays open for the next request. */
static void test_equal_duplicates_served(void **state)
{
	char buf[8192];
	bool closed;

	(void)state;
	closed = exchange("POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
			  "Content-Type: application/json\r\n"
			  "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}" SMUGGLED,
			  buf, sizeof(buf));
	if (answers(buf) != 2 || closed || strstr(buf, "HTTP/1.1 400") != NULL)
		fail_msg("want two answers on an open connection; closed=%d, got:\n%s", closed,
			 buf);
}

static void test_huge_length_answered_at_once(void **state)
{
	(void)state;
	expect_one_fail("POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
			"Content-Type: application/json\r\n"
			"Content-Length: 10737418240\r\n\r\n",
			"HTTP/1.1 413");
}

static void test_expect_continue_gets_413(void **state)
{
	(void)state;
	expect_one_fail("POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
			"Content-Type: application/json\r\nExpect: 100-continue\r\n"
			"Content-Length: 10485760\r\n\r\n",
			"HTTP/1.1 413");
}

static void test_non_numeric_length_refused(void **state)
{
	char buf[8192];
	bool closed;

	(void)state;
	closed = exchange("POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
			  "Content-Type: application/json\r\n"
			  "Content-Length: 2x\r\n\r\n{}" SMUGGLED,
			  buf, sizeof(buf));
	if (strncmp(buf, "HTTP/1.1 400", 12) != 0 || !closed || strstr(buf, "200 OK") != NULL)
		fail_msg("want 400 then close, nothing served; closed=%d, got:\n%s", closed, buf);
}

static void test_bad_chunk_size_refused(void **state)
{
	char buf[8192];
	bool closed;

	(void)state;
	closed = exchange("POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
			  "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
			  "zz\r\n{}\r\n0\r\n\r\n" SMUGGLED,
			  buf, sizeof(buf));
	if (strncmp(buf, "HTTP/1.1 400", 12) != 0 || !closed || answers(buf) != 1)
		fail_msg("want one 400 then close; closed=%d, got:\n%s", closed, buf);
}

/* A chunked body declares no length: the mock must stop reading it at the
 * limit (1 MiB here) instead of taking everything the client sends. The
 * body is never finished, so a mock that keeps reading never answers.
 * 1 MiB past the limit it answers 413 there, mid-body, and closes
 * gracefully (issue 40): the client, still sending, reads the 413 and then
 * the end of the connection, not a reset. */
static void test_chunked_body_stops_at_limit(void **state)
{
	static const char head[] = "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
				   "Content-Type: application/json\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";
	/* one 4 KiB chunk of the body, as sent (not a C string) */
	static char chunk[6 + 4096 + 2];
	static const char size_line[6] = {'1', '0', '0', '0', '\r', '\n'}, crlf[2] = {'\r', '\n'};
	char buf[4096];
	size_t len = 0;
	int fd = connect_mock();
	ssize_t n;

	(void)state;
	assert_true(fd >= 0);
	memcpy(chunk, size_line, sizeof(size_line));
	memset(chunk + 6, ' ', 4096);
	memcpy(chunk + 6 + 4096, crlf, sizeof(crlf));
	assert_int_equal(send(fd, head, sizeof(head) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(head) - 1);
	/* 3 MiB in 4 KiB chunks, past the 1 MiB limit and the 1 MiB the mock
	 * drops after it; all of it is read (lingering), so every send goes */
	for (int i = 0; i < 768; i++)
		assert_int_equal(send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL), (ssize_t)sizeof(chunk));
	/* nothing more is sent: the answer, then the end (or 3 s pass) */
	while (len + 1 < sizeof(buf) && (n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	if (n != 0)
		fail_msg("not closed after the answer (errno %d), got: %.300s", errno, buf);
	close(fd);
	if (strncmp(buf, "HTTP/1.1 413", 12) != 0)
		fail_msg("a chunked body far past the limit: not a 413: %.300s", buf);
	assert_non_null(strstr(buf, "\"code\":\"PAYLOAD_TOO_LARGE\""));
}

/* A chunked body 64 KiB over the limit: the mock reads it to its end,
 * dropping it, and answers 413 JSend with Connection: close (before, the
 * connection was closed with no answer). */
static void test_chunked_body_over_limit_gets_413(void **state)
{
	static const char head[] = "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
				   "Content-Type: application/json\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";
	static char chunk[6 + 4096 + 2];
	char buf[4096];
	size_t len = 0;
	int fd = connect_mock();
	ssize_t n;

	(void)state;
	assert_true(fd >= 0);
	/* one 4 KiB chunk: its size line, the data, its CRLF (not a string) */
	for (size_t k = 0; k < 6; k++)
		chunk[k] = "1000\r\n"[k];
	memset(chunk + 6, ' ', 4096);
	chunk[6 + 4096] = '\r';
	chunk[6 + 4096 + 1] = '\n';
	assert_int_equal(send(fd, head, sizeof(head) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(head) - 1);
	for (int i = 0; i < 256 + 16; i++)
		assert_int_equal(send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL), (ssize_t)sizeof(chunk));
	assert_int_equal(send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL), 5);
	while (len + 1 < sizeof(buf) && (n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
	if (strncmp(buf, "HTTP/1.1 413", 12) != 0)
		fail_msg("a chunked body over the limit: not a 413: %.300s", buf);
	assert_non_null(strstr(buf, "Connection: close"));
	assert_non_null(strstr(buf, "\"code\":\"PAYLOAD_TOO_LARGE\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_duplicate_content_length, mf_reset),
		cmocka_unit_test_setup(test_content_length_with_chunked, mf_reset),
		cmocka_unit_test_setup(test_equal_duplicates_served, mf_reset),
		cmocka_unit_test_setup(test_huge_length_answered_at_once, mf_reset),
		cmocka_unit_test_setup(test_expect_continue_gets_413, mf_reset),
		cmocka_unit_test_setup(test_non_numeric_length_refused, mf_reset),
		cmocka_unit_test_setup(test_bad_chunk_size_refused, mf_reset),
		cmocka_unit_test_setup(test_chunked_body_stops_at_limit, mf_reset),
		cmocka_unit_test_setup(test_chunked_body_over_limit_gets_413, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

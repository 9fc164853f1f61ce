/* The simulated internet's reading of request heads (inet_http.h): where a
 * head ends, the request it names, and whether its connection carries the
 * next request (keep-alive). The listener around it is tested live by
 * internet_tls_test.py; fuzz/mock_inet_fuzzer.c checks the properties on
 * arbitrary bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "inet_http.h"

static bool keep(const char *head, long long *body)
{
	mock_inet_parsed p;

	mock_inet_parse_request(head, "192.0.2.10", &p);
	return mock_inet_keep_alive(head, &p, body);
}

static void a_head_ends_at_its_first_empty_line(void **state)
{
	(void)state;
	assert_int_equal(mock_inet_head_end("GET / HTTP/1.1\r\nHost: a\r\n\r\nrest"), 27);
	assert_int_equal(mock_inet_head_end("GET / HTTP/1.1\nHost: a\n\nrest"), 24);
	/* a bare LF then CRLF: the same empty line the header reader stops at */
	assert_int_equal(mock_inet_head_end("GET / HTTP/1.1\nHost: a\n\r\nrest"), 25);
	assert_int_equal(mock_inet_head_end("GET / HTTP/1.1\r\nHost: a\r\n"), 0);
	/* "\r\r\n" is a malformed line, not the end */
	assert_int_equal(mock_inet_head_end("GET / HTTP/1.1\r\n\r\r\nX: y\r\n\r\n"), 27);
}

static void the_request_is_read(void **state)
{
	mock_inet_parsed p;

	(void)state;
	mock_inet_parse_request("POST /v1/x?q=1#f HTTP/1.1\r\nHost: API.Example.TEST:8443\r\n\r\n", "x", &p);
	assert_string_equal(p.method, "POST");
	assert_string_equal(p.path, "/v1/x");
	assert_string_equal(p.host, "api.example.test");
	mock_inet_parse_request("GET http://Up.Example:8080/p?q HTTP/1.1\r\nHost: [2001:DB8::1]:80\r\n\r\n", "x", &p);
	assert_string_equal(p.path, "/p");
	assert_string_equal(p.host, "2001:db8::1");
	mock_inet_parse_request("GET / HTTP/1.1\r\n\r\n", "Example.COM", &p);
	assert_string_equal(p.host, "example.com"); /* no Host: the TLS name or the address */
	mock_inet_parse_request("NOSPACE\r\nHost: a b\r\n\r\n", "x", &p);
	assert_string_equal(p.method, ""); /* no request line: nothing keeps it */
}

static void http11_keeps_unless_told_or_unframed(void **state)
{
	long long body = -1;

	(void)state;
	assert_true(keep("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &body));
	assert_int_equal(body, 0);
	assert_true(keep("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", &body));
	assert_int_equal(body, 5);
	assert_false(keep("GET / HTTP/1.1\r\nConnection: Keep-Alive, CLOSE\r\n\r\n", &body));
	/* two Connection lines are one list */
	assert_false(keep("GET / HTTP/1.1\r\nConnection: upgrade\r\nConnection: close\r\n\r\n", &body));
	assert_false(keep("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &body));
	assert_false(keep("POST / HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", &body));
	assert_false(keep("GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", &body));
	assert_false(keep("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", &body));
	assert_false(keep("POST / HTTP/1.1\r\nContent-Length: 65537\r\n\r\n", &body));
	assert_int_equal(body, 0);
	assert_true(keep("POST / HTTP/1.1\r\nContent-Length: 65536\r\n\r\n", &body));
	assert_false(keep("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", &body));
	assert_false(keep("POST / HTTP/1.1\r\nContent-Length: 5x\r\n\r\n", &body));
	/* a blank before the colon (RFC 9112 section 5.1) hides no length */
	assert_false(keep("POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\n", &body));
	assert_false(keep("GET / HTTP/1.1\r\n\r\r\nConnection: close\r\n\r\n", &body));
}

static void http10_keeps_only_when_asked(void **state)
{
	long long body = -1;

	(void)state;
	assert_false(keep("GET / HTTP/1.0\r\nHost: a\r\n\r\n", &body));
	assert_true(keep("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", &body));
	assert_false(keep("GET / HTTP/2\r\n\r\n", &body));
	assert_false(keep("GET /\r\n\r\n", &body));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_head_ends_at_its_first_empty_line),
		cmocka_unit_test(the_request_is_read),
		cmocka_unit_test(http11_keeps_unless_told_or_unframed),
		cmocka_unit_test(http10_keeps_only_when_asked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Integration over loopback (the shared fixture): ingress (issue 25, item
 * 3) — a sandbox created with ingress_enabled carries an
 * ingress_url_template on loopback, and a GET of it, with <port> filled in
 * as the SDK's previewUrl() does, reaches `python3 -m http.server` started
 * in the guest by exec; ingress off is refused at once; a URL reaches its
 * own sandbox only, never another tenant's. Needs contained guests (each
 * sandbox its own network namespace): skipped otherwise, saying why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mock_fixture.h"

#define SERVE_DEADLINE_S 60 /* python3 startup under a loaded CI machine */

static void need_contained(void)
{
	if (!sbx_mock_guests_contained(g_mock) || sbx_mock_ingress_url(g_mock) == NULL) {
		print_message("ingress needs contained guests and the proxy (guest mode %s)\n",
			      sbx_mock_guest_mode(g_mock));
		skip();
	}
}

/* The sandbox's template, with <port> replaced by port (as previewUrl()). */
static void preview_url(const char *key, const char *id, unsigned port, char *url, size_t cap)
{
	char path[128], tpl[256];
	const char *at;
	th_resp r;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, key, "GET", path, NULL, &r);
	expect_status(&r, 200, "sandbox get");
	assert_non_null(th_data_str(&r, "ingress_url_template"));
	snprintf(tpl, sizeof(tpl), "%s", th_data_str(&r, "ingress_url_template"));
	th_resp_free(&r);
	at = strstr(tpl, "<port>");
	assert_non_null(at);
	snprintf(url, cap, "%.*s%u%s", (int)(at - tpl), tpl, port, at + 6);
}

/* A sandbox of k1's with ingress on (skipped without containment), and
 * its previewUrl(port). */
static void ingress_sandbox(char *id, size_t id_cap, unsigned port, char *url, size_t url_cap)
{
	need_contained();
	create("k1", "{\"shape\":\"s-1vcpu-256mb\",\"ingress_enabled\":true}", id, id_cap);
	preview_url("k1", id, port, url, url_cap);
}

/* Serves text as /index.html on port in the guest (background, by exec). */
static void serve(const char *key, const char *id, unsigned port, const char *text)
{
	char path[128], body[512];
	th_resp r;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	snprintf(body, sizeof(body),
		 "{\"cmd\":\"bash\",\"args\":[\"-c\",\"mkdir -p /tmp/www && echo %s > /tmp/www/index.html && "
		 "cd /tmp/www && (python3 -m http.server %u --bind 127.0.0.1 >/dev/null 2>&1 &)\"]}",
		 text, port);
	th_json(U, key, "POST", path, body, &r);
	expect_status(&r, 200, "exec starting the server");
	assert_int_equal(cJSON_GetObjectItem(data_item(&r, "result"), "exit_code")->valueint, 0);
	th_resp_free(&r);
}

/* As a client told the mock's CA (GET /_mock/ca; README "Ingress"). */
static void get_url(const char *url, th_resp *r)
{
	th_req rq = {.method = "GET", .url = url, .path = "", .ca_pem = sbx_mock_ca_pem(g_mock)};

	th_do(&rq, r);
}

/* GETs url until the guest's server answers 200 (it is starting). */
static void get_served(const char *url, th_resp *r)
{
	time_t end = time(NULL) + SERVE_DEADLINE_S;

	for (;;) {
		get_url(url, r);
		if (r->status != 502 || time(NULL) > end)
			return;
		th_resp_free(r);
		usleep(100 * 1000);
	}
}

static void ingress_reaches_guest_server(void **state)
{
	char id[64], url[256], want[300], hdr[64];
	th_resp r;

	(void)state;
	ingress_sandbox(id, sizeof(id), 8000, url, sizeof(url));
	snprintf(want, sizeof(want), "%s/%s/8000", sbx_mock_ingress_url(g_mock), id);
	assert_string_equal(url, want); /* loopback, a port and a path prefix */
	assert_true(strncmp(url, "https://127.0.0.1:", 18) == 0); /* as the live service's */
	serve("k1", id, 8000, "hello-from-guest");
	get_served(url, &r);
	expect_status(&r, 200, "GET previewUrl(8000)");
	assert_string_equal(sbx_strbuf_str(&r.body), "hello-from-guest\n");
	assert_true(th_header(&r, "Connection", hdr, sizeof(hdr)));
	assert_string_equal(hdr, "close"); /* one request per connection */
	th_resp_free(&r);
	{
		/* a client that does not trust the mock's CA refuses its leaf:
		 * the 200 above was verified TLS, not a fallback */
		th_req rq = {.method = "GET", .url = url, .path = ""};

		th_do(&rq, &r);
		assert_int_equal(r.curl_rc, CURLE_PEER_FAILED_VERIFICATION);
		th_resp_free(&r);
	}
	/* the same port still serves plain HTTP (clients of before) */
	snprintf(want, sizeof(want), "http://%s", url + strlen("https://"));
	get_url(want, &r);
	expect_status(&r, 200, "the plain-HTTP form of previewUrl(8000)");
	assert_string_equal(sbx_strbuf_str(&r.body), "hello-from-guest\n");
	th_resp_free(&r);
	snprintf(want, sizeof(want), "%s/index.html?x=1", url);
	get_url(want, &r);
	expect_status(&r, 200, "a path and query under the prefix");
	assert_string_equal(sbx_strbuf_str(&r.body), "hello-from-guest\n");
	th_resp_free(&r);
	preview_url("k1", id, 8001, url, sizeof(url));
	get_url(url, &r);
	expect_status(&r, 502, "a port nothing listens on");
	assert_non_null(strstr(sbx_strbuf_str(&r.body), "nothing answers on port 8001"));
	th_resp_free(&r);
}

/* A server in the guest that answers each request with its raw request
 * target (Python's http.server would collapse a leading "//" and hide a
 * doubled slash). Put by the files API, started by exec. */
static const char target_echo_py[] =
	"import socket, sys\n"
	"s = socket.socket()\n"
	"s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
	"s.bind(('127.0.0.1', int(sys.argv[1])))\n"
	"s.listen(8)\n"
	"while True:\n"
	"    c, _ = s.accept()\n"
	"    head = b''\n"
	"    while b'\\r\\n' not in head:\n"
	"        more = c.recv(4096)\n"
	"        if not more:\n"
	"            break\n"
	"        head += more\n"
	"    target = head.split(b'\\r\\n')[0].split(b' ')[1]\n"
	"    c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n'"
	" % len(target) + target)\n"
	"    c.close()\n";

static void serve_target_echo(const char *key, const char *id, unsigned port)
{
	char path[160], body[256];
	th_req rq = {.method = "PUT", .url = U, .path = path, .key = key, .body = target_echo_py,
		     .ctype = "application/octet-stream"};
	th_resp r;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/tmp/target_echo.py", id);
	th_do(&rq, &r);
	expect_status(&r, 200, "put the echo server");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	snprintf(body, sizeof(body),
		 "{\"cmd\":\"bash\",\"args\":[\"-c\",\"(python3 /tmp/target_echo.py %u >/dev/null 2>&1 &)\"]}",
		 port);
	th_json(U, key, "POST", path, body, &r);
	expect_status(&r, 200, "exec starting the echo server");
	th_resp_free(&r);
}

/* GETs previewUrl + suffix (waiting for the echo server to listen) and
 * checks the request target the guest's server received. */
static void expect_target(const char *url, const char *suffix, const char *want)
{
	char full[320];
	th_resp r;

	snprintf(full, sizeof(full), "%s%s", url, suffix);
	get_served(full, &r);
	expect_status(&r, 200, full);
	assert_string_equal(sbx_strbuf_str(&r.body), want);
	th_resp_free(&r);
}

/* The examples build URLs as previewUrl(port) + "/health": the template
 * is an origin-like prefix without a trailing slash (the live service's is
 * a bare origin), so the guest's server sees "/health", not "//health". */
static void preview_url_plus_path_reaches_guest_exactly(void **state)
{
	char id[64], url[256];

	(void)state;
	ingress_sandbox(id, sizeof(id), 8002, url, sizeof(url));
	assert_true(url[strlen(url) - 1] != '/');
	serve_target_echo("k1", id, 8002);
	expect_target(url, "/health", "/health");
	expect_target(url, "/a/b?x=1&y=%2F", "/a/b?x=1&y=%2F");
	expect_target(url, "", "/"); /* the bare previewUrl */
}

static void ingress_off_refused_at_once(void **state)
{
	char id[64], url[256], path[128];
	th_resp r;

	(void)state;
	ingress_sandbox(id, sizeof(id), 8000, url, sizeof(url));
	serve("k1", id, 8000, "on");
	get_served(url, &r);
	expect_status(&r, 200, "ingress on");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, "k1", "PATCH", path, "{\"ingress_enabled\":false}", &r);
	expect_status(&r, 200, "patch ingress off");
	assert_null(th_data_str(&r, "ingress_url_template"));
	th_resp_free(&r);
	get_url(url, &r);
	expect_status(&r, 404, "ingress off: the very next GET");
	assert_true(r.seconds < 5.0); /* refused, not left to time out */
	th_resp_free(&r);
	th_json(U, "k1", "PATCH", path, "{\"ingress_enabled\":true}", &r);
	expect_status(&r, 200, "patch ingress on");
	th_resp_free(&r);
	get_url(url, &r);
	expect_status(&r, 200, "ingress on again");
	th_resp_free(&r);
	create("k1", "{\"shape\":\"s-1vcpu-256mb\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/%s/8000/", id);
	{
		th_req rq = {.method = "GET", .url = sbx_mock_ingress_url(g_mock), .path = path,
			     .ca_pem = sbx_mock_ca_pem(g_mock)};

		th_do(&rq, &r);
	}
	expect_status(&r, 404, "a sandbox created without ingress");
	th_resp_free(&r);
}

/* len raw bytes to the proxy; everything until it closes, into buf (*got
 * bytes, NUL-terminated). */
static void raw_exchange_n(const char *req, size_t len, char *buf, size_t cap, size_t *got_out)
{
	const char *base = sbx_mock_ingress_url(g_mock);
	struct sockaddr_in a = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;

	a.sin_port = htons((uint16_t)strtoul(strrchr(base, ':') + 1, NULL, 10));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(send(fd, req, len, 0), (ssize_t)len);
	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		ssize_t n;

		assert_int_equal(poll(&pf, 1, 60000), 1);
		n = recv(fd, buf + got, cap - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*got_out = got;
	close(fd);
}

/* Raw text to the proxy; everything until it closes, into buf. */
static void raw_exchange(const char *req, char *buf, size_t cap)
{
	size_t got;

	raw_exchange_n(req, strlen(req), buf, cap, &got);
}

static void ingress_never_crosses_tenants(void **state)
{
	char a[64], b[64], url[256], req[512], buf[8192];
	th_resp r;

	(void)state;
	need_contained();
	create("tenant-a", "{\"shape\":\"s-1vcpu-256mb\",\"ingress_enabled\":true}", a, sizeof(a));
	create("tenant-b", "{\"shape\":\"s-1vcpu-256mb\",\"ingress_enabled\":true}", b, sizeof(b));
	serve("tenant-a", a, 8000, "served-by-a");
	serve("tenant-b", b, 8000, "served-by-b");
	preview_url("tenant-a", a, 8000, url, sizeof(url));
	get_served(url, &r);
	assert_string_equal(sbx_strbuf_str(&r.body), "served-by-a\n");
	th_resp_free(&r);
	preview_url("tenant-b", b, 8000, url, sizeof(url));
	get_served(url, &r);
	assert_string_equal(sbx_strbuf_str(&r.body), "served-by-b\n");
	th_resp_free(&r);
	/* a keep-alive client sending b's request on a's connection: a's
	 * answer says close, and b's request never reaches anyone */
	snprintf(req, sizeof(req),
		 "GET /%s/8000/ HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n"
		 "GET /%s/8000/ HTTP/1.1\r\nHost: x\r\n\r\n",
		 a, b);
	raw_exchange(req, buf, sizeof(buf));
	assert_non_null(strstr(buf, "served-by-a"));
	assert_null(strstr(buf, "served-by-b"));
	assert_non_null(strstr(buf, "Connection: close\r\n"));
	/* a path that climbs out of the prefix stays in the URL's sandbox */
	snprintf(req, sizeof(req), "GET /%s/8000/../../%s/8000/ HTTP/1.1\r\nHost: x\r\n\r\n", a, b);
	raw_exchange(req, buf, sizeof(buf));
	assert_null(strstr(buf, "served-by-b"));
}

/* The guest's server for the cut test: answers a head and part of a body,
 * then holds every connection open. */
static const char HOLD_PY[] = "import socket\n"
			      "s=socket.socket();s.bind(('127.0.0.1',8002));s.listen();held=[]\n"
			      "while True:\n"
			      " c,_=s.accept();c.recv(4096)\n"
			      " c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: 100\\r\\n\\r\\npartial');held.append(c)\n";

/* Sends a GET of the guest's port 8002 through ingress and reads until
 * the held answer's "partial" came (1), or the proxy answered on its own
 * (0: the server is not listening yet). The socket in *fd. */
static int open_held(const char *id, int *fd)
{
	const char *base = sbx_mock_ingress_url(g_mock);
	struct sockaddr_in a = {.sin_family = AF_INET};
	char req[256], buf[1024];
	size_t got = 0;

	a.sin_port = htons((uint16_t)strtoul(strrchr(base, ':') + 1, NULL, 10));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	snprintf(req, sizeof(req), "GET /%s/8002/ HTTP/1.1\r\nHost: x\r\n\r\n", id);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(send(*fd, req, strlen(req), 0), (ssize_t)strlen(req));
	for (;;) {
		struct pollfd pf = {.fd = *fd, .events = POLLIN};
		ssize_t n;

		assert_int_equal(poll(&pf, 1, 60000), 1);
		n = recv(*fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			return 0;
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "partial") != NULL)
			return 1;
		if (strstr(buf, "502 Bad Gateway") != NULL && strstr(buf, "\n\n") != NULL)
			return 0;
	}
}

/* A connection open through ingress is cut when ingress goes off ("stops
 * it at once"), not left to finish. */
static void ingress_off_cuts_open_connections(void **state)
{
	char id[64], path[160], buf[256];
	struct pollfd pf;
	th_resp r;
	int fd = -1;

	(void)state;
	need_contained();
	create("k1", "{\"shape\":\"s-1vcpu-256mb\",\"ingress_enabled\":true}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/tmp/hold.py", id);
	{
		th_req rq = {.method = "PUT", .url = U, .path = path, .key = "k1", .body = HOLD_PY,
			     .ctype = "application/octet-stream"};

		th_do(&rq, &r);
	}
	expect_status(&r, 200, "upload the holding server");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	th_json(U, "k1", "POST", path,
		"{\"cmd\":\"bash\",\"args\":[\"-c\",\"(python3 /tmp/hold.py >/dev/null 2>&1 &)\"]}", &r);
	expect_status(&r, 200, "exec starting it");
	th_resp_free(&r);
	for (time_t end = time(NULL) + SERVE_DEADLINE_S; open_held(id, &fd) == 0;) {
		close(fd);
		assert_true(time(NULL) < end);
		usleep(100 * 1000);
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, "k1", "PATCH", path, "{\"ingress_enabled\":false}", &r);
	expect_status(&r, 200, "patch ingress off");
	th_resp_free(&r);
	pf = (struct pollfd){.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 10000), 1); /* cut, not left open */
	assert_true(recv(fd, buf, sizeof(buf) - 1, 0) <= 0);
	close(fd);
}

static void ingress_bad_requests(void **state)
{
	char buf[4096];

	(void)state;
	need_contained();
	raw_exchange("GET / HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 400 "));
	assert_non_null(strstr(buf, "/<sandbox id>/<port>/"));
	raw_exchange("GET /sb-nope/8000/ HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 404 "));
	raw_exchange("GET /sb-nope/70000/ HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 400 "));
	assert_non_null(strstr(buf, "1-65535"));
	raw_exchange("POST /sb-nope/8000/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", buf,
		     sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 411 "));
	{
		/* a TLS handshake record whose 32 bytes are not a ClientHello:
		 * answered with a TLS alert (record type 0x15), then closed;
		 * never HTTP, never left open */
		static const char garbage[5 + 32] = "\x16\x03\x01\x00\x20this is not a ClientHello at all";
		size_t got;

		raw_exchange_n(garbage, sizeof(garbage), buf, sizeof(buf), &got);
		assert_true(got >= 1);
		assert_int_equal((unsigned char)buf[0], 0x15);
		assert_null(strstr(buf, "HTTP/"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(ingress_reaches_guest_server, mf_reset),
		cmocka_unit_test_setup(preview_url_plus_path_reaches_guest_exactly, mf_reset),
		cmocka_unit_test_setup(ingress_off_refused_at_once, mf_reset),
		cmocka_unit_test_setup(ingress_never_crosses_tenants, mf_reset),
		cmocka_unit_test_setup(ingress_off_cuts_open_connections, mf_reset),
		cmocka_unit_test_setup(ingress_bad_requests, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

/* Integration over loopback (an embedded mock on port 0, contained mode):
 * the per-sandbox self-signal listeners (self_listen.c). The test plays the
 * cells' part: it makes the listening sockets and registers them with
 * mock_self_listen_add, then shows that a request's sandbox is the one
 * whose listener accepted it — nothing the request says can name another —
 * and that a removed listener accepts nothing more.
 *
 * Two variants: listeners on the host's loopback (port 0), and, as root,
 * listeners inside fresh network namespaces on 127.0.0.1:1029 made by
 * helper processes that also send the requests from inside, as a guest
 * would. Skipped in plain mode (no per-sandbox listeners there). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "mock_fixture.h"
#include "self_listen.h"

#define NS_PORT 1029

/* ---- helpers: sockets and raw HTTP ---- */

/* A listening socket on 127.0.0.1:port (0: any); its fd, *bound = its port. */
static int listen_loopback(uint16_t port, uint16_t *bound)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		close(fd);
		return -1;
	}
	if (bound != NULL)
		*bound = ntohs(sa.sin_port);
	return fd;
}

/* A connected socket to 127.0.0.1:port with a 10 s receive timeout, or -1. */
static int connect_loopback(uint16_t port)
{
	struct sockaddr_in sa;
	struct timeval tv = {.tv_sec = 10};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends "POST path" (extra: more header lines, may be "") on fd and reads
 * the whole answer into buf; its length. */
static size_t raw_post_fd(int fd, const char *path, const char *extra, char *buf, size_t cap)
{
	char req[1024];
	int n = snprintf(req, sizeof(req),
			 "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: 0\r\n"
			 "Connection: close\r\n\r\n", path, extra);
	size_t got = 0;

	buf[0] = '\0';
	if (n <= 0 || write(fd, req, (size_t)n) != n)
		return 0;
	while (got + 1 < cap) {
		ssize_t r = read(fd, buf + got, cap - 1 - got);

		/* under valgrind a sandbox cell's death (SIGCHLD, ignored)
		 * still interrupts a blocking read */
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	return got;
}

/* POST path to 127.0.0.1:port; the answer in buf, "CONNECT-FAILED" when
 * nothing listens. */
static void raw_post(uint16_t port, const char *path, const char *extra, char *buf, size_t cap)
{
	int fd = connect_loopback(port);

	if (fd < 0) {
		snprintf(buf, cap, "CONNECT-FAILED %d", errno);
		return;
	}
	raw_post_fd(fd, path, extra, buf, cap);
	close(fd);
}

/* The sandbox's status as tenant key sees it ("" when it cannot). */
static void status_of(const char *key, const char *id, char *st, size_t cap)
{
	char path[128];
	th_resp r;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, key, "GET", path, NULL, &r);
	snprintf(st, cap, "%s", th_data_str(&r, "status") != NULL ? th_data_str(&r, "status") : "");
	th_resp_free(&r);
}

static void expect_sandbox(const char *key, const char *id, const char *want)
{
	char st[32];

	status_of(key, id, st, sizeof(st));
	if (strcmp(st, want) != 0)
		fail_msg("sandbox %s: expected status %s, got \"%s\"", id, want, st);
}

/* The answer's status line is want and it names sandbox id. */
static void expect_answer(const char *answer, const char *want, const char *id, const char *what)
{
	char line[32];

	snprintf(line, sizeof(line), "HTTP/1.1 %s", want);
	if (strncmp(answer, line, strlen(line)) != 0 || (id != NULL && strstr(answer, id) == NULL))
		fail_msg("%s: expected %s naming %s, got: %.400s", what, line, id != NULL ? id : "-",
			 answer);
}

static bool contained(void)
{
	return strcmp(sbx_mock_guest_mode(g_mock), "plain") != 0;
}

/* ---- host loopback listeners ---- */

/* A's listener signals A only; B's listener signals B whatever the request
 * names (query, header, API key of A's tenant); a removed listener refuses
 * connections, and a connection it accepted before can no longer act. */
static void listener_decides_the_callers_sandbox(void **state)
{
	char a[64], b[64], path[256], hdr[256], ans[4096];
	uint16_t pa = 0, pb = 0;
	int la, lb, early;

	(void)state;
	if (!contained())
		skip();
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", a, sizeof(a));
	create("k2", "{\"shape\":\"s-1vcpu-1gb\"}", b, sizeof(b));
	la = listen_loopback(0, &pa);
	lb = listen_loopback(0, &pb);
	assert_true(la >= 0 && lb >= 0);
	assert_int_equal(mock_self_listen_add(g_mock, la, a), 0);
	assert_int_equal(mock_self_listen_add(g_mock, lb, b), 0);

	raw_post(pa, "/self/pause?reason=idle", "", ans, sizeof(ans));
	expect_answer(ans, "202", a, "pause through A's listener");
	assert_non_null(strstr(ans, "\"reason\":\"idle\""));
	expect_sandbox("k1", a, "paused");
	expect_sandbox("k2", b, "running");

	/* B's listener, naming A every way a request could */
	snprintf(path, sizeof(path), "/self/delete?id=%s&sandbox_id=%s", a, a);
	snprintf(hdr, sizeof(hdr), "X-Sandbox-Id: %s\r\nX-Api-Key: k1\r\n", a);
	raw_post(pb, path, hdr, ans, sizeof(ans));
	expect_answer(ans, "202", b, "delete through B's listener naming A");
	assert_null(strstr(ans, a));
	expect_sandbox("k1", a, "paused");
	expect_sandbox("k2", b, "destroyed");
	snprintf(path, sizeof(path), "/self/delete/%s", a);
	raw_post(pb, path, "", ans, sizeof(ans));
	expect_answer(ans, "404", NULL, "a sandbox id in the self path");
	/* B is gone, its listener still registered: the control plane's word */
	raw_post(pb, "/self/pause", "", ans, sizeof(ans));
	expect_answer(ans, "410", b, "pause through a destroyed sandbox's listener");

	/* remove: an open connection can no longer act, a new one is refused */
	early = connect_loopback(pa);
	assert_true(early >= 0);
	usleep(100000); /* accepted and handed to the daemon */
	mock_self_listen_remove(g_mock, a);
	raw_post_fd(early, "/self/delete", "", ans, sizeof(ans));
	close(early);
	if (strncmp(ans, "HTTP/1.1 202", 12) == 0)
		fail_msg("a connection of a removed listener acted: %.400s", ans);
	raw_post(pa, "/self/delete", "", ans, sizeof(ans));
	assert_int_equal(strncmp(ans, "CONNECT-FAILED", 14), 0);
	expect_sandbox("k1", a, "paused");
	mock_self_listen_remove(g_mock, b);
}

/* A copy of a listener's fd held elsewhere (a cell the mock clones copies
 * every descriptor until its first step closes them) does not keep a
 * removed listener taking connections: a connection made then would sit in
 * the backlog and be reset when the copy goes, not refused. */
static void removed_listener_refuses_while_a_copy_lives(void **state)
{
	char a[64], ans[4096];
	uint16_t pa = 0;
	int la, copy;

	(void)state;
	if (!contained())
		skip();
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", a, sizeof(a));
	la = listen_loopback(0, &pa);
	assert_true(la >= 0);
	copy = dup(la);
	assert_true(copy >= 0);
	assert_int_equal(mock_self_listen_add(g_mock, la, a), 0);
	mock_self_listen_remove(g_mock, a);
	raw_post(pa, "/self/pause", "", ans, sizeof(ans));
	close(copy);
	if (strncmp(ans, "CONNECT-FAILED", 14) != 0)
		fail_msg("removed listener with a live copy: expected refused, got: \"%.400s\"", ans);
	expect_sandbox("k1", a, "running");
}

/* A listener for a sandbox the model does not know answers 404; a socket
 * that is not listening is refused (and closed). */
static void listener_of_an_unknown_sandbox_and_bad_sockets(void **state)
{
	char ans[4096];
	uint16_t port = 0;
	int fd;

	(void)state;
	if (!contained())
		skip();
	assert_true(mock_self_guest_port(g_mock) != 0);
	fd = listen_loopback(0, &port);
	assert_int_equal(mock_self_listen_add(g_mock, fd, "sbx-nosuch"), 0);
	raw_post(port, "/self/pause", "", ans, sizeof(ans));
	expect_answer(ans, "404", NULL, "pause for an unknown sandbox");
	mock_self_listen_remove(g_mock, "sbx-nosuch");

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(mock_self_listen_add(g_mock, fd, "sbx-x"), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(mock_self_listen_add(g_mock, -1, "sbx-x"), -1);
}

/* A guest that opens more connections than the self-signal daemon keeps
 * in all (512) keeps only its share (32) open: another sandbox's guest is
 * still served, and the mock still stops. */
static void one_sandbox_cannot_use_up_the_daemon(void **state)
{
	enum { FLOOD = 600 };
	static int flood[FLOOD];
	char a[64], b[64], ans[4096];
	uint16_t pa = 0, pb = 0;
	int n = 0;

	(void)state;
	if (!contained())
		skip();
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", a, sizeof(a));
	create("k2", "{\"shape\":\"s-1vcpu-1gb\"}", b, sizeof(b));
	assert_int_equal(mock_self_listen_add(g_mock, listen_loopback(0, &pa), a), 0);
	assert_int_equal(mock_self_listen_add(g_mock, listen_loopback(0, &pb), b), 0);
	while (n < FLOOD) {
		flood[n] = connect_loopback(pa);
		if (flood[n] < 0)
			break;
		n++;
	}
	assert_true(n > 512);
	usleep(200000); /* all accepted: kept or dropped */
	raw_post(pb, "/self/pause", "", ans, sizeof(ans));
	expect_answer(ans, "202", b, "B's pause while A floods");
	for (int i = 0; i < n; i++)
		close(flood[i]);
	mock_self_listen_remove(g_mock, a);
	mock_self_listen_remove(g_mock, b);
}

/* ---- network namespace listeners (root) ---- */

/* A helper in its own network namespace: made before the mock starts (a
 * single-threaded fork), it sends its listener on 127.0.0.1:1029 over ctl,
 * closes its copy, then posts each path it receives to 127.0.0.1:1029 from
 * inside and sends the answer back. */
typedef struct ns_peer {
	pid_t pid;
	int ctl;
} ns_peer;

static ns_peer g_ns[2] = {{-1, -1}, {-1, -1}};

static int lo_up(void)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;

	if (s < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return rc;
}

static int send_fd(int sock, int fd)
{
	char byte = 'F', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;

	memset(cbuf, 0, sizeof(cbuf));
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	int fd = -1;

	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (cm != NULL && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

static void ns_peer_main(int ctl)
{
	char path[512], ans[4096];
	int lfd;
	ssize_t n;

	if (unshare(CLONE_NEWNET) != 0 || lo_up() != 0)
		_exit(1);
	lfd = listen_loopback(NS_PORT, NULL);
	if (lfd < 0 || send_fd(ctl, lfd) != 0)
		_exit(1);
	close(lfd); /* the mock's copy is the only one: removing it closes the port */
	while ((n = recv(ctl, path, sizeof(path) - 1, 0)) > 0) {
		path[n] = '\0';
		raw_post(NS_PORT, path, "", ans, sizeof(ans));
		if (send(ctl, ans, strlen(ans) + 1, 0) < 0)
			break;
	}
	_exit(0);
}

static void ns_peers_start(void)
{
	for (int i = 0; i < 2; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
			return;
		g_ns[i].pid = fork();
		if (g_ns[i].pid == 0) {
			close(sv[0]);
			for (int j = 0; j < i; j++)
				close(g_ns[j].ctl); /* else peer j never sees EOF */
			ns_peer_main(sv[1]);
		}
		close(sv[1]);
		g_ns[i].ctl = sv[0];
	}
}

static void ns_peers_stop(void)
{
	for (int i = 0; i < 2; i++) {
		if (g_ns[i].ctl >= 0)
			close(g_ns[i].ctl);
		if (g_ns[i].pid > 0)
			waitpid(g_ns[i].pid, NULL, 0);
	}
}

/* The answer to POST path sent from inside peer i's namespace. */
static void ns_post(int i, const char *path, char *ans, size_t cap)
{
	ssize_t n;

	ans[0] = '\0';
	if (send(g_ns[i].ctl, path, strlen(path), 0) < 0)
		return;
	n = recv(g_ns[i].ctl, ans, cap - 1, 0);
	ans[n > 0 ? n : 0] = '\0';
}

/* Two sandboxes' listeners on the same 127.0.0.1:1029, each in its own
 * network namespace: a guest in B's namespace reaches B's listener only. */
static void netns_listener_reaches_only_its_own_sandbox(void **state)
{
	char a[64], b[64], path[256], ans[4096];
	int fa, fb;

	(void)state;
	if (!contained() || geteuid() != 0)
		skip();
	fa = recv_fd(g_ns[0].ctl);
	fb = recv_fd(g_ns[1].ctl);
	if (fa < 0 || fb < 0)
		skip(); /* no network namespaces here */
	assert_int_equal(mock_self_guest_port(g_mock), NS_PORT);
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", a, sizeof(a));
	create("k2", "{\"shape\":\"s-1vcpu-1gb\"}", b, sizeof(b));
	assert_int_equal(mock_self_listen_add(g_mock, fa, a), 0);
	assert_int_equal(mock_self_listen_add(g_mock, fb, b), 0);

	ns_post(0, "/self/pause", ans, sizeof(ans));
	expect_answer(ans, "202", a, "pause from A's namespace");
	expect_sandbox("k1", a, "paused");
	expect_sandbox("k2", b, "running");
	snprintf(path, sizeof(path), "/self/delete?id=%s", a);
	ns_post(1, path, ans, sizeof(ans));
	expect_answer(ans, "202", b, "delete from B's namespace naming A");
	expect_sandbox("k1", a, "paused");
	expect_sandbox("k2", b, "destroyed");

	mock_self_listen_remove(g_mock, a);
	ns_post(0, "/self/delete", ans, sizeof(ans));
	if (strncmp(ans, "CONNECT-FAILED", 14) != 0)
		fail_msg("A's namespace after remove: expected no listener, got: %.400s", ans);
	expect_sandbox("k1", a, "paused");
	mock_self_listen_remove(g_mock, b);
}

/* The fixture's configuration in the default guest mode (contained when
 * the host allows it). */
static int contained_group_setup(void **state)
{
	sbx_mock_config cfg;

	(void)state;
	mf_config_init(&cfg);
	cfg.admin_token = "admintok";
	cfg.self_listen = "127.0.0.1:0";
	return mf_setup(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(listener_decides_the_callers_sandbox, mf_reset),
		cmocka_unit_test_setup(listener_of_an_unknown_sandbox_and_bad_sockets, mf_reset),
		cmocka_unit_test_setup(removed_listener_refuses_while_a_copy_lives, mf_reset),
		cmocka_unit_test_setup(one_sandbox_cannot_use_up_the_daemon, mf_reset),
		cmocka_unit_test_setup(netns_listener_reaches_only_its_own_sandbox, mf_reset),
	};
	int rc;

	signal(SIGPIPE, SIG_IGN);
	if (geteuid() == 0)
		ns_peers_start(); /* before any thread: the peers fork a clean copy */
	rc = cmocka_run_group_tests(tests, contained_group_setup, mf_group_teardown);
	ns_peers_stop();
	return rc;
}

/* Integration over loopback (an embedded mock on port 0, driven with
 * libcurl): the guests' self-signal listener of plain mode — a guest's own
 * POST pauses or destroys its sandbox; any other caller, route or method is
 * refused. Plain mode is the one whose listener is on the host (found by
 * process group); contained mode's per-sandbox listeners are
 * test_self_listen.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mock_fixture.h"

#define DEADLINE_S 60 /* a loaded machine (ASan, two cores, other tests) */

/* The sandbox's status, polled until it is want (or DEADLINE_S pass); says
 * what it last saw when it is not. */
static bool wait_status(const char *id, const char *want)
{
	char path[128], seen[64] = "(none)";
	bool ok = false;
	time_t end = time(NULL) + DEADLINE_S;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	while (!ok) {
		th_resp r;
		const char *st;

		th_json(U, "k1", "GET", path, NULL, &r);
		st = th_data_str(&r, "status");
		ok = st != NULL && strcmp(st, want) == 0;
		snprintf(seen, sizeof(seen), "%ld %s", r.status, st != NULL ? st : "(no status)");
		th_resp_free(&r);
		if (ok || time(NULL) > end)
			break;
		usleep(20000);
	}
	if (!ok)
		print_error("sandbox %s: expected status %s within %d s, last saw %s\n", id, want,
			    DEADLINE_S, seen);
	return ok;
}
/* A guest's own POST to the self-signal endpoint pauses or destroys its
 * sandbox (202); the mock finds the caller's sandbox from its socket. A
 * process that is not a guest is refused. */
static void self_signal_pauses_and_deletes_the_callers_sandbox(void **state)
{
	static const char script[] = "import sys, urllib.request as u\n"
				     "r = u.urlopen(u.Request(sys.argv[1], method='POST'))\n"
				     "print(r.status, r.read().decode())\n";
	const char *self = sbx_mock_self_url(g_mock);
	char id[64], other[64], path[256], body[512];
	th_req rq = {0};
	th_resp r;
	const cJSON *res;

	(void)state;
	assert_non_null(self);
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", other, sizeof(other));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/self.py", id);
	rq.method = "PUT";
	rq.url = U;
	rq.path = path;
	rq.key = "k1";
	rq.body = script;
	rq.ctype = "application/octet-stream";
	th_do(&rq, &r);
	expect_status(&r, 200, "upload self.py");
	th_resp_free(&r);

	/* pause: the caller freezes with its guest and finishes after resume */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	snprintf(body, sizeof(body),
		 "{\"cmd\":\"sh\",\"args\":[\"-c\",\"python3 self.py '%s/self/pause?reason=idle' "
		 ">out 2>&1 &\"]}", self); /* cwd: the workspace, in either guest mode */
	th_json(U, "k1", "POST", path, body, &r);
	expect_status(&r, 200, "exec self pause");
	th_resp_free(&r);
	assert_true(wait_status(id, "paused"));
	assert_true(wait_status(other, "running")); /* only the caller's sandbox */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/resume", id);
	th_json(U, "k1", "POST", path, NULL, &r);
	th_resp_free(&r);
	assert_true(wait_status(id, "running"));
	/* the caller prints once it has read the answer, after the thaw */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/out", id);
	for (time_t end = time(NULL) + DEADLINE_S;;) {
		th_json(U, "k1", "GET", path, NULL, &r);
		if ((r.status == 200 && r.body.len > 0) || time(NULL) > end)
			break;
		th_resp_free(&r);
		usleep(20000);
	}
	expect_status(&r, 200, "the caller's output");
	assert_non_null(strstr(sbx_strbuf_str(&r.body), "202 "));
	assert_non_null(strstr(sbx_strbuf_str(&r.body), "\"reason\":\"idle\""));
	th_resp_free(&r);

	/* delete: the caller dies with its guest */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	snprintf(body, sizeof(body),
		 "{\"cmd\":\"python3\",\"args\":[\"/workspace/self.py\",\"%s/self/delete\"]}", self);
	th_json(U, "k1", "POST", path, body, &r);
	expect_status(&r, 200, "exec self delete");
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	assert_int_not_equal(cJSON_GetObjectItem(res, "exit_code")->valueint, 0);
	th_resp_free(&r);
	assert_true(wait_status(id, "destroyed"));
	assert_true(wait_status(other, "running"));

	/* not from a guest, not a route, not POST */
	th_json(self, NULL, "POST", "/self/pause", NULL, &r);
	expect_status(&r, 403, "self pause from the test");
	assert_non_null(fail_field(&r, "caller"));
	th_resp_free(&r);
	th_json(self, NULL, "POST", "/self/reboot", NULL, &r);
	expect_status(&r, 404, "unknown self route");
	th_resp_free(&r);
	th_json(self, NULL, "GET", "/self/pause", NULL, &r);
	expect_status(&r, 405, "GET self pause");
	th_resp_free(&r);
	/* the control plane's routes are not on the guests' listener */
	th_json(self, "k1", "GET", "/v1/whoami", NULL, &r);
	expect_status(&r, 404, "whoami on the self listener");
	th_resp_free(&r);
}

/* The shared fixture's configuration (mf_group_setup), in plain mode. */
static int plain_group_setup(void **state)
{
	sbx_mock_config cfg;

	(void)state;
	mf_config_init(&cfg);
	cfg.admin_token = "admintok";
	cfg.self_listen = "127.0.0.1:0";
	cfg.guest_mode = "plain";
	return mf_setup(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(self_signal_pauses_and_deletes_the_callers_sandbox, mf_reset),
	};

	return cmocka_run_group_tests(tests, plain_group_setup, mf_group_teardown);
}

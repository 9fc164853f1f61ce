/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl): exec — buffered (env rules, cmd is an executable,
 * timeout kills the group, stdin fed to its end), streamed as NDJSON, and
 * the guests' own PID namespace in ns mode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_fixture.h"

static void exec_buffered(void **state)
{
	char id[64], path[128];
	th_resp r;
	const cJSON *res;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\",\"envs\":{\"GREETING\":\"hi\"}}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	th_json(U, "k1", "POST", path,
		"{\"cmd\":\"sh\",\"args\":[\"-c\",\"echo $GREETING; pwd; echo oops >&2; exit 3\"]}", &r);
	expect_status(&r, 200, "exec");
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	if (strcmp(sbx_mock_guest_mode(g_mock), "contained") == 0)
		assert_string_equal(cJSON_GetObjectItem(res, "stdout")->valuestring, "hi\n/workspace\n");
	else /* plain mode: cwd is the sandbox's workspace directory */
		assert_non_null(strstr(cJSON_GetObjectItem(res, "stdout")->valuestring, "/workspace\n"));
	assert_string_equal(cJSON_GetObjectItem(res, "stderr")->valuestring, "oops\n");
	assert_int_equal(cJSON_GetObjectItem(res, "exit_code")->valueint, 3);
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "exec_ms"));
	th_resp_free(&r);
	/* exec env overrides a declared key */
	th_json(U, "k1", "POST", path,
		"{\"cmd\":\"sh\",\"args\":[\"-c\",\"echo $GREETING\"],\"env\":{\"GREETING\":\"yo\"}}", &r);
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	assert_string_equal(cJSON_GetObjectItem(res, "stdout")->valuestring, "yo\n");
	th_resp_free(&r);
	/* ...but not an undeclared one */
	th_json(U, "k1", "POST", path, "{\"cmd\":\"true\",\"env\":{\"OTHER\":\"x\"}}", &r);
	expect_status(&r, 400, "undeclared env");
	assert_non_null(fail_field(&r, "env"));
	th_resp_free(&r);
	/* ...nor one given twice (which value is meant is open, RFC 8259) */
	th_json(U, "k1", "POST", path, "{\"cmd\":\"true\",\"env\":{\"GREETING\":\"a\",\"GREETING\":\"b\"}}", &r);
	expect_status(&r, 400, "env key twice");
	assert_non_null(fail_field(&r, "env"));
	th_resp_free(&r);
	/* cmd is an executable, not a shell line */
	th_json(U, "k1", "POST", path, "{\"cmd\":\"echo hi | cat\"}", &r);
	expect_status(&r, 200, "shell line");
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	assert_non_null(cJSON_GetObjectItem(res, "error"));
	assert_int_not_equal(cJSON_GetObjectItem(res, "exit_code")->valueint, 0);
	th_resp_free(&r);
	/* timeout kills the group: answered long before the sleep's end (the
	 * bound leaves a loaded machine time to start and kill it) */
	th_json(U, "k1", "POST", path, "{\"cmd\":\"sleep\",\"args\":[\"120\"],\"timeout_ms\":300}", &r);
	expect_status(&r, 200, "exec of sleep 120 with timeout_ms 300 (the client waits 30 s)");
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	assert_int_equal(cJSON_GetObjectItem(res, "exit_code")->valueint, 124);
	if (r.seconds >= 60)
		fail_msg("an exec with timeout_ms 300 of sleep 120 answered after %.1f s", r.seconds);
	th_resp_free(&r);
	th_json(U, "k1", "POST", path, "{\"args\":[]}", &r);
	expect_status(&r, 400, "missing cmd");
	assert_non_null(fail_field(&r, "cmd"));
	th_resp_free(&r);
}
/* The stdout of a buffered exec of cmd with args (a JSON array text). */
static char *exec_stdout(const char *id, const char *cmd, const char *args_json)
{
	char path[128], body[512];
	th_resp r;
	const cJSON *res, *out;
	char *copy;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	snprintf(body, sizeof(body), "{\"cmd\":\"%s\",\"args\":%s}", cmd, args_json);
	th_json(U, "k1", "POST", path, body, &r);
	expect_status(&r, 200, body);
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	out = cJSON_GetObjectItem(res, "stdout");
	assert_true(cJSON_IsString(out));
	copy = strdup(out->valuestring);
	th_resp_free(&r);
	return copy;
}
/* Output is escaped as it comes (issue 27): a UTF-8 character split
 * between two reads is still one character, a control byte is \u00XX, a
 * byte that is no UTF-8 is U+FFFD. */
static void exec_output_escaped_in_pieces(void **state)
{
	char id[64], *out;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	out = exec_stdout(id, "sh", "[\"-c\",\"printf '\\\\303'; sleep 0.3; printf '\\\\251\\\\001\\\"\\\\377'\"]");
	assert_string_equal(out, "\xc3\xa9\x01\"\xef\xbf\xbd");
	free(out);
}

/* A command that closes its stdout and stderr before reading its stdin
 * (`exec cmd >/dev/null 2>&1`, as a clipboard tool that stays to serve
 * its selection does) still gets all of its stdin and its end: stdin
 * larger than a pipe holds, so the mock must keep feeding after both
 * outputs are closed, and not wait for an exit that waits for it. */
static void exec_stdin_fed_after_outputs_close(void **state)
{
	enum { STDIN_BYTES = 200000 };
	static const char head[] = "{\"cmd\":\"sh\",\"args\":[\"-c\",\"exec >/dev/null 2>&1; "
				   "wc -c > /tmp/stdin-bytes\"],\"stdin\":\"";
	char id[64], path[128], *body, *out;
	size_t n = strlen(head);
	const cJSON *res;
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	body = malloc(n + STDIN_BYTES + 3);
	assert_non_null(body);
	memcpy(body, head, n);
	memset(body + n, 'x', STDIN_BYTES);
	memcpy(body + n + STDIN_BYTES, "\"}", 3);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	th_json(U, "k1", "POST", path, body, &r);
	free(body);
	expect_status(&r, 200, "exec with 200000 bytes of stdin closing its outputs first");
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	assert_int_equal(cJSON_GetObjectItem(res, "exit_code")->valueint, 0);
	th_resp_free(&r);
	out = exec_stdout(id, "cat", "[\"/tmp/stdin-bytes\"]");
	assert_string_equal(out, "200000\n");
	free(out);
}

/* contained mode: each sandbox's guests live in a PID namespace of their own. They see and
 * signal only guests, so even `kill -9 -1` (every process the caller may
 * signal) stays inside: the mock and this test outlive it, while a
 * background process started by an earlier exec does not. */
static void guests_have_their_own_pid_namespace(void **state)
{
	char id[64], probe[192], *out;
	long bg;
	th_resp r;
	const cJSON *on;

	(void)state;
	th_admin(U, TOK, "GET", "/_mock/settings", NULL, &r);
	on = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "guest_pid_namespace");
	assert_non_null(on);
	if (!cJSON_IsTrue(on)) {
		th_resp_free(&r);
		print_message("no guest PID namespace here (guest mode %s)\n", sbx_mock_guest_mode(g_mock));
		skip();
	}
	th_resp_free(&r);
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	out = exec_stdout(id, "cat", "[\"/proc/1/comm\"]");
	assert_string_equal(out, "sbx-guest-init\n"); /* /proc is the namespace's */
	free(out);
	out = exec_stdout(id, "sh", "[\"-c\",\"sleep 300 >/dev/null 2>&1 & echo $!\"]");
	bg = strtol(out, NULL, 10); /* the background sleep, as the guests number it */
	free(out);
	assert_true(bg > 1);
	snprintf(probe, sizeof(probe), "[\"-c\",\"kill -0 %ld && echo alive\"]", bg);
	out = exec_stdout(id, "sh", probe);
	assert_string_equal(out, "alive\n"); /* it outlived the exec that started it */
	free(out);
	out = exec_stdout(id, "sh", "[\"-c\",\"kill -9 -1; echo survived\"]");
	assert_string_equal(out, "survived\n"); /* kill(-1) spares its caller */
	free(out);
	/* A killed process stays visible to kill -0 until the namespace's
	 * init has reaped it: give that a bounded moment. */
	snprintf(probe, sizeof(probe),
		 "[\"-c\",\"for i in $(seq 100); do kill -0 %ld 2>/dev/null || exit 0; sleep 0.02; done; echo alive\"]",
		 bg);
	out = exec_stdout(id, "sh", probe);
	assert_string_equal(out, ""); /* the sleep is gone */
	free(out);
	th_json(U, "k1", "GET", "/v1/whoami", NULL, &r); /* the mock is not */
	expect_status(&r, 200, "whoami after kill -9 -1");
	th_resp_free(&r);
}
static void exec_streaming_ndjson(void **state)
{
	char id[64], path[160], ct[64];
	th_req rq = {0};
	th_resp r;
	const char *body;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec?stream=true", id);
	rq.method = "POST";
	rq.url = U;
	rq.path = path;
	rq.key = "k1";
	rq.body = "{\"cmd\":\"sh\",\"args\":[\"-c\",\"echo a; echo b >&2; exit 7\"]}";
	th_do(&rq, &r);
	expect_status(&r, 200, "stream");
	assert_true(th_header(&r, "Content-Type", ct, sizeof(ct)));
	assert_string_equal(ct, "application/x-ndjson");
	body = sbx_strbuf_str(&r.body);
	assert_non_null(strstr(body, "{\"stdout\":\"a\\n\"}\n"));
	assert_non_null(strstr(body, "{\"stderr\":\"b\\n\"}\n"));
	assert_non_null(strstr(body, "{\"exit_code\":7}\n"));
	assert_true(strstr(body, "exit_code") > strstr(body, "stdout"));
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(exec_buffered, mf_reset),
		cmocka_unit_test_setup(guests_have_their_own_pid_namespace, mf_reset),
		cmocka_unit_test_setup(exec_streaming_ndjson, mf_reset),
		cmocka_unit_test_setup(exec_output_escaped_in_pieces, mf_reset),
		cmocka_unit_test_setup(exec_stdin_fed_after_outputs_close, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

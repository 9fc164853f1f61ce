/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl): managed processes, /v1/sandboxes/{id}/processes,
 * doing what the Python SDK's processes service does — output replayed
 * from a sequence number, a connect that the client drops while the
 * process runs on, input and stdin close, a PTY resized and `stty size`
 * inside showing it, a tree terminated with grace_ms, wait scopes, pause
 * freezing a process, and the bounds and errors.
 *
 * No test counts on timing: each waits (with generous deadlines) for the
 * exact condition it needs — a line of output, a state — and a process
 * that must stay blocked waits on something the test controls. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "guest_procs.h"
#include "mock_fixture.h"

#define DEADLINE_S 60

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool contained(void)
{
	return strcmp(sbx_mock_guest_mode(g_mock), "contained") == 0;
}

/* POSTs body to the sandbox's processes: the new process's id. */
static void proc_create(const char *sb, const char *body, char *pid, size_t cap)
{
	char path[160];
	th_resp r;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes", sb);
	th_json(U, "k1", "POST", path, body, &r);
	expect_status(&r, 200, body);
	assert_non_null(th_data_str(&r, "process_id"));
	snprintf(pid, cap, "%s", th_data_str(&r, "process_id"));
	assert_string_equal(th_data_str(&r, "state"), "running");
	th_resp_free(&r);
}

/* method on .../processes/<pid><suffix> (suffix may carry a query). */
static void proc_call(const char *sb, const char *pid, const char *method, const char *suffix,
		      const char *body, th_resp *r)
{
	char path[256];

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%s%s", sb, pid, suffix);
	th_json(U, "k1", method, path, body, r);
}

/* proc_call whose answer matters only by its status. */
static void proc_expect(const char *sb, const char *pid, const char *method, const char *suffix,
			const char *body, long want)
{
	char what[128];
	th_resp r;

	snprintf(what, sizeof(what), "%s %s%s", method, pid, suffix);
	proc_call(sb, pid, method, suffix, body, &r);
	expect_status(&r, want, what);
	th_resp_free(&r);
}

/* What a connect stream carried: the decoded output, the last seq, the
 * first data event's seq and bytes, whether the exit came and its code. */
typedef struct events {
	sbx_strbuf text;
	long long last_seq, first_seq;
	size_t first_len;
	bool exited;
	int exit_code;
	char signal[16];
} events;

static void events_parse(const char *body, events *ev)
{
	char why[128];

	memset(ev, 0, sizeof(*ev));
	sbx_strbuf_init(&ev->text);
	for (const char *line = body; *line != '\0';) {
		const char *nl = strchr(line, '\n');
		char *one = strndup(line, nl != NULL ? (size_t)(nl - line) : strlen(line));
		cJSON *e = cJSON_Parse(one);
		const char *type;

		free(one);
		if (nl == NULL && e == NULL)
			break; /* a line the dropped connection cut */
		assert_non_null(e);
		type = cJSON_GetObjectItem(e, "type")->valuestring;
		if (strcmp(type, "data") == 0) {
			size_t n = 0;
			char *d =
				mock_b64_decode(cJSON_GetObjectItem(e, "data_base64")->valuestring,
						&n, why, sizeof(why));

			assert_non_null(d);
			if (ev->first_seq == 0) {
				ev->first_seq =
					(long long)cJSON_GetObjectItem(e, "seq")->valuedouble;
				ev->first_len = n;
			}
			sbx_strbuf_append(&ev->text, d, n);
			free(d);
		}
		if (strcmp(type, "exit") == 0) {
			const cJSON *sig = cJSON_GetObjectItem(e, "signal");

			ev->exited = true;
			ev->exit_code = cJSON_GetObjectItem(e, "exit_code")->valueint;
			if (cJSON_IsString(sig))
				snprintf(ev->signal, sizeof(ev->signal), "%s", sig->valuestring);
		}
		if (cJSON_GetObjectItem(e, "seq") != NULL)
			ev->last_seq = (long long)cJSON_GetObjectItem(e, "seq")->valuedouble;
		cJSON_Delete(e);
		line = nl != NULL ? nl + 1 : line + strlen(line);
	}
}

/* GET connect?after=N for at most timeout_ms (0: until the stream ends).
 * A bounded look that the client gave up before the answer's head came
 * (a loaded machine: the stream had not started within timeout_ms) saw
 * nothing: empty events, for the caller's own deadline loop to try again. */
static void proc_connect(const char *sb, const char *pid, long long after, long timeout_ms,
			 events *ev)
{
	char path[256];
	th_req rq = {0};
	th_resp r;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%s/connect?after=%lld", sb, pid,
		 after);
	rq.method = "GET";
	rq.url = U;
	rq.path = path;
	rq.key = "k1";
	rq.timeout_ms = timeout_ms > 0 ? timeout_ms : DEADLINE_S * 1000;
	th_do(&rq, &r);
	if (timeout_ms > 0 && r.status == 0 && r.curl_rc == CURLE_OPERATION_TIMEDOUT) {
		th_resp_free(&r);
		memset(ev, 0, sizeof(*ev));
		sbx_strbuf_init(&ev->text);
		return;
	}
	if (r.status != 200)
		fail_msg("connect %s after %lld: expected 200, got %ld (curl %d): %s", pid, after,
			 r.status, (int)r.curl_rc, sbx_strbuf_str(&r.body));
	if (timeout_ms == 0)
		assert_int_equal(r.curl_rc, CURLE_OK);
	events_parse(sbx_strbuf_str(&r.body), ev);
	th_resp_free(&r);
}

/* Connects again and again (each for a second, the client dropping the
 * connection) until the output holds want. */
static void await_output(const char *sb, const char *pid, const char *want)
{
	double end = now_s() + DEADLINE_S;
	events ev;

	for (;;) {
		proc_connect(sb, pid, 0, 1000, &ev);
		if (strstr(sbx_strbuf_str(&ev.text), want) != NULL)
			break;
		if (now_s() > end)
			fail_msg("output of %s never showed \"%s\"; it was \"%s\"", pid, want,
				 sbx_strbuf_str(&ev.text));
		sbx_strbuf_free(&ev.text);
	}
	sbx_strbuf_free(&ev.text);
}

/* GET wait?scope=...&timeout_ms=...: the answer (the caller frees). */
static void proc_wait(const char *sb, const char *pid, const char *scope, long timeout_ms,
		      th_resp *r)
{
	char suffix[96];

	snprintf(suffix, sizeof(suffix), "/wait?scope=%s&timeout_ms=%ld", scope, timeout_ms);
	proc_call(sb, pid, "GET", suffix, NULL, r);
	expect_status(r, 200, suffix);
}

static bool data_bool(const th_resp *r, const char *k)
{
	return cJSON_IsTrue(data_item(r, k));
}

static void output_replayed_from_after(void **state)
{
	char sb[64], pid[32];
	events all, rest;
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	proc_create(sb,
		    "{\"cmd\":\"sh\",\"args\":[\"-c\",\"for i in 1 2 3 4 5; do echo line$i; sleep "
		    "0.05; done\"]}",
		    pid, sizeof(pid));
	proc_wait(sb, pid, "tree", DEADLINE_S * 1000, &r);
	assert_true(data_bool(&r, "leader_exited"));
	assert_true(data_bool(&r, "tree_exited"));
	assert_string_equal(th_data_str(&r, "state"), "exited");
	assert_int_equal(data_item(&r, "exit_code")->valueint, 0);
	assert_string_equal(th_data_str(&r, "kind"), "process");
	th_resp_free(&r);
	proc_connect(sb, pid, 0, 0, &all);
	assert_string_equal(sbx_strbuf_str(&all.text), "line1\nline2\nline3\nline4\nline5\n");
	assert_true(all.exited);
	assert_int_equal(all.exit_code, 0);
	/* from after the first data event: everything but its bytes, same end */
	proc_connect(sb, pid, all.first_seq, 0, &rest);
	assert_string_equal(sbx_strbuf_str(&rest.text), sbx_strbuf_str(&all.text) + all.first_len);
	assert_true(rest.exited);
	assert_int_equal(rest.last_seq, all.last_seq);
	sbx_strbuf_free(&rest.text);
	/* from the exit's own number: nothing more, the stream just ends */
	proc_connect(sb, pid, all.last_seq, 0, &rest);
	assert_int_equal(rest.text.len, 0);
	assert_false(rest.exited);
	sbx_strbuf_free(&rest.text);
	proc_call(sb, pid, "GET", "", NULL, &r);
	assert_non_null(data_item(&r, "output"));
	assert_int_equal(cJSON_GetObjectItem(data_item(&r, "output"), "newest_seq")->valuedouble,
			 (double)all.last_seq);
	th_resp_free(&r);
	sbx_strbuf_free(&all.text);
}

/* The client drops its connect; the process runs on, takes input, and
 * ends when its stdin is closed. */
static void connect_survives_disconnect_input_and_stdin_close(void **state)
{
	char sb[64], pid[32];
	events all;
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	proc_create(sb, "{\"cmd\":\"sh\",\"args\":[\"-c\",\"echo ready; cat; echo done\"]}", pid,
		    sizeof(pid));
	await_output(sb, pid, "ready\n"); /* each try ends with the client leaving */
	proc_call(sb, pid, "GET", "", NULL, &r);
	assert_string_equal(th_data_str(&r, "state"), "running");
	th_resp_free(&r);
	proc_call(sb, pid, "POST", "/input", "{\"data_base64\":\"aGVsbG8K\"}", &r); /* hello\n */
	expect_status(&r, 200, "input");
	assert_int_equal(data_item(&r, "input_seq")->valueint, 1);
	th_resp_free(&r);
	await_output(sb, pid, "hello\n");
	proc_expect(sb, pid, "POST", "/stdin/close", NULL, 200);
	proc_wait(sb, pid, "tree", DEADLINE_S * 1000, &r);
	assert_true(data_bool(&r, "tree_exited"));
	th_resp_free(&r);
	proc_connect(sb, pid, 0, 0, &all);
	assert_string_equal(sbx_strbuf_str(&all.text), "ready\nhello\ndone\n");
	assert_true(all.exited);
	sbx_strbuf_free(&all.text);
	/* input after the end */
	proc_expect(sb, pid, "POST", "/input", "{\"data_base64\":\"aGVsbG8K\"}", 409);
}

static void pty_resize_shows_in_stty_size(void **state)
{
	char sb[64], pid[32];
	events all;
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	proc_create(sb,
		    "{\"cmd\":\"sh\",\"args\":[\"-c\",\"tty; stty size; read x; stty size\"],"
		    "\"pty\":{\"rows\":30,\"cols\":100}}",
		    pid, sizeof(pid));
	await_output(sb, pid, "30 100");
	proc_expect(sb, pid, "POST", "/resize", "{\"rows\":50,\"cols\":132}", 200);
	proc_call(sb, pid, "POST", "/input", "{\"data_base64\":\"eAo=\"}", &r); /* x\n */
	expect_status(&r, 200, "pty input");
	th_resp_free(&r);
	proc_wait(sb, pid, "tree", DEADLINE_S * 1000, &r);
	assert_true(data_bool(&r, "tree_exited"));
	assert_string_equal(th_data_str(&r, "kind"), "pty");
	th_resp_free(&r);
	proc_connect(sb, pid, 0, 0, &all);
	assert_non_null(strstr(sbx_strbuf_str(&all.text), "30 100\r\n"));
	assert_non_null(strstr(sbx_strbuf_str(&all.text), "50 132\r\n"));
	if (contained()) /* the cell's own devpts */
		assert_non_null(strstr(sbx_strbuf_str(&all.text), "/dev/pts/"));
	sbx_strbuf_free(&all.text);
	/* a PTY has no stdin pipe; a pipe process cannot be resized */
	proc_expect(sb, pid, "POST", "/stdin/close", NULL, 409);
}

/* A PTY created with no cmd, as both vendor SDKs' managed-process examples
 * create "an interactive PTY shell", runs the guest root's shell
 * (/bin/sh) in cwd (a pipe process still needs one: errors_and_bounds). */
static void pty_without_cmd_is_a_shell(void **state)
{
	char sb[64], pid[32];
	events all;
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	proc_create(sb, "{\"cwd\":\"/tmp\",\"pty\":{\"rows\":24,\"cols\":80}}", pid, sizeof(pid));
	/* echo shell-$((40+2)); pwd; exit: "shell-42" is the shell's, not the echo's */
	proc_expect(sb, pid, "POST", "/input",
		    "{\"data_base64\":\"ZWNobyBzaGVsbC0kKCg0MCsyKSk7IHB3ZDsgZXhpdAo=\"}", 200);
	proc_wait(sb, pid, "tree", DEADLINE_S * 1000, &r);
	assert_true(data_bool(&r, "tree_exited"));
	assert_int_equal(data_item(&r, "exit_code")->valueint, 0);
	assert_string_equal(th_data_str(&r, "kind"), "pty");
	assert_string_equal(th_data_str(&r, "cmd"), "/bin/sh");
	th_resp_free(&r);
	proc_connect(sb, pid, 0, 0, &all);
	assert_non_null(strstr(sbx_strbuf_str(&all.text), "shell-42"));
	assert_non_null(strstr(sbx_strbuf_str(&all.text), "/tmp"));
	assert_true(all.exited);
	sbx_strbuf_free(&all.text);
}

/* The PTY is the shell's controlling terminal: a resize sends SIGWINCH to
 * its foreground group, which the shell's trap reports. */
static void pty_resize_sends_sigwinch(void **state)
{
	char sb[64], pid[32];
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	proc_create(sb,
		    "{\"cmd\":\"sh\",\"args\":[\"-c\",\"trap 'echo winch; stty size' WINCH; echo "
		    "ready; "
		    "while :; do sleep 0.05; done\"],\"pty\":{\"rows\":24,\"cols\":80}}",
		    pid, sizeof(pid));
	await_output(sb, pid, "ready");
	proc_expect(sb, pid, "POST", "/resize", "{\"rows\":40,\"cols\":120}", 200);
	await_output(sb, pid, "winch\r\n40 120\r\n");
	proc_expect(sb, pid, "POST", "/signal", "{\"signal\":\"SIGHUP\"}", 200);
	proc_wait(sb, pid, "tree", DEADLINE_S * 1000, &r);
	assert_true(data_bool(&r, "tree_exited"));
	assert_string_equal(th_data_str(&r, "signal"), "SIGHUP");
	th_resp_free(&r);
}

/* A tree that ignores SIGTERM is killed once grace_ms is over; one that
 * obeys ends by SIGTERM well before its (long) grace. */
static void tree_terminated_with_grace(void **state)
{
	char sb[64], pid[32];
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	proc_create(sb,
		    "{\"cmd\":\"sh\",\"args\":[\"-c\",\"trap '' TERM; sleep 300 & sleep 300 & echo "
		    "started; wait\"]}",
		    pid, sizeof(pid));
	await_output(sb, pid, "started");
	proc_call(sb, pid, "DELETE", "?grace_ms=300", NULL, &r);
	expect_status(&r, 200, "delete with grace");
	assert_true(r.seconds >= 0.3);
	assert_true(data_bool(&r, "tree_exited"));
	assert_string_equal(th_data_str(&r, "signal"), "SIGKILL");
	assert_string_equal(th_data_str(&r, "state"), "exited");
	th_resp_free(&r);
	proc_create(sb, "{\"cmd\":\"sh\",\"args\":[\"-c\",\"sleep 300 & echo started; wait\"]}",
		    pid, sizeof(pid));
	await_output(sb, pid, "started");
	proc_call(sb, pid, "DELETE", "?grace_ms=60000", NULL, &r);
	expect_status(&r, 200, "delete, obeyed");
	assert_true(r.seconds < 50);
	assert_true(data_bool(&r, "tree_exited"));
	assert_string_equal(th_data_str(&r, "signal"), "SIGTERM");
	th_resp_free(&r);
	proc_call(sb, pid, "DELETE", "?grace_ms=x", NULL, &r);
	expect_status(&r, 400, "grace_ms not a number");
	assert_non_null(fail_field(&r, "grace_ms"));
	th_resp_free(&r);
}

/* The leader exits at once; its child holds the output until the test
 * creates the file it waits for. */
static void wait_scopes_leader_and_tree(void **state)
{
	char sb[64], pid[32], path[160];
	events all;
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	proc_create(sb,
		    "{\"cmd\":\"sh\",\"args\":[\"-c\",\"(while [ ! -e go ]; do sleep 0.05; done; "
		    "echo late) & echo early\"]}",
		    pid, sizeof(pid));
	proc_wait(sb, pid, "leader", DEADLINE_S * 1000, &r);
	assert_true(data_bool(&r, "leader_exited"));
	assert_false(data_bool(&r, "tree_exited"));
	assert_int_equal(data_item(&r, "exit_code")->valueint, 0);
	th_resp_free(&r);
	proc_wait(sb, pid, "tree", 300, &r); /* times out: the child still runs */
	assert_false(data_bool(&r, "tree_exited"));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", sb);
	th_json(U, "k1", "POST", path, "{\"cmd\":\"touch\",\"args\":[\"go\"]}", &r);
	expect_status(&r, 200, "touch go");
	th_resp_free(&r);
	proc_wait(sb, pid, "tree", DEADLINE_S * 1000, &r);
	assert_true(data_bool(&r, "tree_exited"));
	th_resp_free(&r);
	proc_connect(sb, pid, 0, 0, &all);
	assert_string_equal(sbx_strbuf_str(&all.text), "early\nlate\n");
	sbx_strbuf_free(&all.text);
	proc_call(sb, pid, "GET", "/wait?scope=everything", NULL, &r);
	expect_status(&r, 400, "bad scope");
	assert_non_null(fail_field(&r, "scope"));
	th_resp_free(&r);
}

static void await_sandbox(const char *sb, const char *status)
{
	char path[128];
	double end = now_s() + DEADLINE_S;
	th_resp r;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", sb);
	for (;;) {
		bool there;

		th_json(U, "k1", "GET", path, NULL, &r);
		there = th_data_str(&r, "status") != NULL &&
			strcmp(th_data_str(&r, "status"), status) == 0;
		th_resp_free(&r);
		if (there)
			return;
		if (now_s() > end)
			fail_msg("sandbox %s never became %s", sb, status);
		usleep(20000);
	}
}

/* The longest time between two consecutive "t <uptime>" lines of text, in
 * seconds (0 with fewer than two). */
static double longest_tick_gap(const char *text)
{
	double prev = -1, gap = 0;

	for (const char *l = strstr(text, "t "); l != NULL; l = strstr(l + 1, "\nt ")) {
		double t = strtod(l[0] == '\n' ? l + 3 : l + 2, NULL);

		if (prev >= 0 && t - prev > gap)
			gap = t - prev;
		prev = t;
	}
	return gap;
}

static void sandbox_verb(const char *sb, const char *verb, const char *then)
{
	char path[128];
	th_resp r;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/%s", sb, verb);
	th_json(U, "k1", "POST", path, NULL, &r);
	assert_true(r.status == 200 || r.status == 202);
	th_resp_free(&r);
	await_sandbox(sb, then);
}

/* A ticking process does not run while its sandbox is paused and goes on
 * after resume. Each tick carries the guest's own clock (/proc/uptime), so
 * the proof is a gap in the process's own timeline at least as long as the
 * pause was held, not "no new output within a second" (the mock may still
 * be reading what was written before the freeze: valgrind in CI took
 * longer than that). */
static void pause_freezes_a_process(void **state)
{
	char sb[64], pid[32];
	double paused_at, held, gap = 0, end;
	events ev;
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	proc_create(sb,
		    "{\"cmd\":\"sh\",\"args\":[\"-c\",\"while :; do read u _ < /proc/uptime; "
		    "echo \\\"t $u\\\"; sleep 0.02; done\"]}",
		    pid, sizeof(pid));
	await_output(sb, pid, "t ");
	sandbox_verb(sb, "pause", "paused");
	paused_at = now_s();
	proc_expect(sb, pid, "POST", "/input", "{\"data_base64\":\"eAo=\"}", 409);
	while (now_s() - paused_at < 3)
		usleep(50000);
	held = now_s() - paused_at;
	sandbox_verb(sb, "resume", "running");
	end = now_s() + DEADLINE_S;
	for (;;) {
		proc_connect(sb, pid, 0, 1000, &ev);
		gap = longest_tick_gap(sbx_strbuf_str(&ev.text));
		sbx_strbuf_free(&ev.text);
		if (gap >= held - 0.1)
			break; /* frozen for the pause, and a tick after it */
		if (now_s() > end)
			fail_msg("the process ran while paused: its longest gap between ticks "
				 "is %.2f s, the pause was held %.2f s",
				 gap, held);
		usleep(20000);
	}
	proc_call(sb, pid, "DELETE", "", NULL, &r);
	expect_status(&r, 200, "delete");
	assert_true(data_bool(&r, "tree_exited"));
	th_resp_free(&r);
}

static void errors_and_bounds(void **state)
{
	char sb[64], pid[32], path[128], *big;
	sbx_strbuf body = SBX_STRBUF_INIT;
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes", sb);
	th_json(U, "k1", "POST", path, "{\"cmd\":\"no-such-command\"}", &r);
	expect_status(&r, 400, "unknown command");
	assert_non_null(strstr(fail_field(&r, "cmd"), "no-such-command"));
	th_resp_free(&r);
	th_json(U, "k1", "POST", path, "{\"cmd\":\"sh\",\"pty\":{\"rows\":5000,\"cols\":80}}", &r);
	expect_status(&r, 400, "pty rows over the limit");
	assert_non_null(fail_field(&r, "rows"));
	th_resp_free(&r);
	th_json(U, "k1", "POST", path, "{\"cmd\":\"sh\",\"cwd\":\"relative\"}", &r);
	expect_status(&r, 400, "relative cwd");
	th_resp_free(&r);
	th_json(U, "k1", "POST", path, "{\"cwd\":\"/tmp\"}", &r);
	expect_status(&r, 400, "a pipe process without cmd (a PTY's is the shell)");
	assert_non_null(fail_field(&r, "cmd"));
	th_resp_free(&r);
	th_json(U, "k2", "GET", path, NULL, &r);
	expect_status(&r, 404, "another tenant's sandbox");
	th_resp_free(&r);
	proc_expect(sb, "proc_999", "GET", "", NULL, 404);
	proc_create(sb, "{\"cmd\":\"cat\"}", pid, sizeof(pid));
	proc_expect(sb, pid, "POST", "/resize", "{\"rows\":10,\"cols\":10}", 409);
	proc_call(sb, pid, "POST", "/signal", "{\"signal\":\"SIGSEGV\"}", &r);
	expect_status(&r, 400, "a signal the API does not take");
	assert_non_null(fail_field(&r, "signal"));
	th_resp_free(&r);
	proc_call(sb, pid, "POST", "/input", "{\"data_base64\":\"a===\"}", &r);
	expect_status(&r, 400, "bad base64");
	assert_non_null(strstr(fail_field(&r, "data_base64"), "character 2"));
	th_resp_free(&r);
	big = calloc(1, (MOCK_MPROC_INPUT_MAX / 3 + 4) * 4 + 1);
	assert_non_null(big);
	memset(big, 'A', (MOCK_MPROC_INPUT_MAX / 3 + 4) * 4); /* decodes to over the limit */
	sbx_strbuf_printf(&body, "{\"data_base64\":\"%s\"}", big);
	proc_call(sb, pid, "POST", "/input", sbx_strbuf_str(&body), &r);
	expect_status(&r, 400, "input over the limit");
	assert_non_null(strstr(fail_field(&r, "data_base64"), "over the limit"));
	th_resp_free(&r);
	free(big);
	sbx_strbuf_free(&body);
	proc_expect(sb, pid, "POST", "/signal", "{\"signal\":\"SIGKILL\"}", 200);
	proc_wait(sb, pid, "tree", DEADLINE_S * 1000, &r);
	assert_string_equal(th_data_str(&r, "signal"), "SIGKILL");
	assert_int_equal(data_item(&r, "exit_code")->valueint, 137);
	th_resp_free(&r);
}

/* A process that does not read its stdin: once the pipe is full, input
 * gets 503 after its 5 s deadline, and the other processes' output still
 * flows meanwhile. */
static void input_not_read_is_503(void **state)
{
	char sb[64], pid[32], other[32];
	size_t n = MOCK_MPROC_INPUT_MAX / 3 * 4;
	sbx_strbuf body = SBX_STRBUF_INIT;
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	proc_create(sb, "{\"cmd\":\"sleep\",\"args\":[\"300\"]}", pid, sizeof(pid));
	proc_create(sb, "{\"cmd\":\"sh\",\"args\":[\"-c\",\"read x; echo got $x\"]}", other,
		    sizeof(other));
	sbx_strbuf_puts(&body, "{\"data_base64\":\"");
	for (size_t i = 0; i < n; i++)
		sbx_strbuf_append(&body, "A", 1);
	sbx_strbuf_puts(&body, "\"}");
	proc_expect(sb, pid, "POST", "/input", sbx_strbuf_str(&body),
		    200); /* 64 KiB - 1: fits the pipe (64 KiB) */
	proc_call(sb, pid, "POST", "/input", sbx_strbuf_str(&body), &r); /* does not */
	expect_status(&r, 503, "input nobody reads");
	assert_true(r.seconds >= 4.5);
	th_resp_free(&r);
	proc_expect(sb, other, "POST", "/input", "{\"data\":\"x\\n\"}", 200);
	await_output(sb, other, "got x\n");
	sbx_strbuf_free(&body);
}

/* MOCK_MPROC_MAX live processes fill the table; an exited one makes room. */
static void process_count_is_bounded(void **state)
{
	char sb[64], pid[32], first[32], path[128];
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	for (int i = 0; i < MOCK_MPROC_MAX; i++) {
		proc_create(sb, "{\"cmd\":\"sleep\",\"args\":[\"300\"]}", pid, sizeof(pid));
		if (i == 0)
			snprintf(first, sizeof(first), "%s", pid);
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes", sb);
	th_json(U, "k1", "POST", path, "{\"cmd\":\"true\"}", &r);
	expect_status(&r, 409, "one process over the limit");
	th_resp_free(&r);
	th_json(U, "k1", "GET", path, NULL, &r);
	assert_int_equal(cJSON_GetArraySize(data_item(&r, "processes")), MOCK_MPROC_MAX);
	th_resp_free(&r);
	proc_expect(sb, first, "DELETE", "", NULL, 200);
	proc_create(sb, "{\"cmd\":\"true\"}", pid, sizeof(pid)); /* evicts the exited first */
	proc_expect(sb, first, "GET", "", NULL, 404);
}

typedef struct follow_arg {
	const char *sb, *pid;
	long status;
	CURLcode rc;
	double seconds;
	events ev;
} follow_arg;

/* A client following the process's stream while its sandbox goes. */
static void *follow_main(void *arg)
{
	follow_arg *f = arg;
	char path[256];
	th_req rq = {0};
	th_resp r;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%s/connect", f->sb, f->pid);
	rq.method = "GET";
	rq.url = U;
	rq.path = path;
	rq.key = "k1";
	rq.timeout_ms = DEADLINE_S * 1000;
	th_do(&rq, &r);
	f->status = r.status;
	f->rc = r.curl_rc;
	f->seconds = r.seconds;
	if (r.status == 200)
		events_parse(sbx_strbuf_str(&r.body), &f->ev);
	th_resp_free(&r);
	return NULL;
}

/* Destroying the sandbox kills its processes: a stream following one ends
 * (with the exit, or the connect came too late and got the sandbox's
 * refusal), never hangs. */
static void destroy_kills_processes_and_ends_streams(void **state)
{
	char sb[64], pid[32], path[128];
	follow_arg f = {0};
	pthread_t th;
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", sb, sizeof(sb));
	proc_create(
		sb,
		"{\"cmd\":\"sh\",\"args\":[\"-c\",\"while :; do echo tick; sleep 0.05; done\"]}",
		pid, sizeof(pid));
	await_output(sb, pid, "tick\n");
	f.sb = sb;
	f.pid = pid;
	assert_int_equal(pthread_create(&th, NULL, follow_main, &f), 0);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", sb);
	th_json(U, "k1", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "destroy");
	th_resp_free(&r);
	pthread_join(th, NULL);
	assert_true(f.seconds < DEADLINE_S - 5);
	if (f.status == 200) {
		assert_int_equal(f.rc, CURLE_OK);
		assert_true(f.ev.exited);
		assert_string_equal(f.ev.signal, "SIGKILL");
		sbx_strbuf_free(&f.ev.text);
	} else {
		assert_true(f.status == 404 || f.status == 409);
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes", sb);
	th_json(U, "k1", "GET", path, NULL, &r);
	assert_true(r.status == 404 || r.status == 409);
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(output_replayed_from_after, mf_reset),
		cmocka_unit_test_setup(connect_survives_disconnect_input_and_stdin_close, mf_reset),
		cmocka_unit_test_setup(pty_resize_shows_in_stty_size, mf_reset),
		cmocka_unit_test_setup(pty_resize_sends_sigwinch, mf_reset),
		cmocka_unit_test_setup(pty_without_cmd_is_a_shell, mf_reset),
		cmocka_unit_test_setup(tree_terminated_with_grace, mf_reset),
		cmocka_unit_test_setup(wait_scopes_leader_and_tree, mf_reset),
		cmocka_unit_test_setup(pause_freezes_a_process, mf_reset),
		cmocka_unit_test_setup(errors_and_bounds, mf_reset),
		cmocka_unit_test_setup(input_not_read_is_503, mf_reset),
		cmocka_unit_test_setup(process_count_is_bounded, mf_reset),
		cmocka_unit_test_setup(destroy_kills_processes_and_ends_streams, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

/* sbxctl against a real sbx-mock over loopback: every command, its human
 * and JSON output, its exit code, and the mapping of control-plane errors
 * (injected with fault rules) to the SDK's error classes with status,
 * message and request id. Arguments: the sbxctl and sbx-mock binaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ctl_harness.h"

static const char *ctl_bin;
static const char *mock_bin;
static mock_proc mock;

#define RUN(key, ...) ctl_exec(ctl_bin, &mock, key, (const char *const[]){__VA_ARGS__, NULL})

/* Fails with the command's output when rc differs. */
static void expect_rc(const ctl_result *r, int rc, const char *what)
{
	if (r->rc != rc)
		fail_msg("%s: expected exit %d, got %d\nstdout: %s\nstderr: %s", what, rc, r->rc, r->out, r->err);
}

static void expect_in(const char *hay, const char *needle, const char *what)
{
	if (strstr(hay, needle) == NULL)
		fail_msg("%s: expected '%s' in:\n%s", what, needle, hay);
}

static cJSON *json_out(const ctl_result *r, const char *what)
{
	cJSON *v = cJSON_Parse(r->out);
	if (v == NULL)
		fail_msg("%s: stdout is not JSON:\n%s\nstderr: %s", what, r->out, r->err);
	return v;
}

/* Creates a sandbox for `key` and returns its id (static buffer per call site). */
static void create_sandbox(const char *key, char *id, size_t cap, const char *const *extra)
{
	const char *args[16] = {"--json", "create", "--shape", "s-1vcpu-1gb"};
	size_t n = 4;
	for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 15; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	ctl_result r = ctl_exec(ctl_bin, &mock, key, args);
	expect_rc(&r, 0, "create");
	cJSON *v = json_out(&r, "create");
	const cJSON *jid = cJSON_GetObjectItem(v, "id");
	assert_true(cJSON_IsString(jid));
	assert_int_equal(strncmp(jid->valuestring, "sb-", 3), 0);
	snprintf(id, cap, "%s", jid->valuestring);
	cJSON_Delete(v);
	ctl_result_free(&r);
}

static const char *sandbox_status(const char *key, const char *id)
{
	static char st[32];
	ctl_result r = RUN(key, "--json", "get", id);
	expect_rc(&r, 0, "get");
	cJSON *v = json_out(&r, "get");
	snprintf(st, sizeof st, "%s", cJSON_GetObjectItem(v, "status")->valuestring);
	cJSON_Delete(v);
	ctl_result_free(&r);
	return st;
}

static int setup(void **state)
{
	(void)state;
	return mock_start(&mock, mock_bin);
}

static int teardown(void **state)
{
	(void)state;
	return mock_stop_check(&mock) == 0 ? 0 : -1;
}

/* ---- account and catalog ---- */

static void whoami_shapes_rootfs(void **state)
{
	(void)state;
	ctl_result r = RUN("key-info", "whoami");
	expect_rc(&r, 0, "whoami");
	expect_in(r.out, "user_id", "whoami");
	expect_in(r.out, "stats.running", "whoami flattens stats");
	ctl_result_free(&r);
	r = RUN("key-info", "--json", "whoami");
	cJSON *v = json_out(&r, "whoami --json");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "stats"), "total")->valueint, 0);
	cJSON_Delete(v);
	ctl_result_free(&r);

	r = RUN(NULL, "shapes");
	expect_rc(&r, 0, "shapes");
	expect_in(r.out, "ID", "shapes header");
	expect_in(r.out, "s-0.25vcpu-512mb", "shapes");
	expect_in(r.out, "s-8vcpu-16gb", "shapes");
	ctl_result_free(&r);
	r = RUN(NULL, "--json", "shapes");
	v = json_out(&r, "shapes --json");
	assert_int_equal(cJSON_GetArraySize(v), 11);
	cJSON_Delete(v);
	ctl_result_free(&r);

	r = RUN(NULL, "rootfs");
	expect_rc(&r, 0, "rootfs");
	expect_in(r.out, "devbox:1", "rootfs");
	ctl_result_free(&r);
}

/* ---- lifecycle ---- */

static void create_get_ls_rm(void **state)
{
	(void)state;
	const char *key = "key-life";
	ctl_result r = RUN(key, "create", "--shape", "s-1vcpu-1gb", "--rootfs", "devbox:1", "--name", "lf-one",
			   "--env", "GREETING=hi", "--env", "MODE=test", "--egress", "PyPI.org, 10.0.0.0/8",
			   "--auto-pause", "600");
	expect_rc(&r, 0, "create");
	expect_in(r.out, "lf-one", "create output");
	ctl_result_free(&r);

	r = RUN(key, "--json", "ls");
	expect_rc(&r, 0, "ls --json");
	cJSON *all = json_out(&r, "ls");
	assert_int_equal(cJSON_GetArraySize(all), 1);
	char id[64];
	snprintf(id, sizeof id, "%s", cJSON_GetObjectItem(cJSON_GetArrayItem(all, 0), "id")->valuestring);
	cJSON_Delete(all);
	ctl_result_free(&r);

	r = RUN(key, "--json", "get", id);
	cJSON *v = json_out(&r, "get");
	assert_string_equal(cJSON_GetObjectItem(v, "status")->valuestring, "running");
	assert_string_equal(cJSON_GetObjectItem(v, "name")->valuestring, "lf-one");
	assert_int_equal(cJSON_GetObjectItem(v, "auto_pause_after_seconds")->valueint, 600);
	char *envs = cJSON_PrintUnformatted(cJSON_GetObjectItem(v, "envs"));
	expect_in(envs, "GREETING", "envs key names");
	assert_null(strstr(envs, "hi")); /* never values */
	free(envs);
	cJSON_Delete(v);
	ctl_result_free(&r);

	r = RUN(key, "get", id);
	expect_rc(&r, 0, "get human");
	expect_in(r.out, "status", "get human");
	expect_in(r.out, "running", "get human");
	ctl_result_free(&r);

	r = RUN(key, "ls");
	expect_in(r.out, "STATUS", "ls header");
	expect_in(r.out, id, "ls human");
	ctl_result_free(&r);
	r = RUN(key, "ls", "--status", "paused");
	expect_rc(&r, 0, "ls --status");
	assert_null(strstr(r.out, id));
	ctl_result_free(&r);

	r = RUN(key, "rm", id);
	expect_rc(&r, 0, "rm");
	expect_in(r.out, id, "rm output");
	expect_in(r.out, "destroy", "rm output");
	ctl_result_free(&r);
	r = RUN(key, "ls", "--status", "running");
	assert_null(strstr(r.out, id));
	ctl_result_free(&r);
}

static void ls_follows_every_page(void **state)
{
	(void)state;
	const char *key = "key-pages";
	char ids[3][64];
	for (int i = 0; i < 3; i++)
		create_sandbox(key, ids[i], sizeof ids[i], NULL);
	ctl_result r = RUN(key, "--json", "ls", "--page-size", "1");
	expect_rc(&r, 0, "ls paged");
	cJSON *all = json_out(&r, "ls paged");
	assert_int_equal(cJSON_GetArraySize(all), 3);
	for (int i = 0; i < 3; i++)
		expect_in(r.out, ids[i], "ls paged");
	cJSON_Delete(all);
	ctl_result_free(&r);
	/* three pages were asked for, one sandbox each */
	r = RUN(NULL, "--json", "mock", "journal", "--tenant", key, "--method", "GET", "--path", "/v1/sandboxes");
	expect_rc(&r, 0, "journal");
	cJSON *j = json_out(&r, "journal");
	cJSON *entries = cJSON_GetObjectItem(j, "entries");
	assert_int_equal(cJSON_GetArraySize(entries), 3);
	const char *want[] = {"offset=0", "offset=1", "offset=2"};
	for (int i = 0; i < 3; i++) {
		const cJSON *q = cJSON_GetObjectItem(cJSON_GetArrayItem(entries, i), "query");
		assert_true(cJSON_IsString(q));
		expect_in(q->valuestring, want[i], "page query");
	}
	cJSON_Delete(j);
	ctl_result_free(&r);
}

/* ---- exec ---- */

static void exec_buffered_passes_output_and_exit_code(void **state)
{
	(void)state;
	const char *key = "key-exec";
	char id[64];
	create_sandbox(key, id, sizeof id, (const char *const[]){"--env", "GREETING=hi", NULL});
	ctl_result r = RUN(key, "exec", id, "--", "sh", "-c", "echo out; echo err >&2; exit 3");
	expect_rc(&r, 3, "exec exit code");
	assert_string_equal(r.out, "out\n");
	assert_string_equal(r.err, "err\n");
	ctl_result_free(&r);

	r = RUN(key, "exec", id, "--", "true");
	expect_rc(&r, 0, "exec true");
	ctl_result_free(&r);

	r = RUN(key, "exec", id, "--", "sh", "-c", "echo $GREETING");
	assert_string_equal(r.out, "hi\n");
	ctl_result_free(&r);
	r = RUN(key, "exec", id, "--env", "GREETING=yo", "--", "sh", "-c", "echo $GREETING");
	expect_rc(&r, 0, "exec --env");
	assert_string_equal(r.out, "yo\n");
	ctl_result_free(&r);
	/* only declared keys may be overridden: the API says 400 */
	r = RUN(key, "exec", id, "--env", "UNDECLARED=x", "--", "true");
	expect_rc(&r, 1, "exec undeclared env");
	expect_in(r.err, "sbxctl: ValidationError: HTTP 400 from POST /v1/sandboxes/", "exec undeclared env");
	ctl_result_free(&r);

	r = RUN(key, "--json", "exec", id, "--", "sh", "-c", "printf abc; exit 7");
	expect_rc(&r, 7, "exec --json");
	cJSON *v = json_out(&r, "exec --json");
	cJSON *res = cJSON_GetObjectItem(v, "result");
	assert_string_equal(cJSON_GetObjectItem(res, "stdout")->valuestring, "abc");
	assert_int_equal(cJSON_GetObjectItem(res, "exit_code")->valueint, 7);
	cJSON_Delete(v);
	ctl_result_free(&r);
}

static void exec_stream_prints_output_as_it_arrives(void **state)
{
	(void)state;
	const char *key = "key-stream";
	char id[64];
	create_sandbox(key, id, sizeof id, NULL);
	/* The remote command prints "one", then waits for a file that the test
	 * pushes only after it has read "one" from sbxctl's stdout: this only
	 * finishes if sbxctl writes output as it arrives. */
	static const char script[] = "echo one; echo warn >&2; i=0; while [ ! -e go ] && [ $i -lt 400 ]; "
				     "do sleep 0.05; i=$((i+1)); done; echo two; exit 5";
	int fd = -1;
	pid_t pid = ctl_spawn(ctl_bin, &mock, key,
			      (const char *const[]){"exec", id, "--stream", "--", "sh", "-c", script, NULL}, &fd);
	assert_true(pid > 0);
	char buf[4096];
	size_t len = 0;
	bool got_one = read_until(fd, buf, sizeof buf, &len, "one\n", 15000);
	assert_null(strstr(buf, "two"));
	char local[320];
	snprintf(local, sizeof local, "%s/empty", mock.dir);
	close(open(local, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	ctl_result r = RUN(key, "files", "push", id, local, "/workspace/go");
	expect_rc(&r, 0, "files push go");
	ctl_result_free(&r);
	bool got_two = read_until(fd, buf, sizeof buf, &len, "two\n", 20000);
	int rc = wait_exit(pid, 20000);
	close(fd);
	if (!got_one)
		fail_msg("'one' did not arrive while the command was still running; got '%s'", buf);
	assert_true(got_two);
	assert_string_equal(buf, "one\ntwo\n");
	assert_int_equal(rc, 5);
	char errpath[320];
	snprintf(errpath, sizeof errpath, "%s/spawn.err", mock.dir);
	FILE *f = fopen(errpath, "r");
	char errbuf[256] = "";
	size_t n = fread(errbuf, 1, sizeof errbuf - 1, f);
	errbuf[n] = '\0';
	fclose(f);
	assert_string_equal(errbuf, "warn\n");

	/* a stream cut before the exit frame is a failure of sbxctl (exit 1) */
	static const char cut[] = "{\"match\":{\"tenant\":\"key-stream\",\"path\":\"/v1/sandboxes/{id}/exec\"},"
				  "\"fire\":{\"times\":1},\"action\":{\"kind\":\"exec_stream_cut\",\"after_frames\":1}}";
	static const char oom[] = "{\"match\":{\"tenant\":\"key-stream\",\"path\":\"/v1/sandboxes/{id}/exec\"},"
				  "\"fire\":{\"times\":1},\"action\":{\"kind\":\"exec_oom\"}}";
	ctl_result f1 = RUN(NULL, "mock", "faults", "add", cut);
	expect_rc(&f1, 0, "add exec_stream_cut");
	ctl_result_free(&f1);
	r = RUN(key, "exec", id, "--stream", "--", "sh", "-c", "echo a; sleep 0.2; echo b; exit 0");
	expect_rc(&r, 1, "stream cut");
	expect_in(r.err, "sbxctl: ", "stream cut");
	ctl_result_free(&r);
	/* an OOM-killed command: its 137 becomes sbxctl's exit code */
	f1 = RUN(NULL, "mock", "faults", "add", oom);
	ctl_result_free(&f1);
	r = RUN(key, "exec", id, "--", "true");
	expect_rc(&r, 137, "exec_oom");
	ctl_result_free(&r);

	/* --json --stream: one JSON frame per line, last one with exit_code */
	r = RUN(key, "--json", "exec", id, "--stream", "--", "sh", "-c", "echo x; exit 2");
	expect_rc(&r, 2, "exec --json --stream");
	expect_in(r.out, "{\"stdout\":\"x\\n\"}\n", "stream frames");
	expect_in(r.out, "\"exit_code\":2", "stream frames");
	ctl_result_free(&r);
}

/* ---- pause, resume, fork ---- */

static void pause_fork_resume_with_wait(void **state)
{
	(void)state;
	const char *key = "key-pause";
	char id[64];
	create_sandbox(key, id, sizeof id, NULL);
	ctl_result r = RUN(key, "--json", "pause", id, "--wait");
	expect_rc(&r, 0, "pause --wait");
	cJSON *v = json_out(&r, "pause");
	assert_string_equal(cJSON_GetObjectItem(v, "status")->valuestring, "paused");
	cJSON_Delete(v);
	ctl_result_free(&r);
	/* pausing a paused sandbox is fine (200) */
	r = RUN(key, "pause", id);
	expect_rc(&r, 0, "pause again");
	ctl_result_free(&r);
	/* exec on a paused sandbox: 409 -> ValidationError, exit 1 */
	r = RUN(key, "exec", id, "--", "true");
	expect_rc(&r, 1, "exec paused");
	expect_in(r.err, "ValidationError: HTTP 409", "exec paused");
	ctl_result_free(&r);

	r = RUN(key, "--json", "fork", id, "--wait", "--env", "X=1");
	expect_rc(&r, 0, "fork --wait");
	v = json_out(&r, "fork");
	assert_string_equal(cJSON_GetObjectItem(v, "status")->valuestring, "running");
	assert_string_not_equal(cJSON_GetObjectItem(v, "id")->valuestring, id);
	char fork_id[64];
	snprintf(fork_id, sizeof fork_id, "%s", cJSON_GetObjectItem(v, "id")->valuestring);
	cJSON_Delete(v);
	ctl_result_free(&r);
	assert_string_equal(sandbox_status(key, id), "paused");
	assert_string_equal(sandbox_status(key, fork_id), "running");

	r = RUN(key, "fork", id, "--start-paused", "--wait");
	expect_rc(&r, 0, "fork --start-paused");
	expect_in(r.out, "paused", "fork --start-paused");
	ctl_result_free(&r);

	r = RUN(key, "resume", id, "--wait", "--wait-timeout", "30s");
	expect_rc(&r, 0, "resume --wait");
	expect_in(r.out, "running", "resume output");
	ctl_result_free(&r);
	assert_string_equal(sandbox_status(key, id), "running");
	/* forking a running sandbox is refused by the API */
	r = RUN(key, "fork", id);
	expect_rc(&r, 1, "fork running");
	ctl_result_free(&r);
}

/* ---- egress ---- */

static void egress_show_set_clear(void **state)
{
	(void)state;
	const char *key = "key-egress";
	char id[64];
	create_sandbox(key, id, sizeof id, NULL);
	ctl_result r = RUN(key, "egress", "show", id);
	expect_rc(&r, 0, "egress show");
	expect_in(r.out, "no egress rules", "egress show empty");
	ctl_result_free(&r);

	r = RUN(key, "egress", "set", id, "PyPI.org,10.1.2.3/8", "[2001:db8::1]:443");
	expect_rc(&r, 0, "egress set");
	expect_in(r.out, "pypi.org", "canonical host");
	expect_in(r.out, "10.0.0.0/8", "canonical cidr");
	ctl_result_free(&r);
	r = RUN(key, "--json", "egress", "show", id);
	cJSON *v = json_out(&r, "egress show");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(v, "egress")), 3);
	cJSON_Delete(v);
	ctl_result_free(&r);

	r = RUN(key, "egress", "set", id, "ok.com,*.");
	expect_rc(&r, 1, "egress set invalid");
	expect_in(r.err, "ValidationError: HTTP 400", "egress set invalid");
	expect_in(r.err, "rule 1", "egress set invalid names the rule");
	ctl_result_free(&r);

	/* the offline check agrees with what was stored (binary, not in-process) */
	r = RUN(NULL, "egress", "check", "--rules", "pypi.org,10.0.0.0/8,[2001:db8::1]:443", "10.9.9.9:22",
		"[2001:db8::1]:443", "8.8.8.8:53");
	expect_rc(&r, 0, "egress check");
	expect_in(r.out, "#1 10.0.0.0/8", "egress check");
	expect_in(r.out, "#2 [2001:db8::1]:443", "egress check v6");
	expect_in(r.out, "deny by default", "egress check deny");
	ctl_result_free(&r);
	char rules[320];
	snprintf(rules, sizeof rules, "%s/rules.txt", mock.dir);
	FILE *rf = fopen(rules, "w");
	fputs("pypi.org\n*.\n", rf);
	fclose(rf);
	r = RUN(NULL, "egress", "lint", rules);
	expect_rc(&r, 1, "egress lint");
	expect_in(r.err, ":2: rule 1 (`*.`)", "egress lint");
	ctl_result_free(&r);

	r = RUN(key, "egress", "clear", id);
	expect_rc(&r, 0, "egress clear");
	expect_in(r.out, "no egress rules", "egress clear");
	ctl_result_free(&r);
	r = RUN(NULL, "--json", "mock", "state", "--tenant", key);
	expect_rc(&r, 0, "mock state");
	expect_in(r.out, "\"egress_is_null\":\ttrue", "clear sets null");
	ctl_result_free(&r);
}

/* Whether the mock said at start that it enforces egress. */
static bool mock_enforces_egress(void)
{
	FILE *f = fopen(mock.log, "r");
	char line[512];
	bool on = false;

	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		on = on || strncmp(line, "egress: enforced", 16) == 0;
	if (f != NULL)
		fclose(f);
	return on;
}

/* `egress test` connects from inside the guest: what the kernel did, next
 * to the engine's decision on the stored rules (issue 14). */
static void egress_test_shows_kernel_next_to_engine(void **state)
{
	(void)state;
	const char *key = "key-egress-test";
	char id[64];
	if (!mock_enforces_egress()) {
		print_message("skipped: this mock does not enforce egress (see its start-up warning)\n");
		skip();
	}
	create_sandbox(key, id, sizeof id, (const char *const[]){"--egress", "1.2.3.0/24", NULL});
	ctl_result r = RUN(key, "egress", "test", id, "1.2.3.4:80", "5.6.7.8:80", "169.254.169.254:80");
	expect_rc(&r, 0, "egress test");
	expect_in(r.out, "1.2.3.4:80          connected (ok)", "allowed by a rule");
	expect_in(r.out, "5.6.7.8:80          dropped (timeout)", "denied by default");
	expect_in(r.out, "link-local exception", "the hole");
	ctl_result_free(&r);
	/* curl in the guest reaches the simulated internet */
	r = RUN(key, "exec", id, "--", "curl", "-s", "http://1.2.3.99:8080/x");
	expect_rc(&r, 0, "curl in the guest");
	expect_in(r.out, "sbx-mock simulated internet: reached 1.2.3.99:8080", "curl answer");
	ctl_result_free(&r);
	/* the engine asked for documented semantics disagrees with the
	 * observed kernel: exit 1, the row says NO */
	r = RUN(key, "egress", "set", id, "pypi.org");
	expect_rc(&r, 0, "egress set");
	ctl_result_free(&r);
	r = RUN(key, "egress", "test", "--mode", "documented", id, "pypi.org:443");
	expect_rc(&r, 1, "egress test disagreement");
	expect_in(r.out, "NO", "disagreement shown");
	ctl_result_free(&r);
}

/* ---- files ---- */

static void files_push_pull_are_binary_safe(void **state)
{
	(void)state;
	const char *key = "key-files";
	char id[64];
	create_sandbox(key, id, sizeof id, NULL);
	char src[320], dst[320];
	snprintf(src, sizeof src, "%s/blob.bin", mock.dir);
	snprintf(dst, sizeof dst, "%s/back.bin", mock.dir);
	unsigned char blob[70000];
	for (size_t i = 0; i < sizeof blob; i++)
		blob[i] = (unsigned char)((i * 131) ^ (i >> 8));
	blob[0] = 0;
	FILE *f = fopen(src, "wb");
	fwrite(blob, 1, sizeof blob, f);
	fclose(f);

	ctl_result r = RUN(key, "files", "push", id, src, "/workspace/blob.bin");
	expect_rc(&r, 0, "files push");
	expect_in(r.out, "pushed 70000 bytes", "files push");
	ctl_result_free(&r);
	r = RUN(key, "files", "pull", id, "/workspace/blob.bin", dst);
	expect_rc(&r, 0, "files pull");
	ctl_result_free(&r);
	f = fopen(dst, "rb");
	assert_non_null(f);
	unsigned char back[70001];
	size_t n = fread(back, 1, sizeof back, f);
	fclose(f);
	assert_int_equal(n, sizeof blob);
	assert_memory_equal(back, blob, sizeof blob);

	r = RUN(key, "files", "pull", id, "/workspace/blob.bin", "-");
	expect_rc(&r, 0, "files pull -");
	assert_int_equal(r.out_len, sizeof blob);
	assert_memory_equal(r.out, blob, sizeof blob);
	ctl_result_free(&r);

	/* the guest sees the bytes too */
	r = RUN(key, "exec", id, "--", "wc", "-c", "blob.bin");
	expect_in(r.out, "70000", "guest sees pushed file");
	ctl_result_free(&r);

	char missing[320];
	snprintf(missing, sizeof missing, "%s/never.bin", mock.dir);
	r = RUN(key, "files", "pull", id, "/workspace/nope.bin", missing);
	expect_rc(&r, 1, "pull missing");
	expect_in(r.err, "NotFoundError: HTTP 404", "pull missing");
	ctl_result_free(&r);
	struct stat st;
	assert_int_equal(stat(missing, &st), -1); /* no half file left behind */
}

/* ---- error mapping ---- */

static void add_fault(const char *json)
{
	ctl_result r = RUN(NULL, "mock", "faults", "add", json);
	expect_rc(&r, 0, json);
	ctl_result_free(&r);
}

static void errors_map_to_sdk_classes(void **state)
{
	(void)state;
	const char *key = "key-errors";
	ctl_result r = RUN(key, "get", "sb-01HZZZZZZZZZZZZZZZZZZZZZZZ");
	expect_rc(&r, 1, "get missing");
	expect_in(r.err, "sbxctl: NotFoundError: HTTP 404 from GET /v1/sandboxes/sb-01HZZZZZZZZZZZZZZZZZZZZZZZ",
		  "404");
	expect_in(r.err, "request id ", "404 carries the request id");
	/* issue 19 item 22: the server's {"error": "..."} is the message, not a
	 * field called error ("...NotFoundError...: error: sandbox not found") */
	if (strstr(r.err, ": error:") != NULL)
		fail_msg("404 message says error twice: %s", r.err);
	ctl_result_free(&r);

	r = RUN(NULL, "whoami");
	expect_rc(&r, 1, "no key");
	expect_in(r.err, "AuthError: HTTP 401", "401");
	/* issue 19 item 22: and names the settings that were missing */
	expect_in(r.err, "--api-key", "401 without a key names --api-key");
	expect_in(r.err, "CREATEOS_SANDBOX_API_KEY", "401 without a key names the variable");
	ctl_result_free(&r);

	/* another tenant's sandbox is a 404, not a 403 */
	char id[64];
	create_sandbox(key, id, sizeof id, NULL);
	r = RUN("key-other", "get", id);
	expect_rc(&r, 1, "other tenant");
	expect_in(r.err, "NotFoundError: HTTP 404", "other tenant");
	ctl_result_free(&r);

	add_fault("{\"match\":{\"method\":\"POST\",\"path\":\"/v1/sandboxes\",\"tenant\":\"key-errors\"},"
		  "\"fire\":{\"times\":1},\"action\":{\"kind\":\"http\",\"status\":503,\"retry_after\":7,"
		  "\"message\":\"no host with capacity\"}}");
	r = RUN(key, "create", "--shape", "s-1vcpu-1gb");
	expect_rc(&r, 1, "503");
	expect_in(r.err, "sbxctl: ServerError: HTTP 503 from POST /v1/sandboxes: no host with capacity", "503");
	expect_in(r.err, "retry after 7s", "503 retry-after");
	ctl_result_free(&r);
	r = RUN(key, "--json", "create", "--shape", "s-1vcpu-1gb");
	expect_rc(&r, 0, "fault fired once only");
	ctl_result_free(&r);

	add_fault("{\"match\":{\"path\":\"/v1/whoami\",\"tenant\":\"key-errors\"},\"fire\":{\"times\":1},"
		  "\"action\":{\"kind\":\"http\",\"status\":429,\"retry_after\":3}}");
	r = RUN(key, "--json", "whoami");
	expect_rc(&r, 1, "429");
	cJSON *root = cJSON_Parse(r.err);
	cJSON *e = cJSON_GetObjectItem(root, "error");
	if (e == NULL)
		fail_msg("--json error is not {\"error\":...}: %s", r.err);
	assert_string_equal(cJSON_GetObjectItem(e, "class")->valuestring, "RateLimitError");
	assert_int_equal(cJSON_GetObjectItem(e, "status")->valueint, 429);
	assert_int_equal(cJSON_GetObjectItem(e, "retry_after")->valueint, 3);
	assert_true(cJSON_IsString(cJSON_GetObjectItem(e, "request_id")));
	assert_string_equal(r.out, "");
	cJSON_Delete(root);
	ctl_result_free(&r);

	add_fault("{\"match\":{\"path\":\"/v1/whoami\",\"tenant\":\"key-errors\"},\"fire\":{\"times\":1},"
		  "\"action\":{\"kind\":\"http\",\"status\":402}}");
	r = RUN(key, "whoami");
	expect_in(r.err, "PaymentRequiredError: HTTP 402", "402");
	ctl_result_free(&r);
	add_fault("{\"match\":{\"path\":\"/v1/whoami\",\"tenant\":\"key-errors\"},\"fire\":{\"times\":1},"
		  "\"action\":{\"kind\":\"http\",\"status\":422,\"code\":\"BAD_THING\",\"message\":\"nope\"}}");
	r = RUN(key, "whoami");
	expect_in(r.err, "ValidationError: HTTP 422", "422");
	expect_in(r.err, "code BAD_THING", "422 code");
	ctl_result_free(&r);
	add_fault("{\"match\":{\"path\":\"/v1/whoami\",\"tenant\":\"key-errors\"},\"fire\":{\"times\":1},"
		  "\"action\":{\"kind\":\"reset\"}}");
	r = RUN(key, "whoami");
	expect_rc(&r, 1, "reset");
	expect_in(r.err, "ConnectionError", "reset");
	ctl_result_free(&r);
	add_fault("{\"match\":{\"path\":\"/v1/whoami\",\"tenant\":\"key-errors\"},\"fire\":{\"times\":1},"
		  "\"action\":{\"kind\":\"malformed_json\"}}");
	r = RUN(key, "whoami");
	expect_rc(&r, 1, "malformed");
	expect_in(r.err, "ProtocolError", "malformed json");
	ctl_result_free(&r);
	struct {
		const char *kind;
		const char *cls;
		const char *msg;
	} transport[] = {
		{"close", "ConnectionError", "on GET /v1/whoami"},
		{"empty_200", "ProtocolError", "empty body in an HTTP 200 answer"},
		{"truncated", "ConnectionError", "connection broke during the HTTP 200 answer"},
		{"garbage", "ProtocolError", "malformed JSON"},
	};
	for (size_t i = 0; i < sizeof transport / sizeof transport[0]; i++) {
		char rule[256];
		snprintf(rule, sizeof rule,
			 "{\"match\":{\"path\":\"/v1/whoami\",\"tenant\":\"key-errors\"},\"fire\":{\"times\":1},"
			 "\"action\":{\"kind\":\"%s\"}}",
			 transport[i].kind);
		add_fault(rule);
		r = RUN(key, "whoami");
		expect_rc(&r, 1, transport[i].kind);
		expect_in(r.err, transport[i].cls, transport[i].kind);
		expect_in(r.err, transport[i].msg, transport[i].kind);
		ctl_result_free(&r);
	}
	add_fault("{\"match\":{\"path\":\"/v1/whoami\",\"tenant\":\"key-errors\"},\"fire\":{\"times\":1},"
		  "\"action\":{\"kind\":\"hang\",\"max_ms\":5000}}");
	r = RUN(key, "--timeout", "300ms", "whoami");
	expect_rc(&r, 1, "hang");
	expect_in(r.err, "TimeoutError", "hang");
	ctl_result_free(&r);

	/* the cap: 5 concurrent sandboxes (this tenant has 2) -> 403 QUOTA_EXCEEDED */
	for (int i = 0; i < 3; i++) {
		char more[64];
		create_sandbox(key, more, sizeof more, NULL);
	}
	r = RUN(key, "create", "--shape", "s-1vcpu-1gb");
	expect_rc(&r, 1, "over the cap");
	expect_in(r.err, "PermissionError: HTTP 403", "cap");
	expect_in(r.err, "QUOTA_EXCEEDED", "cap code");
	ctl_result_free(&r);
	r = RUN(NULL, "mock", "faults", "clear");
	ctl_result_free(&r);
}

/* ---- admin ---- */

static void mock_faults_add_ls_rm_clear(void **state)
{
	(void)state;
	char file[320];
	snprintf(file, sizeof file, "%s/rules.json", mock.dir);
	FILE *f = fopen(file, "w");
	fputs("{\"rules\":[{\"name\":\"slow-exec\",\"match\":{\"method\":\"POST\",\"path\":\"/v1/sandboxes/{id}/exec\"},"
	      "\"action\":{\"kind\":\"latency\",\"dist\":\"fixed\",\"ms\":1}},"
	      "{\"name\":\"flaky-ls\",\"match\":{\"path\":\"/v1/shapes\"},\"fire\":{\"after\":1},"
	      "\"action\":{\"kind\":\"http\",\"status\":500}}]}",
	      f);
	fclose(f);
	char at[330];
	snprintf(at, sizeof at, "@%s", file);
	ctl_result r = RUN(NULL, "--json", "mock", "faults", "add", at);
	expect_rc(&r, 0, "faults add @file");
	cJSON *v = json_out(&r, "faults add");
	cJSON *ids = cJSON_GetObjectItem(v, "ids");
	assert_int_equal(cJSON_GetArraySize(ids), 2);
	char first[64];
	cJSON *id0 = cJSON_GetArrayItem(ids, 0);
	if (cJSON_IsString(id0))
		snprintf(first, sizeof first, "%s", id0->valuestring);
	else
		snprintf(first, sizeof first, "%d", id0->valueint);
	cJSON_Delete(v);
	ctl_result_free(&r);

	r = RUN(NULL, "shapes");
	expect_rc(&r, 0, "first shapes passes (after:1)");
	ctl_result_free(&r);
	r = RUN(NULL, "shapes");
	expect_rc(&r, 1, "second shapes fails");
	expect_in(r.err, "ServerError: HTTP 500", "fault fired");
	ctl_result_free(&r);

	r = RUN(NULL, "mock", "faults", "ls");
	expect_rc(&r, 0, "faults ls");
	expect_in(r.out, "MATCHED", "faults ls header");
	expect_in(r.out, "slow-exec", "faults ls");
	expect_in(r.out, "flaky-ls", "faults ls");
	expect_in(r.out, "after=1", "faults ls fire");
	expect_in(r.out, "http 500", "faults ls action");
	ctl_result_free(&r);

	r = RUN(NULL, "mock", "faults", "rm", first);
	expect_rc(&r, 0, "faults rm");
	ctl_result_free(&r);
	r = RUN(NULL, "mock", "faults", "ls");
	assert_null(strstr(r.out, "slow-exec"));
	ctl_result_free(&r);

	r = RUN(NULL, "mock", "faults", "add", "{not json");
	expect_rc(&r, 2, "faults add bad json");
	ctl_result_free(&r);
	r = RUN(NULL, "mock", "faults", "clear");
	expect_rc(&r, 0, "faults clear");
	ctl_result_free(&r);
	r = RUN(NULL, "--json", "mock", "faults", "ls");
	v = json_out(&r, "faults ls empty");
	assert_int_equal(cJSON_GetArraySize(v), 0);
	cJSON_Delete(v);
	ctl_result_free(&r);
	r = RUN(NULL, "--admin-token", "wrong", "mock", "faults", "ls");
	expect_rc(&r, 1, "wrong admin token");
	expect_in(r.err, "AuthError: HTTP 401", "wrong admin token");
	ctl_result_free(&r);
}

static void mock_scenario_load(void **state)
{
	(void)state;
	char file[320];
	snprintf(file, sizeof file, "%s/scenario.json", mock.dir);
	FILE *f = fopen(file, "w");
	fputs("{\"name\":\"my-scenario\",\"rules\":[{\"match\":{\"path\":\"/v1/rootfs\"},"
	      "\"action\":{\"kind\":\"http\",\"status\":502}}]}",
	      f);
	fclose(f);
	ctl_result r = RUN(NULL, "mock", "scenario", "load", file);
	expect_rc(&r, 0, "scenario load file");
	ctl_result_free(&r);
	r = RUN(NULL, "rootfs");
	expect_rc(&r, 1, "scenario rule active");
	expect_in(r.err, "ServerError: HTTP 502", "scenario rule");
	ctl_result_free(&r);
	r = RUN(NULL, "mock", "faults", "clear");
	ctl_result_free(&r);
	/* a named scenario from fixtures/scenarios: the fleet is out of capacity */
	r = RUN(NULL, "--json", "mock", "scenario", "load", "capacity-exhausted");
	expect_rc(&r, 0, "scenario load name");
	ctl_result_free(&r);
	r = RUN("key-scenario", "create", "--shape", "s-1vcpu-1gb");
	expect_rc(&r, 1, "capacity-exhausted create");
	expect_in(r.err, "ServerError: HTTP 503 from POST /v1/sandboxes", "capacity-exhausted");
	ctl_result_free(&r);
	r = RUN(NULL, "mock", "faults", "clear");
	ctl_result_free(&r);
	r = RUN(NULL, "mock", "scenario", "load", "no-such-scenario");
	expect_rc(&r, 1, "unknown scenario");
	expect_in(r.err, "HTTP 4", "unknown scenario");
	ctl_result_free(&r);
}

static void mock_journal_filters_and_follow(void **state)
{
	(void)state;
	const char *key = "key-journal";
	ctl_result r = RUN(key, "whoami");
	ctl_result_free(&r);
	r = RUN(key, "get", "sb-missing");
	ctl_result_free(&r);
	r = RUN(NULL, "mock", "journal", "--tenant", key);
	expect_rc(&r, 0, "journal");
	expect_in(r.out, "SEQ", "journal header");
	expect_in(r.out, "/v1/whoami", "journal");
	expect_in(r.out, "/v1/sandboxes/sb-missing", "journal");
	ctl_result_free(&r);
	r = RUN(NULL, "--json", "mock", "journal", "--tenant", key, "--status", "404");
	cJSON *v = json_out(&r, "journal --status");
	cJSON *entries = cJSON_GetObjectItem(v, "entries");
	assert_int_equal(cJSON_GetArraySize(entries), 1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(entries, 0), "status")->valueint, 404);
	long next = (long)cJSON_GetObjectItem(v, "next_seq")->valuedouble;
	cJSON_Delete(v);
	ctl_result_free(&r);
	char since[32];
	snprintf(since, sizeof since, "%ld", next);
	r = RUN(NULL, "--json", "mock", "journal", "--since", since, "--tenant", key);
	v = json_out(&r, "journal --since");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(v, "entries")), 0);
	cJSON_Delete(v);
	ctl_result_free(&r);

	/* --follow prints entries that happen after it started, then stops on SIGINT */
	int fd = -1;
	pid_t pid = ctl_spawn(ctl_bin, &mock, NULL,
			      (const char *const[]){"mock", "journal", "--follow", "--tenant", key, "--since",
						    since, "--interval", "50ms", NULL},
			      &fd);
	char buf[8192];
	size_t len = 0;
	assert_true(read_until(fd, buf, sizeof buf, &len, "SEQ", 10000));
	r = RUN(key, "get", "sb-followed");
	ctl_result_free(&r);
	bool seen = read_until(fd, buf, sizeof buf, &len, "/v1/sandboxes/sb-followed", 10000);
	kill(pid, SIGINT);
	int rc = wait_exit(pid, 10000);
	close(fd);
	if (!seen)
		fail_msg("journal --follow did not show the new request:\n%s", buf);
	assert_int_equal(rc, 0);
}

/* A mock started with --no-journal: the empty table says why (issue 19). */
static void mock_journal_says_when_off(void **state)
{
	(void)state;
	mock_proc off;
	assert_int_equal(mock_start_with(&off, mock_bin, "--no-journal"), 0);
	ctl_result r = ctl_exec(ctl_bin, &off, NULL, (const char *const[]){"mock", "journal", NULL});
	expect_rc(&r, 0, "journal");
	expect_in(r.err, "the journal is off", "journal --no-journal");
	ctl_result_free(&r);
	r = RUN(NULL, "mock", "journal");
	expect_rc(&r, 0, "journal");
	assert_null(strstr(r.err, "journal is off"));
	ctl_result_free(&r);
	/* not mock_stop_check: that one reaps every child, the group's mock too */
	kill(off.pid, SIGTERM);
	assert_int_equal(wait_exit(off.pid, 10000), 0);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", off.dir);
	assert_int_equal(system(cmd), 0);
}

static void mock_state_clock_reset(void **state)
{
	(void)state;
	const char *key = "key-clock";
	char id[64];
	create_sandbox(key, id, sizeof id, (const char *const[]){"--auto-pause", "60", NULL});
	ctl_result r = RUN(NULL, "mock", "state", "--tenant", key);
	expect_rc(&r, 0, "mock state");
	expect_in(r.out, "clock_ms", "mock state");
	expect_in(r.out, id, "mock state lists the sandbox");
	ctl_result_free(&r);

	r = RUN(NULL, "--json", "mock", "state");
	cJSON *v = json_out(&r, "state");
	double before = cJSON_GetObjectItem(v, "clock_ms")->valuedouble;
	cJSON_Delete(v);
	ctl_result_free(&r);
	r = RUN(NULL, "--json", "mock", "clock", "advance", "1m1s");
	expect_rc(&r, 0, "clock advance");
	v = json_out(&r, "clock advance");
	assert_true(cJSON_GetObjectItem(v, "clock_ms")->valuedouble >= before + 61000);
	cJSON_Delete(v);
	ctl_result_free(&r);
	/* auto-pause is due after 60 idle seconds of mock time */
	assert_string_equal(sandbox_status(key, id), "paused");
	r = RUN(NULL, "mock", "clock", "advance", "1500ms");
	expect_rc(&r, 0, "clock advance human");
	expect_in(r.out, "advanced by 1500 ms", "clock advance human");
	ctl_result_free(&r);

	r = RUN(NULL, "mock", "reset");
	expect_rc(&r, 0, "reset");
	ctl_result_free(&r);
	r = RUN(NULL, "--json", "mock", "state");
	v = json_out(&r, "state after reset");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(v, "tenants")), 0);
	cJSON_Delete(v);
	ctl_result_free(&r);
	r = RUN(key, "get", id);
	expect_rc(&r, 1, "get after reset");
	ctl_result_free(&r);
}

static void mock_stops_leaving_no_process(void **state)
{
	(void)state;
	/* a sandbox with a running background command when the mock stops */
	char id[64];
	create_sandbox("key-last", id, sizeof id, NULL);
	ctl_result r = RUN("key-last", "exec", id, "--", "sh", "-c", "sleep 300 >/dev/null 2>&1 &");
	ctl_result_free(&r);
	assert_int_equal(mock_stop_check(&mock), 0);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SBXCTL SBX_MOCK\n", argv[0]);
		return 2;
	}
	ctl_bin = argv[1];
	mock_bin = argv[2];
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(whoami_shapes_rootfs),
		cmocka_unit_test(create_get_ls_rm),
		cmocka_unit_test(egress_test_shows_kernel_next_to_engine),
		cmocka_unit_test(ls_follows_every_page),
		cmocka_unit_test(exec_buffered_passes_output_and_exit_code),
		cmocka_unit_test(exec_stream_prints_output_as_it_arrives),
		cmocka_unit_test(pause_fork_resume_with_wait),
		cmocka_unit_test(egress_show_set_clear),
		cmocka_unit_test(files_push_pull_are_binary_safe),
		cmocka_unit_test(errors_map_to_sdk_classes),
		cmocka_unit_test(mock_faults_add_ls_rm_clear),
		cmocka_unit_test(mock_scenario_load),
		cmocka_unit_test(mock_journal_filters_and_follow),
		cmocka_unit_test(mock_journal_says_when_off),
		cmocka_unit_test(mock_state_clock_reset),
		cmocka_unit_test(mock_stops_leaving_no_process),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

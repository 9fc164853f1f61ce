/* Integration: the control plane over loopback (embedded mock on port 0,
 * driven with libcurl): sandboxes CRUD, auth, validation, exec, files,
 * lifecycle, egress, caps, pagination, the journal and the admin API. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock_http.h"
#include "sbx/mock.h"

static sbx_mock *g_mock;
static const char *U;
static const char *TOK;

static int group_setup(void **state)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};

	(void)state;
	curl_global_init(CURL_GLOBAL_ALL);
	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.admin_token = "admintok";
	cfg.self_listen = "127.0.0.1:0";
	g_mock = sbx_mock_start(&cfg, &err);
	if (g_mock == NULL) {
		fprintf(stderr, "mock start: %s\n", err.msg);
		return -1;
	}
	U = sbx_mock_url(g_mock);
	TOK = sbx_mock_admin_token(g_mock);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	sbx_mock_stop(g_mock);
	curl_global_cleanup();
	return 0;
}

static int reset(void **state)
{
	th_resp r;

	(void)state;
	th_admin(U, TOK, "POST", "/_mock/reset", NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	return 0;
}

/* Creates a sandbox and copies its id; asserts 200. */
static void create(const char *key, const char *body, char *id, size_t cap)
{
	th_resp r;

	th_json(U, key, "POST", "/v1/sandboxes", body, &r);
	if (r.status != 200)
		fail_msg("create %s: expected 200, got %ld: %s", body, r.status, sbx_strbuf_str(&r.body));
	assert_non_null(th_data_str(&r, "id"));
	snprintf(id, cap, "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
}

static const char *fail_field(const th_resp *r, const char *field)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(r->json, "data");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, field);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void expect_status(const th_resp *r, long want, const char *what)
{
	if (r->status != want)
		fail_msg("%s: expected %ld, got %ld: %s", what, want, r->status, sbx_strbuf_str(&r->body));
}

static void create_get_list_delete_roundtrip(void **state)
{
	char id[64], path[128], hdr[128];
	th_resp r;
	const cJSON *d;

	(void)state;
	th_json(U, "k1", "POST", "/v1/sandboxes",
		"{\"shape\":\"s-1vcpu-1gb\",\"name\":\"lf-one\",\"envs\":{\"A\":\"1\"}}", &r);
	expect_status(&r, 200, "create");
	assert_true(th_header(&r, "X-Request-Id", hdr, sizeof(hdr)));
	assert_true(th_header(&r, "Content-Type", hdr, sizeof(hdr)));
	assert_string_equal(hdr, "application/json");
	d = cJSON_GetObjectItem(r.json, "data");
	assert_null(cJSON_GetObjectItem(d, "status")); /* the create response has no status */
	assert_string_equal(th_data_str(&r, "rootfs"), "devbox:1");
	assert_int_equal(cJSON_GetObjectItem(d, "bandwidth_quota_bytes")->valuedouble, 5368709120.0);
	assert_memory_equal(th_data_str(&r, "id"), "sb-", 3);
	assert_int_equal(strlen(th_data_str(&r, "id")), 29);
	snprintf(id, sizeof(id), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 200, "get");
	assert_string_equal(th_data_str(&r, "status"), "running");
	assert_string_equal(th_data_str(&r, "name"), "lf-one");
	d = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "envs");
	assert_string_equal(cJSON_GetArrayItem(d, 0)->valuestring, "A"); /* names, never values */
	th_resp_free(&r);

	th_json(U, "k1", "GET", "/v1/sandboxes", NULL, &r);
	expect_status(&r, 200, "list");
	d = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "pagination");
	assert_int_equal(cJSON_GetObjectItem(d, "total")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(d, "limit")->valueint, 50);
	th_resp_free(&r);

	th_json(U, "k1", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "delete");
	assert_string_equal(th_data_str(&r, "status"), "destroyed");
	th_resp_free(&r);
	th_json(U, "k1", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "repeat delete");
	assert_string_equal(th_data_str(&r, "status"), "destroyed");
	th_resp_free(&r);
	/* a destroyed name is free again */
	create("k1", "{\"shape\":\"s-1vcpu-1gb\",\"name\":\"lf-one\"}", id, sizeof(id));
}

static void auth_rules(void **state)
{
	char id[64], path[128];
	th_req rq = {0};
	th_resp r;

	(void)state;
	th_json(U, NULL, "GET", "/v1/sandboxes", NULL, &r);
	expect_status(&r, 401, "no key");
	th_resp_free(&r);
	rq.url = U;
	rq.path = "/v1/whoami";
	rq.extra_header = "Authorization: Bearer k1";
	th_do(&rq, &r);
	expect_status(&r, 401, "bearer");
	th_resp_free(&r);
	/* X-Auth-Token wins over X-Api-Key */
	rq.method = "POST";
	rq.path = "/v1/sandboxes";
	rq.key = "other";
	rq.extra_header = "X-Auth-Token: owner";
	rq.body = "{\"shape\":\"s-1vcpu-256mb\"}";
	th_do(&rq, &r);
	expect_status(&r, 200, "create with X-Auth-Token");
	snprintf(id, sizeof(id), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, "other", "GET", path, NULL, &r);
	expect_status(&r, 404, "another key's sandbox");
	th_resp_free(&r);
	th_json(U, "owner", "GET", path, NULL, &r);
	expect_status(&r, 200, "owner");
	th_resp_free(&r);
	/* unauthenticated catalog */
	th_json(U, NULL, "GET", "/v1/shapes", NULL, &r);
	expect_status(&r, 200, "shapes");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "data")), 11);
	th_resp_free(&r);
}

static void validation_names_the_field(void **state)
{
	static const struct {
		const char *body;
		long status;
		const char *field;
	} cases[] = {
		{"{\"shape\":\"s-nope\"}", 400, "shape"},
		{"{}", 400, "shape"},
		{"{\"shape\":\"s-1vcpu-1gb\",\"rootfs\":\"win:95\"}", 400, "rootfs"},
		{"{\"shape\":\"s-1vcpu-1gb\",\"name\":\"abcdefghijklmnopqrstuvw\"}", 400, "name"},
		{"{\"shape\":\"s-1vcpu-1gb\",\"region\":\"mars\"}", 400, "region"},
		{"{\"shape\":\"s-1vcpu-1gb\",\"auto_pause_after_seconds\":59}", 400, "auto_pause_after_seconds"},
		{"{\"shape\":\"s-1vcpu-1gb\",\"bandwidth_quota_bytes\":10}", 400, "bandwidth_quota_bytes"},
		{"{\"shape\":\"s-1vcpu-1gb\",\"envs\":{\"1BAD\":\"x\"}}", 400, "envs"},
		{"{\"shape\":\"s-1vcpu-1gb\",\"disk_mib\":\"big\"}", 400, "disk_mib"},
		{"{\"shape\":\"s-1vcpu-1gb\",\"egress\":[\"1.2.3.4:70000\"]}", 400, "egress"},
		{"{\"shape\":1}", 400, "shape"},
		{"[1,2]", 400, "body"},
		{"{\"shape\":", 400, "body"},
	};
	th_resp r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		th_json(U, "k1", "POST", "/v1/sandboxes", cases[i].body, &r);
		expect_status(&r, cases[i].status, cases[i].body);
		if (fail_field(&r, cases[i].field) == NULL)
			fail_msg("%s: data.%s missing in %s", cases[i].body, cases[i].field,
				 sbx_strbuf_str(&r.body));
		th_resp_free(&r);
	}
	th_json(U, "k1", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\",\"name\":\"dup\"}", &r);
	expect_status(&r, 200, "first dup");
	th_resp_free(&r);
	th_json(U, "k1", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\",\"name\":\"dup\"}", &r);
	expect_status(&r, 409, "name clash");
	th_resp_free(&r);
}

static void routes_methods_and_limits(void **state)
{
	th_req rq = {0};
	th_resp r;
	char *big;
	char allow[64];

	(void)state;
	th_json(U, "k1", "GET", "/v1/nothing", NULL, &r);
	expect_status(&r, 404, "unknown route");
	assert_string_equal(cJSON_GetObjectItem(r.json, "status")->valuestring, "fail");
	th_resp_free(&r);
	th_json(U, "k1", "PUT", "/v1/sandboxes", "{}", &r);
	expect_status(&r, 405, "wrong method");
	assert_true(th_header(&r, "Allow", allow, sizeof(allow)));
	assert_non_null(strstr(allow, "POST"));
	th_resp_free(&r);
	big = malloc(2 * 1024 * 1024);
	assert_non_null(big);
	memset(big, ' ', 2 * 1024 * 1024);
	big[0] = '{';
	big[2 * 1024 * 1024 - 1] = '}';
	rq.method = "POST";
	rq.url = U;
	rq.path = "/v1/sandboxes";
	rq.key = "k1";
	rq.body = big;
	rq.body_len = 2 * 1024 * 1024;
	th_do(&rq, &r);
	expect_status(&r, 413, "oversized JSON");
	th_resp_free(&r);
	free(big);
	th_json(U, "k1", "GET", "/v1/shapes?limit=9999", NULL, &r);
	expect_status(&r, 200, "limit clamp");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"),
								   "pagination"), "limit")->valueint, 500);
	th_resp_free(&r);
	th_json(U, "k1", "GET", "/v1/shapes?limit=-1", NULL, &r);
	expect_status(&r, 400, "bad limit");
	th_resp_free(&r);
	th_json(U, "k1", "GET", "/v1/shapes?limit=4&offset=8", NULL, &r);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"),
								   "pagination"), "count")->valueint, 3);
	th_resp_free(&r);
}

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
	if (strcmp(sbx_mock_guest_mode(g_mock), "ns") == 0)
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
	/* cmd is an executable, not a shell line */
	th_json(U, "k1", "POST", path, "{\"cmd\":\"echo hi | cat\"}", &r);
	expect_status(&r, 200, "shell line");
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	assert_non_null(cJSON_GetObjectItem(res, "error"));
	assert_int_not_equal(cJSON_GetObjectItem(res, "exit_code")->valueint, 0);
	th_resp_free(&r);
	/* timeout kills the group */
	th_json(U, "k1", "POST", path, "{\"cmd\":\"sleep\",\"args\":[\"30\"],\"timeout_ms\":300}", &r);
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	assert_int_equal(cJSON_GetObjectItem(res, "exit_code")->valueint, 124);
	assert_true(r.seconds < 10);
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

/* ns mode: the guests live in a PID namespace of their own. They see and
 * signal only guests, so even `kill -9 -1` (every process the caller may
 * signal) stays inside: the mock and this test outlive it, while a
 * background process started by an earlier exec does not. */
static void guests_have_their_own_pid_namespace(void **state)
{
	char id[64], probe[96], *out;
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
	out = exec_stdout(id, "sh", probe);
	assert_string_equal(out, ""); /* the sleep is gone */
	free(out);
	th_json(U, "k1", "GET", "/v1/whoami", NULL, &r); /* the mock is not */
	expect_status(&r, 200, "whoami after kill -9 -1");
	th_resp_free(&r);
}

/* The sandbox's status, polled until it is want (or 5 s pass). */
static bool wait_status(const char *id, const char *want)
{
	char path[128];
	bool ok = false;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	for (int i = 0; i < 250 && !ok; i++) {
		th_resp r;
		const char *st;

		th_json(U, "k1", "GET", path, NULL, &r);
		st = th_data_str(&r, "status");
		ok = st != NULL && strcmp(st, want) == 0;
		th_resp_free(&r);
		if (!ok)
			usleep(20000);
	}
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
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/out", id);
	for (int i = 0; i < 250; i++) {
		th_json(U, "k1", "GET", path, NULL, &r);
		if (r.status == 200 && r.body.len > 0)
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

static void files_roundtrip_and_confinement(void **state)
{
	char id[64], path[256];
	unsigned char bin[300];
	th_req rq = {0};
	th_resp r;

	(void)state;
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)(i * 7);
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/d/x.bin", id);
	rq.method = "PUT";
	rq.url = U;
	rq.path = path;
	rq.key = "k1";
	rq.body = (const char *)bin;
	rq.body_len = sizeof(bin);
	rq.ctype = "application/octet-stream";
	th_do(&rq, &r);
	expect_status(&r, 200, "upload");
	th_resp_free(&r);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 200, "download");
	assert_int_equal(r.body.len, sizeof(bin));
	assert_memory_equal(r.body.data, bin, sizeof(bin));
	th_resp_free(&r);
	/* the guest sees the same file at /workspace */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	th_json(U, "k1", "POST", path, "{\"cmd\":\"stat\",\"args\":[\"-c\",\"%s\",\"/workspace/d/x.bin\"]}", &r);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result"), "stdout")->valuestring, "300\n");
	th_resp_free(&r);
	th_json(U, "k1", "POST", path, "{\"cmd\":\"ln\",\"args\":[\"-s\",\"/etc/passwd\",\"/workspace/link\"]}", &r);
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/../../etc/passwd", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 400, "dotdot");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/link", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 400, "symlink");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=relative.txt", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 400, "relative");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/none", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 404, "missing");
	th_resp_free(&r);
}

static void pause_fork_resume_destroy(void **state)
{
	char id[64], fid[64], path[160], hdr[32];
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/f", id);
	th_json(U, "k1", "PUT", path, "data\n", &r);
	expect_status(&r, 200, "upload");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/fork", id);
	th_json(U, "k1", "POST", path, "{}", &r);
	expect_status(&r, 409, "fork from running");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/pause", id);
	th_json(U, "k1", "POST", path, NULL, &r);
	expect_status(&r, 202, "pause");
	assert_string_equal(th_data_str(&r, "status"), "pausing");
	assert_true(th_header(&r, "X-Poll-After", hdr, sizeof(hdr)));
	th_resp_free(&r);
	th_json(U, "k1", "POST", path, NULL, &r);
	expect_status(&r, 200, "pause again");
	assert_string_equal(th_data_str(&r, "status"), "paused");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	th_json(U, "k1", "POST", path, "{\"cmd\":\"true\"}", &r);
	expect_status(&r, 409, "exec on paused");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/fork", id);
	th_json(U, "k1", "POST", path, "{}", &r);
	expect_status(&r, 200, "fork");
	assert_string_equal(th_data_str(&r, "forked_from"), id);
	snprintf(fid, sizeof(fid), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", fid);
	th_json(U, "k1", "POST", path, "{\"cmd\":\"cat\",\"args\":[\"/workspace/f\"]}", &r);
	expect_status(&r, 200, "exec in fork");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result"), "stdout")->valuestring, "data\n");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/resume", id);
	th_json(U, "k1", "POST", path, NULL, &r);
	expect_status(&r, 202, "resume");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	assert_string_equal(th_data_str(&r, "status"), "running");
	th_resp_free(&r);
	th_json(U, "k1", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "destroy");
	th_resp_free(&r);
}

static void egress_get_put_and_oracle(void **state)
{
	char id[64], path[160], body[256];
	th_resp r;
	const cJSON *eg;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/egress", id);
	th_json(U, "k1", "PUT", path, "{\"egress\":[\"PyPI.org.\",\"10.1.2.3/8:443\"]}", &r);
	expect_status(&r, 200, "put egress");
	eg = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "egress");
	assert_string_equal(cJSON_GetArrayItem(eg, 0)->valuestring, "pypi.org");
	assert_string_equal(cJSON_GetArrayItem(eg, 1)->valuestring, "10.0.0.0/8:443");
	th_resp_free(&r);
	th_json(U, "k1", "PUT", path, "{\"egress\":[\"ok.com\",\"*foo.com\"]}", &r);
	expect_status(&r, 400, "bad rule");
	assert_non_null(strstr(fail_field(&r, "egress"), "rule 1"));
	th_resp_free(&r);
	snprintf(body, sizeof(body), "{\"sandbox_id\":\"%s\",\"dest\":\"10.9.9.9:443\"}", id);
	th_admin(U, TOK, "POST", "/_mock/egress/check", body, &r);
	expect_status(&r, 200, "egress check");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "allowed")));
	assert_string_equal(th_data_str(&r, "reason"), "rule");
	th_resp_free(&r);
	snprintf(body, sizeof(body), "{\"sandbox_id\":\"%s\",\"dest\":\"pypi.org@1.2.3.4:443\"}", id);
	th_admin(U, TOK, "POST", "/_mock/egress/check", body, &r);
	/* default host rule mode is observed: host rules match nothing */
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "allowed")));
	th_resp_free(&r);
	th_json(U, "k1", "PUT", path, "{\"egress\":null}", &r);
	eg = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "egress");
	assert_int_equal(cJSON_GetArraySize(eg), 0);
	th_resp_free(&r);
	/* A NUL escape must not shorten "pypi.org\u0000.evil" into "pypi.org". */
	th_json(U, "k1", "PUT", path, "{\"egress\":[\"pypi.org\\u0000.evil\"]}", &r);
	expect_status(&r, 400, "egress with a NUL escape");
	assert_non_null(strstr(fail_field(&r, "body"), "u0000"));
	th_resp_free(&r);
	th_json(U, "k1", "GET", path, NULL, &r);
	eg = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "egress");
	assert_int_equal(cJSON_GetArraySize(eg), 0); /* the bad PUT changed nothing */
	th_resp_free(&r);
}

static void caps_credit_and_settings(void **state)
{
	char id[64];
	th_resp r;

	(void)state;
	for (int i = 0; i < 5; i++)
		create("capkey", "{\"shape\":\"s-1vcpu-256mb\"}", id, sizeof(id));
	th_json(U, "capkey", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-256mb\"}", &r);
	expect_status(&r, 403, "over cap");
	assert_string_equal(fail_field(&r, "code"), "QUOTA_EXCEEDED");
	th_resp_free(&r);
	th_admin(U, TOK, "PUT", "/_mock/settings", "{\"cap_status\":429,\"cap_code\":\"TOO_MANY\"}", &r);
	expect_status(&r, 200, "settings");
	th_resp_free(&r);
	th_json(U, "capkey", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-256mb\"}", &r);
	expect_status(&r, 429, "configured over-cap status");
	assert_string_equal(fail_field(&r, "code"), "TOO_MANY");
	th_resp_free(&r);
	th_admin(U, TOK, "PUT", "/_mock/settings",
		 "{\"cap_status\":403,\"cap_code\":\"QUOTA_EXCEEDED\",\"credit\":false}", &r);
	th_resp_free(&r);
	th_json(U, "fresh", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-256mb\"}", &r);
	expect_status(&r, 402, "no credit");
	th_resp_free(&r);
	th_admin(U, TOK, "PUT", "/_mock/settings", "{\"credit\":true}", &r);
	th_resp_free(&r);
	th_admin(U, TOK, "PUT", "/_mock/settings", "{\"cap_status\":200}", &r);
	expect_status(&r, 400, "bad setting");
	th_resp_free(&r);
	th_admin(U, "wrong", "GET", "/_mock/settings", NULL, &r);
	expect_status(&r, 401, "admin token");
	th_resp_free(&r);
}

static void auto_pause_by_virtual_clock(void **state)
{
	char id[64], path[128];
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\",\"auto_pause_after_seconds\":60}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_admin(U, TOK, "POST", "/_mock/clock/advance", "{\"ms\":30000}", &r);
	th_resp_free(&r);
	th_json(U, "k1", "GET", path, NULL, &r);
	assert_string_equal(th_data_str(&r, "status"), "running");
	th_resp_free(&r);
	th_admin(U, TOK, "POST", "/_mock/clock/advance", "{\"ms\":31000}", &r);
	th_resp_free(&r);
	th_json(U, "k1", "GET", path, NULL, &r);
	assert_string_equal(th_data_str(&r, "status"), "paused");
	th_resp_free(&r);
}

static void journal_records_and_filters(void **state)
{
	char id[64], path[160];
	th_resp r;
	const cJSON *d, *e;
	char since[64];
	int first;

	(void)state;
	th_admin(U, TOK, "DELETE", "/_mock/journal", NULL, &r);
	th_resp_free(&r);
	create("jk", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s?x=1", id);
	th_json(U, "jk", "GET", path, NULL, &r);
	th_resp_free(&r);
	th_json(U, "other", "GET", "/v1/sandboxes/sb-nope", NULL, &r);
	th_resp_free(&r);
	th_admin(U, TOK, "GET", "/_mock/journal?tenant=jk", NULL, &r);
	expect_status(&r, 200, "journal");
	d = cJSON_GetObjectItem(r.json, "data");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "entries")), 2);
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "entries"), 0);
	assert_string_equal(cJSON_GetObjectItem(e, "method")->valuestring, "POST");
	assert_string_equal(cJSON_GetObjectItem(e, "sandbox_id")->valuestring, id);
	assert_int_equal(cJSON_GetObjectItem(e, "status")->valueint, 200);
	first = cJSON_GetObjectItem(e, "seq")->valueint;
	/* each request came on a connection of its own (a curl handle each):
	 * the serials say so */
	assert_true(cJSON_GetObjectItem(e, "conn")->valuedouble > 0);
	assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "entries"), 1), "conn")->valuedouble >
		    cJSON_GetObjectItem(e, "conn")->valuedouble);
	th_resp_free(&r);
	th_admin(U, TOK, "GET", "/_mock/journal/count?path=/v1/sandboxes/%7Bid%7D&status=404", NULL, &r);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "count")->valueint, 1);
	th_resp_free(&r);
	snprintf(since, sizeof(since), "/_mock/journal?since=%d&limit=1", first);
	th_admin(U, TOK, "GET", since, NULL, &r);
	d = cJSON_GetObjectItem(r.json, "data");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "entries")), 1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "entries"), 0), "seq")->valueint, first + 1);
	th_resp_free(&r);
}

static void admin_state_lists_destroyed(void **state)
{
	char id[64], path[128];
	th_resp r;
	const cJSON *sbs;

	(void)state;
	create("sk", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, "sk", "DELETE", path, NULL, &r);
	th_resp_free(&r);
	th_admin(U, TOK, "GET", "/_mock/sandboxes?tenant=sk", NULL, &r);
	sbs = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "sandboxes");
	assert_int_equal(cJSON_GetArraySize(sbs), 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(sbs, 0), "status")->valuestring, "destroyed");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(sbs, 0), "tenant")->valuestring, "sk");
	th_resp_free(&r);
	th_json(U, "sk", "GET", "/v1/sandboxes", NULL, &r);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "pagination"), "total")->valueint, 0);
	th_resp_free(&r);
	th_json(U, "sk", "GET", "/v1/sandboxes?status=destroyed", NULL, &r);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "pagination"), "total")->valueint, 1);
	th_resp_free(&r);
}

static void networks_quota(void **state)
{
	th_resp r;
	char body[64];

	(void)state;
	for (int i = 0; i < 5; i++) {
		snprintf(body, sizeof(body), "{\"name\":\"net%d\"}", i);
		th_json(U, "nk", "POST", "/v1/networks", body, &r);
		expect_status(&r, 200, "network create");
		assert_memory_equal(th_data_str(&r, "id"), "net-", 4);
		th_resp_free(&r);
	}
	th_json(U, "nk", "POST", "/v1/networks", "{\"name\":\"net5\"}", &r);
	expect_status(&r, 403, "sixth network");
	th_resp_free(&r);
	th_json(U, "nk", "GET", "/v1/networks/net3", NULL, &r);
	expect_status(&r, 200, "network by name");
	th_resp_free(&r);
	th_json(U, "nk", "DELETE", "/v1/networks/net3", NULL, &r);
	expect_status(&r, 200, "network delete");
	th_resp_free(&r);
}

/* data.<field> of a response. */
static const cJSON *data_item(const th_resp *r, const char *field)
{
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->json, "data"), field);
}

/* Disks: validation naming the field, secrets never shown, addressed by id
 * or name, per tenant, attach/detach to a running sandbox, no delete while
 * attached. */
static void disks_keep_state_and_hide_credentials(void **state)
{
	static const char good[] =
		"{\"name\":\"d1\",\"kind\":\"s3\",\"config\":{\"bucket\":\"b\",\"endpoint\":\"http://minio:9000\"},"
		"\"credentials\":{\"access_key\":\"AK\",\"secret_key\":\"TOPSECRET\"}}";
	char id[64], disk[64], path[256];
	th_resp r;

	(void)state;
	th_json(U, "dk", "POST", "/v1/disks", "{\"name\":\"d0\",\"kind\":\"nfs\"}", &r);
	expect_status(&r, 400, "disk of an unknown kind");
	assert_non_null(fail_field(&r, "kind"));
	th_resp_free(&r);
	th_json(U, "dk", "POST", "/v1/disks",
		"{\"name\":\"d0\",\"kind\":\"s3\",\"config\":{\"bucket\":\"b\",\"endpoint\":\"e\"}}", &r);
	expect_status(&r, 400, "disk without credentials");
	assert_non_null(fail_field(&r, "credentials"));
	th_resp_free(&r);
	th_json(U, "dk", "POST", "/v1/disks", good, &r);
	expect_status(&r, 200, "disk create");
	assert_null(strstr(sbx_strbuf_str(&r.body), "TOPSECRET"));
	snprintf(disk, sizeof(disk), "%s", th_data_str(&r, "id"));
	assert_int_equal(strncmp(disk, "disk_", 5), 0);
	th_resp_free(&r);
	th_json(U, "dk", "POST", "/v1/disks", good, &r);
	expect_status(&r, 409, "second disk named d1");
	th_resp_free(&r);
	th_json(U, "dk", "GET", "/v1/disks/d1", NULL, &r); /* by name */
	expect_status(&r, 200, "disk by name");
	assert_string_equal(th_data_str(&r, "id"), disk);
	assert_null(strstr(sbx_strbuf_str(&r.body), "TOPSECRET"));
	th_resp_free(&r);
	th_json(U, "other", "GET", "/v1/disks/d1", NULL, &r);
	expect_status(&r, 404, "another key's disk");
	th_resp_free(&r);
	th_json(U, "dk", "PATCH", "/v1/disks/d1", "{\"credentials\":{\"access_key\":\"\",\"secret_key\":\"x\"}}", &r);
	expect_status(&r, 400, "empty access key");
	assert_non_null(fail_field(&r, "credentials"));
	th_resp_free(&r);
	th_json(U, "dk", "PATCH", "/v1/disks/d1", "{\"credentials\":{\"access_key\":\"A2\",\"secret_key\":\"NEWSECRET\"}}", &r);
	expect_status(&r, 200, "rotate credentials");
	assert_null(strstr(sbx_strbuf_str(&r.body), "NEWSECRET"));
	th_resp_free(&r);

	create("dk", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/disks", id);
	th_json(U, "dk", "POST", path, "{\"disk_id\":\"d1\"}", &r);
	expect_status(&r, 400, "attach without mount_path");
	assert_non_null(fail_field(&r, "mount_path"));
	th_resp_free(&r);
	th_json(U, "dk", "POST", path, "{\"disk_id\":\"d1\",\"mount_path\":\"/mnt/d\"}", &r);
	expect_status(&r, 200, "attach");
	th_resp_free(&r);
	th_json(U, "dk", "GET", path, NULL, &r);
	expect_status(&r, 200, "attachments");
	assert_non_null(strstr(sbx_strbuf_str(&r.body), "/mnt/d"));
	th_resp_free(&r);
	th_json(U, "dk", "DELETE", "/v1/disks/d1", NULL, &r);
	expect_status(&r, 409, "delete an attached disk");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/disks/%s?mount_path=/mnt/d", id, disk);
	th_json(U, "dk", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "detach");
	assert_true(cJSON_IsTrue(data_item(&r, "detached")));
	th_resp_free(&r);
	th_json(U, "dk", "DELETE", "/v1/disks/d1", NULL, &r);
	expect_status(&r, 200, "delete the disk");
	assert_true(cJSON_IsTrue(data_item(&r, "deleted")));
	th_resp_free(&r);
	th_json(U, "dk", "GET", "/v1/disks/d1", NULL, &r);
	expect_status(&r, 404, "deleted disk");
	th_resp_free(&r);
}

/* Templates: pending -> building -> ready on the virtual clock (realistic
 * timing), the dockerfile only on request, logs as text and NDJSON ending
 * with a final frame, delete. */
static void templates_build_on_the_clock(void **state)
{
	char tpl[64], path[160];
	th_resp r;
	const char *body;

	(void)state;
	th_admin(U, TOK, "PUT", "/_mock/settings", "{\"timing\":\"realistic\"}", &r);
	expect_status(&r, 200, "realistic timing");
	th_resp_free(&r);
	th_json(U, "tk", "POST", "/v1/templates", "{\"name\":\"t1\"}", &r);
	expect_status(&r, 400, "template without dockerfile");
	assert_non_null(fail_field(&r, "dockerfile"));
	th_resp_free(&r);
	th_json(U, "tk", "POST", "/v1/templates", "{\"name\":\"t1\",\"dockerfile\":\"FROM x\",\"base\":\"nope:9\"}", &r);
	expect_status(&r, 400, "template of an unknown base");
	assert_non_null(fail_field(&r, "base"));
	th_resp_free(&r);
	th_json(U, "tk", "POST", "/v1/templates", "{\"name\":\"t1\",\"dockerfile\":\"FROM x\\nRUN true\"}", &r);
	expect_status(&r, 200, "template create");
	assert_string_equal(th_data_str(&r, "status"), "pending");
	snprintf(tpl, sizeof(tpl), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/templates/%s", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	assert_null(data_item(&r, "dockerfile"));
	th_resp_free(&r);
	th_admin(U, TOK, "POST", "/_mock/clock/advance", "{\"ms\":2500}", &r);
	th_resp_free(&r);
	th_json(U, "tk", "GET", path, NULL, &r);
	assert_string_equal(th_data_str(&r, "status"), "building");
	th_resp_free(&r);
	th_admin(U, TOK, "POST", "/_mock/clock/advance", "{\"ms\":8000}", &r);
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/templates/%s?include=dockerfile", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	assert_string_equal(th_data_str(&r, "status"), "ready");
	assert_non_null(th_data_str(&r, "dockerfile"));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/templates/%s/logs?follow=true", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	expect_status(&r, 200, "template logs");
	body = sbx_strbuf_str(&r.body);
	assert_non_null(strstr(body, "{\"final\":true,\"status\":\"ready\"}\n"));
	th_resp_free(&r);
	th_json(U, "other", "GET", "/v1/templates/t1", NULL, &r);
	expect_status(&r, 404, "another key's template");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/templates/%s", tpl);
	th_json(U, "tk", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "template delete");
	assert_true(cJSON_IsTrue(data_item(&r, "deleted")));
	th_resp_free(&r);
	th_json(U, "tk", "GET", path, NULL, &r);
	expect_status(&r, 404, "deleted template");
	th_resp_free(&r);
	th_admin(U, TOK, "PUT", "/_mock/settings", "{\"timing\":\"instant\"}", &r);
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(create_get_list_delete_roundtrip, reset),
		cmocka_unit_test_setup(auth_rules, reset),
		cmocka_unit_test_setup(validation_names_the_field, reset),
		cmocka_unit_test_setup(routes_methods_and_limits, reset),
		cmocka_unit_test_setup(exec_buffered, reset),
		cmocka_unit_test_setup(guests_have_their_own_pid_namespace, reset),
		cmocka_unit_test_setup(self_signal_pauses_and_deletes_the_callers_sandbox, reset),
		cmocka_unit_test_setup(exec_streaming_ndjson, reset),
		cmocka_unit_test_setup(files_roundtrip_and_confinement, reset),
		cmocka_unit_test_setup(pause_fork_resume_destroy, reset),
		cmocka_unit_test_setup(egress_get_put_and_oracle, reset),
		cmocka_unit_test_setup(caps_credit_and_settings, reset),
		cmocka_unit_test_setup(auto_pause_by_virtual_clock, reset),
		cmocka_unit_test_setup(journal_records_and_filters, reset),
		cmocka_unit_test_setup(admin_state_lists_destroyed, reset),
		cmocka_unit_test_setup(networks_quota, reset),
		cmocka_unit_test_setup(disks_keep_state_and_hide_credentials, reset),
		cmocka_unit_test_setup(templates_build_on_the_clock, reset),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

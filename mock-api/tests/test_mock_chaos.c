/* Integration: the fault actions that shape lifecycles, streams and whole
 * connections, over loopback with libcurl — dribble, exec_stream_cut,
 * exec_heartbeats_only, create_failed, pause_error, resume_polls,
 * destroy_stuck, host_dies (with the cross-host cold start on resume) and
 * cp_restart (connections drop, state survives, readyz on the virtual
 * clock) — and the combined fire {after, times}. */
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

#include "mock_fixture.h"
#include "sbx/sys.h"

static sbx_mock *start(const char *timing)
{
	sbx_mock_config cfg;

	mf_config_init(&cfg);
	cfg.timing = timing;
	return mf_start(&cfg);
}

static int group_setup(void **state)
{
	sbx_mock_config cfg;

	(void)state;
	mf_config_init(&cfg);
	cfg.timing = "instant";
	return mf_setup(&cfg);
}

static void admin_ok(const char *url, const char *tok, const char *method, const char *path,
		     const char *body)
{
	th_resp r;

	th_admin(url, tok, method, path, body, &r);
	if (r.status != 200)
		fail_msg("admin %s %s %s: expected 200, got %ld %s", method, path, body ? body : "",
			 r.status, sbx_strbuf_str(&r.body));
	th_resp_free(&r);
}

static void create_on(const char *url, const char *key, char *id, size_t cap)
{
	th_resp r;

	th_json(url, key, "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	if (r.status != 200)
		fail_msg("create: expected 200, got %ld: %s", r.status, sbx_strbuf_str(&r.body));
	snprintf(id, cap, "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
}

/* GET /v1/sandboxes/{id} → status string copied into buf. */
static const char *status_of(const char *url, const char *key, const char *id, char *buf, size_t cap)
{
	th_resp r;
	char path[128];

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(url, key, "GET", path, NULL, &r);
	if (r.status != 200)
		fail_msg("GET %s: expected 200, got %ld %s", path, r.status, sbx_strbuf_str(&r.body));
	snprintf(buf, cap, "%s", th_data_str(&r, "status"));
	th_resp_free(&r);
	return buf;
}

static long post_action(const char *url, const char *key, const char *id, const char *action,
			char *poll_after, size_t cap)
{
	th_resp r;
	char path[128];
	long st;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/%s", id, action);
	th_json(url, key, "POST", path, NULL, &r);
	st = r.status;
	if (poll_after != NULL && !th_header(&r, "X-Poll-After", poll_after, cap))
		poll_after[0] = '\0';
	th_resp_free(&r);
	return st;
}

static size_t count_lines(const sbx_strbuf *b, const char *needle)
{
	size_t n = 0;
	const char *p = sbx_strbuf_str(b);

	while ((p = strstr(p, needle)) != NULL) {
		n++;
		p += strlen(needle);
	}
	return n;
}

static void dribble_sends_the_normal_answer_slowly(void **state)
{
	th_resp fast, slow;
	double min_s;

	(void)state;
	th_json(U, "dk", "GET", "/v1/whoami", NULL, &fast);
	assert_int_equal(fast.status, 200);
	admin_ok(U, TOK, "POST", "/_mock/faults",
		 "{\"match\":{\"path\":\"/v1/whoami\"},\"fire\":{\"times\":1},"
		 "\"action\":{\"kind\":\"dribble\",\"bytes_per_sec\":200}}");
	th_json(U, "dk", "GET", "/v1/whoami", NULL, &slow);
	assert_int_equal(slow.status, 200);
	/* same bytes, valid JSON, but spread over time */
	assert_int_equal(slow.body.len, fast.body.len);
	assert_non_null(slow.json);
	min_s = (double)slow.body.len / 200.0 * 0.6;
	if (slow.seconds < min_s)
		fail_msg("dribble at 200 B/s: %zu bytes came in %.3f s, expected at least %.3f s",
			 slow.body.len, slow.seconds, min_s);
	th_resp_free(&fast);
	th_resp_free(&slow);
}

static void exec_stream_cut_drops_after_n_frames(void **state)
{
	th_resp r;
	char id[64], path[160];
	size_t n;

	(void)state;
	create_on(U, "sc", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec?stream=true", id);
	admin_ok(U, TOK, "POST", "/_mock/faults",
		 "{\"fire\":{\"times\":1},\"action\":{\"kind\":\"exec_stream_cut\",\"after_frames\":2}}");
	/* a frame is what one read of the output got: lines a second apart,
	 * so that even a stream that starts late (valgrind under load gave
	 * all six lines in one frame at 50 ms apart, then the exit: a clean
	 * end) has more than two frames to send, whatever its first holds */
	th_json(U, "sc", "POST", path,
		"{\"cmd\":\"sh\",\"args\":[\"-c\",\"for i in 1 2 3 4 5 6; do echo $i; sleep 1; done\"]}",
		&r);
	assert_int_equal(r.status, 200);
	if (r.curl_rc == CURLE_OK)
		fail_msg("a cut stream must end in a transport error, got a clean end: %s",
			 sbx_strbuf_str(&r.body));
	/* two frames (NDJSON lines: a frame's newlines are escaped) */
	n = count_lines(&r.body, "\n");
	if (n != 2)
		fail_msg("a stream cut after 2 frames has %zu: %s", n, sbx_strbuf_str(&r.body));
	assert_null(strstr(sbx_strbuf_str(&r.body), "exit_code"));
	th_resp_free(&r);
	/* one-shot: the next stream is whole */
	th_json(U, "sc", "POST", path, "{\"cmd\":\"echo\",\"args\":[\"whole\"]}", &r);
	assert_int_equal(r.curl_rc, CURLE_OK);
	assert_non_null(strstr(sbx_strbuf_str(&r.body), "{\"exit_code\":0}"));
	th_resp_free(&r);
}

static void exec_heartbeats_only_never_ends(void **state)
{
	th_req rq = {0};
	th_resp r;
	char id[64], path[160];

	(void)state;
	create_on(U, "hb", id, sizeof(id));
	admin_ok(U, TOK, "PUT", "/_mock/settings", "{\"exec_heartbeat_ms\":100}");
	admin_ok(U, TOK, "POST", "/_mock/faults",
		 "{\"fire\":{\"times\":1},\"action\":{\"kind\":\"exec_heartbeats_only\"}}");
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec?stream=true", id);
	rq.method = "POST";
	rq.url = U;
	rq.path = path;
	rq.key = "hb";
	rq.body = "{\"cmd\":\"echo\",\"args\":[\"never seen\"]}";
	/* long enough for two heartbeats after a slow start on a loaded
	 * machine; the stream never ends, so the client always gives up */
	rq.timeout_ms = 6000;
	th_do(&rq, &r);
	admin_ok(U, TOK, "PUT", "/_mock/settings", "{\"exec_heartbeat_ms\":5000}");
	assert_int_equal(r.status, 200);
	assert_int_equal(r.curl_rc, CURLE_OPERATION_TIMEDOUT);
	assert_true(count_lines(&r.body, "{\"hb\":true}\n") >= 2);
	assert_int_equal(count_lines(&r.body, "\n"), count_lines(&r.body, "{\"hb\":true}\n"));
	assert_null(strstr(sbx_strbuf_str(&r.body), "never seen"));
	th_resp_free(&r);
}

static void create_failed_ends_failed_and_frees_the_cap(void **state)
{
	th_resp r;
	const cJSON *sbs;

	(void)state;
	admin_ok(U, TOK, "POST", "/_mock/tenants", "{\"key\":\"cf\",\"cap\":1}");
	admin_ok(U, TOK, "POST", "/_mock/faults",
		 "{\"match\":{\"method\":\"POST\",\"path\":\"/v1/sandboxes\"},\"fire\":{\"times\":1},"
		 "\"action\":{\"kind\":\"create_failed\"}}");
	th_json(U, "cf", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	assert_int_equal(r.status, 500);
	assert_string_equal(cJSON_GetObjectItem(r.json, "status")->valuestring, "error");
	th_resp_free(&r);
	th_admin(U, TOK, "GET", "/_mock/sandboxes?tenant=cf", NULL, &r);
	sbs = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "sandboxes");
	assert_int_equal(cJSON_GetArraySize(sbs), 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(sbs, 0), "status")->valuestring,
			    "failed");
	th_resp_free(&r);
	/* a failed sandbox is terminal: the cap of 1 still allows a create */
	th_json(U, "cf", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
}

static void pause_error_ends_error_and_resume_recovers(void **state)
{
	char id[64], st[32];

	(void)state;
	create_on(U, "pe", id, sizeof(id));
	admin_ok(U, TOK, "POST", "/_mock/faults",
		 "{\"match\":{\"path\":\"/v1/sandboxes/{id}/pause\"},\"fire\":{\"times\":1},"
		 "\"action\":{\"kind\":\"pause_error\"}}");
	assert_int_equal(post_action(U, "pe", id, "pause", NULL, 0), 202);
	assert_string_equal(status_of(U, "pe", id, st, sizeof(st)), "error");
	/* error → resume is allowed by the lifecycle table */
	assert_int_equal(post_action(U, "pe", id, "resume", NULL, 0), 202);
	assert_string_equal(status_of(U, "pe", id, st, sizeof(st)), "running");
}

static void resume_polls_takes_n_polls(void **state)
{
	char id[64], st[32];

	(void)state;
	create_on(U, "rp", id, sizeof(id));
	assert_int_equal(post_action(U, "rp", id, "pause", NULL, 0), 202);
	assert_string_equal(status_of(U, "rp", id, st, sizeof(st)), "paused");
	admin_ok(U, TOK, "POST", "/_mock/faults",
		 "{\"match\":{\"path\":\"/v1/sandboxes/{id}/resume\"},\"fire\":{\"times\":1},"
		 "\"action\":{\"kind\":\"resume_polls\",\"polls\":3}}");
	assert_int_equal(post_action(U, "rp", id, "resume", NULL, 0), 202);
	/* instant timing would be running at the first poll; here the third is */
	assert_string_equal(status_of(U, "rp", id, st, sizeof(st)), "resuming");
	assert_string_equal(status_of(U, "rp", id, st, sizeof(st)), "resuming");
	assert_string_equal(status_of(U, "rp", id, st, sizeof(st)), "running");
}

static void destroy_stuck_stays_destroying_and_counts(void **state)
{
	th_resp r;
	char id[64], st[32], path[128];

	(void)state;
	admin_ok(U, TOK, "POST", "/_mock/tenants", "{\"key\":\"ds\",\"cap\":1}");
	create_on(U, "ds", id, sizeof(id));
	admin_ok(U, TOK, "POST", "/_mock/faults",
		 "{\"match\":{\"method\":\"DELETE\",\"path\":\"/v1/sandboxes/{id}\"},"
		 "\"action\":{\"kind\":\"destroy_stuck\"}}");
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, "ds", "DELETE", path, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(th_data_str(&r, "status"), "destroying");
	th_resp_free(&r);
	admin_ok(U, TOK, "POST", "/_mock/clock/advance", "{\"ms\":3600000}");
	assert_string_equal(status_of(U, "ds", id, st, sizeof(st)), "destroying");
	/* a repeated delete does not unstick it */
	th_json(U, "ds", "DELETE", path, NULL, &r);
	assert_string_equal(th_data_str(&r, "status"), "destroying");
	th_resp_free(&r);
	/* it still counts toward the cap */
	th_json(U, "ds", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	assert_int_equal(r.status, 403);
	th_resp_free(&r);
}

static void fire_after_and_times_combined(void **state)
{
	th_resp r;
	char got[8];

	(void)state;
	admin_ok(U, TOK, "POST", "/_mock/faults",
		 "{\"match\":{\"path\":\"/v1/whoami\"},\"fire\":{\"after\":2,\"times\":2},"
		 "\"action\":{\"kind\":\"http\",\"status\":503}}");
	for (int i = 0; i < 6; i++) {
		th_json(U, "fa", "GET", "/v1/whoami", NULL, &r);
		got[i] = r.status == 503 ? 'x' : '.';
		th_resp_free(&r);
	}
	got[6] = '\0';
	assert_string_equal(got, "..xx..");
	th_admin(U, TOK, "POST", "/_mock/faults", "{\"fire\":{\"every\":2},\"action\":{\"kind\":\"close\"}}",
		 &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(sbx_strbuf_str(&r.body), "fire.every"));
	th_resp_free(&r);
}

/* host_dies under the realistic profile: both sandboxes fail, the next
 * resume is a cross-host cold start (12 s) instead of 0.7 s. The virtual
 * clock replaces the waiting. */
/* After host-local-1 died: it is listed dead and empty, its replacement
 * host-local-2 active with the one live VM (the cold-started one), and no
 * create may name the dead host. */
static void expect_hosts_after_one_death(const char *url)
{
	const cJSON *list, *h1, *h2;
	th_resp r;

	th_json(url, "hd", "GET", "/v1/hosts", NULL, &r);
	assert_int_equal(r.status, 200);
	list = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "data");
	assert_true(cJSON_IsArray(list));
	assert_int_equal(cJSON_GetArraySize(list), 2);
	h1 = cJSON_GetArrayItem(list, 0);
	h2 = cJSON_GetArrayItem(list, 1);
	assert_string_equal(cJSON_GetObjectItem(h1, "id")->valuestring, "host-local-1");
	assert_string_equal(cJSON_GetObjectItem(h1, "status")->valuestring, "dead");
	assert_int_equal(cJSON_GetObjectItem(h1, "vm_count")->valueint, 0);
	assert_string_equal(cJSON_GetObjectItem(h2, "id")->valuestring, "host-local-2");
	assert_string_equal(cJSON_GetObjectItem(h2, "status")->valuestring, "active");
	assert_int_equal(cJSON_GetObjectItem(h2, "vm_count")->valueint, 1);
	th_resp_free(&r);
	th_json(url, "hd", "POST", "/v1/sandboxes",
		"{\"shape\":\"s-1vcpu-1gb\",\"host_id\":\"host-local-1\"}", &r);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(sbx_strbuf_str(&r.body), "dead"));
	th_resp_free(&r);
}

static void host_dies_fails_sandboxes_and_resume_is_a_cold_start(void **state)
{
	sbx_mock *m = start("realistic");
	const char *url, *tok;
	char a[64], b[64], st[32], pa[32], path[128];
	th_resp r;

	(void)state;
	assert_non_null(m);
	url = sbx_mock_url(m);
	tok = sbx_mock_admin_token(m);
	create_on(url, "hd", a, sizeof(a));
	create_on(url, "hd", b, sizeof(b));
	assert_int_equal(post_action(url, "hd", b, "pause", NULL, 0), 202);
	admin_ok(url, tok, "POST", "/_mock/clock/advance", "{\"ms\":1500}");
	assert_string_equal(status_of(url, "hd", b, st, sizeof(st)), "paused");
	admin_ok(url, tok, "POST", "/_mock/faults",
		 "{\"match\":{\"path\":\"/v1/whoami\"},\"fire\":{\"times\":1},"
		 "\"action\":{\"kind\":\"host_dies\",\"host_id\":\"host-local-1\"}}");
	th_json(url, "hd", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 200); /* the request itself is served */
	th_resp_free(&r);
	assert_string_equal(status_of(url, "hd", a, st, sizeof(st)), "error");
	assert_string_equal(status_of(url, "hd", b, st, sizeof(st)), "error");
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", a);
	th_json(url, "hd", "POST", path, "{\"cmd\":\"true\"}", &r);
	assert_int_equal(r.status, 409);
	th_resp_free(&r);
	/* resume: cold start */
	assert_int_equal(post_action(url, "hd", a, "resume", pa, sizeof(pa)), 202);
	assert_string_equal(pa, "12000");
	admin_ok(url, tok, "POST", "/_mock/clock/advance", "{\"ms\":1000}");
	assert_string_equal(status_of(url, "hd", a, st, sizeof(st)), "resuming");
	admin_ok(url, tok, "POST", "/_mock/clock/advance", "{\"ms\":11500}");
	assert_string_equal(status_of(url, "hd", a, st, sizeof(st)), "running");
	th_json(url, "hd", "POST", path, "{\"cmd\":\"echo\",\"args\":[\"alive\"]}", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(sbx_strbuf_str(&r.body), "alive"));
	th_resp_free(&r);
	/* once on a live host, the next pause/resume is a normal one */
	assert_int_equal(post_action(url, "hd", a, "pause", NULL, 0), 202);
	admin_ok(url, tok, "POST", "/_mock/clock/advance", "{\"ms\":1500}");
	assert_int_equal(post_action(url, "hd", a, "resume", pa, sizeof(pa)), 202);
	assert_string_equal(pa, "700");
	expect_hosts_after_one_death(url);
	sbx_mock_stop(m);
}

typedef struct bg_req {
	const char *url;
	char path[160];
	th_resp r;
	double seconds;
} bg_req;

static double now_s(void)
{
	return (double)sbx_mono_us() / 1e6;
}

/* The in-flight stream's command: far longer than it takes to start on a
 * loaded machine, so an end before it is the restart's drop. */
#define STREAM_SLEEP_S "60"

static void *bg_stream(void *arg)
{
	bg_req *b = arg;
	th_req rq = {0};
	double t0 = now_s();

	rq.method = "POST";
	rq.url = b->url;
	rq.path = b->path;
	rq.key = "cp";
	rq.body = "{\"cmd\":\"sleep\",\"args\":[\"" STREAM_SLEEP_S "\"],\"stream\":true}";
	rq.timeout_ms = 2 * (int)strtol(STREAM_SLEEP_S, NULL, 10) * 1000; /* past the sleep's end */
	th_do(&rq, &b->r);
	b->seconds = now_s() - t0;
	return NULL;
}

static long count_journal(const char *path)
{
	th_resp r;
	char q[256];
	long n;

	snprintf(q, sizeof(q), "/_mock/journal/count?path=%s", path);
	th_admin(U, TOK, "GET", q, NULL, &r);
	n = (long)cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "count")->valuedouble;
	th_resp_free(&r);
	return n;
}

static void cp_restart_drops_connections_keeps_state(void **state)
{
	bg_req b;
	pthread_t th;
	th_resp r;
	char id[64], st[32];
	const cJSON *d;

	(void)state;
	memset(&b, 0, sizeof(b));
	create_on(U, "cp", id, sizeof(id));
	b.url = U;
	snprintf(b.path, sizeof(b.path), "/v1/sandboxes/%s/exec", id);
	assert_int_equal(pthread_create(&th, NULL, bg_stream, &b), 0);
	for (double end = now_s() + 60; count_journal("/v1/sandboxes/{id}/exec") == 0;) {
		if (now_s() > end)
			fail_msg("the exec stream's request was not in the journal within 60 s");
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	admin_ok(U, TOK, "POST", "/_mock/faults",
		 "{\"match\":{\"path\":\"/v1/whoami\"},\"fire\":{\"times\":1},"
		 "\"action\":{\"kind\":\"cp_restart\",\"not_ready_ms\":5000}}");
	th_json(U, "cp", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.curl_rc, CURLE_RECV_ERROR);
	th_resp_free(&r);
	pthread_join(th, NULL);
	/* the in-flight stream dropped too, long before its command ended
	 * (counted from its request, so its start is in the time too) */
	if (b.r.curl_rc == CURLE_OK || b.seconds > strtod(STREAM_SLEEP_S, NULL) - 15)
		fail_msg("in-flight stream: expected a drop, got curl %d after %.2f s: %s", b.r.curl_rc,
			 b.seconds, sbx_strbuf_str(&b.r.body));
	th_resp_free(&b.r);
	/* not ready on the virtual clock; state survived */
	th_json(U, NULL, "GET", "/readyz", NULL, &r);
	assert_int_equal(r.status, 503);
	d = cJSON_GetObjectItem(r.json, "data");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(d, "ready")));
	th_resp_free(&r);
	assert_string_equal(status_of(U, "cp", id, st, sizeof(st)), "running");
	admin_ok(U, TOK, "POST", "/_mock/clock/advance", "{\"ms\":5000}");
	th_json(U, NULL, "GET", "/readyz", NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(dribble_sends_the_normal_answer_slowly, mf_reset),
		cmocka_unit_test_setup(exec_stream_cut_drops_after_n_frames, mf_reset),
		cmocka_unit_test_setup(exec_heartbeats_only_never_ends, mf_reset),
		cmocka_unit_test_setup(create_failed_ends_failed_and_frees_the_cap, mf_reset),
		cmocka_unit_test_setup(pause_error_ends_error_and_resume_recovers, mf_reset),
		cmocka_unit_test_setup(resume_polls_takes_n_polls, mf_reset),
		cmocka_unit_test_setup(destroy_stuck_stays_destroying_and_counts, mf_reset),
		cmocka_unit_test_setup(fire_after_and_times_combined, mf_reset),
		cmocka_unit_test_setup(host_dies_fails_sandboxes_and_resume_is_a_cold_start, mf_reset),
		cmocka_unit_test_setup(cp_restart_drops_connections_keeps_state, mf_reset),
	};

	return cmocka_run_group_tests(tests, group_setup, mf_group_teardown);
}

/* Integration: every implemented fault action over loopback, the rule
 * engine's firing modes, seeded-probability determinism and the
 * commit_then_fail orphan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_fixture.h"

static sbx_mock *start(uint64_t seed)
{
	sbx_mock_config cfg;

	mf_config_init(&cfg);
	cfg.seed = seed;
	return mf_start(&cfg);
}

static int group_setup(void **state)
{
	sbx_mock_config cfg;

	(void)state;
	mf_config_init(&cfg);
	cfg.seed = 1;
	return mf_setup(&cfg);
}

static void add_rule(const char *rule)
{
	th_resp r;

	th_admin(U, TOK, "POST", "/_mock/faults", rule, &r);
	if (r.status != 200)
		fail_msg("add rule %s: %ld %s", rule, r.status, sbx_strbuf_str(&r.body));
	th_resp_free(&r);
}

static void http_fault_with_retry_after_and_code(void **state)
{
	th_resp r;
	char v[32];
	const cJSON *d;

	(void)state;
	add_rule("{\"name\":\"rl\",\"match\":{\"method\":\"GET\",\"path\":\"/v1/sandboxes\"},"
		 "\"fire\":{\"times\":1},\"action\":{\"kind\":\"http\",\"status\":429,"
		 "\"code\":\"RATE_LIMITED\",\"retry_after\":7,\"headers\":{\"X-Extra\":\"yes\"}}}");
	th_json(U, "k", "GET", "/v1/sandboxes", NULL, &r);
	assert_int_equal(r.status, 429);
	assert_true(th_header(&r, "Retry-After", v, sizeof(v)));
	assert_string_equal(v, "7");
	assert_true(th_header(&r, "X-Extra", v, sizeof(v)));
	d = cJSON_GetObjectItem(r.json, "data");
	assert_string_equal(cJSON_GetObjectItem(d, "code")->valuestring, "RATE_LIMITED");
	assert_string_equal(cJSON_GetObjectItem(r.json, "status")->valuestring, "fail");
	th_resp_free(&r);
	/* times:1 -> the next one passes */
	th_json(U, "k", "GET", "/v1/sandboxes", NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	add_rule("{\"action\":{\"kind\":\"http\",\"status\":503}}");
	th_json(U, "k", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 503);
	assert_string_equal(cJSON_GetObjectItem(r.json, "status")->valuestring, "error");
	assert_int_equal(cJSON_GetObjectItem(r.json, "code")->valueint, 503);
	th_resp_free(&r);
	/* the journal names the fault */
	th_admin(U, TOK, "GET", "/_mock/journal?status=429", NULL, &r);
	d = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "entries"), 0);
	assert_string_equal(cJSON_GetObjectItem(d, "fault")->valuestring, "rl");
	th_resp_free(&r);
}

/* An http fault sends exactly what it names: the body byte for byte, each
 * header once, its own value replacing the mock's, an empty one removing
 * it (issue 40: two X-Request-Id and two Content-Type headers were sent). */
static void http_fault_shapes_are_exact(void **state)
{
	static const struct {
		const char *action, *body;
		long status;
	} shapes[] = {
		{"{\"kind\":\"http\",\"status\":400,\"data\":\"plain string\"}",
		 "{\"status\":\"fail\",\"data\":\"plain string\"}", 400},
		{"{\"kind\":\"http\",\"status\":409,\"data\":null}",
		 "{\"status\":\"fail\",\"data\":null}", 409},
		{"{\"kind\":\"http\",\"status\":503,\"envelope\":\"fail\",\"code\":\"NO_CAPACITY\","
		 "\"message\":\"full\"}",
		 "{\"status\":\"fail\",\"data\":{\"error\":\"full\",\"code\":\"NO_CAPACITY\"}}", 503},
		{"{\"kind\":\"http\",\"status\":404,\"envelope\":\"error\",\"message\":\"gone\","
		 "\"data\":{\"k\":1}}",
		 "{\"status\":\"error\",\"message\":\"gone\",\"code\":404,\"data\":{\"k\":1}}", 404},
		{"{\"kind\":\"http\",\"status\":502,\"body\":\"<html>bad gateway</html>\","
		 "\"content_type\":\"text/html\",\"headers\":{\"X-Request-Id\":\"mine\"}}",
		 "<html>bad gateway</html>", 502},
	};
	th_resp r;
	char rule[512], v[64];

	(void)state;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		snprintf(rule, sizeof(rule), "{\"fire\":{\"times\":1},\"action\":%s}", shapes[i].action);
		add_rule(rule);
		th_json(U, "k", "GET", "/v1/whoami", NULL, &r);
		assert_int_equal(r.status, shapes[i].status);
		if (r.body.len != strlen(shapes[i].body) ||
		    memcmp(r.body.data, shapes[i].body, r.body.len) != 0)
			fail_msg("%s: body %.*s, want %s", shapes[i].action, (int)r.body.len,
				 r.body.data, shapes[i].body);
		assert_int_equal(th_header_count(&r, "Content-Type"), 1);
		assert_int_equal(th_header_count(&r, "X-Request-Id"), 1);
		th_resp_free(&r);
	}
	/* the last one: its X-Request-Id and content type, alone */
	add_rule("{\"fire\":{\"times\":1},\"action\":{\"kind\":\"http\",\"status\":500,"
		 "\"retry_after\":3,\"headers\":{\"X-Request-Id\":\"mine\",\"Content-Type\":\"text/html\","
		 "\"Retry-After\":\"\"}}}");
	th_do(&(th_req){.method = "GET", .url = U, .path = "/v1/whoami", .key = "k", .raw_ok = true},
	      &r);
	assert_int_equal(r.status, 500);
	assert_int_equal(th_header_count(&r, "X-Request-Id"), 1);
	assert_true(th_header(&r, "X-Request-Id", v, sizeof(v)));
	assert_string_equal(v, "mine");
	assert_int_equal(th_header_count(&r, "Content-Type"), 1);
	assert_true(th_header(&r, "Content-Type", v, sizeof(v)));
	assert_string_equal(v, "text/html");
	assert_int_equal(th_header_count(&r, "Retry-After"), 0);
	th_resp_free(&r);
}

/* An unknown key anywhere in a rule is a 400 naming it; nothing is added. */
static void unknown_rule_keys_are_refused(void **state)
{
	static const struct {
		const char *rule, *named;
	} bad[] = {
		{"{\"match\":{\"pth\":\"/v1/nothing\"},\"action\":{\"kind\":\"http\"}}", "match.pth"},
		{"{\"action\":{\"kind\":\"http\",\"dta\":\"x\"}}", "action.dta"},
		{"{\"action\":{\"kind\":\"reset\",\"status\":500}}", "action.status"},
		{"{\"action\":{\"kind\":\"commit_then_fail\",\"then\":{\"stat\":500}}}",
		 "action.then.stat"},
		{"{\"acton\":{\"kind\":\"http\"},\"action\":{\"kind\":\"http\"}}", "rule.acton"},
		{"{\"action\":{\"kind\":\"http\",\"data\":[1]}}", "action.data"},
		{"{\"action\":{\"kind\":\"http\",\"data\":{},\"code\":\"X\"}}", "action.data"},
		{"{\"action\":{\"kind\":\"http\",\"body\":\"x\",\"envelope\":\"fail\"}}", "action.envelope"},
		{"{\"action\":{\"kind\":\"http\",\"content_type\":\"text/html\"}}", "action.content_type"},
	};
	th_resp r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		th_admin(U, TOK, "POST", "/_mock/faults", bad[i].rule, &r);
		if (r.status != 400 || strstr(sbx_strbuf_str(&r.body), bad[i].named) == NULL)
			fail_msg("%s: want 400 naming %s, got %ld %s", bad[i].rule, bad[i].named,
				 r.status, sbx_strbuf_str(&r.body));
		th_resp_free(&r);
	}
	th_admin(U, TOK, "GET", "/_mock/faults", NULL, &r);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"),
								 "rules")), 0);
	th_resp_free(&r);
}

/* A fault answers before the handler names the sandbox; the journal row
 * still names the sandbox of the path (issue 19 item 20). */
static void journal_names_the_sandbox_of_a_faulted_request(void **state)
{
	th_resp r;
	const cJSON *d;

	(void)state;
	add_rule("{\"name\":\"gone\",\"match\":{\"method\":\"GET\",\"path\":\"/v1/sandboxes/*\"},"
		 "\"action\":{\"kind\":\"http\",\"status\":503}}");
	th_json(U, "k", "GET", "/v1/sandboxes/sb-named-in-path", NULL, &r);
	assert_int_equal(r.status, 503);
	th_resp_free(&r);
	th_admin(U, TOK, "GET", "/_mock/journal?status=503", NULL, &r);
	d = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "entries"), 0);
	assert_non_null(d);
	assert_string_equal(cJSON_GetObjectItem(d, "fault")->valuestring, "gone");
	assert_non_null(cJSON_GetObjectItem(d, "sandbox_id"));
	assert_string_equal(cJSON_GetObjectItem(d, "sandbox_id")->valuestring, "sb-named-in-path");
	th_resp_free(&r);
}

static void transport_faults(void **state)
{
	static const struct {
		const char *kind;
		CURLcode want;
	} cases[] = {
		{"reset", CURLE_RECV_ERROR},
		{"close", CURLE_GOT_NOTHING},
		{"truncated", CURLE_PARTIAL_FILE},
	};
	th_resp r;
	char rule[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(rule, sizeof(rule),
			 "{\"match\":{\"path\":\"/v1/whoami\"},\"fire\":{\"times\":1},\"action\":{\"kind\":\"%s\"}}",
			 cases[i].kind);
		add_rule(rule);
		th_json(U, "k", "GET", "/v1/whoami", NULL, &r);
		if (r.curl_rc != cases[i].want)
			fail_msg("%s: expected curl error %d, got %d (%s)", cases[i].kind, cases[i].want,
				 r.curl_rc, curl_easy_strerror(r.curl_rc));
		th_resp_free(&r);
	}
	/* these three send broken JSON on purpose */
	th_strict_json = false;
	add_rule("{\"fire\":{\"times\":1},\"action\":{\"kind\":\"empty_200\"}}");
	th_json(U, "k", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body.len, 0);
	th_resp_free(&r);
	add_rule("{\"fire\":{\"times\":1},\"action\":{\"kind\":\"malformed_json\"}}");
	th_json(U, "k", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(r.body.len > 0);
	assert_null(r.json);
	th_resp_free(&r);
	add_rule("{\"fire\":{\"times\":1},\"action\":{\"kind\":\"garbage\"}}");
	th_json(U, "k", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body.len, 512);
	assert_null(r.json);
	th_resp_free(&r);
	th_strict_json = true;
	/* after the one-shot rules, requests are normal again */
	th_json(U, "k", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
}

static void hang_until_client_gives_up_or_max(void **state)
{
	th_req rq = {0};
	th_resp r;

	(void)state;
	add_rule("{\"match\":{\"path\":\"/v1/whoami\"},\"fire\":{\"times\":1},\"action\":{\"kind\":\"hang\"}}");
	rq.url = U;
	rq.path = "/v1/whoami";
	rq.key = "k";
	rq.timeout_ms = 400;
	th_do(&rq, &r);
	assert_int_equal(r.curl_rc, CURLE_OPERATION_TIMEDOUT);
	th_resp_free(&r);
	add_rule("{\"match\":{\"path\":\"/v1/whoami\"},\"fire\":{\"times\":1},"
		 "\"action\":{\"kind\":\"hang\",\"max_ms\":200}}");
	/* the mock closes it at max_ms: nothing, long before the client's own
	 * timeout (a loaded machine may add seconds to the 0.2) */
	rq.timeout_ms = 60000;
	th_do(&rq, &r);
	assert_int_equal(r.curl_rc, CURLE_GOT_NOTHING);
	if (r.seconds < 0.15 || r.seconds >= 30)
		fail_msg("a hang with max_ms 200 ended after %.3f s", r.seconds);
	th_resp_free(&r);
}

static void latency_fixed_delays_answer(void **state)
{
	th_resp r;

	(void)state;
	add_rule("{\"fire\":{\"times\":1},\"action\":{\"kind\":\"latency\",\"dist\":\"fixed\",\"ms\":300}}");
	th_json(U, "k", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(r.seconds >= 0.25);
	th_resp_free(&r);
	add_rule("{\"fire\":{\"times\":1},\"action\":{\"kind\":\"latency\",\"dist\":\"uniform\",\"min_ms\":50,\"max_ms\":60}}");
	th_json(U, "k", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(r.seconds >= 0.045);
	th_resp_free(&r);
}

static void commit_then_fail_leaves_an_orphan(void **state)
{
	th_resp r;
	const cJSON *sbs;

	(void)state;
	add_rule("{\"match\":{\"method\":\"POST\",\"path\":\"/v1/sandboxes\"},\"fire\":{\"times\":1},"
		 "\"action\":{\"kind\":\"commit_then_fail\",\"then\":\"reset\"}}");
	th_json(U, "orph", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\",\"name\":\"lf-orphan\"}", &r);
	assert_int_equal(r.curl_rc, CURLE_RECV_ERROR);
	th_resp_free(&r);
	th_admin(U, TOK, "GET", "/_mock/sandboxes?tenant=orph", NULL, &r);
	sbs = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "sandboxes");
	assert_int_equal(cJSON_GetArraySize(sbs), 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(sbs, 0), "status")->valuestring, "running");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(sbs, 0), "name")->valuestring, "lf-orphan");
	th_resp_free(&r);
	add_rule("{\"match\":{\"method\":\"POST\",\"path\":\"/v1/sandboxes\"},\"fire\":{\"times\":1},"
		 "\"action\":{\"kind\":\"commit_then_fail\",\"then\":{\"status\":502}}}");
	th_json(U, "orph", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	assert_int_equal(r.status, 502);
	th_resp_free(&r);
	th_json(U, "orph", "GET", "/v1/sandboxes", NULL, &r);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"),
								   "pagination"), "total")->valueint, 2);
	th_resp_free(&r);
}

static void exec_faults(void **state)
{
	th_resp r;
	char path[128];
	const cJSON *res;

	(void)state;
	th_json(U, "ek", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", th_data_str(&r, "id"));
	th_resp_free(&r);
	/* exec actions never fire on other routes */
	add_rule("{\"fire\":{\"times\":1},\"action\":{\"kind\":\"exec_agent_error\",\"message\":\"agent gone\"}}");
	th_json(U, "ek", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	th_json(U, "ek", "POST", path, "{\"cmd\":\"true\"}", &r);
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	assert_string_equal(cJSON_GetObjectItem(res, "error")->valuestring, "agent gone");
	th_resp_free(&r);
	add_rule("{\"fire\":{\"times\":1},\"action\":{\"kind\":\"exec_oom\"}}");
	th_json(U, "ek", "POST", path, "{\"cmd\":\"true\"}", &r);
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	assert_int_equal(cJSON_GetObjectItem(res, "exit_code")->valueint, 137);
	th_resp_free(&r);
}

/* Fires a probability rule 40 times and records the pattern. */
static void pattern(const char *url, const char *tok, char *out, size_t n)
{
	th_resp r;

	th_admin(url, tok, "POST", "/_mock/faults",
		 "{\"fire\":{\"probability\":0.5},\"action\":{\"kind\":\"http\",\"status\":500}}", &r);
	th_resp_free(&r);
	for (size_t i = 0; i < n; i++) {
		th_json(url, "p", "GET", "/v1/whoami", NULL, &r);
		out[i] = r.status == 500 ? 'x' : '.';
		th_resp_free(&r);
	}
	out[n] = '\0';
}

static void seeded_probability_is_deterministic(void **state)
{
	char a[41], b[41], c[41];
	sbx_mock *m2 = start(1), *m3 = start(99);

	(void)state;
	assert_non_null(m2);
	assert_non_null(m3);
	pattern(U, TOK, a, 40);
	pattern(sbx_mock_url(m2), sbx_mock_admin_token(m2), b, 40);
	pattern(sbx_mock_url(m3), sbx_mock_admin_token(m3), c, 40);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	assert_non_null(strchr(a, 'x'));
	assert_non_null(strchr(a, '.'));
	sbx_mock_stop(m2);
	sbx_mock_stop(m3);
}

static void after_and_request_and_tenant_matching(void **state)
{
	th_resp r;
	long got[4];
	const cJSON *rules;

	(void)state;
	add_rule("{\"match\":{\"tenant\":\"t1\"},\"fire\":{\"after\":2},\"action\":{\"kind\":\"http\",\"status\":418}}");
	for (int i = 0; i < 4; i++) {
		th_json(U, "t1", "GET", "/v1/whoami", NULL, &r);
		got[i] = r.status;
		th_resp_free(&r);
	}
	assert_int_equal(got[0], 200);
	assert_int_equal(got[1], 200);
	assert_int_equal(got[2], 418);
	th_json(U, "t2", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	th_admin(U, TOK, "GET", "/_mock/faults", NULL, &r);
	rules = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "rules");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(rules, 0), "matched")->valueint, 4);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(rules, 0), "fired")->valueint, 2);
	th_resp_free(&r);
	th_admin(U, TOK, "DELETE", "/_mock/faults", NULL, &r);
	th_resp_free(&r);
	th_admin(U, TOK, "POST", "/_mock/faults", "{\"action\":{\"kind\":\"nope\"}}", &r);
	assert_int_equal(r.status, 400);
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(http_fault_with_retry_after_and_code, mf_reset),
		cmocka_unit_test_setup(http_fault_shapes_are_exact, mf_reset),
		cmocka_unit_test_setup(unknown_rule_keys_are_refused, mf_reset),
		cmocka_unit_test_setup(journal_names_the_sandbox_of_a_faulted_request, mf_reset),
		cmocka_unit_test_setup(transport_faults, mf_reset),
		cmocka_unit_test_setup(hang_until_client_gives_up_or_max, mf_reset),
		cmocka_unit_test_setup(latency_fixed_delays_answer, mf_reset),
		cmocka_unit_test_setup(commit_then_fail_leaves_an_orphan, mf_reset),
		cmocka_unit_test_setup(exec_faults, mf_reset),
		cmocka_unit_test_setup(seeded_probability_is_deterministic, mf_reset),
		cmocka_unit_test_setup(after_and_request_and_tenant_matching, mf_reset),
	};

	return cmocka_run_group_tests(tests, group_setup, mf_group_teardown);
}

/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl): auth (which key header wins, tenants, the
 * unauthenticated catalog), unknown routes, 405 with Allow, the JSON body
 * limit and pagination. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_fixture.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(auth_rules, mf_reset),
		cmocka_unit_test_setup(routes_methods_and_limits, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl): the admin API's views — the request journal
 * (filters, since, count, connection serials) and the sandbox listing that
 * keeps destroyed sandboxes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "mock_fixture.h"

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
	{
		/* the User-Agent is journalled as "agent": how sbx-conform tells its
		 * own requests from the backend's */
		th_req rq = {.method = "GET", .url = U, .path = "/v1/whoami", .key = "ua",
			     .extra_header = "User-Agent: sbx-conform/9 (harness)"};

		th_do(&rq, &r);
		th_resp_free(&r);
		th_admin(U, TOK, "GET", "/_mock/journal?tenant=ua", NULL, &r);
		e = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "entries"), 0);
		assert_non_null(cJSON_GetObjectItem(e, "agent"));
		assert_string_equal(cJSON_GetObjectItem(e, "agent")->valuestring, "sbx-conform/9 (harness)");
		th_resp_free(&r);
	}
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(journal_records_and_filters, mf_reset),
		cmocka_unit_test_setup(admin_state_lists_destroyed, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

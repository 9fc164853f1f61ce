/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl): networks — create up to the quota, get by name,
 * delete. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mock_fixture.h"

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

/* Members as the SDK's NetworkMember objects; detaching a network the
 * sandbox is not in is 404 (issue 15). */
static void network_members_and_detach(void **state)
{
	char id[64], path[256];
	const cJSON *m;
	th_resp r;

	(void)state;
	th_json(U, "nm", "POST", "/v1/networks", "{\"name\":\"n1\"}", &r);
	expect_status(&r, 200, "network create");
	th_resp_free(&r);
	th_json(U, "nm", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-256mb\",\"name\":\"m1\"}", &r);
	expect_status(&r, 200, "sandbox create");
	snprintf(id, sizeof(id), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/networks/n1", id);
	th_json(U, "nm", "DELETE", path, NULL, &r);
	expect_status(&r, 404, "detach before attach");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/networks", id);
	th_json(U, "nm", "POST", path, "{\"id\":\"n1\"}", &r);
	expect_status(&r, 200, "attach");
	th_resp_free(&r);
	th_json(U, "nm", "GET", "/v1/networks/n1", NULL, &r);
	expect_status(&r, 200, "network get");
	m = cJSON_GetArrayItem(data_item(&r, "members"), 0);
	assert_non_null(m);
	assert_string_equal(cJSON_GetObjectItem(m, "sandbox_id")->valuestring, id);
	assert_string_equal(cJSON_GetObjectItem(m, "status")->valuestring, "running");
	assert_string_equal(cJSON_GetObjectItem(m, "name")->valuestring, "m1");
	assert_true(cJSON_IsString(cJSON_GetObjectItem(m, "ip")));
	assert_int_equal(data_item(&r, "member_count")->valueint, 1);
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/networks/n1", id);
	th_json(U, "nm", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "detach");
	th_resp_free(&r);
	th_json(U, "nm", "DELETE", path, NULL, &r);
	expect_status(&r, 404, "second detach");
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(networks_quota, mf_reset),
		cmocka_unit_test_setup(network_members_and_detach, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

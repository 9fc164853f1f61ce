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
/* Issue 25, item 6: the 22-character rule is the sandbox name's only (the
 * vendor's example 12 names a network radicle-mesh-<timestamp>); the
 * mock's own bound (255) and what a URL path cannot carry are refused by
 * name; a duplicate name is 400 (spec). */
static void network_names_have_no_invented_limit(void **state)
{
	char name[300], body[400];
	th_resp r;

	(void)state;
	th_json(U, "nn", "POST", "/v1/networks", "{\"name\":\"radicle-mesh-1764675300123\"}", &r);
	expect_status(&r, 200, "a 26-character network name");
	assert_string_equal(th_data_str(&r, "name"), "radicle-mesh-1764675300123");
	th_resp_free(&r);
	th_json(U, "nn", "GET", "/v1/networks/radicle-mesh-1764675300123", NULL, &r);
	expect_status(&r, 200, "get it by name");
	th_resp_free(&r);
	th_json(U, "nn", "POST", "/v1/networks", "{\"name\":\"radicle-mesh-1764675300123\"}", &r);
	expect_status(&r, 400, "the same name again");
	assert_string_equal(fail_field(&r, "code"), "NAME_TAKEN");
	th_resp_free(&r);
	memset(name, 'n', 255);
	name[255] = '\0';
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", name);
	th_json(U, "nn", "POST", "/v1/networks", body, &r);
	expect_status(&r, 200, "255 bytes");
	th_resp_free(&r);
	snprintf(body, sizeof(body), "{\"name\":\"%sn\"}", name);
	th_json(U, "nn", "POST", "/v1/networks", body, &r);
	expect_status(&r, 400, "256 bytes");
	assert_non_null(strstr(fail_field(&r, "name"), "over the mock's limit of 255"));
	th_resp_free(&r);
	th_json(U, "nn", "POST", "/v1/networks", "{\"name\":\"a/b\"}", &r);
	expect_status(&r, 400, "a '/' in the name");
	th_resp_free(&r);
	th_json(U, "nn", "POST", "/v1/sandboxes",
		"{\"shape\":\"s-1vcpu-256mb\",\"name\":\"radicle-mesh-1764675300123\"}", &r);
	expect_status(&r, 400, "a 26-character sandbox name");
	assert_non_null(strstr(fail_field(&r, "name"), "over the limit of 22"));
	th_resp_free(&r);
}

/* Disk names follow the live pattern ^[a-z0-9][a-z0-9-]{0,62}$ (spec). */
static void disk_names_follow_their_pattern(void **state)
{
	static const char *const bad[] = {"Upper", "-lead", "under_score", "",
					  "a234567890123456789012345678901234567890123456789012345678901234"};
	char body[512];
	th_resp r;

	(void)state;
	snprintf(body, sizeof(body),
		 "{\"name\":\"radicle-disk-1764675300123\",\"kind\":\"s3\",\"config\":{\"bucket\":\"b\","
		 "\"endpoint\":\"http://s3\"},\"credentials\":{\"access_key\":\"a\",\"secret_key\":\"s\"}}");
	th_json(U, "nd", "POST", "/v1/disks", body, &r);
	expect_status(&r, 200, "a 26-character disk name");
	th_resp_free(&r);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(body, sizeof(body),
			 "{\"name\":\"%s\",\"kind\":\"s3\",\"config\":{\"bucket\":\"b\",\"endpoint\":\"http://s3\"},"
			 "\"credentials\":{\"access_key\":\"a\",\"secret_key\":\"s\"}}",
			 bad[i]);
		th_json(U, "nd", "POST", "/v1/disks", body, &r);
		expect_status(&r, 400, bad[i]);
		th_resp_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(networks_quota, mf_reset),
		cmocka_unit_test_setup(network_members_and_detach, mf_reset),
		cmocka_unit_test_setup(network_names_have_no_invented_limit, mf_reset),
		cmocka_unit_test_setup(disk_names_follow_their_pattern, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl): disks — validation naming the field, credentials
 * never shown, by id or name, per tenant, attach/detach. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mock_fixture.h"

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

/* Create-time disks are resolved and checked; the sandbox's disk list is
 * the SDK's SandboxDiskView (issue 15). */
static void create_time_disks(void **state)
{
	static const char good[] =
		"{\"name\":\"d1\",\"kind\":\"s3\",\"config\":{\"bucket\":\"b\",\"endpoint\":\"http://minio:9000\"},"
		"\"credentials\":{\"access_key\":\"AK\",\"secret_key\":\"TOPSECRET\"}}";
	static const char *const bad[] = {
		"[{\"disk_id\":\"nope\",\"mount_path\":\"/mnt/d\"}]",
		"[{\"mount_path\":\"/mnt/d\"}]",
		"[{\"disk_id\":\"d1\",\"mount_path\":\"rel\"}]",
		"[{\"disk_id\":\"d1\",\"mount_path\":\"/m\",\"sub_path\":\"../x\"}]",
		"[7]",
	};
	char id[64], disk[64], path[256], body[256];
	const cJSON *a;
	th_resp r;

	(void)state;
	th_json(U, "ck", "POST", "/v1/disks", good, &r);
	expect_status(&r, 200, "disk create");
	snprintf(disk, sizeof(disk), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(body, sizeof(body), "{\"shape\":\"s-1vcpu-256mb\",\"disks\":%s}", bad[i]);
		th_json(U, "ck", "POST", "/v1/sandboxes", body, &r);
		expect_status(&r, 400, bad[i]);
		assert_non_null(fail_field(&r, "disks"));
		th_resp_free(&r);
	}
	snprintf(body, sizeof(body), "{\"shape\":\"s-1vcpu-256mb\",\"disks\":[{\"disk_id\":\"%s\",\"mount_path\":\"/m\"}]}", disk);
	th_json(U, "ck-other", "POST", "/v1/sandboxes", body, &r);
	expect_status(&r, 400, "another tenant's disk");
	th_resp_free(&r);
	th_json(U, "ck", "POST", "/v1/sandboxes",
		"{\"shape\":\"s-1vcpu-256mb\",\"disks\":[{\"disk_id\":\"d1\",\"mount_path\":\"/m\",\"sub_path\":\"s\"}]}", &r);
	expect_status(&r, 200, "create with a disk by name");
	snprintf(id, sizeof(id), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/disks", id);
	th_json(U, "ck", "GET", path, NULL, &r);
	expect_status(&r, 200, "sandbox disks");
	assert_null(strstr(sbx_strbuf_str(&r.body), "TOPSECRET"));
	a = cJSON_GetArrayItem(data_item(&r, "data"), 0); /* a page: {data, pagination} */
	assert_non_null(a);
	assert_string_equal(cJSON_GetObjectItem(a, "disk_id")->valuestring, disk);
	assert_string_equal(cJSON_GetObjectItem(a, "name")->valuestring, "d1");
	assert_string_equal(cJSON_GetObjectItem(a, "kind")->valuestring, "s3");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "config"), "bucket")->valuestring, "b");
	assert_string_equal(cJSON_GetObjectItem(a, "mount_status")->valuestring, "mounted");
	assert_string_equal(cJSON_GetObjectItem(a, "sub_path")->valuestring, "s");
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(disks_keep_state_and_hide_credentials, mf_reset),
		cmocka_unit_test_setup(create_time_disks, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

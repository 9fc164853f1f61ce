/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl): files — binary upload and download, the guest's
 * view of the same tree, path confinement (.., symlinks, relative paths). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "mock_fixture.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(files_roundtrip_and_confinement, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

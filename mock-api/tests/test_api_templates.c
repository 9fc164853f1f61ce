/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl): templates — pending, building, ready on the
 * virtual clock, logs, delete. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mock_fixture.h"

/* Templates: pending -> building -> ready on the virtual clock (realistic
 * timing), the dockerfile only on request, logs as text and NDJSON ending
 * with a final frame, delete. */
static void templates_build_on_the_clock(void **state)
{
	char tpl[64], path[160], body_buf[160];
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
	snprintf(body_buf, sizeof(body_buf), "{\"shape\":\"s-1vcpu-256mb\",\"rootfs\":\"%s\"}", tpl);
	th_json(U, "tk", "POST", "/v1/sandboxes", body_buf, &r);
	expect_status(&r, 400, "a building template as rootfs");
	assert_non_null(fail_field(&r, "rootfs"));
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
	/* ?attempt= honoured: the one build is attempt 1 */
	snprintf(path, sizeof(path), "/v1/templates/%s/logs?attempt=1", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	expect_status(&r, 200, "logs of attempt 1");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/templates/%s/logs?attempt=2", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	expect_status(&r, 404, "logs of an unknown attempt");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/templates/%s/logs?attempt=x", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	expect_status(&r, 400, "logs of a junk attempt");
	th_resp_free(&r);
	/* ready: a rootfs, by id (above) or by name */
	th_json(U, "tk", "POST", "/v1/sandboxes", body_buf, &r);
	expect_status(&r, 200, "a ready template as rootfs (id)");
	th_resp_free(&r);
	th_json(U, "other", "GET", "/v1/templates/t1", NULL, &r);
	expect_status(&r, 404, "another key's template");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/templates/%s", tpl);
	th_json(U, "tk", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "template delete");
	assert_true(cJSON_IsTrue(data_item(&r, "ok")));
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
		cmocka_unit_test_setup(templates_build_on_the_clock, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

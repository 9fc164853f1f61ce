/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl): egress — GET/PUT with normalisation, a bad rule
 * named by its index, the admin oracle (/_mock/egress/check), NUL escapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mock_fixture.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(egress_get_put_and_oracle, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

/* Integration over loopback (the shared fixture): metrics (issue 25, item
 * 5) — a sandbox's CPU and memory from its cell's accounting, a tenant's
 * usage now and over a window, every answer's shape and types, the owner
 * gate (404 for another tenant's id) and the checks of the query. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mock_fixture.h"

static void need_contained(void)
{
	if (!sbx_mock_guests_contained(g_mock)) {
		print_message("metrics need contained guests (guest mode %s)\n", sbx_mock_guest_mode(g_mock));
		skip();
	}
}

static double num(const th_resp *r, const char *field)
{
	const cJSON *v = data_item(r, field);

	if (!cJSON_IsNumber(v))
		fail_msg("data.%s: want a number in %s", field, sbx_strbuf_str(&r->body));
	return v->valuedouble;
}

static void busy_exec(const char *id)
{
	char path[128];
	th_resp r;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	/* 0.3 s of CPU and 40 MiB touched: both must show */
	th_json(U, "k1", "POST", path,
		"{\"cmd\":\"python3\",\"args\":[\"-c\",\"import time\\nb=bytearray(40<<20)\\n"
		"t=time.process_time()\\nwhile time.process_time()-t<0.3: pass\"]}",
		&r);
	expect_status(&r, 200, "busy exec");
	assert_int_equal(cJSON_GetObjectItem(data_item(&r, "result"), "exit_code")->valueint, 0);
	th_resp_free(&r);
}

static void sandbox_metrics_shape_and_values(void **state)
{
	char id[64], path[128];
	th_resp r;

	(void)state;
	need_contained();
	create("k1", "{\"shape\":\"s-1vcpu-256mb\"}", id, sizeof(id));
	busy_exec(id);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/metrics", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 200, "sandbox metrics");
	assert_string_equal(th_data_str(&r, "id"), id);
	assert_string_equal(th_data_str(&r, "status"), "running");
	assert_non_null(th_data_str(&r, "sampled_at"));
	assert_non_null(th_data_str(&r, "source"));
	assert_true(num(&r, "vcpu") == 1 && num(&r, "mem_mib") == 256);
	/* the exec's CPU time counts after it exited (reaped by the cell) */
	assert_true(num(&r, "cpu_usage_usec") >= 250000);
	assert_true(num(&r, "pids") >= 1);
	assert_true(num(&r, "memory_bytes") > 0);
	if (strncmp(th_data_str(&r, "source"), "cgroup", 6) == 0) { /* "/proc (no cgroup...)" otherwise */
		assert_true(num(&r, "memory_limit_bytes") == 256.0 * 1024 * 1024);
		assert_true(num(&r, "memory_peak_bytes") >= 40.0 * 1024 * 1024);
	}
	th_resp_free(&r);
	th_json(U, "other-tenant", "GET", path, NULL, &r);
	expect_status(&r, 404, "another tenant's sandbox");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, "k1", "DELETE", path, NULL, &r);
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/metrics", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 409, "a destroyed sandbox");
	th_resp_free(&r);
}

static void user_metrics_sum_the_tenant(void **state)
{
	char a[64], b[64], path[128];
	const cJSON *st;
	th_resp r;

	(void)state;
	need_contained();
	create("k1", "{\"shape\":\"s-1vcpu-256mb\"}", a, sizeof(a));
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", b, sizeof(b));
	create("k2", "{\"shape\":\"s-1vcpu-1gb\"}", path, sizeof(path)); /* not k1's */
	busy_exec(a);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/pause", b);
	th_json(U, "k1", "POST", path, NULL, &r);
	th_resp_free(&r);
	th_json(U, "k1", "GET", "/v1/metrics", NULL, &r);
	expect_status(&r, 200, "user metrics");
	assert_non_null(th_data_str(&r, "user_id"));
	st = data_item(&r, "sandboxes");
	assert_int_equal(cJSON_GetObjectItem(st, "total")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(st, "running")->valueint, 1);
	assert_true(num(&r, "vcpu") == 2 && num(&r, "mem_mib") == 256 + 1024);
	assert_true(num(&r, "cpu_usage_usec") >= 250000);
	assert_true(num(&r, "memory_bytes") > 0 && num(&r, "bandwidth_used_bytes") >= 0);
	th_resp_free(&r);
}

static void timeseries_window_and_checks(void **state)
{
	char id[64];
	const cJSON *pts, *last;
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-256mb\"}", id, sizeof(id));
	th_json(U, "k1", "GET", "/v1/metrics/timeseries?window_seconds=600&step_seconds=60", NULL, &r);
	expect_status(&r, 200, "timeseries");
	assert_true(num(&r, "step_seconds") == 60);
	assert_non_null(th_data_str(&r, "from"));
	assert_non_null(th_data_str(&r, "to"));
	pts = data_item(&r, "points");
	assert_int_equal(cJSON_GetArraySize(pts), 11);
	last = cJSON_GetArrayItem(pts, 10);
	assert_true(cJSON_IsString(cJSON_GetObjectItem(last, "ts")));
	assert_int_equal(cJSON_GetObjectItem(last, "sandboxes")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(last, "mem_mib")->valueint, 256);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(pts, 0), "sandboxes")->valueint, 0);
	th_resp_free(&r);
	th_json(U, "k1", "GET", "/v1/metrics/timeseries?step_seconds=0", NULL, &r);
	expect_status(&r, 400, "step 0");
	assert_non_null(fail_field(&r, "step_seconds"));
	th_resp_free(&r);
	th_json(U, "k1", "GET", "/v1/metrics/timeseries?window_seconds=86400&step_seconds=1", NULL, &r);
	expect_status(&r, 400, "too many points");
	th_resp_free(&r);
	th_json(U, "k2", "GET", "/v1/metrics/timeseries", NULL, &r);
	expect_status(&r, 200, "another tenant's series");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(data_item(&r, "points"), 60), "sandboxes")->valueint,
			 0);
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(sandbox_metrics_shape_and_values, mf_reset),
		cmocka_unit_test_setup(user_metrics_sum_the_tenant, mf_reset),
		cmocka_unit_test_setup(timeseries_window_and_checks, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

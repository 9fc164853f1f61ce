/* Integration over loopback: template builds that build (issue 44), on the
 * rootfs image devbox:1 (mock-api/TEMPLATES.md, LIMITS.md).
 * - ARG is scoped as Docker's: one before FROM reaches no RUN, "ARG NAME"
 *   after FROM takes its default, ENV wins over an ARG of its name;
 * - one key building 64 MiB templates is refused at its storage bound
 *   (403 QUOTA_EXCEEDED) before it holds it, and what its ready templates
 *   hold is what GET /v1/metrics counts.
 *
 * Needs the image built (mock-api/images/build-image devbox:1): without a
 * store holding it the program exits 77 (ctest: skipped) saying so. The
 * store: $SBX_IMAGE_STORE, else /var/cache/sbx-harness/images as root, else
 * the user's cache (build-image's default). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contain_util.h"
#include "mock_fixture.h"

#define KEY "tplb-key"
#define MIB (1024.0 * 1024.0)

static char g_store[PATH_MAX];

static int group_setup(void **state)
{
	sbx_mock_config cfg;

	(void)state;
	mf_config_init(&cfg);
	cfg.images = g_store;
	/* no warm pool: each builder is started with its build's disk */
	cfg.warm_pool = 0;
	cfg.admin_token = "admintok";
	return mf_setup(&cfg);
}

/* the reset ends the last test's builds; then their cells are gone */
static int test_setup(void **state)
{
	int rc = mf_reset(state);

	cx_gc();
	return rc;
}

/* Skips unless this mock can build (contained guests, devbox:1 usable). */
static void need_builds(void)
{
	th_resp r;

	if (!sbx_mock_guests_contained(g_mock)) {
		print_message("template builds need contained guests (guest mode %s)\n", sbx_mock_guest_mode(g_mock));
		skip();
	}
	th_admin(U, TOK, "GET", "/_mock/images", NULL, &r);
	expect_status(&r, 200, "GET /_mock/images");
	if (strstr(sbx_strbuf_str(&r.body), "\"name\":\"devbox:1\"") == NULL) {
		th_resp_free(&r);
		print_message("devbox:1 is not in %s\n", g_store);
		skip();
	}
	th_resp_free(&r);
}

/* POST a template; its status code, and its followed log (the build's
 * end) into log when it was accepted. */
static long build(const char *name, const char *dockerfile, sbx_strbuf *log, sbx_strbuf *answer)
{
	cJSON *b = cJSON_CreateObject();
	char *json, path[160];
	th_resp r;
	long status;

	cJSON_AddStringToObject(b, "name", name);
	cJSON_AddStringToObject(b, "dockerfile", dockerfile);
	json = cJSON_PrintUnformatted(b);
	th_json(U, KEY, "POST", "/v1/templates", json, &r);
	status = r.status;
	sbx_strbuf_puts(answer, sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	cJSON_free(json);
	cJSON_Delete(b);
	if (status != 200)
		return status;
	snprintf(path, sizeof(path), "/v1/templates/%s/logs?follow=true", name);
	th_json(U, KEY, "GET", path, NULL, &r);
	expect_status(&r, 200, "template logs");
	sbx_strbuf_puts(log, sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	return status;
}

/* Docker's scope: an ARG before FROM only names a default for FROM; after
 * FROM, "ARG H" takes it; ENV wins over an ARG of the same name. */
static void arg_scope_is_dockers(void **state)
{
	sbx_strbuf log = SBX_STRBUF_INIT, ans = SBX_STRBUF_INIT;

	(void)state;
	need_builds();
	assert_int_equal(build("arg-scope",
			       "ARG G=global\nARG H=hval\nFROM nodeops/sandbox:debian\nARG H\nENV E=env\n"
			       "ARG E=argwins\nRUN echo \"G=[$G] H=[$H] E=[$E]\"\n",
			       &log, &ans),
			 200);
	if (strstr(sbx_strbuf_str(&log), "\"line\":\"G=[] H=[hval] E=[env]\"") == NULL ||
	    strstr(sbx_strbuf_str(&log), "{\"final\":true,\"status\":\"ready\"}") == NULL)
		fail_msg("a RUN sees no pre-FROM ARG but one redeclared, and ENV over ARG: %s", sbx_strbuf_str(&log));
	sbx_strbuf_free(&log);
	sbx_strbuf_free(&ans);
}

/* The key's ready templates' bytes, as GET /v1/metrics counts them. */
static double metrics_layer_bytes(void)
{
	const cJSON *ts;
	double v;
	th_resp r;

	th_json(U, KEY, "GET", "/v1/metrics", NULL, &r);
	expect_status(&r, 200, "GET /v1/metrics");
	ts = data_item(&r, "template_storage");
	assert_non_null(ts);
	v = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ts, "layer_bytes"));
	assert_true(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ts, "reserved_bytes")) == 0);
	th_resp_free(&r);
	return v;
}

/* One key builds 64 MiB templates in a loop: it is refused with 403
 * QUOTA_EXCEEDED at its storage bound (lowered to 200 MiB to stay fast;
 * the default, 1024 MiB, is mock_integration_api_templates'), never holding
 * more than the bound (so never 2 GiB), and its ready templates' layers are
 * what the metrics count. */
static void storage_bound_refuses_before_it_is_passed(void **state)
{
	static const char df[] = "FROM nodeops/sandbox:debian\nRUN head -c 67108864 /dev/zero > /blob\n";
	double held = 0;
	int ready = 0, i;
	th_resp r;

	(void)state;
	need_builds();
	/* one build at a time: it is given all the key has left */
	th_admin(U, TOK, "PUT", "/_mock/settings", "{\"template_storage_mib\":200,\"template_build_cap\":1}", &r);
	expect_status(&r, 200, "PUT template_storage_mib");
	th_resp_free(&r);
	for (i = 0; i < 8; i++) {
		sbx_strbuf log = SBX_STRBUF_INIT, ans = SBX_STRBUF_INIT;
		char name[32], path[64];
		long st;

		snprintf(name, sizeof(name), "blob%d", i);
		st = build(name, df, &log, &ans);
		if (st != 200) {
			if (st != 403 || strstr(sbx_strbuf_str(&ans), "\"code\":\"QUOTA_EXCEEDED\"") == NULL ||
			    strstr(sbx_strbuf_str(&ans), "template storage limit reached (200 MiB per key") == NULL)
				fail_msg("build %d: expected 403 QUOTA_EXCEEDED at the storage bound, got %ld: %s", i,
					 st, sbx_strbuf_str(&ans));
			sbx_strbuf_free(&log);
			sbx_strbuf_free(&ans);
			break;
		}
		if (strstr(sbx_strbuf_str(&log), "{\"final\":true,\"status\":\"ready\"}") == NULL)
			fail_msg("build %d of a 64 MiB layer within the bound: %s", i, sbx_strbuf_str(&log));
		snprintf(path, sizeof(path), "/v1/templates/%s", name);
		th_json(U, KEY, "GET", path, NULL, &r);
		held += cJSON_GetNumberValue(data_item(&r, "ext4_size_bytes"));
		th_resp_free(&r);
		ready++;
		sbx_strbuf_free(&log);
		sbx_strbuf_free(&ans);
	}
	print_message("%d templates of 64 MiB ready (%.1f MiB held), then 403\n", ready, held / MIB);
	assert_true(i < 8);
	assert_int_equal(ready, 3);
	assert_true(held >= 3 * 64 * MIB && held <= 200 * MIB);
	assert_true(metrics_layer_bytes() == held);
	th_admin(U, TOK, "PUT", "/_mock/settings", "{\"template_storage_mib\":1024,\"template_build_cap\":4}", &r);
	expect_status(&r, 200, "PUT template_storage_mib back");
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(arg_scope_is_dockers, test_setup),
		cmocka_unit_test_setup(storage_bound_refuses_before_it_is_passed, test_setup),
	};

	if (!cx_store_devbox(g_store, sizeof(g_store)))
		return 77;
	return cmocka_run_group_tests(tests, group_setup, mf_group_teardown);
}

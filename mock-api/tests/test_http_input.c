/* Integration over loopback (the shared embedded mock): strict request
 * input and answers that stay JSON (issue 16).
 *   - a JSON body with bytes that are not UTF-8, a raw control byte, or
 *     anything but whitespace after the value → 400 INVALID_JSON naming the
 *     byte offset, and nothing created;
 *   - %00 anywhere in the path or the query → 400 INVALID_PATH, never a
 *     request served with the value cut at the NUL;
 *   - a path that is not UTF-8 is answered in valid UTF-8 JSON.
 * Every answer here also passes mock_http's strict check (one JSON value,
 * valid UTF-8), which aborts the program on any that does not. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mock_fixture.h"

#define SHAPE "\"shape\":\"s-1vcpu-256mb\""

/* POSTs body (len bytes) to path with key k1; r gets the answer. */
static void post_raw(const char *path, const char *body, size_t len, th_resp *r)
{
	th_req rq = {0};

	rq.method = "POST";
	rq.url = U;
	rq.path = path;
	rq.key = "k1";
	rq.body = body;
	rq.body_len = len;
	th_do(&rq, r);
}

/* The answer is 400 INVALID_JSON whose message holds want (the what and
 * the offset). */
static void expect_bad_json(const th_resp *r, const char *want, const char *what)
{
	const char *msg = fail_field(r, "body");

	expect_status(r, 400, what);
	if (msg == NULL || strstr(msg, want) == NULL)
		fail_msg("%s: want a message with \"%s\", got %.*s", what, want, (int)r->body.len,
			 r->body.data);
	assert_string_equal(fail_field(r, "code"), "INVALID_JSON");
}

/* No sandbox was created by the refused requests. */
static void expect_no_sandboxes(void)
{
	th_resp r;
	const cJSON *d;

	th_json(U, "k1", "GET", "/v1/sandboxes", NULL, &r);
	expect_status(&r, 200, "list");
	d = data_item(&r, "data");
	assert_int_equal(cJSON_GetArraySize(d), 0);
	th_resp_free(&r);
}

static void invalid_utf8_in_strings_is_refused(void **state)
{
	static const struct {
		const char *body;
		const char *want;
	} cases[] = {
		{"{" SHAPE ",\"name\":\"a\xff" "b\"}", "invalid UTF-8 at byte offset 34"},
		/* overlong "/" and a UTF-16 surrogate written in UTF-8 */
		{"{" SHAPE ",\"name\":\"a\xc0\xaf\"}", "invalid UTF-8 at byte offset 34"},
		{"{" SHAPE ",\"name\":\"\xed\xa0\x80\"}", "invalid UTF-8 at byte offset 33"},
		/* a raw NUL would cut the stored string short */
		{"{" SHAPE ",\"name\":\"ab\0cd\"}", "control byte 0x00 at byte offset 35"},
	};
	th_resp r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* the NUL case is not a C string: sizeof - 1 of the literal */
		size_t len = i == 3 ? sizeof("{" SHAPE ",\"name\":\"ab\0cd\"}") - 1 : strlen(cases[i].body);

		post_raw("/v1/sandboxes", cases[i].body, len, &r);
		expect_bad_json(&r, cases[i].want, cases[i].want);
		th_resp_free(&r);
	}
	/* a template's dockerfile is stored and echoed: refused the same way */
	post_raw("/v1/templates", "{\"name\":\"t\",\"dockerfile\":\"FROM \xfe\"}", 34, &r);
	expect_bad_json(&r, "invalid UTF-8 at byte offset 31", "template dockerfile");
	th_resp_free(&r);
	expect_no_sandboxes();
}

static void trailing_data_after_the_value_is_refused(void **state)
{
	th_resp r;

	(void)state;
	post_raw("/v1/sandboxes", "{" SHAPE "} x", 27, &r);
	expect_bad_json(&r, "trailing data after the JSON value at byte offset 26", "trailing x");
	th_resp_free(&r);
	post_raw("/v1/sandboxes", "{" SHAPE "}{}", 27, &r);
	expect_bad_json(&r, "trailing data after the JSON value at byte offset 25", "two values");
	th_resp_free(&r);
	expect_no_sandboxes();
	/* whitespace after the value is still fine */
	post_raw("/v1/sandboxes", "{" SHAPE "} \r\n\t", 29, &r);
	expect_status(&r, 200, "trailing whitespace");
	th_resp_free(&r);
}

static void nul_in_path_or_query_is_refused(void **state)
{
	static const char *const paths[] = {
		"/v1/sandboxes?limit=5%00x", /* was served as limit=5 */
		"/v1/sandboxes/abc%00def",   /* was looked up as abc */
		"/v1/sand%00boxes",
		"/v1/sandboxes?x%00y=1",
	};
	th_resp r;

	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		th_json(U, "k1", "GET", paths[i], NULL, &r);
		expect_status(&r, 400, paths[i]);
		assert_string_equal(fail_field(&r, "code"), "INVALID_PATH");
		assert_non_null(strstr(fail_field(&r, "path"), "NUL"));
		th_resp_free(&r);
	}
	/* %25 is a percent sign, not a NUL */
	th_json(U, "k1", "GET", "/v1/sandboxes?x=%2500", NULL, &r);
	expect_status(&r, 200, "%2500");
	th_resp_free(&r);
}

/* The 404 answer names the path; a path byte that is not UTF-8 becomes
 * U+FFFD, so the answer is still JSON (the strict check in th_do). */
static void answers_stay_utf8_for_paths_that_are_not(void **state)
{
	th_resp r;
	const char *msg;

	(void)state;
	th_json(U, "k1", "GET", "/v1/s%ffandboxes", NULL, &r);
	expect_status(&r, 404, "unknown route");
	msg = fail_field(&r, "error");
	assert_non_null(msg);
	assert_non_null(strstr(msg, "/v1/s\xef\xbf\xbd" "andboxes"));
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(invalid_utf8_in_strings_is_refused, mf_reset),
		cmocka_unit_test_setup(trailing_data_after_the_value_is_refused, mf_reset),
		cmocka_unit_test_setup(nul_in_path_or_query_is_refused, mf_reset),
		cmocka_unit_test_setup(answers_stay_utf8_for_paths_that_are_not, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

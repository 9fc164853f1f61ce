/* Integration over loopback (issue 44): a template build whose RUN prints
 * 200 MB (apt, npm and compilers print a lot; this is a flood) ends ready,
 * and its log is bounded (TEMPLATES.md "Logs": the last 4000 lines, 1 MiB)
 * and says how many lines it did not keep. A followed log ends with the
 * build's final event.
 *
 * Needs devbox:1 (mock-api/images/build-image): without it the program
 * exits 77 (ctest: skipped), saying so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contain_util.h"
#include "mock_fixture.h"

#define KEY "flood-key"
#define LOG_BYTES (1024 * 1024) /* TEMPLATES.md */
#define LOG_LINES 4000
#define FLOOD_MS 600000L        /* the build, on a loaded machine */

static char g_store[PATH_MAX];

static int group_setup(void **state)
{
	sbx_mock_config cfg;

	(void)state;
	mf_config_init(&cfg);
	cfg.admin_token = "admintok";
	cfg.images = g_store;
	cfg.warm_pool = 0;
	return mf_setup(&cfg);
}

static void run_printing_200mb_ends_ready_with_a_bounded_log(void **state)
{
	th_resp r;
	th_req rq = {.method = "GET", .url = NULL, .key = KEY, .timeout_ms = FLOOD_MS};
	char path[128], id[64];
	const char *body, *last;
	size_t lines = 0;

	(void)state;
	if (!sbx_mock_guests_contained(g_mock))
		skip();
	/* 150,000,000 zero bytes in base64: 200 MB in 2.6 million lines */
	th_json(U, KEY, "POST", "/v1/templates",
		"{\"name\":\"flood\",\"dockerfile\":\"FROM nodeops/sandbox:debian\\n"
		"RUN head -c 150000000 /dev/zero | base64\\n\"}",
		&r);
	expect_status(&r, 200, "template create");
	snprintf(id, sizeof(id), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	/* followed to its end */
	snprintf(path, sizeof(path), "/v1/templates/%s/logs?follow=true", id);
	rq.url = U;
	rq.path = path;
	th_do(&rq, &r);
	expect_status(&r, 200, "followed log");
	body = sbx_strbuf_str(&r.body);
	last = strstr(body, "{\"final\":true");
	if (last == NULL || strncmp(last, "{\"final\":true,\"status\":\"ready\"}", 31) != 0)
		fail_msg("want the followed log to end {\"final\":true,\"status\":\"ready\"}, got ...%s",
			 body + (strlen(body) > 600 ? strlen(body) - 600 : 0));
	th_resp_free(&r);
	/* the log as text: bounded, the marker first */
	snprintf(path, sizeof(path), "/v1/templates/%s/logs", id);
	th_json(U, KEY, "GET", path, NULL, &r);
	expect_status(&r, 200, "log");
	body = sbx_strbuf_str(&r.body);
	if (strncmp(body, "[", 1) != 0 || strstr(body, " earlier lines not kept: ") == NULL)
		fail_msg("want the log to start saying how many lines it did not keep, got \"%.200s\"", body);
	for (const char *c = body; *c != '\0'; c++)
		lines += *c == '\n';
	if (r.body.len > LOG_BYTES + 4096 || lines > LOG_LINES + 1)
		fail_msg("the log holds %zu bytes in %zu lines, want at most %d bytes and %d lines (and the marker)",
			 r.body.len, lines, LOG_BYTES, LOG_LINES);
	/* its end: the flood's last line, then the build's own */
	if (strstr(body, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\nsaving the template's layer\n") ==
	    NULL)
		fail_msg("want the flood's last line before \"saving the template's layer\", got ...%s",
			 body + (r.body.len > 400 ? r.body.len - 400 : 0));
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(run_printing_200mb_ends_ready_with_a_bounded_log),
	};

	if (!cx_store_devbox(g_store, sizeof(g_store)))
		return 77;
	return cmocka_run_group_tests(tests, group_setup, mf_group_teardown);
}

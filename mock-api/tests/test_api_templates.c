/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl, without a rootfs image): templates — the Dockerfile
 * as the vendor accepts it, a build that fails saying it has no image
 * (never a fake ready), logs, delete. The builds that build are
 * test_templates_build.c's (they need devbox:1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mock_fixture.h"
#include "model/model.h" /* the default bounds */

static void refused(const char *dockerfile, const char *what, const char *says)
{
	cJSON *b = cJSON_CreateObject();
	char *json;
	th_resp r;
	const char *msg;

	cJSON_AddStringToObject(b, "name", "refused");
	cJSON_AddStringToObject(b, "dockerfile", dockerfile);
	json = cJSON_PrintUnformatted(b);
	th_json(U, "tk", "POST", "/v1/templates", json, &r);
	expect_status(&r, 400, what);
	msg = fail_field(&r, "dockerfile");
	assert_non_null(msg);
	if (strstr(msg, says) == NULL)
		fail_msg("%s: \"%s\" does not say \"%s\"", what, msg, says);
	th_resp_free(&r);
	cJSON_free(json);
	cJSON_Delete(b);
}

/* What the vendor's docs refuse is refused at create, naming the line. */
static void dockerfile_rules(void **state)
{
	th_resp r;

	(void)state;
	th_json(U, "tk", "POST", "/v1/templates", "{\"name\":\"t1\"}", &r);
	expect_status(&r, 400, "template without dockerfile");
	assert_non_null(fail_field(&r, "dockerfile"));
	th_resp_free(&r);
	th_json(U, "tk", "POST", "/v1/templates",
		"{\"name\":\"t1\",\"dockerfile\":\"FROM nodeops/sandbox:debian\",\"base\":\"nope:9\"}", &r);
	expect_status(&r, 400, "template of an unknown base");
	assert_non_null(fail_field(&r, "base"));
	th_resp_free(&r);
	refused("FROM nodeops/sandbox:debian\nCOPY a /a\n", "COPY", "line 2: COPY is not permitted");
	refused("FROM nodeops/sandbox:debian\nADD https://x/y /y\n", "ADD", "ADD is not permitted");
	refused("FROM debian:trixie-slim\nRUN true\n", "a base off the allow-list",
		"not an allow-listed base image (allowed: nodeops/sandbox:debian)");
	refused("RUN true\n", "RUN before FROM", "RUN before FROM");
	refused("# only a comment\n", "no FROM", "no FROM");
	refused("FROM nodeops/sandbox:debian\nFROM nodeops/sandbox:debian\n", "two FROMs", "a second FROM");
	refused("FROM nodeops/sandbox:debian\nEXPOSE 80\n", "an unsupported instruction",
		"unsupported instruction EXPOSE");
	refused("FROM nodeops/sandbox:debian\nRUN [\"echo\", 1]\n", "RUN's exec form of a number",
		"JSON array of strings");
	refused("FROM nodeops/sandbox:debian\nENV 1X=y\n", "a bad ENV name", "not a valid name");
}

/* What the runner holds per step is bounded, and a Dockerfile past it is
 * refused at create naming the line and the bound: before, the runner cut
 * it without a word (a RUN's 253rd word, the 257th variable, a USER name's
 * 64th byte were dropped, a build went on without them). */
static void dockerfile_bounds(void **state)
{
	sbx_strbuf df = SBX_STRBUF_INIT;

	(void)state;
	sbx_strbuf_puts(&df, "FROM nodeops/sandbox:debian\nRUN [\"true\"");
	for (int i = 1; i < 253; i++)
		sbx_strbuf_puts(&df, ",\"a\"");
	sbx_strbuf_puts(&df, "]\n");
	refused(sbx_strbuf_str(&df), "an exec form of 253 words",
		"dockerfile line 2: RUN [...]: 253 arguments; the exec form takes at most 252");
	df.len = 0;
	sbx_strbuf_puts(&df, "FROM nodeops/sandbox:debian\n");
	for (int i = 0; i < 256; i++)
		sbx_strbuf_printf(&df, "%s V%d=x\n", i % 2 ? "ENV" : "ARG", i);
	sbx_strbuf_puts(&df, "ENV V0=again\nENV V256=y\n");
	refused(sbx_strbuf_str(&df), "257 variables", "dockerfile line 259: ENV V256: more than 256 variables");
	df.len = 0;
	sbx_strbuf_printf(&df, "FROM nodeops/sandbox:debian\nUSER %064d:staff\n", 0);
	refused(sbx_strbuf_str(&df), "a USER name of 64 bytes", "line 2: USER: the name \"0000");
	refused(sbx_strbuf_str(&df), "a USER name of 64 bytes", "is 64 bytes; at most 63");
	df.len = 0;
	sbx_strbuf_printf(&df, "FROM nodeops/sandbox:debian\nENV A%0256d value\n", 0);
	refused(sbx_strbuf_str(&df), "a legacy ENV name of 257 bytes", "line 2: ENV: the name \"A000");
	sbx_strbuf_free(&df);
}

/* One request (key NULL: the admin API) that must answer want, with says
 * in its body when says is not NULL. */
static void answers(const char *key, const char *method, const char *path, const char *body, long want,
		    const char *says)
{
	th_resp r;

	if (key == NULL)
		th_admin(U, TOK, method, path, body, &r);
	else
		th_json(U, key, method, path, body, &r);
	expect_status(&r, want, path);
	if (says != NULL && strstr(sbx_strbuf_str(&r.body), says) == NULL)
		fail_msg("%s %s: \"%s\" is not in %s", method, path, says, sbx_strbuf_str(&r.body));
	th_resp_free(&r);
}

/* Without an image the build runs nothing: pending first, then failed
 * with the reason in the log; never ready. */
static void build_without_image_fails_saying_why(void **state)
{
	char tpl[64], path[160], body_buf[160];
	th_resp r;
	const char *body;

	(void)state;
	th_json(U, "tk", "POST", "/v1/templates",
		"{\"name\":\"t1\",\"dockerfile\":\"FROM nodeops/sandbox:debian\\n"
		"# a comment\\nRUN echo a \\\\\\n  b\\nENV A=1 B=\\\"two words\\\"\\nLABEL k=v\\n"
		"WORKDIR /srv\\nUSER root\\nARG V=3\\nCMD [\\\"sh\\\"]\\nENTRYPOINT [\\\"x\\\"]\"}",
		&r);
	expect_status(&r, 200, "template create");
	assert_string_equal(th_data_str(&r, "status"), "pending");
	assert_non_null(th_data_str(&r, "dockerfile")); /* the create's answer shows it */
	assert_null(data_item(&r, "_steps"));
	snprintf(tpl, sizeof(tpl), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/templates/%s", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	assert_null(data_item(&r, "dockerfile"));
	th_resp_free(&r);
	/* follow: the events up to the final one */
	snprintf(path, sizeof(path), "/v1/templates/%s/logs?follow=true", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	expect_status(&r, 200, "template logs");
	body = sbx_strbuf_str(&r.body);
	assert_non_null(strstr(body, "{\"final\":true,\"status\":\"failed\"}\n"));
	if (strstr(body, "no rootfs image for base devbox:1") == NULL &&
	    strstr(body, "template builds need contained guests") == NULL)
		fail_msg("the failed build's log does not say why: %s", body);
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/templates/%s?include=dockerfile", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	assert_string_equal(th_data_str(&r, "status"), "failed");
	assert_null(data_item(&r, "built_at"));
	assert_non_null(th_data_str(&r, "dockerfile"));
	th_resp_free(&r);
	snprintf(body_buf, sizeof(body_buf), "{\"shape\":\"s-1vcpu-256mb\",\"rootfs\":\"%s\"}", tpl);
	th_json(U, "tk", "POST", "/v1/sandboxes", body_buf, &r);
	expect_status(&r, 400, "a failed template as rootfs");
	assert_non_null(fail_field(&r, "rootfs"));
	th_resp_free(&r);
	/* ?attempt= honoured: the one build is attempt 1 */
	snprintf(path, sizeof(path), "/v1/templates/%s/logs?attempt=1", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	expect_status(&r, 200, "logs of attempt 1");
	assert_non_null(strstr(sbx_strbuf_str(&r.body), "build failed"));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/templates/%s/logs?attempt=2", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	expect_status(&r, 404, "logs of an unknown attempt");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/templates/%s/logs?attempt=x", tpl);
	th_json(U, "tk", "GET", path, NULL, &r);
	expect_status(&r, 400, "logs of a junk attempt");
	th_resp_free(&r);
	th_json(U, "other", "GET", "/v1/templates/t1", NULL, &r);
	expect_status(&r, 404, "another key's template");
	th_resp_free(&r);
	/* a list never shows a dockerfile; the logs route takes the name as
	 * the other routes do; a template not found is a 404 before its
	 * ?attempt= is looked at */
	th_json(U, "tk", "GET", "/v1/templates", NULL, &r);
	expect_status(&r, 200, "template list");
	assert_int_equal(cJSON_GetArraySize(data_item(&r, "data")), 1);
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(data_item(&r, "data"), 0), "dockerfile"));
	th_resp_free(&r);
	answers("tk", "GET", "/v1/templates/t1/logs", NULL, 200, "build failed");
	answers("other", "GET", "/v1/templates/t1/logs?attempt=x", NULL, 404, "template not found");
	answers("other", "DELETE", "/v1/templates/t1", NULL, 404, "template not found");
	snprintf(path, sizeof(path), "/v1/templates/%s", tpl);
	th_json(U, "tk", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "template delete");
	assert_true(cJSON_IsTrue(data_item(&r, "ok")));
	th_resp_free(&r);
	th_json(U, "tk", "GET", path, NULL, &r);
	expect_status(&r, 404, "deleted template");
	th_resp_free(&r);
}

/* The caps on concurrent builds are settings; a create over either is
 * refused at once and makes no template (a cap of 0 refuses every build:
 * the counting itself, with builds that hold, is sdk_templates'). */
static void build_caps_refuse_at_create(void **state)
{
	static const char body[] = "{\"name\":\"capped\",\"dockerfile\":\"FROM nodeops/sandbox:debian\\nRUN true\"}";
	static const char *const set = "/_mock/settings";

	(void)state;
	answers(NULL, "GET", set, NULL, 200, "\"template_build_cap\":4,\"template_build_cap_global\":8");
	answers(NULL, "PUT", set, "{\"template_build_cap\":1.5}", 400, "template_build_cap must be a whole number");
	answers(NULL, "PUT", set, "{\"template_build_cap_global\":-1}", 400, "template_build_cap_global must be");

	answers(NULL, "PUT", set, "{\"template_build_cap\":0}", 200, NULL);
	answers("tk", "POST", "/v1/templates", body, 403,
		"\"error\":\"concurrent template build limit reached (0 per key; 0 pending, 0 building)");
	answers("tk", "POST", "/v1/templates", body, 403, "\"code\":\"QUOTA_EXCEEDED\"");
	answers("tk", "GET", "/v1/templates", NULL, 200, "\"data\":[]");

	answers(NULL, "PUT", set, "{\"template_build_cap\":4,\"template_build_cap_global\":0}", 200, NULL);
	answers("tk", "POST", "/v1/templates", body, 503,
		"\"status\":\"error\",\"message\":\"the mock's concurrent template build limit is reached "
		"(0 builds across all keys)");
	answers(NULL, "PUT", set, "{\"template_build_cap_global\":8}", 200, NULL);

	/* within the caps again: the create is accepted, and its build, once
	 * ended (failed: no image here), no longer counts */
	answers("tk", "POST", "/v1/templates", body, 200, "\"status\":\"pending\"");
	answers("tk", "GET", "/v1/templates/capped/logs?follow=true", NULL, 200, "{\"final\":true");
	answers("tk", "GET", "/v1/metrics", NULL, 200,
		"\"template_builds\":{\"pending\":0,\"building\":0,\"total\":0}");
}

/* The templates a key keeps and their storage are bounded (LIMITS.md).
 * The defaults: 32 templates, 1024 MiB per key (a key building 64 MiB
 * templates is refused at 1 GiB, before it holds 2), 8192 MiB in the mock.
 * Over the key's count or bytes: 403 QUOTA_EXCEEDED; over the mock's
 * bytes: 503. A build's reservation (its disk) counts until it ends; the
 * loop of real 64 MiB builds is mock_integration_templates_build's. */
static void storage_bounds_refuse_at_create(void **state)
{
	static const char body[] = "{\"name\":\"kept\",\"dockerfile\":\"FROM nodeops/sandbox:debian\\nRUN true\"}";
	static const char *const set = "/_mock/settings";

	(void)state;
	answers(NULL, "GET", set, NULL, 200,
		"\"template_cap\":32,\"template_storage_mib\":1024,\"template_storage_mib_global\":8192");
	assert_true(MOCK_TPL_STORAGE_MIB < 2048 && MOCK_TPL_STORAGE_MIB <= MOCK_TPL_STORAGE_MIB_GLOBAL);
	answers(NULL, "PUT", set, "{\"template_storage_mib\":16777217}", 400, "template_storage_mib must be");
	static const struct {
		const char *settings;
		long status;
		const char *says;
	} over[] = {
		{"{\"template_cap\":0}", 403,
		 "\"error\":\"template limit reached (0 per key): delete one to create another\""},
		{"{\"template_cap\":32,\"template_storage_mib\":63}", 403,
		 "\"error\":\"template storage limit reached (63 MiB per key; 0 MiB in ready templates' layers, 0 "
		 "MiB reserved by builds not ended; a build needs 16 MiB left per build the key may start)"},
		{"{\"template_storage_mib\":1024,\"template_storage_mib_global\":0}", 503,
		 "the mock's template storage is full (0 MiB across all keys"},
	};

	for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
		answers(NULL, "PUT", set, over[i].settings, 200, NULL);
		answers("tk", "POST", "/v1/templates", body, over[i].status, over[i].says);
	}
	answers("tk", "GET", "/v1/templates", NULL, 200, "\"data\":[]");
	/* a build reserves the disk it is given (the least of the build's disk
	 * and what is left) until it ends */
	answers(NULL, "PUT", set, "{\"template_storage_mib_global\":8192,\"template_build_disk_mib\":100}", 200, NULL);
	answers("tk", "POST", "/v1/templates", body, 200, "\"status\":\"pending\"");
	answers("tk", "GET", "/v1/templates/kept/logs?follow=true", NULL, 200, "disk 100 MiB");
	answers("tk", "GET", "/v1/metrics", NULL, 200,
		"\"template_storage\":{\"templates\":1,\"template_cap\":32,\"layer_bytes\":0,\"reserved_bytes\":0,"
		"\"limit_bytes\":1073741824}");
	answers(NULL, "PUT", set, "{\"template_build_disk_mib\":4096}", 200, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(dockerfile_rules, mf_reset),
		cmocka_unit_test_setup(dockerfile_bounds, mf_reset),
		cmocka_unit_test_setup(build_without_image_fails_saying_why, mf_reset),
		cmocka_unit_test_setup(build_caps_refuse_at_create, mf_reset),
		cmocka_unit_test_setup(storage_bounds_refuse_at_create, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

/* mock_fixture: the shared group fixture of the mock's integration tests;
 * see mock_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "mock_fixture.h"

sbx_mock *g_mock;
const char *U;
const char *TOK;

void mf_config_init(sbx_mock_config *cfg)
{
	sbx_mock_config_init(cfg);
	cfg->quiet = true;
}

sbx_mock *mf_start(const sbx_mock_config *cfg)
{
	sbx_err err = {{0}};
	sbx_mock *m = sbx_mock_start(cfg, &err);

	if (m == NULL)
		fprintf(stderr, "mock start: %s\n", err.msg);
	return m;
}

int mf_setup(const sbx_mock_config *cfg)
{
	curl_global_init(CURL_GLOBAL_ALL);
	g_mock = mf_start(cfg);
	if (g_mock == NULL)
		return -1;
	U = sbx_mock_url(g_mock);
	TOK = sbx_mock_admin_token(g_mock);
	return 0;
}

int mf_group_setup(void **state)
{
	sbx_mock_config cfg;

	(void)state;
	mf_config_init(&cfg);
	cfg.admin_token = "admintok";
	cfg.self_listen = "127.0.0.1:0";
	return mf_setup(&cfg);
}

int mf_group_teardown(void **state)
{
	(void)state;
	sbx_mock_stop(g_mock);
	curl_global_cleanup();
	return 0;
}

int mf_reset(void **state)
{
	th_resp r;

	(void)state;
	th_admin(U, TOK, "POST", "/_mock/reset", NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	return 0;
}

void create(const char *key, const char *body, char *id, size_t cap)
{
	th_resp r;

	th_json(U, key, "POST", "/v1/sandboxes", body, &r);
	if (r.status != 200)
		fail_msg("create %s: expected 200, got %ld: %s", body, r.status, sbx_strbuf_str(&r.body));
	assert_non_null(th_data_str(&r, "id"));
	snprintf(id, cap, "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
}

const char *fail_field(const th_resp *r, const char *field)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(r->json, "data");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, field);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

void expect_status(const th_resp *r, long want, const char *what)
{
	if (r->status != want)
		fail_msg("%s: expected %ld, got %ld: %s", what, want, r->status, sbx_strbuf_str(&r->body));
}

const cJSON *data_item(const th_resp *r, const char *field)
{
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->json, "data"), field);
}

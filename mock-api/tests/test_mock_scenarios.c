/* Integration: every scenario file in fixtures/scenarios/ loads (by name,
 * through the mock's search path, as `sbx-mock --scenario NAME` does) and
 * reproduces the situation its description names. A new scenario file
 * without a check here fails the coverage test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_http.h"
#include "sbx/mock.h"

#ifndef SCENARIO_DIR
#error "SCENARIO_DIR must name fixtures/scenarios"
#endif

typedef struct scen {
	sbx_mock *m;
	const char *u;
	const char *tok;
} scen;

/* Starts a mock with the scenario loaded by NAME at start (cfg.scenario). */
static void scen_start(scen *s, const char *name)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};

	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.scenario = name;
	cfg.seed = 7;
	s->m = sbx_mock_start(&cfg, &err);
	if (s->m == NULL)
		fail_msg("scenario %s: mock did not start: %s", name, err.msg);
	s->u = sbx_mock_url(s->m);
	s->tok = sbx_mock_admin_token(s->m);
}

static long create(const scen *s, const char *key, const char *name, char *id, size_t cap,
		   CURLcode *rc)
{
	th_resp r;
	char body[128];
	long st;

	snprintf(body, sizeof(body), "{\"shape\":\"s-1vcpu-1gb\"%s%s%s}", name ? ",\"name\":\"" : "",
		 name ? name : "", name ? "\"" : "");
	th_json(s->u, key, "POST", "/v1/sandboxes", body, &r);
	st = r.status;
	if (id != NULL)
		snprintf(id, cap, "%s", th_data_str(&r, "id") ? th_data_str(&r, "id") : "");
	if (rc != NULL)
		*rc = r.curl_rc;
	th_resp_free(&r);
	return st;
}

static const char *data_code(const th_resp *r)
{
	const cJSON *c = cJSON_GetObjectItem(cJSON_GetObjectItem(r->json, "data"), "code");

	return cJSON_IsString(c) ? c->valuestring : "";
}

static void capacity_exhausted(void)
{
	scen s;
	th_resp r;

	scen_start(&s, "capacity-exhausted");
	th_json(s.u, "k", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	assert_int_equal(r.status, 503);
	assert_string_equal(cJSON_GetObjectItem(r.json, "status")->valuestring, "error");
	th_resp_free(&r);
	th_json(s.u, "k", "GET", "/v1/sandboxes", NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	sbx_mock_stop(s.m);
}

static void control_plane_restart(void)
{
	scen s;
	th_resp r;
	char id[64], path[128];

	scen_start(&s, "control-plane-restart");
	assert_int_equal(create(&s, "k", NULL, id, sizeof(id), NULL), 200);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	for (int i = 0; i < 3; i++) {
		th_json(s.u, "k", "GET", path, NULL, &r);
		assert_int_equal(r.status, 200);
		th_resp_free(&r);
	}
	/* the fifth control-plane request meets the restart */
	th_json(s.u, "k", "GET", path, NULL, &r);
	assert_int_equal(r.curl_rc, CURLE_RECV_ERROR);
	th_resp_free(&r);
	th_json(s.u, NULL, "GET", "/readyz", NULL, &r);
	assert_int_equal(r.status, 503);
	th_resp_free(&r);
	th_json(s.u, "k", "GET", path, NULL, &r);
	assert_int_equal(r.status, 200); /* state survived */
	th_resp_free(&r);
	th_admin(s.u, s.tok, "POST", "/_mock/clock/advance", "{\"ms\":5000}", &r);
	th_resp_free(&r);
	th_json(s.u, NULL, "GET", "/readyz", NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	sbx_mock_stop(s.m);
}

static void exec_on_paused(void)
{
	scen s;
	th_resp r;
	cJSON *fake;
	char id[64], path[128];

	scen_start(&s, "exec-on-paused");
	assert_int_equal(create(&s, "k", NULL, id, sizeof(id), NULL), 200);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	th_json(s.u, "k", "POST", path, "{\"cmd\":\"true\"}", &r);
	assert_int_equal(r.status, 409);
	assert_string_equal(data_code(&r), "NOT_RUNNING");
	fake = cJSON_Duplicate(cJSON_GetObjectItem(r.json, "data"), true);
	th_resp_free(&r);
	th_json(s.u, "k", "POST", path, "{\"cmd\":\"true\"}", &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	/* issue 19 item 19: the scenario sends what the mock itself answers
	 * for a guest that really is paused (it sent data.error +
	 * SANDBOX_NOT_RUNNING while the mock sends data.status + NOT_RUNNING) */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/pause", id);
	th_json(s.u, "k", "POST", path, NULL, &r);
	assert_true(r.status == 200 || r.status == 202);
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	th_json(s.u, "k", "POST", path, "{\"cmd\":\"true\"}", &r);
	assert_int_equal(r.status, 409);
	if (!cJSON_Compare(fake, cJSON_GetObjectItem(r.json, "data"), true)) {
		char *a = cJSON_PrintUnformatted(fake), *b = cJSON_PrintUnformatted(cJSON_GetObjectItem(r.json, "data"));

		fail_msg("scenario answers %s, the paused mock answers %s", a, b);
	}
	cJSON_Delete(fake);
	th_resp_free(&r);
	sbx_mock_stop(s.m);
}

static void flaky_network(void)
{
	scen s;
	th_resp r;
	int resets = 0, ok = 0;

	scen_start(&s, "flaky-network");
	for (int i = 0; i < 40; i++) {
		th_json(s.u, "k", "GET", "/v1/shapes", NULL, &r);
		if (r.curl_rc == CURLE_RECV_ERROR)
			resets++;
		else if (r.status == 200)
			ok++;
		th_resp_free(&r);
	}
	/* 20% resets: with 40 draws, both outcomes appear (seeded, so stable) */
	if (resets == 0 || ok == 0 || resets > 20)
		fail_msg("flaky-network: %d resets and %d answers out of 40", resets, ok);
	sbx_mock_stop(s.m);
}

static void lost_create_response(void)
{
	scen s;
	th_resp r;
	CURLcode rc;
	const cJSON *sbs;

	scen_start(&s, "lost-create-response");
	create(&s, "k", "lf-lost", NULL, 0, &rc);
	assert_int_equal(rc, CURLE_RECV_ERROR);
	th_admin(s.u, s.tok, "GET", "/_mock/sandboxes?tenant=k", NULL, &r);
	sbs = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "sandboxes");
	assert_int_equal(cJSON_GetArraySize(sbs), 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(sbs, 0), "name")->valuestring,
			    "lf-lost");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(sbs, 0), "status")->valuestring,
			    "running");
	th_resp_free(&r);
	sbx_mock_stop(s.m);
}

static void out_of_credit(void)
{
	scen s;

	scen_start(&s, "out-of-credit");
	assert_int_equal(create(&s, "k", NULL, NULL, 0, NULL), 402);
	sbx_mock_stop(s.m);
}

static void over_cap(void)
{
	scen s;
	th_resp r;

	scen_start(&s, "over-cap");
	assert_int_equal(create(&s, "k", NULL, NULL, 0, NULL), 200);
	th_json(s.u, "k", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	assert_int_equal(r.status, 403);
	assert_string_equal(data_code(&r), "QUOTA_EXCEEDED");
	th_resp_free(&r);
	sbx_mock_stop(s.m);
}

static void rate_limit_storm(void)
{
	scen s;
	th_resp r;
	char v[16];

	scen_start(&s, "rate-limit-storm");
	for (int i = 0; i < 6; i++) {
		th_json(s.u, "k", "GET", "/v1/whoami", NULL, &r);
		assert_int_equal(r.status, 429);
		assert_true(th_header(&r, "Retry-After", v, sizeof(v)));
		assert_string_equal(v, "2");
		assert_string_equal(data_code(&r), "RATE_LIMITED");
		th_resp_free(&r);
	}
	th_json(s.u, "k", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	sbx_mock_stop(s.m);
}

static void stuck_destroy(void)
{
	scen s;
	th_resp r;
	char id[64], path[128];

	scen_start(&s, "stuck-destroy");
	assert_int_equal(create(&s, "k", NULL, id, sizeof(id), NULL), 200);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(s.u, "k", "DELETE", path, NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	th_admin(s.u, s.tok, "POST", "/_mock/clock/advance", "{\"ms\":600000}", &r);
	th_resp_free(&r);
	th_json(s.u, "k", "GET", path, NULL, &r);
	assert_string_equal(th_data_str(&r, "status"), "destroying");
	th_resp_free(&r);
	sbx_mock_stop(s.m);
}

/* The body of r is exactly `want`, byte for byte. */
static void body_is(const th_resp *r, const char *want)
{
	if (r->body.len != strlen(want) || memcmp(r->body.data, want, r->body.len) != 0)
		fail_msg("body: want %s\ngot  %.*s", want, (int)r->body.len,
			 r->body.data != NULL ? r->body.data : "");
}

static void gateway_html_page(void)
{
	scen s;
	th_resp r;
	th_req rq = {.method = "GET", .path = "/v1/sandboxes", .key = "k"};
	char v[128];

	scen_start(&s, "gateway-html-page");
	rq.url = s.u;
	th_do(&rq, &r);
	assert_int_equal(r.status, 502);
	body_is(&r, "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad "
		    "Gateway</h1></center></body></html>\n");
	assert_int_equal(th_header_count(&r, "Content-Type"), 1);
	assert_true(th_header(&r, "Content-Type", v, sizeof(v)));
	assert_string_equal(v, "text/html");
	assert_int_equal(th_header_count(&r, "X-Request-Id"), 0);
	th_resp_free(&r);
	th_json(s.u, "k", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	assert_int_equal(r.status, 200); /* only reads meet the gateway page */
	th_resp_free(&r);
	sbx_mock_stop(s.m);
}

/* The scenario answers a create with `status` and exactly `body`, with the
 * mock's one X-Request-Id. */
static void create_answers(const char *name, long status, const char *body)
{
	scen s;
	th_resp r;

	scen_start(&s, name);
	th_json(s.u, "k", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	assert_int_equal(r.status, status);
	body_is(&r, body);
	assert_int_equal(th_header_count(&r, "X-Request-Id"), 1);
	th_resp_free(&r);
	sbx_mock_stop(s.m);
}

static void fail_null_data(void)
{
	create_answers("fail-null-data", 422, "{\"status\":\"fail\",\"data\":null}");
}

static void capacity_fail_code(void)
{
	create_answers("capacity-fail-code", 503,
		       "{\"status\":\"fail\",\"data\":{\"error\":\"no host with capacity\","
		       "\"code\":\"NO_CAPACITY\"}}");
}

static void fc_request_id_only(void)
{
	scen s;
	th_resp r;
	char id[64], path[128], v[64];

	scen_start(&s, "fc-request-id-only");
	assert_int_equal(create(&s, "k", NULL, id, sizeof(id), NULL), 200);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(s.u, "k", "GET", path, NULL, &r);
	assert_int_equal(r.status, 500);
	body_is(&r, "{\"status\":\"error\",\"message\":\"internal error\",\"code\":500}");
	assert_int_equal(th_header_count(&r, "X-Request-Id"), 0);
	assert_int_equal(th_header_count(&r, "X-Fc-Request-Id"), 1);
	assert_true(th_header(&r, "X-Fc-Request-Id", v, sizeof(v)));
	assert_string_equal(v, "fc-7f3a9c01");
	th_resp_free(&r);
	sbx_mock_stop(s.m);
}

static const struct {
	const char *name;
	void (*check)(void);
} checks[] = {
	{"capacity-exhausted", capacity_exhausted},
	{"capacity-fail-code", capacity_fail_code},
	{"control-plane-restart", control_plane_restart},
	{"exec-on-paused", exec_on_paused},
	{"fail-null-data", fail_null_data},
	{"fc-request-id-only", fc_request_id_only},
	{"flaky-network", flaky_network},
	{"gateway-html-page", gateway_html_page},
	{"lost-create-response", lost_create_response},
	{"out-of-credit", out_of_credit},
	{"over-cap", over_cap},
	{"rate-limit-storm", rate_limit_storm},
	{"stuck-destroy", stuck_destroy},
};

static void each_scenario_reproduces_its_situation(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		print_message("scenario %s\n", checks[i].name);
		checks[i].check();
	}
}

static cJSON *load(const char *path)
{
	FILE *fp = fopen(path, "rb");
	char buf[65536];
	size_t n;

	assert_non_null(fp);
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	return cJSON_Parse(buf);
}

/* Every file: valid JSON, name = file name, a description, and a check. */
static void every_scenario_file_is_documented_and_checked(void **state)
{
	DIR *d = opendir(SCENARIO_DIR);
	struct dirent *de;
	size_t files = 0;

	(void)state;
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		char path[1024], name[256];
		const cJSON *desc, *nm;
		cJSON *sc;
		bool checked = false;

		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		files++;
		snprintf(name, sizeof(name), "%.*s", (int)(len - 5), de->d_name);
		snprintf(path, sizeof(path), "%s/%s", SCENARIO_DIR, de->d_name);
		sc = load(path);
		if (sc == NULL)
			fail_msg("%s: not valid JSON", path);
		nm = cJSON_GetObjectItem(sc, "name");
		desc = cJSON_GetObjectItem(sc, "description");
		if (!cJSON_IsString(nm) || strcmp(nm->valuestring, name) != 0)
			fail_msg("%s: \"name\" must be \"%s\"", path, name);
		if (!cJSON_IsString(desc) || strlen(desc->valuestring) < 40)
			fail_msg("%s: \"description\" must say what real situation it reproduces", path);
		cJSON_Delete(sc);
		for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
			checked = checked || strcmp(checks[i].name, name) == 0;
		if (!checked)
			fail_msg("scenario %s has no effect check in test_mock_scenarios.c", name);
	}
	closedir(d);
	assert_int_equal(files, sizeof(checks) / sizeof(checks[0]));
}

static void unknown_scenario_names_every_place_looked(void **state)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	sbx_mock *m;

	(void)state;
	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.scenario = "no-such-scenario";
	cfg.scenario_dir = "/usr"; /* a directory without it */
	m = sbx_mock_start(&cfg, &err);
	assert_null(m);
	assert_non_null(strstr(err.msg, "/usr/no-such-scenario.json"));
	assert_non_null(strstr(err.msg, SCENARIO_DIR));
	/* --scenario-dir comes first in the search path */
	cfg.scenario = "over-cap";
	cfg.scenario_dir = SCENARIO_DIR;
	m = sbx_mock_start(&cfg, &err);
	assert_non_null(m);
	sbx_mock_stop(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_scenario_file_is_documented_and_checked),
		cmocka_unit_test(each_scenario_reproduces_its_situation),
		cmocka_unit_test(unknown_scenario_names_every_place_looked),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_ALL);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}

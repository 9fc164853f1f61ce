/* Integration: the server's threading model. A few pool threads serve every
 * connection, so anything that waits (a buffered exec, a streaming exec, a
 * hang fault) must run off the pool: reads on other connections are still
 * answered while more such requests are in flight than there are pool
 * threads, and stopping the mock ends them all. Also checks the compact
 * JSON printer against cJSON's own output (the mock's answers must not
 * change by a byte). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mock_http.h"
#include "sbx/mock.h"
#include "json_print.h"
#include "server.h"

#define NBLOCK 3 /* of each kind: 9 blocked requests, more than the pool (2-4) */

typedef struct blocked {
	const char *url;
	const char *path;
	const char *body;
	pthread_t tid;
} blocked;

static atomic_int g_finished;

static void *blocked_main(void *arg)
{
	blocked *b = arg;
	th_req rq = {.method = "POST", .url = b->url, .path = b->path, .key = "k", .body = b->body,
		     .timeout_ms = 120000};
	th_resp r;

	if (b->body == NULL)
		rq.method = "GET";
	th_do(&rq, &r);
	th_resp_free(&r);
	atomic_fetch_add(&g_finished, 1);
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Waits until the guest has created /workspace/<name> (the command runs). */
static bool wait_file(const char *url, const char *id, const char *name)
{
	char path[256];
	time_t end = time(NULL) + 60;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/%s", id, name);
	while (time(NULL) < end) {
		th_req rq = {.method = "GET", .url = url, .path = path, .key = "k", .timeout_ms = 10000};
		th_resp r;
		long st;

		th_do(&rq, &r);
		st = r.status;
		th_resp_free(&r);
		if (st == 200)
			return true;
		sleep_ms(50);
	}
	return false;
}

/* fired count of the first fault rule */
static int hang_fired(const char *url, const char *tok)
{
	th_resp r;
	int fired = -1;
	const cJSON *rules, *first;

	th_admin(url, tok, "GET", "/_mock/faults", NULL, &r);
	rules = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "rules");
	first = cJSON_IsArray(rules) ? cJSON_GetArrayItem(rules, 0) : NULL;
	if (first != NULL && cJSON_IsNumber(cJSON_GetObjectItem(first, "fired")))
		fired = cJSON_GetObjectItem(first, "fired")->valueint;
	th_resp_free(&r);
	return fired;
}

static void reads_answered_while_many_requests_block(void **state)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	sbx_mock *m;
	const char *url, *tok;
	char id[64], paths[3][NBLOCK][160], bodies[2][NBLOCK][200], name[32];
	blocked b[3 * NBLOCK];
	th_resp r;
	int n = 0;

	(void)state;
	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	m = sbx_mock_start(&cfg, &err);
	assert_non_null(m);
	url = sbx_mock_url(m);
	tok = sbx_mock_admin_token(m);
	atomic_store(&g_finished, 0);

	th_json(url, "k", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-256mb\"}", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(th_data_str(&r, "id"));
	snprintf(id, sizeof(id), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	th_admin(url, tok, "POST", "/_mock/faults",
		 "{\"match\":{\"path\":\"/v1/whoami\"},\"action\":{\"kind\":\"hang\",\"max_ms\":600000}}",
		 &r);
	assert_true(r.status == 200 || r.status == 201);
	th_resp_free(&r);

	for (int i = 0; i < NBLOCK; i++) {
		/* buffered exec, streaming exec, hang: each waits ~forever */
		snprintf(paths[0][i], sizeof(paths[0][i]), "/v1/sandboxes/%s/exec", id);
		snprintf(bodies[0][i], sizeof(bodies[0][i]),
			 "{\"cmd\":\"sh\",\"args\":[\"-c\",\"touch /workspace/b%d; exec sleep 600\"]}", i);
		snprintf(paths[1][i], sizeof(paths[1][i]), "/v1/sandboxes/%s/exec?stream=true", id);
		snprintf(bodies[1][i], sizeof(bodies[1][i]),
			 "{\"cmd\":\"sh\",\"args\":[\"-c\",\"touch /workspace/s%d; exec sleep 600\"]}", i);
		snprintf(paths[2][i], sizeof(paths[2][i]), "/v1/whoami");
		b[n++] = (blocked){.url = url, .path = paths[0][i], .body = bodies[0][i]};
		b[n++] = (blocked){.url = url, .path = paths[1][i], .body = bodies[1][i]};
		b[n++] = (blocked){.url = url, .path = paths[2][i], .body = NULL};
	}
	for (int i = 0; i < n; i++)
		assert_int_equal(pthread_create(&b[i].tid, NULL, blocked_main, &b[i]), 0);

	/* every blocked request is in flight */
	for (int i = 0; i < NBLOCK; i++) {
		snprintf(name, sizeof(name), "b%d", i);
		assert_true(wait_file(url, id, name));
		snprintf(name, sizeof(name), "s%d", i);
		assert_true(wait_file(url, id, name));
	}
	for (int i = 0; i < 600 && hang_fired(url, tok) < NBLOCK; i++)
		sleep_ms(50);
	assert_int_equal(hang_fired(url, tok), NBLOCK);

	/* reads on fresh connections are still answered */
	for (int i = 0; i < 20; i++) {
		char path[128];
		th_req rq = {.method = "GET", .url = url, .path = path, .key = "k", .timeout_ms = 10000};

		snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
		th_do(&rq, &r);
		assert_int_equal(r.status, 200);
		assert_string_equal(th_data_str(&r, "status"), "running");
		th_resp_free(&r);
	}
	th_json(url, "k", "GET", "/v1/shapes", NULL, &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	assert_int_equal(atomic_load(&g_finished), 0);

	/* stop ends every blocked request: no thread, process or connection waits */
	sbx_mock_stop(m);
	for (int i = 0; i < n; i++)
		pthread_join(b[i].tid, NULL);
	assert_int_equal(atomic_load(&g_finished), n);
}

/* A streaming exec whose client hangs up is killed even while the command
 * prints nothing (the connection is suspended then): within the exec
 * timeout of a second command that waits for the first one's pid to go
 * (60 s: a loaded machine; the first one sleeps 600, so it still fails
 * when nothing kills it). */
static void silent_stream_killed_when_client_leaves(void **state)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	sbx_mock *m;
	const char *url;
	char id[64], path[128];
	th_resp r;
	th_req rq = {.method = "POST", .key = "k", .path = path, .timeout_ms = 1000,
		     .body = "{\"cmd\":\"sh\",\"args\":[\"-c\",\"echo $$ > /workspace/pid; exec sleep 600\"],"
			     "\"stream\":true}"};

	(void)state;
	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	m = sbx_mock_start(&cfg, &err);
	assert_non_null(m);
	url = sbx_mock_url(m);
	rq.url = url;
	th_json(url, "k", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-256mb\"}", &r);
	assert_int_equal(r.status, 200);
	snprintf(id, sizeof(id), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);

	th_do(&rq, &r); /* gives up after 1 s: the command prints nothing */
	assert_int_not_equal(r.curl_rc, CURLE_OK);
	th_resp_free(&r);
	assert_true(wait_file(url, id, "pid"));
	th_json(url, "k", "POST", path,
		"{\"cmd\":\"sh\",\"args\":[\"-c\",\"while kill -0 $(cat /workspace/pid) 2>/dev/null; "
		"do sleep 0.05; done; echo gone\"],\"timeout_ms\":60000}",
		&r);
	assert_int_equal(r.status, 200);
	if (strstr(sbx_strbuf_str(&r.body), "\"stdout\":\"gone\\n\"") == NULL)
		fail_msg("the command outlived its client: %s", sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	sbx_mock_stop(m);
}

/* ---- the compact printer prints what cJSON prints ---- */

static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return g_rng;
}

static double rnd_number(void)
{
	uint64_t bits;
	double d;

	switch (rnd() % 9) {
	case 0:
		return (double)(int64_t)(rnd() % 4000000000000ULL) - 2e12; /* timestamps */
	case 1:
		return (double)(int32_t)rnd();
	case 2:
		return (double)(rnd() % 100000) / 1000.0;
	case 3:
		bits = rnd();
		memcpy(&d, &bits, sizeof(d)); /* any double: NaN, Inf, denormals */
		return d;
	case 4:
		return ldexp((double)(rnd() % 1000000), (int)(rnd() % 200) - 100);
	case 5:
		return 1e15 + (double)(rnd() % 100);
	case 6:
		return -0.0;
	case 7:
		return 5368709120.0; /* 5 GiB, the bandwidth quota */
	default:
		return (double)(rnd() % 1000);
	}
}

/* n bytes: one string in four any bytes but NUL (mostly not UTF-8), the
 * others valid UTF-8 with controls, quotes and 2-, 3- and 4-byte forms. */
static void rnd_string(char *buf, size_t n)
{
	static const char *const pieces[] = {"a", "\"", "\\", "\n", "\x01", "\x1f", "\x7f",
					     "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
	bool any = rnd() % 4 == 0;
	size_t i = 0;

	while (i < n) {
		const char *p = pieces[rnd() % 10];
		size_t k = strlen(p);

		if (any) {
			buf[i++] = (char)(1 + rnd() % 255); /* every byte but NUL */
			continue;
		}
		if (i + k > n)
			break;
		memcpy(buf + i, p, k);
		i += k;
	}
	buf[i] = '\0';
}

static cJSON *rnd_tree(int depth)
{
	char s[48];
	cJSON *o;

	switch (depth > 3 ? rnd() % 4 : rnd() % 6) {
	case 0:
		return cJSON_CreateNumber(rnd_number());
	case 1:
		rnd_string(s, rnd() % 40);
		return cJSON_CreateString(s);
	case 2:
		return (rnd() & 1) != 0 ? cJSON_CreateTrue() : cJSON_CreateNull();
	case 3:
		return cJSON_CreateFalse();
	case 4:
		o = cJSON_CreateArray();
		for (uint64_t i = rnd() % 5; i > 0; i--)
			cJSON_AddItemToArray(o, rnd_tree(depth + 1));
		return o;
	default:
		o = cJSON_CreateObject();
		for (uint64_t i = rnd() % 5; i > 0; i--) {
			rnd_string(s, rnd() % 8);
			cJSON_AddItemToObject(o, s, rnd_tree(depth + 1));
		}
		return o;
	}
}

static void json_printer_matches_cjson(void **state)
{
	(void)state;
	for (int i = 0; i < 20000; i++) {
		cJSON *t = rnd_tree(0);
		size_t len = 0;
		char *want = cJSON_PrintUnformatted(t);
		char *got = mock_json_print(t, &len);

		assert_non_null(want);
		assert_non_null(got);
		assert_int_equal(len, strlen(got));
		if (mock_utf8_valid(want, strlen(want), NULL)) {
			assert_string_equal(got, want);
		} else {
			/* cJSON copies bytes that are not UTF-8; the mock's answers
			 * must stay UTF-8 JSON (issue 16) */
			cJSON *back = cJSON_Parse(got);

			assert_true(mock_utf8_valid(got, len, NULL));
			assert_non_null(back);
			cJSON_Delete(back);
		}
		free(want);
		free(got);
		cJSON_Delete(t);
	}
}

static void json_printer_replaces_bytes_that_are_not_utf8(void **state)
{
	cJSON *o = cJSON_CreateObject();
	size_t len = 0;
	char *got;

	(void)state;
	cJSON_AddStringToObject(o, "k\xff", "a\xc3(\xe2\x82\xac\xed\xa0\x80z\xc3\xa9");
	got = mock_json_print(o, &len);
	assert_non_null(got);
	assert_string_equal(got, "{\"k\\ufffd\":\"a\\ufffd(\xe2\x82\xac\\ufffd\\ufffd\\ufffdz\xc3\xa9\"}");
	free(got);
	cJSON_Delete(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(json_printer_matches_cjson),
		cmocka_unit_test(json_printer_replaces_bytes_that_are_not_utf8),
		cmocka_unit_test(reads_answered_while_many_requests_block),
		cmocka_unit_test(silent_stream_killed_when_client_leaves),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_ALL);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}

/* Integration: record and replay. A recording mock proxies to a second,
 * normal mock (the "upstream"); the recording has no credential in it; a
 * replaying mock then answers the same client sequence with byte-identical
 * bodies (ids and timestamps from the recording), and a divergent request
 * gets a 599 JSend error showing the expected and the received request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include "mock_http.h"
#include "sbx/mock.h"
#include "sbx/sys.h"

#define NSTEPS 9

typedef struct step {
	const char *method;
	const char *path;      /* "{id}" = the sandbox id of step 0 */
	const char *body;
	const char *ctype;
} step;

static const step steps[NSTEPS] = {
	{"POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\",\"name\":\"rec-1\"}", NULL},
	{"GET", "/v1/sandboxes/{id}", NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/exec", "{\"cmd\":\"echo\",\"args\":[\"recorded\"]}", NULL},
	{"PUT", "/v1/sandboxes/{id}/files?path=/workspace/b.bin", "\x01\x02\xff\xfe\x00z",
	 "application/octet-stream"},
	{"GET", "/v1/sandboxes/{id}/files?path=/workspace/b.bin", NULL, NULL},
	{"POST", "/v1/sandboxes/{id}/pause", NULL, NULL},
	{"GET", "/v1/sandboxes?limit=10&offset=0", NULL, NULL},
	{"GET", "/v1/sandboxes/sb-doesnotexist", NULL, NULL},
	{"DELETE", "/v1/sandboxes/{id}", NULL, NULL},
};

static sbx_mock *start(const char *upstream, const char *to, const char *replay)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	sbx_mock *m;

	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.record_upstream = upstream;
	cfg.record_to = to;
	cfg.replay = replay;
	m = sbx_mock_start(&cfg, &err);
	if (m == NULL)
		fail_msg("mock start: %s", err.msg);
	return m;
}

/* Runs the step sequence against url, keeping each body (and status). */
static void run_steps(const char *url, const char *key, sbx_strbuf bodies[NSTEPS], long st[NSTEPS])
{
	char id[64] = "", path[256];

	for (int i = 0; i < NSTEPS; i++) {
		th_req rq = {0};
		th_resp r;

		const char *at = strstr(steps[i].path, "{id}");

		if (at != NULL)
			snprintf(path, sizeof(path), "%.*s%s%s", (int)(at - steps[i].path), steps[i].path,
				 id, at + 4);
		else
			snprintf(path, sizeof(path), "%s", steps[i].path);
		rq.method = steps[i].method;
		rq.url = url;
		rq.path = path;
		rq.key = key;
		rq.body = steps[i].body;
		rq.body_len = steps[i].ctype != NULL ? 6 : 0;
		rq.ctype = steps[i].ctype;
		th_do(&rq, &r);
		st[i] = r.status;
		sbx_strbuf_init(&bodies[i]);
		sbx_strbuf_append(&bodies[i], r.body.data != NULL ? r.body.data : "", r.body.len);
		if (i == 0 && th_data_str(&r, "id") != NULL)
			snprintf(id, sizeof(id), "%s", th_data_str(&r, "id"));
		th_resp_free(&r);
	}
}

static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "rb");
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char buf[4096];
	size_t n;

	assert_non_null(fp);
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		sbx_strbuf_append(&sb, buf, n);
	fclose(fp);
	return sbx_strbuf_detach(&sb, NULL);
}

static void record_then_replay_is_byte_identical(void **state)
{
	char file[] = "/tmp/sbx-rec-XXXXXX";
	int fd = mkstemp(file);
	sbx_mock *up, *rec, *rep;
	sbx_strbuf a[NSTEPS], b[NSTEPS];
	long sa[NSTEPS], sb_[NSTEPS];
	th_resp r;
	char *text;
	const char *msg;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	up = start(NULL, NULL, NULL);
	rec = start(sbx_mock_url(up), file, NULL);
	run_steps(sbx_mock_url(rec), "secret-key-123", a, sa);
	assert_int_equal(sa[0], 200);
	assert_int_equal(sa[2], 200);
	assert_int_equal(sa[5], 202);
	assert_int_equal(sa[7], 404);
	assert_non_null(strstr(sbx_strbuf_str(&a[2]), "recorded"));
	assert_int_equal(a[4].len, 6); /* binary download came through the proxy */
	sbx_mock_stop(rec);
	sbx_mock_stop(up); /* the replay needs no upstream */

	text = slurp(file);
	assert_null(strstr(text, "secret-key-123"));
	assert_non_null(strstr(text, "\"X-Api-Key\":\"redacted-1\""));
	assert_non_null(strstr(text, "request_body_b64")); /* non-UTF-8 upload */
	free(text);

	rep = start(NULL, NULL, file);
	run_steps(sbx_mock_url(rep), "another-key", b, sb_);
	for (int i = 0; i < NSTEPS; i++) {
		if (sa[i] != sb_[i] || a[i].len != b[i].len ||
		    memcmp(sbx_strbuf_str(&a[i]), sbx_strbuf_str(&b[i]), a[i].len) != 0)
			fail_msg("step %d (%s %s): recorded %ld %s, replayed %ld %s", i, steps[i].method,
				 steps[i].path, sa[i], sbx_strbuf_str(&a[i]), sb_[i], sbx_strbuf_str(&b[i]));
		sbx_strbuf_free(&a[i]);
		sbx_strbuf_free(&b[i]);
	}
	/* past the end: divergence; the key the replay matched all along keeps
	 * its name (issue 19 item 23: it was called "a new key") */
	th_json(sbx_mock_url(rep), "another-key", "GET", "/v1/whoami", NULL, &r);
	assert_int_equal(r.status, 599);
	msg = cJSON_GetObjectItem(r.json, "message")->valuestring;
	assert_non_null(strstr(msg, "recording ended after 9 exchanges"));
	assert_non_null(strstr(msg, "GET /v1/whoami"));
	if (strstr(msg, "key redacted-1") == NULL)
		fail_msg("the matched key is not named redacted-1: %s", msg);
	th_resp_free(&r);
	th_json(sbx_mock_url(rep), "never-seen-key", "GET", "/v1/whoami", NULL, &r);
	msg = cJSON_GetObjectItem(r.json, "message")->valuestring;
	if (strstr(msg, "key a key new to this replay") == NULL)
		fail_msg("an unknown key is not called new: %s", msg);
	th_resp_free(&r);
	sbx_mock_stop(rep);

	/* a divergent first request: expected and received, cursor unmoved */
	rep = start(NULL, NULL, file);
	th_json(sbx_mock_url(rep), "k", "POST", "/v1/sandboxes", "{\"shape\":\"s-2vcpu-2gb\"}", &r);
	assert_int_equal(r.status, 599);
	assert_string_equal(cJSON_GetObjectItem(r.json, "status")->valuestring, "error");
	msg = cJSON_GetObjectItem(r.json, "message")->valuestring;
	assert_non_null(strstr(msg, "exchange 1 of 9: expected POST /v1/sandboxes"));
	assert_non_null(strstr(msg, "s-1vcpu-1gb"));
	assert_non_null(strstr(msg, "received POST /v1/sandboxes"));
	assert_non_null(strstr(msg, "s-2vcpu-2gb"));
	th_resp_free(&r);
	th_json(sbx_mock_url(rep), "k", "POST", "/v1/sandboxes",
		"{\"shape\":\"s-1vcpu-1gb\",\"name\":\"rec-1\"}", &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	sbx_mock_stop(rep);
	unlink(file);
}

static void bad_record_and_replay_settings_fail_at_start(void **state)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};

	(void)state;
	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.record_upstream = "http://127.0.0.1:1";
	assert_null(sbx_mock_start(&cfg, &err));
	assert_non_null(strstr(err.msg, "--record-to"));
	cfg.record_upstream = NULL;
	cfg.replay = "/nonexistent/recording.jsonl";
	assert_null(sbx_mock_start(&cfg, &err));
	assert_non_null(strstr(err.msg, "/nonexistent/recording.jsonl"));
}

struct hang_call {
	const char *url;
	long status;
};

static void *hang_call_main(void *arg)
{
	struct hang_call *h = arg;
	th_req rq = {.method = "GET", .url = h->url, .path = "/v1/whoami", .key = "k", .timeout_ms = 20000};
	th_resp r;

	th_do(&rq, &r);
	h->status = r.status;
	th_resp_free(&r);
	return NULL;
}

/* issue 19 item 14: a recording mock whose upstream never answers stops at
 * once when asked (it waited for the 900 s proxy deadline). The upstream
 * is a listener that never accepts: the request is sent, no answer comes. */
static void stop_interrupts_a_hanging_upstream(void **state)
{
	char file[] = "/tmp/sbx-rec-hang-XXXXXX";
	int fd = mkstemp(file);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	char upstream[64];
	struct hang_call h = {NULL, -1};
	pthread_t th;
	sbx_mock *rec;
	uint64_t t0;

	(void)state;
	assert_true(fd >= 0 && lfd >= 0);
	close(fd);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 8), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	snprintf(upstream, sizeof(upstream), "http://127.0.0.1:%d", ntohs(a.sin_port));
	rec = start(upstream, file, NULL);
	h.url = sbx_mock_url(rec);
	assert_int_equal(pthread_create(&th, NULL, hang_call_main, &h), 0);
	{
		/* the proxy request has reached the upstream (which never accepts) */
		struct pollfd pl = {.fd = lfd, .events = POLLIN};

		assert_int_equal(poll(&pl, 1, 30000), 1);
	}
	t0 = sbx_mono_us();
	sbx_mock_stop(rec);
	if (sbx_mono_us() - t0 > 3000000)
		fail_msg("stop took %.1f s with an upstream request hanging", (double)(sbx_mono_us() - t0) / 1e6);
	pthread_join(th, NULL);
	close(lfd);
	unlink(file);
}

/* issue 19 item 23: each broken recording line says what is wrong with it. */
static void bad_recording_lines_say_what_is_wrong(void **state)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
		{"[1,2,3]\n", "line 1: a JSON array, not an exchange object"},
		{"{\"method\":\"GET\",\"path\":\"/v1/whoami\",\"status\":200}\n{\"method\":\"GET\",\"pa",
		 "line 2: not valid JSON: the last line has no newline"},
		{"{\"method\":\"GET\",\"path\":\"/x\",\"status\":200,\"body_b64\":\"a$bc\"}\n",
		 "\"body_b64\": not valid base64: character 2 is '$'"},
		{"{\"method\":\"GET\",\"path\":\"/x\",\"status\":200,\"request_body_b64\":\"abc\"}\n",
		 "\"request_body_b64\": not valid base64: 3 characters"},
		{"{\"method\":\"GET\",\"status\":200}\n", "the exchange has no \"path\""},
		{"{\"method\":\"GET\",\"path\":\"/x\",\"status\":200.5}\n", "\"status\" is not a whole number"},
		{"{\"method\":\"GET\",\"path\":\"/x\",\"status\":200} trailing\n",
		 "line 1: data after the JSON object, from byte 42"},
		{"{\"method\":\"GET\",\"path\":\"/x\",\"status\":}\n", "line 1: not valid JSON (the parser stopped at byte"},
	};
	char path[64];
	sbx_mock_config cfg;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sbx_err err = {{0}};
		int fd;
		FILE *f;

		snprintf(path, sizeof(path), "/tmp/sbx-rec-bad-XXXXXX");
		fd = mkstemp(path);

		assert_true(fd >= 0);
		f = fdopen(fd, "w");
		fputs(cases[i].text, f);
		fclose(f);
		sbx_mock_config_init(&cfg);
		cfg.quiet = true;
		cfg.replay = path;
		assert_null(sbx_mock_start(&cfg, &err));
		if (strstr(err.msg, cases[i].want) == NULL)
			fail_msg("case %zu: expected '%s' in '%s'", i, cases[i].want, err.msg);
		unlink(path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(record_then_replay_is_byte_identical),
		cmocka_unit_test(bad_record_and_replay_settings_fail_at_start),
		cmocka_unit_test(bad_recording_lines_say_what_is_wrong),
		cmocka_unit_test(stop_interrupts_a_hanging_upstream),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_ALL);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}

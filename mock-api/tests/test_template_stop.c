/* Integration over loopback (issue 44): a mock stopped while template
 * builds run, many times over (SBX_STOP_ROUNDS, default 20; ci/stress
 * repeats the program). Each round starts a mock on devbox:1, starts
 * builds whose RUN sleeps, and stops the mock while they run; every other
 * round a create waits in a latency fault when the stop begins instead,
 * so that it reaches the builds after their stop (the stop's cut of the
 * fault's sleep comes in 50 ms slices: after the builds' stop, before the
 * workers' end). A freed and remade list once let it start a thread no
 * one joined, which outlived the model; and a create whose answer
 * libmicrohttpd asked for again once its daemon had begun to stop was
 * served twice, the first parse of its body lost (ASan saw that leak
 * about once in five runs of 20). After each stop no thread of the mock
 * is left (/proc/self/task); leaks are ASan's and valgrind's to find at
 * exit.
 *
 * Needs devbox:1 (mock-api/images/build-image): without it the program
 * exits 77 (ctest: skipped), saying so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "contain_util.h"
#include "mock_fixture.h"

#define KEY "stop-key"
#define ADMIN "admintok"
#define BUILDS 3         /* running when the stop comes */
#define BUILDING_MS 60000 /* a builder cell's start on a loaded machine */

static char g_store[PATH_MAX];

static int threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	const struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void create_tpl(const char *url, const char *name, th_resp *r)
{
	char body[256];

	snprintf(body, sizeof(body),
		 "{\"name\":\"%s\",\"dockerfile\":\"FROM nodeops/sandbox:debian\\nRUN sleep 300\\n\"}", name);
	th_json(url, KEY, "POST", "/v1/templates", body, r);
}

/* Waits until a template of the key is building (its builder runs its
 * step, or starts); false at the deadline. */
static bool wait_building(const char *url, const char *id)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/templates/%s", id);
	for (long waited = 0; waited < BUILDING_MS; waited += 20) {
		th_resp r;
		const char *st;
		bool building;

		th_json(url, KEY, "GET", path, NULL, &r);
		st = th_data_str(&r, "status");
		building = st != NULL && strcmp(st, "building") == 0;
		th_resp_free(&r);
		if (building)
			return true;
		sleep_ms(20);
	}
	return false;
}

/* The late create: POSTed on its own thread, it waits in the latency
 * fault while the mock stops. */
typedef struct late {
	char url[128];
	pthread_t th;
} late;

static void *late_main(void *arg)
{
	late *l = arg;
	th_resp r;

	create_tpl(l->url, "late", &r); /* whatever answers: the stop decides */
	th_resp_free(&r);
	return NULL;
}

/* Whether the fault rule fired (the late create is in its sleep). */
static bool fault_fired(const char *url)
{
	th_resp r;
	const cJSON *rules, *rule;
	bool fired = false;

	th_admin(url, ADMIN, "GET", "/_mock/faults", NULL, &r);
	rules = data_item(&r, "rules");
	cJSON_ArrayForEach(rule, rules) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(rule, "fired");

		fired = fired || (cJSON_IsNumber(f) && f->valuedouble >= 1);
	}
	th_resp_free(&r);
	return fired;
}

static void one_round(int round, int base_threads)
{
	sbx_mock_config cfg;
	sbx_mock *mock;
	char url[128], id[64] = "";
	late l = {0};
	bool with_late = round % 2 == 1;
	int left;

	mf_config_init(&cfg);
	cfg.admin_token = ADMIN;
	cfg.images = g_store;
	cfg.warm_pool = 0;
	cfg.template_build_cap = 100;
	cfg.template_build_cap_global = 100;
	/* each of 100 builds the key may start is given 16 MiB of storage at
	 * least (model_template.c), so the key may keep 1600 */
	cfg.template_storage_mib = 1600;
	mock = mf_start(&cfg);
	assert_non_null(mock);
	if (!sbx_mock_guests_contained(mock)) {
		sbx_mock_stop(mock);
		skip();
	}
	snprintf(url, sizeof(url), "%s", sbx_mock_url(mock));
	for (int i = 0; i < BUILDS && !with_late; i++) {
		th_resp r;
		char name[32];

		snprintf(name, sizeof(name), "b%d", i);
		create_tpl(url, name, &r);
		expect_status(&r, 200, "template create");
		snprintf(id, sizeof(id), "%s", th_data_str(&r, "id"));
		th_resp_free(&r);
	}
	if (!with_late && !wait_building(url, id))
		fail_msg("round %d: template %s not building after %d ms", round, id, BUILDING_MS);
	if (with_late) {
		th_resp r;

		th_admin(url, ADMIN, "POST", "/_mock/faults",
			 "{\"match\":{\"method\":\"POST\",\"path\":\"/v1/templates\"},"
			 "\"action\":{\"kind\":\"latency\",\"dist\":\"fixed\",\"ms\":30000}}",
			 &r);
		expect_status(&r, 200, "latency rule");
		th_resp_free(&r);
		snprintf(l.url, sizeof(l.url), "%s", url);
		assert_int_equal(pthread_create(&l.th, NULL, late_main, &l), 0);
		for (int i = 0; i < 500 && !fault_fired(url); i++)
			sleep_ms(10);
		if (!fault_fired(url))
			fail_msg("round %d: the late create never reached its latency fault", round);
	}
	sbx_mock_stop(mock);
	if (with_late)
		pthread_join(l.th, NULL);
	left = threads_now();
	if (left != base_threads)
		fail_msg("round %d (%s): %d threads after the stop, %d before the mock started", round,
			 with_late ? "a create in flight" : "builds only", left, base_threads);
}

static void stop_with_builds_in_flight_leaves_no_thread(void **state)
{
	const char *env = getenv("SBX_STOP_ROUNDS");
	long rounds = env != NULL ? strtol(env, NULL, 10) : 0;
	int base = threads_now();

	(void)state;
	assert_true(base >= 1);
	if (rounds <= 0 || rounds > 10000)
		rounds = 20;
	for (int i = 0; i < rounds; i++)
		one_round(i, base);
	print_message("%ld stops (%d builds in flight, or a create the stop overtook), no thread left\n",
		      rounds, BUILDS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stop_with_builds_in_flight_leaves_no_thread),
	};
	int rc;

	if (!cx_store_devbox(g_store, sizeof(g_store)))
		return 77;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);

	curl_global_cleanup();
	return rc;
}

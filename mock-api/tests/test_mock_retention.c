/* Integration over loopback (its own mock, with a known work dir): what a
 * destroyed sandbox leaves behind (issue 16's soak). Its guest — the struct
 * and the tree under the work dir — goes once nothing holds it: at once
 * after DELETE, or when the exec or reset that was in flight ends; the
 * model keeps the sandbox's record (GET, list, DELETE again answer as
 * before). The bound on those records (MOCK_DESTROYED_KEEP) is tested in
 * mock_unit_model. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mock_fixture.h"
#include "sbx/sys.h"

static char g_work[256];

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void tree_of(const char *id, const char *sub, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s/%.64s%.64s", g_work, id, sub);

	assert_true(n > 0 && (size_t)n < cap);
}

/* Every wait's bound: a loaded machine (ASan, two cores, other tests). */
#define DEADLINE_S 60

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Up to DEADLINE_S for path to vanish: the guest is freed by the request
 * that released it, before or just after its answer. */
static bool gone_soon(const char *path)
{
	for (double end = now_s() + DEADLINE_S;;) {
		if (!exists(path))
			return true;
		if (now_s() > end) {
			print_error("%s still there %d s after its sandbox was destroyed\n", path,
				    DEADLINE_S);
			return false;
		}
		usleep(10000);
	}
}

/* Up to DEADLINE_S for the guest file gpath of id to be there (read through
 * the files API: a contained guest's files are on its own disk, not in the
 * host tree). */
static bool appears_soon(const char *id, const char *gpath)
{
	char path[256];
	th_resp r;
	long st;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=%s", id, gpath);
	for (double end = now_s() + DEADLINE_S;;) {
		th_json(U, "k1", "GET", path, NULL, &r);
		st = r.status;
		th_resp_free(&r);
		if (st == 200)
			return true;
		if (now_s() > end) {
			print_error("%s of %s not there within %d s (last GET: %ld)\n", gpath, id,
				    DEADLINE_S, st);
			return false;
		}
		usleep(10000);
	}
}

static void expect_destroyed_record(const char *id)
{
	char path[160];
	th_resp r;
	const cJSON *it;
	bool listed = false;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 200, "GET of a destroyed sandbox");
	assert_string_equal(th_data_str(&r, "status"), "destroyed");
	th_resp_free(&r);
	th_json(U, "k1", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "DELETE again");
	th_resp_free(&r);
	th_json(U, "k1", "GET", "/v1/sandboxes?status=destroyed", NULL, &r);
	expect_status(&r, 200, "list destroyed");
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "data")) {
		if (strcmp(cJSON_GetObjectItem(it, "id")->valuestring, id) == 0)
			listed = true;
	}
	assert_true(listed);
	th_resp_free(&r);
}

static void destroy_removes_the_guest_tree(void **state)
{
	char id[64], path[160], tree[512];
	th_resp r;
	th_req rq;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/kept.txt", id);
	memset(&rq, 0, sizeof(rq));
	rq.method = "PUT";
	rq.url = U;
	rq.path = path;
	rq.key = "k1";
	rq.body = "data";
	rq.ctype = "application/octet-stream";
	th_do(&rq, &r);
	expect_status(&r, 200, "upload");
	th_resp_free(&r);
	assert_true(appears_soon(id, "/workspace/kept.txt"));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, "k1", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "delete");
	th_resp_free(&r);
	tree_of(id, "", tree, sizeof(tree));
	assert_true(gone_soon(tree));
	expect_destroyed_record(id);
}

typedef struct exec_call {
	char path[160];
	const char *body;
	th_resp r;
} exec_call;

static void *exec_thread(void *arg)
{
	exec_call *c = arg;

	th_json(U, "k1", "POST", c->path, c->body, &c->r);
	return NULL;
}

/* An exec runs (it made its marker file) when the sandbox is destroyed
 * (reset when by_reset): the exec ends, answered, and only then the guest
 * goes; with ASan/valgrind this is also the use-after-free check of the
 * guest an exec holds. The command sleeps SLEEP_S, far longer than the
 * exec takes to start on a loaded machine: an answer sooner than that,
 * counted from the exec's own request, is the destroy's cut. */
#define SLEEP_S "120"
static void destroy_under_exec(bool stream, bool by_reset)
{
	char id[64], path[160], tree[512];
	exec_call c;
	pthread_t th;
	th_resp r;
	double cut_at;

	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	memset(&c, 0, sizeof(c));
	snprintf(c.path, sizeof(c.path), "/v1/sandboxes/%s/exec", id);
	c.body = stream ? "{\"cmd\":\"sh\",\"args\":[\"-c\",\"touch /workspace/started; sleep " SLEEP_S "\"],"
			  "\"stream\":true}"
			: "{\"cmd\":\"sh\",\"args\":[\"-c\",\"touch /workspace/started; sleep " SLEEP_S "\"]}";
	assert_int_equal(pthread_create(&th, NULL, exec_thread, &c), 0);
	assert_true(appears_soon(id, "/workspace/started"));
	cut_at = now_s();
	if (by_reset) {
		th_admin(U, TOK, "POST", "/_mock/reset", NULL, &r);
		expect_status(&r, 200, "reset");
	} else {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
		th_json(U, "k1", "DELETE", path, NULL, &r);
		expect_status(&r, 200, "delete");
	}
	th_resp_free(&r);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* the exec was cut by the destroy, long before its sleep's end */
	expect_status(&c.r, 200, "the exec in flight");
	if (c.r.seconds >= strtod(SLEEP_S, NULL) - 30 || now_s() - cut_at > DEADLINE_S)
		fail_msg("the exec was not cut by the %s: answered %.1f s after it was sent "
			 "(sleep %s s), %.1f s after the %s",
			 by_reset ? "reset" : "delete", c.r.seconds, SLEEP_S, now_s() - cut_at,
			 by_reset ? "reset" : "delete");
	th_resp_free(&c.r);
	tree_of(id, "", tree, sizeof(tree));
	assert_true(gone_soon(tree));
	if (!by_reset)
		expect_destroyed_record(id);
}

static void destroy_during_a_buffered_exec(void **state)
{
	(void)state;
	destroy_under_exec(false, false);
}

static void destroy_during_a_streamed_exec(void **state)
{
	(void)state;
	destroy_under_exec(true, false);
}

static void reset_during_an_exec(void **state)
{
	(void)state;
	destroy_under_exec(false, true);
}

/* Create/delete cycles leave no tree behind (before: one per cycle until
 * the mock stopped). */
static void many_destroyed_leave_no_tree(void **state)
{
	char ids[20][64], path[160], tree[512];
	th_resp r;

	(void)state;
	for (int i = 0; i < 20; i++) {
		create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", ids[i], sizeof(ids[i]));
		snprintf(path, sizeof(path), "/v1/sandboxes/%.63s", ids[i]);
		th_json(U, "k1", "DELETE", path, NULL, &r);
		expect_status(&r, 200, "delete");
		th_resp_free(&r);
	}
	for (int i = 0; i < 20; i++) {
		tree_of(ids[i], "", tree, sizeof(tree));
		assert_true(gone_soon(tree));
	}
}

static int group_setup(void **state)
{
	sbx_mock_config cfg;
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(g_work, sizeof(g_work), "%.200s/sbx-retention-XXXXXX", tmp != NULL ? tmp : "/tmp");
	if (mkdtemp(g_work) == NULL)
		return -1;
	mf_config_init(&cfg);
	cfg.admin_token = "admintok";
	cfg.work_dir = g_work;
	return mf_setup(&cfg);
}

static int group_teardown(void **state)
{
	int rc = mf_group_teardown(state);

	/* the mock removed every tree it made; the dir is the test's */
	if (rmdir(g_work) != 0)
		fprintf(stderr, "test_mock_retention: %s was not empty after the mock stopped\n", g_work);
	return rc;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(destroy_removes_the_guest_tree, mf_reset),
		cmocka_unit_test_setup(destroy_during_a_buffered_exec, mf_reset),
		cmocka_unit_test_setup(destroy_during_a_streamed_exec, mf_reset),
		cmocka_unit_test_setup(reset_during_an_exec, mf_reset),
		cmocka_unit_test_setup(many_destroyed_leave_no_tree, mf_reset),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

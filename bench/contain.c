/* bench-contain: what containment costs (issue 13). Starts an embedded mock
 * (sbx/mock.h, 127.0.0.1 port 0) and measures, over keep-alive HTTP:
 *   - create of a sandbox: p50/p90 (POST /v1/sandboxes until 200);
 *   - exec(`true`) on a running sandbox: p50/p90, and the same command run
 *     directly on the host (posix_spawn + waitpid): the overhead is the
 *     difference of the p50s;
 *   - create -> exec(`true`) -> delete cycles/s with T threads;
 *   - pause and resume: p50/p90 from the POST until GET says paused
 *     (resp. running), on a sandbox with a background process.
 * Prints a table with the targets. A benchmark, never a test: it
 * asserts nothing about speed (exit 1 only when calls failed).
 *
 * usage: bench-contain [-n N=200] [-s cycle-seconds=5] [-t threads=2]
 *                      [-m guest-mode] [-w work-dir] */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sbx/http.h"
#include "sbx/mock.h"
#include "sbx/strbuf.h"

#include "lib/bench_api.h"

extern char **environ;

static const char *g_url;
static int exec_true(sbx_http_client *c, sbx_http_resp *out, const char *id)
{
	char path[128];
	long st;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	st = bench_call(c, "POST", path, "{\"cmd\":\"true\"}", out);
	if (st != 200 || strstr(sbx_strbuf_str(&out->body), "\"exit_code\":0") == NULL) {
		bench_failed("exec true", st, out);
		return -1;
	}
	return 0;
}

/* POST path, then GET the sandbox until its status is want. */
static int transition(sbx_http_client *c, sbx_http_resp *out, const char *id, const char *verb,
		      const char *want)
{
	char path[128], st[32];
	long s;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/%s", id, verb);
	s = bench_call(c, "POST", path, NULL, out);
	if (s != 200 && s != 202) {
		bench_failed(verb, s, out);
		return -1;
	}
	if (bench_data_field(out, "status", NULL, st, sizeof(st)) == 0 && strcmp(st, want) == 0)
		return 0;
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	for (int i = 0; i < 100000; i++) {
		if (bench_call(c, "GET", path, NULL, out) == 200 &&
		    bench_data_field(out, "status", NULL, st, sizeof(st)) == 0 && strcmp(st, want) == 0)
			return 0;
	}
	bench_failed(verb, s, out);
	return -1;
}

/* ---- cycles ---- */

typedef struct worker {
	double seconds;
	size_t cycles;
	pthread_t tid;
	char key[32];
} worker;

static void *cycle_worker(void *arg)
{
	worker *w = arg;
	char hdr[64], id[64];
	sbx_http_client *c = bench_client(g_url, hdr, sizeof(hdr), w->key);
	sbx_http_resp out = {0};
	double end = bench_now_ms() + w->seconds * 1e3;

	if (c == NULL) {
		bench_failed("client", -1, NULL);
		return NULL;
	}
	while (bench_now_ms() < end) {
		if (bench_create(c, &out, id, sizeof(id)) != 0)
			continue;
		exec_true(c, &out, id);
		bench_destroy(c, &out, id);
		w->cycles++;
	}
	sbx_http_resp_free(&out);
	sbx_http_client_free(c);
	return NULL;
}

static void row(const char *what, double p50, double p90, const char *target)
{
	printf("| %-34s | %9.2f | %9.2f | %-22s |\n", what, p50, p90, target);
}

int main(int argc, char **argv)
{
	sbx_mock_config cfg;
	sbx_mock *mock;
	sbx_err err = {{0}};
	sbx_http_client *c;
	sbx_http_resp out = {0};
	char hdr[64], id[64], path[128], mode[256] = "";
	const char *guest_mode = NULL, *work_dir = NULL;
	long n = 200, threads = 2;
	static double lat[100000], res[100000];
	static worker w[64];
	double seconds = 5, delete50, delete90, create50, create90, exec50, exec90, host50, host90,
	       bare50, bare90, p50, p90;
	size_t cycles = 0;
	int opt;

	while ((opt = getopt(argc, argv, "n:s:t:m:w:h")) != -1) {
		switch (opt) {
		case 'n':
			n = strtol(optarg, NULL, 10);
			break;
		case 's':
			seconds = strtod(optarg, NULL);
			break;
		case 't':
			threads = strtol(optarg, NULL, 10);
			break;
		case 'm':
			guest_mode = optarg;
			break;
		case 'w':
			work_dir = optarg;
			break;
		default:
			fprintf(stderr, "usage: bench-contain [-n N=200] [-s cycle-seconds=5] [-t "
					"threads=2] "
					"[-m guest-mode] [-w work-dir]\n");
			return 2;
		}
	}
	if (n < 10 || n > 100000 || seconds <= 0 || threads < 1 || threads > 64)
		return 2;
	bench_set_name("bench-contain");
	if (sbx_http_global_init() != 0)
		return 2;
	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.no_journal = true;
	cfg.sandbox_cap = 100000;
	cfg.admin_token = "bench";
	cfg.work_dir = work_dir;
	if (guest_mode != NULL)
		cfg.guest_mode = guest_mode;
	mock = sbx_mock_start(&cfg, &err);
	if (mock == NULL) {
		fprintf(stderr, "bench-contain: mock start: %s\n", err.msg);
		return 2;
	}
	g_url = sbx_mock_url(mock);
	c = bench_client(g_url, hdr, sizeof(hdr), "bench");
	if (c == NULL)
		return 2;
	{
		/* what the mock says about itself */
		sbx_http_opts o = {.base_url = g_url, .headers = {"X-Mock-Admin-Token: bench"}};
		sbx_http_client *a = sbx_http_client_new(&o, NULL);

		if (a != NULL && bench_call(a, "GET", "/_mock/settings", NULL, &out) == 200) {
			cJSON *j = cJSON_Parse(sbx_strbuf_str(&out.body));
			const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "data");
			const cJSON *cg = cJSON_GetObjectItemCaseSensitive(d, "cgroups");
			char *cgs = cg != NULL ? cJSON_PrintUnformatted(cg) : NULL;

			snprintf(mode, sizeof(mode), "guest mode %s, cgroups %s",
				 sbx_mock_guest_mode(mock), cgs != NULL ? cgs : "(not reported)");
			free(cgs);
			cJSON_Delete(j);
		}
		sbx_http_client_free(a);
	}

	/* create, and delete (where a cycle's other half goes) */
	for (long i = 0; i < n; i++) {
		double t0 = bench_now_ms();

		if (bench_create(c, &out, id, sizeof(id)) != 0)
			break;
		lat[i] = bench_now_ms() - t0;
		t0 = bench_now_ms();
		bench_destroy(c, &out, id);
		res[i] = bench_now_ms() - t0;
	}
	create50 = bench_pct(lat, (size_t)n, 50);
	create90 = bench_pct(lat, (size_t)n, 90);
	delete50 = bench_pct(res, (size_t)n, 50);
	delete90 = bench_pct(res, (size_t)n, 90);

	/* exec(true) on one running sandbox, and /usr/bin/true on the host */
	if (bench_create(c, &out, id, sizeof(id)) != 0)
		return 1;
	exec_true(c, &out, id); /* warm */
	for (long i = 0; i < n; i++) {
		double t0 = bench_now_ms();

		exec_true(c, &out, id);
		lat[i] = bench_now_ms() - t0;
	}
	exec50 = bench_pct(lat, (size_t)n, 50);
	exec90 = bench_pct(lat, (size_t)n, 90);
	for (long i = 0; i < n; i++) {
		char *args[] = {"true", NULL};
		double t0 = bench_now_ms();
		pid_t pid;
		int st;

		if (posix_spawn(&pid, "/usr/bin/true", NULL, NULL, args, environ) == 0)
			waitpid(pid, &st, 0);
		lat[i] = bench_now_ms() - t0;
	}
	host50 = bench_pct(lat, (size_t)n, 50);
	host90 = bench_pct(lat, (size_t)n, 90);
	/* the bare process the issue-24 ratios compare with: fork (not
	 * posix_spawn's vfork) + exec + wait */
	for (long i = 0; i < n; i++) {
		double t0 = bench_now_ms();
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			execl("/usr/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, &st, 0);
		lat[i] = bench_now_ms() - t0;
	}
	bare50 = bench_pct(lat, (size_t)n, 50);
	bare90 = bench_pct(lat, (size_t)n, 90);

	printf("bench-contain: %s; n=%ld\n\n", mode, n);
	printf("| %-34s | %9s | %9s | %-22s |\n", "measure", "p50 ms", "p90 ms",
	       "target (issue 13)");
	printf("|%s|%s|%s|%s|\n", "------------------------------------", "-----------",
	       "-----------", "------------------------");
	row("create", create50, create90, "p50 <= 10 ms");
	row("delete", delete50, delete90, "");
	row("exec(true) through the API", exec50, exec90, "");
	row("/usr/bin/true on the host", host50, host90, "");
	row("fork+exec(true) on the host (bare)", bare50, bare90, "");
	row("exec overhead (API - host)", exec50 - host50, exec90 - host90, "p50 <= 2 ms");
	fflush(stdout);

	/* pause / resume, with a background process to freeze */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	bench_call(c, "POST", path, "{\"cmd\":\"sh\",\"args\":[\"-c\",\"sleep 1000 >/dev/null 2>&1 &\"]}",
	     &out);
	{
		long m = n > 100 ? 100 : n;

		for (long i = 0; i < m; i++) {
			double t0 = bench_now_ms();

			if (transition(c, &out, id, "pause", "paused") != 0)
				break;
			lat[i] = bench_now_ms() - t0;
			t0 = bench_now_ms();
			if (transition(c, &out, id, "resume", "running") != 0)
				break;
			res[i] = bench_now_ms() - t0;
		}
		p50 = bench_pct(lat, (size_t)m, 50);
		p90 = bench_pct(lat, (size_t)m, 90);
		row("pause (POST until paused)", p50, p90, "p50 <= 10 ms");
		p50 = bench_pct(res, (size_t)m, 50);
		p90 = bench_pct(res, (size_t)m, 90);
		row("resume (POST until running)", p50, p90, "p50 <= 10 ms");
	}
	bench_destroy(c, &out, id);
	fflush(stdout);

	/* cycles */
	for (long i = 0; i < threads; i++) {
		w[i].seconds = seconds;
		snprintf(w[i].key, sizeof(w[i].key), "bench%ld", i);
		pthread_create(&w[i].tid, NULL, cycle_worker, &w[i]);
	}
	for (long i = 0; i < threads; i++) {
		pthread_join(w[i].tid, NULL);
		cycles += w[i].cycles;
	}
	printf("| %-34s | %9.1f | %9s | %-22s |\n", "create->exec(true)->delete /s",
	       (double)cycles / seconds, "-", ">= 300/s on 2 cores");
	printf("\n(%ld threads x %.1f s; %zu failed calls)\n", threads, seconds, bench_failures());
	if (cycles > 0 && bare50 > 0) {
		/* one cycle's time as a thread sees it, against the bare process */
		double cycle_ms = (double)threads * seconds * 1000.0 / (double)cycles;

		printf("\nratios to the bare fork+exec p50 (%.2f ms), target (issue 24):\n", bare50);
		printf("  create p50 / bare:           %5.2f  (<= 1)\n", create50 / bare50);
		printf("  cycle (%.2f ms) / bare:      %5.2f  (<= 2)\n", cycle_ms, cycle_ms / bare50);
	}

	sbx_http_resp_free(&out);
	sbx_http_client_free(c);
	sbx_mock_stop(mock);
	sbx_http_global_cleanup();
	return bench_failures() == 0 ? 0 : 1;
}

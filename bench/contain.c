/* bench-contain: what containment costs (issue 13), and what the warm pool
 * of cells (issue 24) takes off it. Runs the same measures twice in one
 * process, on an embedded mock (sbx/mock.h, 127.0.0.1 port 0) with the pool
 * off (--warm-pool 0) and then on (-P cells), over keep-alive HTTP:
 *   - create of a sandbox: p50/p90 (POST /v1/sandboxes until 200); with the
 *     pool on, each create waits until the pool is full again (a warm
 *     pool: what a create meets when creates come slower than the pool
 *     refills), and again back to back (the pool drained: the refill rate
 *     decides);
 *   - delete: p50/p90 (the answer; with the pool on the cell is torn down
 *     after it);
 *   - exec(`true`) on a running sandbox: p50/p90, and the same command run
 *     directly on the host (posix_spawn + waitpid): the overhead is the
 *     difference of the p50s; and the bare process the issue-24 ratios are
 *     against: fork + exec of /usr/bin/true + wait, by this process;
 *   - pause and resume: p50/p90 from the POST until GET says paused
 *     (resp. running), on a sandbox with a background process;
 *   - create -> exec(`true`) -> delete cycles/s with T threads back to back.
 * Prints one table with both columns and the ratios of each. A benchmark,
 * never a test: it asserts nothing about speed (exit 1 only when calls
 * failed).
 *
 * usage: bench-contain [-n N=200] [-s cycle-seconds=5] [-t threads=2]
 *                      [-P pool-cells=2, 0: the pool-off run only]
 *                      [-m guest-mode] [-w work-dir] */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sbx/http_client.h"
#include "sbx/mock.h"
#include "sbx/strbuf.h"

#include "lib/bench_api.h"

extern char **environ;

#define MAX_N 100000

typedef struct pt {
	double p50, p90;
} pt;

/* One run's figures (pool off or on). */
typedef struct run {
	unsigned pool;
	char mode[512];
	pt create, burst, del, exec, host, bare, pause, resume, cycle;
	pt cyc_create, cyc_exec, cyc_del; /* the one client's cycle, part by part */
	double cycles_per_s, cycle_ms;
	double handed_out, misses;   /* pool counters over the T clients' cycles */
	double handed1, misses1;     /* and over the one client's */
	double cyc_cpu_ms, cyc_mean; /* the machine's CPU time per one-client cycle; its mean */
} run;

typedef struct opts {
	long n, threads;
	double seconds;
	const char *guest_mode, *work_dir;
} opts;

static const char *g_url;
static long g_threads;
static double g_lat[MAX_N], g_res[MAX_N], g_bare[2 * MAX_N];
static double g_part[3][MAX_N]; /* a cycle's create, exec, delete */
static long g_nbare;
static long g_ncpu = 1; /* online cores, for the cycle's CPU floor */

static pt pct(double *v, long n)
{
	pt p = {bench_pct(v, (size_t)n, 50), bench_pct(v, (size_t)n, 90)};

	return p;
}

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

/* ---- the admin side: what the mock says, the pool's counters ---- */

static void describe(sbx_mock *mock, sbx_http_client *a, run *r, sbx_http_resp *out)
{
	cJSON *j = bench_admin_get(a, "/_mock/settings", out);
	const cJSON *cg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "data"), "cgroups");
	char *cgs = cg != NULL ? cJSON_PrintUnformatted(cg) : NULL;
	cJSON *p = bench_admin_get(a, "/_mock/pool", out);
	const cJSON *note = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "data"), "note");

	snprintf(r->mode, sizeof(r->mode), "guest mode %s, cgroups %s, warm pool %s", sbx_mock_guest_mode(mock),
		 cgs != NULL ? cgs : "(not reported)", cJSON_IsString(note) ? note->valuestring : "?");
	free(cgs);
	cJSON_Delete(j);
	cJSON_Delete(p);
}

/* ---- measures ---- */

/* create then delete, n times; warm: the pool refilled before each create. */
static void creates(sbx_http_client *c, sbx_http_client *a, const opts *o, run *r, bool warm,
		    sbx_http_resp *out)
{
	char id[64];
	long i;

	for (i = 0; i < o->n; i++) {
		double t0;

		if (warm)
			bench_pool_wait_full(a, r->pool, out);
		t0 = bench_now_ms();
		if (bench_create(c, out, id, sizeof(id)) != 0)
			break;
		g_lat[i] = bench_now_ms() - t0;
		t0 = bench_now_ms();
		bench_destroy(c, out, id);
		g_res[i] = bench_now_ms() - t0;
	}
	if (warm || r->pool == 0) {
		r->create = pct(g_lat, i);
		r->del = pct(g_res, i);
	} else {
		r->burst = pct(g_lat, i);
	}
}

/* The bare process the issue-24 ratios compare with: fork (not
 * posix_spawn's vfork) + exec of /usr/bin/true + wait, by this process,
 * which holds the mock (as a test or a program embedding it would). n
 * samples more into g_bare: taken twice per run, after the execs and after
 * the cycles, so that a stretch of load on a shared machine weighs on it
 * as on the measures it divides. */
static void bare(long n)
{
	for (long i = 0; i < n && g_nbare < 2 * MAX_N; i++) {
		double t0 = bench_now_ms();
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			execl("/usr/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, &st, 0);
		g_bare[g_nbare++] = bench_now_ms() - t0;
	}
}

/* exec(true) on one sandbox; true on the host, spawned and bare. */
static void execs(sbx_http_client *c, const char *id, const opts *o, run *r, sbx_http_resp *out)
{
	exec_true(c, out, id); /* warm */
	for (long i = 0; i < o->n; i++) {
		double t0 = bench_now_ms();

		exec_true(c, out, id);
		g_lat[i] = bench_now_ms() - t0;
	}
	r->exec = pct(g_lat, o->n);
	for (long i = 0; i < o->n; i++) {
		char *args[] = {"true", NULL};
		double t0 = bench_now_ms();
		pid_t pid;
		int st;

		if (posix_spawn(&pid, "/usr/bin/true", NULL, NULL, args, environ) == 0)
			waitpid(pid, &st, 0);
		g_lat[i] = bench_now_ms() - t0;
	}
	r->host = pct(g_lat, o->n);
	bare(o->n);
}

/* pause / resume, with a background process to freeze */
static void pauses(sbx_http_client *c, const char *id, const opts *o, run *r, sbx_http_resp *out)
{
	char path[128];
	long m = o->n > 100 ? 100 : o->n, i;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	bench_call(c, "POST", path, "{\"cmd\":\"sh\",\"args\":[\"-c\",\"sleep 1000 >/dev/null 2>&1 &\"]}", out);
	for (i = 0; i < m; i++) {
		double t0 = bench_now_ms();

		if (transition(c, out, id, "pause", "paused") != 0)
			break;
		g_lat[i] = bench_now_ms() - t0;
		t0 = bench_now_ms();
		if (transition(c, out, id, "resume", "running") != 0)
			break;
		g_res[i] = bench_now_ms() - t0;
	}
	r->pause = pct(g_lat, i);
	r->resume = pct(g_res, i);
}

/* The CPU time every core of the machine has spent busy so far, ms
 * (/proc/stat: user, nice, system, irq, softirq; the kernel's own
 * workers included, which is where a network namespace is cleaned up), or
 * -1. On a quiet machine the difference over a stretch of cycles is what
 * those cycles cost in all, wherever the work ran. */
static double machine_busy_ms(void)
{
	unsigned long long v[8] = {0};
	long hz = sysconf(_SC_CLK_TCK);
	char line[512], *p = line + 4, *end;
	FILE *f = fopen("/proc/stat", "re");
	bool ok;

	if (f == NULL)
		return -1;
	ok = fgets(line, sizeof(line), f) != NULL && strncmp(line, "cpu ", 4) == 0;
	fclose(f);
	for (int k = 0; ok && k < 8; k++) {
		v[k] = strtoull(p, &end, 10);
		ok = end != p;
		p = end;
	}
	if (!ok || hz <= 0)
		return -1;
	/* steal (v[7]) is not counted: it is time the hypervisor gave another
	 * guest, which this machine's work did not use */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6]) * 1000.0 / (double)hz;
}

/* create -> exec(true) -> delete by one client, each cycle timed: the
 * cycle's latency, nothing else of this process running beside it. */
static void cycles_timed(sbx_http_client *c, sbx_http_client *a, const opts *o, run *r,
			 sbx_http_resp *out)
{
	char id[64];
	long i;
	double h0, m0, busy0;

	bench_pool_wait_full(a, r->pool, out);
	h0 = bench_pool_num(a, "handed_out", out);
	m0 = bench_pool_num(a, "misses", out);
	busy0 = machine_busy_ms();
	for (i = 0; i < o->n; i++) {
		double t0 = bench_now_ms(), t1, t2;

		if (bench_create(c, out, id, sizeof(id)) != 0)
			break;
		t1 = bench_now_ms();
		exec_true(c, out, id);
		t2 = bench_now_ms();
		bench_destroy(c, out, id);
		g_lat[i] = bench_now_ms() - t0;
		g_part[0][i] = t1 - t0;
		g_part[1][i] = t2 - t1;
		g_part[2][i] = g_lat[i] - (t2 - t0);
	}
	r->cyc_cpu_ms = busy0 >= 0 && i > 0 ? (machine_busy_ms() - busy0) / (double)i : -1;
	r->cyc_mean = 0;
	for (long k = 0; k < i; k++)
		r->cyc_mean += g_lat[k] / (double)i;
	r->cycle = pct(g_lat, i);
	r->cyc_create = pct(g_part[0], i);
	r->cyc_exec = pct(g_part[1], i);
	r->cyc_del = pct(g_part[2], i);
	r->handed1 = bench_pool_num(a, "handed_out", out) - h0;
	r->misses1 = bench_pool_num(a, "misses", out) - m0;
}

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

static void cycles(sbx_http_client *a, const opts *o, run *r, sbx_http_resp *out)
{
	static worker w[64];
	size_t total = 0;
	double h0 = 0, m0 = 0;

	if (r->pool > 0) {
		bench_pool_wait_full(a, r->pool, out);
		h0 = bench_pool_num(a, "handed_out", out);
		m0 = bench_pool_num(a, "misses", out);
	}
	for (long i = 0; i < o->threads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].seconds = o->seconds;
		snprintf(w[i].key, sizeof(w[i].key), "bench%ld", i);
		pthread_create(&w[i].tid, NULL, cycle_worker, &w[i]);
	}
	for (long i = 0; i < o->threads; i++) {
		pthread_join(w[i].tid, NULL);
		total += w[i].cycles;
	}
	r->cycles_per_s = (double)total / o->seconds;
	/* one cycle's time as a thread sees it */
	r->cycle_ms = total > 0 ? (double)o->threads * o->seconds * 1000.0 / (double)total : 0;
	if (r->pool > 0) {
		r->handed_out = bench_pool_num(a, "handed_out", out) - h0;
		r->misses = bench_pool_num(a, "misses", out) - m0;
	}
}

/* One run: a mock with the pool at r->pool, every measure. 0, or -1. */
static int measure(const opts *o, run *r)
{
	sbx_mock_config cfg;
	sbx_mock *mock;
	sbx_err err = {{0}};
	sbx_http_opts ao = {.headers = {"X-Mock-Admin-Token: bench"}};
	sbx_http_client *c, *a;
	sbx_http_resp out = {0};
	char hdr[64], id[64];

	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.no_journal = true;
	cfg.sandbox_cap = 100000;
	cfg.admin_token = "bench";
	cfg.work_dir = o->work_dir;
	cfg.warm_pool = r->pool;
	if (o->guest_mode != NULL)
		cfg.guest_mode = o->guest_mode;
	mock = sbx_mock_start(&cfg, &err);
	if (mock == NULL) {
		fprintf(stderr, "bench-contain: mock start: %s\n", err.msg);
		return -1;
	}
	g_url = sbx_mock_url(mock);
	ao.base_url = g_url;
	g_nbare = 0;
	c = bench_client(g_url, hdr, sizeof(hdr), "bench");
	a = sbx_http_client_new(&ao, NULL);
	if (c != NULL && a != NULL) {
		describe(mock, a, r, &out);
		creates(c, a, o, r, r->pool > 0, &out);
		if (r->pool > 0)
			creates(c, a, o, r, false, &out);
		if (bench_create(c, &out, id, sizeof(id)) == 0) {
			execs(c, id, o, r, &out);
			pauses(c, id, o, r, &out);
			bench_destroy(c, &out, id);
		}
		cycles_timed(c, a, o, r, &out);
		cycles(a, o, r, &out);
		bare(o->n);
		r->bare = pct(g_bare, g_nbare);
	}
	sbx_http_resp_free(&out);
	sbx_http_client_free(a);
	sbx_http_client_free(c);
	sbx_mock_stop(mock);
	return c != NULL && a != NULL ? 0 : -1;
}

/* ---- report ---- */

static void row(const char *what, pt off, const pt *on, const char *target)
{
	char b[32] = "-", d[32] = "-";

	if (on != NULL) {
		snprintf(b, sizeof(b), "%.2f", on->p50);
		snprintf(d, sizeof(d), "%.2f", on->p90);
	}
	printf("| %-38s | %8.2f | %8.2f | %8s | %8s | %-16s |\n", what, off.p50, off.p90, b, d, target);
}

static void ratios(const run *r, const char *label)
{
	double b = r->bare.p50;

	if (b <= 0 || r->cycle_ms <= 0 || r->cycles_per_s <= 0)
		return;
	printf("\n%s: over the bare fork+exec p50 (%.2f ms); target (issue 24, pool on):\n", label, b);
	printf("  create p50 (%.2f ms)                                %5.2f  (<= 1)\n", r->create.p50,
	       r->create.p50 / b);
	if (r->pool > 0)
		printf("  create p50, back to back (%.2f ms)                  %5.2f\n", r->burst.p50,
		       r->burst.p50 / b);
	printf("  cycle p50, one client (%.2f ms)                     %5.2f  (<= 2)\n", r->cycle.p50,
	       r->cycle.p50 / b);
	printf("    its parts' p50/p90: create %.2f/%.2f, exec %.2f/%.2f, delete %.2f/%.2f ms\n",
	       r->cyc_create.p50, r->cyc_create.p90, r->cyc_exec.p50, r->cyc_exec.p90, r->cyc_del.p50,
	       r->cyc_del.p90);
	if (r->cyc_cpu_ms > 0)
		/* the cycles run back to back, so at this CPU cost their mean can
		 * be no shorter than it spread over every core: when the mean
		 * sits at that floor, the cycle waits for CPU, not for a lock */
		printf("    the machine's CPU per cycle %.2f ms: the mean cycle (%.2f ms) can be no "
		       "shorter than %.2f ms over %ld cores = %.2fx\n",
		       r->cyc_cpu_ms, r->cyc_mean, r->cyc_cpu_ms / (double)g_ncpu, g_ncpu,
		       r->cyc_cpu_ms / (double)g_ncpu / b);
	printf("  cycle, %ld clients, as each sees it (%.2f ms)       %5.2f\n", g_threads, r->cycle_ms,
	       r->cycle_ms / b);
	printf("  cycle, %ld clients, 1/throughput (%.2f ms)          %5.2f\n", g_threads,
	       1000.0 / r->cycles_per_s, 1000.0 / r->cycles_per_s / b);
	if (r->pool > 0)
		printf("  creates served by the pool: one client's cycles %.0f of %.0f, %ld clients' %.0f of %.0f\n",
		       r->handed1, r->handed1 + r->misses1, g_threads, r->handed_out, r->handed_out + r->misses);
}

static void report(const opts *o, const run *off, const run *on)
{
	const pt *x = on != NULL ? &on->create : NULL;

	printf("bench-contain: n=%ld\n  pool off: %s\n", o->n, off->mode);
	if (on != NULL)
		printf("  pool on:  %s\n", on->mode);
	printf("\n| %-38s | %8s | %8s | %8s | %8s | %-16s |\n", "measure (ms)", "off p50", "off p90",
	       "on p50", "on p90", "target");
	printf("|%s|%s|%s|%s|%s|%s|\n", "----------------------------------------", "----------",
	       "----------", "----------", "----------", "------------------");
	row("create (pool on: pool full first)", off->create, x, "p50 <= 10 ms");
	if (on != NULL)
		row("create back to back (pool draining)", off->create, &on->burst, "");
	row("delete (the answer)", off->del, on != NULL ? &on->del : NULL, "");
	row("exec(true) through the API", off->exec, on != NULL ? &on->exec : NULL, "");
	row("/usr/bin/true on the host", off->host, on != NULL ? &on->host : NULL, "");
	row("fork+exec(true) on the host (bare)", off->bare, on != NULL ? &on->bare : NULL, "");
	row("pause (POST until paused)", off->pause, on != NULL ? &on->pause : NULL, "p50 <= 10 ms");
	row("resume (POST until running)", off->resume, on != NULL ? &on->resume : NULL, "p50 <= 10 ms");
	row("create->exec(true)->delete, one client", off->cycle, on != NULL ? &on->cycle : NULL, "");
	printf("| %-38s | %8.1f | %8s | %8s | %8s | %-16s |\n", "create->exec(true)->delete /s",
	       off->cycles_per_s, "-", "", "-", ">= 300/s");
	if (on != NULL)
		printf("| %-38s | %8s | %8s | %8.1f | %8s | %-16s |\n", "create->exec(true)->delete /s (on)", "",
		       "-", on->cycles_per_s, "-", "");
	printf("\n(%ld threads x %.1f s per run; %zu failed calls)\n", o->threads, o->seconds,
	       bench_failures());
	ratios(off, "pool off");
	if (on != NULL)
		ratios(on, "pool on");
}

int main(int argc, char **argv)
{
	opts o = {.n = 200, .threads = 2, .seconds = 5};
	static run off, on;
	long pool = 2;
	int opt;

	g_ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (g_ncpu < 1)
		g_ncpu = 1;
	while ((opt = getopt(argc, argv, "n:s:t:m:w:P:h")) != -1) {
		switch (opt) {
		case 'n':
			o.n = strtol(optarg, NULL, 10);
			break;
		case 's':
			o.seconds = strtod(optarg, NULL);
			break;
		case 't':
			o.threads = strtol(optarg, NULL, 10);
			break;
		case 'P':
			pool = strtol(optarg, NULL, 10);
			break;
		case 'm':
			o.guest_mode = optarg;
			break;
		case 'w':
			o.work_dir = optarg;
			break;
		default:
			fprintf(stderr, "usage: bench-contain [-n N=200] [-s cycle-seconds=5] [-t threads=2] "
					"[-P pool-cells=2, 0: pool off only] [-m guest-mode] [-w work-dir]\n");
			return 2;
		}
	}
	if (o.n < 10 || o.n > MAX_N || o.seconds <= 0 || o.threads < 1 || o.threads > 64 || pool < 0 ||
	    pool > 64)
		return 2;
	bench_set_name("bench-contain");
	g_threads = o.threads;
	if (sbx_http_global_init() != 0)
		return 2;
	off.pool = 0;
	on.pool = (unsigned)pool;
	if (measure(&o, &off) != 0 || (pool > 0 && measure(&o, &on) != 0))
		return 2;
	report(&o, &off, pool > 0 ? &on : NULL);
	sbx_http_global_cleanup();
	return bench_failures() == 0 ? 0 : 1;
}

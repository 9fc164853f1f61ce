/* bench-procs: how soon a managed process's output reaches a client's
 * `connect` stream (issue 25: <= 20 ms p50). An embedded sbx-mock (guest
 * mode contained unless -m says otherwise) runs one sandbox with one
 * process that prints the wall-clock time (date +%s%N) every 20 ms; a
 * client follows GET .../processes/{pid}/connect and, for each line that
 * arrives, takes its own clock minus the printed one: the time from the
 * process's write to the event in the client's hands (the pipe, the
 * reader thread, the ring, the stream, HTTP over loopback).
 *
 * usage: bench-procs [-n samples=200] [-m guest-mode] [-w work-dir]
 * Prints p50/p90/p99 in ms. A benchmark, never a test: it asserts nothing
 * about speed; exit 1 when a call failed, 2 on a usage or setup error. */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "base64.h"
#include "lib/bench_api.h"
#include "sbx/mock.h"
#include "sbx/strbuf.h"

#define MAX_SAMPLES 100000

typedef struct follower {
	sbx_strbuf line; /* the NDJSON line being received */
	sbx_strbuf text; /* decoded output not yet ended by a newline */
	double *lat;
	size_t n, want;
} follower;

static double wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Each complete output line is a time in ns: one sample. */
static void take_lines(follower *f, double arrived)
{
	char *start = f->text.data, *nl;

	while (start != NULL &&
	       (nl = memchr(start, '\n', f->text.len - (size_t)(start - f->text.data))) != NULL) {
		char *end = NULL;
		long long ns = strtoll(start, &end, 10);

		if (end == nl && ns > 0 && f->n < f->want)
			f->lat[f->n++] = arrived - (double)ns / 1e6;
		start = nl + 1;
	}
	if (start != NULL) {
		size_t left = f->text.len - (size_t)(start - f->text.data);

		memmove(f->text.data, start, left);
		f->text.len = left;
	}
}

static void take_event(follower *f, const char *json, double arrived)
{
	cJSON *e = cJSON_Parse(json);
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "data_base64");
	char why[128];
	size_t n = 0;
	char *bytes =
		cJSON_IsString(d) ? mock_b64_decode(d->valuestring, &n, why, sizeof(why)) : NULL;

	if (bytes != NULL) {
		sbx_strbuf_append(&f->text, bytes, n);
		take_lines(f, arrived);
	}
	free(bytes);
	cJSON_Delete(e);
}

/* The connect stream's sink: splits NDJSON lines; false (stop) once there
 * are samples enough. */
static bool sink(void *ud, const void *data, size_t len)
{
	follower *f = ud;
	double arrived = wall_ms();
	const char *p = data;

	for (size_t i = 0; i < len; i++) {
		if (p[i] != '\n') {
			sbx_strbuf_append(&f->line, &p[i], 1);
			continue;
		}
		take_event(f, sbx_strbuf_str(&f->line), arrived);
		sbx_strbuf_reset(&f->line);
	}
	return f->n < f->want;
}

static sbx_mock *start_mock(const char *guest_mode, const char *work_dir)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	sbx_mock *mock;

	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.no_journal = true;
	cfg.admin_token = "bench";
	cfg.work_dir = work_dir;
	if (guest_mode != NULL)
		cfg.guest_mode = guest_mode;
	mock = sbx_mock_start(&cfg, &err);
	if (mock == NULL)
		fprintf(stderr, "bench-procs: mock start: %s\n", err.msg);
	return mock;
}

/* Starts the ticking process: its path ("/v1/sandboxes/<id>/processes/<pid>"). */
static int start_ticker(sbx_http_client *c, char *base, size_t cap)
{
	static const char body[] =
		"{\"cmd\":\"sh\",\"args\":[\"-c\",\"while :; do date +%s%N; sleep 0.02; done\"]}";
	sbx_http_resp out = {0};
	char id[64], pid[32], path[128];
	int rc = -1;

	if (bench_create(c, &out, id, sizeof(id)) != 0)
		goto out_free;
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes", id);
	if (bench_call(c, "POST", path, body, &out) != 200 ||
	    bench_data_field(&out, "process_id", NULL, pid, sizeof(pid)) != 0) {
		bench_failed("create process", out.status, &out);
		goto out_free;
	}
	snprintf(base, cap, "%s/%s", path, pid);
	rc = 0;
out_free:
	sbx_http_resp_free(&out);
	return rc;
}

static void follow(sbx_http_client *c, const char *base, follower *f)
{
	char path[256];
	sbx_http_req rq = {.method = "GET", .path = path, .query = "after=0", .timeout_ms = 600000};
	sbx_http_resp out = {0};
	sbx_err err;

	rq.sink = sink;
	rq.sink_ud = f;
	snprintf(path, sizeof(path), "%s/connect", base);
	sbx_http_request(c, &rq, &out, &err);
	if (f->n < f->want)
		bench_failed("connect", out.status, &out);
	sbx_http_resp_free(&out);
}

int main(int argc, char **argv)
{
	const char *guest_mode = NULL, *work_dir = NULL;
	static double lat[MAX_SAMPLES];
	follower f = {.lat = lat, .want = 200};
	sbx_http_resp out = {0};
	char hdr[64], base[192];
	sbx_http_client *c;
	sbx_mock *mock;
	int opt;

	while ((opt = getopt(argc, argv, "n:m:w:h")) != -1) {
		if (opt == 'n')
			f.want = (size_t)strtoul(optarg, NULL, 10);
		else if (opt == 'm')
			guest_mode = optarg;
		else if (opt == 'w')
			work_dir = optarg;
		else {
			fprintf(stderr, "usage: bench-procs [-n samples=200] [-m guest-mode] [-w "
					"work-dir]\n");
			return 2;
		}
	}
	if (f.want < 10 || f.want > MAX_SAMPLES)
		return 2;
	bench_set_name("bench-procs");
	if (sbx_http_global_init() != 0 || (mock = start_mock(guest_mode, work_dir)) == NULL)
		return 2;
	c = bench_client(sbx_mock_url(mock), hdr, sizeof(hdr), "bench");
	if (c == NULL || start_ticker(c, base, sizeof(base)) != 0)
		return 2;
	sbx_strbuf_init(&f.line);
	sbx_strbuf_init(&f.text);
	follow(c, base, &f);
	bench_call(c, "DELETE", base, NULL, &out);
	printf("bench-procs: guest mode %s, %zu samples: output -> connect stream "
	       "p50 %.2f ms, p90 %.2f ms, p99 %.2f ms (target p50 <= 20 ms)\n",
	       sbx_mock_guest_mode(mock), f.n, bench_pct(lat, f.n, 50), bench_pct(lat, f.n, 90),
	       bench_pct(lat, f.n, 99));
	sbx_http_resp_free(&out);
	sbx_strbuf_free(&f.line);
	sbx_strbuf_free(&f.text);
	sbx_http_client_free(c);
	sbx_mock_stop(mock);
	return bench_failures() > 0 ? 1 : 0;
}

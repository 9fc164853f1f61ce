/* bench-mock_cycle: create -> exec(`true`) -> delete cycles per second
 * against a running sbx-mock, over keep-alive connections (one libsbx HTTP
 * client per thread).
 *
 * usage: bench-mock_cycle URL [seconds=5] [threads=2] [api-key=bench]
 * Prints cycles/s and latency percentiles of a whole cycle. A benchmark,
 * never a test: it asserts nothing about speed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sbx/http_client.h"
#include "sbx/strbuf.h"
#include "sbx/sys.h"

typedef struct worker {
	const char *url;
	const char *key;
	double seconds;
	size_t cycles;
	size_t failures;
	double *lat;      /* ms per cycle */
	size_t nlat, caplat;
	pthread_t tid;
} worker;

static double now_s(void)
{
	return (double)sbx_mono_us() / 1e6;
}

/* One exchange on the worker's keep-alive client; the status or -1. */
static long call(sbx_http_client *c, const char *method, const char *path, const char *body,
		 sbx_http_resp *out)
{
	sbx_http_req rq = {.method = method, .path = path, .body = body,
			   .body_len = body != NULL ? strlen(body) : 0};
	sbx_err err;

	sbx_http_resp_free(out);
	if (sbx_http_request(c, &rq, out, &err) != 0)
		return -1;
	return out->status;
}

/* Extracts "id":"..." from a create answer. */
static int extract_id(const char *json, char *id, size_t cap)
{
	const char *p = strstr(json, "\"id\":\"");
	size_t len;

	if (p == NULL)
		return -1;
	p += 6;
	len = strcspn(p, "\"");
	if (len == 0 || len >= cap)
		return -1;
	memcpy(id, p, len);
	id[len] = '\0';
	return 0;
}

static void *run(void *arg)
{
	worker *w = arg;
	char hdr[256], path[512], id[64];
	sbx_http_opts o = {.base_url = w->url, .headers = {hdr}};
	sbx_http_client *c;
	sbx_http_resp out = {0};
	double end = now_s() + w->seconds;

	snprintf(hdr, sizeof(hdr), "X-Api-Key: %s", w->key);
	c = sbx_http_client_new(&o, NULL);
	if (c == NULL) {
		w->failures++;
		return NULL;
	}
	while (now_s() < end) {
		double t0 = now_s();

		if (call(c, "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-256mb\"}", &out) != 200 ||
		    extract_id(sbx_strbuf_str(&out.body), id, sizeof(id)) != 0) {
			w->failures++;
			continue;
		}
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
		if (call(c, "POST", path, "{\"cmd\":\"true\"}", &out) != 200)
			w->failures++;
		snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
		if (call(c, "DELETE", path, NULL, &out) != 200)
			w->failures++;
		w->cycles++;
		if (w->nlat == w->caplat) {
			size_t cap = w->caplat == 0 ? 4096 : w->caplat * 2;
			double *nl = realloc(w->lat, cap * sizeof(*nl));

			if (nl == NULL)
				break;
			w->lat = nl;
			w->caplat = cap;
		}
		w->lat[w->nlat++] = (now_s() - t0) * 1000.0;
	}
	sbx_http_resp_free(&out);
	sbx_http_client_free(c);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

static double pct(const double *v, size_t n, double p)
{
	size_t i;

	if (n == 0)
		return 0;
	i = (size_t)(p / 100.0 * (double)(n - 1));
	return v[i];
}

int main(int argc, char **argv)
{
	const char *url = argc > 1 ? argv[1] : NULL;
	double seconds = argc > 2 ? strtod(argv[2], NULL) : 5;
	long nthreads = argc > 3 ? strtol(argv[3], NULL, 10) : 2;
	const char *key = argc > 4 ? argv[4] : "bench";
	worker *w;
	double *all;
	size_t total = 0, fails = 0, n = 0;

	if (url == NULL || seconds <= 0 || nthreads < 1 || nthreads > 256) {
		fprintf(stderr, "usage: bench-mock_cycle URL [seconds=5] [threads=2] [api-key=bench]\n");
		return 2;
	}
	if (sbx_http_global_init() != 0)
		return 2;
	w = calloc((size_t)nthreads, sizeof(*w));
	if (w == NULL)
		return 2;
	for (long i = 0; i < nthreads; i++) {
		w[i].url = url;
		w[i].key = key;
		w[i].seconds = seconds;
		pthread_create(&w[i].tid, NULL, run, &w[i]);
	}
	for (long i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		total += w[i].cycles;
		fails += w[i].failures;
		n += w[i].nlat;
	}
	all = calloc(n == 0 ? 1 : n, sizeof(*all));
	n = 0;
	for (long i = 0; i < nthreads; i++) {
		if (all != NULL)
			memcpy(all + n, w[i].lat, w[i].nlat * sizeof(*all));
		n += w[i].nlat;
		free(w[i].lat);
	}
	if (all != NULL)
		qsort(all, n, sizeof(*all), cmp_double);
	printf("create->exec(true)->delete: %zu cycles in %.1f s with %ld threads = %.1f cycles/s, "
	       "%zu failed calls\n", total, seconds, nthreads, (double)total / seconds, fails);
	if (all != NULL)
		printf("cycle latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", pct(all, n, 50),
		       pct(all, n, 90), pct(all, n, 99), n > 0 ? all[n - 1] : 0.0);
	free(all);
	free(w);
	sbx_http_global_cleanup();
	return fails == 0 ? 0 : 1;
}

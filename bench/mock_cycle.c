/* bench-mock_cycle: create -> exec(`true`) -> delete cycles per second
 * against a running sbx-mock, over keep-alive connections.
 *
 * usage: bench-mock_cycle URL [seconds=5] [threads=2] [api-key=bench]
 * Prints cycles/s and latency percentiles of a whole cycle. A benchmark,
 * never a test: it asserts nothing about speed. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sbx/strbuf.h"

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
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t on_body(char *p, size_t s, size_t n, void *ud)
{
	sbx_strbuf_append(ud, p, s * n);
	return s * n;
}

static long call(CURL *c, const char *method, const char *url, const char *body, sbx_strbuf *out)
{
	long status = 0;

	sbx_strbuf_reset(out);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body != NULL) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	} else {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	}
	if (curl_easy_perform(c) != CURLE_OK)
		return -1;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	return status;
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
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	sbx_strbuf out = SBX_STRBUF_INIT;
	char hdr[256], url[512], id[64];
	double end = now_s() + w->seconds;

	snprintf(hdr, sizeof(hdr), "X-Api-Key: %s", w->key);
	h = curl_slist_append(h, hdr);
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	while (now_s() < end) {
		double t0 = now_s();

		snprintf(url, sizeof(url), "%s/v1/sandboxes", w->url);
		if (call(c, "POST", url, "{\"shape\":\"s-1vcpu-256mb\"}", &out) != 200 ||
		    extract_id(sbx_strbuf_str(&out), id, sizeof(id)) != 0) {
			w->failures++;
			continue;
		}
		snprintf(url, sizeof(url), "%s/v1/sandboxes/%s/exec", w->url, id);
		if (call(c, "POST", url, "{\"cmd\":\"true\"}", &out) != 200)
			w->failures++;
		snprintf(url, sizeof(url), "%s/v1/sandboxes/%s", w->url, id);
		if (call(c, "DELETE", url, NULL, &out) != 200)
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
	sbx_strbuf_free(&out);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
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
	curl_global_init(CURL_GLOBAL_ALL);
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
	curl_global_cleanup();
	return fails == 0 ? 0 : 1;
}

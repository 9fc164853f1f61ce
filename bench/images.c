/* bench-images: what a rootfs image costs at create (issue 37: create p50
 * on devbox:1 <= 1.2x create on the host-skeleton root, warm pool on).
 * Two embedded mocks (sbx/mock.h, 127.0.0.1 port 0) with the same warm
 * pool: one serving the image store (its pooled cells are built on
 * devbox:1), one without images (every root the host skeleton). Creates
 * of devbox:1 alternate between them, one each, each after its pool is
 * full again (what a create meets when creates come slower than the pool
 * refills), so both meet the same machine load; each sandbox is deleted
 * again, untimed. Prints both p50/p90 and the ratio of the p50s. A
 * benchmark, never a test: it asserts nothing about speed (exit 1 only
 * when calls failed; 2 when the store serves no devbox:1).
 *
 * usage: bench-images [-s STORE] [-n N=200] [-P pool-cells=2] [-w work-dir]
 * STORE: build-image's store (default $SBX_IMAGE_STORE, else
 * /var/cache/sbx-harness/images). */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sbx/http_client.h"
#include "sbx/mock.h"

#include "lib/bench_api.h"

#define MAX_N 100000

/* One side: its mock and its clients (tenant, admin). */
typedef struct side {
	sbx_mock *mock;
	sbx_http_client *c, *a;
	char hdr[64];
	double ms[MAX_N];
} side;

static int side_start(side *s, const char *store, unsigned pool, const char *work_dir)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	sbx_http_opts ao = {.headers = {"X-Mock-Admin-Token: bench"}};

	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.no_journal = true;
	cfg.sandbox_cap = 100000;
	cfg.admin_token = "bench";
	cfg.work_dir = work_dir;
	cfg.warm_pool = pool;
	cfg.images = store;
	s->mock = sbx_mock_start(&cfg, &err);
	if (s->mock == NULL) {
		fprintf(stderr, "bench-images: mock start (%s): %s\n", store != NULL ? store : "no images",
			err.msg);
		return -1;
	}
	ao.base_url = sbx_mock_url(s->mock);
	s->c = bench_client(sbx_mock_url(s->mock), s->hdr, sizeof(s->hdr), "bench");
	s->a = sbx_http_client_new(&ao, NULL);
	return s->c != NULL && s->a != NULL ? 0 : -1;
}

static void side_stop(side *s)
{
	sbx_http_client_free(s->a);
	sbx_http_client_free(s->c);
	if (s->mock != NULL)
		sbx_mock_stop(s->mock);
}

/* What backs devbox:1 in this mock ("image ..." or "host skeleton"). */
static void backing(side *s, char *buf, size_t cap)
{
	sbx_http_resp out = {0};
	cJSON *j = bench_admin_get(s->a, "/_mock/settings", &out);
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "data");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "rootfs"),
							   "devbox:1");

	snprintf(buf, cap, "%s", cJSON_IsString(v) ? v->valuestring : "host skeleton");
	cJSON_Delete(j);
	sbx_http_resp_free(&out);
}

int main(int argc, char **argv)
{
	static side sides[2];
	const char *store = getenv("SBX_IMAGE_STORE"), *work_dir = NULL;
	sbx_http_resp out = {0};
	char id[64], what[2][256];
	unsigned pool = 2;
	long n = 200;
	int opt, rc = 0;

	while ((opt = getopt(argc, argv, "s:n:P:w:h")) != -1) {
		if (opt == 's')
			store = optarg;
		else if (opt == 'n')
			n = strtol(optarg, NULL, 10);
		else if (opt == 'P')
			pool = (unsigned)strtoul(optarg, NULL, 10);
		else if (opt == 'w')
			work_dir = optarg;
		else
			n = 0;
	}
	if (n < 10 || n > MAX_N - 5 || pool == 0 || pool > 64) {
		fprintf(stderr, "usage: bench-images [-s STORE] [-n N=200 (10-99995)] [-P pool-cells=2 (1-64)] "
				"[-w work-dir]\n");
		return 2;
	}
	if (store == NULL)
		store = "/var/cache/sbx-harness/images";
	bench_set_name("bench-images");
	if (sbx_http_global_init() != 0 || side_start(&sides[0], store, pool, work_dir) != 0 ||
	    side_start(&sides[1], NULL, pool, work_dir) != 0) {
		rc = 2;
		goto out;
	}
	backing(&sides[0], what[0], sizeof(what[0]));
	backing(&sides[1], what[1], sizeof(what[1]));
	if (strncmp(what[0], "image", 5) != 0) {
		fprintf(stderr, "bench-images: %s serves no usable devbox:1 (%s): build it with "
				"mock-api/images/build-image devbox:1\n",
			store, what[0]);
		rc = 2;
		goto out;
	}
	for (long i = 0; i < n + 5; i++) {
		for (int k = 0; k < 2; k++) {
			double t0;

			bench_pool_wait_full(sides[k].a, pool, &out);
			t0 = bench_now_ms();
			if (bench_create(sides[k].c, &out, id, sizeof(id)) != 0)
				goto report;
			/* the first 5 of each warm caches, not counted */
			if (i >= 5)
				sides[k].ms[i - 5] = bench_now_ms() - t0;
			bench_destroy(sides[k].c, &out, id);
		}
	}
report:
	printf("bench-images: guest mode %s, warm pool %u; n=%ld each, interleaved\n\n",
	       sbx_mock_guest_mode(sides[0].mock), pool, n);
	printf("| %-44s | %9s | %9s |\n", "create devbox:1 (POST until 200)", "p50 ms", "p90 ms");
	printf("|----------------------------------------------|-----------|-----------|\n");
	for (int k = 0; k < 2; k++)
		printf("| %-44.44s | %9.2f | %9.2f |\n", what[k], bench_pct(sides[k].ms, (size_t)n, 50),
		       bench_pct(sides[k].ms, (size_t)n, 90));
	printf("\nratio of the p50s (image / skeleton): %.3f (target <= 1.2); %zu failed calls\n",
	       bench_pct(sides[0].ms, (size_t)n, 50) / bench_pct(sides[1].ms, (size_t)n, 50),
	       bench_failures());
	rc = bench_failures() > 0 ? 1 : 0;
out:
	sbx_http_resp_free(&out);
	side_stop(&sides[1]);
	side_stop(&sides[0]);
	return rc;
}

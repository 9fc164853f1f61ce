/* bench-rootfs: what the writable root costs at create (issue 25: create
 * p50 with the writable root <= 1.2x create without it). Starts an embedded
 * mock (sbx/mock.h, 127.0.0.1 port 0) and times POST /v1/sandboxes (until
 * 200; each sandbox deleted again, untimed) with two sbx-cell programs,
 * interleaved one create each so that both meet the same machine load:
 *   - this build's sbx-cell (a writable overlay root on a tmpfs disk of the
 *     shape's disk_mib, mock-api/CONTAINMENT.md "The guest's disk");
 *   - a baseline sbx-cell without it (-b PATH; bench/cell_baseline.sh
 *     builds the one of the commit before the writable root).
 * The mock reads SBX_MOCK_CELL at each cell start; this program sets it
 * before each create. Prints both p50/p90 and the ratio of the p50s. A
 * benchmark, never a test: it asserts nothing about speed (exit 1 only
 * when calls failed).
 *
 * usage: bench-rootfs -b BASELINE-CELL [-c CELL] [-n N=200] [-w work-dir] */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sbx/http_client.h"
#include "sbx/mock.h"

#include "lib/bench_api.h"

#ifndef BENCH_CELL_BUILD
#define BENCH_CELL_BUILD "build/default/mock-api/sbx-cell"
#endif

/* n interleaved creates with each cell; latencies into a and b. */
static void measure(sbx_http_client *c, const char *cells[2], long n, double *a, double *b)
{
	sbx_http_resp out = {0};
	char id[64];

	for (long i = 0; i < n + 5; i++) {
		for (int k = 0; k < 2; k++) {
			double t0;

			setenv("SBX_MOCK_CELL", cells[k], 1);
			t0 = bench_now_ms();
			if (bench_create(c, &out, id, sizeof(id)) != 0)
				goto out;
			/* the first 5 of each warm caches, not counted */
			if (i >= 5)
				(k == 0 ? a : b)[i - 5] = bench_now_ms() - t0;
			bench_destroy(c, &out, id);
		}
	}
out:
	sbx_http_resp_free(&out);
}

int main(int argc, char **argv)
{
	static double a[100000], b[100000];
	const char *cells[2] = {getenv("SBX_MOCK_CELL"), NULL}, *work_dir = NULL;
	sbx_mock_config cfg;
	sbx_mock *mock;
	sbx_err err = {{0}};
	sbx_http_client *c;
	char hdr[64];
	long n = 200;
	int opt;

	while ((opt = getopt(argc, argv, "b:c:n:w:h")) != -1) {
		if (opt == 'b')
			cells[1] = optarg;
		else if (opt == 'c')
			cells[0] = optarg;
		else if (opt == 'n')
			n = strtol(optarg, NULL, 10);
		else if (opt == 'w')
			work_dir = optarg;
		else
			cells[1] = NULL, n = 0;
	}
	if (cells[0] == NULL)
		cells[0] = BENCH_CELL_BUILD;
	if (cells[1] == NULL || n < 10 || n > 100000) {
		fprintf(stderr, "usage: bench-rootfs -b BASELINE-CELL [-c CELL] [-n N=200] [-w "
				"work-dir]\n");
		return 2;
	}
	bench_set_name("bench-rootfs");
	sbx_mock_config_init(&cfg);
	cfg.work_dir = work_dir;
	cfg.quiet = true;
	cfg.sandbox_cap = 100000;
	mock = sbx_http_global_init() == 0 ? sbx_mock_start(&cfg, &err) : NULL;
	if (mock == NULL) {
		fprintf(stderr, "bench-rootfs: mock start: %s\n", err.msg);
		return 2;
	}
	c = bench_client(sbx_mock_url(mock), hdr, sizeof(hdr), "bench");
	if (c == NULL)
		return 2;
	measure(c, cells, n, a, b);
	printf("bench-rootfs: guest mode %s; n=%ld each, interleaved\n\n", sbx_mock_guest_mode(mock),
	       n);
	printf("| %-40s | %9s | %9s |\n", "create (POST until 200)", "p50 ms", "p90 ms");
	printf("|------------------------------------------|-----------|-----------|\n");
	printf("| %-40s | %9.2f | %9.2f |\n", "with the writable root (this build)",
	       bench_pct(a, (size_t)n, 50), bench_pct(a, (size_t)n, 90));
	printf("| %-40s | %9.2f | %9.2f |\n", "without it (baseline cell)", bench_pct(b, (size_t)n, 50),
	       bench_pct(b, (size_t)n, 90));
	printf("\nratio of the p50s: %.3f (target <= 1.2); %zu failed calls\n",
	       bench_pct(a, (size_t)n, 50) / bench_pct(b, (size_t)n, 50), bench_failures());
	sbx_http_client_free(c);
	sbx_mock_stop(mock);
	sbx_http_global_cleanup();
	return bench_failures() == 0 ? 0 : 1;
}

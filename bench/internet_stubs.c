/* bench-internet-stubs: what the simulated internet's stubs cost (issue
 * 38, INTERNET.md "Stubs, sites, journal, upstream"). Starts an embedded
 * mock with egress enforced and measures, from inside one guest (Python's
 * time.perf_counter around connect .. the answer's end, plain HTTP to
 * example.com, a connection each):
 *   - a stubbed answer against today's "reached" page, alternating in one
 *     run: p50/p90 and the ratio of the p50s (target <= 1.2x);
 *   - an unmatched request with no stubs and with 1,000 stubs, in R
 *     alternating rounds (the stubs added and cleared between them): the
 *     1,000 all name example.com, so each is compared up to its path, the
 *     scan's worst case; the ratio of the pooled p50s (target <= 1.10).
 * A benchmark, never a test: exit 1 only when calls failed, 2 when egress
 * cannot be enforced here.
 *
 * usage: bench-internet-stubs [-g GETs=300] [-r rounds=4] */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "sbx/http_client.h"
#include "sbx/mock.h"
#include "sbx/strbuf.h"

#include "lib/bench_api.h"

#define STUBS 1000

/* The guest times n GETs of each path given, alternating; prints every
 * sample of each path on a line of its own. */
static const char PROBE[] = BENCH_PY_READ_ALL
	"import socket,sys,time\n"
	"n=int(sys.argv[1]);paths=sys.argv[2:];t=[[] for _ in paths]\n"
	"def get(p):\n"
	" req=('GET %s HTTP/1.1\\r\\nHost: example.com\\r\\nConnection: close\\r\\n\\r\\n'%p).encode()\n"
	" a=time.perf_counter();s=socket.create_connection(('192.0.2.10',80))\n"
	" s.sendall(req);b=read_all(s);s.close()\n"
	" if b' 200 ' not in b.split(b'\\r\\n',1)[0]:raise SystemExit('no answer: %r'%b)\n"
	" return (time.perf_counter()-a)*1e3\n"
	"for i in range(n):\n"
	" for k,p in enumerate(paths):t[k].append(get(p))\n"
	"for s in t:print(' '.join('%.4f'%x for x in s))\n";

/* Runs the probe for paths and appends each path's samples to v[k]
 * (*nv[k] counts them). */
static void probe(sbx_http_client *c, const char *id, long n, const char *const *paths, size_t np, double **v,
		  size_t *nv)
{
	const char *args[8];
	char num[16], *res, *line, *save = NULL;
	sbx_http_resp out = {0};

	snprintf(num, sizeof(num), "%ld", n);
	args[0] = num;
	for (size_t k = 0; k < np && k + 1 < sizeof(args) / sizeof(args[0]); k++)
		args[k + 1] = paths[k];
	res = bench_guest_python(c, id, PROBE, args, np + 1 < 8 ? np + 1 : 8, &out);
	line = res != NULL ? strtok_r(res, "\n", &save) : NULL;
	for (size_t k = 0; k < np && line != NULL; k++, line = strtok_r(NULL, "\n", &save)) {
		char *at = line, *end = NULL;

		for (double x = strtod(at, &end); end != at; at = end, x = strtod(at, &end))
			v[k][nv[k]++] = x;
	}
	free(res);
	sbx_http_resp_free(&out);
}

static char *stubs_body(void)
{
	sbx_strbuf b;

	sbx_strbuf_init(&b);
	sbx_strbuf_puts(&b, "{\"stubs\":[");
	for (int i = 0; i < STUBS; i++)
		sbx_strbuf_printf(&b, "%s{\"match\":{\"host\":\"example.com\",\"path\":\"/s/%d\"},"
				      "\"respond\":{\"body\":\"stub %d\\n\"}}",
				  i > 0 ? "," : "", i, i);
	sbx_strbuf_puts(&b, "]}");
	return sbx_strbuf_detach(&b, NULL);
}

int main(int argc, char **argv)
{
	long gets = 300, rounds = 4;
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	sbx_mock *mock;
	sbx_http_client *c, *admin;
	sbx_http_resp out = {0};
	char hdr[64], ahdr[64], id[64], *many;
	double *v[2], *u[2];
	size_t nv[2] = {0, 0}, nu[2] = {0, 0};
	int opt, rc = 0;

	bench_set_name("bench-internet-stubs");
	while ((opt = getopt(argc, argv, "g:r:h")) != -1) {
		switch (opt) {
		case 'g': gets = strtol(optarg, NULL, 10); break;
		case 'r': rounds = strtol(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: bench-internet-stubs [-g GETs=300] [-r rounds=4]\n");
			return 2;
		}
	}
	if (gets < 10 || gets > 100000 || rounds < 1 || rounds > 50 || sbx_http_global_init() != 0)
		return 2;
	if (sbx_mock_own_userns(&err) != 0)
		fprintf(stderr, "bench-internet-stubs: %s\n", err.msg);
	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.no_journal = true;
	cfg.admin_token = "bench";
	cfg.egress = "enforced";
	mock = sbx_mock_start(&cfg, &err);
	if (mock == NULL) {
		fprintf(stderr, "bench-internet-stubs: %s\n", err.msg);
		return 2;
	}
	for (int k = 0; k < 2; k++) {
		v[k] = calloc((size_t)(gets * rounds), sizeof(double));
		u[k] = calloc((size_t)(gets * rounds), sizeof(double));
	}
	c = bench_client(sbx_mock_url(mock), hdr, sizeof(hdr), "bench");
	snprintf(ahdr, sizeof(ahdr), "X-Mock-Admin-Token: bench");
	admin = sbx_http_client_new(&(sbx_http_opts){.base_url = sbx_mock_url(mock), .headers = {ahdr}}, NULL);
	if (c == NULL || admin == NULL || bench_create(c, &out, id, sizeof(id)) != 0) {
		rc = 1;
		goto out;
	}
	if (bench_call(admin, "POST", "/_mock/internet/stubs",
		       "{\"match\":{\"host\":\"example.com\",\"path\":\"/stubbed\"},\"respond\":{\"body\":\"a stub\\n\"}}",
		       &out) != 200)
		bench_failed("POST stub", (long)out.status, &out);
	{
		const char *const pair[] = {"/page", "/stubbed"};

		probe(c, id, gets, pair, 2, v, nv); /* the page vs the stub, alternating */
	}
	many = stubs_body();
	for (long r = 0; r < rounds; r++) {
		const char *const one[] = {"/unmatched"};

		bench_call(admin, "DELETE", "/_mock/internet/stubs", NULL, &out);
		probe(c, id, gets, one, 1, &u[0], &nu[0]);
		if (bench_call(admin, "POST", "/_mock/internet/stubs", many, &out) != 200)
			bench_failed("POST 1,000 stubs", (long)out.status, &out);
		probe(c, id, gets, one, 1, &u[1], &nu[1]);
	}
	free(many);
	bench_destroy(c, &out, id);
	{
		double p50 = bench_pct(v[0], nv[0], 50), p90 = bench_pct(v[0], nv[0], 90);
		double s50 = bench_pct(v[1], nv[1], 50), s90 = bench_pct(v[1], nv[1], 90);
		double z50 = bench_pct(u[0], nu[0], 50), z90 = bench_pct(u[0], nu[0], 90);
		double m50 = bench_pct(u[1], nu[1], 50), m90 = bench_pct(u[1], nu[1], 90);

		printf("| %-48s | %9s | %9s | %-10s |\n", "measure (a GET from a guest, plain HTTP)", "p50", "p90",
		       "target");
		printf("| %-48s | %9.3f | %9.3f | %-10s |\n", "the reached page (ms)", p50, p90, "");
		printf("| %-48s | %9.3f | %9.3f | %-10s |\n", "a stubbed answer (ms)", s50, s90, "");
		printf("| %-48s | %8.2fx | %9s | %-10s |\n", "stub / page, p50", p50 > 0 ? s50 / p50 : 0, "",
		       "<= 1.2x");
		printf("| %-48s | %9.3f | %9.3f | %-10s |\n", "unmatched, no stubs (ms)", z50, z90, "");
		printf("| %-48s | %9.3f | %9.3f | %-10s |\n", "unmatched, 1,000 stubs of its host (ms)", m50, m90, "");
		printf("| %-48s | %8.2fx | %9s | %-10s |\n", "1,000 stubs / none, p50", z50 > 0 ? m50 / z50 : 0, "",
		       "<= 1.10x");
		printf("(%zu + %zu samples; %ld rounds of %ld for the unmatched pair)\n", nv[0], nv[1], rounds, gets);
	}
	rc = bench_failures() > 0 ? 1 : 0;
out:
	for (int k = 0; k < 2; k++) {
		free(v[k]);
		free(u[k]);
	}
	sbx_http_resp_free(&out);
	sbx_http_client_free(c);
	sbx_http_client_free(admin);
	sbx_mock_stop(mock);
	return rc;
}

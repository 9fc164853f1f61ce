/* bench-ingress: what the preview-URL proxy adds (issue 25, item 3; target
 * <= 0.5 ms added p50). Starts an embedded mock (127.0.0.1 port 0), creates
 * a sandbox with ingress, starts a small HTTP server in the guest (Python,
 * one fixed answer per connection) and times the same GET, each on a fresh
 * connection as a browser's or curl's first request is, twice with the same
 * Python client:
 *   - from the host through the sandbox's ingress URL (previewUrl());
 *   - inside the guest, to the server's 127.0.0.1:port directly.
 * Prints both p50/p90, the added p50 and the ratio. A benchmark, never a
 * test: exit 1 only when calls failed, 2 when the mock or the proxy cannot
 * start here.
 *
 * usage: bench-ingress [-n GETs=2000] */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sbx/http_client.h"
#include "sbx/mock.h"

#include "lib/bench_api.h"

#define GUEST_PORT 8000

/* The guest's server: one fixed answer per connection, then close. */
static const char SERVER[] =
	"import socket\n"
	"s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
	"s.bind(('127.0.0.1',8000));s.listen(128)\n"
	"r=b'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok'\n"
	"while True:\n"
	" c,_=s.accept();d=b''\n"
	" while b'\\r\\n\\r\\n' not in d:\n"
	"  x=c.recv(4096)\n"
	"  if not x: break\n"
	"  d+=x\n"
	" c.sendall(r);c.close()\n";

/* The client, the same on both sides: n GETs of url (host, port, path),
 * a fresh connection each, read to EOF; prints p50 p90 in ms. */
static const char CLIENT[] =
	"import socket,sys,time\n"
	"h,p,path,n=sys.argv[1],int(sys.argv[2]),sys.argv[3],int(sys.argv[4]);t=[]\n"
	"q=('GET %s HTTP/1.1\\r\\nHost: %s:%d\\r\\n\\r\\n'%(path,h,p)).encode()\n"
	"for i in range(n):\n"
	" a=time.perf_counter();s=socket.create_connection((h,p));s.sendall(q);d=b''\n"
	" while True:\n"
	"  x=s.recv(65536)\n"
	"  if not x: break\n"
	"  d+=x\n"
	" s.close();t.append((time.perf_counter()-a)*1e3)\n"
	" if not d.endswith(b'ok'): sys.exit('bad answer: %r'%d[:200])\n"
	"t.sort();print('%.4f %.4f'%(t[n//2],t[n*9//10]))\n";

/* Runs argv-like python3 -c CLIENT ... in the guest (exec); 0 with the
 * output in res. */
static int guest_python(sbx_http_client *c, const char *id, const char *src, const char *const *args, size_t nargs,
			char *res, size_t cap)
{
	sbx_http_resp out = {0};
	char *got = bench_guest_python(c, id, src, args, nargs, &out);

	snprintf(res, cap, "%s", got != NULL ? got : "");
	free(got);
	sbx_http_resp_free(&out);
	return res[0] != '\0' ? 0 : -1;
}

/* The same client on the host; 0 with the output in res. */
static int host_python(const char *host, const char *port, const char *path, long n, char *res, size_t cap)
{
	char cmd[4096];
	FILE *p;
	size_t got;
	int n_ = snprintf(cmd, sizeof(cmd), "python3 -c \"$SBX_BENCH_CLIENT\" %s %s %s %ld", host, port, path, n);

	if (n_ < 0 || (size_t)n_ >= sizeof(cmd) || setenv("SBX_BENCH_CLIENT", CLIENT, 1) != 0)
		return -1;
	p = popen(cmd, "r");
	if (p == NULL)
		return -1;
	got = fread(res, 1, cap - 1, p);
	res[got] = '\0';
	return pclose(p) == 0 && got > 0 ? 0 : -1;
}

static void parse2(const char *s, double *a, double *b)
{
	char *end = NULL;

	*a = strtod(s, &end);
	*b = strtod(end, NULL);
}

/* Starts the guest's server (background) and waits until the host's
 * client gets an answer through ingress (60 s at most). */
static int start_server(sbx_http_client *c, const char *id, const char *port, const char *path)
{
	static const char BG[] = "import subprocess,sys;subprocess.Popen([sys.executable,'-c',sys.argv[1]],"
				 "stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL,start_new_session=True)";
	const char *args[] = {SERVER};
	char res[64];
	double end = bench_now_ms() + 60000;

	if (guest_python(c, id, BG, args, 1, res, sizeof(res)) != 0 && res[0] != '\0')
		return -1;
	while (bench_now_ms() < end) {
		if (host_python("127.0.0.1", port, path, 1, res, sizeof(res)) == 0)
			return 0;
		usleep(100 * 1000);
	}
	return -1;
}

int main(int argc, char **argv)
{
	long n = 2000;
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	sbx_mock *mock;
	sbx_http_client *c;
	sbx_http_resp out = {0};
	char hdr[64], id[64], path[160], port[16], count[32], res[128];
	double h50, h90, g50 = 0, g90 = 0;
	int opt;

	bench_set_name("bench-ingress");
	while ((opt = getopt(argc, argv, "n:h")) != -1) {
		if (opt != 'n') {
			fprintf(stderr, "usage: bench-ingress [-n GETs=2000]\n");
			return 2;
		}
		n = strtol(optarg, NULL, 10);
	}
	if (n < 10 || n > 1000000 || sbx_http_global_init() != 0)
		return 2;
	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	mock = sbx_mock_start(&cfg, &err);
	if (mock == NULL || sbx_mock_ingress_url(mock) == NULL || !sbx_mock_guests_contained(mock)) {
		fprintf(stderr, "bench-ingress: %s\n", mock == NULL ? err.msg : "no ingress proxy or no contained guests");
		return 2;
	}
	snprintf(port, sizeof(port), "%s", strrchr(sbx_mock_ingress_url(mock), ':') + 1);
	c = bench_client(sbx_mock_url(mock), hdr, sizeof(hdr), "bench");
	if (c == NULL || bench_call(c, "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\",\"ingress_enabled\":true}",
				    &out) != 200 ||
	    bench_data_field(&out, "id", NULL, id, sizeof(id)) != 0) {
		bench_failed("create", (long)out.status, &out);
		return 1;
	}
	snprintf(path, sizeof(path), "/%s/%d/", id, GUEST_PORT);
	snprintf(count, sizeof(count), "%ld", n);
	if (start_server(c, id, port, path) != 0) {
		fprintf(stderr, "bench-ingress: the guest's server never answered through ingress\n");
		return 1;
	}
	if (host_python("127.0.0.1", port, path, n, res, sizeof(res)) != 0) {
		fprintf(stderr, "bench-ingress: the host's client failed: %s\n", res);
		return 1;
	}
	parse2(res, &h50, &h90);
	{
		const char *args[] = {"127.0.0.1", "8000", "/", count};

		if (guest_python(c, id, CLIENT, args, 4, res, sizeof(res)) == 0)
			parse2(res, &g50, &g90);
	}
	printf("| %-46s | %9s | %9s |\n", "GET, fresh connection each (ms)", "p50", "p90");
	printf("| %-46s | %9s | %9s |\n", "---", "---:", "---:");
	printf("| %-46s | %9.3f | %9.3f |\n", "host -> ingress URL -> guest server", h50, h90);
	printf("| %-46s | %9.3f | %9.3f |\n", "inside the guest -> 127.0.0.1:8000", g50, g90);
	printf("added p50 %.3f ms (target <= 0.5), ratio %.2f; %ld GETs each\n", h50 - g50, g50 > 0 ? h50 / g50 : 0, n);
	bench_destroy(c, &out, id);
	sbx_http_resp_free(&out);
	sbx_http_client_free(c);
	sbx_mock_stop(mock);
	sbx_http_global_cleanup();
	return bench_failures() > 0 ? 1 : 0;
}

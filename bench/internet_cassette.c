/* bench-internet-cassette: what recording and replaying the guests'
 * internet cost (issue 47, INTERNET.md "Record and replay the guests'
 * internet"). An embedded mock, egress enforced; a guest downloads a
 * 10 MiB file over plain HTTP, a connection each, timed in the guest
 * (Python's time.perf_counter from connect to the last byte its
 * Content-Length names, as clients end an answer):
 *   - replayed from a cassette against the same file from --internet-site,
 *     alternating in one guest run (target: replay p50 <= 1.2x site p50);
 *   - recorded (--internet-record: the mock's own libcurl connection from
 *     the host's namespace, the body streamed to the guest while hashed to
 *     the cassette) against the same download through --internet-upstream
 *     (the relay), in alternating rounds of a mock each (the two flags
 *     exclude each other) (target: record p50 <= 1.5x upstream p50).
 * The origin is a server thread of this program on the host's first
 * non-loopback IPv4 address (the guest dials it through the internet, the
 * mock reaches it from the host's namespace); nothing leaves the machine.
 * A benchmark, never a test: exit 1 only when calls failed, 2 when egress
 * cannot be enforced here or the host has no such address.
 *
 * usage: bench-internet-cassette [-g GETs a round=10] [-r rounds=3] */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sbx/http_client.h"
#include "sbx/mock.h"

#include "lib/bench_api.h"

#define SIZE (10 * 1024 * 1024)

/* The guest: n rounds of a GET of each "host:port/path" given, a
 * connection each, alternating; every sample of each on a line. */
static const char PROBE[] = "import socket,sys,time\n"
			    "n=int(sys.argv[1]);urls=sys.argv[2:];t=[[] for _ in urls];buf=bytearray(1<<18)\n"
			    "def get(u):\n"
			    " hp,p=u.split('/',1);h,port=hp.split(':')\n"
			    " req=('GET /%s HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n'%(p,h)).encode()\n"
			    " a=time.perf_counter();s=socket.create_connection((h,int(port)))\n"
			    " s.sendall(req);got=0;head=b''\n"
			    /* as clients do: the answer ends at its Content-Length, not at the close */
			    " while b'\\r\\n\\r\\n' not in head:\n"
			    "  k=s.recv_into(buf)\n"
			    "  if k==0:break\n"
			    "  head+=bytes(buf[:k])\n"
			    " hd,_,body=head.partition(b'\\r\\n\\r\\n');got=len(body)\n"
			    " want=int([l.split(b':')[1] for l in hd.split(b'\\r\\n') if l.lower().startswith(b'content-length:')][0])\n"
			    " while got<want:\n"
			    "  k=s.recv_into(buf)\n"
			    "  if k==0:break\n"
			    "  got+=k\n"
			    " dt=(time.perf_counter()-a)*1e3;s.close()\n"
			    " if b' 200 ' not in hd.split(b'\\r\\n',1)[0] or got!=10485760:\n"
			    "  raise SystemExit('%s: %r (%d bytes)'%(u,hd[:200],got))\n"
			    " return dt\n"
			    "for i in range(n):\n"
			    " for k,u in enumerate(urls):t[k].append(get(u))\n"
			    "for s in t:print(' '.join('%.3f'%x for x in s))\n";

typedef struct origin {
	int fd;
	char *data;
	pthread_t t;
} origin;

/* Answers each connection with the file whole, then closes it. */
static void *origin_main(void *arg)
{
	origin *o = arg;
	char head[256], req[4096];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n"
			 "Connection: close\r\n\r\n",
			 SIZE);

	for (;;) {
		int c = accept4(o->fd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0)
			return NULL; /* the listener was shut down */
		if (recv(c, req, sizeof(req), 0) > 0 && send(c, head, (size_t)n, MSG_NOSIGNAL) == n) {
			for (size_t at = 0; at < SIZE;) {
				ssize_t w = send(c, o->data + at, SIZE - at, MSG_NOSIGNAL);

				if (w <= 0)
					break;
				at += (size_t)w;
			}
		}
		close(c);
	}
}

/* The host's first non-loopback IPv4 address that is up: 0, or -1. */
static int host_addr(char *out, size_t cap)
{
	struct ifaddrs *ifs, *i;
	int rc = -1;

	if (getifaddrs(&ifs) != 0)
		return -1;
	for (i = ifs; i != NULL && rc != 0; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) != 0 ||
		    (i->ifa_flags & IFF_UP) == 0)
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, out, (socklen_t)cap);
		rc = 0;
	}
	freeifaddrs(ifs);
	return rc;
}

/* A mock with these settings, one guest (the default root), the probe run
 * over urls; samples appended to v[k]. 0, or -1 (the mock did not start). */
static int measure(sbx_mock_config *cfg, long n, const char *const *urls, size_t nu, double **v, size_t *nv)
{
	sbx_err err = {{0}};
	sbx_mock *mock = sbx_mock_start(cfg, &err);
	sbx_http_client *c;
	sbx_http_resp out = {0};
	char hdr[64], id[64], num[16], *res, *line, *save = NULL;
	const char *args[4];

	if (mock == NULL) {
		fprintf(stderr, "bench-internet-cassette: %s\n", err.msg);
		return -1;
	}
	c = bench_client(sbx_mock_url(mock), hdr, sizeof(hdr), "bench");
	if (c != NULL && bench_create(c, &out, id, sizeof(id)) == 0) {
		snprintf(num, sizeof(num), "%ld", n);
		args[0] = num;
		for (size_t k = 0; k < nu && k < 3; k++)
			args[k + 1] = urls[k];
		res = bench_guest_python(c, id, PROBE, args, nu + 1, &out);
		line = res != NULL ? strtok_r(res, "\n", &save) : NULL;
		for (size_t k = 0; k < nu && line != NULL; k++, line = strtok_r(NULL, "\n", &save)) {
			char *at = line, *end = NULL;

			for (double x = strtod(at, &end); end != at; at = end, x = strtod(at, &end))
				v[k][nv[k]++] = x;
		}
		free(res);
		bench_destroy(c, &out, id);
	}
	sbx_http_resp_free(&out);
	sbx_http_client_free(c);
	sbx_mock_stop(mock);
	return 0;
}

static void row(const char *what, double *v, size_t n)
{
	printf("| %-52s | %9.2f | %9.2f |\n", what, bench_pct(v, n, 50), bench_pct(v, n, 90));
}

int main(int argc, char **argv)
{
	long gets = 10, rounds = 3;
	int opt, rc = 0;
	origin o = {.fd = -1};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	char ip[64], tmpl[] = "/tmp/bench-cassette-XXXXXX", *tmp, site[600], cas[600], spec[700], res[700],
					    allow[128], up[80], u_site[128], u_up[128], u_cas[128];
	const char *resolve[1] = {res};
	sbx_mock_config cfg;
	double *v[4];
	size_t nv[4] = {0};

	bench_set_name("bench-internet-cassette");
	while ((opt = getopt(argc, argv, "g:r:h")) != -1) {
		switch (opt) {
		case 'g': gets = strtol(optarg, NULL, 10); break;
		case 'r': rounds = strtol(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: bench-internet-cassette [-g GETs a round=10] [-r rounds=3]\n");
			return 2;
		}
	}
	if (gets < 1 || gets > 1000 || rounds < 1 || rounds > 20 || sbx_http_global_init() != 0)
		return 2;
	if (host_addr(ip, sizeof(ip)) != 0) {
		fprintf(stderr, "bench-internet-cassette: no non-loopback IPv4 address for the origin\n");
		return 2;
	}
	{
		sbx_err err = {{0}};

		if (sbx_mock_own_userns(&err) != 0)
			fprintf(stderr, "bench-internet-cassette: %s\n", err.msg);
	}
	tmp = mkdtemp(tmpl);
	o.data = malloc(SIZE);
	o.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (tmp == NULL || o.data == NULL || o.fd < 0 || bind(o.fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(o.fd, 16) != 0 || getsockname(o.fd, (struct sockaddr *)&sa, &sl) != 0) {
		fprintf(stderr, "bench-internet-cassette: the origin: %s\n", strerror(errno));
		free(o.data);
		if (o.fd >= 0)
			close(o.fd);
		return 2;
	}
	for (size_t i = 0; i < SIZE; i++)
		o.data[i] = (char)(i * 2654435761u >> 13);
	pthread_create(&o.t, NULL, origin_main, &o);
	snprintf(site, sizeof(site), "%s/site", tmp);
	snprintf(cas, sizeof(cas), "%s/bench.cassette", tmp);
	{
		char path[700];
		FILE *f;

		mkdir(site, 0755);
		snprintf(path, sizeof(path), "%s/big.bin", site);
		f = fopen(path, "wb");
		if (f == NULL || fwrite(o.data, 1, SIZE, f) != SIZE)
			rc = 2;
		if (f != NULL && fclose(f) != 0)
			rc = 2;
	}
	snprintf(spec, sizeof(spec), "site.test=%s", site);
	snprintf(res, sizeof(res), "origin.test:%u:%s", (unsigned)ntohs(sa.sin_port), ip);
	snprintf(allow, sizeof(allow), "origin.test");
	snprintf(up, sizeof(up), "%s/32", ip);
	snprintf(u_site, sizeof(u_site), "site.test:%u/big.bin", (unsigned)ntohs(sa.sin_port));
	snprintf(u_up, sizeof(u_up), "%s:%u/big.bin", ip, (unsigned)ntohs(sa.sin_port));
	snprintf(u_cas, sizeof(u_cas), "origin.test:%u/big.bin", (unsigned)ntohs(sa.sin_port));
	for (int k = 0; k < 4; k++)
		v[k] = calloc((size_t)(gets * rounds * 2), sizeof(double));
	for (long r = 0; r < rounds && rc == 0; r++) {
		const char *one_up[] = {u_up}, *one_cas[] = {u_cas};

		sbx_mock_config_init(&cfg);
		cfg.quiet = cfg.no_journal = true;
		cfg.egress = "enforced";
		cfg.internet_upstream = up;
		if (measure(&cfg, gets, one_up, 1, &v[0], &nv[0]) != 0)
			rc = 2;
		sbx_mock_config_init(&cfg);
		cfg.quiet = cfg.no_journal = true;
		cfg.egress = "enforced";
		cfg.internet_record = cas;
		cfg.internet_record_allow = allow;
		cfg.internet_record_resolve = resolve;
		cfg.ninternet_record_resolve = 1;
		if (rc == 0 && measure(&cfg, gets, one_cas, 1, &v[1], &nv[1]) != 0)
			rc = 2;
	}
	if (rc == 0) {
		const char *pair[] = {u_site, u_cas};
		const char *sites[] = {spec};

		sbx_mock_config_init(&cfg);
		cfg.quiet = cfg.no_journal = true;
		cfg.egress = "enforced";
		cfg.internet_replay = cas;
		cfg.internet_sites = sites;
		cfg.ninternet_sites = 1;
		if (measure(&cfg, gets * rounds, pair, 2, &v[2], &nv[2]) != 0)
			rc = 2;
	}
	shutdown(o.fd, SHUT_RDWR);
	pthread_join(o.t, NULL);
	close(o.fd);
	if (rc == 0) {
		printf("| %-52s | %9s | %9s |\n", "a 10 MiB GET from a guest, plain HTTP (ms)", "p50", "p90");
		row("from --internet-site", v[2], nv[2]);
		row("replayed from the cassette", v[3], nv[3]);
		row("through --internet-upstream (the relay)", v[0], nv[0]);
		row("recorded (--internet-record)", v[1], nv[1]);
		printf("replay / site p50: %.2fx (target <= 1.2x); record / upstream p50: %.2fx (target <= 1.5x)\n",
		       bench_pct(v[3], nv[3], 50) / bench_pct(v[2], nv[2], 50),
		       bench_pct(v[1], nv[1], 50) / bench_pct(v[0], nv[0], 50));
		printf("(%zu, %zu, %zu, %zu samples)\n", nv[2], nv[3], nv[0], nv[1]);
		rc = bench_failures() > 0 ? 1 : 0;
	}
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "bench-internet-cassette: could not remove %s\n", tmp);
	}
	for (int k = 0; k < 4; k++)
		free(v[k]);
	free(o.data);
	return rc;
}

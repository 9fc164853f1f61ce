/* bench-internet_tls: the simulated internet's TLS front under a storm
 * of new names (issue 44). A handshake of a name whose leaf is cached,
 * timed from the client's connect to its verified end, quiet and while
 * new names (a leaf each to sign) arrive on other threads, in alternating
 * rounds in one run. Before issue 44 a new name was signed with the leaf
 * cache's lock held (after a linear scan), so every handshake waited
 * behind it; the target is the known name's p99 within 2x its quiet p99.
 * A third arm runs the same storm of handshakes on names signed already:
 * on a machine with fewer cores than the threads at work, the storm's
 * handshakes alone share out the cores, which is no stall of the front's;
 * the new-names p99 over this one is what signing new names adds.
 *
 * In process, over socketpairs, with OpenSSL clients that verify against
 * the CA (as test_inet_tls.c): it measures the front, not a guest's
 * network. Usage: bench-internet_tls [-n HANDSHAKES_PER_ROUND] [-r ROUNDS]
 * [-s NEW_NAMES_PER_ROUND] [-w STORM_THREADS (at most 64)]
 * [-i MICROSECONDS a storm thread pauses after each name, default 0:
 * back to back] [-p: the timed handshakes pinned to CPU 0 and the storms
 * to CPU 1, so that the storms' handshakes do not take the timed ones'
 * core: what is left is the front's own interference]. It prints the
 * p50 and p99 of each and their p99 ratio; it does not judge the target
 * (exit 0, 2 on a usage or setup error). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "tls/inet_tls.h"
#include "sbx/sys.h"

#define STORM_MAX 64 /* -w */

typedef struct server_side {
	mock_inet_tls *t;
	int fd;
} server_side;

static SSL_CTX *client_ctx;

static void *serve(void *arg)
{
	server_side *s = arg;
	mock_inet_tls_conn *c = mock_inet_tls_accept(s->t, s->fd, "192.0.2.10", sbx_mono_ms() + 5000, -1, NULL);

	mock_inet_tls_close(c);
	close(s->fd);
	return NULL;
}

/* One verified handshake for name: its time in microseconds, -1 failed. */
static int64_t handshake(mock_inet_tls *t, const char *name)
{
	server_side s = {.t = t};
	int sv[2], ok;
	pthread_t th;
	SSL *ssl;
	int64_t start;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	s.fd = sv[1];
	start = sbx_mono_us();
	if (pthread_create(&th, NULL, serve, &s) != 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	ssl = SSL_new(client_ctx);
	SSL_set_fd(ssl, sv[0]);
	SSL_set_tlsext_host_name(ssl, name);
	SSL_set1_host(ssl, name);
	ok = SSL_connect(ssl) == 1;
	SSL_free(ssl);
	ERR_clear_error();
	close(sv[0]);
	pthread_join(th, NULL);
	return ok ? sbx_mono_us() - start : -1;
}

typedef struct storm {
	mock_inet_tls *t;
	int round, worker, workers, names;
	bool cached; /* names signed before the rounds (the control arm) */
	long interval_us; /* -i: a pause after each of the thread's names */
	atomic_int *failed;
	atomic_int *running; /* storm threads not yet done */
} storm;

/* Pins the calling thread (and the threads it starts) to CPU cpu;
 * false when it cannot be. */
static bool pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0;
}

static bool g_pinned; /* -p: the timed handshakes on CPU 0, the storms on CPU 1 */

static void *storm_main(void *arg)
{
	storm *s = arg;
	char name[64];

	if (g_pinned)
		pin_to(1);

	for (int i = s->worker; i < s->names; i += s->workers) {
		if (s->cached)
			snprintf(name, sizeof(name), "cached-%d.example", i);
		else
			snprintf(name, sizeof(name), "new-%d-%d.example", s->round, i);
		if (handshake(s->t, name) < 0)
			atomic_fetch_add(s->failed, 1);
		if (s->interval_us > 0) {
			struct timespec ts = {s->interval_us / 1000000, (s->interval_us % 1000000) * 1000};

			nanosleep(&ts, NULL);
		}
	}
	atomic_fetch_sub(s->running, 1);
	return NULL;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct(int64_t *v, size_t n, double p)
{
	qsort(v, n, sizeof(*v), cmp64);
	return n == 0 ? 0 : (double)v[(size_t)(p * (double)(n - 1))] / 1000.0;
}

/* One storm of a round: its threads run the names' handshakes while the
 * known name's are timed into out, as many as the storm lasts and at most
 * per (one after its end would be a quiet one counted as loaded). */
typedef struct storm_arm {
	mock_inet_tls *t;
	int round, workers, names, per;
	long interval_us;
	bool cached;
	atomic_int *failed;
	int64_t *out;
	size_t *n;
} storm_arm;

static int run_arm(const storm_arm *a)
{
	pthread_t th[STORM_MAX];
	storm st[STORM_MAX];
	atomic_int running;
	int w = a->workers, rc = 0;

	atomic_init(&running, w);
	for (int k = 0; k < w; k++) {
		st[k] = (storm){.t = a->t, .round = a->round, .worker = k, .workers = w, .names = a->names,
				.cached = a->cached, .interval_us = a->interval_us, .failed = a->failed,
				.running = &running};
		if (pthread_create(&th[k], NULL, storm_main, &st[k]) != 0) {
			fprintf(stderr, "bench-internet_tls: cannot start a storm thread\n");
			atomic_fetch_sub(&running, w - k); /* those never started */
			w = k;
			rc = 2;
		}
	}
	for (int i = 0; i < a->per && atomic_load(&running) > 0; i++) {
		int64_t us = handshake(a->t, "known.example");

		if (us >= 0)
			a->out[(*a->n)++] = us;
	}
	for (int k = 0; k < w; k++)
		pthread_join(th[k], NULL);
	return rc;
}

int main(int argc, char **argv)
{
	int per = 200, rounds = 6, names = 100, workers = 2, opt;
	long interval_us = 0;
	sbx_err err = {{0}};
	mock_inet_tls *t;
	int64_t *quiet, *loaded, *control = NULL;
	size_t nq = 0, nl = 0, nc = 0;
	int64_t sign_us;
	atomic_int failed = 0;
	int rc = 0;

	while ((opt = getopt(argc, argv, "n:r:s:w:i:p")) != -1) {
		char *end = NULL;

		if (opt == 'p') {
			g_pinned = true;
			continue;
		}
		long v = strtol(optarg, &end, 10);
		long lo = opt == 'i' ? 0 : 1, hi = opt == 'w' ? STORM_MAX : opt == 'i' ? 1000000 : 100000;

		if (end == optarg || *end != '\0' || v < lo || v > hi) {
			fprintf(stderr, "bench-internet_tls: -%c %s: wants a number from %ld to %ld\n", opt, optarg,
				lo, hi);
			return 2;
		}
		if (opt == 'i')
			interval_us = v;
		else if (opt == 'n')
			per = (int)v;
		else if (opt == 'r')
			rounds = (int)v;
		else if (opt == 's')
			names = (int)v;
		else if (opt == 'w')
			workers = (int)v;
		else
			return 2;
	}
	if (g_pinned && (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !pin_to(0))) {
		fprintf(stderr, "bench-internet_tls: -p needs two CPUs to pin to (0 and 1)\n");
		return 2;
	}
	t = mock_inet_tls_new(NULL, NULL, &err);
	if (t == NULL) {
		fprintf(stderr, "bench-internet_tls: %s\n", err.msg);
		return 2;
	}
	{
		BIO *pem = BIO_new_mem_buf(mock_inet_tls_ca_pem(t), -1);
		X509 *ca = PEM_read_bio_X509(pem, NULL, NULL, NULL);

		client_ctx = SSL_CTX_new(TLS_client_method());
		X509_STORE_add_cert(SSL_CTX_get_cert_store(client_ctx), ca);
		SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, NULL);
		X509_free(ca);
		BIO_free(pem);
	}
	quiet = calloc((size_t)per * (size_t)rounds, sizeof(*quiet));
	loaded = calloc((size_t)per * (size_t)rounds, sizeof(*loaded));
	control = calloc((size_t)per * (size_t)rounds, sizeof(*control));
	if (quiet == NULL || loaded == NULL || control == NULL || handshake(t, "known.example") < 0) {
		fprintf(stderr, "bench-internet_tls: no memory, or the first handshake failed\n");
		rc = 2;
		goto out;
	}
	sign_us = sbx_mono_us();
	for (int i = 0; i < names; i++) { /* the control arm's names, signed once */
		char name[64];

		snprintf(name, sizeof(name), "cached-%d.example", i);
		if (mock_inet_tls_leaf(t, name) != 0) {
			fprintf(stderr, "bench-internet_tls: signing %s failed\n", name);
			rc = 2;
			goto out;
		}
	}
	sign_us = sbx_mono_us() - sign_us;
	for (int r = 0; r < rounds && rc == 0; r++) {
		for (int i = 0; i < per; i++) { /* quiet */
			int64_t us = handshake(t, "known.example");

			if (us >= 0)
				quiet[nq++] = us;
		}
		storm_arm sa = {.t = t, .round = r, .workers = workers, .names = names, .per = per,
				.interval_us = interval_us, .failed = &failed};

		sa.cached = false;
		sa.out = loaded;
		sa.n = &nl;
		rc = run_arm(&sa);
		sa.cached = true;
		sa.out = control;
		sa.n = &nc;
		if (rc == 0)
			rc = run_arm(&sa);
	}
	if (rc != 0)
		goto out;
	{
		double q50 = pct(quiet, nq, 0.50), q99 = pct(quiet, nq, 0.99);
		double l50 = pct(loaded, nl, 0.50), l99 = pct(loaded, nl, 0.99);
		double c50 = pct(control, nc, 0.50), c99 = pct(control, nc, 0.99);

		printf("a new leaf (signed alone, without a handshake): %.1f us each (%d)\n",
		       (double)sign_us / names, names);
		printf("known-name handshake, quiet:          p50 %.3f ms  p99 %.3f ms  (n=%zu)\n", q50, q99, nq);
		if (interval_us > 0)
			printf("storm threads pause %ld us after each name\n", interval_us);
		if (g_pinned)
			printf("pinned: the timed handshakes (client and server) on CPU 0, the storms on CPU 1\n");
		printf("known-name handshake, %d new names/round on %d threads: p50 %.3f ms  p99 %.3f ms  (n=%zu)\n",
		       names, workers, l50, l99, nl);
		printf("known-name handshake, %d cached names/round on %d threads: p50 %.3f ms  p99 %.3f ms  (n=%zu)\n",
		       names, workers, c50, c99, nc);
		printf("p99 ratio new-names/quiet: %.2fx (target <= 2x); new-names/cached-names: %.2fx (what signing "
		       "adds); leaves cached: %zu; failed storm handshakes: %d\n",
		       q99 > 0 ? l99 / q99 : 0, c99 > 0 ? l99 / c99 : 0, mock_inet_tls_cached(t), atomic_load(&failed));
	}
out:
	free(quiet);
	free(loaded);
	free(control);
	SSL_CTX_free(client_ctx);
	mock_inet_tls_free(t);
	return rc;
}

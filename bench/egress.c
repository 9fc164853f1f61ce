/* bench-egress: decisions per second and build time of the compiled egress
 * policy against the reference scan, for lists of 10, 1k, 10k and 100k rules.
 *
 * Lists mix IPv4 addresses and CIDRs (/8-/32), IPv6 addresses and CIDRs,
 * exact hosts and wildcards, a tenth of them with a port, drawn from a fixed
 * seed so runs compare. Destinations: 65536 per workload, half derived from
 * the rules (inside a block, under a wildcard) and half random, evaluated in
 * sequence. "addr" destinations carry only an address (the conformance
 * suite's case and the spec's target); "name" ones also carry a host name and
 * run in documented mode. A program, never a test: run it from a release
 * build, preferably with nice, and read the table. Times are the thread's
 * CPU time (CLOCK_THREAD_CPUTIME_ID); compiled rates are the best of seven
 * rounds that interleave the sizes; build time is the best of three compiles.
 *
 *   build/default/bench/bench-egress [--quick]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sbx/egress.h"

#define NDEST	    65536
#define MIN_SECONDS 0.1
#define NAME_CAP    64 /* bench names are at most ~45 characters */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* CPU time of this thread: the machine is shared (CI, other builds), so wall
 * time would count the time the scheduler gave to others. */
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const words[] = {"api",    "cdn",	"files", "pypi", "github", "registry",
				    "mirror", "static", "data",	 "edge", "img",	   "auth"};
static const char *const tlds[] = {"com", "org", "net", "io", "dev"};

static void random_name(char *out, size_t cap, size_t labels)
{
	size_t o = 0;
	for (size_t i = 0; i < labels; i++) {
		int k = snprintf(out + o, cap - o, "%s%u.", words[rnd() % 12],
				 (unsigned)(rnd() % 5000));
		o += (size_t)k;
	}
	snprintf(out + o, cap - o, "%s", tlds[rnd() % 5]);
}

/* One rule text into buf; the mix described at the top of the file. */
static void random_rule(char *buf, size_t cap)
{
	unsigned kind = (unsigned)(rnd() % 20);
	char port[8] = "";
	if (rnd() % 10 == 0)
		snprintf(port, sizeof port, ":%u", 1 + (unsigned)(rnd() % 65535));
	if (kind < 8) {
		uint32_t a = (uint32_t)rnd();
		unsigned len = 8 + (unsigned)(rnd() % 25);
		snprintf(buf, cap, "%u.%u.%u.%u/%u%s", a >> 24, (a >> 16) & 255, (a >> 8) & 255,
			 a & 255, len, port);
	} else if (kind < 10) {
		uint64_t hi = rnd();
		unsigned len = 16 + (unsigned)(rnd() % 113);
		char addr[64];
		snprintf(addr, sizeof addr, "2%03x:%x:%x:%x:%x:%x:%x:%x/%u", (unsigned)(hi & 0xfff),
			 (unsigned)(hi >> 12 & 0xffff), (unsigned)(hi >> 28 & 0xffff),
			 (unsigned)(rnd() & 0xffff), (unsigned)(rnd() & 0xffff),
			 (unsigned)(rnd() & 0xffff), (unsigned)(rnd() & 0xffff),
			 (unsigned)(rnd() & 0xffff), len);
		if (port[0] != '\0')
			snprintf(buf, cap, "[%s]%s", addr, port);
		else
			snprintf(buf, cap, "%s", addr);
	} else if (kind < 15) {
		char name[128];
		random_name(name, sizeof name, 1 + rnd() % 2);
		snprintf(buf, cap, "%s%s", name, port);
	} else {
		char name[128];
		random_name(name, sizeof name, 1);
		snprintf(buf, cap, "*.%s%s", name, port);
	}
}

typedef struct workload {
	sbx_egress_dest dest[NDEST];
	char names[NDEST][NAME_CAP];
} workload;

/* A destination inside rule r when it is an address or wildcard rule,
 * otherwise random. */
static void make_dest(const sbx_egress_list *list, sbx_egress_dest *d, char *name, bool with_name)
{
	memset(d, 0, sizeof *d);
	d->port = 443;
	const sbx_egress_rule *r = list->count ? &list->rules[rnd() % list->count] : NULL;
	bool derived = r != NULL && rnd() % 2 == 0;
	if (derived && (r->kind == SBX_RULE_IPV4 || r->kind == SBX_RULE_IPV6)) {
		d->family = r->kind == SBX_RULE_IPV4 ? 4 : 6;
		memcpy(d->addr, r->addr, 16);
		size_t bytes = d->family == 4 ? 4 : 16;
		for (size_t bit = r->prefix_len; bit < bytes * 8; bit++) {
			if (rnd() & 1)
				d->addr[bit / 8] |= (uint8_t)(1 << (7 - bit % 8));
		}
		if (r->port != 0)
			d->port = r->port;
	} else if (rnd() % 5 == 0) {
		d->family = 6;
		for (int i = 0; i < 16; i++)
			d->addr[i] = (uint8_t)rnd();
		d->addr[0] = 0x20 | (d->addr[0] & 0x0f);
	} else {
		d->family = 4;
		uint32_t a = (uint32_t)rnd();
		d->addr[0] = (uint8_t)(a >> 24);
		d->addr[1] = (uint8_t)(a >> 16);
		d->addr[2] = (uint8_t)(a >> 8);
		d->addr[3] = (uint8_t)a;
	}
	if (!with_name)
		return;
	int k = 0;
	if (derived && r->kind == SBX_RULE_HOST)
		k = snprintf(name, NAME_CAP, "%s", r->host);
	else if (derived && r->kind == SBX_RULE_WILDCARD)
		k = snprintf(name, NAME_CAP, "x%u.%s", (unsigned)(rnd() % 100), r->host);
	else
		random_name(name, NAME_CAP, 1 + rnd() % 3);
	if (k < 0 || k >= NAME_CAP)
		random_name(name, NAME_CAP, 1); /* cannot happen with this generator */
	if (derived && r->port != 0)
		d->port = r->port;
	d->host = name;
}

/* One timed run of at least MIN_SECONDS of CPU time. */
static double measure_compiled(const sbx_egress_policy *p, const workload *w, size_t *allowed)
{
	size_t n = 0, ok = 0;
	double t0 = now(), t;
	do {
		for (size_t i = 0; i < NDEST; i++)
			ok += sbx_egress_policy_eval(p, &w->dest[i]).allowed;
		n += NDEST;
		t = now();
	} while (t - t0 < MIN_SECONDS);
	*allowed += ok;
	return (double)n / (t - t0);
}

static double measure_reference(const sbx_egress_list *list, sbx_host_rule_mode mode,
				const workload *w, size_t *allowed)
{
	size_t n = 0, ok = 0;
	double t0 = now(), t;
	do {
		for (size_t i = 0; i < 64; i++)
			ok += sbx_egress_reference_eval(list, mode, &w->dest[(n + i) % NDEST])
				      .allowed;
		n += 64;
		t = now();
	} while (t - t0 < MIN_SECONDS);
	*allowed += ok;
	return (double)n / (t - t0);
}

static int build_list(size_t count, sbx_egress_list *list, double *parse_ms)
{
	char **texts = malloc(count * sizeof *texts);
	if (texts == NULL)
		return -1;
	for (size_t i = 0; i < count; i++) {
		texts[i] = malloc(SBX_EGRESS_CANON_MAX);
		random_rule(texts[i], SBX_EGRESS_CANON_MAX);
	}
	sbx_egress_error err;
	double t0 = now();
	int rc = sbx_egress_list_from_strings((const char *const *)texts, count, count, list, &err);
	*parse_ms = (now() - t0) * 1e3;
	if (rc != 0)
		fprintf(stderr, "bench-egress: generated list rejected: %s\n", err.message);
	for (size_t i = 0; i < count; i++)
		free(texts[i]);
	free(texts);
	return rc;
}

#define NSIZES 4
#define ROUNDS 7

typedef struct size_run {
	size_t rules;
	sbx_egress_list list;
	sbx_egress_policy *pa, *pn; /* observed (addr), documented (name) */
	workload *addr, *named;
	double parse_ms, build_ms, ca, cn, ra, rn;
} size_run;

static int prepare(size_run *r, bool quick, size_t *allowed)
{
	r->build_ms = 1e9;
	if (build_list(r->rules, &r->list, &r->parse_ms) != 0)
		return -1;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now();
		sbx_egress_policy *p =
			sbx_egress_policy_compile(&r->list, SBX_HOST_RULES_DOCUMENTED);
		double ms = (now() - t0) * 1e3;
		if (p == NULL)
			return -1;
		r->build_ms = ms < r->build_ms ? ms : r->build_ms;
		sbx_egress_policy_free(r->pn);
		r->pn = p;
	}
	r->pa = sbx_egress_policy_compile(&r->list, SBX_HOST_RULES_OBSERVED);
	r->addr = malloc(sizeof *r->addr);
	r->named = malloc(sizeof *r->named);
	if (r->pa == NULL || r->addr == NULL || r->named == NULL)
		return -1;
	for (size_t i = 0; i < NDEST; i++) {
		make_dest(&r->list, &r->addr->dest[i], r->addr->names[i], false);
		make_dest(&r->list, &r->named->dest[i], r->named->names[i], true);
	}
	if (!quick || r->rules <= 10000) {
		r->ra = measure_reference(&r->list, SBX_HOST_RULES_OBSERVED, r->addr, allowed);
		r->rn = measure_reference(&r->list, SBX_HOST_RULES_DOCUMENTED, r->named, allowed);
	}
	return 0;
}

static void release(size_run *r)
{
	sbx_egress_policy_free(r->pa);
	sbx_egress_policy_free(r->pn);
	sbx_egress_list_free(&r->list);
	free(r->addr);
	free(r->named);
}

int main(int argc, char **argv)
{
	static size_run runs[NSIZES] = {
		{.rules = 10}, {.rules = 1000}, {.rules = 10000}, {.rules = 100000}};
	bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	size_t allowed = 0;

	for (size_t s = 0; s < NSIZES; s++) {
		if (prepare(&runs[s], quick, &allowed) != 0) {
			fprintf(stderr, "bench-egress: setup failed for %zu rules\n",
				runs[s].rules);
			return 1;
		}
	}
	/* Compiled rates: the best of ROUNDS, with the sizes interleaved in each
	 * round so a burst of load on the machine hits them all alike. */
	for (int round = 0; round < ROUNDS; round++) {
		for (size_t s = 0; s < NSIZES; s++) {
			size_run *r = &runs[s];
			double ca = measure_compiled(r->pa, r->addr, &allowed);
			double cn = measure_compiled(r->pn, r->named, &allowed);
			r->ca = ca > r->ca ? ca : r->ca;
			r->cn = cn > r->cn ? cn : r->cn;
		}
	}

	printf("%8s %9s %9s %14s %14s %14s %14s %9s\n", "rules", "parse_ms", "build_ms",
	       "compiled_addr", "compiled_name", "reference_addr", "reference_name", "ns/addr");
	printf("%8s %9s %9s %14s %14s %14s %14s %9s\n", "", "", "", "Mdec/s", "Mdec/s", "Mdec/s",
	       "Mdec/s", "");
	for (size_t s = 0; s < NSIZES; s++) {
		size_run *r = &runs[s];
		printf("%8zu %9.2f %9.2f %14.2f %14.2f %14.4f %14.4f %9.1f\n", r->rules,
		       r->parse_ms, r->build_ms, r->ca / 1e6, r->cn / 1e6, r->ra / 1e6, r->rn / 1e6,
		       1e9 / r->ca);
	}
	printf("cost per address decision, 100k rules / 10 rules: %.2fx (allowed total %zu)\n",
	       runs[0].ca / runs[NSIZES - 1].ca, allowed);
	for (size_t s = 0; s < NSIZES; s++)
		release(&runs[s]);
	return 0;
}

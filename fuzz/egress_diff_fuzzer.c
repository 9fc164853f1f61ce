/* Fuzz target: the compiled policy against the reference evaluator.
 *
 * The input is decoded into a rule list (built from small alphabets of
 * addresses, prefix lengths, ports and labels so that rules nest, overlap and
 * collide) and a set of destinations (fuzzer-chosen ones plus ones derived
 * from the rules: inside, at the edges of and just outside each block, and
 * names at, below and beside each host rule). For every destination, in both
 * host-rule modes, the compiled decision must equal the reference decision
 * exactly (allowed, reason and rule index); otherwise abort().
 *
 * Both library evaluators go through the same helpers (egress_internal.h:
 * destination normalisation, the loopback/link-local steps, "is the list
 * open"), so a bug there would make them agree on a wrong answer. A third
 * evaluator, the oracle below, restates spec/egress.md's decision order and
 * lib/README.md's decided edge cases with none of lib's code, and both
 * library answers must equal it too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RULES 48
#define MAX_DESTS 64

typedef struct input {
	const uint8_t *p;
	size_t n;
} input;

static uint8_t take(input *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

static const uint8_t octets[] = {0, 1, 2, 10, 127, 128, 169, 254, 255, 192, 168, 240};
static const uint16_t ports[] = {0, 0, 0, 80, 443, 1, 65535, 53};
static const char *const labels[] = {"a", "b", "com", "xn--p1ai", "a-b", "x0", "org", "c"};

static uint8_t pick_octet(input *in)
{
	uint8_t b = take(in);
	return b < 0xc0 ? octets[b % sizeof octets] : (uint8_t)(b << 2 | take(in) >> 6);
}

static uint16_t pick_port(input *in)
{
	uint8_t b = take(in);
	if (b < 0xf0)
		return ports[b % (sizeof ports / sizeof ports[0])];
	return (uint16_t)(take(in) << 8 | take(in));
}

static void pick_name(input *in, char *out, size_t cap)
{
	size_t nl = 1 + take(in) % 4, o = 0;
	for (size_t i = 0; i < nl; i++) {
		const char *l = labels[take(in) % (sizeof labels / sizeof labels[0])];
		int k = snprintf(out + o, cap - o, "%s%s", i ? "." : "", l);
		if (k < 0 || (size_t)k >= cap - o)
			break;
		o += (size_t)k;
	}
}

static void pick_addr(input *in, int family, uint8_t *addr)
{
	memset(addr, 0, 16);
	size_t bytes = family == 4 ? 4 : 16;
	if (family == 6 && take(in) % 4 == 0) {
		addr[0] = 0x20;
		addr[1] = 0x01;
		addr[2] = 0x0d;
		addr[3] = 0xb8;
	}
	for (size_t i = 0; i < bytes; i++) {
		uint8_t b = take(in);
		if (b % 3 != 0)
			addr[i] =
				family == 4 || i < 4 ? pick_octet(in) : (b % 3 == 1 ? 0 : addr[i]);
	}
	if (family == 6 && take(in) % 8 == 0) {
		memset(addr, 0, 10);
		addr[10] = addr[11] = 0xff; /* IPv4-mapped */
	}
}

/* Builds one rule from the input by formatting it and parsing it back, so
 * the list holds exactly what the parser produces. */
static bool pick_rule(input *in, sbx_egress_rule *r)
{
	sbx_egress_rule raw;
	char text[SBX_EGRESS_CANON_MAX];
	sbx_egress_error err;
	memset(&raw, 0, sizeof raw);
	uint8_t k = take(in) % 16;
	raw.kind = k == 0   ? SBX_RULE_ALL
		   : k < 4  ? SBX_RULE_HOST
		   : k < 7  ? SBX_RULE_WILDCARD
		   : k < 12 ? SBX_RULE_IPV4
			    : SBX_RULE_IPV6;
	if (raw.kind != SBX_RULE_ALL)
		raw.port = pick_port(in);
	if (raw.kind == SBX_RULE_HOST || raw.kind == SBX_RULE_WILDCARD)
		pick_name(in, raw.host, sizeof raw.host);
	if (raw.kind == SBX_RULE_IPV4) {
		pick_addr(in, 4, raw.addr);
		raw.prefix_len = (uint8_t)(take(in) % 33);
	}
	if (raw.kind == SBX_RULE_IPV6) {
		pick_addr(in, 6, raw.addr);
		uint8_t b = take(in);
		raw.prefix_len = (uint8_t)(b < 0x80 ? b % 129 : (b % 8) * 16 + (b & 1 ? 0 : 8));
	}
	/* Format without masking: the parser masks host bits itself. */
	sbx_egress_rule_format(&raw, text, sizeof text);
	return sbx_egress_rule_parse(text, strlen(text), 0, r, &err) == 0;
}

typedef struct dest_store {
	sbx_egress_dest d;
	char host[SBX_EGRESS_HOST_MAX + 2];
} dest_store;

static void name_variant(input *in, const char *base, char *out, size_t cap)
{
	uint8_t v = take(in) % 6;
	const char *pre = v == 1 ? "x." : v == 2 ? "y.z." : v == 3 ? "x" : "";
	const char *post = v == 4 ? "." : "";
	snprintf(out, cap, "%s%s%s", pre, base, post);
	if (v == 5) {
		for (char *c = out; *c != '\0'; c++) {
			if (*c >= 'a' && *c <= 'z')
				*c = (char)(*c - 'a' + 'A');
		}
	}
}

/* A destination derived from rule r: inside, at an edge, or just outside. */
static void dest_from_rule(input *in, const sbx_egress_rule *r, dest_store *s)
{
	sbx_egress_dest *d = &s->d;
	memset(d, 0, sizeof *d);
	d->port = take(in) % 2 ? r->port : pick_port(in);
	if (d->port == 0)
		d->port = 443;
	if (r->kind == SBX_RULE_HOST || r->kind == SBX_RULE_WILDCARD) {
		name_variant(in, r->host, s->host, sizeof s->host);
		d->host = s->host;
		d->family = take(in) % 3 == 0 ? 4 : 0;
		if (d->family == 4)
			pick_addr(in, 4, d->addr);
		return;
	}
	d->family = r->kind == SBX_RULE_IPV6 ? 6 : 4;
	size_t bytes = d->family == 4 ? 4 : 16;
	memcpy(d->addr, r->addr, 16);
	uint8_t how = take(in) % 4;
	for (size_t bit = r->prefix_len; bit < bytes * 8; bit++) {
		bool one = how == 1 || (how == 2 && (take(in) & 1));
		if (one)
			d->addr[bit / 8] |= (uint8_t)(1 << (7 - bit % 8));
	}
	if (how == 3 && r->prefix_len > 0) {
		size_t bit = r->prefix_len - 1; /* flip the last prefix bit: just outside */
		d->addr[bit / 8] ^= (uint8_t)(1 << (7 - bit % 8));
	}
	if (d->family == 4 && take(in) % 4 == 0) {
		/* The same packet as seen on an IPv6 socket: ::ffff:a.b.c.d. */
		memmove(d->addr + 12, d->addr, 4);
		memset(d->addr, 0, 10);
		d->addr[10] = d->addr[11] = 0xff;
		d->family = 6;
	}
}

static void dest_free_form(input *in, dest_store *s)
{
	sbx_egress_dest *d = &s->d;
	memset(d, 0, sizeof *d);
	uint8_t f = take(in) % 4;
	d->family = f == 0 ? 0 : f == 1 ? 6 : 4;
	if (d->family != 0)
		pick_addr(in, d->family, d->addr);
	d->port = pick_port(in);
	if (d->port == 0)
		d->port = 80;
	if (d->family == 0 || take(in) % 2) {
		char base[SBX_EGRESS_HOST_MAX + 1];
		pick_name(in, base, sizeof base);
		name_variant(in, base, s->host, sizeof s->host);
		d->host = s->host;
	}
}

/* ---- the oracle: spec/egress.md's decision order, written out again ----
 *
 * Nothing here calls lib/: the address arithmetic is by 32-bit words and
 * masks (lib compares bit by bit), names compare case-insensitively here
 * (lib lower-cases once), and the edge cases are lib/README.md's decisions:
 * an IPv4-mapped IPv6 destination (::ffff:a.b.c.d) is the IPv4 address it
 * carries, only 169.254.0.0/16 is exempt (not fe80::/10), a wildcard matches
 * names strictly below its suffix, a name of more than 253 characters (after
 * one trailing dot is dropped) matches no host rule, a destination without
 * an address is matched by host rules only. */

typedef struct oracle_dest {
	int family;        /* 4, 6 or 0 */
	uint32_t w[4];     /* the address as big-endian words; IPv4 in w[0] */
	uint16_t port;
	const char *name;  /* NULL: no name that a host rule can match */
	size_t name_len;   /* without the one trailing dot */
} oracle_dest;

static uint32_t word_at(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void oracle_dest_of(const sbx_egress_dest *d, oracle_dest *o)
{
	memset(o, 0, sizeof *o);
	o->port = d->port;
	if (d->family == 4) {
		o->family = 4;
		o->w[0] = word_at(d->addr);
	} else if (d->family == 6) {
		for (int i = 0; i < 4; i++)
			o->w[i] = word_at(d->addr + 4 * i);
		o->family = 6;
		if (o->w[0] == 0 && o->w[1] == 0 && o->w[2] == 0xffffu) {
			o->family = 4; /* the packet on the wire is IPv4 */
			o->w[0] = o->w[3];
			o->w[1] = o->w[2] = o->w[3] = 0;
		}
	}
	if (d->host == NULL)
		return;
	size_t n = strlen(d->host);
	if (n > 0 && d->host[n - 1] == '.')
		n--;
	if (n == 0 || n > 253)
		return;
	o->name = d->host;
	o->name_len = n;
}

static char fold(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c + ('a' - 'A')) : c;
}

/* a[0..n) equals the NUL-terminated b, ignoring ASCII case. */
static bool same_name(const char *a, size_t n, const char *b)
{
	size_t i = 0;
	for (; i < n && b[i] != '\0'; i++) {
		if (fold(a[i]) != fold(b[i]))
			return false;
	}
	return i == n && b[i] == '\0';
}

/* The first plen bits of the words a and b agree. */
static bool words_match(const uint32_t *a, const uint32_t *b, unsigned plen)
{
	for (unsigned i = 0; plen > 0; i++) {
		unsigned take = plen < 32 ? plen : 32;
		uint32_t mask = take == 32 ? 0xffffffffu : ~(0xffffffffu >> take);
		if ((a[i] & mask) != (b[i] & mask))
			return false;
		plen -= take;
	}
	return true;
}

static bool oracle_rule_matches(const sbx_egress_rule *r, sbx_host_rule_mode mode,
				const oracle_dest *o)
{
	if (r->port != 0 && r->port != o->port)
		return false;
	uint32_t rw[4];
	for (int i = 0; i < 4; i++)
		rw[i] = word_at(r->addr + 4 * i);
	bool names = mode == SBX_HOST_RULES_DOCUMENTED && o->name != NULL;
	switch (r->kind) {
	case SBX_RULE_ALL:
		return true;
	case SBX_RULE_IPV4:
		return o->family == 4 && words_match(rw, o->w, r->prefix_len);
	case SBX_RULE_IPV6:
		return o->family == 6 && words_match(rw, o->w, r->prefix_len);
	case SBX_RULE_HOST:
		return names && same_name(o->name, o->name_len, r->host);
	case SBX_RULE_WILDCARD: {
		size_t sl = strlen(r->host);
		/* "x." then the suffix: at least one label below it */
		return names && o->name_len > sl + 1 && o->name[o->name_len - sl - 1] == '.' &&
		       same_name(o->name + o->name_len - sl, sl, r->host);
	}
	}
	return false;
}

static sbx_egress_decision oracle_eval(const sbx_egress_list *list, sbx_host_rule_mode mode,
				       const sbx_egress_dest *d)
{
	sbx_egress_decision out = {.allowed = true, .reason = SBX_REASON_RULE, .rule_index = 0};
	oracle_dest o;
	oracle_dest_of(d, &o);
	bool v6_loopback = o.family == 6 && o.w[0] == 0 && o.w[1] == 0 && o.w[2] == 0 && o.w[3] == 1;
	if ((o.family == 4 && o.w[0] >> 24 == 127) || v6_loopback) {
		out.reason = SBX_REASON_LOOPBACK;
		return out;
	}
	if (o.family == 4 && o.w[0] >> 16 == (169u << 8 | 254u)) {
		out.reason = SBX_REASON_LINK_LOCAL;
		return out;
	}
	bool open = list->is_null || list->count == 0;
	for (size_t i = 0; i < list->count && !open; i++)
		open = list->rules[i].kind == SBX_RULE_ALL;
	if (open) {
		out.reason = SBX_REASON_OPEN_POLICY;
		return out;
	}
	for (size_t i = 0; i < list->count; i++) {
		if (oracle_rule_matches(&list->rules[i], mode, &o)) {
			out.rule_index = i;
			return out;
		}
	}
	out.allowed = false;
	out.reason = SBX_REASON_DEFAULT_DENY;
	return out;
}

static bool same_decision(sbx_egress_decision a, sbx_egress_decision b)
{
	return a.allowed == b.allowed && a.reason == b.reason &&
	       (a.reason != SBX_REASON_RULE || a.rule_index == b.rule_index);
}

static void compare(const sbx_egress_policy *p, const sbx_egress_list *list,
		    sbx_host_rule_mode mode, const sbx_egress_dest *d)
{
	sbx_egress_decision a = sbx_egress_policy_eval(p, d);
	sbx_egress_decision b = sbx_egress_reference_eval(list, mode, d);
	sbx_egress_decision c = oracle_eval(list, mode, d);
	if (same_decision(a, b) && same_decision(b, c))
		return;
	fprintf(stderr,
		"compiled %d/%s/%zu, reference %d/%s/%zu, oracle %d/%s/%zu disagree (mode %d, "
		"family %d, port %u, host %s)\n",
		a.allowed, sbx_egress_reason_name(a.reason), a.rule_index, b.allowed,
		sbx_egress_reason_name(b.reason), b.rule_index, c.allowed,
		sbx_egress_reason_name(c.reason), c.rule_index, (int)mode, d->family, d->port,
		d->host ? d->host : "-");
	fprintf(stderr, "  address:");
	for (int i = 0; i < (d->family == 6 ? 16 : 4); i++)
		fprintf(stderr, " %02x", d->addr[i]);
	fprintf(stderr, "\n");
	for (size_t i = 0; i < list->count; i++) {
		char t[SBX_EGRESS_CANON_MAX];
		sbx_egress_rule_format(&list->rules[i], t, sizeof t);
		fprintf(stderr, "  rule %zu: %s\n", i, t);
	}
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	input in = {data, size};
	sbx_egress_rule rules[MAX_RULES];
	static dest_store dests[MAX_DESTS];
	size_t nrules = take(&in) % (MAX_RULES + 1);
	size_t got = 0;
	for (size_t i = 0; i < nrules; i++) {
		if (pick_rule(&in, &rules[got]))
			got++;
	}
	sbx_egress_list list = {.is_null = got == 0 && take(&in) % 2, .count = got, .rules = rules};

	size_t ndest = 0;
	for (size_t i = 0; i < got && ndest < MAX_DESTS / 2; i++)
		dest_from_rule(&in, &rules[i], &dests[ndest++]);
	while (ndest < MAX_DESTS && in.n > 0)
		dest_free_form(&in, &dests[ndest++]);

	for (int m = 0; m < 2; m++) {
		sbx_host_rule_mode mode = m ? SBX_HOST_RULES_OBSERVED : SBX_HOST_RULES_DOCUMENTED;
		sbx_egress_policy *p = sbx_egress_policy_compile(&list, mode);
		if (p == NULL)
			abort();
		for (size_t i = 0; i < ndest; i++)
			compare(p, &list, mode, &dests[i].d);
		sbx_egress_policy_free(p);
	}
	return 0;
}

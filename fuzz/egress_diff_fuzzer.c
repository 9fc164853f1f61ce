/* Fuzz target: the compiled policy against the reference evaluator.
 *
 * The input is decoded into a rule list (built from small alphabets of
 * addresses, prefix lengths, ports and labels so that rules nest, overlap and
 * collide) and a set of destinations (fuzzer-chosen ones plus ones derived
 * from the rules: inside, at the edges of and just outside each block, and
 * names at, below and beside each host rule). For every destination, in both
 * host-rule modes, the compiled decision must equal the reference decision
 * exactly (allowed, reason and rule index); otherwise abort(). */
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

static void compare(const sbx_egress_policy *p, const sbx_egress_list *list,
		    sbx_host_rule_mode mode, const sbx_egress_dest *d)
{
	sbx_egress_decision a = sbx_egress_policy_eval(p, d);
	sbx_egress_decision b = sbx_egress_reference_eval(list, mode, d);
	bool same = a.allowed == b.allowed && a.reason == b.reason &&
		    (a.reason != SBX_REASON_RULE || a.rule_index == b.rule_index);
	if (same)
		return;
	fprintf(stderr,
		"compiled %d/%s/%zu != reference %d/%s/%zu (mode %d, family %d, port %u, host "
		"%s)\n",
		a.allowed, sbx_egress_reason_name(a.reason), a.rule_index, b.allowed,
		sbx_egress_reason_name(b.reason), b.rule_index, (int)mode, d->family, d->port,
		d->host ? d->host : "-");
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

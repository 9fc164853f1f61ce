/* egress_policy: the compiled form of a rule list, for fast decisions.
 *
 * Addresses: per family and per port slot (slot 0 = rules without a port,
 * one slot per distinct port), the rules' prefixes are flattened into
 * disjoint intervals of the 128-bit key space, each carrying the smallest
 * rule index that covers it (prefixes nest or are disjoint, so a sweep with
 * a stack does this in one pass). A lookup is a bucket index on the key bits
 * after the prefix all boundaries share (about one interval per bucket) and
 * a short binary search, so its cost barely grows with the list.
 * Names: open-addressing hash tables keyed by (name, port), one for exact
 * names and one for wildcard suffixes; a host's suffixes are hashed right to
 * left in one pass, so a wildcard lookup costs one probe pair per label.
 * The answer is the minimum over all candidates, which is the first matching
 * rule in list order, exactly what the reference scan returns.
 *
 * The policy is immutable once built and never points into the source list. */
#include <stdlib.h>
#include <string.h>

#include "egress_internal.h"

typedef struct ivkey {
	uint64_t hi, lo;
} ivkey;

/* One interval: from start to the next interval's start. The value sits
 * beside its key so a lookup touches one cache line, not two. */
typedef struct ivent {
	ivkey start;
	uint32_t val; /* EGRESS_NO_RULE or the smallest covering rule index */
} ivent;

/* The IPv4 form of ivent: a third of the size, so big IPv4 tables stay in
 * the caches. */
typedef struct ivent4 {
	uint32_t start;
	uint32_t val;
} ivent4;

typedef struct ivtable {
	size_t n;	  /* intervals, n >= 1, e[0].start == 0 */
	ivent *e;	  /* IPv6 tables (and IPv4 ones while building) */
	ivent4 *e4;	  /* IPv4 tables once built; e is then NULL */
	unsigned bits;	  /* bucket index bits, 0 = none */
	unsigned shift;	  /* leading key bits all boundaries but the first share */
	uint64_t prefix;  /* those bits' value (keys outside it hit interval 0 or n-1) */
	uint32_t *bucket; /* (1 << bits) + 1 entries: last interval starting <= bucket start */
} ivtable;

typedef struct hentry {
	uint64_t hash;
	const char *name; /* NULL: empty slot; points into policy->names */
	uint32_t len;
	uint32_t rule;
	uint16_t port;
} hentry;

typedef struct htable {
	size_t mask; /* capacity - 1; capacity is a power of two */
	size_t used;
	hentry *slots;
} htable;

struct sbx_egress_policy {
	sbx_host_rule_mode mode;
	bool open;
	size_t nslots;	    /* port slots, slot 0 = any port */
	uint16_t *portslot; /* 65536 entries, or NULL when no IP rule has a port */
	ivtable *v4, *v6;   /* nslots each */
	htable exact, wild;
	char *names; /* arena of the names the hash tables point at */
};

/* ---- 128-bit keys ---- */

static ivkey key_from_rule(const sbx_egress_rule *r)
{
	const uint8_t *a = r->addr;
	ivkey k = {0, 0};
	size_t bytes = r->kind == SBX_RULE_IPV4 ? 4 : 16;
	for (size_t i = 0; i < 8 && i < bytes; i++)
		k.hi |= (uint64_t)a[i] << (56 - 8 * i);
	for (size_t i = 8; i < bytes; i++)
		k.lo |= (uint64_t)a[i] << (56 - 8 * (i - 8));
	return k;
}

static inline ivkey key_v6(const uint8_t *a)
{
	ivkey k = {0, 0};
	for (int i = 0; i < 8; i++) {
		k.hi = k.hi << 8 | a[i];
		k.lo = k.lo << 8 | a[8 + i];
	}
	return k;
}

static inline bool key_le(ivkey a, ivkey b)
{
	return a.hi < b.hi || (a.hi == b.hi && a.lo <= b.lo);
}

static inline bool key_eq(ivkey a, ivkey b)
{
	return a.hi == b.hi && a.lo == b.lo;
}

/* The last key of the block that starts at k and has prefix length len. */
static ivkey key_block_end(ivkey k, unsigned len)
{
	ivkey e = k;
	if (len < 64) {
		e.hi |= len == 0 ? UINT64_MAX : (UINT64_MAX >> len);
		e.lo = UINT64_MAX;
	} else if (len < 128) {
		e.lo |= UINT64_MAX >> (len - 64);
	}
	return e;
}

static bool key_is_max(ivkey k)
{
	return k.hi == UINT64_MAX && k.lo == UINT64_MAX;
}

static ivkey key_next(ivkey k)
{
	ivkey n = k;
	n.lo++;
	if (n.lo == 0)
		n.hi++;
	return n;
}

/* ---- interval tables ---- */

typedef struct pfx {
	ivkey start, end;
	uint32_t rule;
	uint32_t group; /* family * nslots + slot */
	uint8_t len;
} pfx;

static int pfx_cmp(const void *pa, const void *pb)
{
	const pfx *a = pa, *b = pb;
	if (a->group != b->group)
		return a->group < b->group ? -1 : 1;
	if (!key_eq(a->start, b->start))
		return key_le(a->start, b->start) ? -1 : 1;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return a->rule < b->rule ? -1 : (a->rule > b->rule);
}

static void iv_emit(ivtable *t, ivkey start, uint32_t val)
{
	if (key_eq(t->e[t->n - 1].start, start)) {
		t->e[t->n - 1].val = val;
		if (t->n > 1 && t->e[t->n - 2].val == val)
			t->n--;
		return;
	}
	if (t->e[t->n - 1].val == val)
		return;
	t->e[t->n].start = start;
	t->e[t->n].val = val;
	t->n++;
}

static unsigned ceil_log2(size_t n)
{
	unsigned b = 0;
	while (((size_t)1 << b) < n)
		b++;
	return b;
}

/* width: the meaningful key bits of hi (32 for IPv4, 64 for IPv6). */
static int iv_index(ivtable *t, unsigned width)
{
	t->bits = ceil_log2(t->n);
	if (t->bits > 16)
		t->bits = 16;
	if (t->n <= 4)
		t->bits = 0;
	if (t->bits == 0)
		return 0;
	/* Boundaries other than the first (always 0) share their leading bits
	 * when the rules cluster (2001:db8::/32, 10.0.0.0/8): index the bits
	 * after that common prefix so the buckets spread over the rules. */
	uint64_t x = t->e[1].start.hi ^ t->e[t->n - 1].start.hi;
	unsigned common = 0;
	while (common < 64 && ((x >> (63 - common)) & 1) == 0)
		common++;
	t->shift = common + t->bits > width ? width - t->bits : common;
	t->prefix = t->shift != 0 ? t->e[1].start.hi >> (64 - t->shift) : 0;
	uint64_t base = t->shift != 0 ? t->prefix << (64 - t->shift) : 0;

	size_t nb = (size_t)1 << t->bits;
	t->bucket = malloc((nb + 1) * sizeof *t->bucket);
	if (t->bucket == NULL)
		return -1;
	size_t i = 0;
	for (size_t b = 0; b < nb; b++) {
		ivkey bs = {base | (uint64_t)b << (64 - t->shift - t->bits), 0};
		while (i + 1 < t->n && key_le(t->e[i + 1].start, bs))
			i++;
		t->bucket[b] = (uint32_t)i;
	}
	t->bucket[nb] = (uint32_t)(t->n - 1);
	return 0;
}

/* Builds t from the sorted prefixes p[0, m) (all in one group). stack has
 * room for m entries. */
static int iv_build(ivtable *t, const pfx *p, size_t m, const pfx **stack, uint32_t *eff,
		    unsigned width)
{
	t->e = malloc((2 * m + 1) * sizeof *t->e);
	if (t->e == NULL)
		return -1;
	t->n = 1;
	t->e[0].start = (ivkey){0, 0};
	t->e[0].val = EGRESS_NO_RULE;

	size_t sp = 0;
	for (size_t i = 0; i < m; i++) {
		while (sp > 0 && !key_le(p[i].start, stack[sp - 1]->end)) {
			ivkey after = key_next(stack[sp - 1]->end);
			sp--;
			iv_emit(t, after, sp > 0 ? eff[sp - 1] : EGRESS_NO_RULE);
		}
		uint32_t parent = sp > 0 ? eff[sp - 1] : EGRESS_NO_RULE;
		uint32_t v = p[i].rule < parent ? p[i].rule : parent;
		stack[sp] = &p[i];
		eff[sp] = v;
		sp++;
		iv_emit(t, p[i].start, v);
	}
	while (sp > 0) {
		const pfx *top = stack[sp - 1];
		sp--;
		if (!key_is_max(top->end))
			iv_emit(t, key_next(top->end), sp > 0 ? eff[sp - 1] : EGRESS_NO_RULE);
	}
	return iv_index(t, width);
}

static inline uint32_t iv_lookup(const ivtable *t, ivkey k)
{
	size_t lo = 0, hi = t->n - 1;
	if (t->bits != 0) {
		if (t->shift != 0 && k.hi >> (64 - t->shift) != t->prefix)
			return k.hi >> (64 - t->shift) < t->prefix ? t->e[0].val
								   : t->e[t->n - 1].val;
		size_t b = (size_t)((k.hi << t->shift) >> (64 - t->bits));
		lo = t->bucket[b];
		hi = t->bucket[b + 1];
	}
	while (lo < hi) {
		size_t mid = (lo + hi + 1) / 2;
		if (key_le(t->e[mid].start, k))
			lo = mid;
		else
			hi = mid - 1;
	}
	return t->e[lo].val;
}

/* Turns a built IPv4 table into its compact form (keys are addr << 32). */
static int iv_compact4(ivtable *t)
{
	t->e4 = malloc(t->n * sizeof *t->e4);
	if (t->e4 == NULL)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		t->e4[i].start = (uint32_t)(t->e[i].start.hi >> 32);
		t->e4[i].val = t->e[i].val;
	}
	free(t->e);
	t->e = NULL;
	return 0;
}

static inline uint32_t iv_lookup4(const ivtable *t, uint32_t k)
{
	size_t lo = 0, hi = t->n - 1;
	if (t->bits != 0) {
		if (t->shift != 0 && k >> (32 - t->shift) != t->prefix)
			return k >> (32 - t->shift) < t->prefix ? t->e4[0].val
								: t->e4[t->n - 1].val;
		size_t b = (size_t)((uint32_t)(k << t->shift) >> (32 - t->bits));
		lo = t->bucket[b];
		hi = t->bucket[b + 1];
	}
	while (lo < hi) {
		size_t mid = (lo + hi + 1) / 2;
		if (t->e4[mid].start <= k)
			lo = mid;
		else
			hi = mid - 1;
	}
	return t->e4[lo].val;
}

static void iv_free(ivtable *t)
{
	free(t->e);
	free(t->e4);
	free(t->bucket);
}

/* ---- name hash tables ---- */

#define HASH_SEED 0xcbf29ce484222325ULL
#define HASH_MUL  0x100000001b3ULL

static inline uint64_t hash_step(uint64_t h, char c)
{
	return (h ^ (unsigned char)c) * HASH_MUL;
}

static inline uint64_t hash_final(uint64_t h, uint16_t port)
{
	h ^= (uint64_t)port * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* The name hashed right to left, so a suffix's hash is a prefix of the work. */
static uint64_t hash_name(const char *s, size_t n)
{
	uint64_t h = HASH_SEED;
	for (size_t i = n; i > 0; i--)
		h = hash_step(h, s[i - 1]);
	return h;
}

static int ht_init(htable *t, size_t entries)
{
	size_t cap = 8;
	while (cap < entries * 2)
		cap *= 2;
	t->slots = calloc(cap, sizeof *t->slots);
	if (t->slots == NULL)
		return -1;
	t->mask = cap - 1;
	t->used = 0;
	return 0;
}

/* Inserts (name, port) unless present: rules arrive in list order, so the
 * first insertion holds the smallest index. */
static void ht_insert(htable *t, const char *name, size_t len, uint16_t port, uint32_t rule)
{
	uint64_t h = hash_final(hash_name(name, len), port);
	for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
		hentry *e = &t->slots[i];
		if (e->name == NULL) {
			*e = (hentry){.hash = h,
				      .name = name,
				      .len = (uint32_t)len,
				      .rule = rule,
				      .port = port};
			t->used++;
			return;
		}
		if (e->hash == h && e->port == port && e->len == len &&
		    memcmp(e->name, name, len) == 0)
			return;
	}
}

static inline uint32_t ht_find(const htable *t, uint64_t h, const char *name, size_t len,
			       uint16_t port)
{
	for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
		const hentry *e = &t->slots[i];
		if (e->name == NULL)
			return EGRESS_NO_RULE;
		if (e->hash == h && e->port == port && e->len == len &&
		    memcmp(e->name, name, len) == 0)
			return e->rule;
	}
}

static inline uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* Both probes for one name or suffix: any port, and the destination's port. */
static inline uint32_t ht_lookup2(const htable *t, uint64_t h, const char *name, size_t len,
				  uint16_t port)
{
	uint32_t r = ht_find(t, hash_final(h, 0), name, len, 0);
	if (port != 0)
		r = min_u32(r, ht_find(t, hash_final(h, port), name, len, port));
	return r;
}

/* ---- building ---- */

static bool is_ip(const sbx_egress_rule *r)
{
	return r->kind == SBX_RULE_IPV4 || r->kind == SBX_RULE_IPV6;
}

static bool is_name(const sbx_egress_rule *r)
{
	return r->kind == SBX_RULE_HOST || r->kind == SBX_RULE_WILDCARD;
}

static int build_ports(sbx_egress_policy *p, const sbx_egress_list *list)
{
	p->nslots = 1;
	for (size_t i = 0; i < list->count; i++) {
		const sbx_egress_rule *r = &list->rules[i];
		if (!is_ip(r) || r->port == 0)
			continue;
		if (p->portslot == NULL) {
			p->portslot = calloc(65536, sizeof *p->portslot);
			if (p->portslot == NULL)
				return -1;
		}
		if (p->portslot[r->port] == 0)
			p->portslot[r->port] = (uint16_t)p->nslots++;
	}
	return 0;
}

static int build_addresses(sbx_egress_policy *p, const sbx_egress_list *list)
{
	int rc = -1;
	size_t m = 0;
	pfx *all = NULL;
	const pfx **stack = NULL;
	uint32_t *eff = NULL;

	p->v4 = calloc(p->nslots, sizeof *p->v4);
	p->v6 = calloc(p->nslots, sizeof *p->v6);
	if (p->v4 == NULL || p->v6 == NULL)
		return -1;
	for (size_t i = 0; i < list->count; i++)
		m += is_ip(&list->rules[i]);
	all = malloc((m + 1) * sizeof *all);
	stack = malloc((m + 1) * sizeof *stack);
	eff = malloc((m + 1) * sizeof *eff);
	if (all == NULL || stack == NULL || eff == NULL)
		goto out_free_scratch;
	m = 0;
	for (size_t i = 0; i < list->count; i++) {
		const sbx_egress_rule *r = &list->rules[i];
		if (!is_ip(r))
			continue;
		size_t slot = r->port != 0 ? p->portslot[r->port] : 0;
		size_t fam = r->kind == SBX_RULE_IPV6;
		pfx *x = &all[m++];
		x->start = key_from_rule(r);
		x->end = key_block_end(x->start, r->prefix_len);
		x->rule = (uint32_t)i;
		x->len = r->prefix_len;
		x->group = (uint32_t)(fam * p->nslots + slot);
	}
	qsort(all, m, sizeof *all, pfx_cmp);
	size_t g = 0;
	for (size_t fam = 0; fam < 2; fam++) {
		ivtable *tabs = fam == 0 ? p->v4 : p->v6;
		for (size_t slot = 0; slot < p->nslots; slot++) {
			uint32_t group = (uint32_t)(fam * p->nslots + slot);
			size_t from = g;
			while (g < m && all[g].group == group)
				g++;
			if (iv_build(&tabs[slot], all + from, g - from, stack, eff,
				     fam == 0 ? 32 : 64) != 0)
				goto out_free_scratch;
			if (fam == 0 && iv_compact4(&tabs[slot]) != 0)
				goto out_free_scratch;
		}
	}
	rc = 0;

out_free_scratch:
	free(eff);
	free(stack);
	free(all);
	return rc;
}

static int build_names(sbx_egress_policy *p, const sbx_egress_list *list)
{
	size_t bytes = 0, nexact = 0, nwild = 0;
	for (size_t i = 0; i < list->count; i++) {
		const sbx_egress_rule *r = &list->rules[i];
		if (!is_name(r))
			continue;
		bytes += strnlen(r->host, SBX_EGRESS_HOST_MAX) + 1;
		nexact += r->kind == SBX_RULE_HOST;
		nwild += r->kind == SBX_RULE_WILDCARD;
	}
	p->names = malloc(bytes + 1);
	if (p->names == NULL || ht_init(&p->exact, nexact) != 0 || ht_init(&p->wild, nwild) != 0)
		return -1;
	char *at = p->names;
	for (size_t i = 0; i < list->count; i++) {
		const sbx_egress_rule *r = &list->rules[i];
		if (!is_name(r))
			continue;
		size_t n = strnlen(r->host, SBX_EGRESS_HOST_MAX);
		memcpy(at, r->host, n);
		at[n] = '\0';
		ht_insert(r->kind == SBX_RULE_HOST ? &p->exact : &p->wild, at, n, r->port,
			  (uint32_t)i);
		at += n + 1;
	}
	return 0;
}

sbx_egress_policy *sbx_egress_policy_compile(const sbx_egress_list *list, sbx_host_rule_mode mode)
{
	sbx_egress_policy *p = calloc(1, sizeof *p);
	if (p == NULL)
		return NULL;
	p->mode = mode;
	p->open = egress_list_is_open(list);
	p->nslots = 1;
	if (p->open || list->count >= EGRESS_NO_RULE)
		return p;
	if (build_ports(p, list) != 0 || build_addresses(p, list) != 0)
		goto out_free_policy;
	if (mode == SBX_HOST_RULES_DOCUMENTED && build_names(p, list) != 0)
		goto out_free_policy;
	return p;

out_free_policy:
	sbx_egress_policy_free(p);
	return NULL;
}

void sbx_egress_policy_free(sbx_egress_policy *p)
{
	if (p == NULL)
		return;
	for (size_t s = 0; p->v4 != NULL && s < p->nslots; s++)
		iv_free(&p->v4[s]);
	for (size_t s = 0; p->v6 != NULL && s < p->nslots; s++)
		iv_free(&p->v6[s]);
	free(p->v4);
	free(p->v6);
	free(p->portslot);
	free(p->exact.slots);
	free(p->wild.slots);
	free(p->names);
	free(p);
}

/* ---- evaluation ---- */

static uint32_t eval_address(const sbx_egress_policy *p, const egress_ndest *nd)
{
	uint16_t slot = p->portslot != NULL ? p->portslot[nd->port] : 0;
	uint32_t best;
	if (nd->family == 4) {
		const uint8_t *a = nd->addr;
		uint32_t k =
			(uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
		best = iv_lookup4(&p->v4[0], k);
		if (slot != 0)
			best = min_u32(best, iv_lookup4(&p->v4[slot], k));
		return best;
	}
	ivkey k = key_v6(nd->addr);
	best = iv_lookup(&p->v6[0], k);
	if (slot != 0)
		best = min_u32(best, iv_lookup(&p->v6[slot], k));
	return best;
}

/* One right-to-left pass: the hash state after each character is the hash of
 * the suffix starting there, so wildcard suffixes are probed on the way and
 * the exact name with the final state. */
static uint32_t eval_name(const sbx_egress_policy *p, const egress_ndest *nd)
{
	const char *h = nd->host;
	size_t n = nd->host_len;
	uint32_t best = EGRESS_NO_RULE;
	uint64_t hs = HASH_SEED;
	bool wild = p->wild.used != 0;
	for (size_t j = n; j > 0; j--) {
		hs = hash_step(hs, h[j - 1]);
		/* The suffix starts at j - 1 after a dot at j - 2 >= 1: at least one
		 * character must come before the dot ("strictly below"). */
		if (wild && j >= 3 && h[j - 2] == '.')
			best = min_u32(best,
				       ht_lookup2(&p->wild, hs, h + j - 1, n - j + 1, nd->port));
	}
	if (p->exact.used != 0)
		best = min_u32(best, ht_lookup2(&p->exact, hs, h, n, nd->port));
	return best;
}

sbx_egress_decision sbx_egress_policy_eval(const sbx_egress_policy *p, const sbx_egress_dest *dest)
{
	sbx_egress_decision d = {
		.allowed = false, .reason = SBX_REASON_DEFAULT_DENY, .rule_index = 0};
	egress_ndest nd;
	egress_normalise_dest(dest, &nd);
	if (egress_fixed_decision(&nd, &d))
		return d;
	if (p->open) {
		d.allowed = true;
		d.reason = SBX_REASON_OPEN_POLICY;
		return d;
	}
	uint32_t best = EGRESS_NO_RULE;
	if (nd.family != 0)
		best = eval_address(p, &nd);
	if (p->mode == SBX_HOST_RULES_DOCUMENTED && nd.has_host)
		best = min_u32(best, eval_name(p, &nd));
	if (best != EGRESS_NO_RULE) {
		d.allowed = true;
		d.reason = SBX_REASON_RULE;
		d.rule_index = best;
	}
	return d;
}

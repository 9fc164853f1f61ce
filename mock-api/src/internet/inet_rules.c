/* inet_rules: the resolver's names and egress lists compiled to nftables;
 * see inet_rules.h. */
#define _GNU_SOURCE
#include "internet/inet_rules.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define HOSTS_FILE_MAX (4u << 20)

void mock_hosts_free(mock_hosts *h)
{
	if (h == NULL)
		return;
	free(h->hosts);
	h->hosts = NULL;
	h->n = 0;
}

/* One "name": ["addr", ...] entry into e; -1 with err set. */
static int host_entry(const cJSON *item, const char *what, mock_host *e, sbx_err *err)
{
	sbx_egress_rule rule;
	sbx_egress_error perr;
	const cJSON *a;
	size_t len = strlen(item->string);

	if (sbx_egress_rule_parse(item->string, len, 0, &rule, &perr) != 0 ||
	    rule.kind != SBX_RULE_HOST || rule.port != 0) {
		sbx_err_set(err, "%s: hosts.\"%.64s\": not a host name", what, item->string);
		return -1;
	}
	snprintf(e->name, sizeof(e->name), "%s", rule.host);
	if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) == 0 ||
	    cJSON_GetArraySize(item) > MOCK_HOST_ADDRS_MAX) {
		sbx_err_set(err, "%s: hosts.\"%s\": needs a list of 1 to %d addresses", what, e->name,
			    MOCK_HOST_ADDRS_MAX);
		return -1;
	}
	cJSON_ArrayForEach(a, item) {
		mock_host_addr *ad = &e->addr[e->naddr];

		if (!cJSON_IsString(a)) {
			sbx_err_set(err, "%s: hosts.\"%s\": addresses are strings", what, e->name);
			return -1;
		}
		if (inet_pton(AF_INET, a->valuestring, ad->addr) == 1) {
			ad->family = 4;
		} else if (inet_pton(AF_INET6, a->valuestring, ad->addr) == 1) {
			ad->family = 6;
		} else {
			sbx_err_set(err, "%s: hosts.\"%s\": \"%.64s\" is not an IPv4 or IPv6 address", what,
				    e->name, a->valuestring);
			return -1;
		}
		e->naddr++;
	}
	return 0;
}

int mock_hosts_parse(const char *text, size_t len, const char *what, mock_hosts *out, sbx_err *err)
{
	cJSON *root = cJSON_ParseWithLength(text, len);
	const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(root, "hosts");
	const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
	const cJSON *item;
	int n;

	memset(out, 0, sizeof(*out));
	if (root == NULL || !cJSON_IsObject(root)) {
		sbx_err_set(err, "%s: not a JSON object", what);
		goto fail;
	}
	if (!cJSON_IsNumber(version) || version->valuedouble != 1) {
		sbx_err_set(err, "%s: \"version\" must be 1", what);
		goto fail;
	}
	n = cJSON_GetArraySize(hosts);
	if (!cJSON_IsObject(hosts) || n > MOCK_HOSTS_MAX) {
		sbx_err_set(err, "%s: \"hosts\" must be an object of at most %d names", what, MOCK_HOSTS_MAX);
		goto fail;
	}
	out->hosts = calloc((size_t)n + 1, sizeof(*out->hosts));
	if (out->hosts == NULL) {
		sbx_err_set(err, "out of memory");
		goto fail;
	}
	cJSON_ArrayForEach(item, hosts) {
		mock_host *e = &out->hosts[out->n];

		if (host_entry(item, what, e, err) != 0)
			goto fail;
		if (mock_hosts_find(out, e->name) != NULL) {
			sbx_err_set(err, "%s: hosts.\"%s\" appears twice", what, e->name);
			goto fail;
		}
		out->n++;
	}
	cJSON_Delete(root);
	return 0;

fail:
	cJSON_Delete(root);
	mock_hosts_free(out);
	return -1;
}

int mock_hosts_load(const char *path, mock_hosts *out, sbx_err *err)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;
	int rc;

	memset(out, 0, sizeof(*out));
	if (f == NULL) {
		sbx_err_set(err, "hosts file %s: %s", path, strerror(errno));
		return -1;
	}
	buf = malloc(HOSTS_FILE_MAX + 1);
	n = buf != NULL ? fread(buf, 1, HOSTS_FILE_MAX + 1, f) : 0;
	fclose(f);
	if (buf == NULL || n > HOSTS_FILE_MAX) {
		sbx_err_set(err, "hosts file %s: %s", path, buf == NULL ? "out of memory" : "over 4 MiB");
		free(buf);
		return -1;
	}
	rc = mock_hosts_parse(buf, n, path, out, err);
	free(buf);
	return rc;
}

const mock_host *mock_hosts_find(const mock_hosts *h, const char *name)
{
	size_t len = strlen(name);

	if (len > 0 && name[len - 1] == '.')
		len--;
	for (size_t i = 0; h != NULL && i < h->n; i++) {
		if (strlen(h->hosts[i].name) == len && strncasecmp(h->hosts[i].name, name, len) == 0)
			return &h->hosts[i];
	}
	return NULL;
}

/* ---- the resolver's answers ---- */

/* The question's name (dotted, lower-cased as given) and its end offset;
 * 0 for a malformed one. Compression is not allowed in a question. */
static size_t qname(const uint8_t *p, size_t n, char *name, size_t cap)
{
	size_t off = 12, out = 0;

	while (off < n && p[off] != 0) {
		size_t len = p[off];

		if (len > 63 || off + 1 + len >= n || out + len + 2 > cap)
			return 0;
		if (out > 0)
			name[out++] = '.';
		memcpy(name + out, p + off + 1, len);
		out += len;
		off += 1 + len;
	}
	if (off >= n)
		return 0;
	name[out] = '\0';
	return off + 1;
}

size_t mock_dns_answer(const mock_hosts *hosts, mock_dns_more_fn more, void *more_arg, const uint8_t *q, size_t n,
		       uint8_t *r, size_t cap)
{
	char name[256];
	size_t end = n >= 12 ? qname(q, n, name, sizeof(name)) : 0, off;
	const mock_host *h;
	mock_host extra;
	unsigned qtype, ancount = 0;

	if (end == 0 || end + 4 > n || end + 4 > cap || q[4] != 0 || q[5] != 1 || (q[2] & 0x80) != 0)
		return 0; /* not one well-formed question: no answer */
	qtype = (unsigned)q[end] << 8 | q[end + 1];
	memcpy(r, q, end + 4);
	r[2] = (uint8_t)(0x84 | (q[2] & 0x79)); /* answer, authoritative, opcode and RD kept */
	r[3] = 0x80;                            /* recursion available, NOERROR */
	memset(r + 6, 0, 6);
	off = end + 4;
	h = mock_hosts_find(hosts, name);
	if (h == NULL && more != NULL && more(more_arg, name, &extra))
		h = &extra;
	if (h == NULL) {
		r[3] |= 3; /* NXDOMAIN */
		return off;
	}
	for (size_t i = 0; i < h->naddr; i++) {
		size_t alen = h->addr[i].family == 4 ? 4 : 16;
		static const uint8_t ttl[4] = {0, 0, 0, 60};

		if ((qtype != 1 || alen != 4) && (qtype != 28 || alen != 16))
			continue;
		if (off + 12 + alen > cap)
			break;
		r[off++] = 0xc0; /* the question's name */
		r[off++] = 12;
		r[off++] = 0;
		r[off++] = (uint8_t)qtype;
		r[off++] = 0;
		r[off++] = 1;
		memcpy(r + off, ttl, 4);
		off += 4;
		r[off++] = 0;
		r[off++] = (uint8_t)alen;
		memcpy(r + off, h->addr[i].addr, alen);
		off += alen;
		ancount++;
	}
	r[7] = (uint8_t)ancount;
	return off;
}

/* ---- compilation ---- */

/* One address block the chain accepts (port 0: any). */
typedef struct block {
	int family;
	uint8_t addr[16];
	unsigned prefix;
	uint16_t port;
} block;

typedef struct blocks {
	block *v;
	size_t n, cap;
	bool oom;
} blocks;

static void add_block(blocks *b, int family, const uint8_t *addr, unsigned prefix, uint16_t port)
{
	if (b->n == b->cap) {
		size_t cap = b->cap != 0 ? b->cap * 2 : 64;
		block *v = realloc(b->v, cap * sizeof(*v));

		if (v == NULL) {
			b->oom = true;
			return;
		}
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n] = (block){.family = family, .prefix = prefix, .port = port};
	memcpy(b->v[b->n].addr, addr, family == 4 ? 4 : 16);
	b->n++;
}

static void add_host(blocks *b, const mock_host *h, uint16_t port)
{
	for (size_t i = 0; i < h->naddr; i++)
		add_block(b, h->addr[i].family, h->addr[i].addr, h->addr[i].family == 4 ? 32 : 128, port);
}

/* Names strictly below suffix ("*.example.com" matches a.example.com, not
 * example.com), as the engine decides. */
static bool below(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	return n > s + 1 && name[n - s - 1] == '.' && strcasecmp(name + n - s, suffix) == 0;
}

static void add_rule(blocks *b, const sbx_egress_rule *r, sbx_host_rule_mode mode, const mock_hosts *hosts)
{
	const mock_host *h;

	switch (r->kind) {
	case SBX_RULE_IPV4:
	case SBX_RULE_IPV6:
		add_block(b, r->kind == SBX_RULE_IPV4 ? 4 : 6, r->addr, r->prefix_len, r->port);
		break;
	case SBX_RULE_HOST:
		h = mode == SBX_HOST_RULES_DOCUMENTED ? mock_hosts_find(hosts, r->host) : NULL;
		if (h != NULL)
			add_host(b, h, r->port);
		break;
	case SBX_RULE_WILDCARD:
		for (size_t i = 0; mode == SBX_HOST_RULES_DOCUMENTED && hosts != NULL && i < hosts->n; i++) {
			if (below(hosts->hosts[i].name, r->host))
				add_host(b, &hosts->hosts[i], r->port);
		}
		break;
	case SBX_RULE_ALL:
		break;
	}
}

/* Whether a's block holds b's (CIDR blocks nest or are disjoint). */
static bool holds(const block *a, const block *b)
{
	unsigned bits = a->prefix;

	if (a->family != b->family || a->prefix > b->prefix || memcmp(a->addr, b->addr, bits / 8) != 0)
		return false;
	return bits % 8 == 0 || ((a->addr[bits / 8] ^ b->addr[bits / 8]) & (0xff00 >> (bits % 8)) & 0xff) == 0;
}

/* An address-and-port set must not hold overlapping elements (nftables
 * refuses them): drops every element another one of the same port holds. */
static bool redundant(const blocks *b, size_t i)
{
	for (size_t j = 0; j < b->n; j++) {
		if (j == i || b->v[j].port != b->v[i].port || b->v[j].port == 0 || b->v[j].prefix == 0 ||
		    !holds(&b->v[j], &b->v[i]))
			continue;
		/* of two equal blocks the first stays */
		if (b->v[j].prefix < b->v[i].prefix || j < i)
			return true;
	}
	return false;
}

/* "ADDR/PREFIX" */
static void block_text(const block *k, char *buf, size_t cap)
{
	char text[INET6_ADDRSTRLEN];

	inet_ntop(k->family == 4 ? AF_INET : AF_INET6, k->addr, text, sizeof(text));
	snprintf(buf, cap, "%s/%u", text, k->prefix);
}

/* One rule per family and kind: `ip daddr { ... } accept` for any port,
 * `ip daddr . tcp dport { A . P, ... } accept` (and udp) with one; /0
 * blocks as family matches. A set loads a thousand elements in one go,
 * where a rule each would take ten times as long. */
static bool emit(sbx_strbuf *out, const char *chain, const blocks *b, int family, bool ports)
{
	static const char *const l4[] = {"", "tcp", "udp"};
	const char *fam = family == 4 ? "ip" : "ip6";
	bool ok = true;

	for (int proto = ports ? 1 : 0; ok && proto <= (ports ? 2 : 0); proto++) {
		size_t n = 0;

		/* /0 first, on their own: nft has no /0, the family is the match */
		for (size_t i = 0; ok && i < b->n; i++) {
			const block *k = &b->v[i];

			if (k->family != family || (k->port != 0) != ports || k->prefix != 0)
				continue;
			ok = ports ? sbx_strbuf_printf(out, "add rule " MOCK_NFT_TABLE " %s meta nfproto %s %s dport %u "
							    "accept\n", chain, family == 4 ? "ipv4" : "ipv6", l4[proto],
						       k->port)
				   : sbx_strbuf_printf(out, "add rule " MOCK_NFT_TABLE " %s meta nfproto %s accept\n",
						       chain, family == 4 ? "ipv4" : "ipv6");
		}
		for (size_t i = 0; ok && i < b->n; i++) {
			const block *k = &b->v[i];
			char text[INET6_ADDRSTRLEN + 8];

			if (k->family != family || (k->port != 0) != ports || k->prefix == 0 ||
			    (ports && redundant(b, i)))
				continue;
			block_text(k, text, sizeof(text));
			if (n++ == 0)
				ok = ports ? sbx_strbuf_printf(out, "add rule " MOCK_NFT_TABLE " %s %s daddr . %s dport { ",
							       chain, fam, l4[proto])
					   : sbx_strbuf_printf(out, "add rule " MOCK_NFT_TABLE " %s %s daddr { ", chain, fam);
			else
				ok = sbx_strbuf_puts(out, ", ");
			ok = ok && (ports ? sbx_strbuf_printf(out, "%s . %u", text, k->port) : sbx_strbuf_puts(out, text));
		}
		if (ok && n > 0)
			ok = sbx_strbuf_puts(out, " } accept\n");
	}
	return ok;
}

static bool open_policy(const sbx_egress_list *list)
{
	if (list == NULL || list->is_null || list->count == 0)
		return true;
	for (size_t i = 0; i < list->count; i++) {
		if (list->rules[i].kind == SBX_RULE_ALL)
			return true;
	}
	return false;
}

bool mock_nft_compile(sbx_strbuf *out, const char *chain, const sbx_egress_list *list,
		      sbx_host_rule_mode mode, const mock_hosts *hosts, bool blocked)
{
	blocks b = {0};
	/* blocked (quota used up) closes even link-local, as the oracle
	 * (/_mock/egress/check) answers: only loopback stays in the guest */
	bool ok = sbx_strbuf_printf(out, "flush chain " MOCK_NFT_TABLE " %s\n", chain) &&
		  (blocked ||
		   sbx_strbuf_printf(out, "add rule " MOCK_NFT_TABLE " %s ip daddr 169.254.0.0/16 accept\n",
				     chain));

	if (ok && !blocked && open_policy(list))
		return sbx_strbuf_printf(out, "add rule " MOCK_NFT_TABLE " %s accept\n", chain);
	for (size_t i = 0; ok && !blocked && i < list->count; i++)
		add_rule(&b, &list->rules[i], mode, hosts);
	ok = ok && !b.oom;
	for (int family = 4; ok && family <= 6; family += 2)
		ok = emit(out, chain, &b, family, false) && emit(out, chain, &b, family, true);
	free(b.v);
	return ok && sbx_strbuf_printf(out, "add rule " MOCK_NFT_TABLE " %s drop\n", chain);
}

/* The map's block only: a rule elsewhere may jump too. */
void mock_nft_count_table(const char *text, size_t *chains, size_t *map_entries)
{
	bool in_map = false;

	for (const char *l = text; *l != '\0';) {
		const char *nl = strchr(l, '\n'), *end = nl != NULL ? nl : l + strlen(l);
		const char *t = l + strspn(l, "\t ");

		if (strncmp(t, "map ifmap {", 11) == 0)
			in_map = true;
		else if (in_map && *t == '}')
			in_map = false;
		if (in_map) {
			for (const char *j = t; (j = strstr(j, ": jump ")) != NULL && j < end; j++)
				(*map_entries)++;
		}
		if (strncmp(t, "chain ", 6) == 0 && (t[6] == 's' || t[6] == 'p') && t[7] >= '0' && t[7] <= '9')
			(*chains)++;
		l = nl != NULL ? nl + 1 : end;
	}
}

void mock_inet_synth_addr(const char *name, uint8_t out[4])
{
	uint32_t h = 2166136261u, host;

	for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++)
		h = (h ^ *p) * 16777619u;
	/* 198.18.0.1 - 198.19.255.254: 2^17 - 2 addresses, none ending .0 of
	 * the block or its broadcast */
	host = 1 + h % ((1u << 17) - 2);
	out[0] = 198;
	out[1] = (uint8_t)(18 + (host >> 16));
	out[2] = (uint8_t)(host >> 8);
	out[3] = (uint8_t)host;
}

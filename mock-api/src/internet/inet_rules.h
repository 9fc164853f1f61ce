/* inet_rules: what the simulated internet (internet.c) needs that does no
 * I/O, so it is unit-tested without privileges — the resolver's names
 * (fixtures/internet/hosts.json) and the compilation of a sandbox's egress
 * list into the nftables commands that enforce it (spec/egress.md).
 *
 * The compiled chain accepts link-local 169.254.0.0/16 first (the hole the
 * vendor's metadata service keeps open), then everything for an open
 * policy (null, [] or "*"), else one accept per address rule (its port on
 * TCP and UDP alike) and, with documented host rules, per address the
 * resolver gives a matching name; then it drops. Observed mode compiles
 * host and wildcard rules to nothing: they match nothing. */
#ifndef SBX_MOCK_INET_RULES_H
#define SBX_MOCK_INET_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx/egress.h"
#include "sbx/err.h"
#include "sbx/strbuf.h"

#define MOCK_HOSTS_MAX 4096        /* names in a hosts file */
#define MOCK_HOST_ADDRS_MAX 16     /* addresses per name */

typedef struct mock_host_addr {
	int family; /* 4 or 6 */
	uint8_t addr[16];
} mock_host_addr;

typedef struct mock_host {
	char name[SBX_EGRESS_HOST_MAX + 1]; /* lower case, no trailing dot */
	size_t naddr;
	mock_host_addr addr[MOCK_HOST_ADDRS_MAX];
} mock_host;

typedef struct mock_hosts {
	size_t n;
	mock_host *hosts;
} mock_hosts;

/* Reads a hosts file: {"version":1, "hosts": {"name": ["addr", ...]}}.
 * Every name must be a valid egress host rule and every address a literal;
 * -1 with err naming the file and the entry otherwise. */
int mock_hosts_load(const char *path, mock_hosts *out, sbx_err *err);
int mock_hosts_parse(const char *text, size_t len, const char *what, mock_hosts *out, sbx_err *err);
void mock_hosts_free(mock_hosts *h);
/* The entry for a name (case-insensitive, one trailing dot ignored). */
const mock_host *mock_hosts_find(const mock_hosts *h, const char *name);

/* For a name the hosts file lacks: true with its entry in *out (the
 * resolver's: a site's or a stub's name), false for NXDOMAIN. */
typedef bool (*mock_dns_more_fn)(void *arg, const char *name, mock_host *out);

/* The resolver's answer to one DNS query from a guest (untrusted bytes):
 * its length in r (at most cap), or 0 for no answer (not exactly one
 * well-formed question, or a response). A known name (the hosts file's,
 * else one more gives; more NULL: none) gets its A or AAAA addresses, an
 * unknown one NXDOMAIN. */
size_t mock_dns_answer(const mock_hosts *hosts, mock_dns_more_fn more, void *more_arg, const uint8_t *q, size_t n,
		       uint8_t *r, size_t cap);

/* The table all sandbox chains live in, and a sandbox's chain and link. */
#define MOCK_NFT_TABLE "inet sbx_internet"
#define MOCK_INET_IFPREFIX "sx"

/* Appends to out the commands that replace chain `chain`'s rules with the
 * list's (the chain must exist). blocked: the bandwidth quota is used up,
 * everything is dropped. false on allocation failure. */
bool mock_nft_compile(sbx_strbuf *out, const char *chain, const sbx_egress_list *list,
		      sbx_host_rule_mode mode, const mock_hosts *hosts, bool blocked);

/* Adds to *chains and *map_entries, from `list table` output, the sandbox
 * chains ("chain s3 {", "chain p7 {") and the ifmap's entries (": jump "). */
void mock_nft_count_table(const char *text, size_t *chains, size_t *map_entries);

/* The range names the hosts file lacks are given (RFC 2544's benchmark
 * block: never a real destination): a site's name (--internet-site) or a
 * stub's (match.host, exact or under a wildcard) resolves to its own
 * address there, so a flag that names it takes effect. */
#define MOCK_INET_SYNTH_CIDR "198.18.0.0/15"
/* name's address in MOCK_INET_SYNTH_CIDR (lower case, no trailing dot):
 * the same for the same name, in every mock, from a hash of it. */
void mock_inet_synth_addr(const char *name, uint8_t out[4]);

#endif

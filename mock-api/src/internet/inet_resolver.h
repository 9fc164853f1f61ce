/* inet_resolver: the simulated internet's resolver (internet.h), a
 * thread inside its namespace answering A and AAAA queries from the hosts
 * file, then the names of sites and stubs the file lacks
 * (MOCK_INET_SYNTH_CIDR), NXDOMAIN otherwise. It serves UDP port 53 of every IPv4 address:
 * 169.254.169.253 is local there, and queries a guest sends to any other
 * server arrive by tproxy. A sandbox gets at most DNS_RATE answers a
 * second (DNS_BURST at once); more are dropped, as a loaded resolver
 * would. */
#ifndef SBX_MOCK_INET_RESOLVER_H
#define SBX_MOCK_INET_RESOLVER_H

#include "internet/internet.h"

typedef struct mock_inet_resolver mock_inet_resolver;

/* Called inside the internet's namespace; the thread ends when stopfd (an
 * eventfd the caller owns) becomes readable. who: the sandbox id at a
 * guest address (its allowance's key). */
mock_inet_resolver *mock_inet_resolver_start(const mock_hosts *hosts, mock_inet_book *book, mock_inet_who_fn who,
					     void *who_arg, int stopfd, sbx_err *err);

/* The range names the hosts file lacks are given (RFC 2544's benchmark
 * block: never a real destination): a site's name (--internet-site) or a
 * stub's (match.host, exact or under a wildcard) resolves to its own
 * address there, so a flag that names it takes effect. */
#define MOCK_INET_SYNTH_CIDR "198.18.0.0/15"
/* name's address in MOCK_INET_SYNTH_CIDR (lower case, no trailing dot):
 * the same for the same name, in every mock, from a hash of it. */
void mock_inet_synth_addr(const char *name, uint8_t out[4]);
/* Joins the thread (stopfd must have been signalled) and frees it. */
void mock_inet_resolver_stop(mock_inet_resolver *r);

#endif

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

/* Joins the thread (stopfd must have been signalled) and frees it. */
void mock_inet_resolver_stop(mock_inet_resolver *r);

#endif

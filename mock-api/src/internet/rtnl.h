/* rtnl: the few rtnetlink requests the simulated internet needs (internet.c)
 * — a veth pair across two network namespaces, addresses, routes and policy
 * rules — over libmnl, one request and its acknowledgement at a time.
 *
 * A handle talks to the network namespace its calling thread was in when
 * it was opened (a netlink socket belongs to the namespace it was made in),
 * whichever thread uses it later. Not thread-safe: one user at a time.
 * Every failure is -1 with err saying which request failed and why. */
#ifndef SBX_MOCK_RTNL_H
#define SBX_MOCK_RTNL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sbx/err.h"

typedef struct mock_rtnl mock_rtnl;

mock_rtnl *mock_rtnl_open(sbx_err *err);
void mock_rtnl_close(mock_rtnl *nl);

/* A veth pair, both ends down: `name` here, `peer` in the network
 * namespace of process peer_pid. */
int mock_rtnl_veth(mock_rtnl *nl, const char *name, const char *peer, pid_t peer_pid, sbx_err *err);
int mock_rtnl_link_up(mock_rtnl *nl, const char *ifname, sbx_err *err);
/* Deletes the link; a link already gone counts as deleted. */
int mock_rtnl_link_del(mock_rtnl *nl, const char *ifname, sbx_err *err);
/* family AF_INET or AF_INET6; addr in network byte order (4 or 16 bytes).
 * IPv6 addresses skip duplicate address detection (usable at once). */
int mock_rtnl_addr(mock_rtnl *nl, const char *ifname, int family, const uint8_t *addr,
		   unsigned prefix, sbx_err *err);

typedef struct mock_rtnl_route {
	int family;            /* AF_INET, AF_INET6 */
	const uint8_t *dst;    /* NULL: default route */
	unsigned dst_len;
	const char *ifname;    /* NULL: none (local routes through lo need it) */
	const uint8_t *gw;     /* NULL: none */
	bool onlink;           /* the gateway is on the link whatever the addresses */
	bool local;            /* type local: deliver here (transparent proxy) */
	uint32_t table;        /* 0: main */
} mock_rtnl_route;

int mock_rtnl_route_add(mock_rtnl *nl, const mock_rtnl_route *r, sbx_err *err);
/* Packets with this fwmark look up `table` (priority prio). */
int mock_rtnl_rule_fwmark(mock_rtnl *nl, int family, uint32_t mark, uint32_t table, uint32_t prio,
			  sbx_err *err);

#endif

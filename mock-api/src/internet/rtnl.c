/* rtnl: rtnetlink requests over libmnl; see rtnl.h. */
#define _GNU_SOURCE
#include "internet/rtnl.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

struct mock_rtnl {
	struct mnl_socket *sock;
	unsigned portid;
	unsigned seq;
	char buf[8192]; /* MNL_SOCKET_BUFFER_SIZE is not a constant */
};

mock_rtnl *mock_rtnl_open(sbx_err *err)
{
	mock_rtnl *nl = calloc(1, sizeof(*nl));

	if (nl == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	nl->sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (nl->sock == NULL || mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) != 0) {
		sbx_err_set(err, "rtnetlink socket: %s", strerror(errno));
		mock_rtnl_close(nl);
		return NULL;
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
	nl->seq = (unsigned)time(NULL);
	return nl;
}

void mock_rtnl_close(mock_rtnl *nl)
{
	if (nl == NULL)
		return;
	if (nl->sock != NULL)
		mnl_socket_close(nl->sock);
	free(nl);
}

static struct nlmsghdr *start(mock_rtnl *nl, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *h = mnl_nlmsg_put_header(nl->buf);

	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	h->nlmsg_seq = ++nl->seq;
	return h;
}

/* Sends h and reads its acknowledgement: 0, or -1 with the kernel's errno. */
static int transact(mock_rtnl *nl, struct nlmsghdr *h, const char *what, sbx_err *err)
{
	ssize_t n;
	int rc;

	if (mnl_socket_sendto(nl->sock, h, h->nlmsg_len) < 0) {
		sbx_err_set(err, "%s: send: %s", what, strerror(errno));
		return -1;
	}
	do {
		n = mnl_socket_recvfrom(nl->sock, nl->buf, sizeof(nl->buf));
		rc = n < 0 ? -1 : mnl_cb_run(nl->buf, (size_t)n, nl->seq, nl->portid, NULL, NULL);
	} while (rc > 0);
	if (rc < 0) {
		int e = errno;

		sbx_err_set(err, "%s: %s", what, strerror(e));
		errno = e; /* callers tell EEXIST from the rest */
		return -1;
	}
	return 0;
}

static int ifindex(const char *ifname, const char *what, sbx_err *err)
{
	unsigned idx = if_nametoindex(ifname);

	if (idx == 0)
		sbx_err_set(err, "%s: no interface %s: %s", what, ifname, strerror(errno));
	return idx == 0 ? -1 : (int)idx;
}

int mock_rtnl_veth(mock_rtnl *nl, const char *name, const char *peer, pid_t peer_pid, sbx_err *err)
{
	struct nlmsghdr *h = start(nl, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(h, sizeof(*ifm));
	struct nlattr *info, *data, *pn;
	struct ifinfomsg *pifm;

	ifm->ifi_family = AF_UNSPEC; /* not up yet: a veth without its peer cannot be */
	mnl_attr_put_strz(h, IFLA_IFNAME, name);
	info = mnl_attr_nest_start(h, IFLA_LINKINFO);
	mnl_attr_put_strz(h, IFLA_INFO_KIND, "veth");
	data = mnl_attr_nest_start(h, IFLA_INFO_DATA);
	pn = mnl_attr_nest_start(h, VETH_INFO_PEER);
	/* the peer's attributes follow its own ifinfomsg */
	pifm = (struct ifinfomsg *)mnl_nlmsg_get_payload_tail(h);
	memset(pifm, 0, sizeof(*pifm));
	pifm->ifi_family = AF_UNSPEC;
	h->nlmsg_len += MNL_ALIGN(sizeof(*pifm));
	mnl_attr_put_strz(h, IFLA_IFNAME, peer);
	mnl_attr_put_u32(h, IFLA_NET_NS_PID, (uint32_t)peer_pid);
	mnl_attr_nest_end(h, pn);
	mnl_attr_nest_end(h, data);
	mnl_attr_nest_end(h, info);
	return transact(nl, h, "create veth pair", err);
}

static int link_req(mock_rtnl *nl, const char *ifname, uint16_t type, const char *what, sbx_err *err)
{
	int idx = ifindex(ifname, what, err);
	struct nlmsghdr *h;
	struct ifinfomsg *ifm;

	if (idx < 0)
		return -1;
	h = start(nl, type, 0);
	ifm = mnl_nlmsg_put_extra_header(h, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = idx;
	if (type == RTM_NEWLINK)
		ifm->ifi_flags = ifm->ifi_change = IFF_UP;
	return transact(nl, h, what, err);
}

int mock_rtnl_link_up(mock_rtnl *nl, const char *ifname, sbx_err *err)
{
	return link_req(nl, ifname, RTM_NEWLINK, "bring link up", err);
}

int mock_rtnl_link_del(mock_rtnl *nl, const char *ifname, sbx_err *err)
{
	sbx_err e = {{0}};

	/* A link that vanishes between the lookup and the delete (the kernel
	 * finishing an earlier teardown) is deleted: what the caller wanted. */
	if (if_nametoindex(ifname) == 0 && errno == ENODEV)
		return 0;
	if (link_req(nl, ifname, RTM_DELLINK, "delete link", &e) == 0)
		return 0;
	if (errno == ENODEV)
		return 0;
	*err = e;
	return -1;
}

static size_t addr_len(int family)
{
	return family == AF_INET6 ? 16 : 4;
}

int mock_rtnl_addr(mock_rtnl *nl, const char *ifname, int family, const uint8_t *addr,
		   unsigned prefix, sbx_err *err)
{
	int idx = ifindex(ifname, "add address", err);
	struct nlmsghdr *h;
	struct ifaddrmsg *ifa;

	if (idx < 0)
		return -1;
	h = start(nl, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE);
	ifa = mnl_nlmsg_put_extra_header(h, sizeof(*ifa));
	ifa->ifa_family = (uint8_t)family;
	ifa->ifa_prefixlen = (uint8_t)prefix;
	ifa->ifa_index = (uint32_t)idx;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	mnl_attr_put(h, IFA_LOCAL, addr_len(family), addr);
	mnl_attr_put(h, IFA_ADDRESS, addr_len(family), addr);
	if (family == AF_INET6)
		mnl_attr_put_u32(h, IFA_FLAGS, IFA_F_NODAD);
	return transact(nl, h, "add address", err);
}

int mock_rtnl_route_add(mock_rtnl *nl, const mock_rtnl_route *r, sbx_err *err)
{
	struct nlmsghdr *h;
	struct rtmsg *rt;
	int idx = 0;

	if (r->ifname != NULL && (idx = ifindex(r->ifname, "add route", err)) < 0)
		return -1;
	h = start(nl, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE);
	rt = mnl_nlmsg_put_extra_header(h, sizeof(*rt));
	rt->rtm_family = (uint8_t)r->family;
	rt->rtm_dst_len = (uint8_t)(r->dst != NULL ? r->dst_len : 0);
	rt->rtm_table = RT_TABLE_UNSPEC;
	rt->rtm_protocol = RTPROT_STATIC;
	rt->rtm_type = r->local ? RTN_LOCAL : RTN_UNICAST;
	rt->rtm_scope = r->local ? RT_SCOPE_HOST : r->gw == NULL ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
	if (r->onlink)
		rt->rtm_flags |= RTNH_F_ONLINK;
	mnl_attr_put_u32(h, RTA_TABLE, r->table != 0 ? r->table : RT_TABLE_MAIN);
	if (r->dst != NULL)
		mnl_attr_put(h, RTA_DST, addr_len(r->family), r->dst);
	if (r->gw != NULL)
		mnl_attr_put(h, RTA_GATEWAY, addr_len(r->family), r->gw);
	if (idx > 0)
		mnl_attr_put_u32(h, RTA_OIF, (uint32_t)idx);
	return transact(nl, h, "add route", err);
}

int mock_rtnl_rule_fwmark(mock_rtnl *nl, int family, uint32_t mark, uint32_t table, uint32_t prio,
			  sbx_err *err)
{
	struct nlmsghdr *h = start(nl, RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL);
	struct fib_rule_hdr *fr = mnl_nlmsg_put_extra_header(h, sizeof(*fr));

	fr->family = (uint8_t)family;
	fr->action = FR_ACT_TO_TBL;
	mnl_attr_put_u32(h, FRA_FWMARK, mark);
	mnl_attr_put_u32(h, FRA_TABLE, table);
	mnl_attr_put_u32(h, FRA_PRIORITY, prio);
	return transact(nl, h, "add policy rule", err);
}

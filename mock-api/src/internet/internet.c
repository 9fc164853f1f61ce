/* internet: the simulated internet's namespace, the wiring of sandboxes
 * into it and their nftables chains; see internet.h and INTERNET.md.
 *
 * Everything that touches the internet's namespace runs on one thread of
 * its own that lives there (network namespaces are per thread); a call
 * hands it a job and waits. To configure a guest's eth0 it steps into the
 * cell's namespace and back. Lock order: the model lock may be held when
 * this module's lock is taken, never the reverse (nothing here calls
 * out). */
#define _GNU_SOURCE
#include "internet/internet.h"
#include "internet/inet_tape.h"

#include "internet/rtnl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nftables/libnftables.h>

#define TPROXY_TABLE 100 /* routing table that makes every marked packet local */

typedef struct wired {
	uint32_t slot;
	uint64_t gen;      /* the last egress generation applied */
	char id[64];
	uint8_t ip4[4], ip6[16];
	char ifname[16], chain[16]; /* the slot's, or a prewired link's */
} wired;

/* A link made ahead for a warm pool's cell (mock_internet_prewire): named
 * by its own number, not yet any sandbox's. */
typedef struct prelink {
	uint32_t link;
	char ifname[16], chain[16];
	char *rules;       /* the chain's rules as compiled (compared at wire) */
} prelink;

struct mock_internet {
	int nsfd;               /* the internet's network namespace */
	pthread_mutex_t lock;
	struct nft_ctx *nft;
	mock_rtnl *nl;          /* opened inside */
	mock_hosts hosts;
	mock_inet_servers *srv;
	mock_inet_tls *tls;     /* the servers' CA and leaves */
	mock_inet_book *book;   /* stubs, sites, journal, upstream (not owned) */
	mock_inet_outside *outside; /* the way out's socket maker, with upstream patterns */
	wired *w;
	size_t nw, capw;
	prelink *pre;
	size_t npre, cappre;
	uint32_t next_link;
	/* the namespace's thread: born in the host's network namespace, it
	 * moves into the internet's for good (an unprivileged mock, root only
	 * in a user namespace of its own, could never come back) and runs
	 * every job there; callers hold `lock`, one job at a time */
	pthread_t thread;
	bool thread_up;
	pthread_mutex_t jm;
	pthread_cond_t jcv;
	int (*job)(mock_internet *in, void *arg, sbx_err *err);
	void *job_arg;
	sbx_err *job_err;
	int job_rc;
	bool job_done, quit, ready;
};

typedef int (*job_fn)(mock_internet *in, void *arg, sbx_err *err);

/* ---- namespaces ---- */

/* Moves this thread into nsfd; *back is where it was. */
static int enter(int nsfd, int *back, sbx_err *err)
{
	*back = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*back < 0 || setns(nsfd, CLONE_NEWNET) != 0) {
		sbx_err_set(err, "enter a network namespace: %s", strerror(errno));
		if (*back >= 0)
			close(*back);
		*back = -1;
		return -1;
	}
	return 0;
}

static void leave(int back)
{
	/* cannot fail for a namespace this thread was just in; if it did, the
	 * thread would serve the host's requests from the wrong namespace */
	if (setns(back, CLONE_NEWNET) != 0)
		abort();
	close(back);
}

/* ---- addresses of a slot ---- */

/* fe80::1, the gateway's link-local address on every sandbox link: ours
 * on the internet's side, the guest's IPv6 default route's next hop. */
static const uint8_t gateway_ll6[16] = {0xfe, 0x80, [15] = 1};

static void slot_ip6(uint32_t slot, uint8_t out[16])
{
	/* fd00:5b::/96 + slot: a unique local block of the mock's own */
	static const uint8_t base[12] = {0xfd, 0x00, 0x00, 0x5b};

	memcpy(out, base, sizeof(base));
	out[12] = (uint8_t)(slot >> 24);
	out[13] = (uint8_t)(slot >> 16);
	out[14] = (uint8_t)(slot >> 8);
	out[15] = (uint8_t)slot;
}

static void names(uint32_t slot, char ifname[16], char chain[16])
{
	snprintf(ifname, 16, MOCK_INET_IFPREFIX "%u", (unsigned)slot);
	snprintf(chain, 16, "s%u", (unsigned)slot);
}

/* ---- nftables ---- */

static int nft_run(mock_internet *in, const char *cmds, const char *what, sbx_err *err)
{
	if (nft_run_cmd_from_buffer(in->nft, cmds) == 0)
		return 0;
	sbx_err_set(err, "nftables (%s): %.400s", what, nft_ctx_get_error_buffer(in->nft));
	return -1;
}

static const char base_ruleset[] =
	"add table " MOCK_NFT_TABLE "\n"
	"add map " MOCK_NFT_TABLE " ifmap { type ifname : verdict; }\n"
	/* before conntrack and the proxy: the sandbox's own chain decides */
	"add chain " MOCK_NFT_TABLE " egress { type filter hook prerouting priority -300; policy accept; }\n"
	/* neighbour discovery for the IPv6 gateway, whatever the rules */
	"add rule " MOCK_NFT_TABLE " egress icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept\n"
	"add rule " MOCK_NFT_TABLE " egress iifname vmap @ifmap\n"
	/* a sandbox link without a chain (being wired, or a bug) drops all */
	"add rule " MOCK_NFT_TABLE " egress iifname \"" MOCK_INET_IFPREFIX "*\" drop\n"
	"add chain " MOCK_NFT_TABLE " proxy { type filter hook prerouting priority -150; policy accept; }\n"
	"add rule " MOCK_NFT_TABLE " proxy iifname \"" MOCK_INET_IFPREFIX "*\" meta l4proto tcp "
	"tproxy to :7 meta mark set 0x5b accept\n"
	/* DNS to any IPv4 server reaches the resolver (when the rules let it) */
	"add rule " MOCK_NFT_TABLE " proxy iifname \"" MOCK_INET_IFPREFIX "*\" meta nfproto ipv4 udp dport 53 "
	"tproxy ip to :53 meta mark set 0x5b accept\n";

static int sysctl_write(const char *path, const char *value);

/* ---- an unprivileged mock's own user namespace ---- */

static int write_self(const char *file, const char *text)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/%s", file);
	return sysctl_write(path, text);
}

int mock_internet_own_userns(sbx_err *err)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (uid == 0)
		return 0;
	if (unshare(CLONE_NEWUSER) != 0) {
		sbx_err_set(err, "not root, and this host refuses a user namespace (%s): the simulated "
			    "internet needs one to make network namespaces and links", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	if (write_self("uid_map", map) != 0 || write_self("setgroups", "deny") != 0) {
		sbx_err_set(err, "own user namespace: id map: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	if (write_self("gid_map", map) != 0) {
		sbx_err_set(err, "own user namespace: gid map: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- start and stop ---- */

static int sysctl_write(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t w = fd >= 0 ? write(fd, value, strlen(value)) : -1;

	if (fd >= 0)
		close(fd);
	return w == (ssize_t)strlen(value) ? 0 : -1;
}

/* Inside the new namespace: loopback with the gateway's, resolver's and
 * metadata's addresses, transparent-proxy routing, the base ruleset. */
static int configure(mock_internet *in, sbx_err *err)
{
	static const char *const lo_addrs[] = {MOCK_INET_GATEWAY4, MOCK_INET_RESOLVER4, MOCK_INET_METADATA4};
	static const uint8_t any[16] = {0};
	mock_rtnl_route local4 = {.family = AF_INET, .dst = any, .dst_len = 0, .ifname = "lo",
				  .local = true, .table = TPROXY_TABLE};
	mock_rtnl_route local6 = local4;
	uint8_t a[4];

	local6.family = AF_INET6;
	in->nl = mock_rtnl_open(err);
	if (in->nl == NULL || mock_rtnl_link_up(in->nl, "lo", err) != 0)
		return -1;
	for (size_t i = 0; i < sizeof(lo_addrs) / sizeof(lo_addrs[0]); i++) {
		inet_pton(AF_INET, lo_addrs[i], a);
		if (mock_rtnl_addr(in->nl, "lo", AF_INET, a, 32, err) != 0)
			return -1;
	}
	if (mock_rtnl_rule_fwmark(in->nl, AF_INET, MOCK_INET_MARK, TPROXY_TABLE, 100, err) != 0 ||
	    mock_rtnl_rule_fwmark(in->nl, AF_INET6, MOCK_INET_MARK, TPROXY_TABLE, 100, err) != 0 ||
	    mock_rtnl_route_add(in->nl, &local4, err) != 0 || mock_rtnl_route_add(in->nl, &local6, err) != 0)
		return -1;
	/* the guests' source addresses are routed back through their own
	 * links only; strict reverse-path checks would add nothing */
	sysctl_write("/proc/sys/net/ipv4/conf/all/rp_filter", "0");
	sysctl_write("/proc/sys/net/ipv4/conf/default/rp_filter", "0");
	in->nft = nft_ctx_new(NFT_CTX_DEFAULT);
	if (in->nft == NULL || nft_ctx_buffer_error(in->nft) != 0 || nft_ctx_buffer_output(in->nft) != 0) {
		sbx_err_set(err, "nftables: cannot make a context");
		return -1;
	}
	if (nft_run(in, base_ruleset, "base ruleset", err) != 0)
		return -1;
	in->srv = mock_inet_servers_start(&in->hosts, in->tls, mock_internet_who, in, in->book, in->outside, err);
	return in->srv != NULL ? 0 : -1;
}

/* The namespace's thread: makes the namespace, configures it, then runs
 * jobs until quit. */
static void *ns_main(void *arg)
{
	mock_internet *in = arg;
	sbx_err err = {{0}};
	int rc = -1;

	if (unshare(CLONE_NEWNET) != 0)
		sbx_err_set(&err, "new network namespace: %s", strerror(errno));
	else if ((in->nsfd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
		sbx_err_set(&err, "open the new network namespace: %s", strerror(errno));
	else
		rc = configure(in, &err);
	pthread_mutex_lock(&in->jm);
	in->job_rc = rc;
	*in->job_err = err;
	in->ready = true;
	pthread_cond_broadcast(&in->jcv);
	while (rc == 0) {
		while (in->job == NULL && !in->quit)
			pthread_cond_wait(&in->jcv, &in->jm);
		if (in->quit)
			break;
		pthread_mutex_unlock(&in->jm);
		rc = in->job(in, in->job_arg, in->job_err);
		pthread_mutex_lock(&in->jm);
		in->job_rc = rc;
		in->job = NULL;
		in->job_done = true;
		rc = 0;
		pthread_cond_broadcast(&in->jcv);
	}
	pthread_mutex_unlock(&in->jm);
	/* the servers' threads live in the namespace too: stop them here */
	mock_inet_servers_stop(in->srv);
	in->srv = NULL;
	return NULL;
}

/* Runs fn in the internet's namespace; the caller holds in->lock. */
static int inside(mock_internet *in, job_fn fn, void *arg, sbx_err *err)
{
	int rc;

	pthread_mutex_lock(&in->jm);
	in->job = fn;
	in->job_arg = arg;
	in->job_err = err;
	in->job_done = false;
	pthread_cond_broadcast(&in->jcv);
	while (!in->job_done)
		pthread_cond_wait(&in->jcv, &in->jm);
	rc = in->job_rc;
	pthread_mutex_unlock(&in->jm);
	return rc;
}

mock_internet *mock_internet_start(const char *hosts_path, mock_inet_tls *tls, mock_inet_book *book,
				   sbx_err *err)
{
	mock_internet *in;

	if (geteuid() != 0) {
		sbx_err_set(err, "not root (and not in a user namespace of its own: a program embedding "
			    "libsbxmock calls sbx_mock_own_userns() first): the simulated internet needs to "
			    "create network namespaces and links");
		return NULL;
	}
	in = calloc(1, sizeof(*in));
	if (in == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	in->tls = tls;
	in->book = book;
	in->nsfd = -1;
	pthread_mutex_init(&in->lock, NULL);
	pthread_mutex_init(&in->jm, NULL);
	pthread_cond_init(&in->jcv, NULL);
	if (hosts_path != NULL && mock_hosts_load(hosts_path, &in->hosts, err) != 0)
		goto fail;
	/* made here, on the caller's thread: it stays in the host's namespace */
	if (book != NULL && (mock_inet_upstream_any(book) || mock_inet_tape_recording(mock_inet_book_tape(book))) &&
	    (in->outside = mock_inet_outside_start(err)) == NULL)
		goto fail;
	in->job_err = err;
	if (pthread_create(&in->thread, NULL, ns_main, in) != 0) {
		sbx_err_set(err, "internet: thread: %s", strerror(errno));
		goto fail;
	}
	in->thread_up = true;
	pthread_mutex_lock(&in->jm);
	while (!in->ready)
		pthread_cond_wait(&in->jcv, &in->jm);
	pthread_mutex_unlock(&in->jm);
	if (in->job_rc != 0)
		goto fail;
	return in;

fail:
	mock_internet_stop(in);
	return NULL;
}

void mock_internet_stop(mock_internet *in)
{
	if (in == NULL)
		return;
	if (in->thread_up) {
		pthread_mutex_lock(&in->jm);
		in->quit = true;
		pthread_cond_broadcast(&in->jcv);
		pthread_mutex_unlock(&in->jm);
		pthread_join(in->thread, NULL);
	}
	if (in->nft != NULL)
		nft_ctx_free(in->nft);
	mock_rtnl_close(in->nl);
	/* the namespace goes with its last reference, taking every link,
	 * route and rule with it */
	if (in->nsfd >= 0)
		close(in->nsfd);
	mock_hosts_free(&in->hosts);
	mock_inet_outside_stop(in->outside); /* after the servers, whose relays use it */
	free(in->w);
	for (size_t i = 0; i < in->npre; i++)
		free(in->pre[i].rules);
	free(in->pre);
	pthread_cond_destroy(&in->jcv);
	pthread_mutex_destroy(&in->jm);
	pthread_mutex_destroy(&in->lock);
	free(in);
}

const char *mock_internet_ca_pem(const mock_internet *in)
{
	return in != NULL ? mock_inet_tls_ca_pem(in->tls) : NULL;
}

const mock_hosts *mock_internet_hosts(const mock_internet *in)
{
	return in != NULL ? &in->hosts : NULL;
}

/* ---- wiring ---- */

static wired *find(mock_internet *in, uint32_t slot)
{
	for (size_t i = 0; i < in->nw; i++) {
		if (in->w[i].slot == slot)
			return &in->w[i];
	}
	return NULL;
}

static prelink *find_pre(mock_internet *in, uint32_t link)
{
	for (size_t i = 0; i < in->npre; i++) {
		if (in->pre[i].link == link)
			return &in->pre[i];
	}
	return NULL;
}

/* Runs fn inside the namespace of the cell whose PID 1 is cell_pid, with
 * a netlink socket of that namespace. */
static int in_cell(pid_t cell_pid, int (*fn)(mock_rtnl *nl, const void *arg, sbx_err *err), const void *arg,
		   sbx_err *err)
{
	char path[64];
	mock_rtnl *nl;
	int fd, back, rc;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)cell_pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		sbx_err_set(err, "open %s: %s", path, strerror(errno));
		return -1;
	}
	rc = enter(fd, &back, err);
	close(fd);
	if (rc != 0)
		return -1;
	nl = mock_rtnl_open(err);
	rc = nl == NULL || fn(nl, arg, err) != 0 ? -1 : 0;
	mock_rtnl_close(nl);
	leave(back);
	return rc;
}

/* The cell's side of a link, whatever sandbox it serves: eth0 up, the
 * default routes through the gateways. */
static int guest_link(mock_rtnl *nl, const void *arg, sbx_err *err)
{
	uint8_t gw4[4];
	mock_rtnl_route r4 = {.family = AF_INET, .ifname = "eth0", .gw = gw4, .onlink = true};
	mock_rtnl_route r6 = {.family = AF_INET6, .ifname = "eth0", .gw = gateway_ll6};

	(void)arg;
	inet_pton(AF_INET, MOCK_INET_GATEWAY4, gw4);
	return mock_rtnl_link_up(nl, "eth0", err) != 0 || mock_rtnl_route_add(nl, &r4, err) != 0 ||
			       mock_rtnl_route_add(nl, &r6, err) != 0
		       ? -1
		       : 0;
}

/* The cell's side of one sandbox: eth0's addresses. */
static int guest_addrs(mock_rtnl *nl, const void *arg, sbx_err *err)
{
	const wired *e = arg;

	return mock_rtnl_addr(nl, "eth0", AF_INET, e->ip4, 32, err) != 0 ||
			       mock_rtnl_addr(nl, "eth0", AF_INET6, e->ip6, 128, err) != 0
		       ? -1
		       : 0;
}

static int guest_all(mock_rtnl *nl, const void *arg, sbx_err *err)
{
	return guest_link(nl, NULL, err) != 0 ? -1 : guest_addrs(nl, arg, err);
}

/* In the internet: a veth to the cell (eth0 inside), up, with the
 * gateway's link-local address on our side. */
static int make_link(mock_internet *in, const char *ifname, pid_t cell_pid, sbx_err *err)
{

	if (mock_rtnl_veth(in->nl, ifname, "eth0", cell_pid, err) != 0) {
		/* a link of a reset's reused slot, still being torn down */
		if (errno != EEXIST || mock_rtnl_link_del(in->nl, ifname, err) != 0 ||
		    mock_rtnl_veth(in->nl, ifname, "eth0", cell_pid, err) != 0)
			return -1;
	}
	return mock_rtnl_link_up(in->nl, ifname, err) != 0 ||
			       mock_rtnl_addr(in->nl, ifname, AF_INET6, gateway_ll6, 64, err) != 0
		       ? -1
		       : 0;
}

/* The commands that make a chain with the list's rules and map the link
 * to it (one nftables round trip). NULL when out of memory. */
static char *chain_cmds(mock_internet *in, const char *ifname, const char *chain, const sbx_egress_list *list,
			sbx_host_rule_mode mode, bool blocked)
{
	sbx_strbuf cmds;

	sbx_strbuf_init(&cmds);
	if (!sbx_strbuf_printf(&cmds, "add chain " MOCK_NFT_TABLE " %s\n", chain) ||
	    !mock_nft_compile(&cmds, chain, list, mode, &in->hosts, blocked) ||
	    !sbx_strbuf_printf(&cmds, "add element " MOCK_NFT_TABLE " ifmap { \"%s\" : jump %s }\n", ifname,
			       chain)) {
		sbx_strbuf_free(&cmds);
		return NULL;
	}
	return sbx_strbuf_detach(&cmds, NULL);
}

/* The sandbox's first rules (compiled into the transaction that makes its
 * chain, or compared with what a prewired chain holds). */
typedef struct first_rules {
	const sbx_egress_list *list;
	sbx_host_rule_mode mode;
	bool blocked;
} first_rules;

/* The routes back to the guest's addresses, through its link. */
static int routes_back(mock_internet *in, const wired *e, sbx_err *err)
{
	mock_rtnl_route b4 = {.family = AF_INET, .dst = e->ip4, .dst_len = 32, .ifname = e->ifname};
	mock_rtnl_route b6 = {.family = AF_INET6, .dst = e->ip6, .dst_len = 128, .ifname = e->ifname};

	return mock_rtnl_route_add(in->nl, &b4, err) != 0 || mock_rtnl_route_add(in->nl, &b6, err) != 0 ? -1 : 0;
}

typedef struct wire_job {
	const wired *e;
	pid_t cell_pid;
	first_rules fr;
	const prelink *pre; /* the cell's link made ahead, or NULL */
} wire_job;

/* A new link: everything in one go. */
static int wire_new(mock_internet *in, const wire_job *j, sbx_err *err)
{
	char *cmds;
	int rc;

	if (make_link(in, j->e->ifname, j->cell_pid, err) != 0 || routes_back(in, j->e, err) != 0)
		return -1;
	cmds = chain_cmds(in, j->e->ifname, j->e->chain, j->fr.list, j->fr.mode, j->fr.blocked);
	if (cmds == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	rc = nft_run(in, cmds, "new sandbox chain", err);
	free(cmds);
	return rc != 0 ? -1 : in_cell(j->cell_pid, guest_all, j->e, err);
}

/* A prewired link: only what is the sandbox's (its addresses, and its
 * rules when they are not the ones the chain was made with). */
static int wire_pre(mock_internet *in, const wire_job *j, sbx_err *err)
{
	sbx_strbuf rules;
	int rc = 0;

	if (routes_back(in, j->e, err) != 0)
		return -1;
	sbx_strbuf_init(&rules);
	if (!mock_nft_compile(&rules, j->e->chain, j->fr.list, j->fr.mode, &in->hosts, j->fr.blocked)) {
		sbx_strbuf_free(&rules);
		sbx_err_set(err, "out of memory");
		return -1;
	}
	if (strcmp(sbx_strbuf_str(&rules), j->pre->rules) != 0)
		rc = nft_run(in, sbx_strbuf_str(&rules), "sandbox egress rules", err);
	sbx_strbuf_free(&rules);
	return rc != 0 ? -1 : in_cell(j->cell_pid, guest_addrs, j->e, err);
}

static int wire_job_run(mock_internet *in, void *arg, sbx_err *err)
{
	const wire_job *j = arg;

	return j->pre != NULL ? wire_pre(in, j, err) : wire_new(in, j, err);
}

/* Deletes a chain and its map entry (each on its own: a part never made
 * must not keep the rest). */
static int unchain_job_run(mock_internet *in, void *arg, sbx_err *err)
{
	const char *const *n = arg; /* ifname, chain */
	char cmds[256];

	(void)err;
	snprintf(cmds, sizeof(cmds), "delete element " MOCK_NFT_TABLE " ifmap { \"%s\" }\n", n[0]);
	nft_run_cmd_from_buffer(in->nft, cmds);
	snprintf(cmds, sizeof(cmds), "delete chain " MOCK_NFT_TABLE " %s\n", n[1]);
	nft_run_cmd_from_buffer(in->nft, cmds);
	/* not the link: it goes with the cell's namespace, and deleting it
	 * here would wait for the kernel's RCU grace periods (~30 ms) */
	return 0;
}

/* Under in->lock: forgets a prewired link, its chain deleted or kept
 * (taken by a sandbox). */
static void pre_drop_locked(mock_internet *in, prelink *pl, bool unchain)
{
	if (unchain) {
		const char *n[2] = {pl->ifname, pl->chain};
		sbx_err err = {{0}};

		inside(in, unchain_job_run, n, &err);
	}
	free(pl->rules);
	*pl = in->pre[--in->npre];
}

typedef struct prewire_job {
	const prelink *pl;
	pid_t cell_pid;
} prewire_job;

static int prewire_job_run(mock_internet *in, void *arg, sbx_err *err)
{
	const prewire_job *j = arg;
	const sbx_egress_list none = {0};
	char *cmds;
	int rc;

	if (make_link(in, j->pl->ifname, j->cell_pid, err) != 0)
		return -1;
	cmds = chain_cmds(in, j->pl->ifname, j->pl->chain, &none, SBX_HOST_RULES_OBSERVED, false);
	if (cmds == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	rc = nft_run(in, cmds, "prewired chain", err);
	free(cmds);
	return rc != 0 ? -1 : in_cell(j->cell_pid, guest_link, NULL, err);
}

int mock_internet_prewire(mock_internet *in, pid_t cell_pid, uint32_t *link, sbx_err *err)
{
	const sbx_egress_list none = {0};
	sbx_strbuf rules;
	prelink pl = {0};
	prewire_job j = {.pl = &pl, .cell_pid = cell_pid};
	int rc;

	*link = 0;
	pthread_mutex_lock(&in->lock);
	if (in->npre == in->cappre) {
		size_t cap = in->cappre != 0 ? in->cappre * 2 : 16;
		prelink *p = realloc(in->pre, cap * sizeof(*p));

		if (p == NULL) {
			pthread_mutex_unlock(&in->lock);
			sbx_err_set(err, "out of memory");
			return -1;
		}
		in->pre = p;
		in->cappre = cap;
	}
	pl.link = ++in->next_link != 0 ? in->next_link : ++in->next_link;
	snprintf(pl.ifname, sizeof(pl.ifname), MOCK_INET_IFPREFIX "p%u", (unsigned)pl.link);
	snprintf(pl.chain, sizeof(pl.chain), "p%u", (unsigned)pl.link);
	/* what the chain holds: an empty list's rules (a create's default) */
	sbx_strbuf_init(&rules);
	if (!mock_nft_compile(&rules, pl.chain, &none, SBX_HOST_RULES_OBSERVED, &in->hosts, false)) {
		pthread_mutex_unlock(&in->lock);
		sbx_strbuf_free(&rules);
		sbx_err_set(err, "out of memory");
		return -1;
	}
	pl.rules = sbx_strbuf_detach(&rules, NULL);
	in->pre[in->npre++] = pl;
	rc = inside(in, prewire_job_run, &j, err);
	if (rc == 0)
		*link = pl.link;
	else
		pre_drop_locked(in, find_pre(in, pl.link), true);
	pthread_mutex_unlock(&in->lock);
	return rc;
}

void mock_internet_unprewire(mock_internet *in, uint32_t link)
{
	prelink *pl;

	if (in == NULL || link == 0)
		return;
	pthread_mutex_lock(&in->lock);
	pl = find_pre(in, link);
	if (pl != NULL)
		pre_drop_locked(in, pl, true);
	pthread_mutex_unlock(&in->lock);
}

/* Under in->lock: room for one more wired entry. */
static int grow_wired_locked(mock_internet *in, sbx_err *err)
{
	size_t cap;
	wired *w;

	if (in->nw < in->capw)
		return 0;
	cap = in->capw != 0 ? in->capw * 2 : 64;
	w = realloc(in->w, cap * sizeof(*w));
	if (w == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	in->w = w;
	in->capw = cap;
	return 0;
}

int mock_internet_wire(mock_internet *in, uint32_t slot, const char *id, const char *ip4, pid_t cell_pid,
		       uint32_t link, uint64_t gen, const sbx_egress_list *list, sbx_host_rule_mode mode,
		       bool blocked, sbx_err *err)
{
	wired e = {.slot = slot, .gen = gen};
	wire_job j = {.e = &e, .cell_pid = cell_pid, .fr = {.list = list, .mode = mode, .blocked = blocked}};
	prelink *pl = NULL;
	bool stale;
	int rc;

	if (inet_pton(AF_INET, ip4, e.ip4) != 1) {
		sbx_err_set(err, "internet: sandbox address \"%s\" is not IPv4", ip4);
		mock_internet_unprewire(in, link);
		return -1;
	}
	slot_ip6(slot, e.ip6);
	snprintf(e.id, sizeof(e.id), "%s", id);
	names(slot, e.ifname, e.chain);
	/* a slot still registered belongs to a sandbox of before a reset
	 * (addresses restart then) whose cell is gone: its parts go first */
	pthread_mutex_lock(&in->lock);
	stale = find(in, slot) != NULL;
	pthread_mutex_unlock(&in->lock);
	if (stale)
		mock_internet_unwire(in, slot);
	pthread_mutex_lock(&in->lock);
	if (link != 0 && (pl = find_pre(in, link)) == NULL) {
		pthread_mutex_unlock(&in->lock);
		sbx_err_set(err, "internet: no prewired link %u", (unsigned)link);
		return -1;
	}
	if (pl != NULL) {
		memcpy(e.ifname, pl->ifname, sizeof(e.ifname));
		memcpy(e.chain, pl->chain, sizeof(e.chain));
		j.pre = pl;
	}
	rc = grow_wired_locked(in, err) != 0 ? -1 : inside(in, wire_job_run, &j, err);
	if (rc == 0)
		in->w[in->nw++] = e;
	if (pl != NULL) /* the sandbox's now, or made undone below */
		pre_drop_locked(in, pl, false);
	if (rc != 0) { /* whatever part was made */
		const char *n[2] = {e.ifname, e.chain};

		inside(in, unchain_job_run, n, err);
	}
	pthread_mutex_unlock(&in->lock);
	return rc;
}

typedef struct apply_job {
	const char *chain, *ifname;
	const sbx_egress_list *list;
	sbx_host_rule_mode mode;
	bool blocked;
} apply_job;

static int apply_job_run(mock_internet *in, void *arg, sbx_err *err)
{
	const apply_job *j = arg;
	sbx_strbuf cmds;
	int rc;

	sbx_strbuf_init(&cmds);
	if (!mock_nft_compile(&cmds, j->chain, j->list, j->mode, &in->hosts, j->blocked)) {
		sbx_strbuf_free(&cmds);
		sbx_err_set(err, "out of memory");
		return -1;
	}
	rc = nft_run(in, sbx_strbuf_str(&cmds), "sandbox egress rules", err);
	if (rc != 0) {
		/* fail closed: never leave a sandbox more open than its rules */
		sbx_strbuf_reset(&cmds);
		if (!mock_nft_compile(&cmds, j->chain, j->list, j->mode, &in->hosts, true) ||
		    nft_run_cmd_from_buffer(in->nft, sbx_strbuf_str(&cmds)) != 0)
			fprintf(stderr, "sbx-mock: egress: cannot close sandbox link %s: %s\n", j->ifname,
				nft_ctx_get_error_buffer(in->nft));
	}
	sbx_strbuf_free(&cmds);
	return rc;
}

int mock_internet_apply(mock_internet *in, uint32_t slot, uint64_t gen, const sbx_egress_list *list,
			sbx_host_rule_mode mode, bool blocked, sbx_err *err)
{
	char ifname[16], chain[16];
	apply_job j = {.chain = chain, .ifname = ifname, .list = list, .mode = mode, .blocked = blocked};
	wired *e;
	int rc = 0;

	pthread_mutex_lock(&in->lock);
	e = find(in, slot);
	if (e != NULL && gen >= e->gen) { /* else gone, or a newer list is in already */
		memcpy(ifname, e->ifname, sizeof(ifname));
		memcpy(chain, e->chain, sizeof(chain));
		rc = inside(in, apply_job_run, &j, err);
		e->gen = gen;
	}
	pthread_mutex_unlock(&in->lock);
	return rc;
}

/* Under in->lock: forgets e (if any) and deletes its chain and map entry,
 * by its names (a prewired link's), else by the slot's. */
static void unwire_locked(mock_internet *in, wired *e, uint32_t slot)
{
	char ifname[16], chain[16];
	const char *n[2] = {ifname, chain};
	sbx_err err = {{0}};

	names(slot, ifname, chain);
	if (e != NULL) {
		memcpy(ifname, e->ifname, sizeof(ifname));
		memcpy(chain, e->chain, sizeof(chain));
		*e = in->w[--in->nw];
	}
	inside(in, unchain_job_run, n, &err);
}

void mock_internet_unwire(mock_internet *in, uint32_t slot)
{
	if (in == NULL)
		return;
	pthread_mutex_lock(&in->lock);
	unwire_locked(in, find(in, slot), slot);
	pthread_mutex_unlock(&in->lock);
}

void mock_internet_unwire_id(mock_internet *in, const char *id)
{
	if (in == NULL)
		return;
	pthread_mutex_lock(&in->lock);
	for (size_t i = 0; i < in->nw; i++) {
		if (strcmp(in->w[i].id, id) == 0) {
			unwire_locked(in, &in->w[i], in->w[i].slot);
			break;
		}
	}
	pthread_mutex_unlock(&in->lock);
}

static int links_job_run(mock_internet *in, void *arg, sbx_err *err)
{
	(void)nft_ctx_get_output_buffer(in->nft); /* what any earlier command left */
	if (nft_run(in, "list table " MOCK_NFT_TABLE "\n", "list the table", err) != 0)
		return -1;
	mock_internet_links *out = arg;

	mock_nft_count_table(nft_ctx_get_output_buffer(in->nft), &out->chains, &out->map_entries);
	return 0;
}

int mock_internet_links_get(mock_internet *in, mock_internet_links *out, sbx_err *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&in->lock);
	for (size_t i = 0; i < in->nw; i++) {
		if (strncmp(in->w[i].id, MOCK_INET_BUILDER_PREFIX, strlen(MOCK_INET_BUILDER_PREFIX)) == 0)
			out->builders++;
	}
	out->sandboxes = in->nw - out->builders;
	out->made_ahead = in->npre;
	rc = inside(in, links_job_run, out, err);
	pthread_mutex_unlock(&in->lock);
	return rc;
}

void mock_internet_who(void *arg, int family, const uint8_t *addr, char *id, size_t cap)
{
	mock_internet *in = arg;

	id[0] = '\0';
	pthread_mutex_lock(&in->lock);
	for (size_t i = 0; i < in->nw; i++) {
		const wired *e = &in->w[i];

		if ((family == 4 && memcmp(e->ip4, addr, 4) == 0) ||
		    (family == 6 && memcmp(e->ip6, addr, 16) == 0)) {
			snprintf(id, cap, "%s", e->id);
			break;
		}
	}
	pthread_mutex_unlock(&in->lock);
}

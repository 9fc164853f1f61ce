/* internet: the simulated internet that contained guests reach, and the
 * kernel enforcement of their egress rules (mock-api/INTERNET.md).
 *
 * One network namespace of the mock's own ("the internet"), with nothing in
 * it but loopback and one veth per sandbox: no route to any of the host's
 * interfaces, so no packet a guest sends can leave the machine. In it every
 * TCP connection to any address and port is taken by one transparent-proxy
 * listener (nftables tproxy) that answers HTTP naming where it was reached
 * (169.254.169.254:80 answers a metadata document), and 169.254.169.253:53
 * is a resolver answering from a hosts file, NXDOMAIN otherwise.
 *
 * Each sandbox's traffic enters through its veth and passes its own chain,
 * compiled from its egress list (inet_rules.h) and replaced atomically in
 * one nftables transaction; a veth without a chain drops everything.
 *
 * Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN over the host's namespaces):
 * mock_internet_start says why not otherwise. Thread-safe. */
#ifndef SBX_MOCK_INTERNET_H
#define SBX_MOCK_INTERNET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "internet/inet_book.h"
#include "internet/inet_rules.h"
#include "tls/inet_tls.h"
#include "internet/inet_upstream.h"
#include "sbx/egress.h"
#include "sbx/err.h"

/* The addresses a guest sees (also in INTERNET.md and the cell's
 * /etc/resolv.conf). */
#define MOCK_INET_GATEWAY4 "169.254.1.1"
#define MOCK_INET_RESOLVER4 "169.254.169.253"
#define MOCK_INET_METADATA4 "169.254.169.254"

typedef struct mock_internet mock_internet;

/* Not root: moves this process into a user namespace of its own where it
 * is root (its uid and gid the only ones mapped), so the internet can be
 * made; no privilege on the host comes with it. Must run before any thread
 * exists. 0 (also as root: nothing to do), or -1 with err saying why. */
int mock_internet_own_userns(sbx_err *err);

/* Creates the namespace and its servers. hosts_path: the resolver's names
 * (NULL: none, every name is NXDOMAIN); tls: the TLS servers' CA
 * (inet_tls.h), the mock's own (not owned: the ingress serves its leaves
 * too; it outlives the internet). NULL + err when it cannot. */
/* book: the stubs, sites, journal and upstream patterns the servers
 * answer from (inet_book.h; NULL: the page for every request; not owned).
 * With upstream patterns, the thread that makes the way out's sockets is
 * started here: call it from the host's network namespace. */
mock_internet *mock_internet_start(const char *hosts_path, mock_inet_tls *tls, mock_inet_book *book,
				   sbx_err *err);
/* The CA certificate (PEM) every guest's trust store gets; NULL for NULL. */
const char *mock_internet_ca_pem(const mock_internet *in);
void mock_internet_stop(mock_internet *in);

/* Joins a started cell (its PID 1 is cell_pid) to the internet: a veth,
 * eth0 inside with ip4 (the sandbox's API address) and an IPv6 address of
 * the same slot, default routes, and its chain with the list's rules (gen
 * as mock_internet_apply's). slot: the sandbox's address index (unique).
 * link: the cell's prewired link (below), or 0. */
int mock_internet_wire(mock_internet *in, uint32_t slot, const char *id, const char *ip4, pid_t cell_pid,
		       uint32_t link, uint64_t gen, const sbx_egress_list *list, sbx_host_rule_mode mode,
		       bool blocked, sbx_err *err);
/* The warm pool's part of wiring (issue 24), for a cell built ahead of its
 * sandbox: everything that is not one sandbox's — the veth (eth0 inside,
 * up, default routes), a chain of its own with an empty list's rules and
 * its map entry. *link names it for mock_internet_wire (link: the wiring
 * then adds the sandbox's addresses and routes back, and replaces the
 * rules only when the sandbox's differ), which takes it over, success or
 * not; a cell never handed out gives it back with mock_internet_unprewire.
 * 0, or -1 with err set (nothing left made). */
int mock_internet_prewire(mock_internet *in, pid_t cell_pid, uint32_t *link, sbx_err *err);
/* Deletes a prewired link's chain (its veth goes with its cell); 0 or an
 * unknown link: nothing. */
void mock_internet_unprewire(mock_internet *in, uint32_t link);
/* Replaces the slot's chain with the list's rules, atomically; gen orders
 * concurrent calls (an apply older than the last one applied is skipped).
 * On failure the chain drops everything. */
int mock_internet_apply(mock_internet *in, uint32_t slot, uint64_t gen, const sbx_egress_list *list,
			sbx_host_rule_mode mode, bool blocked, sbx_err *err);
/* Removes the slot's chain; its link goes with the cell's namespace. */
void mock_internet_unwire(mock_internet *in, uint32_t slot);
/* The same for the sandbox id's wiring, if it is still there: a deferred
 * unwire (after a DELETE's answer) never takes the parts of a later
 * sandbox that was given the same slot after a reset. */
void mock_internet_unwire_id(mock_internet *in, const char *id);

/* The id a template build's cell is wired under: this + the template's
 * id (TEMPLATES.md); counted apart from sandboxes in the links view. */
#define MOCK_INET_BUILDER_PREFIX "build-"

/* What the internet holds for sandboxes, from its own list and from the
 * kernel's table (so a test sees what a leak would leave): */
typedef struct mock_internet_links {
	size_t sandboxes;   /* wired sandboxes in the list */
	size_t builders;    /* wired template builders in the list */
	size_t made_ahead;  /* links made ahead for pooled cells */
	size_t chains;      /* the kernel's sandbox chains (s<slot>, p<link>) */
	size_t map_entries; /* the kernel's ifmap entries (link -> chain) */
} mock_internet_links;
/* 0, or -1 with err set (the kernel's table cannot be read). */
int mock_internet_links_get(mock_internet *in, mock_internet_links *out, sbx_err *err);

/* The resolver's table (for the documented mode's compilation and tests). */
const mock_hosts *mock_internet_hosts(const mock_internet *in);

/* internet_serve.c: the listeners inside the namespace. who: the sandbox
 * id wired at a guest address ("" when none), for the metadata document
 * (a callback: the servers sit below internet.c). */
typedef struct mock_inet_servers mock_inet_servers;
typedef void (*mock_inet_who_fn)(void *arg, int family, const uint8_t *addr, char *id, size_t cap);
/* Called inside the internet's namespace. */
mock_inet_servers *mock_inet_servers_start(const mock_hosts *hosts, mock_inet_tls *tls, mock_inet_who_fn who,
					   void *who_arg, mock_inet_book *book, mock_inet_outside *outside,
					   sbx_err *err);
void mock_inet_servers_stop(mock_inet_servers *s);
/* The sandbox id wired at a guest address ("" when none); in is a
 * mock_internet (the servers' who callback). */
void mock_internet_who(void *in, int family, const uint8_t *addr, char *id, size_t cap);

/* The transparent proxy's port inside the namespace (fixed: the namespace
 * is the mock's alone). */
#define MOCK_INET_TPROXY_PORT 7
#define MOCK_INET_MARK 0x5b

#endif

/* inet_book_internal: what inet_book.c (stubs, journal) and inet_site.c
 * (sites, upstream) share. Not for other modules: inet_book.h is the
 * interface. */
#ifndef SBX_MOCK_INET_BOOK_INTERNAL_H
#define SBX_MOCK_INET_BOOK_INTERNAL_H

#include "internet/inet_book.h"
#include "internet/inet_rules.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct mock_inet_jentry {
	uint64_t seq;
	char *text;          /* the entry's JSON */
	char sandbox[64];    /* for the filters */
	char host[256];
} mock_inet_jentry;

typedef struct mock_inet_site {
	char host[256];
	int dirfd;           /* O_PATH */
} mock_inet_site;

typedef struct mock_inet_cidr {
	int family;          /* 4 or 6 */
	uint8_t addr[16];
	int bits;
} mock_inet_cidr;

/* A stub's exact host and exact path as hashes (0: any), beside the
 * stubs in a compact array: a scan of a thousand stubs that do not match
 * reads these, not a thousand stubs. */
typedef struct mock_inet_stub_key {
	uint64_t host, path;
} mock_inet_stub_key;

struct mock_inet_book {
	pthread_rwlock_t slock;
	void **stubs;        /* stub *, in match order */
	mock_inet_stub_key *keys; /* the same order */
	size_t nstubs, capstubs;
	size_t body_bytes;
	unsigned next_id;
	pthread_mutex_t jlock;
	uint64_t jseq;       /* the last entry's seq */
	mock_inet_jentry journal[MOCK_INET_JOURNAL_SIZE];
	mock_inet_site sites[MOCK_INET_SITES_MAX];
	size_t nsites;
	char *upstream_text;
	char *up_names[MOCK_INET_UPSTREAM_MAX];
	/* per name pattern, the hosts file's addresses of the names it
	 * matches (mock_inet_upstream_resolve): the only addresses a flow
	 * naming it may go out to */
	mock_host_addr *up_name_addrs[MOCK_INET_UPSTREAM_MAX];
	size_t up_name_naddr[MOCK_INET_UPSTREAM_MAX];
	size_t nup_names;
	mock_inet_cidr up_cidrs[MOCK_INET_UPSTREAM_MAX];
	size_t nup_cidrs;
	/* atomic: a scenario may name one while the servers run */
	struct mock_inet_tape *_Atomic tape;
	pthread_rwlock_t tlock; /* over tenant_fn */
	mock_inet_tenant_fn tenant_fn;
	void *tenant_arg;
};

void mock_inet_sites_free(mock_inet_book *b);

#endif

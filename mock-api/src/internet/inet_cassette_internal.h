/* inet_cassette_internal: what inet_cassette.c (matching, adding,
 * writing, bodies) and inet_cassette_load.c (reading and checking) share.
 * Not for other modules: inet_cassette.h is the interface. */
#ifndef SBX_MOCK_INET_CASSETTE_INTERNAL_H
#define SBX_MOCK_INET_CASSETTE_INTERNAL_H

#include "internet/inet_cassette.h"

#include <pthread.h>

struct mock_cassette {
	pthread_mutex_t lock;
	char *dir;                /* NULL: parsed from text alone */
	char name[256];
	char created[40];         /* RFC 3339, SBX_CASSETTE_FRACTION_MAX digits at most */
	char *redact[MOCK_CASSETTE_REDACT_MAX];
	size_t nredact;
	mock_cassette_ex *ex;
	size_t nex, capex;
	char **tok_vals;          /* redacted values seen, token i+first_token */
	size_t ntok, captok;
	unsigned first_token;     /* tokens below it were given by an earlier recording */
	size_t unwritten;         /* exchanges added since the last write */
	int64_t written_ms;
};

bool mock_cassette_in_list(const char *const *list, size_t n, const char *name);
bool mock_cassette_hex64(const char *s);
/* Caller holds the lock (tokens may be made). malloc'd. */
char *mock_cassette_redact_locked(mock_cassette *c, const char *target, bool blank);
/* The exchanges written and read back by libsbx's reader (the one that
 * checks the format): 0, or -1 with err saying what it refused. For a
 * cassette whose redacted names grew at open. */
int mock_cassette_check(mock_cassette *c, sbx_err *err);
/* Room for one more exchange: 0 or -1. */
int mock_cassette_grow(mock_cassette *c);

#endif

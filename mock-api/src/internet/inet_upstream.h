/* inet_upstream: the opt-in way out of the simulated internet
 * (mock-api/INTERNET.md, "Upstream"): a maker of sockets in the host's
 * network namespace, and the relay of one guest connection to the address
 * it dialled. Which flows go out is inet_book.h's (the patterns); that the
 * guest may dial the address at all was its kernel's decision, made before
 * the connection reached the internet's listener. */
#ifndef SBX_MOCK_INET_UPSTREAM_H
#define SBX_MOCK_INET_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx/err.h"

typedef struct mock_inet_outside mock_inet_outside;

/* Call from a thread in the host's network namespace: the maker's thread
 * stays there. NULL + err. */
mock_inet_outside *mock_inet_outside_start(sbx_err *err);
void mock_inet_outside_stop(mock_inet_outside *o);

/* A non-blocking TCP socket of the host's namespace (family AF_INET or
 * AF_INET6), or -1: the recorder's connections to origins (inet_tape.c). */
int mock_inet_outside_socket(mock_inet_outside *o, int family);
/* name's first address by the host's resolver (getaddrinfo from the
 * host's namespace), as text into addr: 0, or -1 with why. One name at a
 * time (the maker's thread waits for the answer). */
int mock_inet_outside_resolve(mock_inet_outside *o, const char *name, char *addr, size_t cap, char *why,
			      size_t why_cap);

/* Connects from the host's namespace to addr:port (family 4/6) within 5 s,
 * sends pre (what was read from the guest already), then relays both ways
 * until both sides end, 60 s pass in silence, or stopfd is readable. 0, or
 * -1 when the destination could not be reached (nothing relayed). */
int mock_inet_forward(mock_inet_outside *o, int guest_fd, const char *pre, size_t prelen, int family,
		      const uint8_t *addr, uint16_t port, int stopfd);

#endif

/* route_walk: what the tests that walk the API route table share (issue
 * 16) — one resource of each kind for a tenant, a route pattern filled
 * with them, and a raw HTTP/1.1 exchange (a client library hides what
 * HEAD must not send).
 *
 * Needs <setjmp.h>, <stdarg.h>, <stddef.h>, <stdint.h> and <cmocka.h>
 * included before it (it asserts). */
#ifndef SBX_MOCK_TEST_ROUTE_WALK_H
#define SBX_MOCK_TEST_ROUTE_WALK_H

#include <stdbool.h>
#include <stddef.h>

/* One tenant's resources: a running sandbox (its ip), a network it is
 * attached to, a disk attached at /mnt/d, a template, a file
 * /workspace/mark.txt holding "mark-<key>", a managed process (exited). */
typedef struct rw_tenant {
	char key[32];
	char sandbox[64], ip[32], network[64], disk[64], tpl[64], proc[32];
} rw_tenant;

/* Makes t's resources on the group's mock (U) with key; asserts. */
void rw_make(const char *key, rw_tenant *t);

/* pattern ("/v1/sandboxes/{id}/networks/{net}") with each {param} filled
 * from t: {id} by the collection before it (sandboxes, networks, disks,
 * templates), {net}, {disk}, {ip}, {pid}. False, with the parameter's name in
 * why, when a parameter is not one this knows: a test walking the table
 * must then fail, naming the route, not skip it. */
bool rw_fill(const char *pattern, const rw_tenant *t, char *out, size_t cap, char *why,
	     size_t why_cap);

/* One request on a new connection (Connection: close); buf gets the whole
 * answer as sent, NUL-terminated; returns its length. extra: more header
 * lines ("Name: v\r\n..."), may be NULL; body may be NULL. */
size_t rw_exchange(const char *method, const char *path, const char *extra, const char *body,
		   char *buf, size_t cap);
/* The status of a raw answer, 0 when there is none. */
int rw_status(const char *answer);
/* A header's value in a raw answer (case-insensitive name), copied. */
bool rw_header(const char *answer, const char *name, char *val, size_t cap);
/* The body of a raw answer (after the blank line), NULL when no head end. */
const char *rw_body(const char *answer);

#endif

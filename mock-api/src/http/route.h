/* route: one table row per HTTP route, carrying the route's policy, and the
 * one matcher and dispatcher shared by the control-plane API
 * (api_routes.c), the admin API (admin.c) and the self-signal listener
 * (self.c). The flags are what the server reads instead of matching path
 * strings: whether a request may block (served on a worker thread), its
 * body limit, whether an acknowledged answer is logged for --state-dir, and
 * whether fault rules see it as an exec.
 *
 * Never put per-route decisions anywhere else: a new route is one row here
 * and one handler. */
#ifndef SBX_MOCK_ROUTE_H
#define SBX_MOCK_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "http/request.h"

/* The handler needs the caller's tenant (the table's auth function runs
 * first and answers 401/403 itself). */
#define ROUTE_AUTH (1u << 0)
/* Serving may block (guests, file I/O, timing profiles, fault effects): it
 * runs on a worker thread, never on an MHD pool thread. */
#define ROUTE_BLOCKS (1u << 1)
/* The request body may be a file (limit max_file, not max_json). */
#define ROUTE_FILE_BODY (1u << 2)
/* An acknowledged (2xx) answer is a control-plane mutation: with
 * --state-dir it is logged and fsync'd before the answer goes out. */
#define ROUTE_DURABLE (1u << 3)
/* An exec: fault rules of the exec-only kinds may fire on it. */
#define ROUTE_EXEC (1u << 4)
/* What fn serves on this row when one handler serves several rows
 * (api_computer: a mock_computer_act, 1 to 65535), in the bits above the
 * flags: the handler reads ROUTE_ACTION_OF(r->route->flags) and never
 * matches the path a second time. 0 on every other row. (Bits, not a
 * field: every row of every table would have to spell out its 0.) */
#define ROUTE_ACTION_SHIFT 16
#define ROUTE_ACTION(a) ((unsigned)(a) << ROUTE_ACTION_SHIFT)
#define ROUTE_ACTION_OF(flags) ((int)((flags) >> ROUTE_ACTION_SHIFT))

typedef struct mock_route {
	const char *method;
	const char *pattern; /* see mock_path_match: "{name}" is one segment */
	unsigned flags;      /* ROUTE_*, and ROUTE_ACTION(a) */
	void (*fn)(mreq *r, mresp *out, mock_tenant *t);
} mock_route;

/* Authenticates r for a ROUTE_AUTH row: the caller's tenant, or NULL with
 * the refusal in *out. */
typedef mock_tenant *(*mock_route_auth_fn)(mreq *r, mresp *out);

/* The first row of rows[n] whose pattern matches path and whose method is
 * method (a GET row serves HEAD too). NULL when none; then, if allow is not
 * NULL, allow holds the methods the path does take ("GET, HEAD, POST"), ""
 * when the path is unknown. */
const mock_route *mock_route_find(const mock_route *rows, size_t n, const char *method,
				  const char *path, char *allow, size_t cap);

/* Serves r from rows: r->route when the server matched it already (it must
 * then be a row of rows), else the matching row (then r->route, so the
 * handler always sees its row); a 404 for an unknown path,
 * a 405 with Allow for a known path and another method. For a ROUTE_AUTH
 * row auth runs first; a ROUTE_DURABLE row's 2xx answer is logged when the
 * mock has a state dir and the request has a tenant. */
void mock_route_serve(const mock_route *rows, size_t n, mreq *r, mresp *out,
		      mock_route_auth_fn auth);

/* The row a request will be served by, for the server to look up once per
 * request: self (the self-signal listener), admin (a /_mock/ path) or the
 * API table. NULL when no row matches (the dispatcher answers 404/405).
 * Defined in api_routes.c, next to the API table. */
const mock_route *mock_route_lookup(bool self, bool admin, const char *method, const char *path);

/* The query parameters the journal shows (ADMIN.md), in this order; kept
 * next to the API table (api_routes.c): a route that takes a new parameter
 * adds its name there. */
extern const char *const mock_journal_query_keys[];
extern const size_t mock_journal_nquery_keys;

/* The tables, for mock_route_lookup. */
extern const mock_route mock_api_routes[];
extern const size_t mock_api_nroutes;
extern const mock_route mock_admin_routes[];
extern const size_t mock_admin_nroutes;
extern const mock_route mock_self_routes[];
extern const size_t mock_self_nroutes;

#endif

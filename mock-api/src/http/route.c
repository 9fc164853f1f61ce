/* route: the matcher and dispatcher behind every route table (route.h) —
 * one 404/405 + Allow behaviour, auth before the handler, durable logging
 * of acknowledged mutations after it.
 *
 * It must never know a particular route: everything route-specific is a
 * row's flags or its handler. */
#include "http/route.h"
#include "util/path_match.h"
#include "state/durable.h"

#include <stdio.h>
#include <string.h>

/* HEAD is served by the GET row (RFC 9110 §9.3.2: a server that has GET
 * must have HEAD; libmicrohttpd sends the GET answer's status and headers
 * without its body). */
static bool method_is(const mock_route *rt, const char *method)
{
	return strcmp(rt->method, method) == 0 ||
	       (strcmp(method, "HEAD") == 0 && strcmp(rt->method, "GET") == 0);
}

/* Appends m to the Allow list unless there already. */
static void allow_add(char *allow, size_t cap, size_t *alen, const char *m)
{
	if (strstr(allow, m) == NULL && *alen + strlen(m) + 3 < cap)
		*alen += (size_t)snprintf(allow + *alen, cap - *alen, "%s%s", *alen > 0 ? ", " : "", m);
}

const mock_route *mock_route_find(const mock_route *rows, size_t n, const char *method,
				  const char *path, char *allow, size_t cap)
{
	size_t alen = 0;

	if (allow != NULL && cap > 0)
		allow[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const mock_route *rt = &rows[i];

		if (!mock_path_match(rt->pattern, path))
			continue;
		if (method_is(rt, method))
			return rt;
		if (allow == NULL)
			continue;
		allow_add(allow, cap, &alen, rt->method);
		if (strcmp(rt->method, "GET") == 0)
			allow_add(allow, cap, &alen, "HEAD");
	}
	return NULL;
}

/* Durable state: an acknowledged (2xx) mutation is logged and fsync'd
 * before the answer goes out; if that fails, the client gets a 500 rather
 * than an acknowledgement the log does not back. */
static void persist_mutation(mreq *r, mresp *out, mock_tenant *t)
{
	sbx_err err = {{0}};
	char msg[600];

	if (out->status < 200 || out->status > 299)
		return;
	if (mock_durable_persist(r->mock, t, &err) == 0)
		return;
	if (!r->mock->quiet)
		fprintf(stderr, "sbx-mock: %s %s: %s\n", r->method, r->path, err.msg);
	if (out->custom != NULL) {
		MHD_destroy_response(out->custom);
		out->custom = NULL;
	}
	snprintf(msg, sizeof(msg), "the change could not be made durable: %s", err.msg);
	resp_error(out, 500, msg);
}

static void no_route(mreq *r, mresp *out, const char *allow)
{
	char msg[300];

	if (allow[0] != '\0') {
		snprintf(msg, sizeof(msg), "method %s is not allowed here (allowed: %s)", r->method, allow);
		resp_fail(out, 405, "error", "METHOD_NOT_ALLOWED", msg);
		resp_header(out, "Allow", allow);
		return;
	}
	snprintf(msg, sizeof(msg), "no route for %s %.200s", r->method, r->path);
	resp_fail(out, 404, "error", "NOT_FOUND", msg);
}

void mock_route_serve(const mock_route *rows, size_t n, mreq *r, mresp *out,
		      mock_route_auth_fn auth)
{
	const mock_route *rt = r->route;
	mock_tenant *t = NULL;
	char allow[128];

	if (rt == NULL) {
		rt = mock_route_find(rows, n, r->method, r->path, allow, sizeof(allow));
		if (rt == NULL) {
			no_route(r, out, allow);
			return;
		}
		r->route = rt;
	}
	if ((rt->flags & ROUTE_AUTH) && auth != NULL) {
		t = auth(r, out);
		if (t == NULL)
			return;
	}
	rt->fn(r, out, t);
	if ((rt->flags & ROUTE_DURABLE) && r->mock->state != NULL && t != NULL)
		persist_mutation(r, out, t);
}

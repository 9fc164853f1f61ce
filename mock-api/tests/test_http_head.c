/* Integration over loopback (the shared embedded mock), raw TCP: HEAD on
 * every GET route (RFC 9110 §9.3.2: a server that supports GET supports
 * HEAD). Walks the API route table (and the admin table's GET rows without
 * a parameter), so a new GET route is covered without a line here: HEAD
 * answers the GET's status, Content-Type and Content-Length, and no body
 * byte. A 405 lists HEAD in Allow where GET is allowed; HEAD on a path
 * without GET is a 405 itself. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_fixture.h"
#include "route.h"
#include "route_walk.h"

#define ANSWER_MAX (256 * 1024)

/* GET and HEAD of path agree, and HEAD sends no body. */
static void head_matches_get(const char *path, const char *auth)
{
	char *get = malloc(ANSWER_MAX), *head = malloc(ANSWER_MAX);
	char gv[128], hv[128];
	char ctx[512];
	const char *body;

	assert_non_null(get);
	assert_non_null(head);
	rw_exchange("GET", path, auth, NULL, get, ANSWER_MAX);
	rw_exchange("HEAD", path, auth, NULL, head, ANSWER_MAX);
	snprintf(ctx, sizeof(ctx), "HEAD %s: GET %d, HEAD %d", path, rw_status(get), rw_status(head));
	if (rw_status(get) == 0 || rw_status(head) != rw_status(get))
		fail_msg("%s\nGET answer: %.300s\nHEAD answer: %.300s", ctx, get, head);
	body = rw_body(head);
	assert_non_null(body);
	if (body[0] != '\0')
		fail_msg("%s: HEAD sent a body: %.200s", ctx, body);
	if (rw_header(get, "Content-Type", gv, sizeof(gv))) {
		if (!rw_header(head, "Content-Type", hv, sizeof(hv)) || strcmp(gv, hv) != 0)
			fail_msg("%s: Content-Type %s on GET, not on HEAD", ctx, gv);
	}
	if (rw_header(get, "Content-Length", gv, sizeof(gv))) {
		char want[32];

		snprintf(want, sizeof(want), "%zu", strlen(rw_body(get)));
		assert_string_equal(gv, want);
		if (!rw_header(head, "Content-Length", hv, sizeof(hv)) || strcmp(gv, hv) != 0)
			fail_msg("%s: Content-Length %s on GET, HEAD says otherwise", ctx, gv);
	}
	free(get);
	free(head);
}

static void head_on_every_api_get_route(void **state)
{
	rw_tenant a;
	char path[512], why[256], auth[96];
	size_t n = 0;

	(void)state;
	rw_make("head-a", &a);
	snprintf(auth, sizeof(auth), "X-Api-Key: %s\r\n", a.key);
	for (size_t i = 0; i < mock_api_nroutes; i++) {
		const mock_route *rt = &mock_api_routes[i];

		if (strcmp(rt->method, "GET") != 0)
			continue;
		if (!rw_fill(rt->pattern, &a, path, sizeof(path), why, sizeof(why)))
			fail_msg("GET %s: cannot fill the route (%s): teach route_walk.c", rt->pattern, why);
		if (strstr(path, "/files") != NULL)
			snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s",
				 "?path=/workspace/mark.txt");
		head_matches_get(path, auth);
		n++;
	}
	assert_true(n >= 20); /* the table has its GET rows */
	/* and the answers a GET refuses: unknown sandbox, no key */
	head_matches_get("/v1/sandboxes/sb-00000000000000000000000000", auth);
	head_matches_get("/v1/sandboxes", NULL);
}

static void head_on_admin_get_routes(void **state)
{
	char auth[96];

	(void)state;
	snprintf(auth, sizeof(auth), "X-Mock-Admin-Token: %s\r\n", TOK);
	for (size_t i = 0; i < mock_admin_nroutes; i++) {
		const mock_route *rt = &mock_admin_routes[i];

		if (strcmp(rt->method, "GET") == 0 && strchr(rt->pattern, '{') == NULL &&
		    strchr(rt->pattern, '*') == NULL)
			head_matches_get(rt->pattern, auth);
	}
}

static void allow_lists_head_with_get(void **state)
{
	char *ans = malloc(ANSWER_MAX);
	char allow[128];
	rw_tenant a;
	char path[160];

	(void)state;
	assert_non_null(ans);
	rw_exchange("DELETE", "/v1/shapes", NULL, NULL, ans, ANSWER_MAX);
	assert_int_equal(rw_status(ans), 405);
	assert_true(rw_header(ans, "Allow", allow, sizeof(allow)));
	assert_string_equal(allow, "GET, HEAD");
	rw_exchange("PUT", "/v1/sandboxes", "X-Api-Key: k\r\n", "{}", ans, ANSWER_MAX);
	assert_int_equal(rw_status(ans), 405);
	assert_true(rw_header(ans, "Allow", allow, sizeof(allow)));
	assert_string_equal(allow, "GET, HEAD, POST");
	/* a path without GET: HEAD is not allowed either */
	rw_make("head-b", &a);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", a.sandbox);
	rw_exchange("HEAD", path, "X-Api-Key: head-b\r\n", NULL, ans, ANSWER_MAX);
	assert_int_equal(rw_status(ans), 405);
	assert_true(rw_header(ans, "Allow", allow, sizeof(allow)));
	assert_string_equal(allow, "POST");
	assert_string_equal(rw_body(ans), "");
	free(ans);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(head_on_every_api_get_route, mf_reset),
		cmocka_unit_test_setup(head_on_admin_get_routes, mf_reset),
		cmocka_unit_test_setup(allow_lists_head_with_get, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

/* Integration over loopback (the shared embedded mock): the tenant
 * isolation matrix (issue 16), generated from the API route table. Tenant
 * A owns one resource of each kind (route_walk.h); for every route whose
 * path names a resource, tenant B calls it on A's resource and must get
 * 404 — never 403, never a hint that the resource exists (spec: "a
 * sandbox owned by another key answers 404") — with none of A's ids or
 * names in the answer, and A's view of everything it owns must be
 * byte-for-byte what it was. Every collection route B may read shows none
 * of A's resources.
 *
 * A new route is covered by the walk without a line here. A route the walk
 * cannot fill fails the test (route_walk.c must learn its parameter), and
 * a mutation whose refusal is not a 404 with the default body "{}" fails
 * it too, asking for a valid body in bodies[] below: so an unchecked
 * route cannot pass silently. */
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

#define ANSWER_MAX (512 * 1024)

/* A body that passes the route's validation, so that only ownership can
 * refuse it. */
static const struct {
	const char *method, *pattern, *body;
} bodies[] = {
	{"PATCH", "/v1/sandboxes/{id}", "{\"ingress_enabled\":true}"},
	{"POST", "/v1/sandboxes/{id}/exec", "{\"cmd\":\"sh\",\"args\":[\"-c\",\"echo evil > /workspace/mark.txt\"]}"},
	{"PUT", "/v1/sandboxes/{id}/files", "evil"},
	{"POST", "/v1/sandboxes/{id}/resize", "{\"disk_mib\":40960}"},
	{"POST", "/v1/sandboxes/{id}/ssh-pubkeys", "{\"keys\":[\"ssh-ed25519 AAAAevil b@evil\"]}"},
	{"PUT", "/v1/sandboxes/{id}/egress", "{\"egress\":[\"1.2.3.4/32\"]}"},
	{"POST", "/v1/sandboxes/{id}/bandwidth/recharge", "{\"add_bytes\":1000}"},
	{"POST", "/v1/sandboxes/{id}/processes", "{\"cmd\":\"sh\",\"args\":[\"-c\",\"echo evil > /workspace/mark.txt\"]}"},
	{"POST", "/v1/sandboxes/{id}/processes/{pid}/input", "{\"data_base64\":\"ZXZpbAo=\"}"},
	{"POST", "/v1/sandboxes/{id}/processes/{pid}/resize", "{\"rows\":10,\"cols\":10}"},
	{"POST", "/v1/sandboxes/{id}/processes/{pid}/signal", "{\"signal\":\"SIGKILL\"}"},
	{"PATCH", "/v1/disks/{id}", "{\"credentials\":{\"access_key\":\"EVIL\",\"secret_key\":\"EVIL\"}}"},
	/* computer use (COMPUTER.md) */
	{"PUT", "/v1/sandboxes/{id}/computer/clipboard", "{\"text\":\"evil\"}"},
	{"POST", "/v1/sandboxes/{id}/computer/open", "{\"target\":\"https://example.com/\"}"},
	{"POST", "/v1/sandboxes/{id}/computer/launch", "{\"application\":\"xterm\"}"},
	{"POST", "/v1/sandboxes/{id}/computer/mouse/move", "{\"x\":1,\"y\":1}"},
	{"POST", "/v1/sandboxes/{id}/computer/mouse/drag", "{\"from\":{\"x\":1,\"y\":1},\"to\":{\"x\":2,\"y\":2}}"},
	{"POST", "/v1/sandboxes/{id}/computer/mouse/scroll", "{\"direction\":\"down\"}"},
	{"POST", "/v1/sandboxes/{id}/computer/keyboard/type", "{\"text\":\"evil\"}"},
	{"POST", "/v1/sandboxes/{id}/computer/keyboard/press", "{\"keys\":[\"a\"]}"},
	{"POST", "/v1/sandboxes/{id}/computer/keyboard/down", "{\"keys\":[\"a\"]}"},
	{"POST", "/v1/sandboxes/{id}/computer/keyboard/up", "{\"keys\":[\"a\"]}"},
	/* bodies naming B's own resources are made in body_for() */
};

/* The query a route needs besides its path. */
static const char *query_for(const char *pattern)
{
	if (strstr(pattern, "/files") != NULL)
		return "?path=/workspace/mark.txt";
	if (strcmp(pattern, "/v1/sandboxes/{id}/disks/{disk}") == 0)
		return "?mount_path=/mnt/d";
	return "";
}

static const char *body_for(const mock_route *rt, const rw_tenant *b, char *buf, size_t cap)
{
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		if (strcmp(bodies[i].method, rt->method) == 0 && strcmp(bodies[i].pattern, rt->pattern) == 0)
			return bodies[i].body;
	}
	/* attach B's own network / disk to A's sandbox */
	if (strcmp(rt->method, "POST") == 0 && strcmp(rt->pattern, "/v1/sandboxes/{id}/networks") == 0) {
		snprintf(buf, cap, "{\"id\":\"%s\"}", b->network);
		return buf;
	}
	if (strcmp(rt->method, "POST") == 0 && strcmp(rt->pattern, "/v1/sandboxes/{id}/disks") == 0) {
		snprintf(buf, cap, "{\"disk_id\":\"%s\",\"mount_path\":\"/mnt/e\"}", b->disk);
		return buf;
	}
	if (strcmp(rt->method, "GET") == 0 || strcmp(rt->method, "DELETE") == 0)
		return NULL;
	return "{}";
}

static void append_get(sbx_strbuf *s, const char *key, const char *path)
{
	char *ans = malloc(ANSWER_MAX);
	char auth[96];
	const char *body;

	assert_non_null(ans);
	snprintf(auth, sizeof(auth), "X-Api-Key: %s\r\n", key);
	rw_exchange("GET", path, auth, NULL, ans, ANSWER_MAX);
	body = rw_body(ans);
	assert_non_null(body);
	sbx_strbuf_printf(s, "%s -> %d %s\n", path, rw_status(ans), body);
	free(ans);
}

/* Everything A can see of what it owns, as A sees it. */
static void snapshot(const rw_tenant *a, sbx_strbuf *s)
{
	static const char *const subs[] = {"", "/egress", "/bandwidth", "/disks",
					   "/files?path=/workspace/mark.txt"};
	char path[256];

	sbx_strbuf_init(s);
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s%s", a->sandbox, subs[i]);
		append_get(s, a->key, path);
	}
	snprintf(path, sizeof(path), "/v1/networks/%s", a->network);
	append_get(s, a->key, path);
	snprintf(path, sizeof(path), "/v1/disks/%s", a->disk);
	append_get(s, a->key, path);
	snprintf(path, sizeof(path), "/v1/templates/%s", a->tpl);
	append_get(s, a->key, path);
	append_get(s, a->key, "/v1/sandboxes");
	append_get(s, a->key, "/v1/networks");
	append_get(s, a->key, "/v1/disks");
	append_get(s, a->key, "/v1/templates");
	append_get(s, a->key, "/v1/whoami");
}

/* None of A's ids or names (route_walk.c names them after the key) in an
 * answer B got. */
static void no_trace_of(const rw_tenant *a, const char *what, const char *answer)
{
	char names[4][64];
	const char *const ids[] = {a->sandbox, a->network, a->disk, a->tpl, a->ip};

	snprintf(names[0], sizeof(names[0]), "net-of-%s", a->key);
	snprintf(names[1], sizeof(names[1]), "disk-of-%s", a->key);
	snprintf(names[2], sizeof(names[2]), "tpl-of-%s", a->key);
	snprintf(names[3], sizeof(names[3]), "mark-%s", a->key);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		if (strstr(answer, ids[i]) != NULL)
			fail_msg("%s: B's answer shows A's %s: %.400s", what, ids[i], answer);
	}
	for (size_t i = 0; i < 4; i++) {
		if (strstr(answer, names[i]) != NULL)
			fail_msg("%s: B's answer shows A's %s: %.400s", what, names[i], answer);
	}
}

static void check_route(const mock_route *rt, const rw_tenant *a, const rw_tenant *b,
			const sbx_strbuf *before)
{
	char path[512], why[256], what[600], bodybuf[256], auth[96];
	char *ans = malloc(ANSWER_MAX);
	const char *body;
	sbx_strbuf after;
	int st;

	assert_non_null(ans);
	if (!rw_fill(rt->pattern, a, path, sizeof(path), why, sizeof(why)))
		fail_msg("%s %s: cannot fill the route (%s): teach route_walk.c", rt->method, rt->pattern,
			 why);
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s", query_for(rt->pattern));
	snprintf(what, sizeof(what), "%s %s (as %s: %s)", rt->method, path, b->key, rt->pattern);
	body = body_for(rt, b, bodybuf, sizeof(bodybuf));
	snprintf(auth, sizeof(auth), "X-Api-Key: %s\r\n%s", b->key,
		 strstr(rt->pattern, "/files") != NULL ? "Content-Type: application/octet-stream\r\n"
						      : "Content-Type: application/json\r\n");
	rw_exchange(rt->method, path, auth, body, ans, ANSWER_MAX);
	st = rw_status(ans);
	if (st != 404)
		fail_msg("%s: %d, not 404%s: %.400s", what, st,
			 st == 400 ? " (a 400: give the route a valid body in bodies[])" : "", ans);
	no_trace_of(a, what, rw_body(ans));
	snapshot(a, &after);
	if (strcmp(sbx_strbuf_str(before), sbx_strbuf_str(&after)) != 0)
		fail_msg("%s changed A's state:\nbefore:\n%s\nafter:\n%s", what, sbx_strbuf_str(before),
			 sbx_strbuf_str(&after));
	sbx_strbuf_free(&after);
	free(ans);
}

static void foreign_key_gets_404_on_every_resource_route(void **state)
{
	rw_tenant a, b;
	sbx_strbuf before;
	size_t n = 0;

	(void)state;
	rw_make("iso-a", &a);
	rw_make("iso-b", &b);
	snapshot(&a, &before);
	/* the snapshot is stable by itself (nothing in it moves with time) */
	{
		sbx_strbuf again;

		snapshot(&a, &again);
		assert_string_equal(sbx_strbuf_str(&before), sbx_strbuf_str(&again));
		sbx_strbuf_free(&again);
	}
	for (size_t i = 0; i < mock_api_nroutes; i++) {
		const mock_route *rt = &mock_api_routes[i];

		if (strchr(rt->pattern, '{') == NULL)
			continue;
		assert_true((rt->flags & ROUTE_AUTH) != 0); /* a resource route needs a key */
		check_route(rt, &a, &b, &before);
		n++;
	}
	assert_true(n >= 20); /* the table's resource routes (29 today), not a few */
	sbx_strbuf_free(&before);
}

/* B's reads of the collections (and whoami, hosts) show nothing of A's. */
static void foreign_collections_show_nothing(void **state)
{
	rw_tenant a, b;
	char *ans = malloc(ANSWER_MAX);
	char what[300];

	(void)state;
	assert_non_null(ans);
	rw_make("iso-a", &a);
	rw_make("iso-b", &b);
	for (size_t i = 0; i < mock_api_nroutes; i++) {
		const mock_route *rt = &mock_api_routes[i];

		if (strcmp(rt->method, "GET") != 0 || strchr(rt->pattern, '{') != NULL)
			continue;
		rw_exchange("GET", rt->pattern, "X-Api-Key: iso-b\r\n", NULL, ans, ANSWER_MAX);
		snprintf(what, sizeof(what), "GET %s as iso-b", rt->pattern);
		if (rw_status(ans) != 200)
			fail_msg("%s: %d: %.300s", what, rw_status(ans), ans);
		no_trace_of(&a, what, rw_body(ans));
	}
	free(ans);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(foreign_key_gets_404_on_every_resource_route, mf_reset),
		cmocka_unit_test_setup(foreign_collections_show_nothing, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

/* Unit: every computer-use route reaches its own action. The route row
 * carries the action (api_routes.c, route.h's ROUTE_ACTION) and api_computer
 * reads it; nothing matches the path a second time. So a row given
 * another row's action, a row without one, or a row the matcher never
 * reaches (shadowed by an earlier pattern) would send requests elsewhere:
 * here each path of the API (COMPUTER.md) is looked up as the server
 * looks it up and must land on the action named for it, and each action
 * is served by exactly one row. No socket: the tables alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "ops_computer.h"
#include "route.h"

/* What a user sends and the action it must reach, written out here, not
 * read from the table under test. */
static const struct {
	const char *method, *path;
	mock_computer_act act;
	const char *name;
} want[] = {
	{"GET", "/screen", MC_SCREEN, "MC_SCREEN"},
	{"GET", "/cursor", MC_CURSOR, "MC_CURSOR"},
	{"GET", "/clipboard", MC_CLIPBOARD_GET, "MC_CLIPBOARD_GET"},
	{"PUT", "/clipboard", MC_CLIPBOARD_SET, "MC_CLIPBOARD_SET"},
	{"POST", "/open", MC_OPEN, "MC_OPEN"},
	{"POST", "/launch", MC_LAUNCH, "MC_LAUNCH"},
	{"POST", "/mouse/move", MC_MOUSE_MOVE, "MC_MOUSE_MOVE"},
	{"POST", "/mouse/click", MC_MOUSE_CLICK, "MC_MOUSE_CLICK"},
	{"POST", "/mouse/down", MC_MOUSE_DOWN, "MC_MOUSE_DOWN"},
	{"POST", "/mouse/up", MC_MOUSE_UP, "MC_MOUSE_UP"},
	{"POST", "/mouse/drag", MC_MOUSE_DRAG, "MC_MOUSE_DRAG"},
	{"POST", "/mouse/scroll", MC_MOUSE_SCROLL, "MC_MOUSE_SCROLL"},
	{"POST", "/keyboard/type", MC_KEY_TYPE, "MC_KEY_TYPE"},
	{"POST", "/keyboard/press", MC_KEY_PRESS, "MC_KEY_PRESS"},
	{"POST", "/keyboard/down", MC_KEY_DOWN, "MC_KEY_DOWN"},
	{"POST", "/keyboard/up", MC_KEY_UP, "MC_KEY_UP"},
	{"GET", "/windows", MC_WINDOWS, "MC_WINDOWS"},
	{"GET", "/windows/current", MC_WINDOW_CURRENT, "MC_WINDOW_CURRENT"},
	{"GET", "/windows/0x2400003", MC_WINDOW_GET, "MC_WINDOW_GET"},
	{"GET", "/windows/123/geometry", MC_WINDOW_GEOMETRY, "MC_WINDOW_GEOMETRY"},
	{"POST", "/windows/123/focus", MC_WINDOW_ACTION, "MC_WINDOW_ACTION"},
	{"POST", "/windows/123/resize", MC_WINDOW_ACTION, "MC_WINDOW_ACTION"},
	{"DELETE", "/windows/123", MC_WINDOW_CLOSE, "MC_WINDOW_CLOSE"},
	{"GET", "/screens", MC_SCREENS, "MC_SCREENS"},
	{"POST", "/screens", MC_SCREEN_CREATE, "MC_SCREEN_CREATE"},
	{"GET", "/screens/screen-1", MC_SCREEN_GET, "MC_SCREEN_GET"},
	{"POST", "/screens/screen-1/resize", MC_SCREEN_RESIZE, "MC_SCREEN_RESIZE"},
	{"GET", "/screens/screen-1/connect", MC_SCREEN_CONNECT, "MC_SCREEN_CONNECT"},
	{"DELETE", "/screens/screen-1", MC_SCREEN_DELETE, "MC_SCREEN_DELETE"},
};
#define NWANT (sizeof(want) / sizeof(want[0]))

static void each_path_reaches_its_action(void **state)
{
	char path[256];

	(void)state;
	for (size_t i = 0; i < NWANT; i++) {
		const mock_route *rt;

		snprintf(path, sizeof(path), "/v1/sandboxes/sb-1/computer%s", want[i].path);
		rt = mock_route_lookup(false, false, want[i].method, path);
		if (rt == NULL)
			fail_msg("%s %s: no route (want %s)", want[i].method, path, want[i].name);
		if (rt->fn != api_computer)
			fail_msg("%s %s: served by the row \"%s %s\", not by api_computer (want %s)",
				 want[i].method, path, rt->method, rt->pattern, want[i].name);
		if (ROUTE_ACTION_OF(rt->flags) != (int)want[i].act)
			fail_msg("%s %s: the row \"%s %s\" carries action %d, want %s (%d)", want[i].method,
				 path, rt->method, rt->pattern, ROUTE_ACTION_OF(rt->flags), want[i].name, (int)want[i].act);
	}
}

/* Each api_computer row carries an action no other row carries, and each
 * action of the list above has its row: a new computer route is a row
 * with its own action, and a line above. */
static void each_action_has_one_row(void **state)
{
	unsigned rows_of[NWANT + 1] = {0}; /* by index into want, +1: unknown */
	size_t nrows = 0;

	(void)state;
	for (size_t i = 0; i < mock_api_nroutes; i++) {
		const mock_route *rt = &mock_api_routes[i];
		size_t w = NWANT;

		if (rt->fn != api_computer) {
			if (ROUTE_ACTION_OF(rt->flags) != 0)
				fail_msg("%s %s: action %d on a row api_computer does not serve", rt->method,
					 rt->pattern, ROUTE_ACTION_OF(rt->flags));
			continue;
		}
		nrows++;
		for (size_t j = 0; j < NWANT && w == NWANT; j++) {
			if ((int)want[j].act == ROUTE_ACTION_OF(rt->flags))
				w = j;
		}
		if (w == NWANT)
			fail_msg("%s %s: action %d is none of the computer actions (0: the row has none)",
				 rt->method, rt->pattern, ROUTE_ACTION_OF(rt->flags));
		if (rows_of[w]++ != 0)
			fail_msg("%s %s: action %s is carried by another row too", rt->method, rt->pattern,
				 want[w].name);
	}
	/* want lists MC_WINDOW_ACTION twice (two paths, one row) */
	assert_int_equal(nrows, NWANT - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_path_reaches_its_action),
		cmocka_unit_test(each_action_has_one_row),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

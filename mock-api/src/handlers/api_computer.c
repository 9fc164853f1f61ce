/* api_computer: /v1/sandboxes/{id}/computer/... (COMPUTER.md) — the
 * computer-use API as the vendor's Python SDK calls it (ComputerService,
 * MouseService, KeyboardService, WindowsService, ScreensService): parses
 * the screen_id query, the path's window or screen and the JSON body,
 * calls one operation (ops_computer.h) and answers. Every route blocks
 * (a worker thread): each one runs a tool in the sandbox. */
#define _GNU_SOURCE
#include "handlers/api.h"
#include "http/route.h"
#include "computer/ops_computer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether act's path names its screen ({screen}, not the screen_id
 * query). */
static bool act_names_screen(mock_computer_act act)
{
	switch (act) {
	case MC_SCREEN_GET:
	case MC_SCREEN_RESIZE:
	case MC_SCREEN_CONNECT:
	case MC_SCREEN_DELETE:
		return true;
	default:
		return false;
	}
}

/* Whether act's path names a window ({win}). */
static bool act_names_window(mock_computer_act act)
{
	switch (act) {
	case MC_WINDOW_GET:
	case MC_WINDOW_GEOMETRY:
	case MC_WINDOW_ACTION:
	case MC_WINDOW_CLOSE:
		return true;
	default:
		return false;
	}
}

/* "screen-0" .. "screen-7" (the SDK's ComputerScreenID); NULL: screen-0. */
static bool parse_screen(const char *s, const char *field, int *screen, mresp *out)
{
	char msg[160];

	*screen = 0;
	if (s == NULL || s[0] == '\0')
		return true;
	if (strncmp(s, "screen-", 7) == 0 && s[7] >= '0' && s[7] < '0' + MOCK_COMPUTER_SCREENS &&
	    s[8] == '\0') {
		*screen = s[7] - '0';
		return true;
	}
	snprintf(msg, sizeof(msg), "%s must be screen-0 .. screen-%d, got \"%.40s\"", field,
		 MOCK_COMPUTER_SCREENS - 1, s);
	resp_fail(out, 400, field, "INVALID_SCREEN_ID", msg);
	return false;
}

static bool get_int(const cJSON *o, const char *k, int64_t lo, int64_t hi, int *v, bool *present,
		    mresp *out)
{
	int64_t x = *v;

	if (!api_get_int(o, k, lo, hi, &x, present, out))
		return false;
	*v = (int)x;
	return true;
}

static bool need_str(const cJSON *o, const char *k, const char **v, mresp *out)
{
	char msg[96];

	*v = NULL;
	if (!api_get_str(o, k, v, out))
		return false;
	if (*v != NULL && (*v)[0] != '\0')
		return true;
	snprintf(msg, sizeof(msg), "%s is required (a non-empty string)", k);
	resp_fail(out, 400, k, "INVALID_REQUEST", msg);
	return false;
}

/* "left" | "middle" | "right" (the SDK's ComputerMouseButton); absent:
 * left. */
static bool parse_button(const cJSON *o, int *button, mresp *out)
{
	const char *b = NULL;

	*button = 1;
	if (!api_get_str(o, "button", &b, out))
		return false;
	if (b == NULL || strcmp(b, "left") == 0)
		return true;
	if (strcmp(b, "middle") == 0 || strcmp(b, "right") == 0) {
		*button = b[0] == 'm' ? 2 : 3;
		return true;
	}
	resp_fail(out, 400, "button", "INVALID_REQUEST", "button must be left, middle or right");
	return false;
}

static bool parse_point(const cJSON *p, const char *field, int *x, int *y, mresp *out)
{
	char msg[96];

	if (!cJSON_IsObject(p)) {
		snprintf(msg, sizeof(msg), "%s must be a point {x, y}", field);
		resp_fail(out, 400, field, "INVALID_REQUEST", msg);
		return false;
	}
	return get_int(p, "x", 0, MOCK_COMPUTER_SIDE_MAX, x, NULL, out) &&
	       get_int(p, "y", 0, MOCK_COMPUTER_SIDE_MAX, y, NULL, out);
}

static bool parse_keys(const cJSON *o, mock_computer_req *q, mresp *out)
{
	const cJSON *keys = cJSON_GetObjectItemCaseSensitive(o, "keys"), *k;
	char msg[96];

	if (!cJSON_IsArray(keys) || cJSON_GetArraySize(keys) == 0 ||
	    cJSON_GetArraySize(keys) > MOCK_COMPUTER_KEYS_MAX) {
		snprintf(msg, sizeof(msg), "keys must be an array of 1 to %d key names", MOCK_COMPUTER_KEYS_MAX);
		resp_fail(out, 400, "keys", "INVALID_REQUEST", msg);
		return false;
	}
	cJSON_ArrayForEach(k, keys) {
		if (!cJSON_IsString(k) || k->valuestring[0] == '\0' || strlen(k->valuestring) > 32 ||
		    strpbrk(k->valuestring, "+ \t\n") != NULL) {
			resp_fail(out, 400, "keys", "INVALID_REQUEST",
				  "each key is one key name (\"ctrl\", \"c\", \"Return\"; no '+' or spaces)");
			return false;
		}
		q->keys[q->nkeys++] = k->valuestring;
	}
	return true;
}

/* A type whose typing takes longer than MOCK_COMPUTER_TYPE_MS is refused
 * before a key is pressed (it was cut short after 15 s, half typed). */
static bool type_fits(const mock_computer_req *q, mresp *out)
{
	char msg[200];
	int64_t ms = mock_computer_type_ms(q->text, q->delay_ms);

	if (ms <= MOCK_COMPUTER_TYPE_MS)
		return true;
	snprintf(msg, sizeof(msg),
		 "typing this text takes %" PRId64 " ms at %d ms a key, over the %d ms one type may take: "
		 "send it in parts, or with a shorter delay_in_ms",
		 ms, q->delay_ms > 0 ? q->delay_ms : 12, MOCK_COMPUTER_TYPE_MS);
	resp_fail(out, 400, "text", "INVALID_REQUEST", msg);
	return false;
}

/* The body's fields for q->act; false with the 400 set. */
static bool parse_body(const cJSON *b, mock_computer_req *q, mresp *out)
{
	const int side = MOCK_COMPUTER_SIDE_MAX;
	const char *dir = NULL;

	switch (q->act) {
	case MC_CLIPBOARD_SET:
		if (!api_get_str(b, "text", &q->text, out))
			return false;
		if (q->text == NULL)
			q->text = "";
		return true;
	case MC_OPEN:
		return need_str(b, "target", &q->target, out);
	case MC_LAUNCH:
		return need_str(b, "application", &q->application, out) && api_get_str(b, "uri", &q->uri, out);
	case MC_MOUSE_MOVE:
		return get_int(b, "x", 0, side, &q->x, NULL, out) && get_int(b, "y", 0, side, &q->y, NULL, out);
	case MC_MOUSE_CLICK: {
		bool hx = false, hy = false;

		q->count = 1;
		if (!parse_button(b, &q->button, out) || !get_int(b, "x", 0, side, &q->x, &hx, out) ||
		    !get_int(b, "y", 0, side, &q->y, &hy, out) || !get_int(b, "count", 0, 10, &q->count, NULL, out))
			return false;
		if (hx != hy) {
			resp_fail(out, 400, hx ? "y" : "x", "INVALID_REQUEST", "give both x and y, or neither");
			return false;
		}
		q->has_xy = hx;
		if (q->count == 0)
			q->count = 1;
		return true;
	}
	case MC_MOUSE_DOWN:
	case MC_MOUSE_UP:
		return parse_button(b, &q->button, out);
	case MC_MOUSE_DRAG:
		return parse_point(cJSON_GetObjectItemCaseSensitive(b, "from"), "from", &q->x, &q->y, out) &&
		       parse_point(cJSON_GetObjectItemCaseSensitive(b, "to"), "to", &q->x2, &q->y2, out);
	case MC_MOUSE_SCROLL:
		q->amount = 1;
		if (!api_get_str(b, "direction", &dir, out) || !get_int(b, "amount", 0, 100, &q->amount, NULL, out))
			return false;
		if (dir == NULL || (strcmp(dir, "up") != 0 && strcmp(dir, "down") != 0)) {
			resp_fail(out, 400, "direction", "INVALID_REQUEST", "direction must be up or down");
			return false;
		}
		q->scroll_up = dir[0] == 'u';
		if (q->amount == 0)
			q->amount = 1;
		return true;
	case MC_KEY_TYPE:
		if (!get_int(b, "delay_in_ms", 0, 1000, &q->delay_ms, NULL, out) ||
		    !api_get_str(b, "text", &q->text, out))
			return false;
		if (q->text == NULL) {
			resp_fail(out, 400, "text", "INVALID_REQUEST", "text is required (a string)");
			return false;
		}
		return type_fits(q, out);
	case MC_KEY_PRESS:
	case MC_KEY_DOWN:
	case MC_KEY_UP:
		return parse_keys(b, q, out);
	case MC_WINDOW_ACTION:
		if (strcmp(q->action, "move") == 0)
			return get_int(b, "x", -side, side, &q->x, NULL, out) &&
			       get_int(b, "y", -side, side, &q->y, NULL, out);
		if (strcmp(q->action, "resize") == 0) {
			if (!get_int(b, "width", 0, side, &q->width, NULL, out) ||
			    !get_int(b, "height", 0, side, &q->height, NULL, out))
				return false;
			if (q->width < 1 || q->height < 1) {
				resp_fail(out, 400, "width", "INVALID_REQUEST", "width and height must be at least 1");
				return false;
			}
		}
		return true;
	case MC_SCREEN_CREATE:
	case MC_SCREEN_RESIZE:
		if (!get_int(b, "width", 0, side, &q->width, NULL, out) ||
		    !get_int(b, "height", 0, side, &q->height, NULL, out))
			return false;
		if ((q->width != 0 && q->width < 64) || (q->height != 0 && q->height < 64)) {
			resp_fail(out, 400, "width", "INVALID_REQUEST", "a screen is at least 64x64");
			return false;
		}
		return true;
	default:
		return true;
	}
}

static bool known_window_action(const char *a)
{
	static const char *const actions[] = {"focus", "move", "resize", "maximize", "minimize", "restore"};

	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		if (strcmp(a, actions[i]) == 0)
			return true;
	}
	return false;
}

void api_computer(mreq *r, mresp *out, mock_tenant *t)
{
	mock_computer_req q;
	mock_op op;
	char id[64], win[64] = "", action[32] = "", screen[32] = "";
	const cJSON *body = NULL;
	cJSON *empty = NULL, *v;
	bool screen_route;

	memset(&q, 0, sizeof(q));
	q.act = (mock_computer_act)ROUTE_ACTION_OF(r->route->flags); /* the row's (api_routes.c) */
	if (ROUTE_ACTION_OF(r->route->flags) == 0) {
		resp_fail(out, 500, "error", "", "computer route without an action");
		return;
	}
	screen_route = act_names_screen(q.act);
	if (screen_route)
		req_seg(r, 5, screen, sizeof(screen));
	if (!parse_screen(screen_route ? screen : req_query(r, "screen_id"), "screen_id", &q.screen, out))
		return;
	if (act_names_window(q.act)) {
		req_seg(r, 5, win, sizeof(win));
		q.window = win;
	}
	if (q.act == MC_WINDOW_ACTION) {
		req_seg(r, 6, action, sizeof(action));
		if (!known_window_action(action)) {
			resp_fail(out, 404, "action", "NOT_FOUND",
				  "window actions: focus, move, resize, maximize, minimize, restore (close: DELETE)");
			return;
		}
		q.action = action;
	}
	q.application = req_query(r, "application");
	if (r->method[0] == 'P') {
		body = api_body_object(r, out, false);
		if (body == NULL && out->status != 0)
			return;
		if (body == NULL)
			body = empty = cJSON_CreateObject();
		if (!parse_body(body, &q, out)) {
			cJSON_Delete(empty);
			return;
		}
	}
	api_op_init(&op, r, t, id, sizeof(id));
	v = mock_op_computer(&op, &q);
	api_op_answer(r, out, &op, q.act == MC_SCREEN_CREATE ? 201 : 200, v);
	cJSON_Delete(empty); /* the parsed body is the request's */
}

/* An optional integer query parameter in [lo, hi]; false with a 400. */
static bool query_int(mreq *r, mresp *out, const char *key, int lo, int hi, int *v)
{
	uint64_t u = 0;
	const char *s = req_query(r, key);

	*v = 0;
	if (s == NULL || s[0] == '\0')
		return true;
	if (!api_query_u(r, out, key, (uint64_t)lo, (uint64_t)hi, 0, &u))
		return false;
	*v = (int)u;
	return true;
}

void api_computer_screenshot(mreq *r, mresp *out, mock_tenant *t)
{
	mock_screenshot_req q;
	mock_op op;
	char id[64], *png;
	size_t len = 0;
	const int side = MOCK_COMPUTER_SIDE_MAX;

	memset(&q, 0, sizeof(q));
	if (!parse_screen(req_query(r, "screen_id"), "screen_id", &q.screen, out) ||
	    !query_int(r, out, "x", 0, side, &q.x) || !query_int(r, out, "y", 0, side, &q.y) ||
	    !query_int(r, out, "width", 0, side, &q.width) || !query_int(r, out, "height", 0, side, &q.height))
		return;
	q.window = req_query(r, "window_id");
	api_op_init(&op, r, t, id, sizeof(id));
	png = mock_op_computer_screenshot(&op, &q, &len);
	if (png == NULL) {
		api_op_answer(r, out, &op, 200, NULL);
		return;
	}
	api_op_found(r, &op);
	resp_raw(out, 200, "image/png", png, len);
}

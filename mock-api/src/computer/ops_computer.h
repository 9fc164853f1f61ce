/* ops_computer: the computer-use API (/v1/sandboxes/{id}/computer/...,
 * COMPUTER.md) as operations — a desktop sandbox's screens, input,
 * clipboard, windows and noVNC connections, driven by tools inside its cell
 * (xdotool, xclip, wmctrl) through the exec machinery, and its screenshots
 * read from the X server's framebuffer file in the cell's /tmp.
 *
 * A sandbox is a desktop when its rootfs's image has a virtual X server
 * (desktop:1, fixtures/images/desktop-1.packages); its screens start at
 * boot (mock_op_computer_boot), as guest processes of its cell. Every other
 * sandbox answers every route 409 DESKTOP_UNAVAILABLE. */
#ifndef SBX_MOCK_OPS_COMPUTER_H
#define SBX_MOCK_OPS_COMPUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

#define MOCK_COMPUTER_SCREENS 8        /* screen-0 .. screen-7, as the SDK's enum */
#define MOCK_COMPUTER_VNC_PORT 5900    /* + the screen's number, inside the cell */
#define MOCK_COMPUTER_NOVNC_PORT 6080  /* + the screen's number, inside the cell */
#define MOCK_COMPUTER_WIDTH 1280       /* a screen's size when none is asked for */
#define MOCK_COMPUTER_HEIGHT 800
#define MOCK_COMPUTER_SIDE_MAX 4096    /* a screen's side at most */
#define MOCK_COMPUTER_KEYS_MAX 16      /* keys of one press, down or up */
#define MOCK_COMPUTER_TOKEN_MS (15 * 60 * 1000) /* a noVNC connection's life */
#define MOCK_COMPUTER_CLIP_MAX (1024 * 1024) /* a clipboard read back, bytes */
#define MOCK_COMPUTER_TYPE_MS 120000   /* a keyboard/type's typing at most */

/* Which computer-use route a request came by: its route row's action
 * (api_routes.c), so no path is matched twice. 0 is no action (a row
 * that forgot its own is refused, never served as another's); the
 * handler and the operations tell them apart by name (switch), never by
 * their order here. */
typedef enum mock_computer_act {
	MC_SCREEN = 1,
	MC_CURSOR,
	MC_CLIPBOARD_GET,
	MC_CLIPBOARD_SET,
	MC_OPEN,
	MC_LAUNCH,
	MC_MOUSE_MOVE,
	MC_MOUSE_CLICK,
	MC_MOUSE_DOWN,
	MC_MOUSE_UP,
	MC_MOUSE_DRAG,
	MC_MOUSE_SCROLL,
	MC_KEY_TYPE,
	MC_KEY_PRESS,
	MC_KEY_DOWN,
	MC_KEY_UP,
	MC_WINDOWS,
	MC_WINDOW_CURRENT,
	MC_WINDOW_GET,
	MC_WINDOW_GEOMETRY,
	MC_WINDOW_ACTION,
	MC_WINDOW_CLOSE,
	MC_SCREENS,
	MC_SCREEN_CREATE,
	MC_SCREEN_GET,
	MC_SCREEN_RESIZE,
	MC_SCREEN_CONNECT,
	MC_SCREEN_DELETE,
} mock_computer_act;

/* One request, parsed and range-checked by the handler. */
typedef struct mock_computer_req {
	mock_computer_act act;
	int screen;                /* 0..7: the screen_id query or path segment */
	bool has_xy;               /* x, y given (click: move there first) */
	int x, y, x2, y2;          /* a point; drag: from (x, y) to (x2, y2) */
	int button;                /* X button: 1 left, 2 middle, 3 right */
	int count;                 /* clicks (>= 1) */
	bool scroll_up;
	int amount;                /* wheel steps (>= 1) */
	const char *text;          /* type, clipboard */
	int delay_ms;              /* type: between keys; 0: xdotool's own */
	const char *keys[MOCK_COMPUTER_KEYS_MAX];
	size_t nkeys;
	const char *target;        /* open: a URL or an absolute guest path */
	const char *application;   /* launch; windows: a filter (may be NULL) */
	const char *uri;           /* launch: its argument (may be NULL) */
	const char *window;        /* a window id (decimal or 0x hex) */
	const char *action;        /* focus move resize maximize minimize restore */
	int width, height;         /* screens: the size; window resize */
} mock_computer_req;

/* A screenshot: of the screen, of a window (window_id), and of a region
 * of either (x, y, width, height; 0 width or height: to the edge). */
typedef struct mock_screenshot_req {
	int screen;
	const char *window;        /* NULL or "": the whole screen */
	int x, y, width, height;
} mock_screenshot_req;

/* How long xdotool takes to type text with delay_ms between keys (0:
 * its own 12 ms), in ms: a type whose text takes longer than
 * MOCK_COMPUTER_TYPE_MS is refused (the handler) rather than cut short. */
int64_t mock_computer_type_ms(const char *text, int delay_ms);

/* The answer's data (an object, or an array for the lists), or NULL with
 * op->err. */
cJSON *mock_op_computer(mock_op *op, const mock_computer_req *q);
/* A PNG (malloc'ed, *len bytes), or NULL with op->err. */
char *mock_op_computer_screenshot(mock_op *op, const mock_screenshot_req *q, size_t *len);

/* At boot of sb's guest g: starts screen-0 when sb is a desktop (in the
 * background: its routes wait for it). */
void mock_op_computer_boot(sbx_mock *mock, mock_sandbox *sb, mock_guest *g);

/* The ingress's gate for a request to sandbox id's port (ingress.c): a
 * desktop's noVNC ports take only paths "/t/<token>/..." with a token of a
 * live connection to that port (the "/t/<token>" part is dropped: *skip
 * bytes of rest); every other port passes (*skip 0). 0 to pass, else the
 * status to answer (403) with msg. */
int mock_op_computer_ingress_gate(sbx_mock *mock, const char *id, unsigned port, const char *rest,
				  size_t rest_len, size_t *skip, char *msg, size_t cap);

#endif

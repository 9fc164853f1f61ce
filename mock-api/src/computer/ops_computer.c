/* ops_computer: the computer-use API as operations (ops_computer.h,
 * COMPUTER.md). Each screen N of a desktop sandbox is a set of guest
 * processes of its cell: Xvfb :N (no TCP; its framebuffer mapped into the
 * file /tmp/.sbx-desktop/N/Xvfb_screen0), openbox, x11vnc on the cell's
 * 127.0.0.1:5900+N and websockify serving noVNC on 127.0.0.1:6080+N. They
 * are started by a shell script run through exec, so they are contained
 * like any guest process (frozen by pause, killed by destroy). Their
 * processes' state lives in the guest (/tmp/.sbx-desktop/N: pids, ready);
 * which screens exist and their sizes the mock records in the sandbox
 * (sb->screens, under the model lock; reset at each boot, so a fork boots
 * its own screen-0), since the guest's files are the guest's to rewrite.
 *
 * Input, clipboard and windows are one exec of xdotool, xclip or wmctrl
 * each (about 1 ms); screenshots read the framebuffer file through the
 * files API's confined open and encode the PNG (ops_computer_fb.c). Never
 * holds the model lock across guest I/O: the sandbox is busy instead
 * (ops_io_begin). */
#define _GNU_SOURCE
#include "computer/ops_computer.h"
#include "computer/ops_computer_internal.h"
#include "ops/ops_internal.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "images/images.h"
#include "ops/core.h"
#include "ops/rootfs.h"
#include "sbx/sys.h"
#include "util/sha256.h"

#define DESK_READY_MS 20000   /* a route waits this long for its screen to start */

/* Starts screen $1 at $2x$3 in the background and returns at once; a
 * screen already there is stopped first (resize). "ready" appears when X
 * and the window manager answer; "pids" lists what delete stops. Every
 * process is the cell's: nothing listens outside its namespaces (Xvfb
 * -nolisten tcp: a Unix socket in the cell's /tmp and an abstract one of
 * its network namespace; the VNC servers on its loopback). */
static const char screen_start_sh[] =
	"n=$1 w=$2 h=$3 d=" DESK_DIR "/$1\n"
	"mkdir -p \"$d\" && cd \"$d\" || exit 1\n"
	"old=$(cat pids 2>/dev/null)\n"
	"[ -n \"$old\" ] && kill $old 2>/dev/null\n"
	"rm -f ready pids\n"
	"(\n"
	"  for p in $old; do i=0; while kill -0 $p 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; done\n"
	"  rm -f Xvfb_screen0 /tmp/.X11-unix/X$n /tmp/.X$n-lock\n"
	"  export DISPLAY=:$n HOME=${HOME:-/root}\n"
	"  Xvfb :$n -screen 0 ${w}x${h}x24 -nolisten tcp -fbdir \"$d\" >xvfb.log 2>&1 & echo $! >> pids\n"
	"  i=0; while [ ! -S /tmp/.X11-unix/X$n ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n"
	/* the window manager restarted if it ever exits (it goes with X) */
	"  (while [ -S /tmp/.X11-unix/X$n ]; do openbox; sleep 0.2; done) >>wm.log 2>&1 & echo $! >> pids\n"
	"  x11vnc -display :$n -rfbport $((5900+n)) -localhost -forever -shared -nopw -quiet >vnc.log 2>&1 & echo $! >> pids\n"
	"  websockify --web /usr/share/novnc 127.0.0.1:$((6080+n)) 127.0.0.1:$((5900+n)) >novnc.log 2>&1 & echo $! >> pids\n"
	"  i=0; while ! wmctrl -m >/dev/null 2>&1 && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n"
	/* ready once the VNC server and noVNC listen too (their loopback
	 * sockets in the cell's /proc/net/tcp, state 0A: LISTEN) */
	"  for p in $((5900+n)) $((6080+n)); do l=$(printf '0100007F:%04X 00000000:0000 0A' $p)\n"
	"    i=0; while ! grep -q \"$l\" /proc/net/tcp && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; done\n"
	"  echo up > ready\n"
	") </dev/null >/dev/null 2>&1 &\n";

/* Stops screen $1 and removes its directory (waits for its processes). */
static const char screen_stop_sh[] =
	"d=" DESK_DIR "/$1; old=$(cat \"$d/pids\" 2>/dev/null)\n"
	"[ -n \"$old\" ] && kill $old 2>/dev/null\n"
	"for p in $old; do i=0; while kill -0 $p 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; done\n"
	"rm -rf \"$d\" /tmp/.X11-unix/X$1 /tmp/.X$1-lock\n";

/* Whether rootfs's image has a virtual X server: a desktop. */
static bool rootfs_is_desktop(const sbx_mock *mock, const char *rootfs)
{
	const mock_image *im = mock_rootfs_image(mock, rootfs);
	char path[PATH_MAX + 32];

	if (im == NULL)
		return false;
	snprintf(path, sizeof(path), "%s/usr/bin/Xvfb", im->root.dir);
	return access(path, X_OK) == 0;
}

/* ---- screens' state (files in the guest) ---- */

/* The guest file DESK_DIR/<screen>/<name> read whole (at most cap-1
 * bytes, NUL-terminated): its length, or -1 when it is not there. */
static ssize_t desk_file(mock_guest *g, int screen, const char *name, char *buf, size_t cap)
{
	char path[96];
	int status = 0, fd;
	sbx_err err = {{0}};
	ssize_t n;

	snprintf(path, sizeof(path), DESK_DIR "/%d/%s", screen, name);
	fd = mock_guest_open(g, path, false, &status, &err);
	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* ---- screens' record (the mock's own, under the model lock) ---- */

_Static_assert(MOCK_COMPUTER_SCREENS == MOCK_SANDBOX_SCREENS, "a sandbox records each screen");

/* What the mock started screen at (width 0: no such screen). The guest's
 * files in DESK_DIR (size, the framebuffer's header) are the guest's to
 * rewrite, so no size is ever taken from them. */
static mock_screen screen_rec(const mock_op *op, int screen)
{
	mock_screen s;

	pthread_mutex_lock(&op->mock->model->lock);
	s = op->sb->screens[screen];
	pthread_mutex_unlock(&op->mock->model->lock);
	return s;
}

static void screen_rec_set(const mock_op *op, int screen, mock_screen s)
{
	pthread_mutex_lock(&op->mock->model->lock);
	op->sb->screens[screen] = s;
	pthread_mutex_unlock(&op->mock->model->lock);
}

/* The size screen was started at; false when it does not exist. */
static bool screen_size(const mock_op *op, int screen, int *w, int *h)
{
	mock_screen s = screen_rec(op, screen);

	*w = s.width;
	*h = s.height;
	return s.width != 0;
}

/* Waits until screen is up (DESK_READY_MS at most) and not held by a
 * create, resize or delete (unless mine: the caller holds it): false with
 * a 404 (no such screen) or a 503 (still starting). */
static bool screen_wait(mock_op *op, mock_guest *g, int screen, bool mine)
{
	int64_t end = sbx_mono_ms() + DESK_READY_MS;
	char buf[16];

	for (;;) {
		mock_screen s = screen_rec(op, screen);

		if (s.width == 0) {
			mock_err_set(&op->err, 404, "SCREEN_NOT_FOUND", "screen_id",
				     "screen-%d does not exist (GET .../computer/screens lists them)", screen);
			return false;
		}
		if ((mine || !s.held) && desk_file(g, screen, "ready", buf, sizeof(buf)) > 0)
			return true;
		if (sbx_mono_ms() >= end || op->mock->stopping)
			break;
		mock_sleep_ms(op->mock, 25);
	}
	mock_err_set(&op->err, 503, "DESKTOP_STARTING", "screen_id",
		     "screen-%d is still starting (its X server is not up after %d ms)", screen, DESK_READY_MS);
	return false;
}

static bool screen_start(mock_op *op, mock_guest *g, int screen, int w, int h)
{
	char n[8], ws[12], hs[12];
	const char *argv[] = {"/bin/sh", "-c", screen_start_sh, "sh", n, ws, hs};
	desk_out o;
	bool ok;

	snprintf(n, sizeof(n), "%d", screen);
	snprintf(ws, sizeof(ws), "%d", w);
	snprintf(hs, sizeof(hs), "%d", h);
	desk_out_init(&o);
	ok = desk_do(op, g, screen, argv, 7, NULL, &o);
	desk_out_free(&o);
	return ok;
}

void mock_op_computer_boot(sbx_mock *mock, mock_sandbox *sb, mock_guest *g)
{
	mock_op op = {.mock = mock, .sb = sb};
	const mock_screen primary = {.width = MOCK_COMPUTER_WIDTH, .height = MOCK_COMPUTER_HEIGHT};

	if (g == NULL || !rootfs_is_desktop(mock, sb->rootfs))
		return;
	/* a new guest: only its screen-0 (a fork or a restart has no other) */
	pthread_mutex_lock(&mock->model->lock);
	memset(sb->screens, 0, sizeof(sb->screens));
	sb->screens[0] = primary;
	pthread_mutex_unlock(&mock->model->lock);
	if (screen_start(&op, g, 0, primary.width, primary.height))
		return;
	screen_rec_set(&op, 0, (mock_screen){0});
	if (!mock->quiet)
		fprintf(stderr, "sbx-mock: %s: the desktop did not start: %s\n", sb->id, op.err.msg);
}

static cJSON *screen_view(int screen, int w, int h)
{
	cJSON *o = cJSON_CreateObject();
	char id[16], display[8];

	snprintf(id, sizeof(id), "screen-%d", screen);
	snprintf(display, sizeof(display), ":%d", screen);
	cJSON_AddStringToObject(o, "screen_id", id);
	cJSON_AddStringToObject(o, "display", display);
	cJSON_AddNumberToObject(o, "width", w);
	cJSON_AddNumberToObject(o, "height", h);
	cJSON_AddNumberToObject(o, "vnc_port", MOCK_COMPUTER_VNC_PORT + screen);
	cJSON_AddNumberToObject(o, "novnc_port", MOCK_COMPUTER_NOVNC_PORT + screen);
	return o;
}

/* ---- screens ---- */

static cJSON *screens_list(const mock_op *op)
{
	cJSON *arr = cJSON_CreateArray();
	int w, h;

	for (int s = 0; s < MOCK_COMPUTER_SCREENS; s++) {
		if (screen_size(op, s, &w, &h))
			cJSON_AddItemToArray(arr, screen_view(s, w, h));
	}
	return arr;
}

static bool screen_missing(mock_op *op, int screen)
{
	mock_err_set(&op->err, 404, "SCREEN_NOT_FOUND", "screen_id", "screen-%d does not exist", screen);
	return false;
}

/* Holds existing screen for a resize or delete (w x h: its new size, 0:
 * unchanged): false with a 404, or a 409 while another holds it. */
static bool screen_hold(mock_op *op, int screen, int w, int h)
{
	mock_screen *s;
	int status = 0;

	pthread_mutex_lock(&op->mock->model->lock);
	s = &op->sb->screens[screen];
	if (s->width == 0) {
		status = 404;
	} else if (s->held) {
		status = 409;
	} else {
		s->held = true;
		if (w > 0) {
			s->width = (uint16_t)w;
			s->height = (uint16_t)h;
		}
	}
	pthread_mutex_unlock(&op->mock->model->lock);
	if (status == 404)
		return screen_missing(op, screen);
	if (status == 409)
		mock_err_set(&op->err, 409, "SCREEN_BUSY", "screen_id",
			     "screen-%d is being created, resized or deleted by another request; try again", screen);
	return status == 0;
}

/* Reserves the lowest free screen at w x h, held, under the lock (two
 * creates at once get two screens): its number, or -1 with a 409. */
static int screen_reserve(mock_op *op, int w, int h)
{
	int found = -1;

	pthread_mutex_lock(&op->mock->model->lock);
	for (int s = 0; s < MOCK_COMPUTER_SCREENS && found < 0; s++) {
		if (op->sb->screens[s].width == 0) {
			op->sb->screens[s] = (mock_screen){.width = (uint16_t)w, .height = (uint16_t)h, .held = true};
			found = s;
		}
	}
	pthread_mutex_unlock(&op->mock->model->lock);
	if (found < 0)
		mock_err_set(&op->err, 409, "SCREEN_LIMIT", "screen_id",
			     "every screen (screen-0 .. screen-%d) exists; delete one first", MOCK_COMPUTER_SCREENS - 1);
	return found;
}

/* POST screens (create: s < 0) or screens/{s}/resize: starts the screen's
 * X server at the asked size and waits for it. A create that fails frees
 * its screen; a resize keeps the new size (its server was restarted). */
static cJSON *screen_start_held(mock_op *op, mock_guest *g, int s, const mock_computer_req *q)
{
	int w = q->width > 0 ? q->width : MOCK_COMPUTER_WIDTH;
	int h = q->height > 0 ? q->height : MOCK_COMPUTER_HEIGHT;
	bool create = s < 0, ok;

	if (create)
		s = screen_reserve(op, w, h);
	else if (!screen_hold(op, s, w, h))
		return NULL;
	if (s < 0)
		return NULL;
	ok = screen_start(op, g, s, w, h) && screen_wait(op, g, s, true);
	screen_rec_set(op, s, (mock_screen){.width = (uint16_t)(ok || !create ? w : 0),
					    .height = (uint16_t)(ok || !create ? h : 0)});
	return ok ? screen_view(s, w, h) : NULL;
}

static bool screen_delete(mock_op *op, mock_guest *g, int s)
{
	char n[8];
	const char *stop[] = {"/bin/sh", "-c", screen_stop_sh, "sh", n};
	desk_out o;
	mock_screen was = screen_rec(op, s);
	bool ok;

	if (s == 0) {
		mock_err_set(&op->err, 409, "PRIMARY_SCREEN", "screen_id",
			     "screen-0 is the desktop's primary screen and cannot be deleted");
		return false;
	}
	if (!screen_hold(op, s, 0, 0))
		return false;
	snprintf(n, sizeof(n), "%d", s);
	desk_out_init(&o);
	ok = desk_do(op, g, s, stop, 5, NULL, &o);
	desk_out_free(&o);
	was.held = false;
	if (ok)
		memset(&was, 0, sizeof(was)); /* stopped: the screen is free */
	screen_rec_set(op, s, was);
	return ok;
}

/* "<expiry ms>.<32 hex>": an HMAC, keyed by the admin token, of the
 * sandbox, the port and the expiry; checked without any state kept. */
static void token_make(const sbx_mock *mock, const char *id, unsigned port, int64_t expiry,
		       char *out, size_t cap)
{
	char data[160], mac[65];

	snprintf(data, sizeof(data), "novnc|%s|%u|%" PRId64, id, port, expiry);
	mock_hmac_sha256_hex(mock->admin_token, strlen(mock->admin_token), data, mac);
	mac[32] = '\0';
	snprintf(out, cap, "%" PRId64 ".%s", expiry, mac);
}

static cJSON *screen_connect(mock_op *op, int screen)
{
	mock_model *m = op->mock->model;
	unsigned port = MOCK_COMPUTER_NOVNC_PORT + (unsigned)screen;
	char token[96], stamp[40], path[256], sid[16];
	int64_t expiry;
	bool ingress;
	sbx_strbuf url;
	cJSON *v;

	pthread_mutex_lock(&m->lock);
	expiry = mock_now(m) + MOCK_COMPUTER_TOKEN_MS;
	ingress = op->sb->ingress_enabled && m->ingress_base[0] != '\0';
	mock_rfc3339(m, expiry, stamp, sizeof(stamp));
	sbx_strbuf_init(&url);
	/* https unless --ingress-scheme http (COMPUTER.md, "noVNC") */
	if (ingress)
		sbx_strbuf_puts(&url, m->ingress_base);
	pthread_mutex_unlock(&m->lock);
	if (!ingress) {
		sbx_strbuf_free(&url);
		mock_err_set(&op->err, 409, "INGRESS_DISABLED", "ingress_enabled",
			     "a noVNC connection goes through the sandbox's ingress: turn it on "
			     "(ingress_enabled: true, or PATCH)");
		return NULL;
	}
	token_make(op->mock, op->sb->id, port, expiry, token, sizeof(token));
	snprintf(path, sizeof(path), "/%s/%u/t/%s/websockify", op->sb->id, port, token);
	/* noVNC's page takes the WebSocket's path relative to the host */
	sbx_strbuf_printf(&url, "/%s/%u/t/%s/vnc.html?autoconnect=true&resize=scale&path=%s/%u/t/%s/websockify",
			  op->sb->id, port, token, op->sb->id, port, token);
	snprintf(sid, sizeof(sid), "screen-%d", screen);
	v = cJSON_CreateObject();
	cJSON_AddStringToObject(v, "screen_id", sid);
	cJSON_AddNumberToObject(v, "port", port);
	cJSON_AddStringToObject(v, "path", path);
	cJSON_AddStringToObject(v, "token", token);
	cJSON_AddStringToObject(v, "expires_at", stamp);
	cJSON_AddStringToObject(v, "url", sbx_strbuf_str(&url));
	sbx_strbuf_free(&url);
	return v;
}

static cJSON *screens_action(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	int s = q->screen, w, h;

	switch (q->act) {
	case MC_SCREENS:
		return screens_list(op);
	case MC_SCREEN_CREATE:
		return screen_start_held(op, g, -1, q);
	case MC_SCREEN_RESIZE:
		return screen_start_held(op, g, s, q);
	case MC_SCREEN_GET:
		if (screen_size(op, s, &w, &h))
			return screen_view(s, w, h);
		screen_missing(op, s);
		return NULL;
	case MC_SCREEN_CONNECT:
		return screen_wait(op, g, s, false) ? screen_connect(op, s) : NULL;
	default: /* MC_SCREEN_DELETE (computer_run) */
		return screen_delete(op, g, s) ? cJSON_CreateObject() : NULL;
	}
}

/* The desktop sandbox's guest, busy (ops_io_end after), or NULL with
 * op->err: not running, or not a desktop. */
static mock_guest *desk_begin(mock_op *op)
{
	mock_guest *g = ops_io_begin(op, NULL, NULL);

	if (g != NULL && !rootfs_is_desktop(op->mock, op->sb->rootfs)) {
		mock_err_set(&op->err, 409, "DESKTOP_UNAVAILABLE", "rootfs",
			     "sandbox %s runs rootfs \"%s\", which has no desktop: computer use needs a "
			     "sandbox created with rootfs \"desktop:1\"",
			     op->sb->id, op->sb->rootfs);
		ops_io_end(op->mock, op->sb);
		return NULL;
	}
	return g;
}

/* xdotool getactivewindow's answer, a decimal X id and a newline: false
 * with a 500 for anything else (the tool is the guest's). */
static bool active_id(mock_op *op, const char *out, unsigned long *id)
{
	char *end = NULL;

	errno = 0;
	*id = isdigit((unsigned char)out[0]) ? strtoul(out, &end, 10) : 0;
	if (errno == 0 && end != NULL && (*end == '\0' || strcmp(end, "\n") == 0) && *id <= 0xffffffffUL)
		return true;
	mock_err_set(&op->err, 500, "DESKTOP_ERROR", "error", "xdotool getactivewindow said \"%.40s\"", out);
	return false;
}

/* What acts on screen q->screen as a whole (screen_wait first). */
static cJSON *screen_run(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	cJSON *v;
	int w, h;

	switch (q->act) {
	case MC_SCREEN:
		if (!screen_size(op, q->screen, &w, &h))
			return NULL;
		v = cJSON_CreateObject();
		cJSON_AddNumberToObject(v, "width", w);
		cJSON_AddNumberToObject(v, "height", h);
		return v;
	case MC_CURSOR:
		return desk_cursor_get(op, g, q->screen);
	case MC_OPEN:
		return desk_open_target(op, g, q) ? cJSON_CreateObject() : NULL;
	case MC_LAUNCH:
		return desk_launch(op, g, q) ? cJSON_CreateObject() : NULL;
	case MC_WINDOWS:
		return desk_windows_list(op, g, q->screen, q->application);
	default: /* MC_CLIPBOARD_GET, MC_CLIPBOARD_SET (computer_run) */
		return desk_clipboard(op, g, q);
	}
}

/* The active window's X id: false with op->err (404 when none is). */
static bool active_window(mock_op *op, mock_guest *g, int screen, unsigned long *wid)
{
	const char *argv[] = {"xdotool", "getactivewindow"};
	desk_out o;

	*wid = 0;
	desk_out_init(&o);
	if (desk_run(op, g, screen, argv, 2, NULL, &o) == 0 && !active_id(op, sbx_strbuf_str(&o.out), wid))
		*wid = 0;
	desk_out_free(&o);
	if (*wid != 0)
		return true;
	if (op->err.status == 0)
		mock_err_set(&op->err, 404, "WINDOW_NOT_FOUND", "window_id", "no window is active on screen-%d",
			     screen);
	return false;
}

static bool window_close(mock_op *op, mock_guest *g, int screen, unsigned long wid)
{
	char hex[24];
	const char *argv[] = {"wmctrl", "-i", "-c", hex};
	desk_out o;
	bool ok;

	snprintf(hex, sizeof(hex), "0x%lx", wid);
	desk_out_init(&o);
	ok = desk_do(op, g, screen, argv, 4, NULL, &o);
	desk_out_free(&o);
	return ok;
}

/* What acts on one window: the active one (MC_WINDOW_CURRENT) or
 * q->window, which must exist (its title is looked up first). */
static cJSON *window_run(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	unsigned long wid = 0;
	char *title;
	cJSON *v;

	if (q->act == MC_WINDOW_CURRENT ? !active_window(op, g, q->screen, &wid)
					: !desk_window_id(op, q->window, &wid))
		return NULL;
	title = desk_window_title(op, g, q->screen, wid);
	if (title == NULL)
		return NULL;
	switch (q->act) {
	case MC_WINDOW_GEOMETRY:
		v = desk_window_geometry(op, g, q->screen, wid);
		break;
	case MC_WINDOW_ACTION:
		v = desk_window_action(op, g, q, wid) ? cJSON_CreateObject() : NULL;
		break;
	case MC_WINDOW_CLOSE:
		v = window_close(op, g, q->screen, wid) ? cJSON_CreateObject() : NULL;
		break;
	default: /* MC_WINDOW_CURRENT, MC_WINDOW_GET (computer_run) */
		v = desk_window_view(wid, title);
		break;
	}
	free(title);
	return v;
}

/* Each action by name: the route row gives it (api_routes.c), and
 * reordering mock_computer_act sends nothing elsewhere. */
static cJSON *computer_run(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	switch (q->act) {
	case MC_SCREENS:
	case MC_SCREEN_CREATE:
	case MC_SCREEN_GET:
	case MC_SCREEN_RESIZE:
	case MC_SCREEN_CONNECT:
	case MC_SCREEN_DELETE:
		return screens_action(op, g, q);
	case MC_MOUSE_MOVE:
	case MC_MOUSE_CLICK:
	case MC_MOUSE_DOWN:
	case MC_MOUSE_UP:
	case MC_MOUSE_DRAG:
	case MC_MOUSE_SCROLL:
	case MC_KEY_TYPE:
	case MC_KEY_PRESS:
	case MC_KEY_DOWN:
	case MC_KEY_UP: /* input: no window to look up first */
		return screen_wait(op, g, q->screen, false) && desk_input_action(op, g, q) ? cJSON_CreateObject()
											     : NULL;
	case MC_WINDOW_CURRENT:
	case MC_WINDOW_GET:
	case MC_WINDOW_GEOMETRY:
	case MC_WINDOW_ACTION:
	case MC_WINDOW_CLOSE:
		return screen_wait(op, g, q->screen, false) ? window_run(op, g, q) : NULL;
	case MC_SCREEN:
	case MC_CURSOR:
	case MC_CLIPBOARD_GET:
	case MC_CLIPBOARD_SET:
	case MC_OPEN:
	case MC_LAUNCH:
	case MC_WINDOWS:
		return screen_wait(op, g, q->screen, false) ? screen_run(op, g, q) : NULL;
	}
	mock_err_set(&op->err, 500, "", "error", "computer action %d has no operation", (int)q->act);
	return NULL;
}

cJSON *mock_op_computer(mock_op *op, const mock_computer_req *q)
{
	mock_guest *g = desk_begin(op);
	cJSON *v;

	if (g == NULL)
		return NULL;
	v = computer_run(op, g, q);
	ops_io_end(op->mock, op->sb);
	return v;
}

/* The region of the screenshot q asks for (x0, y0: where the window
 * starts, x, y, w, h: the region in it): false with op->err. */
static bool shot_region(mock_op *op, mock_guest *g, const mock_screenshot_req *q, const xwd_fb *fb,
			int64_t r[6])
{
	int64_t x0 = 0, y0 = 0, w0 = fb->width, h0 = fb->height, x, y, w, h;
	bool window = q->window != NULL && q->window[0] != '\0';

	if (window) {
		unsigned long wid;
		cJSON *geo;

		if (!desk_window_id(op, q->window, &wid) || (geo = desk_window_geometry(op, g, q->screen, wid)) == NULL)
			return false;
		/* desk_window_geometry's numbers are X's: 16 bits each */
		x0 = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(geo, "x"));
		y0 = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(geo, "y"));
		w0 = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(geo, "width"));
		h0 = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(geo, "height"));
		cJSON_Delete(geo);
		/* the part of the window on the screen */
		if (x0 < 0)
			w0 += x0, x0 = 0;
		if (y0 < 0)
			h0 += y0, y0 = 0;
		if (x0 + w0 > fb->width)
			w0 = fb->width - x0;
		if (y0 + h0 > fb->height)
			h0 = fb->height - y0;
		if (w0 <= 0 || h0 <= 0) {
			mock_err_set(&op->err, 409, "WINDOW_OFFSCREEN", "window_id",
				     "window %lu is not on screen-%d", wid, q->screen);
			return false;
		}
	}
	x = q->x;
	y = q->y;
	w = q->width > 0 ? q->width : w0 - x;
	h = q->height > 0 ? q->height : h0 - y;
	if (x < 0 || y < 0 || w <= 0 || h <= 0 || x + w > w0 || y + h > h0) {
		mock_err_set(&op->err, 400, "INVALID_REGION", "x",
			     "region %" PRId64 ",%" PRId64 " %" PRId64 "x%" PRId64
			     " is not inside the %s (%" PRId64 "x%" PRId64 ")",
			     x, y, w, h, window ? "window" : "screen", w0, h0);
		return false;
	}
	r[0] = x0, r[1] = y0, r[2] = x, r[3] = y, r[4] = w, r[5] = h;
	return true;
}

char *mock_op_computer_screenshot(mock_op *op, const mock_screenshot_req *q, size_t *len)
{
	mock_guest *g = desk_begin(op);
	xwd_fb fb = {.fd = -1};
	mock_screen rec;
	int64_t r[6];
	char *png = NULL;

	*len = 0;
	if (g == NULL)
		return NULL;
	if (!screen_wait(op, g, q->screen, false))
		goto out;
	/* the size the mock started the screen at, never the guest's word */
	rec = screen_rec(op, q->screen);
	if (rec.width == 0) {
		screen_missing(op, q->screen);
		goto out;
	}
	if (!desk_fb_open(op, g, q->screen, rec.width, rec.height, &fb)) {
		mock_screen now = screen_rec(op, q->screen);

		/* resized meanwhile: its new X server is starting */
		if (now.held || now.width != rec.width || now.height != rec.height)
			mock_err_set(&op->err, 503, "DESKTOP_STARTING", "screen_id",
				     "screen-%d is being resized; try again", q->screen);
		goto out;
	}
	if (shot_region(op, g, q, &fb, r))
		png = desk_fb_png(op, &fb, (uint32_t)(r[0] + r[2]), (uint32_t)(r[1] + r[3]), (uint32_t)r[4],
				  (uint32_t)r[5], len);
out:
	if (fb.fd >= 0)
		close(fb.fd);
	ops_io_end(op->mock, op->sb);
	return png;
}

/* ---- the ingress's gate ---- */

int mock_op_computer_ingress_gate(sbx_mock *mock, const char *id, unsigned port, const char *rest,
				  size_t rest_len, size_t *skip, char *msg, size_t cap)
{
	mock_model *m = mock->model;
	mock_sandbox *sb;
	bool desktop = false;
	int64_t now = 0, expiry;
	char want[96], tok[96];
	const char *end;
	char *dot = NULL;
	size_t tl;

	*skip = 0;
	if (port < MOCK_COMPUTER_NOVNC_PORT || port >= MOCK_COMPUTER_NOVNC_PORT + MOCK_COMPUTER_SCREENS)
		return 0;
	pthread_mutex_lock(&m->lock);
	sb = mock_sandbox_find_any(m, id);
	if (sb != NULL)
		desktop = rootfs_is_desktop(mock, sb->rootfs);
	now = mock_now(m);
	pthread_mutex_unlock(&m->lock);
	if (!desktop)
		return 0;
	if (rest_len < 4 || memcmp(rest, "/t/", 3) != 0) {
		snprintf(msg, cap, "ingress: port %u of desktop %s is its noVNC: it takes the URL of a "
				   "connection (GET .../computer/screens/{id}/connect)", port, id);
		return 403;
	}
	end = memchr(rest + 3, '/', rest_len - 3);
	tl = (size_t)((end != NULL ? end : rest + rest_len) - (rest + 3));
	if (tl == 0 || tl >= sizeof(tok)) {
		snprintf(msg, cap, "ingress: a noVNC token is missing or malformed");
		return 403;
	}
	memcpy(tok, rest + 3, tl);
	tok[tl] = '\0';
	errno = 0;
	expiry = isdigit((unsigned char)tok[0]) ? strtoll(tok, &dot, 10) : 0;
	if (errno != 0 || dot == NULL || *dot != '.') { /* token_make's "<expiry>.<mac>" */
		snprintf(msg, cap, "ingress: a noVNC token is \"<expiry>.<mac>\": \"%.40s\" is not", tok);
		return 403;
	}
	token_make(mock, id, port, expiry, want, sizeof(want));
	/* in constant time: how long a refusal takes says nothing of how many
	 * leading characters of a forged token were right */
	if (!mock_equal_ct(want, strlen(want), tok, tl)) {
		snprintf(msg, cap, "ingress: this noVNC token is not one of sandbox %s's port %u", id, port);
		return 403;
	}
	if (now >= expiry) {
		snprintf(msg, cap, "ingress: this noVNC connection expired; ask for a new one (.../connect)");
		return 403;
	}
	*skip = 3 + tl;
	return 0;
}

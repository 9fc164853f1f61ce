/* ops_computer: the computer-use API as operations (ops_computer.h,
 * COMPUTER.md). Each screen N of a desktop sandbox is a set of guest
 * processes of its cell: Xvfb :N (no TCP; its framebuffer mapped into the
 * file /tmp/.sbx-desktop/N/Xvfb_screen0), openbox, x11vnc on the cell's
 * 127.0.0.1:5900+N and websockify serving noVNC on 127.0.0.1:6080+N. They
 * are started by a shell script run through exec, so they are contained
 * like any guest process (frozen by pause, killed by destroy). The
 * screen's state lives in the guest too (/tmp/.sbx-desktop/N: size, pids,
 * ready), so the mock keeps no per-sandbox desktop state: a fork boots its
 * own screen-0, a destroyed sandbox leaves nothing behind.
 *
 * Input, clipboard and windows are one exec of xdotool, xclip or wmctrl
 * each (about 1 ms); screenshots read the framebuffer file through the
 * files API's confined open and encode the PNG here. Never holds the model
 * lock across guest I/O: the sandbox is busy instead (ops_io_begin). */
#define _GNU_SOURCE
#include "ops/ops_computer.h"
#include "ops/ops_computer_internal.h"
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
#include <zlib.h>

#include "guest/images.h"
#include "ops/core.h"
#include "ops/rootfs.h"
#include "sbx/sys.h"
#include "util/sha256.h"

#define DESK_READY_MS 20000   /* a route waits this long for its screen to start */
#define XWD_HEADER_FIELDS 25

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
	"echo \"$w $h\" > size\n"
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
	snprintf(path, sizeof(path), "%s/usr/bin/Xvfb", im->dir);
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

/* The size screen was asked for; false when it does not exist. */
static bool screen_size(mock_guest *g, int screen, int *w, int *h)
{
	char buf[64], *sp;
	long lw, lh;

	if (desk_file(g, screen, "size", buf, sizeof(buf)) <= 0 || !desk_num_after(buf, "", 10, &lw))
		return false;
	sp = strchr(buf, ' '); /* "W H" */
	if (sp == NULL || !desk_num_after(sp, " ", 10, &lh) || lw <= 0 || lh <= 0 || lw > 16384 || lh > 16384)
		return false;
	*w = (int)lw;
	*h = (int)lh;
	return true;
}

/* Waits until screen is up (DESK_READY_MS at most): false with a 404 (no
 * such screen) or a 503 (still starting). */
static bool screen_wait(mock_op *op, mock_guest *g, int screen)
{
	int64_t end = sbx_mono_ms() + DESK_READY_MS;
	char buf[16];
	int w, h;

	for (;;) {
		if (!screen_size(g, screen, &w, &h)) {
			mock_err_set(&op->err, 404, "SCREEN_NOT_FOUND", "screen_id",
				     "screen-%d does not exist (GET .../computer/screens lists them)", screen);
			return false;
		}
		if (desk_file(g, screen, "ready", buf, sizeof(buf)) > 0)
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

void mock_op_computer_boot(sbx_mock *mock, const mock_sandbox *sb, mock_guest *g)
{
	mock_op op = {.mock = mock};

	if (g == NULL || !rootfs_is_desktop(mock, sb->rootfs))
		return;
	if (!screen_start(&op, g, 0, MOCK_COMPUTER_WIDTH, MOCK_COMPUTER_HEIGHT) && !mock->quiet)
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

/* ---- the framebuffer (an XWD file Xvfb keeps mapped) ---- */

typedef struct xwd_fb {
	int fd;
	uint32_t width, height, bpp, stride, offset;
	uint32_t mask[3]; /* red, green, blue */
	unsigned shift[3];
	bool lsb;         /* pixels little-endian */
} xwd_fb;

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Opens screen's framebuffer: false with op->err (a 500 naming what is
 * wrong with it: only 24/32-bit true colour is read). */
static bool fb_open(mock_op *op, mock_guest *g, int screen, xwd_fb *fb)
{
	unsigned char h[XWD_HEADER_FIELDS * 4];
	uint32_t f[XWD_HEADER_FIELDS];
	char path[96];
	int status = 0;
	sbx_err err = {{0}};

	snprintf(path, sizeof(path), DESK_DIR "/%d/Xvfb_screen0", screen);
	fb->fd = mock_guest_open(g, path, false, &status, &err);
	if (fb->fd < 0) {
		mock_err_set(&op->err, 503, "DESKTOP_STARTING", "screen_id", "screen-%d has no framebuffer yet: %s",
			     screen, err.msg);
		return false;
	}
	if (pread(fb->fd, h, sizeof(h), 0) != (ssize_t)sizeof(h))
		goto bad;
	for (int i = 0; i < XWD_HEADER_FIELDS; i++)
		f[i] = be32(h + 4 * i);
	/* header_size, version 7, ZPixmap, ..., bits_per_pixel, bytes_per_line,
	 * visual class TrueColor (4), masks, ncolors */
	if (f[1] != 7 || f[2] != 2 || f[13] != 4 || (f[11] != 32 && f[11] != 24) || f[0] < sizeof(h) ||
	    f[19] > 65536 || f[4] == 0 || f[5] == 0 || f[4] > 16384 || f[5] > 16384 ||
	    f[12] < f[4] * (f[11] / 8))
		goto bad;
	fb->width = f[4];
	fb->height = f[5];
	fb->lsb = f[7] == 0;
	fb->bpp = f[11] / 8;
	fb->stride = f[12];
	fb->offset = f[0] + f[19] * 12; /* the colormap's entries are 12 bytes */
	for (int c = 0; c < 3; c++) {
		fb->mask[c] = f[14 + c];
		if (fb->mask[c] == 0)
			goto bad;
		fb->shift[c] = (unsigned)__builtin_ctz(fb->mask[c]);
	}
	return true;
bad:
	close(fb->fd);
	mock_err_set(&op->err, 500, "DESKTOP_ERROR", "error",
		     "screen-%d's framebuffer is not a 24/32-bit TrueColor XWD image", screen);
	return false;
}

/* ---- PNG ---- */

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static bool png_chunk(sbx_strbuf *b, const char *type, const unsigned char *data, size_t len)
{
	unsigned char hdr[8], crc[4];
	uLong c = crc32(0, (const Bytef *)type, 4);

	put32(hdr, (uint32_t)len);
	memcpy(hdr + 4, type, 4);
	if (len > 0)
		c = crc32(c, data, (uInt)len);
	put32(crc, (uint32_t)c);
	return sbx_strbuf_append(b, hdr, 8) && (len == 0 || sbx_strbuf_append(b, data, len)) &&
	       sbx_strbuf_append(b, crc, 4);
}

/* The rectangle (x, y, w, h) of fb as an 8-bit RGB PNG: malloc'ed, or
 * NULL with op->err. Rows are read one at a time (a region reads only its
 * rows); deflate level 1: speed over size, a desktop compresses well. */
static char *fb_png(mock_op *op, const xwd_fb *fb, uint32_t x, uint32_t y, uint32_t w, uint32_t h,
		    size_t *len)
{
	static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	size_t rowlen = (size_t)w * 3 + 1, raw_len = rowlen * h;
	unsigned char *raw = malloc(raw_len), *row = malloc((size_t)w * fb->bpp), ihdr[13];
	uLongf zlen = compressBound((uLong)raw_len);
	unsigned char *z = malloc(zlen);
	sbx_strbuf b;
	char *png = NULL;

	sbx_strbuf_init(&b);
	if (raw == NULL || row == NULL || z == NULL) {
		mock_err_set(&op->err, 500, "", "error", "out of memory");
		goto out;
	}
	for (uint32_t r = 0; r < h; r++) {
		unsigned char *dst = raw + r * rowlen;
		off_t at = (off_t)fb->offset + (off_t)(y + r) * fb->stride + (off_t)x * fb->bpp;

		if (pread(fb->fd, row, (size_t)w * fb->bpp, at) != (ssize_t)((size_t)w * fb->bpp)) {
			mock_err_set(&op->err, 503, "DESKTOP_STARTING", "screen_id",
				     "the framebuffer changed while it was read (the screen restarted)");
			goto out;
		}
		*dst++ = 0; /* filter: none */
		for (uint32_t i = 0; i < w; i++) {
			const unsigned char *s = row + (size_t)i * fb->bpp;
			uint32_t px = fb->lsb ? (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 |
							(fb->bpp == 4 ? (uint32_t)s[3] << 24 : 0)
					      : fb->bpp == 4 ? be32(s)
							     : (uint32_t)s[0] << 16 | (uint32_t)s[1] << 8 | s[2];

			for (int c = 0; c < 3; c++)
				*dst++ = (unsigned char)((px & fb->mask[c]) >> fb->shift[c]);
		}
	}
	if (compress2(z, &zlen, raw, (uLong)raw_len, 1) != Z_OK) {
		mock_err_set(&op->err, 500, "", "error", "PNG: deflate failed");
		goto out;
	}
	put32(ihdr, w);
	put32(ihdr + 4, h);
	ihdr[8] = 8;  /* bit depth */
	ihdr[9] = 2;  /* RGB */
	ihdr[10] = 0; /* deflate */
	ihdr[11] = 0; /* adaptive filtering */
	ihdr[12] = 0; /* no interlace */
	if (!sbx_strbuf_append(&b, sig, 8) || !png_chunk(&b, "IHDR", ihdr, 13) ||
	    !png_chunk(&b, "IDAT", z, zlen) || !png_chunk(&b, "IEND", NULL, 0)) {
		mock_err_set(&op->err, 500, "", "error", "out of memory");
		goto out;
	}
	png = sbx_strbuf_detach(&b, len);
out:
	sbx_strbuf_free(&b);
	free(raw);
	free(row);
	free(z);
	return png;
}

/* ---- screens ---- */

static cJSON *screens_list(mock_guest *g)
{
	cJSON *arr = cJSON_CreateArray();
	int w, h;

	for (int s = 0; s < MOCK_COMPUTER_SCREENS; s++) {
		if (screen_size(g, s, &w, &h))
			cJSON_AddItemToArray(arr, screen_view(s, w, h));
	}
	return arr;
}

static int screen_free(mock_guest *g)
{
	int w, h;

	for (int s = 0; s < MOCK_COMPUTER_SCREENS; s++) {
		if (!screen_size(g, s, &w, &h))
			return s;
	}
	return -1;
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
	char n[8];
	const char *stop[] = {"/bin/sh", "-c", screen_stop_sh, "sh", n};
	desk_out o;
	bool ok;

	switch (q->act) {
	case MC_SCREENS:
		return screens_list(g);
	case MC_SCREEN_CREATE:
		s = screen_free(g);
		if (s < 0) {
			mock_err_set(&op->err, 409, "SCREEN_LIMIT", "screen_id",
				     "every screen (screen-0 .. screen-%d) exists; delete one first",
				     MOCK_COMPUTER_SCREENS - 1);
			return NULL;
		}
		__attribute__((fallthrough)); /* start it */
	case MC_SCREEN_RESIZE:
		if (q->act == MC_SCREEN_RESIZE && !screen_size(g, s, &w, &h)) {
			mock_err_set(&op->err, 404, "SCREEN_NOT_FOUND", "screen_id", "screen-%d does not exist", s);
			return NULL;
		}
		w = q->width > 0 ? q->width : MOCK_COMPUTER_WIDTH;
		h = q->height > 0 ? q->height : MOCK_COMPUTER_HEIGHT;
		if (!screen_start(op, g, s, w, h) || !screen_wait(op, g, s))
			return NULL;
		return screen_view(s, w, h);
	case MC_SCREEN_GET:
		if (!screen_size(g, s, &w, &h)) {
			mock_err_set(&op->err, 404, "SCREEN_NOT_FOUND", "screen_id", "screen-%d does not exist", s);
			return NULL;
		}
		return screen_view(s, w, h);
	case MC_SCREEN_CONNECT:
		return screen_wait(op, g, s) ? screen_connect(op, s) : NULL;
	default: /* MC_SCREEN_DELETE */
		if (s == 0) {
			mock_err_set(&op->err, 409, "PRIMARY_SCREEN", "screen_id",
				     "screen-0 is the desktop's primary screen and cannot be deleted");
			return NULL;
		}
		if (!screen_size(g, s, &w, &h)) {
			mock_err_set(&op->err, 404, "SCREEN_NOT_FOUND", "screen_id", "screen-%d does not exist", s);
			return NULL;
		}
		snprintf(n, sizeof(n), "%d", s);
		desk_out_init(&o);
		ok = desk_do(op, g, s, stop, 5, NULL, &o);
		desk_out_free(&o);
		return ok ? cJSON_CreateObject() : NULL;
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

static cJSON *computer_run(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	unsigned long wid = 0;
	char *title;
	cJSON *v = NULL;
	int w, h;

	if (q->act >= MC_SCREENS)
		return screens_action(op, g, q);
	if (!screen_wait(op, g, q->screen))
		return NULL;
	switch (q->act) {
	case MC_SCREEN:
		if (!screen_size(g, q->screen, &w, &h))
			return NULL;
		v = cJSON_CreateObject();
		cJSON_AddNumberToObject(v, "width", w);
		cJSON_AddNumberToObject(v, "height", h);
		return v;
	case MC_CURSOR:
		return desk_cursor_get(op, g, q->screen);
	case MC_CLIPBOARD_GET:
	case MC_CLIPBOARD_SET:
		return desk_clipboard(op, g, q);
	case MC_OPEN:
		return desk_open_target(op, g, q) ? cJSON_CreateObject() : NULL;
	case MC_LAUNCH:
		return desk_launch(op, g, q) ? cJSON_CreateObject() : NULL;
	case MC_WINDOWS:
		return desk_windows_list(op, g, q->screen, q->application);
	case MC_WINDOW_CURRENT: {
		const char *argv[] = {"xdotool", "getactivewindow"};
		desk_out o;

		desk_out_init(&o);
		if (desk_run(op, g, q->screen, argv, 2, NULL, &o) == 0)
			wid = strtoul(sbx_strbuf_str(&o.out), NULL, 10);
		desk_out_free(&o);
		if (wid == 0) {
			if (op->err.status == 0)
				mock_err_set(&op->err, 404, "WINDOW_NOT_FOUND", "window_id",
					     "no window is active on screen-%d", q->screen);
			return NULL;
		}
		break;
	}
	default:
		if (!desk_window_id(op, q->window, &wid))
			return NULL;
		break;
	}
	title = desk_window_title(op, g, q->screen, wid);
	if (title == NULL)
		return NULL;
	if (q->act == MC_WINDOW_CURRENT || q->act == MC_WINDOW_GET)
		v = desk_window_view(wid, title);
	else if (q->act == MC_WINDOW_GEOMETRY)
		v = desk_window_geometry(op, g, q->screen, wid);
	else if (q->act == MC_WINDOW_ACTION)
		v = desk_window_action(op, g, q, wid) ? cJSON_CreateObject() : NULL;
	else if (q->act == MC_WINDOW_CLOSE) {
		char hex[24];
		const char *argv[] = {"wmctrl", "-i", "-c", hex};
		desk_out o;

		snprintf(hex, sizeof(hex), "0x%lx", wid);
		desk_out_init(&o);
		v = desk_do(op, g, q->screen, argv, 4, NULL, &o) ? cJSON_CreateObject() : NULL;
		desk_out_free(&o);
	} else if (desk_input_action(op, g, q)) {
		v = cJSON_CreateObject();
	}
	free(title);
	return v;
}

cJSON *mock_op_computer(mock_op *op, const mock_computer_req *q)
{
	mock_guest *g = desk_begin(op);
	cJSON *v;

	if (g == NULL)
		return NULL;
	/* input: no window to look up first */
	if (q->act >= MC_MOUSE_MOVE && q->act <= MC_KEY_UP)
		v = screen_wait(op, g, q->screen) && desk_input_action(op, g, q) ? cJSON_CreateObject() : NULL;
	else
		v = computer_run(op, g, q);
	ops_io_end(op->mock, op->sb);
	return v;
}

char *mock_op_computer_screenshot(mock_op *op, const mock_screenshot_req *q, size_t *len)
{
	mock_guest *g = desk_begin(op);
	xwd_fb fb = {.fd = -1};
	int64_t x0 = 0, y0 = 0, w0, h0, x, y, w, h;
	char *png = NULL;

	*len = 0;
	if (g == NULL)
		return NULL;
	if (!screen_wait(op, g, q->screen) || !fb_open(op, g, q->screen, &fb))
		goto out;
	w0 = fb.width;
	h0 = fb.height;
	if (q->window != NULL && q->window[0] != '\0') {
		unsigned long wid;
		cJSON *geo;

		if (!desk_window_id(op, q->window, &wid) || (geo = desk_window_geometry(op, g, q->screen, wid)) == NULL)
			goto out;
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
		if (x0 + w0 > fb.width)
			w0 = fb.width - x0;
		if (y0 + h0 > fb.height)
			h0 = fb.height - y0;
		if (w0 <= 0 || h0 <= 0) {
			mock_err_set(&op->err, 409, "WINDOW_OFFSCREEN", "window_id",
				     "window %lu is not on screen-%d", wid, q->screen);
			goto out;
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
			     x, y, w, h, q->window != NULL && q->window[0] != '\0' ? "window" : "screen", w0, h0);
		goto out;
	}
	png = fb_png(op, &fb, (uint32_t)(x0 + x), (uint32_t)(y0 + y), (uint32_t)w, (uint32_t)h, len);
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
	expiry = strtoll(tok, NULL, 10);
	token_make(mock, id, port, expiry, want, sizeof(want));
	if (strcmp(want, tok) != 0) {
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

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

#define DESK_DIR "/tmp/.sbx-desktop"
#define DESK_READY_MS 20000   /* a route waits this long for its screen to start */
#define DESK_EXEC_MS 15000    /* one tool's run at most */
#define DESK_OUT_MAX 65536    /* a tool's output kept */
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

/* Opens $1 (a URL) in the desktop's browser, detached: a running Chromium
 * takes it as a new tab and the command returns. --no-sandbox: Chromium's
 * own sandbox needs user namespaces or a setuid helper, which the cell's
 * seccomp filter refuses (the cell is the sandbox); --test-type keeps the
 * warning bar about that flag off the page. */
static const char browser_open_sh[] =
	"setsid chromium --no-sandbox --test-type --no-first-run --no-default-browser-check "
	"--disable-gpu --disable-dev-shm-usage --password-store=basic "
	"--user-data-dir=" DESK_DIR "/chromium \"$1\" </dev/null >>" DESK_DIR "/chromium.log 2>&1 &\n";

/* Runs $@ detached (launch). */
static const char launch_sh[] = "command -v \"$1\" >/dev/null || exit 127\n"
				"setsid \"$@\" </dev/null >/dev/null 2>&1 &\n";

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

/* ---- running tools in the guest ---- */

typedef struct desk_out {
	sbx_strbuf out, err;
} desk_out;

static void desk_collect(void *arg, int which, const char *buf, size_t n)
{
	desk_out *o = arg;
	sbx_strbuf *b = which == 1 ? &o->out : &o->err;

	if (b->len + n <= DESK_OUT_MAX)
		sbx_strbuf_append(b, buf, n);
}

/* Runs argv (argv[0] the program) on screen's display with stdin_text;
 * its exit code (-1 with op->err when it could not run or timed out). */
static int desk_run(mock_op *op, mock_guest *g, int screen, const char *const *argv, size_t argc,
		    const char *stdin_text, desk_out *o)
{
	char display[16];
	const char *env[] = {display};
	mock_exec_spec spec = {.cmd = argv[0], .args = argv + 1, .nargs = argc - 1, .env = env,
			       .nenv = 1, .cwd = "/root"};
	mock_exec_io io = {.output = desk_collect, .arg = o};
	mock_exec_result r;
	sbx_err err = {{0}};

	snprintf(display, sizeof(display), "DISPLAY=:%d", screen);
	if (stdin_text != NULL) {
		spec.stdin_data = stdin_text;
		spec.stdin_len = strlen(stdin_text);
	}
	if (mock_guest_exec(g, &spec, DESK_EXEC_MS, &io, &r, &err) != 0) {
		mock_err_set(&op->err, 500, "", "error", "desktop: %s: %s", argv[0], err.msg);
		return -1;
	}
	if (r.timed_out) {
		mock_err_set(&op->err, 504, "DESKTOP_TIMEOUT", "error", "desktop: %s did not finish in %d ms",
			     argv[0], DESK_EXEC_MS);
		return -1;
	}
	return r.exit_code;
}

/* desk_run that must succeed: false with a 500 quoting its stderr. */
static bool desk_do(mock_op *op, mock_guest *g, int screen, const char *const *argv, size_t argc,
		    const char *stdin_text, desk_out *o)
{
	int rc = desk_run(op, g, screen, argv, argc, stdin_text, o);

	if (rc == 0)
		return true;
	if (rc > 0)
		mock_err_set(&op->err, 500, "DESKTOP_ERROR", "error", "desktop: %s exited %d: %.300s",
			     argv[0], rc, sbx_strbuf_str(&o->err));
	return false;
}

static void desk_out_init(desk_out *o)
{
	sbx_strbuf_init(&o->out);
	sbx_strbuf_init(&o->err);
}

static void desk_out_free(desk_out *o)
{
	sbx_strbuf_free(&o->out);
	sbx_strbuf_free(&o->err);
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
	char buf[64];

	return desk_file(g, screen, "size", buf, sizeof(buf)) > 0 && sscanf(buf, "%d %d", w, h) == 2;
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

/* ---- windows ---- */

/* A window id as X numbers it: decimal, or 0x hex; false with a 400. */
static bool window_id(mock_op *op, const char *s, unsigned long *id)
{
	char *end = NULL;

	errno = 0;
	*id = s != NULL && s[0] != '\0' && s[0] != '-' ? strtoul(s, &end, 0) : 0;
	if (errno == 0 && end != NULL && *end == '\0' && *id > 0 && *id <= 0xffffffffUL)
		return true;
	mock_err_set(&op->err, 400, "INVALID_WINDOW_ID", "window_id",
		     "a window id is a number (decimal, or 0x hex), as GET .../computer/windows lists them");
	return false;
}

/* The window's title, or NULL with a 404 (no such window). */
static char *window_title(mock_op *op, mock_guest *g, int screen, unsigned long id)
{
	char ids[24];
	const char *argv[] = {"xdotool", "getwindowname", ids};
	desk_out o;
	char *title = NULL;
	int rc;

	snprintf(ids, sizeof(ids), "%lu", id);
	desk_out_init(&o);
	rc = desk_run(op, g, screen, argv, 3, NULL, &o);
	if (rc == 0) {
		size_t n = o.out.len;

		title = sbx_strbuf_detach(&o.out, &n);
		if (title == NULL)
			title = sbx_strdup("");
		else if (n > 0 && title[n - 1] == '\n')
			title[n - 1] = '\0';
	} else if (rc > 0) {
		mock_err_set(&op->err, 404, "WINDOW_NOT_FOUND", "window_id",
			     "no window %lu on screen-%d", id, screen);
	}
	desk_out_free(&o);
	return title;
}

static cJSON *window_view(unsigned long id, const char *title)
{
	cJSON *o = cJSON_CreateObject();
	char ids[24];

	snprintf(ids, sizeof(ids), "%lu", id);
	cJSON_AddStringToObject(o, "id", ids);
	cJSON_AddStringToObject(o, "title", title);
	return o;
}

/* Whether id is in the decimal ids of text (one a line). */
static bool id_listed(const char *text, unsigned long id)
{
	const char *p = text;

	while (*p != '\0') {
		char *end = NULL;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p)
			break;
		if (v == id)
			return true;
		p = end + strspn(end, "\n");
	}
	return false;
}

/* The windows the window manager manages (wmctrl -l: id, desktop, host,
 * title; the host never has a space), only those whose WM_CLASS class or
 * instance matches application (xdotool search) when it is given. */
static cJSON *windows_list(mock_op *op, mock_guest *g, int screen, const char *application)
{
	const char *argv[] = {"wmctrl", "-l"};
	const char *search[] = {"xdotool", "search", "--class", "--classname", application};
	desk_out o, f;
	cJSON *arr = NULL;
	char *line, *save = NULL;
	bool filter = application != NULL && application[0] != '\0';

	desk_out_init(&o);
	desk_out_init(&f);
	if (!desk_do(op, g, screen, argv, 2, NULL, &o) ||
	    (filter && desk_run(op, g, screen, search, 5, NULL, &f) < 0))
		goto out;
	arr = cJSON_CreateArray();
	for (line = o.out.len > 0 ? strtok_r(o.out.data, "\n", &save) : NULL; line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long id;
		int desk, used = 0;

		if (sscanf(line, "%lx %d %*s %n", &id, &desk, &used) < 2 || used == 0)
			continue;
		if (filter && !id_listed(sbx_strbuf_str(&f.out), id))
			continue;
		cJSON_AddItemToArray(arr, window_view(id, line + used));
	}
out:
	desk_out_free(&o);
	desk_out_free(&f);
	return arr;
}

static cJSON *window_geometry(mock_op *op, mock_guest *g, int screen, unsigned long id)
{
	char ids[24];
	const char *argv[] = {"xdotool", "getwindowgeometry", "--shell", ids};
	desk_out o;
	cJSON *v = NULL;
	long x = 0, y = 0, w = 0, h = 0, s = 0;
	char *line, *save = NULL;

	snprintf(ids, sizeof(ids), "%lu", id);
	desk_out_init(&o);
	if (desk_do(op, g, screen, argv, 4, NULL, &o)) {
		for (line = o.out.len > 0 ? strtok_r(o.out.data, "\n", &save) : NULL; line != NULL;
		     line = strtok_r(NULL, "\n", &save)) {
			sscanf(line, "X=%ld", &x);
			sscanf(line, "Y=%ld", &y);
			sscanf(line, "WIDTH=%ld", &w);
			sscanf(line, "HEIGHT=%ld", &h);
			sscanf(line, "SCREEN=%ld", &s);
		}
		v = cJSON_CreateObject();
		cJSON_AddStringToObject(v, "id", ids);
		cJSON_AddNumberToObject(v, "x", (double)x);
		cJSON_AddNumberToObject(v, "y", (double)y);
		cJSON_AddNumberToObject(v, "width", (double)w);
		cJSON_AddNumberToObject(v, "height", (double)h);
		/* the X screen of the display: each sandbox screen is a display */
		cJSON_AddNumberToObject(v, "screen", (double)s);
	}
	desk_out_free(&o);
	return v;
}

/* POST windows/{id}/{action}: xdotool or wmctrl for it. */
static bool window_action(mock_op *op, mock_guest *g, const mock_computer_req *q, unsigned long id)
{
	char ids[24], hex[24], a1[16], a2[16];
	const char *argv[8];
	size_t argc = 0;
	desk_out o;
	bool ok;
	const char *act = q->action;

	snprintf(ids, sizeof(ids), "%lu", id);
	snprintf(hex, sizeof(hex), "0x%lx", id);
	if (strcmp(act, "focus") == 0) {
		argv[argc++] = "xdotool", argv[argc++] = "windowactivate", argv[argc++] = ids;
	} else if (strcmp(act, "move") == 0 || strcmp(act, "resize") == 0) {
		bool move = act[0] == 'm';

		snprintf(a1, sizeof(a1), "%d", move ? q->x : q->width);
		snprintf(a2, sizeof(a2), "%d", move ? q->y : q->height);
		argv[argc++] = "xdotool", argv[argc++] = move ? "windowmove" : "windowsize";
		argv[argc++] = ids, argv[argc++] = a1, argv[argc++] = a2;
	} else if (strcmp(act, "minimize") == 0) {
		argv[argc++] = "xdotool", argv[argc++] = "windowminimize", argv[argc++] = ids;
	} else {
		/* maximize; restore: unmaximize, then activate (maps a minimized one) */
		bool max = strcmp(act, "maximize") == 0;

		argv[argc++] = "wmctrl", argv[argc++] = "-i", argv[argc++] = "-r", argv[argc++] = hex;
		argv[argc++] = "-b";
		argv[argc++] = max ? "add,maximized_vert,maximized_horz" : "remove,maximized_vert,maximized_horz";
	}
	desk_out_init(&o);
	ok = desk_do(op, g, q->screen, argv, argc, NULL, &o);
	if (ok && strcmp(act, "restore") == 0) {
		const char *activate[] = {"wmctrl", "-i", "-a", hex};

		ok = desk_do(op, g, q->screen, activate, 4, NULL, &o);
	}
	desk_out_free(&o);
	return ok;
}

/* ---- keys ---- */

/* The X keysym name xdotool wants for a key name an agent sends ("enter",
 * "ctrl", "cmd", "pagedown"); anything else passes as it is (a keysym or
 * a character). */
static const char *key_name(const char *k)
{
	static const char *const alias[][2] = {
		{"enter", "Return"}, {"return", "Return"}, {"esc", "Escape"}, {"escape", "Escape"},
		{"tab", "Tab"}, {"backspace", "BackSpace"}, {"delete", "Delete"}, {"del", "Delete"},
		{"space", "space"}, {"up", "Up"}, {"down", "Down"}, {"left", "Left"}, {"right", "Right"},
		{"home", "Home"}, {"end", "End"}, {"pageup", "Prior"}, {"pagedown", "Next"},
		{"insert", "Insert"}, {"ctrl", "ctrl"}, {"control", "ctrl"}, {"shift", "shift"},
		{"alt", "alt"}, {"option", "alt"}, {"meta", "super"}, {"cmd", "super"},
		{"command", "super"}, {"super", "super"}, {"win", "super"}, {"capslock", "Caps_Lock"},
	};

	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++) {
		if (strcasecmp(k, alias[i][0]) == 0)
			return alias[i][1];
	}
	if (k[0] == 'f' || k[0] == 'F') { /* f1..f24 -> F1..F24 */
		char *end = NULL;
		long n = strtol(k + 1, &end, 10);

		if (end != k + 1 && *end == '\0' && n >= 1 && n <= 24) {
			static const char *const fkeys[] = {"F1",  "F2",  "F3",  "F4",  "F5",  "F6",
							    "F7",  "F8",  "F9",  "F10", "F11", "F12",
							    "F13", "F14", "F15", "F16", "F17", "F18",
							    "F19", "F20", "F21", "F22", "F23", "F24"};
			return fkeys[n - 1];
		}
	}
	return k;
}

/* ---- one action ---- */

static bool input_action(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	char a[4][24], combo[512] = "";
	const char *argv[16];
	size_t argc = 0, used = 0;
	desk_out o;
	bool ok;
	const char *stdin_text = NULL;

	argv[argc++] = "xdotool";
	switch (q->act) {
	case MC_MOUSE_MOVE:
	case MC_MOUSE_CLICK:
		if (q->act == MC_MOUSE_MOVE || q->has_xy) {
			snprintf(a[0], sizeof(a[0]), "%d", q->x);
			snprintf(a[1], sizeof(a[1]), "%d", q->y);
			argv[argc++] = "mousemove", argv[argc++] = a[0], argv[argc++] = a[1];
		}
		if (q->act == MC_MOUSE_CLICK) {
			snprintf(a[2], sizeof(a[2]), "%d", q->count);
			snprintf(a[3], sizeof(a[3]), "%d", q->button);
			argv[argc++] = "click", argv[argc++] = "--repeat", argv[argc++] = a[2];
			argv[argc++] = a[3];
		}
		break;
	case MC_MOUSE_DOWN:
	case MC_MOUSE_UP:
		snprintf(a[0], sizeof(a[0]), "%d", q->button);
		argv[argc++] = q->act == MC_MOUSE_DOWN ? "mousedown" : "mouseup", argv[argc++] = a[0];
		break;
	case MC_MOUSE_DRAG:
		snprintf(a[0], sizeof(a[0]), "%d", q->x);
		snprintf(a[1], sizeof(a[1]), "%d", q->y);
		snprintf(a[2], sizeof(a[2]), "%d", q->x2);
		snprintf(a[3], sizeof(a[3]), "%d", q->y2);
		argv[argc++] = "mousemove", argv[argc++] = a[0], argv[argc++] = a[1];
		argv[argc++] = "mousedown", argv[argc++] = "1";
		argv[argc++] = "mousemove", argv[argc++] = a[2], argv[argc++] = a[3];
		argv[argc++] = "mouseup", argv[argc++] = "1";
		break;
	case MC_MOUSE_SCROLL:
		snprintf(a[0], sizeof(a[0]), "%d", q->amount);
		argv[argc++] = "click", argv[argc++] = "--repeat", argv[argc++] = a[0];
		argv[argc++] = q->scroll_up ? "4" : "5";
		break;
	case MC_KEY_TYPE:
		/* the text on stdin: no argument length limit, no option parsing */
		snprintf(a[0], sizeof(a[0]), "%d", q->delay_ms);
		argv[argc++] = "type";
		if (q->delay_ms > 0)
			argv[argc++] = "--delay", argv[argc++] = a[0];
		argv[argc++] = "--file", argv[argc++] = "-";
		stdin_text = q->text;
		break;
	default: /* MC_KEY_PRESS, MC_KEY_DOWN, MC_KEY_UP: one combination */
		for (size_t i = 0; i < q->nkeys; i++)
			used += (size_t)snprintf(combo + used, sizeof(combo) - used, "%s%s", i ? "+" : "",
						 key_name(q->keys[i]));
		argv[argc++] = q->act == MC_KEY_PRESS ? "key" : q->act == MC_KEY_DOWN ? "keydown" : "keyup";
		argv[argc++] = "--", argv[argc++] = combo;
		break;
	}
	desk_out_init(&o);
	ok = desk_do(op, g, q->screen, argv, argc, stdin_text, &o);
	desk_out_free(&o);
	return ok;
}

static cJSON *cursor_get(mock_op *op, mock_guest *g, int screen)
{
	const char *argv[] = {"xdotool", "getmouselocation"};
	desk_out o;
	cJSON *v = NULL;
	int x, y;

	desk_out_init(&o);
	if (desk_do(op, g, screen, argv, 2, NULL, &o)) {
		if (sscanf(sbx_strbuf_str(&o.out), "x:%d y:%d", &x, &y) == 2) {
			v = cJSON_CreateObject();
			cJSON_AddNumberToObject(v, "x", x);
			cJSON_AddNumberToObject(v, "y", y);
		} else {
			mock_err_set(&op->err, 500, "DESKTOP_ERROR", "error", "xdotool getmouselocation said \"%.80s\"",
				     sbx_strbuf_str(&o.out));
		}
	}
	desk_out_free(&o);
	return v;
}

static cJSON *clipboard(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	/* xclip serves a selection it owns from a process that stays; its
	 * output goes nowhere so the exec ends when it has read the text */
	static const char set_sh[] = "exec xclip -selection clipboard -i >/dev/null 2>&1";
	const char *get[] = {"xclip", "-selection", "clipboard", "-o"};
	const char *set[] = {"/bin/sh", "-c", set_sh};
	desk_out o;
	cJSON *v = NULL;
	int rc;

	desk_out_init(&o);
	if (q->act == MC_CLIPBOARD_SET) {
		if (desk_do(op, g, q->screen, set, 3, q->text, &o))
			v = cJSON_CreateObject();
	} else {
		/* an empty clipboard: xclip fails saying so; the text is "" */
		rc = desk_run(op, g, q->screen, get, 4, NULL, &o);
		if (rc >= 0) {
			v = cJSON_CreateObject();
			cJSON_AddStringToObject(v, "text", rc == 0 ? sbx_strbuf_str(&o.out) : "");
		}
	}
	desk_out_free(&o);
	return v;
}

/* Whether s starts with a URL scheme ("https:", "file:", "about:"). */
static bool has_scheme(const char *s)
{
	const char *p = s;

	if (!isalpha((unsigned char)*p))
		return false;
	while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
		p++;
	return *p == ':' && p > s + 1; /* "C:" is no scheme */
}

static bool open_target(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	sbx_strbuf url;
	const char *argv[] = {"/bin/sh", "-c", browser_open_sh, "sh", NULL};
	desk_out o;
	bool ok = false;

	sbx_strbuf_init(&url);
	desk_out_init(&o);
	if (has_scheme(q->target)) {
		sbx_strbuf_puts(&url, q->target);
	} else if (q->target[0] == '/') {
		const char *test[] = {"test", "-e", q->target};

		if (desk_run(op, g, q->screen, test, 3, NULL, &o) != 0) {
			if (op->err.status == 0)
				mock_err_set(&op->err, 404, "NOT_FOUND", "target", "%.200s does not exist in the sandbox",
					     q->target);
			goto out;
		}
		sbx_strbuf_printf(&url, "file://%s", q->target);
	} else {
		mock_err_set(&op->err, 400, "INVALID_REQUEST", "target",
			     "target must be a URL (https://..., file://...) or an absolute path in the sandbox");
		goto out;
	}
	argv[4] = sbx_strbuf_str(&url);
	ok = desk_do(op, g, q->screen, argv, 5, NULL, &o);
out:
	desk_out_free(&o);
	sbx_strbuf_free(&url);
	return ok;
}

static bool launch(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	const char *argv[] = {"/bin/sh", "-c", launch_sh, "sh", q->application, q->uri};
	desk_out o;
	int rc;

	/* the browser by name gets the flags open gives it */
	if (strcmp(q->application, "chromium") == 0 || strcmp(q->application, "browser") == 0) {
		mock_computer_req oq = *q;

		oq.target = q->uri != NULL && q->uri[0] != '\0' ? q->uri : "about:blank";
		return open_target(op, g, &oq);
	}
	desk_out_init(&o);
	rc = desk_run(op, g, q->screen, argv, q->uri != NULL && q->uri[0] != '\0' ? 6 : 5, NULL, &o);
	desk_out_free(&o);
	if (rc == 127)
		mock_err_set(&op->err, 404, "APPLICATION_NOT_FOUND", "application",
			     "no application \"%.100s\" in the sandbox's PATH", q->application);
	else if (rc > 0)
		mock_err_set(&op->err, 500, "DESKTOP_ERROR", "error", "launching %.100s failed (%d)",
			     q->application, rc);
	return rc == 0;
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
	/* the ingress serves plain HTTP on loopback (COMPUTER.md: no TLS yet) */
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
		return cursor_get(op, g, q->screen);
	case MC_CLIPBOARD_GET:
	case MC_CLIPBOARD_SET:
		return clipboard(op, g, q);
	case MC_OPEN:
		return open_target(op, g, q) ? cJSON_CreateObject() : NULL;
	case MC_LAUNCH:
		return launch(op, g, q) ? cJSON_CreateObject() : NULL;
	case MC_WINDOWS:
		return windows_list(op, g, q->screen, q->application);
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
		if (!window_id(op, q->window, &wid))
			return NULL;
		break;
	}
	title = window_title(op, g, q->screen, wid);
	if (title == NULL)
		return NULL;
	if (q->act == MC_WINDOW_CURRENT || q->act == MC_WINDOW_GET)
		v = window_view(wid, title);
	else if (q->act == MC_WINDOW_GEOMETRY)
		v = window_geometry(op, g, q->screen, wid);
	else if (q->act == MC_WINDOW_ACTION)
		v = window_action(op, g, q, wid) ? cJSON_CreateObject() : NULL;
	else if (q->act == MC_WINDOW_CLOSE) {
		char hex[24];
		const char *argv[] = {"wmctrl", "-i", "-c", hex};
		desk_out o;

		snprintf(hex, sizeof(hex), "0x%lx", wid);
		desk_out_init(&o);
		v = desk_do(op, g, q->screen, argv, 4, NULL, &o) ? cJSON_CreateObject() : NULL;
		desk_out_free(&o);
	} else if (input_action(op, g, q)) {
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
		v = screen_wait(op, g, q->screen) && input_action(op, g, q) ? cJSON_CreateObject() : NULL;
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

		if (!window_id(op, q->window, &wid) || (geo = window_geometry(op, g, q->screen, wid)) == NULL)
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

/* ops_computer_internal: what ops_computer.c (screens, screenshots, the
 * dispatch of a computer-use request) and ops_computer_input.c (mouse,
 * keyboard, clipboard, windows, open and launch) and ops_computer_fb.c
 * (the framebuffer, the PNG) share: running a tool in the guest, reading
 * the screen, and the actions each route takes. */
#ifndef SBX_MOCK_OPS_COMPUTER_INTERNAL_H
#define SBX_MOCK_OPS_COMPUTER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "ops/ops.h"
#include "computer/ops_computer.h"
#include "sbx/strbuf.h"

#define DESK_DIR "/tmp/.sbx-desktop"
#define DESK_EXEC_MS 15000 /* one tool's run at most (a type: more, by its text) */
#define DESK_OUT_MAX 65536 /* a tool's output read (the clipboard's: MOCK_COMPUTER_CLIP_MAX) */

/* A tool's run: stdout at most cap bytes (over: more came, and the
 * run is an error, never a cut answer), stderr its first DESK_OUT_MAX. */
typedef struct desk_out {
	sbx_strbuf out, err;
	size_t cap;
	bool over;
	int64_t time_ms; /* the run's limit: DESK_EXEC_MS, a type's more */
} desk_out;

/* ---- running tools in the guest (ops_computer_input.c) ---- */
void desk_out_init(desk_out *o);
/* Runs argv on screen's display in the guest (DESK_EXEC_MS at most; ended
 * at once when the sandbox is destroyed or the mock stops): its exit
 * status, or -1 with op->err set when it could not run, did not finish or
 * wrote more than o->cap. */
int desk_run(mock_op *op, mock_guest *g, int screen, const char *const *argv, size_t argc,
	     const char *stdin_text, desk_out *o);
void desk_out_free(desk_out *o);
/* desk_run that must exit 0: false with op->err set otherwise. */
bool desk_do(mock_op *op, mock_guest *g, int screen, const char *const *argv, size_t argc,
	     const char *stdin_text, desk_out *o);

/* The number (strtol, base) right after key at the start of s ("X=12",
 * key "X="): true with *v, false when s does not start with key or no
 * number follows (a tool's output is read with this, never sscanf: a
 * conversion error must not pass as a value). */
bool desk_num_after(const char *s, const char *key, int base, long *v);

/* ---- screenshots (ops_computer_fb.c) ---- */

/* An open framebuffer, checked: its size is the screen's as the mock
 * started it, its rows inside the file. */
typedef struct xwd_fb {
	int fd;
	uint32_t width, height, bpp, stride, offset;
	uint32_t mask[3]; /* red, green, blue */
	unsigned shift[3];
	bool lsb;         /* pixels little-endian */
} xwd_fb;

/* Opens screen's framebuffer, whose size the mock recorded as w x h:
 * false with op->err (503 while it is not there yet; 500 naming what is
 * wrong with it, a header that disagrees with w x h among them). */
bool desk_fb_open(mock_op *op, mock_guest *g, int screen, uint32_t w, uint32_t h, xwd_fb *fb);
/* The rectangle (x, y, w, h), inside fb, as a PNG (malloc'ed, *len
 * bytes), or NULL with op->err. */
char *desk_fb_png(mock_op *op, const xwd_fb *fb, uint32_t x, uint32_t y, uint32_t w, uint32_t h,
		  size_t *len);

/* ---- the routes' actions (ops_computer_input.c) ---- */
cJSON *desk_window_view(unsigned long id, const char *title);
cJSON *desk_window_geometry(mock_op *op, mock_guest *g, int screen, unsigned long id);
bool desk_open_target(mock_op *op, mock_guest *g, const mock_computer_req *q);
bool desk_input_action(mock_op *op, mock_guest *g, const mock_computer_req *q);
cJSON *desk_cursor_get(mock_op *op, mock_guest *g, int screen);
cJSON *desk_clipboard(mock_op *op, mock_guest *g, const mock_computer_req *q);
bool desk_launch(mock_op *op, mock_guest *g, const mock_computer_req *q);
char *desk_window_title(mock_op *op, mock_guest *g, int screen, unsigned long id);
bool desk_window_action(mock_op *op, mock_guest *g, const mock_computer_req *q, unsigned long id);
bool desk_window_id(mock_op *op, const char *s, unsigned long *id);
cJSON *desk_windows_list(mock_op *op, mock_guest *g, int screen, const char *application);

#endif

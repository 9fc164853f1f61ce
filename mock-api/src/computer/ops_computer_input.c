/* ops_computer_input: running a tool on a screen of the guest (desk_run:
 * one exec, so it is contained like any guest process), and the
 * computer-use routes that act on a screen with one tool each
 * (ops_computer_internal.h): windows (wmctrl, xdotool), keys, mouse and
 * keyboard input (xdotool), the cursor, the clipboard (xclip), opening a
 * URL or file in the desktop's browser and launching a program. */
#define _GNU_SOURCE
#include "computer/ops_computer_internal.h"
#include "ops/ops_internal.h"

#include <ctype.h>
#include <stdatomic.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- running tools in the guest ---- */

/* What desk_run's exec reports to: the output, and the op whose sandbox
 * it watches. */
typedef struct desk_ctx {
	desk_out *o;
	mock_op *op;
} desk_ctx;

#define DESK_TYPE_KEY_MS 12 /* xdotool type's own delay between keys */

static void desk_collect(void *arg, int which, const char *buf, size_t n)
{
	desk_out *o = ((desk_ctx *)arg)->o;

	if (which != 1) {
		/* stderr is only quoted in an error: its start is enough */
		if (o->err.len + n <= DESK_OUT_MAX)
			sbx_strbuf_append(&o->err, buf, n);
		return;
	}
	/* a piece that does not fit ends what is kept: a later, smaller one
	 * appended would make an answer with a hole in it */
	if (o->over || o->out.len + n > o->cap)
		o->over = true;
	else
		sbx_strbuf_append(&o->out, buf, n);
}

/* The tool's abort hook: its sandbox destroyed (its guest lives on while
 * busy, so the tool would run to DESK_EXEC_MS) or the mock stopping. */
static bool desk_gone(void *arg)
{
	mock_op *op = ((desk_ctx *)arg)->op;
	bool gone;

	if (atomic_load(&op->mock->stopping))
		return true;
	pthread_mutex_lock(&op->mock->model->lock);
	gone = op->sb->status == ST_DESTROYING || op->sb->status == ST_DESTROYED || op->sb->tenant == NULL;
	pthread_mutex_unlock(&op->mock->model->lock);
	return gone;
}

int64_t mock_computer_type_ms(const char *text, int delay_ms)
{
	int64_t chars = 0;

	for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++)
		chars += (*p & 0xc0) != 0x80; /* one a UTF-8 character */
	return chars * (delay_ms > 0 ? delay_ms : DESK_TYPE_KEY_MS);
}

/* Runs argv (argv[0] the program) on screen's display with stdin_text;
 * its exit code (-1 with op->err when it could not run, timed out, was
 * stopped, or wrote more than o->cap). */
int desk_run(mock_op *op, mock_guest *g, int screen, const char *const *argv, size_t argc,
	     const char *stdin_text, desk_out *o)
{
	char display[16];
	const char *env[] = {display};
	ops_guest_cmd c = {.spec = {.cmd = argv[0], .args = argv + 1, .nargs = argc - 1, .env = env,
				    .nenv = 1, .cwd = "/root"},
			   .timeout_ms = o->time_ms};
	desk_ctx ctx = {.o = o, .op = op};
	mock_exec_sink sink = {.output = desk_collect, .gone = desk_gone, .ctx = &ctx};
	ops_guest_ran ran;

	snprintf(display, sizeof(display), "DISPLAY=:%d", screen);
	if (stdin_text != NULL) {
		c.spec.stdin_data = stdin_text;
		c.spec.stdin_len = strlen(stdin_text);
	}
	ops_guest_run(g, &c, &sink, &ran);
	if (!ran.started) {
		mock_err_set(&op->err, 500, "", "error", "desktop: %s: %s", argv[0], ran.error);
		return -1;
	}
	/* a tool killed by a destroy counts as aborted too (ops_guest_run):
	 * its death is the sandbox's, not a tool's failure */
	if (ran.aborted) {
		mock_err_set(&op->err, 409, "NOT_RUNNING", "status",
			     "desktop: %s was stopped: the sandbox was destroyed or the mock is stopping", argv[0]);
		return -1;
	}
	if (ran.timed_out) {
		mock_err_set(&op->err, 504, "DESKTOP_TIMEOUT", "error", "desktop: %s did not finish in %" PRId64 " ms",
			     argv[0], c.timeout_ms);
		return -1;
	}
	if (o->over) {
		mock_err_set(&op->err, 500, "DESKTOP_OUTPUT_TOO_LARGE", "error",
			     "desktop: %s wrote more than %zu bytes, the most the mock reads (LIMITS.md)", argv[0],
			     o->cap);
		return -1;
	}
	return ran.exit_code;
}

/* desk_run that must succeed: false with a 500 quoting its stderr. */
bool desk_do(mock_op *op, mock_guest *g, int screen, const char *const *argv, size_t argc,
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

void desk_out_init(desk_out *o)
{
	sbx_strbuf_init(&o->out);
	sbx_strbuf_init(&o->err);
	o->cap = DESK_OUT_MAX;
	o->over = false;
	o->time_ms = DESK_EXEC_MS;
}

void desk_out_free(desk_out *o)
{
	sbx_strbuf_free(&o->out);
	sbx_strbuf_free(&o->err);
}

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

bool desk_num_after(const char *s, const char *key, int base, long *v)
{
	size_t kl = strlen(key);
	char *end = NULL;

	if (strncmp(s, key, kl) != 0)
		return false;
	errno = 0;
	*v = strtol(s + kl, &end, base);
	return errno == 0 && end != s + kl;
}

/* ---- windows ---- */

/* A window id as X numbers it: decimal, or 0x hex; false with a 400. */
bool desk_window_id(mock_op *op, const char *s, unsigned long *id)
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
char *desk_window_title(mock_op *op, mock_guest *g, int screen, unsigned long id)
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

cJSON *desk_window_view(unsigned long id, const char *title)
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
cJSON *desk_windows_list(mock_op *op, mock_guest *g, int screen, const char *application)
{
	const char *argv[] = {"wmctrl", "-l"};
	const char *search[] = {"xdotool", "search", "--class", "--classname", application};
	desk_out o, f;
	cJSON *arr = NULL;
	char *line, *save = NULL;
	bool filter = application != NULL && application[0] != '\0';
	int rc;

	desk_out_init(&o);
	desk_out_init(&f);
	rc = desk_run(op, g, screen, argv, 2, NULL, &o);
	/* wmctrl exits 1 so while the window manager has published no client
	 * list: before its first window, a desktop has none to list */
	if (rc == 1 && strstr(sbx_strbuf_str(&o.err), "Cannot get client list properties") != NULL) {
		arr = cJSON_CreateArray();
		goto out;
	}
	if (rc != 0) {
		if (rc > 0)
			mock_err_set(&op->err, 500, "DESKTOP_ERROR", "error", "desktop: wmctrl exited %d: %.300s", rc,
				     sbx_strbuf_str(&o.err));
		goto out;
	}
	if (filter && desk_run(op, g, screen, search, 5, NULL, &f) < 0)
		goto out;
	arr = cJSON_CreateArray();
	for (line = o.out.len > 0 ? strtok_r(o.out.data, "\n", &save) : NULL; line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		/* wmctrl -l: "0x02400003  0 host Title words" */
		char *p = line, *end = NULL;
		long id, desk;

		if (!desk_num_after(p, "", 16, &id) || id < 0)
			continue;
		p += strcspn(p, " \t");
		p += strspn(p, " \t");
		if (!desk_num_after(p, "", 10, &desk))
			continue;
		(void)strtol(p, &end, 10);
		p = end + strspn(end, " \t");
		p += strcspn(p, " \t"); /* the host */
		p += strspn(p, " \t");
		if (filter && !id_listed(sbx_strbuf_str(&f.out), (unsigned long)id))
			continue;
		cJSON_AddItemToArray(arr, desk_window_view((unsigned long)id, p));
	}
out:
	desk_out_free(&o);
	desk_out_free(&f);
	return arr;
}

/* One "KEY=n" line of xdotool getwindowgeometry --shell, n in [lo, hi]
 * (X's coordinates are 16 bits signed, its sizes 16 bits unsigned): the
 * tool is the guest's, so its word is range-checked like a request's. */
static bool geometry_field(const char *line, const char *key, long lo, long hi, long *v, bool *seen)
{
	long n;

	if (!desk_num_after(line, key, 10, &n))
		return false;
	*seen = n >= lo && n <= hi;
	if (*seen)
		*v = n;
	return true;
}

cJSON *desk_window_geometry(mock_op *op, mock_guest *g, int screen, unsigned long id)
{
	char ids[24];
	const char *argv[] = {"xdotool", "getwindowgeometry", "--shell", ids};
	static const char *const keys[] = {"X=", "Y=", "WIDTH=", "HEIGHT=", "SCREEN="};
	static const long lo[] = {-32768, -32768, 0, 0, 0}, hi[] = {32767, 32767, 65535, 65535, 255};
	long v[5] = {0};
	bool seen[5] = {false};
	desk_out o;
	cJSON *res = NULL;
	char *line, *save = NULL;

	snprintf(ids, sizeof(ids), "%lu", id);
	desk_out_init(&o);
	if (!desk_do(op, g, screen, argv, 4, NULL, &o))
		goto out;
	for (line = o.out.len > 0 ? strtok_r(o.out.data, "\n", &save) : NULL; line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		for (size_t k = 0; k < 5 && !geometry_field(line, keys[k], lo[k], hi[k], &v[k], &seen[k]); k++)
			;
	}
	if (!seen[0] || !seen[1] || !seen[2] || !seen[3]) {
		mock_err_set(&op->err, 500, "DESKTOP_ERROR", "error",
			     "xdotool getwindowgeometry %lu gave no X, Y, WIDTH and HEIGHT in X's ranges", id);
		goto out;
	}
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "id", ids);
	cJSON_AddNumberToObject(res, "x", (double)v[0]);
	cJSON_AddNumberToObject(res, "y", (double)v[1]);
	cJSON_AddNumberToObject(res, "width", (double)v[2]);
	cJSON_AddNumberToObject(res, "height", (double)v[3]);
	/* the X screen of the display: each sandbox screen is a display */
	cJSON_AddNumberToObject(res, "screen", (double)v[4]);
out:
	desk_out_free(&o);
	return res;
}

/* POST windows/{id}/{action}: xdotool or wmctrl for it. */
bool desk_window_action(mock_op *op, mock_guest *g, const mock_computer_req *q, unsigned long id)
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

bool desk_input_action(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	char a[4][24];
	const char *argv[16];
	size_t argc = 0;
	sbx_strbuf combo;
	desk_out o;
	bool ok;
	const char *stdin_text = NULL;
	int64_t type_ms = 0;

	sbx_strbuf_init(&combo);
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
		/* typing takes its text's time (the handler bounds it) */
		type_ms = mock_computer_type_ms(q->text, q->delay_ms);
		break;
	default: /* MC_KEY_PRESS, MC_KEY_DOWN, MC_KEY_UP: one combination */
		/* as long as its keys need: a fixed buffer cut the last one of
		 * 16 long names short, and xdotool pressed another key */
		for (size_t i = 0; i < q->nkeys; i++)
			sbx_strbuf_printf(&combo, "%s%s", i ? "+" : "", key_name(q->keys[i]));
		argv[argc++] = q->act == MC_KEY_PRESS ? "key" : q->act == MC_KEY_DOWN ? "keydown" : "keyup";
		argv[argc++] = "--", argv[argc++] = sbx_strbuf_str(&combo);
		break;
	}
	desk_out_init(&o);
	o.time_ms += type_ms;
	ok = desk_do(op, g, q->screen, argv, argc, stdin_text, &o);
	desk_out_free(&o);
	sbx_strbuf_free(&combo);
	return ok;
}

cJSON *desk_cursor_get(mock_op *op, mock_guest *g, int screen)
{
	const char *argv[] = {"xdotool", "getmouselocation"};
	desk_out o;
	cJSON *v = NULL;
	const char *out, *ys;
	long x, y;

	desk_out_init(&o);
	if (desk_do(op, g, screen, argv, 2, NULL, &o)) {
		/* "x:12 y:34 screen:0 window:...": */
		out = sbx_strbuf_str(&o.out);
		ys = strstr(out, " y:");
		if (desk_num_after(out, "x:", 10, &x) && ys != NULL && desk_num_after(ys, " y:", 10, &y)) {
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

cJSON *desk_clipboard(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	/* xclip serves a selection it owns from a process that stays; its
	 * output goes nowhere so the exec ends when it has read the text. That
	 * process may not own the selection yet when the first one exits: the
	 * set ends once the clipboard answers (2 s at most), so a get that
	 * follows reads what was set, not "" (CI saw it) */
	static const char set_sh[] =
		"xclip -selection clipboard -i >/dev/null 2>&1 || exit $?; i=0; while [ $i -lt 200 ]; do "
		"xclip -selection clipboard -o -t TARGETS >/dev/null 2>&1 && exit 0; sleep 0.01; i=$((i+1)); "
		"done; echo 'the clipboard was not served within 2 s' >&2; exit 1";
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
		o.cap = MOCK_COMPUTER_CLIP_MAX;
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

/* The file: URL of absolute path (RFC 8089): each byte but RFC 3986's
 * unreserved ones and '/' percent-encoded, so that a name holding '%',
 * '#' or '?' (or a space, or UTF-8) names that file, not another (left
 * as is, "/w/p%41#x" is the file /w/pA, the rest a fragment). */
static void file_url(sbx_strbuf *url, const char *path)
{
	static const char hex[] = "0123456789ABCDEF";

	sbx_strbuf_puts(url, "file://");
	for (const unsigned char *p = (const unsigned char *)path; *p != '\0'; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9') || strchr("-._~/", *p) != NULL;

		if (plain) {
			sbx_strbuf_append(url, p, 1);
		} else {
			char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};

			sbx_strbuf_append(url, esc, 3);
		}
	}
}

bool desk_open_target(mock_op *op, mock_guest *g, const mock_computer_req *q)
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
		file_url(&url, q->target);
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

bool desk_launch(mock_op *op, mock_guest *g, const mock_computer_req *q)
{
	const char *argv[] = {"/bin/sh", "-c", launch_sh, "sh", q->application, q->uri};
	desk_out o;
	int rc;

	/* the browser by name gets the flags open gives it */
	if (strcmp(q->application, "chromium") == 0 || strcmp(q->application, "browser") == 0) {
		mock_computer_req oq = *q;

		oq.target = q->uri != NULL && q->uri[0] != '\0' ? q->uri : "about:blank";
		return desk_open_target(op, g, &oq);
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

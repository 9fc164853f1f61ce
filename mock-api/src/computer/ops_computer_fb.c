/* ops_computer_fb: a screenshot of a desktop's screen (ops_computer.c):
 * its X server's framebuffer, an XWD file Xvfb keeps mapped in the cell's
 * /tmp, read through the files API's confined open and encoded as PNG.
 *
 * The file is the guest's: root in the sandbox can rewrite its header or
 * make it a sparse file of any size. So its geometry is checked against
 * the size the mock started the screen at (never taken from the file),
 * every offset against the file's size, and the PNG is streamed row by
 * row through deflate: the working memory of one screenshot is a few
 * rows, one IDAT chunk and deflate's state, whatever the file says. */
#define _GNU_SOURCE
#include "computer/ops_computer_internal.h"
#include "ops/ops_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define XWD_HEADER_FIELDS 25

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* XWD header fields (X11/XWDFile.h), 32-bit big-endian each */
enum {
	XWD_HEADER_SIZE = 0, XWD_VERSION = 1, XWD_FORMAT = 2, XWD_WIDTH = 4, XWD_HEIGHT = 5,
	XWD_BYTE_ORDER = 7, XWD_BPP = 11, XWD_STRIDE = 12, XWD_CLASS = 13, XWD_RED_MASK = 14,
	XWD_NCOLORS = 19,
};
#define XWD_HEADER_MAX 4096  /* the header and the window name after it (Xvfb's: ~110 bytes) */
#define XWD_COLORS_MAX 65536 /* colormap entries, 12 bytes each */

/* Why screen's framebuffer cannot be read: a 500 naming the field. The
 * file is the guest's (root there can rewrite it), so this is the answer
 * to a forged or broken one, never a crash or a huge allocation. */
static bool fb_bad(mock_op *op, int screen, const char *what)
{
	mock_err_set(&op->err, 500, "DESKTOP_ERROR", "error",
		     "screen-%d's framebuffer (" DESK_DIR "/%d/Xvfb_screen0) %s", screen, screen, what);
	return false;
}

/* Checks the header f against the screen's size as the mock started it
 * (w x h) and the file's size: false with op->err. Every product is
 * 64-bit: each factor is at most 32 bits. */
static bool fb_check(mock_op *op, int screen, const uint32_t *f, uint32_t w, uint32_t h, uint64_t fsize)
{
	char msg[200];
	uint64_t row, end;

	if (f[XWD_VERSION] != 7 || f[XWD_FORMAT] != 2 || f[XWD_CLASS] != 4 ||
	    (f[XWD_BPP] != 32 && f[XWD_BPP] != 24))
		return fb_bad(op, screen, "is not a 24/32-bit TrueColor XWD image (version 7, ZPixmap)");
	if (f[XWD_WIDTH] != w || f[XWD_HEIGHT] != h) {
		snprintf(msg, sizeof(msg), "says %" PRIu32 "x%" PRIu32 ", but the mock started the screen at "
			 "%" PRIu32 "x%" PRIu32 ": it was rewritten in the sandbox", f[XWD_WIDTH], f[XWD_HEIGHT], w, h);
		return fb_bad(op, screen, msg);
	}
	if (f[XWD_HEADER_SIZE] < XWD_HEADER_FIELDS * 4 || f[XWD_HEADER_SIZE] > XWD_HEADER_MAX) {
		snprintf(msg, sizeof(msg), "has a header size (header_size) of %" PRIu32 " bytes, outside "
			 "%d..%d", f[XWD_HEADER_SIZE], XWD_HEADER_FIELDS * 4, XWD_HEADER_MAX);
		return fb_bad(op, screen, msg);
	}
	if (f[XWD_NCOLORS] > XWD_COLORS_MAX) {
		snprintf(msg, sizeof(msg), "has %" PRIu32 " colormap entries (ncolors), over %d",
			 f[XWD_NCOLORS], XWD_COLORS_MAX);
		return fb_bad(op, screen, msg);
	}
	row = (uint64_t)w * (f[XWD_BPP] / 8);
	/* a row is padded to at most 64 bits (XWD's bitmap_pad) */
	if (f[XWD_STRIDE] < row || f[XWD_STRIDE] > row + 8) {
		snprintf(msg, sizeof(msg), "has a row length (bytes_per_line) of %" PRIu32 " bytes where "
			 "its width needs %" PRIu64 "..%" PRIu64, f[XWD_STRIDE], row, row + 8);
		return fb_bad(op, screen, msg);
	}
	end = f[XWD_HEADER_SIZE] + (uint64_t)f[XWD_NCOLORS] * 12 + (uint64_t)f[XWD_STRIDE] * h;
	if (end > fsize) {
		snprintf(msg, sizeof(msg), "is %" PRIu64 " bytes, shorter than its header says (%" PRIu64 ")",
			 fsize, end);
		return fb_bad(op, screen, msg);
	}
	return true;
}

/* Opens screen's framebuffer, the mock's record of it w x h: false with
 * op->err (a 503 while it is not there yet, a 500 naming what is wrong
 * with it: only 24/32-bit true colour of the recorded size is read). */
bool desk_fb_open(mock_op *op, mock_guest *g, int screen, uint32_t w, uint32_t h, xwd_fb *fb)
{
	unsigned char hb[XWD_HEADER_FIELDS * 4];
	uint32_t f[XWD_HEADER_FIELDS];
	char path[96];
	int status = 0;
	sbx_err err = {{0}};
	struct stat st;

	snprintf(path, sizeof(path), DESK_DIR "/%d/Xvfb_screen0", screen);
	fb->fd = mock_guest_open(g, path, false, &status, &err);
	if (fb->fd < 0) {
		mock_err_set(&op->err, 503, "DESKTOP_STARTING", "screen_id", "screen-%d has no framebuffer yet: %s",
			     screen, err.msg);
		return false;
	}
	if (fstat(fb->fd, &st) != 0 || pread(fb->fd, hb, sizeof(hb), 0) != (ssize_t)sizeof(hb)) {
		fb_bad(op, screen, "has no complete XWD header");
		goto bad;
	}
	for (int i = 0; i < XWD_HEADER_FIELDS; i++)
		f[i] = be32(hb + 4 * i);
	if (!fb_check(op, screen, f, w, h, (uint64_t)st.st_size))
		goto bad;
	fb->width = w;
	fb->height = h;
	fb->lsb = f[XWD_BYTE_ORDER] == 0;
	fb->bpp = f[XWD_BPP] / 8;
	fb->stride = f[XWD_STRIDE];
	fb->offset = f[XWD_HEADER_SIZE] + f[XWD_NCOLORS] * 12;
	for (int c = 0; c < 3; c++) {
		fb->mask[c] = f[XWD_RED_MASK + c];
		if (fb->mask[c] == 0) {
			fb_bad(op, screen, "has a colour mask of 0");
			goto bad;
		}
		fb->shift[c] = (unsigned)__builtin_ctz(fb->mask[c]);
	}
	return true;
bad:
	close(fb->fd);
	fb->fd = -1;
	return false;
}

/* ---- PNG, streamed ---- */

#define PNG_IDAT_MAX 65536 /* deflate's output between two IDAT chunks */

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

/* One image row of fb (w pixels from x, y) as a PNG row: filter byte 0
 * (none), then RGB. false when the file ended under it. */
static bool fb_row(const xwd_fb *fb, uint32_t x, uint32_t y, uint32_t w, unsigned char *px_row,
		   unsigned char *dst)
{
	off_t at = (off_t)fb->offset + (off_t)y * fb->stride + (off_t)x * fb->bpp;
	size_t n = (size_t)w * fb->bpp;

	if (pread(fb->fd, px_row, n, at) != (ssize_t)n)
		return false;
	*dst++ = 0;
	for (uint32_t i = 0; i < w; i++) {
		const unsigned char *s = px_row + (size_t)i * fb->bpp;
		uint32_t px = fb->lsb ? (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 |
						(fb->bpp == 4 ? (uint32_t)s[3] << 24 : 0)
				      : fb->bpp == 4 ? be32(s)
						     : (uint32_t)s[0] << 16 | (uint32_t)s[1] << 8 | s[2];

		for (int c = 0; c < 3; c++)
			*dst++ = (unsigned char)((px & fb->mask[c]) >> fb->shift[c]);
	}
	return true;
}

/* Runs deflate on what z holds with flush into zbuf (z's output space),
 * each full PNG_IDAT_MAX of it, and the rest at Z_FINISH, an IDAT chunk in
 * b: false on a zlib error or no memory. */
static bool png_deflate(z_stream *z, int flush, unsigned char *zbuf, sbx_strbuf *b)
{
	for (;;) {
		int rc = deflate(z, flush);
		bool full = z->avail_out == 0, done = flush == Z_FINISH && rc == Z_STREAM_END;

		/* Z_BUF_ERROR: no progress possible, fine unless finishing */
		if (rc == Z_STREAM_ERROR || (rc == Z_BUF_ERROR && flush == Z_FINISH && !full))
			return false;
		if (full || done) {
			if (z->avail_out < PNG_IDAT_MAX && !png_chunk(b, "IDAT", zbuf, PNG_IDAT_MAX - z->avail_out))
				return false;
			z->next_out = zbuf;
			z->avail_out = PNG_IDAT_MAX;
		}
		if (done || (!full && flush != Z_FINISH))
			return true;
	}
}

/* The rectangle (x, y, w, h) of fb as an 8-bit RGB PNG: malloc'ed, or
 * NULL with op->err. Streamed: one row of the file and of the image at a
 * time goes through deflate into the answer, so beside the answer itself
 * the working memory is two rows, PNG_IDAT_MAX and deflate's state
 * (LIMITS.md). Level 1: speed over size, a desktop compresses well. */
char *desk_fb_png(mock_op *op, const xwd_fb *fb, uint32_t x, uint32_t y, uint32_t w, uint32_t h,
		  size_t *len)
{
	static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	unsigned char ihdr[13] = {[8] = 8, [9] = 2}; /* 8 bits, RGB, deflate, no interlace */
	unsigned char *px_row = malloc((size_t)w * fb->bpp), *row = malloc((size_t)w * 3 + 1);
	unsigned char *zbuf = malloc(PNG_IDAT_MAX);
	z_stream z = {0};
	bool zok = deflateInit(&z, 1) == Z_OK, ok = zok && px_row != NULL && row != NULL && zbuf != NULL;
	sbx_strbuf b;
	char *png = NULL;

	sbx_strbuf_init(&b);
	put32(ihdr, w);
	put32(ihdr + 4, h);
	ok = ok && sbx_strbuf_append(&b, sig, 8) && png_chunk(&b, "IHDR", ihdr, 13);
	z.next_out = zbuf;
	z.avail_out = PNG_IDAT_MAX;
	for (uint32_t r = 0; ok && r < h; r++) {
		if (!fb_row(fb, x, y + r, w, px_row, row)) {
			mock_err_set(&op->err, 503, "DESKTOP_STARTING", "screen_id",
				     "the framebuffer changed while it was read (the screen restarted)");
			goto out;
		}
		z.next_in = row;
		z.avail_in = w * 3 + 1;
		ok = png_deflate(&z, Z_NO_FLUSH, zbuf, &b);
	}
	ok = ok && png_deflate(&z, Z_FINISH, zbuf, &b) && png_chunk(&b, "IEND", NULL, 0);
	if (ok)
		png = sbx_strbuf_detach(&b, len);
	else
		mock_err_set(&op->err, 500, "", "error", "PNG: out of memory or a deflate error");
out:
	if (zok)
		deflateEnd(&z);
	sbx_strbuf_free(&b);
	free(px_row);
	free(row);
	free(zbuf);
	return png;
}

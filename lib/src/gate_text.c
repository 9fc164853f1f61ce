/* gate_text: UTF-8, white space and repr helpers for the gate modules; see
 * gate_internal.h. Pure functions: no global state, no I/O. */
#include "gate_internal.h"

#include <stdlib.h>
#include <string.h>

static int utf8_len(unsigned char b, int32_t *cp)
{
	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	if (b >= 0xc2 && b <= 0xdf) {
		*cp = b & 0x1f;
		return 2;
	}
	if (b >= 0xe0 && b <= 0xef) {
		*cp = b & 0x0f;
		return 3;
	}
	if (b >= 0xf0 && b <= 0xf4) {
		*cp = b & 0x07;
		return 4;
	}
	return 0;
}

int32_t sbx_gate_utf8_next(const char *s, size_t len, size_t *i)
{
	const unsigned char *u = (const unsigned char *)s;
	int32_t cp;
	int n = utf8_len(u[*i], &cp);
	if (n == 0 || *i + (size_t)n > len) {
		(*i)++;
		return -1;
	}
	for (int k = 1; k < n; k++) {
		unsigned char c = u[*i + (size_t)k];
		if ((c & 0xc0) != 0x80) {
			(*i)++;
			return -1;
		}
		cp = (cp << 6) | (c & 0x3f);
	}
	bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
	if (overlong || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
		(*i)++;
		return -1;
	}
	*i += (size_t)n;
	return cp;
}

bool sbx_gate_rust_isspace(int32_t cp)
{
	if (cp >= 0x09 && cp <= 0x0d)
		return true;
	switch (cp) {
	case 0x20: case 0x85: case 0xa0: case 0x1680:
	case 0x2028: case 0x2029: case 0x202f: case 0x205f: case 0x3000:
		return true;
	default:
		return cp >= 0x2000 && cp <= 0x200a;
	}
}

bool sbx_gate_py_isspace(int32_t cp)
{
	/* Python also counts the ASCII information separators as space. */
	if (cp >= 0x1c && cp <= 0x1f)
		return true;
	return sbx_gate_rust_isspace(cp);
}

static bool is_space(int32_t cp, bool python)
{
	if (cp < 0)
		return false;
	return python ? sbx_gate_py_isspace(cp) : sbx_gate_rust_isspace(cp);
}

void sbx_gate_trim(const char *s, size_t len, bool python, size_t *start, size_t *end)
{
	size_t i = 0;
	size_t kept_start = len;
	size_t kept_end = 0;
	while (i < len) {
		size_t at = i;
		int32_t cp = sbx_gate_utf8_next(s, len, &i);
		if (!is_space(cp, python)) {
			if (kept_start == len)
				kept_start = at;
			kept_end = i;
		}
	}
	if (kept_start == len) {
		*start = 0;
		*end = 0;
		return;
	}
	*start = kept_start;
	*end = kept_end;
}

bool sbx_gate_utf8_valid(const char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		if (sbx_gate_utf8_next(s, len, &i) < 0)
			return false;
	}
	return true;
}

/* Python's str.isprintable() is false for Cc, Cf, Co, Cs, Cn, Zl, Zp and Zs
 * other than space. Without the Unicode database we escape the code points
 * of those classes that plausibly reach an environment variable: C0/C1
 * controls, the Z* spaces, and the common format characters. Unassigned
 * code points are printed as they are (documented in lib/GATE.md). */
static bool py_nonprintable(int32_t cp)
{
	if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0))
		return true;
	if (cp == 0xad || cp == 0x1680 || cp == 0x180e || cp == 0x3000 || cp == 0xfeff)
		return true;
	if (cp >= 0x2000 && cp <= 0x200f)
		return true;
	if (cp >= 0x2028 && cp <= 0x202f)
		return true;
	if (cp >= 0x205f && cp <= 0x206f)
		return true;
	if (cp >= 0xfff9 && cp <= 0xfffb)
		return true;
	if (cp >= 0xe000 && cp <= 0xf8ff)
		return true; /* private use (Co) */
	return false;
}

static void repr_cp(sbx_strbuf *out, int32_t cp, char quote)
{
	static const char hex[] = "0123456789abcdef";
	char buf[12];
	if (cp == '\\' || cp == quote) {
		buf[0] = '\\';
		buf[1] = (char)cp;
		sbx_strbuf_append(out, buf, 2);
	} else if (cp == '\n') {
		sbx_strbuf_puts(out, "\\n");
	} else if (cp == '\r') {
		sbx_strbuf_puts(out, "\\r");
	} else if (cp == '\t') {
		sbx_strbuf_puts(out, "\\t");
	} else if (cp < 0x80 && !py_nonprintable(cp)) {
		buf[0] = (char)cp;
		sbx_strbuf_append(out, buf, 1);
	} else if (py_nonprintable(cp) && cp <= 0xff) {
		sbx_strbuf_printf(out, "\\x%c%c", hex[(cp >> 4) & 0xf], hex[cp & 0xf]);
	} else if (py_nonprintable(cp)) {
		sbx_strbuf_printf(out, "\\u%04x", (unsigned)cp);
	} else {
		/* Printable non-ASCII: emitted as UTF-8, as Python does. */
		unsigned char u[4];
		size_t n;
		if (cp < 0x800) {
			u[0] = (unsigned char)(0xc0 | (cp >> 6));
			u[1] = (unsigned char)(0x80 | (cp & 0x3f));
			n = 2;
		} else if (cp < 0x10000) {
			u[0] = (unsigned char)(0xe0 | (cp >> 12));
			u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
			u[2] = (unsigned char)(0x80 | (cp & 0x3f));
			n = 3;
		} else {
			u[0] = (unsigned char)(0xf0 | (cp >> 18));
			u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
			u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
			u[3] = (unsigned char)(0x80 | (cp & 0x3f));
			n = 4;
		}
		sbx_strbuf_append(out, u, n);
	}
}

static void repr_full(sbx_strbuf *out, const char *s, size_t len)
{
	bool has_single = memchr(s, '\'', len) != NULL;
	bool has_double = memchr(s, '"', len) != NULL;
	char quote = (has_single && !has_double) ? '"' : '\'';
	sbx_strbuf_append(out, &quote, 1);
	size_t i = 0;
	while (i < len) {
		size_t at = i;
		int32_t cp = sbx_gate_utf8_next(s, len, &i);
		if (cp < 0) /* os.environ's surrogateescape */
			sbx_strbuf_printf(out, "\\udc%02x", (unsigned)(unsigned char)s[at]);
		else
			repr_cp(out, cp, quote);
	}
	sbx_strbuf_append(out, &quote, 1);
}

/* Byte offset of code point number `k` in a valid UTF-8 string. */
static size_t cp_offset(const char *s, size_t len, size_t k)
{
	size_t i = 0;
	while (k > 0 && i < len) {
		sbx_gate_utf8_next(s, len, &i);
		k--;
	}
	return i;
}

void sbx_gate_py_repr(sbx_strbuf *out, const char *s, size_t len, bool truncate)
{
	sbx_strbuf full = SBX_STRBUF_INIT;
	repr_full(&full, s, len);
	if (full.oom) {
		out->oom = true;
		goto out_free_full;
	}
	const char *r = sbx_strbuf_str(&full);
	size_t cps = 0;
	for (size_t i = 0; i < full.len; i++) {
		if (((unsigned char)r[i] & 0xc0) != 0x80)
			cps++;
	}
	if (!truncate || cps <= 50) {
		sbx_strbuf_append(out, r, full.len);
		goto out_free_full;
	}
	size_t head = cp_offset(r, full.len, 25);
	size_t tail = cp_offset(r, full.len, cps - 24);
	sbx_strbuf_append(out, r, head);
	sbx_strbuf_puts(out, "...");
	sbx_strbuf_append(out, r + tail, full.len - tail);
out_free_full:
	sbx_strbuf_free(&full);
}

char *sbx_gate_dup_range(const char *s, size_t start, size_t end, bool lower)
{
	size_t n = end - start;
	char *copy = malloc(n + 1);
	if (copy == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char c = s[start + i];
		if (lower && c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		copy[i] = c;
	}
	copy[n] = '\0';
	return copy;
}

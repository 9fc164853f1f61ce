/* json_print: JSON text without cJSON's printer (see json_print.h). Must
 * stay byte for byte what cJSON_PrintUnformatted prints: clients and tests
 * compare bodies, and record mode replays them. */
#include "util/json_print.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- escaping arbitrary bytes ---- */

static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t need;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		need = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		need = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		need = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((need == 2 && cp < 0x80) || (need == 3 && cp < 0x800) || (need == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need;
}

bool mock_utf8_valid(const char *s, size_t len, size_t *bad_off)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = p[i] < 0x80 ? 1 : utf8_len(p + i, len - i);

		if (n == 0) {
			if (bad_off != NULL)
				*bad_off = i;
			return false;
		}
		i += n;
	}
	return true;
}

static bool utf8_incomplete(const unsigned char *s, size_t n)
{
	size_t need;

	if (n == 0)
		return false;
	need = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (need == 0 || n >= need)
		return false;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return false;
	}
	return true;
}

bool mock_utf8_incomplete(const char *s, size_t n)
{
	return utf8_incomplete((const unsigned char *)s, n);
}

/* The escape of the one unit at p (a quote, backslash, control byte or
 * UTF-8 sequence; *n its length in bytes, 0 when it is incomplete and
 * more follows) into esc; returns the escape's length. */
static size_t escape_unit(const unsigned char *p, size_t len, bool more, size_t *n, char esc[8])
{
	unsigned char c = p[0];

	*n = 1;
	if (c == '"' || c == '\\') {
		esc[0] = '\\';
		esc[1] = (char)c;
		return 2;
	}
	if (c == '\n' || c == '\r' || c == '\t') {
		esc[0] = '\\';
		esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
		return 2;
	}
	if (c < 0x20) {
		static const char hex[] = "0123456789abcdef";

		memcpy(esc, "\\u00", 5); /* with its NUL; 4 and 5 come next */
		esc[4] = hex[c >> 4];
		esc[5] = hex[c & 15];
		return 6;
	}
	*n = utf8_len(p, len);
	if (*n > 0) {
		memcpy(esc, p, *n);
		return *n;
	}
	if (more && utf8_incomplete(p, len))
		return 0; /* *n = 0: wait for the rest */
	*n = 1;
	memcpy(esc, "\\ufffd", 7); /* with its NUL */
	return 6;
}

size_t json_escape_some(sbx_strbuf *sb, const char *s, size_t len, size_t limit, bool more)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len && sb->len < limit) {
		size_t run = i, n;
		char esc[8];
		size_t elen;

		/* copy a run of plain bytes at once */
		while (run < len && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' && p[run] != '\\')
			run++;
		if (run > i) {
			size_t take = run - i < limit - sb->len ? run - i : limit - sb->len;

			sbx_strbuf_append(sb, s + i, take);
			i += take;
			continue;
		}
		elen = escape_unit(p + i, len - i, more, &n, esc);
		if (n == 0 || elen > limit - sb->len)
			break;
		sbx_strbuf_append(sb, esc, elen);
		i += n;
	}
	return i;
}

void json_escape(sbx_strbuf *sb, const char *s, size_t len)
{
	sbx_strbuf_append(sb, "\"", 1);
	json_escape_some(sb, s, len, SIZE_MAX, false);
	sbx_strbuf_append(sb, "\"", 1);
}

/* ---- fast printing of cJSON trees ----
 * Byte for byte what cJSON_PrintUnformatted (cJSON 1.7.15) prints, without
 * its sprintf+sscanf round trip per number (a third of the answer time of a
 * GET). Returns false where cJSON would fail (the caller then asks cJSON). */

static void json_print_str(sbx_strbuf *sb, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
	const unsigned char *run = p;

	sbx_strbuf_append(sb, "\"", 1);
	for (;; p++) {
		const char *esc = NULL;
		char u[8];

		if (*p >= 0x80) {
			/* a stored string may hold bytes that are not UTF-8 (a
			 * file name, a path segment): the answer must stay valid
			 * UTF-8 JSON, so each bad byte becomes U+FFFD; valid
			 * sequences are copied as cJSON copies them */
			size_t avail = 1, n;

			while (avail < 4 && p[avail] != '\0')
				avail++;
			n = utf8_len(p, avail);

			if (n > 0) {
				p += n - 1;
				continue;
			}
			if (p > run)
				sbx_strbuf_append(sb, (const char *)run, (size_t)(p - run));
			run = p + 1;
			sbx_strbuf_append(sb, "\\ufffd", 6);
			continue;
		}
		if (*p >= 32 && *p != '"' && *p != '\\')
			continue;
		if (p > run)
			sbx_strbuf_append(sb, (const char *)run, (size_t)(p - run));
		run = p + 1;
		switch (*p) {
		case '\0':
			sbx_strbuf_append(sb, "\"", 1);
			return;
		case '"':
			esc = "\\\"";
			break;
		case '\\':
			esc = "\\\\";
			break;
		case '\b':
			esc = "\\b";
			break;
		case '\f':
			esc = "\\f";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		case '\t':
			esc = "\\t";
			break;
		default:
			snprintf(u, sizeof(u), "\\u%04x", *p);
			esc = u;
			break;
		}
		sbx_strbuf_puts(sb, esc);
	}
}

static void json_print_int(sbx_strbuf *sb, long long v)
{
	char buf[24];
	size_t i = sizeof(buf);
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do {
		buf[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		buf[--i] = '-';
	sbx_strbuf_append(sb, buf + i, sizeof(buf) - i);
}

static void json_print_num(sbx_strbuf *sb, const cJSON *item)
{
	double d = item->valuedouble, back, max;
	char buf[32];

	if (isnan(d) || isinf(d)) {
		sbx_strbuf_puts(sb, "null");
	} else if (fabs(d) < 1e15 && d == floor(d) && !(d == 0 && signbit(d))) {
		json_print_int(sb, (long long)d); /* what %1.15g prints for these */
	} else {
		snprintf(buf, sizeof(buf), "%1.15g", d);
		back = strtod(buf, NULL);
		max = fabs(back) > fabs(d) ? fabs(back) : fabs(d);
		if (!(fabs(back - d) <= max * DBL_EPSILON))
			snprintf(buf, sizeof(buf), "%1.17g", d);
		sbx_strbuf_puts(sb, buf);
	}
}

static bool json_print(sbx_strbuf *sb, const cJSON *item)
{
	const cJSON *c;

	switch (item->type & 0xff) {
	case cJSON_NULL:
		sbx_strbuf_puts(sb, "null");
		return true;
	case cJSON_False:
		sbx_strbuf_puts(sb, "false");
		return true;
	case cJSON_True:
		sbx_strbuf_puts(sb, "true");
		return true;
	case cJSON_Number:
		json_print_num(sb, item);
		return true;
	case cJSON_Raw:
		if (item->valuestring == NULL)
			return false;
		sbx_strbuf_puts(sb, item->valuestring);
		return true;
	case cJSON_String:
		json_print_str(sb, item->valuestring);
		return true;
	case cJSON_Array:
	case cJSON_Object:
		sbx_strbuf_append(sb, (item->type & 0xff) == cJSON_Array ? "[" : "{", 1);
		for (c = item->child; c != NULL; c = c->next) {
			if (c != item->child)
				sbx_strbuf_append(sb, ",", 1);
			if ((item->type & 0xff) == cJSON_Object) {
				json_print_str(sb, c->string);
				sbx_strbuf_append(sb, ":", 1);
			}
			if (!json_print(sb, c))
				return false;
		}
		sbx_strbuf_append(sb, (item->type & 0xff) == cJSON_Array ? "]" : "}", 1);
		return true;
	default:
		return false;
	}
}

/* The tree as compact JSON (malloc'ed), NULL when out of memory. */
char *mock_json_print(const cJSON *item, size_t *len)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char *text;

	if (!json_print(&sb, item) || sb.oom) {
		sbx_strbuf_free(&sb);
		text = cJSON_PrintUnformatted(item);
		*len = text != NULL ? strlen(text) : 0;
		return text;
	}
	return sbx_strbuf_detach(&sb, len);
}

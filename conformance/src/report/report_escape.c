/* report_escape: escaping for each output syntax the writers produce
 * (XML/HTML markup, YAML scalars, terminal text, Markdown table cells,
 * GitHub workflow commands), UTF-8 decoding and the
 * duration format.
 *
 * Pure functions over strings: never reads the report, never lets a control
 * byte, invalid UTF-8 or markup reach the output raw. */
#include "report_priv.h"

#include <stdio.h>
#include <string.h>

size_t rp_utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char b = s[0];
	size_t len;
	uint32_t c;
	uint32_t min;

	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	if (b >= 0xC2 && b <= 0xDF) {
		len = 2;
		c = b & 0x1F;
		min = 0x80;
	} else if (b >= 0xE0 && b <= 0xEF) {
		len = 3;
		c = b & 0x0F;
		min = 0x800;
	} else if (b >= 0xF0 && b <= 0xF4) {
		len = 4;
		c = b & 0x07;
		min = 0x10000;
	} else {
		goto out_invalid;
	}
	if (len > n)
		goto out_invalid;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			goto out_invalid;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		goto out_invalid;
	*cp = c;
	return len;
out_invalid:
	*cp = 0xFFFD;
	return 1;
}

void rp_put_cp(sbx_strbuf *sb, uint32_t cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xE0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		b[0] = (char)(0xF0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	sbx_strbuf_append(sb, b, n);
}

/* The visible stand-in for a character an output syntax cannot carry. */
static void put_visible_escape(sbx_strbuf *sb, uint32_t cp)
{
	if (cp < 0x100)
		sbx_strbuf_printf(sb, "\\x%02X", (unsigned)cp);
	else
		sbx_strbuf_printf(sb, "\\u%04X", (unsigned)cp);
}

static bool xml_char_ok(uint32_t cp)
{
	if (cp == 0x9 || cp == 0xA || cp == 0xD)
		return true;
	if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) /* C1 is legal but discouraged */
		return false;
	return cp <= 0xD7FF || (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

void rp_put_markup(sbx_strbuf *sb, const char *s, bool attr)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n > 0) {
		uint32_t cp;
		size_t len = rp_utf8_next(p, n, &cp);
		p += len;
		n -= len;
		if (!xml_char_ok(cp)) {
			put_visible_escape(sb, cp);
			continue;
		}
		switch (cp) {
		case '&':
			sbx_strbuf_puts(sb, "&amp;");
			break;
		case '<':
			sbx_strbuf_puts(sb, "&lt;");
			break;
		case '>':
			sbx_strbuf_puts(sb, "&gt;");
			break;
		case '"':
			sbx_strbuf_puts(sb, "&quot;");
			break;
		case '\'':
			sbx_strbuf_puts(sb, "&#39;");
			break;
		case '\t':
		case '\n':
		case '\r':
			if (attr)
				sbx_strbuf_printf(sb, "&#%u;", (unsigned)cp);
			else if (cp == '\r')
				sbx_strbuf_puts(sb, "&#13;"); /* a raw CR would be normalised away */
			else
				rp_put_cp(sb, cp);
			break;
		default:
			rp_put_cp(sb, cp);
			break;
		}
	}
}

/* YAML 1.2 printable set; everything else is escaped in double quotes. */
static bool yaml_printable(uint32_t cp)
{
	if (cp == 0x9 || (cp >= 0x20 && cp <= 0x7E) || cp == 0x85)
		return true;
	return (cp >= 0xA0 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
	       (cp >= 0x10000 && cp <= 0x10FFFF);
}

void rp_put_yaml(sbx_strbuf *sb, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	sbx_strbuf_puts(sb, "\"");
	while (n > 0) {
		uint32_t cp;
		size_t len = rp_utf8_next(p, n, &cp);
		p += len;
		n -= len;
		if (cp == '"')
			sbx_strbuf_puts(sb, "\\\"");
		else if (cp == '\\')
			sbx_strbuf_puts(sb, "\\\\");
		else if (cp == '\n')
			sbx_strbuf_puts(sb, "\\n");
		else if (cp == '\t')
			sbx_strbuf_puts(sb, "\\t");
		else if (cp == '\r')
			sbx_strbuf_puts(sb, "\\r");
		else if (cp == 0x85 || !yaml_printable(cp))
			put_visible_escape(sb, cp); /* \xNN and \uNNNN are YAML escapes */
		else
			rp_put_cp(sb, cp);
	}
	sbx_strbuf_puts(sb, "\"");
}

void rp_put_term(sbx_strbuf *sb, const char *s, const char *indent)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n > 0) {
		uint32_t cp;
		size_t len = rp_utf8_next(p, n, &cp);
		p += len;
		n -= len;
		if (cp == '\n') {
			sbx_strbuf_puts(sb, "\n");
			sbx_strbuf_puts(sb, indent);
		} else if (cp == '\t') {
			sbx_strbuf_puts(sb, "    ");
		} else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
			put_visible_escape(sb, cp);
		} else {
			rp_put_cp(sb, cp);
		}
	}
}

void rp_put_duration(sbx_strbuf *sb, double ms)
{
	if (ms < 1000)
		sbx_strbuf_printf(sb, "%.0f ms", ms);
	else
		sbx_strbuf_printf(sb, "%.2f s", ms / 1000.0);
}

/* Markdown-significant ASCII in GitHub Flavored Markdown and Python-Markdown:
 * emphasis, code, links, tables, strikethrough, math, HTML and entities. */
static bool md_special(uint32_t cp)
{
	return cp < 0x80 && strchr("\\`*_[]|~$<>&", (int)cp) != NULL;
}

bool rp_put_md(sbx_strbuf *sb, const char *s, size_t max_cps)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	size_t cps = 0;

	while (n > 0) {
		uint32_t cp;
		size_t len = rp_utf8_next(p, n, &cp);

		if (max_cps > 0 && cps++ == max_cps) {
			sbx_strbuf_puts(sb, " \xE2\x80\xA6"); /* U+2026 */
			return true;
		}
		p += len;
		n -= len;
		if (cp == '\r' && n > 0 && *p == '\n')
			continue;
		if (cp == '\n' || cp == '\r')
			sbx_strbuf_puts(sb, "<br>");
		else if (cp == '\t')
			sbx_strbuf_puts(sb, " ");
		else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
			sbx_strbuf_printf(sb, "&#92;x%02X", (unsigned)cp);
		else if (md_special(cp))
			sbx_strbuf_printf(sb, "&#%u;", (unsigned)cp);
		else
			rp_put_cp(sb, cp);
	}
	return false;
}

void rp_put_gha(sbx_strbuf *sb, const char *s, bool property)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n > 0) {
		uint32_t cp;
		size_t len = rp_utf8_next(p, n, &cp);

		p += len;
		n -= len;
		if (cp == '%')
			sbx_strbuf_puts(sb, "%25");
		else if (cp == '\r')
			sbx_strbuf_puts(sb, "%0D");
		else if (cp == '\n')
			sbx_strbuf_puts(sb, "%0A");
		else if (property && cp == ':')
			sbx_strbuf_puts(sb, "%3A");
		else if (property && cp == ',')
			sbx_strbuf_puts(sb, "%2C");
		else if (cp != '\t' && (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)))
			put_visible_escape(sb, cp);
		else
			rp_put_cp(sb, cp);
	}
}

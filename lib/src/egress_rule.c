/* egress_rule: one egress rule from untrusted text to a typed rule and back
 * to its canonical text (spec/egress.md, "Grammar").
 *
 * The parser reads exactly `len` bytes (NUL is an ordinary, rejected byte),
 * never allocates and never reads out of bounds. Every rejection names the
 * rule's index, the rule text (escaped) and what is wrong with it. This module
 * must never accept a rule whose canonical text parses to something else. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "egress_internal.h"

/* Longest valid rule text: "*." + 253-char suffix + "." + ":65535". */
#define RULE_TEXT_MAX 262
/* How many bytes of a rejected rule the message quotes. */
#define QUOTE_MAX 80

const char *sbx_egress_errclass_name(sbx_egress_errclass cls)
{
	switch (cls) {
	case SBX_EGRESS_OK:
		return "ok";
	case SBX_EGRESS_E_EMPTY:
		return "empty";
	case SBX_EGRESS_E_SYNTAX:
		return "syntax";
	case SBX_EGRESS_E_HOST:
		return "host";
	case SBX_EGRESS_E_CHARSET:
		return "charset";
	case SBX_EGRESS_E_WILDCARD:
		return "wildcard";
	case SBX_EGRESS_E_PORT:
		return "port";
	case SBX_EGRESS_E_ADDRESS:
		return "address";
	case SBX_EGRESS_E_PREFIX:
		return "prefix";
	case SBX_EGRESS_E_TOO_LONG:
		return "too_long";
	case SBX_EGRESS_E_TOO_MANY:
		return "too_many";
	case SBX_EGRESS_E_TYPE:
		return "type";
	}
	return "unknown";
}

const char *sbx_egress_reason_name(sbx_egress_reason reason)
{
	switch (reason) {
	case SBX_REASON_RULE:
		return "rule";
	case SBX_REASON_LINK_LOCAL:
		return "link-local exception";
	case SBX_REASON_LOOPBACK:
		return "loopback";
	case SBX_REASON_OPEN_POLICY:
		return "open policy";
	case SBX_REASON_DEFAULT_DENY:
		return "deny by default";
	}
	return "unknown";
}

/* ---- error messages ---- */

static size_t quote_text(const char *text, size_t len, char *buf, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	size_t shown = len > QUOTE_MAX ? QUOTE_MAX : len;
	for (size_t i = 0; i < shown && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c >= 0x20 && c < 0x7f && c != '`' && c != '\\') {
			buf[o++] = (char)c;
			continue;
		}
		buf[o++] = '\\';
		buf[o++] = 'x';
		buf[o++] = hex[c >> 4];
		buf[o++] = hex[c & 15];
	}
	if (shown < len && o + 4 < cap) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return o;
}

void egress_set_error(sbx_egress_error *err, sbx_egress_errclass cls, size_t index,
		      const char *text, size_t len, size_t pos, bool show_pos, const char *fmt, ...)
{
	if (err == NULL)
		return;
	char quoted[QUOTE_MAX * 4 + 8];
	char what[256];
	va_list ap;

	err->cls = cls;
	err->index = index;
	err->pos = pos;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (text == NULL) {
		snprintf(err->message, sizeof err->message, "rule %zu: %s", index, what);
		return;
	}
	quote_text(text, len, quoted, sizeof quoted);
	int n;
	/* Truncation is acceptable: the quoted text is already bounded. */
	if (show_pos)
		n = snprintf(err->message, sizeof err->message, "rule %zu (`%s`): %s (at byte %zu)",
			     index, quoted, what, pos);
	else
		n = snprintf(err->message, sizeof err->message, "rule %zu (`%s`): %s", index,
			     quoted, what);
	if (n < 0)
		err->message[0] = '\0';
}

/* ---- character classes (ASCII only, locale-independent) ---- */

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alnum(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static char to_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool rule_char_ok(unsigned char c)
{
	return is_alnum(c) || c == '.' || c == '-' || c == ':' || c == '*' || c == '[' ||
	       c == ']' || c == '/';
}

/* Looks like an address (digits and dots, at least one digit), so it is
 * judged as one instead of as a host name. */
static bool all_digits_dots(const char *p, size_t n)
{
	bool digit = false;
	for (size_t i = 0; i < n; i++) {
		if (is_digit((unsigned char)p[i]))
			digit = true;
		else if (p[i] != '.')
			return false;
	}
	return digit;
}

static const char *find_char(const char *p, size_t n, char c)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == c)
			return p + i;
	}
	return NULL;
}

/* ---- addresses ---- */

bool egress_parse_v4(const char *p, size_t n, uint8_t out[4])
{
	size_t i = 0;
	for (int part = 0; part < 4; part++) {
		if (part > 0) {
			if (i >= n || p[i] != '.')
				return false;
			i++;
		}
		size_t start = i;
		unsigned v = 0;
		while (i < n && is_digit((unsigned char)p[i]) && i - start < 4) {
			v = v * 10 + (unsigned)(p[i] - '0');
			i++;
		}
		size_t digits = i - start;
		if (digits == 0 || digits > 3 || v > 255)
			return false;
		if (digits > 1 && p[start] == '0')
			return false;
		out[part] = (uint8_t)v;
	}
	return i == n;
}

bool egress_parse_v6(const char *p, size_t n, uint8_t out[16])
{
	char buf[64];
	if (n == 0 || n >= sizeof buf)
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return inet_pton(AF_INET6, buf, out) == 1;
}

size_t egress_format_v6(const uint8_t addr[16], char *buf, size_t cap)
{
	uint16_t w[8];
	for (int i = 0; i < 8; i++)
		w[i] = (uint16_t)(addr[2 * i] << 8 | addr[2 * i + 1]);

	/* IPv4-mapped: RFC 5952 section 5 mixed notation. */
	bool mapped =
		w[0] == 0 && w[1] == 0 && w[2] == 0 && w[3] == 0 && w[4] == 0 && w[5] == 0xffff;
	if (mapped)
		return (size_t)snprintf(buf, cap, "::ffff:%u.%u.%u.%u", addr[12], addr[13],
					addr[14], addr[15]);

	/* Longest run of two or more zero groups, the first one on a tie. */
	int best = -1, best_len = 0;
	for (int i = 0; i < 8;) {
		if (w[i] != 0) {
			i++;
			continue;
		}
		int j = i;
		while (j < 8 && w[j] == 0)
			j++;
		if (j - i > best_len && j - i >= 2) {
			best = i;
			best_len = j - i;
		}
		i = j;
	}

	char tmp[48];
	size_t o = 0;
	for (int i = 0; i < 8; i++) {
		if (i == best) {
			tmp[o++] = ':';
			if (i == 0)
				tmp[o++] = ':';
			i += best_len - 1;
			continue;
		}
		int k = snprintf(tmp + o, sizeof tmp - o, "%x", w[i]);
		o += (size_t)k;
		if (i < 7)
			tmp[o++] = ':';
	}
	tmp[o] = '\0';
	return (size_t)snprintf(buf, cap, "%s", tmp);
}

static void mask_prefix(uint8_t *addr, size_t bytes, unsigned prefix_len)
{
	for (size_t i = 0; i < bytes; i++) {
		unsigned bit = (unsigned)i * 8;
		if (bit >= prefix_len)
			addr[i] = 0;
		else if (prefix_len - bit < 8)
			addr[i] &= (uint8_t)(0xff << (8 - (prefix_len - bit)));
	}
}

/* ---- host names ---- */

sbx_egress_errclass egress_check_name(const char *p, size_t n, char *out, size_t *bad,
				      const char **why)
{
	if (n > 0 && p[n - 1] == '.')
		n--;
	*bad = 0;
	if (n == 0) {
		*why = "empty host name";
		return SBX_EGRESS_E_HOST;
	}
	if (n > SBX_EGRESS_HOST_MAX) {
		*bad = SBX_EGRESS_HOST_MAX;
		*why = "host name longer than 253 characters";
		return SBX_EGRESS_E_TOO_LONG;
	}
	size_t label = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || p[i] == '.') {
			size_t llen = i - label;
			*bad = label;
			if (llen == 0) {
				*why = "empty label in host name";
				return SBX_EGRESS_E_HOST;
			}
			if (llen > 63) {
				*why = "label longer than 63 characters";
				return SBX_EGRESS_E_HOST;
			}
			if (p[label] == '-') {
				*why = "label starts with a hyphen";
				return SBX_EGRESS_E_HOST;
			}
			if (p[i - 1] == '-') {
				*bad = i - 1;
				*why = "label ends with a hyphen";
				return SBX_EGRESS_E_HOST;
			}
			label = i + 1;
			continue;
		}
		unsigned char c = (unsigned char)p[i];
		if (!is_alnum(c) && c != '-') {
			*bad = i;
			*why = "character not allowed in a host name";
			return c >= 0x80 || c < 0x20 || c == 0x7f ? SBX_EGRESS_E_CHARSET
								  : SBX_EGRESS_E_HOST;
		}
	}
	for (size_t i = 0; i < n; i++)
		out[i] = to_lower(p[i]);
	out[n] = '\0';
	return SBX_EGRESS_OK;
}

/* ---- the rule parser ---- */

typedef struct parse_ctx {
	const char *text; /* the rule as given, for messages */
	size_t len;
	size_t off; /* offset of the trimmed text within text */
	size_t index;
	sbx_egress_error *err;
} parse_ctx;

static int fail(const parse_ctx *c, sbx_egress_errclass cls, size_t pos, bool show_pos,
		const char *what)
{
	egress_set_error(c->err, cls, c->index, c->text, c->len, c->off + pos, show_pos, "%s",
			 what);
	return -1;
}

/* Decimal number without sign or leading zero, at most max. */
static int parse_number(const char *p, size_t n, unsigned max, unsigned *out, const char **why)
{
	if (n == 0) {
		*why = "is missing";
		return -1;
	}
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit((unsigned char)p[i])) {
			*why = "must be decimal digits";
			return -1;
		}
		if (v <= 99999)
			v = v * 10 + (unsigned)(p[i] - '0');
	}
	if (n > 1 && p[0] == '0') {
		*why = "has a leading zero";
		return -1;
	}
	if (v > max) {
		*why = "is out of range";
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_port(const parse_ctx *c, const char *s, size_t at, size_t n, uint16_t *port)
{
	unsigned v = 0;
	const char *why = NULL;
	char what[96];
	if (parse_number(s + at, n, 65535, &v, &why) != 0 || v == 0) {
		if (why == NULL)
			why = "0 is not allowed";
		snprintf(what, sizeof what, "port %s (must be 1-65535, decimal, no leading zero)",
			 why);
		return fail(c, SBX_EGRESS_E_PORT, at, true, what);
	}
	*port = (uint16_t)v;
	return 0;
}

static int parse_prefix(const parse_ctx *c, const char *s, size_t at, size_t n, unsigned max,
			uint8_t *out)
{
	unsigned v = 0;
	const char *why = NULL;
	char what[96];
	if (parse_number(s + at, n, max, &v, &why) != 0) {
		snprintf(what, sizeof what, "CIDR prefix length %s (must be 0-%u)", why, max);
		return fail(c, SBX_EGRESS_E_PREFIX, at, true, what);
	}
	*out = (uint8_t)v;
	return 0;
}

/* An IPv6 address or CIDR, s[at, at + n), no brackets, no port. */
static int parse_v6_cidr(const parse_ctx *c, const char *s, size_t at, size_t n, sbx_egress_rule *r)
{
	const char *slash = find_char(s + at, n, '/');
	size_t alen = slash != NULL ? (size_t)(slash - (s + at)) : n;
	r->kind = SBX_RULE_IPV6;
	r->prefix_len = 128;
	if (slash != NULL) {
		size_t plen = n - alen - 1;
		if (find_char(slash + 1, plen, ':') != NULL)
			return fail(c, SBX_EGRESS_E_SYNTAX, at + alen, true,
				    "an IPv6 CIDR followed by a port needs brackets: "
				    "`[addr/len]:port`");
		if (parse_prefix(c, s, at + alen + 1, plen, 128, &r->prefix_len) != 0)
			return -1;
	}
	if (!egress_parse_v6(s + at, alen, r->addr))
		return fail(c, SBX_EGRESS_E_ADDRESS, at, false,
			    "not a valid IPv6 address (a port after an IPv6 address needs "
			    "brackets: `[addr]:port`)");
	mask_prefix(r->addr, 16, r->prefix_len);
	return 0;
}

static int parse_bracketed(const parse_ctx *c, const char *s, size_t n, sbx_egress_rule *r)
{
	const char *rb = find_char(s, n, ']');
	if (rb == NULL)
		return fail(c, SBX_EGRESS_E_SYNTAX, n, true, "missing `]`");
	size_t inner = (size_t)(rb - s) - 1;
	size_t after = (size_t)(rb - s) + 1;
	if (find_char(s + 1, inner, '[') != NULL || find_char(rb + 1, n - after, ']') != NULL ||
	    find_char(rb + 1, n - after, '[') != NULL)
		return fail(c, SBX_EGRESS_E_SYNTAX, 0, false, "misplaced bracket");
	if (find_char(s + 1, inner, ':') == NULL)
		return fail(c, SBX_EGRESS_E_ADDRESS, 1, true,
			    "brackets are only for IPv6 addresses");
	if (parse_v6_cidr(c, s, 1, inner, r) != 0)
		return -1;
	if (after == n)
		return 0;
	if (s[after] != ':')
		return fail(c, SBX_EGRESS_E_SYNTAX, after, true, "expected `:port` after `]`");
	return parse_port(c, s, after + 1, n - after - 1, &r->port);
}

static int parse_name(const parse_ctx *c, const char *s, size_t at, size_t n, char *out)
{
	size_t bad = 0;
	const char *why = NULL;
	sbx_egress_errclass cls = egress_check_name(s + at, n, out, &bad, &why);
	if (cls == SBX_EGRESS_OK)
		return 0;
	return fail(c, cls, at + bad, cls != SBX_EGRESS_E_TOO_LONG, why);
}

static int parse_wildcard(const parse_ctx *c, const char *s, size_t n, sbx_egress_rule *r)
{
	if (n == 1)
		return fail(c, SBX_EGRESS_E_WILDCARD, 0, false,
			    "`*` alone cannot take a port; use `*` for everything");
	if (s[1] != '.')
		return fail(c, SBX_EGRESS_E_WILDCARD, 1, true,
			    "wildcard must be `*.` followed by a domain");
	if (n == 2 || (n == 3 && s[2] == '.'))
		return fail(c, SBX_EGRESS_E_WILDCARD, 2, true,
			    "wildcard must be followed by a domain");
	const char *star = find_char(s + 2, n - 2, '*');
	if (star != NULL)
		return fail(c, SBX_EGRESS_E_WILDCARD, (size_t)(star - s), true,
			    "`*` is only allowed as the whole first label");
	if (all_digits_dots(s + 2, n - 2) || find_char(s + 2, n - 2, '/') != NULL)
		return fail(c, SBX_EGRESS_E_WILDCARD, 2, true,
			    "wildcard suffix must be a domain name, not an address");
	r->kind = SBX_RULE_WILDCARD;
	return parse_name(c, s, 2, n - 2, r->host);
}

/* Everything but bracketed IPv6 and bare IPv6: s[0, n) without the port. */
static int parse_hostpart(const parse_ctx *c, const char *s, size_t n, sbx_egress_rule *r)
{
	if (n == 0)
		return fail(c, SBX_EGRESS_E_SYNTAX, 0, true, "missing host before `:`");
	if (s[0] == '*')
		return parse_wildcard(c, s, n, r);
	const char *star = find_char(s, n, '*');
	if (star != NULL)
		return fail(c, SBX_EGRESS_E_WILDCARD, (size_t)(star - s), true,
			    "`*` is only allowed as the whole first label (`*.example.com`)");
	const char *slash = find_char(s, n, '/');
	size_t alen = slash != NULL ? (size_t)(slash - s) : n;
	if (slash != NULL || all_digits_dots(s, n)) {
		r->kind = SBX_RULE_IPV4;
		r->prefix_len = 32;
		if (!egress_parse_v4(s, alen, r->addr))
			return fail(c, SBX_EGRESS_E_ADDRESS, 0, false,
				    slash != NULL ? "CIDR needs an IPv4 or IPv6 address before `/`"
						  : "not a valid IPv4 address (four decimal "
						    "numbers 0-255, no leading zeros)");
		if (slash != NULL &&
		    parse_prefix(c, s, alen + 1, n - alen - 1, 32, &r->prefix_len) != 0)
			return -1;
		mask_prefix(r->addr, 4, r->prefix_len);
		return 0;
	}
	r->kind = SBX_RULE_HOST;
	return parse_name(c, s, 0, n, r->host);
}

int sbx_egress_rule_parse(const char *text, size_t len, size_t index, sbx_egress_rule *out,
			  sbx_egress_error *err)
{
	parse_ctx c = {.text = text, .len = len, .off = 0, .index = index, .err = err};
	sbx_egress_rule r;
	memset(&r, 0, sizeof r);
	if (text == NULL) {
		text = "";
		len = 0;
		c.text = text;
		c.len = 0;
	}
	size_t b = 0, e = len;
	while (b < e && is_space((unsigned char)text[b]))
		b++;
	while (e > b && is_space((unsigned char)text[e - 1]))
		e--;
	c.off = b;
	const char *s = text + b;
	size_t n = e - b;

	if (n == 0)
		return fail(&c, SBX_EGRESS_E_EMPTY, 0, false, "rule is empty");
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (rule_char_ok(ch))
			continue;
		char what[64];
		if (ch > 0x20 && ch < 0x7f)
			snprintf(what, sizeof what, "character '%c' is not allowed", ch);
		else if (ch == ' ')
			snprintf(what, sizeof what, "space is not allowed inside a rule");
		else
			snprintf(what, sizeof what, "byte 0x%02x is not allowed", ch);
		return fail(&c, SBX_EGRESS_E_CHARSET, i, true, what);
	}
	if (n > RULE_TEXT_MAX)
		return fail(&c, SBX_EGRESS_E_TOO_LONG, RULE_TEXT_MAX, false,
			    "rule longer than any valid rule (262 characters)");

	for (size_t i = 0; i + 2 < n; i++) {
		if (s[i] == ':' && s[i + 1] == '/' && s[i + 2] == '/')
			return fail(&c, SBX_EGRESS_E_SYNTAX, i, true,
				    "a rule is a host, address or CIDR, not a URL");
	}
	if (n == 1 && s[0] == '*') {
		r.kind = SBX_RULE_ALL;
	} else if (s[0] == '[') {
		if (parse_bracketed(&c, s, n, &r) != 0)
			return -1;
	} else {
		const char *br = find_char(s, n, '[');
		if (br == NULL)
			br = find_char(s, n, ']');
		if (br != NULL)
			return fail(&c, SBX_EGRESS_E_SYNTAX, (size_t)(br - s), true,
				    "brackets must enclose an IPv6 address at the start: "
				    "`[addr]:port`");
		const char *colon = find_char(s, n, ':');
		const char *colon2 =
			colon != NULL ? find_char(colon + 1, n - (size_t)(colon - s) - 1, ':')
				      : NULL;
		if (colon2 != NULL) {
			if (parse_v6_cidr(&c, s, 0, n, &r) != 0)
				return -1;
		} else {
			size_t hlen = colon != NULL ? (size_t)(colon - s) : n;
			if (parse_hostpart(&c, s, hlen, &r) != 0)
				return -1;
			if (colon != NULL &&
			    parse_port(&c, s, hlen + 1, n - hlen - 1, &r.port) != 0)
				return -1;
		}
	}
	if (out != NULL)
		*out = r;
	if (err != NULL) {
		err->cls = SBX_EGRESS_OK;
		err->index = index;
		err->pos = 0;
		err->message[0] = '\0';
	}
	return 0;
}

/* ---- canonical text ---- */

size_t sbx_egress_rule_format(const sbx_egress_rule *rule, char *buf, size_t cap)
{
	char addr[64];
	char pfx[8] = "";
	int n = 0;

	switch (rule->kind) {
	case SBX_RULE_ALL:
		n = snprintf(buf, cap, "*");
		break;
	case SBX_RULE_HOST:
	case SBX_RULE_WILDCARD: {
		const char *star = rule->kind == SBX_RULE_WILDCARD ? "*." : "";
		if (rule->port != 0)
			n = snprintf(buf, cap, "%s%s:%u", star, rule->host, rule->port);
		else
			n = snprintf(buf, cap, "%s%s", star, rule->host);
		break;
	}
	case SBX_RULE_IPV4:
		if (rule->prefix_len != 32)
			snprintf(pfx, sizeof pfx, "/%u", rule->prefix_len);
		snprintf(addr, sizeof addr, "%u.%u.%u.%u%s", rule->addr[0], rule->addr[1],
			 rule->addr[2], rule->addr[3], pfx);
		if (rule->port != 0)
			n = snprintf(buf, cap, "%s:%u", addr, rule->port);
		else
			n = snprintf(buf, cap, "%s", addr);
		break;
	case SBX_RULE_IPV6:
		egress_format_v6(rule->addr, addr, sizeof addr);
		if (rule->prefix_len != 128)
			snprintf(pfx, sizeof pfx, "/%u", rule->prefix_len);
		if (rule->port != 0)
			n = snprintf(buf, cap, "[%s%s]:%u", addr, pfx, rule->port);
		else
			n = snprintf(buf, cap, "%s%s", addr, pfx);
		break;
	}
	return n < 0 ? 0 : (size_t)n;
}

bool sbx_egress_rule_equal(const sbx_egress_rule *a, const sbx_egress_rule *b)
{
	if (a->kind != b->kind || a->port != b->port)
		return false;
	switch (a->kind) {
	case SBX_RULE_ALL:
		return true;
	case SBX_RULE_HOST:
	case SBX_RULE_WILDCARD:
		return strcmp(a->host, b->host) == 0;
	case SBX_RULE_IPV4:
		return a->prefix_len == b->prefix_len && memcmp(a->addr, b->addr, 4) == 0;
	case SBX_RULE_IPV6:
		return a->prefix_len == b->prefix_len && memcmp(a->addr, b->addr, 16) == 0;
	}
	return false;
}

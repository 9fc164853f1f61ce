/* Fuzz target: one egress rule from arbitrary bytes (sbx_egress_rule_parse),
 * and the same bytes as a destination (sbx_egress_dest_parse).
 *
 * Properties, each abort()s when broken: an accepted rule satisfies the
 * rule invariants (lower-case RFC 1123 name without trailing dot, host bits
 * masked, prefix and port in range), its canonical text fits
 * SBX_EGRESS_CANON_MAX and parses back to the same rule and the same text;
 * a rejected rule has a class, a position inside the input and a printable
 * message naming the rule index. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "egress_parse property broken: %s\n", what);
		abort();
	}
}

static void check_message(const char *msg)
{
	size_t n = strnlen(msg, 512);
	check(n > 0 && n < 512, "message empty or unterminated");
	for (size_t i = 0; i < n; i++)
		check(msg[i] >= 0x20 && msg[i] < 0x7f, "message not printable ASCII");
}

static bool masked(const sbx_egress_rule *r, size_t bytes)
{
	for (size_t bit = r->prefix_len; bit < bytes * 8; bit++) {
		if ((r->addr[bit / 8] >> (7 - bit % 8)) & 1)
			return false;
	}
	for (size_t i = bytes; i < 16; i++) {
		if (r->addr[i] != 0)
			return false;
	}
	return true;
}

static void check_name(const char *h)
{
	size_t n = strnlen(h, SBX_EGRESS_HOST_MAX + 1);
	check(n > 0 && n <= SBX_EGRESS_HOST_MAX, "name length");
	check(h[n - 1] != '.' && h[0] != '.', "name dots at the ends");
	size_t label = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || h[i] == '.') {
			check(i > label && i - label <= 63, "label length");
			check(h[label] != '-' && h[i - 1] != '-', "label hyphen");
			label = i + 1;
			continue;
		}
		char c = h[i];
		check((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-',
		      "name character not lower-case alnum/hyphen");
	}
}

static void check_rule(const sbx_egress_rule *r)
{
	switch (r->kind) {
	case SBX_RULE_ALL:
		check(r->port == 0, "`*` with a port");
		break;
	case SBX_RULE_HOST:
	case SBX_RULE_WILDCARD:
		check_name(r->host);
		break;
	case SBX_RULE_IPV4:
		check(r->prefix_len <= 32 && masked(r, 4), "IPv4 prefix/mask");
		break;
	case SBX_RULE_IPV6:
		check(r->prefix_len <= 128 && masked(r, 16), "IPv6 prefix/mask");
		break;
	default:
		check(false, "unknown kind");
	}
}

static void fuzz_rule(const char *text, size_t size)
{
	sbx_egress_rule r, again;
	sbx_egress_error err;
	char canon[SBX_EGRESS_CANON_MAX], canon2[SBX_EGRESS_CANON_MAX];

	if (sbx_egress_rule_parse(text, size, 9, &r, &err) != 0) {
		check(err.cls != SBX_EGRESS_OK, "failure without a class");
		check(err.index == 9, "error index");
		check(err.pos <= size, "error position outside the input");
		check_message(err.message);
		check(strncmp(err.message, "rule 9 (`", 9) == 0, "message does not name the rule");
		return;
	}
	check(err.cls == SBX_EGRESS_OK, "success with an error class");
	check_rule(&r);
	size_t n = sbx_egress_rule_format(&r, canon, sizeof canon);
	check(n > 0 && n < sizeof canon && strlen(canon) == n, "canonical length");
	check(sbx_egress_rule_format(&r, NULL, 0) == n, "format size query");
	check(sbx_egress_rule_parse(canon, n, 0, &again, &err) == 0, "canonical text rejected");
	check(sbx_egress_rule_equal(&r, &again), "canonical text parses to another rule");
	size_t n2 = sbx_egress_rule_format(&again, canon2, sizeof canon2);
	check(n2 == n && memcmp(canon, canon2, n) == 0, "canonical text not a fixed point");
}

static void fuzz_dest(const char *text, size_t size)
{
	sbx_egress_dest d;
	sbx_egress_error err;
	char host[SBX_EGRESS_HOST_MAX + 1];
	if (sbx_egress_dest_parse(text, size, &d, host, sizeof host, &err) != 0) {
		check_message(err.message);
		return;
	}
	check(d.port >= 1, "destination port 0");
	check(d.family == 0 || d.family == 4 || d.family == 6, "destination family");
	check(d.family != 0 || d.host != NULL, "destination with neither address nor name");
	if (d.host != NULL)
		check_name(d.host);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size heap copy, so ASan sees any read past the end. */
	char *text = malloc(size ? size : 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	fuzz_rule(text, size);
	fuzz_dest(text, size);
	free(text);
	return 0;
}

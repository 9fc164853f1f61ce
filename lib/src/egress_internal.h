/* egress_internal: helpers shared by the egress modules (rule parser, list,
 * reference evaluator, compiled policy). Not a public interface: nothing
 * outside lib/src/egress*.c includes it.
 *
 * The destination normalisation here is the one place that decides what an
 * address "is" (IPv4-mapped IPv6 is IPv4, names compare case-insensitively
 * without one trailing dot), so both evaluators must go through it. */
#ifndef SBX_EGRESS_INTERNAL_H
#define SBX_EGRESS_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx/egress.h"

#define EGRESS_NO_RULE UINT32_MAX

/* A destination after normalisation: IPv4-mapped IPv6 (::ffff:a.b.c.d)
 * turned into IPv4, host lower-cased with one trailing dot dropped. */
typedef struct egress_ndest {
	int family; /* 4, 6 or 0 */
	uint8_t addr[16];
	uint16_t port;
	bool has_host; /* false when no name, or the name cannot match any rule */
	size_t host_len;
	char host[SBX_EGRESS_HOST_MAX + 1];
} egress_ndest;

void egress_normalise_dest(const sbx_egress_dest *dest, egress_ndest *out);

/* Steps 1 and 2 of the decision order (loopback, link-local exception).
 * Returns true and fills *d when one of them decides. */
bool egress_fixed_decision(const egress_ndest *nd, sbx_egress_decision *d);

/* True when the list is open: null, empty, or holding a "*" rule. */
bool egress_list_is_open(const sbx_egress_list *list);

/* Fills *err with class, index, position and a printable message of the form
 * "rule N (`text`): what is wrong". The rule text is escaped (control bytes
 * and non-ASCII as \xNN) and shortened, so the message is safe to print. */
void egress_set_error(sbx_egress_error *err, sbx_egress_errclass cls, size_t index,
		      const char *text, size_t len, size_t pos, bool show_pos, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));

/* Host-name validation shared by rules and destinations: RFC 1123 labels,
 * at most 253 characters after dropping one trailing dot. Writes the lower
 * case name into out (SBX_EGRESS_HOST_MAX + 1 bytes). On failure returns the
 * error class and sets *bad to the offset and *why to a static reason. */
sbx_egress_errclass egress_check_name(const char *p, size_t n, char *out, size_t *bad,
				      const char **why);

/* Strict dotted-quad IPv4 (no leading zeros, no trailing dot). */
bool egress_parse_v4(const char *p, size_t n, uint8_t out[4]);
/* IPv6 text (no brackets, no zone) via inet_pton. */
bool egress_parse_v6(const char *p, size_t n, uint8_t out[16]);
/* RFC 5952 text of an IPv6 address; buf holds at least 46 bytes. */
size_t egress_format_v6(const uint8_t addr[16], char *buf, size_t cap);

#endif

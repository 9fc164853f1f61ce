/* egress: the egress-rule grammar, canonical form and compiled policy of
 * spec/egress.md.
 *
 * Parsing takes untrusted bytes (any length, NUL, invalid UTF-8) and never
 * reads past `len`. A compiled policy is immutable after building, so many
 * threads may evaluate it at once. This module does no I/O and knows nothing
 * of HTTP: the mock, the runner and the CLI all call it. */
#ifndef SBX_EGRESS_H
#define SBX_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define SBX_EGRESS_MAX_RULES_DEFAULT 1024 /* mock default list limit; a flag changes it */
#define SBX_EGRESS_HOST_MAX 253            /* RFC 1123 name length, without trailing dot */
#define SBX_EGRESS_CANON_MAX 320           /* buffer size that holds any canonical rule */

typedef enum sbx_rule_kind {
	SBX_RULE_ALL,      /* "*" */
	SBX_RULE_HOST,     /* exact name */
	SBX_RULE_WILDCARD, /* "*.suffix": names strictly below suffix */
	SBX_RULE_IPV4,     /* address or CIDR */
	SBX_RULE_IPV6,     /* address or CIDR */
} sbx_rule_kind;

typedef struct sbx_egress_rule {
	sbx_rule_kind kind;
	uint16_t port;          /* 0: any port */
	uint8_t prefix_len;     /* IPv4 0..32, IPv6 0..128; 32/128 for one address */
	uint8_t addr[16];       /* network byte order, host bits masked; IPv4 in addr[0..3] */
	char host[SBX_EGRESS_HOST_MAX + 1]; /* HOST: the name; WILDCARD: the suffix
	                                     * without "*."; lower case, no trailing dot */
} sbx_egress_rule;

/* Error classes are stable names used by fixtures/egress and API messages. */
typedef enum sbx_egress_errclass {
	SBX_EGRESS_OK = 0,
	SBX_EGRESS_E_EMPTY,     /* "empty": blank rule */
	SBX_EGRESS_E_SYNTAX,    /* "syntax": not any rule form */
	SBX_EGRESS_E_HOST,      /* "host": bad host name (label, hyphen, length) */
	SBX_EGRESS_E_CHARSET,   /* "charset": character not allowed (NUL, space, non-ASCII, metachar) */
	SBX_EGRESS_E_WILDCARD,  /* "wildcard": "*" misplaced or not followed by a domain */
	SBX_EGRESS_E_PORT,      /* "port": not 1-65535, sign, leading zero */
	SBX_EGRESS_E_ADDRESS,   /* "address": malformed IPv4/IPv6 */
	SBX_EGRESS_E_PREFIX,    /* "prefix": CIDR prefix out of range or malformed */
	SBX_EGRESS_E_TOO_LONG,  /* "too_long": rule text or name over the limit */
	SBX_EGRESS_E_TOO_MANY,  /* "too_many": list over the rule limit */
	SBX_EGRESS_E_TYPE,      /* "type": JSON list/item of the wrong type */
} sbx_egress_errclass;

typedef struct sbx_egress_error {
	sbx_egress_errclass cls;
	size_t index;      /* rule index within its list (0-based) */
	size_t pos;        /* byte offset within the rule text where it went wrong */
	char message[512]; /* "rule 3 (`*.x`): wildcard must be followed by a domain" */
} sbx_egress_error;

const char *sbx_egress_errclass_name(sbx_egress_errclass cls);

/* Parses one rule. `index` is only used in the error message. Returns 0 on
 * success, -1 with *err filled on failure. */
int sbx_egress_rule_parse(const char *text, size_t len, size_t index,
			  sbx_egress_rule *out, sbx_egress_error *err);
/* Writes the canonical text (NUL-terminated) into buf; returns its length,
 * or the length it would need when cap is too small (like snprintf). */
size_t sbx_egress_rule_format(const sbx_egress_rule *rule, char *buf, size_t cap);
bool sbx_egress_rule_equal(const sbx_egress_rule *a, const sbx_egress_rule *b);

/* A list as the API stores it. is_null distinguishes JSON null from []. */
typedef struct sbx_egress_list {
	bool is_null;
	size_t count;
	sbx_egress_rule *rules; /* owned; free with sbx_egress_list_free */
} sbx_egress_list;

/* From the API's JSON: an array of strings, or null (item may be NULL too,
 * meaning absent = null). Rejects non-strings and lists over max_rules. */
int sbx_egress_list_from_json(const cJSON *item, size_t max_rules,
			      sbx_egress_list *out, sbx_egress_error *err);
/* What a JSON value that is not a string is, for a message ("a number",
 * "an array", ...; "not a string" for anything else). */
const char *sbx_json_type_name(const cJSON *item);
/* True when raw JSON text contains the escape \u0000 inside a string. cJSON
 * silently cuts such a string at the NUL, so "pypi.org\u0000.evil" would
 * reach sbx_egress_list_from_json as "pypi.org": an HTTP layer that parses
 * request bodies with cJSON must reject bodies for which this is true
 * (the spec rejects NUL in rules). Added by the egress engine. */
bool sbx_egress_json_has_nul_escape(const char *text, size_t len);
/* From C strings (CLI "r1,r2" already split, runner tables). */
int sbx_egress_list_from_strings(const char *const *rules, size_t count, size_t max_rules,
				 sbx_egress_list *out, sbx_egress_error *err);
/* Canonical JSON array of strings (null list -> []). Caller frees with cJSON_Delete. */
cJSON *sbx_egress_list_to_json(const sbx_egress_list *list);
int sbx_egress_list_copy(const sbx_egress_list *src, sbx_egress_list *dst);
void sbx_egress_list_free(sbx_egress_list *list);

/* Destinations and decisions. */
typedef enum sbx_host_rule_mode {
	SBX_HOST_RULES_DOCUMENTED, /* host and wildcard rules match names */
	SBX_HOST_RULES_OBSERVED,   /* host rules are stored but match nothing (live service) */
} sbx_host_rule_mode;

typedef struct sbx_egress_dest {
	int family;        /* 4, 6, or 0 when only a host name is known */
	uint8_t addr[16];  /* network byte order */
	uint16_t port;     /* 1..65535 */
	const char *host;  /* name the guest used (DNS/SNI), lower case, or NULL */
} sbx_egress_dest;

typedef enum sbx_egress_reason {
	SBX_REASON_RULE,         /* "rule": a rule matched (rule_index says which) */
	SBX_REASON_LINK_LOCAL,   /* "link-local exception" */
	SBX_REASON_LOOPBACK,     /* "loopback" */
	SBX_REASON_OPEN_POLICY,  /* "open policy": null, empty or a "*" rule */
	SBX_REASON_DEFAULT_DENY, /* "deny by default" */
} sbx_egress_reason;

typedef struct sbx_egress_decision {
	bool allowed;
	sbx_egress_reason reason;
	size_t rule_index; /* first matching rule in list order; valid for SBX_REASON_RULE */
} sbx_egress_decision;

const char *sbx_egress_reason_name(sbx_egress_reason reason);

/* Parses a destination "ADDR:PORT", "[V6]:PORT", "NAME:PORT" or
 * "NAME@ADDR:PORT". The host name (lower-cased) is written into hostbuf and
 * dest->host points at it. */
int sbx_egress_dest_parse(const char *text, size_t len, sbx_egress_dest *dest,
			  char *hostbuf, size_t hostcap, sbx_egress_error *err);

typedef struct sbx_egress_policy sbx_egress_policy;

/* Compiles a list (copied; the list may be freed afterwards). NULL on
 * allocation failure only. */
sbx_egress_policy *sbx_egress_policy_compile(const sbx_egress_list *list, sbx_host_rule_mode mode);
sbx_egress_decision sbx_egress_policy_eval(const sbx_egress_policy *policy, const sbx_egress_dest *dest);
void sbx_egress_policy_free(sbx_egress_policy *policy);

/* The slow, obviously-correct linear scan the compiled policy is checked
 * against (tests and the differential fuzzer only). */
sbx_egress_decision sbx_egress_reference_eval(const sbx_egress_list *list, sbx_host_rule_mode mode,
					      const sbx_egress_dest *dest);

#endif

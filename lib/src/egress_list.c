/* egress_list: rule lists as the API receives and returns them (JSON array
 * of strings or null), destinations from text, and the fixed steps of the
 * decision order shared by both evaluators.
 *
 * A list is all-or-nothing: one bad rule rejects the whole list and leaves
 * the output empty. This module never keeps a pointer into the caller's JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress_internal.h"

static void list_init(sbx_egress_list *list)
{
	list->is_null = false;
	list->count = 0;
	list->rules = NULL;
}

void sbx_egress_list_free(sbx_egress_list *list)
{
	if (list == NULL)
		return;
	free(list->rules);
	list_init(list);
}

const char *sbx_json_type_name(const cJSON *item)
{
	if (cJSON_IsNumber(item))
		return "a number";
	if (cJSON_IsBool(item))
		return "a boolean";
	if (cJSON_IsNull(item))
		return "null";
	if (cJSON_IsArray(item))
		return "an array";
	if (cJSON_IsObject(item))
		return "an object";
	return "not a string";
}

int sbx_egress_list_from_json(const cJSON *item, size_t max_rules, sbx_egress_list *out,
			      sbx_egress_error *err)
{
	list_init(out);
	if (item == NULL || cJSON_IsNull(item)) {
		out->is_null = true;
		return 0;
	}
	if (!cJSON_IsArray(item)) {
		if (err != NULL) {
			err->cls = SBX_EGRESS_E_TYPE;
			err->index = 0;
			err->pos = 0;
			snprintf(err->message, sizeof err->message,
				 "egress must be an array of strings or null, got %s",
				 cJSON_IsString(item) ? "a string" : sbx_json_type_name(item));
		}
		return -1;
	}
	size_t count = (size_t)cJSON_GetArraySize(item);
	if (count > max_rules) {
		if (err != NULL) {
			err->cls = SBX_EGRESS_E_TOO_MANY;
			err->index = max_rules;
			err->pos = 0;
			snprintf(err->message, sizeof err->message,
				 "egress has %zu rules, at most %zu allowed", count, max_rules);
		}
		return -1;
	}
	if (count == 0)
		return 0;
	sbx_egress_rule *rules = calloc(count, sizeof *rules);
	if (rules == NULL)
		return -1;
	size_t i = 0;
	const cJSON *el;
	cJSON_ArrayForEach(el, item)
	{
		if (!cJSON_IsString(el) || el->valuestring == NULL) {
			egress_set_error(err, SBX_EGRESS_E_TYPE, i, NULL, 0, 0, false,
					 "expected a string, got %s", sbx_json_type_name(el));
			goto out_free_rules;
		}
		const char *s = el->valuestring;
		if (sbx_egress_rule_parse(s, strlen(s), i, &rules[i], err) != 0)
			goto out_free_rules;
		i++;
	}
	out->count = count;
	out->rules = rules;
	return 0;

out_free_rules:
	free(rules);
	return -1;
}

bool sbx_egress_json_has_nul_escape(const char *text, size_t len)
{
	if (text == NULL)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (text[i] != '\\')
			continue;
		if (i + 5 < len && text[i + 1] == 'u' && text[i + 2] == '0' && text[i + 3] == '0' &&
		    text[i + 4] == '0' && text[i + 5] == '0')
			return true;
		i++; /* skip the escaped character, so "\\u0000" is no NUL */
	}
	return false;
}

int sbx_egress_list_from_strings(const char *const *rules, size_t count, size_t max_rules,
				 sbx_egress_list *out, sbx_egress_error *err)
{
	list_init(out);
	if (count > max_rules) {
		if (err != NULL) {
			err->cls = SBX_EGRESS_E_TOO_MANY;
			err->index = max_rules;
			err->pos = 0;
			snprintf(err->message, sizeof err->message,
				 "egress has %zu rules, at most %zu allowed", count, max_rules);
		}
		return -1;
	}
	if (count == 0)
		return 0;
	sbx_egress_rule *parsed = calloc(count, sizeof *parsed);
	if (parsed == NULL)
		return -1;
	for (size_t i = 0; i < count; i++) {
		const char *s = rules[i];
		if (s == NULL) {
			egress_set_error(err, SBX_EGRESS_E_TYPE, i, NULL, 0, 0, false,
					 "expected a string, got null");
			goto out_free_parsed;
		}
		if (sbx_egress_rule_parse(s, strlen(s), i, &parsed[i], err) != 0)
			goto out_free_parsed;
	}
	out->count = count;
	out->rules = parsed;
	return 0;

out_free_parsed:
	free(parsed);
	return -1;
}

cJSON *sbx_egress_list_to_json(const sbx_egress_list *list)
{
	cJSON *arr = cJSON_CreateArray();
	if (arr == NULL)
		return NULL;
	for (size_t i = 0; list != NULL && i < list->count; i++) {
		char buf[SBX_EGRESS_CANON_MAX];
		sbx_egress_rule_format(&list->rules[i], buf, sizeof buf);
		cJSON *s = cJSON_CreateString(buf);
		if (s == NULL || !cJSON_AddItemToArray(arr, s)) {
			cJSON_Delete(s);
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

int sbx_egress_list_copy(const sbx_egress_list *src, sbx_egress_list *dst)
{
	list_init(dst);
	dst->is_null = src->is_null;
	if (src->count == 0)
		return 0;
	dst->rules = malloc(src->count * sizeof *dst->rules);
	if (dst->rules == NULL)
		return -1;
	memcpy(dst->rules, src->rules, src->count * sizeof *dst->rules);
	dst->count = src->count;
	return 0;
}

bool egress_list_is_open(const sbx_egress_list *list)
{
	if (list == NULL || list->is_null || list->count == 0)
		return true;
	for (size_t i = 0; i < list->count; i++) {
		if (list->rules[i].kind == SBX_RULE_ALL)
			return true;
	}
	return false;
}

/* ---- destinations ---- */

static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

void egress_normalise_dest(const sbx_egress_dest *dest, egress_ndest *out)
{
	memset(out, 0, offsetof(egress_ndest, host));
	out->host[0] = '\0';
	out->family = dest->family == 4 || dest->family == 6 ? dest->family : 0;
	out->port = dest->port;
	if (out->family == 4) {
		memcpy(out->addr, dest->addr, 4);
	} else if (out->family == 6) {
		if (memcmp(dest->addr, v4_mapped_prefix, 12) == 0) {
			out->family = 4;
			memcpy(out->addr, dest->addr + 12, 4);
		} else {
			memcpy(out->addr, dest->addr, 16);
		}
	}
	if (dest->host == NULL)
		return;
	size_t n = strnlen(dest->host, SBX_EGRESS_HOST_MAX + 2);
	if (n > 0 && dest->host[n - 1] == '.')
		n--;
	if (n == 0 || n > SBX_EGRESS_HOST_MAX)
		return;
	for (size_t i = 0; i < n; i++) {
		char c = dest->host[i];
		out->host[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
	}
	out->host[n] = '\0';
	out->host_len = n;
	out->has_host = true;
}

bool egress_fixed_decision(const egress_ndest *nd, sbx_egress_decision *d)
{
	static const uint8_t v6_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	d->rule_index = 0;
	if ((nd->family == 4 && nd->addr[0] == 127) ||
	    (nd->family == 6 && memcmp(nd->addr, v6_loopback, 16) == 0)) {
		d->allowed = true;
		d->reason = SBX_REASON_LOOPBACK;
		return true;
	}
	if (nd->family == 4 && nd->addr[0] == 169 && nd->addr[1] == 254) {
		d->allowed = true;
		d->reason = SBX_REASON_LINK_LOCAL;
		return true;
	}
	return false;
}

static int dest_fail(sbx_egress_error *err, const char *text, size_t len, size_t pos,
		     sbx_egress_errclass cls, const char *why)
{
	if (err == NULL)
		return -1;
	egress_set_error(err, cls, 0, text, len, pos, true, "%s", why);
	/* egress_set_error words it as a rule; a destination is not one. */
	char copy[sizeof err->message];
	memcpy(copy, err->message, sizeof copy);
	const char *tick = strchr(copy, '(');
	const char *tail = tick != NULL ? tick : copy;
	size_t room = sizeof err->message - sizeof "destination ";
	size_t n = strnlen(tail, room);
	memcpy(err->message, "destination ", sizeof "destination " - 1);
	memcpy(err->message + sizeof "destination " - 1, tail, n);
	err->message[sizeof "destination " - 1 + n] = '\0';
	return -1;
}

static int dest_port(const char *p, size_t n, uint16_t *port)
{
	if (n == 0 || n > 5 || p[0] == '0')
		return -1;
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int sbx_egress_dest_parse(const char *text, size_t len, sbx_egress_dest *dest, char *hostbuf,
			  size_t hostcap, sbx_egress_error *err)
{
	memset(dest, 0, sizeof *dest);
	if (text == NULL) {
		text = "";
		len = 0;
	}
	const char *at = memchr(text, '@', len);
	size_t rest = at != NULL ? (size_t)(at - text) + 1 : 0;
	const char *colon = NULL;
	for (size_t i = len; i > rest; i--) {
		if (text[i - 1] == ':') {
			colon = text + i - 1;
			break;
		}
	}
	if (colon == NULL)
		return dest_fail(err, text, len, len, SBX_EGRESS_E_PORT, "missing `:port`");
	size_t clen = (size_t)(colon - text);
	if (dest_port(colon + 1, len - clen - 1, &dest->port) != 0)
		return dest_fail(err, text, len, clen + 1, SBX_EGRESS_E_PORT,
				 "port must be 1-65535, decimal, no leading zero");

	const char *a = text + rest;
	size_t alen = clen - rest;
	if (alen >= 2 && a[0] == '[' && a[alen - 1] == ']') {
		if (!egress_parse_v6(a + 1, alen - 2, dest->addr))
			return dest_fail(err, text, len, rest, SBX_EGRESS_E_ADDRESS,
					 "not a valid IPv6 address");
		dest->family = 6;
	} else if (egress_parse_v4(a, alen, dest->addr)) {
		dest->family = 4;
	} else if (at != NULL) {
		return dest_fail(err, text, len, rest, SBX_EGRESS_E_ADDRESS,
				 "expected an IPv4 address or [IPv6] after `@`");
	}

	size_t nlen = at != NULL ? (size_t)(at - text) : (dest->family == 0 ? clen : 0);
	if (nlen == 0 && at == NULL) {
		if (dest->family == 0)
			return dest_fail(err, text, len, 0, SBX_EGRESS_E_SYNTAX,
					 "missing address or name before `:port`");
		return 0;
	}
	if (hostbuf == NULL || hostcap < SBX_EGRESS_HOST_MAX + 1)
		return dest_fail(err, text, len, 0, SBX_EGRESS_E_TOO_LONG,
				 "no room for the host name");
	size_t bad = 0;
	const char *why = NULL;
	sbx_egress_errclass cls = egress_check_name(text, nlen, hostbuf, &bad, &why);
	if (cls != SBX_EGRESS_OK)
		return dest_fail(err, text, len, bad, cls, why);
	dest->host = hostbuf;
	return 0;
}

/* ---- the reference evaluator: a plain linear scan, kept obvious ---- */

static bool prefix_match(const uint8_t *rule, const uint8_t *addr, unsigned prefix_len)
{
	for (unsigned bit = 0; bit < prefix_len; bit++) {
		unsigned byte = bit / 8, shift = 7 - bit % 8;
		if (((rule[byte] >> shift) & 1) != ((addr[byte] >> shift) & 1))
			return false;
	}
	return true;
}

static bool rule_matches(const sbx_egress_rule *r, sbx_host_rule_mode mode, const egress_ndest *nd)
{
	if (r->port != 0 && r->port != nd->port)
		return false;
	switch (r->kind) {
	case SBX_RULE_ALL:
		return true;
	case SBX_RULE_IPV4:
		return nd->family == 4 && prefix_match(r->addr, nd->addr, r->prefix_len);
	case SBX_RULE_IPV6:
		return nd->family == 6 && prefix_match(r->addr, nd->addr, r->prefix_len);
	case SBX_RULE_HOST:
		return mode == SBX_HOST_RULES_DOCUMENTED && nd->has_host &&
		       strcmp(r->host, nd->host) == 0;
	case SBX_RULE_WILDCARD: {
		if (mode != SBX_HOST_RULES_DOCUMENTED || !nd->has_host)
			return false;
		size_t sl = strlen(r->host);
		/* Strictly below: at least one character, a dot, then the suffix. */
		if (nd->host_len < sl + 2)
			return false;
		const char *tail = nd->host + nd->host_len - sl;
		return tail[-1] == '.' && strcmp(tail, r->host) == 0;
	}
	}
	return false;
}

sbx_egress_decision sbx_egress_reference_eval(const sbx_egress_list *list, sbx_host_rule_mode mode,
					      const sbx_egress_dest *dest)
{
	sbx_egress_decision d = {
		.allowed = false, .reason = SBX_REASON_DEFAULT_DENY, .rule_index = 0};
	egress_ndest nd;
	egress_normalise_dest(dest, &nd);
	if (egress_fixed_decision(&nd, &d))
		return d;
	if (egress_list_is_open(list)) {
		d.allowed = true;
		d.reason = SBX_REASON_OPEN_POLICY;
		return d;
	}
	for (size_t i = 0; i < list->count; i++) {
		if (rule_matches(&list->rules[i], mode, &nd)) {
			d.allowed = true;
			d.reason = SBX_REASON_RULE;
			d.rule_index = i;
			return d;
		}
	}
	return d;
}

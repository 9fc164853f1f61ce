/* The egress engine parses rules the way spec/egress.md says, prints them
 * canonically, explains rejections, and decides destinations in the spec's
 * order with the compiled policy agreeing with the reference scan. The
 * broad case table lives in fixtures/egress/vectors.json (test_egress_vectors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/egress.h"

static void assert_canonical(const char *in, const char *want)
{
	sbx_egress_rule r, again;
	sbx_egress_error err;
	char buf[SBX_EGRESS_CANON_MAX];
	if (sbx_egress_rule_parse(in, strlen(in), 0, &r, &err) != 0)
		fail_msg("`%s` rejected: %s", in, err.message);
	size_t n = sbx_egress_rule_format(&r, buf, sizeof buf);
	assert_int_equal(n, strlen(buf));
	if (strcmp(buf, want) != 0)
		fail_msg("`%s`: canonical `%s`, expected `%s`", in, buf, want);
	assert_int_equal(sbx_egress_rule_parse(buf, n, 0, &again, &err), 0);
	assert_true(sbx_egress_rule_equal(&r, &again));
}

static void assert_rejected(const char *in, size_t len, sbx_egress_errclass cls)
{
	sbx_egress_rule r;
	sbx_egress_error err;
	if (sbx_egress_rule_parse(in, len, 7, &r, &err) == 0)
		fail_msg("`%s` accepted, expected class %s", in, sbx_egress_errclass_name(cls));
	if (err.cls != cls)
		fail_msg("`%s`: class %s, expected %s (%s)", in, sbx_egress_errclass_name(err.cls),
			 sbx_egress_errclass_name(cls), err.message);
	assert_int_equal(err.index, 7);
	assert_non_null(strstr(err.message, "rule 7 (`"));
}

static void canonical_forms_follow_the_spec(void **state)
{
	(void)state;
	assert_canonical("*", "*");
	assert_canonical("  PyPI.org. ", "pypi.org");
	assert_canonical("GitHub.com:443", "github.com:443");
	assert_canonical("*.PythonHosted.org", "*.pythonhosted.org");
	assert_canonical("*.example.com.:8443", "*.example.com:8443");
	assert_canonical("1.1.1.1:53", "1.1.1.1:53");
	assert_canonical("10.1.2.3/8", "10.0.0.0/8");
	assert_canonical("10.0.0.0/8:8080", "10.0.0.0/8:8080");
	assert_canonical("1.2.3.4/32", "1.2.3.4");
	assert_canonical("0.0.0.0/0", "0.0.0.0/0");
	assert_canonical("2001:DB8:0:0:0:0:0:1", "2001:db8::1");
	assert_canonical("[2001:db8::1]:443", "[2001:db8::1]:443");
	assert_canonical("[2001:db8::1]", "2001:db8::1");
	assert_canonical("2001:db8:ffff::/32", "2001:db8::/32");
	assert_canonical("[2001:db8::/32]:443", "[2001:db8::/32]:443");
	assert_canonical("::1/128", "::1");
	assert_canonical("2001:0:0:1:0:0:0:1", "2001:0:0:1::1");
	assert_canonical("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1");
	assert_canonical("::ffff:10.0.0.1", "::ffff:10.0.0.1");
	assert_canonical("xn--bcher-kva.example", "xn--bcher-kva.example");
	assert_canonical("240.0.0.0/4", "240.0.0.0/4");
}

static void bad_rules_name_their_class(void **state)
{
	(void)state;
	assert_rejected("", 0, SBX_EGRESS_E_EMPTY);
	assert_rejected(" \t ", 3, SBX_EGRESS_E_EMPTY);
	assert_rejected("a_b.com", 7, SBX_EGRESS_E_CHARSET);
	assert_rejected("a.com;rm -rf /", 14, SBX_EGRESS_E_CHARSET);
	assert_rejected("a\0b.com", 7, SBX_EGRESS_E_CHARSET);
	assert_rejected("b\xc3\xbc"
			"cher.de",
			9, SBX_EGRESS_E_CHARSET);
	assert_rejected("*.", 2, SBX_EGRESS_E_WILDCARD);
	assert_rejected("*:443", 5, SBX_EGRESS_E_WILDCARD);
	assert_rejected("a.*.com", 7, SBX_EGRESS_E_WILDCARD);
	assert_rejected("*example.com", 12, SBX_EGRESS_E_WILDCARD);
	assert_rejected("a.com:0", 7, SBX_EGRESS_E_PORT);
	assert_rejected("a.com:65536", 11, SBX_EGRESS_E_PORT);
	assert_rejected("a.com:080", 9, SBX_EGRESS_E_PORT);
	assert_rejected("a.com:", 6, SBX_EGRESS_E_PORT);
	assert_rejected("1.2.3.256", 9, SBX_EGRESS_E_ADDRESS);
	assert_rejected("01.2.3.4", 8, SBX_EGRESS_E_ADDRESS);
	assert_rejected("1.2.3.4/33", 10, SBX_EGRESS_E_PREFIX);
	assert_rejected("1.2.3.4/08", 10, SBX_EGRESS_E_PREFIX);
	assert_rejected("::/129", 6, SBX_EGRESS_E_PREFIX);
	assert_rejected("-a.com", 6, SBX_EGRESS_E_HOST);
	assert_rejected("a-.com", 6, SBX_EGRESS_E_HOST);
	assert_rejected("a..com", 6, SBX_EGRESS_E_HOST);
	assert_rejected("2001:db8::1:443:", 16, SBX_EGRESS_E_ADDRESS);
	assert_rejected("[1.2.3.4]:80", 12, SBX_EGRESS_E_ADDRESS);
	assert_rejected("[::1", 4, SBX_EGRESS_E_SYNTAX);
}

static void label_and_name_limits_are_exact(void **state)
{
	(void)state;
	char name[300];
	memset(name, 'a', 63);
	memcpy(name + 63, ".com", 5);
	assert_canonical(name, name);
	memset(name, 'a', 64);
	memcpy(name + 64, ".com", 5);
	assert_rejected(name, strlen(name), SBX_EGRESS_E_HOST);

	/* 253 characters: 63 + 1 + 63 + 1 + 63 + 1 + 61. */
	char *p = name;
	for (int i = 0; i < 3; i++) {
		memset(p, 'b', 63);
		p[63] = '.';
		p += 64;
	}
	memset(p, 'c', 61);
	p[61] = '\0';
	assert_int_equal(strlen(name), 253);
	assert_canonical(name, name);
	p[61] = 'c';
	p[62] = '\0';
	assert_rejected(name, 254, SBX_EGRESS_E_TOO_LONG);
}

static void messages_are_printable_and_positioned(void **state)
{
	(void)state;
	sbx_egress_rule r;
	sbx_egress_error err;
	const char in[] = "ok.com\x1b[31m\n";
	assert_int_equal(sbx_egress_rule_parse(in, sizeof in - 1, 3, &r, &err), -1);
	assert_int_equal(err.cls, SBX_EGRESS_E_CHARSET);
	assert_int_equal(err.pos, 6);
	for (const char *c = err.message; *c != '\0'; c++)
		assert_true(*c >= 0x20 && *c < 0x7f);
	assert_non_null(strstr(err.message, "rule 3 (`ok.com\\x1b"));
	assert_non_null(strstr(err.message, "at byte 6"));

	assert_int_equal(sbx_egress_rule_parse("*.x.*", 5, 3, &r, &err), -1);
	assert_string_equal(
		err.message,
		"rule 3 (`*.x.*`): `*` is only allowed as the whole first label (at byte 4)");
}

static void json_lists_are_all_or_nothing(void **state)
{
	(void)state;
	sbx_egress_list list;
	sbx_egress_error err;
	cJSON *j = cJSON_Parse("[\" PyPI.org \", \"10.9.9.9/8\", \"[::1]:22\"]");
	assert_int_equal(sbx_egress_list_from_json(j, 1024, &list, &err), 0);
	assert_int_equal(list.count, 3);
	assert_false(list.is_null);
	cJSON *out = sbx_egress_list_to_json(&list);
	char *text = cJSON_PrintUnformatted(out);
	assert_string_equal(text, "[\"pypi.org\",\"10.0.0.0/8\",\"[::1]:22\"]");
	free(text);
	cJSON_Delete(out);

	sbx_egress_list copy;
	assert_int_equal(sbx_egress_list_copy(&list, &copy), 0);
	assert_true(sbx_egress_rule_equal(&copy.rules[2], &list.rules[2]));
	sbx_egress_list_free(&copy);
	sbx_egress_list_free(&list);
	cJSON_Delete(j);

	j = cJSON_Parse("[\"a.com\", 5]");
	assert_int_equal(sbx_egress_list_from_json(j, 1024, &list, &err), -1);
	assert_int_equal(err.cls, SBX_EGRESS_E_TYPE);
	assert_int_equal(err.index, 1);
	assert_null(list.rules);
	cJSON_Delete(j);

	j = cJSON_Parse("[\"a.com\", \"b.com\", \"c.com\"]");
	assert_int_equal(sbx_egress_list_from_json(j, 2, &list, &err), -1);
	assert_int_equal(err.cls, SBX_EGRESS_E_TOO_MANY);
	cJSON_Delete(j);

	j = cJSON_Parse("null");
	assert_int_equal(sbx_egress_list_from_json(j, 2, &list, &err), 0);
	assert_true(list.is_null);
	out = sbx_egress_list_to_json(&list);
	assert_int_equal(cJSON_GetArraySize(out), 0);
	cJSON_Delete(out);
	cJSON_Delete(j);
	assert_int_equal(sbx_egress_list_from_json(NULL, 2, &list, &err), 0);
	assert_true(list.is_null);

	j = cJSON_Parse("\"*\"");
	assert_int_equal(sbx_egress_list_from_json(j, 2, &list, &err), -1);
	assert_int_equal(err.cls, SBX_EGRESS_E_TYPE);
	cJSON_Delete(j);
}

static void nul_escapes_in_json_bodies_are_detected(void **state)
{
	(void)state;
	/* cJSON cuts "pypi.org\u0000.evil" to "pypi.org": the check that lets
	 * the HTTP layer refuse such bodies before they become a rule. */
	const char *evil = "{\"egress\":[\"pypi.org\\u0000.evil\"]}";
	assert_true(sbx_egress_json_has_nul_escape(evil, strlen(evil)));
	const char *bare = "[\"a\\u0000\"]";
	assert_true(sbx_egress_json_has_nul_escape(bare, strlen(bare)));
	const char *escaped_backslash = "[\"a\\\\u0000\"]"; /* a literal backslash, then u0000 */
	assert_false(sbx_egress_json_has_nul_escape(escaped_backslash, strlen(escaped_backslash)));
	const char *other = "[\"a\\u0041\", \"\\n\"]";
	assert_false(sbx_egress_json_has_nul_escape(other, strlen(other)));
	const char *cut = "[\"a\\u000";
	assert_false(sbx_egress_json_has_nul_escape(cut, strlen(cut)));
}

static void destinations_parse_every_form(void **state)
{
	(void)state;
	sbx_egress_dest d;
	sbx_egress_error err;
	char host[SBX_EGRESS_HOST_MAX + 1];
	const char *t = "1.2.3.4:443";
	assert_int_equal(sbx_egress_dest_parse(t, strlen(t), &d, host, sizeof host, &err), 0);
	assert_int_equal(d.family, 4);
	assert_int_equal(d.port, 443);
	assert_null(d.host);
	t = "[2001:db8::1]:80";
	assert_int_equal(sbx_egress_dest_parse(t, strlen(t), &d, host, sizeof host, &err), 0);
	assert_int_equal(d.family, 6);
	t = "PyPI.org:443";
	assert_int_equal(sbx_egress_dest_parse(t, strlen(t), &d, host, sizeof host, &err), 0);
	assert_int_equal(d.family, 0);
	assert_string_equal(d.host, "pypi.org");
	t = "files.pythonhosted.org@151.101.0.223:443";
	assert_int_equal(sbx_egress_dest_parse(t, strlen(t), &d, host, sizeof host, &err), 0);
	assert_int_equal(d.family, 4);
	assert_string_equal(d.host, "files.pythonhosted.org");
	t = "1.2.3.4:0";
	assert_int_equal(sbx_egress_dest_parse(t, strlen(t), &d, host, sizeof host, &err), -1);
	assert_int_equal(err.cls, SBX_EGRESS_E_PORT);
	t = "a.com@nope:80";
	assert_int_equal(sbx_egress_dest_parse(t, strlen(t), &d, host, sizeof host, &err), -1);
	assert_int_equal(err.cls, SBX_EGRESS_E_ADDRESS);
}

static sbx_egress_decision decide(const char *const *rules, size_t n, sbx_host_rule_mode mode,
				  const char *dest_text)
{
	sbx_egress_list list;
	sbx_egress_error err;
	sbx_egress_dest d;
	char host[SBX_EGRESS_HOST_MAX + 1];
	if (sbx_egress_list_from_strings(rules, n, 1024, &list, &err) != 0)
		fail_msg("list rejected: %s", err.message);
	if (sbx_egress_dest_parse(dest_text, strlen(dest_text), &d, host, sizeof host, &err) != 0)
		fail_msg("dest rejected: %s", err.message);
	sbx_egress_policy *p = sbx_egress_policy_compile(&list, mode);
	assert_non_null(p);
	sbx_egress_decision a = sbx_egress_policy_eval(p, &d);
	sbx_egress_decision b = sbx_egress_reference_eval(&list, mode, &d);
	assert_int_equal(a.allowed, b.allowed);
	assert_int_equal(a.reason, b.reason);
	if (a.reason == SBX_REASON_RULE)
		assert_int_equal(a.rule_index, b.rule_index);
	sbx_egress_policy_free(p);
	sbx_egress_list_free(&list);
	return a;
}

static void decisions_follow_the_spec_order(void **state)
{
	(void)state;
	const char *off[] = {"240.0.0.0/4"};
	sbx_egress_decision d = decide(off, 1, SBX_HOST_RULES_OBSERVED, "8.8.8.8:53");
	assert_false(d.allowed);
	assert_int_equal(d.reason, SBX_REASON_DEFAULT_DENY);
	d = decide(off, 1, SBX_HOST_RULES_OBSERVED, "169.254.169.254:80");
	assert_true(d.allowed);
	assert_int_equal(d.reason, SBX_REASON_LINK_LOCAL);
	d = decide(off, 1, SBX_HOST_RULES_OBSERVED, "127.0.0.1:8080");
	assert_int_equal(d.reason, SBX_REASON_LOOPBACK);
	d = decide(off, 1, SBX_HOST_RULES_OBSERVED, "[::1]:22");
	assert_int_equal(d.reason, SBX_REASON_LOOPBACK);
	d = decide(off, 1, SBX_HOST_RULES_OBSERVED, "241.0.0.1:1");
	assert_int_equal(d.reason, SBX_REASON_RULE);

	d = decide(NULL, 0, SBX_HOST_RULES_OBSERVED, "8.8.8.8:53");
	assert_int_equal(d.reason, SBX_REASON_OPEN_POLICY);
	const char *star[] = {"10.0.0.0/8", "*"};
	d = decide(star, 2, SBX_HOST_RULES_OBSERVED, "10.1.1.1:53");
	assert_int_equal(d.reason, SBX_REASON_OPEN_POLICY);

	const char *first[] = {"10.0.0.0/8:443", "10.1.0.0/16", "10.0.0.0/8"};
	d = decide(first, 3, SBX_HOST_RULES_OBSERVED, "10.1.2.3:443");
	assert_int_equal(d.rule_index, 0);
	d = decide(first, 3, SBX_HOST_RULES_OBSERVED, "10.1.2.3:80");
	assert_int_equal(d.rule_index, 1);
	d = decide(first, 3, SBX_HOST_RULES_OBSERVED, "10.2.2.3:80");
	assert_int_equal(d.rule_index, 2);

	const char *names[] = {"*.pythonhosted.org", "pypi.org:443"};
	d = decide(names, 2, SBX_HOST_RULES_DOCUMENTED, "files.pythonhosted.org@151.101.0.223:443");
	assert_int_equal(d.reason, SBX_REASON_RULE);
	assert_int_equal(d.rule_index, 0);
	d = decide(names, 2, SBX_HOST_RULES_DOCUMENTED, "pythonhosted.org:443");
	assert_false(d.allowed);
	d = decide(names, 2, SBX_HOST_RULES_DOCUMENTED, "PyPI.org.:443");
	assert_int_equal(d.rule_index, 1);
	d = decide(names, 2, SBX_HOST_RULES_DOCUMENTED, "pypi.org:80");
	assert_false(d.allowed);
	d = decide(names, 2, SBX_HOST_RULES_OBSERVED, "pypi.org@151.101.0.223:443");
	assert_false(d.allowed);
	assert_int_equal(d.reason, SBX_REASON_DEFAULT_DENY);
}

static void mapped_ipv6_is_judged_as_ipv4(void **state)
{
	(void)state;
	const char *rules[] = {"10.0.0.0/8"};
	sbx_egress_decision d = decide(rules, 1, SBX_HOST_RULES_OBSERVED, "[::ffff:10.1.2.3]:80");
	assert_int_equal(d.reason, SBX_REASON_RULE);
	d = decide(rules, 1, SBX_HOST_RULES_OBSERVED, "[::ffff:169.254.169.254]:80");
	assert_int_equal(d.reason, SBX_REASON_LINK_LOCAL);
	d = decide(rules, 1, SBX_HOST_RULES_OBSERVED, "[::ffff:127.0.0.1]:80");
	assert_int_equal(d.reason, SBX_REASON_LOOPBACK);
	/* fe80::/10 is not the spec's link-local exception. */
	d = decide(rules, 1, SBX_HOST_RULES_OBSERVED, "[fe80::1]:80");
	assert_int_equal(d.reason, SBX_REASON_DEFAULT_DENY);
}

static uint64_t test_rng = 0x2545f4914f6cdd1dULL;

static uint64_t next_rand(void)
{
	test_rng ^= test_rng << 13;
	test_rng ^= test_rng >> 7;
	test_rng ^= test_rng << 17;
	return test_rng;
}

/* A random address inside (or near) the cluster the rules are drawn from. */
static void random_addr(int family, int cluster, uint8_t *addr)
{
	memset(addr, 0, 16);
	size_t bytes = family == 4 ? 4 : 16;
	for (size_t i = 0; i < bytes; i++)
		addr[i] = (uint8_t)next_rand();
	if (cluster && family == 4)
		addr[0] = 10;
	if (cluster && family == 6) {
		addr[0] = 0x20;
		addr[1] = 0x01;
		addr[2] = 0x0d;
		addr[3] = 0xb8;
	}
}

/* Lists far larger than the fuzzer builds (thousands of rules, so the
 * bucket index has many bits), clustered like real allowlists and spread:
 * the compiled policy must give the reference scan's answer everywhere. */
static void large_lists_agree_with_the_reference(void **state)
{
	(void)state;
	enum { NRULES = 3000, NDEST = 4000 };
	sbx_egress_rule *rules = calloc(NRULES, sizeof *rules);
	assert_non_null(rules);
	for (int scenario = 0; scenario < 3; scenario++) {
		int cluster = scenario < 2;
		for (size_t i = 0; i < NRULES; i++) {
			sbx_egress_rule raw;
			sbx_egress_error err;
			char text[SBX_EGRESS_CANON_MAX];
			memset(&raw, 0, sizeof raw);
			int family = scenario == 1 || next_rand() % 4 == 0 ? 6 : 4;
			raw.kind = family == 4 ? SBX_RULE_IPV4 : SBX_RULE_IPV6;
			random_addr(family, cluster, raw.addr);
			unsigned lo = cluster ? (family == 4 ? 8 : 32) : 0;
			unsigned width = family == 4 ? 32 : 128;
			raw.prefix_len = (uint8_t)(lo + next_rand() % (width - lo + 1));
			raw.port = next_rand() % 8 == 0 ? (uint16_t)(1 + next_rand() % 4) : 0;
			sbx_egress_rule_format(&raw, text, sizeof text);
			assert_int_equal(
				sbx_egress_rule_parse(text, strlen(text), i, &rules[i], &err), 0);
		}
		sbx_egress_list list = {.is_null = false, .count = NRULES, .rules = rules};
		sbx_egress_policy *p = sbx_egress_policy_compile(&list, SBX_HOST_RULES_OBSERVED);
		assert_non_null(p);
		for (size_t i = 0; i < NDEST; i++) {
			sbx_egress_dest d = {.port = (uint16_t)(1 + next_rand() % 5)};
			const sbx_egress_rule *r = &rules[next_rand() % NRULES];
			d.family = r->kind == SBX_RULE_IPV4 ? 4 : 6;
			if (next_rand() % 2 == 0) {
				random_addr(d.family, cluster && next_rand() % 4 != 0, d.addr);
			} else {
				memcpy(d.addr, r->addr, 16);
				size_t bits = d.family == 4 ? 32 : 128;
				for (size_t b = r->prefix_len; b < bits; b++) {
					if (next_rand() & 1)
						d.addr[b / 8] |= (uint8_t)(1 << (7 - b % 8));
				}
			}
			sbx_egress_decision a = sbx_egress_policy_eval(p, &d);
			sbx_egress_decision b =
				sbx_egress_reference_eval(&list, SBX_HOST_RULES_OBSERVED, &d);
			if (a.allowed != b.allowed || a.reason != b.reason ||
			    a.rule_index != b.rule_index)
				fail_msg("scenario %d destination %zu: compiled %s/%zu, reference "
					 "%s/%zu",
					 scenario, i, sbx_egress_reason_name(a.reason),
					 a.rule_index, sbx_egress_reason_name(b.reason),
					 b.rule_index);
		}
		sbx_egress_policy_free(p);
	}
	free(rules);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(canonical_forms_follow_the_spec),
		cmocka_unit_test(bad_rules_name_their_class),
		cmocka_unit_test(label_and_name_limits_are_exact),
		cmocka_unit_test(messages_are_printable_and_positioned),
		cmocka_unit_test(json_lists_are_all_or_nothing),
		cmocka_unit_test(nul_escapes_in_json_bodies_are_detected),
		cmocka_unit_test(destinations_parse_every_form),
		cmocka_unit_test(decisions_follow_the_spec_order),
		cmocka_unit_test(mapped_ipv6_is_judged_as_ipv4),
		cmocka_unit_test(large_lists_agree_with_the_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The simulated internet's pure parts (inet_rules.h): the resolver's hosts
 * file and the compilation of egress lists into nftables commands. The
 * kernel side is tested live by egress_live_test.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "inet_rules.h"

static const char hosts_json[] =
	"{\"version\":1,\"hosts\":{\"pypi.org\":[\"151.101.0.223\",\"2001:db8:151::223\"],"
	"\"a.example.com\":[\"192.0.2.12\"],\"example.com\":[\"192.0.2.10\"]}}";

static mock_hosts load(void)
{
	mock_hosts h;
	sbx_err err = {{0}};

	assert_int_equal(mock_hosts_parse(hosts_json, strlen(hosts_json), "t", &h, &err), 0);
	return h;
}

static void hosts_file_is_read_and_looked_up(void **state)
{
	mock_hosts h = load();
	const mock_host *e;

	(void)state;
	assert_int_equal(h.n, 3);
	e = mock_hosts_find(&h, "PyPI.org.");
	assert_non_null(e);
	assert_int_equal(e->naddr, 2);
	assert_int_equal(e->addr[0].family, 4);
	assert_int_equal(e->addr[1].family, 6);
	assert_null(mock_hosts_find(&h, "pypi.org.evil"));
	mock_hosts_free(&h);
}

static void bad_hosts_files_say_where(void **state)
{
	static const struct {
		const char *text, *says;
	} bad[] = {
		{"[]", "not a JSON object"},
		{"{\"version\":2,\"hosts\":{}}", "\"version\" must be 1"},
		{"{\"version\":1,\"hosts\":[]}", "\"hosts\" must be an object"},
		{"{\"version\":1,\"hosts\":{\"a b\":[\"1.2.3.4\"]}}", "not a host name"},
		{"{\"version\":1,\"hosts\":{\"x.org\":[\"1.2.3\"]}}", "\"1.2.3\" is not an IPv4 or IPv6"},
		{"{\"version\":1,\"hosts\":{\"x.org\":[]}}", "needs a list of 1 to"},
		{"{\"version\":1,\"hosts\":{\"x.org\":[\"1.2.3.4\"],\"X.org\":[\"1.2.3.5\"]}}", "appears twice"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mock_hosts h;
		sbx_err err = {{0}};

		assert_int_equal(mock_hosts_parse(bad[i].text, strlen(bad[i].text), "f.json", &h, &err), -1);
		if (strstr(err.msg, bad[i].says) == NULL || strncmp(err.msg, "f.json: ", 8) != 0)
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].text, err.msg, bad[i].says);
		assert_int_equal(h.n, 0);
	}
}

/* The compiled commands for rules (NULL = null list). */
static char *compile(const char *const *rules, size_t n, bool is_null, sbx_host_rule_mode mode,
		     bool blocked)
{
	mock_hosts h = load();
	sbx_egress_list list = {0};
	sbx_egress_error err;
	sbx_strbuf out;

	if (is_null)
		list.is_null = true;
	else
		assert_int_equal(sbx_egress_list_from_strings(rules, n, 1024, &list, &err), 0);
	sbx_strbuf_init(&out);
	assert_true(mock_nft_compile(&out, "s7", &list, mode, &h, blocked));
	sbx_egress_list_free(&list);
	mock_hosts_free(&h);
	return sbx_strbuf_detach(&out, NULL);
}

#define T "add rule inet sbx_internet s7 "

static void open_policies_accept_everything(void **state)
{
	static const char *const star[] = {"10.0.0.0/8", "*"};
	static const char want[] = "flush chain inet sbx_internet s7\n" T "ip daddr 169.254.0.0/16 accept\n" T
				   "accept\n";
	char *s;

	(void)state;
	s = compile(NULL, 0, true, SBX_HOST_RULES_OBSERVED, false);
	assert_string_equal(s, want);
	free(s);
	s = compile(NULL, 0, false, SBX_HOST_RULES_OBSERVED, false);
	assert_string_equal(s, want);
	free(s);
	s = compile(star, 2, false, SBX_HOST_RULES_OBSERVED, false);
	assert_string_equal(s, want);
	free(s);
}

static void address_rules_then_drop(void **state)
{
	static const char *const rules[] = {"240.0.0.0/4", "1.1.1.1:53", "[2001:db8::1]:443", "0.0.0.0/0:80",
					    "::/0", "10.0.0.0/8:80", "10.1.0.0/16:80", "10.1.0.0/16:81",
					    "10.0.0.0/8:80"};
	char *s;

	(void)state;
	s = compile(rules, 9, false, SBX_HOST_RULES_OBSERVED, false);
	/* blocks in sets; a block another of the same port holds is left out
	 * of the address-and-port sets (nftables refuses overlaps there) */
	assert_string_equal(s, "flush chain inet sbx_internet s7\n" T "ip daddr 169.254.0.0/16 accept\n" T
			       "ip daddr { 240.0.0.0/4 } accept\n" T "meta nfproto ipv4 tcp dport 80 accept\n" T
			       "ip daddr . tcp dport { 1.1.1.1/32 . 53, 10.0.0.0/8 . 80, 10.1.0.0/16 . 81 } accept\n" T
			       "meta nfproto ipv4 udp dport 80 accept\n" T
			       "ip daddr . udp dport { 1.1.1.1/32 . 53, 10.0.0.0/8 . 80, 10.1.0.0/16 . 81 } accept\n" T
			       "meta nfproto ipv6 accept\n" T
			       "ip6 daddr . tcp dport { 2001:db8::1/128 . 443 } accept\n" T
			       "ip6 daddr . udp dport { 2001:db8::1/128 . 443 } accept\n" T "drop\n");
	free(s);
}

static void host_rules_match_nothing_observed_and_resolve_documented(void **state)
{
	static const char *const rules[] = {"pypi.org:443", "*.example.com", "nowhere.test"};
	char *s;

	(void)state;
	s = compile(rules, 3, false, SBX_HOST_RULES_OBSERVED, false);
	assert_string_equal(s, "flush chain inet sbx_internet s7\n" T "ip daddr 169.254.0.0/16 accept\n" T
			       "drop\n");
	free(s);
	s = compile(rules, 3, false, SBX_HOST_RULES_DOCUMENTED, false);
	/* the wildcard takes a.example.com, not example.com itself */
	assert_string_equal(s, "flush chain inet sbx_internet s7\n" T "ip daddr 169.254.0.0/16 accept\n" T
			       "ip daddr { 192.0.2.12/32 } accept\n" T
			       "ip daddr . tcp dport { 151.101.0.223/32 . 443 } accept\n" T
			       "ip daddr . udp dport { 151.101.0.223/32 . 443 } accept\n" T
			       "ip6 daddr . tcp dport { 2001:db8:151::223/128 . 443 } accept\n" T
			       "ip6 daddr . udp dport { 2001:db8:151::223/128 . 443 } accept\n" T "drop\n");
	free(s);
}

static void blocked_drops_even_link_local(void **state)
{
	char *s;

	(void)state;
	s = compile(NULL, 0, true, SBX_HOST_RULES_OBSERVED, true);
	assert_string_equal(s, "flush chain inet sbx_internet s7\n" T "drop\n");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hosts_file_is_read_and_looked_up),
		cmocka_unit_test(bad_hosts_files_say_where),
		cmocka_unit_test(open_policies_accept_everything),
		cmocka_unit_test(address_rules_then_drop),
		cmocka_unit_test(host_rules_match_nothing_observed_and_resolve_documented),
		cmocka_unit_test(blocked_drops_even_link_local),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Which flows of the simulated internet go upstream (inet_book.h,
 * INTERNET.md "Upstream"): CIDRs by the dialled address, names by the
 * guest's SNI or Host but only to an address the hosts file gives them.
 * The relay itself is tested live by internet_stubs_test.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "inet_book.h"
#include "inet_rules.h"

static const char hosts_json[] =
	"{\"version\":1,\"hosts\":{\"up.example.test\":[\"203.0.113.5\",\"2001:db8::5\"],"
	"\"a.wild.test\":[\"203.0.113.6\"],\"plain.example.test\":[\"203.0.113.5\"]}}";

static mock_inet_book *book_with(const char *patterns)
{
	mock_inet_book *b = mock_inet_book_new();
	mock_hosts h;
	sbx_err err = {{0}};

	assert_non_null(b);
	assert_int_equal(mock_hosts_parse(hosts_json, strlen(hosts_json), "t", &h, &err), 0);
	assert_int_equal(mock_inet_upstream_set(b, patterns, &err), 0);
	assert_int_equal(mock_inet_upstream_resolve(b, &h, &err), 0);
	mock_hosts_free(&h);
	return b;
}

static bool goes(mock_inet_book *b, const char *addr, const char *host)
{
	uint8_t raw[16] = {0};
	int family = strchr(addr, ':') != NULL ? 6 : 4;

	assert_int_equal(inet_pton(family == 6 ? AF_INET6 : AF_INET, addr, raw), 1);
	return mock_inet_upstream_match(b, family, raw, host);
}

static void names_go_out_only_to_their_addresses(void **state)
{
	mock_inet_book *b = book_with("up.example.test, *.wild.test");

	(void)state;
	assert_true(goes(b, "203.0.113.5", "up.example.test"));
	assert_true(goes(b, "2001:db8::5", "up.example.test"));
	assert_true(goes(b, "203.0.113.5", "up.example.test.")); /* one trailing dot is the name */
	assert_true(goes(b, "203.0.113.6", "a.wild.test"));
	/* the guest's claim at an address that is not the name's */
	assert_false(goes(b, "198.51.100.1", "up.example.test"));
	assert_false(goes(b, "203.0.113.6", "up.example.test"));
	/* names not declared, the suffix itself, no name */
	assert_false(goes(b, "203.0.113.5", "plain.example.test"));
	assert_false(goes(b, "203.0.113.6", "wild.test"));
	assert_false(goes(b, "203.0.113.5", "example.test"));
	assert_false(goes(b, "203.0.113.5", NULL));
	assert_false(goes(b, "203.0.113.5", ""));
	mock_inet_book_free(b);
}

static void cidrs_go_out_by_address_whatever_the_name(void **state)
{
	mock_inet_book *b = book_with("198.51.100.0/25,2001:db8:1::/48");

	(void)state;
	assert_true(goes(b, "198.51.100.127", NULL));
	assert_true(goes(b, "198.51.100.1", "anything.test"));
	assert_false(goes(b, "198.51.100.128", NULL));
	assert_true(goes(b, "2001:db8:1:ffff::1", NULL));
	assert_false(goes(b, "2001:db8:2::1", NULL));
	mock_inet_book_free(b);
}

static void bad_patterns_say_which(void **state)
{
	mock_inet_book *b = mock_inet_book_new();
	mock_hosts h;
	sbx_err err = {{0}};

	(void)state;
	assert_int_equal(mock_hosts_parse(hosts_json, strlen(hosts_json), "t", &h, &err), 0);
	assert_int_equal(mock_inet_upstream_set(b, " , ", &err), -1);
	assert_non_null(strstr(err.msg, "no pattern"));
	assert_int_equal(mock_inet_upstream_set(b, "ok.test,bad/name", &err), -1);
	assert_non_null(strstr(err.msg, "\"bad/name\""));
	mock_inet_book_free(b);

	b = mock_inet_book_new();
	assert_int_equal(mock_inet_upstream_set(b, "up.example.test,*.nowhere.test", &err), 0);
	assert_int_equal(mock_inet_upstream_resolve(b, &h, &err), -1);
	assert_non_null(strstr(err.msg, "*.nowhere.test"));
	assert_false(goes(b, "203.0.113.5", "x.nowhere.test"));
	mock_inet_book_free(b);
	mock_hosts_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_go_out_only_to_their_addresses),
		cmocka_unit_test(cidrs_go_out_by_address_whatever_the_name),
		cmocka_unit_test(bad_patterns_say_which),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

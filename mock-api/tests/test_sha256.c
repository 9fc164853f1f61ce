/* Unit: SHA-256 and HMAC-SHA256 (src/util/sha256.c), which key the tenant
 * hashes of the durable state, against the published known answers:
 * FIPS 180-2 appendix B and RFC 4231 test cases 1, 2, 4 and 6; and the
 * constant-time comparison of secrets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void expect_sha(const void *data, size_t len, const char *want)
{
	uint8_t d[MOCK_SHA256_LEN];
	char got[65];

	mock_sha256(data, len, d);
	hex(d, sizeof(d), got);
	assert_string_equal(got, want);
}

static void sha256_known_answers(void **state)
{
	char *million = malloc(1000000);

	(void)state;
	expect_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	expect_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	expect_sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
		   "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	assert_non_null(million);
	memset(million, 'a', 1000000);
	expect_sha(million, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

static void expect_hmac(const uint8_t *key, size_t klen, const char *data, const char *want)
{
	uint8_t d[MOCK_SHA256_LEN];
	char got[65];

	mock_hmac_sha256(key, klen, data, strlen(data), d);
	hex(d, sizeof(d), got);
	assert_string_equal(got, want);
	mock_hmac_sha256_hex(key, klen, data, got);
	assert_string_equal(got, want);
}

static void hmac_sha256_rfc4231(void **state)
{
	uint8_t k[131];

	(void)state;
	memset(k, 0x0b, 20);
	expect_hmac(k, 20, "Hi There",
		    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	expect_hmac((const uint8_t *)"Jefe", 4, "what do ya want for nothing?",
		    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	/* case 4: key 0x01..0x19, data 50 x 0xcd */
	{
		char data[51];

		for (int i = 0; i < 25; i++)
			k[i] = (uint8_t)(i + 1);
		memset(data, 0xcd, 50);
		data[50] = '\0';
		expect_hmac(k, 25, data,
			    "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
	}
	/* case 6: a key longer than the block is hashed first */
	memset(k, 0xaa, 131);
	expect_hmac(k, 131, "Test Using Larger Than Block-Size Key - Hash Key First",
		    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* mock_equal_ct, which checks a noVNC token against the one the mock
 * would issue: equal only when every byte and the length agree, wherever
 * the difference is (the first byte, the last, a NUL inside). */
static void equal_ct_compares_every_byte(void **state)
{
	const char tok[] = "1700000000000.0123456789abcdef0123456789abcdef";
	char other[sizeof(tok)];

	(void)state;
	assert_true(mock_equal_ct(tok, strlen(tok), tok, strlen(tok)));
	assert_true(mock_equal_ct("", 0, "", 0));
	for (size_t i = 0; i < strlen(tok); i++) {
		memcpy(other, tok, sizeof(tok));
		other[i] ^= 1;
		assert_false(mock_equal_ct(tok, strlen(tok), other, strlen(tok)));
	}
	assert_false(mock_equal_ct(tok, strlen(tok), tok, strlen(tok) - 1));
	assert_false(mock_equal_ct(tok, strlen(tok) - 1, tok, strlen(tok)));
	assert_false(mock_equal_ct("ab\0c", 4, "ab\0d", 4));
	assert_false(mock_equal_ct("", 0, "a", 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sha256_known_answers),
		cmocka_unit_test(hmac_sha256_rfc4231),
		cmocka_unit_test(equal_ct_compares_every_byte),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

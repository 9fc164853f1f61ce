/* sha256: SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) for the durable
 * state's keyed tenant hashes (durable.c, model.c) — no crypto library is
 * linked, and these two small functions are all the mock needs. Checked
 * against the FIPS and RFC 4231 vectors in tests/test_model.c. Pure: no
 * I/O, no locks. mock_equal_ct compares secrets (noVNC tokens). */
#ifndef SBX_MOCK_SHA256_H
#define SBX_MOCK_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOCK_SHA256_LEN 32

void mock_sha256(const void *data, size_t len, uint8_t out[MOCK_SHA256_LEN]);
void mock_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
		      uint8_t out[MOCK_SHA256_LEN]);
/* Lower-case hex of HMAC-SHA256(key, data) into hex (65 bytes). */
void mock_hmac_sha256_hex(const void *key, size_t key_len, const char *data, char hex[65]);
/* Whether a and b hold the same bytes, in a time that depends on the
 * lengths only, never on where they differ: for a secret (a MAC, a token)
 * checked against what a client sent, whose first differing byte memcmp
 * and strcmp would reveal by how long they take. */
bool mock_equal_ct(const void *a, size_t a_len, const void *b, size_t b_len);

#endif

/* sha256: see sha256.h. Written from FIPS 180-4 section 6.2. */
#include "util/sha256.h"

#include <string.h>

typedef struct sha256_ctx {
	uint32_t h[8];
	uint8_t block[64];
	size_t used;    /* bytes in block */
	uint64_t total; /* bytes hashed */
} sha256_ctx;

static const uint32_t k256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static void compress(sha256_ctx *c, const uint8_t *p)
{
	uint32_t w[64], s[8];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(s, c->h, sizeof(s));
	for (int i = 0; i < 64; i++) {
		uint32_t e1 = ror(s[4], 6) ^ ror(s[4], 11) ^ ror(s[4], 25);
		uint32_t ch = (s[4] & s[5]) ^ (~s[4] & s[6]);
		uint32_t t1 = s[7] + e1 + ch + k256[i] + w[i];
		uint32_t a0 = ror(s[0], 2) ^ ror(s[0], 13) ^ ror(s[0], 22);
		uint32_t maj = (s[0] & s[1]) ^ (s[0] & s[2]) ^ (s[1] & s[2]);

		memmove(s + 1, s, 7 * sizeof(s[0]));
		s[4] += t1;
		s[0] = t1 + a0 + maj;
	}
	for (int i = 0; i < 8; i++)
		c->h[i] += s[i];
}

static void sha_init(sha256_ctx *c)
{
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

	memcpy(c->h, h0, sizeof(h0));
	c->used = 0;
	c->total = 0;
}

static void sha_update(sha256_ctx *c, const void *data, size_t len)
{
	const uint8_t *p = data;

	c->total += len;
	while (len > 0) {
		size_t n = 64 - c->used < len ? 64 - c->used : len;

		memcpy(c->block + c->used, p, n);
		c->used += n;
		p += n;
		len -= n;
		if (c->used == 64) {
			compress(c, c->block);
			c->used = 0;
		}
	}
}

static void sha_final(sha256_ctx *c, uint8_t out[MOCK_SHA256_LEN])
{
	uint64_t bits = c->total * 8;
	uint8_t pad = 0x80, zero = 0, len[8];

	sha_update(c, &pad, 1);
	while (c->used != 56)
		sha_update(c, &zero, 1);
	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)(bits >> (56 - 8 * i));
	sha_update(c, len, 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(c->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)c->h[i];
	}
}

void mock_sha256(const void *data, size_t len, uint8_t out[MOCK_SHA256_LEN])
{
	sha256_ctx c;

	sha_init(&c);
	sha_update(&c, data, len);
	sha_final(&c, out);
}

void mock_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
		      uint8_t out[MOCK_SHA256_LEN])
{
	uint8_t k[64] = {0}, pad[64], inner[MOCK_SHA256_LEN];
	sha256_ctx c;

	if (key_len > 64)
		mock_sha256(key, key_len, k);
	else
		memcpy(k, key, key_len);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	sha_init(&c);
	sha_update(&c, pad, 64);
	sha_update(&c, data, len);
	sha_final(&c, inner);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	sha_init(&c);
	sha_update(&c, pad, 64);
	sha_update(&c, inner, sizeof(inner));
	sha_final(&c, out);
}

void mock_hmac_sha256_hex(const void *key, size_t key_len, const char *data, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	uint8_t mac[MOCK_SHA256_LEN];

	mock_hmac_sha256(key, key_len, data, strlen(data), mac);
	for (int i = 0; i < MOCK_SHA256_LEN; i++) {
		hex[2 * i] = digits[mac[i] >> 4];
		hex[2 * i + 1] = digits[mac[i] & 15];
	}
	hex[64] = '\0';
}

bool mock_equal_ct(const void *a, size_t a_len, const void *b, size_t b_len)
{
	const unsigned char *x = a, *y = b;
	/* volatile: the compiler may not stop at the first difference */
	volatile unsigned char diff = a_len == b_len ? 0 : 1;
	size_t n = a_len < b_len ? a_len : b_len;

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(x[i] ^ y[i]);
	return diff == 0;
}

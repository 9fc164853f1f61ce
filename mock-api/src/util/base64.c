/* base64: see base64.h. */
#include "util/base64.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

bool mock_b64_encode(sbx_strbuf *out, const void *data, size_t len)
{
	const unsigned char *p = data;
	char quad[4];

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t left = len - i;

		if (left > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (left > 2)
			v |= p[i + 2];
		quad[0] = ALPHABET[(v >> 18) & 63];
		quad[1] = ALPHABET[(v >> 12) & 63];
		quad[2] = left > 1 ? ALPHABET[(v >> 6) & 63] : '=';
		quad[3] = left > 2 ? ALPHABET[v & 63] : '=';
		if (!sbx_strbuf_append(out, quad, 4))
			return false;
	}
	return !out->oom;
}

/* The 6-bit value of c, -1 when c is not in the alphabet. */
static int sextet(char c)
{
	const char *hit = c != '\0' ? strchr(ALPHABET, c) : NULL;

	return hit != NULL ? (int)(hit - ALPHABET) : -1;
}

/* Where s breaks the canonical form: 0 when it does not, else the
 * 1-based character, with what in why. */
static size_t find_problem(const char *s, size_t n, char *why, size_t cap)
{
	if (n % 4 != 0) {
		snprintf(why, cap, "not valid base64: %zu characters, not a multiple of 4", n);
		return n + 1;
	}
	for (size_t i = 0; i < n; i++) {
		bool tail = i + 2 >= n && (i + 1 == n || s[n - 1] == '=');

		if (s[i] == '=' ? !tail : sextet(s[i]) < 0) {
			snprintf(why, cap, "not valid base64: character %zu is %s", i + 1,
				 s[i] == '=' ? "'=' before the end" : "not in the alphabet");
			return i + 1;
		}
	}
	return 0;
}

char *mock_b64_decode(const char *s, size_t *len, char *why, size_t cap)
{
	size_t n = strlen(s), j = 0;
	char *o;

	if (find_problem(s, n, why, cap) != 0)
		return NULL;
	o = malloc(n / 4 * 3 + 1);
	if (o == NULL) {
		snprintf(why, cap, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i += 4) {
		uint32_t v = (uint32_t)sextet(s[i]) << 18 | (uint32_t)sextet(s[i + 1]) << 12;

		if (s[i + 2] != '=')
			v |= (uint32_t)sextet(s[i + 2]) << 6;
		if (s[i + 3] != '=')
			v |= (uint32_t)sextet(s[i + 3]);
		o[j++] = (char)(v >> 16);
		if (s[i + 2] != '=')
			o[j++] = (char)(v >> 8);
		if (s[i + 3] != '=')
			o[j++] = (char)v;
	}
	o[j] = '\0';
	*len = j;
	return o;
}

/* base64: RFC 4648 section 4 (padded) encoding into a strbuf, and a
 * strict decoder that says what is wrong with bad input. No state. */
#ifndef SBX_MOCK_BASE64_H
#define SBX_MOCK_BASE64_H

#include <stdbool.h>
#include <stddef.h>

#include "sbx/strbuf.h"

/* Appends the encoding of data[0..len) to out (false when out of memory). */
bool mock_b64_encode(sbx_strbuf *out, const void *data, size_t len);
/* Decodes s (canonical padded base64) into a malloc'd buffer (*len bytes,
 * NUL-terminated for convenience). NULL with why written (what is wrong
 * and at which character, or "out of memory"). */
char *mock_b64_decode(const char *s, size_t *len, char *why, size_t cap);

#endif

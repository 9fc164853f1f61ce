/* json_print: JSON text out of the mock — a fast, byte-exact replacement for
 * cJSON_PrintUnformatted and a string escaper for bodies built by hand
 * (exec output, log lines). Pure functions: no locks, no I/O, no HTTP. */
#ifndef SBX_MOCK_JSON_PRINT_H
#define SBX_MOCK_JSON_PRINT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "sbx/strbuf.h"

/* cJSON_PrintUnformatted's exact output, faster (malloc'ed, NULL on OOM). */
char *mock_json_print(const cJSON *item, size_t *len);

/* True when s[0..len) is well-formed UTF-8 (no overlong forms, surrogates
 * or code points past U+10FFFF); else false and the first bad byte's offset
 * in *bad_off (may be NULL). */
bool mock_utf8_valid(const char *s, size_t len, size_t *bad_off);

/* True when s[0..n) is the start of a UTF-8 sequence that more bytes could
 * complete (a lead byte, then only continuation bytes, fewer than it needs). */
bool mock_utf8_incomplete(const char *s, size_t n);

/* JSON string escaping that keeps NUL bytes and replaces invalid UTF-8. */
void json_escape(sbx_strbuf *sb, const char *s, size_t len);
/* The same without the quotes, for text that arrives in pieces: appends the
 * escape of s[0..len) to sb, never taking sb->len past limit (it stops
 * before the first character whose escape would not fit). With more, an
 * incomplete UTF-8 sequence at the end is left for the next call (with the
 * bytes that follow it). Returns how many bytes of s it escaped. */
size_t json_escape_some(sbx_strbuf *sb, const char *s, size_t len, size_t limit, bool more);

#endif

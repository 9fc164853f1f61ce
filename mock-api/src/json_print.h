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

/* JSON string escaping that keeps NUL bytes and replaces invalid UTF-8. */
void json_escape(sbx_strbuf *sb, const char *s, size_t len);

#endif

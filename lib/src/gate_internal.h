/* gate_internal: text helpers shared by the gate modules (UTF-8 decoding, the
 * two white-space sets Langflow's stack uses, Python-style repr). Private to
 * lib/src; never exported, never allocates except through the strbuf given. */
#ifndef SBX_GATE_INTERNAL_H
#define SBX_GATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx/strbuf.h"

/* Decodes one UTF-8 code point at s[*i] (i < len) and advances *i. Invalid or
 * truncated sequences, overlongs and surrogates give -1 and advance one byte. */
int32_t sbx_gate_utf8_next(const char *s, size_t len, size_t *i);
/* Python str.isspace(): what str.strip() removes. */
bool sbx_gate_py_isspace(int32_t cp);
/* Unicode White_Space: what Rust str::trim() removes (pydantic-core ints). */
bool sbx_gate_rust_isspace(int32_t cp);
/* Trims s[0..len) with Python (python=true) or Rust white space; returns the
 * kept range in *start, *end. Invalid bytes are never trimmed. */
void sbx_gate_trim(const char *s, size_t len, bool python, size_t *start, size_t *end);
/* True when every byte is valid UTF-8. */
bool sbx_gate_utf8_valid(const char *s, size_t len);
/* Appends repr(s) as Python 3 would print it for the str os.environ would
 * hold (invalid bytes as surrogate escapes \udcNN). With `truncate`, a repr
 * longer than 50 code points is cut to 25 + "..." + 24, as pydantic-core does
 * for input_value. */
void sbx_gate_py_repr(sbx_strbuf *out, const char *s, size_t len, bool truncate);
/* Allocates a copy of s[start..end), ASCII-lower-cased when `lower`. */
char *sbx_gate_dup_range(const char *s, size_t start, size_t end, bool lower);

#endif

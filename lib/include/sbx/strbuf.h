/* strbuf: a growable, always NUL-terminated byte buffer.
 *
 * Owner frees with sbx_strbuf_free(). An allocation failure latches `oom` and
 * turns later appends into no-ops, so callers check once at the end instead
 * of after every append. Never formats with unbounded sprintf. */
#ifndef SBX_STRBUF_H
#define SBX_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct sbx_strbuf {
	char *data;  /* NUL-terminated once anything was appended; may be NULL when empty */
	size_t len;  /* bytes used, not counting the terminating NUL */
	size_t cap;  /* bytes allocated */
	bool oom;    /* an allocation failed; contents are truncated */
} sbx_strbuf;

#define SBX_STRBUF_INIT {NULL, 0, 0, false}

void sbx_strbuf_init(sbx_strbuf *sb);
void sbx_strbuf_free(sbx_strbuf *sb);
void sbx_strbuf_reset(sbx_strbuf *sb);
bool sbx_strbuf_append(sbx_strbuf *sb, const void *bytes, size_t len);
bool sbx_strbuf_puts(sbx_strbuf *sb, const char *s);
bool sbx_strbuf_printf(sbx_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool sbx_strbuf_vprintf(sbx_strbuf *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* A malloc'ed copy of s (the caller frees it); NULL when s is NULL or out
 * of memory. The one string copy of the project's C code. */
char *sbx_strdup(const char *s);
/* The contents as a C string ("" when empty). Valid until the next append. */
const char *sbx_strbuf_str(const sbx_strbuf *sb);
/* Hands the buffer to the caller (who frees it) and leaves sb empty. */
char *sbx_strbuf_detach(sbx_strbuf *sb, size_t *len);

#endif

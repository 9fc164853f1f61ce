/* strbuf: growable byte buffer; see sbx/strbuf.h. */
#include "sbx/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbx_strbuf_init(sbx_strbuf *sb)
{
	sb->data = NULL;
	sb->len = 0;
	sb->cap = 0;
	sb->oom = false;
}

void sbx_strbuf_free(sbx_strbuf *sb)
{
	free(sb->data);
	sbx_strbuf_init(sb);
}

void sbx_strbuf_reset(sbx_strbuf *sb)
{
	sb->len = 0;
	if (sb->data != NULL)
		sb->data[0] = '\0';
}

static bool strbuf_reserve(sbx_strbuf *sb, size_t extra)
{
	if (sb->oom)
		return false;
	if (extra > ((size_t)-1) / 2 - sb->len - 1) {
		sb->oom = true;
		return false;
	}
	size_t need = sb->len + extra + 1;
	if (need <= sb->cap)
		return true;
	size_t cap = sb->cap == 0 ? 64 : sb->cap;
	while (cap < need)
		cap *= 2;
	char *grown = realloc(sb->data, cap);
	if (grown == NULL) {
		sb->oom = true;
		return false;
	}
	sb->data = grown;
	sb->cap = cap;
	return true;
}

bool sbx_strbuf_append(sbx_strbuf *sb, const void *bytes, size_t len)
{
	if (!strbuf_reserve(sb, len))
		return false;
	if (len > 0)
		memcpy(sb->data + sb->len, bytes, len);
	sb->len += len;
	sb->data[sb->len] = '\0';
	return true;
}

bool sbx_strbuf_puts(sbx_strbuf *sb, const char *s)
{
	return sbx_strbuf_append(sb, s, strlen(s));
}

bool sbx_strbuf_vprintf(sbx_strbuf *sb, const char *fmt, va_list ap)
{
	va_list probe;
	va_copy(probe, ap);
	int n = vsnprintf(NULL, 0, fmt, probe);
	va_end(probe);
	if (n < 0) {
		sb->oom = true;
		return false;
	}
	if (!strbuf_reserve(sb, (size_t)n))
		return false;
	vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
	return true;
}

bool sbx_strbuf_printf(sbx_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	bool ok = sbx_strbuf_vprintf(sb, fmt, ap);
	va_end(ap);
	return ok;
}

const char *sbx_strbuf_str(const sbx_strbuf *sb)
{
	return sb->data != NULL ? sb->data : "";
}

char *sbx_strbuf_detach(sbx_strbuf *sb, size_t *len)
{
	char *out = sb->data;
	if (out == NULL)
		out = calloc(1, 1);
	if (len != NULL)
		*len = sb->len;
	sbx_strbuf_init(sb);
	return out;
}

char *sbx_strdup(const char *s)
{
	size_t n;
	char *r;

	if (s == NULL)
		return NULL;
	n = strlen(s) + 1;
	r = malloc(n);
	if (r != NULL)
		memcpy(r, s, n);
	return r;
}

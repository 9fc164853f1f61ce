/* err: message buffer helpers; see sbx/err.h. */
#include "sbx/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sbx_err_set(sbx_err *err, const char *fmt, ...)
{
	if (err == NULL)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
}

void sbx_err_prefix(sbx_err *err, const char *fmt, ...)
{
	if (err == NULL)
		return;
	char prefix[SBX_ERR_MAX];
	char old[SBX_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	/* Truncation is the documented behaviour: messages are capped. */
	size_t plen = strlen(prefix);
	size_t olen = strnlen(old, sizeof old - 1);
	size_t pos = 0;
	for (size_t i = 0; i < plen && pos < sizeof err->msg - 1; i++)
		err->msg[pos++] = prefix[i];
	for (size_t i = 0; i < 2 && pos < sizeof err->msg - 1; i++)
		err->msg[pos++] = ": "[i];
	for (size_t i = 0; i < olen && pos < sizeof err->msg - 1; i++)
		err->msg[pos++] = old[i];
	err->msg[pos] = '\0';
}

void sbx_err_clear(sbx_err *err)
{
	if (err != NULL)
		err->msg[0] = '\0';
}

/* verdict: how a check records its outcome: the verdict (pass < skip < fail
 * < error, only ever getting worse), its reason, detail lines, and the
 * leftovers a check expects to stay.
 *
 * Only changes the case it is given; never talks to a driver or the control
 * plane and never ends a case. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

/* Verdicts only get worse (pass < skip < fail < error). A worse one
 * replaces the reason, an equal one adds to it, a milder one becomes a
 * detail line. */
__attribute__((format(printf, 3, 0)))
static void set_verdict(struct cf_case *c, const char *v, const char *fmt, va_list ap)
{
	static const char *const rank[] = {"pass", "skip", "fail", "error"};
	int cur = 0, nv = 0, i;
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	for (i = 0; i < 4; i++) {
		if (strcmp(c->verdict, rank[i]) == 0)
			cur = i;
		if (strcmp(v, rank[i]) == 0)
			nv = i;
	}
	if (nv < cur) {
		cf_detail(c, "%s", msg);
		return;
	}
	if (nv > cur) {
		snprintf(c->verdict, sizeof(c->verdict), "%s", v);
		sbx_strbuf_reset(&c->reason);
	} else if (c->reason.len > 0) {
		sbx_strbuf_puts(&c->reason, "; ");
	}
	sbx_strbuf_puts(&c->reason, msg);
}

void cf_fail(struct cf_case *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_verdict(c, "fail", fmt, ap);
	va_end(ap);
}

void cf_skip(struct cf_case *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_verdict(c, "skip", fmt, ap);
	va_end(ap);
}

void cf_error(struct cf_case *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_verdict(c, "error", fmt, ap);
	va_end(ap);
}

void cf_detail(struct cf_case *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON_AddItemToArray(c->details, cJSON_CreateString(msg));
}

bool cf_failed(const struct cf_case *c)
{
	return strcmp(c->verdict, "pass") != 0;
}

void cf_allow_leftover(struct cf_case *c, const char *id_or_prefix)
{
	cJSON_AddItemToArray(c->allowed_leftover, cJSON_CreateString(id_or_prefix));
}


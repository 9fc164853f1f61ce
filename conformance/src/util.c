/* util: small helpers every part of the runner uses: the monotonic clock,
 * tolerant cJSON field access, random tokens (libsbx sys.h), the probed driver's surfaces
 * and capabilities, ID globs.
 *
 * Leaf of the runner: calls nothing else in conformance/src, never decides a
 * verdict and never does I/O beyond getrandom. */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <string.h>
#include <time.h>

#include "conform.h"
#include "sbx/sys.h"

double cf_now_ms(void)
{
	return (double)sbx_mono_us() / 1000.0;
}

const char *cf_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

double cf_num(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

void cf_random_token(struct cf_case *c, char *out, size_t cap)
{
	char hex[17];

	(void)c;
	(void)sbx_random_hex(hex, 16); /* "" when the kernel has no randomness */
	snprintf(out, cap, "tok-%s", hex);
}

bool cf_surface(const struct cf_config *cf, const char *surface)
{
	size_t i;

	for (i = 0; i < cf->surface_count; i++)
		if (strcmp(cf->surfaces[i], surface) == 0)
			return true;
	return false;
}

bool cf_cap_bool(const struct cf_config *cf, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cf->capabilities, k));
}

const char *cf_cap_str(const struct cf_config *cf, const char *k)
{
	return cf_str(cf->capabilities, k);
}

bool cf_glob(const char *pat, const char *s)
{
	return fnmatch(pat, s, 0) == 0;
}

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* A component's output compared with surrounding white space ignored on both
 * sides: the published node trims stdout and stderr (spec appendix, "result
 * (the trimmed stdout)"), and no COMP check makes trimming, or not trimming,
 * a defect; the text between must still be exact. */
bool cf_same_trimmed(const char *got, const char *want)
{
	size_t gl, wl;

	if (got == NULL || want == NULL)
		return got == want;
	while (is_blank(*got))
		got++;
	while (is_blank(*want))
		want++;
	gl = strlen(got);
	wl = strlen(want);
	while (gl > 0 && is_blank(got[gl - 1]))
		gl--;
	while (wl > 0 && is_blank(want[wl - 1]))
		wl--;
	return gl == wl && memcmp(got, want, gl) == 0;
}

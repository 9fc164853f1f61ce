/* checks_common: helpers the check files share (driver start with hello,
 * guest counting, trip-wire and canary code). Never decides a verdict on its
 * own except to mark a harness error. */
#include <string.h>
#include <unistd.h>

#include "conform.h"

struct cf_driver *cf_start(struct cf_case *c, const char *const *env)
{
	struct cf_driver *d = cf_driver_start(c, env);
	cJSON *f, *res;
	const char *et, *em;
	char why[256];

	if (d == NULL)
		return NULL;
	f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "protocol", 1);
	res = cf_op(d, "hello", f, 20, &et, &em);
	cJSON_Delete(f);
	if (res == NULL) {
		if (!cf_driver_broken(d))
			cf_fail(c, "driver: hello failed: %s: %s", et, em);
		return NULL;
	}
	if (!cf_hello_protocol_ok(res, why, sizeof(why)))
		cf_fail(c, "driver: %s", why);
	cJSON_Delete(res);
	return cf_failed(c) ? NULL : d;
}

int cf_live_count(struct cf_case *c, const char *when)
{
	sbx_strbuf names = SBX_STRBUF_INIT;
	cJSON *sbs;
	int n;

	if (c->cf->kind == CF_REAL) {
		/* The account is shared with whatever else the key runs: its
		 * guests are not attributable to this case. */
		cf_detail(c, "%s: leftover guests not checked in --api-url mode", when);
		return 0;
	}
	sbs = cf_sandboxes(c);
	if (sbs == NULL)
		return -1;
	n = cf_live_guests(c, sbs, &names);
	if (n > 0)
		cf_detail(c, "%s: live guests: %s", when, sbx_strbuf_str(&names));
	sbx_strbuf_free(&names);
	cJSON_Delete(sbs);
	return n;
}

bool cf_trip_exists(const struct cf_case *c)
{
	return access(c->trip, F_OK) == 0;
}

const cJSON *cf_find_sandbox(const cJSON *sbs, const char *name)
{
	const cJSON *sb, *best = NULL;

	cJSON_ArrayForEach(sb, sbs) {
		const char *n = cf_str(sb, "name");

		if (name == NULL) {
			const char *a = cf_str(sb, "created_at"), *b = best ? cf_str(best, "created_at") : NULL;

			if (best == NULL || (a != NULL && b != NULL && strcmp(a, b) >= 0))
				best = sb;
		} else if (n != NULL && strcmp(n, name) == 0) {
			best = sb;
		}
	}
	return best;
}

void cf_canary_code(const struct cf_case *c, const char *canary, char *out, size_t cap)
{
	snprintf(out, cap,
		 "try:\n"
		 "    open('%s', 'w').write('ran')\n"
		 "except OSError:\n"
		 "    pass\n"
		 "print('%s')\n",
		 c->trip, canary);
}

bool cf_json_str_array_is(const cJSON *arr, const char *const *want, size_t n)
{
	size_t i;

	if (!cJSON_IsArray(arr) || (size_t)cJSON_GetArraySize(arr) != n)
		return false;
	for (i = 0; i < n; i++) {
		const cJSON *x = cJSON_GetArrayItem(arr, (int)i);

		if (!cJSON_IsString(x) || strcmp(x->valuestring, want[i]) != 0)
			return false;
	}
	return true;
}

/* ref_util: small helpers of the reference backend: tolerant cJSON field
 * access, the monotonic clock, sleeping. A leaf: never calls anything else
 * in conformance/ref and never does network I/O. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "ref.h"
#include "sbx/sys.h"

const char *str_field(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

bool bool_field(const cJSON *o, const char *k, bool dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

double now_ms(void)
{
	return (double)sbx_mono_us() / 1000.0;
}

void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

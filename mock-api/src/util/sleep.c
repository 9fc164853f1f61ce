/* sleep: see sleep.h. */
#define _GNU_SOURCE
#include "util/sleep.h"

#include <time.h>

#include "sbx/sys.h"

void mock_sleep_until_stop(const atomic_bool *stop, int64_t ms)
{
	int64_t end = sbx_mono_us() + ms * 1000;

	while (!atomic_load(stop)) {
		int64_t left = end - sbx_mono_us();
		struct timespec ts;

		if (left <= 0)
			return;
		if (left > 50000)
			left = 50000;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left * 1000;
		nanosleep(&ts, NULL);
	}
}

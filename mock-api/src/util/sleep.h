/* sleep: a sleep that a stop flag cuts short, in slices of at most 50 ms
 * (the monotonic clock is lib's sbx_mono_us, sbx/sys.h). The mock's
 * mock_sleep_ms (ops/core.h) is this with its own stop flag.
 *
 * Knows nothing of the mock: it reads only the flag it is given. */
#ifndef SBX_MOCK_SLEEP_H
#define SBX_MOCK_SLEEP_H

#include <stdatomic.h>
#include <stdint.h>

/* Sleeps up to ms, returns early once *stop is true. */
void mock_sleep_until_stop(const atomic_bool *stop, int64_t ms);

#endif

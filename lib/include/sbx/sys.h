/* sys: small system-call helpers every program of sbx-harness needs, so that
 * none keeps its own copy: closing a descriptor once, a full write that
 * survives EINTR and short writes, random bytes from the kernel, and the
 * monotonic clock.
 *
 * Never falls back silently: a failure is returned with errno set, and the
 * caller decides (a seed may fall back to the clock, a token must not). */
#ifndef SBX_SYS_H
#define SBX_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Closes *fd when it is open (>= 0) and sets it to -1, so a second call,
 * or one on a descriptor never opened, is harmless. */
void sbx_close_fd(int *fd);

/* Writes all len bytes to fd, retrying on EINTR and short writes. Returns 0,
 * or -1 with errno set (a write that returns 0 counts as EIO). */
int sbx_write_all(int fd, const void *buf, size_t len);

/* Fills buf with len bytes from getrandom(2), retrying on EINTR and short
 * reads. Returns 0, or -1 with errno set. */
int sbx_random_bytes(void *buf, size_t len);

/* Writes `digits` random lower-case hex digits and a NUL into out (which
 * holds digits + 1 bytes). Returns 0, or -1 with errno set (out is then ""). */
int sbx_random_hex(char *out, size_t digits);

/* CLOCK_MONOTONIC in milliseconds and in microseconds (for deadlines and
 * durations; never a wall-clock time). */
int64_t sbx_mono_ms(void);
int64_t sbx_mono_us(void);
/* The CLOCK_MONOTONIC time ms from now, as pthread_cond_timedwait wants it
 * for a condition variable on that clock. */
struct timespec sbx_mono_deadline(int64_t ms);

#endif

/* sys: closing once, full writes, kernel random bytes, the monotonic clock; see
 * sbx/sys.h. */
#include "sbx/sys.h"

#include <errno.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

void sbx_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int sbx_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int sbx_random_bytes(void *buf, size_t len)
{
	unsigned char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(p + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

int sbx_random_hex(char *out, size_t digits)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[32];
	size_t o = 0;

	while (o < digits) {
		size_t want = (digits - o + 1) / 2;

		if (want > sizeof(raw))
			want = sizeof(raw);
		if (sbx_random_bytes(raw, want) != 0) {
			out[0] = '\0';
			return -1;
		}
		for (size_t i = 0; i < want && o < digits; i++) {
			out[o++] = hex[raw[i] >> 4];
			if (o < digits)
				out[o++] = hex[raw[i] & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

int64_t sbx_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t sbx_mono_ms(void)
{
	return sbx_mono_us() / 1000;
}

struct timespec sbx_mono_deadline(int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

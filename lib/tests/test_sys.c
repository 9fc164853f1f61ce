/* sys: a descriptor is closed once and marked closed; a full write gets
 * every byte through a pipe; random hex is hex of the length asked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "sbx/sys.h"

static void close_fd_closes_once_and_marks_closed(void **state)
{
	(void)state;
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	int r = fds[0];
	sbx_close_fd(&fds[0]);
	assert_int_equal(fds[0], -1);
	errno = 0;
	assert_int_equal(fcntl(r, F_GETFD), -1); /* really closed */
	assert_int_equal(errno, EBADF);
	/* a second call, and one on a never-opened -1, touch no descriptor:
	 * the write end, which may have been given r's number next, stays open */
	sbx_close_fd(&fds[0]);
	assert_int_equal(fds[0], -1);
	assert_true(fcntl(fds[1], F_GETFD) >= 0);
	sbx_close_fd(&fds[1]);
	assert_int_equal(fds[1], -1);
}

static void write_all_delivers_every_byte(void **state)
{
	(void)state;
	int fds[2];
	char out[3000], in[sizeof out];
	for (size_t i = 0; i < sizeof out; i++)
		out[i] = (char)(i * 7);
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(sbx_write_all(fds[1], out, sizeof out), 0);
	sbx_close_fd(&fds[1]);
	size_t got = 0;
	ssize_t n;
	while ((n = read(fds[0], in + got, sizeof in - got)) > 0)
		got += (size_t)n;
	assert_int_equal(got, sizeof out);
	assert_memory_equal(in, out, sizeof out);
	assert_int_equal(sbx_write_all(fds[0], out, 1), -1); /* a read end: the error comes back */
	sbx_close_fd(&fds[0]);
}

static void random_hex_is_hex_of_the_length_asked(void **state)
{
	(void)state;
	char hex[42];
	assert_int_equal(sbx_random_hex(hex, 41), 0);
	assert_int_equal(strlen(hex), 41);
	assert_int_equal(strspn(hex, "0123456789abcdef"), 41);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(close_fd_closes_once_and_marks_closed),
		cmocka_unit_test(write_all_delivers_every_byte),
		cmocka_unit_test(random_hex_is_hex_of_the_length_asked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

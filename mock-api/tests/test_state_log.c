/* Unit: the durable mutation log (mutation_log.c) without a server — records come
 * back in order; a torn or corrupt last record is detected, dropped with a
 * warning on stderr, and the file is truncated to the last good record so
 * that the next append follows good data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mutation_log.h"

typedef struct seen {
	char rec[8][64];
	size_t n;
} seen;

static void collect(void *arg, const char *payload, size_t len)
{
	seen *s = arg;

	assert_true(s->n < 8);
	assert_int_equal(strlen(payload), len); /* NUL-terminated for the caller */
	snprintf(s->rec[s->n++], sizeof(s->rec[0]), "%s", payload);
}

static void make_dir(char *dir)
{
	assert_non_null(mkdtemp(dir));
}

static void cleanup(const char *dir)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/state.log", dir);
	unlink(path);
	rmdir(dir);
}

static off_t log_size(const char *dir)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/state.log", dir);
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

static void write_three(const char *dir)
{
	sbx_err err = {{0}};
	mock_mutlog *st = mock_mutlog_open(dir, true, NULL, NULL, NULL, &err);

	assert_non_null(st);
	assert_int_equal(mock_mutlog_append(st, "{\"n\":1}", 7, &err), 0);
	assert_int_equal(mock_mutlog_append(st, "{\"n\":2}", 7, &err), 0);
	assert_int_equal(mock_mutlog_append(st, "{\"n\":3}", 7, &err), 0);
	assert_int_equal(mock_mutlog_records(st), 3);
	mock_mutlog_close(st);
}

static void append_raw(const char *dir, const void *bytes, size_t len)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/state.log", dir);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, len), (ssize_t)len);
	close(fd);
}

/* Opens with warnings on, capturing stderr into buf. */
static mock_mutlog *open_capturing(const char *dir, seen *s, size_t *dropped, char *buf, size_t cap)
{
	char tmpl[] = "/tmp/sbx-stderr-XXXXXX";
	int fd = mkstemp(tmpl), saved = dup(2);
	sbx_err err = {{0}};
	mock_mutlog *st;
	ssize_t n;

	assert_true(fd >= 0);
	fflush(stderr);
	dup2(fd, 2);
	st = mock_mutlog_open(dir, false, collect, s, dropped, &err);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, cap - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(tmpl);
	if (st == NULL)
		fail_msg("open: %s", err.msg);
	return st;
}

static void records_come_back_in_order(void **state)
{
	char dir[] = "/tmp/sbx-state-XXXXXX";
	seen s = {0};
	char warn[512];
	size_t dropped = 99;
	mock_mutlog *st;

	(void)state;
	make_dir(dir);
	write_three(dir);
	st = open_capturing(dir, &s, &dropped, warn, sizeof(warn));
	assert_int_equal(s.n, 3);
	assert_string_equal(s.rec[0], "{\"n\":1}");
	assert_string_equal(s.rec[2], "{\"n\":3}");
	assert_int_equal(dropped, 0);
	assert_string_equal(warn, "");
	mock_mutlog_close(st);
	cleanup(dir);
}

static void torn_last_record_is_dropped_and_truncated(void **state)
{
	char dir[] = "/tmp/sbx-state-XXXXXX";
	/* a header announcing 100 bytes, then only 10 of them: a crash mid-write */
	static const unsigned char torn[] = {100, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef,
					     '{', '"', 'n', '"', ':', '4', '4', '4', '4', '4'};
	seen s = {0};
	char warn[512];
	size_t dropped = 0;
	off_t good;
	mock_mutlog *st;
	sbx_err err = {{0}};

	(void)state;
	make_dir(dir);
	write_three(dir);
	good = log_size(dir);
	append_raw(dir, torn, sizeof(torn));
	st = open_capturing(dir, &s, &dropped, warn, sizeof(warn));
	assert_int_equal(s.n, 3);
	assert_int_equal(dropped, sizeof(torn));
	assert_int_equal(log_size(dir), good);
	if (strstr(warn, "warning") == NULL || strstr(warn, "torn record") == NULL)
		fail_msg("expected a torn-record warning on stderr, got \"%s\"", warn);
	/* the next append follows the good data and survives a reopen */
	assert_int_equal(mock_mutlog_append(st, "{\"n\":5}", 7, &err), 0);
	mock_mutlog_close(st);
	memset(&s, 0, sizeof(s));
	st = open_capturing(dir, &s, &dropped, warn, sizeof(warn));
	assert_int_equal(s.n, 4);
	assert_string_equal(s.rec[3], "{\"n\":5}");
	assert_int_equal(dropped, 0);
	mock_mutlog_close(st);
	cleanup(dir);
}

static void torn_header_and_bad_crc_are_detected(void **state)
{
	char dir[] = "/tmp/sbx-state-XXXXXX";
	static const unsigned char half_header[] = {7, 0, 0};
	unsigned char bad[8 + 7];
	seen s = {0};
	char warn[512];
	size_t dropped = 0;
	off_t good;
	mock_mutlog *st;
	uint32_t crc = mock_crc32("{\"n\":9}", 7) ^ 1u;

	(void)state;
	make_dir(dir);
	write_three(dir);
	good = log_size(dir);
	append_raw(dir, half_header, sizeof(half_header));
	st = open_capturing(dir, &s, &dropped, warn, sizeof(warn));
	assert_int_equal(s.n, 3);
	assert_int_equal(dropped, 3);
	assert_non_null(strstr(warn, "torn record header"));
	mock_mutlog_close(st);
	/* a whole record whose CRC does not match: corrupt, dropped too */
	bad[0] = 7;
	bad[1] = bad[2] = bad[3] = 0;
	bad[4] = (unsigned char)crc;
	bad[5] = (unsigned char)(crc >> 8);
	bad[6] = (unsigned char)(crc >> 16);
	bad[7] = (unsigned char)(crc >> 24);
	memcpy(bad + 8, "{\"n\":9}", 7);
	append_raw(dir, bad, sizeof(bad));
	memset(&s, 0, sizeof(s));
	st = open_capturing(dir, &s, &dropped, warn, sizeof(warn));
	assert_int_equal(s.n, 3);
	assert_int_equal(dropped, sizeof(bad));
	assert_non_null(strstr(warn, "CRC mismatch"));
	assert_int_equal(log_size(dir), good);
	mock_mutlog_close(st);
	cleanup(dir);
}

static void crc32_is_the_ieee_one(void **state)
{
	(void)state;
	/* the standard check value of CRC-32/ISO-HDLC */
	assert_int_equal(mock_crc32("123456789", 9), 0xCBF43926u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc32_is_the_ieee_one),
		cmocka_unit_test(records_come_back_in_order),
		cmocka_unit_test(torn_last_record_is_dropped_and_truncated),
		cmocka_unit_test(torn_header_and_bad_crc_are_detected),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

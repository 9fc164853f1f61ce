/* Unit: the durable mutation log (mutation_log.c) without a server — records come
 * back in order; a torn last record (a crash mid-append) is set aside into
 * a dated file with a warning and the log cut back to the last good record
 * so that the next append follows good data; damage (CRC mismatch, a bad
 * length, garbage from byte 0) refuses the open naming the file, the offset
 * and --state-repair, and repair sets the tail aside, counting its records
 * (issue 16: recovery without silent loss). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
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
	char path[512];
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d != NULL)
		closedir(d);
	assert_int_equal(rmdir(dir), 0);
}

/* The size of the one file set aside as state.log.<what>-*, or -1. */
static off_t aside_size(const char *dir, const char *what)
{
	char prefix[64], path[512];
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	off_t size = -1;

	snprintf(prefix, sizeof(prefix), "state.log.%s-", what);
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0600);
		assert_int_equal(size, -1); /* only one */
		size = st.st_size;
	}
	if (d != NULL)
		closedir(d);
	return size;
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
	mock_mutlog *st = mock_mutlog_open(dir, true, false, NULL, NULL, NULL, &err);

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

/* Opens with warnings on, capturing stderr into buf; NULL with the
 * refusal in err. */
static mock_mutlog *try_open(const char *dir, bool repair, seen *s, size_t *dropped, char *buf,
			     size_t cap, sbx_err *err)
{
	char tmpl[] = "/tmp/sbx-stderr-XXXXXX";
	int fd = mkstemp(tmpl), saved = dup(2);
	mock_mutlog *st;
	ssize_t n;

	assert_true(fd >= 0);
	fflush(stderr);
	dup2(fd, 2);
	st = mock_mutlog_open(dir, false, repair, collect, s, dropped, err);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, cap - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(tmpl);
	return st;
}

static mock_mutlog *open_capturing(const char *dir, seen *s, size_t *dropped, char *buf, size_t cap)
{
	sbx_err err = {{0}};
	mock_mutlog *st = try_open(dir, false, s, dropped, buf, cap, &err);

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
	assert_int_equal(aside_size(dir, "torn"), sizeof(torn)); /* kept, not deleted */
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
	/* damage is not a crash artifact: refused, the file left as it is */
	memset(&s, 0, sizeof(s));
	{
		sbx_err err = {{0}};
		char want[64];

		assert_null(try_open(dir, false, &s, &dropped, warn, sizeof(warn), &err));
		snprintf(want, sizeof(want), "at byte offset %lld (record 4;", (long long)good);
		if (strstr(err.msg, "CRC mismatch") == NULL || strstr(err.msg, want) == NULL ||
		    strstr(err.msg, "--state-repair") == NULL || strstr(err.msg, "state.log") == NULL)
			fail_msg("want the file, \"%s\" and --state-repair, got: %s", want, err.msg);
		assert_int_equal(log_size(dir), good + (off_t)sizeof(bad));
		/* --state-repair: the tail set aside, the good records kept */
		memset(&s, 0, sizeof(s));
		st = try_open(dir, true, &s, &dropped, warn, sizeof(warn), &err);
		assert_non_null(st);
	}
	assert_int_equal(s.n, 3);
	assert_int_equal(dropped, sizeof(bad));
	assert_int_equal(log_size(dir), good);
	assert_int_equal(aside_size(dir, "damaged"), sizeof(bad));
	if (strstr(warn, "1 record (15 bytes) set aside") == NULL)
		fail_msg("want the repair reported, got: %s", warn);
	mock_mutlog_close(st);
	cleanup(dir);
}

/* One flipped bit in the middle: refused (it was truncated there with only
 * a warning, losing every later record); repair sets aside the damaged
 * record and the intact one after it, and says so. */
static void damage_mid_log_refuses_and_repair_sets_the_rest_aside(void **state)
{
	char dir[] = "/tmp/sbx-state-XXXXXX";
	char path[256], warn[1024];
	seen s = {0};
	size_t dropped = 0;
	sbx_err err = {{0}};
	mock_mutlog *st;
	unsigned char c;
	int fd;

	(void)state;
	make_dir(dir);
	write_three(dir);
	snprintf(path, sizeof(path), "%s/state.log", dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	/* record 2's payload starts at 15 + 8: flip a bit of its 3rd byte */
	assert_int_equal(pread(fd, &c, 1, 15 + 8 + 2), 1);
	c ^= 0x04;
	assert_int_equal(pwrite(fd, &c, 1, 15 + 8 + 2), 1);
	close(fd);
	assert_null(try_open(dir, false, &s, &dropped, warn, sizeof(warn), &err));
	assert_non_null(strstr(err.msg, "at byte offset 15 (record 2; 1 good records before it"));
	assert_int_equal(log_size(dir), 45);
	memset(&s, 0, sizeof(s));
	st = try_open(dir, true, &s, &dropped, warn, sizeof(warn), &err);
	assert_non_null(st);
	assert_int_equal(s.n, 1);
	assert_int_equal(aside_size(dir, "damaged"), 30);
	if (strstr(warn, "2 records (30 bytes) set aside") == NULL)
		fail_msg("want 2 records set aside reported, got: %s", warn);
	mock_mutlog_close(st);
	cleanup(dir);
}

/* A log that is garbage from byte 0, and a length field damaged so that it
 * runs over the records after it: damage, not a torn tail. */
static void garbage_and_bad_lengths_are_refused(void **state)
{
	char dir[] = "/tmp/sbx-state-XXXXXX";
	char path[256], warn[1024];
	seen s = {0};
	size_t dropped = 0;
	sbx_err err = {{0}};
	unsigned char len2 = 200;
	int fd;

	(void)state;
	make_dir(dir);
	snprintf(path, sizeof(path), "%s/state.log", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "this is not a state log at all\n", 31), 31);
	close(fd);
	assert_null(try_open(dir, false, &s, &dropped, warn, sizeof(warn), &err));
	assert_non_null(strstr(err.msg, "corrupt record length at byte offset 0"));
	assert_int_equal(log_size(dir), 31);
	cleanup(dir);
	snprintf(dir, sizeof(dir), "/tmp/sbx-state-XXXXXX");
	make_dir(dir);
	snprintf(path, sizeof(path), "%s/state.log", dir);
	write_three(dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &len2, 1, 15), 1); /* record 2 claims 200 bytes */
	close(fd);
	assert_null(try_open(dir, false, &s, &dropped, warn, sizeof(warn), &err));
	assert_non_null(strstr(err.msg, "its length runs past the end of the file"));
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
		cmocka_unit_test(damage_mid_log_refuses_and_repair_sets_the_rest_aside),
		cmocka_unit_test(garbage_and_bad_lengths_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

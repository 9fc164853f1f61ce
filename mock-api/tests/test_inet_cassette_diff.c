/* One reader for the cassette format: every text here is given to the
 * mock's loader (mock_cassette_parse, what --internet-replay runs) and to
 * libsbx's reader (sbx_cassette_parse_text, what `sbxctl mock cassette
 * check` runs), and both must say the same: a cassette check calls good
 * must replay, one the mock refuses check must refuse. The texts: both
 * fuzzers' corpora (fuzz/corpus/cassette, fuzz/corpus/mock_cassette) and
 * the edge of each limit of mock-api/LIMITS.md ("Cassettes"), at it and one
 * past it, with the verdict a user relies on asserted too. The numbers are
 * written out, not taken from the headers: they are the documented ones.
 * For an accepted text the mock's writer must write what libsbx's writes.
 * Not under valgrind: two texts hold 65,536 exchanges (26 MB each). */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "inet_cassette.h"
#include "sbx/cassette.h"
#include "sbx/strbuf.h"

#define SHA "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"

enum { BAD = 0, OK = 1, EITHER = 2 };

/* Both readers' verdicts on text, the same, and want's when not EITHER;
 * an accepted text written by both writers, byte for byte. */
static void same_verdict(const char *what, const char *text, size_t len, int want)
{
	sbx_cassette cas;
	sbx_cassette_problems p = {SBX_STRBUF_INIT, 0, false};
	sbx_err err = {{0}};
	bool lib = sbx_cassette_parse_text(text, len, SBX_CASSETTE_FILE, &cas, &p) == 0;
	mock_cassette *c = mock_cassette_parse(text, len, "diff", &err);

	if (lib != (c != NULL))
		fail_msg("%s: libsbx %s, the mock %s (libsbx: %.200s; mock: %.200s)", what, lib ? "accepts" : "refuses",
			 c != NULL ? "accepts" : "refuses", sbx_strbuf_str(&p.text), err.msg);
	if (want != EITHER && lib != (want == OK))
		fail_msg("%s: expected %s, both %s (%.200s)", what, want == OK ? "accepted" : "refused",
			 lib ? "accept" : "refuse", sbx_strbuf_str(&p.text));
	if (c != NULL) {
		sbx_strbuf want_text = SBX_STRBUF_INIT;
		char *got = mock_cassette_text(c);

		assert_int_equal(sbx_cassette_text(&cas, &want_text), 0);
		if (got == NULL || strcmp(got, sbx_strbuf_str(&want_text)) != 0)
			fail_msg("%s: the mock writes\n%.300s\nlibsbx writes\n%.300s", what, got != NULL ? got : "(nothing)",
				 sbx_strbuf_str(&want_text));
		free(got);
		sbx_strbuf_free(&want_text);
	}
	mock_cassette_free(c);
	sbx_cassette_free(&cas);
	sbx_cassette_problems_free(&p);
}

static void corpus(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		char *path = NULL, *text = NULL;
		size_t len = 0;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		assert_true(asprintf(&path, "%s/%s", dir, de->d_name) > 0);
		f = fopen(path, "rb");
		assert_non_null(f);
		text = malloc(1 << 20);
		assert_non_null(text);
		len = fread(text, 1, 1 << 20, f);
		fclose(f);
		same_verdict(path, text, len, EITHER);
		free(text);
		free(path);
		n++;
	}
	closedir(d);
	assert_true(n > 0);
}

static void both_corpora_get_one_verdict(void **state)
{
	(void)state;
	corpus(CASSETTE_CORPUS_DIR "/cassette");
	corpus(CASSETTE_CORPUS_DIR "/mock_cassette");
}

static void header(sbx_strbuf *sb, const char *created, const char *redacted)
{
	sbx_strbuf_printf(sb, "{\"sbx_cassette\":1,\"created\":\"%s\",\"redacted_query\":[%s]}\n", created, redacted);
}

/* One exchange; the fields a case changes are arguments. */
static void exchange(sbx_strbuf *sb, const char *host, const char *method, const char *target,
		     const char *req_headers, int status, const char *reason, unsigned n)
{
	sbx_strbuf_printf(sb,
			  "{\"scheme\":\"https\",\"host\":\"%s\",\"port\":443,\"method\":\"%s\",\"target\":\"%s\","
			  "\"request_headers\":[%s],\"request_body\":null,\"status\":%d,\"reason\":\"%s\","
			  "\"response_headers\":[],\"chunked\":false,\"body\":{\"sha256\":\"" SHA "\",\"size\":1},"
			  "\"n\":%u}\n",
			  host, method, target, req_headers, status, reason, n);
}

static char *repeat(char ch, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, ch, n);
	s[n] = '\0';
	return s;
}

static void check_one(const char *what, const sbx_strbuf *sb, int want)
{
	same_verdict(what, sb->data, sb->len, want);
}

/* A cassette of one exchange with a string field of len bytes. */
static void one_string(const char *what, const char *field, size_t len, int want)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char *s = repeat('a', len);

	header(&sb, "2026-01-01T00:00:00Z", "");
	if (strcmp(field, "target") == 0)
		s[0] = '/';
	exchange(&sb, strcmp(field, "host") == 0 ? s : "deb.test", strcmp(field, "method") == 0 ? s : "GET",
		 strcmp(field, "target") == 0 ? s : "/", "", 200, strcmp(field, "reason") == 0 ? s : "OK", 1);
	check_one(what, &sb, want);
	sbx_strbuf_free(&sb);
	free(s);
}

static void strings_at_and_past_their_limits(void **state)
{
	(void)state;
	one_string("a target of 8192 bytes", "target", 8192, OK);
	one_string("a target of 8193 bytes", "target", 8193, BAD);
	one_string("a target of 10000 bytes", "target", 10000, BAD);
	one_string("a host of 253 bytes", "host", 253, OK);
	one_string("a host of 254 bytes", "host", 254, BAD);
	one_string("a method of 31 bytes", "method", 31, OK);
	one_string("a method of 32 bytes", "method", 32, BAD);
	one_string("a reason of 256 bytes", "reason", 256, OK);
	one_string("a reason of 257 bytes", "reason", 257, BAD);
}

/* count request headers of about `bytes` bytes of names and values in all */
static void headers_case(const char *what, size_t count, size_t bytes, int want)
{
	sbx_strbuf sb = SBX_STRBUF_INIT, h = SBX_STRBUF_INIT;
	size_t each = bytes / count, last = bytes - each * (count - 1);

	header(&sb, "2026-01-01T00:00:00Z", "");
	for (size_t i = 0; i < count; i++) {
		/* name "X" + a value making the pair `each` (the last: the rest) bytes */
		char *v = repeat('v', (i + 1 == count ? last : each) - 1);

		sbx_strbuf_printf(&h, "%s[\"X\",\"%s\"]", i > 0 ? "," : "", v);
		free(v);
	}
	exchange(&sb, "deb.test", "GET", "/", sbx_strbuf_str(&h), 200, "OK", 1);
	check_one(what, &sb, want);
	sbx_strbuf_free(&h);
	sbx_strbuf_free(&sb);
}

static void header_lists_at_and_past_their_limits(void **state)
{
	(void)state;
	headers_case("128 request headers", 128, 256, OK);
	headers_case("129 request headers", 129, 258, BAD);
	headers_case("65536 bytes of request headers", 4, 65536, OK);
	headers_case("65537 bytes of request headers", 4, 65537, BAD);
}

static void redacted_names_case(const char *what, size_t count, size_t len, int want)
{
	sbx_strbuf sb = SBX_STRBUF_INIT, names = SBX_STRBUF_INIT;

	for (size_t i = 0; i < count; i++) {
		char nm[300];
		int k = snprintf(nm, sizeof(nm), "q%zu", i); /* distinct, padded to len with 'q' */

		memset(nm + k, 'q', len - (size_t)k);
		nm[len] = '\0';
		sbx_strbuf_printf(&names, "%s\"%s\"", i > 0 ? "," : "", nm);
	}
	header(&sb, "2026-01-01T00:00:00Z", sbx_strbuf_str(&names));
	exchange(&sb, "deb.test", "GET", "/", "", 200, "OK", 1);
	check_one(what, &sb, want);
	sbx_strbuf_free(&names);
	sbx_strbuf_free(&sb);
}

static void header_line_at_and_past_its_limits(void **state)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;

	(void)state;
	redacted_names_case("32 redacted query names", 32, 8, OK);
	redacted_names_case("33 redacted query names", 33, 8, BAD);
	redacted_names_case("a redacted query name of 255 bytes", 1, 255, OK);
	redacted_names_case("a redacted query name of 256 bytes", 1, 256, BAD);
	header(&sb, "2026-01-01T00:00:00.123456789+02:00", "");
	check_one("created with 9 digits of a second", &sb, OK);
	sbx_strbuf_free(&sb);
	header(&sb, "2026-01-01T00:00:00.1234567891Z", "");
	check_one("created with 10 digits of a second", &sb, BAD);
	sbx_strbuf_free(&sb);
}

static void exchanges_case(const char *what, size_t count, int want)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;

	header(&sb, "2026-01-01T00:00:00Z", "");
	for (size_t i = 0; i < count; i++) {
		char target[32];

		snprintf(target, sizeof(target), "/%08zu", i);
		exchange(&sb, "deb.test", "GET", target, "", 200, "OK", 1);
	}
	check_one(what, &sb, want);
	sbx_strbuf_free(&sb);
}

static void exchange_count_at_and_past_its_limit(void **state)
{
	(void)state;
	exchanges_case("65536 exchanges", 65536, OK);
	exchanges_case("65537 exchanges", 65537, BAD);
}

/* What replay relies on across lines: the order, n from 1 without a gap,
 * a request recorded with two secrets as n=1 and n=2 of one key, the
 * last newline. */
static void lines_together(void **state)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;

	(void)state;
	header(&sb, "2026-01-01T00:00:00Z", "\"token\"");
	exchange(&sb, "deb.test", "GET", "/z?token=redacted-9&x=1", "", 200, "OK", 1);
	exchange(&sb, "deb.test", "GET", "/z?token=redacted-10&x=1", "", 200, "OK", 2);
	check_one("one request recorded with two secrets: n=1 and n=2 of one key", &sb, OK);
	sbx_strbuf_free(&sb);
	header(&sb, "2026-01-01T00:00:00Z", "\"token\"");
	exchange(&sb, "deb.test", "GET", "/z?token=redacted-10&x=1", "", 200, "OK", 2);
	exchange(&sb, "deb.test", "GET", "/z?token=redacted-9&x=1", "", 200, "OK", 1);
	check_one("one key's n=2 before its n=1", &sb, BAD);
	sbx_strbuf_free(&sb);
	header(&sb, "2026-01-01T00:00:00Z", "");
	exchange(&sb, "deb.test", "GET", "/a", "", 200, "OK", 2);
	check_one("n=2 without n=1", &sb, BAD);
	sbx_strbuf_free(&sb);
	header(&sb, "2026-01-01T00:00:00Z", "");
	exchange(&sb, "deb.test", "GET", "/b", "", 200, "OK", 1);
	exchange(&sb, "deb.test", "GET", "/a", "", 200, "OK", 1);
	check_one("/b before /a", &sb, BAD);
	sb.len--; /* the last newline */
	check_one("no newline after the last line", &sb, BAD);
	sbx_strbuf_free(&sb);
	header(&sb, "2026-01-01T00:00:00Z", "");
	exchange(&sb, "deb.test", "GET", "/", "", 600, "OK", 1);
	check_one("status 600", &sb, BAD);
	sbx_strbuf_free(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(both_corpora_get_one_verdict),
		cmocka_unit_test(strings_at_and_past_their_limits),
		cmocka_unit_test(header_lists_at_and_past_their_limits),
		cmocka_unit_test(header_line_at_and_past_its_limits),
		cmocka_unit_test(exchange_count_at_and_past_its_limit),
		cmocka_unit_test(lines_together),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The internet cassette (inet_cassette.h, issue 47): what a reader
 * refuses and how it says so, the replay rule for repeats, the miss's
 * nearest line, redaction, the written file's order, and bodies kept once
 * by their hash. The serving around it is tested live by
 * internet_cassette_test.py; fuzz/mock_cassette_fuzzer.c feeds the loader
 * arbitrary bytes. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "inet_cassette.h"

#define HEADER "{\"sbx_cassette\":1,\"created\":\"2026-01-01T00:00:00Z\",\"redacted_query\":[\"token\"]}\n"
#define SHA_A "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb" /* "a" */
#define SHA_B "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d" /* "b" */

static char *line(const char *target, const char *method, int status, const char *sha, unsigned n)
{
	char *s = NULL;

	if (asprintf(&s,
		     "{\"scheme\":\"https\",\"host\":\"deb.test\",\"port\":443,\"method\":\"%s\",\"target\":\"%s\","
		     "\"request_headers\":[[\"User-Agent\",\"apt\"]],\"request_body\":null,\"status\":%d,"
		     "\"reason\":\"OK\",\"response_headers\":[[\"Content-Type\",\"text/plain\"]],\"chunked\":false,"
		     "\"body\":{\"sha256\":\"%s\",\"size\":1},\"n\":%u}\n",
		     method, target, status, sha, n) < 0)
		return NULL;
	return s;
}

static mock_cassette *parse(const char *text, sbx_err *err)
{
	return mock_cassette_parse(text, strlen(text), "t.cassette", err);
}

static void refused(const char *text, const char *want)
{
	sbx_err err = {{0}};
	mock_cassette *c = parse(text, &err);

	if (c != NULL || strstr(err.msg, want) == NULL)
		fail_msg("expected a refusal saying \"%s\", got %s: \"%s\"", want, c != NULL ? "a cassette" : "refusal",
			 err.msg);
	mock_cassette_free(c);
}

static void a_bad_line_is_refused_naming_its_number(void **state)
{
	char *ok = line("/a", "GET", 200, SHA_A, 1), *text = NULL;

	(void)state;
	/* libsbx's reader's words (sbxctl's check says the same), after the cassette's name */
	refused("{\"sbx_cassette\":2,\"created\":\"x\"}\n",
		"cassette t.cassette: cassette.jsonl:1: cassette format version 2 is not one this reader knows (1)");
	refused("", "cassette t.cassette: cassette.jsonl: empty (line 1 must be the cassette header)");
	assert_true(asprintf(&text, HEADER "%s{\"scheme\":\"https\",\"bogus\":1}\n", ok) > 0);
	refused(text, "cassette t.cassette: cassette.jsonl:3: unknown key \"bogus\"");
	free(text);
	assert_true(asprintf(&text, HEADER "%snot json\n", ok) > 0);
	refused(text, "cassette.jsonl:3: not JSON");
	free(text);
	assert_true(asprintf(&text, HEADER "%s%s", ok, ok) > 0);
	refused(text, "cassette.jsonl:3: the same request and n=1 as line 2");
	free(text);
	{
		char *badport = line("/a", "GET", 200, SHA_A, 1);

		memcpy(strstr(badport, "\"port\":443"), "\"port\":000", 10);
		assert_true(asprintf(&text, HEADER "%s", badport) > 0);
		refused(text, "cassette.jsonl:2: \"port\" is not a port (1..65535)");
		free(text);
		free(badport);
	}
	{
		char *badsha = line("/a", "GET", 200, "ABC", 1);

		assert_true(asprintf(&text, HEADER "%s", badsha) > 0);
		refused(text, "cassette.jsonl:2: \"body\": \"sha256\" is not 64 lowercase hex digits");
		free(text);
		free(badsha);
	}
	free(ok);
}

/* the k-th identical request gets n=k, past the last the last again */
static void repeats_follow_n_then_stay_on_the_last(void **state)
{
	char *l1 = line("/dists/InRelease", "GET", 200, SHA_A, 1), *l2 = line("/dists/InRelease", "GET", 304, SHA_B, 2);
	char *text = NULL;
	sbx_err err = {{0}};
	mock_cassette *c;
	mock_cassette_key k = {.scheme = "https", .host = "deb.test", .port = 443, .method = "GET",
			       .target = "/dists/InRelease"};
	int want[] = {200, 304, 304, 304};

	(void)state;
	assert_true(asprintf(&text, HEADER "%s%s", l1, l2) > 0);
	c = parse(text, &err);
	assert_non_null(c);
	for (size_t i = 0; i < 4; i++) {
		mock_cassette_ex e;

		assert_true(mock_cassette_take(c, &k, &e));
		assert_int_equal(e.status, want[i]);
		mock_cassette_ex_clear(&e);
	}
	/* another port, method or a body: another key, a miss */
	k.port = 8443;
	{
		mock_cassette_ex e;

		assert_false(mock_cassette_take(c, &k, &e));
	}
	mock_cassette_free(c);
	free(text);
	free(l1);
	free(l2);
}

static void a_miss_names_the_request_and_the_nearest(void **state)
{
	char *l1 = line("/pool/main/p/pkg_1.0_all.deb", "GET", 200, SHA_A, 1);
	char *l2 = line("/pool/main/q/other.deb", "GET", 200, SHA_A, 1), *text = NULL, out[2048];
	sbx_err err = {{0}};
	mock_cassette *c;
	mock_cassette_key k = {.scheme = "https", .host = "deb.test", .port = 443, .method = "GET",
			       .target = "/pool/main/p/pkg_1.1_all.deb"};

	(void)state;
	assert_true(asprintf(&text, HEADER "%s%s", l1, l2) > 0);
	c = parse(text, &err);
	assert_non_null(c);
	mock_cassette_miss(c, &k, out, sizeof(out));
	assert_string_equal(out, "sbx-mock cassette t.cassette: no recorded answer for GET "
				 "https://deb.test/pool/main/p/pkg_1.1_all.deb\n"
				 "nearest recorded: GET https://deb.test/pool/main/p/pkg_1.0_all.deb\n");
	k.host = "pypi.test";
	mock_cassette_miss(c, &k, out, sizeof(out));
	assert_non_null(strstr(out, "nearest recorded: none for this host\n"));
	mock_cassette_free(c);
	free(text);
	free(l1);
	free(l2);
}

static char *scratch(void)
{
	char *d = strdup("/tmp/cassette-unit-XXXXXX");

	assert_non_null(mkdtemp(d));
	return d;
}

static void rm_rf(const char *d)
{
	char *cmd = NULL;

	assert_true(asprintf(&cmd, "rm -rf '%s'", d) > 0);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

/* Adds GET target answered with body; its hash into sha. */
static void record(mock_cassette *c, const char *target, const char *auth, const char *body, char sha[65])
{
	mock_cassette_hdr rq[] = {{"Authorization", (char *)auth}, {"Accept", "*/*"}};
	mock_cassette_hdr rs[] = {{"Content-Length", "1"},
				  {"Connection", "keep-alive, X-Hop"},
				  {"X-Hop", "1"},
				  {"Set-Cookie", "s=1"},
				  {"Transfer-Encoding", "chunked"}};
	mock_cassette_ex e = {.scheme = "https", .host = "deb.test", .port = 443, .method = "GET",
			      .target = (char *)target, .req_headers = rq, .nreq_headers = 2, .status = 200,
			      .reason = "OK", .resp_headers = rs, .nresp_headers = 5};
	mock_cassette_body *b;
	sbx_err err = {{0}};

	b = mock_cassette_body_begin(c, &err);
	assert_non_null(b);
	assert_int_equal(mock_cassette_body_write(b, body, strlen(body)), 0);
	assert_int_equal(mock_cassette_body_end(b, sha, &e.body_size, &err), 0);
	memcpy(e.body_sha, sha, 65);
	assert_int_equal(mock_cassette_add(c, &e, &err), 0);
}

/* a recording written, reopened and checked: sorted lines, tokens,
 * hop-by-hop headers gone, each body once */
static void a_recording_is_written_sorted_and_redacted(void **state)
{
	char *d = scratch(), sha[65], path[512], *text;
	const char *redact[] = {"token"};
	sbx_err err = {{0}};
	mock_cassette *c = mock_cassette_open(d, true, redact, 1, &err);
	struct stat st;

	(void)state;
	assert_non_null(c);
	record(c, "/z?token=s3cret&x=1", "Bearer one", "a", sha);
	record(c, "/a", "Bearer two", "a", sha);
	record(c, "/z?token=other&x=1", "Bearer one", "b", sha);
	assert_int_equal(mock_cassette_write(c, &err), 0);
	text = mock_cassette_text(c);
	assert_null(strstr(text, "s3cret"));
	assert_null(strstr(text, "Bearer"));
	assert_null(strstr(text, "X-Hop"));
	assert_null(strstr(text, "Transfer-Encoding"));
	/* /a sorts first; the two /z?token= requests are one key: n=1 and 2 */
	assert_true(strstr(text, "\"target\":\"/a\"") < strstr(text, "\"target\":\"/z?token=redacted-"));
	/* tokens in order of first use: the first query value, then its Authorization */
	assert_non_null(strstr(text, "\"target\":\"/z?token=redacted-1&x=1\""));
	assert_non_null(strstr(text, "[\"Authorization\",\"redacted-2\"]"));
	assert_non_null(strstr(text, "\"n\":2}"));
	free(text);
	snprintf(path, sizeof(path), "%s/bodies/%.2s/%s", d, SHA_A, SHA_A);
	assert_int_equal(stat(path, &st), 0);
	mock_cassette_free(c);
	/* reopened: the same key with another token value still matches */
	c = mock_cassette_open(d, false, NULL, 0, &err);
	assert_non_null(c);
	{
		mock_cassette_key k = {.scheme = "https", .host = "deb.test", .port = 443, .method = "GET",
				       .target = "/z?token=anything&x=1"};
		mock_cassette_ex e;

		assert_true(mock_cassette_take(c, &k, &e));
		assert_string_equal(e.body_sha, SHA_A);
		mock_cassette_ex_clear(&e);
	}
	mock_cassette_free(c);
	/* a body whose content does not match its name is refused, named */
	{
		FILE *f = fopen(path, "w");

		fputs("x", f);
		fclose(f);
	}
	c = mock_cassette_open(d, false, NULL, 0, &err);
	assert_null(c);
	assert_non_null(strstr(err.msg, "not its name"));
	assert_non_null(strstr(err.msg, SHA_A));
	unlink(path);
	c = mock_cassette_open(d, false, NULL, 0, &err);
	assert_null(c);
	assert_non_null(strstr(err.msg, ": missing (named by cassette.jsonl:"));
	rm_rf(d);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_bad_line_is_refused_naming_its_number),
		cmocka_unit_test(repeats_follow_n_then_stay_on_the_last),
		cmocka_unit_test(a_miss_names_the_request_and_the_nearest),
		cmocka_unit_test(a_recording_is_written_sorted_and_redacted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

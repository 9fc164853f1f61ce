/* libsbx's cassette module (sbx/cassette.h) alone: the text reader's
 * verdicts and messages, the order and key of exchanges, redaction token
 * renumbering, and writing a cassette whole (sorted, the old file kept on a
 * failure). The sbxctl verbs on it: tools/tests/test_ctl_cassette.c. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sbx/cassette.h"

#define HDR "{\"sbx_cassette\":1,\"created\":\"2024-05-01T12:00:00Z\",\"redacted_query\":[\"sig\"]}\n"
#define SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static char *ex_line(const char *host, const char *target, const char *auth, int n)
{
	char *s = NULL;
	assert_true(asprintf(&s, "{\"scheme\":\"https\",\"host\":\"%s\",\"port\":443,\"method\":\"GET\",\"target\":\"%s\","
				 "\"request_headers\":[[\"Authorization\",\"%s\"]],\"request_body\":null,\"status\":200,"
				 "\"reason\":\"OK\",\"response_headers\":[],\"chunked\":false,\"body\":{\"sha256\":\"" SHA
				 "\",\"size\":0},\"n\":%d}\n", host, target, auth, n) > 0);
	return s;
}

static char *text_of(const char *const *lines)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;
	sbx_strbuf_puts(&sb, HDR);
	for (size_t i = 0; lines[i] != NULL; i++)
		sbx_strbuf_puts(&sb, lines[i]);
	return sbx_strbuf_detach(&sb, NULL);
}

static void reads_a_good_text_and_its_fields(void **state)
{
	(void)state;
	char *l[] = {ex_line("a.test", "/x?sig=redacted-2&v=1", "redacted-1", 1),
		     ex_line("a.test", "/x?sig=redacted-2&v=1", "redacted-1", 2), NULL};
	char *t = text_of((const char *const *)l);
	sbx_cassette cas;
	sbx_cassette_problems p = {SBX_STRBUF_INIT, 0, false};
	assert_int_equal(sbx_cassette_parse_text(t, strlen(t), "c", &cas, &p), 0);
	assert_int_equal(cas.nex, 2);
	assert_string_equal(cas.ex[1].host, "a.test");
	assert_int_equal(cas.ex[1].n, 2);
	assert_int_equal(cas.ex[1].line, 3);
	assert_string_equal(cas.redacted_query[0], "sig");
	assert_int_equal(sbx_cassette_max_token(&cas), 2);
	/* renumbering moves header and query tokens, nothing else */
	assert_int_equal(sbx_cassette_renumber(&cas.ex[0], &cas, 10), 0);
	assert_string_equal(cas.ex[0].target, "/x?sig=redacted-12&v=1");
	char *s = cJSON_PrintUnformatted(cJSON_GetObjectItem(cas.ex[0].obj, "request_headers"));
	assert_string_equal(s, "[[\"Authorization\",\"redacted-11\"]]");
	free(s);
	sbx_cassette_free(&cas);
	sbx_cassette_problems_free(&p);
	free(t);
	free(l[0]);
	free(l[1]);
}

static void every_problem_is_named_with_its_line(void **state)
{
	(void)state;
	char *l[] = {ex_line("b.test", "/", "redacted-1", 1), ex_line("a.test", "/", "redacted-1", 1),
		     ex_line("a.test", "/", "redacted-1", 1), ex_line("a.test", "/z", "Basic eA==", 1),
		     ex_line("A.test", "/", "redacted-1", 1), NULL};
	char *t = text_of((const char *const *)l);
	sbx_cassette cas;
	sbx_cassette_problems p = {SBX_STRBUF_INIT, 0, false};
	assert_int_equal(sbx_cassette_parse_text(t, strlen(t), "c", &cas, &p), -1);
	const char *msg = sbx_strbuf_str(&p.text);
	assert_non_null(strstr(msg, "c:3: out of order after line 2"));
	assert_non_null(strstr(msg, "c:4: the same request and n=1 as line 3"));
	assert_non_null(strstr(msg, "c:5: \"request_headers\"[0]: the Authorization value is not a redaction token"));
	assert_non_null(strstr(msg, "c:6: \"host\" is not a lowercase host name"));
	assert_int_equal(p.count, 4);
	sbx_cassette_free(&cas);
	sbx_cassette_problems_free(&p);
	free(t);
	for (size_t i = 0; l[i] != NULL; i++)
		free(l[i]);
}

static void write_sorts_and_replaces_the_file_whole(void **state)
{
	(void)state;
	char dir[] = "/tmp/sbx-cassette-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *l[] = {ex_line("b.test", "/", "redacted-1", 1), ex_line("a.test", "/", "redacted-1", 1), NULL};
	sbx_cassette cas;
	memset(&cas, 0, sizeof cas);
	cas.created = strdup("2024-05-01T12:00:00Z");
	cas.ex = calloc(2, sizeof *cas.ex);
	sbx_err e = {""};
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(sbx_cassette_parse_exchange(l[i], strlen(l[i]) - 1, "t", i + 2, &cas, &cas.ex[i], &e), 0);
		cas.nex++;
	}
	assert_int_equal(sbx_cassette_write(dir, &cas, &e), 0);
	sbx_cassette back;
	sbx_cassette_problems p = {SBX_STRBUF_INIT, 0, false};
	assert_int_equal(sbx_cassette_load(dir, SBX_CASSETTE_LINES, &back, &p, NULL), 0);
	assert_string_equal(back.ex[0].host, "a.test"); /* sorted on the way out */
	sbx_cassette_free(&back);
	/* a folder that cannot be written: an error naming it, the file as it was */
	char *path = NULL;
	assert_true(asprintf(&path, "%s/%s", dir, SBX_CASSETTE_FILE) > 0);
	struct stat before, after;
	assert_int_equal(stat(path, &before), 0);
	assert_int_equal(chmod(dir, 0500), 0);
	int rc = sbx_cassette_write(dir, &cas, &e);
	chmod(dir, 0700);
	if (geteuid() != 0) {
		assert_int_equal(rc, -1);
		assert_non_null(strstr(e.msg, dir));
		assert_int_equal(stat(path, &after), 0);
		assert_true(before.st_ino == after.st_ino);
	}
	unlink(path);
	rmdir(dir);
	free(path);
	sbx_cassette_free(&cas);
	sbx_cassette_problems_free(&p);
	free(l[0]);
	free(l[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_a_good_text_and_its_fields),
		cmocka_unit_test(every_problem_is_named_with_its_line),
		cmocka_unit_test(write_sorts_and_replaces_the_file_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* sbxctl's offline cassette verbs (mock cassette list|check|prune|merge) on
 * cassettes this test writes by hand, as the spec says a recorder writes
 * them (lib/README.md, "Cassettes"): a gzip body kept as gzip
 * bytes, a chunked answer, redacted credentials and query values, a
 * repeated request (n=2), a POST with a request body; then the same
 * cassette broken one way at a time (a missing body, a body whose hash is
 * not its name, bad lines). Each test runs in its own scratch folder. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl_run.h"
#include "sbx/cassette.h"

static const unsigned char gzip_body[] = {
	0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x0b, 0x48, 0x4c, 0xce, 0x4e, 0x4c,
	0x4f, 0xb5, 0x52, 0xc8, 0x48, 0xcd, 0xc9, 0xc9, 0xe7, 0x0a, 0x4b, 0x2d, 0x2a, 0xce, 0xcc, 0xcf,
	0xb3, 0x52, 0x30, 0xd4, 0x33, 0xe0, 0x02, 0x00, 0x88, 0xaf, 0xf4, 0x77, 0x1c, 0x00, 0x00, 0x00};

typedef struct scratch {
	char root[64];
} scratch;

static char *path_in(const char *dir, const char *rel)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", dir, rel) > 0);
	return p;
}

/* Stores a body as a recorder does: bodies/ab/<sha256>; sha gets its hash. */
static void put_body(const char *dir, const void *bytes, size_t len, char sha[65])
{
	char *tmp = path_in(dir, "body.tmp"), *b = path_in(dir, "bodies");
	uint64_t size = 0;
	sbx_err e = {""};
	FILE *f = fopen(tmp, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	fclose(f);
	assert_int_equal(sbx_cassette_hash_file(tmp, sha, &size, &e), 0);
	mkdir(b, 0755);
	sbx_strbuf path = SBX_STRBUF_INIT;
	sbx_strbuf_printf(&path, "%s/%.2s", b, sha);
	mkdir(path.data, 0755);
	sbx_strbuf_printf(&path, "/%s", sha);
	assert_int_equal(rename(tmp, path.data), 0);
	sbx_strbuf_free(&path);
	free(tmp);
	free(b);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *read_text(const char *path)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char buf[4096];
	size_t n;
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		sbx_strbuf_append(&sb, buf, n);
	fclose(f);
	return sbx_strbuf_detach(&sb, NULL);
}

/* One exchange line with the spec's keys in the spec's order. */
static void line(sbx_strbuf *sb, const char *scheme, const char *host, int port, const char *method,
		 const char *target, const char *req_headers, const char *req_body_sha, size_t req_body_len,
		 int status, const char *resp_headers, bool chunked, const char *sha, size_t size, int n)
{
	sbx_strbuf_printf(sb, "{\"scheme\":\"%s\",\"host\":\"%s\",\"port\":%d,\"method\":\"%s\",\"target\":\"%s\","
			      "\"request_headers\":[[\"User-Agent\",\"Debian APT-HTTP/1.3 (2.6.1)\"]%s],",
			  scheme, host, port, method, target, req_headers);
	if (req_body_sha != NULL)
		sbx_strbuf_printf(sb, "\"request_body\":{\"sha256\":\"%s\",\"size\":%zu},", req_body_sha, req_body_len);
	else
		sbx_strbuf_puts(sb, "\"request_body\":null,");
	sbx_strbuf_printf(sb, "\"status\":%d,\"reason\":\"OK\",\"response_headers\":[[\"Content-Type\","
			      "\"application/octet-stream\"]%s],\"chunked\":%s,\"body\":{\"sha256\":\"%s\",\"size\":%zu},"
			      "\"n\":%d}\n", status, resp_headers, chunked ? "true" : "false", sha, size, n);
}

/* The shas of the good cassette's bodies, for the tests that break it. */
typedef struct good {
	char gz[65], rel[65], idx1[65], idx2[65], form[65], ok[65];
} good;

/* A cassette as a recorder writes one: header, then lines sorted by
 * scheme, host, port, target, method, n. */
static void write_good(const char *dir, good *g)
{
	mkdir(dir, 0755);
	put_body(dir, gzip_body, sizeof gzip_body, g->gz);
	put_body(dir, "Origin: Debian\n", 15, g->rel);
	put_body(dir, "<a href=x-1.0.tar.gz>x</a>\n", 27, g->idx1);
	put_body(dir, "<a href=x-1.1.tar.gz>x</a>\n", 27, g->idx2);
	put_body(dir, "name=x&v=1", 10, g->form);
	put_body(dir, "{\"ok\":true}", 11, g->ok);
	sbx_strbuf sb = SBX_STRBUF_INIT;
	sbx_strbuf_puts(&sb, "{\"sbx_cassette\":1,\"created\":\"2024-05-01T12:00:00Z\",\"redacted_query\":[\"token\"]}\n");
	line(&sb, "http", "deb.test", 80, "GET", "/debian/dists/stable/InRelease", "", NULL, 0, 200, "", false,
	     g->rel, 15, 1);
	line(&sb, "http", "deb.test", 80, "GET", "/debian/pool/h.deb.gz", "", NULL, 0, 200,
	     ",[\"Content-Encoding\",\"gzip\"]", true, g->gz, sizeof gzip_body, 1);
	line(&sb, "https", "api.test", 443, "POST", "/v1/submit", ",[\"Authorization\",\"redacted-1\"]", g->form,
	     10, 201, ",[\"Set-Cookie\",\"redacted-2\"]", false, g->ok, 11, 1);
	line(&sb, "https", "pypi.test", 443, "GET", "/simple/x/?token=redacted-3", "", NULL, 0, 200, "", false,
	     g->idx1, 27, 1);
	line(&sb, "https", "pypi.test", 443, "GET", "/simple/x/?token=redacted-3", "", NULL, 0, 200, "", true,
	     g->idx2, 27, 2);
	char *p = path_in(dir, SBX_CASSETTE_FILE);
	write_file(p, sb.data);
	free(p);
	sbx_strbuf_free(&sb);
}

static int setup(void **state)
{
	scratch *s = calloc(1, sizeof *s);
	snprintf(s->root, sizeof s->root, "/tmp/sbxctl-cassette-XXXXXX");
	assert_non_null(mkdtemp(s->root));
	assert_int_equal(chdir(s->root), 0);
	*state = s;
	return 0;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int teardown(void **state)
{
	scratch *s = *state;
	assert_int_equal(chdir("/"), 0);
	nftw(s->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(s);
	return 0;
}

static void expect_in(const char *hay, const char *needle, const char *where)
{
	if (hay == NULL || strstr(hay, needle) == NULL)
		fail_msg("%s: expected \"%s\" in:\n%s", where, needle, hay != NULL ? hay : "(null)");
}

/* ---- list, check ---- */

static void list_prints_each_exchange_and_totals(void **state)
{
	(void)state;
	good g;
	write_good("c", &g);
	ctl_run r = ctl_run_args("mock", "cassette", "list", "c", NULL);
	assert_int_equal(r.rc, 0);
	char want[200];
	snprintf(want, sizeof want, "GET http://deb.test:80/debian/pool/h.deb.gz  200  %zu  %.12s  n=1\n",
		 sizeof gzip_body, g.gz);
	expect_in(r.out, want, "list");
	snprintf(want, sizeof want, "GET https://pypi.test:443/simple/x/?token=redacted-3  200  27  %.12s  n=2\n",
		 g.idx2);
	expect_in(r.out, want, "list");
	snprintf(want, sizeof want, "POST https://api.test:443/v1/submit  201  11  %.12s  n=1\n", g.ok);
	expect_in(r.out, want, "list");
	expect_in(r.out, "5 exchanges, 3 hosts, 128 bytes in answers; 6 bodies on disk (138 bytes)\n", "list totals");
	ctl_run_free(&r);

	r = ctl_run_args("mock", "cassette", "list", "c", "--json", NULL);
	assert_int_equal(r.rc, 0);
	cJSON *o = cJSON_Parse(r.out);
	assert_non_null(o);
	const cJSON *t = cJSON_GetObjectItem(o, "totals"), *ex = cJSON_GetObjectItem(o, "exchanges");
	assert_int_equal(cJSON_GetObjectItem(t, "exchanges")->valueint, 5);
	assert_int_equal(cJSON_GetObjectItem(t, "bodies_on_disk")->valueint, 6);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(ex, 1), "chunked")));
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ex, 4), "url")->valuestring,
			    "https://pypi.test:443/simple/x/?token=redacted-3");
	cJSON_Delete(o);
	ctl_run_free(&r);
}

static void check_accepts_what_a_recorder_writes(void **state)
{
	(void)state;
	good g;
	write_good("c", &g);
	ctl_run r = ctl_run_args("mock", "cassette", "check", "c", NULL);
	if (r.rc != 0)
		fail_msg("check of a good cassette: exit %d, stderr:\n%s", r.rc, r.err);
	expect_in(r.out, "c: ok: 5 exchanges, 6 bodies (138 bytes), every hash checked", "check");
	ctl_run_free(&r);
}

static void check_names_a_missing_body(void **state)
{
	(void)state;
	good g;
	write_good("c", &g);
	char rel[100];
	snprintf(rel, sizeof rel, "c/bodies/%.2s/%s", g.gz, g.gz);
	assert_int_equal(unlink(rel), 0);
	ctl_run r = ctl_run_args("mock", "cassette", "check", "c", NULL);
	assert_int_equal(r.rc, 1);
	char want[200];
	snprintf(want, sizeof want, "%s: missing (named by cassette.jsonl:3)", rel);
	expect_in(r.err, want, "missing body");
	ctl_run_free(&r);
}

static void check_names_a_body_whose_hash_is_not_its_name(void **state)
{
	(void)state;
	good g;
	write_good("c", &g);
	char rel[100];
	snprintf(rel, sizeof rel, "c/bodies/%.2s/%s", g.idx1, g.idx1);
	write_file(rel, "<a href=x-6.6.tar.gz>x</a>\n"); /* the same size, other bytes */
	ctl_run r = ctl_run_args("mock", "cassette", "check", "c", NULL);
	assert_int_equal(r.rc, 1);
	char want[200];
	snprintf(want, sizeof want, "%s: its SHA-256 is ", rel);
	expect_in(r.err, want, "hash mismatch");
	expect_in(r.err, "not its name (named by cassette.jsonl:5)", "hash mismatch");
	ctl_run_free(&r);
	/* list reads no body: it still lists */
	r = ctl_run_args("mock", "cassette", "list", "c", NULL);
	assert_int_equal(r.rc, 0);
	ctl_run_free(&r);
}

/* Replaces line `no` (1-based) of c/cassette.jsonl with `text` (which
 * carries its own newline, or none). */
static void replace_line(int no, const char *text)
{
	char *old = read_text("c/" SBX_CASSETTE_FILE);
	sbx_strbuf sb = SBX_STRBUF_INIT;
	int at = 1;
	for (char *p = old; *p != '\0'; at++) {
		char *nl = strchr(p, '\n');
		size_t n = nl != NULL ? (size_t)(nl - p) + 1 : strlen(p);
		if (at == no)
			sbx_strbuf_puts(&sb, text);
		else
			sbx_strbuf_append(&sb, p, n);
		p += n;
	}
	write_file("c/" SBX_CASSETTE_FILE, sb.data);
	sbx_strbuf_free(&sb);
	free(old);
}

static void check_names_the_file_line_and_fault_of_a_bad_line(void **state)
{
	(void)state;
	static const struct {
		int line;
		const char *text;
		const char *want;
	} cases[] = {
		{3, "{\"scheme\":\"http\",\n", "c/cassette.jsonl:3: not JSON"},
		{1, "{\"sbx_cassette\":2,\"created\":\"2024-05-01T12:00:00Z\",\"redacted_query\":[]}\n",
		 "c/cassette.jsonl:1: cassette format version 2 is not one this reader knows (1)"},
		{2, "{\"scheme\":\"http\",\"host\":\"deb.test\"}\n", "c/cassette.jsonl:2: missing key \"port\""},
		{2, "{\"host\":\"deb.test\",\"scheme\":\"http\"}\n",
		 "c/cassette.jsonl:2: key \"host\" where \"scheme\" belongs"},
		{6, "", "c/cassette.jsonl:5: n=2 but this request's n=1 is not in the cassette"},
		{3, "\n", "c/cassette.jsonl:3: an empty line"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		good g;
		write_good("c", &g);
		if (i == 4)
			replace_line(5, ""); /* drop n=1 of the repeated request */
		else
			replace_line(cases[i].line, cases[i].text);
		ctl_run r = ctl_run_args("mock", "cassette", "check", "c", NULL);
		assert_int_equal(r.rc, 1);
		expect_in(r.err, cases[i].want, "bad line");
		expect_in(r.err, "sbxctl: cassette c: ", "bad line summary");
		ctl_run_free(&r);
	}
}

/* text with its first `from` replaced by `to` (text is freed). */
static char *replace_once(char *text, const char *from, const char *to)
{
	char *p = strstr(text, from);
	assert_non_null(p);
	sbx_strbuf sb = SBX_STRBUF_INIT;
	sbx_strbuf_append(&sb, text, (size_t)(p - text));
	sbx_strbuf_puts(&sb, to);
	sbx_strbuf_puts(&sb, p + strlen(from));
	free(text);
	return sbx_strbuf_detach(&sb, NULL);
}

static void check_refuses_unredacted_credentials_and_hop_by_hop_headers(void **state)
{
	(void)state;
	good g;
	write_good("c", &g);
	char *text = read_text("c/" SBX_CASSETTE_FILE);
	text = replace_once(text, "redacted-1", "Bearer abc");
	text = replace_once(text, "?token=redacted-3", "?token=s3cret-key");
	text = replace_once(text, "\"Content-Encoding\",\"gzip\"", "\"Upgrade\",\"h2c\"");
	write_file("c/" SBX_CASSETTE_FILE, text);
	free(text);
	ctl_run r = ctl_run_args("mock", "cassette", "check", "c", NULL);
	assert_int_equal(r.rc, 1);
	expect_in(r.err, "c/cassette.jsonl:4: \"request_headers\"[1]: the Authorization value is not a redaction "
			 "token (redacted-N)", "credential");
	expect_in(r.err, "c/cassette.jsonl:5: \"target\": the value of query parameter token is not a redaction token",
		  "query");
	expect_in(r.err, "c/cassette.jsonl:3: \"response_headers\"[1]: hop-by-hop header Upgrade is never kept",
		  "hop-by-hop");
	ctl_run_free(&r);
}

/* ---- prune ---- */

static void prune_removes_matching_exchanges_then_unnamed_bodies(void **state)
{
	(void)state;
	good g;
	write_good("c", &g);
	ctl_run r = ctl_run_args("mock", "cassette", "prune", "c", "--host", "*.test", "--target-prefix", "/simple/",
				 NULL);
	assert_int_equal(r.rc, 0);
	expect_in(r.out, "removed: GET https://pypi.test:443/simple/x/?token=redacted-3  200  27", "prune");
	char want[200];
	snprintf(want, sizeof want, "removed body %.2s/%s (27 bytes)\n", g.idx2, g.idx2);
	expect_in(r.out, want, "prune bodies");
	expect_in(r.out, "c: 2 exchanges removed, 3 kept; 2 bodies removed (54 bytes)", "prune summary");
	ctl_run_free(&r);
	snprintf(want, sizeof want, "c/bodies/%.2s/%s", g.idx1, g.idx1);
	assert_int_equal(access(want, F_OK), -1);
	char *text = read_text("c/" SBX_CASSETTE_FILE);
	assert_null(strstr(text, "pypi.test"));
	assert_non_null(strstr(text, "\"created\":\"2024-05-01T12:00:00Z\"")); /* the header is kept */
	free(text);
	r = ctl_run_args("mock", "cassette", "check", "c", NULL);
	assert_int_equal(r.rc, 0);
	ctl_run_free(&r);
	/* nothing but the cassette is left in the folder (no temporary file) */
	DIR *d = opendir("c");
	struct dirent *de;
	size_t n = 0;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	assert_int_equal(n, 2);
}

static void prune_keep_bodies_and_dry_run_change_what_they_say(void **state)
{
	(void)state;
	good g;
	write_good("c", &g);
	char *before = read_text("c/" SBX_CASSETTE_FILE);
	ctl_run r = ctl_run_args("mock", "cassette", "prune", "c", "--host", "deb.test", "--dry-run", NULL);
	assert_int_equal(r.rc, 0);
	expect_in(r.out, "would remove: GET http://deb.test:80/debian/dists/stable/InRelease", "dry run");
	expect_in(r.out, "dry run: c: 2 exchanges removed, 3 kept; 2 bodies removed", "dry run");
	ctl_run_free(&r);
	char *after = read_text("c/" SBX_CASSETTE_FILE);
	assert_string_equal(before, after);
	free(after);
	r = ctl_run_args("mock", "cassette", "prune", "c", "--host", "deb.test", "--keep-bodies", NULL);
	assert_int_equal(r.rc, 0);
	expect_in(r.out, "c: 2 exchanges removed, 3 kept; 0 bodies removed", "keep bodies");
	ctl_run_free(&r);
	r = ctl_run_args("mock", "cassette", "check", "c", NULL);
	assert_int_equal(r.rc, 0);
	expect_in(r.out, "note: 2 body files named by no line", "orphans");
	ctl_run_free(&r);
	free(before);
}

static void prune_refuses_a_broken_cassette_and_changes_nothing(void **state)
{
	(void)state;
	good g;
	write_good("c", &g);
	char rel[100];
	snprintf(rel, sizeof rel, "c/bodies/%.2s/%s", g.ok, g.ok);
	assert_int_equal(unlink(rel), 0);
	char *before = read_text("c/" SBX_CASSETTE_FILE);
	ctl_run r = ctl_run_args("mock", "cassette", "prune", "c", "--host", "deb.test", NULL);
	assert_int_equal(r.rc, 1);
	expect_in(r.err, "missing (named by cassette.jsonl:4)", "prune broken");
	expect_in(r.err, "nothing was changed", "prune broken");
	ctl_run_free(&r);
	char *after = read_text("c/" SBX_CASSETTE_FILE);
	assert_string_equal(before, after);
	free(before);
	free(after);
	r = ctl_run_args("mock", "cassette", "prune", "c", "--host", "a*b", NULL);
	assert_int_equal(r.rc, 2);
	expect_in(r.err, "--host 'a*b'", "bad pattern");
	ctl_run_free(&r);
}

/* ---- merge ---- */

static void merge_unites_keeps_the_first_and_renumbers_tokens(void **state)
{
	(void)state;
	good g;
	write_good("a", &g);
	mkdir("b", 0755);
	char rel2[65], npm[65];
	put_body("b", "Origin: Debian 2\n", 17, rel2);
	put_body("b", "{\"name\":\"x\"}", 12, npm);
	sbx_strbuf sb = SBX_STRBUF_INIT;
	sbx_strbuf_puts(&sb, "{\"sbx_cassette\":1,\"created\":\"2024-06-01T08:00:00Z\",\"redacted_query\":[\"token\"]}\n");
	line(&sb, "http", "deb.test", 80, "GET", "/debian/dists/stable/InRelease", "", NULL, 0, 200, "", false, rel2,
	     17, 1);
	line(&sb, "https", "npm.test", 443, "GET", "/x?token=redacted-1", ",[\"Cookie\",\"redacted-2\"]", NULL, 0,
	     200, "", false, npm, 12, 1);
	write_file("b/" SBX_CASSETTE_FILE, sb.data);
	sbx_strbuf_free(&sb);

	ctl_run r = ctl_run_args("mock", "cassette", "merge", "a", "b", "--out", "m", NULL);
	if (r.rc != 0)
		fail_msg("merge: exit %d, stderr:\n%s", r.rc, r.err);
	expect_in(r.out, "conflict: GET http://deb.test:80/debian/dists/stable/InRelease n=1: kept a line 2, "
			 "dropped b line 2 (answers differ", "merge conflict");
	expect_in(r.out, "into m: 6 exchanges, 1 conflict (a's kept); 7 bodies (7 linked, 0 copied)", "merge");
	expect_in(r.out, "redacted-N became redacted-(N+3)", "merge tokens");
	ctl_run_free(&r);
	char *text = read_text("m/" SBX_CASSETTE_FILE);
	expect_in(text, "\"target\":\"/x?token=redacted-4\",\"request_headers\":[[\"User-Agent\","
			"\"Debian APT-HTTP/1.3 (2.6.1)\"],[\"Cookie\",\"redacted-5\"]]", "merged line");
	assert_null(strstr(text, rel2)); /* b's InRelease lost to a's */
	free(text);
	char a_path[100], m_path[100];
	struct stat sa, sm;
	snprintf(a_path, sizeof a_path, "a/bodies/%.2s/%s", g.gz, g.gz);
	snprintf(m_path, sizeof m_path, "m/bodies/%.2s/%s", g.gz, g.gz);
	assert_int_equal(stat(a_path, &sa), 0);
	assert_int_equal(stat(m_path, &sm), 0);
	assert_true(sa.st_ino == sm.st_ino); /* one filesystem: a hard link */
	r = ctl_run_args("mock", "cassette", "check", "m", NULL);
	assert_int_equal(r.rc, 0);
	ctl_run_free(&r);
	/* the out folder exists now: a second merge into it is refused */
	r = ctl_run_args("mock", "cassette", "merge", "a", "b", "--out", "m", NULL);
	assert_int_equal(r.rc, 1);
	expect_in(r.err, "--out m exists and is not an empty folder", "merge again");
	ctl_run_free(&r);
}

/* B does not redact token, so two of its requests differ only in their
 * token's value; under the merge's names (a redacts token) they are one
 * request, answered twice: n=1 and n=2, or the merged file is refused by
 * check (two lines of one request with n=1). */
static void merge_numbers_again_the_requests_the_union_makes_one(void **state)
{
	(void)state;
	good g;
	write_good("a", &g);
	mkdir("b", 0755);
	char one[65], two[65];
	put_body("b", "one", 3, one);
	put_body("b", "two", 3, two);
	sbx_strbuf sb = SBX_STRBUF_INIT;
	sbx_strbuf_puts(&sb, "{\"sbx_cassette\":1,\"created\":\"2024-06-01T08:00:00Z\",\"redacted_query\":[\"sig\"]}\n");
	line(&sb, "https", "npm.test", 443, "GET", "/x?sig=redacted-1&token=redacted-2", "", NULL, 0, 200, "", false,
	     one, 3, 1);
	line(&sb, "https", "npm.test", 443, "GET", "/x?sig=redacted-1&token=redacted-9", "", NULL, 0, 200, "", false,
	     two, 3, 1);
	write_file("b/" SBX_CASSETTE_FILE, sb.data);
	sbx_strbuf_free(&sb);
	ctl_run r = ctl_run_args("mock", "cassette", "check", "b", NULL);
	assert_int_equal(r.rc, 0); /* two requests to b itself */
	ctl_run_free(&r);
	r = ctl_run_args("mock", "cassette", "merge", "a", "b", "--out", "m", NULL);
	if (r.rc != 0)
		fail_msg("merge: exit %d, stderr:\n%s", r.rc, r.err);
	expect_in(r.out, "into m: 7 exchanges, 0 conflicts", "merge");
	ctl_run_free(&r);
	char *text = read_text("m/" SBX_CASSETTE_FILE);
	char want1[200], want2[200];
	snprintf(want1, sizeof want1, "\"body\":{\"sha256\":\"%s\",\"size\":3},\"n\":1}", one);
	snprintf(want2, sizeof want2, "\"body\":{\"sha256\":\"%s\",\"size\":3},\"n\":2}", two);
	expect_in(text, want1, "the first answer, n=1");
	expect_in(text, want2, "the second answer, n=2");
	free(text);
	r = ctl_run_args("mock", "cassette", "check", "m", NULL);
	if (r.rc != 0)
		fail_msg("check of the merge: exit %d, stderr:\n%s", r.rc, r.err);
	ctl_run_free(&r);
}

static void merge_refuses_a_credential_the_other_cassette_redacts(void **state)
{
	(void)state;
	good g;
	write_good("a", &g);
	mkdir("b", 0755);
	char body[65];
	put_body("b", "x", 1, body);
	sbx_strbuf sb = SBX_STRBUF_INIT;
	sbx_strbuf_puts(&sb, "{\"sbx_cassette\":1,\"created\":\"2024-06-01T08:00:00Z\",\"redacted_query\":[]}\n");
	line(&sb, "https", "npm.test", 443, "GET", "/x?token=raw-secret", "", NULL, 0, 200, "", false, body, 1, 1);
	write_file("b/" SBX_CASSETTE_FILE, sb.data);
	sbx_strbuf_free(&sb);
	ctl_run r = ctl_run_args("mock", "cassette", "merge", "a", "b", "--out", "m", NULL);
	assert_int_equal(r.rc, 1);
	expect_in(r.err, "b:2: \"target\": the value of query parameter token is not a redaction token", "merge");
	ctl_run_free(&r);
	assert_int_equal(access("m", F_OK), -1);
	/* no temporary folder is left beside it */
	DIR *d = opendir(".");
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		assert_null(strstr(de->d_name, "merge-tmp"));
	closedir(d);
	r = ctl_run_args("mock", "cassette", "merge", "a", "b", NULL);
	assert_int_equal(r.rc, 2);
	expect_in(r.err, "--out DIR is required", "merge usage");
	ctl_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(list_prints_each_exchange_and_totals, setup, teardown),
		cmocka_unit_test_setup_teardown(check_accepts_what_a_recorder_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(check_names_a_missing_body, setup, teardown),
		cmocka_unit_test_setup_teardown(check_names_a_body_whose_hash_is_not_its_name, setup, teardown),
		cmocka_unit_test_setup_teardown(check_names_the_file_line_and_fault_of_a_bad_line, setup, teardown),
		cmocka_unit_test_setup_teardown(check_refuses_unredacted_credentials_and_hop_by_hop_headers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(prune_removes_matching_exchanges_then_unnamed_bodies, setup, teardown),
		cmocka_unit_test_setup_teardown(prune_keep_bodies_and_dry_run_change_what_they_say, setup, teardown),
		cmocka_unit_test_setup_teardown(prune_refuses_a_broken_cassette_and_changes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(merge_unites_keeps_the_first_and_renumbers_tokens, setup, teardown),
		cmocka_unit_test_setup_teardown(merge_numbers_again_the_requests_the_union_makes_one, setup, teardown),
		cmocka_unit_test_setup_teardown(merge_refuses_a_credential_the_other_cassette_redacts, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Integration over loopback (its own mock, with a known work dir): the
 * files API's traversal battery (issue 16). What test_api_files.c and the
 * containment battery (test_contain.c) already cover is not repeated
 * (a literal "..", a symlink as the last component on GET, FIFOs,
 * sockets, hard links, %00 on GET). Here, for GET and PUT (the files API
 * has no list, delete or mkdir):
 *   - ".." spelt every other way: %2e%2e, %2E%2e, "..%2f..", as the last
 *     component, after "." ;
 *   - double encoding (%252e%252e) and backslashes: plain names, which
 *     stay inside /workspace;
 *   - symlinks a guest made: to a host file (PUT must not write through
 *     it, GET reads the guest's own file of that name: none), to a host
 *     directory, to ".." in the middle of a path (GET stops at the
 *     guest's root), to a directory inside (GET follows), into /proc
 *     (GET refused);
 *   - an absolute path outside /workspace naming a host file: never the
 *     host's file;
 *   - a component over NAME_MAX and a path over PATH_MAX; %00 on PUT.
 * Every refusal is a 4xx JSend fail whose data.path says what was wrong;
 * after each call the host canary file and directory are unchanged and
 * the sandbox tree holds nothing new outside workspace/. (Contained, the
 * guest's files are on its own disk in its cell, not in the host tree: a
 * file that stays inside is looked for from exec.) */
#define _GNU_SOURCE
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

#include "contain_util.h"
#include "mock_fixture.h"

static char g_work[256];
static char g_host[256]; /* a host dir outside every sandbox, with canary.txt */
#define CANARY "host canary\n"

static void write_host(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void canary_intact(const char *what)
{
	char path[300], buf[64] = "";
	FILE *f;
	size_t n;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s/canary.txt", g_host);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	if (strcmp(buf, CANARY) != 0)
		fail_msg("%s: the host canary file was written: \"%s\"", what, buf);
	d = opendir(g_host);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    strcmp(de->d_name, "canary.txt") != 0)
			fail_msg("%s: %s appeared in the host directory", what, de->d_name);
	}
	closedir(d);
}

/* The names at the top of the sandbox's tree, sorted, one string. */
static void tree_top(const char *id, char *out, size_t cap)
{
	char path[400];
	struct dirent **list = NULL;
	int n;
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/%.64s", g_work, id);
	n = scandir(path, &list, NULL, alphasort);
	assert_true(n >= 0);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (len + strlen(list[i]->d_name) + 2 < cap)
			len += (size_t)snprintf(out + len, cap - len, "%s ", list[i]->d_name);
		free(list[i]);
	}
	free(list);
}

static int guest_sh(const char *id, const char *script)
{
	char path[128];
	cJSON *body = cJSON_CreateObject(), *args = cJSON_AddArrayToObject(body, "args");
	char *text;
	const cJSON *code;
	th_resp r;
	int rc = -1;

	cJSON_AddStringToObject(body, "cmd", "sh");
	cJSON_AddItemToArray(args, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(args, cJSON_CreateString(script));
	text = cJSON_PrintUnformatted(body);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	th_json(U, "k1", "POST", path, text, &r);
	code = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result"),
				   "exit_code");
	if (r.status == 200 && cJSON_IsNumber(code))
		rc = code->valueint;
	th_resp_free(&r);
	cJSON_free(text);
	cJSON_Delete(body);
	return rc;
}

static void files_call(const char *id, const char *gpath, bool put, th_resp *r)
{
	char *path = malloc(8192);
	th_req rq = {0};

	assert_non_null(path);
	snprintf(path, 8192, "/v1/sandboxes/%s/files?path=%s", id, gpath);
	rq.method = put ? "PUT" : "GET";
	rq.url = U;
	rq.path = path;
	rq.key = "k1";
	rq.body = put ? "evil" : NULL;
	rq.ctype = put ? "application/octet-stream" : NULL;
	th_do(&rq, r);
	free(path);
}

/* GET (unless put_only) and PUT of gpath: a 4xx JSend fail whose data.path
 * holds needle; then the canary and the tree's top are as they were. */
static void refused_as(const char *id, const char *gpath, const char *needle, bool put_only)
{
	char before[512], after[512], what[300];
	th_resp r;

	tree_top(id, before, sizeof(before));
	for (int put = put_only ? 1 : 0; put < 2; put++) {
		const char *why;

		files_call(id, gpath, put, &r);
		snprintf(what, sizeof(what), "%s %.200s", put ? "PUT" : "GET", gpath);
		why = fail_field(&r, "path");
		if (r.status < 400 || r.status > 499 || why == NULL || strstr(why, needle) == NULL)
			fail_msg("%s: expected a 4xx naming \"%s\" in data.path, got %ld: %.300s", what,
				 needle, r.status, sbx_strbuf_str(&r.body));
		th_resp_free(&r);
		canary_intact(what);
		tree_top(id, after, sizeof(after));
		if (strcmp(before, after) != 0)
			fail_msg("%s: the sandbox tree changed outside workspace: [%s] -> [%s]", what,
				 before, after);
	}
}

static void refused(const char *id, const char *gpath, const char *needle)
{
	refused_as(id, gpath, needle, false);
}

/* GET of gpath answers status and, on 200, exactly want. */
static void read_as(const char *id, const char *gpath, long status, const char *want)
{
	th_resp r;

	files_call(id, gpath, false, &r);
	if (r.status != status || (want != NULL && strcmp(sbx_strbuf_str(&r.body), want) != 0))
		fail_msg("GET %s: expected %ld %s, got %ld: %.300s", gpath, status, want != NULL ? want : "",
			 r.status, sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	canary_intact(gpath);
}

/* A PUT of gpath succeeds and lands at rel (under the tree's workspace/),
 * nowhere else; a GET reads it back. */
static void stays_inside(const char *id, const char *gpath, const char *rel)
{
	char before[512], after[512], script[1024];
	th_resp r;

	tree_top(id, before, sizeof(before));
	files_call(id, gpath, true, &r);
	expect_status(&r, 200, gpath);
	th_resp_free(&r);
	files_call(id, gpath, false, &r);
	expect_status(&r, 200, gpath);
	assert_string_equal(sbx_strbuf_str(&r.body), "evil");
	th_resp_free(&r);
	snprintf(script, sizeof(script), "test -f '/workspace/%s' && ! test -L '/workspace/%s'", rel,
		 rel);
	if (guest_sh(id, script) != 0)
		fail_msg("PUT %s: not at /workspace/%s", gpath, rel);
	tree_top(id, after, sizeof(after));
	assert_string_equal(before, after);
	canary_intact(gpath);
}

static void dotdot_spelt_every_way(void **state)
{
	char id[64];

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	refused(id, "/workspace/%2e%2e/%2e%2e/etc/passwd", "must not contain");
	refused(id, "/workspace/%2E%2e/escaped.txt", "must not contain");
	refused(id, "/workspace/..%2f..%2fescaped.txt", "must not contain");
	refused(id, "/workspace/..", "must not contain");
	refused(id, "/workspace/./../escaped.txt", "must not contain");
	refused(id, "%2fworkspace%2f..%2fescaped.txt", "must not contain");
	refused(id, "/workspace/", "directory");
	refused(id, "/workspace/.", "directory");
	refused(id, "workspace/x.txt", "absolute");
	/* decoded once only, and a backslash is a name's character, not a
	 * separator: both are plain names inside /workspace */
	stays_inside(id, "/workspace/%252e%252e/x.txt", "%2e%2e/x.txt");
	stays_inside(id, "/workspace/..%5c..%5cescaped.txt", "..\\..\\escaped.txt");
}

static void symlinks_a_guest_made(void **state)
{
	char id[64], script[1024], gpath[512];

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	snprintf(script, sizeof(script),
		 "cd /workspace && ln -s %s/canary.txt tofile && ln -s %s todir && ln -s .. up && "
		 "mkdir -p real && ln -s real alias",
		 g_host, g_host);
	assert_int_equal(guest_sh(id, script), 0);
	assert_int_equal(guest_sh(id, "cd /workspace && echo inside > x.txt && echo real > real/x.txt && "
				      "ln -s /proc/1/environ env && ln -s ../../../../../.. deep"),
			 0);
	/* a write never goes through a symlink */
	refused_as(id, "/workspace/tofile", "symlink", true);
	refused_as(id, "/workspace/todir/canary.txt", "symlink", true);
	refused_as(id, "/workspace/todir/new.txt", "symlink", true);
	refused_as(id, "/workspace/up/escaped.txt", "symlink", true);
	refused_as(id, "/workspace/up/workspace/x.txt", "symlink", true);
	refused_as(id, "/workspace/alias/x.txt", "symlink", true);
	/* a read follows it as the guest's programs would, inside the guest's
	 * root only: a link to a host path names the guest's own (absent)
	 * file, ".." stops at the guest's root, a link inside is followed */
	read_as(id, "/workspace/tofile", 404, NULL);
	read_as(id, "/workspace/todir/canary.txt", 404, NULL);
	read_as(id, "/workspace/up/escaped.txt", 404, NULL);
	read_as(id, "/workspace/up/workspace/x.txt", 200, "inside\n");
	read_as(id, "/workspace/deep/workspace/x.txt", 200, "inside\n");
	read_as(id, "/workspace/alias/x.txt", 200, "real\n");
	/* and never into /proc, through a link either (plain mode: the tree
	 * has no /proc, so none there) */
	refused_as(id, "/workspace/env", "symlink", true);
	read_as(id, "/workspace/env", sbx_mock_guests_contained(g_mock) ? 400 : 404, NULL);
	/* the host file by its absolute name: a path of the guest's tree */
	snprintf(gpath, sizeof(gpath), "%s/canary.txt", g_host);
	{
		th_resp r;

		files_call(id, gpath, false, &r);
		if (r.status == 200)
			fail_msg("GET %s read the host's file: %s", gpath, sbx_strbuf_str(&r.body));
		expect_status(&r, 404, gpath);
		th_resp_free(&r);
		/* the guest's own /etc/passwd (contained) or none (plain), never
		 * the host's */
		files_call(id, "/etc/passwd", false, &r);
		if (cx_same_as_host_file(sbx_strbuf_str(&r.body), "/etc/passwd"))
			fail_msg("GET /etc/passwd read the host's: %.200s", sbx_strbuf_str(&r.body));
		th_resp_free(&r);
	}
	canary_intact("absolute host paths");
}

static void long_paths_and_nul(void **state)
{
	char id[64];
	char *p = malloc(8192);
	size_t len;

	(void)state;
	assert_non_null(p);
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	len = (size_t)snprintf(p, 8192, "/workspace/");
	memset(p + len, 'n', 300);
	p[len + 300] = '\0';
	refused(id, p, "component too long");
	len = (size_t)snprintf(p, 8192, "/workspace/");
	for (int i = 0; i < 2100; i++)
		len += (size_t)snprintf(p + len, 8192 - len, "d/");
	snprintf(p + len, 8192 - len, "f");
	refused(id, p, "too long");
	refused(id, "/workspace/a%00b", "NUL");
	refused(id, "/workspace/a%00/../../escaped.txt", "NUL");
	free(p);
}

static int group_setup(void **state)
{
	sbx_mock_config cfg;
	const char *tmp = getenv("TMPDIR");
	char canary[300];

	(void)state;
	snprintf(g_work, sizeof(g_work), "%.200s/sbx-trav-work-XXXXXX", tmp != NULL ? tmp : "/tmp");
	snprintf(g_host, sizeof(g_host), "%.200s/sbx-trav-host-XXXXXX", tmp != NULL ? tmp : "/tmp");
	if (mkdtemp(g_work) == NULL || mkdtemp(g_host) == NULL)
		return -1;
	snprintf(canary, sizeof(canary), "%s/canary.txt", g_host);
	write_host(canary, CANARY);
	mf_config_init(&cfg);
	cfg.admin_token = "admintok";
	cfg.work_dir = g_work;
	return mf_setup(&cfg);
}

static int group_teardown(void **state)
{
	char canary[300];
	int rc = mf_group_teardown(state);

	snprintf(canary, sizeof(canary), "%s/canary.txt", g_host);
	unlink(canary);
	rmdir(g_host);
	rmdir(g_work); /* the mock removed its trees at stop */
	return rc;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(dotdot_spelt_every_way, mf_reset),
		cmocka_unit_test_setup(symlinks_a_guest_made, mf_reset),
		cmocka_unit_test_setup(long_paths_and_nul, mf_reset),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

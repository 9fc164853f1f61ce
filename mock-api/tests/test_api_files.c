/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl): files — binary upload and download, the guest's
 * view of the same tree, path confinement (.., symlinks, relative paths),
 * and what a guest can plant in its tree: hard links, FIFOs, sockets,
 * devices; a NUL in the path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mock_fixture.h"

static void files_roundtrip_and_confinement(void **state)
{
	char id[64], path[256];
	unsigned char bin[300];
	th_req rq = {0};
	th_resp r;

	(void)state;
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)(i * 7);
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/d/x.bin", id);
	rq.method = "PUT";
	rq.url = U;
	rq.path = path;
	rq.key = "k1";
	rq.body = (const char *)bin;
	rq.body_len = sizeof(bin);
	rq.ctype = "application/octet-stream";
	th_do(&rq, &r);
	expect_status(&r, 200, "upload");
	th_resp_free(&r);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 200, "download");
	assert_int_equal(r.body.len, sizeof(bin));
	assert_memory_equal(r.body.data, bin, sizeof(bin));
	th_resp_free(&r);
	/* the guest sees the same file at /workspace */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	th_json(U, "k1", "POST", path, "{\"cmd\":\"stat\",\"args\":[\"-c\",\"%s\",\"/workspace/d/x.bin\"]}", &r);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result"), "stdout")->valuestring, "300\n");
	th_resp_free(&r);
	th_json(U, "k1", "POST", path, "{\"cmd\":\"ln\",\"args\":[\"-s\",\"/etc/passwd\",\"/workspace/link\"]}", &r);
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/../../etc/passwd", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 400, "dotdot");
	th_resp_free(&r);
	/* a read follows a symlink inside the guest's root (the guest's own
	 * /etc/passwd); a write never goes through one */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/link", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 200, "a symlink read in the guest's root");
	th_resp_free(&r);
	{
		th_req put = {.method = "PUT", .url = U, .path = path, .key = "k1", .body = "x",
			      .ctype = "application/octet-stream"};

		th_do(&put, &r);
		expect_status(&r, 400, "a write through a symlink");
		th_resp_free(&r);
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=relative.txt", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 400, "relative");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/none", id);
	th_json(U, "k1", "GET", path, NULL, &r);
	expect_status(&r, 404, "missing");
	th_resp_free(&r);
}

/* Runs sh -c script in the sandbox; its exit code (-1: no result). */
static int guest_sh(const char *id, const char *script)
{
	char path[128];
	cJSON *body = cJSON_CreateObject(), *args = cJSON_AddArrayToObject(body, "args");
	char *text;
	const cJSON *res, *code;
	th_resp r;
	int rc = -1;

	cJSON_AddStringToObject(body, "cmd", "sh");
	cJSON_AddItemToArray(args, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(args, cJSON_CreateString(script));
	text = cJSON_PrintUnformatted(body);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	th_json(U, "k1", "POST", path, text, &r);
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	code = cJSON_GetObjectItem(res, "exit_code");
	if (r.status == 200 && cJSON_IsNumber(code))
		rc = code->valueint;
	th_resp_free(&r);
	cJSON_free(text);
	cJSON_Delete(body);
	return rc;
}

/* PUT body (NULL: a GET) at the guest path gpath (already URL-encoded). */
static void files_call(const char *id, const char *gpath, const char *body, th_resp *r)
{
	char path[512];
	th_req rq = {0};

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=%s", id, gpath);
	rq.method = body != NULL ? "PUT" : "GET";
	rq.url = U;
	rq.path = path;
	rq.key = "k1";
	rq.body = body;
	rq.ctype = body != NULL ? "application/octet-stream" : NULL;
	th_do(&rq, r);
}

/* GET and PUT of gpath are both refused with want, the message holding
 * needle. */
static void expect_refused(const char *id, const char *gpath, long want, const char *needle)
{
	th_resp r;

	for (int put = 0; put < 2; put++) {
		files_call(id, gpath, put ? "overwritten" : NULL, &r);
		if (r.status != want || strstr(sbx_strbuf_str(&r.body), needle) == NULL)
			fail_msg("%s %s: expected %ld mentioning \"%s\", got %ld: %s", put ? "PUT" : "GET",
				 gpath, want, needle, r.status, sbx_strbuf_str(&r.body));
		th_resp_free(&r);
	}
}

/* A guest plants a second link to a file: the files API then touches
 * neither name (it cannot tell a planted link to a host file from this),
 * and the content stays. */
static void files_refuse_a_file_with_two_links(void **state)
{
	char id[64];
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	files_call(id, "/workspace/orig", "original", &r);
	expect_status(&r, 200, "upload orig");
	th_resp_free(&r);
	assert_int_equal(guest_sh(id, "ln /workspace/orig /workspace/hard"), 0);
	expect_refused(id, "/workspace/hard", 409, "hard links");
	expect_refused(id, "/workspace/orig", 409, "hard links");
	assert_int_equal(guest_sh(id, "test \"$(cat /workspace/orig)\" = original"), 0);
	/* one link again: served */
	assert_int_equal(guest_sh(id, "rm /workspace/hard"), 0);
	files_call(id, "/workspace/orig", NULL, &r);
	expect_status(&r, 200, "orig with one link");
	assert_string_equal(sbx_strbuf_str(&r.body), "original");
	th_resp_free(&r);
}

/* FIFOs, sockets and devices are refused, as a leaf or along the walk,
 * and opening a FIFO never hangs the request. */
static void files_refuse_what_is_not_a_file_or_directory(void **state)
{
	char id[64];

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	assert_int_equal(guest_sh(id, "mkfifo /workspace/fifo && mkdir /workspace/d"), 0);
	expect_refused(id, "/workspace/fifo", 409, "a FIFO");
	expect_refused(id, "/workspace/fifo/x", 400, "not a directory");
	expect_refused(id, "/workspace/d", 409, "directory");
	if (guest_sh(id, "python3 -c \"import socket; "
			 "socket.socket(socket.AF_UNIX).bind('/workspace/sock')\"") == 0) {
		expect_refused(id, "/workspace/sock", 409, "a socket");
		expect_refused(id, "/workspace/sock/x", 400, "not a directory");
	}
	/* only where the guest may make device nodes (not when contained) */
	if (guest_sh(id, "mknod /workspace/null c 1 3") == 0)
		expect_refused(id, "/workspace/null", 409, "a device");
}

/* A NUL byte in the path is a 400, not a shorter path: the file before
 * the NUL exists and would otherwise be read or overwritten. */
static void files_path_with_a_nul_is_a_400(void **state)
{
	char id[64];
	th_resp r;

	(void)state;
	create("k1", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	files_call(id, "/workspace/a.txt", "keep", &r);
	expect_status(&r, 200, "upload a.txt");
	th_resp_free(&r);
	expect_refused(id, "/workspace/a.txt%00.png", 400, "NUL");
	expect_refused(id, "/workspace/a.txt%00", 400, "NUL");
	expect_refused(id, "%00/workspace/a.txt", 400, "path");
	files_call(id, "/workspace/a.txt", NULL, &r);
	expect_status(&r, 200, "a.txt untouched");
	assert_string_equal(sbx_strbuf_str(&r.body), "keep");
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(files_roundtrip_and_confinement, mf_reset),
		cmocka_unit_test_setup(files_refuse_a_file_with_two_links, mf_reset),
		cmocka_unit_test_setup(files_refuse_what_is_not_a_file_or_directory, mf_reset),
		cmocka_unit_test_setup(files_path_with_a_nul_is_a_400, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

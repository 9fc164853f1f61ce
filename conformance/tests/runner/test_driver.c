/* The driver library: protocol answers a driver author relies on (hello
 * derived from the vtable, ProtocolError for malformed or oversized lines,
 * errors carried with their class name, exit), and SHA-256 vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sbx/driver.h"

static cJSON *fake_run(void *be, const char *code, const cJSON *env, sbxd_error *err)
{
	cJSON *r;

	if (strcmp(code, "boom") == 0) {
		sbxd_error_set(err, SBXD_UNAVAILABLE, "configured but unusable: %s", "no key");
		return NULL;
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "stdout", code);
	cJSON_AddNumberToObject(r, "exit_code", 0);
	return r;
}

static const sbxd_vtable VT = {.name = "fake", .driver = "test 1", .run = fake_run};

static cJSON *ask(const char *line, bool *exit_req)
{
	char *a = sbxd_handle_line(&VT, NULL, line, strlen(line), exit_req);
	cJSON *j = cJSON_Parse(a);

	free(a);
	assert_non_null(j);
	return j;
}

static const char *err_type(const cJSON *a)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(a, "error"), "type")->valuestring;
}

static void hello_lists_only_served_surfaces(void **state)
{
	bool ex;
	cJSON *a = ask("{\"id\":1,\"op\":\"hello\",\"protocol\":1}", &ex);
	cJSON *s = cJSON_GetObjectItem(cJSON_GetObjectItem(a, "result"), "surfaces");

	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(a, "ok")));
	assert_int_equal(cJSON_GetArraySize(s), 1);
	assert_string_equal(cJSON_GetArrayItem(s, 0)->valuestring, "backend");
	assert_int_equal(cJSON_GetObjectItem(a, "id")->valueint, 1);
	cJSON_Delete(a);
}

static void malformed_lines_get_protocol_errors(void **state)
{
	static const char *const bad[] = {"not json", "[1,2]", "{\"op\":\"hello\"}", "{\"id\":3}",
					  "{\"id\":4,\"op\":\"teleport\"}", "{\"id\":5,\"op\":\"run\"}",
					  "{\"id\":6,\"op\":\"run\",\"code\":\"x\",\"env\":5}",
					  "{\"id\":7,\"op\":\"component_run\",\"code\":\"x\"}",
					  /* data after the object; ids JSON cannot carry exactly */
					  "{\"id\":8,\"op\":\"hello\",\"protocol\":1} trailing",
					  "{\"id\":9,\"op\":\"hello\",\"protocol\":1}{\"id\":10}",
					  "{\"id\":1.5,\"op\":\"hello\",\"protocol\":1}",
					  "{\"id\":9007199254740992,\"op\":\"hello\",\"protocol\":1}"};
	size_t i;
	bool ex;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *a = ask(bad[i], &ex);

		assert_false(cJSON_IsTrue(cJSON_GetObjectItem(a, "ok")));
		assert_string_equal(err_type(a), "ProtocolError");
		assert_false(ex);
		cJSON_Delete(a);
	}
}

/* The largest id JSON carries exactly comes back digit for digit (in the
 * answer's text: cJSON itself would print it rounded to 15 digits), and
 * trailing blanks after the object are fine. */
static void ids_come_back_exactly(void **state)
{
	static const char req[] = "{\"id\":-9007199254740991,\"op\":\"hello\",\"protocol\":1} \t";
	bool ex;
	char *a = sbxd_handle_line(&VT, NULL, req, strlen(req), &ex);

	(void)state;
	assert_non_null(a);
	assert_non_null(strstr(a, "\"id\":-9007199254740991,"));
	assert_non_null(strstr(a, "\"ok\":true"));
	free(a);
}

static void backend_errors_keep_their_class(void **state)
{
	bool ex;
	cJSON *a = ask("{\"id\":9,\"op\":\"run\",\"code\":\"boom\",\"env\":null}", &ex);

	assert_string_equal(err_type(a), "SandboxUnavailableError");
	assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "error"), "message")->valuestring,
			       "no key"));
	cJSON_Delete(a);
}

static void serve_answers_in_order_and_survives_long_lines(void **state)
{
	size_t big = SBXD_MAX_LINE + 10;
	char *input = malloc(big + 200);
	char *out = NULL;
	size_t outlen = 0;
	FILE *in, *o;
	int n;

	memset(input, 'x', big);
	n = snprintf(input + big, 200, "\n{\"id\":2,\"op\":\"run\",\"code\":\"hi\"}\n{\"id\":3,\"op\":\"exit\"}\n"
				       "{\"id\":4,\"op\":\"hello\"}\n");
	in = fmemopen(input, big + (size_t)n, "r");
	o = open_memstream(&out, &outlen);
	assert_int_equal(sbxd_serve(&VT, NULL, in, o), 0);
	fclose(o);
	fclose(in);
	assert_non_null(strstr(out, "longer than"));
	assert_non_null(strstr(out, "{\"id\":2,\"ok\":true"));
	assert_non_null(strstr(out, "{\"id\":3,\"ok\":true"));
	assert_null(strstr(out, "\"id\":4")); /* nothing is read after exit */
	free(out);
	free(input);
}

static void sha256_matches_fips_vectors(void **state)
{
	unsigned char d[32];
	char hex[65];
	char *million = malloc(1000000);

	sbxd_sha256("abc", 3, d);
	sbxd_hex(d, 32, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sbxd_sha256("", 0, d);
	sbxd_hex(d, 32, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	memset(million, 'a', 1000000);
	sbxd_sha256(million, 1000000, d);
	sbxd_hex(d, 32, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hello_lists_only_served_surfaces),
		cmocka_unit_test(malformed_lines_get_protocol_errors),
		cmocka_unit_test(ids_come_back_exactly),
		cmocka_unit_test(backend_errors_keep_their_class),
		cmocka_unit_test(serve_answers_in_order_and_survives_long_lines),
		cmocka_unit_test(sha256_matches_fips_vectors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

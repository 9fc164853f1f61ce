/* strbuf keeps its contents NUL-terminated and grows without losing bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/err.h"
#include "sbx/strbuf.h"

static void appends_keep_all_bytes_across_growth(void **state)
{
	(void)state;
	sbx_strbuf sb = SBX_STRBUF_INIT;
	for (int i = 0; i < 1000; i++)
		assert_true(sbx_strbuf_printf(&sb, "%03d,", i));
	assert_int_equal(sb.len, 4000);
	assert_memory_equal(sb.data, "000,001,", 8);
	assert_string_equal(sb.data + 3996, "999,");
	sbx_strbuf_free(&sb);
}

static void binary_bytes_survive_and_detach_hands_over(void **state)
{
	(void)state;
	sbx_strbuf sb = SBX_STRBUF_INIT;
	assert_true(sbx_strbuf_append(&sb, "a\0b", 3));
	size_t len = 0;
	char *out = sbx_strbuf_detach(&sb, &len);
	assert_int_equal(len, 3);
	assert_memory_equal(out, "a\0b", 3);
	assert_null(sb.data);
	assert_string_equal(sbx_strbuf_str(&sb), "");
	free(out);
}

static void err_prefix_adds_context(void **state)
{
	(void)state;
	sbx_err err;
	sbx_err_set(&err, "port %d out of range", 65536);
	sbx_err_prefix(&err, "rule %d", 3);
	assert_string_equal(err.msg, "rule 3: port 65536 out of range");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(appends_keep_all_bytes_across_growth),
		cmocka_unit_test(binary_bytes_survive_and_detach_hands_over),
		cmocka_unit_test(err_prefix_adds_context),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

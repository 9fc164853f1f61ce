/* sbxctl's reading of server answers without a socket: headers, the JSend
 * envelope and the exec stream (client.c ctl_answer_read, stream.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "stream.h"

static int read_answer(long status, const char *body, ctl_error *err, ctl_response *resp)
{
	memset(resp, 0, sizeof *resp);
	memset(err, 0, sizeof *err);
	resp->status = status;
	sbx_strbuf_init(&resp->body);
	sbx_strbuf_puts(&resp->body, body);
	return ctl_answer_read(resp, false, err);
}

static void poll_after_is_at_most_a_day_in_either_unit(void **state)
{
	(void)state;
	assert_int_equal(ctl_parse_poll_after_ms("250"), 250);
	assert_int_equal(ctl_parse_poll_after_ms("250ms"), 250);
	assert_int_equal(ctl_parse_poll_after_ms("2s"), 2000);
	assert_int_equal(ctl_parse_poll_after_ms("86400s"), 86400000);
	assert_int_equal(ctl_parse_poll_after_ms("86401s"), -1); /* was 86401000 */
	assert_int_equal(ctl_parse_poll_after_ms("nan"), -1);
	assert_int_equal(ctl_parse_poll_after_ms("1e999"), -1);
	assert_true(ctl_parse_retry_after("inf") == -1);
	assert_true(ctl_parse_retry_after("5") == 5);
}

static void a_2xx_answer_is_exactly_one_jsend_success_with_data(void **state)
{
	(void)state;
	ctl_response resp;
	ctl_error err;
	assert_int_equal(read_answer(200, "{\"status\":\"success\",\"data\":{\"id\":\"sb-1\"}}\n", &err, &resp), 0);
	assert_string_equal(cJSON_GetObjectItem(resp.data, "id")->valuestring, "sb-1");
	ctl_response_free(&resp);
	assert_int_equal(read_answer(200, "{\"status\":\"success\",\"data\":{}} {\"x\":1}", &err, &resp), -1);
	assert_int_equal(err.cls, CTL_E_PROTOCOL);
	assert_non_null(strstr(err.message, "JSend"));
	ctl_response_free(&resp);
	assert_int_equal(read_answer(200, "{\"status\":\"success\"}", &err, &resp), -1);
	assert_non_null(strstr(err.message, "without `data`"));
	ctl_response_free(&resp);
}

static void an_error_body_that_is_not_jsend_is_named(void **state)
{
	(void)state;
	ctl_response resp;
	ctl_error err;
	assert_int_equal(read_answer(502, "<html>Bad Gateway</html>", &err, &resp), -1);
	assert_int_equal(err.cls, CTL_E_SERVER);
	assert_non_null(strstr(err.message, "not a JSend envelope"));
	assert_non_null(strstr(err.message, "Bad Gateway"));
	ctl_response_free(&resp);
	assert_int_equal(read_answer(404, "{\"status\":\"fail\",\"data\":{\"error\":\"sandbox not found\"}}", &err,
				     &resp), -1);
	assert_string_equal(err.message, "sandbox not found");
	ctl_response_free(&resp);
}

static void collect(void *ud, const char *text)
{
	sbx_strbuf_puts(ud, text);
}

static void the_stream_reads_the_same_however_it_is_split(void **state)
{
	(void)state;
	const char *s = "{\"stdout\":\"he\"}\n{\"hb\":true}\r\n{\"stdout\":\"llo\"}\n{\"exit_code\":3}";
	sbx_strbuf whole = SBX_STRBUF_INIT, bytes = SBX_STRBUF_INIT;
	ctl_stream_sink a = {.out = collect, .ud = &whole}, b = {.out = collect, .ud = &bytes};
	ctl_stream sa, sb;
	ctl_stream_init(&sa, &a);
	ctl_stream_init(&sb, &b);
	assert_true(ctl_stream_feed(&sa, s, strlen(s)));
	for (size_t i = 0; s[i] != '\0'; i++)
		assert_true(ctl_stream_feed(&sb, s + i, 1));
	ctl_stream_finish(&sa);
	ctl_stream_finish(&sb);
	assert_string_equal(sbx_strbuf_str(&whole), "hello");
	assert_string_equal(sbx_strbuf_str(&bytes), "hello");
	assert_int_equal(sa.exit_code, 3);
	assert_int_equal(sb.exit_code, 3);
	ctl_stream_free(&sa);
	ctl_stream_free(&sb);
	sbx_strbuf_free(&whole);
	sbx_strbuf_free(&bytes);
}

static void an_oversize_frame_is_skipped_and_reported(void **state)
{
	(void)state;
	sbx_strbuf out = SBX_STRBUF_INIT;
	ctl_stream_sink k = {.out = collect, .ud = &out};
	ctl_stream st;
	const char *s = "{\"stdout\":\"0123456789\"}\n{\"stdout\":\"ok\"}\n";
	ctl_stream_init(&st, &k);
	st.frame_max = 16;
	assert_true(ctl_stream_feed(&st, s, strlen(s)));
	ctl_stream_finish(&st);
	assert_true(st.failed);
	assert_string_equal(sbx_strbuf_str(&out), "ok");
	ctl_stream_free(&st);
	sbx_strbuf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(poll_after_is_at_most_a_day_in_either_unit),
		cmocka_unit_test(a_2xx_answer_is_exactly_one_jsend_success_with_data),
		cmocka_unit_test(an_error_body_that_is_not_jsend_is_named),
		cmocka_unit_test(the_stream_reads_the_same_however_it_is_split),
		cmocka_unit_test(an_oversize_frame_is_skipped_and_reported),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

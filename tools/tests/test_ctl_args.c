/* sbxctl argument parsing: every bad flag or argument is refused with exit 2
 * and a message naming what was wrong, before anything is sent; values
 * (durations, K=V, rule lists) parse the way the README documents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"
#include "client.h"
#include "ctl_run.h"

static const ctl_opt test_opts[] = {
	{"shape", "SHAPE", false, "a value"},
	{"env", "K=V", true, "repeatable"},
	{"wait", NULL, false, "a flag"},
	{NULL, NULL, false, NULL},
};

static int parse(ctl_args *a, sbx_err *e, int argc, const char **argv)
{
	const ctl_opt *const tables[] = {test_opts, ctl_global_opts, NULL};
	return ctl_args_parse(tables, argc, (char **)argv, a, e);
}

static void long_options_take_values_both_ways(void **state)
{
	(void)state;
	const char *argv[] = {"--shape", "s-1", "ID", "--env=A=1", "--env", "B=2", "--wait", "--json"};
	ctl_args a;
	sbx_err e = {""};
	assert_int_equal(parse(&a, &e, 8, argv), 0);
	assert_string_equal(ctl_args_get(&a, "shape"), "s-1");
	size_t n = 0;
	const char *const *env = ctl_args_all(&a, "env", &n);
	assert_int_equal(n, 2);
	assert_string_equal(env[0], "A=1");
	assert_string_equal(env[1], "B=2");
	assert_true(ctl_args_has(&a, "wait"));
	assert_true(ctl_args_has(&a, "json"));
	assert_int_equal(a.npos, 1);
	assert_string_equal(a.pos[0], "ID");
	ctl_args_free(&a);
}

static void double_dash_ends_options(void **state)
{
	(void)state;
	const char *argv[] = {"ID", "--", "ls", "--wait", "-la"};
	ctl_args a;
	sbx_err e = {""};
	assert_int_equal(parse(&a, &e, 5, argv), 0);
	assert_false(ctl_args_has(&a, "wait"));
	assert_int_equal(a.npos, 4);
	assert_int_equal(a.dashdash, 1);
	assert_string_equal(a.pos[3], "-la");
	ctl_args_free(&a);
}

static void parse_errors_name_the_argument(void **state)
{
	(void)state;
	struct {
		int argc;
		const char *argv[3];
		const char *msg;
	} cases[] = {
		{1, {"--bogus"}, "unknown option '--bogus'"},
		{1, {"--shape"}, "option '--shape' needs a value (SHAPE)"},
		{1, {"--wait=yes"}, "option '--wait' is a flag and takes no value (got 'yes')"},
		{2, {"--shape=a", "--shape=b"}, "option '--shape' given twice"},
		{1, {"-x"}, "unknown option '-x'"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		ctl_args a;
		sbx_err e = {""};
		assert_int_equal(parse(&a, &e, cases[i].argc, cases[i].argv), -1);
		if (strstr(e.msg, cases[i].msg) == NULL)
			fail_msg("case %zu: expected '%s' in '%s'", i, cases[i].msg, e.msg);
		ctl_args_free(&a);
	}
}

static void durations_need_a_unit(void **state)
{
	(void)state;
	int64_t ms = 0;
	sbx_err e = {""};
	assert_int_equal(ctl_parse_duration_ms("90s", "d", &ms, &e), 0);
	assert_int_equal(ms, 90000);
	assert_int_equal(ctl_parse_duration_ms("5m", "d", &ms, &e), 0);
	assert_int_equal(ms, 300000);
	assert_int_equal(ctl_parse_duration_ms("1500ms", "d", &ms, &e), 0);
	assert_int_equal(ms, 1500);
	assert_int_equal(ctl_parse_duration_ms("1m30s", "d", &ms, &e), 0);
	assert_int_equal(ms, 90000);
	assert_int_equal(ctl_parse_duration_ms("2.5s", "d", &ms, &e), 0);
	assert_int_equal(ms, 2500);
	assert_int_equal(ctl_parse_duration_ms("1h", "d", &ms, &e), 0);
	assert_int_equal(ms, 3600000);
	assert_int_equal(ctl_parse_duration_ms("90", "d", &ms, &e), -1);
	assert_non_null(strstr(e.msg, "needs a unit"));
	assert_int_equal(ctl_parse_duration_ms("5x", "d", &ms, &e), -1);
	assert_non_null(strstr(e.msg, "unknown unit 'x'"));
	assert_int_equal(ctl_parse_duration_ms("-5s", "d", &ms, &e), -1);
	assert_int_equal(ctl_parse_duration_ms("", "d", &ms, &e), -1);
}

static void numbers_and_pairs_are_checked(void **state)
{
	(void)state;
	long v = 0;
	size_t klen = 0;
	sbx_err e = {""};
	assert_int_equal(ctl_parse_long("120", 0, 500, "--n", &v, &e), 0);
	assert_int_equal(v, 120);
	assert_int_equal(ctl_parse_long("12x", 0, 500, "--n", &v, &e), -1);
	assert_non_null(strstr(e.msg, "'12x' is not a whole number"));
	assert_int_equal(ctl_parse_long("501", 0, 500, "--n", &v, &e), -1);
	assert_non_null(strstr(e.msg, "out of range"));
	assert_int_equal(ctl_parse_kv("A=b=c", "--env", &klen, &e), 0);
	assert_int_equal(klen, 1);
	assert_int_equal(ctl_parse_kv("=x", "--env", &klen, &e), -1);
	assert_int_equal(ctl_parse_kv("novalue", "--env", &klen, &e), -1);
	assert_non_null(strstr(e.msg, "'novalue' is not KEY=VALUE"));
}

static void comma_lists_keep_empty_items(void **state)
{
	(void)state;
	size_t n = 0;
	char **v = ctl_split_commas(" pypi.org , *.x.com:443,,1.1.1.1 ", &n);
	assert_int_equal(n, 4);
	assert_string_equal(v[0], "pypi.org");
	assert_string_equal(v[1], "*.x.com:443");
	assert_string_equal(v[2], "");
	assert_string_equal(v[3], "1.1.1.1");
	assert_null(v[4]);
	ctl_strv_free(v);
	v = ctl_split_commas("  ", &n);
	assert_int_equal(n, 0);
	ctl_strv_free(v);
}

static void header_values_parse(void **state)
{
	(void)state;
	assert_true(ctl_parse_retry_after("5") == 5.0);
	assert_true(ctl_parse_retry_after("nonsense") < 0);
	assert_true(ctl_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0);
	assert_int_equal(ctl_parse_poll_after_ms("100"), 100);
	assert_int_equal(ctl_parse_poll_after_ms("2s"), 2000);
	assert_int_equal(ctl_parse_poll_after_ms("0.5s"), 500);
	assert_int_equal(ctl_parse_poll_after_ms("250ms"), 250);
	assert_int_equal(ctl_parse_poll_after_ms(""), -1);
	/* issue 19 item 5: non-finite headers are no delay (and no UB cast) */
	assert_int_equal(ctl_parse_poll_after_ms("nan"), -1);
	assert_int_equal(ctl_parse_poll_after_ms("-nan"), -1);
	assert_int_equal(ctl_parse_poll_after_ms("nans"), -1);
	assert_int_equal(ctl_parse_poll_after_ms("inf"), -1);
	assert_true(ctl_parse_retry_after("inf") < 0);
	assert_true(ctl_parse_retry_after("1e999") < 0);
	assert_true(ctl_parse_retry_after("nan") < 0);
	assert_int_equal(ctl_errclass_for_status(409), CTL_E_VALIDATION);
	assert_int_equal(ctl_errclass_for_status(402), CTL_E_PAYMENT);
	assert_int_equal(ctl_errclass_for_status(502), CTL_E_SERVER);
	assert_string_equal(ctl_errclass_name(CTL_E_RATE_LIMIT), "RateLimitError");
}

/* CLI-level usage errors: exit 2, a message naming the problem, stdout empty. */
static void cli_usage_errors_exit_2_with_a_reason(void **state)
{
	(void)state;
	struct {
		const char *args[8];
		const char *msg;
	} cases[] = {
		{{NULL}, "missing command"},
		{{"frobnicate", NULL}, "unknown command 'frobnicate'"},
		{{"egress", NULL}, "sbxctl egress: missing sub-command"},
		{{"mock", "faults", "explode", NULL}, "unknown command 'mock faults explode'"},
		{{"get", NULL}, "missing argument: expected ID"},
		{{"get", "a", "b", NULL}, "unexpected argument 'b'"},
		{{"create", "--shape", NULL}, "option '--shape' needs a value"},
		{{"create", "--env", "NOEQ", NULL}, "--env: 'NOEQ' is not KEY=VALUE"},
		{{"create", "--auto-pause", "soon", NULL}, "--auto-pause: 'soon' is not a whole number"},
		{{"ls", "--page-size", "0", NULL}, "--page-size: 0 is out of range (1..500)"},
		{{"exec", "sb-1", NULL}, "missing the command to run"},
		{{"exec", "sb-1", "ls", "-la", NULL}, "put the remote command after '--'"},
		{{"exec", "--", "ls", NULL}, "the sandbox ID goes before '--'"},
		{{"files", "push", "sb-1", "x", "rel/path", NULL}, "REMOTE 'rel/path' must be an absolute path"},
		{{"mock", "state", NULL}, "mock commands need the admin token"},
		{{"--timeout", "10", "whoami", NULL}, "--timeout: '10' needs a unit"},
		{{"--url", "ftp://x", "whoami", NULL}, "must start with http:// or https://"},
		{{"--nope", "whoami", NULL}, "unknown global option '--nope'"},
		{{"egress", "check", "1.1.1.1:53", NULL}, "--rules is required"},
		{{"egress", "check", "--rules", "", "--mode", "strict", "1.1.1.1:53", NULL}, "--mode: 'strict'"},
		{{"mock", "clock", "advance", "90", "--admin-token", "t", NULL}, "needs a unit"},
		{{"egress", "lint", "a", "b", NULL}, "unexpected argument 'b'"},
		/* issue 19 item 22: malformed URLs are usage errors, not connection errors */
		{{"--url", "http://127.0.0.1:99999", "whoami", NULL}, "port 99999, out of range (1..65535)"},
		{{"--url", "http://[::1", "whoami", NULL}, "malformed IPv6 address"},
		{{"--url", "http://127.0.0.1:", "whoami", NULL}, "empty port"},
		{{"--url", "http://:80", "whoami", NULL}, "has no host"},
		{{"--url", "http://a b", "whoami", NULL}, "space or control character"},
		{{"--url", "", "whoami", NULL}, "--url is empty"},
		{{"--production", "--url", "http://127.0.0.1:1", "whoami", NULL}, "exclude each other"},
		{{"create", "--auto-pause", "-1", NULL}, "--auto-pause: -1 is out of range (60..86400)"},
		{{"create", "--auto-pause", "86401", NULL}, "(60..86400)"},
		{{"whoami", "--version", NULL}, "unknown option '--version'"},
	};
	unsetenv("SBX_MOCK_ADMIN_TOKEN");
	/* a URL, so that the errors found after it is resolved are reached */
	setenv("CREATEOS_SANDBOX_BASE_URL", "http://127.0.0.1:1", 1);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *const *a = cases[i].args;
		ctl_run r = ctl_run_v(a);
		if (r.rc != CTL_EXIT_USAGE || strstr(r.err, cases[i].msg) == NULL)
			fail_msg("case %zu (%s ...): expected exit 2 and '%s', got exit %d, stderr '%s'", i,
				 a[0] ? a[0] : "", cases[i].msg, r.rc, r.err);
		ctl_run_free(&r);
	}
}

static void help_fits_a_screen_and_exits_0(void **state)
{
	(void)state;
	const char *cmds[][5] = {{"--help"}, {"create", "--help"}, {"exec", "-h"}, {"help", "mock"},
				 {"egress", "check", "--help"}, {"egress", "lint", "--help"},
				 {"egress", "set", "--help"}, {"mock", "journal", "--help"},
				 {"fork", "--help"}, {"mock", "faults", "add", "--help"}, {"files", "pull", "--help"}};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		ctl_run r = ctl_run_v(cmds[i]);
		assert_int_equal(r.rc, 0);
		assert_non_null(strstr(r.out, "Usage: sbxctl"));
		size_t lines = 0;
		size_t col = 0;
		for (const char *p = r.out; *p != '\0'; p++) {
			lines += *p == '\n';
			col = *p == '\n' ? 0 : col + 1;
			if (col > 80)
				fail_msg("help for '%s %s' has a line over 80 columns: %.90s", cmds[i][0],
					 cmds[i][1] ? cmds[i][1] : "", p - 80);
		}
		if (lines > 50)
			fail_msg("help for '%s %s' has %zu lines (more than a screen)", cmds[i][0],
				 cmds[i][1] ? cmds[i][1] : "", lines);
		ctl_run_free(&r);
	}
	ctl_run r = ctl_run_args("exec", "--help", NULL);
	assert_non_null(strstr(r.out, "remote command's"));
	ctl_run_free(&r);
}

/* issue 19 item 18: offline means offline. An empty or unset base URL is a
 * usage error (nothing sent), never a fall-back to the production service;
 * --production asks for it explicitly. (https_proxy points at a closed
 * loopback port, set in main, so even a fall-back stays on loopback.) */
static void missing_url_is_a_usage_error(void **state)
{
	(void)state;
	setenv("CREATEOS_SANDBOX_BASE_URL", "", 1);
	ctl_run r = ctl_run_args("--api-key", "k", "whoami", NULL);
	if (r.rc != CTL_EXIT_USAGE || strstr(r.err, "CREATEOS_SANDBOX_BASE_URL is empty") == NULL ||
	    strstr(r.err, "--production") == NULL)
		fail_msg("empty URL: exit %d, stderr '%s'", r.rc, r.err);
	ctl_run_free(&r);
	unsetenv("CREATEOS_SANDBOX_BASE_URL");
	r = ctl_run_args("--api-key", "k", "create", "--shape", "s-1vcpu-1gb", NULL);
	if (r.rc != CTL_EXIT_USAGE || strstr(r.err, "CREATEOS_SANDBOX_BASE_URL is not set") == NULL)
		fail_msg("unset URL: exit %d, stderr '%s'", r.rc, r.err);
	ctl_run_free(&r);
	/* asked for explicitly: it is tried (and fails on the loopback proxy) */
	r = ctl_run_args("--production", "--api-key", "k", "whoami", NULL);
	assert_int_equal(r.rc, CTL_EXIT_FAIL);
	assert_non_null(strstr(r.err, "ConnectionError"));
	ctl_run_free(&r);
	/* offline commands need no URL */
	r = ctl_run_args("egress", "check", "--rules", "1.1.1.1:53", "1.1.1.1:53", NULL);
	assert_int_equal(r.rc, CTL_EXIT_OK);
	ctl_run_free(&r);
}

/* issue 19 item 22: group help, --version, JSON usage errors. */
static void group_help_version_and_json_usage_errors(void **state)
{
	(void)state;
	const char *groups[][4] = {{"egress", "--help"}, {"mock", "faults", "-h"}, {"mock", "--help"},
				   {"files", "--help"}};
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
		ctl_run r = ctl_run_v(groups[i]);
		if (r.rc != 0 || strstr(r.out, "Usage: sbxctl") == NULL || strstr(r.out, groups[i][0]) == NULL)
			fail_msg("'%s %s' help: exit %d, out '%s', err '%s'", groups[i][0], groups[i][1], r.rc,
				 r.out, r.err);
		ctl_run_free(&r);
	}
	ctl_run r = ctl_run_args("--version", NULL);
	assert_int_equal(r.rc, 0);
	assert_true(strncmp(r.out, "sbxctl ", 7) == 0 && r.out[7] >= '0' && r.out[7] <= '9');
	ctl_run_free(&r);
	const char *bad[][4] = {{"--json", "get"}, {"--json", "frobnicate"}, {"ls", "--json", "--page-size", "0"},
				{"--json", "egress"}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		r = ctl_run_v(bad[i]);
		cJSON *j = cJSON_Parse(r.err);
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
		const cJSON *cls = cJSON_GetObjectItemCaseSensitive(e, "class");
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
		if (r.rc != CTL_EXIT_USAGE || r.out[0] != '\0' || !cJSON_IsString(cls) ||
		    strcmp(cls->valuestring, "UsageError") != 0 || !cJSON_IsString(msg))
			fail_msg("case %zu: --json usage error is not one {\"error\":...} object: exit %d, err '%s'", i,
				 r.rc, r.err);
		cJSON_Delete(j);
		ctl_run_free(&r);
	}
}

/* Nothing listens on port 1 of loopback: a ConnectionError, exit 1. */
static void network_failure_is_exit_1_connection_error(void **state)
{
	(void)state;
	ctl_run r = ctl_run_args("--url", "http://127.0.0.1:1", "whoami", NULL);
	assert_int_equal(r.rc, CTL_EXIT_FAIL);
	assert_non_null(strstr(r.err, "sbxctl: ConnectionError: on GET /v1/whoami"));
	ctl_run_free(&r);
	r = ctl_run_args("--json", "--url", "http://127.0.0.1:1", "get", "sb-1", NULL);
	assert_int_equal(r.rc, CTL_EXIT_FAIL);
	assert_non_null(strstr(r.err, "\"class\":\"ConnectionError\""));
	assert_string_equal(r.out, "");
	ctl_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(long_options_take_values_both_ways),
		cmocka_unit_test(double_dash_ends_options),
		cmocka_unit_test(parse_errors_name_the_argument),
		cmocka_unit_test(durations_need_a_unit),
		cmocka_unit_test(numbers_and_pairs_are_checked),
		cmocka_unit_test(comma_lists_keep_empty_items),
		cmocka_unit_test(header_values_parse),
		cmocka_unit_test(cli_usage_errors_exit_2_with_a_reason),
		cmocka_unit_test(help_fits_a_screen_and_exits_0),
		cmocka_unit_test(network_failure_is_exit_1_connection_error),
		cmocka_unit_test(missing_url_is_a_usage_error),
		cmocka_unit_test(group_help_version_and_json_usage_errors),
	};
	/* Whatever a test (or an old sbxctl) sends to a non-loopback host goes
	 * to a closed loopback port instead. */
	setenv("https_proxy", "http://127.0.0.1:1", 1);
	setenv("HTTPS_PROXY", "http://127.0.0.1:1", 1);
	setenv("http_proxy", "http://127.0.0.1:1", 1);
	setenv("no_proxy", "127.0.0.1,localhost", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

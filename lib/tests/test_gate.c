/* Unit tests of the Langflow gate library (lib/include/sbx/gate.h): settings
 * parsing as pydantic v2 does it, the four rules in order, blank code, plugin
 * resolution and the JSON front door. The decision tables are replayed by
 * test_gate_tables.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sbx/gate.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const sbx_gate_caps CREATEOS_CAPS = {"hardware-virtualized", true, false, false, 0};
static const sbx_gate_caps FULL_CAPS = {"hardware-virtualized", true, true, false, 0};

static void test_defaults_grant_nothing_extra(void **state)
{
	(void)state;
	sbx_gate_settings s;
	sbx_gate_setting_error e;
	assert_int_equal(sbx_gate_settings_parse(&s, NULL, 0, &e), 0);
	assert_string_equal(s.backend, "none");
	assert_int_equal(s.timeout_seconds, 30);
	assert_int_equal(s.memory_mb, 192);
	assert_false(s.allow_network);
	assert_int_equal(s.n_allowed_domains, 0);
	assert_int_equal(s.n_backend_plugins, 0);
	assert_null(s.createos_api_key);
	assert_false(s.createos_accept_egress_exceptions);
	sbx_gate_settings_free(&s);
}

static void test_settings_normalize_lists_and_backend(void **state)
{
	(void)state;
	const char *env[] = {
		"LANGFLOW_SANDBOX_BACKEND=  CreateOS \t",
		"LANGFLOW_SANDBOX_ALLOWED_DOMAINS= a.example , ,b.example,,  ",
		"LANGFLOW_SANDBOX_BACKEND_PLUGINS= ACME , ,createos",
		"CREATEOS_SANDBOX_API_KEY=   ",
		"CREATEOS_API_KEY= k2 ",
		"LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS= YeS ",
		"LANGFLOW_SANDBOX_TIMEOUT_SECONDS=5", "LANGFLOW_SANDBOX_TIMEOUT_SECONDS= +7.00 ",
	};
	sbx_gate_settings s;
	sbx_gate_setting_error e;
	assert_int_equal(sbx_gate_settings_parse(&s, env, N(env), &e), 0);
	assert_string_equal(s.backend, "createos");
	assert_int_equal(s.n_allowed_domains, 2);
	assert_string_equal(s.allowed_domains[0], "a.example");
	assert_string_equal(s.allowed_domains[1], "b.example");
	assert_int_equal(s.n_backend_plugins, 2);
	assert_string_equal(s.backend_plugins[0], "acme");
	assert_string_equal(s.createos_api_key, "k2");
	assert_string_equal(s.createos_api_key_variable, "CREATEOS_API_KEY");
	assert_true(s.createos_accept_egress_exceptions);
	assert_int_equal(s.timeout_seconds, 7); /* the later entry wins */
	sbx_gate_settings_free(&s);
}

static void expect_setting_error(const char *entry, const char *variable, const char *type, const char *fragment)
{
	const char *env[] = {entry};
	sbx_gate_settings s;
	sbx_gate_setting_error e;
	assert_int_equal(sbx_gate_settings_parse(&s, env, 1, &e), -1);
	assert_string_equal(e.variable, variable);
	assert_string_equal(e.type, type);
	if (strstr(e.message, fragment) == NULL)
		fail_msg("expected `%s` in `%s`", fragment, e.message);
}

static void test_settings_errors_name_variable_value_and_range(void **state)
{
	(void)state;
	expect_setting_error("LANGFLOW_SANDBOX_TIMEOUT_SECONDS=301", "LANGFLOW_SANDBOX_TIMEOUT_SECONDS",
			     "less_than_equal",
			     "LANGFLOW_SANDBOX_TIMEOUT_SECONDS: Input should be less than or equal to 300 "
			     "[type=less_than_equal, input_value='301', input_type=str]; accepted: an integer from 1 to 300");
	expect_setting_error("LANGFLOW_SANDBOX_TIMEOUT_SECONDS=0", "LANGFLOW_SANDBOX_TIMEOUT_SECONDS",
			     "greater_than_equal", "greater than or equal to 1");
	expect_setting_error("LANGFLOW_SANDBOX_MEMORY_MB=127", "LANGFLOW_SANDBOX_MEMORY_MB", "greater_than_equal",
			     "greater than or equal to 128");
	expect_setting_error("LANGFLOW_SANDBOX_TIMEOUT_SECONDS=5.5", "LANGFLOW_SANDBOX_TIMEOUT_SECONDS",
			     "int_parsing", "input_value='5.5'");
	expect_setting_error("LANGFLOW_SANDBOX_ALLOW_NETWORK= true", "LANGFLOW_SANDBOX_ALLOW_NETWORK",
			     "bool_parsing", "input_value=' true'");
	expect_setting_error("LANGFLOW_SANDBOX_ALLOW_NETWORK=it's\n", "LANGFLOW_SANDBOX_ALLOW_NETWORK",
			     "bool_parsing", "input_value=\"it's\\n\"");
	expect_setting_error("LANGFLOW_SANDBOX_MEMORY_MB=\xff", "LANGFLOW_SANDBOX_MEMORY_MB", "string_unicode",
			     "input_value='\\udcff'");
}

static void test_int_parsing_follows_pydantic_lax_mode(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int ok;
		int64_t v;
	} cases[] = {
		{" 5 ", 1, 5}, {"+5", 1, 5}, {"5.0", 1, 5}, {"5.000", 1, 5}, {"1_0", 1, 10}, {"007", 1, 7},
		{"-0", 1, 0}, {"\xc2\xa0" "5", 1, 5}, {"\v5\n", 1, 5}, {"5.", 0, 0}, {".0", 0, 0}, {"_1", 0, 0},
		{"1_", 0, 0}, {"1__0", 0, 0}, {"1e2", 0, 0}, {"0x10", 0, 0}, {"", 0, 0}, {" ", 0, 0},
		{"+", 0, 0}, {"\x1c" "5", 0, 0}, {"5.0_0", 0, 0}, {"+ 5", 0, 0},
	};
	for (size_t i = 0; i < N(cases); i++) {
		int64_t v = -1;
		const char *type = NULL;
		int rc = sbx_gate_parse_int(cases[i].in, &v, &type);
		if (cases[i].ok) {
			assert_int_equal(rc, 0);
			assert_int_equal(v, cases[i].v);
		} else if (rc == 0) {
			fail_msg("`%s` parsed as %lld, expected int_parsing", cases[i].in, (long long)v);
		}
	}
}

static void test_bool_spellings(void **state)
{
	(void)state;
	static const char *const t[] = {"1", "on", "t", "true", "y", "yes", "TRUE", "Yes", "oN"};
	static const char *const f[] = {"0", "off", "f", "false", "n", "no", "NO", "False"};
	static const char *const bad[] = {"", " true", "true ", "2", "none", "1.0", "tru", "yess"};
	bool b;
	const char *type;
	for (size_t i = 0; i < N(t); i++) {
		assert_int_equal(sbx_gate_parse_bool(t[i], &b, &type), 0);
		assert_true(b);
	}
	for (size_t i = 0; i < N(f); i++) {
		assert_int_equal(sbx_gate_parse_bool(f[i], &b, &type), 0);
		assert_false(b);
	}
	for (size_t i = 0; i < N(bad); i++)
		assert_int_equal(sbx_gate_parse_bool(bad[i], &b, &type), -1);
}

static void decide(const char *const *env, size_t n, const sbx_gate_caps *caps, const char *code,
		   sbx_gate_decision *d)
{
	sbx_gate_settings s;
	sbx_gate_setting_error e;
	assert_int_equal(sbx_gate_settings_parse(&s, env, n, &e), 0);
	sbx_gate_decide(&s, caps, code, strlen(code), d);
	sbx_gate_settings_free(&s);
}

static void test_gate_rules_in_order(void **state)
{
	(void)state;
	sbx_gate_decision d;
	const char *env[] = {"LANGFLOW_SANDBOX_BACKEND=acme", "LANGFLOW_SANDBOX_ALLOWED_DOMAINS=x.example",
			     "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=61"};
	sbx_gate_caps caps = {"process", false, false, true, 60};
	decide(env, N(env), &caps, "print(1)", &d);
	assert_int_equal(d.rule, SBX_GATE_RULE_ISOLATION);
	assert_string_equal(d.message, "Sandbox backend 'acme' reports 'process' isolation, not a hardware-virtualized "
				       "boundary. Sandbox mode disables the in-process Python defenses on the "
				       "assumption of hardware isolation. Refusing to run the code.");
	caps.isolation = "hardware-virtualized";
	decide(env, N(env), &caps, "print(1)", &d);
	assert_int_equal(d.rule, SBX_GATE_RULE_DENY_ALL_EGRESS);
	assert_string_equal(d.variable, "LANGFLOW_SANDBOX_ALLOW_NETWORK");
	caps.supports_deny_all_egress = true;
	decide(env, N(env), &caps, "print(1)", &d);
	assert_int_equal(d.rule, SBX_GATE_RULE_DOMAIN_ALLOWLIST);
	caps.supports_domain_allowlist = true;
	decide(env, N(env), &caps, "print(1)", &d);
	assert_int_equal(d.rule, SBX_GATE_RULE_TIMEOUT_CAP);
	assert_string_equal(d.message, "LANGFLOW_SANDBOX_TIMEOUT_SECONDS is 61 but sandbox backend 'acme' caps one "
				       "execution at 60s. Refusing to run the code.");
	caps.max_timeout_seconds = 61; /* equal to the cap runs */
	decide(env, N(env), &caps, "print(1)", &d);
	assert_int_equal(d.verdict, SBX_GATE_RUN);
	assert_string_equal(sbx_gate_rule_id(SBX_GATE_RULE_TIMEOUT_CAP), "timeout_cap");
}

static void test_blank_code_precedes_the_gate(void **state)
{
	(void)state;
	sbx_gate_decision d;
	sbx_gate_caps none = {NULL, false, false, false, 0};
	const char *acme[] = {"LANGFLOW_SANDBOX_BACKEND=acme"};
	decide(acme, N(acme), &none, " \t\n\x1c\xe3\x80\x80", &d);
	assert_int_equal(d.verdict, SBX_GATE_BLANK);
	decide(acme, N(acme), &none, "\xe2\x80\x8b", &d); /* zero-width space is not white space */
	assert_int_equal(d.verdict, SBX_GATE_REFUSE);
	assert_int_equal(d.rule, SBX_GATE_RULE_ISOLATION);
	/* The C API takes a length: an embedded NUL is code, not the end. */
	assert_false(sbx_gate_code_is_blank(" \0 ", 3));
	assert_true(sbx_gate_code_is_blank(" \t ", 3));
	assert_false(sbx_gate_code_is_blank("\xff", 1)); /* invalid bytes are not space */
}

static void test_domains_need_allowlist_even_with_network_on(void **state)
{
	(void)state;
	sbx_gate_decision d;
	const char *env[] = {"LANGFLOW_SANDBOX_BACKEND=createos", "LANGFLOW_SANDBOX_ALLOW_NETWORK=yes",
			     "LANGFLOW_SANDBOX_ALLOWED_DOMAINS=pypi.org"};
	decide(env, N(env), &CREATEOS_CAPS, "x", &d);
	assert_int_equal(d.rule, SBX_GATE_RULE_DOMAIN_ALLOWLIST);
	const char *blanks[] = {"LANGFLOW_SANDBOX_BACKEND=createos", "LANGFLOW_SANDBOX_ALLOWED_DOMAINS= , ,"};
	decide(blanks, N(blanks), &CREATEOS_CAPS, "x", &d);
	assert_int_equal(d.verdict, SBX_GATE_RUN);
	decide(env, N(env), &FULL_CAPS, "x", &d);
	assert_int_equal(d.verdict, SBX_GATE_RUN);
}

/* lfx 1.13: backend unset or `none` (any case, trimmed) runs in Langflow's
 * own process, no gate; a blank backend is a start-up settings error. */
static void test_none_is_in_process_and_blank_is_a_settings_error(void **state)
{
	(void)state;
	sbx_gate_decision d;
	sbx_gate_settings s;
	sbx_gate_setting_error serr;
	sbx_gate_caps nothing = {NULL, false, false, false, 0};
	const char *none[] = {"LANGFLOW_SANDBOX_BACKEND= NONE ", "LANGFLOW_SANDBOX_ALLOWED_DOMAINS=a.example"};
	const char *blank[] = {"LANGFLOW_SANDBOX_BACKEND= \t "};
	decide(NULL, 0, &nothing, "print(1)", &d);
	assert_int_equal(d.verdict, SBX_GATE_IN_PROCESS);
	decide(none, N(none), &nothing, "print(1)", &d);
	assert_int_equal(d.verdict, SBX_GATE_IN_PROCESS);
	assert_int_equal(sbx_gate_settings_parse(&s, blank, N(blank), &serr), -1);
	assert_string_equal(serr.variable, "LANGFLOW_SANDBOX_BACKEND");
	assert_non_null(strstr(serr.message, "type=value_error"));
}

static void test_plugins_never_import_unlisted_duplicate_builtin(void **state)
{
	(void)state;
	const sbx_entry_point eps[] = {
		{"acme", "acme-sandbox"}, {" Dup ", "dup-a"}, {"dup", "dup-b"}, {" Exec-Sandbox", "evil"},
		{"None ", "nothing"}, {"  ", "blank-dist"}, {"vendor", "vendor-dist"}, {"CreateOS", NULL},
	};
	char *allow[] = {"acme", "dup", "exec-sandbox", "none", "createos"};
	sbx_plugin_plan plan;
	sbx_err err = {{0}};
	assert_int_equal(sbx_gate_plan_plugins(eps, N(eps), allow, N(allow), &plan, &err), 0);
	assert_int_equal(plan.n_loaded, 2);
	assert_string_equal(plan.loaded[0], "acme");
	assert_string_equal(plan.imported[0], "acme-sandbox");
	assert_string_equal(plan.loaded[1], "createos");
	assert_string_equal(plan.imported[1], "unknown distribution");
	assert_int_equal(plan.n_refused, 5);
	assert_int_equal(plan.refused[0].reason, SBX_PLUGIN_DUPLICATE);
	assert_string_equal(plan.refused[0].message,
			    "Refusing sandbox backend plugin 'dup': 2 installed distributions provide that name "
			    "(dup-a, dup-b). Uninstall all but one, because the allowlist names a backend and "
			    "cannot choose between them.");
	assert_int_equal(plan.refused[1].reason, SBX_PLUGIN_BUILTIN);
	assert_string_equal(plan.refused[1].message,
			    "Refusing sandbox backend plugin ' Exec-Sandbox': that name belongs to a built-in backend");
	assert_int_equal(plan.refused[2].reason, SBX_PLUGIN_RESERVED);
	assert_string_equal(plan.refused[2].message, "Refusing sandbox backend plugin 'None '");
	assert_int_equal(plan.refused[3].reason, SBX_PLUGIN_UNLISTED); /* a blank name is never listed */
	assert_string_equal(plan.refused[3].message,
			    "Ignoring sandbox backend '': not listed in LANGFLOW_SANDBOX_BACKEND_PLUGINS");
	assert_int_equal(plan.refused[4].reason, SBX_PLUGIN_UNLISTED);
	assert_string_equal(plan.refused[4].message,
			    "Ignoring sandbox backend 'vendor': not listed in LANGFLOW_SANDBOX_BACKEND_PLUGINS");
	sbx_plugin_plan_free(&plan);
}

/* lfx 1.13 returns before enumerating entry points when the allow-list is
 * empty: whatever is installed, nothing is imported and nothing refused. */
static void test_plugins_empty_allowlist_enumerates_nothing(void **state)
{
	(void)state;
	const sbx_entry_point eps[] = {{"acme", "acme-sandbox"}, {"dup", "a"}, {"DUP", "b"}, {"exec-sandbox", "e"}};
	char *blank_only[] = {""};
	sbx_plugin_plan plan;
	sbx_err err = {{0}};
	assert_int_equal(sbx_gate_plan_plugins(eps, N(eps), NULL, 0, &plan, &err), 0);
	assert_int_equal(plan.n_loaded, 0);
	assert_int_equal(plan.n_imported, 0);
	assert_int_equal(plan.n_refused, 0);
	sbx_plugin_plan_free(&plan);
	assert_int_equal(sbx_gate_plan_plugins(eps, N(eps), blank_only, N(blank_only), &plan, &err), 0);
	assert_int_equal(plan.n_refused, 0);
	assert_int_equal(plan.n_loaded, 0);
	sbx_plugin_plan_free(&plan);
}

static void test_json_front_door(void **state)
{
	(void)state;
	sbx_err err = {{0}};
	cJSON *req = cJSON_Parse("{\"id\":1,\"op\":\"gate\",\"env\":{\"LANGFLOW_SANDBOX_TIMEOUT_SECONDS\":\"abc\"},"
				 "\"capabilities\":{\"isolation\":\"hardware-virtualized\"},\"code\":\"x\"}");
	cJSON *res = sbx_gate_answer(req, &err);
	assert_non_null(res);
	assert_string_equal(cJSON_GetObjectItem(res, "decision")->valuestring, "settings_error");
	assert_string_equal(cJSON_GetObjectItem(res, "variable")->valuestring, "LANGFLOW_SANDBOX_TIMEOUT_SECONDS");
	cJSON_Delete(res);
	cJSON_Delete(req);

	req = cJSON_Parse("{\"op\":\"load_plugins\",\"env\":{\"LANGFLOW_SANDBOX_BACKEND_PLUGINS\":\"acme\"},"
			  "\"entry_points\":[{\"name\":\"acme\",\"distribution\":\"acme-sandbox\"}]}");
	res = sbx_gate_answer(req, &err);
	assert_non_null(res);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(res, "imported"), 0)->valuestring, "acme-sandbox");
	cJSON_Delete(res);
	cJSON_Delete(req);

	req = cJSON_Parse("{\"op\":\"gate\",\"env\":{\"X\":1},\"code\":\"x\"}");
	assert_null(sbx_gate_answer(req, &err));
	assert_non_null(strstr(err.msg, "env.X"));
	cJSON_Delete(req);
	req = cJSON_Parse("{\"op\":\"run\"}");
	assert_null(sbx_gate_answer(req, &err));
	assert_non_null(strstr(err.msg, "unknown op"));
	cJSON_Delete(req);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_grant_nothing_extra),
		cmocka_unit_test(test_settings_normalize_lists_and_backend),
		cmocka_unit_test(test_settings_errors_name_variable_value_and_range),
		cmocka_unit_test(test_int_parsing_follows_pydantic_lax_mode),
		cmocka_unit_test(test_bool_spellings),
		cmocka_unit_test(test_gate_rules_in_order),
		cmocka_unit_test(test_blank_code_precedes_the_gate),
		cmocka_unit_test(test_domains_need_allowlist_even_with_network_on),
		cmocka_unit_test(test_none_is_in_process_and_blank_is_a_settings_error),
		cmocka_unit_test(test_plugins_never_import_unlisted_duplicate_builtin),
		cmocka_unit_test(test_plugins_empty_allowlist_enumerates_nothing),
		cmocka_unit_test(test_json_front_door),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

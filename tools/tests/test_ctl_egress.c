/* sbxctl's offline egress commands: `egress check` shows the engine's
 * decision and reason per destination (or every rule error), `egress lint`
 * reports every bad rule of a file with its index and line and exits 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ctl_run.h"

/* The stdout line that starts with `dest` (a table row), or fail. */
static char *row_for(const char *out, const char *dest)
{
	size_t n = strlen(dest);
	for (const char *p = out; p != NULL && *p != '\0';) {
		const char *nl = strchr(p, '\n');
		if (strncmp(p, dest, n) == 0 && p[n] == ' ') {
			size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
			char *r = malloc(len + 1);
			memcpy(r, p, len);
			r[len] = '\0';
			return r;
		}
		p = nl != NULL ? nl + 1 : NULL;
	}
	fail_msg("no row for '%s' in:\n%s", dest, out);
	return NULL;
}

static void expect_row(const char *out, const char *dest, const char *words[], size_t n)
{
	char *row = row_for(out, dest);
	for (size_t i = 0; i < n; i++) {
		if (strstr(row, words[i]) == NULL)
			fail_msg("row '%s': expected '%s'", row, words[i]);
	}
	free(row);
}

static void check_reports_decision_reason_and_rule(void **state)
{
	(void)state;
	ctl_run r = ctl_run_args("egress", "check", "--rules", "10.0.0.0/8:8080, 1.1.1.1, pypi.org",
				 "--mode", "documented", "10.2.3.4:8080", "10.2.3.4:22", "1.1.1.1:53",
				 "169.254.169.254:80", "127.0.0.1:5000", "pypi.org@151.101.0.223:443", NULL);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "DEST"));
	expect_row(r.out, "10.2.3.4:8080", (const char *[]){"allow", "rule", "#0 10.0.0.0/8:8080"}, 3);
	expect_row(r.out, "10.2.3.4:22", (const char *[]){"deny", "deny by default"}, 2);
	expect_row(r.out, "1.1.1.1:53", (const char *[]){"allow", "#1 1.1.1.1"}, 2);
	expect_row(r.out, "169.254.169.254:80", (const char *[]){"allow", "link-local exception"}, 2);
	expect_row(r.out, "127.0.0.1:5000", (const char *[]){"allow", "loopback"}, 2);
	expect_row(r.out, "pypi.org@151.101.0.223:443", (const char *[]){"allow", "#2 pypi.org"}, 2);
	ctl_run_free(&r);
}

static void observed_mode_ignores_host_rules_and_says_so(void **state)
{
	(void)state;
	ctl_run r = ctl_run_args("egress", "check", "--rules", "pypi.org,*.pythonhosted.org",
				 "pypi.org@151.101.0.223:443", "files.pythonhosted.org:443", NULL);
	assert_int_equal(r.rc, 0);
	expect_row(r.out, "pypi.org@151.101.0.223:443", (const char *[]){"deny", "deny by default"}, 2);
	expect_row(r.out, "files.pythonhosted.org:443", (const char *[]){"deny"}, 1);
	assert_non_null(strstr(r.out, "--mode documented"));
	ctl_run_free(&r);
	r = ctl_run_args("egress", "check", "--rules", "pypi.org,*.pythonhosted.org", "--mode", "documented",
			 "files.pythonhosted.org:443", "pythonhosted.org:443", NULL);
	expect_row(r.out, "files.pythonhosted.org:443", (const char *[]){"allow", "#1 *.pythonhosted.org"}, 2);
	/* a wildcard matches names strictly below the suffix, not the suffix */
	expect_row(r.out, "pythonhosted.org:443", (const char *[]){"deny"}, 1);
	ctl_run_free(&r);
}

static void empty_list_and_star_are_open_and_class_e_is_off(void **state)
{
	(void)state;
	ctl_run r = ctl_run_args("egress", "check", "--rules", "", "8.8.8.8:53", NULL);
	assert_int_equal(r.rc, 0);
	expect_row(r.out, "8.8.8.8:53", (const char *[]){"allow", "open policy"}, 2);
	ctl_run_free(&r);
	r = ctl_run_args("egress", "check", "--rules", "240.0.0.0/4", "8.8.8.8:53", "169.254.169.254:80", NULL);
	expect_row(r.out, "8.8.8.8:53", (const char *[]){"deny", "deny by default"}, 2);
	expect_row(r.out, "169.254.169.254:80", (const char *[]){"allow", "link-local"}, 2);
	ctl_run_free(&r);
}

static void check_json_output_is_machine_readable(void **state)
{
	(void)state;
	ctl_run r = ctl_run_args("--json", "egress", "check", "--rules", "1.1.1.0/24:53", "1.1.1.9:53",
				 "[2001:db8::1]:443", NULL);
	assert_int_equal(r.rc, 0);
	cJSON *arr = cJSON_Parse(r.out);
	assert_non_null(arr);
	assert_int_equal(cJSON_GetArraySize(arr), 2);
	cJSON *a = cJSON_GetArrayItem(arr, 0);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(a, "allowed")));
	assert_string_equal(cJSON_GetObjectItem(a, "reason")->valuestring, "rule");
	assert_int_equal(cJSON_GetObjectItem(a, "rule_index")->valueint, 0);
	assert_string_equal(cJSON_GetObjectItem(a, "rule")->valuestring, "1.1.1.0/24:53");
	cJSON *b = cJSON_GetArrayItem(arr, 1);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(b, "allowed")));
	assert_string_equal(cJSON_GetObjectItem(b, "reason")->valuestring, "deny by default");
	cJSON_Delete(arr);
	ctl_run_free(&r);
}

static void check_reports_every_bad_rule_and_exits_1(void **state)
{
	(void)state;
	ctl_run r = ctl_run_args("egress", "check", "--rules", "ok.com,*.,1.2.3.4:99999,,ex ample.com",
				 "1.1.1.1:53", NULL);
	assert_int_equal(r.rc, 1);
	assert_non_null(strstr(r.err, "rule 1 (`*.`)"));
	assert_non_null(strstr(r.err, "[wildcard]"));
	assert_non_null(strstr(r.err, "rule 2 (`1.2.3.4:99999`)"));
	assert_non_null(strstr(r.err, "[port]"));
	assert_non_null(strstr(r.err, "rule 3"));
	assert_non_null(strstr(r.err, "[empty]"));
	assert_non_null(strstr(r.err, "rule 4"));
	assert_null(strstr(r.err, "rule 0"));
	assert_string_equal(r.out, "");
	ctl_run_free(&r);
}

static void check_bad_destination_is_usage_error(void **state)
{
	(void)state;
	ctl_run r = ctl_run_args("egress", "check", "--rules", "1.1.1.1", "1.1.1.1", "1.1.1.1:53", NULL);
	assert_int_equal(r.rc, 2);
	assert_non_null(strstr(r.err, "destination '1.1.1.1'"));
	assert_string_equal(r.out, "");
	ctl_run_free(&r);
}

static char *write_temp(const char *content)
{
	char *path = strdup("/tmp/sbxctl-lint-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	size_t n = strlen(content);
	assert_int_equal(write(fd, content, n), (ssize_t)n);
	close(fd);
	return path;
}

static void lint_line_file_reports_index_line_and_class(void **state)
{
	(void)state;
	char *path = write_temp("# allow-list for the build sandbox\n"
				"pypi.org\n"
				"\n"
				"*.pythonhosted.org:443\n"
				"bad_host.com\n"
				"10.0.0.0/33\n"
				"PyPI.org.\n");
	ctl_run r = ctl_run_args("egress", "lint", path, NULL);
	assert_int_equal(r.rc, 1);
	char want[512];
	snprintf(want, sizeof want, "%s:5: rule 2 (`bad_host.com`)", path);
	if (strstr(r.err, want) == NULL)
		fail_msg("expected '%s' in:\n%s", want, r.err);
	snprintf(want, sizeof want, "%s:6: rule 3 (`10.0.0.0/33`)", path);
	assert_non_null(strstr(r.err, want));
	assert_non_null(strstr(r.err, "[prefix]"));
	/* the same rule twice (after canonicalisation) is a warning, not an error */
	assert_non_null(strstr(r.err, "warning: rule 4 (`PyPI.org.`) duplicates rule 0"));
	assert_non_null(strstr(r.out, "5 rules, 2 errors"));
	ctl_run_free(&r);
	unlink(path);
	free(path);
}

static void lint_clean_file_exits_0(void **state)
{
	(void)state;
	char *path = write_temp("pypi.org\n*.pythonhosted.org\n[2001:db8::/32]:443\n10.1.2.3/8\n");
	ctl_run r = ctl_run_args("--json", "egress", "lint", path, NULL);
	assert_int_equal(r.rc, 0);
	cJSON *o = cJSON_Parse(r.out);
	assert_non_null(o);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "ok")));
	assert_int_equal(cJSON_GetObjectItem(o, "rules")->valueint, 4);
	cJSON *canon = cJSON_GetObjectItem(o, "canonical");
	assert_int_equal(cJSON_GetArraySize(canon), 4);
	assert_string_equal(cJSON_GetArrayItem(canon, 3)->valuestring, "10.0.0.0/8");
	cJSON_Delete(o);
	ctl_run_free(&r);
	unlink(path);
	free(path);
}

static void lint_json_array_reports_type_errors(void **state)
{
	(void)state;
	char *path = write_temp("[\"pypi.org\", 42, \"*.*.x\", null, \"1.1.1.1\"]");
	ctl_run r = ctl_run_args("--json", "egress", "lint", path, NULL);
	assert_int_equal(r.rc, 1);
	cJSON *o = cJSON_Parse(r.out);
	assert_non_null(o);
	assert_string_equal(cJSON_GetObjectItem(o, "format")->valuestring, "json");
	cJSON *errs = cJSON_GetObjectItem(o, "errors");
	assert_int_equal(cJSON_GetArraySize(errs), 3);
	int idx[3] = {1, 2, 3};
	const char *cls[3] = {"type", "wildcard", "type"};
	for (int i = 0; i < 3; i++) {
		cJSON *e = cJSON_GetArrayItem(errs, i);
		assert_int_equal(cJSON_GetObjectItem(e, "index")->valueint, idx[i]);
		assert_string_equal(cJSON_GetObjectItem(e, "class")->valuestring, cls[i]);
	}
	cJSON_Delete(o);
	ctl_run_free(&r);
	unlink(path);
	free(path);
}

static void lint_over_the_limit_is_too_many(void **state)
{
	(void)state;
	char *path = write_temp("1.1.1.1\n2.2.2.2\n3.3.3.3\n");
	ctl_run r = ctl_run_args("egress", "lint", "--max-rules", "2", path, NULL);
	assert_int_equal(r.rc, 1);
	assert_non_null(strstr(r.err, "3 rules is over the limit of 2 [too_many]"));
	ctl_run_free(&r);
	r = ctl_run_args("egress", "lint", "/nonexistent/rules.txt", NULL);
	assert_int_equal(r.rc, 1);
	assert_non_null(strstr(r.err, "cannot open '/nonexistent/rules.txt'"));
	ctl_run_free(&r);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(check_reports_decision_reason_and_rule),
		cmocka_unit_test(observed_mode_ignores_host_rules_and_says_so),
		cmocka_unit_test(empty_list_and_star_are_open_and_class_e_is_off),
		cmocka_unit_test(check_json_output_is_machine_readable),
		cmocka_unit_test(check_reports_every_bad_rule_and_exits_1),
		cmocka_unit_test(check_bad_destination_is_usage_error),
		cmocka_unit_test(lint_line_file_reports_index_line_and_class),
		cmocka_unit_test(lint_clean_file_exits_0),
		cmocka_unit_test(lint_json_array_reports_type_errors),
		cmocka_unit_test(lint_over_the_limit_is_too_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Every case of fixtures/egress/vectors.json holds for the compiled policy
 * and for the reference evaluator: accepted rules print their canonical text
 * and parse back to the same rule, rejected rules fail with the listed error
 * class, destinations get the listed decision, and lists as the API receives
 * them are accepted or rejected as listed. Failures name the case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/egress.h"

static cJSON *vectors;

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *buf = NULL;
	if (fseek(f, 0, SEEK_END) != 0)
		goto out_close;
	long size = ftell(f);
	if (size < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out_close;
	buf = malloc((size_t)size + 1);
	if (buf == NULL)
		goto out_close;
	if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
		free(buf);
		buf = NULL;
		goto out_close;
	}
	buf[size] = '\0';
out_close:
	fclose(f);
	return buf;
}

static int load_vectors(void **state)
{
	(void)state;
	char path[4096];
	const char *dir = getenv("SBX_FIXTURES_DIR");
	const char *src = getenv("SBX_SOURCE_DIR");
	if (dir != NULL && dir[0] != '\0')
		snprintf(path, sizeof path, "%s/egress/vectors.json", dir);
	else if (src != NULL && src[0] != '\0')
		snprintf(path, sizeof path, "%s/fixtures/egress/vectors.json", src);
	else
		snprintf(path, sizeof path, "fixtures/egress/vectors.json");
	char *text = read_file(path);
	if (text == NULL) {
		fprintf(stderr, "cannot read %s (set SBX_FIXTURES_DIR)\n", path);
		return -1;
	}
	vectors = cJSON_Parse(text);
	free(text);
	return vectors != NULL ? 0 : -1;
}

static int free_vectors(void **state)
{
	(void)state;
	cJSON_Delete(vectors);
	return 0;
}

static const char *str_field(const cJSON *obj, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static size_t unhex(const char *hex, char *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; hex[i] != '\0' && hex[i + 1] != '\0' && n < cap; i += 2) {
		char pair[3] = {hex[i], hex[i + 1], '\0'};
		out[n++] = (char)strtol(pair, NULL, 16);
	}
	return n;
}

/* Parses, formats and re-parses; returns false with a message on mismatch. */
static bool check_round_trip(const char *text, size_t len, const char *want, const char *note)
{
	sbx_egress_rule r, again;
	sbx_egress_error err;
	char buf[SBX_EGRESS_CANON_MAX];
	if (sbx_egress_rule_parse(text, len, 0, &r, &err) != 0) {
		print_error("parse `%s` (%s): rejected: %s\n", text, note, err.message);
		return false;
	}
	size_t n = sbx_egress_rule_format(&r, buf, sizeof buf);
	if (n != strlen(buf) || n >= sizeof buf) {
		print_error("parse `%s` (%s): format length %zu\n", text, note, n);
		return false;
	}
	if (want != NULL && strcmp(buf, want) != 0) {
		print_error("parse `%s` (%s): canonical `%s`, expected `%s`\n", text, note, buf,
			    want);
		return false;
	}
	if (sbx_egress_rule_parse(buf, n, 0, &again, &err) != 0 ||
	    !sbx_egress_rule_equal(&r, &again)) {
		print_error("parse `%s` (%s): canonical `%s` does not parse back\n", text, note,
			    buf);
		return false;
	}
	return true;
}

static void parse_vectors_hold(void **state)
{
	(void)state;
	const cJSON *cases = cJSON_GetObjectItemCaseSensitive(vectors, "parse");
	size_t failed = 0, total = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, cases)
	{
		char raw[8192];
		const char *text = str_field(c, "rule");
		const char *hex = str_field(c, "rule_hex");
		const char *note = str_field(c, "note");
		size_t len = text != NULL ? strlen(text) : 0;
		if (hex != NULL) {
			len = unhex(hex, raw, sizeof raw - 1);
			raw[len] = '\0';
			text = raw;
		}
		assert_non_null(text);
		total++;
		const char *canon = str_field(c, "canonical");
		const char *want_err = str_field(c, "error");
		if (canon != NULL) {
			failed += !check_round_trip(text, len, canon, note);
			continue;
		}
		sbx_egress_rule r;
		sbx_egress_error err;
		if (sbx_egress_rule_parse(text, len, 4, &r, &err) == 0) {
			print_error("parse `%s` (%s): accepted, expected error %s\n", text, note,
				    want_err);
			failed++;
		} else if (strcmp(sbx_egress_errclass_name(err.cls), want_err) != 0) {
			print_error("parse `%s` (%s): error %s, expected %s: %s\n", text, note,
				    sbx_egress_errclass_name(err.cls), want_err, err.message);
			failed++;
		} else if (err.index != 4 || strncmp(err.message, "rule 4 (`", 9) != 0) {
			print_error("parse `%s`: message does not name the rule: %s\n", text,
				    err.message);
			failed++;
		}
	}
	print_message("%zu parse cases, %zu failed\n", total, failed);
	assert_true(total >= 100);
	assert_int_equal(failed, 0);
}

static bool same_decision(sbx_egress_decision got, const cJSON *c, const char *who)
{
	const cJSON *allowed = cJSON_GetObjectItemCaseSensitive(c, "allowed");
	const char *reason = str_field(c, "reason");
	const cJSON *idx = cJSON_GetObjectItemCaseSensitive(c, "rule_index");
	bool ok = got.allowed == cJSON_IsTrue(allowed) &&
		  strcmp(sbx_egress_reason_name(got.reason), reason) == 0;
	if (ok && got.reason == SBX_REASON_RULE)
		ok = cJSON_IsNumber(idx) && (double)got.rule_index == idx->valuedouble;
	if (!ok) {
		char *rules = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c, "rules"));
		print_error(
			"%s: rules %s mode %s dest `%s` (%s): got %s/%s/%zu, expected %s/%s/%d\n",
			who, rules, str_field(c, "mode"), str_field(c, "dest"),
			str_field(c, "note"), got.allowed ? "allow" : "deny",
			sbx_egress_reason_name(got.reason), got.rule_index,
			cJSON_IsTrue(allowed) ? "allow" : "deny", reason,
			cJSON_IsNumber(idx) ? idx->valueint : -1);
		free(rules);
	}
	return ok;
}

static void decision_vectors_hold_for_both_evaluators(void **state)
{
	(void)state;
	const cJSON *cases = cJSON_GetObjectItemCaseSensitive(vectors, "decide");
	size_t failed = 0, total = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, cases)
	{
		sbx_egress_list list;
		sbx_egress_error err;
		const cJSON *rules = cJSON_GetObjectItemCaseSensitive(c, "rules");
		if (sbx_egress_list_from_json(rules, SBX_EGRESS_MAX_RULES_DEFAULT, &list, &err) !=
		    0)
			fail_msg("decide case list rejected: %s", err.message);
		for (size_t i = 0; i < list.count; i++) {
			const cJSON *item = cJSON_GetArrayItem(rules, (int)i);
			failed += !check_round_trip(item->valuestring, strlen(item->valuestring),
						    NULL, "decide rule");
		}
		const char *mode_name = str_field(c, "mode");
		sbx_host_rule_mode mode = strcmp(mode_name, "documented") == 0
						  ? SBX_HOST_RULES_DOCUMENTED
						  : SBX_HOST_RULES_OBSERVED;
		const char *dtext = str_field(c, "dest");
		sbx_egress_dest dest;
		char host[SBX_EGRESS_HOST_MAX + 1];
		if (sbx_egress_dest_parse(dtext, strlen(dtext), &dest, host, sizeof host, &err) !=
		    0)
			fail_msg("decide case dest `%s` rejected: %s", dtext, err.message);
		sbx_egress_policy *p = sbx_egress_policy_compile(&list, mode);
		assert_non_null(p);
		total++;
		failed += !same_decision(sbx_egress_policy_eval(p, &dest), c, "compiled");
		failed += !same_decision(sbx_egress_reference_eval(&list, mode, &dest), c,
					 "reference");
		sbx_egress_policy_free(p);
		sbx_egress_list_free(&list);
	}
	print_message("%zu decision cases, %zu failures\n", total, failed);
	assert_true(total >= 150);
	assert_int_equal(failed, 0);
}

static void list_vectors_hold(void **state)
{
	(void)state;
	const cJSON *cases = cJSON_GetObjectItemCaseSensitive(vectors, "lists");
	size_t failed = 0, total = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, cases)
	{
		const cJSON *egress = cJSON_GetObjectItemCaseSensitive(c, "egress");
		const cJSON *max = cJSON_GetObjectItemCaseSensitive(c, "max_rules");
		const cJSON *canon = cJSON_GetObjectItemCaseSensitive(c, "canonical");
		const char *want_err = str_field(c, "error");
		const cJSON *want_idx = cJSON_GetObjectItemCaseSensitive(c, "index");
		const char *note = str_field(c, "note");
		sbx_egress_list list;
		sbx_egress_error err;
		total++;
		int rc = sbx_egress_list_from_json(egress, (size_t)max->valueint, &list, &err);
		if (want_err != NULL) {
			if (rc == 0) {
				print_error("list (%s): accepted, expected %s\n", note, want_err);
				failed++;
				sbx_egress_list_free(&list);
			} else if (strcmp(sbx_egress_errclass_name(err.cls), want_err) != 0 ||
				   (cJSON_IsNumber(want_idx) &&
				    (double)err.index != want_idx->valuedouble)) {
				print_error("list (%s): error %s at %zu, expected %s: %s\n", note,
					    sbx_egress_errclass_name(err.cls), err.index, want_err,
					    err.message);
				failed++;
			}
			continue;
		}
		if (rc != 0) {
			print_error("list (%s): rejected: %s\n", note, err.message);
			failed++;
			continue;
		}
		if (list.is_null != cJSON_IsNull(egress)) {
			print_error("list (%s): is_null %d\n", note, list.is_null);
			failed++;
		}
		cJSON *out = sbx_egress_list_to_json(&list);
		if (!cJSON_Compare(out, canon, true)) {
			char *got = cJSON_PrintUnformatted(out);
			print_error("list (%s): canonical %s\n", note, got);
			free(got);
			failed++;
		}
		cJSON_Delete(out);
		sbx_egress_list_free(&list);
	}
	print_message("%zu list cases, %zu failed\n", total, failed);
	assert_true(total >= 15);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_vectors_hold),
		cmocka_unit_test(decision_vectors_hold_for_both_evaluators),
		cmocka_unit_test(list_vectors_hold),
	};
	return cmocka_run_group_tests(tests, load_vectors, free_vectors);
}

/* Unit: the fault-rule engine without HTTP — parsing errors name the rule
 * and field, matching, firing modes, path patterns and the seeded RNG. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "faults.h"
#include "journal.h"
#include "util/path_match.h"

static int add(mock_faults *f, const char *json, sbx_err *err)
{
	cJSON *b = cJSON_Parse(json);
	cJSON *ids = cJSON_CreateArray();
	int rc;

	assert_non_null(b);
	rc = mock_faults_add_json(f, b, ids, err);
	cJSON_Delete(b);
	cJSON_Delete(ids);
	return rc;
}

static void path_patterns(void **state)
{
	(void)state;
	assert_true(mock_path_match("/v1/sandboxes/{id}/exec", "/v1/sandboxes/sb-1/exec"));
	assert_false(mock_path_match("/v1/sandboxes/{id}/exec", "/v1/sandboxes//exec"));
	assert_false(mock_path_match("/v1/sandboxes/{id}", "/v1/sandboxes/a/b"));
	assert_true(mock_path_match("/v1/*", "/v1/sandboxes/a/b"));
	assert_false(mock_path_match("/v1/sandboxes", "/v1/sandboxes/x"));
}

static void parse_errors_name_rule_and_field(void **state)
{
	mock_faults *f = mock_faults_new(1);
	sbx_err err = {{0}};

	(void)state;
	assert_int_equal(add(f, "{\"rules\":[{\"action\":{\"kind\":\"reset\"}},{\"action\":{\"kind\":\"http\",\"status\":99}}]}", &err), -1);
	assert_non_null(strstr(err.msg, "rule 1"));
	assert_non_null(strstr(err.msg, "status"));
	assert_int_equal(mock_faults_count(f), 0); /* all or nothing */
	assert_int_equal(add(f, "{\"fire\":{\"probability\":2},\"action\":{\"kind\":\"close\"}}", &err), -1);
	assert_non_null(strstr(err.msg, "probability"));
	assert_int_equal(add(f, "{\"match\":{\"path\":3},\"action\":{\"kind\":\"close\"}}", &err), -1);
	assert_int_equal(add(f, "{\"action\":{\"kind\":\"latency\",\"dist\":\"weird\"}}", &err), -1);
	mock_faults_free(f);
}

static void first_match_wins_and_counts(void **state)
{
	mock_faults *f = mock_faults_new(1);
	sbx_err err = {{0}};
	mock_fault_action a;
	char label[64];
	mock_fault_req q = {"GET", "/v1/sandboxes/sb-1", "k", "lf-x", 1, false};

	(void)state;
	assert_int_equal(add(f, "{\"name\":\"one\",\"match\":{\"name_prefix\":\"lf-\",\"method\":\"get\"},\"fire\":{\"times\":1},\"action\":{\"kind\":\"close\"}}", &err), 0);
	assert_int_equal(add(f, "{\"name\":\"two\",\"action\":{\"kind\":\"reset\"}}", &err), 0);
	assert_true(mock_faults_eval(f, &q, &a, label, sizeof(label)));
	assert_string_equal(label, "one");
	assert_int_equal(a.kind, FK_CLOSE);
	assert_true(mock_faults_eval(f, &q, &a, label, sizeof(label)));
	assert_string_equal(label, "two");
	q.name = NULL;
	assert_true(mock_faults_eval(f, &q, &a, label, sizeof(label)));
	assert_string_equal(label, "two");
	assert_int_equal(mock_faults_delete(f, 2), 0);
	assert_false(mock_faults_eval(f, &q, &a, label, sizeof(label)));
	assert_int_equal(mock_faults_delete(f, 2), -1);
	mock_faults_free(f);
}

static void request_number_and_exec_only(void **state)
{
	mock_faults *f = mock_faults_new(1);
	sbx_err err = {{0}};
	mock_fault_action a;
	char label[64];
	mock_fault_req q = {"POST", "/v1/sandboxes/sb-1/exec", "k", NULL, 2, true};

	(void)state;
	assert_int_equal(add(f, "{\"match\":{\"request\":3},\"action\":{\"kind\":\"close\"}}", &err), 0);
	assert_int_equal(add(f, "{\"action\":{\"kind\":\"exec_oom\"}}", &err), 0);
	assert_true(mock_faults_eval(f, &q, &a, label, sizeof(label)));
	assert_int_equal(a.kind, FK_EXEC_OOM);
	q.request_no = 3;
	assert_true(mock_faults_eval(f, &q, &a, label, sizeof(label)));
	assert_int_equal(a.kind, FK_CLOSE);
	q.request_no = 4;
	q.is_exec = false;
	q.path = "/v1/whoami";
	assert_false(mock_faults_eval(f, &q, &a, label, sizeof(label)));
	mock_faults_free(f);
}

/* fire {after, times, probability} combine: skip, then a bounded number of
 * seeded draws; the same seed gives the same pattern. */
static void fire_fields_combine(void **state)
{
	mock_fault_req q = {"GET", "/v1/whoami", "k", NULL, 1, false};
	char pat[2][21];

	(void)state;
	for (int run = 0; run < 2; run++) {
		mock_faults *f = mock_faults_new(42);
		sbx_err err = {{0}};
		mock_fault_action a;
		char label[64];
		int fired = 0;

		assert_int_equal(add(f, "{\"fire\":{\"after\":3,\"times\":4,\"probability\":0.5},"
				     "\"action\":{\"kind\":\"close\"}}", &err), 0);
		for (int i = 0; i < 20; i++) {
			bool hit = mock_faults_eval(f, &q, &a, label, sizeof(label));

			pat[run][i] = hit ? 'x' : '.';
			fired += hit;
			if (i < 3)
				assert_false(hit); /* the first three are skipped */
		}
		pat[run][20] = '\0';
		assert_true(fired <= 4);
		assert_true(fired >= 1);
		mock_faults_free(f);
	}
	assert_string_equal(pat[0], pat[1]);
}

static void new_actions_and_retry_after_parse(void **state)
{
	mock_faults *f = mock_faults_new(1);
	sbx_err err = {{0}};
	mock_fault_action a;
	char label[64];
	mock_fault_req q = {"GET", "/v1/whoami", "k", NULL, 1, false};

	(void)state;
	assert_int_equal(add(f, "{\"fire\":{\"times\":1},\"action\":{\"kind\":\"http\",\"status\":429,\"retry_after\":\"2\"}}", &err), 0);
	assert_int_equal(add(f, "{\"fire\":{\"times\":1},\"action\":{\"kind\":\"host_dies\",\"host_id\":\"host-local-1\"}}", &err), 0);
	assert_int_equal(add(f, "{\"fire\":{\"times\":1},\"action\":{\"kind\":\"cp_restart\"}}", &err), 0);
	assert_true(mock_faults_eval(f, &q, &a, label, sizeof(label)));
	assert_int_equal(a.retry_after, 2);
	assert_true(mock_faults_eval(f, &q, &a, label, sizeof(label)));
	assert_int_equal(a.kind, FK_HOST_DIES);
	assert_string_equal(a.host_id, "host-local-1");
	assert_true(mock_faults_eval(f, &q, &a, label, sizeof(label)));
	assert_int_equal(a.kind, FK_CP_RESTART);
	assert_int_equal(a.not_ready_ms, 5000); /* the default */
	assert_int_equal(add(f, "{\"action\":{\"kind\":\"http\",\"retry_after\":\"soon\"}}", &err), -1);
	assert_non_null(strstr(err.msg, "retry_after"));
	assert_int_equal(add(f, "{\"fire\":{\"sometimes\":1},\"action\":{\"kind\":\"close\"}}", &err), -1);
	assert_non_null(strstr(err.msg, "fire.sometimes"));
	mock_faults_free(f);
}

static void seeded_draws_repeat(void **state)
{
	mock_faults *a = mock_faults_new(42), *b = mock_faults_new(42);
	mock_fault_action act;
	sbx_err err = {{0}};
	cJSON *rule = cJSON_Parse("{\"dist\":\"lognormal\",\"mu\":3,\"sigma\":1}");

	(void)state;
	memset(&act, 0, sizeof(act));
	act.kind = FK_LATENCY;
	act.dist = LAT_LOGNORMAL;
	act.mu = 3;
	act.sigma = 1;
	for (int i = 0; i < 20; i++) {
		double x = mock_faults_latency_ms(a, &act), y = mock_faults_latency_ms(b, &act);

		assert_true(x == y);
		assert_true(x > 0);
	}
	(void)err;
	cJSON_Delete(rule);
	mock_faults_free(a);
	mock_faults_free(b);
}

static void journal_ring_wraps_and_counts_drops(void **state)
{
	mock_journal *j = mock_journal_new(3);
	mock_journal_entry e;
	mock_journal_filter f;
	cJSON *q;

	(void)state;
	memset(&e, 0, sizeof(e));
	snprintf(e.method, sizeof e.method, "%s", "GET");
	e.path = (char *)"/v1/x";
	for (int i = 0; i < 5; i++) {
		e.status = 200 + i;
		mock_journal_add(j, &e);
	}
	memset(&f, 0, sizeof(f));
	q = mock_journal_query(j, &f);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(q, "entries")), 3);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(q, "wrapped")));
	assert_int_equal(cJSON_GetObjectItem(q, "dropped")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(q, "entries"), 0), "seq")->valueint, 3);
	cJSON_Delete(q);
	f.status = 204;
	assert_int_equal(mock_journal_count(j, &f), 1);
	mock_journal_free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(path_patterns),
		cmocka_unit_test(parse_errors_name_rule_and_field),
		cmocka_unit_test(first_match_wins_and_counts),
		cmocka_unit_test(request_number_and_exec_only),
		cmocka_unit_test(fire_fields_combine),
		cmocka_unit_test(new_actions_and_retry_after_parse),
		cmocka_unit_test(seeded_draws_repeat),
		cmocka_unit_test(journal_ring_wraps_and_counts_drops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit: a template build's log in the model (issue 44, TEMPLATES.md
 * "Logs"): it keeps its last lines, bounded in lines and in bytes, and a
 * reader is told how many it missed; the tenant's state record carries
 * only the log's last lines, so a record stays small however much a build
 * printed, and a restored log says what it lost. And the template's view
 * and delete, the model's own (templates/templates.c renders and removes
 * through them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* the bounds TEMPLATES.md and LIMITS.md give */
#define LOG_LINES 4000
#define LOG_BYTES (1024 * 1024)
#define RECORD_LINES 10
#define KEY_HASH "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static mock_model *new_model(void)
{
	mock_settings s;

	memset(&s, 0, sizeof(s));
	s.accept_any_key = true;
	s.credit = true;
	s.tpl_build_cap = 4;
	s.tpl_build_cap_global = 8;
	s.tpl_cap = MOCK_TPL_CAP;
	s.tpl_storage_mib = MOCK_TPL_STORAGE_MIB;
	s.tpl_storage_mib_global = MOCK_TPL_STORAGE_MIB_GLOBAL;
	snprintf(s.region, sizeof s.region, "%s", "local");
	s.ready = true;
	return mock_model_new(&s);
}

static cJSON *new_template(mock_model *m, mock_tenant *t)
{
	cJSON *body = cJSON_Parse("{\"name\":\"t1\",\"dockerfile\":\"FROM nodeops/sandbox:debian\\nRUN true\\n\"}");
	mock_err e;
	cJSON *tpl;

	assert_non_null(body);
	tpl = mock_template_create(m, t, body, &e);
	cJSON_Delete(body);
	if (tpl == NULL)
		fail_msg("template create: %d %s", e.status, e.msg);
	return tpl;
}

static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

/* The text log of tpl from line from; the caller frees. */
static char *log_text(const cJSON *tpl, size_t from, size_t *total)
{
	sbx_strbuf out = SBX_STRBUF_INIT;
	size_t n = mock_template_log_lines(tpl, from, false, &out);

	if (total != NULL)
		*total = n;
	return out.data != NULL ? out.data : strdup("");
}

static void log_keeps_last_lines_and_says_how_many_went(void **state)
{
	mock_model *m = new_model();
	mock_tenant *t = mock_tenant_get(m, "k", true);
	cJSON *tpl = new_template(m, t);
	char line[64], *text, want[64];
	size_t total;

	(void)state;
	for (int i = 0; i < 10000; i++) {
		snprintf(line, sizeof(line), "line %d", i);
		mock_template_log(tpl, line);
	}
	text = log_text(tpl, 0, &total);
	assert_int_equal(total, 10000);
	/* the marker first, then the last LOG_LINES lines */
	if (strncmp(text, "[6000 earlier lines not kept", 28) != 0)
		fail_msg("want the log to start with \"[6000 earlier lines not kept\", got \"%.80s\"", text);
	assert_int_equal(count_lines(text), LOG_LINES + 1);
	assert_non_null(strstr(text, "\nline 6000\n"));
	assert_null(strstr(text, "\nline 5999\n"));
	free(text);
	/* a follower that read up to line 9990 gets the 10 after it, no marker */
	text = log_text(tpl, 9990, NULL);
	assert_string_equal(strstr(text, "line 9990\n"), text);
	assert_int_equal(count_lines(text), 10);
	free(text);
	/* one that fell behind (line 100) is told how many it missed */
	text = log_text(tpl, 100, NULL);
	snprintf(want, sizeof(want), "[%d earlier lines not kept", 6000 - 100);
	assert_memory_equal(text, want, strlen(want));
	free(text);
	mock_model_free(m);
}

static void log_bytes_are_bounded(void **state)
{
	mock_model *m = new_model();
	mock_tenant *t = mock_tenant_get(m, "k", true);
	cJSON *tpl = new_template(m, t);
	char *big = malloc(5000), *text;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', 4999);
	big[4999] = '\0';
	for (int i = 0; i < 3000; i++) /* 15 MB printed, lines cut at 4095 bytes */
		mock_template_log(tpl, big);
	text = log_text(tpl, 0, NULL);
	if (strlen(text) > LOG_BYTES + 4096)
		fail_msg("the log kept %zu bytes, want at most %d (and the marker)", strlen(text), LOG_BYTES);
	assert_non_null(strstr(text, "earlier lines not kept"));
	free(text);
	free(big);
	mock_model_free(m);
}

/* A step's output comes a read at a time: many lines in one call. */
static void a_read_of_many_lines_is_kept_as_lines(void **state)
{
	mock_model *m = new_model();
	mock_tenant *t = mock_tenant_get(m, "k", true);
	cJSON *tpl = new_template(m, t);
	sbx_strbuf in = SBX_STRBUF_INIT;
	char *text;
	size_t total;

	(void)state;
	for (int i = 0; i < 5000; i++)
		sbx_strbuf_printf(&in, "out %d\n", i);
	mock_template_log_add(tpl, in.data, in.len);
	mock_template_log_add(tpl, "last\n", 5);
	text = log_text(tpl, 0, &total);
	assert_int_equal(total, 5001);
	assert_memory_equal(text, "[1001 earlier lines not kept", 28);
	assert_non_null(strstr(text, "\nout 1001\nout 1002\n"));
	assert_non_null(strstr(text, "\nout 4999\nlast\n"));
	assert_int_equal(count_lines(text), LOG_LINES + 1);
	free(text);
	sbx_strbuf_free(&in);
	mock_model_free(m);
}

static void tenant_record_carries_only_the_logs_tail(void **state)
{
	mock_model *m = new_model(), *m2 = new_model();
	mock_tenant *t = mock_tenant_get(m, "k", true);
	cJSON *tpl = new_template(m, t), *rec;
	char *big = malloc(5000), *printed, *text, why[256] = "";
	size_t total;

	(void)state;
	assert_non_null(big);
	memset(big, 'y', 4999);
	big[4999] = '\0';
	for (int i = 0; i < LOG_LINES; i++)
		mock_template_log(tpl, big);
	mock_template_log(tpl, "build failed at step 1/1 (line 2) RUN: exit status 1");
	mock_template_set_status(m, tpl, "failed", 0);
	rec = mock_tenant_dump(t);
	printed = cJSON_PrintUnformatted(rec);
	/* RECORD_LINES lines of at most 511 bytes, and the template itself */
	if (strlen(printed) > 8192)
		fail_msg("the tenant's record is %zu bytes, want under 8 KiB (a log's tail only)", strlen(printed));
	/* no state key in a bare model: the hash a durable mock writes */
	cJSON_ReplaceItemInObjectCaseSensitive(rec, "key_hash", cJSON_CreateString(KEY_HASH));
	if (mock_tenant_restore(m2, rec, why, sizeof(why)) != 0)
		fail_msg("restoring the record: %s", why);
	text = log_text(cJSON_GetArrayItem(m2->tenants->templates, 0), 0, &total);
	assert_int_equal(total, LOG_LINES + 1);
	if (strncmp(text, "[3991 earlier lines not kept", 28) != 0)
		fail_msg("want the restored log to start with \"[3991 earlier lines not kept\", got \"%.80s\"", text);
	assert_int_equal(count_lines(text), RECORD_LINES + 1);
	assert_non_null(strstr(text, "\nbuild failed at step 1/1 (line 2) RUN: exit status 1\n"));
	free(text);
	cJSON_free(printed);
	cJSON_Delete(rec);
	free(big);
	mock_model_free(m);
	mock_model_free(m2);
}

/* The view hides the dockerfile unless asked (the one place that does:
 * list, get and create ask it) and the build's bookkeeping always. */
static void view_hides_the_dockerfile_unless_asked(void **state)
{
	mock_model *m = new_model();
	mock_tenant *t = mock_tenant_get(m, "k", true);
	cJSON *tpl = new_template(m, t);
	cJSON *views[2] = {mock_template_view(m, tpl, false), mock_template_view(m, tpl, true)};
	static const char *const never[] = {"_steps", "_log", "_disk_mib", "_created_ms"};

	(void)state;
	assert_null(cJSON_GetObjectItemCaseSensitive(views[0], "dockerfile"));
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(views[1], "dockerfile")->valuestring,
			    "FROM nodeops/sandbox:debian\nRUN true\n");
	for (size_t v = 0; v < 2; v++) {
		for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
			if (cJSON_GetObjectItemCaseSensitive(views[v], never[i]) != NULL)
				fail_msg("the view (dockerfile %s) shows %s", v ? "asked" : "not asked", never[i]);
		cJSON_Delete(views[v]);
	}
	mock_model_free(m);
}

/* The model's own delete: by name too, the id handed back (its layer is
 * the caller's to remove); an unknown one is a 404 that names it. */
static void delete_by_name_gives_the_id_and_404s_an_unknown(void **state)
{
	mock_model *m = new_model();
	mock_tenant *t = mock_tenant_get(m, "k", true);
	cJSON *tpl = new_template(m, t);
	char want[64], id[64] = "";
	mock_err e;

	(void)state;
	snprintf(want, sizeof(want), "%s", cJSON_GetObjectItemCaseSensitive(tpl, "id")->valuestring);
	assert_int_equal(mock_template_delete(m, t, "t1", id, sizeof(id), &e), 0);
	assert_string_equal(id, want);
	assert_null(mock_template_find(t, want));
	assert_int_equal(cJSON_GetArraySize(t->templates), 0);
	memset(&e, 0, sizeof(e));
	assert_int_equal(mock_template_delete(m, t, "t1", id, sizeof(id), &e), -1);
	assert_int_equal(e.status, 404);
	assert_string_equal(e.msg, "template not found");
	mock_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(log_keeps_last_lines_and_says_how_many_went),
		cmocka_unit_test(log_bytes_are_bounded),
		cmocka_unit_test(a_read_of_many_lines_is_kept_as_lines),
		cmocka_unit_test(tenant_record_carries_only_the_logs_tail),
		cmocka_unit_test(view_hides_the_dockerfile_unless_asked),
		cmocka_unit_test(delete_by_name_gives_the_id_and_404s_an_unknown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit: the mock's state model without sockets — lifecycle table, caps,
 * credit, name rules, envs limits, the virtual clock and auto-pause. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static mock_model *new_model(double timing)
{
	mock_settings s;

	memset(&s, 0, sizeof(s));
	s.sandbox_cap = 2;
	s.cap_status = 403;
	snprintf(s.cap_code, sizeof s.cap_code, "%s", "QUOTA_EXCEEDED");
	s.credit = true;
	s.accept_any_key = true;
	s.timing_scale = timing;
	s.max_egress_rules = 16;
	snprintf(s.region, sizeof s.region, "%s", "local");
	s.ready = true;
	return mock_model_new(&s);
}

static mock_sandbox *mk(mock_model *m, mock_tenant *t, const char *name, mock_err *e)
{
	mock_create_req q;
	mock_sandbox *sb;

	memset(&q, 0, sizeof(q));
	q.shape = "s-1vcpu-1gb";
	q.name = name;
	q.egress.is_null = true;
	sb = mock_sandbox_create(m, t, &q, e);
	if (sb != NULL)
		mock_sandbox_set_running(m, sb);
	return sb;
}

static void lifecycle_follows_the_table(void **state)
{
	mock_model *m = new_model(0);
	mock_tenant *t = mock_tenant_get(m, "k", true);
	mock_err e;
	mock_sandbox *sb = mk(m, t, NULL, &e);
	mock_fork_req fq;
	mock_sandbox *f;
	bool now;

	(void)state;
	assert_non_null(sb);
	assert_int_equal(sb->status, ST_RUNNING);
	assert_int_equal(mock_sandbox_resume(m, sb, &e), 200);
	assert_int_equal(mock_sandbox_pause(m, sb, &e), 202);
	assert_int_equal(sb->status, ST_PAUSING);
	mock_tick(m, NULL, NULL);
	assert_int_equal(sb->status, ST_PAUSED);
	assert_int_equal(mock_sandbox_pause(m, sb, &e), 200);
	memset(&fq, 0, sizeof(fq));
	fq.egress.is_null = true;
	fq.start_paused = true;
	f = mock_sandbox_fork(m, sb, &fq, &e);
	assert_non_null(f);
	assert_int_equal(f->status, ST_PAUSED);
	assert_string_equal(f->forked_from, sb->id);
	assert_int_equal(mock_sandbox_resume(m, sb, &e), 202);
	assert_int_equal(sb->status, ST_RESUMING);
	mock_tick(m, NULL, NULL);
	assert_int_equal(sb->status, ST_RUNNING);
	/* fork from running is refused */
	assert_null(mock_sandbox_fork(m, sb, &fq, &e));
	assert_int_equal(e.status, 409);
	assert_int_equal(mock_sandbox_destroy(m, sb, &now, &e), 200);
	assert_true(now);
	assert_int_equal(sb->status, ST_DESTROYED);
	assert_int_equal(mock_sandbox_pause(m, sb, &e), -1);
	assert_int_equal(e.status, 409);
	mock_model_free(m);
}

static void realistic_timing_goes_through_destroying(void **state)
{
	mock_model *m = new_model(1);
	mock_tenant *t = mock_tenant_get(m, "k", true);
	mock_err e;
	mock_sandbox *sb = mk(m, t, NULL, &e);
	bool now = true;

	(void)state;
	assert_int_equal(mock_sandbox_pause(m, sb, &e), 202);
	mock_tick(m, NULL, NULL);
	assert_int_equal(sb->status, ST_PAUSING); /* 1.4 s not elapsed */
	mock_advance(m, 1500);
	mock_tick(m, NULL, NULL);
	assert_int_equal(sb->status, ST_PAUSED);
	mock_sandbox_resume(m, sb, &e);
	mock_advance(m, 800);
	mock_tick(m, NULL, NULL);
	assert_int_equal(sb->status, ST_RUNNING);
	mock_sandbox_destroy(m, sb, &now, &e);
	assert_false(now);
	assert_int_equal(sb->status, ST_DESTROYING);
	mock_advance(m, 400);
	mock_tick(m, NULL, NULL);
	assert_int_equal(sb->status, ST_DESTROYED);
	mock_model_free(m);
}

static void cap_counts_paused_and_fails_at_once(void **state)
{
	mock_model *m = new_model(0);
	mock_tenant *t = mock_tenant_get(m, "k", true);
	mock_tenant *other = mock_tenant_get(m, "o", true);
	mock_err e;
	mock_sandbox *a = mk(m, t, NULL, &e);
	bool now;

	(void)state;
	assert_non_null(mk(m, t, NULL, &e));
	mock_sandbox_pause(m, a, &e);
	mock_tick(m, NULL, NULL);
	assert_null(mk(m, t, NULL, &e));
	assert_int_equal(e.status, 403);
	assert_string_equal(e.code, "QUOTA_EXCEEDED");
	assert_non_null(mk(m, other, NULL, &e)); /* per tenant */
	mock_sandbox_destroy(m, a, &now, &e);
	assert_non_null(mk(m, t, NULL, &e));
	m->set.credit = false;
	assert_null(mk(m, other, NULL, &e));
	assert_int_equal(e.status, 402);
	mock_model_free(m);
}

/* Thousands of sandboxes, most destroyed: every id the model keeps is
 * still found (the index grows past its first size, and is rebuilt when
 * old destroyed ones are forgotten), the cap counts only live ones, a
 * destroyed one keeps its id and view, and reset forgets them all. */
static void ids_stay_found_and_the_cap_ignores_the_destroyed(void **state)
{
	enum { N = 3000 };
	mock_model *m = new_model(0);
	mock_tenant *t = mock_tenant_get(m, "k", true);
	mock_sandbox **made = calloc(N, sizeof(*made));
	char (*ids)[MOCK_ID_MAX] = calloc(N, sizeof(*ids));
	mock_err e;
	bool now;

	(void)state;
	assert_non_null(made);
	assert_non_null(ids);
	for (int i = 0; i < N; i++) {
		made[i] = mk(m, t, NULL, &e);
		assert_non_null(made[i]);
		snprintf(ids[i], sizeof(ids[i]), "%s", made[i]->id);
		if (i < N - 1) /* the cap is 2: destroy all but the last */
			assert_int_equal(mock_sandbox_destroy(m, made[i], &now, &e), 200);
		mock_tick(m, NULL, NULL);
	}
	/* the last MOCK_DESTROYED_KEEP destroyed ones (made[N-1-KEEP..N-2])
	 * and the live one are kept as they were; at most a trimming pass's
	 * slack (an eighth, at least 256) more */
	for (int i = N - 1 - MOCK_DESTROYED_KEEP; i < N; i++)
		assert_ptr_equal(mock_sandbox_find_any(m, ids[i]), made[i]);
	assert_ptr_equal(mock_sandbox_find(m, t, ids[N - 2]), made[N - 2]);
	assert_int_equal(made[N - 2]->status, ST_DESTROYED);
	assert_null(mock_sandbox_find_any(m, ids[0]));
	assert_true(m->nsbx <= MOCK_DESTROYED_KEEP + MOCK_DESTROYED_KEEP / 8 + 257);
	assert_int_equal(mock_tenant_live_count(m, t), 1);
	assert_null(mock_sandbox_find_any(m, "sb-NOTTHERE"));
	mock_model_reset(m);
	assert_null(mock_sandbox_find_any(m, ids[N - 2]));
	assert_non_null(mk(m, mock_tenant_get(m, "k", true), NULL, &e));
	free(ids);
	free(made);
	mock_model_free(m);
}

static size_t destroyed_of(const mock_model *m, const mock_tenant *t)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nsbx; i++)
		n += m->sbx[i]->tenant == t && m->sbx[i]->status == ST_DESTROYED;
	return n;
}

/* The retention bound counts per tenant and by destruction, not creation:
 * a sandbox created first but destroyed last is kept, another tenant's
 * few destroyed ones are kept, and one a request still holds (busy) is
 * not freed under it; once released it goes at the next pass. */
static void destroyed_retention_is_per_tenant_and_by_destruction(void **state)
{
	enum { EXTRA = 300 };
	mock_model *m = new_model(0);
	mock_tenant *t = mock_tenant_get(m, "k", true);
	mock_tenant *o = mock_tenant_get(m, "o", true);
	mock_sandbox *held, *early, *sb;
	char held_id[MOCK_ID_MAX], first_churn[MOCK_ID_MAX] = "", others[5][MOCK_ID_MAX];
	mock_err e;
	bool now;

	(void)state;
	m->set.sandbox_cap = 10;
	held = mk(m, t, NULL, &e);
	assert_non_null(held);
	snprintf(held_id, sizeof(held_id), "%s", held->id);
	held->busy = 1; /* an exec in flight */
	mock_sandbox_destroy(m, held, &now, &e);
	early = mk(m, t, NULL, &e);
	assert_non_null(early);
	for (int i = 0; i < MOCK_DESTROYED_KEEP + EXTRA; i++) {
		mock_advance(m, 1);
		sb = mk(m, t, NULL, &e);
		assert_non_null(sb);
		if (i == 0)
			snprintf(first_churn, sizeof(first_churn), "%s", sb->id);
		mock_sandbox_destroy(m, sb, &now, &e);
		mock_tick(m, NULL, NULL);
	}
	mock_advance(m, 1);
	mock_sandbox_destroy(m, early, &now, &e);
	for (int i = 0; i < 5; i++) {
		sb = mk(m, o, NULL, &e);
		assert_non_null(sb);
		snprintf(others[i], sizeof(others[i]), "%s", sb->id);
		mock_sandbox_destroy(m, sb, &now, &e);
	}
	mock_tick(m, NULL, NULL);
	m->trim_at = 0; /* a pass now, whatever the amortisation says */
	mock_tick(m, NULL, NULL);
	assert_null(mock_sandbox_find_any(m, first_churn));
	assert_ptr_equal(mock_sandbox_find(m, t, early->id), early);
	assert_int_equal(early->status, ST_DESTROYED);
	assert_ptr_equal(mock_sandbox_find(m, t, held_id), held);
	for (int i = 0; i < 5; i++)
		assert_non_null(mock_sandbox_find(m, o, others[i]));
	assert_int_equal(destroyed_of(m, t), MOCK_DESTROYED_KEEP + 1); /* + the busy one */
	held->busy = 0;
	m->trim_at = 0;
	mock_tick(m, NULL, NULL);
	assert_null(mock_sandbox_find_any(m, held_id));
	assert_int_equal(destroyed_of(m, t), MOCK_DESTROYED_KEEP);
	mock_model_free(m);
}

static void names_unique_among_live_and_limited(void **state)
{
	mock_model *m = new_model(0);
	mock_tenant *t = mock_tenant_get(m, "k", true);
	mock_tenant *o = mock_tenant_get(m, "o", true);
	mock_err e;
	mock_sandbox *a = mk(m, t, "lf-a", &e);
	bool now;

	(void)state;
	assert_non_null(a);
	assert_null(mk(m, t, "lf-a", &e));
	assert_int_equal(e.status, 409);
	assert_non_null(mk(m, o, "lf-a", &e));
	mock_sandbox_destroy(m, a, &now, &e);
	assert_non_null(mk(m, t, "lf-a", &e));
	assert_null(mk(m, o, "abcdefghijklmnopqrstuvw", &e));
	assert_int_equal(e.status, 400);
	assert_string_equal(e.field, "name");
	mock_model_free(m);
}

static void envs_limits(void **state)
{
	mock_err e;
	cJSON *envs = cJSON_CreateObject();
	char big[5000];

	(void)state;
	cJSON_AddStringToObject(envs, "OK_1", "v");
	assert_int_equal(mock_validate_envs(envs, &e), 0);
	cJSON_AddStringToObject(envs, "bad-key", "v");
	assert_int_equal(mock_validate_envs(envs, &e), -1);
	assert_string_equal(e.field, "envs");
	cJSON_Delete(envs);
	envs = cJSON_CreateObject();
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cJSON_AddStringToObject(envs, "BIG", big);
	assert_int_equal(mock_validate_envs(envs, &e), -1);
	cJSON_Delete(envs);
	envs = cJSON_CreateObject();
	for (int i = 0; i < 65; i++) {
		char k[16];

		snprintf(k, sizeof(k), "K%d", i);
		cJSON_AddStringToObject(envs, k, "v");
	}
	assert_int_equal(mock_validate_envs(envs, &e), -1);
	cJSON_Delete(envs);
}

static void auto_pause_uses_the_virtual_clock(void **state)
{
	mock_model *m = new_model(0);
	mock_tenant *t = mock_tenant_get(m, "k", true);
	mock_err e;
	mock_sandbox *sb = mk(m, t, NULL, &e);

	(void)state;
	sb->auto_pause_s = 60;
	mock_sandbox_touch(m, sb);
	mock_advance(m, 59000);
	mock_tick(m, NULL, NULL);
	assert_int_equal(sb->status, ST_RUNNING);
	mock_advance(m, 2000);
	mock_tick(m, NULL, NULL);
	assert_int_equal(sb->status, ST_PAUSED);
	mock_model_free(m);
}

static void views_omit_empty_fields(void **state)
{
	mock_model *m = new_model(0);
	mock_tenant *t = mock_tenant_get(m, "k", true);
	mock_err e;
	mock_sandbox *sb = mk(m, t, NULL, &e);
	cJSON *v = mock_sandbox_view(m, sb);
	cJSON *c = mock_sandbox_create_view(m, sb);

	(void)state;
	/* no name given: one is generated (SDK "Empty = auto-generated") */
	assert_string_equal(cJSON_GetObjectItem(v, "name")->valuestring, sb->name);
	assert_memory_equal(sb->name, "sandbox-", 8);
	assert_null(cJSON_GetObjectItem(v, "egress"));
	assert_null(cJSON_GetObjectItem(v, "forked_from"));
	assert_non_null(cJSON_GetObjectItem(v, "ingress_enabled"));
	assert_null(cJSON_GetObjectItem(c, "status"));
	assert_non_null(cJSON_GetObjectItem(c, "bandwidth_quota_bytes"));
	cJSON_Delete(v);
	cJSON_Delete(c);
	mock_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lifecycle_follows_the_table),
		cmocka_unit_test(realistic_timing_goes_through_destroying),
		cmocka_unit_test(cap_counts_paused_and_fails_at_once),
		cmocka_unit_test(ids_stay_found_and_the_cap_ignores_the_destroyed),
		cmocka_unit_test(destroyed_retention_is_per_tenant_and_by_destruction),
		cmocka_unit_test(names_unique_among_live_and_limited),
		cmocka_unit_test(envs_limits),
		cmocka_unit_test(auto_pause_uses_the_virtual_clock),
		cmocka_unit_test(views_omit_empty_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

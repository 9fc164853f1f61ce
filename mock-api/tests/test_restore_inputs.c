/* Unit: hostile input to the durable state restore (model_persist.c) and
 * to replay (replay.c), as the mock_state and mock_record fuzz targets
 * found it (issue 19):
 * - a sandbox id is the name of its guest's directory: "../../x" made a
 *   tree outside the work dir; it is refused;
 * - two sandboxes that are not destroyed on one IP are refused (by-ip and
 *   egress would pick either);
 * - a tenant record with another tenant's user id is refused, and a tenant
 *   numbered after a restored "usr_mockN" never gets that user id;
 * - a restored template without "status" gets one in its view (the view
 *   leaked it before);
 * - replay learns no key from a divergent request whose key alone fit (the
 *   next key was then named wrongly and the replay diverged);
 * - a recording line with a NUL byte is refused, naming the line;
 * - --check-state says what a start would make of state.key (missing:
 *   tenants never get their keys back; not a key: the start refuses),
 *   where it used to answer "ok" for a log a start then refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "model.h"
#include "mutation_log.h"
#include "record.h"
#include "sbx/mock.h"

#define HASH_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HASH_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static mock_model *new_model(void)
{
	mock_settings set;
	uint8_t secret[32] = {1};
	mock_model *m;

	memset(&set, 0, sizeof(set));
	set.sandbox_cap = 5;
	set.cap_status = 403;
	snprintf(set.region, sizeof(set.region), "local");
	m = mock_model_new(&set);
	assert_non_null(m);
	mock_model_set_key_secret(m, secret);
	return m;
}

static int restore_sbx(mock_model *m, const char *json, char *why, size_t cap)
{
	cJSON *o = cJSON_Parse(json);
	int rc;

	assert_non_null(o);
	why[0] = '\0';
	rc = mock_sandbox_restore(m, o, why, cap);
	cJSON_Delete(o);
	return rc;
}

static int restore_tenant(mock_model *m, const char *json, char *why, size_t cap)
{
	cJSON *o = cJSON_Parse(json);
	int rc;

	assert_non_null(o);
	why[0] = '\0';
	rc = mock_tenant_restore(m, o, why, cap);
	cJSON_Delete(o);
	return rc;
}

static void sandbox_id_with_a_path_is_refused(void **state)
{
	mock_model *m = new_model();
	char why[256];

	(void)state;
	assert_int_equal(restore_sbx(m, "{\"id\":\"../../x\",\"tenant_hash\":\"" HASH_A "\",\"status\":\"paused\","
				     "\"shape\":\"s-1vcpu-1gb\"}", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "../../x"));
	assert_int_equal(m->nsbx, 0);
	assert_int_equal(restore_sbx(m, "{\"id\":\"sb-01ABC_x-y\",\"tenant_hash\":\"" HASH_A "\",\"status\":\"paused\","
				     "\"shape\":\"s-1vcpu-1gb\"}", why, sizeof(why)), 0);
	assert_int_equal(m->nsbx, 1);
	mock_model_free(m);
}

static void second_live_sandbox_on_one_ip_is_refused(void **state)
{
	mock_model *m = new_model();
	char why[256];

	(void)state;
	assert_int_equal(restore_sbx(m, "{\"id\":\"sb-A\",\"tenant_hash\":\"" HASH_A "\",\"status\":\"paused\","
				     "\"shape\":\"s-1vcpu-1gb\",\"ip\":\"10.200.0.2\"}", why, sizeof(why)), 0);
	assert_int_equal(restore_sbx(m, "{\"id\":\"sb-B\",\"tenant_hash\":\"" HASH_B "\",\"status\":\"running\","
				     "\"shape\":\"s-1vcpu-1gb\",\"ip\":\"10.200.0.2\"}", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "10.200.0.2"));
	assert_non_null(strstr(why, "sb-A"));
	/* a later record of the same sandbox keeps its address */
	assert_int_equal(restore_sbx(m, "{\"id\":\"sb-A\",\"tenant_hash\":\"" HASH_A "\",\"status\":\"running\","
				     "\"shape\":\"s-1vcpu-1gb\",\"ip\":\"10.200.0.2\"}", why, sizeof(why)), 0);
	/* a destroyed sandbox's address is free again */
	assert_int_equal(restore_sbx(m, "{\"id\":\"sb-A\",\"tenant_hash\":\"" HASH_A "\",\"status\":\"destroyed\","
				     "\"shape\":\"s-1vcpu-1gb\",\"ip\":\"10.200.0.2\"}", why, sizeof(why)), 0);
	assert_int_equal(restore_sbx(m, "{\"id\":\"sb-B\",\"tenant_hash\":\"" HASH_B "\",\"status\":\"running\","
				     "\"shape\":\"s-1vcpu-1gb\",\"ip\":\"10.200.0.2\"}", why, sizeof(why)), 0);
	mock_model_free(m);
}

static void user_ids_stay_unique(void **state)
{
	mock_model *m = new_model();
	char why[256];
	mock_tenant *fresh;

	(void)state;
	assert_int_equal(restore_tenant(m, "{\"key_hash\":\"" HASH_A "\",\"user_id\":\"usr_mock0002\"}", why,
					sizeof(why)), 0);
	assert_int_equal(restore_tenant(m, "{\"key_hash\":\"" HASH_B "\",\"user_id\":\"usr_mock0002\"}", why,
					sizeof(why)), -1);
	assert_non_null(strstr(why, "usr_mock0002"));
	/* a tenant made now (a sandbox record of an unknown tenant, a new
	 * key) is numbered after the restored one */
	fresh = mock_tenant_add(m, "a-new-key");
	assert_non_null(fresh);
	assert_string_not_equal(fresh->user_id, "usr_mock0002");
	mock_model_free(m);
}

static void restored_template_without_status_gets_one(void **state)
{
	mock_model *m = new_model();
	char why[256];
	mock_tenant *t;
	cJSON *view;

	(void)state;
	assert_int_equal(restore_tenant(m, "{\"key_hash\":\"" HASH_A "\",\"templates\":[{\"id\":\"tpl-1\","
					"\"name\":\"t\",\"_created_ms\":0}]}", why, sizeof(why)), 0);
	t = mock_tenant_by_hash(m, HASH_A, false);
	assert_non_null(t);
	view = mock_template_view(m, mock_template_find(t, "tpl-1"), false);
	assert_non_null(view);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(view, "status")->valuestring, "failed");
	assert_null(cJSON_GetObjectItemCaseSensitive(view, "_created_ms"));
	cJSON_Delete(view);
	mock_model_free(m);
}

#define EX(key, path) \
	"{\"method\":\"GET\",\"path\":\"" path "\",\"status\":200,\"request_headers\":{\"X-Api-Key\":\"" key "\"}}\n"

static void replay_learns_no_key_from_a_divergent_request(void **state)
{
	static const char rec[] = EX("redacted-1", "/a") EX("redacted-2", "/b");
	sbx_err err = {{0}};
	mock_rec *rc = mock_rec_from_text(rec, strlen(rec), "t", true, &err);
	mock_rec_request wrong = {.method = "GET", .path = "/wrong", .query = "", .key = "key-two"};
	mock_rec_request a = {.method = "GET", .path = "/a", .query = "", .key = "key-one"};
	mock_rec_request b = {.method = "GET", .path = "/b", .query = "", .key = "key-two"};
	sbx_strbuf why = SBX_STRBUF_INIT;

	(void)state;
	assert_non_null(rc);
	/* key-two is the first key seen and "redacted-1" fits, but /wrong
	 * is not /a: nothing is learned */
	assert_null(mock_rec_match(rc, &wrong, &why));
	assert_non_null(strstr(sbx_strbuf_str(&why), "replay divergence at exchange 1 of 2"));
	assert_ptr_equal(mock_rec_match(rc, &a, NULL), &rc->ex[0]);
	assert_ptr_equal(mock_rec_match(rc, &b, NULL), &rc->ex[1]);
	sbx_strbuf_free(&why);
	mock_rec_free(rc);
}

static void recording_line_with_nul_is_refused(void **state)
{
	static const char rec[] = EX("redacted-1", "/a") "{\"method\":\"GET\",\"path\":\"/\",\"status\":200}\0x\n";
	sbx_err err = {{0}};

	(void)state;
	assert_null(mock_rec_from_text(rec, sizeof(rec) - 1, "t", true, &err));
	assert_non_null(strstr(err.msg, "replay t line 2: a NUL byte at byte"));
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static int check_dir(const char *dir, char **out)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	size_t len = 0;
	FILE *f = open_memstream(out, &len);
	int rc;

	assert_non_null(f);
	sbx_mock_config_init(&cfg);
	cfg.state_dir = dir;
	rc = sbx_mock_check_state(&cfg, f, &err);
	fclose(f);
	return rc;
}

static void check_state_judges_the_state_key(void **state)
{
	static const char rec[] = "{\"t\":\"mut\",\"tenant\":{\"key_hash\":\"" HASH_A "\"}}";
	char dir[] = "/tmp/sbx-restore-inputs-XXXXXX", path[96], key[65];
	unsigned char frame[8 + sizeof(rec)];
	uint32_t n = (uint32_t)strlen(rec), crc = mock_crc32(rec, strlen(rec));
	char *out = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 4; i++) {
		frame[i] = (unsigned char)(n >> (8 * i));
		frame[4 + i] = (unsigned char)(crc >> (8 * i));
	}
	for (uint32_t i = 0; i < n; i++)
		frame[8 + i] = (unsigned char)rec[i];
	snprintf(path, sizeof(path), "%s/state.log", dir);
	write_file(path, frame, 8 + n);
	/* no key: the tenant could never be matched again */
	assert_int_equal(check_dir(dir, &out), 1);
	assert_non_null(strstr(out, "state.key is missing"));
	free(out);
	/* not a key: a start refuses */
	snprintf(path, sizeof(path), "%s/state.key", dir);
	write_file(path, "zz\n", 3);
	assert_int_equal(check_dir(dir, &out), 1);
	assert_non_null(strstr(out, "is not a state key (64 hex digits): a start refuses this log"));
	free(out);
	memset(key, 'a', 64);
	key[64] = '\n';
	write_file(path, key, 65);
	assert_int_equal(check_dir(dir, &out), 0);
	assert_non_null(strstr(out, "ok: a start restores every record"));
	free(out);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state.log", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sandbox_id_with_a_path_is_refused),
		cmocka_unit_test(second_live_sandbox_on_one_ip_is_refused),
		cmocka_unit_test(user_ids_stay_unique),
		cmocka_unit_test(restored_template_without_status_gets_one),
		cmocka_unit_test(replay_learns_no_key_from_a_divergent_request),
		cmocka_unit_test(recording_line_with_nul_is_refused),
		cmocka_unit_test(check_state_judges_the_state_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

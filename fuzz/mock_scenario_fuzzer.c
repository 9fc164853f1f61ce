/* Fuzz target: sbx-mock's scenario objects ({name?, description?,
 * settings?, rules:[...]}, as the files in fixtures/scenarios, --scenario and
 * POST /_mock/scenario deliver them) through mock_scenario_apply on a
 * listener-less mock (model + fault engine, no guests).
 *
 * Properties, each abort()s when broken:
 * - a refused scenario changes nothing: the fault listing and the settings
 *   view (GET /_mock/settings) are exactly as before, no id is handed out,
 *   and the message is not empty (issue 19 item 6: a scenario whose rules
 *   were refused used to leave its settings applied);
 * - an accepted one hands out one id per rule, consecutive from the
 *   engine's next id, and the listing grew by exactly that many; a setting
 *   it names shows in the view with the value it gave whenever the view
 *   shows that key with the same JSON type (numbers compared as numbers);
 * - applying the same scenario again to the state it produced is accepted
 *   again (the decision depends on the scenario, not on the state);
 * - every key of an accepted scenario's settings is one of ADMIN.md's
 *   settable keys, or a read-only key of the view given with the value the
 *   view shows; a scenario whose settings hold any other key (a typo), or a
 *   read-only key with another value, is refused, and the message says the
 *   settings are why ("scenario settings: ..."). The two key lists are
 *   written out here from ADMIN.md, not taken from settings.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../mock-api/src/faults/faults.h"
#include "../mock-api/src/model/model.h"
#include "../mock-api/src/ops/ops.h"
#include "../mock-api/src/ops/scenario.h"
#include "../mock-api/src/server/server.h"
#include "sbx/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "mock_scenario property broken: %s\n", what);
		abort();
	}
}

static sbx_mock *new_mock(void)
{
	sbx_mock *mk = calloc(1, sizeof(*mk));
	mock_settings set;

	check(mk != NULL, "out of memory");
	memset(&set, 0, sizeof(set));
	set.sandbox_cap = 5;
	set.cap_status = 403;
	snprintf(set.cap_code, sizeof(set.cap_code), "QUOTA_EXCEEDED");
	set.credit = true;
	set.host_rule_mode = SBX_HOST_RULES_OBSERVED;
	set.accept_any_key = true;
	set.max_egress_rules = SBX_EGRESS_MAX_RULES_DEFAULT;
	snprintf(set.region, sizeof(set.region), "local");
	mk->model = mock_model_new(&set);
	mk->faults = mock_faults_new(1);
	check(mk->model != NULL && mk->faults != NULL, "out of memory");
	mk->gmode = GUEST_PLAIN;
	return mk;
}

static void free_mock(sbx_mock *mk)
{
	mock_faults_free(mk->faults);
	mock_model_free(mk->model);
	free(mk);
}

static char *snapshot(sbx_mock *mk, cJSON **listing)
{
	cJSON *v = mock_op_settings_view(mk);
	char *s = cJSON_PrintUnformatted(v);

	cJSON_Delete(v);
	*listing = mock_faults_list_json(mk->faults);
	check(s != NULL && *listing != NULL, "out of memory");
	return s;
}

/* ADMIN.md: the keys PUT /_mock/settings (and a scenario) may change. */
static const char *const settable[] = {"sandbox_cap", "cap_status", "cap_code", "credit",
				       "host_rule_mode", "accept_any_key", "timing",
				       "max_egress_rules", "region", "ready", "exec_heartbeat_ms"};
/* What the view reports about the mock itself; a scenario cannot set it. */
static const char *const read_only[] = {"guest_mode", "contained", "cgroups", "guest_pid_namespace",
					"egress_enforced", "egress"};

static bool listed(const char *k, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(k, list[i]) == 0)
			return true;
	}
	return false;
}

#define LISTED(k, list) listed((k), (list), sizeof(list) / sizeof((list)[0]))

/* A key the settings may hold given this view: settable, or read-only with
 * the value the view shows. */
static bool key_allowed(const cJSON *view, const cJSON *it)
{
	const cJSON *now = cJSON_GetObjectItemCaseSensitive(view, it->string);

	if (LISTED(it->string, settable))
		return true;
	return LISTED(it->string, read_only) && now != NULL && cJSON_Compare(it, now, true);
}

/* Settings with a key no setting has must be refused, before the rules. */
static void check_keys_refused(const char *view_text, const cJSON *settings, int rc, const char *msg)
{
	cJSON *view = cJSON_Parse(view_text);
	const cJSON *it;
	bool bad = false;

	check(view != NULL, "out of memory");
	cJSON_ArrayForEach(it, settings)
		bad = bad || !key_allowed(view, it);
	cJSON_Delete(view);
	if (!bad)
		return;
	check(rc != 0, "settings with an unknown or changed read-only key were accepted");
	check(strncmp(msg, "scenario settings: ", 19) == 0,
	      "refused settings keys, but the message does not say the settings are why");
}

/* A setting the scenario gave shows in the view as given, where the view
 * has that key with the same type. */
static void settings_show(sbx_mock *mk, const cJSON *settings)
{
	cJSON *v = mock_op_settings_view(mk);
	const cJSON *it;

	cJSON_ArrayForEach(it, settings) {
		const cJSON *got = cJSON_GetObjectItemCaseSensitive(v, it->string);
		bool ro = LISTED(it->string, read_only);

		check(key_allowed(v, it), "an accepted scenario's settings hold a key that is no setting");
		if (got == NULL || ro || (got->type & 0xff) != (it->type & 0xff))
			continue;
		if (cJSON_IsNumber(it)) {
			check(got->valuedouble == it->valuedouble, "an applied number setting does not show");
		} else if (cJSON_IsString(it) && strcmp(it->string, "timing") == 0) {
			/* shown in canonical form ("1" as "realistic", %g digits):
			 * the same scale, not the same text */
			double given = -1, shown = -2;
			sbx_err e = {{0}};

			check(sbx_mock_parse_timing(it->valuestring, &given, &e) == 0 &&
				      sbx_mock_parse_timing(got->valuestring, &shown, &e) == 0 &&
				      fabs(given - shown) <= 1e-5 * (given > 1 ? given : 1),
			      "an applied timing does not show as the same scale");
		} else if (cJSON_IsString(it) || cJSON_IsBool(it)) {
			check(cJSON_Compare(got, it, true), "an applied setting does not show as given");
		}
	}
	cJSON_Delete(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *sc = cJSON_ParseWithLength((const char *)data, size);
	sbx_mock *mk;
	cJSON *ids, *before_rules, *after_rules;
	char *before, *after;
	sbx_err err = {{0}};
	int rc, n;
	size_t count0;

	if (sc == NULL)
		return 0;
	mk = new_mock();
	ids = cJSON_CreateArray();
	before = snapshot(mk, &before_rules);
	count0 = mock_faults_count(mk->faults);
	rc = mock_scenario_apply(mk, sc, NULL, ids, &err);
	after = snapshot(mk, &after_rules);
	n = cJSON_GetArraySize(ids);
	if (cJSON_IsObject(sc) && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(sc, "settings")))
		check_keys_refused(before, cJSON_GetObjectItemCaseSensitive(sc, "settings"), rc, err.msg);
	if (rc != 0) {
		check(err.msg[0] != '\0', "a refusal without a message");
		check(n == 0, "a refused scenario handed out ids");
		check(strcmp(before, after) == 0, "a refused scenario changed the settings");
		check(cJSON_Compare(before_rules, after_rules, true), "a refused scenario changed the fault rules");
	} else {
		const cJSON *rules = cJSON_GetObjectItemCaseSensitive(sc, "rules");
		const cJSON *settings = cJSON_GetObjectItemCaseSensitive(sc, "settings");
		cJSON *ids2 = cJSON_CreateArray();

		check(mock_faults_count(mk->faults) == count0 + (size_t)n, "the listing did not grow by the ids");
		if (cJSON_IsArray(rules))
			check(n == cJSON_GetArraySize(rules), "not one id per rule");
		for (int i = 1; i < n; i++)
			check(cJSON_GetArrayItem(ids, i)->valuedouble == cJSON_GetArrayItem(ids, i - 1)->valuedouble + 1,
			      "ids are not consecutive");
		if (cJSON_IsObject(settings))
			settings_show(mk, settings);
		check(mock_scenario_apply(mk, sc, NULL, ids2, &err) == 0, "the same scenario refused the second time");
		cJSON_Delete(ids2);
	}
	free(before);
	free(after);
	cJSON_Delete(before_rules);
	cJSON_Delete(after_rules);
	cJSON_Delete(ids);
	cJSON_Delete(sc);
	free_mock(mk);
	return 0;
}

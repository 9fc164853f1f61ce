/* Fuzz target: the egress list as the API receives it, JSON text ->
 * sbx_egress_list_from_json -> sbx_egress_list_to_json.
 *
 * Properties, each abort()s when broken: a rejected list leaves the output
 * empty and says why (class, printable message, index inside the array for
 * per-rule errors); an accepted list has one rule per array item, each equal
 * to parsing that item alone; the canonical JSON it returns is accepted again
 * and yields the same rules (the API's output is valid input); a copy is
 * equal; and the compiled policy agrees with the reference evaluator on a
 * few fixed destinations in both modes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RULES 32

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "egress_json property broken: %s\n", what);
		abort();
	}
}

static void check_message(const char *msg)
{
	size_t n = strnlen(msg, 512);
	check(n > 0 && n < 512, "message empty or unterminated");
	for (size_t i = 0; i < n; i++)
		check(msg[i] >= 0x20 && msg[i] < 0x7f, "message not printable ASCII");
}

static bool lists_equal(const sbx_egress_list *a, const sbx_egress_list *b)
{
	if (a->count != b->count)
		return false;
	for (size_t i = 0; i < a->count; i++) {
		if (!sbx_egress_rule_equal(&a->rules[i], &b->rules[i]))
			return false;
	}
	return true;
}

static void check_decisions(const sbx_egress_list *list)
{
	static const char *const dests[] = {
		"8.8.8.8:53",
		"10.1.2.3:443",
		"127.0.0.1:80",
		"169.254.169.254:80",
		"[2001:db8::1]:443",
		"[::ffff:10.0.0.1]:80",
		"pypi.org@151.101.0.223:443",
		"files.pythonhosted.org:443",
		"a.example.com:8443",
		"241.0.0.1:1",
	};
	for (int m = 0; m < 2; m++) {
		sbx_host_rule_mode mode = m ? SBX_HOST_RULES_OBSERVED : SBX_HOST_RULES_DOCUMENTED;
		sbx_egress_policy *p = sbx_egress_policy_compile(list, mode);
		check(p != NULL, "compile failed");
		for (size_t i = 0; i < sizeof dests / sizeof dests[0]; i++) {
			sbx_egress_dest d;
			sbx_egress_error err;
			char host[SBX_EGRESS_HOST_MAX + 1];
			check(sbx_egress_dest_parse(dests[i], strlen(dests[i]), &d, host,
						    sizeof host, &err) == 0,
			      "fixed destination rejected");
			sbx_egress_decision a = sbx_egress_policy_eval(p, &d);
			sbx_egress_decision b = sbx_egress_reference_eval(list, mode, &d);
			check(a.allowed == b.allowed && a.reason == b.reason &&
				      (a.reason != SBX_REASON_RULE || a.rule_index == b.rule_index),
			      "compiled and reference decisions differ");
		}
		sbx_egress_policy_free(p);
	}
}

static void check_accepted(const cJSON *json, const sbx_egress_list *list)
{
	check(list->is_null == cJSON_IsNull(json), "is_null does not match the JSON");
	check(list->is_null ? list->count == 0 : list->count == (size_t)cJSON_GetArraySize(json),
	      "rule count does not match the array");
	check((list->count == 0) == (list->rules == NULL), "rules pointer and count disagree");
	for (size_t i = 0; i < list->count; i++) {
		const cJSON *item = cJSON_GetArrayItem(json, (int)i);
		sbx_egress_rule alone;
		sbx_egress_error err;
		check(cJSON_IsString(item), "accepted a non-string item");
		check(sbx_egress_rule_parse(item->valuestring, strlen(item->valuestring), i, &alone,
					    &err) == 0,
		      "item rejected alone");
		check(sbx_egress_rule_equal(&alone, &list->rules[i]),
		      "item parsed differently alone");
	}

	cJSON *out = sbx_egress_list_to_json(list);
	check(out != NULL && cJSON_IsArray(out), "to_json did not return an array");
	check((size_t)cJSON_GetArraySize(out) == list->count, "to_json length");
	sbx_egress_list again;
	sbx_egress_error err;
	check(sbx_egress_list_from_json(out, MAX_RULES, &again, &err) == 0,
	      "canonical JSON rejected");
	check(lists_equal(list, &again), "canonical JSON parses to other rules");
	cJSON *out2 = sbx_egress_list_to_json(&again);
	check(cJSON_Compare(out, out2, true), "canonical JSON not a fixed point");
	cJSON_Delete(out2);
	sbx_egress_list_free(&again);
	cJSON_Delete(out);

	sbx_egress_list copy;
	check(sbx_egress_list_copy(list, &copy) == 0, "copy failed");
	check(copy.is_null == list->is_null && lists_equal(list, &copy), "copy differs");
	sbx_egress_list_free(&copy);
	check_decisions(list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *json = cJSON_ParseWithLength((const char *)data, size);
	if (json == NULL)
		return 0;
	/* The API hands over the "egress" member of the request body. */
	const cJSON *egress = json;
	if (cJSON_IsObject(json))
		egress = cJSON_GetObjectItemCaseSensitive(json, "egress");

	sbx_egress_list list;
	sbx_egress_error err;
	memset(&err, 0, sizeof err);
	if (sbx_egress_list_from_json(egress, MAX_RULES, &list, &err) == 0) {
		if (egress == NULL)
			check(list.is_null && list.count == 0, "absent egress is not null");
		else
			check_accepted(egress, &list);
		sbx_egress_list_free(&list);
	} else {
		check(err.cls != SBX_EGRESS_OK, "failure without a class");
		check_message(err.message);
		check(list.count == 0 && list.rules == NULL, "failed list not empty");
		if (err.cls != SBX_EGRESS_E_TOO_MANY && cJSON_IsArray(egress))
			check(err.index < (size_t)cJSON_GetArraySize(egress),
			      "error index outside the array");
	}
	cJSON_Delete(json);
	return 0;
}

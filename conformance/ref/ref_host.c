/* sbx-ref-host: the reference host-gate driver. Answers the protocol's
 * `gate` and `load_plugins` ops with the gate library (lib/ sbx/gate.h), so
 * `sbx-conform --profile host-gate` can check another host implementation
 * against the same decision tables.
 *
 * `--quirk host-cap-ge` makes it the mutant host that checks the timeout cap
 * with `>=` (refusing a timeout equal to the cap), which the host-gate
 * profile must catch. Never executes any code it is given. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/driver.h"
#include "sbx/gate.h"

static cJSON *answer(const cJSON *req, const char *op, sbxd_error *err)
{
	cJSON *full = cJSON_Duplicate(req, true);
	sbx_err e = {{0}};
	cJSON *res;

	cJSON_DeleteItemFromObjectCaseSensitive(full, "op");
	cJSON_AddStringToObject(full, "op", op);
	res = sbx_gate_answer(full, &e);
	cJSON_Delete(full);
	if (res == NULL)
		sbxd_error_set(err, "ProtocolError", "%s", e.msg);
	return res;
}

/* The host-cap-ge quirk's bug: a timeout equal to the cap is refused as if it exceeded it. */
static void cap_ge(const cJSON *req, cJSON *res)
{
	const cJSON *caps = cJSON_GetObjectItemCaseSensitive(req, "capabilities");
	const cJSON *cap = cJSON_GetObjectItemCaseSensitive(caps, "max_timeout_seconds");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(req, "env");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(env, "LANGFLOW_SANDBOX_TIMEOUT_SECONDS");
	const cJSON *dec = cJSON_GetObjectItemCaseSensitive(res, "decision");
	long timeout = cJSON_IsString(t) ? strtol(t->valuestring, NULL, 10) : 30;

	if (!cJSON_IsNumber(cap) || !cJSON_IsString(dec) || strcmp(dec->valuestring, "run") != 0)
		return;
	if (timeout != (long)cap->valuedouble)
		return;
	cJSON_ReplaceItemInObjectCaseSensitive(res, "decision", cJSON_CreateString("refuse"));
	cJSON_ReplaceItemInObjectCaseSensitive(res, "rule", cJSON_CreateString("timeout_cap"));
	cJSON_ReplaceItemInObjectCaseSensitive(res, "error_type", cJSON_CreateString("SandboxUnavailableError"));
}

static cJSON *host_gate(void *be, const cJSON *req, sbxd_error *err)
{
	const bool *quirk_cap_ge = be;
	cJSON *res = answer(req, "gate", err);

	if (res != NULL && *quirk_cap_ge)
		cap_ge(req, res);
	return res;
}

static cJSON *host_plugins(void *be, const cJSON *req, sbxd_error *err)
{
	return answer(req, "load_plugins", err);
}

int main(int argc, char **argv)
{
	static sbxd_vtable vt = {
		.name = "langflow-host",
		.driver = "sbx-ref-host 0.1.0",
		.gate = host_gate,
		.load_plugins = host_plugins,
	};
	bool quirk_cap_ge = false;

	if (argc == 3 && strcmp(argv[1], "--quirk") == 0 && strcmp(argv[2], "host-cap-ge") == 0) {
		quirk_cap_ge = true;
		vt.driver = "sbx-ref-host 0.1.0 (mutant host-cap-ge)";
	} else if (argc != 1) {
		fputs("usage: sbx-ref-host [--quirk host-cap-ge]\n", stderr);
		return 2;
	}
	return sbxd_serve(&vt, &quirk_cap_ge, stdin, stdout);
}

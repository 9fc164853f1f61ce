/* sbx-ref-host: the reference host-gate driver. Answers the protocol's
 * `gate` and `load_plugins` ops with the gate library (lib/ sbx/gate.h), so
 * `sbx-conform --profile host-gate` can check another host implementation
 * against the same decision tables.
 *
 * `--quirk NAME` makes it a mutant host with one realistic bug, which the
 * host-gate profile must catch (conformance/tests/CMakeLists.txt names the
 * check and the table row):
 *   host-cap-ge               checks the timeout cap with `>=` (refuses a
 *                             timeout equal to the cap);
 *   host-missing-key-granted  reads an absent supports_* capability as
 *                             granted (`caps.get(key, True)`);
 *   host-substring-allowlist  matches the plugin allow-list as a substring of
 *                             its raw value (`name in os.environ[...]`), so
 *                             `createos-pro` listed lets `createos` load;
 *   host-refuses-none         gates backend `none` (unset) like a backend
 *                             and refuses it, where Langflow runs the code
 *                             in its own process (breaks Langflow's default).
 * Never executes any code it is given. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/driver.h"
#include "sbx/gate.h"
#include "sbx/strbuf.h"

struct host_quirks {
	bool cap_ge;
	bool missing_key_granted;
	bool substring_allowlist;
	bool refuses_none;
};

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

/* The host-missing-key-granted quirk's bug: an absent supports_* key is
 * filled in as true before the gate sees it (null stays null). */
static cJSON *grant_missing_keys(const cJSON *req)
{
	static const char *const keys[] = {"supports_deny_all_egress", "supports_domain_allowlist"};
	cJSON *copy = cJSON_Duplicate(req, true);
	cJSON *caps = cJSON_GetObjectItemCaseSensitive(copy, "capabilities");
	size_t i;

	if (!cJSON_IsObject(caps))
		return copy;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (cJSON_GetObjectItemCaseSensitive(caps, keys[i]) == NULL)
			cJSON_AddTrueToObject(caps, keys[i]);
	return copy;
}

/* The host-substring-allowlist quirk's bug: every offered name (trimmed,
 * lower-cased) found anywhere in the raw allow-list text counts as listed. */
static cJSON *substring_allowlist(const cJSON *req)
{
	static const char *const var = "LANGFLOW_SANDBOX_BACKEND_PLUGINS";
	cJSON *copy = cJSON_Duplicate(req, true);
	cJSON *env = cJSON_GetObjectItemCaseSensitive(copy, "env");
	const cJSON *raw = cJSON_GetObjectItemCaseSensitive(env, var);
	const cJSON *ep;
	sbx_strbuf lower = SBX_STRBUF_INIT, list = SBX_STRBUF_INIT;
	const char *p;

	if (!cJSON_IsString(raw))
		return copy;
	for (p = raw->valuestring; *p != '\0'; p++)
		sbx_strbuf_printf(&lower, "%c", (*p >= 'A' && *p <= 'Z') ? *p - 'A' + 'a' : *p);
	sbx_strbuf_puts(&list, raw->valuestring);
	cJSON_ArrayForEach(ep, cJSON_GetObjectItemCaseSensitive(copy, "entry_points")) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(ep, "name");
		sbx_strbuf n = SBX_STRBUF_INIT;
		const char *s, *e;

		if (!cJSON_IsString(name))
			continue;
		for (s = name->valuestring; *s == ' ' || *s == '\t'; s++)
			;
		for (e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		for (; s < e; s++)
			sbx_strbuf_printf(&n, "%c", (*s >= 'A' && *s <= 'Z') ? *s - 'A' + 'a' : *s);
		if (n.len > 0 && strstr(sbx_strbuf_str(&lower), sbx_strbuf_str(&n)) != NULL)
			sbx_strbuf_printf(&list, ",%s", sbx_strbuf_str(&n));
		sbx_strbuf_free(&n);
	}
	cJSON_ReplaceItemInObjectCaseSensitive(env, var, cJSON_CreateString(sbx_strbuf_str(&list)));
	sbx_strbuf_free(&lower);
	sbx_strbuf_free(&list);
	return copy;
}

/* The host-refuses-none quirk's bug: "none" is gated as if it named a
 * backend with no isolation, so rule 1 refuses Langflow's default. */
static void refuse_none(cJSON *res)
{
	const cJSON *dec = cJSON_GetObjectItemCaseSensitive(res, "decision");

	if (!cJSON_IsString(dec) || strcmp(dec->valuestring, "in-process") != 0)
		return;
	cJSON_ReplaceItemInObjectCaseSensitive(res, "decision", cJSON_CreateString("refuse"));
	cJSON_ReplaceItemInObjectCaseSensitive(res, "rule", cJSON_CreateString("isolation"));
	cJSON_ReplaceItemInObjectCaseSensitive(res, "error_type", cJSON_CreateString("SandboxUnavailableError"));
	cJSON_ReplaceItemInObjectCaseSensitive(res, "message",
					       cJSON_CreateString("Sandbox backend 'none' reports 'none' isolation, not a "
								  "hardware-virtualized boundary. Refusing to run the code."));
	cJSON_ReplaceItemInObjectCaseSensitive(res, "variable", cJSON_CreateString("LANGFLOW_SANDBOX_BACKEND"));
}

static cJSON *host_gate(void *be, const cJSON *req, sbxd_error *err)
{
	const struct host_quirks *q = be;
	cJSON *res;

	if (q->missing_key_granted) {
		cJSON *granted = grant_missing_keys(req);

		res = answer(granted, "gate", err);
		cJSON_Delete(granted);
		return res;
	}
	res = answer(req, "gate", err);
	if (res != NULL && q->cap_ge)
		cap_ge(req, res);
	if (res != NULL && q->refuses_none)
		refuse_none(res);
	return res;
}

static cJSON *host_plugins(void *be, const cJSON *req, sbxd_error *err)
{
	const struct host_quirks *q = be;
	cJSON *widened, *res;

	if (!q->substring_allowlist)
		return answer(req, "load_plugins", err);
	widened = substring_allowlist(req);
	res = answer(widened, "load_plugins", err);
	cJSON_Delete(widened);
	return res;
}

int main(int argc, char **argv)
{
	static sbxd_vtable vt = {
		.name = "langflow-host",
		.driver = "sbx-ref-host 0.1.0",
		.gate = host_gate,
		.load_plugins = host_plugins,
	};
	static const char *const usage = "usage: sbx-ref-host [--quirk host-cap-ge | host-missing-key-granted | "
					 "host-substring-allowlist | host-refuses-none]\n";
	static char driver[96];
	struct host_quirks q = {false, false, false, false};

	if (argc == 3 && strcmp(argv[1], "--quirk") == 0) {
		if (strcmp(argv[2], "host-cap-ge") == 0)
			q.cap_ge = true;
		else if (strcmp(argv[2], "host-missing-key-granted") == 0)
			q.missing_key_granted = true;
		else if (strcmp(argv[2], "host-substring-allowlist") == 0)
			q.substring_allowlist = true;
		else if (strcmp(argv[2], "host-refuses-none") == 0)
			q.refuses_none = true;
		else {
			fprintf(stderr, "sbx-ref-host: unknown quirk \"%s\"\n%s", argv[2], usage);
			return 2;
		}
		snprintf(driver, sizeof(driver), "sbx-ref-host 0.1.0 (mutant %s)", argv[2]);
		vt.driver = driver;
	} else if (argc != 1) {
		fputs(usage, stderr);
		return 2;
	}
	return sbxd_serve(&vt, &q, stdin, stdout);
}

/* gate_json: the JSON front door of the gate, answering the two `host-gate`
 * protocol ops so a host driver is a read-line/answer/write-line loop:
 *   {"op":"gate","env":{...},"capabilities":{...},"code":"..."}
 *   {"op":"load_plugins","env":{...},"entry_points":[{"name","distribution"}]}
 * It validates the request's shape (wrong types are errors, never guesses)
 * and never touches the process environment. */
#include "sbx/gate.h"

#include <stdlib.h>
#include <string.h>

#include "sbx/strbuf.h"

typedef struct env_list {
	char **items; /* "NAME=value", owned */
	size_t n;
} env_list;

static void env_list_free(env_list *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->items[i]);
	free(e->items);
	e->items = NULL;
	e->n = 0;
}

/* env may be absent (empty environment) or an object of strings. */
static int env_from_json(const cJSON *req, env_list *out, sbx_err *err)
{
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(req, "env");
	out->items = NULL;
	out->n = 0;
	if (env == NULL || cJSON_IsNull(env))
		return 0;
	if (!cJSON_IsObject(env)) {
		sbx_err_set(err, "env: must be an object of NAME: \"value\"");
		return -1;
	}
	size_t count = (size_t)cJSON_GetArraySize(env);
	out->items = calloc(count > 0 ? count : 1, sizeof *out->items);
	if (out->items == NULL)
		goto out_oom;
	const cJSON *item;
	cJSON_ArrayForEach(item, env) {
		const char *name = item->string != NULL ? item->string : "";
		if (name[0] == '\0' || strchr(name, '=') != NULL) {
			sbx_err_set(err, "env: variable name `%s` must be non-empty and contain no '='", name);
			goto out_free_list;
		}
		if (!cJSON_IsString(item)) {
			sbx_err_set(err, "env.%s: value must be a string", name);
			goto out_free_list;
		}
		sbx_strbuf sb = SBX_STRBUF_INIT;
		sbx_strbuf_printf(&sb, "%s=%s", name, item->valuestring);
		if (sb.oom) {
			sbx_strbuf_free(&sb);
			goto out_oom;
		}
		out->items[out->n++] = sbx_strbuf_detach(&sb, NULL);
	}
	return 0;
out_oom:
	sbx_err_set(err, "env: out of memory");
out_free_list:
	env_list_free(out);
	return -1;
}

static int caps_bool(const cJSON *caps, const char *key, bool *out, sbx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(caps, key);
	*out = false; /* every default grants nothing */
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v)) {
		sbx_err_set(err, "capabilities.%s: must be true or false", key);
		return -1;
	}
	*out = cJSON_IsTrue(v);
	return 0;
}

static int caps_from_json(const cJSON *req, sbx_gate_caps *caps, sbx_err *err)
{
	memset(caps, 0, sizeof *caps);
	caps->isolation = "none";
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(req, "capabilities");
	if (c == NULL || cJSON_IsNull(c))
		return 0;
	if (!cJSON_IsObject(c)) {
		sbx_err_set(err, "capabilities: must be an object");
		return -1;
	}
	const cJSON *iso = cJSON_GetObjectItemCaseSensitive(c, "isolation");
	if (cJSON_IsString(iso)) {
		caps->isolation = iso->valuestring;
	} else if (iso != NULL && !cJSON_IsNull(iso)) {
		sbx_err_set(err, "capabilities.isolation: must be a string");
		return -1;
	}
	if (caps_bool(c, "supports_deny_all_egress", &caps->supports_deny_all_egress, err) != 0 ||
	    caps_bool(c, "supports_domain_allowlist", &caps->supports_domain_allowlist, err) != 0)
		return -1;
	const cJSON *cap = cJSON_GetObjectItemCaseSensitive(c, "max_timeout_seconds");
	if (cap == NULL || cJSON_IsNull(cap))
		return 0;
	/* Integral and within +-2^53 (no libm: range first, then a round trip). */
	double d = cJSON_IsNumber(cap) ? cap->valuedouble : 0.5;
	bool integral = d >= -9.0e15 && d <= 9.0e15 && (double)(int64_t)d == d;
	if (!cJSON_IsNumber(cap) || !integral) {
		sbx_err_set(err, "capabilities.max_timeout_seconds: must be an integer or null");
		return -1;
	}
	caps->has_max_timeout = true;
	caps->max_timeout_seconds = (int64_t)d;
	return 0;
}

static cJSON *gate_result(const char *decision, const char *rule, const char *error_type, const char *message,
			  const char *variable)
{
	cJSON *r = cJSON_CreateObject();
	if (r == NULL)
		return NULL;
	bool ok = cJSON_AddStringToObject(r, "decision", decision) != NULL;
	ok = ok && (rule ? cJSON_AddStringToObject(r, "rule", rule) : cJSON_AddNullToObject(r, "rule")) != NULL;
	ok = ok && (error_type ? cJSON_AddStringToObject(r, "error_type", error_type)
			       : cJSON_AddNullToObject(r, "error_type")) != NULL;
	ok = ok && (message ? cJSON_AddStringToObject(r, "message", message)
			    : cJSON_AddNullToObject(r, "message")) != NULL;
	ok = ok && (variable ? cJSON_AddStringToObject(r, "variable", variable)
			     : cJSON_AddNullToObject(r, "variable")) != NULL;
	if (!ok) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

static const char *verdict_name(sbx_gate_verdict v)
{
	switch (v) {
	case SBX_GATE_RUN:
		return "run";
	case SBX_GATE_REFUSE:
		return "refuse";
	case SBX_GATE_IN_PROCESS:
		return "in-process";
	case SBX_GATE_BLANK:
	default:
		return "blank";
	}
}

static cJSON *answer_gate(const cJSON *req, sbx_err *err)
{
	cJSON *result = NULL;
	env_list env;
	sbx_gate_caps caps;
	sbx_gate_settings settings;
	sbx_gate_setting_error serr;
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(req, "code");
	if (!cJSON_IsString(code)) {
		sbx_err_set(err, "gate: `code` must be a string");
		return NULL;
	}
	if (caps_from_json(req, &caps, err) != 0)
		return NULL;
	if (env_from_json(req, &env, err) != 0)
		return NULL;
	/* Settings are validated at startup, so a bad one wins over everything. */
	if (sbx_gate_settings_parse(&settings, (const char *const *)env.items, env.n, &serr) != 0) {
		if (serr.variable == NULL)
			sbx_err_set(err, "gate: %s", serr.message);
		else
			result = gate_result("settings_error", NULL, "ValidationError", serr.message, serr.variable);
		goto out_free_env;
	}
	sbx_gate_decision d;
	sbx_gate_decide(&settings, &caps, code->valuestring, strlen(code->valuestring), &d);
	if (d.verdict == SBX_GATE_REFUSE)
		result = gate_result("refuse", sbx_gate_rule_id(d.rule), "SandboxUnavailableError", d.message,
				     d.variable);
	else
		result = gate_result(verdict_name(d.verdict), NULL, NULL, NULL, NULL);
	sbx_gate_settings_free(&settings);
out_free_env:
	env_list_free(&env);
	if (result == NULL && err != NULL && err->msg[0] == '\0')
		sbx_err_set(err, "gate: out of memory");
	return result;
}

static int entry_points_from_json(const cJSON *req, sbx_entry_point **out, size_t *n, sbx_err *err)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(req, "entry_points");
	*out = NULL;
	*n = 0;
	if (!cJSON_IsArray(arr)) {
		sbx_err_set(err, "load_plugins: `entry_points` must be an array");
		return -1;
	}
	size_t count = (size_t)cJSON_GetArraySize(arr);
	sbx_entry_point *eps = calloc(count > 0 ? count : 1, sizeof *eps);
	if (eps == NULL) {
		sbx_err_set(err, "load_plugins: out of memory");
		return -1;
	}
	size_t i = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, arr) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
		const cJSON *dist = cJSON_GetObjectItemCaseSensitive(item, "distribution");
		if (!cJSON_IsObject(item) || !cJSON_IsString(name) ||
		    (dist != NULL && !cJSON_IsNull(dist) && !cJSON_IsString(dist))) {
			sbx_err_set(err, "entry_points[%zu]: must be {\"name\": string, \"distribution\": string|null}",
				    i);
			free(eps);
			return -1;
		}
		eps[i].name = name->valuestring;
		eps[i].distribution = (dist != NULL && cJSON_IsString(dist)) ? dist->valuestring : NULL;
		i++;
	}
	*out = eps;
	*n = i;
	return 0;
}

static cJSON *strings_array(char *const *items, size_t n)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; arr != NULL && i < n; i++) {
		cJSON *s = cJSON_CreateString(items[i]);
		if (s == NULL || !cJSON_AddItemToArray(arr, s)) {
			cJSON_Delete(s);
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

static cJSON *refusal_json(const sbx_plugin_refusal *r)
{
	cJSON *o = cJSON_CreateObject();
	if (o == NULL)
		return NULL;
	cJSON *dists = strings_array(r->distributions, r->n_distributions);
	bool ok = dists != NULL && cJSON_AddStringToObject(o, "name", r->name) != NULL &&
		  cJSON_AddStringToObject(o, "reason", sbx_plugin_reason_id(r->reason)) != NULL &&
		  cJSON_AddItemToObject(o, "distributions", dists);
	if (!ok) {
		if (cJSON_GetObjectItemCaseSensitive(o, "distributions") == NULL)
			cJSON_Delete(dists);
		cJSON_Delete(o);
		return NULL;
	}
	if (cJSON_AddStringToObject(o, "message", r->message) == NULL) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *plan_json(const sbx_plugin_plan *plan)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *loaded = strings_array(plan->loaded, plan->n_loaded);
	cJSON *imported = strings_array(plan->imported, plan->n_imported);
	cJSON *refused = cJSON_CreateArray();
	if (r == NULL || loaded == NULL || imported == NULL || refused == NULL)
		goto out_free_parts;
	for (size_t i = 0; i < plan->n_refused; i++) {
		cJSON *o = refusal_json(&plan->refused[i]);
		if (o == NULL || !cJSON_AddItemToArray(refused, o)) {
			cJSON_Delete(o);
			goto out_free_parts;
		}
	}
	cJSON_AddItemToObject(r, "loaded", loaded);
	cJSON_AddItemToObject(r, "imported", imported);
	cJSON_AddItemToObject(r, "refused", refused);
	return r;
out_free_parts:
	cJSON_Delete(r);
	cJSON_Delete(loaded);
	cJSON_Delete(imported);
	cJSON_Delete(refused);
	return NULL;
}

static cJSON *answer_load_plugins(const cJSON *req, sbx_err *err)
{
	cJSON *result = NULL;
	env_list env;
	sbx_entry_point *eps = NULL;
	size_t n_eps = 0;
	char **allow = NULL;
	size_t n_allow = 0;
	sbx_plugin_plan plan;
	if (entry_points_from_json(req, &eps, &n_eps, err) != 0)
		return NULL;
	if (env_from_json(req, &env, err) != 0)
		goto out_free_eps;
	if (sbx_gate_parse_plugin_allowlist((const char *const *)env.items, env.n, &allow, &n_allow) != 0) {
		sbx_err_set(err, "load_plugins: out of memory");
		goto out_free_env;
	}
	if (sbx_gate_plan_plugins(eps, n_eps, allow, n_allow, &plan, err) != 0)
		goto out_free_allow;
	result = plan_json(&plan);
	if (result == NULL)
		sbx_err_set(err, "load_plugins: out of memory");
	sbx_plugin_plan_free(&plan);
out_free_allow:
	for (size_t i = 0; i < n_allow; i++)
		free(allow[i]);
	free(allow);
out_free_env:
	env_list_free(&env);
out_free_eps:
	free(eps);
	return result;
}

cJSON *sbx_gate_answer(const cJSON *request, sbx_err *err)
{
	sbx_err_clear(err);
	if (!cJSON_IsObject(request)) {
		sbx_err_set(err, "request: must be a JSON object");
		return NULL;
	}
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(request, "op");
	if (!cJSON_IsString(op)) {
		sbx_err_set(err, "request: `op` must be a string");
		return NULL;
	}
	if (strcmp(op->valuestring, "gate") == 0)
		return answer_gate(request, err);
	if (strcmp(op->valuestring, "load_plugins") == 0)
		return answer_load_plugins(request, err);
	sbx_err_set(err, "request: unknown op `%s` (host-gate knows gate, load_plugins)", op->valuestring);
	return NULL;
}

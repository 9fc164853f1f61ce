/* checks_cap: the langflow-backend profile's CAP and REF families: declared
 * capabilities are honest (no I/O in capabilities(), claims hold inside the
 * guest) and refusals come before any mutating request, as
 * SandboxUnavailableError naming the setting.
 *
 * Every check starts its own drivers with its own settings; none depends on
 * another check having run. A refusal is never counted as a pass of a check
 * that needs the run to happen, and vice versa. */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "checks.h"
#include "sbx/gate.h"

static const char *const NET_OFF[] = {"LANGFLOW_SANDBOX_ALLOW_NETWORK=false", NULL};

/* ---- CAP ---- */

void ck_cap_001(struct cf_case *c)
{
	struct cf_driver *d = cf_start(c, NULL);
	cJSON *caps, *j;
	const char *et, *em;

	if (d == NULL)
		return;
	caps = cf_op(d, "capabilities", NULL, 10, &et, &em);
	if (caps == NULL) {
		cf_fail(c, "capabilities() raised %s: %s", et, em);
		return;
	}
	cJSON_Delete(caps);
	j = cf_journal(c);
	if (j != NULL && cJSON_GetArraySize(j) > 0) {
		const cJSON *e = cJSON_GetArrayItem(j, 0);

		cf_fail(c, "capabilities() (with driver start-up) made %d control-plane request(s), first %s %s",
			cJSON_GetArraySize(j), cf_str(e, "method"), cf_str(e, "path"));
	}
	cf_keep_journal(c, j);
}

/* What Langflow's gate (the gate library, lib/ sbx/gate.h) decides for these
 * capabilities under one settings variant; written as a detail line. */
static void gate_detail(struct cf_case *c, const cJSON *caps, const char *label, const char *const *env)
{
	cJSON *req = cJSON_CreateObject();
	cJSON *e = cJSON_AddObjectToObject(req, "env");
	sbx_err err = {{0}};
	cJSON *res;
	size_t i;

	cJSON_AddStringToObject(req, "op", "gate");
	cJSON_AddStringToObject(e, "LANGFLOW_SANDBOX_BACKEND", c->cf->driver_name[0] ? c->cf->driver_name : "backend");
	for (i = 0; env[i] != NULL; i += 2)
		cJSON_AddStringToObject(e, env[i], env[i + 1]);
	cJSON_AddItemToObject(req, "capabilities", cJSON_Duplicate(caps, true));
	cJSON_AddStringToObject(req, "code", "print(1)");
	res = sbx_gate_answer(req, &err);
	if (res == NULL)
		cf_detail(c, "gate, %s: cannot evaluate: %s", label, err.msg);
	else if (strcmp(cf_s0(cf_str(res, "decision")), "run") == 0)
		cf_detail(c, "gate, %s: run", label);
	else
		cf_detail(c, "gate, %s: %s (rule %s): %s", label, cf_s0(cf_str(res, "decision")),
			  cf_str(res, "rule") ? cf_str(res, "rule") : "-", cf_s0(cf_str(res, "message")));
	cJSON_Delete(res);
	cJSON_Delete(req);
}

void ck_cap_002(struct cf_case *c)
{
	struct cf_driver *d = cf_start(c, NULL);
	const char *et, *em;
	const cJSON *v;
	cJSON *caps;

	if (d == NULL)
		return;
	caps = cf_op(d, "capabilities", NULL, 10, &et, &em);
	if (caps == NULL) {
		cf_fail(c, "capabilities() raised %s: %s", et, em);
		return;
	}
	v = cJSON_GetObjectItemCaseSensitive(caps, "isolation");
	if (v != NULL && !cJSON_IsString(v))
		cf_fail(c, "isolation must be a string");
	v = cJSON_GetObjectItemCaseSensitive(caps, "supports_deny_all_egress");
	if (v != NULL && !cJSON_IsBool(v))
		cf_fail(c, "supports_deny_all_egress must be a boolean");
	v = cJSON_GetObjectItemCaseSensitive(caps, "supports_domain_allowlist");
	if (v != NULL && !cJSON_IsBool(v))
		cf_fail(c, "supports_domain_allowlist must be a boolean");
	v = cJSON_GetObjectItemCaseSensitive(caps, "max_timeout_seconds");
	if (v != NULL && !cJSON_IsNull(v) &&
	    (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble != (double)(long)v->valuedouble))
		cf_fail(c, "max_timeout_seconds must be null or a positive integer");
	cf_detail(c, "declared: isolation=%s deny_all=%s allowlist=%s cap=%s",
		  cf_str(caps, "isolation") ? cf_str(caps, "isolation") : "(default none)",
		  cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(caps, "supports_deny_all_egress")) ? "yes" : "no",
		  cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(caps, "supports_domain_allowlist")) ? "yes" : "no",
		  cJSON_IsNumber(v) ? "set" : "none");
	{
		static const char *const dflt[] = {NULL};
		static const char *const net[] = {"LANGFLOW_SANDBOX_ALLOW_NETWORK", "true", NULL};
		static const char *const dom[] = {"LANGFLOW_SANDBOX_ALLOWED_DOMAINS", "pypi.org", NULL};
		static const char *const both[] = {"LANGFLOW_SANDBOX_ALLOW_NETWORK", "true",
						   "LANGFLOW_SANDBOX_ALLOWED_DOMAINS", "pypi.org", NULL};
		static const char *const t300[] = {"LANGFLOW_SANDBOX_TIMEOUT_SECONDS", "300", NULL};

		gate_detail(c, caps, "default settings (network off, no domains, timeout 30)", dflt);
		gate_detail(c, caps, "LANGFLOW_SANDBOX_ALLOW_NETWORK=true", net);
		gate_detail(c, caps, "LANGFLOW_SANDBOX_ALLOWED_DOMAINS=pypi.org", dom);
		gate_detail(c, caps, "ALLOW_NETWORK=true + ALLOWED_DOMAINS=pypi.org", both);
		gate_detail(c, caps, "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=300", t300);
	}
	cJSON_Delete(caps);
}

void ck_cap_003(struct cf_case *c)
{
	const char *iso = cf_cap_str(c->cf, "isolation");
	char tok[40], code[128];
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res, *j;

	if (iso == NULL || strcmp(iso, "hardware-virtualized") != 0) {
		cf_skip(c, "capability not declared: isolation is %s", iso ? iso : "(default none)");
		return;
	}
	d = cf_start(c, NULL);
	if (d == NULL)
		return;
	cf_random_token(c, tok, sizeof(tok));
	snprintf(code, sizeof(code), "print('%s')\n", tok);
	res = cf_run(d, code, NULL, CF_RUN_T, &et, &em);
	if (res == NULL) {
		cf_fail(c, "a plain run did not succeed (%s: %s), so no run can be shown to be in a guest", et, em);
		return;
	}
	if (strstr(cf_str(res, "stdout") ? cf_str(res, "stdout") : "", tok) == NULL)
		cf_fail(c, "stdout lacks the token the code printed");
	j = cf_journal(c);
	if (j != NULL && cf_journal_count(j, "POST", "/v1/sandboxes/{id}/exec", 200, 299) < 1)
		cf_fail(c, "the run succeeded but the journal shows no successful exec in a guest");
	cf_keep_journal(c, j);
	cJSON_Delete(res);
}

static const char *const DENY_PROBES[] = {
	"1.1.1.1:443", "8.8.8.8:53", "10.1.2.3:80", "192.168.1.1:22", "172.16.0.1:443",
	"pypi.org@151.101.0.223:443", "93.184.216.34:80",
};
#define NDENY (sizeof(DENY_PROBES) / sizeof(DENY_PROBES[0]))

/* The guest's real connections (the run's stdout) against the probes:
 * any that completed fails the case. */
static void live_denied(struct cf_case *c, const char *out)
{
	char r[32];

	for (size_t i = 0; i < NDENY; i++) {
		const char *res = cf_probe_result(out, DENY_PROBES[i], r, sizeof(r));

		if (res == NULL)
			cf_fail(c, "the network-off run printed no result for its connection to %s", DENY_PROBES[i]);
		else if (strcmp(res, "ok") == 0)
			cf_fail(c, "network off, but the guest's real connection to %s completed (egress "
				"enforced by the mock)", DENY_PROBES[i]);
	}
}

/* Each guest's stored rules, through the mock's oracle. */
static void stored_denied(struct cf_case *c)
{
	cJSON *sbs = cf_sandboxes(c);
	const cJSON *sb;

	cJSON_ArrayForEach(sb, sbs) {
		for (size_t i = 0; i < NDENY; i++) {
			if (cf_egress_allowed(c, cf_str(sb, "id"), DENY_PROBES[i]) == 1)
				cf_fail(c, "network off, but guest %s (%s) admits %s", cf_str(sb, "id"),
					cf_str(sb, "name") ? cf_str(sb, "name") : "", DENY_PROBES[i]);
		}
	}
	if (cJSON_GetArraySize(sbs) == 0)
		cf_fail(c, "the run succeeded but no guest was created");
	cJSON_Delete(sbs);
}

/* Runs the deny probes (and the metadata fetch) with the network off:
 * the result, or NULL when the backend refused or failed (et/em). */
static cJSON *network_off_probe(struct cf_case *c, struct cf_driver *d, const char *tok, const char **et,
				const char **em)
{
	char *code = cf_probe_code(DENY_PROBES, NDENY, tok, true);
	cJSON *res;

	if (code == NULL) {
		cf_error(c, "harness: out of memory");
		return NULL;
	}
	res = cf_run(d, code, NULL, CF_RUN_T, et, em);
	free(code);
	return res;
}

void ck_cap_004(struct cf_case *c)
{
	char tok[40], why[600];
	struct cf_driver *d;
	const char *et = "", *em = "";
	cJSON *res, *j;
	bool live;

	if (!cf_cap_bool(c->cf, "supports_deny_all_egress")) {
		cf_skip(c, "capability not declared: supports_deny_all_egress is false");
		return;
	}
	live = cf_live_egress(c, why, sizeof(why));
	d = cf_start(c, NET_OFF);
	if (d == NULL)
		return;
	cf_random_token(c, tok, sizeof(tok));
	res = network_off_probe(c, d, tok, &et, &em);
	j = cf_journal(c);
	if (j == NULL)
		goto out;
	if (res == NULL) {
		if (cf_journal_count(j, "POST", "/v1/sandboxes", 0, 999) > 0)
			cf_fail(c, "the run failed (%s) after creating a guest: neither a deny-all guest nor a refusal", et);
		else
			cf_detail(c, "refused before creating anything: %s: %s", et, em);
		goto out;
	}
	if (live)
		live_denied(c, cf_str(res, "stdout"));
	else
		cf_detail(c, "judged on the stored rules only: egress %s", why);
	stored_denied(c);
out:
	cf_keep_journal(c, j);
	cJSON_Delete(res);
}

void ck_cap_005(struct cf_case *c)
{
	static const char *const env[] = {"LANGFLOW_SANDBOX_ALLOW_NETWORK=true",
					  "LANGFLOW_SANDBOX_ALLOWED_DOMAINS=pypi.org, files.pythonhosted.org", NULL};
	static const char *const allow[] = {"pypi.org@151.101.0.223:443", "files.pythonhosted.org@151.101.1.63:443"};
	static const char *const deny[] = {"example.com@93.184.216.34:443", "1.1.1.1:443"};
	/* what the guest dials: names through the resolver, as code would */
	static const char *const live_dests[] = {"pypi.org:443", "files.pythonhosted.org:443", "example.com:443",
						 "1.1.1.1:443"};
	char why[600], r[32], *code;
	struct cf_driver *d;
	const char *et = "", *em = "", *res_s;
	cJSON *res, *sbs;
	const cJSON *sb;
	bool live;
	size_t i;

	if (!cf_cap_bool(c->cf, "supports_domain_allowlist")) {
		cf_skip(c, "capability not declared: supports_domain_allowlist is false");
		return;
	}
	live = cf_live_egress(c, why, sizeof(why));
	d = cf_start(c, env);
	if (d == NULL)
		return;
	code = cf_probe_code(live_dests, 4, NULL, false);
	res = code != NULL ? cf_run(d, code, NULL, CF_RUN_T, &et, &em) : NULL;
	free(code);
	if (res == NULL) {
		cf_fail(c, "claims a domain allowlist but refused a run with allowed domains: %s: %s", et, em);
		return;
	}
	for (i = 0; live && i < 4; i++) {
		res_s = cf_probe_result(cf_str(res, "stdout"), live_dests[i], r, sizeof(r));
		if (i < 2 && (res_s == NULL || strcmp(res_s, "ok") != 0))
			cf_fail(c, "the guest's real connection to allowed %s did not complete (%s)", live_dests[i],
				res_s != NULL ? res_s : "no result printed");
		else if (i >= 2 && res_s != NULL && strcmp(res_s, "ok") == 0)
			cf_fail(c, "the guest's real connection to %s, not an allowed domain, completed", live_dests[i]);
	}
	if (!live)
		cf_detail(c, "judged on the stored rules only: egress %s", why);
	cJSON_Delete(res);
	sbs = cf_sandboxes(c);
	sb = cf_find_sandbox(sbs, NULL);
	if (sb == NULL) {
		cf_fail(c, "the run succeeded but no guest was created");
		goto out;
	}
	for (i = 0; i < 2; i++)
		if (cf_egress_allowed(c, cf_str(sb, "id"), allow[i]) == 0)
			cf_fail(c, "guest %s does not admit %s (host-rule semantics observed: the control plane "
				"does not enforce host-name rules)", cf_str(sb, "id"), allow[i]);
	for (i = 0; i < 2; i++)
		if (cf_egress_allowed(c, cf_str(sb, "id"), deny[i]) == 1)
			cf_fail(c, "guest %s admits %s, which is not an allowed domain", cf_str(sb, "id"), deny[i]);
out:
	cJSON_Delete(sbs);
}

/* Advisory: shows the link-local hole with the network off — the guest
 * reaches 169.254.169.254 whatever its rules, as on the live service. */
void ck_cap_006(struct cf_case *c)
{
	char tok[40], why[600];
	struct cf_driver *d;
	const char *et = "", *em = "", *meta;
	cJSON *res;

	if (!cf_live_egress(c, why, sizeof(why))) {
		cf_skip(c, "egress %s", why);
		return;
	}
	d = cf_start(c, NET_OFF);
	if (d == NULL)
		return;
	cf_random_token(c, tok, sizeof(tok));
	res = network_off_probe(c, d, tok, &et, &em);
	if (res == NULL) {
		cf_skip(c, "the backend refused a network-off run (%s: %s): no guest to show the hole in", et, em);
		return;
	}
	meta = strstr(cf_s0(cf_str(res, "stdout")), "SBX-META ");
	if (meta != NULL && strncmp(meta + 9, "unreachable", 11) != 0) {
		/* the answer (it names the sandbox) is evidence; the reason stays
		 * the same from run to run */
		cf_detail(c, "the metadata service answered: %.*s", (int)strcspn(meta + 9, "\n"), meta + 9);
		cf_fail(c, "with the network off the guest still reached the metadata service at "
			"169.254.169.254:80 (link-local is always open on CreateOS; code in a guest can read "
			"it; the answer is in the evidence)");
	} else
		cf_detail(c, "the guest did not reach 169.254.169.254:80: %.*s",
			  meta != NULL ? (int)strcspn(meta + 9, "\n") : 4, meta != NULL ? meta + 9 : "none");
	cJSON_Delete(res);
}

/* ---- REF ---- */

struct refusal {
	const char *label;
	const char *env[4];
	const char *setting; /* the message must name one of these ('|' separated) */
	/* a value Langflow rejects when it starts (spec, "Who checks settings"):
	 * no backend ever receives it, so the backend is judged only on no
	 * fallback and cleanup, never required to refuse it */
	bool startup_only;
};

static const struct refusal REFUSALS[] = {
	{"allowed domains set", {"LANGFLOW_SANDBOX_ALLOWED_DOMAINS=example.com", "LANGFLOW_SANDBOX_ALLOW_NETWORK=true", NULL},
	 "LANGFLOW_SANDBOX_ALLOWED_DOMAINS", false},
	{"network off without the egress-exceptions variable",
	 {"LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS", "LANGFLOW_SANDBOX_ALLOW_NETWORK=false", NULL},
	 "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS|LANGFLOW_SANDBOX_ALLOW_NETWORK", false},
	{"no API key", {"CREATEOS_SANDBOX_API_KEY", "CREATEOS_API_KEY", NULL}, "API_KEY", false},
	{"timeout 301 (Langflow rejects it at start-up)", {"LANGFLOW_SANDBOX_TIMEOUT_SECONDS=301", NULL},
	 "LANGFLOW_SANDBOX_TIMEOUT_SECONDS", true},
	{"timeout 0 (Langflow rejects it at start-up)", {"LANGFLOW_SANDBOX_TIMEOUT_SECONDS=0", NULL},
	 "LANGFLOW_SANDBOX_TIMEOUT_SECONDS", true},
	{"memory 127 (Langflow rejects it at start-up)", {"LANGFLOW_SANDBOX_MEMORY_MB=127", NULL},
	 "LANGFLOW_SANDBOX_MEMORY_MB", true},
};

static bool names_setting(const char *msg, const char *settings)
{
	char buf[256];
	char *p = buf, *bar;

	snprintf(buf, sizeof(buf), "%s", settings);
	for (;;) {
		bar = strchr(p, '|');
		if (bar != NULL)
			*bar = '\0';
		if (strstr(msg, p) != NULL)
			return true;
		if (bar == NULL)
			return false;
		p = bar + 1;
	}
}

static int mutating(const cJSON *j)
{
	return cf_journal_count(j, "POST", "/v1/sandboxes", 0, 999) +
	       cf_journal_count(j, "POST", "/v1/sandboxes/{id}/*", 0, 999) +
	       cf_journal_count(j, "PUT", "/v1/sandboxes/*", 0, 999) +
	       cf_journal_count(j, "PATCH", "/v1/sandboxes/*", 0, 999);
}

/* A setting Langflow rejects at start-up: whatever the backend does (runs,
 * refuses, raises anything), a result must come from a guest (an exec in
 * the journal: no fallback) and no guest may stay (cleanup). */
static void judge_startup_only(struct cf_case *c, const struct refusal *r, const cJSON *res, const char *et,
			       const char *em)
{
	cJSON *j;
	bool bad = false;

	if (c->cf->kind == CF_REAL) {
		/* no journal on a real control plane: no fallback cannot be told */
		cf_detail(c, "%s: %s (not judged: no backend receives it from Langflow; --api-url mode "
			  "has no journal to tell a fallback)",
			  r->label, res != NULL ? "ran" : "refused");
		return;
	}
	j = cf_journal(c);
	if (res != NULL && j != NULL && cf_journal_count(j, "POST", "/v1/sandboxes/{id}/exec", 200, 299) == 0) {
		cf_fail(c, "%s: the run returned a result, yet no guest executed it: a fallback", r->label);
		bad = true;
	}
	if (cf_live_count(c, r->label) > 0) {
		cf_fail(c, "%s: a guest was left behind", r->label);
		bad = true;
	}
	if (!bad)
		cf_detail(c, "%s: %s%s%s (not judged: no backend receives it from Langflow; no fallback, no guest left)",
			  r->label, res != NULL ? "ran" : et, res != NULL ? "" : ": ", res != NULL ? "" : em);
	if (bad)
		cf_keep_journal(c, j);
	else
		cJSON_Delete(j);
}

static void ref_common(struct cf_case *c, bool check_messages)
{
	size_t i;
	int refusals = 0;

	for (i = 0; i < sizeof(REFUSALS) / sizeof(REFUSALS[0]); i++) {
		const struct refusal *r = &REFUSALS[i];
		struct cf_driver *d = cf_start(c, r->env);
		cJSON *before, *after, *res;
		const char *et, *em;
		int m0, m1;

		if (d == NULL)
			return;
		before = check_messages ? NULL : cf_journal(c);
		res = cf_run(d, "print('should not run')\n", NULL, CF_RUN_T, &et, &em);
		after = check_messages ? NULL : cf_journal(c);
		m0 = before ? mutating(before) : 0;
		m1 = after ? mutating(after) : 0;
		if (r->startup_only && !cf_driver_broken(d)) {
			if (check_messages)
				judge_startup_only(c, r, res, et, em);
		} else if (res != NULL) {
			cf_detail(c, "%s: the backend ran the code (not a refusal; not judged here)", r->label);
		} else if (cf_driver_broken(d)) {
			return;
		} else {
			refusals++;
			if (!check_messages && m1 > m0)
				cf_fail(c, "%s: refused (%s) only after %d mutating control-plane request(s)",
					r->label, et, m1 - m0);
			if (check_messages && !is_error_type(et, "SandboxUnavailableError"))
				cf_fail(c, "%s: refusal raised %s, not SandboxUnavailableError: %s", r->label, et, em);
			if (check_messages && !names_setting(em, r->setting))
				cf_fail(c, "%s: refusal message does not name %s: \"%s\"", r->label, r->setting, em);
			if (!cf_failed(c))
				cf_detail(c, "%s: refused with %s: %s", r->label, et, em);
		}
		cJSON_Delete(res);
		cJSON_Delete(before);
		if (cf_failed(c))
			cf_keep_journal(c, after);
		else
			cJSON_Delete(after);
		cf_driver_stop(d);
	}
	if (refusals == 0 && !cf_failed(c))
		cf_skip(c, "the backend refused none of the refusal scenarios");
}

void ck_ref_001(struct cf_case *c)
{
	ref_common(c, false);
}

void ck_ref_002(struct cf_case *c)
{
	ref_common(c, true);
}

void ck_ref_003(struct cf_case *c)
{
	const cJSON *cap = cJSON_GetObjectItemCaseSensitive(c->cf->capabilities, "max_timeout_seconds");
	char over[80], eq[80];
	const char *env_over[] = {over, NULL};
	const char *env_eq[] = {eq, NULL};
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res;
	long capv;

	if (!cJSON_IsNumber(cap)) {
		cf_skip(c, "capability not declared: no max_timeout_seconds");
		return;
	}
	capv = (long)cap->valuedouble;
	snprintf(over, sizeof(over), "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=%ld", capv + 1);
	snprintf(eq, sizeof(eq), "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=%ld", capv);
	if (capv + 1 <= 300) {
		d = cf_start(c, env_over);
		if (d == NULL)
			return;
		res = cf_run(d, "print(1)\n", NULL, CF_RUN_T, &et, &em);
		if (res != NULL)
			cf_fail(c, "timeout %ld above the cap %ld ran", capv + 1, capv);
		else if (!is_error_type(et, "SandboxUnavailableError"))
			cf_fail(c, "timeout above the cap raised %s, not SandboxUnavailableError", et);
		cJSON_Delete(res);
	} else {
		cf_detail(c, "cap %ld: cap+1 is outside the settings range, only the equal case is run", capv);
	}
	d = cf_start(c, env_eq);
	if (d == NULL)
		return;
	res = cf_run(d, "print(1)\n", NULL, CF_RUN_T + (double)capv, &et, &em);
	if (res == NULL)
		cf_fail(c, "timeout equal to the cap (%ld) was refused: %s: %s", capv, et, em);
	cJSON_Delete(res);
}

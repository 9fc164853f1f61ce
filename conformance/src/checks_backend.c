/* checks_backend: the langflow-backend profile (CAP, REF, FB, CLN, RES, CON):
 * promises every Langflow sandbox backend keeps, whatever its control plane.
 *
 * Every check starts its own drivers with its own settings; none depends on
 * another check having run. A backend's refusal is never counted as a pass
 * of a check that needs the run to happen, and vice versa. */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conform.h"
#include "sbx/gate.h"

static const char *const NET_OFF[] = {"LANGFLOW_SANDBOX_ALLOW_NETWORK=false", NULL};

static const char *s0(const char *s)
{
	return s != NULL ? s : "";
}

static bool is_error_type(const char *et, const char *want)
{
	return et != NULL && strcmp(et, want) == 0;
}

static bool sandbox_error(const char *et)
{
	return is_error_type(et, "SandboxUnavailableError") || is_error_type(et, "SandboxExecutionError");
}

/* ---- CAP ---- */

static void cap_001(struct cf_case *c)
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
	else if (strcmp(s0(cf_str(res, "decision")), "run") == 0)
		cf_detail(c, "gate, %s: run", label);
	else
		cf_detail(c, "gate, %s: %s (rule %s): %s", label, s0(cf_str(res, "decision")),
			  cf_str(res, "rule") ? cf_str(res, "rule") : "-", s0(cf_str(res, "message")));
	cJSON_Delete(res);
	cJSON_Delete(req);
}

static void cap_002(struct cf_case *c)
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

static void cap_003(struct cf_case *c)
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

static void cap_004(struct cf_case *c)
{
	char tok[40], code[128];
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res, *j, *sbs;
	const cJSON *sb;
	size_t i;

	if (!cf_cap_bool(c->cf, "supports_deny_all_egress")) {
		cf_skip(c, "capability not declared: supports_deny_all_egress is false");
		return;
	}
	d = cf_start(c, NET_OFF);
	if (d == NULL)
		return;
	cf_random_token(c, tok, sizeof(tok));
	snprintf(code, sizeof(code), "print('%s')\n", tok);
	res = cf_run(d, code, NULL, CF_RUN_T, &et, &em);
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
	sbs = cf_sandboxes(c);
	cJSON_ArrayForEach(sb, sbs) {
		for (i = 0; i < sizeof(DENY_PROBES) / sizeof(DENY_PROBES[0]); i++) {
			int a = cf_egress_allowed(c, cf_str(sb, "id"), DENY_PROBES[i]);

			if (a == 1)
				cf_fail(c, "network off, but guest %s (%s) admits %s", cf_str(sb, "id"),
					cf_str(sb, "name") ? cf_str(sb, "name") : "", DENY_PROBES[i]);
		}
	}
	if (cJSON_GetArraySize(sbs) == 0)
		cf_fail(c, "the run succeeded but no guest was created");
	cJSON_Delete(sbs);
out:
	cf_keep_journal(c, j);
	cJSON_Delete(res);
}

static void cap_005(struct cf_case *c)
{
	static const char *const env[] = {"LANGFLOW_SANDBOX_ALLOW_NETWORK=true",
					  "LANGFLOW_SANDBOX_ALLOWED_DOMAINS=pypi.org, files.pythonhosted.org", NULL};
	static const char *const allow[] = {"pypi.org@151.101.0.223:443", "files.pythonhosted.org@151.101.1.63:443"};
	static const char *const deny[] = {"example.com@93.184.216.34:443", "1.1.1.1:443"};
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res, *sbs;
	const cJSON *sb;
	size_t i;

	if (!cf_cap_bool(c->cf, "supports_domain_allowlist")) {
		cf_skip(c, "capability not declared: supports_domain_allowlist is false");
		return;
	}
	d = cf_start(c, env);
	if (d == NULL)
		return;
	res = cf_run(d, "print('allowlist')\n", NULL, CF_RUN_T, &et, &em);
	if (res == NULL) {
		cf_fail(c, "claims a domain allowlist but refused a run with allowed domains: %s: %s", et, em);
		return;
	}
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

/* ---- REF ---- */

struct refusal {
	const char *label;
	const char *env[4];
	const char *setting; /* the message must name one of these ('|' separated) */
};

static const struct refusal REFUSALS[] = {
	{"allowed domains set", {"LANGFLOW_SANDBOX_ALLOWED_DOMAINS=example.com", "LANGFLOW_SANDBOX_ALLOW_NETWORK=true", NULL},
	 "LANGFLOW_SANDBOX_ALLOWED_DOMAINS"},
	{"network off without the egress-exceptions variable",
	 {"LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS", "LANGFLOW_SANDBOX_ALLOW_NETWORK=false", NULL},
	 "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS|LANGFLOW_SANDBOX_ALLOW_NETWORK"},
	{"no API key", {"CREATEOS_SANDBOX_API_KEY", "CREATEOS_API_KEY", NULL}, "API_KEY"},
	{"timeout out of range", {"LANGFLOW_SANDBOX_TIMEOUT_SECONDS=301", NULL}, "LANGFLOW_SANDBOX_TIMEOUT_SECONDS"},
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
		if (res != NULL) {
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

static void ref_001(struct cf_case *c)
{
	ref_common(c, false);
}

static void ref_002(struct cf_case *c)
{
	ref_common(c, true);
}

static void ref_003(struct cf_case *c)
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

/* ---- FB: no fallback ---- */

struct fault_kind {
	const char *id;
	const char *what;
	const char *action; /* JSON of the action, NULL = control plane down */
};

#define FB_TIMEOUT 2

static const struct fault_kind FAULTS[] = {
	{"FB-001", "control plane down", NULL},
	{"FB-002", "401", "{\"kind\":\"http\",\"status\":401}"},
	{"FB-003", "402", "{\"kind\":\"http\",\"status\":402}"},
	{"FB-004", "403 over the account cap", "{\"kind\":\"http\",\"status\":403,\"code\":\"QUOTA_EXCEEDED\"}"},
	{"FB-005", "429", "{\"kind\":\"http\",\"status\":429,\"retry_after\":1}"},
	{"FB-006", "500", "{\"kind\":\"http\",\"status\":500}"},
	{"FB-007", "503", "{\"kind\":\"http\",\"status\":503}"},
	{"FB-008", "connection reset", "{\"kind\":\"reset\"}"},
	{"FB-009", "hang past the timeout", "{\"kind\":\"hang\",\"max_ms\":20000}"},
	{"FB-010", "malformed JSON", "{\"kind\":\"malformed_json\"}"},
	{"FB-011", "truncated body", "{\"kind\":\"truncated\"}"},
	{"FB-012", "empty 200", "{\"kind\":\"empty_200\"}"},
	{"FB-013", "fail envelope on a 200", "{\"kind\":\"http\",\"status\":200,\"envelope\":\"fail\"}"},
};

static const struct fault_kind *fault_for(const char *id)
{
	size_t i;

	for (i = 0; i < sizeof(FAULTS) / sizeof(FAULTS[0]); i++)
		if (strcmp(FAULTS[i].id, id) == 0)
			return &FAULTS[i];
	return NULL;
}

/* A loopback port nothing listens on (bound, then closed). */
static int dead_port(void)
{
	struct sockaddr_in a = {0};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port = 9;

	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static void fb_check(struct cf_case *c)
{
	const struct fault_kind *f = fault_for(c->def->id);
	char url[128], tmo[64], canary[48], code[700];
	const char *env[4] = {tmo, NULL, NULL, NULL};
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res, *j;
	double t0;

	snprintf(tmo, sizeof(tmo), "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=%d", FB_TIMEOUT);
	if (f->action == NULL) {
		snprintf(url, sizeof(url), "CREATEOS_SANDBOX_BASE_URL=http://127.0.0.1:%d", dead_port());
		env[1] = url;
	} else {
		cJSON *rule = cJSON_CreateObject();
		cJSON *m = cJSON_AddObjectToObject(rule, "match");

		cJSON_AddStringToObject(rule, "name", f->id);
		cJSON_AddStringToObject(m, "method", "POST");
		cJSON_AddStringToObject(m, "path", "/v1/sandboxes");
		cJSON_AddItemToObject(rule, "action", cJSON_Parse(f->action));
		if (cf_fault(c, rule) != 0)
			return;
	}
	d = cf_start(c, env);
	if (d == NULL)
		return;
	cf_random_token(c, canary, sizeof(canary));
	/* A recognisable prefix; the rest of the random token stays. */
	canary[0] = 'C';
	canary[1] = 'A';
	canary[2] = 'N';
	cf_canary_code(c, canary, code, sizeof(code));
	t0 = cf_now_ms();
	res = cf_run(d, code, NULL, CF_RUN_T, &et, &em);
	cf_detail(c, "fault: %s; run answered after %.0f ms", f->what, cf_now_ms() - t0);
	if (res != NULL) {
		const char *out = cf_str(res, "stdout") ? cf_str(res, "stdout") : "";

		cf_fail(c, "%s: the run succeeded (exit %g) instead of raising", f->what, cf_num(res, "exit_code", 0));
		if (strstr(out, canary) != NULL)
			cf_fail(c, "%s: the canary was printed: the code ran although the control plane failed", f->what);
	} else if (!cf_driver_broken(d)) {
		cf_detail(c, "raised %s: %s", et, em);
		if (!sandbox_error(et))
			cf_detail(c, "note: %s is not a Sandbox*Error class", et);
	}
	if (cf_trip_exists(c))
		cf_fail(c, "%s: the trip-wire %s exists: the code ran outside a guest", f->what, c->trip);
	if (f->action != NULL) {
		j = cf_journal(c);
		if (j != NULL && cf_journal_count(j, "POST", "/v1/sandboxes", 0, 999) == 0 && res == NULL)
			cf_detail(c, "the fault never fired: the backend raised before creating a guest");
		cf_keep_journal(c, j);
	}
	cJSON_Delete(res);
}

/* ---- CLN ---- */

static void cln_001(struct cf_case *c)
{
	static const char *const env[] = {"LANGFLOW_SANDBOX_TIMEOUT_SECONDS=1", NULL};
	static const struct {
		const char *label;
		const char *code;
	} runs[] = {
		{"success", "print('ok')\n"},
		{"user error", "import sys\nprint('failing')\nsys.exit(3)\n"},
		{"timeout", "import time\ntime.sleep(30)\n"},
		{"infrastructure fault (exec answers 500)", "print('never')\n"},
	};
	struct cf_driver *d = cf_start(c, env);
	size_t i;

	if (d == NULL)
		return;
	for (i = 0; i < 4; i++) {
		const char *et, *em;
		cJSON *res;
		int live;

		if (i == 3) {
			cJSON *rule = cJSON_Parse("{\"name\":\"CLN-001 exec 500\",\"match\":{\"method\":\"POST\","
						  "\"path\":\"/v1/sandboxes/{id}/exec\"},\"fire\":{\"times\":1},"
						  "\"action\":{\"kind\":\"http\",\"status\":500}}");

			if (cf_fault(c, rule) != 0)
				return;
		}
		res = cf_run(d, runs[i].code, NULL, CF_RUN_T, &et, &em);
		if (res == NULL && cf_driver_broken(d))
			return;
		if (res != NULL)
			cf_detail(c, "%s: exit %g", runs[i].label, cf_num(res, "exit_code", 0));
		else
			cf_detail(c, "%s: raised %s", runs[i].label, et);
		live = cf_live_count(c, runs[i].label);
		if (live > 0)
			cf_fail(c, "after the %s run, %d guest(s) are left in a non-terminal state", runs[i].label, live);
		cJSON_Delete(res);
	}
}

static void cln_002(struct cf_case *c)
{
	cJSON *rule = cJSON_Parse("{\"name\":\"CLN-002 delete 500\",\"match\":{\"method\":\"DELETE\","
				  "\"path\":\"/v1/sandboxes/{id}\"},\"fire\":{\"times\":1},"
				  "\"action\":{\"kind\":\"http\",\"status\":500}}");
	struct cf_driver *d;
	const char *et, *em;
	char failed_id[80] = "";
	cJSON *res, *j, *sbs;
	const cJSON *e, *sb;
	bool reported;
	int live = 0;

	if (cf_fault(c, rule) != 0)
		return;
	d = cf_start(c, NULL);
	if (d == NULL)
		return;
	res = cf_run(d, "print('delete will fail')\n", NULL, CF_RUN_T, &et, &em);
	if (res == NULL && cf_driver_broken(d))
		return;
	j = cf_journal(c);
	cJSON_ArrayForEach(e, j) {
		const char *p = cf_str(e, "path");

		if (cf_str(e, "fault") != NULL && p != NULL && strncmp(p, "/v1/sandboxes/", 14) == 0 &&
		    strcmp(cf_str(e, "method"), "DELETE") == 0)
			snprintf(failed_id, sizeof(failed_id), "%s", p + 14);
	}
	if (failed_id[0] == '\0') {
		cf_skip(c, "the backend never deleted a guest, so the delete fault did not fire");
		goto out;
	}
	cf_driver_stop(d);
	reported = res == NULL || strstr(sbx_strbuf_str(&c->driver_stderr), failed_id) != NULL;
	if (!reported)
		cf_fail(c, "the delete of %s failed but the run succeeded silently: no error, and the driver's "
			"log does not name the guest", failed_id);
	else
		cf_detail(c, "the failed delete of %s was reported (%s)", failed_id,
			  res == NULL ? "run raised" : "driver log names the guest");
	sbs = cf_sandboxes(c);
	cJSON_ArrayForEach(sb, sbs) {
		if (!cf_status_live(cf_str(sb, "status")))
			continue;
		live++;
		if (strcmp(cf_str(sb, "id"), failed_id) != 0)
			cf_fail(c, "guest %s is left besides the one whose delete failed", cf_str(sb, "id"));
	}
	if (live > 1)
		cf_fail(c, "%d guests are left; at most the one whose delete failed may stay", live);
	cf_allow_leftover(c, failed_id);
	cJSON_Delete(sbs);
out:
	cf_keep_journal(c, j);
	cJSON_Delete(res);
}

static void cln_003(struct cf_case *c)
{
	struct cf_driver *d = cf_start(c, NULL);
	const char *et, *em;
	cJSON *res;
	int i, live;

	if (d == NULL)
		return;
	res = cf_run(d, "print('before shutdown')\n", NULL, CF_RUN_T, &et, &em);
	cJSON_Delete(res);
	for (i = 1; i <= 2; i++) {
		res = cf_op(d, "shutdown", NULL, 30, &et, &em);
		if (res == NULL) {
			cf_fail(c, "shutdown() call %d raised %s: %s", i, et, em);
			return;
		}
		cJSON_Delete(res);
	}
	cf_allow_leftover(c, "lf-c-"); /* reuse guests are documented to outlive the run */
	live = cf_live_count(c, "after shutdown() twice");
	if (live > 0)
		cf_fail(c, "after shutdown() twice, %d guest(s) created by the driver remain", live);
}

static void cln_004(struct cf_case *c)
{
	cJSON *rule = cJSON_Parse("{\"name\":\"CLN-004 lost create answer\",\"match\":{\"method\":\"POST\","
				  "\"path\":\"/v1/sandboxes\"},\"fire\":{\"times\":1},"
				  "\"action\":{\"kind\":\"commit_then_fail\",\"then\":\"reset\"}}");
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res;
	int live;

	if (cf_fault(c, rule) != 0)
		return;
	d = cf_start(c, NULL);
	if (d == NULL)
		return;
	res = cf_run(d, "print('lost create')\n", NULL, CF_RUN_T, &et, &em);
	cJSON_Delete(res);
	res = cf_op(d, "shutdown", NULL, 30, &et, &em);
	cJSON_Delete(res);
	live = cf_live_count(c, "after the lost create answer and shutdown()");
	if (live > 0) {
		cf_fail(c, "the control plane committed a create whose answer was lost; %d orphan guest(s) "
			"remain after the run and shutdown()", live);
		c->cleanup_skip = true;
		snprintf(c->cleanup_verdict, sizeof(c->cleanup_verdict), "skip");
		sbx_strbuf_puts(&c->cleanup_reason, "advisory check: the orphan is the subject of the check");
	}
}

/* ---- RES ---- */

static void res_001(struct cf_case *c)
{
	static const char utf8_out[] = "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\nline 2\n";
	static const char utf8_err[] = "err: \xc3\xbc\xc3\xb1\xc3\xaf \xe2\x9c\x97\n";
	char code[512];
	struct cf_driver *d = cf_start(c, NULL);
	const char *et, *em;
	cJSON *res;
	size_t i;

	if (d == NULL)
		return;
	snprintf(code, sizeof(code),
		 "import sys\nsys.stdout.write(%s)\nsys.stderr.write(%s)\nsys.stdout.flush()\nsys.exit(3)\n",
		 "'h\\u00e9llo w\\u00f6rld \\u2713 \\u65e5\\u672c\\u8a9e\\nline 2\\n'",
		 "'err: \\u00fc\\u00f1\\u00ef \\u2717\\n'");
	res = cf_run(d, code, NULL, CF_RUN_T, &et, &em);
	if (res == NULL) {
		cf_fail(c, "UTF-8 run raised %s: %s", et, em);
		return;
	}
	if (strcmp(cf_str(res, "stdout") ? cf_str(res, "stdout") : "", utf8_out) != 0)
		cf_fail(c, "stdout is not byte-exact: got \"%.120s\"", cf_str(res, "stdout"));
	if (strcmp(cf_str(res, "stderr") ? cf_str(res, "stderr") : "", utf8_err) != 0)
		cf_fail(c, "stderr is not byte-exact: got \"%.120s\"", cf_str(res, "stderr"));
	if (cf_num(res, "exit_code", -999) != 3)
		cf_fail(c, "exit code %g, expected 3", cf_num(res, "exit_code", -999));
	cJSON_Delete(res);
	res = cf_run(d, "import sys\nsys.stdout.write('0123456789abcdef' * 65536)\n", NULL, CF_RUN_T, &et, &em);
	if (res == NULL) {
		cf_fail(c, "1 MiB output run raised %s: %s", et, em);
		return;
	}
	{
		const char *out = cf_str(res, "stdout") ? cf_str(res, "stdout") : "";
		size_t len = strlen(out);
		bool ok = len == 1048576;

		for (i = 0; ok && i < len; i++)
			ok = out[i] == "0123456789abcdef"[i % 16];
		if (!ok)
			cf_fail(c, "1 MiB stdout came back as %zu bytes%s", len, len == 1048576 ? " with wrong content" : "");
		if (cf_num(res, "exit_code", -999) != 0)
			cf_fail(c, "1 MiB run: exit code %g, expected 0", cf_num(res, "exit_code", -999));
	}
	cJSON_Delete(res);
	res = cf_run(d, "raise SystemExit(42)\n", NULL, CF_RUN_T, &et, &em);
	if (res == NULL)
		cf_fail(c, "a non-zero exit raised %s instead of returning a result: %s", et, em);
	else if (cf_num(res, "exit_code", -999) != 42)
		cf_fail(c, "exit code %g, expected 42", cf_num(res, "exit_code", -999));
	cJSON_Delete(res);
}

#define RES_002_SLACK_S 5.0

static void res_002(struct cf_case *c)
{
	static const char *const env[] = {"LANGFLOW_SANDBOX_TIMEOUT_SECONDS=1", NULL};
	struct cf_driver *d = cf_start(c, env);
	const char *et, *em;
	double t0, el;
	cJSON *res;
	int live;

	if (d == NULL)
		return;
	t0 = cf_now_ms();
	res = cf_run(d, "import time\nprint('start', flush=True)\ntime.sleep(60)\n", NULL, CF_RUN_T, &et, &em);
	el = (cf_now_ms() - t0) / 1000.0;
	cf_detail(c, "timeout 1 s, answered after %.2f s (stated slack %.0f s)", el, RES_002_SLACK_S);
	if (res == NULL) {
		if (!cf_driver_broken(d))
			cf_fail(c, "a run past its timeout raised %s instead of returning exit -1: %s", et, em);
	} else if (cf_num(res, "exit_code", 0) != -1) {
		cf_fail(c, "a run past its timeout returned exit %g, expected -1", cf_num(res, "exit_code", 0));
	}
	if (el > (1.0 + RES_002_SLACK_S) * c->cf->timeout_scale)
		cf_fail(c, "answered after %.2f s, beyond timeout + %.0f s slack", el, RES_002_SLACK_S);
	live = cf_live_count(c, "after the timed-out run");
	if (live > 0)
		cf_fail(c, "the timed-out run's guest is still there");
	cJSON_Delete(res);
}

static void res_003(struct cf_case *c)
{
	cJSON *rule = cJSON_Parse("{\"name\":\"RES-003 oom\",\"match\":{\"method\":\"POST\","
				  "\"path\":\"/v1/sandboxes/{id}/exec\"},\"action\":{\"kind\":\"exec_oom\"}}");
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res;

	if (cf_fault(c, rule) != 0)
		return;
	d = cf_start(c, NULL);
	if (d == NULL)
		return;
	res = cf_run(d, "x = bytearray(10 ** 10)\n", NULL, CF_RUN_T, &et, &em);
	if (res == NULL)
		cf_fail(c, "a guest killed for memory raised %s instead of returning exit 137: %s", et, em);
	else if (cf_num(res, "exit_code", 0) != 137)
		cf_fail(c, "a guest killed for memory returned exit %g, expected 137", cf_num(res, "exit_code", 0));
	cJSON_Delete(res);
}

static void res_004(struct cf_case *c)
{
	struct cf_driver *d = cf_start(c, NULL);
	cJSON *env = cJSON_CreateObject();
	char tok[40];
	const char *et, *em;
	cJSON *res;

	if (d == NULL)
		goto out;
	cf_random_token(c, tok, sizeof(tok));
	cJSON_AddStringToObject(env, "SBX_CONFORM_VALUE", tok);
	res = cf_run(d, "import os\nprint(os.environ.get('SBX_CONFORM_VALUE', 'missing'))\n", env, CF_RUN_T,
		     &et, &em);
	if (res == NULL)
		cf_fail(c, "run with env raised %s: %s", et, em);
	else if (strncmp(cf_str(res, "stdout") ? cf_str(res, "stdout") : "", tok, strlen(tok)) != 0)
		cf_fail(c, "the code saw SBX_CONFORM_VALUE=\"%.60s\", expected %s", cf_str(res, "stdout"), tok);
	cJSON_Delete(res);
out:
	cJSON_Delete(env);
}

/* ---- CON ---- */

#define CON_N 4

static void con_001(struct cf_case *c)
{
	struct cf_driver *d = cf_start(c, NULL);
	cJSON *f = cJSON_CreateObject();
	cJSON *runs = cJSON_AddArrayToObject(f, "runs");
	char toks[CON_N][24];
	const char *et, *em;
	const cJSON *o;
	cJSON *res = NULL, *j;
	int i = 0;

	if (d == NULL)
		goto out;
	for (i = 0; i < CON_N; i++) {
		cJSON *r = cJSON_CreateObject();
		char code[256];

		cf_random_token(c, toks[i], sizeof(toks[i]));
		snprintf(code, sizeof(code), "import time\nprint('%s', flush=True)\ntime.sleep(0.3)\nprint('%s')\n",
			 toks[i], toks[i]);
		cJSON_AddStringToObject(r, "code", code);
		cJSON_AddNullToObject(r, "env");
		cJSON_AddItemToArray(runs, r);
	}
	res = cf_op(d, "run_concurrent", f, CF_RUN_T, &et, &em);
	if (res == NULL) {
		if (is_error_type(et, "ProtocolError"))
			cf_skip(c, "surface not served: the driver does not serve run_concurrent (%s)", em);
		else if (!cf_driver_broken(d))
			cf_fail(c, "run_concurrent raised %s: %s", et, em);
		goto out;
	}
	i = 0;
	cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(res, "results")) {
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "result");
		char want[128];

		if (i >= CON_N)
			break;
		snprintf(want, sizeof(want), "%.23s\n%.23s\n", toks[i], toks[i]);
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ok")))
			cf_fail(c, "concurrent run %d failed: %s", i,
				cf_str(cJSON_GetObjectItemCaseSensitive(o, "error"), "message"));
		else if (strcmp(cf_str(r, "stdout") ? cf_str(r, "stdout") : "", want) != 0)
			cf_fail(c, "concurrent run %d got another run's output: \"%.80s\"", i, cf_str(r, "stdout"));
		i++;
	}
	if (i != CON_N)
		cf_fail(c, "run_concurrent answered %d results for %d runs", i, CON_N);
	j = cf_journal(c);
	if (j != NULL) {
		int cr = cf_journal_count(j, "POST", "/v1/sandboxes", 200, 299);
		int dl = cf_journal_count(j, "DELETE", "/v1/sandboxes/{id}", 200, 299);

		if (cr != CON_N || dl != CON_N)
			cf_fail(c, "%d concurrent runs created %d and deleted %d guests (expected %d and %d)",
				CON_N, cr, dl, CON_N, CON_N);
	}
	cf_keep_journal(c, j);
out:
	cJSON_Delete(res);
	cJSON_Delete(f);
}

/* The first connection serial (journal "conn") that entries [from, to) of
 * j share with entries [0, from), 0 when none: requests the child of a fork
 * sent over a connection its parent had opened. */
static double shared_connection(const cJSON *j, int from, int to)
{
	for (int i = from; i < to; i++) {
		double ci = cf_num(cJSON_GetArrayItem(j, i), "conn", 0);

		for (int k = 0; ci > 0 && k < from; k++) {
			if (cf_num(cJSON_GetArrayItem(j, k), "conn", 0) == ci)
				return ci;
		}
	}
	return 0;
}

static void con_002(struct cf_case *c)
{
	struct cf_driver *d = cf_start(c, NULL);
	char tok[3][40], code[120];
	const char *et, *em;
	cJSON *f, *res, *j;
	const cJSON *child;
	int i, before = -1;
	double conn;

	if (d == NULL)
		return;
	for (i = 0; i < 3; i++)
		cf_random_token(c, tok[i], sizeof(tok[i]));
	snprintf(code, sizeof(code), "print('%s')\n", tok[0]);
	res = cf_run(d, code, NULL, CF_RUN_T, &et, &em);
	if (res == NULL) {
		cf_fail(c, "the parent's first run raised %s: %s", et, em);
		return;
	}
	cJSON_Delete(res);
	/* what the parent sent before the fork (a real control plane has no
	 * journal: then only the behaviour is checked) */
	j = c->cf->kind != CF_REAL ? cf_journal(c) : NULL;
	if (j != NULL)
		before = cJSON_GetArraySize(j);
	cJSON_Delete(j);
	f = cJSON_CreateObject();
	snprintf(code, sizeof(code), "print('%s')\n", tok[1]);
	cJSON_AddStringToObject(f, "code", code);
	res = cf_op(d, "fork_check", f, CF_RUN_T, &et, &em);
	cJSON_Delete(f);
	if (res == NULL) {
		if (is_error_type(et, "ProtocolError"))
			cf_skip(c, "surface not served: fork_check (%s)", em);
		else if (!cf_driver_broken(d))
			cf_fail(c, "fork_check raised %s: %s", et, em);
		return;
	}
	child = cJSON_GetObjectItemCaseSensitive(res, "child");
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(child, "ok")))
		cf_fail(c, "the forked child's run failed after reset_after_fork(): %s",
			cf_str(cJSON_GetObjectItemCaseSensitive(child, "error"), "message"));
	else if (strstr(s0(cf_str(cJSON_GetObjectItemCaseSensitive(child, "result"), "stdout")), tok[1]) == NULL)
		cf_fail(c, "the forked child's output is wrong");
	if (cf_num(res, "child_pid", 0) == (double)cf_driver_pid(d))
		cf_fail(c, "fork_check did not run in another process");
	cJSON_Delete(res);
	/* the parent waits in fork_check, so what came meanwhile is the child's */
	j = before >= 0 ? cf_journal(c) : NULL;
	if (j != NULL) {
		conn = shared_connection(j, before, cJSON_GetArraySize(j));
		if (conn > 0)
			cf_fail(c, "the forked child sent requests over connection %.0f, which its parent "
				   "opened before the fork (reset_after_fork must drop inherited connections)",
				conn);
		cf_keep_journal(c, j);
	}
	snprintf(code, sizeof(code), "print('%s')\n", tok[2]);
	res = cf_run(d, code, NULL, CF_RUN_T, &et, &em);
	if (res == NULL)
		cf_fail(c, "the parent's run after the fork raised %s: %s (shared connection or lock?)", et, em);
	else if (strstr(s0(cf_str(res, "stdout")), tok[2]) == NULL)
		cf_fail(c, "the parent's run after the fork returned the wrong output");
	cJSON_Delete(res);
}

#define P "langflow-backend"
const struct cf_check cf_checks_backend[] = {
	{"CAP-001", P, "CAP", "capabilities() makes no control-plane request", CK_ADMIN, false, cap_001},
	{"CAP-002", P, "CAP", "declared capabilities are well formed; gate decisions shown", 0, false, cap_002},
	{"CAP-003", P, "CAP", "hardware-virtualized claim: successful runs execute in a guest", CK_ADMIN, false, cap_003},
	{"CAP-004", P, "CAP", "deny-all claim: network-off guest denies every probe, or refusal before create", CK_ADMIN, false, cap_004},
	{"CAP-005", P, "CAP", "domain-allowlist claim: guest admits exactly the allowed names", CK_ADMIN, false, cap_005},
	{"REF-001", P, "REF", "refusals happen before any mutating control-plane request", CK_ADMIN, false, ref_001},
	{"REF-002", P, "REF", "every refusal is SandboxUnavailableError naming the setting", 0, false, ref_002},
	{"REF-003", P, "REF", "timeout above a declared cap is refused; equal to the cap runs", 0, false, ref_003},
	{"FB-001", P, "FB", "no fallback: control plane down", 0, false, fb_check},
	{"FB-002", P, "FB", "no fallback: 401", CK_FAULTS, false, fb_check},
	{"FB-003", P, "FB", "no fallback: 402", CK_FAULTS, false, fb_check},
	{"FB-004", P, "FB", "no fallback: 403 over the account cap", CK_FAULTS, false, fb_check},
	{"FB-005", P, "FB", "no fallback: 429", CK_FAULTS, false, fb_check},
	{"FB-006", P, "FB", "no fallback: 500", CK_FAULTS, false, fb_check},
	{"FB-007", P, "FB", "no fallback: 503", CK_FAULTS, false, fb_check},
	{"FB-008", P, "FB", "no fallback: connection reset", CK_FAULTS, false, fb_check},
	{"FB-009", P, "FB", "no fallback: hang past the timeout", CK_FAULTS, false, fb_check},
	{"FB-010", P, "FB", "no fallback: malformed JSON", CK_FAULTS, false, fb_check},
	{"FB-011", P, "FB", "no fallback: truncated body", CK_FAULTS, false, fb_check},
	{"FB-012", P, "FB", "no fallback: empty 200", CK_FAULTS, false, fb_check},
	{"FB-013", P, "FB", "no fallback: fail envelope", CK_FAULTS, false, fb_check},
	{"CLN-001", P, "CLN", "no guest left after success, user error, timeout, infrastructure fault", CK_FAULTS, false, cln_001},
	{"CLN-002", P, "CLN", "a fault on delete is reported and leaves at most that guest", CK_FAULTS, false, cln_002},
	{"CLN-003", P, "CLN", "shutdown() twice raises nothing and leaves no guest", 0, false, cln_003},
	{"CLN-004", P, "CLN", "a lost create answer leaves no orphan", CK_FAULTS, true, cln_004},
	{"RES-001", P, "RES", "stdout, stderr and exit code byte-exact (UTF-8, 1 MiB, non-zero)", 0, false, res_001},
	{"RES-002", P, "RES", "a run past its timeout returns -1 within the slack; guest gone", 0, false, res_002},
	{"RES-003", P, "RES", "a guest killed for memory returns 137", CK_FAULTS, false, res_003},
	{"RES-004", P, "RES", "env reaches the code", 0, false, res_004},
	{"CON-001", P, "CON", "concurrent runs: all succeed, outputs not mixed, N created and N deleted", CK_ADMIN, false, con_001},
	{"CON-002", P, "CON", "fork_check: the child runs after reset_after_fork on connections of its own; the parent still works", 0, false, con_002},
};
const size_t cf_checks_backend_count = sizeof(cf_checks_backend) / sizeof(cf_checks_backend[0]);

/* checks_createos: the CreateOS specifics (createos-backend), the "CreateOS
 * Sandbox" component (createos-component) and the whole-flow executor
 * (createos-executor).
 *
 * Reads what was sent from the mock's state (create bodies are visible as
 * sandbox views) and the journal; never trusts what the driver says it sent. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checks.h"
#include "sbx/driver.h"

static bool name_like(const char *name, const char *re)
{
	regex_t rx;
	bool ok;

	if (name == NULL || regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) != 0)
		return false;
	ok = regexec(&rx, name, 0, NULL, 0) == 0;
	regfree(&rx);
	return ok;
}

static cJSON *run_ok(struct cf_case *c, struct cf_driver *d, const char *label, const char *code)
{
	const char *et, *em;
	cJSON *res = cf_run(d, code, NULL, CF_RUN_T, &et, &em);

	if (res == NULL && !cf_driver_broken(d))
		cf_fail(c, "%s: the run raised %s: %s", label, et, em);
	return res;
}

/* ---- CREATEOS ---- */

static void egress_case(struct cf_case *c, const char *net, const char *const *want, size_t n)
{
	char env0[64];
	const char *env[] = {env0, NULL};
	struct cf_driver *d;
	cJSON *res, *sbs;
	const cJSON *sb;
	char *flat;

	snprintf(env0, sizeof(env0), "LANGFLOW_SANDBOX_ALLOW_NETWORK=%s", net);
	d = cf_start(c, env);
	if (d == NULL)
		return;
	res = run_ok(c, d, net, "print('egress')\n");
	cJSON_Delete(res);
	if (res == NULL)
		return;
	sbs = cf_sandboxes(c);
	sb = cf_find_sandbox(sbs, NULL);
	if (sb == NULL) {
		cf_fail(c, "network %s: no guest was created", net);
	} else if (!cf_json_str_array_is(cJSON_GetObjectItemCaseSensitive(sb, "egress"), want, n)) {
		flat = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(sb, "egress"));
		cf_fail(c, "ALLOW_NETWORK=%s sent egress %s, expected [\"%s\"]", net, flat ? flat : "(none)", want[0]);
		free(flat);
	}
	cJSON_Delete(sbs);
	cf_driver_stop(d);
}

void ck_cos_001(struct cf_case *c)
{
	static const char *const off[] = {"240.0.0.0/4"};
	static const char *const on[] = {"*"};

	egress_case(c, "false", off, 1);
	egress_case(c, "true", on, 1);
}

void ck_cos_002(struct cf_case *c)
{
	static const char *const env[] = {"LANGFLOW_SANDBOX_ALLOWED_DOMAINS=pypi.org",
					  "LANGFLOW_SANDBOX_ALLOW_NETWORK=true", NULL};
	struct cf_driver *d = cf_start(c, env);
	const char *et, *em;
	cJSON *res, *j;

	if (d == NULL)
		return;
	res = cf_run(d, "print('domains')\n", NULL, CF_RUN_T, &et, &em);
	if (res != NULL)
		cf_fail(c, "allowed domains set, but the run went ahead");
	else if (strcmp(et, "SandboxUnavailableError") != 0)
		cf_fail(c, "allowed domains refused with %s, not SandboxUnavailableError", et);
	j = cf_journal(c);
	if (j != NULL && cf_journal_count(j, "POST", "/v1/sandboxes", 0, 999) > 0)
		cf_fail(c, "allowed domains set, yet %d create request(s) were sent",
			cf_journal_count(j, "POST", "/v1/sandboxes", 0, 999));
	cf_keep_journal(c, j);
	cJSON_Delete(res);
}

void ck_cos_003(struct cf_case *c)
{
	static const struct {
		const char *value; /* NULL = unset */
		bool runs;
	} cases[] = {{NULL, false}, {"false", false}, {"0", false}, {" Yes ", true}, {"T", true}};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char kv[96];
		const char *env[] = {"LANGFLOW_SANDBOX_ALLOW_NETWORK=false", kv, NULL};
		struct cf_driver *d;
		const char *et, *em;
		cJSON *before, *after, *res;

		if (cases[i].value != NULL)
			snprintf(kv, sizeof(kv), "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS=%s", cases[i].value);
		else
			snprintf(kv, sizeof(kv), "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS");
		d = cf_start(c, env);
		if (d == NULL)
			return;
		before = cf_journal(c);
		res = cf_run(d, "print('accept')\n", NULL, CF_RUN_T, &et, &em);
		after = cf_journal(c);
		if (cases[i].runs && res == NULL)
			cf_fail(c, "accept variable \"%s\": the run was refused: %s: %s", cases[i].value, et, em);
		if (!cases[i].runs && res != NULL)
			cf_fail(c, "network off with the accept variable %s%s%s: the run went ahead",
				cases[i].value ? "\"" : "", cases[i].value ? cases[i].value : "unset",
				cases[i].value ? "\"" : "");
		if (!cases[i].runs && res == NULL &&
		    cf_journal_count(after, "POST", "/v1/sandboxes", 0, 999) >
			    cf_journal_count(before, "POST", "/v1/sandboxes", 0, 999))
			cf_fail(c, "accept variable %s: refused only after creating a guest",
				cases[i].value ? cases[i].value : "unset");
		cJSON_Delete(res);
		cJSON_Delete(before);
		cJSON_Delete(after);
		cf_driver_stop(d);
	}
}

void ck_cos_004(struct cf_case *c)
{
	cJSON *rule = cJSON_Parse("{\"name\":\"CREATEOS-004 503 once\",\"match\":{\"method\":\"POST\","
				  "\"path\":\"/v1/sandboxes\"},\"fire\":{\"times\":1},"
				  "\"action\":{\"kind\":\"http\",\"status\":503}}");
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res, *j;
	int n;

	if (cf_fault(c, rule) != 0)
		return;
	d = cf_start(c, NULL);
	if (d == NULL)
		return;
	res = cf_run(d, "print('retry?')\n", NULL, CF_RUN_T, &et, &em);
	if (res != NULL)
		cf_fail(c, "one 503 on create, yet the run succeeded (was the create retried?)");
	j = cf_journal(c);
	n = cf_journal_count(j, "POST", "/v1/sandboxes", 0, 999);
	if (n != 1)
		cf_fail(c, "%d create attempts after one injected 503; the integration never retries", n);
	cf_keep_journal(c, j);
	cJSON_Delete(res);
}

void ck_cos_005(struct cf_case *c)
{
	cJSON *body = cJSON_CreateObject();
	cJSON *t, *hold;
	sbx_err err = {{0}};
	struct cf_driver *d;
	const char *et, *em;
	double t0, el;
	cJSON *res = NULL, *j;

	cJSON_AddStringToObject(body, "key", c->key);
	cJSON_AddNumberToObject(body, "cap", 1);
	t = cf_admin(c->cf, "POST", "/_mock/tenants", body, &err);
	cJSON_Delete(body);
	if (t == NULL) {
		cf_error(c, "harness: cannot set the tenant's cap: %s", err.msg);
		return;
	}
	cJSON_Delete(t);
	body = cJSON_Parse("{\"shape\":\"s-1vcpu-1gb\",\"name\":\"conform-hold\",\"auto_pause_after_seconds\":600}");
	hold = cf_api(c, "POST", "/v1/sandboxes", body, NULL, &err);
	cJSON_Delete(body);
	if (hold == NULL) {
		cf_error(c, "harness: cannot fill the account cap: %s", err.msg);
		return;
	}
	cf_allow_leftover(c, cf_str(hold, "id"));
	cJSON_Delete(hold);
	d = cf_start(c, NULL);
	if (d == NULL)
		return;
	t0 = cf_now_ms();
	res = cf_run(d, "print('over the cap')\n", NULL, CF_RUN_T, &et, &em);
	el = cf_now_ms() - t0;
	cf_detail(c, "over the cap: answered after %.0f ms", el);
	if (res != NULL)
		cf_fail(c, "over the account cap, yet the run succeeded");
	if (el > 3000 * c->cf->timeout_scale)
		cf_fail(c, "over the account cap, the run took %.1f s to fail: it waited or queued", el / 1000);
	j = cf_journal(c);
	/* the harness's own create (the one that fills the cap) is not counted */
	if (cf_journal_count(j, "POST", "/v1/sandboxes", 0, 999) != 1)
		cf_fail(c, "%d create attempts by the backend over the cap (expected exactly 1)",
			cf_journal_count(j, "POST", "/v1/sandboxes", 0, 999));
	cf_keep_journal(c, j);
	cJSON_Delete(res);
}

/* The smallest shape with at least need MiB, from the control plane. */
static void expected_shape(struct cf_case *c, long need, char *out, size_t cap)
{
	sbx_err err = {{0}};
	cJSON *d = cf_api(c, "GET", "/v1/shapes?limit=500", NULL, NULL, &err);
	const cJSON *sh;
	double best = 0, bcpu = 0;

	out[0] = '\0';
	cJSON_ArrayForEach(sh, cJSON_GetObjectItemCaseSensitive(d, "data")) {
		double m = cf_num(sh, "mem_mib", 0), v = cf_num(sh, "vcpu", 0);

		if (m < (double)need)
			continue;
		if (out[0] == '\0' || m < best || (m == best && v < bcpu)) {
			best = m;
			bcpu = v;
			snprintf(out, cap, "%s", cf_s0(cf_str(sh, "id")));
		}
	}
	cJSON_Delete(d);
}

/* One CREATEOS-006 case: the driver started with these settings either
 * runs on the expected shape with auto_pause_after_seconds = max(60, t+120),
 * or (refuse != NULL, the reason) refuses with SandboxUnavailableError before
 * any create. need is the MiB the automatic choice must reach. */
struct shape_want {
	const char *timeout, *memory, *pin;
	long need;
	const char *refuse;
};

static void shape_refused(struct cf_case *c, const struct shape_want *w, cJSON *res, int creates_before,
			  const char *et, const char *em)
{
	cJSON *j = cf_journal(c);

	if (res != NULL)
		cf_fail(c, "pinned shape %s at memory %s: %s, yet the run went ahead", w->pin,
			w->memory ? w->memory : "default", w->refuse);
	else if (cf_journal_count(j, "POST", "/v1/sandboxes", 0, 999) > creates_before)
		cf_fail(c, "pinned shape %s (%s): refused only after a create", w->pin, w->refuse);
	else if (strcmp(et, "SandboxUnavailableError") != 0)
		cf_fail(c, "pinned shape %s (%s): refused with %s, not SandboxUnavailableError: %s", w->pin,
			w->refuse, et, em);
	else
		cf_detail(c, "pinned shape %s (%s) refused: %s: %s", w->pin, w->refuse, et, em);
	cJSON_Delete(j);
}

static void shape_case(struct cf_case *c, const struct shape_want *w)
{
	char e1[64], e2[64], e3[96], want[64];
	const char *env[4] = {NULL, NULL, NULL, NULL};
	size_t k = 0;
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res, *sbs, *j;
	const cJSON *sb;
	long t = strtol(w->timeout, NULL, 10);
	long pause = t + 120 > 60 ? t + 120 : 60;
	const char *mem = w->memory ? w->memory : "default";
	int creates_before;

	snprintf(e1, sizeof(e1), "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=%s", w->timeout);
	env[k++] = e1;
	if (w->memory != NULL) {
		snprintf(e2, sizeof(e2), "LANGFLOW_SANDBOX_MEMORY_MB=%s", w->memory);
		env[k++] = e2;
	}
	if (w->pin != NULL) {
		snprintf(e3, sizeof(e3), "CREATEOS_SANDBOX_SHAPE=%s", w->pin);
		env[k++] = e3;
	}
	j = cf_journal(c);
	creates_before = cf_journal_count(j, "POST", "/v1/sandboxes", 0, 999);
	cJSON_Delete(j);
	d = cf_start(c, env);
	if (d == NULL)
		return;
	res = cf_run(d, "print('shape')\n", NULL, CF_RUN_T, &et, &em);
	if (w->refuse != NULL) {
		shape_refused(c, w, res, creates_before, et, em);
		goto out;
	}
	if (res == NULL) {
		cf_fail(c, "timeout %s memory %s shape %s: the run raised %s: %s", w->timeout, mem,
			w->pin ? w->pin : "auto", et, em);
		goto out;
	}
	if (w->pin != NULL)
		snprintf(want, sizeof(want), "%s", w->pin);
	else
		expected_shape(c, w->need, want, sizeof(want));
	sbs = cf_sandboxes(c);
	sb = cf_find_sandbox(sbs, NULL);
	if (sb == NULL) {
		cf_fail(c, "no guest was created");
	} else {
		if (cf_num(sb, "auto_pause_after_seconds", -1) != (double)pause)
			cf_fail(c, "timeout %s: auto_pause_after_seconds %g, expected max(60, %ld+120) = %ld", w->timeout,
				cf_num(sb, "auto_pause_after_seconds", -1), t, pause);
		if (w->pin != NULL && strcmp(cf_s0(cf_str(sb, "shape")), want) != 0)
			cf_fail(c, "memory %s, CREATEOS_SANDBOX_SHAPE=%s: the guest got shape %s, not the pinned one", mem, w->pin, cf_s0(cf_str(sb, "shape")));
		else if (strcmp(cf_s0(cf_str(sb, "shape")), want) != 0)
			cf_fail(c, "memory %s: shape %s, expected %s (smallest with >= %ld MiB)", mem,
				cf_s0(cf_str(sb, "shape")), want, w->need);
	}
	cJSON_Delete(sbs);
out:
	cJSON_Delete(res);
	cf_driver_stop(d);
}

/* The memory rule (spec, CreateOS backend surface): automatic choice =
 * smallest shape with max(memory_mb, 4096) MiB; a pin is refused only when
 * a non-empty catalog lacks it or it has fewer MiB than memory_mb. */
void ck_cos_006(struct cf_case *c)
{
	static const struct shape_want cases[] = {
		{"5", NULL, NULL, 4096, NULL},
		{"1", "6000", NULL, 6000, NULL},
		{"2", NULL, "s-8vcpu-16gb", 0, NULL},
		/* default memory_mb 192: the 1 GiB pin is enough and runs */
		{"2", NULL, "s-1vcpu-1gb", 0, NULL},
		{"2", "1024", "s-1vcpu-1gb", 0, NULL},
		{"2", "2048", "s-1vcpu-1gb", 0, "1024 MiB is fewer than memory_mb 2048"},
		{"2", NULL, "s-nonexistent-shape", 0, "not in the control plane's catalog"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		shape_case(c, &cases[i]);
}

void ck_cos_007(struct cf_case *c)
{
	struct cf_driver *d = cf_start(c, NULL);
	cJSON *j;
	int i, n;

	if (d == NULL)
		return;
	for (i = 0; i < 3; i++) {
		cJSON *res = run_ok(c, d, "whoami run", "print('again')\n");

		cJSON_Delete(res);
		if (res == NULL)
			return;
	}
	j = cf_journal(c);
	n = cf_journal_count(j, "GET", "/v1/whoami", 0, 999);
	if (n != 1)
		cf_fail(c, "3 runs in one process made %d whoami requests (expected one preflight)", n);
	cf_keep_journal(c, j);
}

/* ---- COMP ---- */


static bool need_surface(struct cf_case *c, const char *surface)
{
	if (!cf_surface(c->cf, surface)) {
		cf_skip(c, "surface not served: the driver does not announce \"%s\"", surface);
		return false;
	}
	return true;
}

static cJSON *comp(struct cf_case *c, struct cf_driver *d, const char *mode, const char *code, const char *reuse,
		   const char *flow, const char *component, bool net, bool files, const char **et, const char **em)
{
	cJSON *f = cJSON_CreateObject();
	cJSON *res;

	cJSON_AddStringToObject(f, "mode", mode);
	cJSON_AddStringToObject(f, "code", code);
	cJSON_AddStringToObject(f, "reuse", reuse);
	cJSON_AddStringToObject(f, "flow_id", flow);
	cJSON_AddStringToObject(f, "component_id", component);
	cJSON_AddBoolToObject(f, "allow_network", net);
	cJSON_AddBoolToObject(f, "return_files", files);
	res = cf_op(d, "component_run", f, CF_RUN_T, et, em);
	cJSON_Delete(f);
	return res;
}

void ck_comp_001(struct cf_case *c)
{
	static const struct {
		const char *mode, *code, *want;
		int exit;
	} runs[] = {
		{"python", "print('comp ok')\n", "comp ok\n", 0},
		{"python", "import sys\nprint('comp fails')\nsys.exit(2)\n", "comp fails\n", 2},
		{"shell", "echo shell ok; exit 4", "shell ok\n", 4},
	};
	struct cf_driver *d;
	size_t i;

	if (!need_surface(c, "component") || (d = cf_start(c, NULL)) == NULL)
		return;
	for (i = 0; i < 3; i++) {
		const char *et, *em;
		cJSON *res = comp(c, d, runs[i].mode, runs[i].code, "off", "flow-1", "comp-1", false, false, &et, &em);

		if (res == NULL) {
			if (!cf_driver_broken(d))
				cf_fail(c, "%s run %zu raised %s: %s%s", runs[i].mode, i, et, em, runs[i].exit != 0 ?
					" (a non-zero exit is a result, not an error: spec appendix, Component)" : "");
		} else {
			if (!cf_same_trimmed(cf_s0(cf_str(res, "stdout")), runs[i].want) ||
			    cf_num(res, "exit_code", -99) != runs[i].exit)
				cf_fail(c, "%s run %zu: stdout \"%.60s\" exit %g, expected \"%s\" (trimmed or not) exit %d", runs[i].mode, i,
					cf_s0(cf_str(res, "stdout")), cf_num(res, "exit_code", -99), runs[i].want, runs[i].exit);
		}
		cJSON_Delete(res);
		if (cf_live_count(c, runs[i].mode) > 0)
			cf_fail(c, "Guest Reuse off: the guest of %s run %zu was not deleted", runs[i].mode, i);
	}
}

static const char *guest_of(const cJSON *res)
{
	return cf_s0(cf_str(res, "guest_name"));
}

void ck_comp_002(struct cf_case *c)
{
	struct cf_driver *d;
	const char *et, *em;
	cJSON *r1, *r2, *r3 = NULL, *j;

	if (!need_surface(c, "component") || (d = cf_start(c, NULL)) == NULL)
		return;
	cf_allow_leftover(c, "lf-c-");
	r1 = comp(c, d, "python", "print('one')\n", "flow", "flow-A", "comp-A", false, false, &et, &em);
	r2 = r1 ? comp(c, d, "python", "print('two')\n", "flow", "flow-A", "comp-A", false, false, &et, &em) : NULL;
	if (r1 == NULL || r2 == NULL) {
		if (!cf_driver_broken(d))
			cf_fail(c, "Guest Reuse flow: a run raised %s: %s", et, em);
		goto out;
	}
	if (!name_like(guest_of(r1), "^lf-c-[0-9a-f]{17}$"))
		cf_fail(c, "reuse guest name \"%s\" is not lf-c- + 17 hex", guest_of(r1));
	if (strcmp(guest_of(r1), guest_of(r2)) != 0)
		cf_fail(c, "two runs of the same flow and component used guests %s and %s", guest_of(r1), guest_of(r2));
	if (!cf_same_trimmed(cf_s0(cf_str(r2, "stdout")), "two\n"))
		cf_fail(c, "second reuse run printed \"%.60s\"", cf_s0(cf_str(r2, "stdout")));
	r3 = comp(c, d, "python", "print('three')\n", "flow", "flow-A", "comp-B", false, false, &et, &em);
	if (r3 == NULL)
		cf_fail(c, "a run of another component raised %s: %s", et, em);
	else if (strcmp(guest_of(r3), guest_of(r1)) == 0)
		cf_fail(c, "another component id reused the same guest %s", guest_of(r1));
	j = cf_journal(c);
	if (cf_journal_count(j, "POST", "/v1/sandboxes", 200, 299) != 2)
		cf_fail(c, "%d creates for two components (expected 2: one per component)",
			cf_journal_count(j, "POST", "/v1/sandboxes", 200, 299));
	if (cf_journal_count(j, "DELETE", "/v1/sandboxes/{id}", 0, 999) != 0)
		cf_fail(c, "the plugin deleted a reuse guest");
	cf_keep_journal(c, j);
out:
	cJSON_Delete(r1);
	cJSON_Delete(r2);
	cJSON_Delete(r3);
}

static const char *sandbox_id_by_name(cJSON *sbs, const char *name)
{
	const cJSON *sb = cf_find_sandbox(sbs, name);

	return sb ? cf_str(sb, "id") : NULL;
}

static bool wait_status(struct cf_case *c, const char *id, const char *want)
{
	double until = cf_now_ms() + 5000;
	char path[128];

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	while (cf_now_ms() < until) {
		sbx_err err = {{0}};
		cJSON *v = cf_api(c, "GET", path, NULL, NULL, &err);
		bool ok = v != NULL && strcmp(cf_s0(cf_str(v, "status")), want) == 0;
		struct timespec ts = {0, 50000000};

		cJSON_Delete(v);
		if (ok)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

/* COMP-003's evidence when the run on the paused guest raised: what the
 * control plane answered to the component's resume, against the clause. */
static void resume_failed(struct cf_case *c, const char *et, const char *em)
{
	static const char clause[] = "control-plane-api.md, lifecycle: resume of a paused guest answers "
				     "202 with `resuming`, then `running`; backend-conformance.md, appendix: "
				     "the documented answer is 202 `resuming` (COMP-003)";
	cJSON *j = cf_journal(c);
	const char *pat = "/v1/sandboxes/{id}/resume";
	int all = cf_journal_count(j, "POST", pat, 0, 999);
	int s202 = cf_journal_count(j, "POST", pat, 202, 202);
	int s200 = cf_journal_count(j, "POST", pat, 200, 200);

	if (all == 0)
		cf_fail(c, "the run on a paused reuse guest raised %s: %s; the component sent no resume (%s)", et, em,
			clause);
	else if (s202 > 0)
		cf_fail(c, "the run on a paused reuse guest raised %s: %s; the control plane answered the resume with "
			"202 (`resuming`), the documented answer, and the component did not accept it (%s)", et, em,
			clause);
	else
		cf_fail(c, "the run on a paused reuse guest raised %s: %s; the control plane answered %d resume(s), "
			"%d with 200, none with 202 (%s)", et, em, all, s200, clause);
	cf_keep_journal(c, j);
}

void ck_comp_003(struct cf_case *c)
{
	struct cf_driver *d;
	const char *et, *em;
	char path[128];
	sbx_err err = {{0}};
	cJSON *r1, *r2 = NULL, *sbs = NULL, *p, *j;
	const char *id;

	if (!need_surface(c, "component") || (d = cf_start(c, NULL)) == NULL)
		return;
	cf_allow_leftover(c, "lf-c-");
	r1 = comp(c, d, "python", "print('before pause')\n", "flow", "flow-P", "comp-P", false, false, &et, &em);
	if (r1 == NULL) {
		cf_fail(c, "first reuse run raised %s: %s", et, em);
		return;
	}
	sbs = cf_sandboxes(c);
	id = sandbox_id_by_name(sbs, guest_of(r1));
	if (id == NULL) {
		cf_fail(c, "reuse guest %s not found", guest_of(r1));
		goto out;
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/pause", id);
	p = cf_api(c, "POST", path, NULL, NULL, &err);
	cJSON_Delete(p);
	if (p == NULL || !wait_status(c, id, "paused")) {
		cf_error(c, "harness: could not pause %s: %s", id, err.msg);
		goto out;
	}
	r2 = comp(c, d, "python", "print('after pause')\n", "flow", "flow-P", "comp-P", false, false, &et, &em);
	if (r2 == NULL) {
		resume_failed(c, et, em);
		goto out;
	}
	if (!cf_same_trimmed(cf_s0(cf_str(r2, "stdout")), "after pause\n"))
		cf_fail(c, "the run on the resumed guest printed \"%.60s\"", cf_s0(cf_str(r2, "stdout")));
	if (strcmp(guest_of(r2), guest_of(r1)) != 0)
		cf_fail(c, "a new guest %s was used instead of resuming %s", guest_of(r2), guest_of(r1));
	j = cf_journal(c);
	if (cf_journal_count(j, "POST", "/v1/sandboxes/{id}/resume", 200, 299) < 1)
		cf_fail(c, "the paused reuse guest was not resumed (no resume in the journal)");
	if (cf_journal_count(j, "POST", "/v1/sandboxes", 200, 299) != 1)
		cf_fail(c, "%d creates; the paused guest should have been reused",
			cf_journal_count(j, "POST", "/v1/sandboxes", 200, 299));
	cf_keep_journal(c, j);
out:
	cJSON_Delete(sbs);
	cJSON_Delete(r1);
	cJSON_Delete(r2);
}

void ck_comp_004(struct cf_case *c)
{
	struct cf_driver *d;
	const char *et, *em;
	char path[128];
	sbx_err err = {{0}};
	cJSON *r1, *r2 = NULL, *sbs = NULL, *p, *body, *j;
	const char *id;
	int execs;

	if (!need_surface(c, "component") || (d = cf_start(c, NULL)) == NULL)
		return;
	cf_allow_leftover(c, "lf-c-");
	r1 = comp(c, d, "python", "print('open')\n", "flow", "flow-D", "comp-D", true, false, &et, &em);
	if (r1 == NULL) {
		cf_fail(c, "first reuse run raised %s: %s", et, em);
		return;
	}
	sbs = cf_sandboxes(c);
	id = sandbox_id_by_name(sbs, guest_of(r1));
	if (id == NULL) {
		cf_fail(c, "reuse guest %s not found", guest_of(r1));
		goto out;
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/egress", id);
	body = cJSON_Parse("{\"egress\":[\"10.0.0.0/8\"]}");
	p = cf_api(c, "PUT", path, body, NULL, &err);
	cJSON_Delete(body);
	cJSON_Delete(p);
	if (p == NULL) {
		cf_error(c, "harness: could not change the guest's egress: %s", err.msg);
		goto out;
	}
	j = cf_journal(c);
	execs = cf_journal_count(j, "POST", "/v1/sandboxes/{id}/exec", 0, 999);
	cJSON_Delete(j);
	r2 = comp(c, d, "python", "print('drifted')\n", "flow", "flow-D", "comp-D", true, false, &et, &em);
	if (r2 != NULL)
		cf_fail(c, "the reuse guest's egress drifted to [10.0.0.0/8], yet it was reused");
	j = cf_journal(c);
	if (cf_journal_count(j, "POST", "/v1/sandboxes/{id}/exec", 0, 999) > execs && r2 == NULL)
		cf_fail(c, "refused only after executing in the drifted guest");
	if (cf_journal_count(j, "DELETE", "/v1/sandboxes/{id}", 0, 999) > 0)
		cf_fail(c, "the plugin deleted the reuse guest (it must never delete it)");
	cf_keep_journal(c, j);
out:
	cJSON_Delete(sbs);
	cJSON_Delete(r1);
	cJSON_Delete(r2);
}

static void sha_hex(const void *data, size_t n, char out[65])
{
	unsigned char d[32];

	sbxd_sha256(data, n, d);
	sbxd_hex(d, 32, out);
}

static const cJSON *file_named(const cJSON *files, const char *path)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, files)
		if (strcmp(cf_s0(cf_str(f, "path")), path) == 0)
			return f;
	return NULL;
}

void ck_comp_005(struct cf_case *c)
{
	static const char code[] =
		"import os\n"
		"os.makedirs('artifacts/sub', exist_ok=True)\n"
		"open('artifacts/a.txt', 'w').write('hello artifacts\\n')\n"
		"open('artifacts/sub/b.bin', 'wb').write(bytes(range(256)) * 4)\n"
		"print('wrote')\n";
	unsigned char bin[1024];
	char ha[65], hb[65];
	struct cf_driver *d;
	const char *et, *em;
	const cJSON *fa, *fb, *files;
	cJSON *res;
	int i;

	if (!need_surface(c, "component") || (d = cf_start(c, NULL)) == NULL)
		return;
	for (i = 0; i < 1024; i++)
		bin[i] = (unsigned char)(i % 256);
	sha_hex("hello artifacts\n", 16, ha);
	sha_hex(bin, sizeof(bin), hb);
	res = comp(c, d, "python", code, "off", "flow-F", "comp-F", false, true, &et, &em);
	if (res == NULL) {
		cf_fail(c, "Return Files run raised %s: %s", et, em);
		return;
	}
	files = cJSON_GetObjectItemCaseSensitive(res, "files");
	fa = file_named(files, "artifacts/a.txt");
	fb = file_named(files, "artifacts/sub/b.bin");
	if (fa == NULL || cf_num(fa, "size", -1) != 16 || strcmp(cf_s0(cf_str(fa, "sha256")), ha) != 0)
		cf_fail(c, "artifacts/a.txt missing or wrong (expected 16 bytes, sha256 %s)", ha);
	if (fb == NULL || cf_num(fb, "size", -1) != 1024 || strcmp(cf_s0(cf_str(fb, "sha256")), hb) != 0)
		cf_fail(c, "artifacts/sub/b.bin missing or wrong (expected 1024 bytes, sha256 %s)", hb);
	if (cJSON_GetArraySize(files) != 2)
		cf_fail(c, "%d files returned, expected 2", cJSON_GetArraySize(files));
	cJSON_Delete(res);
	if (cf_live_count(c, "after Return Files") > 0)
		cf_fail(c, "the Return Files run's guest was not deleted");
}

void ck_comp_006(struct cf_case *c)
{
	static const char many[] =
		"import os\nos.makedirs('artifacts', exist_ok=True)\n"
		"for i in range(300):\n    open('artifacts/f%03d.txt' % i, 'w').write('x' * 10)\n";
	static const char big[] =
		"import os\nos.makedirs('artifacts', exist_ok=True)\n"
		"open('artifacts/big.bin', 'wb').write(b'\\0' * (6 * 1024 * 1024))\n";
	struct cf_driver *d;
	const char *et, *em;
	const cJSON *f;
	cJSON *res;
	double total = 0;

	if (!need_surface(c, "component") || (d = cf_start(c, NULL)) == NULL)
		return;
	res = comp(c, d, "python", many, "off", "flow-C", "comp-C", false, true, &et, &em);
	if (res != NULL && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res, "files")) > 256)
		cf_fail(c, "%d files returned; the cap is 256",
			cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res, "files")));
	else
		cf_detail(c, "300 files: %s", res ? "capped" : em);
	cJSON_Delete(res);
	res = comp(c, d, "python", big, "off", "flow-C", "comp-C", false, true, &et, &em);
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(res, "files"))
		total += cf_num(f, "size", 0);
	if (total > 5.0 * 1024 * 1024)
		cf_fail(c, "%.0f bytes of files returned; the cap is 5 MiB", total);
	else
		cf_detail(c, "6 MiB file: %s", res ? "not returned in full" : em);
	cJSON_Delete(res);
	if (cf_live_count(c, "after the capped runs") > 0)
		cf_fail(c, "a capped Return Files run left its guest");
}

/* ---- EXEC ---- */

static cJSON *exec_run(struct cf_driver *d, const char *code, const char **et, const char **em)
{
	cJSON *f = cJSON_CreateObject();
	cJSON *res;

	cJSON_AddStringToObject(f, "code", code);
	cJSON_AddNullToObject(f, "allow_network");
	res = cf_op(d, "executor_run", f, CF_RUN_T, et, em);
	cJSON_Delete(f);
	return res;
}

void ck_exec_001(struct cf_case *c)
{
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res, *sbs;
	const cJSON *sb;

	if (!need_surface(c, "executor") || (d = cf_start(c, NULL)) == NULL)
		return;
	res = exec_run(d, "print('flow ran')\n", &et, &em);
	if (res == NULL) {
		cf_fail(c, "executor run raised %s: %s", et, em);
		return;
	}
	if (strcmp(cf_s0(cf_str(res, "stdout")), "flow ran\n") != 0)
		cf_fail(c, "executor stdout \"%.60s\"", cf_s0(cf_str(res, "stdout")));
	if (!name_like(guest_of(res), "^lf-x-[0-9a-f]+$"))
		cf_fail(c, "executor guest name \"%s\" is not lf-x-<hex>", guest_of(res));
	sbs = cf_sandboxes(c);
	sb = cf_find_sandbox(sbs, guest_of(res));
	if (sb == NULL)
		cf_fail(c, "no guest named %s was created", guest_of(res));
	else if (cf_status_live(cf_str(sb, "status")))
		cf_fail(c, "executor guest %s is still %s after the run", guest_of(res), cf_str(sb, "status"));
	cJSON_Delete(sbs);
	cJSON_Delete(res);
}

void ck_exec_002(struct cf_case *c)
{
	cJSON *rule;
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res;

	if (!need_surface(c, "executor") || (d = cf_start(c, NULL)) == NULL)
		return;
	res = exec_run(d, "import sys\nsys.exit(1)\n", &et, &em);
	if (res != NULL && cf_num(res, "exit_code", 0) != 1)
		cf_fail(c, "a failing flow returned exit %g, expected 1", cf_num(res, "exit_code", 0));
	cJSON_Delete(res);
	if (cf_live_count(c, "after a failing flow") > 0)
		cf_fail(c, "a failing flow's guest was not deleted");
	rule = cJSON_Parse("{\"name\":\"EXEC-002 exec 500\",\"match\":{\"method\":\"POST\","
			   "\"path\":\"/v1/sandboxes/{id}/exec\"},\"fire\":{\"times\":1},"
			   "\"action\":{\"kind\":\"http\",\"status\":500}}");
	if (cf_fault(c, rule) != 0)
		return;
	res = exec_run(d, "print('never')\n", &et, &em);
	if (res != NULL)
		cf_fail(c, "exec answered 500, yet the executor run succeeded");
	cJSON_Delete(res);
	if (cf_live_count(c, "after an infrastructure fault") > 0)
		cf_fail(c, "after an infrastructure fault the executor guest was not deleted");
}

void ck_exec_003(struct cf_case *c)
{
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res, *sbs;
	const cJSON *sb, *eg, *x;
	bool open = false;

	if (!need_surface(c, "executor") || (d = cf_start(c, NULL)) == NULL)
		return;
	res = exec_run(d, "print('net')\n", &et, &em);
	if (res == NULL) {
		cf_fail(c, "executor run raised %s: %s", et, em);
		return;
	}
	sbs = cf_sandboxes(c);
	sb = cf_find_sandbox(sbs, guest_of(res));
	eg = cJSON_GetObjectItemCaseSensitive(sb, "egress");
	if (sb == NULL) {
		cf_fail(c, "no executor guest found");
		goto out;
	}
	open = eg == NULL || cJSON_IsNull(eg) || cJSON_GetArraySize(eg) == 0;
	cJSON_ArrayForEach(x, eg)
		if (cJSON_IsString(x) && strcmp(x->valuestring, "*") == 0)
			open = true;
	if (!open) {
		char *flat = cJSON_PrintUnformatted(eg);

		cf_fail(c, "executor guest egress %s is not open by default", flat ? flat : "?");
		free(flat);
	}
out:
	cJSON_Delete(sbs);
	cJSON_Delete(res);
}

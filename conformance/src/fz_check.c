/* fz_check: the backend fuzzer's invariants, judged after every input from
 * the runs' answers, the tenant's journal and sandboxes (conformance
 * library helpers: cf_journal_count, cf_status_live) and the settings as
 * the gate library parses them (sbx_gate_settings_parse). Each broken
 * invariant abort()s after printing what broke and everything needed to
 * replay it: the input, the settings as export lines, the fault plan, the
 * answers, the journal and the driver's stderr.
 *
 *   0 protocol:  every op gets a protocol answer (no crash, hang, garbage);
 *                capabilities() and hello do no control-plane I/O (CAP-001)
 *   1 refusal:   what the settings make unrunnable is refused with
 *                SandboxUnavailableError and no create reached the mock; a
 *                raise with no fault fired is a refusal, so the same holds
 *                (REF-001, REF-002, CREATEOS-002/003/006)
 *   2 fallback:  the trip-wire never appears, the canary never prints (FB)
 *   3 cleanup:   no guest of the tenant left live after the runs and
 *                shutdown(), except one whose failed DELETE was reported
 *                (raised, or named on stderr: CLN-002) and the documented
 *                lost-create-answer orphan (counted; fatal with
 *                SBX_FUZZ_ORPHAN_FATAL=1)
 *   4 results:   with no fault fired, a runnable input succeeds; with no
 *                exec fault, stdout/stderr/exit are exact, a timeout is -1,
 *                an exec_oom kill 137; an http fault maps to
 *                SandboxUnavailableError (4xx but 429) or
 *                SandboxExecutionError (429, 5xx); createos-backend: each
 *                run sends create at most once, no whoami starts after one
 *                completed successfully in the process (racing first calls
 *                of concurrent runs allowed, at most one a run), the
 *                guest's egress and auto-pause as the spec says (CREATEOS-001,
 *                004, 006, 007). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "fz.h"
#include "sbx/gate.h"

static unsigned long orphans; /* documented lost-create orphans seen (counted) */

void (*fz_on_finding)(void);

/* fz_check_report's mode: a broken invariant is reported, not abort()ed. */
static struct {
	bool on;
	jmp_buf back;
	FILE *out;
	char *inv, *why;
	size_t inv_cap, why_cap;
} R;

struct model {
	/* a value Langflow rejects at start-up (spec, "Who checks settings"): no
	 * backend ever receives it, so a run with it is judged only on no
	 * fallback and cleanup, never required to refuse (REF-002) */
	bool settings_error;
	bool refuse;           /* must refuse before anything is created */
	bool refuse_preflight; /* refused, but only after the shape preflight */
	bool ambiguous;        /* the spec does not settle success or refusal */
	bool unreachable;      /* the control plane is a dead port */
	bool network;
	long timeout;
	char why[SBX_ERR_MAX + 64];
};

/* ---- reporting ---- */

static void dump_json(FILE *err, const char *label, const cJSON *j)
{
	char *s = j != NULL ? cJSON_PrintUnformatted(j) : NULL;

	fprintf(err, "%s: %.3000s%s\n", label, s != NULL ? s : "null",
		s != NULL && strlen(s) > 3000 ? "... (cut)" : "");
	free(s);
}

static void dump_journal(FILE *err, const cJSON *j)
{
	int n = cJSON_GetArraySize(j), i;

	fprintf(err, "journal (%d entries, last 60):\n", n);
	for (i = n > 60 ? n - 60 : 0; i < n; i++) {
		const cJSON *e = cJSON_GetArrayItem(j, i);

		fprintf(err, "  #%d %s %s -> %g%s%s\n", i, cf_str(e, "method") ? cf_str(e, "method") : "?",
			cf_str(e, "path") ? cf_str(e, "path") : "?", cf_num(e, "status", 0),
			cf_str(e, "fault") ? " fault " : "", cf_str(e, "fault") ? cf_str(e, "fault") : "");
	}
}

__attribute__((noreturn, format(printf, 4, 5)))
static void broken(const struct fz_input *in, const struct fz_outcome *o, const char *inv, const char *fmt, ...)
{
	cJSON *sc = fz_scenario(in, "backend-fuzzer-finding");
	va_list ap;
	unsigned r;
	FILE *err = R.on ? R.out : stderr;

	if (R.on) {
		snprintf(R.inv, R.inv_cap, "%s", inv);
		va_start(ap, fmt);
		vsnprintf(R.why, R.why_cap, fmt, ap);
		va_end(ap);
		if (err == NULL) {
			cJSON_Delete(sc);
			longjmp(R.back, 1);
		}
	}
	fprintf(err, "\n==== backend_fuzzer: invariant broken: %s ====\n", inv);
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fprintf(err, "\nbackend: %s (profile %s)\ninput: ", o->backend_cmd, o->profile);
	fz_describe(err, in);
	fprintf(err, "settings (as export lines):\n");
	fz_print_exports(err, in, o->mock_url, o->key);
	dump_json(err, "scenario (sbx-mock --scenario FILE)", sc);
	cJSON_Delete(sc);
	for (r = 0; r < in->nruns; r++) {
		if (o->runs[r].result != NULL)
			dump_json(err, r == 0 ? "run 0 result" : r == 1 ? "run 1 result" : "run 2 result", o->runs[r].result);
		else
			fprintf(err, "run %u raised %s: %s\n", r, o->runs[r].etype, o->runs[r].emsg);
	}
	dump_journal(err, o->journal);
	dump_json(err, "sandboxes", o->sandboxes);
	if (o->after_shutdown != NULL)
		dump_json(err, "sandboxes after shutdown()", o->after_shutdown);
	fprintf(err, "driver stderr during the input:\n%.4000s\n", o->stderr_tail ? o->stderr_tail : "");
	fprintf(err, "replay: sbx-conform --fuzz-case FILE --backend-cmd CMD runs it as check FUZZ-CASE "
		"(build/*/fuzz/backend_scenario FILE prints that as a script)\n");
	fprintf(err, "==== end of finding (%s) ====\n", inv);
	fflush(err);
	if (R.on)
		longjmp(R.back, 1);
	if (fz_on_finding != NULL)
		fz_on_finding();
	abort();
}

/* ---- the journal ---- */

/* The kind of the fuzzer's fault that fired on entry e ("fz<i>:<kind>"),
 * or NULL. */
static const char *fault_kind(const cJSON *e)
{
	const char *f = cf_str(e, "fault");
	const char *colon = f != NULL ? strchr(f, ':') : NULL;

	return colon != NULL ? colon + 1 : f;
}

static bool path_is(const cJSON *e, const char *method, const char *pattern)
{
	cJSON *one = cJSON_CreateArray();
	int n;

	cJSON_AddItemReferenceToArray(one, (cJSON *)e);
	n = cf_journal_count(one, method, pattern, 0, 999);
	cJSON_Delete(one);
	return n > 0;
}

static bool is_exec(const cJSON *e)
{
	return path_is(e, "POST", "/v1/sandboxes/{id}/exec");
}

/* Non-benign faults fired in [lo, hi). */
static int harmful(const cJSON *j, int lo, int hi)
{
	int i, n = 0;

	for (i = lo; i < hi; i++) {
		const char *k = fault_kind(cJSON_GetArrayItem(j, i));

		if (k != NULL && !fz_kind_benign(k))
			n++;
	}
	return n;
}

/* A fault in [lo, hi) that can change what the exec returned: one on an
 * exec, or one that kills guests or connections. */
static bool exec_disturbed(const cJSON *j, int lo, int hi)
{
	int i;

	for (i = lo; i < hi; i++) {
		const cJSON *e = cJSON_GetArrayItem(j, i);
		const char *k = fault_kind(e);

		if (k == NULL || fz_kind_benign(k))
			continue;
		if (is_exec(e) || strcmp(k, "host_dies") == 0 || strcmp(k, "cp_restart") == 0)
			return true;
	}
	return false;
}

static int mutating(const cJSON *j, int lo, int hi)
{
	return fz_journal_count(j, lo, hi, "POST", "/v1/sandboxes", 0, 999) +
	       fz_journal_count(j, lo, hi, "POST", "/v1/sandboxes/{id}/*", 0, 999) +
	       fz_journal_count(j, lo, hi, "PUT", "/v1/sandboxes/*", 0, 999) +
	       fz_journal_count(j, lo, hi, "PATCH", "/v1/sandboxes/*", 0, 999);
}

/* ---- the settings model ---- */

static void model_shape(const struct fz_outcome *o, const sbx_gate_settings *g, struct model *m)
{
	long mem = (long)g->memory_mb, need = mem > 4096 ? mem : 4096; /* the automatic choice's floor */
	const cJSON *sh;
	double best = 0;
	bool found = false;

	cJSON_ArrayForEach(sh, o->shapes) {
		double mm = cf_num(sh, "mem_mib", 0);

		if (g->createos_shape != NULL) {
			if (strcmp(cf_str(sh, "id") ? cf_str(sh, "id") : "", g->createos_shape) != 0)
				continue;
			found = true;
			if (mm < (double)mem) {
				m->refuse_preflight = true;
				snprintf(m->why, sizeof(m->why), "pinned shape %s has %.0f MiB < memory %ld",
					 g->createos_shape, mm, mem);
			}
			/* a pin with at least memory_mb runs, below the automatic
			 * 4096 MiB floor too (CREATEOS-006; mutant pin-keeps-floor) */
		} else if (mm > best) {
			best = mm;
		}
	}
	if (g->createos_shape != NULL && !found && cJSON_GetArraySize(o->shapes) > 0) {
		m->refuse_preflight = true;
		snprintf(m->why, sizeof(m->why), "pinned shape %s is not in the catalog", g->createos_shape);
	}
	if (g->createos_shape == NULL && best < (double)need) {
		m->refuse_preflight = true;
		snprintf(m->why, sizeof(m->why), "no shape has %ld MiB", need);
	}
}

/* The driver's environment as the runner builds it, then the input's. */
static void model_of(const struct fz_input *in, const struct fz_outcome *o, struct model *m)
{
	const char *over[20];
	char buf[2048];
	const char *env[32];
	char k1[160];
	size_t n = 0, i, t;
	sbx_gate_settings g;
	sbx_gate_setting_error err;

	memset(m, 0, sizeof(*m));
	snprintf(k1, sizeof(k1), "CREATEOS_SANDBOX_API_KEY=%s", o->key);
	env[n++] = k1;
	env[n++] = "LANGFLOW_SANDBOX_BACKEND=createos";
	env[n++] = "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=10";
	env[n++] = "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS=true";
	fz_settings_env(in, "http://127.0.0.1:9", o->key, over, buf, sizeof(buf));
	for (i = 0; over[i] != NULL; i++) {
		size_t len = strcspn(over[i], "=");

		for (t = 0; t < n; t++) /* an override replaces or removes the default */
			if (strncmp(env[t], over[i], len) == 0 && env[t][len] == '=')
				env[t] = strchr(over[i], '=') != NULL ? over[i] : "_REMOVED";
		if (strchr(over[i], '=') != NULL) {
			for (t = 0; t < n; t++)
				if (env[t] == over[i])
					break;
			if (t == n)
				env[n++] = over[i];
		}
	}
	m->unreachable = in->url == FZ_N_URL - 1;
	m->timeout = fz_timeout_s(in);
	if (sbx_gate_settings_parse(&g, env, n, &err) != 0) {
		m->settings_error = m->ambiguous = true; /* not a refusal: any outcome, judged by fallback and cleanup */
		snprintf(m->why, sizeof(m->why), "a setting Langflow rejects at start-up: %s", err.message);
		return;
	}
	/* a component call says allow_network itself (false in these inputs):
	 * its guest's network, and so the refusal rules, follow the call */
	m->network = in->surface == FZ_SURF_COMPONENT ? false : g.allow_network;
	if (o->createos) {
		if (g.n_allowed_domains > 0) {
			m->refuse = true;
			snprintf(m->why, sizeof(m->why), "LANGFLOW_SANDBOX_ALLOWED_DOMAINS is set (CreateOS cannot enforce it)");
		} else if (!m->network && !g.createos_accept_egress_exceptions) {
			m->refuse = true;
			snprintf(m->why, sizeof(m->why), "network off without LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS");
		} else if (g.createos_api_key == NULL) {
			m->refuse = true;
			snprintf(m->why, sizeof(m->why), "no API key");
		} else if (!m->unreachable) {
			model_shape(o, &g, m);
		}
	} else if (g.n_allowed_domains > 0 || !m->network || g.createos_api_key == NULL) {
		/* backend-specific rules (allowlist, deny-all, key) decide */
		m->ambiguous = true;
	}
	sbx_gate_settings_free(&g);
}

/* ---- per run ---- */

static bool http_status_fault(const cJSON *j, int lo, int hi, int *status, const char **path)
{
	int i, n = 0;

	for (i = lo; i < hi; i++) {
		const cJSON *e = cJSON_GetArrayItem(j, i);
		const char *k = fault_kind(e);

		if (k == NULL || fz_kind_benign(k))
			continue;
		if (++n > 1 || strcmp(k, "http") != 0)
			return false;
		*status = (int)cf_num(e, "status", 0);
		*path = cf_str(e, "path");
		if (path_is(e, "GET", "/v1/whoami") || path_is(e, "GET", "/v1/shapes") ||
		    path_is(e, "DELETE", "/v1/sandboxes/{id}"))
			return false; /* preflight (its own rules) and delete (may be logged) */
	}
	return n == 1 && *status >= 400;
}

static void check_refusal(const struct fz_input *in, const struct fz_outcome *o, const struct model *m, unsigned r)
{
	const struct fz_run_out *ro = &o->runs[r];
	int hi = ro->j_hi;

	if (!(m->refuse || m->refuse_preflight))
		return;
	if (ro->result != NULL)
		broken(in, o, "1 refusal", "run %u ran (exit %g) although it must be refused: %s", r,
		       cf_num(ro->result, "exit_code", 0), m->why);
	if (fz_journal_count(o->journal, 0, hi, "POST", "/v1/sandboxes", 0, 999) > 0)
		broken(in, o, "1 refusal", "run %u: a create reached the control plane although the run must be "
		       "refused before anything is created: %s", r, m->why);
	if (m->refuse_preflight && harmful(o->journal, 0, hi) > 0)
		return; /* a fault on the preflight may decide the error class first */
	if (strcmp(ro->etype, "SandboxUnavailableError") != 0)
		broken(in, o, "1 refusal", "run %u: refused with %s, not SandboxUnavailableError (%s): %s", r,
		       ro->etype, m->why, ro->emsg);
}

/* A raise with no fault fired anywhere before it: a refusal, or a bug. */
static void check_unexplained(const struct fz_input *in, const struct fz_outcome *o, const struct model *m,
			      unsigned r)
{
	const struct fz_run_out *ro = &o->runs[r];

	if (ro->result != NULL || m->refuse || m->refuse_preflight || harmful(o->journal, 0, ro->j_hi) > 0)
		return;
	if (m->unreachable) {
		if (o->createos && strcmp(ro->etype, "SandboxUnavailableError") != 0)
			broken(in, o, "4 results", "run %u: an unreachable control plane raised %s, not "
			       "SandboxUnavailableError: %s", r, ro->etype, ro->emsg);
		return;
	}
	if (o->createos && !m->ambiguous)
		broken(in, o, "4 results", "run %u raised %s with no fault injected and settings that must run: %s",
		       r, ro->etype, ro->emsg);
	if (strcmp(ro->etype, "SandboxUnavailableError") != 0)
		broken(in, o, "1 refusal", "run %u raised %s with no fault injected; a refusal must be "
		       "SandboxUnavailableError: %s", r, ro->etype, ro->emsg);
	if (mutating(o->journal, ro->j_lo, ro->j_hi) > 0)
		broken(in, o, "1 refusal", "run %u refused (%s) with no fault injected, but only after %d mutating "
		       "control-plane request(s)", r, ro->emsg, mutating(o->journal, ro->j_lo, ro->j_hi));
}

static bool only_oom(const cJSON *j, int lo, int hi)
{
	int i, n = 0, oom = 0;

	for (i = lo; i < hi; i++) {
		const cJSON *e = cJSON_GetArrayItem(j, i);
		const char *k = fault_kind(e);

		if (k == NULL || fz_kind_benign(k))
			continue;
		n++;
		if (strcmp(k, "exec_oom") == 0 && is_exec(e))
			oom++;
	}
	return n > 0 && n == oom;
}

/* No fallback: a run that printed the canary ran on the host. */
static void check_canary(const struct fz_input *in, const struct fz_outcome *o, unsigned r)
{
	const struct fz_run_out *ro = &o->runs[r];
	const char *out = ro->result ? cf_str(ro->result, "stdout") : NULL;

	if (out != NULL && strstr(out, "CANARY-") != NULL)
		broken(in, o, "2 fallback", "run %u printed the canary: the code ran on the host", r);
}

static void check_result(const struct fz_input *in, const struct fz_outcome *o, unsigned r)
{
	const struct fz_run_out *ro = &o->runs[r];
	const char *out = ro->result ? cf_str(ro->result, "stdout") : NULL;
	const char *err = ro->result ? cf_str(ro->result, "stderr") : NULL;
	double ex = ro->result ? cf_num(ro->result, "exit_code", -999) : 0;
	char *want_out, *want_err;
	bool bad_out, bad_err;
	size_t len_out, len_err;
	int want_exit = fz_expected_exit(in, r);

	check_canary(in, o, r);
	if (only_oom(o->journal, ro->j_lo, ro->j_hi) && !o->concurrent) {
		if (ro->result == NULL)
			broken(in, o, "4 results", "run %u: the guest was OOM-killed (exec_oom) and the run raised %s "
			       "instead of returning exit 137: %s", r, ro->etype, ro->emsg);
		if (ex != 137)
			broken(in, o, "4 results", "run %u: the guest was OOM-killed (exec_oom) but exit_code is %g, not 137",
			       r, ex);
		return;
	}
	if (ro->result == NULL || exec_disturbed(o->journal, ro->j_lo, ro->j_hi))
		return;
	if (ex != want_exit)
		broken(in, o, "4 results", "run %u: exit_code %g, expected %d%s", r, ex, want_exit,
		       want_exit == -1 ? " (the code slept past the timeout)" : "");
	if (want_exit == -1)
		return; /* output of a killed run is whatever was flushed */
	want_out = fz_expected(in, r, false, ro->token);
	want_err = fz_expected(in, r, true, ro->token);
	if (in->surface == FZ_SURF_COMPONENT) { /* the node may trim (spec appendix): not a defect */
		bad_out = !cf_same_trimmed(out, want_out);
		bad_err = !cf_same_trimmed(err, want_err);
	} else {
		bad_out = out == NULL || strcmp(out, want_out) != 0;
		bad_err = err == NULL || strcmp(err, want_err) != 0;
	}
	len_out = strlen(want_out);
	len_err = strlen(want_err);
	free(want_out); /* before broken(), which does not return */
	free(want_err);
	if (bad_out)
		broken(in, o, "4 results", "run %u: stdout differs from what the guest wrote (%zu bytes expected, got "
		       "%zu: \"%.80s\")", r, len_out, out ? strlen(out) : 0, out ? out : "(none)");
	if (bad_err)
		broken(in, o, "4 results", "run %u: stderr differs from what the guest wrote (%zu bytes expected, got "
		       "%zu: \"%.80s\")", r, len_err, err ? strlen(err) : 0, err ? err : "(none)");
}

static void check_status_class(const struct fz_input *in, const struct fz_outcome *o, unsigned r)
{
	const struct fz_run_out *ro = &o->runs[r];
	const char *path = NULL, *want;
	int st = 0;

	if (ro->result != NULL || ro->broken || !http_status_fault(o->journal, ro->j_lo, ro->j_hi, &st, &path))
		return;
	want = (st == 429 || st >= 500) ? "SandboxExecutionError" : "SandboxUnavailableError";
	if (strcmp(ro->etype, want) != 0)
		broken(in, o, "4 results", "run %u: the control plane answered %d to %s and the run raised %s, "
		       "expected %s (429/5xx: execution, other 4xx: unavailable): %s", r, st, path ? path : "?",
		       ro->etype, want, ro->emsg);
}

static bool preflight_fault(const cJSON *j)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, j)
		if (fault_kind(e) != NULL && !fz_kind_benign(fault_kind(e)) &&
		    (path_is(e, "GET", "/v1/whoami") || path_is(e, "GET", "/v1/shapes")))
			return true;
	return false;
}

/* The call (run window) journal entry i belongs to: concurrent runs share
 * one; entries after the last window count as a later call. */
static unsigned call_of(const struct fz_input *in, const struct fz_outcome *o, int i)
{
	unsigned r;

	for (r = 0; r < in->nruns; r++)
		if (i >= o->runs[r].j_lo && i < o->runs[r].j_hi)
			return o->concurrent ? 0 : r;
	return in->nruns;
}

/* Entry b started after entry a had completed: by the mock's clock
 * (start_us/end_us, ADMIN.md), else (a mock without them) by the harness's
 * windows: b in a later call than a. */
static bool started_after(const struct fz_input *in, const struct fz_outcome *o, int b, int a)
{
	const cJSON *eb = cJSON_GetArrayItem(o->journal, b), *ea = cJSON_GetArrayItem(o->journal, a);

	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(eb, "start_us")) &&
	    cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(ea, "end_us")))
		return cf_num(eb, "start_us", 0) > cf_num(ea, "end_us", 0);
	return call_of(in, o, b) > call_of(in, o, a);
}

/* Entry i came from a fork_check's child: the parent waits for the child
 * and sends nothing during that call. */
static bool in_fork_child(const struct fz_input *in, const struct fz_outcome *o, int i)
{
	unsigned k = call_of(in, o, i);

	return k < in->nruns && o->runs[k].op != NULL && strcmp(o->runs[k].op, "fork_check") == 0;
}

static bool clean_ok(const cJSON *e)
{
	double st = cf_num(e, "status", 0);

	return st >= 200 && st <= 299 && (fault_kind(e) == NULL || fz_kind_benign(fault_kind(e)));
}

/* Once per process (spec, CreateOS backend surface: GET /v1/whoami once per
 * process): no whoami STARTS after one has COMPLETED successfully in the
 * same driver process, also in an earlier input on a reused driver.
 * Concurrent first calls are allowed: inside one run_concurrent call the
 * journal cannot tell a run that checked an unlocked "verified" flag before
 * another run's whoami came back (and was then slow to send its own) from
 * one that asked again, so there only the count is held, at most one per
 * run. Sequential runs, the calls of a session and a fork_check's child
 * come after an answered call: a whoami there after a success is a repeat
 * (a fork_check's child inherits its parent's success; the parent does
 * not inherit the child's).
 * A failed whoami (or one a fault met) does not count: retrying it is fine. */
static void check_whoami_once(const struct fz_input *in, const struct fz_outcome *o)
{
	int n = cJSON_GetArraySize(o->journal), a, b, clean = 0;

	for (b = 0; b < n; b++) {
		const cJSON *eb = cJSON_GetArrayItem(o->journal, b);

		if (!path_is(eb, "GET", "/v1/whoami"))
			continue;
		if (o->verified_before)
			broken(in, o, "4 results", "GET /v1/whoami (journal #%d) although this driver process completed a "
			       "successful whoami in an earlier input (once per process)", b);
		clean += clean_ok(eb);
		for (a = 0; a < n; a++) {
			const cJSON *ea = cJSON_GetArrayItem(o->journal, a);

			if (a == b || !path_is(ea, "GET", "/v1/whoami") || !clean_ok(ea) ||
			    !started_after(in, o, b, a))
				continue;
			if (o->concurrent && call_of(in, o, a) == call_of(in, o, b))
				continue; /* racing first calls of concurrent runs */
			if (in_fork_child(in, o, a) && call_of(in, o, a) != call_of(in, o, b))
				continue; /* the child's success is not its parent's */
			broken(in, o, "4 results", "GET /v1/whoami (journal #%d, call %u) started after the one at #%d "
			       "(call %u) had completed successfully in the same driver process (once per process; "
			       "only concurrent first calls may overlap)", b, call_of(in, o, b), a, call_of(in, o, a));
		}
	}
	if (o->concurrent && clean > (int)in->nruns)
		broken(in, o, "4 results", "%d successful GET /v1/whoami for %u concurrent runs (at most one each: "
		       "once per process, racing first calls allowed)", clean, in->nruns);
}

static void check_createos(const struct fz_input *in, const struct fz_outcome *o, const struct model *m)
{
	unsigned r;
	int creates;
	const cJSON *sb;

	for (r = 0; r < in->nruns && !o->concurrent; r++) {
		creates = fz_journal_count(o->journal, o->runs[r].j_lo, o->runs[r].j_hi, "POST", "/v1/sandboxes", 0, 999);
		if (creates > 1)
			broken(in, o, "4 results", "run %u sent %d creates; the createos backend sends each create at "
			       "most once (no retries)", r, creates);
	}
	creates = fz_journal_count(o->journal, 0, cJSON_GetArraySize(o->journal), "POST", "/v1/sandboxes", 0, 999);
	if (o->concurrent && creates > (int)in->nruns)
		broken(in, o, "4 results", "%u concurrent runs sent %d creates (at most one each)", in->nruns, creates);
	/* a failed preflight may be retried, and a fault on the shapes
	 * preflight may make a backend start over: judged without faults */
	if (!preflight_fault(o->journal))
		check_whoami_once(in, o);
	if (m->settings_error)
		return;
	cJSON_ArrayForEach(sb, o->sandboxes) {
		const char *name = cf_str(sb, "name") ? cf_str(sb, "name") : "";
		const char *want_off[] = {"240.0.0.0/4"}, *want_on[] = {"*"};
		long pause = m->timeout + 120 > 60 ? m->timeout + 120 : 60;
		bool network = m->network; /* a component call's own (model_of) */

		/* reuse guests (lf-c-) may have been drifted on purpose; executor
		 * guests (lf-x-) take the configured policy */
		if (strncmp(name, "lf-", 3) != 0 || strncmp(name, "lf-c-", 5) == 0 || strncmp(name, "lf-x-", 5) == 0)
			continue;
		if (!cf_json_str_array_is(cJSON_GetObjectItemCaseSensitive(sb, "egress"),
					  network ? want_on : want_off, 1)) {
			char *e = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(sb, "egress"));
			char egress[200];

			snprintf(egress, sizeof(egress), "%s", e != NULL ? e : "null");
			free(e); /* broken() does not return */
			broken(in, o, "4 results", "guest %s was created with egress %s; with the network %s it must be %s",
			       name, egress, network ? "on" : "off", network ? "[\"*\"]" : "[\"240.0.0.0/4\"]");
		}
		if (cf_num(sb, "auto_pause_after_seconds", -1) != (double)pause)
			broken(in, o, "4 results", "guest %s: auto_pause_after_seconds %g, expected max(60, %ld+120) = %ld",
			       name, cf_num(sb, "auto_pause_after_seconds", -1), m->timeout, pause);
	}
}

/* ---- cleanup ---- */

/* True when some journal path names the sandbox (the backend knew it). */
static bool addressed(const cJSON *j, const char *id)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, j) {
		const char *p = cf_str(e, "path");

		if (p != NULL && strstr(p, id) != NULL)
			return true;
	}
	return false;
}

/* True when a DELETE of id did not get a 2xx answer. */
static bool delete_failed(const cJSON *j, const char *id)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, j) {
		const char *p = cf_str(e, "path");
		double st = cf_num(e, "status", 0);

		if (p != NULL && path_is(e, "DELETE", "/v1/sandboxes/{id}") && strcmp(p + 14, id) == 0 &&
		    (st < 200 || st > 299 || cf_str(e, "fault") != NULL))
			return true;
	}
	return false;
}

static bool create_fault(const cJSON *j)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, j)
		if (fault_kind(e) != NULL && !fz_kind_benign(fault_kind(e)) && path_is(e, "POST", "/v1/sandboxes"))
			return true;
	return false;
}

static void check_cleanup(const struct fz_input *in, const struct fz_outcome *o)
{
	const cJSON *sbs = o->after_shutdown != NULL ? o->after_shutdown : o->sandboxes;
	const cJSON *sb;
	bool raised = false;
	unsigned r;

	for (r = 0; r < in->nruns; r++)
		raised |= o->runs[r].result == NULL;
	cJSON_ArrayForEach(sb, sbs) {
		const char *id = cf_str(sb, "id") ? cf_str(sb, "id") : "";
		const char *name = cf_str(sb, "name") ? cf_str(sb, "name") : "";

		if (!cf_status_live(cf_str(sb, "status")) || strncmp(name, "lf-c-", 5) == 0)
			continue;
		if (delete_failed(o->journal, id)) {
			if (!raised && strstr(o->stderr_tail, id) == NULL && strstr(o->stderr_tail, name) == NULL)
				broken(in, o, "3 cleanup", "the DELETE of guest %s (%s) failed and nothing reported it: "
				       "every run succeeded and the driver's stderr does not name the guest", id, name);
			continue; /* reported: it may stay (CLN-002) */
		}
		if (!addressed(o->journal, id) && create_fault(o->journal)) {
			orphans++;
			if (getenv("SBX_FUZZ_ORPHAN_FATAL") != NULL)
				broken(in, o, "3 cleanup", "guest %s (%s) is the orphan of a lost create answer", id, name);
			fprintf(stderr, "backend_fuzzer: note: orphan of a lost create answer: %s (%s); %lu so far\n",
				id, name, orphans);
			continue;
		}
		broken(in, o, "3 cleanup", "guest %s (%s) is left %s after the runs%s", id, name,
		       cf_str(sb, "status") ? cf_str(sb, "status") : "?",
		       o->after_shutdown != NULL ? " and shutdown()" : "");
	}
}

/* A component run that must raise with no fault: the harness drifted its
 * reuse guest's egress (now or before), or its files are over a cap. */
static bool raise_expected(const struct fz_input *in, const struct fz_outcome *o, unsigned r)
{
	unsigned k;

	if (in->surface != FZ_SURF_COMPONENT)
		return false;
	if (in->runs[r].files == FZ_FILES_BIG || in->runs[r].files == FZ_FILES_MANY)
		return true;
	for (k = 0; k <= r; k++)
		if (o->runs[k].acted_kind == FZ_BETWEEN_DRIFT && o->runs[k].acted)
			return in->runs[r].reuse;
	return false;
}

static void check_all(const struct fz_input *in, struct fz_outcome *o)
{
	struct model m;
	unsigned r;

	model_of(in, o, &m);
	for (r = 0; r < in->nruns; r++)
		if (o->runs[r].broken)
			broken(in, o, "0 protocol", "%s %u got no protocol answer: %s",
			       o->runs[r].op ? o->runs[r].op : "run", r, o->runs[r].emsg);
	if (o->caps_io > 0)
		broken(in, o, "0 protocol", "hello + capabilities() made %d control-plane request(s); "
		       "capabilities() must not do I/O (CAP-001)", o->caps_io);
	if (o->trip)
		broken(in, o, "2 fallback", "the trip-wire %s exists: the code ran on the host, outside any guest",
		       o->trip_path);
	fz_check_surface(in, o, broken); /* first: a surface's bug breaks its own invariant */
	for (r = 0; r < in->nruns; r++) {
		if (!o->runs[r].served)
			continue; /* the driver does not serve this surface */
		if (m.settings_error) {
			check_canary(in, o, r); /* only no fallback here, and cleanup below */
			continue;
		}
		/* component and executor runs take allow_network per call,
		 * not from the settings: the model's refusal is run's */
		if (in->surface == FZ_SURF_RUN || in->surface == FZ_SURF_FORK)
			check_refusal(in, o, &m, r);
		check_result(in, o, r);
		if (!o->concurrent && !raise_expected(in, o, r)) {
			check_unexplained(in, o, &m, r);
			check_status_class(in, o, r);
		}
	}
	if (o->createos)
		check_createos(in, o, &m);
	check_cleanup(in, o);
}

void fz_check(const struct fz_input *in, struct fz_outcome *o)
{
	check_all(in, o);
}

bool fz_check_report(const struct fz_input *in, struct fz_outcome *o, char *inv, size_t inv_cap, char *why,
		     size_t why_cap, FILE *report)
{
	inv[0] = why[0] = '\0';
	R.on = true;
	R.out = report;
	R.inv = inv;
	R.why = why;
	R.inv_cap = inv_cap;
	R.why_cap = why_cap;
	if (setjmp(R.back) == 0)
		check_all(in, o);
	R.on = false;
	return inv[0] == '\0';
}

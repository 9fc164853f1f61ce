/* profiles: the catalogue. One table of profiles, each with its checks (in
 * catalogue order, ids from spec/backend-conformance.md) and the rule that
 * turns it on when no --profile is given; plus the selection of a run
 * (profiles, --filter globs, then the --shard partition).
 *
 * Only data and selection: never runs a check, never talks to a driver or
 * the control plane. To add a check: its function in checks_<family>.c, its
 * declaration in checks.h, its row below. */
#include <string.h>

#include "checks.h"

static const struct cf_check LANGFLOW_BACKEND[] = {
	{"CAP-001", "CAP", "capabilities() makes no control-plane request", CK_ADMIN, false, ck_cap_001},
	{"CAP-002", "CAP", "declared capabilities are well formed; gate decisions shown", 0, false, ck_cap_002},
	{"CAP-003", "CAP", "hardware-virtualized claim: successful runs execute in a guest", CK_ADMIN, false, ck_cap_003},
	{"CAP-004", "CAP", "deny-all claim: network-off guest denies every probe, or refusal before create", CK_ADMIN, false, ck_cap_004},
	{"CAP-005", "CAP", "domain-allowlist claim: guest admits exactly the allowed names", CK_ADMIN, false, ck_cap_005},
	{"CAP-006", "CAP", "link-local hole: a network-off guest still reaches 169.254.169.254", CK_ADMIN, true, ck_cap_006},
	{"REF-001", "REF", "refusals happen before any mutating control-plane request", CK_ADMIN, false, ck_ref_001},
	{"REF-002", "REF", "every refusal is SandboxUnavailableError naming the setting", 0, false, ck_ref_002},
	{"REF-003", "REF", "timeout above a declared cap is refused; equal to the cap runs", 0, false, ck_ref_003},
	{"FB-001", "FB", "no fallback: control plane down", 0, false, ck_fb_check},
	{"FB-002", "FB", "no fallback: 401", CK_FAULTS, false, ck_fb_check},
	{"FB-003", "FB", "no fallback: 402", CK_FAULTS, false, ck_fb_check},
	{"FB-004", "FB", "no fallback: 403 over the account cap", CK_FAULTS, false, ck_fb_check},
	{"FB-005", "FB", "no fallback: 429", CK_FAULTS, false, ck_fb_check},
	{"FB-006", "FB", "no fallback: 500", CK_FAULTS, false, ck_fb_check},
	{"FB-007", "FB", "no fallback: 503", CK_FAULTS, false, ck_fb_check},
	{"FB-008", "FB", "no fallback: connection reset", CK_FAULTS, false, ck_fb_check},
	{"FB-009", "FB", "no fallback: hang past the timeout", CK_FAULTS, false, ck_fb_check},
	{"FB-010", "FB", "no fallback: malformed JSON", CK_FAULTS, false, ck_fb_check},
	{"FB-011", "FB", "no fallback: truncated body", CK_FAULTS, false, ck_fb_check},
	{"FB-012", "FB", "no fallback: empty 200", CK_FAULTS, false, ck_fb_check},
	{"FB-013", "FB", "no fallback: fail envelope", CK_FAULTS, false, ck_fb_check},
	{"CLN-001", "CLN", "no guest left after success, user error, timeout, infrastructure fault", CK_FAULTS, false, ck_cln_001},
	{"CLN-002", "CLN", "a fault on delete is reported and leaves at most that guest", CK_FAULTS, false, ck_cln_002},
	{"CLN-003", "CLN", "shutdown() twice raises nothing and leaves no guest", 0, false, ck_cln_003},
	{"CLN-004", "CLN", "a lost create answer leaves no orphan", CK_FAULTS, true, ck_cln_004},
	{"RES-001", "RES", "stdout, stderr and exit code byte-exact (UTF-8, 1 MiB, non-zero)", 0, false, ck_res_001},
	{"RES-002", "RES", "a run past its timeout returns -1 within the slack; guest gone", 0, false, ck_res_002},
	{"RES-003", "RES", "a guest killed for memory returns 137", CK_FAULTS, false, ck_res_003},
	{"RES-004", "RES", "env reaches the code", 0, false, ck_res_004},
	{"CON-001", "CON", "concurrent runs: all succeed, outputs not mixed, N created and N deleted", CK_ADMIN, false, ck_con_001},
	{"CON-002", "CON", "fork_check: the child runs after reset_after_fork on connections of its own; the parent still works", 0, false, ck_con_002},
	{NULL, NULL, NULL, 0, false, NULL},
};

static const struct cf_check CREATEOS_BACKEND[] = {
	{"CREATEOS-001", "CREATEOS", "network off sends [\"240.0.0.0/4\"]; on sends [\"*\"]", CK_ADMIN, false, ck_cos_001},
	{"CREATEOS-002", "CREATEOS", "allowed domains refused with no create", CK_ADMIN, false, ck_cos_002},
	{"CREATEOS-003", "CREATEOS", "network off without the accept variable refused; with it, runs", CK_ADMIN, false, ck_cos_003},
	{"CREATEOS-004", "CREATEOS", "no retries: one 503 on create = one attempt and a failed run", CK_FAULTS, false, ck_cos_004},
	{"CREATEOS-005", "CREATEOS", "over the account cap fails at once", CK_ADMIN, false, ck_cos_005},
	{"CREATEOS-006", "CREATEOS", "auto_pause_after_seconds = max(60, timeout+120); shape per the memory rule", CK_ADMIN, false, ck_cos_006},
	{"CREATEOS-007", "CREATEOS", "whoami preflight once per process", CK_ADMIN, false, ck_cos_007},
	{NULL, NULL, NULL, 0, false, NULL},
};

static const struct cf_check CREATEOS_COMPONENT[] = {
	{"COMP-001", "COMP", "Guest Reuse off deletes the guest after every run (python, shell, failing)", CK_ADMIN, false, ck_comp_001},
	{"COMP-002", "COMP", "Guest Reuse flow reuses one lf-c- guest per flow and component", CK_ADMIN, false, ck_comp_002},
	{"COMP-003", "COMP", "a paused reuse guest is resumed", CK_ADMIN, false, ck_comp_003},
	{"COMP-004", "COMP", "a reuse guest whose egress drifted is refused, never deleted", CK_ADMIN, false, ck_comp_004},
	{"COMP-005", "COMP", "Return Files brings back /workspace/artifacts byte-exact", CK_ADMIN, false, ck_comp_005},
	{"COMP-006", "COMP", "Return Files capped at 256 files and 5 MiB", CK_ADMIN, false, ck_comp_006},
	{NULL, NULL, NULL, 0, false, NULL},
};

static const struct cf_check CREATEOS_EXECUTOR[] = {
	{"EXEC-001", "EXEC", "the flow runs in an lf-x- guest that is deleted afterwards", CK_ADMIN, false, ck_exec_001},
	{"EXEC-002", "EXEC", "the executor guest is deleted in a finally (failing flow, fault)", CK_FAULTS, false, ck_exec_002},
	{"EXEC-003", "EXEC", "executor egress is open unless configured", CK_ADMIN, false, ck_exec_003},
	{NULL, NULL, NULL, 0, false, NULL},
};

/* A backend_fuzzer input replayed with the fuzzer's invariants (--fuzz-case
 * FILE selects it; it is never on by default). */
static const struct cf_check FUZZ_CASE[] = {
	{"FUZZ-CASE", "FUZZ", "a backend_fuzzer input (--fuzz-case FILE) breaks none of the fuzzer's invariants",
	 CK_ADMIN | CK_FAULTS, false, ck_fuzz_case},
	{NULL, NULL, NULL, 0, false, NULL},
};

static const struct cf_check HOST_GATE[] = {
	{"GATE-001", "GATE", "the four gate rules in order, with their messages", 0, false, ck_gate_001},
	{"GATE-002", "GATE", "blank code returns an empty success before the gate", 0, false, ck_gate_002},
	{"GATE-003", "GATE", "settings parsing and ranges", 0, false, ck_gate_003},
	{"GATE-004", "GATE", "plugin allow-list, duplicate names, built-in and reserved names", 0, false, ck_gate_004},
	{NULL, NULL, NULL, 0, false, NULL},
};

/* On unless the driver announces its surfaces and "backend" is not among
 * them (e.g. --python-component: a component class only). */
static bool backend_surface(const struct cf_config *cf)
{
	return cf->bundled_backend || cf->surface_count == 0 || cf_surface(cf, "backend");
}

static bool createos_driver(const struct cf_config *cf)
{
	return cf->bundled_backend || (backend_surface(cf) && strcmp(cf->driver_name, "createos") == 0);
}

static bool component_surface(const struct cf_config *cf)
{
	return cf->bundled_backend || cf_surface(cf, "component");
}

static bool executor_surface(const struct cf_config *cf)
{
	return cf->bundled_backend || cf_surface(cf, "executor");
}

static bool fuzz_case_given(const struct cf_config *cf)
{
	return cf->fuzz_case != NULL;
}

static bool host_driver_known(const struct cf_config *cf)
{
	return cf->host_cmd != NULL;
}

const struct cf_profile cf_profiles[] = {
	{"langflow-backend", LANGFLOW_BACKEND, backend_surface},
	{"createos-backend", CREATEOS_BACKEND, createos_driver},
	{"createos-component", CREATEOS_COMPONENT, component_surface},
	{"createos-executor", CREATEOS_EXECUTOR, executor_surface},
	{"host-gate", HOST_GATE, host_driver_known},
	{"fuzz-case", FUZZ_CASE, fuzz_case_given},
	{NULL, NULL, NULL},
};

const struct cf_profile *cf_profile_find(const char *name)
{
	const struct cf_profile *p;

	for (p = cf_profiles; p->name != NULL; p++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

static bool profile_selected(const struct cf_config *cf, const char *name)
{
	size_t i;

	for (i = 0; i < cf->profile_count; i++)
		if (strcmp(cf->profiles[i], name) == 0)
			return true;
	return false;
}

static bool filter_matches(const struct cf_config *cf, const struct cf_check *k)
{
	size_t i;

	if (cf->filter_count == 0)
		return true;
	for (i = 0; i < cf->filter_count; i++)
		if (cf_glob(cf->filters[i], k->id))
			return true;
	return false;
}

size_t cf_selection(const struct cf_config *cf, struct cf_pick *out, size_t cap)
{
	const struct cf_profile *p;
	const struct cf_check *k;
	size_t ord = 0, m = 0;

	for (p = cf_profiles; p->name != NULL; p++) {
		if (!profile_selected(cf, p->name))
			continue;
		for (k = p->checks; k->id != NULL; k++) {
			if (!filter_matches(cf, k))
				continue;
			/* The shard is round robin over the selected list. */
			if ((cf->shard_count <= 1 || ord % cf->shard_count == cf->shard_index - 1) && m < cap)
				out[m++] = (struct cf_pick){k, p->name};
			ord++;
		}
	}
	return m;
}

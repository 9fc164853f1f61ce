/* fz_seeds: the backend fuzzer's seed inputs, one per case of the
 * conformance checks it generalises (FB, CLN, REF, RES, CON, CREATEOS) plus
 * a few combinations the issue names. `backend_scenario --write-seeds DIR`
 * encodes them into fuzz/corpus/backend/. Indices refer to the tables in
 * fz_input.c. */
#include "fz_harness.h"

/* Fault endpoints and actions by name (indices into fz_input.c's tables). */
enum { E_CREATE, E_WHOAMI, E_SHAPES, E_UPLOAD, E_EXEC, E_DELETE, E_GET, E_LIST, E_ANY };
enum {
	A_HTTP, A_RESET, A_CLOSE, A_EMPTY200, A_MALFORMED, A_TRUNCATED, A_GARBAGE, A_DRIBBLE, A_HANG, A_LATENCY,
	A_COMMIT, A_CREATE_FAILED, A_PAUSE_ERROR, A_RESUME_POLLS, A_DESTROY_STUCK, A_HOST_DIES, A_CP_RESTART,
	A_AGENT_ERROR, A_OOM, A_STREAM_CUT, A_HB_ONLY,
};
/* http statuses by index: 400 401 402 403 404 409 429 500 502 503 504 200(fail) */
enum { H400, H401, H402, H403, H404, H409, H429, H500, H502, H503, H504, H200F };

#define RUN1 .nruns = 1, .runs = {{0}}
#define FAULT(e, a, p, t) {.endpoint = (e), .action = (a), .param = (p), .after = 0, .times = (t)}

static const struct fz_seed SEEDS[] = {
	{"plain-success", {RUN1}},
	{"res-001-utf8-exit3", {.nruns = 1, .runs = {{.exit_idx = 2, .out_idx = 3, .err_idx = 2, .unicode = true}}}},
	{"res-001-large-stdout", {.nruns = 1, .runs = {{.out_idx = 5, .err_idx = 1}}}},
	{"res-001-exit42", {.nruns = 1, .runs = {{.exit_idx = 3, .out_idx = 2}}}},
	{"res-002-timeout", {.timeout = 1, .nruns = 1, .runs = {{.sleep_idx = 4, .out_idx = 1}}}},
	{"res-003-exec-oom", {.nfaults = 1, .faults = {FAULT(E_EXEC, A_OOM, 0, 1)}, RUN1}},
	{"res-004-env", {.nruns = 1, .runs = {{.env = true, .out_idx = 2}}}},
	{"con-001-concurrent", {.concurrent = true, .nruns = 3,
				.runs = {{.out_idx = 3}, {.out_idx = 2, .exit_idx = 1}, {.out_idx = 4, .env = true}}}},
	/* issue 35: racing first runs on a fresh driver (an unlocked preflight
	 * flag lets each call whoami: allowed), and output whose white space a
	 * backend could alter unnoticed (trailing blanks then newline, CRLF
	 * line ends with an empty last line) */
	{"con-001-concurrent-fresh", {.fresh = true, .concurrent = true, .nruns = 3,
				      .runs = {{.out_idx = 2}, {.out_idx = 1, .text = 4}, {.exit_idx = 1}}}},
	{"res-001-white-space", {.nruns = 1, .runs = {{.out_idx = 2, .err_idx = 1, .text = 1}}}},
	{"res-001-crlf-empty-last-line", {.nruns = 1, .runs = {{.out_idx = 1, .text = 7, .unicode = true}}}},
	{"cln-001-user-error", {.timeout = 1, .nruns = 2, .runs = {{.exit_idx = 2}, {.sleep_idx = 4}}}},
	{"cln-001-exec-500", {.nfaults = 1, .faults = {FAULT(E_EXEC, A_HTTP, H500, 1)}, RUN1}},
	{"cln-001-exec-reset", {.nfaults = 1, .faults = {FAULT(E_EXEC, A_RESET, 0, 1)}, RUN1}},
	{"cln-002-delete-500", {.nfaults = 1, .faults = {FAULT(E_DELETE, A_HTTP, H500, 1)}, RUN1}},
	{"cln-004-lost-create", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_COMMIT, 0, 1)}, RUN1}},
	{"fb-001-down", {.url = FZ_N_URL - 1, RUN1}},
	{"fb-001-whoami-reset", {.fresh = true, .nfaults = 1, .faults = {FAULT(E_WHOAMI, A_RESET, 0, 0)}, RUN1}},
	{"fb-002-401", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_HTTP, H401, 0)}, RUN1}},
	{"fb-003-402", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_HTTP, H402, 0)}, RUN1}},
	{"fb-004-403-cap", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_HTTP, H403, 0)}, RUN1}},
	{"fb-005-429", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_HTTP, H429, 0)}, RUN1}},
	{"fb-006-500", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_HTTP, H500, 0)}, RUN1}},
	{"fb-007-503", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_HTTP, H503, 0)}, RUN1}},
	{"fb-008-reset", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_RESET, 0, 0)}, RUN1}},
	{"fb-009-hang", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_HANG, 2, 0)}, RUN1}},
	{"fb-010-malformed", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_MALFORMED, 0, 0)}, RUN1}},
	{"fb-011-truncated", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_TRUNCATED, 0, 0)}, RUN1}},
	{"fb-012-empty-200", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_EMPTY200, 0, 0)}, RUN1}},
	{"fb-013-fail-200", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_HTTP, H200F, 0)}, RUN1}},
	{"ref-domains", {.network = 1, .domains = 3, RUN1}},
	{"ref-network-off-no-accept", {.network = 4, .accept = 1, RUN1}},
	{"ref-no-key", {.key = 1, RUN1}},
	{"ref-timeout-301", {.timeout = 5, RUN1}},
	{"createos-001-network-on", {.network = 1, RUN1}},
	{"createos-003-accept-yes", {.network = 4, .accept = 2, RUN1}},
	{"createos-003-accept-false", {.network = 6, .accept = 6, RUN1}},
	{"createos-004-create-503-once", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_HTTP, H503, 1)}, RUN1}},
	{"createos-005-over-cap", {.nfaults = 1, .faults = {FAULT(E_CREATE, A_HTTP, H403, 1)}, RUN1}},
	{"createos-006-timeout-5", {.timeout = 8, RUN1}},
	{"createos-006-memory-6000", {.memory = 4, RUN1}},
	{"createos-006-pin-16gb", {.shape = 2, RUN1}},
	{"createos-006-pin-unknown", {.shape = 4, RUN1}},
	{"createos-007-three-runs", {.fresh = true, .nruns = 3, .runs = {{0}, {.exit_idx = 1}, {.out_idx = 2}}}},
	{"key-fallback-variable", {.key = 2, RUN1}},
	/* the combinations: a 503 on the DELETE after a commit-then-fail
	 * create while the run times out; a reset on the upload with the network
	 * off and the accept variable " Yes " */
	{"combo-lost-create-delete-503-timeout",
	 {.timeout = 1, .nfaults = 2, .faults = {FAULT(E_CREATE, A_COMMIT, 0, 1), FAULT(E_DELETE, A_HTTP, H503, 1)},
	  .nruns = 2, .runs = {{0}, {.sleep_idx = 4}}}},
	{"combo-upload-reset-accept-yes",
	 {.network = 4, .accept = 2, .nfaults = 1, .faults = {FAULT(E_UPLOAD, A_RESET, 0, 1)}, RUN1}},
	{"combo-host-dies-on-exec", {.nfaults = 1, .faults = {FAULT(E_EXEC, A_HOST_DIES, 0, 1)}, .nruns = 2,
				     .runs = {{0}, {.exit_idx = 1}}}},
	{"combo-latency-everywhere", {.nfaults = 1, .faults = {FAULT(E_ANY, A_LATENCY, 1, 0)}, .concurrent = true,
				      .nruns = 2, .runs = {{.out_idx = 3}, {.err_idx = 3}}}},
	/* found by the fuzzer: an empty 200 to the code upload ran a missing
	 * file (exit 2) instead of raising; the reference now checks the answer */
	{"found-upload-empty-200", {.nfaults = 1, .faults = {FAULT(E_UPLOAD, A_EMPTY200, 0, 0)},
				    .nruns = 1, .runs = {{.exit_idx = 2, .out_idx = 2}}}},
	/* found by the fuzzer (issue 35): the mock answered a 200 with a JSend
	 * success although the rule asked for a "fail" envelope, so every
	 * backend took the upload as stored and ran a missing file */
	{"found-upload-fail-200", {.nfaults = 1, .faults = {FAULT(E_UPLOAD, A_HTTP, H200F, 0)}, RUN1}},
	{"found-upload-garbage", {.nfaults = 1, .faults = {FAULT(E_UPLOAD, A_GARBAGE, 0, 1)}, RUN1}},
	{"createos-006-pin-1gb-memory-128", {.shape = 1, .memory = 1, RUN1}},
	/* the other surfaces: component sessions (COMP-002/003/004/006),
	 * executor runs (EXEC-001/002), fork_check (CON-002) */
	{"comp-reuse-pause", {.surface = FZ_SURF_COMPONENT, .nruns = 2,
			      .runs = {{.reuse = true, .out_idx = 2}, {.reuse = true, .between = FZ_BETWEEN_PAUSE}}}},
	{"comp-reuse-drift", {.surface = FZ_SURF_COMPONENT, .nruns = 2,
			      .runs = {{.reuse = true}, {.reuse = true, .between = FZ_BETWEEN_DRIFT, .out_idx = 1}}}},
	{"comp-files-few", {.surface = FZ_SURF_COMPONENT, .nruns = 1, .runs = {{.files = FZ_FILES_FEW, .exit_idx = 1}}}},
	{"comp-files-big", {.surface = FZ_SURF_COMPONENT, .nruns = 1, .runs = {{.files = FZ_FILES_BIG}}}},
	/* found by the fuzzer, in its own oracle: a component call says
	 * allow_network itself, so with the settings' network on its guest is
	 * still denied; the createos egress check wanted ["*"] */
	/* found by the fuzzer: the reference reaped a reuse guest whose create
	 * answer was lost; a reuse guest is never deleted (the next call of the
	 * flow adopts it by name), so now it leaves it */
	{"found-reuse-lost-create", {.surface = FZ_SURF_COMPONENT, .nfaults = 1,
				     .faults = {FAULT(E_CREATE, A_COMMIT, 0, 1)}, .nruns = 1, .runs = {{.reuse = true}}}},
	{"found-component-network-on", {.network = 1, .domains = 3, .surface = FZ_SURF_COMPONENT, .nruns = 1,
					.runs = {{.out_idx = 3}}}},
	{"exec-failing-flow", {.surface = FZ_SURF_EXECUTOR, .nruns = 1, .runs = {{.exit_idx = 1, .out_idx = 2}}}},
	{"exec-exec-500", {.surface = FZ_SURF_EXECUTOR, .nfaults = 1, .faults = {FAULT(E_EXEC, A_HTTP, H500, 1)},
			   .nruns = 1, .runs = {{0}}}},
	/* two calls (a run in the parent, then fork_check): small, so libFuzzer
	 * loads it early */
	{"fork-check", {.surface = FZ_SURF_FORK, .nruns = 2, .runs = {{.out_idx = 2}, {.out_idx = 1}}}},
	{"fork-check-parent-after", {.surface = FZ_SURF_FORK, .nruns = 3,
				     .runs = {{.out_idx = 2}, {.out_idx = 1}, {.exit_idx = 1}}}},
};

size_t fz_seeds(const struct fz_seed **out)
{
	*out = SEEDS;
	return sizeof(SEEDS) / sizeof(SEEDS[0]);
}

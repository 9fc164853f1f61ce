/* sbx-conform internals: the runner's configuration, the per-case context the
 * checks work with, the profile table, and the helpers checks call (verdicts
 * in verdict.c, the driver process in runner_driver.c, the mock's admin API
 * and the control plane in control_plane.c, small helpers in util.c,
 * shared check helpers in checks_common.c).
 *
 * A check never talks to another case's tenant, never leaves a process or a
 * guest behind (the case teardown destroys what the tenant still holds), and
 * never decides a verdict from timing alone except where the spec states a
 * bound (RES-002's slack, CREATEOS-005's "at once"). */
#ifndef SBX_CONFORM_H
#define SBX_CONFORM_H

#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "sbx/err.h"
#include "sbx/http_client.h"
#include "sbx/strbuf.h"

#ifndef SBX_CONFORM_VERSION
#define SBX_CONFORM_VERSION "0.0.0"
#endif

enum cf_kind { CF_EMBEDDED_MOCK, CF_EXTERNAL_MOCK, CF_REAL };

/* Check flags: what a check needs from the control plane. */
#define CK_ADMIN 1u   /* journal / state / oracle of the mock */
#define CK_FAULTS 2u  /* fault injection */

struct cf_config {
	/* options */
	char *backend_cmd;        /* shell command line of the driver */
	char *host_cmd;           /* driver for the host-gate profile */
	char *fixtures_dir;       /* fixtures/gate lives here */
	char *python;             /* --python, then the resolved interpreter of a Python adapter */
	char **profiles;          /* selected profile names */
	size_t profile_count;
	char **filters;           /* ID globs (any matches) */
	size_t filter_count;
	unsigned shard_index;     /* 1-based */
	unsigned shard_count;
	unsigned long seed;
	double timeout_scale;
	unsigned jobs;
	unsigned max_timeouts;    /* give up after this many consecutive cases timed out; 0: never */
	bool tap;
	bool list;
	bool progress;            /* live progress line (stderr is a TTY) */
	bool color;
	const char *json_file, *junit_file, *html_file;
	const char *summary_md_file;  /* --summary-md: the Markdown job summary */
	const char *annotations_file; /* --github-annotations: ::error lines */
	const char *fuzz_case;    /* --fuzz-case FILE: a backend_fuzzer input (checks_fuzz.c) */
	/* control plane */
	enum cf_kind kind;
	char url[512];
	char admin_token[256];
	char guests_root[1024];   /* the embedded mock's rootfs note (which root its guests get), or "" */
	char real_key[256];       /* --api-url: the key from the environment */
	sbx_http_client *http;    /* cf_control_plane_open .. _close */
	/* run state */
	char tmpdir[256];         /* owned scratch dir (trip-wires, stderr logs) */
	char driver_name[128];
	char driver_impl[256];
	cJSON *capabilities;      /* from the first case's driver (owned) */
	char **surfaces;
	size_t surface_count;
	bool bundled_backend;     /* no --backend-cmd: the bundled reference runs */
	/* Starts a driver instead of fork + `sh -c backend_cmd` when set: with
	 * this environment and descriptors as stdin, stdout, stderr; returns
	 * the pid of a child of this process (the backend fuzzer's zygote). */
	pid_t (*spawn)(void *arg, char *const *envp, int in_fd, int out_fd, int err_fd);
	void *spawn_arg;
	char *rerun;              /* the command line that repeats this run (set by cf_run_all) */
	pthread_mutex_t lock;     /* guards the counters below and progress output */
	unsigned next_tenant;
	unsigned done;
	unsigned total;
};

struct cf_check;

/* One case = one check run: its tenant, its drivers, its verdicts. */
struct cf_case {
	struct cf_config *cf;
	const struct cf_check *def;
	const char *profile;      /* the profile the check runs under */
	char key[64];             /* fresh API key = fresh mock tenant */
	char trip[400];           /* trip-wire path (host side) */
	char verdict[8];          /* pass, fail, skip, error */
	sbx_strbuf reason;
	cJSON *details;           /* array of strings */
	cJSON *fault_ids;         /* numbers: fault rules to delete at teardown */
	cJSON *allowed_leftover;  /* sandbox ids or name prefixes the check expects to stay */
	char cleanup_verdict[8];
	sbx_strbuf cleanup_reason;
	cJSON *leftover;
	sbx_strbuf driver_stderr; /* last lines of every driver's stderr */
	cJSON *journal;           /* evidence excerpt */
	bool cleanup_skip;        /* the check takes the cleanup verdict itself */
	double started_ms;
	double duration_ms;
	struct cf_driver *drivers[8];
	size_t driver_count;
	unsigned driver_seq;
};

struct cf_check {
	const char *id;
	const char *area;
	const char *title;
	unsigned flags;
	bool advisory;
	void (*fn)(struct cf_case *c);
};

/* The catalogue (profiles.c): one row per profile, in catalogue order. */
struct cf_profile {
	const char *name;
	const struct cf_check *checks; /* ends with a row whose id is NULL */
	/* true when a run without --profile selects this profile (called after
	 * the probe, so the driver's name and surfaces are known) */
	bool (*default_on)(const struct cf_config *cf);
};
extern const struct cf_profile cf_profiles[]; /* ends with a row whose name is NULL */
const struct cf_profile *cf_profile_find(const char *name);

/* One selected check and the profile it runs under. */
struct cf_pick {
	const struct cf_check *check;
	const char *profile;
};
/* The selected checks (profiles, filters, then the shard: round robin over
 * the selected list in catalogue order), in catalogue order; returns the count. */
size_t cf_selection(const struct cf_config *cf, struct cf_pick *out, size_t cap);

/* ---- verdicts (verdict.c) ---- */
void cf_fail(struct cf_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cf_skip(struct cf_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cf_error(struct cf_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cf_detail(struct cf_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool cf_failed(const struct cf_case *c); /* verdict is no longer pass */
void cf_allow_leftover(struct cf_case *c, const char *id_or_prefix);

/* ---- the driver process (runner_driver.c) ---- */
struct cf_driver;
/* Environment overrides: NULL-terminated "NAME=value" or "NAME" (= unset)
 * entries applied over the case's default environment. */
struct cf_driver *cf_driver_start(struct cf_case *c, const char *const *env);
/* Longest answer line the runner reads (PROTOCOL.md "Framing"). */
#define CF_ANSWER_LINE_MAX ((size_t)64 * 1024 * 1024)
/* A driver over descriptors the caller made, without a process (the fuzz
 * target conform_answer and tests feed answers through a file or pipe):
 * requests go to in_fd, answers are read from out_fd, lines longer than
 * answer_limit are refused. Not added to the case's drivers: the caller
 * stops (closing both fds) and frees it. */
struct cf_driver *cf_driver_attach(struct cf_case *c, int in_fd, int out_fd, size_t answer_limit);
/* Sends {"op": op, ...fields} (fields may be NULL; not consumed) and waits
 * up to timeout_s * scale. Returns the whole answer object (caller frees) or
 * NULL when the driver died, timed out or answered garbage (the case is
 * marked error with the reason). */
cJSON *cf_call(struct cf_driver *d, const char *op, const cJSON *fields, double timeout_s);
/* Conveniences over cf_call: the "result" (detached, caller frees) or NULL;
 * on NULL, etype and emsg (may be NULL) receive the error (static until the
 * next call on this driver). */
cJSON *cf_run(struct cf_driver *d, const char *code, const cJSON *env, double timeout_s,
	      const char **etype, const char **emsg);
cJSON *cf_op(struct cf_driver *d, const char *op, const cJSON *fields, double timeout_s,
	     const char **etype, const char **emsg);
/* True when the last call failed for protocol/transport reasons (not an
 * error answer). */
bool cf_driver_broken(const struct cf_driver *d);
/* True when an answer of this driver did not come in time (the runner's
 * fail-fast counts cases that ended so). */
bool cf_driver_timed_out(const struct cf_driver *d);
/* True when a hello result announces protocol 1; else why says what is
 * wrong (missing, another version, not a number). */
bool cf_hello_protocol_ok(const cJSON *hello, char *why, size_t cap);
/* Sends exit, waits briefly, kills the process group; collects stderr. */
void cf_driver_stop(struct cf_driver *d);
pid_t cf_driver_pid(const struct cf_driver *d);
/* The file the driver's stderr goes to (removed by cf_driver_stop); for a
 * caller that keeps one driver over many runs and reads its log as it grows. */
const char *cf_driver_stderr_path(const struct cf_driver *d);
/* Frees a driver after cf_driver_stop (the case teardown does this). */
void cf_driver_free(struct cf_driver *d);

/* ---- the mock's admin API and the control plane (control_plane.c) ---- */
/* The HTTP client of every call below (cf->url must be set): 0 or -1. */
int cf_control_plane_open(struct cf_config *cf, sbx_err *err);
void cf_control_plane_close(struct cf_config *cf);
/* Before any check: an external mock answers its admin API with the token
 * (GET /_mock/settings), a real control plane answers HTTP at all. 0, or -1
 * with *err naming the URL and what went wrong. */
int cf_control_plane_reachable(struct cf_config *cf, sbx_err *err);
/* Admin call: returns `data` (caller frees) or NULL with *err set. */
cJSON *cf_admin(struct cf_config *cf, const char *method, const char *path, const cJSON *body,
		sbx_err *err);
/* Control-plane call with the case's key: returns `data` or NULL. */
cJSON *cf_api(struct cf_case *c, const char *method, const char *path, const cJSON *body,
	      long *status, sbx_err *err);
/* Adds a fault rule scoped to the case's tenant (match.tenant is set here);
 * `rule` is consumed. Returns 0 or -1 (case marked error). */
int cf_fault(struct cf_case *c, cJSON *rule);
/* The tenant's journal entries (caller frees), NULL on error. */
cJSON *cf_journal(struct cf_case *c);
/* True when the check allowed this sandbox view to stay (cf_allow_leftover). */
bool cf_leftover_allowed(const struct cf_case *c, const cJSON *sb);
/* The User-Agent of every request the harness itself sends; the mock's
 * journal records it, which is how evidence tells the harness's requests
 * (setup, listing, teardown) from the backend's. */
#define CF_HARNESS_MARK "(harness)"
#define CF_HARNESS_AGENT "sbx-conform/" SBX_CONFORM_VERSION " " CF_HARNESS_MARK
/* True when the journal entry is one of the harness's own requests: its
 * agent is "sbx-conform/<anything> (harness)" (the runner, or a Python
 * adapter's look-up on the harness's behalf). */
bool cf_journal_by_harness(const cJSON *entry);
/* Count the backend's journal entries (the harness's own are never counted)
 * of method + path pattern ({id} = one segment, a trailing * = any rest)
 * with status in [lo, hi] (0,999 = any). */
int cf_journal_count(const cJSON *entries, const char *method, const char *pattern, int lo, int hi);
/* Every sandbox the tenant ever had, destroyed included (caller frees). */
cJSON *cf_sandboxes(struct cf_case *c);
bool cf_status_live(const char *status); /* not destroyed/destroying/failed */
/* Live sandboxes not allowed to stay: returns the count and fills names. */
int cf_live_guests(struct cf_case *c, cJSON *sandboxes, sbx_strbuf *names);
/* Egress oracle: 1 allowed, 0 denied, -1 error. */
int cf_egress_allowed(struct cf_case *c, const char *sandbox_id, const char *dest);
/* Remembers the journal as evidence, in the report's shape (last 60 rows,
 * each with "by": "backend" | "harness"); takes ownership. */
void cf_keep_journal(struct cf_case *c, cJSON *entries);

/* ---- small helpers (util.c) ---- */
const char *cf_str(const cJSON *o, const char *k);
double cf_num(const cJSON *o, const char *k, double dflt);
double cf_now_ms(void);
void cf_random_token(struct cf_case *c, char *out, size_t cap); /* "tok-<hex>" */
bool cf_surface(const struct cf_config *cf, const char *surface);
bool cf_cap_bool(const struct cf_config *cf, const char *k);
const char *cf_cap_str(const struct cf_config *cf, const char *k);
bool cf_glob(const char *pat, const char *s);
/* Equal once surrounding white space is dropped from both (component output). */
bool cf_same_trimmed(const char *got, const char *want);

/* ---- running (runner.c) ---- */
/* Runs the selected checks; fills the report (caller frees). Returns 0, or
 * -1 on a harness error with *err set. */
int cf_run_all(struct cf_config *cf, cJSON **report, sbx_err *err);
/* A case's fresh state (its tenant key, trip-wire path, verdicts) and its
 * release (not its drivers'); run_case uses them, and the backend fuzzer
 * for the cases its driver pool runs under. */
void cf_case_init(struct cf_case *c, struct cf_config *cf, const struct cf_check *def, const char *profile);
void cf_case_free(struct cf_case *c);
/* The report's "summary" object for its checks array (caller frees). */
cJSON *cf_report_summary(const cJSON *checks);
/* The exit code a report stands for: 0 all passed, 1 a check or its cleanup
 * failed, 2 an error verdict, a report that cannot be counted, or a run in
 * which nothing was checked (every check skipped; said on stderr). */
int cf_report_exit_code(const cJSON *report);

/* ---- the Python adapters' interpreter (python.c) ---- */
/* want: --python's value (NULL: python3 on PATH; a bare name: looked up on
 * PATH; a path: must be an executable file). Returns the program that will
 * run (caller frees) or NULL with *err saying why. */
char *cf_python_resolve(const char *want, sbx_err *err);
/* 'python' 'adapters_dir/script' 'arg'... (args NULL-terminated), for /bin/sh -c. */
char *cf_python_driver_cmd(const char *python, const char *adapters_dir, const char *script,
			   const char *const *args);
/* s in single quotes for /bin/sh (caller frees). */
char *cf_shell_quote(const char *s);

/* ---- sbx-conform merge (merge.c) ---- */
/* argv[0] is "merge"; returns the exit code (0, 1 as for a run, 2 usage or
 * input error). */
int cf_merge_main(int argc, char **argv);

/* ---- shared by the check files (checks_common.c) ---- */
/* Starts a driver and says hello (protocol 1); NULL when that failed. */
struct cf_driver *cf_start(struct cf_case *c, const char *const *env);
/* Live guests the check did not expect; -1 on error. Names go to details. */
int cf_live_count(struct cf_case *c, const char *when);
bool cf_trip_exists(const struct cf_case *c);
/* The sandbox (from cf_sandboxes) with that name, or the newest one when
 * name is NULL. Borrowed from sbs. */
const cJSON *cf_find_sandbox(const cJSON *sbs, const char *name);
/* Python that writes the trip-wire and prints the canary. */
void cf_canary_code(const struct cf_case *c, const char *canary, char *out, size_t cap);
bool cf_json_str_array_is(const cJSON *arr, const char *const *want, size_t n);
#define CF_RUN_T 60.0 /* default seconds to wait for a run answer (scaled) */
/* A loopback port nothing listens on (bound, then closed): an unreachable
 * control plane (checks_fault.c; FB-001, the backend fuzzer). */
int cf_dead_port(void);

#endif

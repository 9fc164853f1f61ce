/* fz: a backend-fuzzer input and its judgement, shared by the fuzz target
 * (fuzz/backend_fuzzer.c, its harness fuzz/backend/fz_harness.c keeps the
 * driver pool and the embedded mock) and `sbx-conform --fuzz-case FILE`
 * (checks_fuzz.c), so a finding replays through sbx-conform with the same
 * invariant code: the structure-aware input decoder and its printers
 * (fz_input.c), one input's session of calls on a driver (fz_session.c) and
 * the invariants (fz_check.c, fz_check_surface.c).
 *
 * An input is a byte string read front to back by a FuzzedDataProvider-style
 * reader: every byte string decodes to a valid input (missing bytes read as
 * 0), every choice is an index into a fixed table below, so the same bytes
 * always mean the same settings, fault plan and guest behaviour. */
#ifndef SBX_FZ_H
#define SBX_FZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#define FZ_MAX_FAULTS 4
#define FZ_MAX_RUNS 3

/* ---- the decoded input ---- */

struct fz_fault {
	unsigned endpoint; /* index into FZ_ENDPOINTS */
	unsigned action;   /* index into FZ_ACTIONS */
	unsigned param;    /* action parameter choice (status, ms, ...) */
	unsigned after;    /* fire.after */
	unsigned times;    /* fire.times; 0 = always */
};

struct fz_run {
	unsigned exit_idx;   /* FZ_EXITS */
	unsigned out_idx;    /* FZ_SIZES: stdout bytes */
	unsigned err_idx;    /* FZ_SIZES: stderr bytes */
	unsigned sleep_idx;  /* FZ_SLEEPS */
	bool env;            /* run env {"SBX_FZ": token} printed by the code */
	bool unicode;        /* multi-byte UTF-8 in the output */
	unsigned text;       /* FZ_N_TEXT: white space around the output (fz_input.c's TEXT) */
	/* component surface only (FZ_SURF_COMPONENT) */
	bool reuse;          /* Guest Reuse "flow" (else "off") */
	unsigned between;    /* FZ_BETWEEN_*: what the harness does to the reuse guest first */
	unsigned files;      /* FZ_FILES_*: what the code leaves in /workspace/artifacts */
};

/* The driver surface an input drives (PROTOCOL.md's ops). */
enum {
	FZ_SURF_RUN,       /* run / run_concurrent */
	FZ_SURF_COMPONENT, /* a session of component_run calls */
	FZ_SURF_EXECUTOR,  /* executor_run calls */
	FZ_SURF_FORK,      /* run in the parent, fork_check, run in the parent again */
	FZ_N_SURF
};
/* Before a component run, the harness may act on the session's reuse guest
 * (as a user or the control plane would): pause it, or change its egress. */
enum { FZ_BETWEEN_NONE, FZ_BETWEEN_PAUSE, FZ_BETWEEN_DRIFT, FZ_N_BETWEEN };
/* Return Files: none asked; three small files; one 6 MiB file (over the
 * 5 MiB cap); 300 files (over the 256 cap). */
enum { FZ_FILES_NONE, FZ_FILES_FEW, FZ_FILES_BIG, FZ_FILES_MANY };

struct fz_input {
	bool fresh;          /* start a new driver for this input */
	bool concurrent;     /* run_concurrent instead of sequential runs (FZ_SURF_RUN) */
	unsigned surface;    /* FZ_SURF_* */
	unsigned network, accept, domains, timeout, memory, shape, key, url; /* settings table indices */
	unsigned nfaults;
	struct fz_fault faults[FZ_MAX_FAULTS];
	unsigned nruns;
	struct fz_run runs[FZ_MAX_RUNS];
};

/* Table sizes (indices are taken modulo these). */
enum {
	FZ_N_NETWORK = 8, FZ_N_ACCEPT = 10, FZ_N_DOMAINS = 6, FZ_N_TIMEOUT = 9, FZ_N_MEMORY = 8,
	FZ_N_SHAPE = 5, FZ_N_KEY = 3, FZ_N_URL = 6, FZ_N_ENDPOINTS = 9, FZ_N_ACTIONS = 21, FZ_N_EXITS = 6,
	FZ_N_SIZES = 6, FZ_N_SLEEPS = 6, FZ_N_TEXT = 8,
};

/* Decodes bytes (any) into *in. */
void fz_decode(const uint8_t *data, size_t size, struct fz_input *in);
/* Encodes *in back into bytes that decode to it; returns the length (<= cap). */
size_t fz_encode(const struct fz_input *in, uint8_t *out, size_t cap);

/* ---- what the input means ---- */

/* Environment overrides for the driver ("NAME=value" or "NAME" = unset),
 * NULL-terminated, at most 12 entries; dead_url replaces the control plane
 * when the input asks for an unreachable one. Strings are static or in buf. */
void fz_settings_env(const struct fz_input *in, const char *dead_url, const char *key, const char **env,
		     char *buf, size_t cap);
/* The timeout the driver runs with (the runner's default 10 when unset),
 * or -1 when the setting is invalid. */
long fz_timeout_s(const struct fz_input *in);
/* True when run r sleeps past the run's timeout (then exit must be -1). */
bool fz_sleeps_past(const struct fz_input *in, unsigned r);
/* The Python code of run r, the env object (NULL when none) and the exact
 * stdout / stderr / exit code it produces in a guest. trip is the
 * trip-wire path, guard_dir the mock's guest work dir (a guest whose cwd
 * is under it never writes the trip-wire). Caller frees the strings. */
char *fz_code(const struct fz_input *in, unsigned r, const char *trip, const char *guard_dir, const char *token);
/* The files run r leaves in artifacts/ (FZ_FILES_FEW: name i of 3, its
 * bytes in *data, caller frees); false past the last. */
bool fz_artifact(const struct fz_input *in, unsigned r, unsigned i, char name[32], char **data, size_t *len);
const char *fz_surface_name(unsigned surface);
/* FZ_SURF_FORK: the run that is a fork_check (the others run in the parent). */
unsigned fz_fork_index(const struct fz_input *in);
/* Run r's request (op and fields, no id) on the input's surface; env is
 * taken (used by run only). */
cJSON *fz_request(const struct fz_input *in, unsigned r, const char *code, cJSON *env);
char *fz_expected(const struct fz_input *in, unsigned r, bool err_stream, const char *token);
int fz_expected_exit(const struct fz_input *in, unsigned r);
/* The fault rule of fault i as a mock rule object (caller frees); its
 * "name" is "fz<i>:<kind>" so the journal names the kind. */
cJSON *fz_fault_rule(const struct fz_input *in, unsigned i);
const char *fz_action_kind(unsigned action);
/* True for kinds that never change an answer's content (latency, a fast
 * dribble): the results must stay exact when only these fired. */
bool fz_kind_benign(const char *kind);

/* Human / replay output of the whole input: export lines (url NULL: none
 * for the control plane), the scenario
 * file (rules without tenant scoping) and the driver request lines. */
void fz_print_exports(FILE *f, const struct fz_input *in, const char *url, const char *key);
cJSON *fz_scenario(const struct fz_input *in, const char *name);
void fz_print_requests(FILE *f, const struct fz_input *in);
/* One line describing the input ("3 runs, concurrent, 2 faults: ..."). */
void fz_describe(FILE *f, const struct fz_input *in);

/* ---- one input driven against a backend ---- */

struct fz_run_out {
	cJSON *result;       /* the run's result, NULL when it raised */
	char etype[64];      /* the error class when it raised */
	char emsg[512];
	bool broken;         /* no protocol answer (driver died, hung, garbage) */
	int j_lo, j_hi;      /* the run's journal entries [j_lo, j_hi) (whole input when concurrent) */
	char token[40];      /* the value of SBX_FZ in the run's env */
	const char *op;      /* the op that ran it ("run", "component_run", "fork_check", ...) */
	bool served;         /* false: the driver answered ProtocolError (surface not served) */
	bool acted;          /* the harness's FZ_BETWEEN_* action on the reuse guest took effect */
	unsigned acted_kind; /* FZ_BETWEEN_PAUSE or FZ_BETWEEN_DRIFT when acted */
	char acted_on[80];   /* the reuse guest's name it acted on */
	double child_pid;    /* fork_check: the child's pid */
	int j_op;            /* journal length when the op was sent (after the harness's action) */
	double ms;
};

struct fz_outcome {
	bool createos;           /* the createos-backend profile's rules apply */
	const char *profile;
	const cJSON *caps;       /* the driver's capabilities (borrowed) */
	int caps_io;             /* journal entries caused by hello + capabilities (-1: reused driver) */
	bool concurrent;         /* run_concurrent was used */
	struct fz_run_out runs[FZ_MAX_RUNS];
	cJSON *journal;          /* the tenant's journal for the input */
	cJSON *sandboxes;        /* every sandbox of the tenant after the runs */
	cJSON *after_shutdown;   /* the same after shutdown(), when guests were left (else NULL) */
	char *stderr_tail;       /* what the driver wrote to stderr during the input */
	bool trip;               /* the trip-wire exists */
	char key[64];
	char trip_path[400];
	const char *backend_cmd;
	const char *mock_url;
	cJSON *shapes;           /* the control plane's shape catalog (borrowed) */
	long fresh_whoami;       /* 1 when the driver was started for this input */
	/* the (reused) driver completed a clean GET /v1/whoami in an earlier
	 * input: its once-per-process preflight is done, no whoami may start */
	bool verified_before;
	double driver_pid;       /* the driver process (fork_check: the child must differ) */
};

void fz_outcome_free(struct fz_outcome *out);

/* fz_session.c: the input's calls on driver d of case c (the faults are
 * in place): its runs (run, or run_concurrent unless *no_concurrent; set
 * when the driver answers it with a ProtocolError), its component session,
 * executor runs or fork_check; guard_dir is what fz_code's trip-wire guard
 * takes for a guest's cwd. Fills out->runs. */
struct cf_case;
struct cf_driver;
void fz_session_run(const struct fz_input *in, struct cf_case *c, struct cf_driver *d, const char *guard_dir,
		    bool *no_concurrent, struct fz_outcome *out);

/* ---- the invariants (fz_check.c): abort() with the explanation on stderr ---- */
void fz_check(const struct fz_input *in, struct fz_outcome *out);
/* Called (when set) after a finding is printed and before abort(): the
 * fuzzer's harness stops its drivers and mock and removes its scratch dir,
 * which abort() would leave behind. */
extern void (*fz_on_finding)(void);
/* The same checks; instead of abort() a broken invariant fills inv/why
 * (the first one broken) and returns false. The full explanation goes to
 * report (may be NULL: none). */
bool fz_check_report(const struct fz_input *in, struct fz_outcome *out, char *inv, size_t inv_cap, char *why,
		     size_t why_cap, FILE *report);
/* fz_check_surface.c: the backend requests of journal rows [lo, hi) that
 * match method and pattern with a status in [slo, shi] (fz_check.c too). */
int fz_journal_count(const cJSON *j, int lo, int hi, const char *method, const char *pattern, int slo,
		     int shi);
/* fz_check_surface.c: the surface invariants (5 reuse, 6 files, 7 fork);
 * broken() is fz_check.c's reporter. */
void fz_check_surface(const struct fz_input *in, const struct fz_outcome *o,
		      void (*broken)(const struct fz_input *, const struct fz_outcome *, const char *, const char *, ...)
			      __attribute__((format(printf, 4, 5))));

#endif

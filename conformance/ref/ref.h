/* ref: what the reference backend's files share: its settings (read once
 * from the environment), its quirks (the mutants' broken promises, off in
 * the reference), the per-process state and one job in a guest.
 *
 * Layering, one way only: ref_backend.c (the driver's ops and main) ->
 * ref_job.c (one run in a guest) -> ref_guest.c (guest calls) and
 * ref_preflight.c (refusals, whoami, shape) -> ref_http.c; ref_util.c,
 * ref_settings.c and ref_quirks.c are leaves. Internal to conformance/ref:
 * never included by the runner, whose only view of a backend is the line
 * protocol. */
#ifndef REF_H
#define REF_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "ref_http.h"
#include "sbx/driver.h"

#define FILES_MAX_BYTES (5L * 1024 * 1024)
#define FILES_MAX_COUNT 256
#define HTTP_SLACK_S 3

struct settings {
	const char *api_key;    /* NULL when neither variable is set */
	const char *key_var;    /* which variable the key came from */
	char base_url[512];
	long timeout_s;
	long memory_mb;
	bool allow_network;
	int domain_count;       /* non-blank items of ALLOWED_DOMAINS */
	char domains[1024];     /* the raw value */
	bool accept_exceptions;
	const char *shape_pin;
	char bad_setting[512];  /* first settings error, "" when none */
};

/* Each quirk breaks exactly one promise (the mutant of the same name, see
 * ref_quirks.c and conformance/README.md); all false in the reference. */
struct ref_quirks {
	bool local_fallback;         /* runs the code on the host when the control plane is unreachable */
	bool delete_only_on_success; /* deletes the guest only after exit 0 */
	bool leak_on_timeout;        /* keeps a timed-out run's guest */
	bool retry_create_503;       /* retries create on 503 */
	bool egress_empty_when_off;  /* sends [] with the network off */
	bool egress_star_when_off;   /* sends ["*"] with the network off */
	bool forward_domains;        /* forwards allowed domains as host rules */
	bool claim_allowlist;        /* claims a domain allowlist (and forwards domains) */
	bool no_accept_check;        /* runs network-off without the accept variable */
	bool io_in_capabilities;     /* whoami inside capabilities() */
	bool ignore_timeout;         /* execs python without `timeout` */
	bool shared_output;          /* one static output buffer for every thread */
	bool reuse_drift;            /* reuses a guest whose egress drifted */
	bool no_resume;              /* does not resume a paused reuse guest */
	bool whoami_every_run;       /* preflight on every run */
	bool autopause_wrong;        /* auto_pause_after_seconds = timeout + 60 */
	bool no_timeout_map;         /* returns the guest's 124/137 instead of -1 */
	bool refuse_as_execution;    /* refuses with SandboxExecutionError */
	bool wait_on_cap;            /* waits and retries when over the account cap */
	bool executor_leak;          /* the executor deletes its guest only on success */
	bool files_uncapped;         /* Return Files without the count and size caps */
	bool create_before_refusal;  /* creates (and deletes) a guest before refusing domains */
	bool fork_shares_conn;       /* reset_after_fork keeps the parent's lock and connections */
	bool ignore_shape_pin;       /* picks the shape automatically even when one is pinned */
	bool pin_keeps_floor;        /* refuses a pinned shape below 4096 MiB (the automatic floor) */
};

struct ref {
	struct settings s;
	struct ref_quirks q;
	ref_http *http;
	pthread_mutex_t *lock;  /* guards the preflight state; heap for fork */
	bool preflight_done;
	char shape[64];
	sbxd_error preflight_err; /* sticky preflight failure */
	bool preflight_failed;
	bool shut;
};

/* One run in a guest (ref_job.c). */
struct job {
	const char *name;     /* guest name */
	cJSON *egress;        /* given to create (owned by the job until then), NULL = omit */
	const char *policy;   /* egress policy text, for reuse drift checks */
	const cJSON *env;
	bool shell;           /* code is a shell command, not Python */
	const char *code;
	const char *file_prefix; /* "main" or "flow" */
	bool reuse;           /* find/resume the named guest, never delete it */
	bool return_files;
	bool executor;
};

struct exec_out {
	char *stdout_s;
	char *stderr_s;
	long exit_code;
	long exec_ms;
};

/* ---- ref_quirks.c ---- */
/* Sets the quirk called name ("retry-create-503"); false when unknown. */
bool ref_quirk_set(struct ref_quirks *q, const char *name);
/* Prints every quirk name and what it breaks, one per line. */
void ref_quirks_list(FILE *out);

/* ---- ref_settings.c ---- */
void settings_load(struct settings *s);

/* ---- ref_util.c ---- */
const char *str_field(const cJSON *o, const char *k);
bool bool_field(const cJSON *o, const char *k, bool dflt);
double now_ms(void);
void sleep_ms(long ms);

/* ---- ref_preflight.c ---- */
/* The integration's own refusals, in order, before anything is created. */
int refuse_early(const struct ref *r, bool allow_network, bool check_domains, sbxd_error *err);
/* whoami once per process, then the shape; a refusal-class failure sticks. */
int preflight(struct ref *r, sbxd_error *err);

/* ---- ref_guest.c ---- */
int delete_guest(struct ref *r, const char *id, const char *name);
/* POST /v1/sandboxes (egress consumed). Returns the new id (caller frees) or NULL. */
/* POST /v1/sandboxes (egress is consumed). A create whose answer was lost is
 * reaped by name, except a reuse guest's (reuse): the spec's reuse guests are
 * never deleted by the plugin, and the next call of that flow adopts it by
 * its name, so it is no orphan. */
char *create_guest(struct ref *r, const char *name, cJSON *egress, const cJSON *env, bool reuse, sbxd_error *err);
int upload(struct ref *r, const char *id, const char *path, const char *data, sbxd_error *err);
int exec_in(struct ref *r, const char *id, const char *const *argv, struct exec_out *o, sbxd_error *err);
void exec_out_free(struct exec_out *o);
/* Return Files: /workspace/artifacts as [{path, size, sha256}] (caller frees). */
cJSON *collect_files(struct ref *r, const char *id, sbxd_error *err);
/* Finds the reuse guest and makes it runnable. Returns its id (caller
 * frees), NULL with *err set on refusal/failure, or NULL with *err empty
 * when there is no such guest. */
char *reuse_guest(struct ref *r, const struct job *j, sbxd_error *err);

/* ---- ref_job.c ---- */
/* Runs j in a guest (created, or reused), deletes it unless reused; returns
 * the run result (caller frees) or NULL with *err set. Consumes j->egress. */
cJSON *do_job(struct ref *r, struct job *j, sbxd_error *err);

#endif

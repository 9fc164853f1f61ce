/* model: the state of the mock control plane — tenants, sandboxes and their
 * lifecycle state machine, caps and quotas, networks, disks, templates, the
 * virtual clock and timing profiles.
 *
 * Files: model.c (catalog, clock, ids, tenants, indexes, hosts),
 * model_sandbox.c, model_network.c, model_disk.c, model_template.c,
 * model_persist.c (dump and restore); model_internal.h is what they share.
 *
 * It knows nothing of HTTP and never touches a socket or a guest process:
 * the operations (ops/) take the model lock and call a model function with
 * the structs below that the handlers parsed; the model alone writes a
 * sandbox's status (ops and durable state call the setters here). Errors
 * come back as a mock_err (status, machine code, offending field, message)
 * so the handlers can render them unchanged. Views are built as cJSON trees (the wire shape
 * is part of the contract, not of HTTP).
 *
 * Locking: every function taking a mock_model requires the caller to hold
 * model->lock, except mock_model_new/free. A sandbox object is freed only
 * when nothing holds it: its `busy` count (an in-flight create, fork, exec
 * or file transfer) is 0 and its guest was released (guest == NULL), so a
 * pointer taken under the lock and marked busy stays valid after unlocking.
 * What frees one: the retention bound on destroyed sandboxes
 * (MOCK_DESTROYED_KEEP, mock_tick) and reset (busy ones wait in a
 * graveyard). */
#ifndef SBX_MOCK_MODEL_H
#define SBX_MOCK_MODEL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sbx/egress.h"
#include "sbx/strbuf.h"

#define MOCK_NAME_MAX 22
#define MOCK_ID_MAX 40
#define MOCK_ENVS_MAX 64
#define MOCK_ENV_VALUE_MAX 4096
#define MOCK_ENVS_TOTAL_MAX 65536
#define MOCK_NETWORKS_PER_KEY 5
#define MOCK_BW_DEFAULT_QUOTA (5LL * 1024 * 1024 * 1024)
/* Destroyed sandboxes a tenant's GET, list (status=destroyed), repeated
 * DELETE and the admin state still see: the most recently destroyed ones.
 * Older ones are forgotten (404), so a long run's memory stays bounded. */
#define MOCK_DESTROYED_KEEP 1000

typedef enum mock_status {
	ST_CREATING,
	ST_RUNNING,
	ST_PAUSING,
	ST_PAUSED,
	ST_RESUMING,
	ST_FORKING,
	ST_ERROR,
	ST_DESTROYING,
	ST_DESTROYED,
	ST_FAILED,
	ST__COUNT,
} mock_status;

const char *mock_status_name(mock_status st);
/* -1 when the name is not a status. */
int mock_status_parse(const char *name);
bool mock_status_terminal(mock_status st); /* destroyed or failed */

typedef struct mock_err {
	int status;          /* HTTP status to answer */
	char code[40];       /* data.code, may be empty */
	char field[40];      /* data key naming the field ("error" when none) */
	char msg[512];
} mock_err;

void mock_err_set(mock_err *e, int status, const char *code, const char *field,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

typedef struct mock_shape {
	const char *id;
	unsigned vcpu;
	unsigned mem_mib;
	unsigned default_disk_mib;
	unsigned cpu_quota_pct; /* 0: not reported */
} mock_shape;

const mock_shape *mock_shape_find(const char *id);
extern const mock_shape mock_shapes[];
extern const size_t mock_shape_count;

typedef struct mock_rootfs {
	const char *name;
	const char *description;
	bool deprecated;
	const char *successor;
} mock_rootfs;

extern const mock_rootfs mock_rootfses[];
extern const size_t mock_rootfs_count;
#define MOCK_ROOTFS_DEFAULT "devbox:1"

struct mock_guest; /* owned by the HTTP/guest layer, opaque here */

typedef struct mock_tenant {
	/* The API key; NULL for a tenant restored from the durable log until a
	 * request presents the key whose key_hash matches (the log stores no
	 * key, only that hash). */
	char *key;
	char key_hash[65];  /* HMAC-SHA256(state dir secret, key), hex; "" without a secret */
	char user_id[40];
	int cap;            /* -1: the global setting */
	int credit;         /* -1: the global setting, else 0/1 */
	uint64_t requests;  /* control-plane requests seen (fault "request" match) */
	uint32_t persist_crc; /* durable state: CRC of the last record written for it */
	cJSON *networks;    /* array of {id,name,created_at,members:[...]} */
	cJSON *disks;       /* array of disk views + "_credentials" never shown */
	cJSON *templates;   /* array of {id,name,status,...,"_logs":[...], "_created_ms"} */
	struct mock_tenant *next;
} mock_tenant;

/* A desktop's screen as the mock started it (ops_computer.c): the size it
 * asked its X server for (0: no such screen) and whether a create, resize
 * or delete of it is under way. The guest's own record of it is input
 * (root in the guest can rewrite it), so sizes come from here. */
#define MOCK_SANDBOX_SCREENS 8
typedef struct mock_screen {
	uint16_t width, height;
	bool held;
} mock_screen;

typedef struct mock_sandbox {
	char id[MOCK_ID_MAX];
	char name[MOCK_NAME_MAX + 1];
	mock_tenant *tenant;
	mock_status status;
	const mock_shape *shape;
	char rootfs[64];
	/* rootfs names a template: its id (its layer, TEMPLATES.md) and its
	 * base (the image below the layer); "" otherwise */
	char tpl_id[64];
	char tpl_base[64];
	char region[64];
	unsigned vcpu, mem_mib, disk_mib;
	char ip[16];
	int64_t created_ms, running_ms, paused_ms, resumed_ms, destroyed_ms;
	int64_t spawn_ms;
	int64_t due_ms;        /* pending transition time, -1 none */
	mock_status due_status;
	int64_t last_active_ms;
	int auto_pause_s;      /* 0: off */
	bool ingress_enabled;
	sbx_egress_list egress;
	cJSON *envs;           /* object key -> string value (values never shown) */
	cJSON *ssh_pubkeys;    /* array of strings */
	cJSON *disks;          /* array of {disk_id, mount_path, sub_path?} */
	cJSON *networks;       /* array of network ids */
	char forked_from[MOCK_ID_MAX];
	char host_id[40];
	int64_t bw_quota;      /* -1 unmetered */
	int64_t bw_used, bw_ingress;
	unsigned busy;         /* execs/file ops in flight */
	unsigned resume_polls; /* lifecycle fault: polls left before running */
	bool destroy_stuck;    /* lifecycle fault: stays destroying */
	bool cold_start;       /* its host died: the next resume is a cross-host cold start */
	bool self_deleted;     /* its guest deleted it (/self/delete): its self-signal
				  listener stays until reset, as it carries the answer */
	uint32_t persist_crc;  /* durable state: CRC of the last record written for it */
	struct mock_guest *guest; /* set by the guest layer */
	/* a desktop's screens, set at its guest's boot (never persisted: a
	 * restart boots screen-0 again); under the model lock */
	mock_screen screens[MOCK_SANDBOX_SCREENS];
} mock_sandbox;

typedef enum mock_timing_kind { TIMING_INSTANT, TIMING_REALISTIC } mock_timing_kind;

/* A template build's default limits (TEMPLATES.md; settable). */
#define MOCK_TPL_BUILD_TIMEOUT_S 900u
#define MOCK_TPL_BUILD_DISK_MIB 4096u
#define MOCK_TPL_BUILD_MEM_MIB 2048u
/* Concurrent builds (pending or building) per tenant and in the whole
 * mock: the mock's own caps (no live limit is known; LIMITS.md). Each
 * build holds a cell with up to template_build_mem_mib of memory, so the
 * mock's total stays bounded. */
#define MOCK_TPL_BUILD_CAP 4u
#define MOCK_TPL_BUILD_CAP_GLOBAL 8u
/* Templates kept: per key their number, and their storage per key and in
 * the mock (LIMITS.md). A ready template holds its layer's bytes; a build
 * that has not ended holds its disk, reserved at its create out of what
 * the key and the mock have left (at most template_build_disk_mib), so
 * builds at once cannot overshoot either bound. A key building 64 MiB
 * templates never holds more than 1 GiB, long before 2. */
#define MOCK_TPL_CAP 32u
#define MOCK_TPL_STORAGE_MIB 1024u
#define MOCK_TPL_STORAGE_MIB_GLOBAL 8192u
/* their settings' and flags' ranges */
#define MOCK_TPL_CAP_MAX 100000u
#define MOCK_TPL_STORAGE_MIB_MAX (16u * 1024 * 1024)
/* the smallest disk a build is given (the least template_build_disk_mib): with
 * less left a create is refused */
#define MOCK_TPL_BUILD_DISK_MIN_MIB 16u
/* What one step of a build may hold (LIMITS.md): the create refuses a
 * Dockerfile past them and the runner never cuts one. An exec-form RUN's
 * words (the runner's argv holds 256, runuser's four for a USER among
 * them); the distinct names ENV and ARG give the steps' environment; a
 * USER's name (a Linux account name is at most 32 bytes). */
#define MOCK_TPL_RUN_ARGS_MAX 252
#define MOCK_TPL_ENV_MAX 256
#define MOCK_TPL_USER_MAX 63

typedef struct mock_settings {
	unsigned sandbox_cap;
	unsigned cap_status;
	char cap_code[64];
	bool credit;
	sbx_host_rule_mode host_rule_mode;
	bool accept_any_key;
	double timing_scale;   /* 0 instant, 1 realistic, else factor of realistic */
	size_t max_egress_rules;
	char region[64];
	bool ready;
	/* a template build's limits (TEMPLATES.md) */
	unsigned tpl_build_timeout_s;
	unsigned tpl_build_disk_mib;
	unsigned tpl_build_mem_mib;
	unsigned tpl_build_cap;        /* concurrent builds per tenant */
	unsigned tpl_build_cap_global; /* concurrent builds in the mock */
	unsigned tpl_cap;              /* templates kept per tenant */
	unsigned tpl_storage_mib;      /* their storage per tenant */
	unsigned tpl_storage_mib_global; /* and in the mock */
} mock_settings;

typedef struct mock_model {
	pthread_mutex_t lock;
	mock_settings set;
	mock_tenant *tenants;
	mock_tenant *dead_tenants; /* dropped by reset, freed at the end */
	mock_sandbox **sbx;     /* every sandbox, creation order, destroyed included */
	size_t nsbx, capsbx;
	/* Indexes over sbx, so a long run's destroyed sandboxes cost nothing:
	 * id -> sandbox (open addressing, at most half full), and the
	 * sandboxes not destroyed, in creation order (destroyed ones are
	 * dropped from it by mock_tick). */
	mock_sandbox **by_id;
	size_t by_id_cap, by_id_n;
	mock_sandbox **live;
	size_t nlive, caplive;
	mock_sandbox **grave;   /* dropped by reset while busy, freed once not */
	size_t ngrave, capgrave;
	size_t trim_at;         /* trim destroyed sandboxes when this many (mock_tick) */
	/* Guests of destroyed sandboxes that nothing holds any more, to be
	 * freed outside the lock (ops.c: the model never touches a guest). */
	struct mock_guest **reap;
	size_t nreap, capreap;
	int64_t clock_offset_ms; /* added by clock/advance */
	int64_t start_mono_ms;
	int64_t start_wall_ms;
	int64_t next_due_ms;    /* earliest pending transition, INT64_MAX none */
	int64_t not_ready_until_ms; /* cp_restart: readyz 503 until this clock time */
	uint32_t ip_next;
	/* Hosts: host-local-1 .. host-local-<hosts_dead + 1>; every one but the
	 * last died (fault host_dies) and the last is the active one, where
	 * creates and cold starts land. */
	unsigned hosts_dead;
	uint64_t id_counter;
	unsigned tenant_counter;
	/* --state-dir: the secret that keys the tenants' key_hash, and how
	 * many tenants still wait for their key (key == NULL) */
	uint8_t key_secret[32];
	bool key_secret_set;
	unsigned dormant;
	/* The ingress proxy's "http://127.0.0.1:PORT" (ingress.h), set once at
	 * start; "" when it is off (the template then names a host that
	 * nothing serves, as before ingress was served) */
	char ingress_base[64];
} mock_model;

mock_model *mock_model_new(const mock_settings *set);
void mock_model_free(mock_model *m);
/* Forget every tenant and sandbox: a sandbox with busy 0 and no guest is
 * freed, the others go to the graveyard until they are. */
void mock_model_reset(mock_model *m);
/* Transition durations in ms for the current timing profile. */
int64_t mock_timing_ms(const mock_model *m, const char *what);

/* Virtual clock: real time since start plus everything advanced. */
int64_t mock_now(const mock_model *m);
void mock_advance(mock_model *m, int64_t ms);
/* Applies every transition due at mock_now (auto-pause, pausing->paused...),
 * drops destroyed sandboxes from the live index and forgets a tenant's
 * destroyed sandboxes beyond MOCK_DESTROYED_KEEP (the least recently
 * destroyed first; one still busy or with a guest is kept until it is
 * not). Calls on_change(sb,
 * from, arg), when on_change is not NULL, for each sandbox whose status
 * changed (a due transition or an auto-pause), so the caller can act on its
 * guest: freeze it when paused, kill it when destroyed. */
void mock_tick(mock_model *m, void (*on_change)(mock_sandbox *sb, mock_status from, void *arg),
	       void *arg);

/* RFC 3339 with milliseconds, UTC, for a mock_now() value. */
void mock_rfc3339(const mock_model *m, int64_t clock_ms, char *buf, size_t cap);
/* Fresh ids: prefix + ULID (26 Crockford base32 chars). */
void mock_new_id(mock_model *m, const char *prefix, char *buf, size_t cap);

/* Tenants. lookup returns NULL when unknown and accept_any_key is false
 * (or known_only). */
mock_tenant *mock_tenant_get(mock_model *m, const char *key, bool create);
/* The tenant whose key_hash is hash; with create, a new one without a key
 * (restored from the durable log; mock_tenant_get re-associates it when its
 * key is presented). NULL when absent (or out of memory). */
mock_tenant *mock_tenant_by_hash(mock_model *m, const char *hash, bool create);
/* Sets the secret of the tenants' key hashes (--state-dir) and hashes the
 * keys of the tenants that exist. */
void mock_model_set_key_secret(mock_model *m, const uint8_t secret[32]);
mock_tenant *mock_tenant_add(mock_model *m, const char *key);
unsigned mock_tenant_cap(const mock_model *m, const mock_tenant *t);
bool mock_tenant_credit(const mock_model *m, const mock_tenant *t);
unsigned mock_tenant_live_count(const mock_model *m, const mock_tenant *t);

/* Sandboxes. find returns NULL for another tenant's sandbox. */
mock_sandbox *mock_sandbox_find(mock_model *m, const mock_tenant *t, const char *id);
mock_sandbox *mock_sandbox_find_any(mock_model *m, const char *id);
mock_sandbox *mock_sandbox_find_ip(mock_model *m, const mock_tenant *t, const char *ip);

typedef struct mock_create_req {
	const char *shape;       /* required */
	const char *rootfs;      /* NULL: default */
	const char *name;        /* NULL: none */
	const char *region;      /* NULL: the server's */
	unsigned disk_mib;       /* 0: shape default */
	bool ingress_enabled;
	int auto_pause_s;        /* 0: off; otherwise validated 60..86400 */
	bool has_auto_pause;
	sbx_egress_list egress;  /* borrowed; copied */
	const cJSON *envs;       /* object or NULL, borrowed */
	const cJSON *ssh_pubkeys;/* array or NULL */
	const cJSON *networks;   /* array of {id} or NULL */
	const cJSON *disks;      /* array or NULL */
	const char *host_id;
	int64_t bw_quota;        /* must be 0 on create */
} mock_create_req;

/* Validates envs: keys ^[A-Za-z_][A-Za-z0-9_]*$, <=64 entries, values
 * strings <= 4 KiB, total <= 64 KiB. */
int mock_validate_envs(const cJSON *envs, mock_err *e);
/* Names, per resource (spec "Names of other resources"; README "Limits"):
 * a sandbox's: 1-22 of letters, digits, '-', '_', '.' (the live rule);
 * a disk's: ^[a-z0-9][a-z0-9-]{0,62}$ (the live rule); a network's or a
 * template's: no limit is known upstream, so only what the mock needs to
 * address it by name in a URL path: 1-MOCK_RES_NAME_MAX bytes, no '/',
 * no control character. */
#define MOCK_RES_NAME_MAX 255
int mock_validate_name(const char *name, mock_err *e);
int mock_validate_disk_name(const char *name, mock_err *e);
int mock_validate_res_name(const char *name, mock_err *e);

/* Creates a sandbox in state `creating` (the caller finishes it with
 * mock_sandbox_set_running once the guest exists). */
mock_sandbox *mock_sandbox_create(mock_model *m, mock_tenant *t, const mock_create_req *req,
				  mock_err *e);
void mock_sandbox_set_running(mock_model *m, mock_sandbox *sb);
/* Its guest did not start (a create or fork): failed, a sandbox that never
 * ran. */
void mock_sandbox_set_boot_failed(mock_model *m, mock_sandbox *sb);
/* A restored sandbox whose guest could not be started again: error. */
void mock_sandbox_set_guest_lost(mock_model *m, mock_sandbox *sb);
/* Fault pause_error: the pause under way (202) ends in error. */
void mock_sandbox_pause_ends_in_error(mock_model *m, mock_sandbox *sb);

/* Lifecycle calls. Return the HTTP status to answer (200 or 202) or -1 with
 * *e set. */
int mock_sandbox_pause(mock_model *m, mock_sandbox *sb, mock_err *e);
int mock_sandbox_resume(mock_model *m, mock_sandbox *sb, mock_err *e);
/* Destroy: returns 200; *now_destroyed tells whether it ended at once. */
int mock_sandbox_destroy(mock_model *m, mock_sandbox *sb, bool *now_destroyed, mock_err *e);

typedef struct mock_fork_req {
	bool start_paused;
	bool has_ingress;
	bool ingress_enabled;
	bool has_egress;
	sbx_egress_list egress;  /* borrowed */
	const cJSON *envs;
	const cJSON *ssh_pubkeys;
	int64_t bw_quota;        /* 0: inherit default */
} mock_fork_req;
mock_sandbox *mock_sandbox_fork(mock_model *m, mock_sandbox *src, const mock_fork_req *req,
				mock_err *e);
/* "host-local-N" of the active host. */
void mock_active_host(const mock_model *m, char *buf, size_t cap);
/* Fault host_dies: every live sandbox on host_id ("" or NULL = every host)
 * fails — creating ends `failed`, the others `error` — and its next resume
 * is a cross-host cold start (timing "cold_start"). Calls on_change for each
 * sandbox whose status changed. Returns how many sandboxes were hit. */
size_t mock_host_die(mock_model *m, const char *host_id,
		     void (*on_change)(mock_sandbox *sb, mock_status from, void *arg), void *arg);
/* The timing ("resume" or "cold_start") the next resume of sb takes. */
const char *mock_resume_timing(const mock_sandbox *sb);
/* readyz: ready unless switched off or inside a cp_restart window. */
bool mock_ready(const mock_model *m);

/* Durable state, model_persist.c (mutation_log.c frames and syncs, durable.c decides when): the
 * persistent part of a tenant / sandbox as JSON, and the way back. Volatile
 * fields (idle timer, pending transitions, in-flight counters) are left out. */
cJSON *mock_tenant_dump(const mock_tenant *t);
cJSON *mock_sandbox_dump(const mock_sandbox *sb);
int mock_tenant_restore(mock_model *m, const cJSON *o, char *why, size_t cap);
/* True when a tenant or sandbox record names its tenant by the raw API key
 * (the format before keyed hashes): such a log is refused (durable.c). */
bool mock_record_has_raw_key(const cJSON *o);
int mock_sandbox_restore(mock_model *m, const cJSON *o, char *why, size_t cap);
/* The log began at wall time start_wall_ms: keep the clock continuous
 * (in model.c, with the rest of the clock). */
void mock_model_restore_clock(mock_model *m, int64_t start_wall_ms);
/* After a restart: processes are gone, so live sandboxes come back
 * `paused` (files kept), `creating` ends `failed`, `destroying` ends
 * `destroyed` (unless stuck by a fault); counters continue. */
void mock_model_after_restore(mock_model *m);

/* Marks activity (auto-pause idle timer). */
void mock_sandbox_touch(mock_model *m, mock_sandbox *sb);

/* Views. */
cJSON *mock_sandbox_view(const mock_model *m, const mock_sandbox *sb);
cJSON *mock_sandbox_create_view(const mock_model *m, const mock_sandbox *sb);
cJSON *mock_bandwidth_view(const mock_sandbox *sb);
cJSON *mock_whoami_view(const mock_model *m, const mock_tenant *t);
cJSON *mock_shape_view(const mock_shape *s);
cJSON *mock_rootfs_view(void);

/* Networks, disks, templates (stored as cJSON in the tenant):
 * model_network.c, model_disk.c, model_template.c. */
cJSON *mock_network_find(mock_tenant *t, const char *id_or_name);
cJSON *mock_network_create(mock_model *m, mock_tenant *t, const char *name, mock_err *e);
int mock_network_delete(mock_model *m, mock_tenant *t, const char *id_or_name, mock_err *e);
/* A network as the SDK's Network: member_count, and with_members the
 * members as NetworkMember objects {sandbox_id, status, ip?, name?}. */
cJSON *mock_network_view(mock_model *m, const cJSON *net, bool with_members);
cJSON *mock_disk_find(mock_tenant *t, const char *id_or_name);
cJSON *mock_disk_create(mock_model *m, mock_tenant *t, const cJSON *body, mock_err *e);
int mock_disk_delete(mock_model *m, mock_tenant *t, const char *id_or_name, mock_err *e);
cJSON *mock_disk_view(const cJSON *disk);
/* Checks one DiskAttachment {disk_id, mount_path, sub_path?} (400 naming
 * `field` when malformed); resolves disk_id among t's disks (id or name).
 * Returns the stored form {disk_id: the disk_ id, mount_path, sub_path?}. */
cJSON *mock_disk_attachment(mock_tenant *t, const cJSON *att, const char *field, mock_err *e);
/* Resolves every entry of a create request's `disks` (array or NULL): NULL
 * with a 400 in *e when one is malformed, unknown or another tenant's. */
cJSON *mock_disks_resolve(mock_tenant *t, const cJSON *disks, mock_err *e);
/* An attachment as the SDK's SandboxDiskView (name, kind, config,
 * mount_status added from the disk; never its credentials). */
cJSON *mock_sandbox_disk_view(mock_tenant *t, const cJSON *att, bool running);
cJSON *mock_template_find(mock_tenant *t, const char *id);
cJSON *mock_template_create(mock_model *m, mock_tenant *t, const cJSON *body, mock_err *e);
/* Removes t's template id_or_name, its id into id (the caller removes its
 * layer); -1 with a 404 in *e when t has none. Allowed while sandboxes run
 * on it, and while it builds (the build finds no template, and ends). */
int mock_template_delete(mock_model *m, mock_tenant *t, const char *id_or_name, char *id, size_t cap,
			 mock_err *e);
/* The template's view: a copy without the build's bookkeeping, and
 * without its dockerfile unless asked (the only place that hides it: a
 * list never shows it, a get on ?include=dockerfile, a create's answer
 * does). */
cJSON *mock_template_view(mock_model *m, cJSON *tpl, bool dockerfile);
/* Template builds (TEMPLATES.md), lock held: appends a line to the
 * build's log (bounded: the oldest go first), moves its status on
 * (building, ready with its size and built_at, failed); the log's lines
 * from index from, as NDJSON events or text, into out (first a line
 * saying how many of those were not kept, when some were not); the
 * count. */
void mock_template_log(cJSON *tpl, const char *line);
/* Lock held: len bytes of text, lines each ended by '\n', appended as
 * mock_template_log does one (a step's output, one read at a time). */
void mock_template_log_add(cJSON *tpl, const char *text, size_t len);
/* The template as its tenant's state record carries it (DURABLE.md): all
 * but its log, of which the last TPL_LOG_DURABLE_LINES lines, cut. */
cJSON *mock_template_record(const cJSON *tpl);
void mock_template_set_status(mock_model *m, cJSON *tpl, const char *status, double size_bytes);
size_t mock_template_log_lines(const cJSON *tpl, size_t from, bool ndjson, sbx_strbuf *out);
/* Whether the status is final (ready, failed). */
bool mock_template_done(const cJSON *tpl);
/* The tenant's templates whose build has not ended: pending (queued)
 * and building. */
void mock_template_builds(const mock_tenant *t, unsigned *pending, unsigned *building);
/* The storage a tenant's templates hold: ready ones their layers' bytes,
 * builds not ended their reserved disks (LIMITS.md); their number. */
void mock_template_storage(const mock_tenant *t, unsigned *count, double *layer_bytes, double *reserved_bytes);
/* The disk a template's build may fill (MiB), reserved at its create. */
unsigned mock_template_disk_mib(const cJSON *tpl);
/* A ready template's layer measured again (a durable restart recounts). */
void mock_template_set_bytes(cJSON *tpl, double bytes);
/* A tenant's templates just restored from a state record: a build the
 * old mock was running (or one without a status) has no thread now; it
 * ends failed saying so. */
void mock_template_after_restore(mock_tenant *t);
/* The allow-listed bases a Dockerfile's FROM may name. */
extern const char *const mock_template_bases[];

#endif

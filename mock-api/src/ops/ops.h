/* ops: the operations of the mock control plane, below HTTP — create,
 * fork, pause, resume, destroy, exec and file setup, and every other read
 * or change of the model a request makes. An operation takes the model
 * lock, runs the clock (mock_tick), applies timing profiles and the effects
 * of a fired fault rule, and drives the guest; it reports a refusal as a
 * mock_err for the HTTP layer to render unchanged.
 *
 * It must never know HTTP: no microhttpd, no mreq/mresp, no status lines
 * beyond the mock_err / return codes the model already speaks. Callers
 * (api_*.c, admin.c, self.c, http.c, fault_apply.c, scenario.c, server.c)
 * never take model->lock themselves. */
#ifndef SBX_MOCK_OPS_H
#define SBX_MOCK_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "faults/faults.h"
#include "guest/guest.h"
#include "model/model.h"
#include "sbx/err.h"
#include "sbx/mock.h"

/* One operation on a sandbox named by the request. The caller fills mock,
 * t (NULL: any tenant's sandbox, for the self-signal listener), id and
 * fault; the operation fills found and, when it fails, err. */
typedef struct mock_op {
	sbx_mock *mock;
	mock_tenant *t;
	const char *id;                 /* the sandbox id the request names; NULL: none (404) */
	const mock_fault_action *fault; /* the fault rule that fired, NULL when none */
	char found[MOCK_ID_MAX];        /* out: the id of the sandbox found, "" when none */
	mock_sandbox *sb;               /* out: exec/files: the sandbox to pass to *_end */
	int64_t poll_ms;                /* out: pause/resume: the transition's duration */
	mock_err err;                   /* out: the refusal */
} mock_op;

/* ---- tenants, health, catalog (ops.c) ---- */
mock_tenant *mock_op_tenant(sbx_mock *mock, const char *key);
bool mock_op_ready(sbx_mock *mock);
cJSON *mock_op_whoami(sbx_mock *mock, mock_tenant *t);
/* Hosts that died (fault host_dies), and the live VMs on the active one. */
unsigned mock_op_hosts(sbx_mock *mock, unsigned *active_vms);
size_t mock_op_max_egress_rules(sbx_mock *mock);

/* ---- sandbox lifecycle (ops.c): a view (owned by the caller) or NULL
 * with op->err set ---- */
cJSON *mock_op_create(mock_op *op, const mock_create_req *q);
cJSON *mock_op_fork(mock_op *op, const mock_fork_req *q);
/* *status: 200 or 202 (then op->poll_ms is the transition's duration). */
cJSON *mock_op_pause(mock_op *op, int *status);
cJSON *mock_op_resume(mock_op *op, int *status);
/* {id, status}. */
cJSON *mock_op_destroy(mock_op *op);
cJSON *mock_op_get(mock_op *op);
cJSON *mock_op_by_ip(mock_op *op, const char *ip);
/* Views of t's sandboxes in status want (-1: every one not destroyed),
 * items [offset, offset+limit) of them; *total counts them all. */
cJSON *mock_op_list(sbx_mock *mock, mock_tenant *t, int want, size_t limit, size_t offset,
		    size_t *total);

typedef struct mock_patch_req {
	bool has_ingress, ingress;
	bool has_auto_pause;
	int auto_pause_s;
	bool disable_auto_pause;
} mock_patch_req;
cJSON *mock_op_patch(mock_op *op, const mock_patch_req *p);
/* {id, disk_mib}. */
cJSON *mock_op_resize(mock_op *op, unsigned disk_mib);
/* Adds the (validated, non-empty string) keys not there yet: {count}. */
cJSON *mock_op_add_ssh_keys(mock_op *op, const cJSON *keys);

/* The process groups of every live guest, for the self-signal listener. */
typedef struct mock_guest_group {
	pid_t pgid;
	char sandbox_id[MOCK_ID_MAX];
	mock_tenant *tenant;
} mock_guest_group;
size_t mock_op_guest_groups(sbx_mock *mock, mock_guest_group *out, size_t cap);
/* The tenant owning sandbox id, for the self-signal listener of contained
 * mode; NULL with *e set: 404 when the model has no such sandbox, 410 when
 * it is destroyed. */
mock_tenant *mock_op_sandbox_tenant(sbx_mock *mock, const char *id, mock_err *e);

/* ---- exec and files (ops_res.c) ----
 * begin: the running sandbox's guest, marked busy (op->sb set), or NULL
 * with op->err set; every begin that succeeded is paired with one end. */
typedef struct mock_exec_env {
	char **kv;   /* "K=V": the sandbox envs overridden by the exec's */
	size_t n;
	bool isolate_net; /* egress is closed: run without a network */
} mock_exec_env;
mock_guest *mock_op_exec_begin(mock_op *op, const cJSON *env, mock_exec_env *xe);
void mock_exec_env_free(mock_exec_env *xe);
mock_guest *mock_op_files_begin(mock_op *op);
/* Managed processes (ops_procs.c): the sandbox's guest, marked busy (pair
 * with mock_op_io_end), or NULL with op->err set: 404 no such sandbox of
 * op->t, 409 when its guest is gone or, with running, it is not running
 * (control calls; reads also serve a paused sandbox). Starting one uses
 * mock_op_exec_begin. */
mock_guest *mock_op_procs_begin(mock_op *op, bool running);
void mock_op_io_end(sbx_mock *mock, mock_sandbox *sb);
/* ---- metrics (ops_metrics.c) ---- */
/* The sandbox's CPU and memory now: 404 another tenant's, 409 one without
 * a guest (creating, destroyed, failed), 501 in plain guest mode. */
cJSON *mock_op_sandbox_metrics(mock_op *op);
/* The tenant's sandboxes, allocations and usage now. */
cJSON *mock_op_user_metrics(mock_op *op);
/* The tenant's live sandboxes and allocations every step_s over the last
 * window_s seconds of the virtual clock (window_s / step_s points + 1). */
cJSON *mock_op_user_timeseries(mock_op *op, int64_t window_s, int64_t step_s);

/* Ingress (any tenant: the URL names the sandbox): an unconnected TCP
 * socket of sandbox id's network namespace, when it runs with ingress on.
 * -1 with *status (404 no such sandbox or ingress off, 503 not running,
 * 502 its environment did not answer) and err. */
int mock_op_ingress_socket(sbx_mock *mock, const char *id, int *status, sbx_err *err);

/* ---- egress, bandwidth, a sandbox's networks and disks (ops_res.c) ---- */
cJSON *mock_op_egress_get(mock_op *op);
/* Swaps *list in (the old rules come back in *list for the caller to free). */
cJSON *mock_op_egress_put(mock_op *op, sbx_egress_list *list);
cJSON *mock_op_bandwidth(mock_op *op);
cJSON *mock_op_bandwidth_recharge(mock_op *op, int64_t add);
int mock_op_network_attach(mock_op *op, const char *net);
int mock_op_network_detach(mock_op *op, const char *net);
/* A copy of the sandbox's disk attachments. */
cJSON *mock_op_sandbox_disks(mock_op *op);
int mock_op_disk_attach(mock_op *op, const char *disk_id, const char *mount, const char *sub_path);
int mock_op_disk_detach(mock_op *op, const char *disk, const char *mount);

/* ---- a tenant's networks, disks and templates (ops_res.c) ---- */
typedef enum mock_coll { MOCK_NETWORKS, MOCK_DISKS, MOCK_TEMPLATES } mock_coll;
/* Views of every item (templates without their dockerfile). */
cJSON *mock_op_coll_list(sbx_mock *mock, mock_tenant *t, mock_coll c);
/* The item's view, NULL when t has none by that id (or name). */
cJSON *mock_op_coll_get(sbx_mock *mock, mock_tenant *t, mock_coll c, const char *id);
/* Networks take {name} (validated by the caller), disks and templates the
 * request body. */
cJSON *mock_op_coll_create(sbx_mock *mock, mock_tenant *t, mock_coll c, const cJSON *body,
			   mock_err *e);
int mock_op_coll_delete(sbx_mock *mock, mock_tenant *t, mock_coll c, const char *id, mock_err *e);
/* Replaces a disk's credentials: its view, NULL when there is no such disk. */
cJSON *mock_op_disk_credentials(sbx_mock *mock, mock_tenant *t, const char *id, const cJSON *cred);

/* ---- the admin API's model work (ops_admin.c) ---- */
/* mock_settings_apply / mock_settings_view (settings.h) under the lock. */
int mock_op_settings_apply(sbx_mock *mock, const cJSON *b, sbx_err *err);
cJSON *mock_op_settings_view(sbx_mock *mock);
/* GET /_mock/state: {clock_ms, tenants:[{key, user_id, cap, credit,
 * sandboxes}]}, only the tenant keyed tenant when it is not NULL. */
cJSON *mock_op_admin_state(sbx_mock *mock, const char *tenant);
/* GET /_mock/sandboxes: {sandboxes:[...]} of tenant (NULL: every tenant) in
 * status want (-1: any). */
cJSON *mock_op_admin_sandboxes(sbx_mock *mock, const char *tenant, int want);
/* Sets a sandbox's bandwidth counters (NULL: unchanged): its bandwidth
 * view, NULL when id is NULL or names no sandbox. */
cJSON *mock_op_admin_bandwidth(sbx_mock *mock, const char *id, const int64_t *used,
			       const int64_t *ingress);
/* Creates or edits a tenant (NULL: unchanged): {key, user_id, cap, credit},
 * NULL when out of memory. */
cJSON *mock_op_admin_tenant(sbx_mock *mock, const char *key, const int *cap, const int *credit);
/* Advances the virtual clock and runs it: {clock_ms}. */
cJSON *mock_op_clock_advance(sbx_mock *mock, int64_t ms);
/* The egress oracle's inputs: the host rule mode, and a copy of the
 * sandbox's rules (the caller frees it) and whether its bandwidth is used
 * up; -1 when id names no sandbox. */
int mock_op_egress_facts(sbx_mock *mock, const char *id, sbx_egress_list *list, bool *capped,
			 sbx_host_rule_mode *hm);

/* ---- the request pipeline's facts (ops_admin.c) ---- */
/* Counts a request for the fault matcher: the tenant's request number (the
 * anonymous counter's when api_key is NULL or no tenant). name gets the
 * name of the sandbox sandbox_id ("" when NULL, unknown or unnamed). */
uint64_t mock_op_count_request(sbx_mock *mock, const char *api_key, const char *sandbox_id,
			       char *name, size_t cap);
/* The virtual clock, for the journal. */
int64_t mock_op_now(sbx_mock *mock);

/* ---- fault effects and stop (ops_admin.c) ---- */
/* host_dies: every live sandbox on host_id ("" = every host) fails and its
 * processes die; the next resume is a cross-host cold start. */
void mock_op_host_dies(sbx_mock *mock, const char *host_id);
/* cp_restart: readyz answers 503 for not_ready_ms on the virtual clock. */
void mock_op_cp_restart(sbx_mock *mock, int64_t not_ready_ms);
/* GET /_mock/pool: the warm pool's size and counters (cell_pool.h), or
 * {enabled: false, note: why}. */
cJSON *mock_op_pool_view(sbx_mock *mock);
/* GET /_mock/egress/links: what the simulated internet holds for
 * sandboxes, its list and the kernel's table ({enforced: false} without
 * it); NULL with err set when the table cannot be read. */
cJSON *mock_op_egress_links_view(sbx_mock *mock, sbx_err *err);
/* Kills every guest's processes (the mock is stopping). */
void mock_op_kill_guests(sbx_mock *mock);

/* ---- guest hooks (ops.c) ---- */

/* mock_tick's callback: a sandbox that became paused is SIGSTOPped, one
 * that became destroyed loses its guest. arg is the sbx_mock. */
void mock_on_state_change(mock_sandbox *sb, mock_status from, void *arg);
/* Kills the guest's processes and releases it (mock_guest_release). */
void mock_destroy_guest(sbx_mock *mock, mock_sandbox *sb);
/* Lock held: when sb is destroyed (or dropped by a reset), its guest is
 * killed and no request holds sb (busy 0), queues the guest to be freed
 * and sets sb->guest to NULL; otherwise nothing. The last holder's end
 * (mock_op_io_end, create, fork) calls it again. */
void mock_guest_release(sbx_mock *mock, mock_sandbox *sb);
/* Frees the queued guests (their processes are dead; their trees are
 * removed here, outside the lock, as they may be large). Without the lock. */
void mock_op_reap_guests(sbx_mock *mock);
/* Starts sb's guest (its tree and, contained, its cell in a cgroup of
 * the shape's memory and MOCK_GUEST_PIDS_MAX processes); NULL + err. */
#define MOCK_GUEST_PIDS_MAX 512
mock_guest *mock_guest_start(sbx_mock *mock, const mock_sandbox *sb, sbx_err *err);
/* The same for a create: a warm pool's guest bound to sb when one is ready
 * (cell_pool.h), else a fresh one. Forks and restores start fresh ones
 * (their cells begin from copied files). */
mock_guest *mock_guest_start_create(sbx_mock *mock, const mock_sandbox *sb, sbx_err *err);
/* The size of a guest disk for a sandbox of disk_mib: disk_mib, or the
 * guest_disk_max_mib setting when that is smaller; 0 (the host tree,
 * unbounded) with --state-dir. */
unsigned mock_guest_disk_mib(sbx_mock *mock, unsigned disk_mib);
/* Frees every guest (live and destroyed sandboxes), removing their trees
 * when remove (the queued ones of destroyed sandboxes always). At stop
 * only. */
void mock_free_guests(sbx_mock *mock, bool remove);
/* ---- enforced egress (egress_enforce.c; no-ops without the internet) ---- */
/* Joins a started guest to the simulated internet with its rules; -1 +
 * err: the sandbox must not run. Without the model lock. */
int mock_egress_wire(sbx_mock *mock, const mock_sandbox *sb, mock_guest *g, sbx_err *err);
/* The warm pool's hooks (cell_pool.h; arg the sbx_mock) with enforced
 * egress: a pooled cell's link made ahead (mock_internet_prewire), so that
 * a create only adds the sandbox's addresses; and given back when the
 * cell is freed without being handed out. */
int mock_egress_prewire(void *arg, mock_guest *g, sbx_err *err);
void mock_egress_unprewire(void *arg, mock_guest *g);
/* The kernel's copy of a sandbox's rules follows the model's (after PUT
 * egress, a quota change); all: after a change of the host-rule mode.
 * Without the model lock. */
void mock_egress_sync(sbx_mock *mock, const char *id);
void mock_egress_sync_all(sbx_mock *mock);
/* Removes the sandbox's link and chain. Model lock may be held. */
void mock_egress_unwire(sbx_mock *mock, const mock_sandbox *sb);
/* The same for a dead guest's sandbox (named by the guest), when its
 * wiring is still there: with a warm pool, a destroy leaves it to the
 * guest's teardown after the answer (the pool's `on_teardown` hook; arg the
 * sbx_mock). Without the model lock. */
void mock_egress_unwire_guest(void *arg, mock_guest *g);

/* /_mock/reset: kills every guest, empties the model, faults and journal. */
void mock_reset_all(sbx_mock *mock);

#endif

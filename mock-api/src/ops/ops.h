/* ops: the operations of the mock control plane, below HTTP — create,
 * fork, pause, resume, destroy, exec, files, managed processes, and every
 * other read or change of the model a request makes. An operation takes the model
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
#include "model/model.h"
#include "sbx/err.h"
#include "sbx/mock.h"
#include "sbx/strbuf.h"

/* The guests are the operations' to drive (guest/guest.h): above ops
 * they are only a name. */
typedef struct mock_guest mock_guest;

/* One operation on a sandbox named by the request. The caller fills mock,
 * t (NULL: any tenant's sandbox, for the self-signal listener), id and
 * fault; the operation fills found and, when it fails, err. */
typedef struct mock_op {
	sbx_mock *mock;
	mock_tenant *t;
	const char *id;                 /* the sandbox id the request names; NULL: none (404) */
	const mock_fault_action *fault; /* the fault rule that fired, NULL when none */
	char found[MOCK_ID_MAX];        /* out: the id of the sandbox found, "" when none */
	mock_sandbox *sb;               /* out: a guest operation: the sandbox it holds busy */
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

/* ---- exec, files and managed processes (ops_exec.c, ops_files.c,
 * ops_procs.c) ----
 * Each operation goes down once and comes back once: it finds the
 * caller's sandbox and marks it busy (its guest cannot be freed under the
 * call), does the guest's work without the model lock, and unmarks it
 * before it returns (a stream: at mock_op_stream_end). The exec faults
 * (exec_agent_error, exec_oom, exec_stream_cut, exec_heartbeats_only)
 * are applied here, from op->fault. A refusal is op->err: 404 no such
 * sandbox of op->t, 409 NOT_RUNNING, 400 a bad request the guest found. */

/* An env override of an exec or process: key must be one of the
 * sandbox's declared envs. */
typedef struct mock_env_var {
	const char *key, *value;
} mock_env_var;

/* A command as the request gives it. */
typedef struct mock_cmd_req {
	const char *cmd;         /* an executable, not a shell line */
	const char *const *args; /* after cmd */
	size_t nargs;
	const mock_env_var *env; /* overrides of the sandbox's envs */
	size_t nenv;
	const char *cwd;         /* NULL or "": /workspace */
} mock_cmd_req;

typedef struct mock_exec_req {
	mock_cmd_req cmd;
	const char *stdin_data; /* NULL: none */
	size_t stdin_len;
	int64_t timeout_ms;     /* buffered exec: 0 none */
} mock_exec_req;

/* Where a buffered exec's output goes (the caller's, e.g. an answer being
 * written): start(ctx) once the command is about to start, false refusing
 * it (outcome->refused; the caller said why); output(ctx, which, ...)
 * each piece (which 1 stdout, 2 stderr); gone(ctx) true kills the
 * command (its reader left). start and gone may be NULL. */
typedef struct mock_exec_sink {
	bool (*start)(void *ctx);
	void (*output)(void *ctx, int which, const char *buf, size_t n);
	bool (*gone)(void *ctx);
	void *ctx;
} mock_exec_sink;

typedef struct mock_exec_outcome {
	int exit_code;   /* 124 timed out, 137 exec_oom, -1 did not start */
	char error[512]; /* "" or why: did not start, timed out, exec_agent_error's message */
	int64_t exec_ms;
	bool refused;    /* sink->start said no: nothing ran */
} mock_exec_outcome;

/* Runs q's command in the sandbox to its end (or timeout, or gone): 0
 * with *res, -1 with op->err (the command did not start for a reason of
 * the sandbox: not found, not running, an undeclared env key). */
int mock_op_exec(mock_op *op, const mock_exec_req *q, const mock_exec_sink *sink,
		 mock_exec_outcome *res);

/* A stream of NDJSON frames an operation produces while it runs, read on
 * the caller's thread: mock_op_stream_next waits a little (at most
 * MOCK_STREAM_WAIT_MS) and appends what came, a heartbeat frame when
 * silent for the mock's heartbeat interval; MOCK_STREAM_DONE after the
 * last frame, MOCK_STREAM_CUT when the stream must break off (the
 * exec_stream_cut fault), else MOCK_STREAM_MORE. mock_op_stream_end ends
 * the operation (a command still running is killed) and frees s. */
#define MOCK_STREAM_WAIT_MS 200
typedef struct mock_op_stream mock_op_stream;
enum { MOCK_STREAM_MORE, MOCK_STREAM_DONE, MOCK_STREAM_CUT };
int mock_op_stream_next(mock_op_stream *s, sbx_strbuf *out);
void mock_op_stream_end(mock_op_stream *s);
/* exec ?stream: {"stdout"|"stderr": text} frames, {"hb":true}, then
 * {"exit_code":N} (after {"error":why} when it did not start). NULL with
 * op->err. */
mock_op_stream *mock_op_exec_stream(mock_op *op, const mock_exec_req *q);

/* Files (ops_files.c): path is the guest's absolute path (the guest
 * layer confines it): 400 INVALID_PATH, 404 NOT_FOUND, 409 not a regular
 * file, all naming "path"; a read over the mock's file size limit is a
 * 413. write: 0 or -1 with op->err; read: the bytes (the caller frees
 * them) or NULL with op->err. */
int mock_op_file_write(mock_op *op, const char *path, const void *data, size_t len);
char *mock_op_file_read(mock_op *op, const char *path, size_t *len);

/* Managed processes (ops_procs.c): views with the Python SDK's field
 * names, or NULL with op->err. Reads (list, get, wait, connect) also
 * serve a paused sandbox; changes need a running one. */
#define MOCK_PROCESS_ID_MAX    24     /* a process id's length */
#define MOCK_PROCESS_PTY_MAX   1000u  /* rows and cols of a PTY, each */
#define MOCK_PROCESS_INPUT_MAX 65536u /* bytes of one input */
typedef struct mock_process_req {
	mock_cmd_req cmd;
	bool pty;
	unsigned rows, cols; /* pty: 1..MOCK_PROCESS_PTY_MAX */
} mock_process_req;
cJSON *mock_op_process_create(mock_op *op, const mock_process_req *q);
cJSON *mock_op_process_list(mock_op *op);
cJSON *mock_op_process_get(mock_op *op, const char *pid);
/* Waits up to timeout_ms for the leader (tree: the whole tree) to exit,
 * or until stop(arg) says so. */
cJSON *mock_op_process_wait(mock_op *op, const char *pid, bool tree, int64_t timeout_ms,
			    bool (*stop)(void *arg), void *arg);
/* SIGTERM to the tree, SIGKILL after grace_ms. */
cJSON *mock_op_process_terminate(mock_op *op, const char *pid, int64_t grace_ms);
typedef enum mock_process_ctl_kind {
	MOCK_PROCESS_INPUT,       /* data, len: {input_seq} */
	MOCK_PROCESS_STDIN_CLOSE, /* {closed: true} */
	MOCK_PROCESS_RESIZE,      /* rows, cols: {rows, cols} */
	MOCK_PROCESS_SIGNAL       /* sig: {signaled: true} */
} mock_process_ctl_kind;
typedef struct mock_process_ctl {
	mock_process_ctl_kind kind;
	const void *data;
	size_t len;
	unsigned rows, cols;
	int sig;
} mock_process_ctl;
cJSON *mock_op_process_control(mock_op *op, const char *pid, const mock_process_ctl *c);
/* The connect stream of process pid from after event number after: its
 * numbered events (guest_procs.h's frames), heartbeats, the exit event
 * last. NULL with op->err (404 when there is no such process). */
mock_op_stream *mock_op_process_connect(mock_op *op, const char *pid, uint64_t after);
/* The number of a signal the SDK names ("SIGTERM"...), 0 when none. */
int mock_op_signal_number(const char *name);
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

/* ---- a tenant's networks and disks (ops_res.c; its templates have
 * operations of their own: templates/templates.h) ---- */
typedef enum mock_coll { MOCK_NETWORKS, MOCK_DISKS } mock_coll;
/* Views of every item. */
cJSON *mock_op_coll_list(sbx_mock *mock, mock_tenant *t, mock_coll c);
/* The item's view, NULL when t has none by that id (or name). */
cJSON *mock_op_coll_get(sbx_mock *mock, mock_tenant *t, mock_coll c, const char *id);
/* Networks take {name} (validated by the caller), disks the request
 * body. */
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
/* Kills the guest's processes and releases it (mock_op_guest_release). */
void mock_destroy_guest(sbx_mock *mock, mock_sandbox *sb);
/* Lock held: when sb is destroyed (or dropped by a reset), its guest is
 * killed and no request holds sb (busy 0), queues the guest to be freed
 * and sets sb->guest to NULL; otherwise nothing. The last holder's end
 * (ops_io_end, create, fork) calls it again. */
void mock_op_guest_release(sbx_mock *mock, mock_sandbox *sb);
/* Frees the queued guests (their processes are dead; their trees are
 * removed here, outside the lock, as they may be large). Without the lock. */
void mock_op_reap_guests(sbx_mock *mock);
/* Starts sb's guest (its tree and, contained, its cell in a cgroup of
 * the shape's memory and MOCK_GUEST_PIDS_MAX processes); NULL + err. */
#define MOCK_GUEST_PIDS_MAX 512
mock_guest *mock_op_guest_start(sbx_mock *mock, mock_sandbox *sb, sbx_err *err);
/* The same for a create: a warm pool's guest bound to sb when one is ready
 * (cell_pool.h), else a fresh one. Forks and restores start fresh ones
 * (their cells begin from copied files). */
mock_guest *mock_op_guest_start_create(sbx_mock *mock, mock_sandbox *sb, sbx_err *err);
/* The size of a guest disk for a sandbox of disk_mib: disk_mib, or the
 * guest_disk_max_mib setting when that is smaller; 0 (the host tree,
 * unbounded) with --state-dir. */
unsigned mock_op_guest_disk_mib(sbx_mock *mock, unsigned disk_mib);
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
/* A template build's cell (TEMPLATES.md "Egress of a build"): joined to
 * the simulated internet as a sandbox is, at the builder address of
 * index k (1..65535: 10.232.K/256.K%256, outside every sandbox's range)
 * with an open list (allow all). Named by its guest (MOCK_INET_BUILDER_PREFIX
 * + the template's id), so mock_egress_unwire_guest releases it. 0, or -1 +
 * err; without the internet: 0, nothing done. Without the model lock. */
int mock_egress_wire_builder(sbx_mock *mock, uint32_t k, mock_guest *g, sbx_err *err);
/* The builder address of index k (1..65535) into out (16 bytes hold it). */
void mock_egress_builder_ip(uint32_t k, char *out, size_t cap);

/* /_mock/reset: kills every guest, empties the model, faults and journal. */
void mock_reset_all(sbx_mock *mock);

/* ---- the guests' internet as a cassette (ops/cassette.c; INTERNET.md,
 * "Record and replay the guests' internet"; the serving is
 * internet/inet_tape.h) ---- */

/* The flags' cassette, made and given to the book (before the internet
 * starts: recording needs its way out made then). 0 (also with none),
 * or -1 with err naming the flag and what is wrong. */
int mock_op_cassette_start(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err);
/* A scenario's {"internet_cassette": {"replay": "DIR"}} (DIR relative to
 * base_dir, the scenario file's folder): the cassette checked and
 * replayed from then on. Refused when the mock already has one. */
int mock_op_cassette_scenario(sbx_mock *mock, const cJSON *v, const char *base_dir, sbx_err *err);
/* After the internet stopped: a recording's cassette written (a failure
 * said on stderr), the tape freed. */
void mock_op_cassette_stop(sbx_mock *mock);

#endif

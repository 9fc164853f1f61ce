/* api: internal interface of the control-plane HTTP layer — the handlers
 * (api_<resource>.c, one row each in api_routes.c) and their shared
 * parsing, paging and answering helpers (api_util.c).
 *
 * A handler parses the request (naming the offending field), calls one
 * operation (ops.h) and renders its answer. It must never take the model
 * lock or change model state itself: that is what ops are for. */
#ifndef SBX_MOCK_API_H
#define SBX_MOCK_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"
#include "handlers/dispatch.h"
#include "http/request.h"

/* ---- api_util.c: parsing ---- */

/* The JSON body as an object; NULL with the 400 set (or, for an empty
 * body that is not required, NULL with nothing set). */
cJSON *api_body_object(mreq *r, mresp *out, bool required);
/* Optional fields: false with a 400 naming the field on a wrong type. */
bool api_get_str(const cJSON *o, const char *k, const char **v, mresp *out);
bool api_get_bool(const cJSON *o, const char *k, bool *v, bool *present, mresp *out);
bool api_get_int(const cJSON *o, const char *k, int64_t lo, int64_t hi, int64_t *v, bool *present,
		 mresp *out);
bool api_get_kind(const cJSON *o, const char *k, bool want_array, const cJSON **v, mresp *out);
/* An egress rule list (the mock's max_egress_rules applies). */
bool api_parse_egress(sbx_mock *mock, const cJSON *item, sbx_egress_list *list, mresp *out);

/* An optional integer query parameter in [lo, hi] (def when absent);
 * false with a 400 naming it. */
bool api_query_u(mreq *r, mresp *out, const char *key, uint64_t lo, uint64_t hi, uint64_t def, uint64_t *v);

/* ---- api_util.c: commands (exec, managed processes) ---- */

/* args (an array of strings, NULL: none) into cmd's args; env (an object
 * of strings, NULL: none) into cmd's env overrides. The strings stay the
 * request's; the lists are cmd's (api_cmd_free, also after a failure).
 * false with the 400 (or 500) set. */
bool api_cmd_args(const cJSON *args, mock_cmd_req *cmd, mresp *out);
bool api_cmd_env(const cJSON *env, mock_cmd_req *cmd, mresp *out);
void api_cmd_free(mock_cmd_req *cmd);

/* ---- api_util.c: NDJSON streams ---- */

/* Answers an operation's stream (ops.h) as application/x-ndjson, read on
 * a worker thread (mock_blocking_response) as the client takes it; ends
 * when the stream is done, cut, the client leaves or the mock stops. s
 * ends (mock_op_stream_end) with the answer, also when this fails with a
 * 500. */
void api_stream_answer(mreq *r, mresp *out, mock_op_stream *s);

/* ---- api_util.c: paging ---- */

/* limit (default 50, clamped to 500) and offset; false with a 400 set. */
bool api_page_params(mreq *r, mresp *out, size_t *limit, size_t *offset);
/* Answers items [offset, offset+limit) of all (owned) as a page. */
void api_resp_page(mreq *r, mresp *out, cJSON *all);
/* The paginated payload around data (owned), already cut to the page. */
cJSON *api_page_wrap(cJSON *data, size_t total, size_t limit, size_t offset);

/* ---- api_util.c: operations ---- */

/* An operation on the sandbox of path segment 2, with r's fired fault. */
void api_op_init(mock_op *op, mreq *r, mock_tenant *t, char *idbuf, size_t cap);
/* Notes the sandbox op found for the journal (r->sandbox_id). */
void api_op_found(mreq *r, const mock_op *op);
/* Answers v with status, or op->err when v is NULL; notes the sandbox
 * found for the journal. True when v was answered. */
bool api_op_answer(mreq *r, mresp *out, const mock_op *op, int status, cJSON *v);
/* The same for an operation returning 0 or -1: {"<key>": true} on 0. */
void api_op_ok(mreq *r, mresp *out, const mock_op *op, int rc, const char *key);
/* {"<key>": true}. */
void api_ok(mresp *out, const char *key);
/* The fired fault rule, NULL when none. */
const mock_fault_action *api_fault(const mreq *r);
bool api_fault_is(const mreq *r, mock_fault_kind k);

/* A tenant's collection (networks, disks, templates): list, get, delete.
 * noun names it in a 404; deleted_key is the key of the delete answer. */
void api_coll_list(mreq *r, mresp *out, mock_tenant *t, mock_coll c);
/* The item of path segment 2's view, or NULL with the 404 set. */
cJSON *api_coll_get(mreq *r, mresp *out, mock_tenant *t, mock_coll c, const char *noun);
void api_coll_delete(mreq *r, mresp *out, mock_tenant *t, mock_coll c, const char *noun,
		     const char *deleted_key);

/* ---- handlers, by file ---- */

/* api_metrics.c */
void api_sandbox_metrics(mreq *r, mresp *out, mock_tenant *t);
void api_user_metrics(mreq *r, mresp *out, mock_tenant *t);
void api_user_timeseries(mreq *r, mresp *out, mock_tenant *t);

/* api_meta.c */
void api_healthz(mreq *r, mresp *out, mock_tenant *t);
void api_readyz(mreq *r, mresp *out, mock_tenant *t);
void api_whoami(mreq *r, mresp *out, mock_tenant *t);
void api_shapes(mreq *r, mresp *out, mock_tenant *t);
void api_rootfs(mreq *r, mresp *out, mock_tenant *t);
void api_hosts(mreq *r, mresp *out, mock_tenant *t);

/* api_sandbox.c */
void api_sandbox_create(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_list(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_get(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_by_ip(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_patch(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_delete(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_pause(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_resume(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_fork(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_resize(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_ssh_keys(mreq *r, mresp *out, mock_tenant *t);

/* api_exec.c */
void api_exec(mreq *r, mresp *out, mock_tenant *t);

/* api_procs.c, api_procs_stream.c: managed processes */
void api_procs_create(mreq *r, mresp *out, mock_tenant *t);
void api_procs_list(mreq *r, mresp *out, mock_tenant *t);
void api_procs_get(mreq *r, mresp *out, mock_tenant *t);
void api_procs_delete(mreq *r, mresp *out, mock_tenant *t);
void api_procs_connect(mreq *r, mresp *out, mock_tenant *t);
void api_procs_input(mreq *r, mresp *out, mock_tenant *t);
void api_procs_stdin_close(mreq *r, mresp *out, mock_tenant *t);
void api_procs_resize(mreq *r, mresp *out, mock_tenant *t);
void api_procs_signal(mreq *r, mresp *out, mock_tenant *t);
void api_procs_wait(mreq *r, mresp *out, mock_tenant *t);
/* The process id of path segment 4 into buf, or false with a 400 set. */
bool api_procs_id(mreq *r, mresp *out, char *buf, size_t cap);

/* api_computer.c: every computer route but the screenshot; the screenshot */
void api_computer(mreq *r, mresp *out, mock_tenant *t);
void api_computer_screenshot(mreq *r, mresp *out, mock_tenant *t);
/* api_files.c */
void api_files_put(mreq *r, mresp *out, mock_tenant *t);
void api_files_get(mreq *r, mresp *out, mock_tenant *t);

/* api_egress.c */
void api_egress_get(mreq *r, mresp *out, mock_tenant *t);
void api_egress_put(mreq *r, mresp *out, mock_tenant *t);
void api_bandwidth_get(mreq *r, mresp *out, mock_tenant *t);
void api_bandwidth_recharge(mreq *r, mresp *out, mock_tenant *t);

/* api_networks.c */
void api_sandbox_network_attach(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_network_detach(mreq *r, mresp *out, mock_tenant *t);
void api_networks_list(mreq *r, mresp *out, mock_tenant *t);
void api_networks_create(mreq *r, mresp *out, mock_tenant *t);
void api_networks_get(mreq *r, mresp *out, mock_tenant *t);
void api_networks_delete(mreq *r, mresp *out, mock_tenant *t);

/* api_disks.c */
void api_sandbox_disks_list(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_disks_attach(mreq *r, mresp *out, mock_tenant *t);
void api_sandbox_disks_detach(mreq *r, mresp *out, mock_tenant *t);
void api_disks_list(mreq *r, mresp *out, mock_tenant *t);
void api_disks_create(mreq *r, mresp *out, mock_tenant *t);
void api_disks_get(mreq *r, mresp *out, mock_tenant *t);
void api_disks_patch(mreq *r, mresp *out, mock_tenant *t);
void api_disks_delete(mreq *r, mresp *out, mock_tenant *t);

/* api_templates.c */
void api_templates_list(mreq *r, mresp *out, mock_tenant *t);
void api_templates_create(mreq *r, mresp *out, mock_tenant *t);
void api_templates_get(mreq *r, mresp *out, mock_tenant *t);
void api_templates_delete(mreq *r, mresp *out, mock_tenant *t);
void api_templates_logs(mreq *r, mresp *out, mock_tenant *t);

#endif

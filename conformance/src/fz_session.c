/* fz_session: one backend-fuzzer input's calls on a driver: its runs
 * (sequential `run`s or one `run_concurrent`), or a session on the
 * driver surfaces beyond `run` (PROTOCOL.md): a session of component_run calls (Guest Reuse, Return
 * Files) with the harness pausing the reuse guest or changing its egress
 * between runs, as COMP-003/004 do by hand; executor_run calls (EXEC); and
 * a fork_check between two runs in the parent (CON-002). Each call fills
 * one fz_run_out with its answer and its journal window; fz_check.c and
 * fz_check_surface.c judge them.
 *
 * The harness's own requests carry the runner's User-Agent, so the
 * invariants (cf_journal_count) never count them as the backend's. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conform.h"
#include "fz.h"

#define RUN_T 30.0

static int journal_len(struct cf_case *c)
{
	cJSON *j = cf_journal(c);
	int n = j != NULL ? cJSON_GetArraySize(j) : 0;

	cJSON_Delete(j);
	return n;
}

/* The tenant's sandbox id of the guest named name, or false. */
static bool guest_id(struct cf_case *c, const char *name, char *id, size_t cap)
{
	cJSON *sbs = cf_sandboxes(c);
	const cJSON *sb = sbs != NULL ? cf_find_sandbox(sbs, name) : NULL;
	bool ok = sb != NULL && cf_str(sb, "id") != NULL;

	if (ok)
		snprintf(id, cap, "%s", cf_str(sb, "id"));
	cJSON_Delete(sbs);
	return ok;
}

static bool is_paused(struct cf_case *c, const char *id)
{
	char path[160];
	int i;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	for (i = 0; i < 40; i++) { /* the mock's instant timing: at the next read */
		sbx_err err = {{0}};
		cJSON *v = cf_api(c, "GET", path, NULL, NULL, &err);
		bool paused = v != NULL && cf_str(v, "status") != NULL && strcmp(cf_str(v, "status"), "paused") == 0;
		struct timespec ts = {0, 10000000};

		cJSON_Delete(v);
		if (paused)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

/* Pauses the reuse guest or changes its egress, as a user (or the control
 * plane's auto-pause) would between two runs; true when it took effect. */
static bool act_on_guest(struct cf_case *c, const char *name, unsigned kind)
{
	char id[80], path[160];
	sbx_err err = {{0}};
	cJSON *body = NULL, *r;

	if (!guest_id(c, name, id, sizeof(id)))
		return false;
	if (kind == FZ_BETWEEN_PAUSE) {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/pause", id);
		r = cf_api(c, "POST", path, NULL, NULL, &err);
	} else {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/egress", id);
		body = cJSON_Parse("{\"egress\":[\"10.0.0.0/8\"]}");
		r = cf_api(c, "PUT", path, body, NULL, &err);
	}
	cJSON_Delete(body);
	cJSON_Delete(r);
	return r != NULL && (kind != FZ_BETWEEN_PAUSE || is_paused(c, id));
}

static void fill_raise(struct fz_run_out *ro, struct cf_case *c, struct cf_driver *d, const char *et,
		       const char *em)
{
	snprintf(ro->etype, sizeof(ro->etype), "%s", et != NULL ? et : "?");
	snprintf(ro->emsg, sizeof(ro->emsg), "%s", em != NULL ? em : "");
	if (cf_driver_broken(d)) {
		ro->broken = true;
		snprintf(ro->emsg, sizeof(ro->emsg), "%s", sbx_strbuf_str(&c->reason));
	} else if (et != NULL && strcmp(et, "ProtocolError") == 0 && strcmp(ro->op, "run") != 0) {
		ro->served = false; /* the surface is not served: nothing to judge */
	}
}

/* fork_check's answer: the child's outcome becomes the run's. */
static void take_fork(struct fz_run_out *ro, cJSON *res)
{
	cJSON *child = cJSON_GetObjectItemCaseSensitive(res, "child");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(child, "error");

	ro->child_pid = cf_num(res, "child_pid", 0);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(child, "ok"))) {
		ro->result = cJSON_DetachItemFromObjectCaseSensitive(child, "result");
		if (ro->result == NULL)
			ro->result = cJSON_CreateObject();
		return;
	}
	snprintf(ro->etype, sizeof(ro->etype), "%s", cf_str(e, "type") ? cf_str(e, "type") : "?");
	snprintf(ro->emsg, sizeof(ro->emsg), "%s", cf_str(e, "message") ? cf_str(e, "message") : "");
}

/* One call: the op of run r on the input's surface. */
static void one_call(const struct fz_input *in, unsigned r, struct cf_case *c, struct cf_driver *d,
		     const char *workdir, struct fz_outcome *out)
{
	struct fz_run_out *ro = &out->runs[r];
	char *code = fz_code(in, r, out->trip_path, workdir, ro->token);
	cJSON *env = NULL, *req, *res;
	const char *et = NULL, *em = NULL;
	double t0 = cf_now_ms();
	char op[32];

	if (in->runs[r].env) {
		env = cJSON_CreateObject();
		cJSON_AddStringToObject(env, "SBX_FZ", ro->token);
	}
	req = fz_request(in, r, code, env);
	free(code);
	snprintf(op, sizeof(op), "%s", cf_str(req, "op"));
	cJSON_DeleteItemFromObjectCaseSensitive(req, "op");
	ro->op = strcmp(op, "fork_check") == 0 ? "fork_check" : fz_surface_name(in->surface);
	if (strcmp(op, "run") == 0)
		ro->op = "run";
	ro->served = true;
	ro->j_op = journal_len(c);
	res = cf_op(d, op, req, RUN_T, &et, &em);
	ro->ms = cf_now_ms() - t0;
	cJSON_Delete(req);
	if (res == NULL)
		fill_raise(ro, c, d, et, em);
	else if (strcmp(op, "fork_check") == 0)
		take_fork(ro, res);
	else
		ro->result = cJSON_Duplicate(res, true);
	cJSON_Delete(res);
}

/* run_concurrent; false when the driver does not serve it. */
static bool runs_concurrent(const struct fz_input *in, struct cf_case *c, struct cf_driver *d, const char *workdir,
			    struct fz_outcome *out)
{
	cJSON *f = cJSON_CreateObject();
	cJSON *runs = cJSON_AddArrayToObject(f, "runs");
	const char *et = NULL, *em = NULL;
	const cJSON *results, *item;
	double t0 = cf_now_ms();
	unsigned r;
	cJSON *res;

	for (r = 0; r < in->nruns; r++) {
		char *code = fz_code(in, r, out->trip_path, workdir, out->runs[r].token);
		cJSON *env = NULL, *o;

		if (in->runs[r].env) {
			env = cJSON_CreateObject();
			cJSON_AddStringToObject(env, "SBX_FZ", out->runs[r].token);
		}
		o = fz_request(in, r, code, env);
		cJSON_DeleteItemFromObjectCaseSensitive(o, "op");
		cJSON_AddItemToArray(runs, o);
		free(code);
	}
	res = cf_op(d, "run_concurrent", f, RUN_T, &et, &em);
	cJSON_Delete(f);
	if (res == NULL && !cf_driver_broken(d) && et != NULL && strcmp(et, "ProtocolError") == 0)
		return false;
	out->concurrent = true;
	results = cJSON_GetObjectItemCaseSensitive(res, "results");
	for (r = 0; r < in->nruns; r++) {
		struct fz_run_out *ro = &out->runs[r];

		ro->ms = cf_now_ms() - t0;
		ro->op = "run_concurrent";
		ro->served = true;
		item = cJSON_GetArrayItem(results, (int)r);
		if (res == NULL) {
			fill_raise(ro, c, d, et, em);
		} else if (item == NULL) {
			ro->broken = true;
			snprintf(ro->etype, sizeof(ro->etype), "HarnessError");
			snprintf(ro->emsg, sizeof(ro->emsg), "run_concurrent answered %d results for %u runs",
				 cJSON_GetArraySize(results), in->nruns);
		} else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "ok"))) {
			ro->result = cJSON_DetachItemFromObjectCaseSensitive((cJSON *)item, "result");
			if (ro->result == NULL)
				ro->result = cJSON_CreateObject();
		} else {
			const cJSON *e = cJSON_GetObjectItemCaseSensitive(item, "error");

			fill_raise(ro, c, d, cf_str(e, "type"), cf_str(e, "message"));
		}
	}
	cJSON_Delete(res);
	return true;
}

void fz_session_run(const struct fz_input *in, struct cf_case *c, struct cf_driver *d, const char *workdir,
		    bool *no_concurrent, struct fz_outcome *out)
{
	char reuse_name[80] = "";
	unsigned state = FZ_BETWEEN_NONE, r;
	bool lost = false; /* the reuse guest's state is no longer known */
	int lo = 0;

	if (in->surface == FZ_SURF_RUN && in->concurrent && in->nruns > 1 && !*no_concurrent) {
		if (runs_concurrent(in, c, d, workdir, out))
			return;
		*no_concurrent = true; /* then the runs one after the other */
	}

	for (r = 0; r < in->nruns; r++) {
		struct fz_run_out *ro = &out->runs[r];
		const struct fz_run *run = &in->runs[r];

		ro->j_lo = lo;
		if (in->surface == FZ_SURF_COMPONENT && run->between != FZ_BETWEEN_NONE && reuse_name[0] != '\0' &&
		    !lost && state == FZ_BETWEEN_NONE) {
			if (act_on_guest(c, reuse_name, run->between))
				state = run->between;
			else
				lost = true; /* a fault met the harness's own request */
		}
		if (in->surface == FZ_SURF_COMPONENT && run->reuse && !lost && state != FZ_BETWEEN_NONE) {
			ro->acted = true;
			ro->acted_kind = state;
			snprintf(ro->acted_on, sizeof(ro->acted_on), "%s", reuse_name);
		}
		one_call(in, r, c, d, workdir, out);
		ro->j_hi = lo = journal_len(c);
		if (in->surface == FZ_SURF_COMPONENT && run->reuse && ro->result != NULL && reuse_name[0] == '\0')
			snprintf(reuse_name, sizeof(reuse_name), "%s", cf_str(ro->result, "guest_name") ?
				 cf_str(ro->result, "guest_name") : "");
		if (ro->acted && state == FZ_BETWEEN_PAUSE) {
			lost = ro->result == NULL; /* not resumed: the invariant says why */
			state = FZ_BETWEEN_NONE;
		}
		if (ro->broken)
			break;
	}
}

void fz_outcome_free(struct fz_outcome *out)
{
	unsigned i;

	for (i = 0; i < FZ_MAX_RUNS; i++)
		cJSON_Delete(out->runs[i].result);
	cJSON_Delete(out->journal);
	cJSON_Delete(out->sandboxes);
	cJSON_Delete(out->after_shutdown);
	free(out->stderr_tail);
	memset(out, 0, sizeof(*out));
}

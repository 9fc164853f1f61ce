/* api_util: what every control-plane handler shares (api.h) — JSON body
 * and field parsing that names the offending field, pagination, the
 * operation call/answer pattern, and the list/get/delete handlers of a
 * tenant's collections (networks, disks, templates).
 *
 * Never take the model lock here, and never decide anything about a
 * particular route: that is a handler's or a route row's business. */
#include "handlers/api.h"
#include "http/workers.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ---- */

/* The JSON body as an object. Empty body: an empty object when optional. */
cJSON *api_body_object(mreq *r, mresp *out, bool required)
{
	if (r->body.len == 0) {
		if (!required)
			return NULL;
		resp_fail(out, 400, "body", "INVALID_REQUEST", "request body is required (a JSON object)");
		return NULL;
	}
	if (r->json == NULL) {
		char msg[160];

		snprintf(msg, sizeof(msg), "request body is not valid JSON: %s",
			 r->json_why[0] != '\0' ? r->json_why : "unreadable");
		resp_fail(out, 400, "body", "INVALID_JSON", msg);
		return NULL;
	}
	/* cJSON cuts strings at \u0000, so "pypi.org\u0000.evil" would be stored
	 * as "pypi.org": refuse NUL anywhere rather than act on a shortened value. */
	if (sbx_egress_json_has_nul_escape(r->body.data, r->body.len)) {
		resp_fail(out, 400, "body", "INVALID_JSON",
			  "request body contains a \\u0000 escape: NUL is not allowed in any string");
		return NULL;
	}
	if (!cJSON_IsObject(r->json)) {
		resp_fail(out, 400, "body", "INVALID_REQUEST", "request body must be a JSON object");
		return NULL;
	}
	return r->json;
}

static bool type_error(mresp *out, const char *field, const char *what)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "%s must be %s", field, what);
	resp_fail(out, 400, field, "INVALID_REQUEST", msg);
	return false;
}

/* Optional string field; false (answer set) on a wrong type. */
bool api_get_str(const cJSON *o, const char *k, const char **v, mresp *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	*v = NULL;
	if (it == NULL || cJSON_IsNull(it))
		return true;
	if (!cJSON_IsString(it))
		return type_error(out, k, "a string");
	*v = it->valuestring;
	return true;
}

bool api_get_bool(const cJSON *o, const char *k, bool *v, bool *present, mresp *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	if (present != NULL)
		*present = false;
	if (it == NULL || cJSON_IsNull(it))
		return true;
	if (!cJSON_IsBool(it))
		return type_error(out, k, "a boolean");
	*v = cJSON_IsTrue(it);
	if (present != NULL)
		*present = true;
	return true;
}

bool api_get_int(const cJSON *o, const char *k, int64_t lo, int64_t hi, int64_t *v, bool *present,
		 mresp *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
	char what[96];

	if (present != NULL)
		*present = false;
	if (it == NULL || cJSON_IsNull(it))
		return true;
	snprintf(what, sizeof(what), "an integer between %lld and %lld", (long long)lo, (long long)hi);
	/* Range first: converting an out-of-range double to int64_t is undefined. */
	if (!cJSON_IsNumber(it) || !(it->valuedouble >= (double)lo && it->valuedouble <= (double)hi) ||
	    it->valuedouble != (double)(int64_t)it->valuedouble)
		return type_error(out, k, what);
	*v = (int64_t)it->valuedouble;
	if (present != NULL)
		*present = true;
	return true;
}

bool api_get_kind(const cJSON *o, const char *k, bool want_array, const cJSON **v, mresp *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	*v = NULL;
	if (it == NULL || cJSON_IsNull(it))
		return true;
	if (want_array ? !cJSON_IsArray(it) : !cJSON_IsObject(it))
		return type_error(out, k, want_array ? "an array" : "an object");
	*v = it;
	return true;
}

bool api_parse_egress(sbx_mock *mock, const cJSON *item, sbx_egress_list *list, mresp *out)
{
	sbx_egress_error ee;

	memset(&ee, 0, sizeof(ee));
	if (sbx_egress_list_from_json(item, mock_op_max_egress_rules(mock), list, &ee) != 0) {
		resp_fail(out, 400, "egress", "INVALID_EGRESS", ee.message);
		return false;
	}
	return true;
}

/* ---- paging ---- */

static bool parse_u(const char *s, uint64_t max, uint64_t *v)
{
	char *end = NULL;
	unsigned long long x;

	if (s == NULL || s[0] == '\0' || s[0] == '-' || s[0] == '+')
		return false;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || x > max)
		return false;
	*v = x;
	return true;
}

bool api_query_u(mreq *r, mresp *out, const char *key, uint64_t lo, uint64_t hi, uint64_t def, uint64_t *v)
{
	const char *s = req_query(r, key);
	char msg[128];

	*v = def;
	if (s == NULL)
		return true;
	if (parse_u(s, hi, v) && *v >= lo)
		return true;
	snprintf(msg, sizeof(msg), "%s must be an integer from %llu to %llu", key, (unsigned long long)lo,
		 (unsigned long long)hi);
	resp_fail(out, 400, key, "INVALID_REQUEST", msg);
	return false;
}

bool api_page_params(mreq *r, mresp *out, size_t *limit, size_t *offset)
{
	const char *l = req_query(r, "limit"), *o = req_query(r, "offset");
	uint64_t v;

	*limit = 50;
	*offset = 0;
	if (l != NULL) {
		if (!parse_u(l, UINT32_MAX, &v)) {
			resp_fail(out, 400, "limit", "INVALID_REQUEST", "limit must be a non-negative integer");
			return false;
		}
		*limit = v == 0 ? 50 : (v > 500 ? 500 : (size_t)v);
	}
	if (o != NULL) {
		if (!parse_u(o, UINT32_MAX, &v)) {
			resp_fail(out, 400, "offset", "INVALID_REQUEST",
				  "offset must be a non-negative integer");
			return false;
		}
		*offset = (size_t)v;
	}
	return true;
}

cJSON *api_page_wrap(cJSON *data, size_t total, size_t limit, size_t offset)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *p;
	size_t count = (size_t)cJSON_GetArraySize(data);

	cJSON_AddItemToObject(o, "data", data);
	p = cJSON_AddObjectToObject(o, "pagination");
	cJSON_AddNumberToObject(p, "total", (double)total);
	cJSON_AddNumberToObject(p, "limit", (double)limit);
	cJSON_AddNumberToObject(p, "offset", (double)offset);
	cJSON_AddNumberToObject(p, "count", (double)count);
	return o;
}

void api_resp_page(mreq *r, mresp *out, cJSON *all)
{
	size_t limit, offset, total = (size_t)cJSON_GetArraySize(all), count = 0;
	cJSON *data;

	if (!api_page_params(r, out, &limit, &offset)) {
		cJSON_Delete(all);
		return;
	}
	data = cJSON_CreateArray();
	for (size_t i = offset; i < total && count < limit; i++, count++)
		cJSON_AddItemToArray(data, cJSON_DetachItemFromArray(all, (int)offset));
	cJSON_Delete(all);
	resp_success(out, 200, api_page_wrap(data, total, limit, offset));
}

/* ---- operations ---- */

const mock_fault_action *api_fault(const mreq *r)
{
	return r->fault_fired ? &r->fault : NULL;
}

bool api_fault_is(const mreq *r, mock_fault_kind k)
{
	return r->fault_fired && r->fault.kind == k;
}

void api_op_init(mock_op *op, mreq *r, mock_tenant *t, char *idbuf, size_t cap)
{
	memset(op, 0, sizeof(*op));
	op->mock = r->mock;
	op->t = t;
	op->id = req_seg(r, 2, idbuf, cap) ? idbuf : NULL;
	op->fault = api_fault(r);
}

void api_op_found(mreq *r, const mock_op *op)
{
	if (op->found[0] != '\0')
		snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", op->found);
}

bool api_op_answer(mreq *r, mresp *out, const mock_op *op, int status, cJSON *v)
{
	api_op_found(r, op);
	if (v == NULL) {
		resp_mock_err(out, &op->err);
		return false;
	}
	resp_success(out, status, v);
	return true;
}

void api_ok(mresp *out, const char *key)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddBoolToObject(d, key, true);
	resp_success(out, 200, d);
}

void api_op_ok(mreq *r, mresp *out, const mock_op *op, int rc, const char *key)
{
	api_op_found(r, op);
	if (rc != 0)
		resp_mock_err(out, &op->err);
	else
		api_ok(out, key);
}

/* ---- a tenant's collections ---- */

void api_coll_list(mreq *r, mresp *out, mock_tenant *t, mock_coll c)
{
	api_resp_page(r, out, mock_op_coll_list(r->mock, t, c));
}

cJSON *api_coll_get(mreq *r, mresp *out, mock_tenant *t, mock_coll c, const char *noun)
{
	char id[128], msg[64];
	cJSON *v = NULL;

	if (req_seg(r, 2, id, sizeof(id)))
		v = mock_op_coll_get(r->mock, t, c, id);
	if (v == NULL) {
		snprintf(msg, sizeof(msg), "%s not found", noun);
		resp_fail(out, 404, "error", "NOT_FOUND", msg);
	}
	return v;
}

void api_coll_delete(mreq *r, mresp *out, mock_tenant *t, mock_coll c, const char *noun,
		     const char *deleted_key)
{
	char id[128];
	mock_err e;
	int rc = -1;

	/* the refusal when there is no such item (the model may say more) */
	mock_err_set(&e, 404, "NOT_FOUND", "error", "%s not found", noun);
	if (req_seg(r, 2, id, sizeof(id)))
		rc = mock_op_coll_delete(r->mock, t, c, id, &e);
	if (rc != 0)
		resp_mock_err(out, &e);
	else
		api_ok(out, deleted_key);
}

/* ---- commands (exec, managed processes) ---- */

bool api_cmd_args(const cJSON *args, mock_cmd_req *cmd, mresp *out)
{
	const char **list;
	const cJSON *it;
	size_t i = 0;

	cmd->nargs = args != NULL ? (size_t)cJSON_GetArraySize(args) : 0;
	cmd->args = list = calloc(cmd->nargs + 1, sizeof(char *));
	if (list == NULL) {
		resp_error(out, 500, "out of memory");
		return false;
	}
	cJSON_ArrayForEach(it, args) {
		if (!cJSON_IsString(it)) {
			resp_fail(out, 400, "args", "INVALID_REQUEST", "args must be an array of strings");
			return false;
		}
		list[i++] = it->valuestring;
	}
	return true;
}

bool api_cmd_env(const cJSON *env, mock_cmd_req *cmd, mresp *out)
{
	mock_env_var *vars;
	const cJSON *it;
	size_t n = env != NULL ? (size_t)cJSON_GetArraySize(env) : 0;

	if (n > MOCK_ENVS_MAX) { /* each key must be one of a sandbox's envs: at most that many */
		resp_fail(out, 400, "env", "INVALID_REQUEST", "env has more entries than a sandbox can declare (64)");
		return false;
	}
	cmd->env = vars = calloc(n + 1, sizeof(*vars));
	if (vars == NULL) {
		resp_error(out, 500, "out of memory");
		return false;
	}
	cJSON_ArrayForEach(it, env) {
		if (!cJSON_IsString(it)) {
			resp_fail(out, 400, "env", "INVALID_REQUEST", "env values must be strings");
			return false;
		}
		for (size_t i = 0; i < cmd->nenv; i++) {
			if (it->string != NULL && vars[i].key != NULL && strcmp(vars[i].key, it->string) == 0) {
				resp_fail(out, 400, "env", "INVALID_REQUEST", "env key given twice");
				return false;
			}
		}
		vars[cmd->nenv++] = (mock_env_var){.key = it->string, .value = it->valuestring};
	}
	return true;
}

void api_cmd_free(mock_cmd_req *cmd)
{
	free((void *)cmd->args);
	free((void *)cmd->env);
	cmd->args = NULL;
	cmd->env = NULL;
}

/* ---- NDJSON streams: the one reader of an operation's stream ---- */

/* An answer fed from an operation's stream (mock_op_stream_next) as the
 * client reads it, on the worker thread of mock_blocking_response. */
typedef struct stream_answer {
	sbx_mock *mock;
	mock_op_stream *s;
	sbx_strbuf pending; /* frames not yet sent, from pend_off */
	size_t pend_off;
	bool done;
	atomic_bool gone; /* the client went away (stream_cancel) */
	/* The client's socket, polled while the stream is silent (the
	 * suspended connection does not notice a hang-up by itself). Once the
	 * connection is closed the number may be reused: then it can only say
	 * "gone" about a stream whose client is gone anyway, or "alive" until
	 * stream_cancel comes. */
	int conn_fd;
} stream_answer;

/* Copies what is pending from pend_off to out (at most max): the count,
 * or 0 when nothing is left (the buffer is reset then). */
static size_t pending_take(stream_answer *a, char *out, size_t max)
{
	size_t n;

	if (a->pend_off >= a->pending.len) {
		sbx_strbuf_reset(&a->pending);
		a->pend_off = 0;
		return 0;
	}
	n = a->pending.len - a->pend_off;
	if (n > max)
		n = max;
	memcpy(out, a->pending.data + a->pend_off, n);
	a->pend_off += n;
	return n;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *out, size_t max)
{
	stream_answer *a = cls;
	size_t n;

	(void)pos;
	while ((n = pending_take(a, out, max)) == 0) {
		int rc;

		if (a->done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (atomic_load(&a->mock->stopping) || atomic_load(&a->gone))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (mock_fd_gone(a->conn_fd)) {
			atomic_store(&a->gone, true);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		rc = mock_op_stream_next(a->s, &a->pending);
		if (rc == MOCK_STREAM_CUT)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		a->done = rc == MOCK_STREAM_DONE;
	}
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	stream_answer *a = cls;

	mock_op_stream_end(a->s);
	sbx_strbuf_free(&a->pending);
	free(a);
}

/* From the server thread: the client is gone, stop waiting for frames. */
static void stream_cancel(void *cls)
{
	stream_answer *a = cls;

	atomic_store(&a->gone, true);
}

void api_stream_answer(mreq *r, mresp *out, mock_op_stream *s)
{
	stream_answer *a = calloc(1, sizeof(*a));

	if (a == NULL) {
		mock_op_stream_end(s);
		resp_error(out, 500, "out of memory");
		return;
	}
	a->mock = r->mock;
	a->s = s;
	a->conn_fd = req_conn_fd(r);
	sbx_strbuf_init(&a->pending);
	/* stream_reader waits for the operation: it runs on a worker thread */
	out->custom = mock_blocking_response(r, MHD_SIZE_UNKNOWN, stream_reader, a, stream_free,
					     stream_cancel);
	if (out->custom == NULL) {
		resp_error(out, 500, "out of memory");
		return;
	}
	out->status = 200;
	out->ctype = "application/x-ndjson";
	resp_header(out, "Cache-Control", "no-cache");
}

/* http: the request pipeline of both listeners (the API port and the
 * guests' self-signal port) — collecting the body under its limit, request
 * ids, routing to the API, admin or self-signal handlers, the fault-rule
 * evaluation and its actions (fault_apply.c), queueing the answer, and the
 * journal record of every control-plane request.
 *
 * Threading: MHD's epoll thread pool (a few threads serve every connection,
 * keep-alive GETs never wait for a thread switch). A pool thread must never
 * block, so requests that may (exec, files, every mutation, the hang and
 * latency faults; every request when mock->srv->offload_all) are offloaded: the
 * connection is suspended, a worker (workers.c) computes the answer and
 * resumes it, and the pool thread queues the answer. Handlers never queue
 * an answer themselves; this file is the only one that does. */
#define _GNU_SOURCE
#include "server/pipeline.h"

#include "server/fault_apply.h"
#include "util/json_print.h"
#include "ops/ops.h"
#include "http/route.h"
#include "server/server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* ---- request facts: key, fault summary, journal ---- */

/* How much of a body past its limit is read and dropped so that the
 * client gets a 413 rather than a reset: a chunked body, or a declared
 * length at most this far over the limit sent without Expect:
 * 100-continue; a longer declared one, or one that waits for 100
 * Continue, is answered before the body; beyond it the connection is
 * closed. */
#define CHUNKED_DISCARD_MAX ((size_t)1024 * 1024)

static const char *auth_key(struct MHD_Connection *conn)
{
	static const char *const names[] = {"X-Auth-Token", "X-Access-Token", "X-Api-Key"};

	for (size_t i = 0; i < 3; i++) {
		const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, names[i]);

		if (v != NULL && v[0] != '\0')
			return v;
	}
	return NULL;
}

/* Fills the fault-matching summary: tenant request number and name. */
static void fault_summary(mreq *r, mock_fault_req *q, char *name, size_t cap)
{
	sbx_mock *mock = r->mock;
	char seg[64];

	q->method = r->method;
	q->path = r->path;
	q->tenant = r->api_key != NULL ? r->api_key : "";
	q->name = NULL;
	q->is_exec = r->route != NULL && (r->route->flags & ROUTE_EXEC) != 0;
	if (req_seg(r, 0, seg, sizeof(seg)) && strcmp(seg, "v1") == 0 &&
	    req_seg(r, 1, seg, sizeof(seg)) && strcmp(seg, "sandboxes") == 0) {
		if (req_seg(r, 2, seg, sizeof(seg))) {
			/* one op counts the request and reads the sandbox's name */
			q->request_no = mock_op_count_request(mock, r->api_key, seg, name, cap);
			if (name[0] != '\0')
				q->name = name;
			return;
		}
		if (r->json != NULL) {
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(r->json, "name");

			if (cJSON_IsString(n)) {
				snprintf(name, cap, "%s", n->valuestring);
				q->name = name;
			}
		}
	}
	/* no sandbox named: seg is only the (unused) name buffer */
	q->request_no = mock_op_count_request(mock, r->api_key, NULL, seg, sizeof(seg));
}

/* The connection's serial (chaos.c, at MHD's STARTED notice): the
 * journal's conn, and what names a connection to linger.c, where a
 * descriptor number alone could be a later connection's. */
static uint64_t conn_serial(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci != NULL ? (uint64_t)(uintptr_t)ci->socket_context : 0;
}

static void journal_record(mreq *r, int status)
{
	mock_journal_entry e;
	sbx_strbuf q = SBX_STRBUF_INIT;
	char seg[sizeof(e.sandbox_id)];

	memset(&e, 0, sizeof(e));
	e.ts_ms = mock_op_now(r->mock);
	snprintf(e.method, sizeof(e.method), "%s", r->method);
	e.path = r->path;
	/* MHD hands the path without query; rebuild it from the arguments. */
	if (MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, NULL, NULL) > 0) {
		for (size_t i = 0; i < mock_journal_nquery_keys; i++) {
			const char *k = mock_journal_query_keys[i];
			const char *v = req_query(r, k);

			if (v != NULL)
				sbx_strbuf_printf(&q, "%s%s=%s", q.len > 0 ? "&" : "", k, v);
		}
	}
	e.query = q.len > 0 ? q.data : NULL;
	e.tenant = (char *)r->api_key; /* copied by mock_journal_add */
	e.status = status;
	snprintf(e.sandbox_id, sizeof(e.sandbox_id), "%s", r->sandbox_id);
	/* a fault answered before any handler named the sandbox: the path
	 * names it (/v1/sandboxes/ID...) */
	if (e.sandbox_id[0] == '\0' && r->fault_fired && req_seg(r, 0, seg, sizeof(seg)) &&
	    strcmp(seg, "v1") == 0 && req_seg(r, 1, seg, sizeof(seg)) &&
	    strcmp(seg, "sandboxes") == 0 && req_seg(r, 2, seg, sizeof(seg)))
		snprintf(e.sandbox_id, sizeof(e.sandbox_id), "%s", seg);
	e.start_us = r->start_us;
	e.end_us = sbx_mono_us();
	e.duration_us = e.end_us - e.start_us;
	e.conn = conn_serial(r->conn);
	e.fault = r->fault_fired ? r->fault_label : NULL;
	{
		const char *ua = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "User-Agent");

		snprintf(e.agent, sizeof(e.agent), "%s", ua != NULL ? ua : "");
	}
	mock_journal_add(r->mock->journal, &e);
	sbx_strbuf_free(&q);
}

/* ---- answering ---- */

/* True when one of out's headers from index `from` on has this name: a
 * later header of a name replaces an earlier one and the mock's own
 * (Content-Type, X-Request-Id), so that a fault sends exactly the headers
 * it names; an empty value removes the header. */
static bool names_header(const mresp *out, const char *name, size_t from)
{
	for (size_t i = from; i < out->nh; i++) {
		if (strcasecmp(out->hname[i], name) == 0)
			return true;
	}
	return false;
}

static enum MHD_Result queue(mreq *r, mresp *out)
{
	struct MHD_Response *resp = out->custom;
	enum MHD_Result rc;

	if (resp == NULL) {
		resp = MHD_create_response_from_buffer(out->len, out->body, MHD_RESPMEM_MUST_FREE);
		if (resp == NULL)
			return MHD_NO;
		out->body = NULL;
	}
	out->custom = NULL;
	if (out->ctype != NULL && !names_header(out, MHD_HTTP_HEADER_CONTENT_TYPE, 0))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, out->ctype);
	if (!names_header(out, "X-Request-Id", 0))
		MHD_add_response_header(resp, "X-Request-Id", r->request_id);
	for (size_t i = 0; i < out->nh; i++) {
		if (out->hvalue[i][0] != '\0' && !names_header(out, out->hname[i], i + 1))
			MHD_add_response_header(resp, out->hname[i], out->hvalue[i]);
	}
	rc = MHD_queue_response(r->conn, (unsigned)out->status, resp);
	MHD_destroy_response(resp);
	return rc;
}

/* Parses the body as exactly one JSON value in UTF-8: cJSON alone copies
 * invalid UTF-8 into strings (answers that echo them would not be JSON) and
 * stops after the first value (trailing bytes would be silently ignored).
 * On failure r->json stays NULL and r->json_why says what and where. */
static void json_parse_strict(mreq *r)
{
	const char *end = NULL;
	size_t off = 0, len = r->body.len;

	r->json_bad = true;
	if (!mock_utf8_valid(r->body.data, len, &off)) {
		snprintf(r->json_why, sizeof(r->json_why), "invalid UTF-8 at byte offset %zu", off);
		return;
	}
	for (off = 0; off < len; off++) {
		unsigned char c = (unsigned char)r->body.data[off];

		/* JSON allows no raw control byte (cJSON would keep one in a
		 * string, and a NUL would silently cut it short) */
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
			snprintf(r->json_why, sizeof(r->json_why),
				 "control byte 0x%02x at byte offset %zu", c, off);
			return;
		}
	}
	r->json = cJSON_ParseWithLengthOpts(r->body.data, len, &end, false);
	if (r->json == NULL) {
		off = end != NULL && end >= r->body.data ? (size_t)(end - r->body.data) : 0;
		snprintf(r->json_why, sizeof(r->json_why), "not valid JSON (error near byte offset %zu)",
			 off);
		return;
	}
	off = (size_t)(end - r->body.data);
	while (off < len && (r->body.data[off] == ' ' || r->body.data[off] == '\t' ||
			     r->body.data[off] == '\n' || r->body.data[off] == '\r'))
		off++;
	if (off < len) {
		snprintf(r->json_why, sizeof(r->json_why),
			 "trailing data after the JSON value at byte offset %zu", off);
		cJSON_Delete(r->json);
		r->json = NULL;
		return;
	}
	r->json_bad = false;
}

static void parse_body(mreq *r)
{
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_TYPE);

	if (r->body.len == 0)
		return;
	if (ct != NULL && strstr(ct, "octet-stream") != NULL)
		return;
	json_parse_strict(r);
}

/* Hands r's answer to MHD, once: see mock_pipeline_on_request for why a
 * request answered may be called again. */
static enum MHD_Result finish(mreq *r, mresp *out)
{
	enum MHD_Result rc;

	r->answered = true;
	if (out->close_reset || out->close_plain) {
		if (out->close_reset)
			fault_apply_reset_conn(r->conn);
		mresp_release(out);
		return MHD_NO;
	}
	rc = queue(r, out);
	mresp_release(out);
	return rc;
}

/* ---- serving, inline or on a worker ---- */

/* Everything after the prologue; may block (latency, hang, exec, I/O). */
static void serve(mreq *r, mresp *out)
{
	if (r->admin) {
		admin_dispatch(r, out);
		return;
	}
	fault_apply_latency(r);
	if (r->self) { /* fault rules are not evaluated for it (dispatch) */
		self_dispatch(r, out);
	} else if (!fault_apply_replace(r, out)) {
		api_dispatch(r, out);
		fault_apply_after(r, out);
	}
	journal_record(r, out->close_reset || out->close_plain ? 0 : out->status);
}

/* True when serving r may block, so it must not run on a pool thread:
 * reads are served inline unless they touch a guest or a waiting fault
 * fired; every mutation is offloaded (guests, file I/O, timing profiles). */
static bool must_offload(const mreq *r)
{
	if (atomic_load(&r->mock->srv->offload_all) || r->mock->rec != NULL)
		return true; /* record/replay: GETs go upstream */
	if (r->fault_fired) {
		switch (r->fault.kind) {
		case FK_HTTP:
		case FK_RESET:
		case FK_CLOSE:
		case FK_EMPTY_200:
		case FK_MALFORMED_JSON:
		case FK_TRUNCATED:
		case FK_GARBAGE:
		case FK_DRIBBLE: /* the body comes through mock_blocking_response */
			break;
		default:
			return true;
		}
	}
	if (r->route == NULL) /* a 404/405: only a mutation's may wait (faults) */
		return strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0;
	return (r->route->flags & ROUTE_BLOCKS) != 0;
}

/* Serves an offloaded request and hands it back to MHD. */
static void offload_serve(mreq *r)
{
	sbx_mock *mock = r->mock;
	struct MHD_Connection *conn = r->conn;

	serve(r, r->pending);
	r->offload = OFFLOAD_DONE;
	/* r belongs to MHD again from here on (it may complete and free it) */
	MHD_resume_connection(conn);
	mock_worker_end(mock);
}

static void *offload_main(void *arg)
{
	offload_serve(arg);
	return NULL;
}

/* Suspends the connection and serves r on a worker; false when that is not
 * possible (the caller serves inline). */
static bool offload(mreq *r)
{
	r->pending = calloc(1, sizeof(*r->pending));
	if (r->pending == NULL)
		return false;
	if (!mock_worker_begin(r->mock)) {
		free(r->pending);
		r->pending = NULL;
		return false;
	}
	r->offload = OFFLOAD_RUNNING;
	MHD_suspend_connection(r->conn);
	if (mock_worker_start(r->mock, offload_main, r) != 0)
		offload_serve(r); /* resumes at once; the answer is queued on the next call */
	return true;
}

/* ---- the pipeline: MHD's callbacks ---- */

static void new_request_id(mreq *r)
{
	snprintf(r->request_id, sizeof(r->request_id), "req_%08lx%012llx",
		 (unsigned long)(r->mock->seed & 0xffffffff),
		 (unsigned long long)atomic_fetch_add(&r->mock->srv->req_counter, 1));
}

/* The request is complete: id, body, key, fault rules; then serves it
 * inline or offloads it. */
static enum MHD_Result dispatch(mreq *r)
{
	sbx_mock *mock = r->mock;
	mresp out;
	mock_fault_req q;
	char name[MOCK_NAME_MAX + 2];

	new_request_id(r);
	if (r->too_large) {
		char msg[128];

		memset(&out, 0, sizeof(out));
		snprintf(msg, sizeof(msg), "request body is over the %zu-byte limit", r->limit);
		resp_fail(&out, 413, "body", "PAYLOAD_TOO_LARGE", msg);
		resp_header(&out, MHD_HTTP_HEADER_CONNECTION, "close");
		if (!r->admin)
			journal_record(r, 413);
		return finish(r, &out);
	}
	parse_body(r);
	if (!r->admin && !r->self) {
		r->api_key = auth_key(r->conn);
		if (mock_faults_count(mock->faults) > 0) {
			fault_summary(r, &q, name, sizeof(name));
			r->fault_fired = mock_faults_eval(mock->faults, &q, &r->fault, r->fault_label,
							  sizeof(r->fault_label));
		}
	}
	if (must_offload(r) && offload(r))
		return MHD_YES;
	memset(&out, 0, sizeof(out));
	serve(r, &out);
	return finish(r, &out);
}

/* ---- framing: answered on the first call, before any body byte ---- */

typedef struct {
	unsigned n;       /* Content-Length headers seen */
	const char *first; /* the first one's value */
	bool differ;      /* a later one differs from the first */
} cl_count;

static enum MHD_Result count_cl(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	cl_count *c = cls;

	(void)kind;
	if (key == NULL || strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0)
		return MHD_YES;
	if (c->n++ == 0)
		c->first = value;
	else if (value == NULL || c->first == NULL || strcmp(value, c->first) != 0)
		c->differ = true;
	return MHD_YES;
}

/* Why the request's framing is ambiguous (RFC 9112 6.3), or NULL: two
 * Content-Length headers that differ, or Content-Length with
 * Transfer-Encoding. libmicrohttpd 0.9.75 accepts both (it reads by the
 * first Content-Length, or as chunked). */
static const char *framing_problem(struct MHD_Connection *conn)
{
	cl_count c = {0};

	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_cl, &c);
	if (c.differ)
		return "two Content-Length headers with different values";
	if (c.n > 0 && MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						   MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL)
		return "Content-Length together with Transfer-Encoding";
	return NULL;
}

/* Answers on the first call, before the body is read (and before MHD
 * sends 100 Continue), and closes the connection after the answer: MHD
 * then reads neither the body nor anything behind it; the close lingers
 * (linger.c) so that a client still sending reads the answer. */
static enum MHD_Result answer_early(mreq *r, int status, const char *field, const char *code,
				    const char *msg)
{
	mresp out;

	new_request_id(r);
	memset(&out, 0, sizeof(out));
	resp_fail(&out, status, field, code, msg);
	resp_header(&out, MHD_HTTP_HEADER_CONNECTION, "close");
	if (!r->admin)
		journal_record(r, status);
	if (!r->self) /* the self daemon's connections are not the API's */
		linger_mark(r->mock->srv->linger, mock_conn_fd(r->conn), conn_serial(r->conn));
	return finish(r, &out);
}

/* A body still arriving, far past its limit: libmicrohttpd 0.9.75 queues
 * no answer in the middle of a body, so the 413 is written to the socket
 * here (nothing else of this request has been sent, and MHD writes
 * nothing more once told MHD_NO) and the close lingers (linger.c): the
 * client reads the 413 instead of a reset. */
static enum MHD_Result answer_mid_body(mreq *r)
{
	mresp out;
	char msg[128], head[512];
	int fd = mock_conn_fd(r->conn), hlen;

	new_request_id(r);
	memset(&out, 0, sizeof(out));
	snprintf(msg, sizeof(msg), "request body is over the %zu-byte limit", r->limit);
	resp_fail(&out, 413, "body", "PAYLOAD_TOO_LARGE", msg);
	hlen = snprintf(head, sizeof(head),
			"HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\n"
			"Content-Type: application/json\r\nContent-Length: %zu\r\n"
			"X-Request-Id: %s\r\n\r\n",
			out.len, r->request_id);
	/* an empty socket buffer takes these few hundred bytes whole; a
	 * short write only costs the client its answer, as before */
	if (fd >= 0 && out.body != NULL && send(fd, head, (size_t)hlen, MSG_NOSIGNAL) == hlen &&
	    send(fd, out.body, out.len, MSG_NOSIGNAL) == (ssize_t)out.len && !r->self)
		linger_mark(r->mock->srv->linger, fd, conn_serial(r->conn));
	mresp_release(&out);
	if (!r->admin)
		journal_record(r, 413);
	return MHD_NO;
}

static bool expects_continue(struct MHD_Connection *conn)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);

	return v != NULL && strcasecmp(v, "100-continue") == 0;
}

/* The first call's checks: ambiguous framing → 400, a declared body over
 * the route's limit → 413; both answered at once. */
static enum MHD_Result check_framing(mreq *r)
{
	const char *why = framing_problem(r->conn);
	const char *cl;
	char msg[128];

	if (r->uri_nul)
		return answer_early(r, 400, "path", "INVALID_PATH",
				    "the request path or query holds a NUL byte (%00); it is refused "
				    "rather than cut short");
	if (why != NULL)
		return answer_early(r, 400, "body", "BAD_FRAMING", why);
	cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl != NULL && strtoull(cl, NULL, 10) > r->limit) {
		r->too_large = true;
		/* A body on its way (no Expect: 100-continue) and not far over:
		 * read on and dropped, then answered (dispatch). Closing on a
		 * client still sending resets the connection, and the reset
		 * can reach the client before it reads the 413 (RFC 9112 9.6):
		 * under load the client then saw no answer at all. */
		if (!expects_continue(r->conn) &&
		    strtoull(cl, NULL, 10) <= r->limit + CHUNKED_DISCARD_MAX)
			return MHD_YES;
		snprintf(msg, sizeof(msg), "request body is over the %zu-byte limit", r->limit);
		return answer_early(r, 413, "body", "PAYLOAD_TOO_LARGE", msg);
	}
	return MHD_YES;
}

/* What mock_pipeline_on_uri hands MHD as the request's context when the raw
 * URI holds %00: MHD decodes the path and the query to C strings, which a
 * NUL would cut short ("/workspace/a%00/../../etc" read as "/workspace/a"),
 * so the request is refused whole (check_framing). Never freed. */
static char uri_nul_mark;

void *mock_pipeline_on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls;
	(void)conn;
	return uri != NULL && strstr(uri, "%00") != NULL ? &uri_nul_mark : NULL;
}

static bool self_conn(const sbx_mock *mock, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);

	return ci != NULL && ci->daemon == mock->self_daemon;
}

enum MHD_Result mock_pipeline_on_request(void *cls, struct MHD_Connection *conn, const char *url,
				     const char *method, const char *version,
				     const char *upload_data, size_t *upload_data_size,
				     void **con_cls)
{
	sbx_mock *mock = cls;
	mreq *r = *con_cls;

	(void)version;
	if (r == NULL || r == (void *)&uri_nul_mark) {
		bool uri_nul = r != NULL;

		r = calloc(1, sizeof(*r));
		*con_cls = NULL;
		if (r == NULL)
			return MHD_NO;
		r->uri_nul = uri_nul;
		r->mock = mock;
		r->conn = conn;
		r->self = mock->self_daemon != NULL && self_conn(mock, conn);
		r->method = method;
		r->path = strdup(url);
		r->start_us = sbx_mono_us();
		sbx_strbuf_init(&r->body);
		*con_cls = r;
		if (r->path == NULL)
			return MHD_NO;
		/* The route is matched once; its flags decide the body limit,
		 * offloading and the fault matcher's view of the request. */
		r->admin = !r->self && (strncmp(url, "/_mock/", 7) == 0 || strcmp(url, "/_mock") == 0);
		r->route = mock_route_lookup(r->self, r->admin, method, url);
		r->limit = r->route != NULL && (r->route->flags & ROUTE_FILE_BODY) != 0 ? mock->max_file
											  : mock->max_json;
		if (!r->admin && !r->self) /* an early answer's journal names the tenant */
			r->api_key = auth_key(conn);
		return check_framing(r);
	}
	/* libmicrohttpd 0.9.75's MHD_queue_response returns MHD_YES without
	 * queueing anything once MHD_stop_daemon has begun, and MHD then
	 * calls again for the answer it did not get: dispatching again would
	 * serve the request twice (a second template created while the mock
	 * stops) and lose the first parse of its body. The daemon is closing
	 * the connection anyway. */
	if (r->answered)
		return MHD_NO;
	if (*upload_data_size != 0) {
		if (r->too_large || r->body.len + *upload_data_size > r->limit) {
			/* A chunked body, or a declared one a little over the
			 * limit (check_framing). libmicrohttpd 0.9.75 takes an
			 * answer only before the body or after it, so the body
			 * is read on and dropped, up to CHUNKED_DISCARD_MAX more, and dispatch answers 413
			 * once it ends; a longer one is cut: the connection is
			 * closed (journalled as status 0). */
			r->discarded += r->body.len + *upload_data_size;
			r->too_large = true;
			sbx_strbuf_free(&r->body);
			*upload_data_size = 0;
			if (r->discarded <= r->limit + CHUNKED_DISCARD_MAX)
				return MHD_YES;
			return answer_mid_body(r);
		}
		if (!sbx_strbuf_append(&r->body, upload_data, *upload_data_size))
			return MHD_NO;
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (r->offload == OFFLOAD_DONE) {
		mresp *out = r->pending;
		enum MHD_Result rc;

		r->pending = NULL;
		r->offload = OFFLOAD_NONE;
		rc = finish(r, out);
		free(out);
		return rc;
	}
	if (r->offload == OFFLOAD_RUNNING)
		return MHD_YES; /* not reached: the connection is suspended */
	return dispatch(r);
}

void mock_pipeline_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			    enum MHD_RequestTerminationCode toe)
{
	mreq *r = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (r == NULL || r == (void *)&uri_nul_mark)
		return;
	if (r->pending != NULL) {
		mresp_release(r->pending);
		free(r->pending);
	}
	cJSON_Delete(r->json);
	sbx_strbuf_free(&r->body);
	free(r->path);
	free(r);
	*con_cls = NULL;
}

enum MHD_Result mock_pipeline_on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	sbx_mock *mock = cls;

	(void)addr;
	(void)addrlen;
	return atomic_load(&mock->srv->conns_open) >= mock->srv->max_conns ? MHD_NO : MHD_YES;
}

void mock_pipeline_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			     enum MHD_ConnectionNotificationCode toe)
{
	sbx_mock *mock = cls;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		atomic_fetch_add(&mock->srv->conns_open, 1);
	} else {
		atomic_fetch_sub(&mock->srv->conns_open, 1);
		linger_on_close(mock->srv->linger, mock_conn_fd(conn),
				(uint64_t)(uintptr_t)*socket_context);
	}
	chaos_on_connection(cls, conn, socket_context, toe);
}

void mock_pipeline_on_log(void *cls, const char *fmt, va_list ap)
{
	sbx_mock *mock = cls;

	if (mock->quiet)
		return;
	fputs("sbx-mock: mhd: ", stderr);
	vfprintf(stderr, fmt, ap);
}

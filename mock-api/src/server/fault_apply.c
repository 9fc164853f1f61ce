/* fault_apply: the fault actions, applied to one request (see
 * fault_apply.h). The engine in faults.c decides, this file acts; what a
 * fault does to the model goes through an operation (host_dies and
 * cp_restart: ops_admin.c), never the model lock here. Never closes a socket itself: a reset or close is a flag
 * on the answer that http.c carries out, and cp_restart only shuts the
 * other connections down (chaos.c), MHD closes them. */
#define _GNU_SOURCE
#include "server/fault_apply.h"

#include "ops/ops.h"
#include "server/server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- transport ---- */

/* RST the connection now: SO_LINGER 0 makes the final close abortive, and
 * connect(AF_UNSPEC) disconnects the TCP socket at once (Linux sends RST),
 * so MHD's own shutdown(SHUT_WR) cannot turn it into a polite FIN. */
void fault_apply_reset_conn(struct MHD_Connection *conn)
{
	int fd = mock_conn_fd(conn);
	struct linger lg = {1, 0};
	struct sockaddr unspec;

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	memset(&unspec, 0, sizeof(unspec));
	unspec.sa_family = AF_UNSPEC;
	/* Dissolving the association is best effort: the close that follows
	 * still resets the connection because of SO_LINGER 0. */
	(void)connect(fd, &unspec, sizeof(unspec));
}

/* ---- answers that replace the handler's ---- */

static void hang(mreq *r, int64_t max_ms)
{
	int64_t end = sbx_mono_us() + max_ms * 1000;

	while (!r->mock->virtual_delays && sbx_mono_us() < end) {
		if (req_client_gone(r))
			return;
		mock_sleep_ms(r->mock, 50);
	}
}

/* The envelope an http action sends: `envelope` when given, at any status
 * (a 503 fail with a code is what some gateways send), else success for
 * 2xx, error for 5xx and fail for the rest. `data` as given replaces the
 * data member ({field: message, code} by default). */
static cJSON *fault_envelope(const mock_fault_action *a)
{
	const char *kind = a->envelope[0] != '\0' ? a->envelope
			   : a->status >= 200 && a->status < 300 ? "success"
			   : a->status >= 500 ? "error" : "fail";
	cJSON *env = cJSON_CreateObject();
	cJSON *data = a->has_data ? cJSON_Parse(a->data_json) : NULL;

	cJSON_AddStringToObject(env, "status", kind);
	if (strcmp(kind, "error") == 0) {
		cJSON_AddStringToObject(env, "message",
					a->message[0] != '\0' ? a->message : "injected fault");
		cJSON_AddNumberToObject(env, "code", a->status);
		if (data != NULL)
			cJSON_AddItemToObject(env, "data", data);
		return env;
	}
	if (data == NULL && strcmp(kind, "success") == 0) {
		data = cJSON_CreateObject();
	} else if (data == NULL) {
		data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, a->field[0] != '\0' ? a->field : "error",
					a->message[0] != '\0' ? a->message : "injected fault");
		if (a->code[0] != '\0')
			cJSON_AddStringToObject(data, "code", a->code);
	}
	cJSON_AddItemToObject(env, "data", data);
	return env;
}

/* An http action's answer. Its headers are added after Retry-After so that
 * they win: queue() (pipeline.c) sends only the last of each name and none
 * whose value is empty, and they replace the mock's Content-Type and
 * X-Request-Id. */
static void fault_http(mreq *r, mresp *out)
{
	const mock_fault_action *a = &r->fault;

	if (a->has_body) {
		char *body = strdup(a->body);

		resp_raw(out, a->status, a->content_type, body, body != NULL ? strlen(body) : 0);
	} else {
		cJSON *env = fault_envelope(a);
		size_t len = 0;
		char *text = mock_json_print(env, &len);

		cJSON_Delete(env);
		resp_raw(out, a->status, "application/json", text, text != NULL ? len : 0);
	}
	if (a->retry_after >= 0) {
		char v[24];

		snprintf(v, sizeof(v), "%d", a->retry_after);
		resp_header(out, "Retry-After", v);
	}
	for (size_t i = 0; i < a->nheaders; i++)
		resp_header(out, a->hname[i], a->hvalue[i]);
}

typedef struct slow_body {
	sbx_mock *mock;
	char *body;
	size_t len;
	unsigned bytes_per_tick; /* 0: truncated mode */
} slow_body;

static ssize_t slow_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	slow_body *sb = cls;
	size_t n;

	if (pos >= sb->len)
		return sb->bytes_per_tick == 0 ? MHD_CONTENT_READER_END_WITH_ERROR
						: MHD_CONTENT_READER_END_OF_STREAM;
	if (atomic_load(&sb->mock->stopping))
		return MHD_CONTENT_READER_END_WITH_ERROR;
	n = sb->len - (size_t)pos;
	if (n > max)
		n = max;
	if (sb->bytes_per_tick != 0) {
		if (n > sb->bytes_per_tick)
			n = sb->bytes_per_tick;
		if (!sb->mock->virtual_delays)
			mock_sleep_ms(sb->mock, 100);
	}
	memcpy(buf, sb->body + pos, n);
	return (ssize_t)n;
}

static void slow_free(void *cls)
{
	slow_body *sb = cls;

	free(sb->body);
	free(sb);
}

/* Turns out's body into a response that declares `declared` bytes but
 * sends only the body (truncated), or dribbles it (bytes_per_sec). */
static void make_slow(mreq *r, mresp *out, uint64_t declared, unsigned bytes_per_sec)
{
	slow_body *sb = calloc(1, sizeof(*sb));

	if (sb == NULL)
		return;
	sb->mock = r->mock;
	sb->body = out->body;
	sb->len = out->len;
	sb->bytes_per_tick = bytes_per_sec == 0 ? 0 : (bytes_per_sec + 9) / 10;
	out->body = NULL;
	out->len = 0;
	if (sb->bytes_per_tick != 0) {
		out->custom = mock_blocking_response(r, declared, slow_reader, sb, slow_free, NULL);
		return;
	}
	out->custom = MHD_create_response_from_callback(declared, 4096, slow_reader, sb, slow_free);
	if (out->custom == NULL)
		slow_free(sb);
}

/* Transport faults that replace the answer. Returns true when handled. */
static bool apply_replacing_fault(mreq *r, mresp *out)
{
	static const char malformed[] = "{\"status\":\"success\",\"data\":{\"id\":\"sb-";
	unsigned char *garbage;

	switch (r->fault.kind) {
	case FK_HTTP:
		fault_http(r, out);
		return true;
	case FK_RESET:
		out->close_reset = true;
		return true;
	case FK_CLOSE:
		out->close_plain = true;
		return true;
	case FK_HANG:
		hang(r, r->fault.max_ms);
		out->close_plain = true;
		return true;
	case FK_EMPTY_200:
		resp_raw(out, 200, "application/json", NULL, 0);
		return true;
	case FK_MALFORMED_JSON:
		resp_raw(out, 200, "application/json", strdup(malformed), sizeof(malformed) - 1);
		return true;
	case FK_TRUNCATED:
		resp_success(out, 200, NULL);
		make_slow(r, out, (uint64_t)out->len + 512, 0);
		return true;
	case FK_GARBAGE:
		garbage = malloc(512);
		if (garbage != NULL)
			mock_faults_random_bytes(r->mock->faults, garbage, 512);
		resp_raw(out, 200, "application/json", (char *)garbage, garbage != NULL ? 512 : 0);
		return true;
	default:
		return false;
	}
}

/* ---- answers rewritten after the handler ---- */

static void commit_then_fail(mreq *r, mresp *out)
{
	mresp_release(out);
	memset(out, 0, sizeof(*out));
	switch (r->fault.then) {
	case THEN_RESET:
		out->close_reset = true;
		break;
	case THEN_CLOSE:
		out->close_plain = true;
		break;
	default:
		out->status = r->fault.status;
		if (out->status >= 500)
			resp_error(out, out->status, "injected failure after the operation committed");
		else
			resp_fail(out, out->status, "error", "", "injected failure after commit");
		break;
	}
}

/* ---- chaos: faults that reach beyond one request ---- */

/* host_dies (every sandbox on a host fails; the next resume is a cross-host
 * cold start) and cp_restart (every open connection drops, state survives,
 * readyz answers 503 for a while on the virtual clock). The model effects
 * are the operations' (ops_admin.c); true when the answer was replaced. */
static bool chaos_apply(mreq *r, mresp *out)
{
	sbx_mock *mock = r->mock;

	switch (r->fault.kind) {
	case FK_HOST_DIES:
		mock_op_host_dies(mock, r->fault.host_id);
		return false; /* the request itself is then served normally */
	case FK_CP_RESTART:
		mock_op_cp_restart(mock, r->fault.not_ready_ms);
		chaos_drop_connections(mock, req_conn_fd(r));
		out->close_reset = true;
		return true;
	default:
		return false;
	}
}

/* ---- entry points (serve, in http.c) ---- */

void fault_apply_latency(mreq *r)
{
	sbx_mock *mock = r->mock;

	if (r->fault_fired && r->fault.kind == FK_LATENCY && !mock->virtual_delays)
		mock_sleep_ms(mock, (int64_t)mock_faults_latency_ms(mock->faults, &r->fault));
}

bool fault_apply_replace(mreq *r, mresp *out)
{
	return r->fault_fired && (apply_replacing_fault(r, out) || chaos_apply(r, out));
}

void fault_apply_after(mreq *r, mresp *out)
{
	if (!r->fault_fired)
		return;
	if (r->fault.kind == FK_COMMIT_THEN_FAIL)
		commit_then_fail(r, out);
	else if (r->fault.kind == FK_DRIBBLE && out->custom == NULL)
		make_slow(r, out, out->len, r->fault.bytes_per_sec);
}

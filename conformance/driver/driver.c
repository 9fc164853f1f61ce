/* sbxdriver: the driver side of the conformance line protocol (see
 * sbx/driver.h and conformance/PROTOCOL.md).
 *
 * Must never write anything but one answer line per request to the output
 * stream, and never let a malformed or oversized line crash the driver: every
 * such line gets a ProtocolError answer. */
#include "sbx/driver.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sbx/strbuf.h"
#include "sbx/sys.h"

void sbxd_error_set(sbxd_error *err, const char *type, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return;
	snprintf(err->type, sizeof(err->type), "%s", type);
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

static cJSON *error_object(const char *type, const char *message)
{
	cJSON *e = cJSON_CreateObject();

	cJSON_AddStringToObject(e, "type", type);
	cJSON_AddStringToObject(e, "message", message);
	return e;
}

/* Request ids every JSON parser reads exactly: integers of at most 2^53 - 1
 * in magnitude (a double holds them; cJSON prints them back digit for
 * digit). */
#define SBXD_MAX_ID 9007199254740991.0

static bool id_ok(const cJSON *id)
{
	double v = cJSON_IsNumber(id) ? id->valuedouble : 0.5;

	return v == floor(v) && fabs(v) <= SBXD_MAX_ID;
}

/* Builds {"id":..,"ok":..,"result"|"error":..}; takes ownership of payload. */
static char *answer(const cJSON *id, bool ok, cJSON *payload)
{
	cJSON *a = cJSON_CreateObject();
	char *text;

	if (id != NULL && id_ok(id)) {
		/* the integer's own digits: cJSON prints 15 significant digits
		 * when they read back within an epsilon, which rounds 16-digit ids */
		char digits[32];

		snprintf(digits, sizeof(digits), "%.0f", id->valuedouble);
		cJSON_AddRawToObject(a, "id", digits);
	} else {
		cJSON_AddNullToObject(a, "id");
	}
	cJSON_AddBoolToObject(a, "ok", ok);
	cJSON_AddItemToObject(a, ok ? "result" : "error", payload);
	text = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	return text;
}

static char *protocol_error(const cJSON *id, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *protocol_error(const cJSON *id, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return answer(id, false, error_object("ProtocolError", msg));
}

static char *from_result(const cJSON *id, cJSON *result, const sbxd_error *err)
{
	if (result != NULL)
		return answer(id, true, result);
	return answer(id, false, error_object(err->type[0] ? err->type : SBXD_EXECUTION,
					      err->message));
}

static cJSON *op_hello(const sbxd_vtable *vt)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *s = cJSON_AddArrayToObject(r, "surfaces");

	cJSON_AddNumberToObject(r, "protocol", SBXD_PROTOCOL_VERSION);
	cJSON_AddStringToObject(r, "name", vt->name ? vt->name : "unnamed");
	cJSON_AddStringToObject(r, "driver", vt->driver ? vt->driver : "sbxdriver");
	if (vt->run != NULL)
		cJSON_AddItemToArray(s, cJSON_CreateString("backend"));
	if (vt->component_run != NULL)
		cJSON_AddItemToArray(s, cJSON_CreateString("component"));
	if (vt->executor_run != NULL)
		cJSON_AddItemToArray(s, cJSON_CreateString("executor"));
	if (vt->gate != NULL || vt->load_plugins != NULL)
		cJSON_AddItemToArray(s, cJSON_CreateString("host-gate"));
	return r;
}

/* {"ok":bool,"result"|"error":...} for embedding in fork_check/run_concurrent. */
static cJSON *outcome(cJSON *result, const sbxd_error *err)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddBoolToObject(o, "ok", result != NULL);
	if (result != NULL)
		cJSON_AddItemToObject(o, "result", result);
	else
		cJSON_AddItemToObject(o, "error",
				      error_object(err->type[0] ? err->type : SBXD_EXECUTION, err->message));
	return o;
}

/* Child side of fork_check: never returns. */
static void fork_child(const sbxd_vtable *vt, void *be, const char *code, int wfd)
{
	sbxd_error err = {{0}, {0}};
	cJSON *res = NULL;
	cJSON *o;
	char *text;

	if (vt->reset_after_fork != NULL && vt->reset_after_fork(be, &err) != 0)
		goto out_report;
	res = vt->run(be, code, NULL, &err);
out_report:
	o = outcome(res, &err);
	text = cJSON_PrintUnformatted(o);
	if (text != NULL)
		(void)sbx_write_all(wfd, text, strlen(text));
	_exit(0);
}

static cJSON *op_fork_check(const sbxd_vtable *vt, void *be, const cJSON *req, sbxd_error *err)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(req, "code");
	sbx_strbuf sb = SBX_STRBUF_INIT;
	cJSON *child = NULL;
	cJSON *r = NULL;
	int fds[2];
	pid_t pid;
	int status;
	char buf[4096];

	if (vt->run == NULL) {
		sbxd_error_set(err, "ProtocolError", "fork_check: backend surface not served");
		return NULL;
	}
	if (pipe(fds) != 0) {
		sbxd_error_set(err, "OSError", "fork_check: pipe: %s", strerror(errno));
		return NULL;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		sbxd_error_set(err, "OSError", "fork_check: fork: %s", strerror(errno));
		goto out_close;
	}
	if (pid == 0) {
		close(fds[0]);
		fork_child(vt, be, cJSON_GetStringValue(code), fds[1]);
	}
	close(fds[1]);
	fds[1] = -1;
	for (;;) {
		ssize_t n = read(fds[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sbx_strbuf_append(&sb, buf, (size_t)n);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	child = cJSON_Parse(sbx_strbuf_str(&sb));
	if (child == NULL) {
		sbxd_error_set(err, SBXD_EXECUTION, "fork_check: child %ld reported nothing (status %d)",
			       (long)pid, status);
		goto out_close;
	}
	r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "child", child);
	cJSON_AddNumberToObject(r, "child_pid", (double)pid);
out_close:
	if (fds[1] >= 0)
		close(fds[1]);
	close(fds[0]);
	sbx_strbuf_free(&sb);
	return r;
}

struct conc_slot {
	const sbxd_vtable *vt;
	void *be;
	const char *code;
	const cJSON *env;
	cJSON *outcome;
};

static void *conc_thread(void *arg)
{
	struct conc_slot *s = arg;
	sbxd_error err = {{0}, {0}};
	cJSON *res = s->vt->run(s->be, s->code, s->env, &err);

	s->outcome = outcome(res, &err);
	return NULL;
}

static cJSON *op_run_concurrent(const sbxd_vtable *vt, void *be, const cJSON *req, sbxd_error *err)
{
	const cJSON *runs = cJSON_GetObjectItemCaseSensitive(req, "runs");
	struct conc_slot slots[SBXD_MAX_CONCURRENT];
	pthread_t th[SBXD_MAX_CONCURRENT];
	bool started[SBXD_MAX_CONCURRENT] = {false};
	int n = cJSON_GetArraySize(runs);
	cJSON *r;
	cJSON *arr;
	int i;

	if (!cJSON_IsArray(runs) || n < 1 || n > SBXD_MAX_CONCURRENT) {
		sbxd_error_set(err, "ProtocolError", "run_concurrent: `runs` must be an array of 1..%d runs",
			       SBXD_MAX_CONCURRENT);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		const cJSON *item = cJSON_GetArrayItem(runs, i);
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(item, "code");
		const cJSON *env = cJSON_GetObjectItemCaseSensitive(item, "env");

		if (!cJSON_IsString(code)) {
			sbxd_error_set(err, "ProtocolError", "run_concurrent: runs[%d].code must be a string", i);
			return NULL;
		}
		slots[i] = (struct conc_slot){vt, be, code->valuestring,
					      cJSON_IsObject(env) ? env : NULL, NULL};
	}
	for (i = 0; i < n; i++)
		started[i] = pthread_create(&th[i], NULL, conc_thread, &slots[i]) == 0;
	r = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(r, "results");
	for (i = 0; i < n; i++) {
		sbxd_error e = {{0}, {0}};

		if (started[i])
			pthread_join(th[i], NULL);
		else
			slots[i].outcome = outcome(NULL, (sbxd_error_set(&e, "OSError", "thread start failed"), &e));
		cJSON_AddItemToArray(arr, slots[i].outcome);
	}
	return r;
}

static bool need_string(const cJSON *req, const char *field)
{
	return cJSON_IsString(cJSON_GetObjectItemCaseSensitive(req, field));
}

/* Dispatches one parsed request; returns the answer text. */
static char *dispatch(const sbxd_vtable *vt, void *be, const cJSON *req, const char *op,
		      const cJSON *id, bool *exit_requested)
{
	sbxd_error err = {{0}, {0}};
	cJSON *res = NULL;

	if (strcmp(op, "hello") == 0)
		return answer(id, true, op_hello(vt));
	if (strcmp(op, "exit") == 0) {
		*exit_requested = true;
		return answer(id, true, cJSON_CreateObject());
	}
	if (strcmp(op, "shutdown") == 0) {
		if (vt->shutdown != NULL && vt->shutdown(be, &err) != 0)
			return from_result(id, NULL, &err);
		return answer(id, true, cJSON_CreateObject());
	}
	if (strcmp(op, "capabilities") == 0 && vt->capabilities != NULL) {
		res = vt->capabilities(be, &err);
		return from_result(id, res, &err);
	}
	if (strcmp(op, "run") == 0 && vt->run != NULL) {
		const cJSON *env = cJSON_GetObjectItemCaseSensitive(req, "env");

		if (!need_string(req, "code"))
			return protocol_error(id, "run: missing string field `code`");
		if (env != NULL && !cJSON_IsNull(env) && !cJSON_IsObject(env))
			return protocol_error(id, "run: `env` must be an object or null");
		res = vt->run(be, cJSON_GetObjectItemCaseSensitive(req, "code")->valuestring,
			      cJSON_IsObject(env) ? env : NULL, &err);
		return from_result(id, res, &err);
	}
	if (strcmp(op, "fork_check") == 0) {
		if (!need_string(req, "code"))
			return protocol_error(id, "fork_check: missing string field `code`");
		res = op_fork_check(vt, be, req, &err);
		return from_result(id, res, &err);
	}
	if (strcmp(op, "run_concurrent") == 0 && vt->run != NULL)
		return from_result(id, op_run_concurrent(vt, be, req, &err), &err);
	if (strcmp(op, "component_run") == 0 && vt->component_run != NULL) {
		if (!need_string(req, "code"))
			return protocol_error(id, "component_run: missing string field `code`");
		return from_result(id, vt->component_run(be, req, &err), &err);
	}
	if (strcmp(op, "executor_run") == 0 && vt->executor_run != NULL) {
		if (!need_string(req, "code"))
			return protocol_error(id, "executor_run: missing string field `code`");
		return from_result(id, vt->executor_run(be, req, &err), &err);
	}
	if (strcmp(op, "gate") == 0 && vt->gate != NULL)
		return from_result(id, vt->gate(be, req, &err), &err);
	if (strcmp(op, "load_plugins") == 0 && vt->load_plugins != NULL)
		return from_result(id, vt->load_plugins(be, req, &err), &err);
	return protocol_error(id, "unknown or unserved op `%.64s`", op);
}

char *sbxd_handle_line(const sbxd_vtable *vt, void *be, const char *line, size_t len,
		       bool *exit_requested)
{
	const char *end = NULL;
	cJSON *req = cJSON_ParseWithLengthOpts(line, len, &end, false);
	const cJSON *id;
	const cJSON *op;
	char *out;

	*exit_requested = false;
	if (req == NULL)
		return protocol_error(NULL, "request is not valid JSON");
	while (end < line + len && (*end == ' ' || *end == '\t' || *end == '\r'))
		end++;
	if (end < line + len) {
		cJSON_Delete(req);
		return protocol_error(NULL, "request has data after its JSON value (byte %zu)",
				      (size_t)(end - line));
	}
	id = cJSON_GetObjectItemCaseSensitive(req, "id");
	op = cJSON_GetObjectItemCaseSensitive(req, "op");
	if (!cJSON_IsObject(req))
		out = protocol_error(NULL, "request must be a JSON object");
	else if (!cJSON_IsNumber(id))
		out = protocol_error(NULL, "request needs a numeric `id`");
	else if (!id_ok(id))
		out = protocol_error(NULL, "`id` must be an integer of at most 2^53 - 1 in magnitude");
	else if (!cJSON_IsString(op))
		out = protocol_error(id, "request needs a string `op`");
	else
		out = dispatch(vt, be, req, op->valuestring, id, exit_requested);
	cJSON_Delete(req);
	return out;
}

/* Reads one line into sb. Returns 1 for a line, 0 at EOF, -1 when the line
 * was longer than SBXD_MAX_LINE (the rest of it is discarded). */
static int read_line(FILE *in, sbx_strbuf *sb)
{
	bool too_long = false;
	int c;

	sbx_strbuf_reset(sb);
	for (;;) {
		char ch;

		c = getc(in);
		if (c == EOF)
			return (sb->len > 0 || too_long) ? (too_long ? -1 : 1) : 0;
		if (c == '\n')
			return too_long ? -1 : 1;
		if (too_long)
			continue;
		if (sb->len >= SBXD_MAX_LINE) {
			too_long = true;
			sbx_strbuf_reset(sb);
			continue;
		}
		ch = (char)c;
		sbx_strbuf_append(sb, &ch, 1);
	}
}

int sbxd_serve(const sbxd_vtable *vt, void *be, FILE *in, FILE *out)
{
	sbx_strbuf line = SBX_STRBUF_INIT;
	int rc = 0;

	for (;;) {
		bool stop = false;
		char *ans;
		int got = read_line(in, &line);

		if (got == 0)
			break;
		if (got < 0)
			ans = protocol_error(NULL, "request line longer than %u bytes", SBXD_MAX_LINE);
		else if (line.len == 0 || (line.len == 1 && line.data[0] == '\r'))
			continue;
		else
			ans = sbxd_handle_line(vt, be, line.data, line.len, &stop);
		if (ans == NULL || fprintf(out, "%s\n", ans) < 0 || fflush(out) != 0)
			rc = 1;
		free(ans);
		if (rc != 0 || stop)
			break;
	}
	sbx_strbuf_free(&line);
	return rc;
}

/* ---- SHA-256 ---- */

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(sbxd_sha256_ctx *c, const unsigned char *p)
{
	uint32_t w[64], a, b, cc, d, e, f, g, h;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
	for (i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = c->h[0]; b = c->h[1]; cc = c->h[2]; d = c->h[3];
	e = c->h[4]; f = c->h[5]; g = c->h[6]; h = c->h[7];
	for (i = 0; i < 64; i++) {
		uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));

		h = g; g = f; f = e; e = d + t1;
		d = cc; cc = b; b = a; a = t1 + t2;
	}
	c->h[0] += a; c->h[1] += b; c->h[2] += cc; c->h[3] += d;
	c->h[4] += e; c->h[5] += f; c->h[6] += g; c->h[7] += h;
}

void sbxd_sha256_init(sbxd_sha256_ctx *c)
{
	static const uint32_t init[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

	memcpy(c->h, init, sizeof(init));
	c->buflen = 0;
	c->total = 0;
}

void sbxd_sha256_update(sbxd_sha256_ctx *c, const void *data, size_t len)
{
	const unsigned char *p = data;

	c->total += len;
	while (len > 0) {
		size_t take = 64 - c->buflen;

		if (take > len)
			take = len;
		memcpy(c->buf + c->buflen, p, take);
		c->buflen += take;
		p += take;
		len -= take;
		if (c->buflen == 64) {
			sha_block(c, c->buf);
			c->buflen = 0;
		}
	}
}

void sbxd_sha256_final(sbxd_sha256_ctx *c, unsigned char out[32])
{
	unsigned long long bits = c->total * 8;
	unsigned char pad = 0x80;
	unsigned char zero = 0;
	unsigned char lenb[8];
	int i;

	sbxd_sha256_update(c, &pad, 1);
	while (c->buflen != 56)
		sbxd_sha256_update(c, &zero, 1);
	for (i = 0; i < 8; i++)
		lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
	sbxd_sha256_update(c, lenb, 8);
	for (i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(c->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(c->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(c->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)c->h[i];
	}
}

void sbxd_sha256(const void *data, size_t len, unsigned char out[32])
{
	sbxd_sha256_ctx c;

	sbxd_sha256_init(&c);
	sbxd_sha256_update(&c, data, len);
	sbxd_sha256_final(&c, out);
}

void sbxd_hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

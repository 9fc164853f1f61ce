/* Fuzz target: sbxctl's parsing of server answers, without a socket
 * (tools/src/client.c ctl_answer_read, ctl_parse_retry_after,
 * ctl_parse_poll_after_ms; tools/src/stream.c, the exec NDJSON stream).
 *
 * Input: the first byte picks the mode.
 *   even: an HTTP answer: two bytes of status (100..599), a flags byte
 *     (bit 0: a raw download), then Retry-After '\n' X-Poll-After '\n' body;
 *   odd: an exec stream: a seed byte for the chunk sizes, then the bytes
 *     the server streams.
 *
 * Properties, each abort()s when broken:
 * - headers: an accepted Retry-After is finite in [0, 1 year] seconds (else
 *   -1), an accepted X-Poll-After in [0, 86400000] ms (else -1); plain
 *   digits read exactly ("5" is 5 s, "250" 250 ms, "2s" 2000 ms);
 * - a 2xx answer is accepted only as one JSend success envelope with
 *   `data` (nothing after it), or raw, or 204/205 without a body; then
 *   resp.data is the envelope's data; refused, it is a ProtocolError whose
 *   message says JSend/malformed JSON/empty body;
 * - a non-2xx answer is the error class of its status with a message: the
 *   JSend error's `message` or fail's string `data` when there is one, and
 *   "not a JSend envelope" with the body's start when the body is not JSend;
 *   the code field stays within its buffer;
 * - stream: the frames give the same stdout, stderr, error and unparseable
 *   reports, exit code and failure flag whether the bytes come at once, in
 *   random chunks or one by one, and the same as an independent reading of
 *   the lines (frames over 256 bytes, the limit scaled down, are skipped
 *   and reported); the exit code is -1 (none) or 0..255;
 * - no crash, leak or hang. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FRAME_MAX 256

static void check(bool ok, const char *what, const char *detail)
{
	if (!ok) {
		fprintf(stderr, "ctl_answer property broken: %s\n  detail: %.600s\n", what, detail ? detail : "-");
		abort();
	}
}

/* "123" (1..9 digits) as a number, else -1. */
static long digits(const char *s, size_t n)
{
	long v = 0;

	if (n == 0 || n > 9)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static void check_headers(const char *retry, const char *poll, const ctl_error *err)
{
	double ra = ctl_parse_retry_after(retry);
	long pa = ctl_parse_poll_after_ms(poll);
	size_t pl = strlen(poll);
	long d = digits(retry, strlen(retry));

	check(ra == -1 || (isfinite(ra) && ra >= 0 && ra <= 86400.0 * 365), "Retry-After out of range", retry);
	check(err->retry_after == ra, "err.retry_after is not the header's", retry);
	check(d < 0 || ra == (d <= 86400L * 365 ? (double)d : -1), "Retry-After digits not read exactly", retry);
	check(pa == -1 || (pa >= 0 && pa <= 86400000), "X-Poll-After out of range", poll);
	if ((d = digits(poll, pl)) >= 0)
		check(pa == (d <= 86400000 ? d : -1), "X-Poll-After digits not read as ms", poll);
	if (pl > 2 && strcmp(poll + pl - 2, "ms") == 0 && (d = digits(poll, pl - 2)) >= 0)
		check(pa == (d <= 86400000 ? d : -1), "X-Poll-After \"Nms\" not read as ms", poll);
	else if (pl > 1 && poll[pl - 1] == 's' && (d = digits(poll, pl - 1)) >= 0)
		check(pa == (d <= 86400 ? d * 1000 : -1), "X-Poll-After \"Ns\" not read as s", poll);
}

/* The reference reading of a body: one JSON value, blanks around it. */
static cJSON *ref_parse(const char *b, size_t n)
{
	const char *end = NULL;
	cJSON *v = n > 0 ? cJSON_ParseWithLengthOpts(b, n, &end, false) : NULL;

	if (v == NULL)
		return NULL;
	while (end < b + n && strchr(" \t\r\n", *end) != NULL && *end != '\0')
		end++;
	if (end != b + n) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void answer_mode(const uint8_t *data, size_t size)
{
	ctl_response resp;
	ctl_error err;
	char retry[64] = "", poll[64] = "";
	const char *p = (const char *)data + 4, *end = (const char *)data + size, *nl;
	long status;
	bool raw;
	int rc;

	if (size < 4)
		return;
	status = 100 + (long)((data[1] << 8 | data[2]) % 500);
	raw = data[3] & 1;
	if ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		snprintf(retry, sizeof retry, "%.*s", (int)(nl - p), p);
		p = nl + 1;
		if ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
			snprintf(poll, sizeof poll, "%.*s", (int)(nl - p), p);
			p = nl + 1;
		}
	}
	memset(&resp, 0, sizeof resp);
	memset(&err, 0, sizeof err);
	resp.status = status;
	sbx_strbuf_init(&resp.body);
	sbx_strbuf_append(&resp.body, p, (size_t)(end - p));
	snprintf(resp.retry_after, sizeof resp.retry_after, "%s", retry);
	snprintf(resp.poll_after, sizeof resp.poll_after, "%s", poll);
	rc = ctl_answer_read(&resp, raw, &err);
	check_headers(retry, poll, &err);

	cJSON *env = ref_parse(resp.body.data, resp.body.len);
	const char *st = jstr(env, "status");
	if (status >= 200 && status < 300) {
		bool ok = raw || (resp.body.len == 0 && (status == 204 || status == 205)) ||
			  (cJSON_IsObject(env) && st != NULL && strcmp(st, "success") == 0 &&
			   cJSON_GetObjectItemCaseSensitive(env, "data") != NULL);

		check((rc == 0) == ok, rc == 0 ? "a 2xx answer that is not JSend success accepted"
					       : "a JSend success refused", err.message);
		if (ok && !raw && resp.body.len > 0) {
			/* printed, not cJSON_Compare: 1e999 reads as inf, unequal to itself */
			char *a = cJSON_PrintUnformatted(resp.data);
			char *b = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(env, "data"));

			check(a != NULL && b != NULL && strcmp(a, b) == 0, "resp.data is not the envelope's data", a);
			free(a);
			free(b);
		}
		if (!ok)
			check(err.cls == CTL_E_PROTOCOL && (strstr(err.message, "JSend") || strstr(err.message, "empty body")),
			      "a refused 2xx answer without a clear message", err.message);
	} else {
		const char *m = NULL;

		check(rc == -1, "a non-2xx answer accepted", NULL);
		check(err.cls == ctl_errclass_for_status(status) && err.status == status,
		      "the error class is not the status's", err.message);
		check(err.message[0] != '\0', "an error without a message", NULL);
		if (cJSON_IsObject(env) && st != NULL && strcmp(st, "error") == 0)
			m = jstr(env, "message");
		if (cJSON_IsObject(env) && st != NULL && strcmp(st, "fail") == 0)
			m = jstr(env, "data");
		if (m != NULL && m[0] != '\0')
			check(strncmp(err.message, m, sizeof err.message - 1) == 0, "the server's message is lost",
			      err.message);
		if (resp.body.len > 0 && !(cJSON_IsObject(env) && st != NULL &&
					   (strcmp(st, "error") == 0 || strcmp(st, "fail") == 0)))
			check(strstr(err.message, "not a JSend envelope") != NULL,
			      "a body that is not JSend without saying so", err.message);
	}
	check(memchr(err.code, '\0', sizeof err.code) != NULL, "err.code unterminated", NULL);
	cJSON_Delete(env);
	ctl_response_free(&resp);
}

/* ---- stream ---- */

struct transcript {
	sbx_strbuf log;
};

static void rec(void *ud, char tag, const char *text)
{
	struct transcript *t = ud;

	sbx_strbuf_printf(&t->log, "%c%s\x01", tag, text);
}

static void t_out(void *ud, const char *s) { rec(ud, 'O', s); }
static void t_err(void *ud, const char *s) { rec(ud, 'E', s); }
static void t_error(void *ud, const char *s) { rec(ud, 'X', s); }
static void t_bad(void *ud, const char *s) { (void)s; rec(ud, 'B', ""); }

/* Feeds the stream in chunks: mode 0 all at once, 1 one byte at a time,
 * 2 random sizes from seed. */
static void run_stream(const char *s, size_t n, int mode, uint32_t seed, struct transcript *t, int *exit_code,
		       bool *failed)
{
	ctl_stream_sink sink = {.out = t_out, .err = t_err, .error = t_error, .bad = t_bad, .ud = t};
	ctl_stream st;
	size_t i = 0;

	ctl_stream_init(&st, &sink);
	st.frame_max = FRAME_MAX;
	while (i < n) {
		size_t k = n - i;

		if (mode == 1)
			k = 1;
		else if (mode == 2) {
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			k = 1 + seed % (seed & 0x100 ? 600 : 17);
			if (k > n - i)
				k = n - i;
		}
		check(ctl_stream_feed(&st, s + i, k), "ctl_stream_feed failed", NULL);
		i += k;
	}
	ctl_stream_finish(&st);
	*exit_code = st.exit_code;
	*failed = st.failed;
	ctl_stream_free(&st);
}

/* The reference: the lines read one by one, as the spec describes them. */
static void ref_stream(const char *s, size_t n, struct transcript *t, int *exit_code, bool *failed)
{
	const char *p = s, *end = s + n;

	*exit_code = -1;
	*failed = false;
	while (p < end) {
		const char *line = p, *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		cJSON *f;

		p = nl != NULL ? nl + 1 : end;
		if (len > FRAME_MAX) {
			*failed = true;
			rec(t, 'B', "");
			continue;
		}
		while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
			len--;
		if (len == 0)
			continue;
		f = ref_parse(line, len);
		if (!cJSON_IsObject(f)) {
			*failed = true;
			rec(t, 'B', "");
			cJSON_Delete(f);
			continue;
		}
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "data"), "result");
		const cJSON *v = cJSON_IsObject(r) ? r : f, *x;

		if (jstr(v, "stdout"))
			rec(t, 'O', jstr(v, "stdout"));
		if (jstr(v, "stderr"))
			rec(t, 'E', jstr(v, "stderr"));
		if (jstr(v, "error"))
			rec(t, 'X', jstr(v, "error"));
		x = cJSON_GetObjectItemCaseSensitive(v, "exit_code");
		if (cJSON_IsNumber(x))
			*exit_code = x->valuedouble >= 0 && x->valuedouble <= 255 ? (int)x->valuedouble : 255;
		cJSON_Delete(f);
	}
}

static void stream_mode(const uint8_t *data, size_t size)
{
	struct transcript t[4];
	int code[4];
	bool failed[4];
	const char *s = (const char *)data + 2;
	size_t n = size - 2;

	if (size < 2)
		return;
	for (int i = 0; i < 4; i++)
		sbx_strbuf_init(&t[i].log);
	ref_stream(s, n, &t[0], &code[0], &failed[0]);
	for (int m = 0; m < 3; m++)
		run_stream(s, n, m, 0x9e3779b9u ^ data[1], &t[m + 1], &code[m + 1], &failed[m + 1]);
	for (int i = 1; i < 4; i++) {
		check(code[i] >= -1 && code[i] <= 255, "an exit code outside -1..255", NULL);
		check(t[i].log.len == t[0].log.len && (t[0].log.len == 0 || memcmp(t[i].log.data, t[0].log.data, t[0].log.len) == 0),
		      i == 1 ? "the frames differ from the reference reading" : "the frames depend on the chunk sizes",
		      sbx_strbuf_str(&t[i].log));
		check(code[i] == code[0] && failed[i] == failed[0], "exit code or failure differs", NULL);
	}
	for (int i = 0; i < 4; i++)
		sbx_strbuf_free(&t[i].log);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 8192)
		return 0;
	if (data[0] & 1)
		stream_mode(data, size);
	else
		answer_mode(data, size);
	return 0;
}

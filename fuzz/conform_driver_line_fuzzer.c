/* Fuzz target: the conformance driver library's protocol layer
 * (conformance/driver: sbxd_handle_line and sbxd_serve) behind a vtable of
 * trivial operations, on arbitrary request bytes.
 *
 * The ops echo their request (run echoes code and env) and fail with an
 * error when the code starts with "fail" or the request has "fail": true, so
 * both answer shapes occur. fork_check would fork per input: for an input
 * whose op is fork_check (or, for sbxd_serve, that mentions fork_check) the
 * vtable without `run` is used, where fork_check answers "not served"
 * without forking.
 *
 * Properties, each abort()s when broken:
 * - sbxd_handle_line: one answer, a single line of JSON: an object with a
 *   boolean "ok" and exactly one of "result" / "error"; an error has string
 *   "type" and "message"; "id" equals the request's id exactly (null when
 *   the request has none, or an id that is not an integer within 2^53 - 1,
 *   or data after its JSON value); a request that is not such an object
 *   with a string op is a ProtocolError; exit_requested only for a good
 *   "exit";
 * - sbxd_serve over the whole input as a stream: exactly one answer line per
 *   non-empty request line (a lone "\r" counts as empty) up to and including
 *   the first good "exit", each one well formed as above. */
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sbx/driver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "conform_driver_line property broken: %s\n", what);
		abort();
	}
}

static bool wants_fail(const cJSON *req)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "fail"));
}

static cJSON *op_capabilities(void *be, sbxd_error *err)
{
	cJSON *c = cJSON_CreateObject();

	(void)be;
	(void)err;
	cJSON_AddBoolToObject(c, "allowlist", false);
	return c;
}

static cJSON *op_run(void *be, const char *code, const cJSON *env, sbxd_error *err)
{
	cJSON *r;

	(void)be;
	check(code != NULL, "run without code");
	check(env == NULL || cJSON_IsObject(env), "run with a non-object env");
	if (strncmp(code, "failnotype", 10) == 0) {
		snprintf(err->message, sizeof(err->message), "no type given");
		return NULL;
	}
	if (strncmp(code, "fail", 4) == 0) {
		sbxd_error_set(err, SBXD_UNAVAILABLE, "refused: %.100s", code);
		return NULL;
	}
	r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "exit_code", 0);
	cJSON_AddStringToObject(r, "stdout", code);
	if (env != NULL)
		cJSON_AddItemToObject(r, "env", cJSON_Duplicate(env, true));
	return r;
}

static int op_shutdown(void *be, sbxd_error *err)
{
	(void)be;
	(void)err;
	return 0;
}

static cJSON *op_echo(void *be, const cJSON *req, sbxd_error *err)
{
	(void)be;
	if (wants_fail(req)) {
		sbxd_error_set(err, "ValueError", "asked to fail");
		return NULL;
	}
	return cJSON_Duplicate(req, true);
}

static const sbxd_vtable vt_full = {
	"fuzz", "conform_driver_line fuzzer", op_capabilities, op_run, op_shutdown, NULL,
	op_echo, op_echo, op_echo, op_echo,
};

/* No `run`: fork_check answers "not served" instead of forking. */
static const sbxd_vtable vt_norun = {
	"fuzz", "conform_driver_line fuzzer", op_capabilities, NULL, op_shutdown, NULL,
	op_echo, op_echo, op_echo, op_echo,
};

typedef struct req_info {
	bool valid;     /* object with a numeric id and a string op */
	bool has_id;    /* numeric id */
	double id;
	bool is_exit;
	bool is_fork_check;
} req_info;

static req_info inspect(const char *line, size_t len)
{
	req_info ri = {false, false, 0, false, false};
	const char *end = NULL;
	cJSON *req = cJSON_ParseWithLengthOpts(line, len, &end, false);
	const cJSON *id, *op;

	if (req == NULL)
		return ri;
	while (end < line + len && (*end == ' ' || *end == '\t' || *end == '\r'))
		end++;
	id = cJSON_GetObjectItemCaseSensitive(req, "id");
	op = cJSON_GetObjectItemCaseSensitive(req, "op");
	/* trailing data, or an id that is not an integer within 2^53 - 1: a
	 * ProtocolError with a null id */
	if (end == line + len && cJSON_IsObject(req) && cJSON_IsNumber(id) &&
	    id->valuedouble == floor(id->valuedouble) && fabs(id->valuedouble) <= 9007199254740991.0) {
		ri.has_id = true;
		ri.id = id->valuedouble;
		if (cJSON_IsString(op)) {
			ri.valid = true;
			ri.is_exit = strcmp(op->valuestring, "exit") == 0;
			ri.is_fork_check = strcmp(op->valuestring, "fork_check") == 0;
		}
	}
	cJSON_Delete(req);
	return ri;
}

/* Checks one answer line against the request it answers. */
static void check_answer(const char *ans, size_t len, const req_info *ri)
{
	cJSON *a, *ok, *id, *result, *error;

	check(ans != NULL, "no answer");
	check(memchr(ans, '\n', len) == NULL && strlen(ans) == len, "answer is not one line");
	a = cJSON_ParseWithLength(ans, len);
	check(cJSON_IsObject(a), "answer is not a JSON object");
	ok = cJSON_GetObjectItemCaseSensitive(a, "ok");
	id = cJSON_GetObjectItemCaseSensitive(a, "id");
	result = cJSON_GetObjectItemCaseSensitive(a, "result");
	error = cJSON_GetObjectItemCaseSensitive(a, "error");
	check(cJSON_IsBool(ok), "answer without a boolean ok");
	check((result != NULL) != (error != NULL), "answer needs exactly one of result and error");
	check(cJSON_IsTrue(ok) == (result != NULL), "ok disagrees with result/error");
	if (error != NULL) {
		check(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(error, "type")) &&
		      cJSON_IsString(cJSON_GetObjectItemCaseSensitive(error, "message")),
		      "error without string type and message");
		check(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(error, "type"))[0] != '\0',
		      "error with an empty type");
	}
	/* ids are integers within 2^53 - 1, which come back digit for digit */
	if (ri->has_id)
		check(cJSON_IsNumber(id) && id->valuedouble == ri->id, "answer id differs from the request's");
	else
		check(cJSON_IsNull(id), "answer has an id the request did not have");
	if (!ri->valid) {
		check(error != NULL, "a malformed request succeeded");
		check(strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(error, "type")),
			     "ProtocolError") == 0, "a malformed request is not a ProtocolError");
	}
	cJSON_Delete(a);
}

static void fuzz_line(const char *text, size_t size)
{
	req_info ri = inspect(text, size);
	const sbxd_vtable *vt = ri.is_fork_check ? &vt_norun : &vt_full;
	bool exit_req = true;
	char *ans = sbxd_handle_line(vt, NULL, text, size, &exit_req);

	check(ans != NULL, "sbxd_handle_line returned no answer");
	check_answer(ans, strlen(ans), &ri);
	check(exit_req == ri.is_exit, "exit_requested wrong");
	free(ans);
}

/* The request lines sbxd_serve will answer, as (start, len) pairs. */
static size_t request_lines(const char *text, size_t size, size_t *start, size_t *len, size_t cap)
{
	size_t n = 0, pos = 0;

	while (pos < size && n < cap) {
		const char *nl = memchr(text + pos, '\n', size - pos);
		size_t l = nl != NULL ? (size_t)(nl - (text + pos)) : size - pos;

		if (!(l == 0 || (l == 1 && text[pos] == '\r'))) {
			start[n] = pos;
			len[n] = l;
			n++;
			if (inspect(text + pos, l).is_exit)
				break;
		}
		pos += l + 1;
	}
	return n;
}

#define MAX_LINES 256

static void fuzz_stream(const char *text, size_t size)
{
	size_t start[MAX_LINES], len[MAX_LINES];
	size_t n = request_lines(text, size, start, len, MAX_LINES);
	char *obuf = NULL;
	size_t olen = 0, seen = 0;
	FILE *in, *out;
	const sbxd_vtable *vt = memmem(text, size, "fork_check", 10) != NULL ? &vt_norun : &vt_full;

	if (size == 0 || n == MAX_LINES)
		return;
	in = fmemopen((void *)text, size, "r");
	out = open_memstream(&obuf, &olen);
	check(in != NULL && out != NULL, "cannot open memory streams");
	check(sbxd_serve(vt, NULL, in, out) == 0, "sbxd_serve failed on a memory stream");
	fclose(in);
	fclose(out);
	for (size_t pos = 0; pos < olen; seen++) {
		char *nl = memchr(obuf + pos, '\n', olen - pos);
		req_info ri;

		check(nl != NULL, "answer not terminated by a newline");
		check(seen < n, "more answers than request lines");
		*nl = '\0';
		ri = inspect(text + start[seen], len[seen]);
		check_answer(obuf + pos, (size_t)(nl - (obuf + pos)), &ri);
		pos = (size_t)(nl - obuf) + 1;
	}
	check(seen == n, "fewer answers than request lines");
	free(obuf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size heap copy, so ASan sees any read past the end. */
	char *text = malloc(size ? size : 1);

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	fuzz_line(text, size);
	fuzz_stream(text, size);
	free(text);
	return 0;
}

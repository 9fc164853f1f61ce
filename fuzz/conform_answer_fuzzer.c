/* Fuzz target: the conformance runner's side of the driver protocol
 * (conformance/PROTOCOL.md): how sbx-conform reads a driver's answer lines,
 * in-process. The runner's own cf_op/cf_call read the answers from a driver
 * attached over descriptors (cf_driver_attach): requests go to /dev/null,
 * answers come from a memfd holding the input's stream, so the line reader,
 * cf_answer_parse (conformance/src/answer.c) and the error mapping all run
 * as for a driver process, without one.
 *
 * Input: a first line whose bytes pick the ops asked, in order (byte % 10:
 * hello, capabilities, run, run_concurrent, fork_check, component_run,
 * executor_run, gate, shutdown, load_plugins; at most 8), then the driver's
 * stdout. Answer lines longer than 1024 bytes are refused (the runner's
 * 64 MiB limit, scaled down so the fuzzer reaches it).
 *
 * Properties (an independent restatement of PROTOCOL.md below), each
 * abort()s when broken:
 * - an answer is accepted only if it is one JSON object (nothing after it
 *   but blanks and a '\r', no NUL) with the pending id as a number (1.5 is
 *   not 1, "1" is not 1), no key twice in any object, a boolean `ok`, an object `result` or an `error`
 *   object with a string `type` of 1..127 bytes and a string `message`, and
 *   the op's documented result fields of their documented types (table
 *   `ref_fields`); an accepted success returns exactly its `result`, an
 *   accepted error exactly its type and message (the message cut at 1023
 *   bytes), and the driver stays usable;
 * - a wrong id fails the case at once with "answered id X, expected Y";
 * - a refused answer fails the case with "not a protocol answer" naming a
 *   field the reference finds wrong (`result.exit_code`, `error.type`, ...);
 * - a line over the limit is refused naming the limit ("1024 bytes"); the
 *   end of the stream is "closed its stdout"; empty lines are skipped;
 * - a given-up driver answers nothing more; hello's protocol is accepted
 *   only when it is the number 1;
 * - no crash, leak or hang (a memfd never blocks; ASan checks leaks). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "answer.h"
#include "conform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LIMIT 1024
#define MAX_OPS 8


static const char *const OPS[] = {"hello", "capabilities", "run", "run_concurrent", "fork_check",
				  "component_run", "executor_run", "gate", "shutdown", "load_plugins"};

static const char *g_line; /* for the failure report */

static void check(bool ok, const char *what, const char *detail)
{
	if (!ok) {
		fprintf(stderr, "conform_answer property broken: %s\n  detail: %s\n  line: %.300s\n", what,
			detail != NULL ? detail : "-", g_line != NULL ? g_line : "-");
		abort();
	}
}

/* ---- the reference: PROTOCOL.md restated ---- */

/* Every wrong field, listed (grown as needed). */
struct viol {
	char **path;
	int n;
};

__attribute__((format(printf, 2, 3)))
static void viol(struct viol *v, const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;

	va_start(ap, fmt);
	check(vasprintf(&p, fmt, ap) >= 0, "out of memory", NULL);
	va_end(ap);
	v->path = realloc(v->path, (size_t)(v->n + 1) * sizeof(*v->path));
	check(v->path != NULL, "out of memory", NULL);
	v->path[v->n++] = p;
}

static void ref_outcome(const cJSON *o, const char *path, struct viol *v)
{
	const char *dot = *path ? "." : "";
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(o, "ok");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "type");

	if (o == NULL || o->type != cJSON_Object) {
		viol(v, "%s", path);
		return;
	}
	if (ok == NULL || (ok->type != cJSON_True && ok->type != cJSON_False)) {
		viol(v, "%s%sok", path, dot);
		return;
	}
	if (ok->type == cJSON_True) {
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "result");

		if (r == NULL || r->type != cJSON_Object)
			viol(v, "%s%sresult", path, dot);
		return;
	}
	if (e == NULL || e->type != cJSON_Object) {
		viol(v, "%s%serror", path, dot);
		return;
	}
	if (t == NULL || t->type != cJSON_String || strlen(t->valuestring) < 1 || strlen(t->valuestring) > 127)
		viol(v, "%s%serror.type", path, dot);
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message")))
		viol(v, "%s%serror.message", path, dot);
}

/* kinds: s string, b boolean, n number, i integer (|x| <= 2^53), S array
 * of strings, F array of file objects, O array of outcomes, o outcome;
 * upper-case R in `req` means required; every field but O/o may be null. */
struct rf {
	const char *op, *name;
	char kind;
	bool req;
};

static const struct rf ref_fields[] = {
	{"hello", "protocol", 'n', false}, {"hello", "name", 's', false}, {"hello", "driver", 's', false},
	{"hello", "surfaces", 'S', false},
	{"capabilities", "isolation", 's', false}, {"capabilities", "supports_deny_all_egress", 'b', false},
	{"capabilities", "supports_domain_allowlist", 'b', false},
	{"capabilities", "max_timeout_seconds", 'n', false},
	{"run", "stdout", 's', true}, {"run", "stderr", 's', true}, {"run", "exit_code", 'i', true},
	{"run", "execution_time_ms", 'n', false},
	{"component_run", "stdout", 's', false}, {"component_run", "stderr", 's', false},
	{"component_run", "exit_code", 'i', false}, {"component_run", "files", 'F', false},
	{"component_run", "guest_name", 's', false},
	{"executor_run", "stdout", 's', false}, {"executor_run", "stderr", 's', false},
	{"executor_run", "exit_code", 'i', false}, {"executor_run", "guest_name", 's', false},
	{"run_concurrent", "results", 'O', true},
	{"fork_check", "child", 'o', true}, {"fork_check", "child_pid", 'i', false},
	{"gate", "decision", 's', false}, {"gate", "rule", 's', false}, {"gate", "error_type", 's', false},
	{"gate", "message", 's', false}, {"gate", "variable", 's', false},
	{NULL, NULL, 0, false},
};

static bool ref_kind_ok(const cJSON *x, char k)
{
	switch (k) {
	case 's': return x->type == cJSON_String;
	case 'b': return x->type == cJSON_True || x->type == cJSON_False;
	case 'n': return x->type == cJSON_Number;
	case 'i': return x->type == cJSON_Number && isfinite(x->valuedouble) && x->valuedouble == trunc(x->valuedouble) &&
			 x->valuedouble <= 9007199254740992.0 && x->valuedouble >= -9007199254740992.0;
	default: return x->type == cJSON_Array;
	}
}

static void ref_field(const cJSON *x, const struct rf *f, struct viol *v)
{
	const cJSON *it;
	int i = 0;

	if (f->kind == 'o') {
		ref_outcome(x, "result.child", v);
		return;
	}
	if (x->type == cJSON_NULL && f->kind != 'O')
		return;
	if (!ref_kind_ok(x, f->kind)) {
		viol(v, "result.%s", f->name);
		return;
	}
	const cJSON *arr = f->kind == 'S' || f->kind == 'F' || f->kind == 'O' ? x : NULL;

	cJSON_ArrayForEach(it, arr) {
		char p[64];

		snprintf(p, sizeof(p), "result.%s[%d]", f->name, i);
		if (f->kind == 'S' && it->type != cJSON_String)
			viol(v, "%s", p);
		if (f->kind == 'O')
			ref_outcome(it, p, v);
		if (f->kind == 'F' && it->type != cJSON_Object)
			viol(v, "%s", p);
		if (f->kind == 'F' && it->type == cJSON_Object) {
			static const struct rf files[] = {{"", "path", 's', false}, {"", "size", 'n', false},
							  {"", "sha256", 's', false}};

			for (int k = 0; k < 3; k++) {
				const cJSON *y = cJSON_GetObjectItemCaseSensitive(it, files[k].name);

				if (y != NULL && y->type != cJSON_NULL && !ref_kind_ok(y, files[k].kind))
					viol(v, "%s.%s", p, files[k].name);
			}
		}
		i++;
	}
}

/* Every key that appears a second time in its object, at any depth. */
static void ref_duplicates(const cJSON *x, const char *path, struct viol *v)
{
	char p[400];
	int i = 0;

	for (const cJSON *a = x->child; a != NULL; a = a->next, i++) {
		if (x->type == cJSON_Object) {
			for (const cJSON *b = x->child; b != a; b = b->next)
				if (strcmp(a->string, b->string) == 0)
					viol(v, "%s%s%s", path, *path ? "." : "", a->string);
			snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", a->string);
		} else {
			snprintf(p, sizeof(p), "%s[%d]", path, i);
		}
		if (a->type == cJSON_Object || a->type == cJSON_Array)
			ref_duplicates(a, p, v);
	}
}

enum ref_verdict { RV_OK, RV_BAD, RV_WRONG_ID };

/* The reference verdict on one line (without '\n') for request id of op;
 * v lists the wrong fields when the shape is the problem. */
static enum ref_verdict ref_answer(const char *line, size_t len, int id, const char *op, struct viol *v,
				   cJSON **out)
{
	const char *end = NULL;
	cJSON *a;
	const cJSON *aid, *res;

	*out = NULL;
	if (len > 0 && line[len - 1] == '\r')
		len--;
	for (size_t i = 0; i < len; i++)
		if (line[i] == '\0')
			return RV_BAD;
	a = cJSON_ParseWithLengthOpts(line, len, &end, false);
	if (a == NULL)
		return RV_BAD;
	while (end < line + len && (*end == ' ' || *end == '\t'))
		end++;
	if (a->type != cJSON_Object || end != line + len) {
		cJSON_Delete(a);
		return RV_BAD;
	}
	ref_duplicates(a, "", v);
	if (v->n > 0) {
		cJSON_Delete(a);
		return RV_BAD;
	}
	aid = cJSON_GetObjectItemCaseSensitive(a, "id");
	if (aid == NULL || aid->type != cJSON_Number || !(aid->valuedouble == id)) {
		cJSON_Delete(a);
		return RV_WRONG_ID;
	}
	ref_outcome(a, "", v);
	res = cJSON_GetObjectItemCaseSensitive(a, "result");
	if (v->n == 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "ok"))) {
		for (const struct rf *f = ref_fields; f->op != NULL; f++) {
			const cJSON *x;

			if (strcmp(f->op, op) != 0)
				continue;
			x = cJSON_GetObjectItemCaseSensitive(res, f->name);
			if (x == NULL && f->req)
				viol(v, "result.%s", f->name);
			else if (x != NULL)
				ref_field(x, f, v);
		}
	}
	if (v->n > 0) {
		cJSON_Delete(a);
		return RV_BAD;
	}
	*out = a;
	return RV_OK;
}

/* ---- the harness ---- */

static bool names_a_violation(const char *reason, const struct viol *v)
{
	char q[210];

	for (int i = 0; i < v->n; i++) {
		/* long paths are cut in messages: the first 150 bytes must be there */
		snprintf(q, sizeof(q), "`%.150s%s", v->path[i], strlen(v->path[i]) <= 150 ? "`" : "");
		if (strstr(reason, q) != NULL)
			return true;
	}
	return v->n == 0; /* a JSON-level refusal names no field */
}

/* One op: the next non-empty line of the stream against cf_op. Returns
 * false when the driver was given up. */
static bool one_op(struct cf_case *c, struct cf_driver *d, int id, const char *op, const char **pos,
		   const char *end)
{
	const char *et = NULL, *em = NULL, *nl;
	const char *reason;
	char want[160];
	struct viol vs = {NULL, 0}, *v;
	cJSON *ref = NULL, *res;
	enum ref_verdict rv;
	size_t len;

	while ((nl = memchr(*pos, '\n', (size_t)(end - *pos))) != NULL &&
	       (nl == *pos || (nl == *pos + 1 && **pos == '\r')))
		*pos = nl + 1;
	res = cf_op(d, op, NULL, 5, &et, &em);
	reason = sbx_strbuf_str(&c->reason);
	len = nl != NULL ? (size_t)(nl - *pos) : (size_t)(end - *pos);
	g_line = NULL;
	if (len > LIMIT) {
		check(res == NULL && cf_driver_broken(d), "an answer over the limit accepted", reason);
		check(strstr(reason, "limit of 1024 bytes") != NULL, "an oversize answer without the limit named", reason);
		return false;
	}
	if (nl == NULL) {
		check(res == NULL && cf_driver_broken(d), "an answer accepted after the stream ended", reason);
		check(strstr(reason, "closed its stdout") != NULL, "the end of the stream not reported", reason);
		return false;
	}
	g_line = strndup(*pos, len);
	v = &vs;
	rv = ref_answer(*pos, len, id, op, v, &ref);
	*pos = nl + 1;
	if (rv == RV_WRONG_ID) {
		snprintf(want, sizeof(want), ", expected %d (the id of `%s`)", id, op);
		check(res == NULL && cf_driver_broken(d), "an answer with a wrong id accepted", reason);
		check(strstr(reason, "answered id ") != NULL && strstr(reason, want) != NULL,
		      "a wrong id not reported as \"answered id X, expected Y\"", reason);
	} else if (rv == RV_BAD) {
		check(res == NULL && cf_driver_broken(d), "a malformed answer accepted", reason);
		check(strstr(reason, "not a protocol answer") != NULL, "a refusal without \"not a protocol answer\"",
		      reason);
		check(names_a_violation(reason, v), "a refusal that names no wrong field", reason);
	} else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ref, "ok"))) {
		check(res != NULL && !cf_driver_broken(d), "a valid success refused", reason);
		char *a = cJSON_PrintUnformatted(res), *b = cJSON_PrintUnformatted(
			cJSON_GetObjectItemCaseSensitive(ref, "result"));

		/* printed, not cJSON_Compare: 1e999 reads as inf, which compares unequal to itself */
		check(a != NULL && b != NULL && strcmp(a, b) == 0, "the result returned is not the answer's result", a);
		free(a);
		free(b);
		if (strcmp(op, "hello") == 0) {
			char why[256] = "";
			const cJSON *p = cJSON_GetObjectItemCaseSensitive(res, "protocol");
			bool one = cJSON_IsNumber(p) && p->valuedouble == 1.0;

			check(cf_hello_protocol_ok(res, why, sizeof(why)) == one, "hello's protocol misjudged", why);
			check(one || strstr(why, "protocol") != NULL, "a protocol refusal without a reason", why);
		}
	} else {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(ref, "error");
		const char *t = cJSON_GetObjectItemCaseSensitive(e, "type")->valuestring;
		const char *m = cJSON_GetObjectItemCaseSensitive(e, "message")->valuestring;
		size_t ml = strlen(m) < 1023 ? strlen(m) : 1023;

		check(res == NULL && !cf_driver_broken(d), "a valid error answer broke the driver", reason);
		check(et != NULL && strcmp(et, t) == 0, "the error type is not the answer's", et);
		check(em != NULL && strlen(em) == ml && strncmp(em, m, ml) == 0, "the error message is not the answer's",
		      em);
	}
	cJSON_Delete(res);
	cJSON_Delete(ref);
	for (int i = 0; i < v->n; i++)
		free(v->path[i]);
	free(v->path);
	free((char *)g_line);
	g_line = NULL;
	return !cf_driver_broken(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data, *end = in + size, *nl = memchr(in, '\n', size), *pos;
	struct cf_config cf;
	struct cf_case c;
	struct cf_driver *d;
	int out_fd, in_fd, nops;

	if (nl == NULL || nl == in)
		return 0;
	nops = (int)(nl - in) < MAX_OPS ? (int)(nl - in) : MAX_OPS;
	out_fd = memfd_create("answers", MFD_CLOEXEC);
	in_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	check(out_fd >= 0 && in_fd >= 0, "cannot make the descriptors", NULL);
	pos = nl + 1;
	if (end > pos)
		check(write(out_fd, pos, (size_t)(end - pos)) == end - pos, "cannot fill the memfd", NULL);
	lseek(out_fd, 0, SEEK_SET);
	memset(&cf, 0, sizeof(cf));
	cf.timeout_scale = 1.0;
	memset(&c, 0, sizeof(c));
	c.cf = &cf;
	snprintf(c.verdict, sizeof(c.verdict), "pass");
	sbx_strbuf_init(&c.reason);
	c.details = cJSON_CreateArray();
	d = cf_driver_attach(&c, in_fd, out_fd, LIMIT);
	check(d != NULL, "cf_driver_attach failed", NULL);
	for (int i = 0; i < nops; i++) {
		const char *op = OPS[(unsigned char)in[i] % (sizeof(OPS) / sizeof(OPS[0]))];

		if (!one_op(&c, d, i + 1, op, &pos, end)) {
			const char *et = NULL;

			/* a given-up driver answers nothing more */
			check(cf_op(d, "run", NULL, 5, &et, NULL) == NULL && strcmp(et, "HarnessError") == 0,
			      "a given-up driver answered", NULL);
			break;
		}
	}
	cf_driver_stop(d);
	cf_driver_free(d);
	sbx_strbuf_free(&c.reason);
	cJSON_Delete(c.details);
	return 0;
}

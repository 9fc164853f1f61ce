/* answer: the runner's reading of one driver answer line (see answer.h).
 * Types are checked where a check reads the field; unknown fields are
 * ignored (PROTOCOL.md: additive changes keep the version). */
#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "answer.h"

enum ftype { T_STR, T_BOOL, T_NUM, T_INT, T_ARR_STR, T_ARR_OBJ, T_OBJ, T_OUTCOME, T_OUTCOMES };

struct field {
	const char *name;
	enum ftype type;
	bool nullable;
	bool required;
};

struct op_shape {
	const char *op;
	const struct field *fields;
};

static const struct field HELLO[] = {
	{"protocol", T_NUM, true, false}, {"name", T_STR, true, false},
	{"driver", T_STR, true, false}, {"surfaces", T_ARR_STR, true, false}, {NULL, 0, false, false},
};
static const struct field CAPS[] = {
	{"isolation", T_STR, true, false}, {"supports_deny_all_egress", T_BOOL, true, false},
	{"supports_domain_allowlist", T_BOOL, true, false}, {"max_timeout_seconds", T_NUM, true, false},
	{NULL, 0, false, false},
};
static const struct field RUN[] = {
	{"stdout", T_STR, true, true}, {"stderr", T_STR, true, true}, {"exit_code", T_INT, true, true},
	{"execution_time_ms", T_NUM, true, false}, {NULL, 0, false, false},
};
static const struct field COMPONENT[] = {
	{"stdout", T_STR, true, false}, {"stderr", T_STR, true, false}, {"exit_code", T_INT, true, false},
	{"files", T_ARR_OBJ, true, false}, {"guest_name", T_STR, true, false}, {NULL, 0, false, false},
};
static const struct field EXECUTOR[] = {
	{"stdout", T_STR, true, false}, {"stderr", T_STR, true, false}, {"exit_code", T_INT, true, false},
	{"guest_name", T_STR, true, false}, {NULL, 0, false, false},
};
static const struct field CONCURRENT[] = {{"results", T_OUTCOMES, false, true}, {NULL, 0, false, false}};
static const struct field FORK[] = {
	{"child", T_OUTCOME, false, true}, {"child_pid", T_INT, true, false}, {NULL, 0, false, false},
};
static const struct field GATE[] = {
	{"decision", T_STR, true, false}, {"rule", T_STR, true, false}, {"error_type", T_STR, true, false},
	{"message", T_STR, true, false}, {"variable", T_STR, true, false}, {NULL, 0, false, false},
};
static const struct field FILES[] = {
	{"path", T_STR, true, false}, {"size", T_NUM, true, false}, {"sha256", T_STR, true, false},
	{NULL, 0, false, false},
};

static const struct op_shape SHAPES[] = {
	{"hello", HELLO}, {"capabilities", CAPS}, {"run", RUN}, {"run_concurrent", CONCURRENT},
	{"fork_check", FORK}, {"component_run", COMPONENT}, {"executor_run", EXECUTOR}, {"gate", GATE},
	{NULL, NULL},
};

static const char *type_name(const cJSON *v)
{
	if (v == NULL)
		return "missing";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "an array";
	return "an object";
}

__attribute__((format(printf, 3, 4)))
static bool bad(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return false;
}

/* Field paths as messages name them: "result.results[2].error.type",
 * cut at cap - 1 bytes (a message shows its start). */
static void path_key(char *out, size_t cap, const char *path, const char *key)
{
	if (snprintf(out, cap, "%s%s%s", path, *path ? "." : "", key) >= (int)cap)
		out[cap - 1] = '\0';
}

static void path_index(char *out, size_t cap, const char *path, int i)
{
	if (snprintf(out, cap, "%s[%d]", path, i) >= (int)cap)
		out[cap - 1] = '\0';
}

/* A number that is an integer of at most 2^53 in magnitude (exit codes,
 * pids): every JSON reader holds it exactly. */
static bool is_int(const cJSON *v)
{
	return cJSON_IsNumber(v) && isfinite(v->valuedouble) && floor(v->valuedouble) == v->valuedouble &&
	       fabs(v->valuedouble) <= 9007199254740992.0;
}

static bool check_outcome(const cJSON *o, const char *path, char *why, size_t cap);
static bool check_fields(const cJSON *obj, const struct field *f, const char *path, char *why, size_t cap);

static bool check_array(const cJSON *v, enum ftype t, const char *path, char *why, size_t cap)
{
	const cJSON *it;
	char sub[256];
	int i = 0;

	cJSON_ArrayForEach(it, v) {
		path_index(sub, sizeof(sub), path, i++);
		if (t == T_ARR_STR && !cJSON_IsString(it))
			return bad(why, cap, "`%s` is %s, not a string", sub, type_name(it));
		if (t == T_ARR_OBJ && !cJSON_IsObject(it))
			return bad(why, cap, "`%s` is %s, not an object", sub, type_name(it));
		if (t == T_ARR_OBJ && !check_fields(it, FILES, sub, why, cap))
			return false;
		if (t == T_OUTCOMES && !check_outcome(it, sub, why, cap))
			return false;
	}
	return true;
}

static bool check_value(const cJSON *v, const struct field *f, const char *path, char *why, size_t cap)
{
	static const char *const want[] = {"a string", "a boolean", "a number", "an integer", "an array",
					   "an array", "an object", "an object", "an array"};
	bool ok;

	if (cJSON_IsNull(v) && f->nullable)
		return true;
	switch (f->type) {
	case T_STR: ok = cJSON_IsString(v); break;
	case T_BOOL: ok = cJSON_IsBool(v); break;
	case T_NUM: ok = cJSON_IsNumber(v); break;
	case T_INT: ok = is_int(v); break;
	case T_OBJ: ok = cJSON_IsObject(v); break;
	case T_OUTCOME: return check_outcome(v, path, why, cap);
	default: ok = cJSON_IsArray(v); break;
	}
	if (!ok)
		return bad(why, cap, "`%s` is %s, not %s", path,
			   f->type == T_INT && cJSON_IsNumber(v) ? "a fraction or out of range" : type_name(v),
			   want[f->type]);
	if (f->type == T_ARR_STR || f->type == T_ARR_OBJ || f->type == T_OUTCOMES)
		return check_array(v, f->type, path, why, cap);
	return true;
}

static bool check_fields(const cJSON *obj, const struct field *f, const char *path, char *why, size_t cap)
{
	char sub[256];

	for (; f != NULL && f->name != NULL; f++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, f->name);

		path_key(sub, sizeof(sub), path, f->name);
		if (v == NULL && f->required)
			return bad(why, cap, "`%s` is missing", sub);
		if (v != NULL && !check_value(v, f, sub, why, cap))
			return false;
	}
	return true;
}

/* {ok: true, result: {...}} or {ok: false, error: {type, message}}: the
 * answer itself and each outcome inside run_concurrent and fork_check. */
static bool check_outcome(const cJSON *o, const char *path, char *why, size_t cap)
{
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(o, "ok");
	const cJSON *v;
	char sub[256];
	const char *dot = path[0] != '\0' ? "." : "";

	if (!cJSON_IsObject(o))
		return bad(why, cap, "`%s` is %s, not an object", path, type_name(o));
	if (!cJSON_IsBool(ok))
		return bad(why, cap, "`%s%sok` is %s, not a boolean", path, dot, type_name(ok));
	if (cJSON_IsTrue(ok)) {
		v = cJSON_GetObjectItemCaseSensitive(o, "result");
		if (!cJSON_IsObject(v))
			return bad(why, cap, "`%s%sresult` is %s, not an object", path, dot, type_name(v));
		return true;
	}
	path_key(sub, sizeof(sub), path, "error");
	v = cJSON_GetObjectItemCaseSensitive(o, "error");
	if (!cJSON_IsObject(v))
		return bad(why, cap, "`%s` is %s, not an object", sub, type_name(v));
	{
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "type");
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, "message");

		if (!cJSON_IsString(t))
			return bad(why, cap, "`%s.type` is %s, not a string", sub, type_name(t));
		if (t->valuestring[0] == '\0' || strlen(t->valuestring) > CF_ANSWER_TYPE_MAX)
			return bad(why, cap, "`%s.type` has %zu bytes, not 1..%d", sub, strlen(t->valuestring),
				   CF_ANSWER_TYPE_MAX);
		if (!cJSON_IsString(m))
			return bad(why, cap, "`%s.message` is %s, not a string", sub, type_name(m));
	}
	return true;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A key twice in one object is read differently by different readers
 * (cJSON keeps the first, Python the last): the answer is ambiguous.
 * Sorting keeps a large object O(n log n). */
static bool no_duplicates(const cJSON *v, const char *path, char *why, size_t cap)
{
	const cJSON *it;
	char sub[256];
	int n = 0, i = 0;

	cJSON_ArrayForEach(it, v) n++;
	if (cJSON_IsObject(v) && n > 1) {
		const char **names = malloc((size_t)n * sizeof(*names));

		if (names == NULL)
			return bad(why, cap, "out of memory");
		cJSON_ArrayForEach(it, v) names[i++] = it->string;
		qsort(names, (size_t)n, sizeof(*names), cmp_names);
		for (i = 1; i < n && strcmp(names[i - 1], names[i]) != 0; i++)
			;
		if (i < n) {
			path_key(sub, sizeof(sub), path, names[i]);
			bad(why, cap, "`%s` appears twice", sub);
			free(names);
			return false;
		}
		free(names);
	}
	i = 0;
	cJSON_ArrayForEach(it, v) {
		if (cJSON_IsObject(v))
			path_key(sub, sizeof(sub), path, it->string);
		else
			path_index(sub, sizeof(sub), path, i);
		i++;
		if ((cJSON_IsObject(it) || cJSON_IsArray(it)) && !no_duplicates(it, sub, why, cap))
			return false;
	}
	return true;
}

static const struct field *shape_of(const char *op)
{
	for (const struct op_shape *s = SHAPES; s->op != NULL; s++)
		if (strcmp(s->op, op) == 0)
			return s->fields;
	return NULL;
}

enum cf_answer_verdict cf_answer_parse(const char *line, size_t len, int id, const char *op, cJSON **out,
				       char *why, size_t cap)
{
	const char *end = NULL;
	const cJSON *aid;
	cJSON *ans;

	*out = NULL;
	why[0] = '\0';
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (memchr(line, '\0', len) != NULL) {
		bad(why, cap, "the line holds a NUL byte");
		return CF_ANSWER_BAD;
	}
	ans = cJSON_ParseWithLengthOpts(line, len, &end, false);
	while (ans != NULL && end < line + len && (*end == ' ' || *end == '\t'))
		end++;
	if (ans == NULL || !cJSON_IsObject(ans) || end != line + len) {
		bad(why, cap, "%s", ans == NULL ? "not JSON" : !cJSON_IsObject(ans) ? "not a JSON object"
										: "data after the JSON object");
		cJSON_Delete(ans);
		return CF_ANSWER_BAD;
	}
	if (!no_duplicates(ans, "", why, cap)) {
		cJSON_Delete(ans);
		return CF_ANSWER_BAD;
	}
	/* Requests are never pipelined, so the only right id is the pending
	 * one, compared as a number exactly (1.5 is not 1, "1" is not 1). */
	aid = cJSON_GetObjectItemCaseSensitive(ans, "id");
	if (!cJSON_IsNumber(aid) || aid->valuedouble != (double)id) {
		char *t = aid != NULL ? cJSON_PrintUnformatted(aid) : NULL;

		snprintf(why, cap, "answered id %.60s, expected %d (the id of `%s`)", t != NULL ? t : "missing", id,
			 op);
		cJSON_free(t);
		*out = ans; /* the caller quotes its error, if any */
		return CF_ANSWER_WRONG_ID;
	}
	if (!check_outcome(ans, "", why, cap) ||
	    (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "ok")) &&
	     !check_fields(cJSON_GetObjectItemCaseSensitive(ans, "result"), shape_of(op), "result", why, cap))) {
		cJSON_Delete(ans);
		return CF_ANSWER_BAD;
	}
	*out = ans;
	return CF_ANSWER_OK;
}

/* answer: what the runner accepts as a driver's answer line
 * (conformance/PROTOCOL.md, "Requests and answers" and "Operations").
 * Pure: no I/O, so the fuzz target conform_answer and tests can call it. */
#ifndef SBX_CONFORM_ANSWER_H
#define SBX_CONFORM_ANSWER_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Longest error.type kept whole: a Python class name, compared by checks. */
#define CF_ANSWER_TYPE_MAX 127

enum cf_answer_verdict {
	CF_ANSWER_OK,       /* *out: the answer object (caller frees) */
	CF_ANSWER_BAD,      /* not one JSON object, or not of the documented shape */
	CF_ANSWER_WRONG_ID, /* one JSON object answering another request */
};

/* Reads one answer line (without its '\n'; a trailing '\r' is tolerated)
 * to the request `id` of `op`. The line must be exactly one JSON object
 * (nothing after it, no NUL byte, no key twice in one object); its `id` must equal `id` as a number
 * (1.5 is not 1, "1" is not 1); then `ok` is a boolean, `ok: true` carries
 * an object `result` whose documented fields have their documented types
 * when present (null allowed where PROTOCOL.md allows it), `ok: false` an
 * object `error` with a string `type` of 1..CF_ANSWER_TYPE_MAX bytes and a
 * string `message`. Otherwise `why` says which field is wrong
 * ("`result.exit_code` is a string, not an integer") or, for a wrong id,
 * "answered id X, expected Y (the id of `op`)". */
enum cf_answer_verdict cf_answer_parse(const char *line, size_t len, int id, const char *op, cJSON **out,
				       char *why, size_t cap);

#endif

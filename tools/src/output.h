/* output: how sbxctl shows results: aligned tables and key/value blocks for
 * people, JSON for scripts, and one consistent error line.
 *
 * It only formats what it is given; it never talks to the network and never
 * decides exit codes. */
#ifndef SBXCTL_OUTPUT_H
#define SBXCTL_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "client.h"

typedef struct ctl_table {
	size_t ncols;
	const char *const *headers; /* borrowed; ncols entries */
	char **cells;               /* owned, row-major */
	size_t nrows;
	size_t cap;                 /* rows allocated */
	bool oom;
} ctl_table;

void ctl_table_init(ctl_table *t, size_t ncols, const char *const *headers);
/* Copies ncols cells; NULL cells print as "-". */
void ctl_table_add(ctl_table *t, const char *const *cells);
/* Columns separated by two spaces, padded to the widest cell; the last
 * column is not padded. */
void ctl_table_print(const ctl_table *t, FILE *out);
void ctl_table_free(ctl_table *t);

/* A JSON value as table text: strings as is, numbers without ".0", arrays of
 * scalars joined with ",", absent/null as NULL. Caller frees. */
char *ctl_json_text(const cJSON *v);
/* ctl_json_text of obj[key]. */
char *ctl_json_field(const cJSON *obj, const char *key);
const char *ctl_json_str(const cJSON *obj, const char *key);

/* Pretty JSON followed by a newline ("null" for NULL). */
void ctl_print_json(FILE *out, const cJSON *v);
/* "key   value" lines, keys aligned; nested objects flattened as a.b. */
void ctl_print_kv(FILE *out, const cJSON *obj);

/* "sbxctl: ServerError: HTTP 503 from POST /v1/sandboxes: no capacity
 * (request id r-1, retry after 5s)", or a JSON object {"error":{...}} when
 * json is set. Both go to `to` (stderr). */
void ctl_print_error(FILE *to, bool json, const ctl_error *e);
cJSON *ctl_error_to_json(const ctl_error *e);

#endif

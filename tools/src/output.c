/* output: tables, key/value blocks, JSON and error lines; see output.h.
 * Formats only: no network, no exit codes. */
#include "output.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/strbuf.h"

void ctl_table_init(ctl_table *t, size_t ncols, const char *const *headers)
{
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	t->headers = headers;
}

void ctl_table_add(ctl_table *t, const char *const *cells)
{
	if (t->oom)
		return;
	if (t->nrows == t->cap) {
		size_t ncap = t->cap == 0 ? 16 : t->cap * 2;
		char **n = realloc(t->cells, ncap * t->ncols * sizeof *n);
		if (n == NULL) {
			t->oom = true;
			return;
		}
		t->cells = n;
		t->cap = ncap;
	}
	char **row = t->cells + t->nrows * t->ncols;
	for (size_t i = 0; i < t->ncols; i++) {
		row[i] = sbx_strdup(cells[i] != NULL ? cells[i] : "-");
		if (row[i] == NULL)
			t->oom = true;
	}
	t->nrows++;
}

static void print_row(FILE *out, const char *const *cells, const size_t *w, size_t ncols)
{
	for (size_t i = 0; i < ncols; i++) {
		const char *c = cells[i] != NULL ? cells[i] : "";
		if (i + 1 == ncols)
			fprintf(out, "%s\n", c);
		else
			fprintf(out, "%-*s  ", (int)w[i], c);
	}
}

void ctl_table_print(const ctl_table *t, FILE *out)
{
	size_t *w = calloc(t->ncols, sizeof *w);
	if (w == NULL)
		return;
	for (size_t i = 0; i < t->ncols; i++)
		w[i] = strlen(t->headers[i]);
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t i = 0; i < t->ncols; i++) {
			const char *c = t->cells[r * t->ncols + i];
			size_t n = c != NULL ? strlen(c) : 0;
			if (n > w[i])
				w[i] = n;
		}
	}
	print_row(out, t->headers, w, t->ncols);
	for (size_t r = 0; r < t->nrows; r++)
		print_row(out, (const char *const *)(t->cells + r * t->ncols), w, t->ncols);
	free(w);
}

void ctl_table_free(ctl_table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof *t);
}

static void append_text(sbx_strbuf *sb, const cJSON *v)
{
	if (cJSON_IsString(v)) {
		sbx_strbuf_puts(sb, v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (d == floor(d) && fabs(d) < 9.0e15)
			sbx_strbuf_printf(sb, "%.0f", d);
		else
			sbx_strbuf_printf(sb, "%g", d);
	} else if (cJSON_IsBool(v)) {
		sbx_strbuf_puts(sb, cJSON_IsTrue(v) ? "true" : "false");
	} else if (cJSON_IsArray(v) && v->child == NULL) {
		sbx_strbuf_puts(sb, "[]");
	} else if (cJSON_IsArray(v)) {
		const cJSON *it = NULL;
		bool first = true;
		cJSON_ArrayForEach(it, v) {
			if (!first)
				sbx_strbuf_puts(sb, ",");
			first = false;
			append_text(sb, it);
		}
	} else {
		char *s = cJSON_PrintUnformatted(v);
		if (s != NULL)
			sbx_strbuf_puts(sb, s);
		free(s);
	}
}

char *ctl_json_text(const cJSON *v)
{
	if (v == NULL || cJSON_IsNull(v))
		return NULL;
	sbx_strbuf sb = SBX_STRBUF_INIT;
	append_text(&sb, v);
	if (sb.data == NULL)
		return sbx_strdup("");
	return sbx_strbuf_detach(&sb, NULL);
}

char *ctl_json_field(const cJSON *obj, const char *key)
{
	return ctl_json_text(cJSON_GetObjectItemCaseSensitive(obj, key));
}

const char *ctl_json_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

void ctl_print_json(FILE *out, const cJSON *v)
{
	char *s = v != NULL ? cJSON_Print(v) : NULL;
	fprintf(out, "%s\n", s != NULL ? s : "null");
	free(s);
}

static void collect_kv(ctl_table *t, const char *prefix, const cJSON *obj)
{
	const cJSON *it = NULL;
	cJSON_ArrayForEach(it, obj) {
		sbx_strbuf key = SBX_STRBUF_INIT;
		if (prefix != NULL)
			sbx_strbuf_printf(&key, "%s.", prefix);
		sbx_strbuf_puts(&key, it->string != NULL ? it->string : "?");
		if (cJSON_IsObject(it) && it->child != NULL) {
			collect_kv(t, sbx_strbuf_str(&key), it);
		} else {
			char *val = ctl_json_text(it);
			const char *cells[2] = {sbx_strbuf_str(&key), val != NULL ? val : "null"};
			ctl_table_add(t, cells);
			free(val);
		}
		sbx_strbuf_free(&key);
	}
}

void ctl_print_kv(FILE *out, const cJSON *obj)
{
	static const char *const hdr[2] = {"FIELD", "VALUE"};
	ctl_table t;
	ctl_table_init(&t, 2, hdr);
	if (cJSON_IsObject(obj))
		collect_kv(&t, NULL, obj);
	size_t w = 0;
	for (size_t r = 0; r < t.nrows; r++) {
		size_t n = strlen(t.cells[r * 2]);
		if (n > w)
			w = n;
	}
	for (size_t r = 0; r < t.nrows; r++)
		fprintf(out, "%-*s  %s\n", (int)w, t.cells[r * 2], t.cells[r * 2 + 1]);
	ctl_table_free(&t);
}

cJSON *ctl_error_to_json(const ctl_error *e)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *inner = cJSON_AddObjectToObject(o, "error");
	cJSON_AddStringToObject(inner, "class", ctl_errclass_name(e->cls));
	if (e->status > 0)
		cJSON_AddNumberToObject(inner, "status", (double)e->status);
	else
		cJSON_AddNullToObject(inner, "status");
	cJSON_AddStringToObject(inner, "message", e->message);
	if (e->method[0] != '\0')
		cJSON_AddStringToObject(inner, "method", e->method);
	if (e->path[0] != '\0')
		cJSON_AddStringToObject(inner, "path", e->path);
	if (e->code[0] != '\0')
		cJSON_AddStringToObject(inner, "code", e->code);
	if (e->request_id[0] != '\0')
		cJSON_AddStringToObject(inner, "request_id", e->request_id);
	if (e->retry_after >= 0)
		cJSON_AddNumberToObject(inner, "retry_after", e->retry_after);
	if (e->hint[0] != '\0')
		cJSON_AddStringToObject(inner, "hint", e->hint);
	return o;
}

void ctl_print_error(FILE *to, bool json, const ctl_error *e)
{
	if (json) {
		cJSON *o = ctl_error_to_json(e);
		char *s = cJSON_PrintUnformatted(o);
		fprintf(to, "%s\n", s != NULL ? s : "{\"error\":{}}");
		free(s);
		cJSON_Delete(o);
		return;
	}
	fprintf(to, "sbxctl: %s", ctl_errclass_name(e->cls));
	if (e->status > 0)
		fprintf(to, ": HTTP %ld", e->status);
	if (e->method[0] != '\0')
		fprintf(to, "%s %s %s", e->status > 0 ? " from" : ": on", e->method, e->path);
	fprintf(to, ": %s", e->message);
	bool paren = false;
	if (e->code[0] != '\0') {
		fprintf(to, " (code %s", e->code);
		paren = true;
	}
	if (e->request_id[0] != '\0') {
		fprintf(to, "%srequest id %s", paren ? ", " : " (", e->request_id);
		paren = true;
	}
	if (e->retry_after >= 0) {
		fprintf(to, "%sretry after %gs", paren ? ", " : " (", e->retry_after);
		paren = true;
	}
	fprintf(to, "%s\n", paren ? ")" : "");
	if (e->hint[0] != '\0')
		fprintf(to, "sbxctl: %s\n", e->hint);
}

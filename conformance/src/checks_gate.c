/* checks_gate: the host-gate profile. Replays the decision tables in
 * fixtures/gate/ (gate_rules, settings, plugins .json) through a host driver's `gate` and `load_plugins` ops
 * and compares every field of every row.
 *
 * Never edits or regenerates the tables: they are the expected behaviour. */
#include <stdlib.h>
#include <string.h>

#include "checks.h"

static cJSON *load_table(struct cf_case *c, const char *file)
{
	char path[600];
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char buf[65536];
	size_t n;
	FILE *f;
	cJSON *j;

	snprintf(path, sizeof(path), "%s/gate/%s", c->cf->fixtures_dir, file);
	f = fopen(path, "r");
	if (f == NULL) {
		cf_error(c, "harness: cannot open the decision table %s", path);
		return NULL;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sbx_strbuf_append(&sb, buf, n);
	fclose(f);
	j = cJSON_Parse(sbx_strbuf_str(&sb));
	sbx_strbuf_free(&sb);
	if (j == NULL)
		cf_error(c, "harness: %s is not JSON", path);
	return j;
}

static bool blank(const char *s)
{
	for (; s != NULL && *s != '\0'; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\f' && *s != '\v')
			return false;
	return true;
}

/* A row's `imported_optional` distributions may be in the answer's
 * `imported` or not (lfx 1.13 imports a plugin allow-listed as `none`, then
 * refuses it; refusing before import is equally right): drop them from the
 * answer unless the row expects them. */
static void drop_optional(cJSON *res, const cJSON *row, const cJSON *expect)
{
	const cJSON *opt = cJSON_GetObjectItemCaseSensitive(row, "imported_optional");
	const cJSON *want = cJSON_GetObjectItemCaseSensitive(expect, "imported");
	cJSON *got = cJSON_GetObjectItemCaseSensitive(res, "imported");
	int i;

	if (!cJSON_IsArray(opt) || !cJSON_IsArray(got))
		return;
	for (i = cJSON_GetArraySize(got) - 1; i >= 0; i--) {
		const cJSON *item = cJSON_GetArrayItem(got, i);
		const cJSON *o, *w;
		bool optional = false, expected = false;

		cJSON_ArrayForEach(o, opt)
			optional = optional || cJSON_Compare(o, item, true);
		cJSON_ArrayForEach(w, want)
			expected = expected || cJSON_Compare(w, item, true);
		if (optional && !expected)
			cJSON_DeleteItemFromArray(got, i);
	}
}

enum rowsel { ROWS_ALL, ROWS_BLANK, ROWS_NOT_BLANK };

static void replay(struct cf_case *c, const char *file, const char *op, enum rowsel sel)
{
	static const char *const gate_fields[] = {"decision", "rule", "error_type", "message", "variable"};
	static const char *const plug_fields[] = {"loaded", "imported", "refused"};
	const char *const *fields = strcmp(op, "gate") == 0 ? gate_fields : plug_fields;
	size_t nf = strcmp(op, "gate") == 0 ? 5 : 3;
	struct cf_driver *d;
	cJSON *table = load_table(c, file);
	const cJSON *row;
	int rows = 0, bad = 0;

	if (table == NULL)
		return;
	if (!cf_surface(c->cf, "host-gate")) {
		cf_skip(c, "surface not served: the driver does not announce \"host-gate\"");
		goto out;
	}
	d = cf_start(c, NULL);
	if (d == NULL)
		goto out;
	cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(table, "rows")) {
		const cJSON *expect = cJSON_GetObjectItemCaseSensitive(row, "expect");
		const char *code = cf_str(row, "code");
		cJSON *req = cJSON_CreateObject();
		const char *et, *em;
		cJSON *res;
		size_t i;

		if ((sel == ROWS_BLANK && !(code != NULL && blank(code))) ||
		    (sel == ROWS_NOT_BLANK && code != NULL && blank(code))) {
			cJSON_Delete(req);
			continue;
		}
		rows++;
		cJSON_AddItemToObject(req, "env", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(row, "env"), true));
		if (strcmp(op, "gate") == 0) {
			cJSON_AddItemToObject(req, "capabilities",
					      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(row, "capabilities"), true));
			cJSON_AddStringToObject(req, "code", code ? code : "");
		} else {
			cJSON_AddItemToObject(req, "entry_points",
					      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(row, "entry_points"), true));
		}
		res = cf_op(d, op, req, 20, &et, &em);
		cJSON_Delete(req);
		if (res == NULL) {
			if (cf_driver_broken(d))
				break;
			if (++bad <= 10)
				cf_detail(c, "row %s: %s raised %s: %s", cf_str(row, "id"), op, et, em);
			continue;
		}
		drop_optional(res, row, expect);
		for (i = 0; i < nf; i++) {
			const cJSON *want = cJSON_GetObjectItemCaseSensitive(expect, fields[i]);
			const cJSON *got = cJSON_GetObjectItemCaseSensitive(res, fields[i]);
			bool want_null = want == NULL || cJSON_IsNull(want);
			bool got_null = got == NULL || cJSON_IsNull(got);

			if ((want_null && got_null) || (want != NULL && got != NULL && cJSON_Compare(want, got, true)))
				continue;
			if (++bad <= 10) {
				char *w = cJSON_PrintUnformatted(want), *g = cJSON_PrintUnformatted(got);

				cf_detail(c, "row %s: %s expected %.300s, got %.300s", cf_str(row, "id"), fields[i],
					  w ? w : "null", g ? g : "null");
				free(w);
				free(g);
			}
			break;
		}
		cJSON_Delete(res);
	}
	if (bad > 0)
		cf_fail(c, "%d of %d rows of %s disagree with the table (first ones in the details)", bad, rows, file);
	else if (rows == 0)
		cf_error(c, "harness: no rows selected from %s", file);
	else
		cf_detail(c, "%d rows of %s agree", rows, file);
out:
	cJSON_Delete(table);
}

void ck_gate_001(struct cf_case *c)
{
	replay(c, "gate_rules.json", "gate", ROWS_NOT_BLANK);
}

void ck_gate_002(struct cf_case *c)
{
	replay(c, "gate_rules.json", "gate", ROWS_BLANK);
}

void ck_gate_003(struct cf_case *c)
{
	replay(c, "settings.json", "gate", ROWS_ALL);
}

void ck_gate_004(struct cf_case *c)
{
	replay(c, "plugins.json", "load_plugins", ROWS_ALL);
}

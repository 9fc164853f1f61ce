/* cmd_egress_offline: `egress check` and `egress lint`, which run the egress
 * engine (sbx/egress.h) locally. They must never touch the network: a user
 * checks a list here before shipping it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "output.h"
#include "sbx/egress.h"

const ctl_opt ctl_opts_egress_check[] = {
	{"rules", "'R1,R2'", false, "comma-separated rules (required; '' = empty)"},
	{"mode", "MODE", false, "documented or observed (default observed)"},
	{NULL, NULL, false, NULL},
};

const ctl_opt ctl_opts_egress_lint[] = {
	{"max-rules", "N", false, "list size limit (default 1024, the mock's)"},
	{NULL, NULL, false, NULL},
};

/* One problem found in a list. */
typedef struct lint_issue {
	size_t index;
	long line;          /* 0: not from a line-oriented file */
	const char *cls;    /* stable class name ("wildcard", "type", ...) */
	char message[600];
} lint_issue;

typedef struct lint_report {
	lint_issue *issues;
	size_t n;
	size_t cap;
} lint_report;

static void report_add(lint_report *r, size_t index, long line, const char *cls, const char *msg)
{
	if (r->n == r->cap) {
		size_t ncap = r->cap == 0 ? 8 : r->cap * 2;
		lint_issue *ni = realloc(r->issues, ncap * sizeof *ni);
		if (ni == NULL)
			return;
		r->issues = ni;
		r->cap = ncap;
	}
	lint_issue *it = &r->issues[r->n++];
	it->index = index;
	it->line = line;
	it->cls = cls;
	snprintf(it->message, sizeof it->message, "%s", msg);
}

static cJSON *issues_json(const lint_report *r)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < r->n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "index", (double)r->issues[i].index);
		if (r->issues[i].line > 0)
			cJSON_AddNumberToObject(o, "line", (double)r->issues[i].line);
		cJSON_AddStringToObject(o, "class", r->issues[i].cls);
		cJSON_AddStringToObject(o, "message", r->issues[i].message);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

static int parse_mode(ctl_ctx *ctx, sbx_host_rule_mode *mode)
{
	const char *m = ctl_args_get(&ctx->args, "mode");
	*mode = SBX_HOST_RULES_OBSERVED;
	if (m == NULL || strcmp(m, "observed") == 0)
		return 0;
	if (strcmp(m, "documented") == 0) {
		*mode = SBX_HOST_RULES_DOCUMENTED;
		return 0;
	}
	return ctl_usage_error(ctx, "--mode: '%s' is neither 'documented' nor 'observed'", m);
}

/* Parses every rule on its own so that all errors are reported, not only
 * the first. */
static void check_rules(char **rules, size_t n, size_t max_rules, lint_report *rep)
{
	for (size_t i = 0; i < n; i++) {
		sbx_egress_rule rule;
		sbx_egress_error e;
		memset(&e, 0, sizeof e);
		if (sbx_egress_rule_parse(rules[i], strlen(rules[i]), i, &rule, &e) != 0)
			report_add(rep, i, 0, sbx_egress_errclass_name(e.cls), e.message);
	}
	if (n > max_rules) {
		char msg[128];
		snprintf(msg, sizeof msg, "%zu rules is over the limit of %zu", n, max_rules);
		report_add(rep, n - 1, 0, sbx_egress_errclass_name(SBX_EGRESS_E_TOO_MANY), msg);
	}
}

static void print_issues(ctl_ctx *ctx, const char *where, const lint_report *rep)
{
	for (size_t i = 0; i < rep->n; i++) {
		const lint_issue *it = &rep->issues[i];
		if (it->line > 0)
			fprintf(ctx->err, "%s:%ld: %s [%s]\n", where, it->line, it->message, it->cls);
		else
			fprintf(ctx->err, "%s: %s [%s]\n", where, it->message, it->cls);
	}
}

typedef struct check_dest {
	const char *text;
	sbx_egress_dest dest;
	char host[SBX_EGRESS_HOST_MAX + 2];
} check_dest;

static int parse_dests(ctl_ctx *ctx, check_dest *d, size_t n)
{
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		sbx_egress_error e;
		memset(&e, 0, sizeof e);
		d[i].text = ctx->args.pos[i];
		if (sbx_egress_dest_parse(d[i].text, strlen(d[i].text), &d[i].dest, d[i].host,
					  sizeof d[i].host, &e) != 0) {
			fprintf(ctx->err, "sbxctl egress check: destination '%s': %s\n", d[i].text, e.message);
			bad = 1;
		}
	}
	if (bad)
		fprintf(ctx->err, "Destinations are ADDR:PORT, [V6]:PORT, NAME:PORT or NAME@ADDR:PORT.\n");
	return bad ? CTL_EXIT_USAGE : CTL_EXIT_OK;
}

static bool has_host_rules(const sbx_egress_list *list)
{
	for (size_t i = 0; i < list->count; i++) {
		if (list->rules[i].kind == SBX_RULE_HOST || list->rules[i].kind == SBX_RULE_WILDCARD)
			return true;
	}
	return false;
}

static void print_decisions(ctl_ctx *ctx, const sbx_egress_list *list, const check_dest *d,
			    const sbx_egress_decision *dec, size_t n, sbx_host_rule_mode mode)
{
	static const char *const hdr[] = {"DEST", "DECISION", "REASON", "RULE"};
	cJSON *arr = ctx->json ? cJSON_CreateArray() : NULL;
	ctl_table t;
	ctl_table_init(&t, 4, hdr);
	bool denied_named = false;
	for (size_t i = 0; i < n; i++) {
		char canon[SBX_EGRESS_CANON_MAX] = "";
		char rule[SBX_EGRESS_CANON_MAX + 32] = "";
		if (dec[i].reason == SBX_REASON_RULE && dec[i].rule_index < list->count) {
			sbx_egress_rule_format(&list->rules[dec[i].rule_index], canon, sizeof canon);
			snprintf(rule, sizeof rule, "#%zu %s", dec[i].rule_index, canon);
		}
		denied_named |= !dec[i].allowed && d[i].dest.host != NULL;
		if (arr != NULL) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "dest", d[i].text);
			cJSON_AddBoolToObject(o, "allowed", dec[i].allowed);
			cJSON_AddStringToObject(o, "reason", sbx_egress_reason_name(dec[i].reason));
			if (dec[i].reason == SBX_REASON_RULE) {
				cJSON_AddNumberToObject(o, "rule_index", (double)dec[i].rule_index);
				cJSON_AddStringToObject(o, "rule", canon);
			}
			cJSON_AddItemToArray(arr, o);
			continue;
		}
		const char *cells[] = {d[i].text, dec[i].allowed ? "allow" : "deny",
				       sbx_egress_reason_name(dec[i].reason), rule[0] != '\0' ? rule : "-"};
		ctl_table_add(&t, cells);
	}
	if (arr != NULL) {
		ctl_print_json(ctx->out, arr);
		cJSON_Delete(arr);
	} else {
		ctl_table_print(&t, ctx->out);
		if (denied_named && mode == SBX_HOST_RULES_OBSERVED && has_host_rules(list))
			fprintf(ctx->out, "note: host and wildcard rules match nothing in 'observed' mode "
					  "(what the live service does); try --mode documented\n");
	}
	ctl_table_free(&t);
}

static int evaluate(ctl_ctx *ctx, char **rules, size_t nrules, sbx_host_rule_mode mode)
{
	int rc = CTL_EXIT_FAIL;
	size_t n = ctx->args.npos;
	sbx_egress_list list;
	sbx_egress_error e;
	memset(&list, 0, sizeof list);
	memset(&e, 0, sizeof e);
	check_dest *d = calloc(n, sizeof *d);
	sbx_egress_decision *dec = calloc(n, sizeof *dec);
	if (d == NULL || dec == NULL) {
		ctl_fail(ctx, "out of memory");
		goto out_free;
	}
	rc = parse_dests(ctx, d, n);
	if (rc != CTL_EXIT_OK)
		goto out_free;
	if (sbx_egress_list_from_strings((const char *const *)rules, nrules, SIZE_MAX, &list, &e) != 0) {
		rc = ctl_fail(ctx, "%s", e.message);
		goto out_free;
	}
	sbx_egress_policy *pol = sbx_egress_policy_compile(&list, mode);
	if (pol == NULL) {
		rc = ctl_fail(ctx, "out of memory compiling the policy");
		goto out_free_list;
	}
	for (size_t i = 0; i < n; i++)
		dec[i] = sbx_egress_policy_eval(pol, &d[i].dest);
	sbx_egress_policy_free(pol);
	print_decisions(ctx, &list, d, dec, n, mode);
	rc = CTL_EXIT_OK;
out_free_list:
	sbx_egress_list_free(&list);
out_free:
	free(dec);
	free(d);
	return rc;
}

int ctl_cmd_egress_check(ctl_ctx *ctx)
{
	const char *rules_arg = ctl_args_get(&ctx->args, "rules");
	sbx_host_rule_mode mode;
	if (rules_arg == NULL)
		return ctl_usage_error(ctx, "--rules is required (use --rules '' for an empty list)");
	if (parse_mode(ctx, &mode) != 0)
		return CTL_EXIT_USAGE;
	size_t n = 0;
	char **rules = ctl_split_commas(rules_arg, &n);
	if (rules == NULL)
		return ctl_fail(ctx, "out of memory");
	lint_report rep = {NULL, 0, 0};
	check_rules(rules, n, SBX_EGRESS_MAX_RULES_DEFAULT, &rep);
	int rc = CTL_EXIT_FAIL;
	if (rep.n > 0) {
		if (ctx->json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddItemToObject(o, "errors", issues_json(&rep));
			ctl_print_json(ctx->out, o);
			cJSON_Delete(o);
		}
		print_issues(ctx, "sbxctl egress check: --rules", &rep);
	} else {
		rc = evaluate(ctx, rules, n, mode);
	}
	free(rep.issues);
	ctl_strv_free(rules);
	return rc;
}

/* ---- lint ---- */

typedef struct lint_rule {
	char *text; /* owned */
	long line;
} lint_rule;

typedef struct lint_input {
	lint_rule *rules;
	size_t n;
	bool json;
} lint_input;

static void input_free(lint_input *in)
{
	for (size_t i = 0; i < in->n; i++)
		free(in->rules[i].text);
	free(in->rules);
}

static int input_push(lint_input *in, const char *s, size_t len, long line)
{
	lint_rule *nr = realloc(in->rules, (in->n + 1) * sizeof *nr);
	if (nr == NULL)
		return -1;
	in->rules = nr;
	char *t = malloc(len + 1);
	if (t == NULL)
		return -1;
	memcpy(t, s, len);
	t[len] = '\0';
	in->rules[in->n].text = t;
	in->rules[in->n].line = line;
	in->n++;
	return 0;
}

static bool blank_or_comment(const char *s, size_t len)
{
	size_t i = 0;
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
		i++;
	return i == len || s[i] == '#';
}

static int split_lines(const char *data, size_t len, lint_input *in)
{
	size_t start = 0;
	long line = 1;
	while (start < len) {
		const char *nl = memchr(data + start, '\n', len - start);
		size_t end = nl != NULL ? (size_t)(nl - data) : len;
		size_t l = end - start;
		if (l > 0 && data[start + l - 1] == '\r')
			l--;
		if (!blank_or_comment(data + start, l) && input_push(in, data + start, l, line) != 0)
			return -1;
		start = end + 1;
		line++;
	}
	return 0;
}

/* A JSON array: strings become rules, anything else a "type" issue. */
static int split_json(ctl_ctx *ctx, const char *path, const char *data, size_t len, lint_input *in,
		      lint_report *rep)
{
	cJSON *root = cJSON_ParseWithLength(data, len);
	if (root == NULL) {
		const char *at = cJSON_GetErrorPtr();
		long off = at != NULL && at >= data && at <= data + len ? (long)(at - data) : -1;
		ctl_fail(ctx, "%s: not valid JSON (error near byte %ld)", path, off);
		return -1;
	}
	const cJSON *it = NULL;
	size_t idx = 0;
	int rc = 0;
	cJSON_ArrayForEach(it, root) {
		if (cJSON_IsString(it)) {
			if (input_push(in, it->valuestring, strlen(it->valuestring), 0) != 0)
				rc = -1;
		} else {
			char msg[128];
			snprintf(msg, sizeof msg, "rule %zu: expected a string, got %s", idx, sbx_json_type_name(it));
			report_add(rep, idx, 0, sbx_egress_errclass_name(SBX_EGRESS_E_TYPE), msg);
			if (input_push(in, "", 0, -1) != 0) /* keeps indexes aligned; skipped below */
				rc = -1;
		}
		idx++;
	}
	cJSON_Delete(root);
	if (rc != 0)
		ctl_fail(ctx, "out of memory");
	return rc;
}

static void lint_rules(const lint_input *in, size_t max_rules, lint_report *rep, cJSON *canon,
		       sbx_egress_rule *parsed, bool *ok)
{
	for (size_t i = 0; i < in->n; i++) {
		sbx_egress_error e;
		memset(&e, 0, sizeof e);
		ok[i] = false;
		if (in->rules[i].line < 0)
			continue; /* a JSON non-string, already reported */
		if (sbx_egress_rule_parse(in->rules[i].text, strlen(in->rules[i].text), i, &parsed[i], &e) != 0) {
			report_add(rep, i, in->rules[i].line, sbx_egress_errclass_name(e.cls), e.message);
			continue;
		}
		ok[i] = true;
		char buf[SBX_EGRESS_CANON_MAX];
		sbx_egress_rule_format(&parsed[i], buf, sizeof buf);
		cJSON_AddItemToArray(canon, cJSON_CreateString(buf));
	}
	if (in->n > max_rules) {
		char msg[128];
		snprintf(msg, sizeof msg, "%zu rules is over the limit of %zu", in->n, max_rules);
		report_add(rep, in->n - 1, 0, sbx_egress_errclass_name(SBX_EGRESS_E_TOO_MANY), msg);
	}
}

/* Duplicates are legal but usually a mistake: warnings, not errors. */
static void find_duplicates(const lint_input *in, const sbx_egress_rule *parsed, const bool *ok,
			    lint_report *warn)
{
	if (in->n > 4096)
		return;
	for (size_t i = 0; i < in->n; i++) {
		for (size_t j = 0; ok[i] && j < i; j++) {
			if (!ok[j] || !sbx_egress_rule_equal(&parsed[i], &parsed[j]))
				continue;
			char msg[600];
			snprintf(msg, sizeof msg, "rule %zu (`%.200s`) duplicates rule %zu", i, in->rules[i].text, j);
			report_add(warn, i, in->rules[i].line, "duplicate", msg);
			break;
		}
	}
}

static int issue_cmp(const void *a, const void *b)
{
	const lint_issue *x = a;
	const lint_issue *y = b;
	return x->index < y->index ? -1 : x->index > y->index ? 1 : 0;
}

static void lint_output(ctl_ctx *ctx, const char *path, const lint_input *in, const lint_report *rep,
			const lint_report *warn, cJSON *canon)
{
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "file", path);
		cJSON_AddStringToObject(o, "format", in->json ? "json" : "lines");
		cJSON_AddNumberToObject(o, "rules", (double)in->n);
		cJSON_AddBoolToObject(o, "ok", rep->n == 0);
		cJSON_AddItemToObject(o, "errors", issues_json(rep));
		cJSON_AddItemToObject(o, "warnings", issues_json(warn));
		cJSON_AddItemReferenceToObject(o, "canonical", canon);
		ctl_print_json(ctx->out, o);
		cJSON_Delete(o);
		return;
	}
	print_issues(ctx, path, rep);
	for (size_t i = 0; i < warn->n; i++) {
		const lint_issue *it = &warn->issues[i];
		if (it->line > 0)
			fprintf(ctx->err, "%s:%ld: warning: %s\n", path, it->line, it->message);
		else
			fprintf(ctx->err, "%s: warning: %s\n", path, it->message);
	}
	if (rep->n == 0)
		fprintf(ctx->out, "%s: %zu rule%s OK\n", path, in->n, in->n == 1 ? "" : "s");
	else
		fprintf(ctx->out, "%s: %zu rule%s, %zu error%s\n", path, in->n, in->n == 1 ? "" : "s", rep->n,
			rep->n == 1 ? "" : "s");
}

static bool looks_like_json(const sbx_strbuf *sb)
{
	for (size_t i = 0; i < sb->len; i++) {
		char c = sb->data[i];
		if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
			return c == '[';
	}
	return false;
}

int ctl_cmd_egress_lint(ctl_ctx *ctx)
{
	const char *path = ctx->args.pos[0];
	long max_rules = SBX_EGRESS_MAX_RULES_DEFAULT;
	sbx_err perr = {""};
	const char *mr = ctl_args_get(&ctx->args, "max-rules");
	if (mr != NULL && ctl_parse_long(mr, 1, 1000000, "--max-rules", &max_rules, &perr) != 0)
		return ctl_usage_error(ctx, "%s", perr.msg);
	int rc = CTL_EXIT_FAIL;
	sbx_strbuf data = SBX_STRBUF_INIT;
	lint_input in = {NULL, 0, false};
	lint_report rep = {NULL, 0, 0};
	lint_report warn = {NULL, 0, 0};
	cJSON *canon = cJSON_CreateArray();
	sbx_egress_rule *parsed = NULL;
	bool *ok = NULL;
	if (ctl_read_file(ctx, path, &data) != 0)
		goto out_free;
	in.json = looks_like_json(&data);
	if (in.json ? split_json(ctx, path, sbx_strbuf_str(&data), data.len, &in, &rep) != 0
		    : split_lines(sbx_strbuf_str(&data), data.len, &in) != 0)
		goto out_free;
	parsed = calloc(in.n + 1, sizeof *parsed);
	ok = calloc(in.n + 1, sizeof *ok);
	if (parsed == NULL || ok == NULL || canon == NULL) {
		ctl_fail(ctx, "out of memory");
		goto out_free;
	}
	lint_rules(&in, (size_t)max_rules, &rep, canon, parsed, ok);
	if (rep.n > 1)
		qsort(rep.issues, rep.n, sizeof *rep.issues, issue_cmp);
	find_duplicates(&in, parsed, ok, &warn);
	lint_output(ctx, path, &in, &rep, &warn, canon);
	rc = rep.n == 0 ? CTL_EXIT_OK : CTL_EXIT_FAIL;
out_free:
	free(ok);
	free(parsed);
	cJSON_Delete(canon);
	free(warn.issues);
	free(rep.issues);
	input_free(&in);
	sbx_strbuf_free(&data);
	return rc;
}

/* gate_plugins: which `lfx.sandbox_backends` entry points Langflow would load.
 * With an empty allow-list nothing is enumerated, so nothing is refused (or
 * logged, in lfx 1.13). Otherwise names are grouped (trimmed, lower-cased)
 * BEFORE anything loads, so an unlisted (a blank name included: the
 * allow-list drops blanks), duplicated, built-in or reserved name is refused
 * without its distribution ever being "imported" (lfx 1.13 imports a listed
 * `none` and then refuses it; the tables accept both). Messages are lfx
 * 1.13's log lines, quoting the grouped name or the entry point's own name as
 * lfx does (lib/GATE.md). This module only plans: it never loads, imports or
 * runs anything. */
#include "sbx/gate.h"

#include <stdlib.h>
#include <string.h>

#include "gate_internal.h"
#include "sbx/strbuf.h"

#define UNKNOWN_DIST "unknown distribution"

typedef struct group {
	char *name;        /* normalized; owned */
	const char *own;   /* the first entry point's own name; borrowed */
	const char **dists; /* borrowed from the entry points */
	size_t n_dists;
} group;

const char *sbx_plugin_reason_id(sbx_plugin_reason reason)
{
	switch (reason) {
	case SBX_PLUGIN_EMPTY:
		return "empty";
	case SBX_PLUGIN_UNLISTED:
		return "unlisted";
	case SBX_PLUGIN_DUPLICATE:
		return "duplicate";
	case SBX_PLUGIN_BUILTIN:
		return "builtin";
	case SBX_PLUGIN_RESERVED:
		return "reserved";
	default:
		return "unknown";
	}
}

static char *normalize(const char *name)
{
	if (name == NULL)
		name = "";
	size_t s, e;
	sbx_gate_trim(name, strlen(name), true, &s, &e);
	return sbx_gate_dup_range(name, s, e, true);
}

static const char *dist_of(const sbx_entry_point *ep)
{
	return (ep->distribution != NULL && ep->distribution[0] != '\0') ? ep->distribution : UNKNOWN_DIST;
}

static void free_groups(group *groups, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(groups[i].name);
		free(groups[i].dists);
	}
	free(groups);
}

/* Groups entry points by normalized name in first-seen order. */
static int group_entry_points(const sbx_entry_point *eps, size_t n, group **out, size_t *n_out)
{
	group *groups = calloc(n > 0 ? n : 1, sizeof *groups);
	size_t ng = 0;
	if (groups == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char *name = normalize(eps[i].name);
		if (name == NULL)
			goto out_free_groups;
		size_t g = 0;
		while (g < ng && strcmp(groups[g].name, name) != 0)
			g++;
		if (g == ng) {
			groups[ng].name = name;
			groups[ng].own = eps[i].name != NULL ? eps[i].name : "";
			ng++;
		} else {
			free(name);
		}
		const char **grown = realloc(groups[g].dists, (groups[g].n_dists + 1) * sizeof *grown);
		if (grown == NULL)
			goto out_free_groups;
		groups[g].dists = grown;
		groups[g].dists[groups[g].n_dists++] = dist_of(&eps[i]);
	}
	*out = groups;
	*n_out = ng;
	return 0;
out_free_groups:
	free_groups(groups, ng);
	return -1;
}

static bool listed(const char *name, char *const *allow, size_t n_allow)
{
	for (size_t i = 0; i < n_allow; i++) {
		if (allow[i] != NULL && strcmp(allow[i], name) == 0)
			return true;
	}
	return false;
}

/* Empty as lfx 1.13's `if not allowed` sees it: no non-blank name. */
static bool allowlist_empty(char *const *allow, size_t n_allow)
{
	for (size_t i = 0; i < n_allow; i++) {
		if (allow[i] != NULL && allow[i][0] != '\0')
			return false;
	}
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* lfx 1.13's log line for a refused group. The "not listed" and duplicate
 * lines quote the grouping key (plugin_name); the ones after the duplicate
 * test quote the group's single entry point's own name (entry_point.name).
 * The reserved refusal is lfx's bare "Refusing sandbox backend plugin %r":
 * the ValueError saying why rides in the traceback lfx attaches, not in the
 * message. */
static char *refusal_message(const group *g, sbx_plugin_reason reason, char **dists, size_t n_dists)
{
	const char *name = (reason == SBX_PLUGIN_BUILTIN || reason == SBX_PLUGIN_RESERVED) ? g->own : g->name;
	sbx_strbuf sb = SBX_STRBUF_INIT;
	switch (reason) {
	case SBX_PLUGIN_EMPTY:
		sbx_strbuf_puts(&sb, "Refusing sandbox backend entry point from ");
		break;
	case SBX_PLUGIN_UNLISTED:
		sbx_strbuf_puts(&sb, "Ignoring sandbox backend ");
		break;
	default:
		sbx_strbuf_puts(&sb, "Refusing sandbox backend plugin ");
		break;
	}
	if (reason == SBX_PLUGIN_EMPTY) {
		for (size_t i = 0; i < n_dists; i++)
			sbx_strbuf_printf(&sb, "%s%s", i > 0 ? ", " : "", dists[i]);
		sbx_strbuf_puts(&sb, ": a sandbox backend name cannot be empty");
		goto out_detach;
	}
	sbx_gate_py_repr(&sb, name, strlen(name), false);
	if (reason == SBX_PLUGIN_UNLISTED) {
		sbx_strbuf_puts(&sb, ": not listed in LANGFLOW_SANDBOX_BACKEND_PLUGINS");
	} else if (reason == SBX_PLUGIN_DUPLICATE) {
		sbx_strbuf_printf(&sb, ": %zu installed distributions provide that name (", n_dists);
		for (size_t i = 0; i < n_dists; i++)
			sbx_strbuf_printf(&sb, "%s%s", i > 0 ? ", " : "", dists[i]);
		sbx_strbuf_puts(&sb, "). Uninstall all but one, because the allowlist names a backend "
				     "and cannot choose between them.");
	} else if (reason == SBX_PLUGIN_BUILTIN) {
		sbx_strbuf_puts(&sb, ": that name belongs to a built-in backend");
	}
out_detach:
	if (sb.oom) {
		sbx_strbuf_free(&sb);
		return NULL;
	}
	return sbx_strbuf_detach(&sb, NULL);
}

/* Decides one group: returns true with *reason set when refused. Order:
 * unlisted (a blank name is never listed), duplicate, built-in, reserved
 * (see lib/GATE.md). */
static bool refuse_group(const group *g, char *const *allow, size_t n_allow, sbx_plugin_reason *reason)
{
	if (g->name[0] == '\0' || !listed(g->name, allow, n_allow))
		*reason = SBX_PLUGIN_UNLISTED;
	else if (g->n_dists > 1)
		*reason = SBX_PLUGIN_DUPLICATE;
	else if (strcmp(g->name, SBX_GATE_BUILTIN_BACKEND) == 0)
		*reason = SBX_PLUGIN_BUILTIN;
	else if (strcmp(g->name, SBX_GATE_BACKEND_NONE) == 0)
		*reason = SBX_PLUGIN_RESERVED;
	else
		return false;
	return true;
}

static int add_refusal(sbx_plugin_plan *plan, const group *g, sbx_plugin_reason reason)
{
	sbx_plugin_refusal *r = &plan->refused[plan->n_refused];
	memset(r, 0, sizeof *r);
	plan->n_refused++; /* counted first so plan_free releases partial work */
	r->reason = reason;
	r->name = sbx_strdup(g->name);
	r->distributions = calloc(g->n_dists, sizeof *r->distributions);
	if (r->name == NULL || r->distributions == NULL)
		return -1;
	for (size_t i = 0; i < g->n_dists; i++) {
		r->distributions[i] = sbx_strdup(g->dists[i]);
		if (r->distributions[i] == NULL)
			return -1;
		r->n_distributions++;
	}
	qsort(r->distributions, r->n_distributions, sizeof *r->distributions, cmp_str);
	r->message = refusal_message(g, reason, r->distributions, r->n_distributions);
	return r->message != NULL ? 0 : -1;
}

static int add_loaded(sbx_plugin_plan *plan, const group *g)
{
	plan->loaded[plan->n_loaded] = sbx_strdup(g->name);
	if (plan->loaded[plan->n_loaded] == NULL)
		return -1;
	plan->n_loaded++;
	plan->imported[plan->n_imported] = sbx_strdup(g->dists[0]);
	if (plan->imported[plan->n_imported] == NULL)
		return -1;
	plan->n_imported++;
	return 0;
}

int sbx_gate_plan_plugins(const sbx_entry_point *eps, size_t n, char *const *allow, size_t n_allow,
			  sbx_plugin_plan *out, sbx_err *err)
{
	group *groups = NULL;
	size_t ng = 0;
	memset(out, 0, sizeof *out);
	/* lfx 1.13 returns before entry_points() when the allow-list is empty:
	 * no group, so no refusal (the plan stays empty). */
	if (!allowlist_empty(allow, n_allow) && group_entry_points(eps, n, &groups, &ng) != 0)
		goto out_oom;
	size_t slots = ng > 0 ? ng : 1;
	out->loaded = calloc(slots, sizeof *out->loaded);
	out->imported = calloc(slots, sizeof *out->imported);
	out->refused = calloc(slots, sizeof *out->refused);
	if (out->loaded == NULL || out->imported == NULL || out->refused == NULL)
		goto out_free_plan;
	for (size_t i = 0; i < ng; i++) {
		sbx_plugin_reason reason;
		int rc = refuse_group(&groups[i], allow, n_allow, &reason) ? add_refusal(out, &groups[i], reason)
									   : add_loaded(out, &groups[i]);
		if (rc != 0)
			goto out_free_plan;
	}
	free_groups(groups, ng);
	return 0;
out_free_plan:
	sbx_plugin_plan_free(out);
	free_groups(groups, ng);
out_oom:
	sbx_err_set(err, "plugin plan: out of memory");
	return -1;
}

void sbx_plugin_plan_free(sbx_plugin_plan *plan)
{
	if (plan == NULL)
		return;
	for (size_t i = 0; i < plan->n_loaded; i++)
		free(plan->loaded[i]);
	for (size_t i = 0; i < plan->n_imported; i++)
		free(plan->imported[i]);
	for (size_t i = 0; i < plan->n_refused; i++) {
		sbx_plugin_refusal *r = &plan->refused[i];
		free(r->name);
		for (size_t k = 0; k < r->n_distributions; k++)
			free(r->distributions[k]);
		free(r->distributions);
		free(r->message);
	}
	free(plan->loaded);
	free(plan->imported);
	free(plan->refused);
	memset(plan, 0, sizeof *plan);
}

/* cmd_cassette: the offline verbs on an internet cassette (issue 47; the
 * format is lib/README.md's "Cassettes", read and written by
 * libsbx's sbx/cassette.h): list, check and prune. Merge is in
 * cmd_cassette_merge.c. They never touch the network and never change a
 * cassette they could not read whole: a broken cassette is refused with
 * every problem named, and cassette.jsonl is only ever replaced whole. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cmd_cassette.h"
#include "output.h"

const ctl_opt ctl_opts_cassette_prune[] = {
	{"host", "PATTERN", false, "exchanges with this host (name, or *.suffix: names below it)"},
	{"target-prefix", "P", false, "exchanges whose target starts with P (with --host: both)"},
	{"keep-bodies", NULL, false, "keep the bodies no line names any more"},
	{"dry-run", NULL, false, "say what would be removed, change nothing"},
	{NULL, NULL, false, NULL},
};

int ctl_cassette_refuse(ctl_ctx *ctx, const char *dir, const sbx_cassette_problems *p)
{
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "problems");
		const char *s = sbx_strbuf_str(&p->text);
		while (*s != '\0') {
			size_t n = strcspn(s, "\n");
			char *line = strndup(s, n);
			cJSON_AddItemToArray(arr, cJSON_CreateString(line != NULL ? line : ""));
			free(line);
			s += n + (s[n] == '\n');
		}
		cJSON_AddStringToObject(o, "cassette", dir);
		cJSON_AddBoolToObject(o, "ok", false);
		cJSON_AddBoolToObject(o, "truncated", p->truncated);
		ctl_print_json(ctx->out, o);
		cJSON_Delete(o);
	} else {
		fputs(sbx_strbuf_str(&p->text), ctx->err);
		if (p->truncated)
			fprintf(ctx->err, "%s: more than %u problems; stopped reading\n", dir, SBX_CASSETTE_MAX_PROBLEMS);
		fprintf(ctx->err, "sbxctl: cassette %s: %zu problem%s%s\n", dir, p->count, p->count == 1 ? "" : "s",
			ctx->cmd->run == ctl_cmd_cassette_check ? "" : "; nothing was changed");
	}
	return CTL_EXIT_FAIL;
}

cJSON *ctl_cassette_exchange_json(const sbx_cassette_exchange *ex)
{
	cJSON *o = cJSON_CreateObject();
	sbx_strbuf url = SBX_STRBUF_INIT;
	sbx_strbuf_printf(&url, "%s://%s:%d%s", ex->scheme, ex->host, ex->port, ex->target);
	cJSON_AddNumberToObject(o, "line", (double)ex->line);
	cJSON_AddStringToObject(o, "method", ex->method);
	cJSON_AddStringToObject(o, "url", sbx_strbuf_str(&url));
	cJSON_AddNumberToObject(o, "status", ex->status);
	cJSON_AddNumberToObject(o, "size", (double)ex->body.size);
	cJSON_AddStringToObject(o, "sha256", ex->body.sha256);
	cJSON_AddNumberToObject(o, "n", (double)ex->n);
	cJSON_AddBoolToObject(o, "chunked", ex->chunked);
	sbx_strbuf_free(&url);
	return o;
}

void ctl_cassette_exchange_line(FILE *out, const char *prefix, const sbx_cassette_exchange *ex)
{
	sbx_strbuf rq = SBX_STRBUF_INIT;
	sbx_cassette_request_text(&rq, ex);
	fprintf(out, "%s%s  %d  %llu  %.12s  n=%lu\n", prefix, sbx_strbuf_str(&rq), ex->status,
		(unsigned long long)ex->body.size, ex->body.sha256, ex->n);
	sbx_strbuf_free(&rq);
}

/* ---- list ---- */

typedef struct disk_count {
	size_t bodies, orphans;
	uint64_t bytes;
} disk_count;

static int count_body(const char *sha, uint64_t size, bool named, void *ud)
{
	disk_count *c = ud;
	(void)sha;
	c->bodies++;
	c->bytes += size;
	c->orphans += named ? 0 : 1;
	return 0;
}

static int cmp_host(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Distinct hosts (one host's lines are apart when it has http and https). */
static size_t count_hosts(const sbx_cassette *cas)
{
	const char **h = calloc(cas->nex + 1, sizeof *h);
	size_t hosts = 0;
	if (h == NULL)
		return 0;
	for (size_t i = 0; i < cas->nex; i++)
		h[i] = cas->ex[i].host;
	qsort(h, cas->nex, sizeof *h, cmp_host);
	for (size_t i = 0; i < cas->nex; i++)
		hosts += i == 0 || strcmp(h[i - 1], h[i]) != 0;
	free(h);
	return hosts;
}

static void list_json(ctl_ctx *ctx, const char *dir, const sbx_cassette *cas, size_t hosts, uint64_t bytes,
		      const disk_count *dc)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "cassette", dir);
	cJSON_AddStringToObject(o, "created", cas->created != NULL ? cas->created : "");
	cJSON *rq = cJSON_AddArrayToObject(o, "redacted_query");
	for (size_t i = 0; i < cas->nredacted; i++)
		cJSON_AddItemToArray(rq, cJSON_CreateString(cas->redacted_query[i]));
	cJSON *arr = cJSON_AddArrayToObject(o, "exchanges");
	for (size_t i = 0; i < cas->nex; i++)
		cJSON_AddItemToArray(arr, ctl_cassette_exchange_json(&cas->ex[i]));
	cJSON *t = cJSON_AddObjectToObject(o, "totals");
	cJSON_AddNumberToObject(t, "exchanges", (double)cas->nex);
	cJSON_AddNumberToObject(t, "hosts", (double)hosts);
	cJSON_AddNumberToObject(t, "bytes", (double)bytes);
	cJSON_AddNumberToObject(t, "bodies_on_disk", (double)dc->bodies);
	cJSON_AddNumberToObject(t, "disk_bytes", (double)dc->bytes);
	cJSON_AddNumberToObject(t, "unnamed_bodies", (double)dc->orphans);
	ctl_print_json(ctx->out, o);
	cJSON_Delete(o);
}

/* Loads dir (as what says) and counts its body files into dc: the
 * exit code to return now (the refusal printed), or -1 to go on. */
static int load_counted(ctl_ctx *ctx, const char *dir, int what, sbx_cassette *cas,
			sbx_cassette_problems *probs, disk_count *dc)
{
	sbx_err e = {""};

	if (sbx_cassette_load(dir, what, cas, probs, NULL) != 0)
		return ctl_cassette_refuse(ctx, dir, probs);
	if (sbx_cassette_walk_bodies(dir, cas, count_body, dc, &e) != 0)
		return ctl_fail(ctx, "%s", e.msg);
	return -1;
}

int ctl_cmd_cassette_list(ctl_ctx *ctx)
{
	const char *dir = ctx->args.pos[0];
	sbx_cassette cas;
	sbx_cassette_problems probs = {SBX_STRBUF_INIT, 0, false};
	disk_count dc = {0, 0, 0};
	int rc = load_counted(ctx, dir, SBX_CASSETTE_LINES, &cas, &probs, &dc);
	if (rc >= 0)
		goto out_free;
	uint64_t bytes = 0;
	for (size_t i = 0; i < cas.nex; i++)
		bytes += cas.ex[i].body.size;
	size_t hosts = count_hosts(&cas);
	if (ctx->json) {
		list_json(ctx, dir, &cas, hosts, bytes, &dc);
	} else {
		for (size_t i = 0; i < cas.nex; i++)
			ctl_cassette_exchange_line(ctx->out, "", &cas.ex[i]);
		fprintf(ctx->out, "%zu exchange%s, %zu host%s, %llu bytes in answers; %zu bodies on disk (%llu bytes)",
			cas.nex, cas.nex == 1 ? "" : "s", hosts, hosts == 1 ? "" : "s", (unsigned long long)bytes,
			dc.bodies, (unsigned long long)dc.bytes);
		if (dc.orphans > 0)
			fprintf(ctx->out, ", %zu named by no line", dc.orphans);
		fprintf(ctx->out, "\n");
	}
	rc = CTL_EXIT_OK;
out_free:
	sbx_cassette_problems_free(&probs);
	sbx_cassette_free(&cas);
	return rc;
}

/* ---- check ---- */

int ctl_cmd_cassette_check(ctl_ctx *ctx)
{
	const char *dir = ctx->args.pos[0];
	sbx_cassette cas;
	sbx_cassette_problems probs = {SBX_STRBUF_INIT, 0, false};
	disk_count dc = {0, 0, 0};
	int rc = load_counted(ctx, dir, SBX_CASSETTE_BODY_HASHES, &cas, &probs, &dc);
	if (rc >= 0)
		goto out_free;
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "cassette", dir);
		cJSON_AddBoolToObject(o, "ok", true);
		cJSON_AddArrayToObject(o, "problems");
		cJSON_AddNumberToObject(o, "exchanges", (double)cas.nex);
		cJSON_AddNumberToObject(o, "bodies", (double)dc.bodies);
		cJSON_AddNumberToObject(o, "unnamed_bodies", (double)dc.orphans);
		ctl_print_json(ctx->out, o);
		cJSON_Delete(o);
	} else {
		fprintf(ctx->out, "%s: ok: %zu exchange%s, %zu bodies (%llu bytes), every hash checked\n", dir,
			cas.nex, cas.nex == 1 ? "" : "s", dc.bodies, (unsigned long long)dc.bytes);
		if (dc.orphans > 0)
			fprintf(ctx->out, "note: %zu body file%s named by no line (sbxctl mock cassette prune %s "
					  "removes them)\n", dc.orphans, dc.orphans == 1 ? "" : "s", dir);
	}
	rc = CTL_EXIT_OK;
out_free:
	sbx_cassette_problems_free(&probs);
	sbx_cassette_free(&cas);
	return rc;
}

/* ---- prune ---- */

/* PATTERN: a host name, or "*.suffix" for the names strictly below suffix
 * (as egress rules' wildcards), compared without case. */
static bool host_matches(const char *pattern, const char *host)
{
	if (strncmp(pattern, "*.", 2) != 0)
		return strcasecmp(pattern, host) == 0;
	size_t pl = strlen(pattern + 1), hl = strlen(host); /* ".suffix" */
	return hl > pl && strcasecmp(host + hl - pl, pattern + 1) == 0;
}

static bool pattern_ok(const char *p)
{
	const char *rest = strncmp(p, "*.", 2) == 0 ? p + 2 : p;
	return rest[0] != '\0' && strchr(rest, '*') == NULL && strpbrk(rest, " /\t") == NULL;
}

typedef struct prune_bodies {
	ctl_ctx *ctx;
	const char *dir;
	bool dry_run;
	cJSON *json; /* the removed bodies, with --json */
	size_t removed;
	uint64_t bytes;
	int failed;
} prune_bodies;

static int prune_body(const char *sha, uint64_t size, bool named, void *ud)
{
	prune_bodies *pb = ud;
	if (named)
		return 0;
	sbx_strbuf path = SBX_STRBUF_INIT;
	sbx_cassette_body_path(&path, pb->dir, sha);
	if (!pb->dry_run && unlink(sbx_strbuf_str(&path)) != 0) {
		fprintf(pb->ctx->err, "sbxctl: %s: %s\n", sbx_strbuf_str(&path), strerror(errno));
		pb->failed = 1;
	} else {
		pb->removed++;
		pb->bytes += size;
		if (pb->json != NULL) {
			cJSON *b = cJSON_CreateObject();
			cJSON_AddStringToObject(b, "sha256", sha);
			cJSON_AddNumberToObject(b, "size", (double)size);
			cJSON_AddItemToArray(pb->json, b);
		} else {
			fprintf(pb->ctx->out, "%s body %.2s/%s (%llu bytes)\n", pb->dry_run ? "would remove" : "removed",
				sha, sha, (unsigned long long)size);
		}
		if (!pb->dry_run) { /* the folder goes when it was its last body */
			char *slash = strrchr(path.data, '/');
			*slash = '\0';
			rmdir(path.data);
		}
	}
	sbx_strbuf_free(&path);
	return 0;
}

/* Moves the exchanges prune removes to the end of cas->ex; returns how many stay. */
static size_t select_kept(ctl_ctx *ctx, sbx_cassette *cas, const char *host, const char *prefix, cJSON *json)
{
	size_t kept = 0;
	const char *verb = ctl_args_has(&ctx->args, "dry-run") ? "would remove: " : "removed: ";
	for (size_t i = 0; i < cas->nex; i++) {
		sbx_cassette_exchange ex = cas->ex[i];
		bool hit = (host != NULL || prefix != NULL) && (host == NULL || host_matches(host, ex.host)) &&
			   (prefix == NULL || strncmp(ex.target, prefix, strlen(prefix)) == 0);
		if (!hit) {
			cas->ex[i] = cas->ex[kept];
			cas->ex[kept++] = ex;
		} else if (json != NULL) {
			cJSON_AddItemToArray(json, ctl_cassette_exchange_json(&ex));
		} else {
			ctl_cassette_exchange_line(ctx->out, verb, &ex);
		}
	}
	return kept;
}

static int prune_run(ctl_ctx *ctx, const char *dir, sbx_cassette *cas, cJSON *json)
{
	const char *host = ctl_args_get(&ctx->args, "host"), *prefix = ctl_args_get(&ctx->args, "target-prefix");
	bool dry = ctl_args_has(&ctx->args, "dry-run");
	size_t total = cas->nex;
	sbx_err e = {""};
	size_t kept = select_kept(ctx, cas, host, prefix, json != NULL ? cJSON_AddArrayToObject(json, "removed") : NULL);
	/* The dropped exchanges stay owned by cas (freed with it), out of sight. */
	cas->nex = kept;
	if (!dry && kept < total && sbx_cassette_write(dir, cas, &e) != 0) {
		cas->nex = total;
		return ctl_fail(ctx, "%s (the cassette is as it was)", e.msg);
	}
	prune_bodies pb = {ctx, dir, dry, json != NULL ? cJSON_AddArrayToObject(json, "bodies_removed") : NULL,
			   0, 0, 0};
	int rc = ctl_args_has(&ctx->args, "keep-bodies") ? 0 : sbx_cassette_walk_bodies(dir, cas, prune_body, &pb, &e);
	cas->nex = total;
	if (rc != 0)
		return ctl_fail(ctx, "%s", e.msg);
	if (json != NULL) {
		cJSON_AddNumberToObject(json, "kept", (double)kept);
		cJSON_AddBoolToObject(json, "dry_run", dry);
		ctl_print_json(ctx->out, json);
	} else {
		fprintf(ctx->out, "%s%s: %zu exchange%s removed, %zu kept; %zu bod%s removed (%llu bytes)\n",
			dry ? "dry run: " : "", dir, total - kept, total - kept == 1 ? "" : "s", kept, pb.removed,
			pb.removed == 1 ? "y" : "ies", (unsigned long long)pb.bytes);
	}
	return pb.failed ? CTL_EXIT_FAIL : CTL_EXIT_OK;
}

int ctl_cmd_cassette_prune(ctl_ctx *ctx)
{
	const char *dir = ctx->args.pos[0];
	const char *host = ctl_args_get(&ctx->args, "host");
	if (host != NULL && !pattern_ok(host))
		return ctl_usage_error(ctx, "--host '%s': a host name, or *.suffix for the names below suffix", host);
	const char *prefix = ctl_args_get(&ctx->args, "target-prefix");
	if (prefix != NULL && prefix[0] != '/')
		return ctl_usage_error(ctx, "--target-prefix '%s': a request-target starts with '/'", prefix);
	sbx_cassette cas;
	sbx_cassette_problems probs = {SBX_STRBUF_INIT, 0, false};
	int rc;
	if (sbx_cassette_load(dir, SBX_CASSETTE_BODY_HASHES, &cas, &probs, NULL) != 0) {
		rc = ctl_cassette_refuse(ctx, dir, &probs);
	} else {
		cJSON *json = ctx->json ? cJSON_CreateObject() : NULL;
		rc = prune_run(ctx, dir, &cas, json);
		cJSON_Delete(json);
	}
	sbx_cassette_problems_free(&probs);
	sbx_cassette_free(&cas);
	return rc;
}

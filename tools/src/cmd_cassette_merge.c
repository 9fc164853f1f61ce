/* cmd_cassette_merge: `sbxctl mock cassette merge A B --out DIR`, the union
 * of two cassettes (lib/README.md, "Cassettes"): A's exchange
 * wins where both hold the same request and n (each such conflict is
 * reported), B's redaction tokens are moved above A's so two credentials
 * never share a token, the headers' redacted query names are united.
 *
 * The new cassette is built in a temporary folder beside DIR and renamed to
 * DIR only when whole: an interrupted merge leaves no DIR. Bodies are hard
 * links where A, B and DIR share a filesystem, else copies. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd_cassette.h"
#include "output.h"
#include "sbx/sys.h"

const ctl_opt ctl_opts_cassette_merge[] = {
	{"out", "DIR", false, "the merged cassette (must not exist, or be an empty folder)"},
	{NULL, NULL, false, NULL},
};

typedef struct merge_item {
	sbx_cassette_exchange *ex;
	int from; /* 0: A, 1: B */
} merge_item;

typedef struct merge_run {
	ctl_ctx *ctx;
	const char *dir[2]; /* A, B */
	sbx_cassette cas[2];
	sbx_cassette out;    /* borrows the kept exchanges' objects: never freed itself */
	int *from;           /* out.ex[i] came from cas[from[i]] */
	size_t conflicts, linked, copied;
	cJSON *json;         /* the conflicts, with --json */
} merge_run;

static int cmp_item(const void *pa, const void *pb)
{
	const merge_item *a = pa, *b = pb;
	int c = sbx_cassette_compare(a->ex, b->ex);
	return c != 0 ? c : a->from - b->from;
}

static bool same_answer(const sbx_cassette_exchange *a, const sbx_cassette_exchange *b)
{
	return a->status == b->status && a->reason != NULL && b->reason != NULL && strcmp(a->reason, b->reason) == 0 &&
	       a->chunked == b->chunked &&
	       strcmp(a->body.sha256, b->body.sha256) == 0 &&
	       cJSON_Compare(cJSON_GetObjectItemCaseSensitive(a->obj, "response_headers"),
			     cJSON_GetObjectItemCaseSensitive(b->obj, "response_headers"), true);
}

static void report_conflict(merge_run *m, const sbx_cassette_exchange *kept, const sbx_cassette_exchange *dropped)
{
	bool same = same_answer(kept, dropped);
	m->conflicts++;
	if (m->json != NULL) {
		cJSON *c = ctl_cassette_exchange_json(kept);
		cJSON_AddNumberToObject(c, "dropped_line", (double)dropped->line);
		cJSON_AddBoolToObject(c, "same_answer", same);
		cJSON_AddItemToArray(m->json, c);
		return;
	}
	sbx_strbuf rq = SBX_STRBUF_INIT;
	sbx_cassette_request_text(&rq, kept);
	fprintf(m->ctx->out, "conflict: %s n=%lu: kept %s line %zu, dropped %s line %zu (%s", sbx_strbuf_str(&rq),
		kept->n, m->dir[0], kept->line, m->dir[1], dropped->line, same ? "the same answer)\n" : "");
	if (!same && kept->status != dropped->status)
		fprintf(m->ctx->out, "status %d vs %d, ", kept->status, dropped->status);
	if (!same)
		fprintf(m->ctx->out, "answers differ: body %.12s vs %.12s)\n", kept->body.sha256, dropped->body.sha256);
	sbx_strbuf_free(&rq);
}

/* The union of the two headers' redacted query names, A's first. */
static int unite_names(merge_run *m)
{
	size_t n = m->cas[0].nredacted + m->cas[1].nredacted;
	m->out.redacted_query = calloc(n + 1, sizeof *m->out.redacted_query);
	if (m->out.redacted_query == NULL)
		return -1;
	for (int c = 0; c < 2; c++) {
		for (size_t i = 0; i < m->cas[c].nredacted; i++) {
			bool seen = m->cas[c].redacted_query[i] == NULL; /* never: a load fills every name */
			for (size_t k = 0; k < m->out.nredacted && !seen; k++)
				seen = m->out.redacted_query[k] != NULL &&
				       strcmp(m->out.redacted_query[k], m->cas[c].redacted_query[i]) == 0;
			if (!seen)
				m->out.redacted_query[m->out.nredacted++] = m->cas[c].redacted_query[i];
		}
	}
	return 0;
}

/* Sorts A's and B's exchanges together and keeps the first of each
 * (request, n); the dropped ones stay owned by their cassette. */
static int unite_exchanges(merge_run *m)
{
	size_t n = m->cas[0].nex + m->cas[1].nex, k = 0;
	merge_item *items = calloc(n + 1, sizeof *items);
	m->out.ex = calloc(n + 1, sizeof *m->out.ex);
	m->from = calloc(n + 1, sizeof *m->from);
	if (items == NULL || m->out.ex == NULL || m->from == NULL) {
		free(items);
		return -1;
	}
	for (int c = 0; c < 2; c++) {
		for (size_t i = 0; i < m->cas[c].nex; i++)
			items[k++] = (merge_item){&m->cas[c].ex[i], c};
	}
	qsort(items, n, sizeof *items, cmp_item);
	for (size_t i = 0; i < n; i++) {
		if (m->out.nex > 0 && sbx_cassette_compare(&m->out.ex[m->out.nex - 1], items[i].ex) == 0) {
			report_conflict(m, &m->out.ex[m->out.nex - 1], items[i].ex);
			continue;
		}
		m->from[m->out.nex] = items[i].from;
		m->out.ex[m->out.nex++] = *items[i].ex;
	}
	free(items);
	return 0;
}

/* The request key, n, then the line read: two lines the united names
 * make one request keep their order in the file. */
static int cmp_rekeyed(const void *pa, const void *pb)
{
	const sbx_cassette_exchange *a = pa, *b = pb;
	int c = sbx_cassette_compare(a, b);
	return c != 0 ? c : (a->line > b->line) - (a->line < b->line);
}

/* Each side's lines read again under the united names, before they are
 * united: a query name one cassette redacts and the other does not leaves
 * a credential in the merge (refused), and makes requests of the other
 * that differed only in its value one request, whose answers are then
 * its n=1, 2, ... in their order (they were each n=1 of their own). */
static int rekey(merge_run *m, int c)
{
	sbx_cassette *cas = &m->cas[c];

	for (size_t i = 0; i < cas->nex; i++) {
		sbx_cassette_exchange again;
		sbx_err e = {""};
		char *s = cJSON_PrintUnformatted(cas->ex[i].obj);
		int rc = s != NULL ? sbx_cassette_parse_exchange(s, strlen(s), m->dir[c], cas->ex[i].line, &m->out,
								 &again, &e) : -1;
		free(s);
		if (rc != 0) {
			sbx_cassette_exchange_free(&again);
			return ctl_fail(m->ctx, "%s (after the merge: the other cassette redacts that query parameter; "
						"prune these lines or record them again with --internet-redact-query)",
					e.msg[0] != '\0' ? e.msg : "out of memory");
		}
		sbx_cassette_exchange_free(&cas->ex[i]);
		cas->ex[i] = again;
	}
	if (cas->nex > 1)
		qsort(cas->ex, cas->nex, sizeof *cas->ex, cmp_rekeyed);
	for (size_t i = 0; i < cas->nex; i++) {
		sbx_cassette_exchange *x = &cas->ex[i];
		unsigned long n = i > 0 && sbx_cassette_compare_key(&cas->ex[i - 1], x) == 0 ? cas->ex[i - 1].n + 1 : 1;

		if (n != x->n) {
			x->n = n;
			cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(x->obj, "n"), (double)n);
		}
	}
	return CTL_EXIT_OK;
}

/* ---- bodies ---- */

static int copy_file(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
	char buf[65536];
	if (in < 0 || (out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0)
		goto out_close;
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n > 0 && sbx_write_all(out, buf, (size_t)n) != 0))
			goto out_close;
		if (n == 0)
			break;
	}
	rc = fsync(out);
out_close:
	sbx_close_fd(&in);
	sbx_close_fd(&out);
	return rc;
}

/* A body of cassette `from` into the new cassette at tmp: a hard link, or
 * a copy across filesystems. */
static int place_body(merge_run *m, const char *tmp, int from, const char *sha)
{
	sbx_strbuf src = SBX_STRBUF_INIT, dst = SBX_STRBUF_INIT;
	int rc = 0;
	sbx_cassette_body_path(&src, m->dir[from], sha);
	sbx_strbuf_printf(&dst, "%s/%s/%.2s", tmp, SBX_CASSETTE_BODIES, sha);
	if (mkdir(sbx_strbuf_str(&dst), 0755) != 0 && errno != EEXIST)
		rc = -1;
	sbx_strbuf_printf(&dst, "/%s", sha);
	if (rc == 0 && link(sbx_strbuf_str(&src), sbx_strbuf_str(&dst)) == 0) {
		m->linked++;
	} else if (rc == 0 && errno != EEXIST) {
		rc = errno == EXDEV || errno == EPERM || errno == EMLINK || errno == ENOTSUP
			     ? copy_file(sbx_strbuf_str(&src), sbx_strbuf_str(&dst)) : -1;
		m->copied += rc == 0 ? 1 : 0;
	}
	if (rc != 0)
		ctl_fail(m->ctx, "%s -> %s: %s", sbx_strbuf_str(&src), sbx_strbuf_str(&dst), strerror(errno));
	sbx_strbuf_free(&src);
	sbx_strbuf_free(&dst);
	return rc;
}

static int place_bodies(merge_run *m, const char *tmp)
{
	sbx_strbuf b = SBX_STRBUF_INIT;
	sbx_strbuf_printf(&b, "%s/%s", tmp, SBX_CASSETTE_BODIES);
	int rc = mkdir(sbx_strbuf_str(&b), 0755);
	if (rc != 0)
		ctl_fail(m->ctx, "%s: %s", sbx_strbuf_str(&b), strerror(errno));
	sbx_strbuf_free(&b);
	const sbx_cassette_exchange *all = m->out.ex;
	const int *from = m->from;
	for (size_t i = 0, n = m->out.nex; rc == 0 && i < n; i++) {
		rc = place_body(m, tmp, from[i], all[i].body.sha256);
		if (rc == 0 && all[i].has_request_body)
			rc = place_body(m, tmp, from[i], all[i].request_body.sha256);
	}
	return rc; // NOLINT(clang-analyzer-unix.Malloc): m->out.ex is freed by ctl_cmd_cassette_merge
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* ---- the command ---- */

/* DIR may be nothing or an empty folder (rename(2) replaces one). */
static bool out_usable(const char *out)
{
	DIR *d = opendir(out);
	if (d == NULL)
		return errno == ENOENT;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n == 0;
}

static int build(merge_run *m, const char *out)
{
	char rnd[13] = "";
	sbx_strbuf tmp = SBX_STRBUF_INIT;
	sbx_err e = {""};
	int rc = CTL_EXIT_FAIL;
	if (sbx_random_hex(rnd, 12) != 0)
		snprintf(rnd, sizeof rnd, "%ld", (long)getpid());
	sbx_strbuf_printf(&tmp, "%s.merge-tmp-%s", out, rnd);
	if (mkdir(sbx_strbuf_str(&tmp), 0755) != 0) {
		rc = ctl_fail(m->ctx, "%s: %s", sbx_strbuf_str(&tmp), strerror(errno));
		goto out_free;
	}
	if (place_bodies(m, sbx_strbuf_str(&tmp)) != 0)
		goto out_remove;
	/* The write sorts out.ex (already in order), after the last use of from[]. */
	if (sbx_cassette_write(sbx_strbuf_str(&tmp), &m->out, &e) != 0) {
		rc = ctl_fail(m->ctx, "%s", e.msg);
		goto out_remove;
	}
	if (rename(sbx_strbuf_str(&tmp), out) != 0) {
		rc = ctl_fail(m->ctx, "%s -> %s: %s", sbx_strbuf_str(&tmp), out, strerror(errno));
		goto out_remove;
	}
	rc = CTL_EXIT_OK;
	goto out_free;
out_remove:
	nftw(sbx_strbuf_str(&tmp), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
out_free:
	sbx_strbuf_free(&tmp);
	return rc;
}

static void summary(merge_run *m, const char *out, unsigned long offset)
{
	size_t nb = m->linked + m->copied;
	if (m->json != NULL) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "cassette", out);
		cJSON_AddNumberToObject(o, "exchanges", (double)m->out.nex);
		cJSON_AddItemToObject(o, "conflicts", m->json);
		cJSON_AddNumberToObject(o, "bodies_linked", (double)m->linked);
		cJSON_AddNumberToObject(o, "bodies_copied", (double)m->copied);
		cJSON_AddNumberToObject(o, "token_offset", (double)offset);
		ctl_print_json(m->ctx->out, o);
		m->json = NULL;
		cJSON_Delete(o);
		return;
	}
	fprintf(m->ctx->out, "merged %s (%zu) and %s (%zu) into %s: %zu exchanges, %zu conflict%s (%s's kept); "
			     "%zu bod%s (%zu linked, %zu copied)\n", m->dir[0], m->cas[0].nex, m->dir[1], m->cas[1].nex,
		out, m->out.nex, m->conflicts, m->conflicts == 1 ? "" : "s", m->dir[0], nb, nb == 1 ? "y" : "ies",
		m->linked, m->copied);
	if (offset > 0 && sbx_cassette_max_token(&m->cas[1]) > offset)
		fprintf(m->ctx->out, "%s's redaction tokens renumbered: redacted-N became redacted-(N+%lu)\n",
			m->dir[1], offset);
}

int ctl_cmd_cassette_merge(ctl_ctx *ctx)
{
	const char *out = ctl_args_get(&ctx->args, "out");
	if (out == NULL || out[0] == '\0')
		return ctl_usage_error(ctx, "--out DIR is required: merge writes a new cassette");
	merge_run m = {.ctx = ctx, .dir = {ctx->args.pos[0], ctx->args.pos[1]}};
	sbx_cassette_problems probs = {SBX_STRBUF_INIT, 0, false};
	int rc = CTL_EXIT_FAIL;
	if (!out_usable(out)) {
		rc = ctl_fail(ctx, "--out %s exists and is not an empty folder (merge writes a new cassette)", out);
		goto out_free;
	}
	for (int c = 0; c < 2; c++) {
		if (sbx_cassette_load(m.dir[c], SBX_CASSETTE_BODY_HASHES, &m.cas[c], &probs, NULL) != 0) {
			rc = ctl_cassette_refuse(ctx, m.dir[c], &probs);
			goto out_free;
		}
	}
	unsigned long offset = sbx_cassette_max_token(&m.cas[0]);
	for (size_t i = 0; i < m.cas[1].nex; i++) {
		if (sbx_cassette_renumber(&m.cas[1].ex[i], &m.cas[1], offset) != 0) {
			rc = ctl_fail(ctx, "out of memory");
			goto out_free;
		}
	}
	m.json = ctx->json ? cJSON_CreateArray() : NULL;
	if (unite_names(&m) != 0) {
		rc = ctl_fail(ctx, "out of memory");
		goto out_free;
	}
	rc = rekey(&m, 0);
	if (rc == CTL_EXIT_OK)
		rc = rekey(&m, 1);
	if (rc != CTL_EXIT_OK)
		goto out_free;
	if (unite_exchanges(&m) != 0) {
		rc = ctl_fail(ctx, "out of memory");
		goto out_free;
	}
	rc = build(&m, out);
	if (rc == CTL_EXIT_OK)
		summary(&m, out, offset);
out_free:
	cJSON_Delete(m.json);
	free(m.out.ex);
	free(m.out.redacted_query);
	free(m.from);
	sbx_cassette_problems_free(&probs);
	sbx_cassette_free(&m.cas[0]);
	sbx_cassette_free(&m.cas[1]);
	return rc;
}

/* fz_check_surface: the invariants of the component, executor and
 * fork_check sessions (fz_session.c), beside fz_check.c's (which also
 * apply: protocol, fallback, cleanup of lf- and lf-x- guests, results).
 * Each is judged only where no harmful fault fired in the call's journal
 * window, so a correct backend (the reference) never breaks one:
 *
 *   5 reuse:  a reuse guest the harness paused is resumed (the run succeeds
 *             on the same guest, a resume is in the journal, no new create:
 *             COMP-003); one whose egress drifted is refused with
 *             SandboxUnavailableError before any exec in it (COMP-004); a
 *             reuse guest is never deleted; every reuse run of the session
 *             names the same guest (COMP-002)
 *   6 files:  Return Files returns at most 256 files and 5 MiB in all, or
 *             raises (COMP-006); three small files come back with their
 *             paths and sizes
 *   7 fork:   fork_check's child runs (after reset_after_fork) in another
 *             process, on connections of its own: none of its requests on
 *             a connection the parent opened before the fork (CON-002) */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "fz.h"

#define FILES_MAX_COUNT 256
#define FILES_MAX_BYTES (5.0 * 1024 * 1024)

typedef void (*broken_fn)(const struct fz_input *, const struct fz_outcome *, const char *, const char *, ...)
	__attribute__((format(printf, 4, 5)));

static bool by_backend(const cJSON *e)
{
	return !cf_journal_by_harness(e);
}

/* Faults (other than latency / a fast dribble) fired in [lo, hi), the
 * harness's own requests included: they may have changed the guest. */
static bool disturbed(const cJSON *j, int lo, int hi)
{
	int i;

	for (i = lo; i < hi; i++) {
		const char *f = cf_str(cJSON_GetArrayItem(j, i), "fault");
		const char *k = f != NULL && strchr(f, ':') != NULL ? strchr(f, ':') + 1 : f;

		if (k != NULL && !fz_kind_benign(k))
			return true;
	}
	return false;
}

int fz_journal_count(const cJSON *j, int lo, int hi, const char *method, const char *pattern, int slo, int shi)
{
	cJSON *part = cJSON_CreateArray();
	int i, n;

	for (i = lo; i < hi; i++)
		cJSON_AddItemReferenceToArray(part, cJSON_GetArrayItem(j, i));
	n = cf_journal_count(part, method, pattern, slo, shi);
	cJSON_Delete(part);
	return n;
}

static const char *guest_name(const cJSON *res)
{
	return cf_str(res, "guest_name") != NULL ? cf_str(res, "guest_name") : "";
}

static void check_reuse(const struct fz_input *in, const struct fz_outcome *o, unsigned r, broken_fn broken)
{
	const struct fz_run_out *ro = &o->runs[r];
	const cJSON *j = o->journal;

	if (!ro->acted || disturbed(j, ro->j_lo, ro->j_hi))
		return;
	if (ro->acted_kind == FZ_BETWEEN_PAUSE) {
		if (ro->result == NULL)
			broken(in, o, "5 reuse", "component run %u: the harness paused the reuse guest %s and the run "
			       "raised %s (a paused reuse guest must be resumed, COMP-003): %s", r, ro->acted_on,
			       ro->etype, ro->emsg);
		if (strcmp(guest_name(ro->result), ro->acted_on) != 0)
			broken(in, o, "5 reuse", "component run %u ran in guest %s instead of resuming the paused "
			       "reuse guest %s", r, guest_name(ro->result), ro->acted_on);
		if (fz_journal_count(j, ro->j_op, ro->j_hi, "POST", "/v1/sandboxes/{id}/resume", 200, 299) < 1)
			broken(in, o, "5 reuse", "component run %u used the paused reuse guest %s without resuming it "
			       "(no resume in the journal)", r, ro->acted_on);
		return;
	}
	if (ro->result != NULL)
		broken(in, o, "5 reuse", "component run %u: the reuse guest %s's egress drifted to [10.0.0.0/8], yet "
		       "it was reused (exit %g); it must be refused (COMP-004)", r, ro->acted_on,
		       cf_num(ro->result, "exit_code", 0));
	if (strcmp(ro->etype, "SandboxUnavailableError") != 0)
		broken(in, o, "5 reuse", "component run %u: the drifted reuse guest was refused with %s, not "
		       "SandboxUnavailableError: %s", r, ro->etype, ro->emsg);
	if (fz_journal_count(j, ro->j_op, ro->j_hi, "POST", "/v1/sandboxes/{id}/exec", 0, 999) > 0)
		broken(in, o, "5 reuse", "component run %u: refused the drifted reuse guest only after executing "
		       "in it", r);
}

/* Reuse guests are never deleted, and a session names one reuse guest. */
static void check_reuse_guest(const struct fz_input *in, const struct fz_outcome *o, broken_fn broken)
{
	const char *first = NULL;
	const cJSON *sb, *e;
	unsigned r;

	for (r = 0; r < in->nruns; r++) {
		const struct fz_run_out *ro = &o->runs[r];

		if (!in->runs[r].reuse || ro->result == NULL)
			continue;
		if (first == NULL)
			first = guest_name(ro->result);
		else if (strcmp(first, guest_name(ro->result)) != 0)
			broken(in, o, "5 reuse", "two reuse runs of one flow and component used guests %s and %s", first,
			       guest_name(ro->result));
	}
	cJSON_ArrayForEach(sb, o->sandboxes) {
		const char *id = cf_str(sb, "id"), *name = cf_str(sb, "name");

		if (id == NULL || name == NULL || strncmp(name, "lf-c-", 5) != 0)
			continue;
		cJSON_ArrayForEach(e, o->journal) {
			const char *p = cf_str(e, "path"), *m = cf_str(e, "method");

			if (by_backend(e) && p != NULL && m != NULL && strcmp(m, "DELETE") == 0 &&
			    strncmp(p, "/v1/sandboxes/", 14) == 0 && strcmp(p + 14, id) == 0)
				broken(in, o, "5 reuse", "the backend deleted the reuse guest %s (%s); it must never "
				       "delete one", id, name);
		}
	}
}

static void check_files(const struct fz_input *in, const struct fz_outcome *o, unsigned r, broken_fn broken)
{
	const struct fz_run_out *ro = &o->runs[r];
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(ro->result, "files");
	const cJSON *f;
	double total = 0;
	unsigned i;

	if (ro->result == NULL || in->runs[r].files == FZ_FILES_NONE)
		return;
	cJSON_ArrayForEach(f, files)
		total += cf_num(f, "size", 0);
	if (cJSON_GetArraySize(files) > FILES_MAX_COUNT)
		broken(in, o, "6 files", "component run %u returned %d files; Return Files is capped at %d (or the "
		       "run raises)", r, cJSON_GetArraySize(files), FILES_MAX_COUNT);
	if (total > FILES_MAX_BYTES)
		broken(in, o, "6 files", "component run %u returned %.0f bytes of files; Return Files is capped at "
		       "5 MiB (or the run raises)", r, total);
	if (in->runs[r].files != FZ_FILES_FEW || disturbed(o->journal, ro->j_lo, ro->j_hi))
		return;
	for (i = 0; i < 3; i++) {
		char name[32];
		char *data = NULL;
		size_t len = 0;
		bool found = false;

		(void)fz_artifact(in, r, i, name, &data, &len);
		free(data);
		cJSON_ArrayForEach(f, files)
			if (cf_str(f, "path") != NULL && strcmp(cf_str(f, "path"), name) == 0 &&
			    cf_num(f, "size", -1) == (double)len)
				found = true;
		if (!found)
			broken(in, o, "6 files", "component run %u: Return Files lacks %s (%zu bytes) that the code wrote",
			       r, name, len);
	}
}

/* The first connection serial backend requests in [from, to) share with
 * backend requests in [0, from), 0 when none. */
static double shared_connection(const cJSON *j, int from, int to)
{
	int i, k;

	for (i = from; i < to; i++) {
		const cJSON *e = cJSON_GetArrayItem(j, i);
		double ci = cf_num(e, "conn", 0);

		for (k = 0; ci > 0 && by_backend(e) && k < from; k++) {
			const cJSON *p = cJSON_GetArrayItem(j, k);

			if (by_backend(p) && cf_num(p, "conn", 0) == ci)
				return ci;
		}
	}
	return 0;
}

static void check_fork(const struct fz_input *in, const struct fz_outcome *o, unsigned r, broken_fn broken)
{
	const struct fz_run_out *ro = &o->runs[r];
	double conn;

	if (disturbed(o->journal, ro->j_lo, ro->j_hi))
		return;
	if (ro->result != NULL && ro->child_pid == o->driver_pid)
		broken(in, o, "7 fork", "fork_check's child reported pid %.0f, the driver's own: it did not fork",
		       ro->child_pid);
	conn = shared_connection(o->journal, ro->j_op, ro->j_hi);
	if (conn > 0)
		broken(in, o, "7 fork", "fork_check's child sent requests over connection %.0f, which its parent "
		       "opened before the fork (reset_after_fork must drop inherited connections, CON-002)", conn);
}

void fz_check_surface(const struct fz_input *in, const struct fz_outcome *o, broken_fn broken)
{
	unsigned r;

	for (r = 0; r < in->nruns; r++) {
		if (!o->runs[r].served || o->runs[r].broken)
			continue;
		if (in->surface == FZ_SURF_COMPONENT) {
			check_reuse(in, o, r, broken);
			check_files(in, o, r, broken);
		}
		if (in->surface == FZ_SURF_FORK && r == fz_fork_index(in))
			check_fork(in, o, r, broken);
	}
	if (in->surface == FZ_SURF_COMPONENT)
		check_reuse_guest(in, o, broken);
}

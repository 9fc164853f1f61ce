/* runner: the case lifecycle (fresh tenant, check body, cleanup verdict, LIFO
 * teardown), the parallel scheduler and the JSON report (schema v1, see
 * conformance/README.md).
 *
 * Must never let a case leak into another: every case has its own API key,
 * its fault rules are scoped to that key and deleted at teardown, and every
 * guest the tenant still holds is destroyed before the case ends. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"
#include "report.h"
#include "spec_clauses.h"

#ifndef SBX_CONFORM_FIXTURES_DIR
#define SBX_CONFORM_FIXTURES_DIR "fixtures"
#endif

/* The spec's text for a check id (an exact row, else its family's), or NULL. */
static const char *clause_text(const char *id)
{
	size_t i;

	for (i = 0; CF_SPEC_CLAUSES[i].id != NULL; i++)
		if (strcmp(CF_SPEC_CLAUSES[i].id, id) == 0)
			return CF_SPEC_CLAUSES[i].text;
	for (i = 0; CF_SPEC_CLAUSES[i].id != NULL; i++) {
		size_t n = strlen(CF_SPEC_CLAUSES[i].id);

		if (n > 0 && CF_SPEC_CLAUSES[i].id[n - 1] == '-' && strncmp(CF_SPEC_CLAUSES[i].id, id, n) == 0)
			return CF_SPEC_CLAUSES[i].text;
	}
	return NULL;
}

static void add_quoted(sbx_strbuf *b, const char *opt, const char *value)
{
	char *q = cf_shell_quote(value);

	sbx_strbuf_printf(b, " %s %s", opt, q);
	free(q);
}

/* The options that repeat this run's setup (the backend driver, the control
 * plane, the seed and scale); a check's re-run adds --host-cmd for host-gate,
 * --profile and --filter. The mock's admin token is never printed
 * (SBX_MOCK_ADMIN_TOKEN carries it). */
static char *rerun_base(const struct cf_config *cf)
{
	sbx_strbuf b = SBX_STRBUF_INIT;

	sbx_strbuf_puts(&b, "sbx-conform");
	if (!cf->bundled_backend && cf->backend_cmd != NULL)
		add_quoted(&b, "--backend-cmd", cf->backend_cmd);
	if (cf->kind == CF_EXTERNAL_MOCK)
		add_quoted(&b, "--mock-url", cf->url);
	else if (cf->kind == CF_REAL)
		add_quoted(&b, "--api-url", cf->url);
	if (cf->fixtures_dir != NULL && strcmp(cf->fixtures_dir, SBX_CONFORM_FIXTURES_DIR) != 0)
		add_quoted(&b, "--fixtures", cf->fixtures_dir);
	if (cf->fuzz_case != NULL)
		add_quoted(&b, "--fuzz-case", cf->fuzz_case);
	if (cf->seed != 1)
		sbx_strbuf_printf(&b, " --seed %lu", cf->seed);
	if (cf->timeout_scale != 1.0)
		sbx_strbuf_printf(&b, " --timeout-scale %g", cf->timeout_scale);
	return sbx_strbuf_detach(&b, NULL);
}

/* ---- one case ---- */

void cf_case_init(struct cf_case *c, struct cf_config *cf, const struct cf_check *def, const char *profile)
{
	unsigned n;
	char tok[40];

	memset(c, 0, sizeof(*c));
	c->cf = cf;
	c->def = def;
	c->profile = profile;
	pthread_mutex_lock(&cf->lock);
	n = ++cf->next_tenant;
	pthread_mutex_unlock(&cf->lock);
	cf_random_token(c, tok, sizeof(tok));
	snprintf(c->key, sizeof(c->key), "cf-%lu-%u-%s", cf->seed, n, tok + 4);
	snprintf(c->trip, sizeof(c->trip), "%s/trip-%s", cf->tmpdir, c->key);
	snprintf(c->verdict, sizeof(c->verdict), "pass");
	snprintf(c->cleanup_verdict, sizeof(c->cleanup_verdict), "pass");
	sbx_strbuf_init(&c->reason);
	sbx_strbuf_init(&c->cleanup_reason);
	sbx_strbuf_init(&c->driver_stderr);
	c->details = cJSON_CreateArray();
	c->fault_ids = cJSON_CreateArray();
	c->allowed_leftover = cJSON_CreateArray();
	c->leftover = cJSON_CreateArray();
}

void cf_case_free(struct cf_case *c)
{
	sbx_strbuf_free(&c->reason);
	sbx_strbuf_free(&c->cleanup_reason);
	sbx_strbuf_free(&c->driver_stderr);
	cJSON_Delete(c->details);
	cJSON_Delete(c->fault_ids);
	cJSON_Delete(c->allowed_leftover);
	cJSON_Delete(c->leftover);
	cJSON_Delete(c->journal);
}

static void cleanup_fail(struct cf_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cleanup_fail(struct cf_case *c, const char *fmt, ...)
{
	va_list ap;

	snprintf(c->cleanup_verdict, sizeof(c->cleanup_verdict), "fail");
	if (c->cleanup_reason.len > 0)
		sbx_strbuf_puts(&c->cleanup_reason, "; ");
	va_start(ap, fmt);
	sbx_strbuf_vprintf(&c->cleanup_reason, fmt, ap);
	va_end(ap);
}

/* The separate cleanup verdict: no live guest the check did not expect. */
static void cleanup_verdict(struct cf_case *c)
{
	sbx_strbuf names = SBX_STRBUF_INIT;
	cJSON *sbs;
	const cJSON *sb;

	if (strcmp(c->verdict, "skip") == 0 && c->driver_count == 0) {
		snprintf(c->cleanup_verdict, sizeof(c->cleanup_verdict), "skip");
		sbx_strbuf_puts(&c->cleanup_reason, "the check did not run");
		return;
	}
	if (c->cf->kind == CF_REAL) {
		snprintf(c->cleanup_verdict, sizeof(c->cleanup_verdict), "skip");
		sbx_strbuf_puts(&c->cleanup_reason, "--api-url mode: the tenant is shared, guests are not attributable");
		return;
	}
	sbs = cf_sandboxes(c);
	if (sbs == NULL)
		return;
	if (cf_live_guests(c, sbs, &names) > 0) {
		cleanup_fail(c, "guests left in a non-terminal state: %s", sbx_strbuf_str(&names));
		cJSON_ArrayForEach(sb, sbs)
			if (cf_status_live(cf_str(sb, "status")) && !cf_leftover_allowed(c, sb))
				cJSON_AddItemToArray(c->leftover, cJSON_CreateString(cf_str(sb, "id")));
	}
	sbx_strbuf_free(&names);
	cJSON_Delete(sbs);
}

/* LIFO teardown: fault rules first (so deletes go through), then every live
 * guest of the tenant, newest first. */
static void teardown(struct cf_case *c)
{
	const cJSON *id;
	cJSON *sbs;
	int i;

	cJSON_ArrayForEach(id, c->fault_ids) {
		char path[96];
		sbx_err err = {{0}};
		cJSON *d;

		snprintf(path, sizeof(path), "/_mock/faults/%d", id->valueint);
		d = cf_admin(c->cf, "DELETE", path, NULL, &err);
		cJSON_Delete(d);
	}
	if (c->cf->kind == CF_REAL)
		return;
	sbs = cf_sandboxes(c);
	for (i = cJSON_GetArraySize(sbs) - 1; i >= 0; i--) {
		const cJSON *sb = cJSON_GetArrayItem(sbs, i);
		char path[128];
		sbx_err err = {{0}};
		cJSON *d;

		if (!cf_status_live(cf_str(sb, "status")))
			continue;
		snprintf(path, sizeof(path), "/v1/sandboxes/%s", cf_str(sb, "id"));
		d = cf_api(c, "DELETE", path, NULL, NULL, &err);
		if (d == NULL)
			cleanup_fail(c, "teardown could not destroy %s: %s", cf_str(sb, "id"), err.msg);
		cJSON_Delete(d);
	}
	cJSON_Delete(sbs);
}

static bool needs_skip(struct cf_case *c)
{
	if (c->cf->kind == CF_REAL && (c->def->flags & (CK_ADMIN | CK_FAULTS))) {
		cf_skip(c, "--api-url mode: this check needs the mock's %s",
			(c->def->flags & CK_FAULTS) ? "fault injection" : "journal and admin API");
		return true;
	}
	return false;
}

static cJSON *case_report(struct cf_case *c)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *cl, *ev;
	char clause[96];

	cJSON_AddStringToObject(o, "id", c->def->id);
	cJSON_AddStringToObject(o, "profile", c->profile);
	cJSON_AddStringToObject(o, "area", c->def->area);
	cJSON_AddStringToObject(o, "title", c->def->title);
	snprintf(clause, sizeof(clause), "backend-conformance.md#checks %s", c->def->id);
	cJSON_AddStringToObject(o, "clause", clause);
	if (clause_text(c->def->id) != NULL)
		cJSON_AddStringToObject(o, "clause_text", clause_text(c->def->id));
	if (c->cf->rerun != NULL) {
		sbx_strbuf rr = SBX_STRBUF_INIT;

		sbx_strbuf_puts(&rr, c->cf->rerun);
		if (strcmp(c->profile, "host-gate") == 0 && c->cf->host_cmd != NULL)
			add_quoted(&rr, "--host-cmd", c->cf->host_cmd);
		sbx_strbuf_printf(&rr, " --profile %s --filter %s", c->profile, c->def->id);
		cJSON_AddStringToObject(o, "rerun", sbx_strbuf_str(&rr));
		sbx_strbuf_free(&rr);
	}
	cJSON_AddStringToObject(o, "verdict", c->verdict);
	if (c->reason.len > 0)
		cJSON_AddStringToObject(o, "reason", sbx_strbuf_str(&c->reason));
	else if (strcmp(c->verdict, "pass") != 0)
		cJSON_AddStringToObject(o, "reason", "(no reason recorded)");
	cJSON_AddBoolToObject(o, "advisory", c->def->advisory);
	cl = cJSON_AddObjectToObject(o, "cleanup");
	cJSON_AddStringToObject(cl, "verdict", c->cleanup_verdict);
	if (c->cleanup_reason.len > 0)
		cJSON_AddStringToObject(cl, "reason", sbx_strbuf_str(&c->cleanup_reason));
	cJSON_AddItemToObject(cl, "leftover", c->leftover);
	c->leftover = NULL;
	cJSON_AddNumberToObject(o, "duration_ms", (double)(long)c->duration_ms);
	ev = cJSON_AddObjectToObject(o, "evidence");
	cJSON_AddItemToObject(ev, "journal", c->journal ? c->journal : cJSON_CreateArray());
	c->journal = NULL;
	cJSON_AddStringToObject(ev, "driver_stderr", sbx_strbuf_str(&c->driver_stderr));
	cJSON_AddItemToObject(ev, "details", c->details);
	c->details = NULL;
	cJSON_AddStringToObject(ev, "tenant", c->key);
	return o;
}

/* A case's drivers timed out (1), all answered (0), or none ran (-1). */
static int case_timed_out(const struct cf_case *c)
{
	size_t i;

	for (i = 0; i < c->driver_count; i++)
		if (cf_driver_timed_out(c->drivers[i]))
			return 1;
	return c->driver_count > 0 ? 0 : -1;
}

static cJSON *run_case(struct cf_config *cf, const struct cf_pick *pick, int *timed_out)
{
	struct cf_case c;
	cJSON *rep;
	size_t i;

	cf_case_init(&c, cf, pick->check, pick->profile);
	c.started_ms = cf_now_ms();
	if (!needs_skip(&c))
		pick->check->fn(&c);
	if (!c.cleanup_skip)
		cleanup_verdict(&c);
	for (i = 0; i < c.driver_count; i++)
		cf_driver_stop(c.drivers[i]);
	teardown(&c);
	if (cf->kind != CF_REAL && c.driver_count > 0 && (cf_failed(&c) || strcmp(c.cleanup_verdict, "fail") == 0)) {
		cJSON *j = cf_journal(&c);

		if (j != NULL)
			cf_keep_journal(&c, j);
	}
	*timed_out = case_timed_out(&c);
	for (i = 0; i < c.driver_count; i++)
		cf_driver_free(c.drivers[i]);
	unlink(c.trip);
	c.duration_ms = cf_now_ms() - c.started_ms;
	rep = case_report(&c);
	cf_case_free(&c);
	return rep;
}

/* The report row of a case not run because the driver kept timing out. */
static cJSON *not_run_case(struct cf_config *cf, const struct cf_pick *pick, const char *why)
{
	struct cf_case c;
	cJSON *rep;

	cf_case_init(&c, cf, pick->check, pick->profile);
	cf_error(&c, "not run: %s", why);
	snprintf(c.cleanup_verdict, sizeof(c.cleanup_verdict), "skip");
	sbx_strbuf_puts(&c.cleanup_reason, "the check did not run");
	rep = case_report(&c);
	cf_case_free(&c);
	return rep;
}

/* ---- scheduling ---- */

struct sched {
	struct cf_config *cf;
	const struct cf_pick *sel;
	cJSON **results;
	size_t n;
	size_t next;
	pthread_mutex_t lock;
	/* fail-fast: cases in a row (in completion order) whose driver timed
	 * out; at cf->max_timeouts the cases not yet started are not run */
	unsigned streak;
	char streak_ids[200];
	char gave_up[400];
};

static void progress(struct cf_config *cf, const char *id, const char *verdict)
{
	const char *col = "";
	const char *end = "";

	pthread_mutex_lock(&cf->lock);
	cf->done++;
	if (cf->progress) {
		if (cf->color) {
			col = strcmp(verdict, "pass") == 0 ? "\033[32m" : strcmp(verdict, "skip") == 0 ? "\033[33m" : "\033[31m";
			end = "\033[0m";
		}
		fprintf(stderr, "\r\033[K[%u/%u] %s %s%s%s", cf->done, cf->total, id, col, verdict, end);
		if (cf->done == cf->total)
			fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	pthread_mutex_unlock(&cf->lock);
}

/* Counts a finished case into the timeout streak (under s->lock). A driver
 * that hangs on every request would otherwise make a run take the timeout
 * times the number of checks (7 minutes for one suite). */
static void count_timeout(struct sched *s, const char *id, int timed_out)
{
	size_t used = strlen(s->streak_ids);

	if (timed_out < 0 || s->gave_up[0] != '\0')
		return;
	if (timed_out == 0) {
		s->streak = 0;
		s->streak_ids[0] = '\0';
		return;
	}
	s->streak++;
	snprintf(s->streak_ids + used, sizeof(s->streak_ids) - used, "%s%s", used > 0 ? ", " : "", id);
	if (s->cf->max_timeouts > 0 && s->streak >= s->cf->max_timeouts)
		snprintf(s->gave_up, sizeof(s->gave_up),
			 "the driver did not answer in time in %u checks in a row (%s); the run stopped early "
			 "(--max-timeouts %u; raise it or --timeout-scale for a slow backend)",
			 s->streak, s->streak_ids, s->cf->max_timeouts);
}

static void *worker(void *arg)
{
	struct sched *s = arg;

	for (;;) {
		char why[sizeof(s->gave_up)];
		int timed_out = -1;
		size_t i;
		cJSON *r;

		pthread_mutex_lock(&s->lock);
		i = s->next++;
		snprintf(why, sizeof(why), "%s", s->gave_up);
		pthread_mutex_unlock(&s->lock);
		if (i >= s->n)
			return NULL;
		if (why[0] != '\0')
			r = not_run_case(s->cf, &s->sel[i], why);
		else
			r = run_case(s->cf, &s->sel[i], &timed_out);
		pthread_mutex_lock(&s->lock);
		count_timeout(s, s->sel[i].check->id, timed_out);
		pthread_mutex_unlock(&s->lock);
		s->results[i] = r;
		progress(s->cf, s->sel[i].check->id, cf_str(r, "verdict"));
	}
}

static void rfc3339_now(char *out, size_t cap)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

cJSON *cf_report_summary(const cJSON *checks)
{
	cJSON *s = cJSON_CreateObject();
	const cJSON *k;
	int total = 0, pass = 0, fail = 0, skip = 0, error = 0, cfail = 0;

	cJSON_ArrayForEach(k, checks) {
		const char *v = cf_str(k, "verdict") ? cf_str(k, "verdict") : "";
		const char *cv = cf_str(cJSON_GetObjectItemCaseSensitive(k, "cleanup"), "verdict");

		total++;
		if (strcmp(v, "pass") == 0)
			pass++;
		else if (strcmp(v, "fail") == 0)
			fail++;
		else if (strcmp(v, "skip") == 0)
			skip++;
		else
			error++;
		if (cv != NULL && strcmp(cv, "fail") == 0)
			cfail++;
	}
	cJSON_AddNumberToObject(s, "total", total);
	cJSON_AddNumberToObject(s, "pass", pass);
	cJSON_AddNumberToObject(s, "fail", fail);
	cJSON_AddNumberToObject(s, "skip", skip);
	cJSON_AddNumberToObject(s, "error", error);
	cJSON_AddNumberToObject(s, "cleanup_fail", cfail);
	return s;
}

int cf_run_all(struct cf_config *cf, cJSON **report, sbx_err *err)
{
	struct cf_pick sel[512];
	cJSON *results[512] = {0};
	struct sched s;
	pthread_t th[32];
	unsigned nth, i;
	double t0 = cf_now_ms();
	char started[40];
	cJSON *r, *b, *cp, *profs, *sh, *checks;
	size_t n = cf_selection(cf, sel, 512);

	rfc3339_now(started, sizeof(started));
	cf->total = (unsigned)n;
	cf->rerun = rerun_base(cf);
	s = (struct sched){cf, sel, results, n, 0, PTHREAD_MUTEX_INITIALIZER, 0, "", ""};
	nth = cf->jobs < 1 ? 1 : (cf->jobs > 32 ? 32 : cf->jobs);
	if (nth > n)
		nth = n ? (unsigned)n : 1;
	for (i = 0; i < nth; i++)
		if (pthread_create(&th[i], NULL, worker, &s) != 0) {
			sbx_err_set(err, "cannot start worker thread");
			nth = i;
			break;
		}
	for (i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "schema", 1);
	cJSON_AddStringToObject(r, "tool", "sbx-conform");
	cJSON_AddStringToObject(r, "version", SBX_CONFORM_VERSION);
	cJSON_AddStringToObject(r, "started_at", started);
	cJSON_AddNumberToObject(r, "duration_ms", (double)(long)(cf_now_ms() - t0));
	cJSON_AddNumberToObject(r, "seed", (double)cf->seed);
	cJSON_AddNumberToObject(r, "timeout_scale", cf->timeout_scale);
	b = cJSON_AddObjectToObject(r, "backend");
	cJSON_AddStringToObject(b, "command", cf->profile_count == 1 && strcmp(cf->profiles[0], "host-gate") == 0 &&
						      cf->host_cmd != NULL ? cf->host_cmd : cf->backend_cmd);
	cJSON_AddStringToObject(b, "name", cf->driver_name);
	cJSON_AddStringToObject(b, "driver", cf->driver_impl);
	if (cf->python != NULL)
		cJSON_AddStringToObject(b, "python", cf->python);
	cJSON_AddItemToObject(b, "capabilities", cf->capabilities ? cJSON_Duplicate(cf->capabilities, true)
							       : cJSON_CreateNull());
	cp = cJSON_AddObjectToObject(r, "control_plane");
	cJSON_AddStringToObject(cp, "url", cf->url);
	cJSON_AddStringToObject(cp, "kind", cf->kind == CF_EMBEDDED_MOCK ? "embedded-mock"
					    : cf->kind == CF_EXTERNAL_MOCK ? "external-mock" : "real");
	if (cf->guests_root[0] != '\0')
		cJSON_AddStringToObject(cp, "guests_root", cf->guests_root);
	profs = cJSON_AddArrayToObject(r, "profiles");
	for (i = 0; i < cf->profile_count; i++)
		cJSON_AddItemToArray(profs, cJSON_CreateString(cf->profiles[i]));
	sh = cJSON_AddObjectToObject(r, "shard");
	cJSON_AddNumberToObject(sh, "index", cf->shard_count > 1 ? cf->shard_index : 1);
	cJSON_AddNumberToObject(sh, "count", cf->shard_count > 1 ? cf->shard_count : 1);
	checks = cJSON_CreateArray();
	for (i = 0; i < n; i++)
		if (results[i] != NULL)
			cJSON_AddItemToArray(checks, results[i]);
	cJSON_AddItemToObject(r, "summary", cf_report_summary(checks));
	cJSON_AddItemToObject(r, "checks", checks);
	free(cf->rerun);
	cf->rerun = NULL;
	*report = r;
	return err->msg[0] ? -1 : 0;
}

/* Says on stderr why a run that judged nothing exits 2, with the first
 * skip reason (usually "surface not served: ..."). */
static void say_nothing_checked(const cJSON *report, const struct sbx_report_totals *t)
{
	const cJSON *k = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(report, "checks"), 0);

	if (t->total == 0) {
		fprintf(stderr, "sbx-conform: nothing was checked: the report has no checks\n");
		return;
	}
	fprintf(stderr, "sbx-conform: nothing was checked: all %d selected check%s skipped (%s: %s); "
		"a run that judges nothing is not a pass\n", t->total, t->total == 1 ? " was" : "s were",
		cf_str(k, "id") ? cf_str(k, "id") : "?", cf_str(k, "reason") ? cf_str(k, "reason") : "no reason");
}

int cf_report_exit_code(const cJSON *report)
{
	struct sbx_report_totals t;
	sbx_err err = {{0}};
	const cJSON *k;

	cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(report, "checks"))
		if (strcmp(cf_str(k, "verdict") ? cf_str(k, "verdict") : "", "error") == 0)
			return 2;
	if (!sbx_report_count(report, &t, &err))
		return 2;
	if (!sbx_report_totals_ok(&t))
		return 1;
	if (sbx_report_nothing_checked(&t)) {
		say_nothing_checked(report, &t);
		return 2;
	}
	return 0;
}

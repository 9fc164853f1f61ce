/* runner: the case lifecycle (fresh tenant, check body, cleanup verdict, LIFO
 * teardown), the control-plane and admin HTTP helpers, the parallel
 * scheduler and the JSON report (schema v1, see conformance/README.md).
 *
 * Must never let a case leak into another: every case has its own API key,
 * its fault rules are scoped to that key and deleted at teardown, and every
 * guest the tenant still holds is destroyed before the case ends. */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "conform.h"

/* ---- small helpers ---- */

double cf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

const char *cf_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

double cf_num(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

void cf_random_token(struct cf_case *c, char *out, size_t cap)
{
	unsigned char raw[8];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	snprintf(out, cap, "tok-%02x%02x%02x%02x%02x%02x%02x%02x", raw[0], raw[1], raw[2], raw[3],
		 raw[4], raw[5], raw[6], raw[7]);
}

bool cf_surface(const struct cf_config *cf, const char *surface)
{
	size_t i;

	for (i = 0; i < cf->surface_count; i++)
		if (strcmp(cf->surfaces[i], surface) == 0)
			return true;
	return false;
}

bool cf_cap_bool(const struct cf_config *cf, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cf->capabilities, k));
}

const char *cf_cap_str(const struct cf_config *cf, const char *k)
{
	return cf_str(cf->capabilities, k);
}

bool cf_glob(const char *pat, const char *s)
{
	return fnmatch(pat, s, 0) == 0;
}

/* ---- verdicts ---- */

/* Verdicts only get worse (pass < skip < fail < error). A worse one
 * replaces the reason, an equal one adds to it, a milder one becomes a
 * detail line. */
__attribute__((format(printf, 3, 0)))
static void set_verdict(struct cf_case *c, const char *v, const char *fmt, va_list ap)
{
	static const char *const rank[] = {"pass", "skip", "fail", "error"};
	int cur = 0, nv = 0, i;
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	for (i = 0; i < 4; i++) {
		if (strcmp(c->verdict, rank[i]) == 0)
			cur = i;
		if (strcmp(v, rank[i]) == 0)
			nv = i;
	}
	if (nv < cur) {
		cf_detail(c, "%s", msg);
		return;
	}
	if (nv > cur) {
		snprintf(c->verdict, sizeof(c->verdict), "%s", v);
		sbx_strbuf_reset(&c->reason);
	} else if (c->reason.len > 0) {
		sbx_strbuf_puts(&c->reason, "; ");
	}
	sbx_strbuf_puts(&c->reason, msg);
}

void cf_fail(struct cf_case *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_verdict(c, "fail", fmt, ap);
	va_end(ap);
}

void cf_skip(struct cf_case *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_verdict(c, "skip", fmt, ap);
	va_end(ap);
}

void cf_error(struct cf_case *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_verdict(c, "error", fmt, ap);
	va_end(ap);
}

void cf_detail(struct cf_case *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON_AddItemToArray(c->details, cJSON_CreateString(msg));
}

bool cf_failed(const struct cf_case *c)
{
	return strcmp(c->verdict, "pass") != 0;
}

void cf_allow_leftover(struct cf_case *c, const char *id_or_prefix)
{
	cJSON_AddItemToArray(c->allowed_leftover, cJSON_CreateString(id_or_prefix));
}

/* ---- HTTP ---- */

static size_t on_body(char *p, size_t size, size_t n, void *u)
{
	sbx_strbuf_append(u, p, size * n);
	return size * n;
}

/* One exchange; returns the parsed JSON body (caller frees) or NULL. */
static cJSON *http_json(const char *url, const char *method, const char *hdr, const cJSON *body,
			long *status, sbx_err *err)
{
	struct curl_slist *h = NULL;
	sbx_strbuf resp = SBX_STRBUF_INIT;
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	CURL *c = curl_easy_init();
	CURLcode rc;
	cJSON *j = NULL;

	*status = 0;
	h = curl_slist_append(h, hdr);
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 15000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
	if (text != NULL)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		sbx_err_set(err, "%s %s: %s", method, url, curl_easy_strerror(rc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	j = cJSON_ParseWithLength(resp.data ? resp.data : "", resp.len);
	if (j == NULL)
		sbx_err_set(err, "%s %s: answer %ld is not JSON", method, url, *status);
out:
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	sbx_strbuf_free(&resp);
	free(text);
	return j;
}

static cJSON *unwrap(cJSON *j, long status, const char *method, const char *path, sbx_err *err)
{
	cJSON *data = NULL;

	if (j == NULL)
		return NULL;
	if (status >= 200 && status < 300 && strcmp(cf_str(j, "status") ? cf_str(j, "status") : "", "success") == 0) {
		data = cJSON_DetachItemFromObjectCaseSensitive(j, "data");
		if (data == NULL)
			data = cJSON_CreateNull();
	} else {
		char *flat = cJSON_PrintUnformatted(j);

		sbx_err_set(err, "%s %s: %ld %.300s", method, path, status, flat ? flat : "");
		free(flat);
	}
	cJSON_Delete(j);
	return data;
}

cJSON *cf_admin(struct cf_config *cf, const char *method, const char *path, const cJSON *body,
		sbx_err *err)
{
	char url[1024], hdr[320];
	long status;

	snprintf(url, sizeof(url), "%s%s", cf->url, path);
	cJSON *j;

	snprintf(hdr, sizeof(hdr), "X-Mock-Admin-Token: %s", cf->admin_token);
	j = http_json(url, method, hdr, body, &status, err);
	return unwrap(j, status, method, path, err);
}

cJSON *cf_api(struct cf_case *c, const char *method, const char *path, const cJSON *body,
	      long *status, sbx_err *err)
{
	char url[1024], hdr[320];
	long st;

	snprintf(url, sizeof(url), "%s%s", c->cf->url, path);
	snprintf(hdr, sizeof(hdr), "X-Api-Key: %s", c->cf->kind == CF_REAL ? c->cf->real_key : c->key);
	cJSON *j;

	if (status == NULL)
		status = &st;
	j = http_json(url, method, hdr, body, status, err);
	return unwrap(j, *status, method, path, err);
}

int cf_fault(struct cf_case *c, cJSON *rule)
{
	cJSON *match = cJSON_GetObjectItemCaseSensitive(rule, "match");
	const cJSON *ids, *id;
	sbx_err err = {{0}};
	cJSON *data;

	if (match == NULL)
		match = cJSON_AddObjectToObject(rule, "match");
	cJSON_DeleteItemFromObjectCaseSensitive(match, "tenant");
	cJSON_AddStringToObject(match, "tenant", c->key);
	data = cf_admin(c->cf, "POST", "/_mock/faults", rule, &err);
	cJSON_Delete(rule);
	if (data == NULL) {
		cf_error(c, "harness: cannot install fault rule: %s", err.msg);
		return -1;
	}
	ids = cJSON_GetObjectItemCaseSensitive(data, "ids");
	cJSON_ArrayForEach(id, ids)
		cJSON_AddItemToArray(c->fault_ids, cJSON_Duplicate(id, true));
	cJSON_Delete(data);
	return 0;
}

cJSON *cf_journal(struct cf_case *c)
{
	char path[256];
	sbx_err err = {{0}};
	cJSON *data;
	cJSON *entries;

	snprintf(path, sizeof(path), "/_mock/journal?tenant=%s&limit=100000", c->key);
	data = cf_admin(c->cf, "GET", path, NULL, &err);
	if (data == NULL) {
		cf_error(c, "harness: cannot read the journal: %s", err.msg);
		return NULL;
	}
	entries = cJSON_DetachItemFromObjectCaseSensitive(data, "entries");
	cJSON_Delete(data);
	return entries ? entries : cJSON_CreateArray();
}

static bool path_match(const char *pat, const char *path)
{
	while (*pat != '\0') {
		if (pat[0] == '*' && pat[1] == '\0')
			return true;
		if (strncmp(pat, "{id}", 4) == 0) {
			if (*path == '\0' || *path == '/')
				return false;
			while (*path != '\0' && *path != '/')
				path++;
			pat += 4;
			continue;
		}
		if (*pat != *path)
			return false;
		pat++;
		path++;
	}
	return *path == '\0';
}

int cf_journal_count(const cJSON *entries, const char *method, const char *pattern, int lo, int hi)
{
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, entries) {
		int st = (int)cf_num(e, "status", 0);

		if (method != NULL && strcmp(cf_str(e, "method") ? cf_str(e, "method") : "", method) != 0)
			continue;
		if (pattern != NULL && !path_match(pattern, cf_str(e, "path") ? cf_str(e, "path") : ""))
			continue;
		if (st < lo || st > hi)
			continue;
		n++;
	}
	return n;
}

void cf_keep_journal(struct cf_case *c, cJSON *entries)
{
	cJSON_Delete(c->journal);
	c->journal = entries;
}

cJSON *cf_sandboxes(struct cf_case *c)
{
	char path[256];
	sbx_err err = {{0}};
	cJSON *data, *list;

	if (c->cf->kind == CF_REAL) {
		data = cf_api(c, "GET", "/v1/sandboxes?limit=500", NULL, NULL, &err);
		list = cJSON_DetachItemFromObjectCaseSensitive(data, "data");
	} else {
		snprintf(path, sizeof(path), "/_mock/sandboxes?tenant=%s", c->key);
		data = cf_admin(c->cf, "GET", path, NULL, &err);
		list = cJSON_DetachItemFromObjectCaseSensitive(data, "sandboxes");
	}
	cJSON_Delete(data);
	if (list == NULL)
		cf_error(c, "harness: cannot list the tenant's sandboxes: %s", err.msg);
	return list;
}

bool cf_status_live(const char *status)
{
	return status != NULL && strcmp(status, "destroyed") != 0 && strcmp(status, "destroying") != 0 &&
	       strcmp(status, "failed") != 0;
}

static bool leftover_allowed(const struct cf_case *c, const cJSON *sb)
{
	const char *id = cf_str(sb, "id") ? cf_str(sb, "id") : "";
	const char *name = cf_str(sb, "name") ? cf_str(sb, "name") : "";
	const cJSON *a;

	cJSON_ArrayForEach(a, c->allowed_leftover) {
		const char *s = a->valuestring;

		if (strcmp(s, id) == 0 || strncmp(name, s, strlen(s)) == 0)
			return true;
	}
	return false;
}

int cf_live_guests(struct cf_case *c, cJSON *sandboxes, sbx_strbuf *names)
{
	const cJSON *sb;
	int n = 0;

	cJSON_ArrayForEach(sb, sandboxes) {
		if (!cf_status_live(cf_str(sb, "status")) || leftover_allowed(c, sb))
			continue;
		if (names != NULL)
			sbx_strbuf_printf(names, "%s%s (%s, %s)", n ? ", " : "", cf_str(sb, "id"),
					  cf_str(sb, "name") ? cf_str(sb, "name") : "unnamed", cf_str(sb, "status"));
		n++;
	}
	return n;
}

int cf_egress_allowed(struct cf_case *c, const char *sandbox_id, const char *dest)
{
	cJSON *body = cJSON_CreateObject();
	sbx_err err = {{0}};
	cJSON *data;
	int r;

	cJSON_AddStringToObject(body, "sandbox_id", sandbox_id);
	cJSON_AddStringToObject(body, "dest", dest);
	data = cf_admin(c->cf, "POST", "/_mock/egress/check", body, &err);
	cJSON_Delete(body);
	if (data == NULL) {
		cf_error(c, "harness: egress oracle failed for %s: %s", dest, err.msg);
		return -1;
	}
	r = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(data, "allowed")) ? 1 : 0;
	cJSON_Delete(data);
	return r;
}

/* ---- one case ---- */

static void case_init(struct cf_case *c, struct cf_config *cf, const struct cf_check *def)
{
	unsigned n;
	char tok[40];

	memset(c, 0, sizeof(*c));
	c->cf = cf;
	c->def = def;
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

static void case_free(struct cf_case *c)
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
			if (cf_status_live(cf_str(sb, "status")) && !leftover_allowed(c, sb))
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
	cJSON_AddStringToObject(o, "profile", c->def->profile);
	cJSON_AddStringToObject(o, "area", c->def->area);
	cJSON_AddStringToObject(o, "title", c->def->title);
	snprintf(clause, sizeof(clause), "backend-conformance.md#checks %s", c->def->id);
	cJSON_AddStringToObject(o, "clause", clause);
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

/* Trims the journal to the evidence shape of the report. */
static cJSON *journal_excerpt(const cJSON *entries)
{
	cJSON *out = cJSON_CreateArray();
	int n = cJSON_GetArraySize(entries);
	int i;

	for (i = n > 60 ? n - 60 : 0; i < n; i++) {
		const cJSON *e = cJSON_GetArrayItem(entries, i);
		cJSON *x = cJSON_CreateObject();
		const char *fault = cf_str(e, "fault");

		cJSON_AddNumberToObject(x, "seq", cf_num(e, "seq", 0));
		cJSON_AddStringToObject(x, "method", cf_str(e, "method") ? cf_str(e, "method") : "");
		cJSON_AddStringToObject(x, "path", cf_str(e, "path") ? cf_str(e, "path") : "");
		cJSON_AddNumberToObject(x, "status", cf_num(e, "status", 0));
		if (fault != NULL)
			cJSON_AddStringToObject(x, "fault", fault);
		else
			cJSON_AddNullToObject(x, "fault");
		cJSON_AddItemToArray(out, x);
	}
	return out;
}

static cJSON *run_case(struct cf_config *cf, const struct cf_check *def)
{
	struct cf_case c;
	cJSON *rep;
	size_t i;

	case_init(&c, cf, def);
	c.started_ms = cf_now_ms();
	if (!needs_skip(&c))
		def->fn(&c);
	if (!c.cleanup_skip)
		cleanup_verdict(&c);
	for (i = 0; i < c.driver_count; i++)
		cf_driver_stop(c.drivers[i]);
	teardown(&c);
	if (cf->kind != CF_REAL && c.driver_count > 0 && (cf_failed(&c) || strcmp(c.cleanup_verdict, "fail") == 0)) {
		cJSON *j = cf_journal(&c);

		cf_keep_journal(&c, journal_excerpt(j));
		cJSON_Delete(j);
	}
	for (i = 0; i < c.driver_count; i++)
		cf_driver_free(c.drivers[i]);
	unlink(c.trip);
	c.duration_ms = cf_now_ms() - c.started_ms;
	rep = case_report(&c);
	case_free(&c);
	return rep;
}

/* ---- selection and scheduling ---- */

size_t cf_all_checks(const struct cf_check **out, size_t cap)
{
	size_t n = 0, i;

	for (i = 0; i < cf_checks_backend_count && n < cap; i++)
		out[n++] = &cf_checks_backend[i];
	for (i = 0; i < cf_checks_createos_count && n < cap; i++)
		out[n++] = &cf_checks_createos[i];
	for (i = 0; i < cf_checks_gate_count && n < cap; i++)
		out[n++] = &cf_checks_gate[i];
	return n;
}

/* Profile and filter only; the shard is applied over the selected list. */
static bool cf_wanted(const struct cf_config *cf, const struct cf_check *k)
{
	bool in_profile = false;
	size_t i;

	for (i = 0; i < cf->profile_count; i++)
		if (strcmp(cf->profiles[i], k->profile) == 0)
			in_profile = true;
	if (!in_profile)
		return false;
	if (cf->filter_count == 0)
		return true;
	for (i = 0; i < cf->filter_count; i++)
		if (cf_glob(cf->filters[i], k->id))
			return true;
	return false;
}

bool cf_selected(const struct cf_config *cf, const struct cf_check *k, size_t ordinal)
{
	if (!cf_wanted(cf, k))
		return false;
	return cf->shard_count <= 1 || ordinal % cf->shard_count == cf->shard_index - 1;
}

size_t cf_selection(const struct cf_config *cf, const struct cf_check **out, size_t cap)
{
	const struct cf_check *all[512];
	size_t n = cf_all_checks(all, 512), i, ord = 0, m = 0;

	for (i = 0; i < n; i++) {
		if (!cf_wanted(cf, all[i]))
			continue;
		if (cf_selected(cf, all[i], ord) && m < cap)
			out[m++] = all[i];
		ord++;
	}
	return m;
}

struct sched {
	struct cf_config *cf;
	const struct cf_check **sel;
	cJSON **results;
	size_t n;
	size_t next;
	pthread_mutex_t lock;
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

static void *worker(void *arg)
{
	struct sched *s = arg;

	for (;;) {
		size_t i;
		cJSON *r;

		pthread_mutex_lock(&s->lock);
		i = s->next++;
		pthread_mutex_unlock(&s->lock);
		if (i >= s->n)
			return NULL;
		r = run_case(s->cf, s->sel[i]);
		s->results[i] = r;
		progress(s->cf, s->sel[i]->id, cf_str(r, "verdict"));
	}
}

static void rfc3339_now(char *out, size_t cap)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static cJSON *make_summary(const cJSON *checks)
{
	cJSON *s = cJSON_CreateObject();
	const cJSON *k;
	int total = 0, pass = 0, fail = 0, skip = 0, error = 0, cfail = 0;

	cJSON_ArrayForEach(k, checks) {
		const char *v = cf_str(k, "verdict");

		total++;
		if (strcmp(v, "pass") == 0)
			pass++;
		else if (strcmp(v, "fail") == 0)
			fail++;
		else if (strcmp(v, "skip") == 0)
			skip++;
		else
			error++;
		if (strcmp(cf_str(cJSON_GetObjectItemCaseSensitive(k, "cleanup"), "verdict"), "fail") == 0)
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
	const struct cf_check *sel[512];
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
	s = (struct sched){cf, sel, results, n, 0, PTHREAD_MUTEX_INITIALIZER};
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
	cJSON_AddItemToObject(b, "capabilities", cf->capabilities ? cJSON_Duplicate(cf->capabilities, true)
							       : cJSON_CreateNull());
	cp = cJSON_AddObjectToObject(r, "control_plane");
	cJSON_AddStringToObject(cp, "url", cf->url);
	cJSON_AddStringToObject(cp, "kind", cf->kind == CF_EMBEDDED_MOCK ? "embedded-mock"
					    : cf->kind == CF_EXTERNAL_MOCK ? "external-mock" : "real");
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
	cJSON_AddItemToObject(r, "summary", make_summary(checks));
	cJSON_AddItemToObject(r, "checks", checks);
	*report = r;
	return err->msg[0] ? -1 : 0;
}

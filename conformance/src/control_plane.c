/* control_plane: the runner's HTTP client for the control plane (the case's
 * API key) and the mock's admin API (journal, state, faults, egress oracle),
 * with the case-level helpers built on it (fault rules scoped to the case,
 * journal counts, the tenant's sandboxes and live guests).
 *
 * The only file of the runner that speaks HTTP (through libsbx's client,
 * sbx/http_client.h). Never uses another case's
 * key, never retries, and never decides a verdict except marking a harness
 * error when the control plane cannot be read. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "sbx/http_client.h"

int cf_control_plane_open(struct cf_config *cf, sbx_err *err)
{
	/* A new connection per request, as each case's requests are its own;
	 * many workers call at once. */
	sbx_http_opts o = {.timeout_ms = 15000, .threaded = true, .no_reuse = true,
			   .user_agent = CF_HARNESS_AGENT};

	cf->http = sbx_http_client_new(&o, err);
	return cf->http != NULL ? 0 : -1;
}

void cf_control_plane_close(struct cf_config *cf)
{
	sbx_http_client_free(cf->http);
	cf->http = NULL;
}

/* One exchange; returns the parsed JSON body (caller frees) or NULL. */
static cJSON *http_json(struct cf_config *cf, const char *url, const char *method, const char *hdr,
			const cJSON *body, long *status, sbx_err *err)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	sbx_http_req req = {
		.method = method,
		.path = url,
		.headers = {hdr},
		.body = text,
		.body_len = text ? strlen(text) : 0,
		.content_type = "application/json",
	};
	sbx_http_resp resp;
	sbx_err herr = {{0}};
	cJSON *j = NULL;

	*status = 0;
	if (sbx_http_request(cf->http, &req, &resp, &herr) != 0) {
		/* libcurl's own words name the host, port and errno ("Failed to
		 * connect to 127.0.0.1 port 1: Connection refused"). */
		sbx_err_set(err, "%s %s: %s", method, url,
			    herr.msg[0] != '\0' ? herr.msg : sbx_http_code_str(resp.curl_code));
		goto out;
	}
	*status = resp.status;
	j = cJSON_ParseWithLength(resp.body.data ? resp.body.data : "", resp.body.len);
	if (j == NULL)
		sbx_err_set(err, "%s %s: answer %ld is not JSON", method, url, *status);
out:
	sbx_http_resp_free(&resp);
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
	j = http_json(cf, url, method, hdr, body, &status, err);
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
	j = http_json(c->cf, url, method, hdr, body, status, err);
	return unwrap(j, *status, method, path, err);
}

int cf_control_plane_reachable(struct cf_config *cf, sbx_err *err)
{
	char url[1024], hdr[320];
	long status = 0;
	sbx_err e = {{0}};
	cJSON *j;

	if (cf->kind == CF_EMBEDDED_MOCK)
		return 0;
	if (cf->kind == CF_REAL) {
		/* Any HTTP answer will do: the user's key is the checks' business. */
		snprintf(url, sizeof(url), "%s/v1/whoami", cf->url);
		snprintf(hdr, sizeof(hdr), "X-Api-Key: %s", cf->real_key);
		j = http_json(cf, url, "GET", hdr, NULL, &status, &e);
		cJSON_Delete(j);
		if (status == 0) {
			sbx_err_set(err, "--api-url %s: the control plane cannot be reached: %s", cf->url, e.msg);
			return -1;
		}
		return 0;
	}
	j = cf_admin(cf, "GET", "/_mock/settings", NULL, &e);
	if (j != NULL) {
		cJSON_Delete(j);
		return 0;
	}
	if (strstr(e.msg, ": 401 ") != NULL || strstr(e.msg, ": 403 ") != NULL)
		sbx_err_set(err, "--mock-url %s: the mock refuses the admin token (--admin-token or "
			    "SBX_MOCK_ADMIN_TOKEN): %s", cf->url, e.msg);
	else
		sbx_err_set(err, "--mock-url %s: no sbx-mock admin API answers there: %s", cf->url, e.msg);
	return -1;
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

bool cf_journal_by_harness(const cJSON *entry)
{
	const char *a = cf_str(entry, "agent");
	size_t n = a != NULL ? strlen(a) : 0;

	/* the runner (CF_HARNESS_AGENT) and the Python adapters' own look-ups
	 * ("sbx-conform/adapter (harness)") */
	return n > strlen(CF_HARNESS_MARK) && strncmp(a, "sbx-conform/", 12) == 0 &&
	       strcmp(a + n - strlen(CF_HARNESS_MARK), CF_HARNESS_MARK) == 0;
}

int cf_journal_count(const cJSON *entries, const char *method, const char *pattern, int lo, int hi)
{
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, entries) {
		int st = (int)cf_num(e, "status", 0);

		if (cf_journal_by_harness(e))
			continue; /* the harness's own setup, reads and teardown */
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

/* The evidence shape of the report: the last 60 rows, each marked with who
 * sent it ("backend" or "harness"), so a reader never mistakes the harness's
 * own listing or teardown for the backend's behaviour. */
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
		cJSON_AddStringToObject(x, "by", cf_journal_by_harness(e) ? "harness" : "backend");
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

void cf_keep_journal(struct cf_case *c, cJSON *entries)
{
	cJSON_Delete(c->journal);
	c->journal = journal_excerpt(entries);
	cJSON_Delete(entries);
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

bool cf_leftover_allowed(const struct cf_case *c, const cJSON *sb)
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
		if (!cf_status_live(cf_str(sb, "status")) || cf_leftover_allowed(c, sb))
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


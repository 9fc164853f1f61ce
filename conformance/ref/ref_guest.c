/* ref_guest: the reference backend's calls on one guest: create (with the
 * reap of a lost create), delete, find by name, upload, exec, Return Files,
 * and finding/resuming a reuse guest.
 *
 * Never retries a request (unless a quirk says so) and never deletes a guest
 * it did not create or was not asked to reuse; a failed delete is logged
 * with the guest's id and returned. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "sbx/strbuf.h"

/* ---- guests ---- */

static bool is_gone(const char *status)
{
	return status == NULL || strcmp(status, "destroyed") == 0 || strcmp(status, "destroying") == 0 ||
	       strcmp(status, "failed") == 0;
}

/* Deletes the guest; failures are logged (with the id) and returned. */
int delete_guest(struct ref *r, const char *id, const char *name)
{
	sbx_strbuf path = SBX_STRBUF_INIT;
	sbxd_error err = {{0}, {0}};
	cJSON *d;
	int rc = 0;

	sbx_strbuf_printf(&path, "/v1/sandboxes/%s", id);
	d = ref_http_json(r->http, "DELETE", sbx_strbuf_str(&path), NULL, "delete sandbox", NULL, &err);
	if (d == NULL) {
		fprintf(stderr, "sbx-ref-backend: warning: could not delete sandbox %s (%s): %s\n", id,
			name, err.message);
		rc = -1;
	}
	cJSON_Delete(d);
	sbx_strbuf_free(&path);
	return rc;
}

/* Finds a live guest by name; returns its view (caller frees) or NULL. */
static cJSON *find_by_name(struct ref *r, const char *name, sbxd_error *err, bool *failed)
{
	int offset = 0;

	*failed = false;
	for (;;) {
		char path[96];
		cJSON *page;
		const cJSON *list, *sb, *pg;
		int count = 0;

		snprintf(path, sizeof(path), "/v1/sandboxes?limit=500&offset=%d", offset);
		page = ref_http_json(r->http, "GET", path, NULL, "list sandboxes", NULL, err);
		if (page == NULL) {
			*failed = true;
			return NULL;
		}
		list = cJSON_GetObjectItemCaseSensitive(page, "data");
		cJSON_ArrayForEach(sb, list) {
			const char *n = str_field(sb, "name");

			count++;
			if (n != NULL && strcmp(n, name) == 0 && !is_gone(str_field(sb, "status"))) {
				cJSON *copy = cJSON_Duplicate(sb, true);

				cJSON_Delete(page);
				return copy;
			}
		}
		pg = cJSON_GetObjectItemCaseSensitive(page, "pagination");
		offset += count;
		if (count == 0 || !cJSON_IsObject(pg) ||
		    !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(pg, "total")) ||
		    offset >= cJSON_GetObjectItemCaseSensitive(pg, "total")->valuedouble) {
			cJSON_Delete(page);
			return NULL;
		}
		cJSON_Delete(page);
	}
}

/* A create whose answer was lost may still have made the guest: find it by
 * its unique name and delete it, so no orphan outlives the run. */
static void reap_lost_create(struct ref *r, const char *name)
{
	sbxd_error err = {{0}, {0}};
	bool failed;
	cJSON *v = find_by_name(r, name, &err, &failed);
	const char *id = str_field(v, "id");

	if (id != NULL) {
		fprintf(stderr, "sbx-ref-backend: create of %s failed but the guest %s exists; deleting it\n",
			name, id);
		delete_guest(r, id, name);
	}
	cJSON_Delete(v);
}

/* POST /v1/sandboxes. Returns the new id (caller frees) or NULL. */
char *create_guest(struct ref *r, const char *name, cJSON *egress, const cJSON *env, bool reuse, sbxd_error *err)
{
	cJSON *body = cJSON_CreateObject();
	cJSON *data = NULL;
	char *id = NULL;
	long status = 0;
	long pause = r->s.timeout_s + 120 > 60 ? r->s.timeout_s + 120 : 60;
	int attempts = 0;

	if (r->q.autopause_wrong)
		pause = r->s.timeout_s + 60;
	cJSON_AddStringToObject(body, "name", name);
	cJSON_AddStringToObject(body, "shape", r->shape);
	if (egress != NULL)
		cJSON_AddItemToObject(body, "egress", egress);
	cJSON_AddNumberToObject(body, "auto_pause_after_seconds", (double)pause);
	if (env != NULL && cJSON_GetArraySize(env) > 0)
		cJSON_AddItemToObject(body, "envs", cJSON_Duplicate(env, true));
	for (;;) {
		attempts++;
		data = ref_http_json(r->http, "POST", "/v1/sandboxes", body, "create sandbox", &status, err);
		if (r->q.retry_create_503 && data == NULL && status == 503 && attempts < 3) {
			sleep_ms(100);
			continue;
		}
		if (r->q.wait_on_cap && data == NULL && status == 403 && attempts < 4) {
			sleep_ms(1500);
			continue;
		}
		break;
	}
	if (data == NULL) {
		if ((status == 0 || status >= 500) && !reuse)
			reap_lost_create(r, name);
		goto out;
	}
	if (str_field(data, "id") == NULL) {
		sbxd_error_set(err, SBXD_EXECUTION, "create sandbox: answer has no id");
		goto out;
	}
	id = strdup(str_field(data, "id"));
out:
	cJSON_Delete(data);
	cJSON_Delete(body);
	return id;
}

int upload(struct ref *r, const char *id, const char *path, const char *data, sbxd_error *err)
{
	sbx_strbuf p = SBX_STRBUF_INIT;
	ref_resp resp = {0};
	int rc = 0;

	sbx_strbuf_printf(&p, "/v1/sandboxes/%s/files?path=%s", id, path);
	ref_http_raw(r->http, "PUT", sbx_strbuf_str(&p), data, strlen(data), "application/octet-stream",
		     NULL, NULL, &resp);
	if (ref_http_classify(&resp, "PUT", sbx_strbuf_str(&p), "upload code", err)) {
		rc = -1;
	} else { /* a 2xx that is no JSend success (empty, garbage) stored nothing (backend fuzzer) */
		cJSON *j = cJSON_ParseWithLength(resp.body.data ? resp.body.data : "", resp.body.len);

		if (str_field(j, "status") == NULL || strcmp(str_field(j, "status"), "success") != 0) {
			sbxd_error_set(err, SBXD_EXECUTION, "upload code: PUT %s: answer %ld is not a JSend success "
				       "(%zu bytes)", sbx_strbuf_str(&p), resp.status, resp.body.len);
			rc = -1;
		}
		cJSON_Delete(j);
	}
	ref_resp_free(&resp);
	sbx_strbuf_free(&p);
	return rc;
}


void exec_out_free(struct exec_out *o)
{
	free(o->stdout_s);
	free(o->stderr_s);
}

int exec_in(struct ref *r, const char *id, const char *const *argv, struct exec_out *o,
		   sbxd_error *err)
{
	cJSON *body = cJSON_CreateObject();
	cJSON *args = cJSON_AddArrayToObject(body, "args");
	sbx_strbuf path = SBX_STRBUF_INIT;
	cJSON *data;
	const cJSON *res, *ex, *e;
	int rc = -1;
	int i;

	memset(o, 0, sizeof(*o));
	cJSON_AddStringToObject(body, "cmd", argv[0]);
	for (i = 1; argv[i] != NULL; i++)
		cJSON_AddItemToArray(args, cJSON_CreateString(argv[i]));
	sbx_strbuf_printf(&path, "/v1/sandboxes/%s/exec", id);
	data = ref_http_json(r->http, "POST", sbx_strbuf_str(&path), body, "exec", NULL, err);
	if (data == NULL)
		goto out;
	res = cJSON_GetObjectItemCaseSensitive(data, "result");
	ex = cJSON_GetObjectItemCaseSensitive(res, "exit_code");
	e = cJSON_GetObjectItemCaseSensitive(res, "error");
	if (cJSON_IsString(e) && e->valuestring[0] != '\0') {
		sbxd_error_set(err, SBXD_EXECUTION, "exec in %s: guest agent error: %s", id, e->valuestring);
		goto out;
	}
	if (!cJSON_IsNumber(ex)) {
		sbxd_error_set(err, SBXD_EXECUTION, "exec in %s: answer has no exit code", id);
		goto out;
	}
	o->stdout_s = strdup(str_field(res, "stdout") ? str_field(res, "stdout") : "");
	o->stderr_s = strdup(str_field(res, "stderr") ? str_field(res, "stderr") : "");
	o->exit_code = (long)ex->valuedouble;
	o->exec_ms = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(data, "exec_ms"))
			     ? (long)cJSON_GetObjectItemCaseSensitive(data, "exec_ms")->valuedouble : -1;
	rc = 0;
out:
	cJSON_Delete(data);
	cJSON_Delete(body);
	sbx_strbuf_free(&path);
	return rc;
}

/* ---- returned files ---- */

struct dl {
	sbxd_sha256_ctx sha;
	long size;
	long *total;
	bool capped;     /* false with the files-uncapped quirk */
};

static bool dl_sink(void *ctx, const void *data, size_t len)
{
	struct dl *d = ctx;

	d->size += (long)len;
	*d->total += (long)len;
	if (d->capped && *d->total > FILES_MAX_BYTES)
		return false; /* the cap is enforced while streaming */
	sbxd_sha256_update(&d->sha, data, len);
	return true;
}

cJSON *collect_files(struct ref *r, const char *id, sbxd_error *err)
{
	static const char *const list_argv[] = {"find", "/workspace/artifacts", "-type", "f",
						"-printf", "%P\\n", NULL};
	struct exec_out o;
	cJSON *files = NULL;
	long total = 0;
	int count = 0;
	char *line, *next;

	if (exec_in(r, id, list_argv, &o, err) != 0)
		return NULL;
	files = cJSON_CreateArray();
	if (o.exit_code != 0)
		goto out; /* no artifacts directory: nothing to return */
	for (line = o.stdout_s; line != NULL && *line != '\0'; line = next) {
		struct dl d = {.size = 0, .total = &total, .capped = !r->q.files_uncapped};
		sbx_strbuf p = SBX_STRBUF_INIT;
		unsigned char digest[32];
		char hex[65];
		ref_resp resp = {0};
		cJSON *f;

		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		if (*line == '\0')
			continue;
		if (++count > FILES_MAX_COUNT && d.capped) {
			sbxd_error_set(err, SBXD_EXECUTION, "Return Files: more than %d files in "
				       "/workspace/artifacts", FILES_MAX_COUNT);
			goto out_fail;
		}
		sbxd_sha256_init(&d.sha);
		sbx_strbuf_printf(&p, "/v1/sandboxes/%s/files?path=/workspace/artifacts/%s", id, line);
		ref_http_raw(r->http, "GET", sbx_strbuf_str(&p), NULL, 0, NULL, dl_sink, &d, &resp);
		if (total > FILES_MAX_BYTES && d.capped) {
			sbxd_error_set(err, SBXD_EXECUTION, "Return Files: /workspace/artifacts holds more "
				       "than %ld bytes", FILES_MAX_BYTES);
			ref_resp_free(&resp);
			sbx_strbuf_free(&p);
			goto out_fail;
		}
		if (ref_http_classify(&resp, "GET", sbx_strbuf_str(&p), "download artifact", err)) {
			ref_resp_free(&resp);
			sbx_strbuf_free(&p);
			goto out_fail;
		}
		ref_resp_free(&resp);
		sbx_strbuf_free(&p);
		sbxd_sha256_final(&d.sha, digest);
		sbxd_hex(digest, 32, hex);
		f = cJSON_CreateObject();
		sbx_strbuf_printf(&p, "artifacts/%s", line);
		cJSON_AddStringToObject(f, "path", sbx_strbuf_str(&p));
		sbx_strbuf_free(&p);
		cJSON_AddNumberToObject(f, "size", (double)d.size);
		cJSON_AddStringToObject(f, "sha256", hex);
		cJSON_AddItemToArray(files, f);
	}
	goto out;
out_fail:
	cJSON_Delete(files);
	files = NULL;
out:
	exec_out_free(&o);
	return files;
}

/* ---- reuse ---- */

static bool egress_matches(const cJSON *view_egress, const char *policy)
{
	int n = cJSON_GetArraySize(view_egress);
	const cJSON *first = cJSON_GetArrayItem(view_egress, 0);

	if (strcmp(policy, "*") == 0)
		return n == 0 || (n == 1 && cJSON_IsString(first) && strcmp(first->valuestring, "*") == 0);
	return n == 1 && cJSON_IsString(first) && strcmp(first->valuestring, policy) == 0;
}

char *reuse_guest(struct ref *r, const struct job *j, sbxd_error *err)
{
	bool failed;
	cJSON *v = find_by_name(r, j->name, err, &failed);
	const char *status;
	char *id = NULL;
	int polls;

	if (v == NULL)
		return NULL;
	status = str_field(v, "status");
	if (!r->q.reuse_drift && !egress_matches(cJSON_GetObjectItemCaseSensitive(v, "egress"), j->policy)) {
		sbxd_error_set(err, SBXD_UNAVAILABLE, "Guest Reuse: guest %s (%s) no longer has the egress "
			       "policy [%s] it was created with; delete it to start afresh", j->name,
			       str_field(v, "id"), j->policy);
		goto out;
	}
	id = strdup(str_field(v, "id"));
	for (polls = 0; polls < 200; polls++) {
		sbx_strbuf p = SBX_STRBUF_INIT;
		cJSON *nv;

		if (status != NULL && strcmp(status, "running") == 0)
			goto out;
		if (status != NULL && strcmp(status, "paused") == 0 && r->q.no_resume)
			goto out;
		if (status != NULL && strcmp(status, "paused") == 0) {
			sbx_strbuf_printf(&p, "/v1/sandboxes/%s/resume", id);
			nv = ref_http_json(r->http, "POST", sbx_strbuf_str(&p), NULL, "resume sandbox", NULL, err);
			sbx_strbuf_free(&p);
			if (nv == NULL)
				goto out_fail;
			cJSON_Delete(nv);
		}
		if (polls > 0)
			sleep_ms(50);
		sbx_strbuf_printf(&p, "/v1/sandboxes/%s", id);
		nv = ref_http_json(r->http, "GET", sbx_strbuf_str(&p), NULL, "get sandbox", NULL, err);
		sbx_strbuf_free(&p);
		if (nv == NULL)
			goto out_fail;
		cJSON_Delete(v);
		v = nv;
		status = str_field(v, "status");
		if (is_gone(status) || strcmp(status, "error") == 0) {
			sbxd_error_set(err, SBXD_EXECUTION, "Guest Reuse: guest %s went to state %s", id,
				       status ? status : "?");
			goto out_fail;
		}
	}
	sbxd_error_set(err, SBXD_EXECUTION, "Guest Reuse: guest %s did not become running", id);
out_fail:
	free(id);
	id = NULL;
out:
	cJSON_Delete(v);
	return id;
}

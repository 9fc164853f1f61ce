/* sbx-ref-backend: a conformance driver that does what the CreateOS
 * integration (langflow-sandbox-createos 0.2) does, for its three surfaces:
 * the Langflow sandbox backend, the "CreateOS Sandbox" component (guest
 * reuse, returned files) and the whole-flow executor. See the spec section
 * "Facts: the CreateOS integration" in backend-conformance.md.
 *
 * The same file builds the mutants: each MUT_* macro (one per executable)
 * breaks exactly one promise so the suite can prove it catches it. Without
 * any MUT_* macro this is the reference, which must never run code outside a
 * control-plane guest, never retry, and always delete its per-run guests. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "ref_http.h"
#include "sbx/driver.h"
#include "sbx/strbuf.h"

#ifndef REF_VARIANT
#define REF_VARIANT "reference"
#endif

#define FILES_MAX_BYTES (5L * 1024 * 1024)
#define FILES_MAX_COUNT 256
#define HTTP_SLACK_S 3

struct settings {
	const char *api_key;    /* NULL when neither variable is set */
	const char *key_var;    /* which variable the key came from */
	char base_url[512];
	long timeout_s;
	long memory_mb;
	bool allow_network;
	int domain_count;       /* non-blank items of ALLOWED_DOMAINS */
	char domains[1024];     /* the raw value */
	bool accept_exceptions;
	const char *shape_pin;
	char bad_setting[512];  /* first settings error, "" when none */
};

struct ref {
	struct settings s;
	ref_http *http;
	pthread_mutex_t *lock;  /* guards the preflight state; heap for fork */
	bool preflight_done;
	char shape[64];
	sbxd_error preflight_err; /* sticky preflight failure */
	bool preflight_failed;
	bool shut;
};

/* ---- settings ---- */

static bool word_in(const char *v, const char *const *set)
{
	char buf[32];
	size_t b = 0, e;
	int i;

	while (v[b] == ' ' || v[b] == '\t' || v[b] == '\n' || v[b] == '\r')
		b++;
	e = strlen(v);
	while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t' || v[e - 1] == '\n' || v[e - 1] == '\r'))
		e--;
	if (e - b >= sizeof(buf))
		return false;
	memcpy(buf, v + b, e - b);
	buf[e - b] = '\0';
	for (i = 0; set[i] != NULL; i++)
		if (strcasecmp(buf, set[i]) == 0)
			return true;
	return false;
}

static const char *const TRUTHY[] = {"1", "true", "yes", "on", "y", "t", NULL};
static const char *const FALSY[] = {"0", "false", "no", "off", "n", "f", NULL};

static bool parse_long(const char *v, long *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	while (*end == ' ')
		end++;
	if (errno != 0 || end == v || *end != '\0')
		return false;
	*out = x;
	return true;
}

static void settings_load(struct settings *s)
{
	const char *v;
	long x;

	memset(s, 0, sizeof(*s));
	s->timeout_s = 30;
	s->memory_mb = 192;
	v = getenv("CREATEOS_SANDBOX_API_KEY");
	s->key_var = "CREATEOS_SANDBOX_API_KEY";
	if (v == NULL || v[0] == '\0') {
		v = getenv("CREATEOS_API_KEY");
		s->key_var = "CREATEOS_API_KEY";
	}
	s->api_key = (v != NULL && v[0] != '\0') ? v : NULL;
	v = getenv("CREATEOS_SANDBOX_BASE_URL");
	snprintf(s->base_url, sizeof(s->base_url), "%s", v ? v : "https://api.sb.createos.sh");
	v = getenv("LANGFLOW_SANDBOX_TIMEOUT_SECONDS");
	if (v != NULL) {
		if (!parse_long(v, &x) || x < 1 || x > 300)
			snprintf(s->bad_setting, sizeof(s->bad_setting),
				 "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=%.32s: must be an integer from 1 to 300", v);
		else
			s->timeout_s = x;
	}
	v = getenv("LANGFLOW_SANDBOX_MEMORY_MB");
	if (v != NULL && s->bad_setting[0] == '\0') {
		if (!parse_long(v, &x) || x < 128)
			snprintf(s->bad_setting, sizeof(s->bad_setting),
				 "LANGFLOW_SANDBOX_MEMORY_MB=%.32s: must be an integer of at least 128", v);
		else
			s->memory_mb = x;
	}
	v = getenv("LANGFLOW_SANDBOX_ALLOW_NETWORK");
	if (v != NULL && s->bad_setting[0] == '\0') {
		if (word_in(v, TRUTHY))
			s->allow_network = true;
		else if (!word_in(v, FALSY))
			snprintf(s->bad_setting, sizeof(s->bad_setting),
				 "LANGFLOW_SANDBOX_ALLOW_NETWORK=%.32s: not a boolean", v);
	}
	v = getenv("LANGFLOW_SANDBOX_ALLOWED_DOMAINS");
	if (v != NULL) {
		const char *p = v;

		snprintf(s->domains, sizeof(s->domains), "%s", v);
		while (*p != '\0') {
			bool blank = true;

			for (; *p != '\0' && *p != ','; p++)
				if (*p != ' ' && *p != '\t')
					blank = false;
			if (!blank)
				s->domain_count++;
			if (*p == ',')
				p++;
		}
	}
	v = getenv("LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS");
	s->accept_exceptions = v != NULL && word_in(v, TRUTHY);
	v = getenv("CREATEOS_SANDBOX_SHAPE");
	s->shape_pin = (v != NULL && v[0] != '\0') ? v : NULL;
}

/* ---- small helpers ---- */

static void random_hex(char *out, size_t digits)
{
	unsigned char raw[32];
	char hex[65];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	sbxd_hex(raw, sizeof(raw), hex);
	memcpy(out, hex, digits);
	out[digits] = '\0';
}

static const char *str_field(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool bool_field(const cJSON *o, const char *k, bool dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static double elapsed_ms(double t0)
{
	return now_ms() - t0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- capabilities and refusals ---- */

static int preflight(struct ref *r, sbxd_error *err);

static cJSON *ref_capabilities(void *be, sbxd_error *err)
{
	cJSON *c = cJSON_CreateObject();

#ifdef MUT_IO_IN_CAPABILITIES
	(void)preflight(be, err);
#endif
	cJSON_AddStringToObject(c, "isolation", "hardware-virtualized");
	cJSON_AddBoolToObject(c, "supports_deny_all_egress", true);
#ifdef MUT_CLAIM_ALLOWLIST
	cJSON_AddBoolToObject(c, "supports_domain_allowlist", true);
#else
	cJSON_AddBoolToObject(c, "supports_domain_allowlist", false);
#endif
	cJSON_AddNullToObject(c, "max_timeout_seconds");
	return c;
}

/* The integration's own refusals, in order, before anything is created. */
static int refuse_early(const struct ref *r, bool allow_network, bool check_domains, sbxd_error *err)
{
#ifdef MUT_REFUSE_AS_EXECUTION
	const char *cls = SBXD_EXECUTION;
#else
	const char *cls = SBXD_UNAVAILABLE;
#endif
	if (r->s.bad_setting[0] != '\0') {
		sbxd_error_set(err, cls, "%s", r->s.bad_setting);
		return -1;
	}
#if !defined(MUT_FORWARD_DOMAINS) && !defined(MUT_CLAIM_ALLOWLIST) && !defined(MUT_CREATE_BEFORE_REFUSAL)
	if (check_domains && r->s.domain_count > 0) {
		sbxd_error_set(err, cls,
			       "LANGFLOW_SANDBOX_ALLOWED_DOMAINS is set (%.200s), but CreateOS does not enforce "
			       "host-name egress rules; unset it or use a backend with a domain allowlist",
			       r->s.domains);
		return -1;
	}
#endif
#ifndef MUT_NO_ACCEPT_CHECK
	if (!allow_network && !r->s.accept_exceptions) {
		sbxd_error_set(err, cls,
			       "LANGFLOW_SANDBOX_ALLOW_NETWORK is false, but a CreateOS guest can still reach "
			       "169.254.0.0/16 (metadata service); set "
			       "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS=true to accept that");
		return -1;
	}
#endif
	if (r->s.api_key == NULL) {
		sbxd_error_set(err, cls, "CREATEOS_SANDBOX_API_KEY (or CREATEOS_API_KEY) is not set");
		return -1;
	}
	return 0;
}

/* ---- preflight: whoami once per process, then the shape ---- */

static int pick_shape(struct ref *r, sbxd_error *err)
{
	long need = r->s.memory_mb > 4096 ? r->s.memory_mb : 4096;
	cJSON *data = ref_http_json(r->http, "GET", "/v1/shapes?limit=500", NULL, "list shapes", NULL, err);
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(data, "data");
	const cJSON *sh;
	double best_mem = 0, best_cpu = 0;
	bool found = false;

	if (data == NULL)
		return -1;
	if (cJSON_IsArray(data))
		list = data;
	cJSON_ArrayForEach(sh, list) {
		const char *id = str_field(sh, "id");
		const cJSON *mem = cJSON_GetObjectItemCaseSensitive(sh, "mem_mib");
		const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(sh, "vcpu");
		double m = cJSON_IsNumber(mem) ? mem->valuedouble : 0;
		double c = cJSON_IsNumber(cpu) ? cpu->valuedouble : 0;

		if (id == NULL)
			continue;
		if (r->s.shape_pin != NULL) {
			if (strcmp(id, r->s.shape_pin) != 0)
				continue;
			found = true;
			if (m < (double)need) {
				sbxd_error_set(err, SBXD_UNAVAILABLE,
					       "CREATEOS_SANDBOX_SHAPE=%s has %.0f MiB, below the %ld MiB this "
					       "run needs (max(LANGFLOW_SANDBOX_MEMORY_MB, 4096))", id, m, need);
				cJSON_Delete(data);
				return -1;
			}
			snprintf(r->shape, sizeof(r->shape), "%s", id);
			break;
		}
		if (m < (double)need)
			continue;
		if (!found || m < best_mem || (m == best_mem && c < best_cpu)) {
			found = true;
			best_mem = m;
			best_cpu = c;
			snprintf(r->shape, sizeof(r->shape), "%s", id);
		}
	}
	cJSON_Delete(data);
	if (!found) {
		if (r->s.shape_pin != NULL)
			sbxd_error_set(err, SBXD_UNAVAILABLE, "CREATEOS_SANDBOX_SHAPE=%s is not a shape the "
				       "control plane offers", r->s.shape_pin);
		else
			sbxd_error_set(err, SBXD_UNAVAILABLE, "no shape with at least %ld MiB "
				       "(LANGFLOW_SANDBOX_MEMORY_MB=%ld)", need, r->s.memory_mb);
		return -1;
	}
	return 0;
}

static int preflight_locked(struct ref *r, sbxd_error *err)
{
	cJSON *who;
	long status = 0;

	if (r->preflight_done)
		return 0;
	if (r->preflight_failed) {
		*err = r->preflight_err;
		return -1;
	}
	who = ref_http_json(r->http, "GET", "/v1/whoami", NULL, "preflight (whoami)", &status, err);
	if (who == NULL) {
		if (status == 0) {
			char why[sizeof(err->message)];

			snprintf(why, sizeof(why), "%s", err->message);
			sbxd_error_set(err, SBXD_UNAVAILABLE, "CreateOS control plane unreachable at %s (%s)",
				       r->s.base_url, why);
		}
		else
			snprintf(err->type, sizeof(err->type), "%s", SBXD_UNAVAILABLE);
		return -1;
	}
	cJSON_Delete(who);
	if (pick_shape(r, err) != 0) {
		if (strcmp(err->type, SBXD_UNAVAILABLE) == 0) {
			r->preflight_failed = true;
			r->preflight_err = *err;
		}
		return -1;
	}
#ifndef MUT_WHOAMI_EVERY_RUN
	r->preflight_done = true;
#endif
	return 0;
}

static int preflight(struct ref *r, sbxd_error *err)
{
	int rc;

	pthread_mutex_lock(r->lock);
	rc = preflight_locked(r, err);
	pthread_mutex_unlock(r->lock);
	return rc;
}

/* ---- guests ---- */

static bool is_gone(const char *status)
{
	return status == NULL || strcmp(status, "destroyed") == 0 || strcmp(status, "destroying") == 0 ||
	       strcmp(status, "failed") == 0;
}

/* Deletes the guest; failures are logged (with the id) and returned. */
static int delete_guest(struct ref *r, const char *id, const char *name)
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
		    offset >= cJSON_GetObjectItemCaseSensitive(pg, "total")->valueint) {
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
static char *create_guest(struct ref *r, const char *name, cJSON *egress, const cJSON *env,
			  sbxd_error *err)
{
	cJSON *body = cJSON_CreateObject();
	cJSON *data = NULL;
	char *id = NULL;
	long status = 0;
	long pause = r->s.timeout_s + 120 > 60 ? r->s.timeout_s + 120 : 60;
	int attempts = 0;

#ifdef MUT_AUTOPAUSE_WRONG
	pause = r->s.timeout_s + 60;
#endif
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
#ifdef MUT_RETRY_CREATE_503
		if (data == NULL && status == 503 && attempts < 3) {
			sleep_ms(100);
			continue;
		}
#endif
#ifdef MUT_WAIT_ON_CAP
		if (data == NULL && status == 403 && attempts < 4) {
			sleep_ms(1500);
			continue;
		}
#endif
		break;
	}
	if (data == NULL) {
		if (status == 0 || status >= 500)
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

static int upload(struct ref *r, const char *id, const char *path, const char *data, sbxd_error *err)
{
	sbx_strbuf p = SBX_STRBUF_INIT;
	ref_resp resp = {0};
	int rc = 0;

	sbx_strbuf_printf(&p, "/v1/sandboxes/%s/files?path=%s", id, path);
	ref_http_raw(r->http, "PUT", sbx_strbuf_str(&p), data, strlen(data), "application/octet-stream",
		     NULL, NULL, &resp);
	if (ref_http_classify(&resp, "PUT", sbx_strbuf_str(&p), "upload code", err))
		rc = -1;
	ref_resp_free(&resp);
	sbx_strbuf_free(&p);
	return rc;
}

struct exec_out {
	char *stdout_s;
	char *stderr_s;
	long exit_code;
	long exec_ms;
};

static void exec_out_free(struct exec_out *o)
{
	free(o->stdout_s);
	free(o->stderr_s);
}

static int exec_in(struct ref *r, const char *id, const char *const *argv, struct exec_out *o,
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
};

static bool dl_sink(void *ctx, const void *data, size_t len)
{
	struct dl *d = ctx;

	d->size += (long)len;
	*d->total += (long)len;
#ifndef MUT_FILES_UNCAPPED
	if (*d->total > FILES_MAX_BYTES)
		return false; /* the cap is enforced while streaming */
#endif
	sbxd_sha256_update(&d->sha, data, len);
	return true;
}

static cJSON *collect_files(struct ref *r, const char *id, sbxd_error *err)
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
		struct dl d = {.size = 0, .total = &total};
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
#ifndef MUT_FILES_UNCAPPED
		if (++count > FILES_MAX_COUNT) {
			sbxd_error_set(err, SBXD_EXECUTION, "Return Files: more than %d files in "
				       "/workspace/artifacts", FILES_MAX_COUNT);
			goto out_fail;
		}
#else
		count++;
#endif
		sbxd_sha256_init(&d.sha);
		sbx_strbuf_printf(&p, "/v1/sandboxes/%s/files?path=/workspace/artifacts/%s", id, line);
		ref_http_raw(r->http, "GET", sbx_strbuf_str(&p), NULL, 0, NULL, dl_sink, &d, &resp);
		if (total > FILES_MAX_BYTES) {
#ifndef MUT_FILES_UNCAPPED
			sbxd_error_set(err, SBXD_EXECUTION, "Return Files: /workspace/artifacts holds more "
				       "than %ld bytes", FILES_MAX_BYTES);
			ref_resp_free(&resp);
			sbx_strbuf_free(&p);
			goto out_fail;
#endif
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

/* ---- one job in a guest ---- */

struct job {
	const char *name;     /* guest name */
	cJSON *egress;        /* given to create (owned by the job until then), NULL = omit */
	const char *policy;   /* egress policy text, for reuse drift checks */
	const cJSON *env;
	bool shell;           /* code is a shell command, not Python */
	const char *code;
	const char *file_prefix; /* "main" or "flow" */
	bool reuse;           /* find/resume the named guest, never delete it */
	bool return_files;
	bool executor;
};

static __attribute__((unused)) bool egress_matches(const cJSON *view_egress, const char *policy)
{
	int n = cJSON_GetArraySize(view_egress);
	const cJSON *first = cJSON_GetArrayItem(view_egress, 0);

	if (strcmp(policy, "*") == 0)
		return n == 0 || (n == 1 && cJSON_IsString(first) && strcmp(first->valuestring, "*") == 0);
	return n == 1 && cJSON_IsString(first) && strcmp(first->valuestring, policy) == 0;
}

/* Finds the reuse guest and makes it runnable. Returns its id (caller
 * frees), NULL with *err set on refusal/failure, or NULL with *err empty
 * when there is no such guest. */
static char *reuse_guest(struct ref *r, const struct job *j, sbxd_error *err)
{
	bool failed;
	cJSON *v = find_by_name(r, j->name, err, &failed);
	const char *status;
	char *id = NULL;
	int polls;

	if (v == NULL)
		return NULL;
	status = str_field(v, "status");
#ifndef MUT_REUSE_DRIFT
	if (!egress_matches(cJSON_GetObjectItemCaseSensitive(v, "egress"), j->policy)) {
		sbxd_error_set(err, SBXD_UNAVAILABLE, "Guest Reuse: guest %s (%s) no longer has the egress "
			       "policy [%s] it was created with; delete it to start afresh", j->name,
			       str_field(v, "id"), j->policy);
		goto out;
	}
#endif
	id = strdup(str_field(v, "id"));
	for (polls = 0; polls < 200; polls++) {
		sbx_strbuf p = SBX_STRBUF_INIT;
		cJSON *nv;

		if (status != NULL && strcmp(status, "running") == 0)
			goto out;
#ifndef MUT_NO_RESUME
		if (status != NULL && strcmp(status, "paused") == 0) {
			sbx_strbuf_printf(&p, "/v1/sandboxes/%s/resume", id);
			nv = ref_http_json(r->http, "POST", sbx_strbuf_str(&p), NULL, "resume sandbox", NULL, err);
			sbx_strbuf_free(&p);
			if (nv == NULL)
				goto out_fail;
			cJSON_Delete(nv);
		}
#else
		if (status != NULL && strcmp(status, "paused") == 0)
			goto out;
#endif
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

static bool should_delete(const struct job *j, bool ok, long exit_code)
{
	if (j->reuse)
		return false;
#ifdef MUT_DELETE_ONLY_ON_SUCCESS
	if (!j->executor && (!ok || exit_code != 0))
		return false;
#endif
#ifdef MUT_LEAK_ON_TIMEOUT
	if (ok && exit_code == -1)
		return false;
#endif
#ifdef MUT_EXEC_LEAK
	if (j->executor && (!ok || exit_code != 0))
		return false;
#endif
	return true;
}

#ifdef MUT_SHARED_OUTPUT
static char shared_stdout[1 << 16]; /* the bug: one buffer for every thread */
#endif

static cJSON *do_job(struct ref *r, struct job *j, sbxd_error *err)
{
	char tbuf[24], fname[80], hex[16];
	const char *argv[8];
	struct exec_out o = {0};
	char *id = NULL;
	cJSON *files = NULL;
	cJSON *res = NULL;
	bool ok = false;
	double t0 = 0;

	if (preflight(r, err) != 0)
		goto out;
	if (j->reuse) {
		err->type[0] = '\0';
		id = reuse_guest(r, j, err);
		if (id == NULL && err->type[0] != '\0')
			goto out;
	}
	if (id == NULL) {
		id = create_guest(r, j->name, j->egress, j->env, err);
		j->egress = NULL; /* owned by the create body now */
		if (id == NULL)
			goto out;
	}
	snprintf(tbuf, sizeof(tbuf), "%ld", r->s.timeout_s);
	if (j->shell) {
		const char *a[] = {"timeout", "--signal=KILL", tbuf, "sh", "-c", j->code, NULL};

		memcpy(argv, a, sizeof(a));
	} else {
		random_hex(hex, 12);
		snprintf(fname, sizeof(fname), "/workspace/%s_%s.py", j->file_prefix, hex);
		if (upload(r, id, fname, j->code, err) != 0)
			goto out_delete;
#ifdef MUT_IGNORE_TIMEOUT
		{
			const char *a[] = {"python3", fname, NULL};

			memcpy(argv, a, sizeof(a));
		}
#else
		{
			const char *a[] = {"timeout", "--signal=KILL", tbuf, "python3", fname, NULL};

			memcpy(argv, a, sizeof(a));
		}
#endif
	}
	t0 = now_ms();
	if (exec_in(r, id, argv, &o, err) != 0)
		goto out_delete;
#ifndef MUT_NO_TIMEOUT_MAP
	/* `timeout` exits 124 when it stops the command; with --signal=KILL
	 * coreutils kills its own process group too and exits 137 instead, so
	 * a 137 that took the whole timeout is the timeout as well (an early
	 * 137 stays a kill, e.g. for memory). */
	if (o.exit_code == 124 ||
	    (o.exit_code == 137 && elapsed_ms(t0) >= (double)r->s.timeout_s * 1000.0))
		o.exit_code = -1;
#else
	(void)t0;
	(void)elapsed_ms;
#endif
	if (j->return_files) {
		files = collect_files(r, id, err);
		if (files == NULL)
			goto out_delete;
	}
	ok = true;
#ifdef MUT_SHARED_OUTPUT
	snprintf(shared_stdout, sizeof(shared_stdout), "%s", o.stdout_s);
	sleep_ms(400); /* wide race window: the other runs land here too */
	free(o.stdout_s);
	o.stdout_s = strdup(shared_stdout);
#endif
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "stdout", o.stdout_s);
	cJSON_AddStringToObject(res, "stderr", o.stderr_s);
	cJSON_AddNumberToObject(res, "exit_code", (double)o.exit_code);
	if (o.exec_ms >= 0)
		cJSON_AddNumberToObject(res, "execution_time_ms", (double)o.exec_ms);
	else
		cJSON_AddNullToObject(res, "execution_time_ms");
	if (files != NULL)
		cJSON_AddItemToObject(res, "files", files);
	cJSON_AddStringToObject(res, "guest_name", j->name);
	cJSON_AddStringToObject(res, "sandbox_id", id);
out_delete:
	if (should_delete(j, ok, o.exit_code))
		(void)delete_guest(r, id, j->name); /* finally: also when the run failed */
out:
	cJSON_Delete(j->egress);
	j->egress = NULL;
	exec_out_free(&o);
	free(id);
	return res;
}

static cJSON *egress_for(bool allow_network)
{
	cJSON *e = cJSON_CreateArray();

	if (allow_network) {
		cJSON_AddItemToArray(e, cJSON_CreateString("*"));
		return e;
	}
#if defined(MUT_EGRESS_EMPTY_WHEN_OFF)
	return e;
#elif defined(MUT_EGRESS_STAR_WHEN_OFF)
	cJSON_AddItemToArray(e, cJSON_CreateString("*"));
	return e;
#else
	cJSON_AddItemToArray(e, cJSON_CreateString("240.0.0.0/4"));
	return e;
#endif
}

#ifdef MUT_LOCAL_FALLBACK
/* The bug: when the control plane is unusable, run the code on the host. */
static cJSON *run_locally(const char *code)
{
	char path[] = "/tmp/sbx-ref-fallback-XXXXXX";
	sbx_strbuf out = SBX_STRBUF_INIT;
	char cmd[128], buf[4096];
	int fd = mkstemp(path);
	FILE *p;
	size_t n;
	int st;
	cJSON *res;

	if (fd < 0 || write(fd, code, strlen(code)) < 0)
		return NULL;
	close(fd);
	snprintf(cmd, sizeof(cmd), "python3 %s", path);
	p = popen(cmd, "r");
	if (p == NULL)
		return NULL;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		sbx_strbuf_append(&out, buf, n);
	st = pclose(p);
	unlink(path);
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "stdout", sbx_strbuf_str(&out));
	cJSON_AddStringToObject(res, "stderr", "");
	cJSON_AddNumberToObject(res, "exit_code", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	cJSON_AddNullToObject(res, "execution_time_ms");
	sbx_strbuf_free(&out);
	return res;
}
#endif

/* ---- the three surfaces ---- */

static cJSON *ref_run(void *be, const char *code, const cJSON *env, sbxd_error *err)
{
	struct ref *r = be;
	char name[24], hex[24];
	struct job j = {0};
	cJSON *res;

	if (refuse_early(r, r->s.allow_network, true, err) != 0)
		return NULL;
	random_hex(hex, 19);
	snprintf(name, sizeof(name), "lf-%.19s", hex);
	j.name = name;
	j.env = env;
	j.code = code;
	j.file_prefix = "main";
#if defined(MUT_FORWARD_DOMAINS) || defined(MUT_CLAIM_ALLOWLIST) || defined(MUT_CREATE_BEFORE_REFUSAL)
	if (r->s.domain_count > 0) {
		const char *p = r->s.domains;

		j.egress = cJSON_CreateArray();
		while (*p != '\0') {
			const char *b, *e;

			while (*p == ' ' || *p == ',')
				p++;
			b = p;
			while (*p != '\0' && *p != ',')
				p++;
			e = p;
			while (e > b && e[-1] == ' ')
				e--;
			if (e > b) {
				char item[256];

				snprintf(item, sizeof(item), "%.*s", (int)(e - b), b);
				cJSON_AddItemToArray(j.egress, cJSON_CreateString(item));
			}
		}
#ifdef MUT_CREATE_BEFORE_REFUSAL
		{
			char *id;

			if (preflight(r, err) != 0)
				return NULL;
			id = create_guest(r, name, j.egress, env, err);
			if (id != NULL)
				delete_guest(r, id, name);
			free(id);
			sbxd_error_set(err, SBXD_UNAVAILABLE, "LANGFLOW_SANDBOX_ALLOWED_DOMAINS is set, but "
				       "CreateOS does not enforce host-name egress rules");
			return NULL;
		}
#endif
	}
#endif
	if (j.egress == NULL)
		j.egress = egress_for(r->s.allow_network);
	res = do_job(r, &j, err);
#ifdef MUT_LOCAL_FALLBACK
	if (res == NULL && strstr(err->message, "unreachable") != NULL)
		res = run_locally(code);
#endif
	return res;
}

static cJSON *ref_component_run(void *be, const cJSON *req, sbxd_error *err)
{
	struct ref *r = be;
	const char *mode = str_field(req, "mode");
	const char *reuse = str_field(req, "reuse");
	bool net = bool_field(req, "allow_network", false);
	char name[24], hex[72];
	struct job j = {0};

	if (refuse_early(r, net, false, err) != 0)
		return NULL;
	j.shell = mode != NULL && strcmp(mode, "shell") == 0;
	j.code = str_field(req, "code");
	j.file_prefix = "main";
	j.return_files = bool_field(req, "return_files", false);
	j.policy = net ? "*" : "240.0.0.0/4";
	j.egress = egress_for(net);
	if (reuse != NULL && strcmp(reuse, "flow") == 0) {
		sbx_strbuf key = SBX_STRBUF_INIT;
		unsigned char digest[32];
		const char *flow = str_field(req, "flow_id");
		const char *comp = str_field(req, "component_id");

		sbx_strbuf_printf(&key, "%s\x1f%s\x1f%s", flow ? flow : "", comp ? comp : "", j.policy);
		sbxd_sha256(key.data, key.len, digest);
		sbx_strbuf_free(&key);
		sbxd_hex(digest, 32, hex);
		hex[17] = '\0';
		snprintf(name, sizeof(name), "lf-c-%.17s", hex);
		j.reuse = true;
	} else {
		random_hex(hex, 19);
		snprintf(name, sizeof(name), "lf-%.19s", hex);
	}
	j.name = name;
	return do_job(r, &j, err);
}

static cJSON *ref_executor_run(void *be, const cJSON *req, sbxd_error *err)
{
	struct ref *r = be;
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(req, "allow_network");
	char name[24], hex[24];
	struct job j = {0};

	if (refuse_early(r, true, false, err) != 0)
		return NULL;
	random_hex(hex, 17);
	snprintf(name, sizeof(name), "lf-x-%.17s", hex);
	j.name = name;
	j.code = str_field(req, "code");
	j.file_prefix = "flow";
	j.executor = true;
	if (cJSON_IsBool(net))
		j.egress = egress_for(cJSON_IsTrue(net)); /* configured */
	return do_job(r, &j, err);
}

static int ref_shutdown(void *be, sbxd_error *err)
{
	struct ref *r = be;

	r->shut = true; /* per-run guests are deleted by their runs; nothing else to do */
	return 0;
}

static int ref_reset_after_fork(void *be, sbxd_error *err)
{
	struct ref *r = be;

#ifdef MUT_FORK_SHARES_CONN
	/* mutant: keeps the parent's lock and its pool of open connections */
	(void)r;
	(void)err;
#else
	r->lock = malloc(sizeof(*r->lock)); /* the parent's lock may be held: abandon it */
	if (r->lock == NULL) {
		sbxd_error_set(err, "MemoryError", "reset_after_fork: out of memory");
		return -1;
	}
	pthread_mutex_init(r->lock, NULL);
	ref_http_reset_after_fork(r->http);
#endif
	return 0;
}

int main(void)
{
	static const sbxd_vtable vt = {
		.name = "createos",
		.driver = "sbx-ref-backend 0.1.0 (" REF_VARIANT ")",
		.capabilities = ref_capabilities,
		.run = ref_run,
		.shutdown = ref_shutdown,
		.reset_after_fork = ref_reset_after_fork,
		.component_run = ref_component_run,
		.executor_run = ref_executor_run,
	};
	struct ref r;
	int rc;

	memset(&r, 0, sizeof(r));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	settings_load(&r.s);
	r.http = ref_http_new(r.s.base_url, r.s.api_key);
	r.lock = malloc(sizeof(*r.lock));
	if (r.http == NULL || r.lock == NULL) {
		fprintf(stderr, "sbx-ref-backend: out of memory\n");
		free(r.lock);
		ref_http_free(r.http);
		return 1;
	}
	pthread_mutex_init(r.lock, NULL);
	ref_http_set_timeout_ms(r.http, (r.s.timeout_s + HTTP_SLACK_S) * 1000L);
	rc = sbxd_serve(&vt, &r, stdin, stdout);
	pthread_mutex_destroy(r.lock);
	free(r.lock);
	ref_http_free(r.http);
	curl_global_cleanup();
	return rc;
}

/* sbx-ref-backend: a conformance driver that does what the CreateOS
 * integration (langflow-sandbox-createos 0.2) does, for its three surfaces:
 * the Langflow sandbox backend, the "CreateOS Sandbox" component (guest
 * reuse, returned files) and the whole-flow executor. See the spec section
 * "Facts: the CreateOS integration" in backend-conformance.md. This file: the
 * driver's ops (capabilities, the three surfaces, fork) and main; the rest
 * is described in ref.h.
 *
 * `--quirk NAME` makes it the mutant NAME (ref_quirks.c), which breaks
 * exactly one promise so the suite can prove it catches it. Without a quirk
 * this is the reference, which must never run code outside a control-plane
 * guest, never retry, and always delete its per-run guests. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ref.h"
#include "sbx/sys.h"
#include "sbx/http_client.h"
#include "sbx/strbuf.h"

/* ---- capabilities ---- */

static cJSON *ref_capabilities(void *be, sbxd_error *err)
{
	struct ref *r = be;
	cJSON *c = cJSON_CreateObject();

	if (r->q.io_in_capabilities)
		(void)preflight(r, err);
	cJSON_AddStringToObject(c, "isolation", "hardware-virtualized");
	cJSON_AddBoolToObject(c, "supports_deny_all_egress", true);
	cJSON_AddBoolToObject(c, "supports_domain_allowlist", r->q.claim_allowlist);
	cJSON_AddNullToObject(c, "max_timeout_seconds");
	return c;
}

/* ---- egress ---- */

static cJSON *egress_for(const struct ref *r, bool allow_network)
{
	cJSON *e = cJSON_CreateArray();

	if (allow_network || r->q.egress_star_when_off)
		cJSON_AddItemToArray(e, cJSON_CreateString("*"));
	else if (!r->q.egress_empty_when_off)
		cJSON_AddItemToArray(e, cJSON_CreateString("240.0.0.0/4"));
	return e;
}

/* The local-fallback quirk's bug: when the control plane is unusable, run
 * the code on the host. */
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

/* The forward-domains quirks: ALLOWED_DOMAINS items as host rules. */
static cJSON *domains_egress(const struct ref *r)
{
	cJSON *e = cJSON_CreateArray();
	const char *p = r->s.domains;

	while (*p != '\0') {
		const char *b, *end;

		while (*p == ' ' || *p == ',')
			p++;
		b = p;
		while (*p != '\0' && *p != ',')
			p++;
		end = p;
		while (end > b && end[-1] == ' ')
			end--;
		if (end > b) {
			char item[256];

			snprintf(item, sizeof(item), "%.*s", (int)(end - b), b);
			cJSON_AddItemToArray(e, cJSON_CreateString(item));
		}
	}
	return e;
}

/* The create-before-refusal quirk's bug: a guest is created (and deleted)
 * before the domains are refused. Consumes egress; always returns NULL. */
static cJSON *create_then_refuse(struct ref *r, const char *name, cJSON *egress, const cJSON *env,
				 sbxd_error *err)
{
	char *id;

	if (preflight(r, err) != 0) {
		cJSON_Delete(egress);
		return NULL;
	}
	id = create_guest(r, name, egress, env, false, err);
	if (id != NULL)
		delete_guest(r, id, name);
	free(id);
	sbxd_error_set(err, SBXD_UNAVAILABLE, "LANGFLOW_SANDBOX_ALLOWED_DOMAINS is set, but "
		       "CreateOS does not enforce host-name egress rules");
	return NULL;
}

/* ---- the three surfaces ---- */

static cJSON *ref_run(void *be, const char *code, const cJSON *env, sbxd_error *err)
{
	struct ref *r = be;
	char name[24], hex[24];
	struct job j = {0};
	cJSON *res;

	if (refuse_early(r, r->s.allow_network, true, err) != 0)
		return NULL;
	(void)sbx_random_hex(hex, 19);
	snprintf(name, sizeof(name), "lf-%.19s", hex);
	j.name = name;
	j.env = env;
	j.code = code;
	j.file_prefix = "main";
	if (r->s.domain_count > 0 &&
	    (r->q.forward_domains || r->q.claim_allowlist || r->q.create_before_refusal)) {
		j.egress = domains_egress(r);
		if (r->q.create_before_refusal)
			return create_then_refuse(r, name, j.egress, env, err);
	}
	if (j.egress == NULL)
		j.egress = egress_for(r, r->s.allow_network);
	res = do_job(r, &j, err);
	if (r->q.local_fallback && res == NULL && strstr(err->message, "unreachable") != NULL)
		res = run_locally(code);
	return res;
}

/* The node trims what it returns, as the published component does (spec
 * appendix: `result` and `stderr` are the guest's output `.strip()`ped);
 * a backend's run stays byte-exact (RES-001). */
static void trim_field(cJSON *res, const char *k)
{
	const char *v = str_field(res, k);
	size_t n;
	char *t;

	if (v == NULL)
		return;
	while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r' || *v == '\f' || *v == '\v')
		v++;
	n = strlen(v);
	while (n > 0 && strchr(" \t\n\r\f\v", v[n - 1]) != NULL)
		n--;
	t = strndup(v, n);
	if (t != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(res, k, cJSON_CreateString(t));
	free(t);
}

static cJSON *component_result(cJSON *res)
{
	trim_field(res, "stdout");
	trim_field(res, "stderr");
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
	j.egress = egress_for(r, net);
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
		(void)sbx_random_hex(hex, 19);
		snprintf(name, sizeof(name), "lf-%.19s", hex);
	}
	j.name = name;
	return component_result(do_job(r, &j, err));
}

static cJSON *ref_executor_run(void *be, const cJSON *req, sbxd_error *err)
{
	struct ref *r = be;
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(req, "allow_network");
	char name[24], hex[24];
	struct job j = {0};

	if (refuse_early(r, true, false, err) != 0)
		return NULL;
	(void)sbx_random_hex(hex, 17);
	snprintf(name, sizeof(name), "lf-x-%.17s", hex);
	j.name = name;
	j.code = str_field(req, "code");
	j.file_prefix = "flow";
	j.executor = true;
	if (cJSON_IsBool(net))
		j.egress = egress_for(r, cJSON_IsTrue(net)); /* configured */
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

	if (r->q.fork_shares_conn)
		return 0; /* the bug: keeps the parent's lock and its open connections */
	r->lock = malloc(sizeof(*r->lock)); /* the parent's lock may be held: abandon it */
	if (r->lock == NULL) {
		sbxd_error_set(err, "MemoryError", "reset_after_fork: out of memory");
		return -1;
	}
	pthread_mutex_init(r->lock, NULL);
	ref_http_reset_after_fork(r->http);
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: sbx-ref-backend [--quirk NAME]\n"
	      "The reference CreateOS backend driver (line protocol on stdin/stdout).\n"
	      "--quirk NAME turns it into the mutant NAME, one of:\n", f);
	ref_quirks_list(f);
}

/* Parses argv into the quirks; returns -1 to go on, else an exit code. */
static int parse_args(int argc, char **argv, struct ref_quirks *q, char *variant, size_t cap)
{
	int i;

	snprintf(variant, cap, "reference");
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quirk") == 0 && i + 1 < argc && ref_quirk_set(q, argv[i + 1])) {
			snprintf(variant, cap, "mutant %s", argv[++i]);
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "sbx-ref-backend: bad argument \"%s\"\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	static char driver[128];
	static sbxd_vtable vt = {
		.name = "createos",
		.driver = driver,
		.capabilities = ref_capabilities,
		.run = ref_run,
		.shutdown = ref_shutdown,
		.reset_after_fork = ref_reset_after_fork,
		.component_run = ref_component_run,
		.executor_run = ref_executor_run,
	};
	char variant[64];
	struct ref r;
	int rc;

	memset(&r, 0, sizeof(r));
	rc = parse_args(argc, argv, &r.q, variant, sizeof(variant));
	if (rc >= 0)
		return rc;
	snprintf(driver, sizeof(driver), "sbx-ref-backend 0.1.0 (%s)", variant);
	sbx_http_global_init();
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
	sbx_http_global_cleanup();
	return rc;
}

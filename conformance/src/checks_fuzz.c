/* checks_fuzz: FUZZ-CASE, a backend_fuzzer input (a finding, a corpus
 * entry) run as a check: `sbx-conform --fuzz-case FILE`. The input decodes
 * as the fuzzer decodes it (fz_input.c), its settings become the driver's
 * environment, its fault plan the case's tenant-scoped fault rules, and its
 * calls run through fz_session.c; the fuzzer's own invariants (fz_check.c)
 * then judge the outcome, so a finding fails here with the invariant it
 * broke in the fuzzer, as the check's failure; the explanation (the
 * settings, the fault plan, the answers, the journal) is in its details.
 *
 * The invariants judge cleanup themselves (3 cleanup, with the documented
 * lost-create orphan): the case's own leftover verdict is not taken. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "fz.h"

#define FUZZ_CASE_MAX 4096 /* bytes of an input that mean anything: a few hundred at most */

static bool read_case(struct cf_case *c, uint8_t *buf, size_t *len)
{
	FILE *f = fopen(c->cf->fuzz_case, "rb");

	if (f == NULL) {
		cf_error(c, "--fuzz-case %s: %s", c->cf->fuzz_case, strerror(errno));
		return false;
	}
	*len = fread(buf, 1, FUZZ_CASE_MAX, f);
	fclose(f);
	return true;
}

/* What the guest code takes for a guest's cwd: the mock's contained guests
 * run in /workspace; plain ones somewhere under its work dir, which the
 * admin API does not say: then no cwd counts as the host's. */
static const char *guard_dir(struct cf_case *c)
{
	sbx_err err = {{0}};
	cJSON *s = cf_admin(c->cf, "GET", "/_mock/settings", NULL, &err);
	bool contained = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "contained"));

	cJSON_Delete(s);
	if (!contained)
		cf_detail(c, "the mock runs plain guests: the trip-wire is not armed (2 fallback judges the canary only)");
	return contained ? "/workspace" : "/";
}

static cJSON *shape_catalog(struct cf_case *c)
{
	sbx_err err = {{0}};
	cJSON *d = cf_api(c, "GET", "/v1/shapes?limit=500", NULL, NULL, &err);
	cJSON *shapes = cJSON_DetachItemFromObjectCaseSensitive(d, "data");

	if (!cJSON_IsArray(shapes)) {
		cJSON_Delete(shapes);
		shapes = cJSON_IsArray(d) ? cJSON_Duplicate(d, true) : cJSON_CreateArray();
	}
	cJSON_Delete(d);
	return shapes;
}

static char *read_all(const char *path)
{
	sbx_strbuf b = SBX_STRBUF_INIT;
	char buf[4096];
	size_t n;
	FILE *f = path != NULL ? fopen(path, "r") : NULL;

	if (f != NULL) {
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			sbx_strbuf_append(&b, buf, n);
		fclose(f);
	}
	return sbx_strbuf_detach(&b, NULL);
}

/* Starts the driver with the input's settings (hello + capabilities, as the
 * fuzzer does: the journal then holds only what those two caused). */
static struct cf_driver *start(struct cf_case *c, const struct fz_input *in, struct fz_outcome *out,
			       cJSON **caps)
{
	const char *env[20];
	char buf[2048], url[64];
	const char *et = NULL, *em = NULL;
	struct cf_driver *d;
	cJSON *j;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", cf_dead_port());
	fz_settings_env(in, url, c->key, env, buf, sizeof(buf));
	d = cf_start(c, env);
	if (d == NULL)
		return NULL;
	*caps = cf_op(d, "capabilities", NULL, 20, &et, &em);
	j = cf_journal(c);
	out->caps_io = cf_journal_count(j, NULL, NULL, 0, 999);
	cJSON_Delete(j);
	out->caps = *caps;
	out->driver_pid = (double)cf_driver_pid(d);
	return d;
}

/* After the calls: the faults go (the reads below must not meet them), the
 * journal, the sandboxes, and shutdown() when guests were left. */
static void collect(struct cf_case *c, struct cf_driver *d, struct fz_outcome *out)
{
	const cJSON *id;

	cJSON_ArrayForEach(id, c->fault_ids) {
		char path[96];
		sbx_err err = {{0}};

		snprintf(path, sizeof(path), "/_mock/faults/%d", id->valueint);
		cJSON_Delete(cf_admin(c->cf, "DELETE", path, NULL, &err));
	}
	out->journal = cf_journal(c);
	out->sandboxes = cf_sandboxes(c);
	if (out->journal == NULL)
		out->journal = cJSON_CreateArray();
	if (out->sandboxes == NULL)
		out->sandboxes = cJSON_CreateArray();
	if (cf_live_guests(c, out->sandboxes, NULL) > 0 || cf_driver_broken(d)) {
		if (!cf_driver_broken(d))
			cJSON_Delete(cf_op(d, "shutdown", NULL, 30, NULL, NULL));
		out->after_shutdown = cf_sandboxes(c);
	}
	out->stderr_tail = read_all(cf_driver_stderr_path(d));
	out->trip = cf_trip_exists(c);
}

/* The invariants; a broken one is the check's failure, its explanation
 * the details (one line each). */
static void judge(struct cf_case *c, const struct fz_input *in, struct fz_outcome *out)
{
	char inv[64], why[1024];
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (fz_check_report(in, out, inv, sizeof(inv), why, sizeof(why), m)) {
		if (m != NULL)
			fclose(m);
		free(text);
		cf_detail(c, "no invariant broken");
		return;
	}
	if (m != NULL)
		fclose(m);
	cf_fail(c, "invariant broken: %s: %s", inv, why);
	for (line = text != NULL ? strtok_r(text, "\n", &save) : NULL; line != NULL; line = strtok_r(NULL, "\n", &save))
		cf_detail(c, "%.900s", line);
	free(text);
}

void ck_fuzz_case(struct cf_case *c)
{
	static uint8_t buf[FUZZ_CASE_MAX];
	const char *prof = getenv("SBX_FUZZ_PROFILE"), *guard;
	struct fz_input in;
	struct fz_outcome out;
	struct cf_driver *d;
	cJSON *caps = NULL, *shapes;
	bool no_concurrent = false;
	size_t len = 0;
	unsigned i;

	if (c->cf->fuzz_case == NULL) {
		cf_skip(c, "no input: give one with --fuzz-case FILE");
		return;
	}
	if (!read_case(c, buf, &len))
		return;
	c->cleanup_skip = true; /* 3 cleanup judges it */
	fz_decode(buf, len, &in);
	memset(&out, 0, sizeof(out));
	out.backend_cmd = c->cf->backend_cmd;
	out.mock_url = c->cf->url;
	out.profile = prof != NULL && *prof != '\0' ? prof
		      : (c->cf->bundled_backend || strcmp(c->cf->driver_name, "createos") == 0) ? "createos-backend"
												 : "langflow-backend";
	out.createos = strcmp(out.profile, "createos-backend") == 0;
	out.shapes = shapes = shape_catalog(c); /* before the driver: not in its journal window */
	snprintf(out.key, sizeof(out.key), "%s", c->key);
	snprintf(out.trip_path, sizeof(out.trip_path), "%s", c->trip);
	for (i = 0; i < in.nruns; i++)
		cf_random_token(c, out.runs[i].token, sizeof(out.runs[i].token));
	guard = guard_dir(c);
	d = start(c, &in, &out, &caps);
	if (d == NULL)
		goto out;
	for (i = 0; i < in.nfaults; i++)
		if (cf_fault(c, fz_fault_rule(&in, i)) != 0)
			goto out;
	fz_session_run(&in, c, d, guard, &no_concurrent, &out);
	collect(c, d, &out);
	judge(c, &in, &out);
out:
	fz_outcome_free(&out);
	cJSON_Delete(caps);
	cJSON_Delete(shapes);
}

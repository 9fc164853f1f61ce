/* ref_job: one run in a guest, as the integration does it: preflight, find
 * or create the guest, upload the code, exec it under `timeout`, map the
 * timeout to -1, bring back files, and delete the guest in a "finally".
 *
 * Never runs code outside a guest and never keeps a per-run guest (reuse
 * guests are never deleted); the quirks that break those promises are read
 * here (should_delete, the exec argv, the timeout map, shared output). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "sbx/sys.h"

static bool should_delete(const struct ref *r, const struct job *j, bool ok, long exit_code)
{
	bool failed = !ok || exit_code != 0;

	if (j->reuse)
		return false;
	if (r->q.delete_only_on_success && !j->executor && failed)
		return false;
	if (r->q.leak_on_timeout && ok && exit_code == -1)
		return false;
	if (r->q.executor_leak && j->executor && failed)
		return false;
	return true;
}

/* The shared-output quirk's bug: one buffer for every thread. */
static char shared_stdout[1 << 16];

static void share_output(struct exec_out *o)
{
	snprintf(shared_stdout, sizeof(shared_stdout), "%s", o->stdout_s);
	sleep_ms(400); /* wide race window: the other runs land here too */
	free(o->stdout_s);
	o->stdout_s = strdup(shared_stdout);
}

/* Finds or creates the job's guest; returns its id (caller frees) or NULL. */
static char *job_guest(struct ref *r, struct job *j, sbxd_error *err)
{
	char *id = NULL;

	if (j->reuse) {
		err->type[0] = '\0';
		id = reuse_guest(r, j, err);
		if (id == NULL && err->type[0] != '\0')
			return NULL;
	}
	if (id == NULL) {
		id = create_guest(r, j->name, j->egress, j->env, j->reuse, err);
		j->egress = NULL; /* owned by the create body now */
	}
	return id;
}

/* Uploads Python code (not for shell) and fills argv (up to 7 entries + NULL)
 * with strings that live in tbuf / fname. Returns 0 or -1 with *err set. */
static int job_argv(struct ref *r, const struct job *j, const char *id, const char **argv,
		    char tbuf[24], char fname[80], sbxd_error *err)
{
	char hex[16];

	snprintf(tbuf, 24, "%ld", r->s.timeout_s);
	if (j->shell) {
		const char *a[] = {"timeout", "--signal=KILL", tbuf, "sh", "-c", j->code, NULL};

		memcpy(argv, a, sizeof(a));
		return 0;
	}
	(void)sbx_random_hex(hex, 12);
	snprintf(fname, 80, "/workspace/%s_%s.py", j->file_prefix, hex);
	if (upload(r, id, fname, j->code, err) != 0)
		return -1;
	if (r->q.ignore_timeout) {
		const char *a[] = {"python3", fname, NULL};

		memcpy(argv, a, sizeof(a));
	} else {
		const char *a[] = {"timeout", "--signal=KILL", tbuf, "python3", fname, NULL};

		memcpy(argv, a, sizeof(a));
	}
	return 0;
}

static cJSON *job_result(const struct job *j, const char *id, const struct exec_out *o, cJSON *files)
{
	cJSON *res = cJSON_CreateObject();

	cJSON_AddStringToObject(res, "stdout", o->stdout_s);
	cJSON_AddStringToObject(res, "stderr", o->stderr_s);
	cJSON_AddNumberToObject(res, "exit_code", (double)o->exit_code);
	if (o->exec_ms >= 0)
		cJSON_AddNumberToObject(res, "execution_time_ms", (double)o->exec_ms);
	else
		cJSON_AddNullToObject(res, "execution_time_ms");
	if (files != NULL)
		cJSON_AddItemToObject(res, "files", files);
	cJSON_AddStringToObject(res, "guest_name", j->name);
	cJSON_AddStringToObject(res, "sandbox_id", id);
	return res;
}

cJSON *do_job(struct ref *r, struct job *j, sbxd_error *err)
{
	char tbuf[24], fname[80];
	const char *argv[8];
	struct exec_out o = {0};
	char *id = NULL;
	cJSON *files = NULL;
	cJSON *res = NULL;
	bool ok = false;
	double t0;

	if (preflight(r, err) != 0)
		goto out;
	id = job_guest(r, j, err);
	if (id == NULL)
		goto out;
	if (job_argv(r, j, id, argv, tbuf, fname, err) != 0)
		goto out_delete;
	t0 = now_ms();
	if (exec_in(r, id, argv, &o, err) != 0)
		goto out_delete;
	/* `timeout` exits 124 when it stops the command; with --signal=KILL
	 * coreutils kills its own process group too and exits 137 instead, so
	 * a 137 that took the whole timeout is the timeout as well (an early
	 * 137 stays a kill, e.g. for memory). */
	if (!r->q.no_timeout_map &&
	    (o.exit_code == 124 ||
	     (o.exit_code == 137 && now_ms() - t0 >= (double)r->s.timeout_s * 1000.0)))
		o.exit_code = -1;
	if (j->return_files) {
		files = collect_files(r, id, err);
		if (files == NULL)
			goto out_delete;
	}
	ok = true;
	if (r->q.shared_output)
		share_output(&o);
	res = job_result(j, id, &o, files);
out_delete:
	if (should_delete(r, j, ok, o.exit_code))
		(void)delete_guest(r, id, j->name); /* finally: also when the run failed */
out:
	cJSON_Delete(j->egress);
	j->egress = NULL;
	exec_out_free(&o);
	free(id);
	return res;
}

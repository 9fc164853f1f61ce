/* checks_fault: the langflow-backend profile's FB and CLN families: no
 * fallback to the host whatever the control plane answers, and no guest left
 * behind after success, failure, timeout or an injected fault.
 *
 * Every fault rule a check installs is scoped to its case's tenant and
 * deleted by the case teardown; a check never decides from timing alone. */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "checks.h"

/* ---- FB: no fallback ---- */

struct fault_kind {
	const char *id;
	const char *what;
	const char *action; /* JSON of the action, NULL = control plane down */
};

#define FB_TIMEOUT 2

static const struct fault_kind FAULTS[] = {
	{"FB-001", "control plane down", NULL},
	{"FB-002", "401", "{\"kind\":\"http\",\"status\":401}"},
	{"FB-003", "402", "{\"kind\":\"http\",\"status\":402}"},
	{"FB-004", "403 over the account cap", "{\"kind\":\"http\",\"status\":403,\"code\":\"QUOTA_EXCEEDED\"}"},
	{"FB-005", "429", "{\"kind\":\"http\",\"status\":429,\"retry_after\":1}"},
	{"FB-006", "500", "{\"kind\":\"http\",\"status\":500}"},
	{"FB-007", "503", "{\"kind\":\"http\",\"status\":503}"},
	{"FB-008", "connection reset", "{\"kind\":\"reset\"}"},
	{"FB-009", "hang past the timeout", "{\"kind\":\"hang\",\"max_ms\":20000}"},
	{"FB-010", "malformed JSON", "{\"kind\":\"malformed_json\"}"},
	{"FB-011", "truncated body", "{\"kind\":\"truncated\"}"},
	{"FB-012", "empty 200", "{\"kind\":\"empty_200\"}"},
	{"FB-013", "fail envelope on a 200", "{\"kind\":\"http\",\"status\":200,\"envelope\":\"fail\"}"},
};

static const struct fault_kind *fault_for(const char *id)
{
	size_t i;

	for (i = 0; i < sizeof(FAULTS) / sizeof(FAULTS[0]); i++)
		if (strcmp(FAULTS[i].id, id) == 0)
			return &FAULTS[i];
	return NULL;
}

/* A loopback port nothing listens on (bound, then closed). */
int cf_dead_port(void)
{
	struct sockaddr_in a = {0};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port = 9;

	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

void ck_fb_check(struct cf_case *c)
{
	const struct fault_kind *f = fault_for(c->def->id);
	char url[128], tmo[64], canary[48], code[700];
	const char *env[4] = {tmo, NULL, NULL, NULL};
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res, *j;
	double t0;

	snprintf(tmo, sizeof(tmo), "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=%d", FB_TIMEOUT);
	if (f->action == NULL) {
		snprintf(url, sizeof(url), "CREATEOS_SANDBOX_BASE_URL=http://127.0.0.1:%d", cf_dead_port());
		env[1] = url;
	} else {
		cJSON *rule = cJSON_CreateObject();
		cJSON *m = cJSON_AddObjectToObject(rule, "match");

		cJSON_AddStringToObject(rule, "name", f->id);
		cJSON_AddStringToObject(m, "method", "POST");
		cJSON_AddStringToObject(m, "path", "/v1/sandboxes");
		cJSON_AddItemToObject(rule, "action", cJSON_Parse(f->action));
		if (cf_fault(c, rule) != 0)
			return;
	}
	d = cf_start(c, env);
	if (d == NULL)
		return;
	cf_random_token(c, canary, sizeof(canary));
	/* A recognisable prefix; the rest of the random token stays. */
	canary[0] = 'C';
	canary[1] = 'A';
	canary[2] = 'N';
	cf_canary_code(c, canary, code, sizeof(code));
	t0 = cf_now_ms();
	res = cf_run(d, code, NULL, CF_RUN_T, &et, &em);
	cf_detail(c, "fault: %s; run answered after %.0f ms", f->what, cf_now_ms() - t0);
	if (res != NULL) {
		const char *out = cf_str(res, "stdout") ? cf_str(res, "stdout") : "";

		cf_fail(c, "%s: the run succeeded (exit %g) instead of raising", f->what, cf_num(res, "exit_code", 0));
		if (strstr(out, canary) != NULL)
			cf_fail(c, "%s: the canary was printed: the code ran although the control plane failed", f->what);
	} else if (!cf_driver_broken(d)) {
		cf_detail(c, "raised %s: %s", et, em);
		if (!sandbox_error(et))
			cf_detail(c, "note: %s is not a Sandbox*Error class", et);
	}
	if (cf_trip_exists(c))
		cf_fail(c, "%s: the trip-wire %s exists: the code ran outside a guest", f->what, c->trip);
	if (f->action != NULL) {
		j = cf_journal(c);
		if (j != NULL && cf_journal_count(j, "POST", "/v1/sandboxes", 0, 999) == 0 && res == NULL)
			cf_detail(c, "the fault never fired: the backend raised before creating a guest");
		cf_keep_journal(c, j);
	}
	cJSON_Delete(res);
}

/* ---- CLN ---- */

void ck_cln_001(struct cf_case *c)
{
	static const char *const env[] = {"LANGFLOW_SANDBOX_TIMEOUT_SECONDS=1", NULL};
	static const struct {
		const char *label;
		const char *code;
	} runs[] = {
		{"success", "print('ok')\n"},
		{"user error", "import sys\nprint('failing')\nsys.exit(3)\n"},
		{"timeout", "import time\ntime.sleep(30)\n"},
		{"infrastructure fault (exec answers 500)", "print('never')\n"},
		{"transport fault (exec connection reset)", "print('never')\n"},
	};
	/* the exec faults of runs 3 and 4: an HTTP error, and no answer at all */
	static const char *const exec_faults[] = {"{\"kind\":\"http\",\"status\":500}", "{\"kind\":\"reset\"}"};
	struct cf_driver *d = cf_start(c, env);
	size_t i;

	if (d == NULL)
		return;
	for (i = 0; i < 5; i++) {
		const char *et, *em;
		cJSON *res;
		int live;

		if (i >= 3) {
			cJSON *rule = cJSON_Parse("{\"name\":\"CLN-001 exec fault\",\"match\":{\"method\":\"POST\","
						  "\"path\":\"/v1/sandboxes/{id}/exec\"},\"fire\":{\"times\":1}}");

			cJSON_AddItemToObject(rule, "action", cJSON_Parse(exec_faults[i - 3]));
			if (cf_fault(c, rule) != 0)
				return;
		}
		res = cf_run(d, runs[i].code, NULL, CF_RUN_T, &et, &em);
		if (res == NULL && cf_driver_broken(d))
			return;
		if (res != NULL)
			cf_detail(c, "%s: exit %g", runs[i].label, cf_num(res, "exit_code", 0));
		else
			cf_detail(c, "%s: raised %s", runs[i].label, et);
		live = cf_live_count(c, runs[i].label);
		if (live > 0)
			cf_fail(c, "after the %s run, %d guest(s) are left in a non-terminal state", runs[i].label, live);
		cJSON_Delete(res);
	}
}

void ck_cln_002(struct cf_case *c)
{
	cJSON *rule = cJSON_Parse("{\"name\":\"CLN-002 delete 500\",\"match\":{\"method\":\"DELETE\","
				  "\"path\":\"/v1/sandboxes/{id}\"},\"fire\":{\"times\":1},"
				  "\"action\":{\"kind\":\"http\",\"status\":500}}");
	struct cf_driver *d;
	const char *et, *em;
	char failed_id[80] = "";
	cJSON *res, *j, *sbs;
	const cJSON *e, *sb;
	bool reported;
	int live = 0;

	if (cf_fault(c, rule) != 0)
		return;
	d = cf_start(c, NULL);
	if (d == NULL)
		return;
	res = cf_run(d, "print('delete will fail')\n", NULL, CF_RUN_T, &et, &em);
	if (res == NULL && cf_driver_broken(d))
		return;
	j = cf_journal(c);
	cJSON_ArrayForEach(e, j) {
		const char *p = cf_str(e, "path");

		if (cf_str(e, "fault") != NULL && p != NULL && strncmp(p, "/v1/sandboxes/", 14) == 0 &&
		    strcmp(cf_str(e, "method"), "DELETE") == 0)
			snprintf(failed_id, sizeof(failed_id), "%s", p + 14);
	}
	if (failed_id[0] == '\0') {
		cf_skip(c, "the backend never deleted a guest, so the delete fault did not fire");
		goto out;
	}
	cf_driver_stop(d);
	reported = res == NULL || strstr(sbx_strbuf_str(&c->driver_stderr), failed_id) != NULL;
	if (!reported)
		cf_fail(c, "the delete of %s failed but the run succeeded silently: no error, and the driver's "
			"log does not name the guest", failed_id);
	else
		cf_detail(c, "the failed delete of %s was reported (%s)", failed_id,
			  res == NULL ? "run raised" : "driver log names the guest");
	sbs = cf_sandboxes(c);
	cJSON_ArrayForEach(sb, sbs) {
		if (!cf_status_live(cf_str(sb, "status")))
			continue;
		live++;
		if (strcmp(cf_str(sb, "id"), failed_id) != 0)
			cf_fail(c, "guest %s is left besides the one whose delete failed", cf_str(sb, "id"));
	}
	if (live > 1)
		cf_fail(c, "%d guests are left; at most the one whose delete failed may stay", live);
	cf_allow_leftover(c, failed_id);
	cJSON_Delete(sbs);
out:
	cf_keep_journal(c, j);
	cJSON_Delete(res);
}

void ck_cln_003(struct cf_case *c)
{
	struct cf_driver *d = cf_start(c, NULL);
	const char *et, *em;
	cJSON *res;
	int i, live;

	if (d == NULL)
		return;
	res = cf_run(d, "print('before shutdown')\n", NULL, CF_RUN_T, &et, &em);
	cJSON_Delete(res);
	for (i = 1; i <= 2; i++) {
		res = cf_op(d, "shutdown", NULL, 30, &et, &em);
		if (res == NULL) {
			cf_fail(c, "shutdown() call %d raised %s: %s", i, et, em);
			return;
		}
		cJSON_Delete(res);
	}
	cf_allow_leftover(c, "lf-c-"); /* reuse guests are documented to outlive the run */
	live = cf_live_count(c, "after shutdown() twice");
	if (live > 0)
		cf_fail(c, "after shutdown() twice, %d guest(s) created by the driver remain", live);
}

void ck_cln_004(struct cf_case *c)
{
	cJSON *rule = cJSON_Parse("{\"name\":\"CLN-004 lost create answer\",\"match\":{\"method\":\"POST\","
				  "\"path\":\"/v1/sandboxes\"},\"fire\":{\"times\":1},"
				  "\"action\":{\"kind\":\"commit_then_fail\",\"then\":\"reset\"}}");
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res;
	int live;

	if (cf_fault(c, rule) != 0)
		return;
	d = cf_start(c, NULL);
	if (d == NULL)
		return;
	res = cf_run(d, "print('lost create')\n", NULL, CF_RUN_T, &et, &em);
	cJSON_Delete(res);
	res = cf_op(d, "shutdown", NULL, 30, &et, &em);
	cJSON_Delete(res);
	live = cf_live_count(c, "after the lost create answer and shutdown()");
	if (live > 0) {
		cf_fail(c, "the control plane committed a create whose answer was lost; %d orphan guest(s) "
			"remain after the run and shutdown()", live);
		c->cleanup_skip = true;
		snprintf(c->cleanup_verdict, sizeof(c->cleanup_verdict), "skip");
		sbx_strbuf_puts(&c->cleanup_reason, "advisory check: the orphan is the subject of the check");
	}
}

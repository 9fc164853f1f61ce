/* checks_res: the langflow-backend profile's RES and CON families: results
 * come back byte-exact with the right exit code (timeouts as -1 within the
 * spec's slack), and concurrent or forked drivers never share output,
 * connections or locks.
 *
 * RES-002's slack is the only timing bound here, scaled by --timeout-scale. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checks.h"

/* ---- RES ---- */

void ck_res_001(struct cf_case *c)
{
	static const char utf8_out[] = "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\nline 2\n";
	static const char utf8_err[] = "err: \xc3\xbc\xc3\xb1\xc3\xaf \xe2\x9c\x97\n";
	char code[512];
	struct cf_driver *d = cf_start(c, NULL);
	const char *et, *em;
	cJSON *res;
	size_t i;

	if (d == NULL)
		return;
	snprintf(code, sizeof(code),
		 "import sys\nsys.stdout.write(%s)\nsys.stderr.write(%s)\nsys.stdout.flush()\nsys.exit(3)\n",
		 "'h\\u00e9llo w\\u00f6rld \\u2713 \\u65e5\\u672c\\u8a9e\\nline 2\\n'",
		 "'err: \\u00fc\\u00f1\\u00ef \\u2717\\n'");
	res = cf_run(d, code, NULL, CF_RUN_T, &et, &em);
	if (res == NULL) {
		cf_fail(c, "UTF-8 run raised %s: %s", et, em);
		return;
	}
	if (strcmp(cf_str(res, "stdout") ? cf_str(res, "stdout") : "", utf8_out) != 0)
		cf_fail(c, "stdout is not byte-exact: got \"%.120s\"", cf_str(res, "stdout"));
	if (strcmp(cf_str(res, "stderr") ? cf_str(res, "stderr") : "", utf8_err) != 0)
		cf_fail(c, "stderr is not byte-exact: got \"%.120s\"", cf_str(res, "stderr"));
	if (cf_num(res, "exit_code", -999) != 3)
		cf_fail(c, "exit code %g, expected 3", cf_num(res, "exit_code", -999));
	cJSON_Delete(res);
	res = cf_run(d, "import sys\nsys.stdout.write('0123456789abcdef' * 65536)\n", NULL, CF_RUN_T, &et, &em);
	if (res == NULL) {
		cf_fail(c, "1 MiB output run raised %s: %s", et, em);
		return;
	}
	{
		const char *out = cf_str(res, "stdout") ? cf_str(res, "stdout") : "";
		size_t len = strlen(out);
		bool ok = len == 1048576;

		for (i = 0; ok && i < len; i++)
			ok = out[i] == "0123456789abcdef"[i % 16];
		if (!ok)
			cf_fail(c, "1 MiB stdout came back as %zu bytes%s", len, len == 1048576 ? " with wrong content" : "");
		if (cf_num(res, "exit_code", -999) != 0)
			cf_fail(c, "1 MiB run: exit code %g, expected 0", cf_num(res, "exit_code", -999));
	}
	cJSON_Delete(res);
	res = cf_run(d, "raise SystemExit(42)\n", NULL, CF_RUN_T, &et, &em);
	if (res == NULL)
		cf_fail(c, "a non-zero exit raised %s instead of returning a result: %s", et, em);
	else if (cf_num(res, "exit_code", -999) != 42)
		cf_fail(c, "exit code %g, expected 42", cf_num(res, "exit_code", -999));
	cJSON_Delete(res);
}

#define RES_002_SLACK_S 5.0

void ck_res_002(struct cf_case *c)
{
	static const char *const env[] = {"LANGFLOW_SANDBOX_TIMEOUT_SECONDS=1", NULL};
	struct cf_driver *d = cf_start(c, env);
	const char *et, *em;
	double t0, el;
	cJSON *res;
	int live;

	if (d == NULL)
		return;
	t0 = cf_now_ms();
	res = cf_run(d, "import time\nprint('start', flush=True)\ntime.sleep(60)\n", NULL, CF_RUN_T, &et, &em);
	el = (cf_now_ms() - t0) / 1000.0;
	cf_detail(c, "timeout 1 s, answered after %.2f s (stated slack %.0f s)", el, RES_002_SLACK_S);
	if (res == NULL) {
		if (!cf_driver_broken(d))
			cf_fail(c, "a run past its timeout raised %s instead of returning exit -1: %s", et, em);
	} else if (cf_num(res, "exit_code", 0) != -1) {
		cf_fail(c, "a run past its timeout returned exit %g, expected -1", cf_num(res, "exit_code", 0));
	}
	if (el > (1.0 + RES_002_SLACK_S) * c->cf->timeout_scale)
		cf_fail(c, "answered after %.2f s, beyond timeout + %.0f s slack", el, RES_002_SLACK_S);
	live = cf_live_count(c, "after the timed-out run");
	if (live > 0)
		cf_fail(c, "the timed-out run's guest is still there");
	cJSON_Delete(res);
}

void ck_res_003(struct cf_case *c)
{
	cJSON *rule = cJSON_Parse("{\"name\":\"RES-003 oom\",\"match\":{\"method\":\"POST\","
				  "\"path\":\"/v1/sandboxes/{id}/exec\"},\"action\":{\"kind\":\"exec_oom\"}}");
	struct cf_driver *d;
	const char *et, *em;
	cJSON *res;

	if (cf_fault(c, rule) != 0)
		return;
	d = cf_start(c, NULL);
	if (d == NULL)
		return;
	res = cf_run(d, "x = bytearray(10 ** 10)\n", NULL, CF_RUN_T, &et, &em);
	if (res == NULL)
		cf_fail(c, "a guest killed for memory raised %s instead of returning exit 137: %s", et, em);
	else if (cf_num(res, "exit_code", 0) != 137)
		cf_fail(c, "a guest killed for memory returned exit %g, expected 137", cf_num(res, "exit_code", 0));
	cJSON_Delete(res);
}

void ck_res_004(struct cf_case *c)
{
	struct cf_driver *d = cf_start(c, NULL);
	cJSON *env = cJSON_CreateObject();
	char tok[40];
	const char *et, *em;
	cJSON *res;

	if (d == NULL)
		goto out;
	cf_random_token(c, tok, sizeof(tok));
	cJSON_AddStringToObject(env, "SBX_CONFORM_VALUE", tok);
	res = cf_run(d, "import os\nprint(os.environ.get('SBX_CONFORM_VALUE', 'missing'))\n", env, CF_RUN_T,
		     &et, &em);
	if (res == NULL)
		cf_fail(c, "run with env raised %s: %s", et, em);
	else if (strncmp(cf_str(res, "stdout") ? cf_str(res, "stdout") : "", tok, strlen(tok)) != 0)
		cf_fail(c, "the code saw SBX_CONFORM_VALUE=\"%.60s\", expected %s", cf_str(res, "stdout"), tok);
	cJSON_Delete(res);
out:
	cJSON_Delete(env);
}

/* ---- CON ---- */

#define CON_N 4

void ck_con_001(struct cf_case *c)
{
	struct cf_driver *d = cf_start(c, NULL);
	cJSON *f = cJSON_CreateObject();
	cJSON *runs = cJSON_AddArrayToObject(f, "runs");
	char toks[CON_N][24];
	const char *et, *em;
	const cJSON *o;
	cJSON *res = NULL, *j;
	int i = 0;

	if (d == NULL)
		goto out;
	for (i = 0; i < CON_N; i++) {
		cJSON *r = cJSON_CreateObject();
		char code[256];

		cf_random_token(c, toks[i], sizeof(toks[i]));
		snprintf(code, sizeof(code), "import time\nprint('%s', flush=True)\ntime.sleep(0.3)\nprint('%s')\n",
			 toks[i], toks[i]);
		cJSON_AddStringToObject(r, "code", code);
		cJSON_AddNullToObject(r, "env");
		cJSON_AddItemToArray(runs, r);
	}
	res = cf_op(d, "run_concurrent", f, CF_RUN_T, &et, &em);
	if (res == NULL) {
		if (is_error_type(et, "ProtocolError"))
			cf_skip(c, "surface not served: the driver does not serve run_concurrent (%s)", em);
		else if (!cf_driver_broken(d))
			cf_fail(c, "run_concurrent raised %s: %s", et, em);
		goto out;
	}
	i = 0;
	cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(res, "results")) {
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "result");
		char want[128];

		if (i >= CON_N)
			break;
		snprintf(want, sizeof(want), "%.23s\n%.23s\n", toks[i], toks[i]);
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ok")))
			cf_fail(c, "concurrent run %d failed: %s", i,
				cf_str(cJSON_GetObjectItemCaseSensitive(o, "error"), "message"));
		else if (strcmp(cf_str(r, "stdout") ? cf_str(r, "stdout") : "", want) != 0)
			cf_fail(c, "concurrent run %d got another run's output: \"%.80s\"", i, cf_str(r, "stdout"));
		i++;
	}
	if (i != CON_N)
		cf_fail(c, "run_concurrent answered %d results for %d runs", i, CON_N);
	j = cf_journal(c);
	if (j != NULL) {
		int cr = cf_journal_count(j, "POST", "/v1/sandboxes", 200, 299);
		int dl = cf_journal_count(j, "DELETE", "/v1/sandboxes/{id}", 200, 299);

		if (cr != CON_N || dl != CON_N)
			cf_fail(c, "%d concurrent runs created %d and deleted %d guests (expected %d and %d)",
				CON_N, cr, dl, CON_N, CON_N);
	}
	cf_keep_journal(c, j);
out:
	cJSON_Delete(res);
	cJSON_Delete(f);
}

/* The first connection serial (journal "conn") that entries [from, to) of
 * j share with entries [0, from), 0 when none: requests the child of a fork
 * sent over a connection its parent had opened. */
static double shared_connection(const cJSON *j, int from, int to)
{
	for (int i = from; i < to; i++) {
		double ci = cf_num(cJSON_GetArrayItem(j, i), "conn", 0);

		for (int k = 0; ci > 0 && k < from; k++) {
			if (cf_num(cJSON_GetArrayItem(j, k), "conn", 0) == ci)
				return ci;
		}
	}
	return 0;
}

void ck_con_002(struct cf_case *c)
{
	struct cf_driver *d = cf_start(c, NULL);
	char tok[3][40], code[120];
	const char *et, *em;
	cJSON *f, *res, *j;
	const cJSON *child;
	int i, before = -1;
	double conn;

	if (d == NULL)
		return;
	for (i = 0; i < 3; i++)
		cf_random_token(c, tok[i], sizeof(tok[i]));
	snprintf(code, sizeof(code), "print('%s')\n", tok[0]);
	res = cf_run(d, code, NULL, CF_RUN_T, &et, &em);
	if (res == NULL) {
		cf_fail(c, "the parent's first run raised %s: %s", et, em);
		return;
	}
	cJSON_Delete(res);
	/* what the parent sent before the fork (a real control plane has no
	 * journal: then only the behaviour is checked) */
	j = c->cf->kind != CF_REAL ? cf_journal(c) : NULL;
	if (j != NULL)
		before = cJSON_GetArraySize(j);
	cJSON_Delete(j);
	f = cJSON_CreateObject();
	snprintf(code, sizeof(code), "print('%s')\n", tok[1]);
	cJSON_AddStringToObject(f, "code", code);
	res = cf_op(d, "fork_check", f, CF_RUN_T, &et, &em);
	cJSON_Delete(f);
	if (res == NULL) {
		if (is_error_type(et, "ProtocolError"))
			cf_skip(c, "surface not served: fork_check (%s)", em);
		else if (!cf_driver_broken(d))
			cf_fail(c, "fork_check raised %s: %s", et, em);
		return;
	}
	child = cJSON_GetObjectItemCaseSensitive(res, "child");
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(child, "ok")))
		cf_fail(c, "the forked child's run failed after reset_after_fork(): %s",
			cf_str(cJSON_GetObjectItemCaseSensitive(child, "error"), "message"));
	else if (strstr(cf_s0(cf_str(cJSON_GetObjectItemCaseSensitive(child, "result"), "stdout")), tok[1]) == NULL)
		cf_fail(c, "the forked child's output is wrong");
	if (cf_num(res, "child_pid", 0) == (double)cf_driver_pid(d))
		cf_fail(c, "fork_check did not run in another process");
	cJSON_Delete(res);
	/* the parent waits in fork_check, so what came meanwhile is the child's */
	j = before >= 0 ? cf_journal(c) : NULL;
	if (j != NULL) {
		conn = shared_connection(j, before, cJSON_GetArraySize(j));
		if (conn > 0)
			cf_fail(c, "the forked child sent requests over connection %.0f, which its parent "
				   "opened before the fork (reset_after_fork must drop inherited connections)",
				conn);
		cf_keep_journal(c, j);
	}
	snprintf(code, sizeof(code), "print('%s')\n", tok[2]);
	res = cf_run(d, code, NULL, CF_RUN_T, &et, &em);
	if (res == NULL)
		cf_fail(c, "the parent's run after the fork raised %s: %s (shared connection or lock?)", et, em);
	else if (strstr(cf_s0(cf_str(res, "stdout")), tok[2]) == NULL)
		cf_fail(c, "the parent's run after the fork returned the wrong output");
	cJSON_Delete(res);
}

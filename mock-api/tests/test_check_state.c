/* sbx-mock --check-state DIR (issue 19): a support engineer validates a
 * state directory without starting a mock. The check goes through the
 * start's restore path (so a record a start would skip is reported with
 * the start's reason), changes nothing on disk (a torn tail is reported,
 * not cut), and exits 0 clean / 1 not clean / 2 unreadable.
 * argv[1] is the sbx-mock binary. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mock_http.h"
#include "mutation_log.h"
#include "sbx/mock.h"

static const char *g_bin;
static char g_dir[64];

static int check(char **out)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	size_t len = 0;
	FILE *f = open_memstream(out, &len);
	int rc;

	sbx_mock_config_init(&cfg);
	cfg.state_dir = g_dir;
	rc = sbx_mock_check_state(&cfg, f, &err);
	fclose(f);
	if (rc < 0)
		fail_msg("check: %s", err.msg);
	return rc;
}

static long log_size(void)
{
	char p[128];
	struct stat st;

	snprintf(p, sizeof(p), "%s/state.log", g_dir);
	assert_int_equal(stat(p, &st), 0);
	return (long)st.st_size;
}

static int run_bin(const char *dir)
{
	char cmd[512];
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' --check-state '%s' >/dev/null 2>&1", g_bin, dir);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void check_state_reports_without_changing_anything(void **state)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	sbx_mock *m;
	th_resp r;
	mock_mutlog *log;
	char *out = NULL;
	long size;
	FILE *f;
	char p[128];

	(void)state;
	sbx_mock_config_init(&cfg);
	cfg.quiet = true;
	cfg.state_dir = g_dir;
	m = sbx_mock_start(&cfg, &err);
	if (m == NULL)
		fail_msg("start: %s", err.msg);
	th_json(sbx_mock_url(m), "k1", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	assert_int_equal(r.status, 200);
	th_resp_free(&r);
	sbx_mock_stop(m);

	/* clean: every record restores; a live sandbox comes back paused */
	assert_int_equal(check(&out), 0);
	if (strstr(out, "1 tenants, 1 sandboxes, 1 paused") == NULL || strstr(out, "ok:") == NULL)
		fail_msg("clean report: %s", out);
	free(out);
	assert_int_equal(run_bin(g_dir), 0);

	/* a record a start would skip: named with the start's own reason */
	log = mock_mutlog_open(g_dir, true, false, NULL, NULL, NULL, &err);
	assert_non_null(log);
	assert_int_equal(mock_mutlog_append(log, "{\"t\":\"boot\"}", 12, &err), 0);
	mock_mutlog_close(log);
	assert_int_equal(check(&out), 1);
	if (strstr(out, "skipped at start: boot record without a valid start_wall_ms") == NULL)
		fail_msg("skipped record not reported: %s", out);
	free(out);

	/* a torn tail: reported, and the file is left as it is */
	snprintf(p, sizeof(p), "%s/state.log", g_dir);
	f = fopen(p, "a");
	fputs("xyz", f);
	fclose(f);
	size = log_size();
	assert_int_equal(check(&out), 1);
	if (strstr(out, "a start sets the last 3 bytes aside") == NULL)
		fail_msg("torn tail not reported: %s", out);
	free(out);
	assert_int_equal(log_size(), size);
	assert_int_equal(run_bin(g_dir), 1);

	/* no log there: exit 2 */
	assert_int_equal(run_bin("/nonexistent-sbx-state-dir"), 2);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(check_state_reports_without_changing_anything),
	};
	char cmd[128];
	int rc;

	if (argc < 2)
		return 2;
	g_bin = argv[1];
	snprintf(g_dir, sizeof(g_dir), "/tmp/sbx-check-state-XXXXXX");
	if (mkdtemp(g_dir) == NULL)
		return 1;
	curl_global_init(CURL_GLOBAL_ALL);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	if (system(cmd) != 0)
		rc = rc != 0 ? rc : 1;
	return rc;
}

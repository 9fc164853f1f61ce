/* sbx-conform: runs the conformance checks of spec/backend-conformance.md
 * against a sandbox backend driver and reports, check by check.
 *
 * With no arguments: starts the embedded mock control plane on an ephemeral
 * loopback port and checks the bundled reference backend (and the bundled
 * reference host for host-gate). Exit codes: 0 every check passed (skips and
 * advisory failures allowed), 1 a check or its cleanup failed, 2 usage or
 * harness error. Never talks to a real control plane unless --api-url says
 * so, and never leaves a driver process or a guest behind. `sbx-conform merge`
 * (merge.c) combines the JSON reports of --shard runs into one. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conform.h"
#include "options.h"
#include "report.h"
#ifdef SBX_HAVE_MOCK
#include "sbx/mock.h"
#endif

#ifndef SBX_CONFORM_ADAPTERS_DIR
#define SBX_CONFORM_ADAPTERS_DIR "conformance/adapters/sbx_harness"
#endif
#ifndef SBX_CONFORM_FIXTURES_DIR
#define SBX_CONFORM_FIXTURES_DIR "fixtures"
#endif
#ifndef SBX_CONFORM_INSTALL_LIBEXEC
#define SBX_CONFORM_INSTALL_LIBEXEC "/usr/local/libexec/sbx-harness"
#endif

static void usage(FILE *f)
{
	fputs("usage: sbx-conform [options]\n"
	      "       sbx-conform merge [--json F] [--junit F] [--summary-md F] ... REPORT.json...\n"
	      "Checks a Langflow sandbox backend against spec/backend-conformance.md.\n"
	      "With no options: embedded mock + bundled reference backend and host.\n\n"
	      "  --backend-cmd CMD       driver command line (run with /bin/sh -c)\n"
	      "  --python-backend M:F    a Python backend through the adapter (module:factory)\n"
	      "  --python-component M:C  a Langflow component class through the adapter (module:Class)\n"
	      "  --python PATH           the interpreter for the Python adapters (default: python3 on PATH)\n"
	      "  --host-cmd CMD          host driver for the host-gate profile\n"
	      "  --profile NAME          langflow-backend, createos-backend, createos-component,\n"
	      "                          createos-executor, host-gate (repeatable)\n"
	      "  --filter GLOB           only check ids matching GLOB, e.g. 'FB-*' (repeatable)\n"
	      "  --list                  list the selected checks and exit\n"
	      "  --fuzz-case FILE        run a backend_fuzzer input as check FUZZ-CASE (fuzz/README.md)\n"
	      "  --shard I/N             run the I-th of N deterministic partitions\n"
	      "  --mock-url URL          use a running sbx-mock (with --admin-token or\n"
	      "  --admin-token TOKEN       SBX_MOCK_ADMIN_TOKEN)\n"
	      "  --api-url URL           a real control plane (key from CREATEOS_SANDBOX_API_KEY);\n"
	      "                          checks needing the mock's admin API are skipped\n"
	      "  --seed N                seed for tenant keys and fault draws\n"
	      "  --timeout-scale X       multiply every harness timeout by X\n"
	      "  -j, --jobs N            cases run in parallel (default 4)\n"
	      "  --max-timeouts N        stop running checks after N checks in a row whose\n"
	      "                          driver did not answer in time (default 3, 0 never)\n"
	      "  --fixtures DIR          where fixtures/gate lives\n"
	      "  --tap                   TAP 13 on stdout instead of the human report\n"
	      "  --junit FILE, --json FILE, --html FILE   also write these reports\n"
	      "  --summary-md FILE       also write a Markdown summary (GitHub job summary)\n"
	      "  --github-annotations FILE  also write one ::error line per failed check\n"
	      "  -h, --help              this help\n\n"
	      "exit: 0 all passed, 1 a check or its cleanup failed, 2 usage or harness error\n", f);
}

/* A bundled program: next to this binary, else the install libexec dir. */
static char *bundled(const char *name)
{
	char self[PATH_MAX];
	char path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash != NULL) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/%s", self, name);
			if (access(path, X_OK) == 0)
				return cf_shell_quote(path);
		}
	}
	snprintf(path, sizeof(path), "%s/%s", SBX_CONFORM_INSTALL_LIBEXEC, name);
	return access(path, X_OK) == 0 ? cf_shell_quote(path) : NULL;
}

static void add_str(char ***arr, size_t *n, const char *s)
{
	*arr = realloc(*arr, (*n + 1) * sizeof(char *));
	(*arr)[(*n)++] = strdup(s);
}

static bool has_profile(const struct cf_config *cf, const char *p)
{
	size_t i;

	for (i = 0; i < cf->profile_count; i++)
		if (strcmp(cf->profiles[i], p) == 0)
			return true;
	return false;
}

static bool only_host_gate(const struct cf_config *cf)
{
	return cf->profile_count == 1 && has_profile(cf, "host-gate");
}

/* hello + capabilities from one driver, outside any check. */
static int probe(struct cf_config *cf, const char *profile, sbx_err *err)
{
	static const struct cf_check def = {"PROBE", "PROBE", "probe", 0, false, NULL};
	struct cf_case c;
	struct cf_driver *d;
	const char *et, *em;
	char why[256];
	cJSON *res, *f;
	const cJSON *s;

	memset(&c, 0, sizeof(c));
	c.cf = cf;
	c.def = &def;
	c.profile = profile;
	snprintf(c.key, sizeof(c.key), "cf-%lu-probe-%s", cf->seed, profile);
	snprintf(c.verdict, sizeof(c.verdict), "pass");
	sbx_strbuf_init(&c.reason);
	sbx_strbuf_init(&c.driver_stderr);
	c.details = cJSON_CreateArray();
	d = cf_driver_start(&c, NULL);
	if (d == NULL)
		goto out;
	f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "protocol", 1);
	res = cf_op(d, "hello", f, 20, &et, &em);
	cJSON_Delete(f);
	if (res == NULL) {
		if (cf_driver_broken(d))
			sbx_err_set(err, "%s", sbx_strbuf_str(&c.reason));
		else
			sbx_err_set(err, "the driver refused `hello` (protocol 1): %s: %s", et, em);
		goto out_stop;
	}
	if (!cf_hello_protocol_ok(res, why, sizeof(why))) {
		/* One harness error up front, not the same failure in every check. */
		sbx_err_set(err, "driver: %s", why);
		cJSON_Delete(res);
		goto out_stop;
	}
	if (strcmp(profile, "host-gate") != 0 || cf->driver_name[0] == '\0') {
		snprintf(cf->driver_name, sizeof(cf->driver_name), "%s", cf_str(res, "name") ? cf_str(res, "name") : "");
		snprintf(cf->driver_impl, sizeof(cf->driver_impl), "%s", cf_str(res, "driver") ? cf_str(res, "driver") : "");
	}
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(res, "surfaces"))
		if (cJSON_IsString(s))
			add_str(&cf->surfaces, &cf->surface_count, s->valuestring);
	cJSON_Delete(res);
	/* capabilities() belongs to the backend surface; a component-only driver has none */
	if (strcmp(profile, "host-gate") != 0 && (cf->surface_count == 0 || cf_surface(cf, "backend"))) {
		cf->capabilities = cf_op(d, "capabilities", NULL, 20, &et, &em);
		if (cf->capabilities == NULL && cf_driver_broken(d))
			sbx_err_set(err, "%s", sbx_strbuf_str(&c.reason));
		else if (cf->capabilities == NULL)
			sbx_err_set(err, "the driver's capabilities() raised %s: %s", et, em);
	}
out_stop:
	cf_driver_stop(d);
	cf_driver_free(d);
out:
	if (d == NULL)
		sbx_err_set(err, "cannot start the driver: %s", sbx_strbuf_str(&c.reason));
	sbx_strbuf_free(&c.reason);
	sbx_strbuf_free(&c.driver_stderr);
	cJSON_Delete(c.details);
	return err->msg[0] ? -1 : 0;
}


/* A selection that matches nothing is a usage error: a typo in --filter
 * must not turn into a green CI run. */
static bool selection_empty(const struct cf_config *cf)
{
	struct cf_pick sel[512];

	if (cf_selection(cf, sel, 512) > 0)
		return false;
	fprintf(stderr, "sbx-conform: no check matches the selection (--profile, --filter, --shard); "
		"see --list\n");
	return true;
}

static void list_checks(const struct cf_config *cf)
{
	struct cf_pick sel[512];
	size_t n = cf_selection(cf, sel, 512), i;

	for (i = 0; i < n; i++)
		printf("%-13s %-19s %s%s\n", sel[i].check->id, sel[i].profile,
		       sel[i].check->advisory ? "(advisory) " : "", sel[i].check->title);
}

static int write_reports(const struct cf_config *cf, const cJSON *report)
{
	sbx_err err = {{0}};
	int rc = 0;

	if (!sbx_report_save(report, cf->tap ? SBX_REPORT_TAP : SBX_REPORT_HUMAN, "-", &err)) {
		fprintf(stderr, "sbx-conform: %s\n", err.msg);
		rc = -1;
	}
	if (cf->json_file && !sbx_report_save(report, SBX_REPORT_JSON, cf->json_file, &err))
		rc = (fprintf(stderr, "sbx-conform: --json: %s\n", err.msg), -1);
	if (cf->junit_file && !sbx_report_save(report, SBX_REPORT_JUNIT, cf->junit_file, &err))
		rc = (fprintf(stderr, "sbx-conform: --junit: %s\n", err.msg), -1);
	if (cf->html_file && !sbx_report_save(report, SBX_REPORT_HTML, cf->html_file, &err))
		rc = (fprintf(stderr, "sbx-conform: --html: %s\n", err.msg), -1);
	if (cf->summary_md_file && !sbx_report_save(report, SBX_REPORT_MARKDOWN, cf->summary_md_file, &err))
		rc = (fprintf(stderr, "sbx-conform: --summary-md: %s\n", err.msg), -1);
	if (cf->annotations_file &&
	    !sbx_report_save(report, SBX_REPORT_GITHUB, cf->annotations_file, &err))
		rc = (fprintf(stderr, "sbx-conform: --github-annotations: %s\n", err.msg), -1);
	return rc;
}

/* Prints "sbx-conform: <what> \"<arg>\"" and the usage; returns 2. */
static int bad_usage(const char *what, const char *arg)
{
	if (arg != NULL)
		fprintf(stderr, "sbx-conform: %s \"%s\"\n", what, arg);
	else
		fprintf(stderr, "sbx-conform: %s\n", what);
	usage(stderr);
	return 2;
}

/* --python-backend M:F (script langflow_backend.py) or --python-component
 * M:C (langflow_component.py): the adapter runs it under the interpreter
 * --python names (python3 on PATH by default). factory NULL: neither was
 * given. Returns 2 on a usage error or no interpreter, else -1. */
static int python_backend(struct cf_config *cf, const char *script, const char *factory)
{
	const char *dir = getenv("SBX_CONFORM_ADAPTERS") ? getenv("SBX_CONFORM_ADAPTERS")
							 : SBX_CONFORM_ADAPTERS_DIR;
	const char *args[] = {factory, NULL};
	sbx_err err = {{0}};
	char *py;

	if (factory == NULL)
		return -1;
	py = cf_python_resolve(cf->python, &err);
	if (py == NULL) {
		fprintf(stderr, "sbx-conform: %s\n", err.msg);
		return 2;
	}
	free(cf->python);
	cf->python = py;
	free(cf->backend_cmd);
	cf->backend_cmd = cf_python_driver_cmd(py, dir, script, args);
	return -1;
}

/* Parses argv into cf (options.c); returns -1 to continue, else an exit
 * code. */
static int parse_args(struct cf_config *cf, int argc, char **argv, const char **mock_url, const char **api_url)
{
	struct cf_cli cli;

	switch (cf_parse_args(cf, argc, argv, &cli)) {
	case CF_ARGS_HELP:
		usage(stdout);
		return 0;
	case CF_ARGS_BAD:
		return bad_usage(cli.msg, NULL);
	default:
		break;
	}
	*mock_url = cli.mock_url;
	*api_url = cli.api_url;
	return python_backend(cf, cli.py_script, cli.py_factory);
}

/* Without --profile: every profile whose default_on rule holds (all of them
 * for --list). */
static void default_profiles(struct cf_config *cf, bool all)
{
	const struct cf_profile *p;

	if (cf->profile_count > 0)
		return;
	for (p = cf_profiles; p->name != NULL; p++)
		if (all || p->default_on(cf))
			add_str(&cf->profiles, &cf->profile_count, p->name);
}

static void rm_tmpdir(const char *dir)
{
	if (dir[0] != '\0')
		rmdir(dir); /* cases unlink their own files */
}

/* The drivers: the bundled reference backend and host unless --backend-cmd
 * was given (then --backend-cmd also serves host-gate). false when none. */
static bool resolve_drivers(struct cf_config *cf)
{
	cf->bundled_backend = cf->backend_cmd == NULL;
	if (cf->fixtures_dir == NULL)
		cf->fixtures_dir = strdup(getenv("SBX_FIXTURES_DIR") ? getenv("SBX_FIXTURES_DIR") : SBX_CONFORM_FIXTURES_DIR);
	if (cf->bundled_backend) {
		cf->backend_cmd = bundled("sbx-ref-backend");
		if (cf->host_cmd == NULL)
			cf->host_cmd = bundled("sbx-ref-host");
	} else if (cf->host_cmd == NULL && has_profile(cf, "host-gate")) {
		cf->host_cmd = strdup(cf->backend_cmd);
	}
	if (cf->backend_cmd == NULL) {
		fprintf(stderr, "sbx-conform: the bundled reference backend (sbx-ref-backend) was not found "
			"next to this program or in %s; pass --backend-cmd\n", SBX_CONFORM_INSTALL_LIBEXEC);
		return false;
	}
	return true;
}

/* --list: prints the selection; returns the exit code. */
static int list_only(struct cf_config *cf)
{
	default_profiles(cf, true);
	if (selection_empty(cf))
		return 2;
	list_checks(cf);
	return 0;
}

static bool use_api_url(struct cf_config *cf, const char *api_url)
{
	const char *k = getenv("CREATEOS_SANDBOX_API_KEY");

	if (k == NULL || *k == '\0')
		k = getenv("CREATEOS_API_KEY");
	if (k == NULL || *k == '\0') {
		fprintf(stderr, "sbx-conform: --api-url needs CREATEOS_SANDBOX_API_KEY (or CREATEOS_API_KEY)\n");
		return false;
	}
	cf->kind = CF_REAL;
	snprintf(cf->url, sizeof(cf->url), "%s", api_url);
	snprintf(cf->real_key, sizeof(cf->real_key), "%s", k);
	return true;
}

static bool use_mock_url(struct cf_config *cf, const char *mock_url)
{
	cf->kind = CF_EXTERNAL_MOCK;
	snprintf(cf->url, sizeof(cf->url), "%s", mock_url);
	if (cf->admin_token[0] == '\0' && getenv("SBX_MOCK_ADMIN_TOKEN") != NULL)
		snprintf(cf->admin_token, sizeof(cf->admin_token), "%s", getenv("SBX_MOCK_ADMIN_TOKEN"));
	if (cf->admin_token[0] == '\0') {
		fprintf(stderr, "sbx-conform: --mock-url needs --admin-token or SBX_MOCK_ADMIN_TOKEN\n");
		return false;
	}
	return true;
}

/* The embedded mock on an ephemeral loopback port; *mock is stopped by the
 * caller (sbx_mock_stop). */
static bool start_embedded_mock(struct cf_config *cf, void **mock)
{
#ifdef SBX_HAVE_MOCK
	sbx_err err = {{0}};
	sbx_mock_config mc;
	sbx_mock *m;

	sbx_mock_config_init(&mc);
	mc.quiet = true;
	mc.host_rule_mode = SBX_HOST_RULES_OBSERVED;
	mc.seed = cf->seed;
	m = sbx_mock_start(&mc, &err);
	if (m == NULL) {
		fprintf(stderr, "sbx-conform: cannot start the embedded mock: %s\n", err.msg);
		return false;
	}
	*mock = m;
	cf->kind = CF_EMBEDDED_MOCK;
	snprintf(cf->url, sizeof(cf->url), "%s", sbx_mock_url(m));
	snprintf(cf->admin_token, sizeof(cf->admin_token), "%s", sbx_mock_admin_token(m));
	/* the report names the guests' root (issue 46): the embedding API
	 * uses no image store unless told, so this is the host skeleton */
	snprintf(cf->guests_root, sizeof(cf->guests_root), "%s", sbx_mock_rootfs_note(m));
	return true;
#else
	(void)cf;
	(void)mock;
	fprintf(stderr, "sbx-conform: built without the embedded mock; pass --mock-url or --api-url\n");
	return false;
#endif
}

static void stop_embedded_mock(void *mock)
{
#ifdef SBX_HAVE_MOCK
	sbx_mock_stop(mock);
#else
	(void)mock;
#endif
}

/* Probes the drivers, settles the profiles, runs and reports; returns the
 * exit code. */
static int probe_and_run(struct cf_config *cf)
{
	sbx_err err = {{0}};
	cJSON *report = NULL;
	int rc = 2;

	if (!only_host_gate(cf) && probe(cf, "langflow-backend", &err) != 0) {
		fprintf(stderr, "sbx-conform: harness error: %s\n", err.msg);
		return 2;
	}
	default_profiles(cf, false);
	if (has_profile(cf, "host-gate") && cf->host_cmd != NULL && probe(cf, "host-gate", &err) != 0) {
		fprintf(stderr, "sbx-conform: harness error (host driver): %s\n", err.msg);
		return 2;
	}
	if (selection_empty(cf))
		return 2;
	if (cf_run_all(cf, &report, &err) != 0)
		fprintf(stderr, "sbx-conform: harness error: %s\n", err.msg);
	else if (write_reports(cf, report) == 0)
		rc = cf_report_exit_code(report);
	cJSON_Delete(report);
	return rc;
}

int main(int argc, char **argv)
{
	struct cf_config cf;
	const char *mock_url = NULL, *api_url = NULL;
	void *mock = NULL;
	sbx_err err = {{0}};
	bool connected;
	int rc;

	if (argc > 1 && strcmp(argv[1], "merge") == 0)
		return cf_merge_main(argc - 1, argv + 1);
	cf_config_init(&cf);
	signal(SIGPIPE, SIG_IGN);
	rc = parse_args(&cf, argc, argv, &mock_url, &api_url);
	if (rc >= 0)
		goto out;
	rc = 2;
	if (!resolve_drivers(&cf))
		goto out;
	if (cf.list) {
		rc = list_only(&cf);
		goto out;
	}
	cf.progress = isatty(2) != 0;
	cf.color = sbx_report_color_auto(2);
	sbx_http_global_init();
	snprintf(cf.tmpdir, sizeof(cf.tmpdir), "%s/sbx-conform-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(cf.tmpdir) == NULL) {
		fprintf(stderr, "sbx-conform: cannot create a scratch dir: %s\n", strerror(errno));
		cf.tmpdir[0] = '\0';
		goto out_http;
	}
	if (api_url != NULL)
		connected = use_api_url(&cf, api_url);
	else if (mock_url != NULL)
		connected = use_mock_url(&cf, mock_url);
	else
		connected = start_embedded_mock(&cf, &mock);
	if (connected && cf_control_plane_open(&cf, &err) != 0)
		fprintf(stderr, "sbx-conform: %s\n", err.msg);
	else if (connected && cf_control_plane_reachable(&cf, &err) != 0)
		fprintf(stderr, "sbx-conform: harness error: %s\n", err.msg);
	else if (connected)
		rc = probe_and_run(&cf);
	cf_control_plane_close(&cf);
	stop_embedded_mock(mock);
out_http:
	rm_tmpdir(cf.tmpdir);
	sbx_http_global_cleanup();
out:
	cf_config_free(&cf);
	return rc;
}

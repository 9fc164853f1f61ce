/* Fuzz target: sbx-conform's command line (conformance/src/options.c,
 * cf_parse_args), in-process: the input split at '\n' is argv after
 * "sbx-conform". Parsing touches nothing outside the config, so no driver,
 * mock or interpreter is started.
 *
 * Properties, each abort()s when broken:
 * - the result is OK, HELP or BAD; BAD has a message that names an option
 *   ("--jobs", "-j", ...) or quotes the argv word it refuses;
 * - an accepted command line is within the documented limits: --jobs
 *   1..32, --max-timeouts 0..1000, --timeout-scale finite in (0, 100],
 *   --shard 1 <= I <= N <= 1000 (or absent), every --profile a known one,
 *   an admin token of 1..255 bytes without control characters (or none),
 *   --backend-cmd/--host-cmd non-empty, not both --mock-url and --api-url,
 *   --python only with --python-backend/--python-component, every string
 *   value an argv word or the text after '=' in one;
 * - the same argv parses to the same result, message and config twice
 *   (getopt's state is reset between calls);
 * - nothing leaks (cf_config_free releases everything; ASan checks). */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_WORDS 48

static const char *const OPTION_NAMES[] = {
	"--backend-cmd", "--python-backend", "--host-cmd", "--profile", "--filter", "--list", "--shard",
	"--mock-url", "--admin-token", "--api-url", "--seed", "--timeout-scale", "--jobs", "--tap", "--junit",
	"--json", "--html", "--fixtures", "--python", "--python-component", "--max-timeouts", "--fuzz-case", "--help",
	"--summary-md", "--github-annotations",
	"-- 'j'", "-- 'h'", NULL,
};

static void check(bool ok, const char *what, const char *msg)
{
	if (!ok) {
		fprintf(stderr, "conform_cli property broken: %s (message: %s)\n", what, msg != NULL ? msg : "-");
		abort();
	}
}

/* s is one of the words, or the text after the first '=' of one. */
static bool from_argv(char **words, int n, const char *s)
{
	for (int i = 0; i < n; i++) {
		const char *eq = strchr(words[i], '=');

		if (strcmp(words[i], s) == 0 || (eq != NULL && strcmp(eq + 1, s) == 0))
			return true;
		/* "-jN": the value glued to a short option */
		if (words[i][0] == '-' && words[i][1] != '-' && strstr(words[i], s) != NULL)
			return true;
	}
	return false;
}

static bool names_option(const char *msg, char **words, int n)
{
	char quoted[600];

	for (const char *const *o = OPTION_NAMES; *o != NULL; o++)
		if (strstr(msg, *o) != NULL)
			return true;
	for (int i = 0; i < n; i++) {
		snprintf(quoted, sizeof(quoted), "'%.400s'", words[i]);
		if (strstr(msg, quoted) != NULL)
			return true;
		snprintf(quoted, sizeof(quoted), "\"%.400s\"", words[i]);
		if (strstr(msg, quoted) != NULL)
			return true;
	}
	/* a short option named by its letter: "invalid option -- 'x'" */
	return strstr(msg, "-- '") != NULL;
}

static bool opt_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void check_limits(const struct cf_config *cf, const struct cf_cli *cli, char **words, int n)
{
	check(cf->jobs >= 1 && cf->jobs <= 32, "--jobs outside 1..32", NULL);
	check(cf->max_timeouts <= 1000, "--max-timeouts outside 0..1000", NULL);
	check(isfinite(cf->timeout_scale) && cf->timeout_scale > 0 && cf->timeout_scale <= 100,
	      "--timeout-scale outside (0, 100]", NULL);
	check((cf->shard_count == 0 && cf->shard_index == 0) ||
		      (cf->shard_index >= 1 && cf->shard_index <= cf->shard_count && cf->shard_count <= 1000),
	      "--shard outside 1 <= I <= N <= 1000", NULL);
	for (size_t i = 0; i < cf->profile_count; i++)
		check(cf_profile_find(cf->profiles[i]) != NULL, "an unknown --profile accepted", cf->profiles[i]);
	check(strlen(cf->admin_token) < sizeof(cf->admin_token), "admin token unterminated", NULL);
	for (const char *t = cf->admin_token; *t != '\0'; t++)
		check((unsigned char)*t >= 0x20 && *t != 0x7f, "a control character in --admin-token", NULL);
	check(cf->admin_token[0] == '\0' || from_argv(words, n, cf->admin_token), "--admin-token not from argv",
	      cf->admin_token);
	check(cf->backend_cmd == NULL || (cf->backend_cmd[0] != '\0' && from_argv(words, n, cf->backend_cmd)),
	      "--backend-cmd empty or not from argv", cf->backend_cmd);
	check(cf->host_cmd == NULL || (cf->host_cmd[0] != '\0' && from_argv(words, n, cf->host_cmd)),
	      "--host-cmd empty or not from argv", cf->host_cmd);
	check(!(cli->mock_url != NULL && cli->api_url != NULL), "--mock-url with --api-url accepted", NULL);
	check(cf->python == NULL || cli->py_factory != NULL, "--python without a Python backend accepted", NULL);
	check(cli->py_factory == NULL || strchr(cli->py_factory, ':') != NULL, "a Python factory without ':'",
	      cli->py_factory);
	for (size_t i = 0; i < cf->filter_count; i++)
		check(from_argv(words, n, cf->filters[i]), "a --filter not from argv", cf->filters[i]);
	check(cli->mock_url == NULL || from_argv(words, n, cli->mock_url), "--mock-url not from argv", NULL);
	check(cf->json_file == NULL || from_argv(words, n, cf->json_file), "--json not from argv", NULL);
}

static void check_same(const struct cf_config *a, const struct cf_cli *ca, const struct cf_config *b,
		       const struct cf_cli *cb)
{
	check(strcmp(ca->msg, cb->msg) == 0, "the message differs between two parses", ca->msg);
	check(a->jobs == b->jobs && a->max_timeouts == b->max_timeouts && a->seed == b->seed &&
		      a->timeout_scale == b->timeout_scale && a->shard_index == b->shard_index &&
		      a->shard_count == b->shard_count && a->list == b->list && a->tap == b->tap,
	      "numbers or flags differ between two parses", NULL);
	check(opt_eq(a->backend_cmd, b->backend_cmd) && opt_eq(a->host_cmd, b->host_cmd) &&
		      opt_eq(a->python, b->python) && opt_eq(a->fixtures_dir, b->fixtures_dir) &&
		      opt_eq(a->json_file, b->json_file) && opt_eq(a->junit_file, b->junit_file) &&
		      opt_eq(a->html_file, b->html_file) && strcmp(a->admin_token, b->admin_token) == 0 &&
		      opt_eq(ca->mock_url, cb->mock_url) && opt_eq(ca->api_url, cb->api_url) &&
		      opt_eq(ca->py_factory, cb->py_factory) && opt_eq(ca->py_script, cb->py_script),
	      "string options differ between two parses", NULL);
	check(a->profile_count == b->profile_count && a->filter_count == b->filter_count,
	      "list options differ between two parses", NULL);
	for (size_t i = 0; i < a->profile_count; i++)
		check(strcmp(a->profiles[i], b->profiles[i]) == 0, "profiles differ between two parses", NULL);
	for (size_t i = 0; i < a->filter_count; i++)
		check(strcmp(a->filters[i], b->filters[i]) == 0, "filters differ between two parses", NULL);
}

/* Splits the input into words (argv[0] = "sbx-conform"); returns argc. */
static int split(char *buf, char **argv)
{
	int n = 0;
	char *p = buf;

	argv[n++] = (char *)"sbx-conform";
	while (n < MAX_WORDS) {
		char *nl = strchr(p, '\n');

		argv[n++] = p;
		if (nl == NULL)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	argv[n] = NULL;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf1, *buf2, *buf3;
	char *argv1[MAX_WORDS + 1], *argv2[MAX_WORDS + 1], *words[MAX_WORDS + 1];
	struct cf_config cf1, cf2;
	struct cf_cli cli1, cli2;
	enum cf_parse_result r1, r2;
	int argc, n;

	if (size == 0 || size > 4096 || memchr(data, '\0', size) != NULL)
		return 0;
	buf1 = strndup((const char *)data, size);
	buf2 = strndup((const char *)data, size);
	buf3 = strndup((const char *)data, size);
	argc = split(buf1, argv1);
	(void)split(buf2, argv2);
	n = split(buf3, words); /* getopt permutes argv1/argv2; words keep the order */
	cf_config_init(&cf1);
	cf_config_init(&cf2);
	r1 = cf_parse_args(&cf1, argc, argv1, &cli1);
	r2 = cf_parse_args(&cf2, argc, argv2, &cli2);
	check(r1 == CF_ARGS_OK || r1 == CF_ARGS_HELP || r1 == CF_ARGS_BAD, "an unknown result", NULL);
	check(r1 == r2, "the same argv parses to different results", cli1.msg);
	if (r1 == CF_ARGS_BAD) {
		check(cli1.msg[0] != '\0', "a refusal without a message", NULL);
		check(names_option(cli1.msg, words + 1, n - 1), "a refusal that names no option or word", cli1.msg);
	} else {
		check(cli1.msg[0] == '\0', "a message without a refusal", cli1.msg);
	}
	if (r1 == CF_ARGS_OK)
		check_limits(&cf1, &cli1, words + 1, n - 1);
	check_same(&cf1, &cli1, &cf2, &cli2);
	cf_config_free(&cf1);
	cf_config_free(&cf2);
	free(buf1);
	free(buf2);
	free(buf3);
	return 0;
}

/* options: sbx-conform's command line (see options.h). Every refusal names
 * the option and the value it got; the limits are the ones --help states. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

void cf_config_init(struct cf_config *cf)
{
	memset(cf, 0, sizeof(*cf));
	pthread_mutex_init(&cf->lock, NULL);
	cf->timeout_scale = 1.0;
	cf->jobs = 4;
	cf->max_timeouts = 3;
	cf->seed = 1;
}

void cf_config_free(struct cf_config *cf)
{
	size_t i;

	for (i = 0; i < cf->profile_count; i++)
		free(cf->profiles[i]);
	for (i = 0; i < cf->filter_count; i++)
		free(cf->filters[i]);
	for (i = 0; i < cf->surface_count; i++)
		free(cf->surfaces[i]);
	free(cf->profiles);
	free(cf->filters);
	free(cf->surfaces);
	free(cf->backend_cmd);
	free(cf->host_cmd);
	free(cf->fixtures_dir);
	free(cf->python);
	cJSON_Delete(cf->capabilities);
	pthread_mutex_destroy(&cf->lock);
}

static bool parse_uint(const char *s, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (s == NULL || *s == '\0' || *s == '-')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

static bool parse_shard(const char *s, unsigned *i, unsigned *n)
{
	char buf[64];
	char *slash;
	unsigned long a, b;

	if (strlen(s) >= sizeof(buf)) /* a truncated copy could parse as something else */
		return false;
	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	if (slash == NULL)
		return false;
	*slash = '\0';
	if (!parse_uint(buf, &a) || !parse_uint(slash + 1, &b) || b < 1 || a < 1 || a > b || b > 1000)
		return false;
	*i = (unsigned)a;
	*n = (unsigned)b;
	return true;
}

static void add_str(char ***arr, size_t *n, const char *s)
{
	*arr = realloc(*arr, (*n + 1) * sizeof(char *));
	(*arr)[(*n)++] = strdup(s);
}

static void set_str(char **dst, const char *s)
{
	free(*dst); /* the last one wins */
	*dst = strdup(s);
}

/* An admin token goes into an HTTP header: no control characters, and it
 * must fit cf->admin_token whole (a cut token is another token). */
static bool token_ok(const char *s)
{
	if (*s == '\0' || strlen(s) >= sizeof(((struct cf_config *)0)->admin_token))
		return false;
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* cli->msg = "<what> \"<arg>\"" (or just what); returns CF_ARGS_BAD. */
static enum cf_parse_result refuse(struct cf_cli *cli, const char *what, const char *arg)
{
	if (arg != NULL)
		snprintf(cli->msg, sizeof(cli->msg), "%s \"%.400s\"", what, arg);
	else
		snprintf(cli->msg, sizeof(cli->msg), "%s", what);
	return CF_ARGS_BAD;
}

enum {
	O_BACKEND = 256, O_PYTHON, O_HOST, O_PROFILE, O_FILTER, O_LIST, O_SHARD, O_MOCK, O_TOKEN, O_API,
	O_SEED, O_SCALE, O_TAP, O_JUNIT, O_JSON, O_HTML, O_FIXTURES, O_PYEXE, O_PYCOMP, O_MAXTO, O_FUZZ,
	O_SUMMARY_MD, O_ANNOTATIONS,
};

static const struct option LONGOPTS[] = {
	{"backend-cmd", required_argument, NULL, O_BACKEND}, {"python-backend", required_argument, NULL, O_PYTHON},
	{"host-cmd", required_argument, NULL, O_HOST}, {"profile", required_argument, NULL, O_PROFILE},
	{"filter", required_argument, NULL, O_FILTER}, {"list", no_argument, NULL, O_LIST},
	{"shard", required_argument, NULL, O_SHARD}, {"mock-url", required_argument, NULL, O_MOCK},
	{"admin-token", required_argument, NULL, O_TOKEN}, {"api-url", required_argument, NULL, O_API},
	{"seed", required_argument, NULL, O_SEED}, {"timeout-scale", required_argument, NULL, O_SCALE},
	{"jobs", required_argument, NULL, 'j'}, {"tap", no_argument, NULL, O_TAP},
	{"junit", required_argument, NULL, O_JUNIT}, {"json", required_argument, NULL, O_JSON},
	{"html", required_argument, NULL, O_HTML}, {"fixtures", required_argument, NULL, O_FIXTURES},
	{"python", required_argument, NULL, O_PYEXE}, {"python-component", required_argument, NULL, O_PYCOMP},
	{"max-timeouts", required_argument, NULL, O_MAXTO}, {"fuzz-case", required_argument, NULL, O_FUZZ},
	{"summary-md", required_argument, NULL, O_SUMMARY_MD},
	{"github-annotations", required_argument, NULL, O_ANNOTATIONS},
	{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
};

static const char *long_name(int val)
{
	const struct option *o;

	for (o = LONGOPTS; o->name != NULL; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

/* getopt's own complaint, as glibc words it (opterr is off so that the
 * message reaches the caller): `c` is '?' (unknown, or a value given to a
 * flag) or ':' (a value missing). */
static enum cf_parse_result getopt_refusal(struct cf_cli *cli, int c, int argc, char **argv)
{
	const char *word = optind > 0 && optind <= argc ? argv[optind - 1] : "?";

	if (c == ':' && optopt >= 256)
		snprintf(cli->msg, sizeof(cli->msg), "option '--%s' requires an argument", long_name(optopt));
	else if (c == ':')
		snprintf(cli->msg, sizeof(cli->msg), "option requires an argument -- '%c'", optopt);
	else if (optopt >= 256 || optopt == 'h')
		snprintf(cli->msg, sizeof(cli->msg), "option '--%s' doesn't allow an argument", long_name(optopt));
	else if (optopt > 0x20 && optopt < 0x7f)
		snprintf(cli->msg, sizeof(cli->msg), "invalid option -- '%c'", optopt);
	else if (optopt != 0) /* a byte inside a cluster of short options ("-\xd3") */
		snprintf(cli->msg, sizeof(cli->msg), "invalid option -- '\\x%02x'", (unsigned)optopt & 0xffu);
	else
		snprintf(cli->msg, sizeof(cli->msg), "unrecognized option '%.400s'", word);
	return CF_ARGS_BAD;
}

static enum cf_parse_result parse_one(struct cf_config *cf, struct cf_cli *cli, int o, const char *arg);

enum cf_parse_result cf_parse_args(struct cf_config *cf, int argc, char **argv, struct cf_cli *cli)
{
	enum cf_parse_result r;
	int o;

	memset(cli, 0, sizeof(*cli));
	cli->py_script = "langflow_backend.py";
	optind = 0; /* a full re-initialisation of getopt (glibc) */
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":hj:", LONGOPTS, NULL)) != -1) {
		if (o == '?' || o == ':')
			return getopt_refusal(cli, o, argc, argv);
		if (o == 'h')
			return CF_ARGS_HELP;
		if ((r = parse_one(cf, cli, o, optarg)) != CF_ARGS_OK)
			return r;
	}
	if (optind < argc)
		return refuse(cli, "unexpected argument", argv[optind]);
	if (cli->mock_url != NULL && cli->api_url != NULL)
		return refuse(cli, "--mock-url and --api-url exclude each other", NULL);
	if (cli->py_factory == NULL && cf->python != NULL)
		return refuse(cli, "--python only applies to --python-backend and --python-component", NULL);
	return CF_ARGS_OK;
}

static enum cf_parse_result parse_number(struct cf_config *cf, struct cf_cli *cli, int o, const char *arg)
{
	unsigned long v;
	char *end;

	switch (o) {
	case O_SEED:
		if (!parse_uint(arg, &v))
			return refuse(cli, "--seed wants a non-negative integer, got", arg);
		cf->seed = v;
		break;
	case O_SCALE: {
		double x;

		errno = 0;
		x = strtod(arg, &end);
		/* !(x > 0) also refuses NaN; a refused value never reaches cf */
		if (errno != 0 || *end != '\0' || end == arg || !(x > 0) || x > 100)
			return refuse(cli, "--timeout-scale wants a number in (0, 100], got", arg);
		cf->timeout_scale = x;
		break;
	}
	case 'j':
		if (!parse_uint(arg, &v) || v < 1 || v > 32)
			return refuse(cli, "--jobs wants 1..32, got", arg);
		cf->jobs = (unsigned)v;
		break;
	default: /* O_MAXTO */
		if (!parse_uint(arg, &v) || v > 1000)
			return refuse(cli, "--max-timeouts wants 0..1000, got", arg);
		cf->max_timeouts = (unsigned)v;
		break;
	}
	return CF_ARGS_OK;
}

static enum cf_parse_result parse_one(struct cf_config *cf, struct cf_cli *cli, int o, const char *arg)
{
	switch (o) {
	case O_BACKEND:
		if (*arg == '\0')
			return refuse(cli, "--backend-cmd wants a command line, got", arg);
		set_str(&cf->backend_cmd, arg);
		break;
	case O_PYTHON:
	case O_PYCOMP:
		if (strchr(arg, ':') == NULL)
			return refuse(cli, o == O_PYTHON ? "--python-backend wants module:factory, got"
							 : "--python-component wants module:Class, got", arg);
		cli->py_factory = arg; /* built by the caller: --python may follow */
		cli->py_script = o == O_PYTHON ? "langflow_backend.py" : "langflow_component.py";
		break;
	case O_PYEXE:
		set_str(&cf->python, arg);
		break;
	case O_HOST:
		if (*arg == '\0')
			return refuse(cli, "--host-cmd wants a command line, got", arg);
		set_str(&cf->host_cmd, arg);
		break;
	case O_PROFILE:
		if (cf_profile_find(arg) == NULL)
			return refuse(cli, "unknown profile (see --help):", arg);
		add_str(&cf->profiles, &cf->profile_count, arg);
		break;
	case O_FILTER:
		add_str(&cf->filters, &cf->filter_count, arg);
		break;
	case O_LIST:
		cf->list = true;
		break;
	case O_FUZZ:
		if (*arg == '\0')
			return refuse(cli, "--fuzz-case wants a backend_fuzzer input file, got", arg);
		cf->fuzz_case = arg;
		add_str(&cf->profiles, &cf->profile_count, "fuzz-case");
		break;
	case O_SHARD:
		if (!parse_shard(arg, &cf->shard_index, &cf->shard_count))
			return refuse(cli, "--shard wants I/N with 1 <= I <= N <= 1000, got", arg);
		break;
	case O_MOCK:
		cli->mock_url = arg;
		break;
	case O_TOKEN:
		if (!token_ok(arg))
			return refuse(cli, "--admin-token wants 1..255 bytes without control characters, got", arg);
		snprintf(cf->admin_token, sizeof(cf->admin_token), "%s", arg);
		break;
	case O_API:
		cli->api_url = arg;
		break;
	case O_TAP:
		cf->tap = true;
		break;
	case O_JUNIT:
		cf->junit_file = arg;
		break;
	case O_JSON:
		cf->json_file = arg;
		break;
	case O_HTML:
		cf->html_file = arg;
		break;
	case O_SUMMARY_MD:
		cf->summary_md_file = arg;
		break;
	case O_ANNOTATIONS:
		cf->annotations_file = arg;
		break;
	case O_FIXTURES:
		set_str(&cf->fixtures_dir, arg);
		break;
	default:
		return parse_number(cf, cli, o, arg);
	}
	return CF_ARGS_OK;
}

/* Fuzz target: sbx-mock's command line (mock_cli_parse,
 * mock-api/src/server/mock_cli.c: what main() runs before it starts anything).
 *
 * Input: the arguments after "sbx-mock", separated by NUL bytes (at most
 * 48). "@KEYS", "@EMPTYKEYS", "@CTLKEYS", "@DIR", "@FILE" and "@NONE" in an
 * argument stand for files the target made (a keys file, one of comments
 * only, one with a control byte in a key, a directory, a plain file, a
 * path that does not exist). Arguments naming /dev, /proc or /sys are
 * skipped (a device read is not the parser's business).
 *
 * Properties, each abort()s when broken:
 * - the same argv parses the same twice (result, message, every field);
 * - a refused command line has a message that names an option given on it
 *   ("--NAME..." for a given --NAME or an abbreviation of it, "-c", an
 *   unknown option or missing argument with the argument, or an unexpected
 *   argument);
 * - an accepted one is within the documented limits: every number in its
 *   range (--cap 0-1000000, --cap-status 400-599, --max-egress-rules and
 *   --max-connections 1-1000000, --max-body 1024-2^30, --max-file-body
 *   1024-2^34, --exec-timeout-ms 0-86400000, --idle-timeout 1-86400,
 *   --journal-size 1-SBX_MOCK_JOURNAL_MAX, --warm-pool 0-64) or its
 *   default; --timing a finite non-negative scale; enumerations among
 *   their words; the admin
 *   token, API keys, cap code and region non-empty without control bytes
 *   (the admin token also without spaces); at most 1024 keys; accept-any-
 *   key as documented (on unless keys are given or it is switched off);
 *   --record-to only with --record-upstream; not --state-dir with --replay
 *   or --check-state; string options point into argv;
 * - no crash, no leak (mock_cli_free). */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../mock-api/src/model/model.h" /* the template bounds' ranges */
#include "../mock-api/src/server/mock_cli.h"
#include "sbx/mock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAX_ARGS 48

static char dir[64];
static const char *const tokens[] = {"@KEYS", "@EMPTYKEYS", "@CTLKEYS", "@DIR", "@FILE", "@NONE"};
static char paths[6][128];

static void check(bool ok, const char *what, const char *detail)
{
	if (!ok) {
		fprintf(stderr, "mock_cli property broken: %s%s%s\n", what, detail != NULL ? ": " : "",
			detail != NULL ? detail : "");
		abort();
	}
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	check(f != NULL, "cannot write a fixture", path);
	fputs(text, f);
	fclose(f);
}

static void cleanup(void)
{
	for (int i = 0; i < 6; i++) {
		if (i != 3)
			unlink(paths[i]);
	}
	rmdir(paths[3]);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const names[] = {"keys", "empty-keys", "ctl-keys", "adir", "afile", "none"};

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "/tmp/sbx-fuzz-cli-XXXXXX");
	check(mkdtemp(dir) != NULL, "mkdtemp", NULL);
	for (int i = 0; i < 6; i++)
		snprintf(paths[i], sizeof(paths[i]), "%s/%s", dir, names[i]);
	put(paths[0], "# keys\nkey-one\n  key-two  \n\nkey-three\r\n");
	put(paths[1], "# nothing\n\n   \n");
	put(paths[2], "good\nbad\x01key\n");
	check(mkdir(paths[3], 0700) == 0, "mkdir", paths[3]);
	put(paths[4], "{}\n");
	atexit(cleanup);
	opterr = 0; /* getopt's own messages would only be noise here */
	return 0;
}

/* ---- argv from the input ---- */

typedef struct args {
	char *v[MAX_ARGS + 2];
	int n;
} args;

static char *expand(const char *a, size_t n)
{
	char *out = strndup(a, n);

	check(out != NULL, "out of memory", NULL);
	for (int t = 0; t < 6; t++) {
		char *at = strstr(out, tokens[t]);

		if (at != NULL) {
			size_t pre = (size_t)(at - out), tl = strlen(tokens[t]);
			char *o2 = NULL;

			check(asprintf(&o2, "%.*s%s%s", (int)pre, out, paths[t], at + tl) >= 0, "out of memory", NULL);
			free(out);
			out = o2;
		}
	}
	return out;
}

static bool build(const uint8_t *data, size_t size, args *a)
{
	const char *p = (const char *)data, *end = p + size;

	a->n = 0;
	a->v[a->n++] = strdup("sbx-mock");
	while (p < end && a->n <= MAX_ARGS) {
		const char *z = memchr(p, '\0', (size_t)(end - p));
		size_t n = (size_t)((z != NULL ? z : end) - p);
		char *arg = expand(p, n);

		a->v[a->n++] = arg;
		if (strstr(arg, "/dev") != NULL || strstr(arg, "/proc") != NULL || strstr(arg, "/sys") != NULL)
			return false;
		p += n + 1;
	}
	a->v[a->n] = NULL;
	return true;
}

static void args_free(args *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	a->n = 0;
}

/* ---- the oracles ---- */

static bool same_str(const char *x, const char *y)
{
	return x == y || (x != NULL && y != NULL && strcmp(x, y) == 0);
}

static void same_parse(const mock_cli *a, const mock_cli *b, int ra, int rb)
{
	const sbx_mock_config *x = &a->cfg, *y = &b->cfg;

	check(ra == rb, "the same argv parsed to another result", NULL);
	check(strcmp(a->err, b->err) == 0, "the same argv got another message", b->err);
	if (ra != MOCK_CLI_OK)
		return;
	check(same_str(x->listen_host, y->listen_host) && x->listen_port == y->listen_port &&
		      same_str(x->admin_token, y->admin_token) && x->accept_any_key == y->accept_any_key &&
		      x->api_key_count == y->api_key_count && same_str(x->region, y->region) &&
		      x->sandbox_cap == y->sandbox_cap && x->cap_status == y->cap_status &&
		      same_str(x->cap_code, y->cap_code) && x->host_rule_mode == y->host_rule_mode &&
		      x->max_egress_rules == y->max_egress_rules && x->max_json_body == y->max_json_body &&
		      x->max_file_body == y->max_file_body && same_str(x->timing, y->timing) &&
		      same_str(x->work_dir, y->work_dir) && same_str(x->scenario, y->scenario) &&
		      x->quiet == y->quiet && x->seed == y->seed && x->journal_size == y->journal_size &&
		      x->no_journal == y->no_journal && same_str(x->guest_mode, y->guest_mode) &&
		      x->exec_timeout_ms == y->exec_timeout_ms && same_str(x->scenario_dir, y->scenario_dir) &&
		      same_str(x->record_upstream, y->record_upstream) && same_str(x->record_to, y->record_to) &&
		      same_str(x->replay, y->replay) && same_str(x->state_dir, y->state_dir) &&
		      x->state_repair == y->state_repair && x->max_connections == y->max_connections &&
		      x->idle_timeout_s == y->idle_timeout_s && same_str(x->self_listen, y->self_listen) &&
		      x->self_listen_optional == y->self_listen_optional && same_str(x->egress, y->egress) &&
		      same_str(x->internet_hosts, y->internet_hosts) && same_str(a->check_state, b->check_state),
	      "the same argv parsed to another configuration", NULL);
	for (size_t i = 0; i < a->nkeys; i++)
		check(strcmp(a->keys[i], b->keys[i]) == 0, "the same argv parsed to other keys", NULL);
}

/* The message names an option that is on the command line. */
static void names_option(const mock_cli *c, const args *a)
{
	const char *e = c->err;
	size_t nl;

	check(e[0] != '\0', "a refusal without a message", NULL);
	if (strncmp(e, "unknown option or missing argument: ", 36) == 0) {
		const char *what = e + 36;

		for (int i = 1; i < a->n; i++) {
			if (strcmp(a->v[i], what) == 0 ||
			    (what[0] == '-' && what[1] != '\0' && what[2] == '\0' && a->v[i][0] == '-' &&
			     a->v[i][1] != '-' && strchr(a->v[i], what[1]) != NULL))
				return;
		}
		check(false, "the message names an option not given", e);
	}
	if (strncmp(e, "unexpected argument \"", 21) == 0) {
		for (int i = 1; i < a->n; i++) {
			size_t vl = strlen(a->v[i]);

			if (strncmp(e + 21, a->v[i], vl) == 0 && strcmp(e + 21 + vl, "\"") == 0)
				return;
		}
		check(false, "the message names an argument not given", e);
	}
	check(strncmp(e, "--", 2) == 0, "a refusal that does not begin with the option", e);
	nl = strcspn(e + 2, ":= \"");
	for (int i = 1; i < a->n; i++) {
		const char *v = a->v[i];
		size_t vl = strcspn(v, "=");

		/* getopt_long takes unambiguous prefixes ("--cap-s" is --cap-status) */
		if (strncmp(v, "--", 2) == 0 && vl > 2 && vl - 2 <= nl && strncmp(v + 2, e + 2, vl - 2) == 0)
			return;
	}
	check(false, "the message names an option not given", e);
}

static size_t ctl_at(const char *s)
{
	for (size_t i = 0; s[i] != '\0'; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return i + 1;
	}
	return 0;
}

static bool in_argv(const char *s, const args *a)
{
	for (int i = 1; i < a->n; i++) {
		if (s >= a->v[i] && s <= a->v[i] + strlen(a->v[i]))
			return true;
	}
	return false;
}

static bool range(unsigned long long v, unsigned long long dflt, unsigned long long lo, unsigned long long hi)
{
	return v == dflt || (v >= lo && v <= hi);
}

static void within_limits(const mock_cli *c, const args *a)
{
	const sbx_mock_config *x = &c->cfg;
	sbx_mock_config d;
	const char *const strs[] = {x->admin_token, x->cap_code, x->region, x->timing, x->work_dir,
				    x->scenario_dir, x->record_upstream, x->record_to, x->replay,
				    x->state_dir, x->egress, x->internet_hosts, x->guest_mode, c->check_state};
	const char *const dflts[] = {NULL, "QUOTA_EXCEEDED", "local", "instant", NULL, NULL, NULL,
				     NULL, NULL, NULL, NULL, NULL, "contained", NULL};
	double scale = 0;
	sbx_err err = {{0}};

	sbx_mock_config_init(&d);
	check(range(x->sandbox_cap, d.sandbox_cap, 0, 1000000), "--cap out of range", NULL);
	check(range(x->cap_status, d.cap_status, 400, 599), "--cap-status out of range", NULL);
	check(range(x->template_build_cap, d.template_build_cap, 0, 1000), "--template-build-cap out of range", NULL);
	check(range(x->template_build_cap_global, d.template_build_cap_global, 0, 1000),
	      "--template-build-cap-global out of range", NULL);
	check(range(x->template_cap, d.template_cap, 0, MOCK_TPL_CAP_MAX), "--template-cap out of range", NULL);
	check(range(x->template_storage_mib, d.template_storage_mib, 0, MOCK_TPL_STORAGE_MIB_MAX),
	      "--template-storage-mib out of range", NULL);
	check(range(x->template_storage_mib_global, d.template_storage_mib_global, 0, MOCK_TPL_STORAGE_MIB_MAX),
	      "--template-storage-mib-global out of range", NULL);
	check(range(x->max_egress_rules, d.max_egress_rules, 1, 1000000), "--max-egress-rules out of range", NULL);
	check(range(x->max_json_body, d.max_json_body, 1024, 1ULL << 30), "--max-body out of range", NULL);
	check(range(x->max_file_body, d.max_file_body, 1024, 1ULL << 34), "--max-file-body out of range", NULL);
	check(x->exec_timeout_ms >= 0 && x->exec_timeout_ms <= 86400000, "--exec-timeout-ms out of range", NULL);
	check(range(x->max_connections, 0, 1, 1000000), "--max-connections out of range", NULL);
	check(range(x->idle_timeout_s, 0, 1, 86400), "--idle-timeout out of range", NULL);
	check(range(x->journal_size, d.journal_size, 1, SBX_MOCK_JOURNAL_MAX), "--journal-size out of range", NULL);
	check(range(x->warm_pool, d.warm_pool, 0, MOCK_CLI_WARM_POOL_MAX), "--warm-pool out of range", NULL);
	check(sbx_mock_parse_timing(x->timing, &scale, &err) == 0 && isfinite(scale) && scale >= 0,
	      "--timing accepted but not a finite scale", x->timing);
	check(x->host_rule_mode == SBX_HOST_RULES_OBSERVED || x->host_rule_mode == SBX_HOST_RULES_DOCUMENTED,
	      "--host-rules out of its words", NULL);
	check(x->egress == NULL || strcmp(x->egress, "auto") == 0 || strcmp(x->egress, "enforced") == 0 ||
		      strcmp(x->egress, "stored") == 0,
	      "--egress out of its words", x->egress);
	check(strcmp(x->guest_mode, "contained") == 0 || strcmp(x->guest_mode, "plain") == 0 ||
		      strcmp(x->guest_mode, "auto") == 0 || strcmp(x->guest_mode, "ns") == 0,
	      "--guest-mode out of its words", x->guest_mode);
	check(x->admin_token == NULL ||
		      (x->admin_token[0] != '\0' && ctl_at(x->admin_token) == 0 && strchr(x->admin_token, ' ') == NULL),
	      "--admin-token empty or with control bytes or spaces", x->admin_token);
	check(x->cap_code[0] != '\0' && ctl_at(x->cap_code) == 0, "--cap-code empty or with control bytes", NULL);
	check(x->region[0] != '\0' && ctl_at(x->region) == 0, "--region empty or with control bytes", NULL);
	check(x->listen_host != NULL && x->listen_host[0] != '\0', "--listen without a host", NULL);
	check(c->nkeys <= MOCK_CLI_MAX_KEYS && x->api_key_count == c->nkeys, "key count", NULL);
	for (size_t i = 0; i < c->nkeys; i++)
		check(c->keys[i][0] != '\0' && ctl_at(c->keys[i]) == 0, "an empty key or one with control bytes",
		      c->keys[i]);
	check(x->accept_any_key == (c->any_key == 1 || (c->any_key == -1 && c->nkeys == 0)),
	      "accept-any-key is not as documented", NULL);
	if (c->check_state == NULL) {
		check(x->record_to == NULL || x->record_upstream != NULL, "--record-to without --record-upstream", NULL);
		check(x->state_dir == NULL || x->replay == NULL, "--state-dir with --replay", NULL);
	} else {
		check(x->state_dir == NULL, "--check-state with --state-dir", NULL);
	}
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		check(strs[i] == NULL || same_str(strs[i], dflts[i]) || in_argv(strs[i], a) ||
			      strs[i] == c->scenario_file,
		      "an option value that does not come from argv", strs[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	args a1, a2;
	mock_cli *c1, *c2;
	int r1, r2;

	if (size > 8192)
		return 0;
	if (!build(data, size, &a1)) {
		args_free(&a1);
		return 0;
	}
	build(data, size, &a2);
	c1 = malloc(sizeof(*c1));
	c2 = malloc(sizeof(*c2));
	check(c1 != NULL && c2 != NULL, "out of memory", NULL);
	r1 = mock_cli_parse(c1, a1.n, a1.v);
	r2 = mock_cli_parse(c2, a2.n, a2.v);
	check(r1 == MOCK_CLI_OK || r1 == MOCK_CLI_HELP || r1 == MOCK_CLI_REFUSED, "an unknown result", NULL);
	same_parse(c1, c2, r1, r2);
	if (r1 == MOCK_CLI_REFUSED)
		names_option(c1, &a1);
	else if (r1 == MOCK_CLI_OK)
		within_limits(c1, &a1);
	mock_cli_free(c1);
	mock_cli_free(c2);
	free(c1);
	free(c2);
	args_free(&a1);
	args_free(&a2);
	return 0;
}

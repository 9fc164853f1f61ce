/* ctl: the command table, dispatch, help and configuration of sbxctl; see
 * ctl.h. The helpers the commands share are in ctl_helpers.c, so that the
 * table points down at the commands and the commands never point back up
 * here. Never calls exit(). */
#include "ctl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

#ifndef SBXCTL_VERSION
#define SBXCTL_VERSION "0.0.0"
#endif

const ctl_opt ctl_global_opts[] = {
	{"url", "URL", false, "base URL (env CREATEOS_SANDBOX_BASE_URL); required"},
	{"production", NULL, false, "use the production service " CTL_DEFAULT_BASE_URL},
	{"api-key", "KEY", false, "X-Api-Key (env CREATEOS_SANDBOX_API_KEY)"},
	{"admin-token", "TOKEN", false, "mock admin token (env SBX_MOCK_ADMIN_TOKEN)"},
	{"json", NULL, false, "machine-readable JSON output"},
	{"timeout", "DURATION", false, "request deadline, e.g. 30s (default 60s; exec: none)"},
	{NULL, NULL, false, NULL},
};

const ctl_opt ctl_opts_none[] = {{NULL, NULL, false, NULL}};

#define ANY SIZE_MAX

static const ctl_command commands[] = {
	{"create", "[options]", "create a sandbox (returns once it is running)",
	 "Prints the create response. --egress takes a comma-separated rule list\n('' = empty list).",
	 ctl_opts_create, 0, 0, ctl_cmd_create, 0},
	{"ls", "[--status S] [--page-size N]", "list sandboxes (follows every page)", NULL,
	 ctl_opts_ls, 0, 0, ctl_cmd_ls, 0},
	{"get", "ID", "show one sandbox", NULL, ctl_opts_none, 1, 1, ctl_cmd_get, 0},
	{"rm", "ID", "destroy a sandbox", NULL, ctl_opts_none, 1, 1, ctl_cmd_rm, 0},
	{"exec", "ID [--stream] [--env K=V]... [--timeout D] -- CMD [ARG...]",
	 "run a command; its exit code becomes sbxctl's",
	 "CMD is an executable, not a shell line (use: -- bash -c 'a | b').\n"
	 "--stream prints output as it arrives (NDJSON stream); without it the\n"
	 "output is printed when the command ends. With --json the result (or,\n"
	 "with --stream, every frame as one JSON line) goes to stdout.\n"
	 "Exit code: the remote command's (0-255; outside that range 255) when the\n"
	 "exec itself succeeded; 1 when the API failed or the stream ended without\n"
	 "an exit code; 2 for a usage error. A remote exit of 1 or 2 is told apart\n"
	 "by the 'sbxctl: ...' line sbxctl prints on stderr for its own failures.",
	 ctl_opts_exec, 1, ANY, ctl_cmd_exec, 0},
	{"pause", "ID [--wait] [--wait-timeout D]", "pause a sandbox", NULL, ctl_opts_wait, 1, 1,
	 ctl_cmd_pause, 0},
	{"resume", "ID [--wait] [--wait-timeout D]", "resume a paused sandbox", NULL, ctl_opts_wait, 1, 1,
	 ctl_cmd_resume, 0},
	{"fork", "ID [options]", "fork a paused sandbox (prints the new one)", NULL, ctl_opts_fork, 1, 1,
	 ctl_cmd_fork, 0},
	{"egress show", "ID", "show a sandbox's egress rules", NULL, ctl_opts_none, 1, 1,
	 ctl_cmd_egress_show, 0},
	{"egress set", "ID RULES...", "replace the egress rules ('r1,r2' ...)",
	 "Several RULES arguments add up. `egress set ID ''` sends an empty list\n(allow all); `egress clear ID` sends null.",
	 ctl_opts_none, 2, ANY, ctl_cmd_egress_set, 0},
	{"egress clear", "ID", "set the egress list to null (no rules: allow all)", NULL, ctl_opts_none,
	 1, 1, ctl_cmd_egress_clear, 0},
	{"egress check", "--rules 'r1,r2' [--mode documented|observed] DEST...",
	 "offline: the engine's decision and reason per destination",
	 "DEST is ADDR:PORT, [V6]:PORT, NAME:PORT or NAME@ADDR:PORT. Mode 'observed'\n"
	 "(default, what the live service does) makes host rules match nothing;\n"
	 "'documented' matches them. Exit 1 when a rule is invalid (every error is\n"
	 "printed), 2 when a destination cannot be parsed.",
	 ctl_opts_egress_check, 1, ANY, ctl_cmd_egress_check, CTL_CMD_OFFLINE},
	{"egress test", "ID DEST...", "connect from the guest: kernel vs engine",
	 "Each DEST (ADDR:PORT, [V6]:PORT, NAME:PORT, NAME@ADDR:PORT: the guest dials\n"
	 "the address, or resolves the name) is connected to at once from the guest\n"
	 "(python3 there), for 2 s. KERNEL: connected, dropped (no answer), or stayed\n"
	 "in the guest (refused or unroutable there). ENGINE: the sandbox's stored\n"
	 "rules under --mode. Exit 1 if any row disagrees. Needs sbx-mock with\n"
	 "enforced egress to mean anything (it says so at start).",
	 ctl_opts_egress_test, 2, ANY, ctl_cmd_egress_test, 0},
	{"egress lint", "FILE", "offline: validate a rule file (lines or a JSON array)",
	 "Blank lines and lines starting with # are skipped in the line format.\n"
	 "FILE '-' reads stdin. Every error is printed with its rule index and line;\n"
	 "exit 1 if there is any.",
	 ctl_opts_egress_lint, 1, 1, ctl_cmd_egress_lint, CTL_CMD_OFFLINE},
	{"files push", "ID LOCAL REMOTE", "upload a file (binary-safe; LOCAL '-' = stdin)",
	 "REMOTE must be an absolute path in the sandbox.", ctl_opts_none, 3, 3, ctl_cmd_files_push, 0},
	{"files pull", "ID REMOTE LOCAL", "download a file (binary-safe; LOCAL '-' = stdout)",
	 "LOCAL is written only when the download succeeded.", ctl_opts_none, 3, 3, ctl_cmd_files_pull, 0},
	{"whoami", "", "show the key's user and sandbox counts", NULL, ctl_opts_none, 0, 0,
	 ctl_cmd_whoami, 0},
	{"shapes", "", "list the machine shapes", NULL, ctl_opts_none, 0, 0, ctl_cmd_shapes, 0},
	{"rootfs", "", "list the root filesystems", NULL, ctl_opts_none, 0, 0, ctl_cmd_rootfs, 0},
	{"mock faults add", "JSON|@FILE", "add fault rule(s): one rule or {\"rules\":[...]}",
	 "See mock-api/ADMIN.md for the rule format. @FILE reads the JSON from a file.",
	 ctl_opts_none, 1, 1, ctl_cmd_mock_faults_add, CTL_CMD_ADMIN},
	{"mock faults ls", "", "list fault rules with their matched/fired counts", NULL, ctl_opts_none,
	 0, 0, ctl_cmd_mock_faults_ls, CTL_CMD_ADMIN},
	{"mock faults rm", "ID", "remove one fault rule", NULL, ctl_opts_none, 1, 1,
	 ctl_cmd_mock_faults_rm, CTL_CMD_ADMIN},
	{"mock faults clear", "", "remove every fault rule", NULL, ctl_opts_none, 0, 0,
	 ctl_cmd_mock_faults_clear, CTL_CMD_ADMIN},
	{"mock internet stub", "JSON|@FILE", "add internet stub(s): one or {\"stubs\":[...]}",
	 "See mock-api/INTERNET.md (\"Stubs\") for the format. @FILE reads the JSON from a file.",
	 ctl_opts_none, 1, 1, ctl_cmd_mock_internet_stub_add, CTL_CMD_ADMIN | CTL_CMD_FOLD},
	{"mock internet rm", "ID|all", "remove one internet stub, or all of them", NULL, ctl_opts_none, 1, 1,
	 ctl_cmd_mock_internet_stub_rm, CTL_CMD_ADMIN | CTL_CMD_FOLD},
	{"mock internet show", "stubs|journal", "the internet's stubs or requests (JSON lines)", NULL,
	 ctl_opts_none, 1, 1, ctl_cmd_mock_internet_show, CTL_CMD_ADMIN | CTL_CMD_FOLD},
	{"mock scenario load", "NAME|FILE", "load a named scenario, or a scenario object from a file",
	 "An argument that names an existing file (or contains '/' or ends in .json)\n"
	 "is read and sent as the scenario object; anything else is a scenario name.",
	 ctl_opts_none, 1, 1, ctl_cmd_mock_scenario_load, CTL_CMD_ADMIN},
	{"mock journal", "[filters] [--follow]", "show the mock's request journal",
	 "--follow keeps polling for new entries until interrupted (Ctrl-C);\n"
	 "with --json it prints one JSON entry per line.",
	 ctl_opts_journal, 0, 0, ctl_cmd_mock_journal, CTL_CMD_ADMIN},
	{"mock state", "[--tenant KEY]", "show every tenant and sandbox the mock holds", NULL,
	 ctl_opts_state, 0, 0, ctl_cmd_mock_state, CTL_CMD_ADMIN},
	{"mock reset", "", "forget every tenant, sandbox, fault and journal entry", NULL, ctl_opts_none,
	 0, 0, ctl_cmd_mock_reset, CTL_CMD_ADMIN},
	{"mock clock advance", "DURATION", "advance the mock clock (e.g. 90s, 5m, 1500ms)",
	 "Due transitions (auto-pause, slow pause/resume) happen at once.", ctl_opts_none, 1, 1,
	 ctl_cmd_mock_clock_advance, CTL_CMD_ADMIN},
	{"mock cassette list", "DIR", "offline: one line per recorded exchange, and totals",
	 "DIR is a cassette (lib/README.md, \"Cassettes\"). A line:\n"
	 "METHOD scheme://host:port/target  status  size  sha256[:12]  n=K; then the\n"
	 "exchanges, hosts, bytes of answers and bodies on disk. Bodies are not read\n"
	 "(check does). Exit 1 when a line of cassette.jsonl is bad (each is named).",
	 ctl_opts_none, 1, 1, ctl_cmd_cassette_list, CTL_CMD_OFFLINE | CTL_CMD_FOLD},
	{"mock cassette check", "DIR", "offline: check every line and every body's size and hash",
	 "What sbx-mock --internet-replay checks at start: the header, every line\n"
	 "(keys, types, order, redaction), the lines' order, each request's n = 1, 2...,\n"
	 "every body file there with its size and SHA-256. Every problem is named\n"
	 "(FILE:LINE or the body file); exit 1 when there is one.",
	 ctl_opts_none, 1, 1, ctl_cmd_cassette_check, CTL_CMD_OFFLINE | CTL_CMD_FOLD},
	{"mock cassette prune", "DIR [--host PATTERN] [--target-prefix P] [--keep-bodies]",
	 "offline: remove exchanges, then the bodies no line names",
	 "Removes the exchanges whose host matches PATTERN (a name, or *.suffix for\n"
	 "the names below it) and whose target starts with P (both when both are\n"
	 "given; neither: only the unnamed bodies go). Prints what it removed.\n"
	 "A cassette with a problem is refused (check). cassette.jsonl is replaced\n"
	 "whole (temporary file, fsync, rename) before any body is removed.",
	 ctl_opts_cassette_prune, 1, 1, ctl_cmd_cassette_prune, CTL_CMD_OFFLINE | CTL_CMD_FOLD},
	{"mock cassette merge", "A B --out DIR", "offline: the union of two cassettes into a new one",
	 "Where A and B hold the same request with the same n, A's is kept and the\n"
	 "conflict printed. B's redaction tokens are renumbered above A's; the\n"
	 "redacted query names are united (requests they make one are numbered\n"
	 "n=1, 2, ... again). Bodies are hard links (copies across\n"
	 "filesystems). DIR is written beside itself and renamed when whole.",
	 ctl_opts_cassette_merge, 2, 2, ctl_cmd_cassette_merge, CTL_CMD_OFFLINE | CTL_CMD_FOLD},
	{"mock env", "[--pid PID] [--url URL]", "print export lines for the newest running sbx-mock",
	 "For a POSIX shell: eval \"$(sbxctl mock env)\". Sets CREATEOS_SANDBOX_BASE_URL,\n"
	 "CREATEOS_SANDBOX_API_KEY (an existing value is kept), SBX_MOCK_ADMIN_TOKEN and the\n"
	 "mock's CA for Node (NODE_EXTRA_CA_CERTS), OpenSSL/Python (SSL_CERT_FILE), requests\n"
	 "(REQUESTS_CA_BUNDLE), curl (CURL_CA_BUNDLE), git (GIT_SSL_CAINFO) and Java\n"
	 "(JAVA_TOOL_OPTIONS: a PKCS12 truststore): the system's CAs plus the mock's.\n"
	 "Reads the mocks' runtime directory ($XDG_RUNTIME_DIR/sbx-harness, else\n"
	 "${TMPDIR:-/tmp}/sbx-harness-UID), never the network; --url picks the mock serving\n"
	 "that URL. Exit 1 when no mock runs.",
	 ctl_opts_mock_env, 0, 0, ctl_cmd_mock_env, CTL_CMD_OFFLINE},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* Groups whose commands (CTL_CMD_FOLD) show as one row in `sbxctl --help`,
 * so the top list stays a screen; `sbxctl GROUP --help` lists them. */
static const struct {
	const char *group, *summary;
} folded_groups[] = {
	{"mock internet", "stub|rm|show: the simulated internet's stubs and requests"},
	{"mock cassette", "offline: list|check|prune|merge an internet cassette"},
};

/* The summary of c's folded row in the top list ("": printed already), or
 * NULL when c is not folded; *glen: the length of its group's name. */
static const char *folded_row(const ctl_command *c, const ctl_command *prev, size_t *glen)
{
	const char *sp = strrchr(c->name, ' ');
	*glen = sp != NULL ? (size_t)(sp - c->name) : strlen(c->name);
	for (size_t g = 0; g < sizeof folded_groups / sizeof folded_groups[0]; g++) {
		if (strlen(folded_groups[g].group) != *glen || strncmp(folded_groups[g].group, c->name, *glen) != 0)
			continue;
		if (prev != NULL && (prev->flags & CTL_CMD_FOLD) != 0 && strncmp(prev->name, c->name, *glen) == 0)
			return ""; /* the group's row is out already */
		return folded_groups[g].summary;
	}
	return NULL;
}

/* ---- help ---- */

static void print_opts(FILE *f, const ctl_opt *opts)
{
	for (const ctl_opt *o = opts; o->name != NULL; o++) {
		char left[64];
		snprintf(left, sizeof left, "--%s%s%s", o->name, o->metavar != NULL ? " " : "",
			 o->metavar != NULL ? o->metavar : "");
		fprintf(f, "  %-24s %s%s\n", left, o->help, o->repeatable ? " (repeatable)" : "");
	}
}

static void command_help(FILE *f, const ctl_command *c)
{
	fprintf(f, "Usage: sbxctl %s %s\n%s.\n", c->name, c->synopsis, c->summary);
	if (c->details != NULL)
		fprintf(f, "\n%s\n", c->details);
	if (c->opts[0].name != NULL) {
		fprintf(f, "\nOptions:\n");
		print_opts(f, c->opts);
	}
	fprintf(f, "\nGlobal options (before or after the command):\n");
	print_opts(f, ctl_global_opts);
	fprintf(f, "\nExit codes: 0 ok, 1 API/remote failure, 2 usage error%s.\n",
		c->run == ctl_cmd_exec ? "; else the remote code" : "");
}

/* Lists the commands starting with prefix ("" = all); brief: the command
 * list only (for usage errors). */
static void list_help(FILE *f, const char *prefix, bool brief)
{
	size_t plen = strlen(prefix);
	fprintf(f, "Usage: sbxctl [global options] %s%sCOMMAND [options] [args]\n\n", prefix,
		plen > 0 ? " " : "");
	if (plen == 0)
		fprintf(f, "A command-line client for the CreateOS Sandbox control plane and sbx-mock.\n\n");
	fprintf(f, "Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const ctl_command *c = &commands[i];
		if (strncmp(c->name, prefix, plen) != 0 || (plen > 0 && c->name[plen] != ' '))
			continue;
		size_t glen = 0;
		const char *row = plen == 0 && (c->flags & CTL_CMD_FOLD) != 0
					  ? folded_row(c, i > 0 ? &commands[i - 1] : NULL, &glen) : NULL;
		if (row != NULL && row[0] == '\0')
			continue;
		if (row != NULL)
			fprintf(f, "  %-20.*s %s\n", (int)glen, c->name, row);
		else
			fprintf(f, "  %-20s %s\n", c->name, c->summary);
	}
	if (brief)
		return;
	fprintf(f, "\nGlobal options:\n");
	print_opts(f, ctl_global_opts);
	fprintf(f, "\nEnvironment: CREATEOS_SANDBOX_BASE_URL (no default: the production\n"
		   "service only with --production), CREATEOS_SANDBOX_API_KEY, SBX_MOCK_ADMIN_TOKEN.\n"
		   "Exit codes: 0 ok, 1 API/remote failure, 2 usage error; exec: the remote\n"
		   "command's. 'sbxctl COMMAND --help' for details, --version for the version.\n");
}

/* ---- dispatch ---- */

/* How many words of argv[i..] name command c (0: no match). */
static size_t match_words(const ctl_command *c, int argc, char **argv, int i)
{
	const char *p = c->name;
	size_t words = 0;
	while (*p != '\0') {
		if (i >= argc)
			return 0;
		const char *sp = strchr(p, ' ');
		size_t len = sp != NULL ? (size_t)(sp - p) : strlen(p);
		if (strlen(argv[i]) != len || memcmp(argv[i], p, len) != 0)
			return 0;
		words++;
		i++;
		p += len;
		if (*p == ' ')
			p++;
	}
	return words;
}

static const ctl_command *find_command(int argc, char **argv, int i, size_t *words)
{
	const ctl_command *best = NULL;
	*words = 0;
	for (size_t k = 0; k < NCOMMANDS; k++) {
		size_t w = match_words(&commands[k], argc, argv, i);
		if (w > *words) {
			*words = w;
			best = &commands[k];
		}
	}
	return best;
}

/* The longest group ("mock faults", "egress") that argv[i..] starts with. */
static size_t group_prefix(int argc, char **argv, int i, char *buf, size_t cap)
{
	size_t best = 0;
	buf[0] = '\0';
	for (size_t k = 0; k < NCOMMANDS; k++) {
		char name[64];
		snprintf(name, sizeof name, "%s", commands[k].name);
		size_t words = 0;
		char *p = name;
		int j = i;
		for (;;) {
			char *sp = strchr(p, ' ');
			if (sp == NULL || j >= argc)
				break;
			*sp = '\0';
			if (strcmp(argv[j], p) != 0)
				break;
			*sp = ' ';
			words++;
			j++;
			p = sp + 1;
		}
		if (words > best) {
			best = words;
			snprintf(buf, cap, "%.*s", (int)(p - name - 1), name);
		}
	}
	return best;
}

/* Skips the global options in front of the command; returns the index of the
 * command word, or -1 after a usage error. */
static int skip_leading_globals(ctl_ctx *ctx, int argc, char **argv, bool *help, bool *version)
{
	int i = 1;
	while (i < argc && argv[i][0] == '-' && argv[i][1] != '\0') {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			*help = true;
			i++;
			continue;
		}
		if (strcmp(a, "--version") == 0) {
			*version = true;
			i++;
			continue;
		}
		const char *name = a + (a[1] == '-' ? 2 : 1);
		size_t len = strcspn(name, "=");
		const ctl_opt *o = NULL;
		for (const ctl_opt *g = ctl_global_opts; g->name != NULL; g++) {
			if (strlen(g->name) == len && memcmp(g->name, name, len) == 0)
				o = g;
		}
		if (o == NULL || a[1] != '-') {
			ctl_usage_error(ctx, "unknown global option '%s' (commands come first: sbxctl COMMAND --option)", a);
			return -1;
		}
		if (o->metavar != NULL && name[len] != '=')
			i++;
		i++;
	}
	return i;
}

/* The base URL: --url, else CREATEOS_SANDBOX_BASE_URL, else the production
 * service only when --production asks for it. An empty value is never
 * "unset": a walkthrough whose variable came out empty must not send its
 * requests to production. */
static int resolve_url(ctl_ctx *ctx)
{
	const char *url = ctl_args_get(&ctx->args, "url");
	bool production = ctl_args_has(&ctx->args, "production");
	if (url != NULL && production)
		return ctl_usage_error(ctx, "--url and --production exclude each other");
	if (production) {
		ctx->base_url = CTL_DEFAULT_BASE_URL;
		return CTL_EXIT_OK;
	}
	if (url != NULL && url[0] == '\0')
		return ctl_usage_error(ctx, "--url is empty");
	if (url == NULL) {
		url = getenv("CREATEOS_SANDBOX_BASE_URL");
		if (url == NULL || url[0] == '\0')
			return ctl_usage_error(ctx, "no control-plane URL: CREATEOS_SANDBOX_BASE_URL is %s and there is "
						    "no --url (the production service, %s, only with --production)",
					       url == NULL ? "not set" : "empty", CTL_DEFAULT_BASE_URL);
	}
	sbx_err e = {""};
	if (ctl_check_url(url, ctl_args_get(&ctx->args, "url") != NULL ? "--url" : "CREATEOS_SANDBOX_BASE_URL",
			  &e) != 0)
		return ctl_usage_error(ctx, "%s", e.msg);
	ctx->base_url = url;
	return CTL_EXIT_OK;
}

static int resolve_config(ctl_ctx *ctx)
{
	ctx->api_key = ctl_args_get(&ctx->args, "api-key");
	if (ctx->api_key == NULL)
		ctx->api_key = getenv("CREATEOS_SANDBOX_API_KEY");
	ctx->admin_token = ctl_args_get(&ctx->args, "admin-token");
	if (ctx->admin_token == NULL)
		ctx->admin_token = getenv("SBX_MOCK_ADMIN_TOKEN");
	ctx->timeout_ms = -1;
	const char *t = ctl_args_get(&ctx->args, "timeout");
	if (t != NULL) {
		int64_t ms = 0;
		sbx_err e = {""};
		if (ctl_parse_duration_ms(t, "--timeout", &ms, &e) != 0)
			return ctl_usage_error(ctx, "%s", e.msg);
		if (ms <= 0 || ms > 86400000)
			return ctl_usage_error(ctx, "--timeout: %s is out of range (1ms..24h)", t);
		ctx->timeout_ms = (long)ms;
	}
	if ((ctx->cmd->flags & CTL_CMD_ADMIN) != 0 && (ctx->admin_token == NULL || ctx->admin_token[0] == '\0'))
		return ctl_usage_error(ctx, "mock commands need the admin token: pass --admin-token or set "
					    "SBX_MOCK_ADMIN_TOKEN (sbx-mock prints it at start)");
	if ((ctx->cmd->flags & CTL_CMD_OFFLINE) != 0)
		return CTL_EXIT_OK;
	return resolve_url(ctx);
}

static int check_positionals(ctl_ctx *ctx)
{
	const ctl_command *c = ctx->cmd;
	size_t n = ctx->args.npos;
	if (n < c->min_pos)
		return ctl_usage_error(ctx, "missing argument%s: expected %s", c->min_pos - n > 1 ? "s" : "",
				       c->synopsis);
	if (n > c->max_pos)
		return ctl_usage_error(ctx, "unexpected argument '%s' (usage: sbxctl %s %s)",
				       ctx->args.pos[c->max_pos], c->name, c->synopsis);
	return CTL_EXIT_OK;
}

/* Parses the command line of the chosen command: the leading globals
 * argv[1..cmd_at) plus everything after the command words. */
static int parse_command_line(ctl_ctx *ctx, int argc, char **argv, int cmd_at, size_t words)
{
	char **merged = calloc((size_t)argc + 1, sizeof *merged);
	if (merged == NULL)
		return ctl_fail(ctx, "out of memory");
	int n = 0;
	for (int k = 1; k < cmd_at; k++)
		merged[n++] = argv[k];
	for (int k = cmd_at + (int)words; k < argc; k++)
		merged[n++] = argv[k];
	const ctl_opt *const tables[] = {ctx->cmd->opts, ctl_global_opts, NULL};
	sbx_err e = {""};
	int rc = CTL_EXIT_OK;
	if (ctl_args_parse(tables, n, merged, &ctx->args, &e) != 0)
		rc = ctl_usage_error(ctx, "%s%s", e.msg,
				     ctx->cmd->run == ctl_cmd_exec ? "; put the remote command after '--'" : "");
	free(merged);
	return rc;
}

/* No command matched argv[i..]: a group's help ("sbxctl egress --help"),
 * or a usage error naming the unknown or missing word. */
static int no_command(ctl_ctx *ctx, int argc, char **argv, int i, bool help)
{
	char group[64];
	size_t gw = group_prefix(argc, argv, i, group, sizeof group);
	int next = i + (int)gw;
	if (help || (gw > 0 && next < argc && (strcmp(argv[next], "--help") == 0 || strcmp(argv[next], "-h") == 0))) {
		list_help(ctx->out, group, false);
		return CTL_EXIT_OK;
	}
	if (gw > 0 && !ctx->json)
		list_help(ctx->err, group, true);
	if (i >= argc)
		return ctl_usage_error(ctx, "missing command (try 'sbxctl --help')");
	if (next >= argc)
		return ctl_usage_error_in(ctx, group, "missing sub-command");
	return ctl_usage_error(ctx, "unknown command '%s%s%s' (try 'sbxctl --help')", group, gw > 0 ? " " : "",
			       argv[next]);
}

static int dispatch(ctl_ctx *ctx, int argc, char **argv)
{
	bool help = false, version = false;
	int i = skip_leading_globals(ctx, argc, argv, &help, &version);
	if (i < 0)
		return CTL_EXIT_USAGE;
	if (version && !help && i >= argc) {
		fprintf(ctx->out, "sbxctl %s\n", SBXCTL_VERSION);
		return CTL_EXIT_OK;
	}
	if (i < argc && strcmp(argv[i], "help") == 0) {
		help = true;
		i++;
	}
	size_t words = 0;
	ctx->cmd = find_command(argc, argv, i, &words);
	if (ctx->cmd == NULL)
		return no_command(ctx, argc, argv, i, help);
	int rc = parse_command_line(ctx, argc, argv, i, words);
	if (rc != CTL_EXIT_OK)
		return rc;
	ctx->json = ctl_args_has(&ctx->args, "json");
	if (help || ctx->args.help) {
		command_help(ctx->out, ctx->cmd);
		return CTL_EXIT_OK;
	}
	if (version)
		return ctl_usage_error(ctx, "--version takes no command");
	rc = check_positionals(ctx);
	if (rc != CTL_EXIT_OK)
		return rc;
	rc = resolve_config(ctx);
	if (rc != CTL_EXIT_OK)
		return rc;
	return ctx->cmd->run(ctx);
}

/* --json anywhere before "--" asks for JSON errors, including the usage
 * errors found before the command line is parsed. */
static bool wants_json(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return false;
		if (strcmp(argv[i], "--json") == 0)
			return true;
	}
	return false;
}

int ctl_main(int argc, char **argv, FILE *out, FILE *err)
{
	ctl_ctx ctx;
	memset(&ctx, 0, sizeof ctx);
	ctx.out = out;
	ctx.err = err;
	ctx.timeout_ms = -1;
	ctx.json = wants_json(argc, argv);
	int rc = dispatch(&ctx, argc, argv);
	fflush(out);
	if (ctx.client_ready)
		ctl_client_free(&ctx.client);
	ctl_args_free(&ctx.args);
	return rc;
}

/* ctl: what every sbxctl command shares: the run context (streams, output
 * mode, the lazily created HTTP client), the command table, exit codes and
 * the helpers that print usage errors and API failures consistently.
 *
 * Commands never call exit(): they return one of the CTL_EXIT_* codes (or,
 * for exec, the remote command's code), so the whole CLI can run in-process
 * in tests via ctl_main(). */
#ifndef SBXCTL_CTL_H
#define SBXCTL_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "args.h"
#include "client.h"

enum {
	CTL_EXIT_OK = 0,    /* done */
	CTL_EXIT_FAIL = 1,  /* the API/mock answered with an error, or no answer; lint found errors */
	CTL_EXIT_USAGE = 2, /* bad command line or missing configuration; nothing was sent */
};

#define CTL_DEFAULT_BASE_URL "https://api.sb.createos.sh"
#define CTL_DEFAULT_TIMEOUT_MS 60000L

struct ctl_command;

typedef struct ctl_ctx {
	FILE *out;
	FILE *err;
	bool json;
	const struct ctl_command *cmd;
	ctl_args args;
	const char *base_url;     /* resolved: --url, CREATEOS_SANDBOX_BASE_URL, --production */
	const char *api_key;      /* --api-key or CREATEOS_SANDBOX_API_KEY, may be NULL */
	const char *admin_token;  /* --admin-token or SBX_MOCK_ADMIN_TOKEN, may be NULL */
	long timeout_ms;          /* -1: the command's default */
	ctl_client client;
	bool client_ready;
} ctl_ctx;

typedef int (*ctl_run_fn)(ctl_ctx *ctx);

enum {
	CTL_CMD_ADMIN = 1,   /* needs the admin token */
	CTL_CMD_OFFLINE = 2, /* never touches the network */
	CTL_CMD_FOLD = 4,    /* one row for its group in `sbxctl --help` (ctl.c, folded_groups) */
};

typedef struct ctl_command {
	const char *name;     /* "egress check" */
	const char *synopsis; /* what follows the name in the usage line */
	const char *summary;  /* one line */
	const char *details;  /* further help paragraphs, may be NULL */
	const ctl_opt *opts;  /* the command's own options */
	size_t min_pos;
	size_t max_pos;       /* SIZE_MAX: unlimited */
	ctl_run_fn run;
	unsigned flags;
} ctl_command;

/* Runs sbxctl with argv (argv[0] is the program name). Writes to out/err. */
int ctl_main(int argc, char **argv, FILE *out, FILE *err);

extern const ctl_opt ctl_global_opts[];

/* Prints "sbxctl NAME: message" and a hint to --help (with --json: one
 * {"error":{"class":"UsageError",...}} line); returns CTL_EXIT_USAGE. */
int ctl_usage_error(ctl_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same, naming `name` ("egress" for a group; NULL: none). */
int ctl_usage_error_in(ctl_ctx *ctx, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prints an error that is not an API answer ("sbxctl: message"); returns CTL_EXIT_FAIL. */
int ctl_fail(ctl_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The client, created on first use with the context's configuration. NULL
 * (after printing) when it cannot be created. */
ctl_client *ctl_get_client(ctl_ctx *ctx);
/* One request; on failure prints the mapped error and returns -1. */
int ctl_call(ctl_ctx *ctx, const ctl_request *req, ctl_response *resp);
/* ctl_call with a JSON body (may be NULL); the body is not consumed. */
int ctl_call_json(ctl_ctx *ctx, const char *method, const char *path, const char *query,
		  const cJSON *body, bool admin, ctl_response *resp);
/* Fetches every page of an offset-paginated list (query limit/offset plus
 * `filter`, escaped, may be NULL) into one array the caller frees. Stops when
 * offset+count >= total or a page is empty, like the SDK. NULL after
 * printing the error. */
cJSON *ctl_fetch_all(ctl_ctx *ctx, const char *path, const char *filter, long page_size);
/* "/v1/sandboxes/<escaped id><suffix>" into sb. */
void ctl_sandbox_path(sbx_strbuf *sb, const char *id, const char *suffix);
/* Reads a whole file ("-" = stdin) into sb; prints and returns -1 on error. */
int ctl_read_file(ctl_ctx *ctx, const char *path, sbx_strbuf *sb);
/* Adds the K=V values of a repeatable option as an object member `key`.
 * Prints a usage error and returns -1 on a malformed pair. */
int ctl_add_env(ctl_ctx *ctx, cJSON *body, const char *key, const char *opt);
/* Adds a "r1,r2" list as an array of strings member `key`. */
int ctl_add_rules(ctl_ctx *ctx, cJSON *body, const char *key, const char *list);

/* Command implementations (one file per family). */
int ctl_cmd_create(ctl_ctx *ctx);
int ctl_cmd_ls(ctl_ctx *ctx);
int ctl_cmd_get(ctl_ctx *ctx);
int ctl_cmd_rm(ctl_ctx *ctx);
int ctl_cmd_pause(ctl_ctx *ctx);
int ctl_cmd_resume(ctl_ctx *ctx);
int ctl_cmd_fork(ctl_ctx *ctx);
int ctl_cmd_exec(ctl_ctx *ctx);
int ctl_cmd_files_push(ctl_ctx *ctx);
int ctl_cmd_files_pull(ctl_ctx *ctx);
int ctl_cmd_egress_show(ctl_ctx *ctx);
int ctl_cmd_egress_set(ctl_ctx *ctx);
int ctl_cmd_egress_clear(ctl_ctx *ctx);
int ctl_cmd_egress_check(ctl_ctx *ctx);
int ctl_cmd_egress_lint(ctl_ctx *ctx);
int ctl_cmd_egress_test(ctl_ctx *ctx);
int ctl_cmd_whoami(ctl_ctx *ctx);
int ctl_cmd_shapes(ctl_ctx *ctx);
int ctl_cmd_rootfs(ctl_ctx *ctx);
int ctl_cmd_mock_faults_add(ctl_ctx *ctx);
int ctl_cmd_mock_faults_ls(ctl_ctx *ctx);
int ctl_cmd_mock_faults_clear(ctl_ctx *ctx);
int ctl_cmd_mock_faults_rm(ctl_ctx *ctx);
int ctl_cmd_mock_internet_stub_add(ctl_ctx *ctx);
int ctl_cmd_mock_internet_stub_rm(ctl_ctx *ctx);
int ctl_cmd_mock_internet_show(ctl_ctx *ctx);
int ctl_cmd_mock_scenario_load(ctl_ctx *ctx);
int ctl_cmd_mock_journal(ctl_ctx *ctx);
int ctl_cmd_mock_state(ctl_ctx *ctx);
int ctl_cmd_mock_reset(ctl_ctx *ctx);
int ctl_cmd_mock_clock_advance(ctl_ctx *ctx);
int ctl_cmd_mock_env(ctl_ctx *ctx);
int ctl_cmd_cassette_list(ctl_ctx *ctx);
int ctl_cmd_cassette_check(ctl_ctx *ctx);
int ctl_cmd_cassette_prune(ctl_ctx *ctx);
int ctl_cmd_cassette_merge(ctl_ctx *ctx);

/* Option tables, defined next to their commands. */
extern const ctl_opt ctl_opts_none[];
extern const ctl_opt ctl_opts_mock_env[];
extern const ctl_opt ctl_opts_create[];
extern const ctl_opt ctl_opts_ls[];
extern const ctl_opt ctl_opts_wait[];
extern const ctl_opt ctl_opts_fork[];
extern const ctl_opt ctl_opts_exec[];
extern const ctl_opt ctl_opts_egress_check[];
extern const ctl_opt ctl_opts_egress_lint[];
extern const ctl_opt ctl_opts_egress_test[];
extern const ctl_opt ctl_opts_journal[];
extern const ctl_opt ctl_opts_state[];
extern const ctl_opt ctl_opts_cassette_prune[];
extern const ctl_opt ctl_opts_cassette_merge[];

#endif

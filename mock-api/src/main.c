/* sbx-mock: the offline CreateOS Sandbox control plane as a program.
 * Parses flags into an sbx_mock_config, starts the server, prints the URL and
 * admin token on stdout, and stops cleanly on SIGINT/SIGTERM. Exit codes: 0
 * clean stop, 2 usage or setup error. */
#include <errno.h>
#include <unistd.h>
#include <getopt.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sbx/mock.h"

#define MAX_KEYS 1024

static const char usage[] =
	"usage: sbx-mock [options]\n"
	"Offline CreateOS Sandbox control plane (see mock-api/README.md).\n\n"
	"  --listen HOST:PORT      bind address (default 127.0.0.1:0 = ephemeral port)\n"
	"  --admin-token TOKEN     admin API token (default: random, printed)\n"
	"  --api-key KEY           a known API key (repeatable); turns accept-any-key off\n"
	"  --keys-file FILE        known API keys, one per line (# comments)\n"
	"  --accept-any-key        any key creates a tenant (default unless keys are given)\n"
	"  --no-accept-any-key     only known keys (401 otherwise)\n"
	"  --cap N                 concurrent sandboxes per key (default 5)\n"
	"  --cap-status CODE       status when over the cap (default 403)\n"
	"  --cap-code CODE         data.code when over the cap (default QUOTA_EXCEEDED)\n"
	"  --host-rules MODE       egress host rules: observed (default) | documented\n"
	"  --timing T              instant (default) | realistic | scale factor (e.g. 0.1)\n"
	"  --region NAME           the region this control plane serves (default local)\n"
	"  --max-egress-rules N    egress list limit (default 1024)\n"
	"  --max-body BYTES        JSON body limit (default 1048576)\n"
	"  --max-file-body BYTES   file upload limit (default 67108864)\n"
	"  --work-dir DIR          where guest trees live (default: private temp dir)\n"
	"  --guest-mode MODE       contained (default) | plain (no isolation)\n"
	"  --egress MODE           auto (default: enforced where possible) | enforced | stored\n"
	"  --internet-hosts FILE   names the simulated internet resolves (default: the\n"
	"                          source tree's fixtures/internet/hosts.json)\n"
	"  --exec-timeout-ms MS    default exec timeout (default 600000, 0 = none)\n"
	"  --check-state DIR       validate DIR's state log without starting: exit 0\n"
	"                          clean, 1 a record or tail a start would drop, 2 unreadable\n"
	"  --seed N                fault RNG seed (default 1)\n"
	"  --journal-size N        request journal ring size (default 65536)\n"
	"  --no-journal            do not record requests\n"
	"  --scenario NAME|FILE    load a fault scenario: an existing file, else\n"
	"                          NAME.json in the scenario path\n"
	"  --scenario-dir DIR      look for scenario names here first, then in\n"
	"                          $SBX_SCENARIO_DIR, the source fixtures/scenarios,\n"
	"                          the installed share/sbx-harness/scenarios\n"
	"  --record-upstream URL   record mode: proxy every control-plane request to URL\n"
	"  --record-to FILE        ... and write the exchanges (JSON lines, keys redacted);\n"
	"                          a FILE that exists is refused unless --record-overwrite\n"
	"  --replay FILE           replay mode: answer a recorded session in order\n"
	"  --state-dir DIR         durable state: fsync'd mutation log + guest trees in DIR\n"
	"  --state-repair          a damaged state log: move its tail aside into a dated\n"
	"                          file and start from the last good record\n"
	"  --max-connections N     open API connections; past it new ones are closed at\n"
	"                          once (default 4000, less if the fd limit is lower)\n"
	"  --idle-timeout S        idle connections are closed after S seconds (default 120)\n"
	"  --self-listen HOST:PORT|off  the guests' self-signal endpoint, POST /self/pause\n"
	"                          and /self/delete (default 127.0.0.1:1029, as in a VM;\n"
	"                          a warning, not an error, when that port is taken)\n"
	"  --quiet                 no log lines on stderr\n"
	"  --help                  this text\n"
	"Exit codes: 0 stopped by SIGINT/SIGTERM, 2 usage or setup error.\n";

__attribute__((format(printf, 1, 2))) static int die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("sbx-mock: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'sbx-mock --help'.\n", stderr);
	return 2;
}

static int parse_ull(const char *s, unsigned long long lo, unsigned long long hi,
		     unsigned long long *out)
{
	char *end = NULL;
	unsigned long long v;

	if (s == NULL || s[0] == '\0' || s[0] == '-' || s[0] == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_listen(const char *arg, sbx_mock_config *cfg, char *host, size_t cap)
{
	const char *colon = strrchr(arg, ':');
	unsigned long long port;
	size_t hlen;

	if (colon == NULL || parse_ull(colon + 1, 0, 65535, &port) != 0)
		return -1;
	hlen = (size_t)(colon - arg);
	if (hlen == 0 || hlen >= cap)
		return -1;
	memcpy(host, arg, hlen);
	host[hlen] = '\0';
	cfg->listen_host = host;
	cfg->listen_port = (uint16_t)port;
	return 0;
}

/* Reads the known keys of a keys file into keys; 2 after printing what was
 * wrong and where (a directory, a line too long, no key at all: each
 * would leave accept-any-key on or the mock unusable). */
static int read_keys_file(const char *path, char **keys, size_t *n)
{
	FILE *fp = fopen(path, "r");
	char line[1024];
	size_t lineno = 0, before = *n;
	struct stat st;

	if (fp == NULL)
		return die_usage("--keys-file %s: %s", path, strerror(errno));
	if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
		fclose(fp);
		return die_usage("--keys-file %s: not a regular file", path);
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		char *p = line;
		size_t len;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(fp)) {
			fclose(fp);
			return die_usage("--keys-file %s line %zu: longer than %zu bytes", path, lineno,
					 sizeof(line) - 2);
		}
		while (*p == ' ' || *p == '\t')
			p++;
		len = strcspn(p, "\r\n");
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		p[len] = '\0';
		if (len == 0 || p[0] == '#')
			continue;
		if (*n == MAX_KEYS) {
			fclose(fp);
			return die_usage("--keys-file %s line %zu: more than %d keys", path, lineno,
					 MAX_KEYS);
		}
		/* The key table (and every key in it) is the caller's to free. */
		keys[*n] = strdup(p);
		if (keys[*n] == NULL) {
			fclose(fp);
			return die_usage("out of memory");
		}
		(*n)++; // NOLINT(clang-analyzer-unix.Malloc): main() frees the table
	}
	if (ferror(fp)) {
		fclose(fp);
		return die_usage("--keys-file %s: read error", path);
	}
	fclose(fp);
	if (*n == before)
		return die_usage("--keys-file %s: no key in it (only blank or # lines)", path);
	return 0;
}

enum {
	OPT_LISTEN = 256, OPT_ADMIN_TOKEN, OPT_API_KEY, OPT_KEYS_FILE, OPT_ANY, OPT_NO_ANY,
	OPT_CAP, OPT_CAP_STATUS, OPT_CAP_CODE, OPT_HOST_RULES, OPT_TIMING, OPT_REGION,
	OPT_MAX_RULES, OPT_MAX_BODY, OPT_MAX_FILE, OPT_WORK_DIR, OPT_GUEST_MODE, OPT_EXEC_TIMEOUT,
	OPT_SEED, OPT_JOURNAL_SIZE, OPT_NO_JOURNAL, OPT_SCENARIO, OPT_QUIET, OPT_HELP,
	OPT_SCENARIO_DIR, OPT_RECORD_UPSTREAM, OPT_RECORD_TO, OPT_REPLAY,
	OPT_STATE_DIR, OPT_SELF_LISTEN, OPT_RECORD_OVERWRITE, OPT_EGRESS, OPT_INTERNET_HOSTS,
	OPT_STATE_REPAIR, OPT_MAX_CONNS, OPT_IDLE_TIMEOUT, OPT_CHECK_STATE,
};

static const struct option options[] = {
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"admin-token", required_argument, NULL, OPT_ADMIN_TOKEN},
	{"api-key", required_argument, NULL, OPT_API_KEY},
	{"keys-file", required_argument, NULL, OPT_KEYS_FILE},
	{"accept-any-key", no_argument, NULL, OPT_ANY},
	{"no-accept-any-key", no_argument, NULL, OPT_NO_ANY},
	{"cap", required_argument, NULL, OPT_CAP},
	{"cap-status", required_argument, NULL, OPT_CAP_STATUS},
	{"cap-code", required_argument, NULL, OPT_CAP_CODE},
	{"host-rules", required_argument, NULL, OPT_HOST_RULES},
	{"timing", required_argument, NULL, OPT_TIMING},
	{"region", required_argument, NULL, OPT_REGION},
	{"max-egress-rules", required_argument, NULL, OPT_MAX_RULES},
	{"max-body", required_argument, NULL, OPT_MAX_BODY},
	{"max-file-body", required_argument, NULL, OPT_MAX_FILE},
	{"work-dir", required_argument, NULL, OPT_WORK_DIR},
	{"guest-mode", required_argument, NULL, OPT_GUEST_MODE},
	{"egress", required_argument, NULL, OPT_EGRESS},
	{"internet-hosts", required_argument, NULL, OPT_INTERNET_HOSTS},
	{"exec-timeout-ms", required_argument, NULL, OPT_EXEC_TIMEOUT},
	{"seed", required_argument, NULL, OPT_SEED},
	{"journal-size", required_argument, NULL, OPT_JOURNAL_SIZE},
	{"no-journal", no_argument, NULL, OPT_NO_JOURNAL},
	{"scenario", required_argument, NULL, OPT_SCENARIO},
	{"scenario-dir", required_argument, NULL, OPT_SCENARIO_DIR},
	{"record-upstream", required_argument, NULL, OPT_RECORD_UPSTREAM},
	{"record-to", required_argument, NULL, OPT_RECORD_TO},
	{"record-overwrite", no_argument, NULL, OPT_RECORD_OVERWRITE},
	{"replay", required_argument, NULL, OPT_REPLAY},
	{"state-dir", required_argument, NULL, OPT_STATE_DIR},
	{"state-repair", no_argument, NULL, OPT_STATE_REPAIR},
	{"max-connections", required_argument, NULL, OPT_MAX_CONNS},
	{"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
	{"check-state", required_argument, NULL, OPT_CHECK_STATE},
	{"self-listen", required_argument, NULL, OPT_SELF_LISTEN},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{"help", no_argument, NULL, OPT_HELP},
	{NULL, 0, NULL, 0},
};

typedef struct cli {
	sbx_mock_config cfg;
	char host[256];
	char *keys[MAX_KEYS];
	size_t nkeys;
	int any_key; /* -1 unset */
	bool record_overwrite;
	char scenario_file[4096]; /* "./NAME" for --scenario NAME naming a file here */
	const char *check_state;  /* --check-state DIR: validate, do not start */
} cli;

static int parse_num_opt(int opt, const char *arg, cli *c)
{
	unsigned long long v;

	switch (opt) {
	case OPT_CAP:
		if (parse_ull(arg, 0, 1000000, &v) != 0)
			return die_usage("--cap: \"%s\" is not a number 0-1000000", arg);
		c->cfg.sandbox_cap = (unsigned)v;
		return 0;
	case OPT_CAP_STATUS:
		if (parse_ull(arg, 400, 599, &v) != 0)
			return die_usage("--cap-status: \"%s\" is not an HTTP error status 400-599", arg);
		c->cfg.cap_status = (unsigned)v;
		return 0;
	case OPT_MAX_RULES:
		if (parse_ull(arg, 1, 1000000, &v) != 0)
			return die_usage("--max-egress-rules: \"%s\" is not a number 1-1000000", arg);
		c->cfg.max_egress_rules = (size_t)v;
		return 0;
	case OPT_MAX_BODY:
		if (parse_ull(arg, 1024, 1ULL << 30, &v) != 0)
			return die_usage("--max-body: \"%s\" is not a byte count 1024-1073741824", arg);
		c->cfg.max_json_body = (size_t)v;
		return 0;
	case OPT_MAX_FILE:
		if (parse_ull(arg, 1024, 1ULL << 34, &v) != 0)
			return die_usage("--max-file-body: \"%s\" is not a byte count 1024-17179869184", arg);
		c->cfg.max_file_body = (size_t)v;
		return 0;
	case OPT_EXEC_TIMEOUT:
		if (parse_ull(arg, 0, 86400000, &v) != 0)
			return die_usage("--exec-timeout-ms: \"%s\" is not a number 0-86400000", arg);
		c->cfg.exec_timeout_ms = (int64_t)v;
		return 0;
	case OPT_SEED:
		if (parse_ull(arg, 0, UINT64_MAX, &v) != 0)
			return die_usage("--seed: \"%s\" is not a non-negative integer", arg);
		c->cfg.seed = v;
		return 0;
	case OPT_MAX_CONNS:
		if (parse_ull(arg, 1, 1000000, &v) != 0)
			return die_usage("--max-connections: \"%s\" is not a number 1-1000000", arg);
		c->cfg.max_connections = (unsigned)v;
		return 0;
	case OPT_IDLE_TIMEOUT:
		if (parse_ull(arg, 1, 86400, &v) != 0)
			return die_usage("--idle-timeout: \"%s\" is not a number of seconds 1-86400", arg);
		c->cfg.idle_timeout_s = (unsigned)v;
		return 0;
	case OPT_JOURNAL_SIZE:
		if (parse_ull(arg, 1, SBX_MOCK_JOURNAL_MAX, &v) != 0)
			return die_usage("--journal-size: \"%s\" is not a number 1-%d", arg,
					 SBX_MOCK_JOURNAL_MAX);
		c->cfg.journal_size = (size_t)v;
		return 0;
	default:
		return 2;
	}
}

/* --scenario NAME|FILE: an existing file wins over a scenario name (a file
 * called "myscenario" here was looked up as a name). */
static void scenario_opt(const char *arg, cli *c)
{
	struct stat st;

	c->cfg.scenario = arg;
	if (strchr(arg, '/') == NULL && stat(arg, &st) == 0 && S_ISREG(st.st_mode)) {
		snprintf(c->scenario_file, sizeof(c->scenario_file), "./%s", arg);
		c->cfg.scenario = c->scenario_file;
	}
}

static int parse_opt(int opt, const char *arg, cli *c)
{
	switch (opt) {
	case OPT_LISTEN:
		if (parse_listen(arg, &c->cfg, c->host, sizeof(c->host)) != 0)
			return die_usage("--listen: \"%s\" is not HOST:PORT (e.g. 127.0.0.1:0)", arg);
		return 0;
	case OPT_ADMIN_TOKEN:
		if (arg[0] == '\0' || arg[strcspn(arg, " \t\r\n\v\f")] != '\0')
			return die_usage("--admin-token: must be non-empty, without spaces or newlines");
		c->cfg.admin_token = arg;
		return 0;
	case OPT_API_KEY:
		if (arg[0] == '\0' || c->nkeys == MAX_KEYS)
			return die_usage("--api-key: empty key or too many keys");
		c->keys[c->nkeys] = strdup(arg);
		if (c->keys[c->nkeys] == NULL)
			return die_usage("out of memory");
		c->nkeys++;
		return 0;
	case OPT_KEYS_FILE:
		return read_keys_file(arg, c->keys, &c->nkeys);
	case OPT_ANY:
		c->any_key = 1;
		return 0;
	case OPT_NO_ANY:
		c->any_key = 0;
		return 0;
	case OPT_CAP_CODE:
		if (arg[0] == '\0')
			return die_usage("--cap-code: must not be empty");
		c->cfg.cap_code = arg;
		return 0;
	case OPT_HOST_RULES:
		if (strcmp(arg, "observed") == 0)
			c->cfg.host_rule_mode = SBX_HOST_RULES_OBSERVED;
		else if (strcmp(arg, "documented") == 0)
			c->cfg.host_rule_mode = SBX_HOST_RULES_DOCUMENTED;
		else
			return die_usage("--host-rules: \"%s\" is not documented or observed", arg);
		return 0;
	case OPT_TIMING: {
		double s;
		sbx_err err = {{0}};

		if (sbx_mock_parse_timing(arg, &s, &err) != 0)
			return die_usage("--%s", err.msg);
		c->cfg.timing = arg;
		return 0;
	}
	case OPT_REGION:
		if (arg[0] == '\0')
			return die_usage("--region: must not be empty");
		c->cfg.region = arg;
		return 0;
	case OPT_WORK_DIR:
		c->cfg.work_dir = arg;
		return 0;
	case OPT_EGRESS:
		if (strcmp(arg, "auto") != 0 && strcmp(arg, "enforced") != 0 && strcmp(arg, "stored") != 0)
			return die_usage("--egress: \"%s\" is not auto, enforced or stored", arg);
		c->cfg.egress = arg;
		return 0;
	case OPT_INTERNET_HOSTS:
		if (access(arg, R_OK) != 0)
			return die_usage("--internet-hosts %s: %s", arg, strerror(errno));
		c->cfg.internet_hosts = arg;
		return 0;
	case OPT_GUEST_MODE:
		if (strcmp(arg, "contained") != 0 && strcmp(arg, "auto") != 0 && strcmp(arg, "ns") != 0 &&
		    strcmp(arg, "plain") != 0)
			return die_usage("--guest-mode: \"%s\" is not contained or plain", arg);
		c->cfg.guest_mode = arg;
		return 0;
	case OPT_NO_JOURNAL:
		c->cfg.no_journal = true;
		return 0;
	case OPT_SCENARIO:
		scenario_opt(arg, c);
		return 0;
	case OPT_SCENARIO_DIR:
		c->cfg.scenario_dir = arg;
		return 0;
	case OPT_RECORD_UPSTREAM:
		c->cfg.record_upstream = arg;
		return 0;
	case OPT_RECORD_TO:
		c->cfg.record_to = arg;
		return 0;
	case OPT_RECORD_OVERWRITE:
		c->record_overwrite = true;
		return 0;
	case OPT_REPLAY:
		c->cfg.replay = arg;
		return 0;
	case OPT_STATE_DIR:
		c->cfg.state_dir = arg;
		return 0;
	case OPT_STATE_REPAIR:
		c->cfg.state_repair = true;
		return 0;
	case OPT_CHECK_STATE:
		c->check_state = arg;
		return 0;
	case OPT_SELF_LISTEN: /* the address itself is checked at start */
		c->cfg.self_listen = strcmp(arg, "off") == 0 ? NULL : arg;
		c->cfg.self_listen_optional = false;
		return 0;
	case OPT_QUIET:
		c->cfg.quiet = true;
		return 0;
	default:
		return parse_num_opt(opt, arg, c);
	}
}

/* Whether a listen host is a loopback address (or localhost). */
static bool loopback(const char *host)
{
	return strncmp(host, "127.", 4) == 0 || strcmp(host, "localhost") == 0 ||
	       strcmp(host, "::1") == 0 || strcmp(host, "[::1]") == 0;
}

/* Checks across options, after all are read; 2 with the message printed. */
static int check_combination(cli *c)
{
	struct stat st;

	if (c->cfg.record_to != NULL && c->cfg.record_upstream == NULL)
		return die_usage("--record-to needs --record-upstream (nothing would be recorded)");
	if (c->cfg.record_to != NULL && !c->record_overwrite && lstat(c->cfg.record_to, &st) == 0)
		return die_usage("--record-to %s: exists; refusing to overwrite a recording "
				 "(remove it or add --record-overwrite)", c->cfg.record_to);
	if (c->cfg.state_dir != NULL && c->cfg.replay != NULL)
		return die_usage("--state-dir has no effect with --replay (a replay keeps no state)");
	return 0;
}

/* Warnings a start deserves: reachable from other hosts, or no key works. */
static void warn_start(const cli *c)
{
	const char *self = c->cfg.self_listen;
	char host[256];
	const char *colon = self != NULL ? strrchr(self, ':') : NULL;

	if (c->cfg.quiet)
		return;
	if (c->cfg.listen_host != NULL && !loopback(c->cfg.listen_host))
		fprintf(stderr, "sbx-mock: WARNING: --listen %s is not a loopback address: other hosts "
				"can reach this mock, and guests run their code as this user\n",
			c->cfg.listen_host);
	if (colon != NULL) {
		snprintf(host, sizeof(host), "%.*s", (int)(colon - self), self);
		if (!loopback(host))
			fprintf(stderr, "sbx-mock: WARNING: --self-listen %s is not a loopback address: "
					"other hosts can pause and delete sandboxes\n", self);
	}
	if (!c->cfg.accept_any_key && c->nkeys == 0)
		fprintf(stderr, "sbx-mock: WARNING: --no-accept-any-key without --api-key or "
				"--keys-file: every API request will be refused (401)\n");
}

static int run(cli *c)
{
	char userns_note[sizeof(((sbx_err *)0)->msg)] = "";
	sigset_t set;
	sbx_mock *mock;
	sbx_err err = {{0}};
	int sig = 0;

	/* Block the stop signals before any thread starts, then wait for them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* unprivileged, enforced egress needs a user namespace of our own,
	 * entered while this process has one thread; refused, the mock starts
	 * with egress stored only and says why */
	if ((c->cfg.egress == NULL || strcmp(c->cfg.egress, "stored") != 0) &&
	    (c->cfg.guest_mode == NULL || strcmp(c->cfg.guest_mode, "plain") != 0) &&
	    sbx_mock_own_userns(&err) != 0) {
		if (c->cfg.egress != NULL && strcmp(c->cfg.egress, "enforced") == 0) {
			fprintf(stderr, "sbx-mock: egress cannot be enforced: %s\n", err.msg);
			return 2;
		}
		snprintf(userns_note, sizeof(userns_note), "%s", err.msg);
	}
	mock = sbx_mock_start(&c->cfg, &err);
	if (mock == NULL) {
		fprintf(stderr, "sbx-mock: %s\n", err.msg);
		return 2;
	}
	printf("sbx-mock listening on %s\n", sbx_mock_url(mock));
	printf("admin token: %s\n", sbx_mock_admin_token(mock));
	printf("guest mode: %s\n", sbx_mock_guest_mode(mock));
	if (sbx_mock_self_url(mock) != NULL)
		printf("self-signal: %s\n", sbx_mock_self_url(mock));
	if (sbx_mock_egress_enforced(mock))
		printf("egress: %s\n", sbx_mock_egress_note(mock));
	fflush(stdout);
	warn_start(c);
	if (sbx_mock_self_note(mock) != NULL && !c->cfg.quiet)
		fprintf(stderr, "sbx-mock: self-signal endpoint off: %s (--self-listen)\n",
			sbx_mock_self_note(mock));
	if (!sbx_mock_egress_enforced(mock))
		fprintf(stderr, "sbx-mock: WARNING: egress %s%s%s\n", sbx_mock_egress_note(mock),
			userns_note[0] != '\0' ? "; " : "", userns_note);
	if (sbx_mock_cgroups_note(mock) != NULL && !c->cfg.quiet)
		fprintf(stderr, "sbx-mock: %s\n", sbx_mock_cgroups_note(mock));
	if (!sbx_mock_guests_contained(mock))
		fprintf(stderr, "sbx-mock: WARNING: --guest-mode plain: guest code is NOT contained; it "
				"runs as this user with all of its access (never use it for untrusted code)\n");
	sigwait(&set, &sig);
	if (!c->cfg.quiet)
		fprintf(stderr, "sbx-mock: signal %d, stopping\n", sig);
	sbx_mock_stop(mock);
	return 0;
}

/* --check-state DIR: the start's restore path over DIR's log, nothing
 * started and nothing on disk changed. 0 clean, 1 not clean, 2 unreadable. */
static int check_state(cli *c)
{
	sbx_err err = {{0}};
	int rc;

	if (c->cfg.state_dir != NULL)
		return die_usage("--check-state DIR excludes --state-dir (it checks DIR, starting nothing)");
	c->cfg.state_dir = c->check_state;
	rc = sbx_mock_check_state(&c->cfg, stdout, &err);
	if (rc < 0) {
		fprintf(stderr, "sbx-mock: --check-state: %s\n", err.msg);
		return 2;
	}
	return rc;
}

int main(int argc, char **argv)
{
	cli c;
	int opt, rc = 0;

	memset(&c, 0, sizeof(c));
	sbx_mock_config_init(&c.cfg);
	c.cfg.self_listen = "127.0.0.1:1029"; /* where guest code expects it */
	c.cfg.self_listen_optional = true;
	c.any_key = -1;
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (opt == OPT_HELP || opt == 'h') {
			fputs(usage, stdout);
			goto out_free;
		}
		if (opt == '?') {
			rc = die_usage("unknown option or missing argument");
			goto out_free;
		}
		rc = parse_opt(opt, optarg, &c);
		if (rc != 0)
			goto out_free;
	}
	if (optind < argc) {
		rc = die_usage("unexpected argument \"%s\"", argv[optind]);
		goto out_free;
	}
	c.cfg.api_keys = (const char *const *)c.keys;
	c.cfg.api_key_count = c.nkeys;
	c.cfg.accept_any_key = c.any_key >= 0 ? c.any_key == 1 : c.nkeys == 0;
	if (c.check_state != NULL) {
		rc = check_state(&c);
		goto out_free;
	}
	rc = check_combination(&c);
	if (rc == 0)
		rc = run(&c);
out_free:
	for (size_t i = 0; i < c.nkeys; i++)
		free(c.keys[i]);
	return rc;
}

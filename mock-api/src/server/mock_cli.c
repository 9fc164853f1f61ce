/* mock_cli: sbx-mock's command line into an sbx_mock_config (mock_cli.h).
 * Every refusal names the option and what is wrong; limits are explicit
 * (the numeric ranges below; lengths of the values kept in fixed buffers
 * are checked at start, server.c). */
#define _GNU_SOURCE
#include "server/mock_cli.h"
#include "model/model.h" /* the template limits' ranges */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sbx/local.h"

#define MAX_KEYS MOCK_CLI_MAX_KEYS

/* Refuses the command line: c->err gets the message; 2 (MOCK_CLI_REFUSED). */
__attribute__((format(printf, 2, 3))) static int cli_fail(mock_cli *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return MOCK_CLI_REFUSED;
}

/* The 1-based position of the first control byte (< 0x20 or 0x7f) in s,
 * 0 when there is none: a key, token or code travels in HTTP headers and
 * JSON answers, where a newline or NUL cannot go as given. */
static size_t ctl_at(const char *s)
{
	for (size_t i = 0; s[i] != '\0'; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return i + 1;
	}
	return 0;
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
static int read_keys_file(mock_cli *c, const char *path)
{
	char **keys = c->keys;
	size_t *n = &c->nkeys;
	/* non-blocking open: a FIFO would otherwise wait for a writer */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	FILE *fp;
	char line[1024];
	size_t lineno = 0, before = *n;
	struct stat st;

	if (fd < 0)
		return cli_fail(c, "--keys-file %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cli_fail(c, "--keys-file %s: not a regular file", path);
	}
	fp = fdopen(fd, "r");
	if (fp == NULL) {
		close(fd);
		return cli_fail(c, "--keys-file %s: %s", path, strerror(errno));
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		char *p = line;
		size_t len;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(fp)) {
			fclose(fp);
			return cli_fail(c, "--keys-file %s line %zu: longer than %zu bytes", path, lineno,
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
		if (ctl_at(p) != 0) {
			fclose(fp);
			return cli_fail(c, "--keys-file %s line %zu: control characters are not allowed in a key "
					"(byte %zu)", path, lineno, ctl_at(p));
		}
		if (*n == MAX_KEYS) {
			fclose(fp);
			return cli_fail(c, "--keys-file %s line %zu: more than %d keys", path, lineno,
					 MAX_KEYS);
		}
		/* The key table (and every key in it) is the caller's to free. */
		keys[*n] = strdup(p);
		if (keys[*n] == NULL) {
			fclose(fp);
			return cli_fail(c, "out of memory");
		}
		(*n)++; // NOLINT(clang-analyzer-unix.Malloc): main() frees the table
	}
	if (ferror(fp)) {
		fclose(fp);
		return cli_fail(c, "--keys-file %s: read error", path);
	}
	fclose(fp);
	if (*n == before)
		return cli_fail(c, "--keys-file %s: no key in it (only blank or # lines)", path);
	return 0;
}

enum {
	OPT_LISTEN = 256, OPT_ADMIN_TOKEN, OPT_API_KEY, OPT_KEYS_FILE, OPT_ANY, OPT_NO_ANY,
	OPT_CAP, OPT_CAP_STATUS, OPT_CAP_CODE, OPT_HOST_RULES, OPT_TIMING, OPT_REGION,
	OPT_MAX_RULES, OPT_MAX_BODY, OPT_MAX_FILE, OPT_WORK_DIR, OPT_GUEST_MODE, OPT_EXEC_TIMEOUT,
	OPT_SEED, OPT_JOURNAL_SIZE, OPT_NO_JOURNAL, OPT_SCENARIO, OPT_QUIET, OPT_HELP,
	OPT_SCENARIO_DIR, OPT_RECORD_UPSTREAM, OPT_RECORD_TO, OPT_REPLAY,
	OPT_STATE_DIR, OPT_SELF_LISTEN, OPT_RECORD_OVERWRITE, OPT_EGRESS, OPT_INTERNET_HOSTS, OPT_INTERNET_CA,
	OPT_INTERNET_STUBS, OPT_INTERNET_SITE, OPT_INTERNET_UPSTREAM, OPT_INTERNET_RECORD, OPT_INTERNET_REPLAY,
	OPT_INTERNET_RECORD_ALLOW, OPT_INTERNET_RECORD_CA, OPT_INTERNET_RECORD_RESOLVE, OPT_INTERNET_REDACT_QUERY,
	OPT_INTERNET_RECORD_MAX_MIB,
	OPT_STATE_REPAIR, OPT_MAX_CONNS, OPT_IDLE_TIMEOUT, OPT_CHECK_STATE, OPT_INGRESS_LISTEN,
	OPT_WARM_POOL, OPT_IMAGES, OPT_IMAGE, OPT_INGRESS_SCHEME, OPT_CA_OUT,
	OPT_TPL_BUILD_CAP, OPT_TPL_BUILD_CAP_GLOBAL, OPT_TPL_CAP, OPT_TPL_STORAGE, OPT_TPL_STORAGE_GLOBAL, OPT_NO_IMAGES,
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
	{"template-build-cap", required_argument, NULL, OPT_TPL_BUILD_CAP},
	{"template-build-cap-global", required_argument, NULL, OPT_TPL_BUILD_CAP_GLOBAL},
	{"template-cap", required_argument, NULL, OPT_TPL_CAP},
	{"template-storage-mib", required_argument, NULL, OPT_TPL_STORAGE},
	{"template-storage-mib-global", required_argument, NULL, OPT_TPL_STORAGE_GLOBAL},
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
	{"internet-ca", required_argument, NULL, OPT_INTERNET_CA},
	{"internet-stubs", required_argument, NULL, OPT_INTERNET_STUBS},
	{"internet-site", required_argument, NULL, OPT_INTERNET_SITE},
	{"internet-upstream", required_argument, NULL, OPT_INTERNET_UPSTREAM},
	{"internet-record", required_argument, NULL, OPT_INTERNET_RECORD},
	{"internet-replay", required_argument, NULL, OPT_INTERNET_REPLAY},
	{"internet-record-allow", required_argument, NULL, OPT_INTERNET_RECORD_ALLOW},
	{"internet-record-ca", required_argument, NULL, OPT_INTERNET_RECORD_CA},
	{"internet-record-resolve", required_argument, NULL, OPT_INTERNET_RECORD_RESOLVE},
	{"internet-redact-query", required_argument, NULL, OPT_INTERNET_REDACT_QUERY},
	{"internet-record-max-mib", required_argument, NULL, OPT_INTERNET_RECORD_MAX_MIB},
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
	{"ingress-listen", required_argument, NULL, OPT_INGRESS_LISTEN},
	{"ingress-scheme", required_argument, NULL, OPT_INGRESS_SCHEME},
	{"ca-out", required_argument, NULL, OPT_CA_OUT},
	{"warm-pool", required_argument, NULL, OPT_WARM_POOL},
	{"images", required_argument, NULL, OPT_IMAGES},
	{"image", required_argument, NULL, OPT_IMAGE},
	{"no-images", no_argument, NULL, OPT_NO_IMAGES},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{"help", no_argument, NULL, OPT_HELP},
	{NULL, 0, NULL, 0},
};

/* The templates kept and their storage (LIMITS.md), in the ranges PUT
 * /_mock/settings takes (settings.c). */
static int parse_tpl_storage(int opt, const char *arg, mock_cli *c)
{
	const char *name = opt == OPT_TPL_CAP		? "template-cap"
			   : opt == OPT_TPL_STORAGE	? "template-storage-mib"
							: "template-storage-mib-global";
	unsigned long long hi = opt == OPT_TPL_CAP ? MOCK_TPL_CAP_MAX : MOCK_TPL_STORAGE_MIB_MAX, v;

	if (parse_ull(arg, 0, hi, &v) != 0)
		return cli_fail(c, "--%s: \"%s\" is not a number 0-%llu", name, arg, hi);
	*(opt == OPT_TPL_CAP	     ? &c->cfg.template_cap
	  : opt == OPT_TPL_STORAGE ? &c->cfg.template_storage_mib
				   : &c->cfg.template_storage_mib_global) = (unsigned)v;
	return 0;
}

static int parse_num_opt(int opt, const char *arg, mock_cli *c)
{
	unsigned long long v;

	switch (opt) {
	case OPT_CAP:
		if (parse_ull(arg, 0, 1000000, &v) != 0)
			return cli_fail(c, "--cap: \"%s\" is not a number 0-1000000", arg);
		c->cfg.sandbox_cap = (unsigned)v;
		return 0;
	case OPT_TPL_BUILD_CAP:
	case OPT_TPL_BUILD_CAP_GLOBAL:
		/* the range PUT /_mock/settings takes (settings.c) */
		if (parse_ull(arg, 0, 1000, &v) != 0)
			return cli_fail(c, "--%s: \"%s\" is not a number 0-1000",
					opt == OPT_TPL_BUILD_CAP ? "template-build-cap" : "template-build-cap-global", arg);
		*(opt == OPT_TPL_BUILD_CAP ? &c->cfg.template_build_cap : &c->cfg.template_build_cap_global) =
			(unsigned)v;
		return 0;
	case OPT_TPL_CAP:
	case OPT_TPL_STORAGE:
	case OPT_TPL_STORAGE_GLOBAL:
		return parse_tpl_storage(opt, arg, c);
	case OPT_CAP_STATUS:
		if (parse_ull(arg, 400, 599, &v) != 0)
			return cli_fail(c, "--cap-status: \"%s\" is not an HTTP error status 400-599", arg);
		c->cfg.cap_status = (unsigned)v;
		return 0;
	case OPT_MAX_RULES:
		if (parse_ull(arg, 1, 1000000, &v) != 0)
			return cli_fail(c, "--max-egress-rules: \"%s\" is not a number 1-1000000", arg);
		c->cfg.max_egress_rules = (size_t)v;
		return 0;
	case OPT_MAX_BODY:
		if (parse_ull(arg, 1024, 1ULL << 30, &v) != 0)
			return cli_fail(c, "--max-body: \"%s\" is not a byte count 1024-1073741824", arg);
		c->cfg.max_json_body = (size_t)v;
		return 0;
	case OPT_MAX_FILE:
		if (parse_ull(arg, 1024, 1ULL << 34, &v) != 0)
			return cli_fail(c, "--max-file-body: \"%s\" is not a byte count 1024-17179869184", arg);
		c->cfg.max_file_body = (size_t)v;
		return 0;
	case OPT_EXEC_TIMEOUT:
		if (parse_ull(arg, 0, 86400000, &v) != 0)
			return cli_fail(c, "--exec-timeout-ms: \"%s\" is not a number 0-86400000", arg);
		c->cfg.exec_timeout_ms = (int64_t)v;
		return 0;
	case OPT_SEED:
		if (parse_ull(arg, 0, UINT64_MAX, &v) != 0)
			return cli_fail(c, "--seed: \"%s\" is not a non-negative integer", arg);
		c->cfg.seed = v;
		return 0;
	case OPT_MAX_CONNS:
		if (parse_ull(arg, 1, 1000000, &v) != 0)
			return cli_fail(c, "--max-connections: \"%s\" is not a number 1-1000000", arg);
		c->cfg.max_connections = (unsigned)v;
		return 0;
	case OPT_IDLE_TIMEOUT:
		if (parse_ull(arg, 1, 86400, &v) != 0)
			return cli_fail(c, "--idle-timeout: \"%s\" is not a number of seconds 1-86400", arg);
		c->cfg.idle_timeout_s = (unsigned)v;
		return 0;
	case OPT_WARM_POOL:
		if (parse_ull(arg, 0, MOCK_CLI_WARM_POOL_MAX, &v) != 0)
			return cli_fail(c, "--warm-pool: \"%s\" is not a number of cells 0-%d (0 = off)", arg,
					 MOCK_CLI_WARM_POOL_MAX);
		c->cfg.warm_pool = (unsigned)v;
		return 0;
	case OPT_JOURNAL_SIZE:
		if (parse_ull(arg, 1, SBX_MOCK_JOURNAL_MAX, &v) != 0)
			return cli_fail(c, "--journal-size: \"%s\" is not a number 1-%d", arg,
					 SBX_MOCK_JOURNAL_MAX);
		c->cfg.journal_size = (size_t)v;
		return 0;
	default:
		return 2;
	}
}

/* --scenario NAME|FILE: an existing file wins over a scenario name (a file
 * called "myscenario" here was looked up as a name). */
static void scenario_opt(const char *arg, mock_cli *c)
{
	struct stat st;

	c->cfg.scenario = arg;
	if (strchr(arg, '/') == NULL && stat(arg, &st) == 0 && S_ISREG(st.st_mode)) {
		snprintf(c->scenario_file, sizeof(c->scenario_file), "./%s", arg);
		c->cfg.scenario = c->scenario_file;
	}
}

/* The cassette's flags (INTERNET.md, "Record and replay the guests'
 * internet"): each value checked here, the cassette itself at start. */
static int cassette_opt(mock_cli *c, int opt, const char *arg)
{
	sbx_err err = {{0}};

	switch (opt) {
	case OPT_INTERNET_RECORD:
	case OPT_INTERNET_REPLAY: {
		struct stat st;
		bool rec = opt == OPT_INTERNET_RECORD;

		if (arg[0] == '\0' || (!rec && (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode))))
			return cli_fail(c, "--internet-%s \"%.200s\": %s", rec ? "record" : "replay", arg,
					arg[0] == '\0' ? "empty" : "not a cassette directory");
		*(rec ? &c->cfg.internet_record : &c->cfg.internet_replay) = arg;
		return 0;
	}
	case OPT_INTERNET_RECORD_ALLOW:
		if (mock_inet_tape_check_allow(arg, &err) != 0)
			return cli_fail(c, "%s", err.msg);
		c->cfg.internet_record_allow = arg;
		return 0;
	case OPT_INTERNET_RECORD_CA:
		if (access(arg, R_OK) != 0)
			return cli_fail(c, "--internet-record-ca %s: %s", arg, strerror(errno));
		c->cfg.internet_record_ca = arg;
		return 0;
	case OPT_INTERNET_RECORD_MAX_MIB: {
		unsigned long long v;

		if (parse_ull(arg, 1, MOCK_INET_TAPE_RECORD_MIB_MAX, &v) != 0)
			return cli_fail(c, "--internet-record-max-mib: \"%s\" is not a number 1-%d", arg,
					 MOCK_INET_TAPE_RECORD_MIB_MAX);
		c->cfg.internet_record_max_mib = (unsigned)v;
		return 0;
	}
	case OPT_INTERNET_RECORD_RESOLVE:
		if (mock_inet_tape_check_resolve(arg, &err) != 0 || c->cfg.ninternet_record_resolve == MOCK_INET_TAPE_RESOLVE_MAX)
			return cli_fail(c, "%s", err.msg[0] != '\0' ? err.msg : "--internet-record-resolve: too many");
		c->resolve[c->cfg.ninternet_record_resolve++] = arg;
		c->cfg.internet_record_resolve = c->resolve;
		return 0;
	default:
		if (!sbx_cassette_query_name_ok(arg) || c->cfg.ninternet_redact_query == MOCK_CASSETTE_REDACT_MAX)
			return cli_fail(c, "--internet-redact-query \"%.80s\": a query parameter name (1-255 bytes of "
					   "printable ASCII, none of = & # ? or space), at most %d times", arg,
					MOCK_CASSETTE_REDACT_MAX);
		c->redact[c->cfg.ninternet_redact_query++] = arg;
		c->cfg.internet_redact_query = c->redact;
		return 0;
	}
}

static int parse_opt(int opt, const char *arg, mock_cli *c)
{
	switch (opt) {
	case OPT_LISTEN:
		if (parse_listen(arg, &c->cfg, c->host, sizeof(c->host)) != 0)
			return cli_fail(c, "--listen: \"%s\" is not HOST:PORT (e.g. 127.0.0.1:0)", arg);
		return 0;
	case OPT_ADMIN_TOKEN:
		if (arg[0] == '\0' || arg[strcspn(arg, " \t\r\n\v\f")] != '\0')
			return cli_fail(c, "--admin-token: must be non-empty, without spaces or newlines");
		if (ctl_at(arg) != 0)
			return cli_fail(c, "--admin-token: control characters are not allowed (byte %zu)", ctl_at(arg));
		c->cfg.admin_token = arg;
		return 0;
	case OPT_IMAGES:
		c->cfg.images = arg;
		return 0;
	case OPT_NO_IMAGES:
		c->no_images = true;
		return 0;
	case OPT_IMAGE:
		if (strchr(arg, '=') == NULL || c->cfg.nimage_pairs == MOCK_CLI_MAX_IMAGES)
			return cli_fail(c, "--image \"%.80s\": expected NAME=DIR, at most %d times", arg,
					 MOCK_CLI_MAX_IMAGES);
		c->image_pairs[c->cfg.nimage_pairs++] = arg;
		c->cfg.image_pairs = c->image_pairs;
		return 0;
	case OPT_API_KEY:
		if (arg[0] == '\0' || c->nkeys == MAX_KEYS)
			return cli_fail(c, "--api-key: empty key or too many keys");
		if (ctl_at(arg) != 0)
			return cli_fail(c, "--api-key: control characters are not allowed (byte %zu)", ctl_at(arg));
		c->keys[c->nkeys] = strdup(arg);
		if (c->keys[c->nkeys] == NULL)
			return cli_fail(c, "out of memory");
		c->nkeys++;
		return 0;
	case OPT_KEYS_FILE:
		return read_keys_file(c, arg);
	case OPT_ANY:
		c->any_key = 1;
		return 0;
	case OPT_NO_ANY:
		c->any_key = 0;
		return 0;
	case OPT_CAP_CODE:
		if (arg[0] == '\0')
			return cli_fail(c, "--cap-code: must not be empty");
		if (ctl_at(arg) != 0)
			return cli_fail(c, "--cap-code: control characters are not allowed (byte %zu)", ctl_at(arg));
		c->cfg.cap_code = arg;
		return 0;
	case OPT_HOST_RULES:
		if (strcmp(arg, "observed") == 0)
			c->cfg.host_rule_mode = SBX_HOST_RULES_OBSERVED;
		else if (strcmp(arg, "documented") == 0)
			c->cfg.host_rule_mode = SBX_HOST_RULES_DOCUMENTED;
		else
			return cli_fail(c, "--host-rules: \"%s\" is not documented or observed", arg);
		return 0;
	case OPT_TIMING: {
		double s;
		sbx_err err = {{0}};

		if (sbx_mock_parse_timing(arg, &s, &err) != 0)
			return cli_fail(c, "--%s", err.msg);
		c->cfg.timing = arg;
		return 0;
	}
	case OPT_REGION:
		if (arg[0] == '\0')
			return cli_fail(c, "--region: must not be empty");
		if (ctl_at(arg) != 0)
			return cli_fail(c, "--region: control characters are not allowed (byte %zu)", ctl_at(arg));
		c->cfg.region = arg;
		return 0;
	case OPT_WORK_DIR:
		c->cfg.work_dir = arg;
		return 0;
	case OPT_EGRESS:
		if (strcmp(arg, "auto") != 0 && strcmp(arg, "enforced") != 0 && strcmp(arg, "stored") != 0)
			return cli_fail(c, "--egress: \"%s\" is not auto, enforced or stored", arg);
		c->cfg.egress = arg;
		return 0;
	case OPT_INTERNET_HOSTS:
		if (access(arg, R_OK) != 0)
			return cli_fail(c, "--internet-hosts %s: %s", arg, strerror(errno));
		c->cfg.internet_hosts = arg;
		return 0;
	case OPT_INTERNET_CA: /* the files are read and checked at start (inet_tls.c) */
		c->cfg.internet_ca = arg;
		return 0;
	case OPT_INTERNET_STUBS: /* read and checked at start (inet_book.c), every key */
		c->cfg.internet_stubs = arg;
		return 0;
	case OPT_INTERNET_SITE:
		if (strchr(arg, '=') == NULL || c->cfg.ninternet_sites == MOCK_CLI_MAX_IMAGES)
			return cli_fail(c, "--internet-site \"%.80s\": expected HOST=DIR, at most %d times", arg,
					 MOCK_CLI_MAX_IMAGES);
		c->sites[c->cfg.ninternet_sites++] = arg;
		c->cfg.internet_sites = c->sites;
		return 0;
	case OPT_INTERNET_UPSTREAM: /* the patterns are checked at start (inet_site.c) */
		c->cfg.internet_upstream = arg;
		return 0;
	case OPT_INTERNET_RECORD:
	case OPT_INTERNET_REPLAY:
	case OPT_INTERNET_RECORD_ALLOW:
	case OPT_INTERNET_RECORD_CA:
	case OPT_INTERNET_RECORD_RESOLVE:
	case OPT_INTERNET_REDACT_QUERY:
	case OPT_INTERNET_RECORD_MAX_MIB:
		return cassette_opt(c, opt, arg);
	case OPT_GUEST_MODE:
		if (strcmp(arg, "contained") != 0 && strcmp(arg, "auto") != 0 && strcmp(arg, "ns") != 0 &&
		    strcmp(arg, "plain") != 0)
			return cli_fail(c, "--guest-mode: \"%s\" is not contained or plain", arg);
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
	case OPT_INGRESS_LISTEN: /* checked at start: loopback only */
		c->cfg.ingress_listen = arg;
		return 0;
	case OPT_INGRESS_SCHEME: /* checked at start: https or http */
		c->cfg.ingress_scheme = arg;
		return 0;
	case OPT_CA_OUT: /* written at start */
		c->cfg.ca_out = arg;
		return 0;
	case OPT_QUIET:
		c->cfg.quiet = true;
		return 0;
	default:
		return parse_num_opt(opt, arg, c);
	}
}

/* The rootfs images without a flag: the default store when its index
 * exists and names at least one image (what build-image writes), so a
 * machine whose bootstrap built devbox:1 boots guests on it; otherwise
 * none, with why (main.c says it loudly). Plain guests use no image. */
/* Whether dir's index names an image (a non-empty regular file). */
static bool store_has_index(const char *dir)
{
	char index[PATH_MAX + 8];
	struct stat st;

	snprintf(index, sizeof(index), "%s/index", dir);
	return stat(index, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

static int images_default(mock_cli *c)
{
	char index[PATH_MAX + 8];
	sbx_err err = {{0}};
	struct stat st;

	if (c->no_images && (c->cfg.images != NULL || c->cfg.nimage_pairs > 0))
		return cli_fail(c, "--no-images contradicts %s (the host skeleton for every name, or "
				 "images: pick one)", c->cfg.images != NULL ? "--images" : "--image");
	if (c->no_images) {
		c->images_from = MOCK_CLI_IMAGES_OFF;
		return 0;
	}
	if (c->cfg.images != NULL || c->cfg.nimage_pairs > 0) {
		c->images_from = MOCK_CLI_IMAGES_FLAG;
		return 0;
	}
	c->images_from = MOCK_CLI_IMAGES_NONE;
	if (c->cfg.guest_mode != NULL && strcmp(c->cfg.guest_mode, "plain") == 0) {
		snprintf(c->images_why, sizeof(c->images_why), "plain guests use the host's own files");
		return 0;
	}
	if (sbx_local_image_store(c->default_store, sizeof(c->default_store), &err) != 0) {
		snprintf(c->images_why, sizeof(c->images_why), "%s", err.msg);
		return 0;
	}
	snprintf(index, sizeof(index), "%s/index", c->default_store);
	if (!store_has_index(c->default_store) && geteuid() != 0 && getenv("SBX_IMAGE_STORE") == NULL &&
	    store_has_index(MOCK_CLI_SHARED_STORE)) {
		/* a user without a store of their own: root's, where the
		 * README's sudo line puts their copy (IMAGES.md); rootfs.c says
		 * whether it holds one this uid can use */
		snprintf(c->default_store, sizeof(c->default_store), "%s", MOCK_CLI_SHARED_STORE);
	} else if (!store_has_index(c->default_store)) {
		snprintf(c->images_why, sizeof(c->images_why), "no image in the default store %s (%s)",
			 c->default_store, stat(index, &st) != 0 ? "it has no index" : "its index is empty");
		return 0;
	}
	c->cfg.images = c->default_store;
	c->images_from = MOCK_CLI_IMAGES_DEFAULT;
	return 0;
}

/* Checks across options, after all are read; 2 with the message printed. */
static int check_combination(mock_cli *c)
{
	struct stat st;

	if (c->cfg.record_to != NULL && c->cfg.record_upstream == NULL)
		return cli_fail(c, "--record-to needs --record-upstream (nothing would be recorded)");
	if (c->cfg.record_to != NULL && !c->record_overwrite && lstat(c->cfg.record_to, &st) == 0)
		return cli_fail(c, "--record-to %s: exists; refusing to overwrite a recording "
				 "(remove it or add --record-overwrite)", c->cfg.record_to);
	if (c->cfg.state_dir != NULL && c->cfg.replay != NULL)
		return cli_fail(c, "--state-dir has no effect with --replay (a replay keeps no state)");
	if (c->cfg.internet_record != NULL && c->cfg.internet_record_allow == NULL)
		return cli_fail(c, "--internet-record needs --internet-record-allow PATTERNS (nothing goes out "
				 "that the operator did not name)");
	return images_default(c);
}

/* getopt_long said '?': an unknown option or one without its argument;
 * the message names it. */
static int unknown_option(mock_cli *c, char **argv)
{
	/* a short option's character (negative when its byte is >= 0x80);
	 * 0 for an unknown long option, the option's value (>= 256) for a long
	 * one without its argument: argv[optind - 1] is then the option */
	if (optopt != 0 && optopt < 256)
		return cli_fail(c, "unknown option or missing argument: -%c", (char)optopt);
	return cli_fail(c, "unknown option or missing argument: %s", argv[optind - 1]);
}

int mock_cli_parse(mock_cli *c, int argc, char **argv)
{
	int opt, rc;

	memset(c, 0, sizeof(*c));
	sbx_mock_config_init(&c->cfg);
	c->cfg.self_listen = "127.0.0.1:1029"; /* where guest code expects it */
	c->cfg.self_listen_optional = true;
	c->any_key = -1;
	optind = 0; /* GNU getopt: start afresh (a second parse in one process) */
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (opt == OPT_HELP || opt == 'h')
			return MOCK_CLI_HELP;
		if (opt == '?')
			return unknown_option(c, argv);
		rc = parse_opt(opt, optarg, c);
		if (rc != 0)
			return rc;
	}
	if (optind < argc)
		return cli_fail(c, "unexpected argument \"%s\"", argv[optind]);
	c->cfg.api_keys = (const char *const *)c->keys;
	c->cfg.api_key_count = c->nkeys;
	c->cfg.accept_any_key = c->any_key >= 0 ? c->any_key == 1 : c->nkeys == 0;
	if (c->check_state != NULL) {
		if (c->cfg.state_dir != NULL)
			return cli_fail(c, "--check-state DIR excludes --state-dir (it checks DIR, starting nothing)");
		return MOCK_CLI_OK;
	}
	return check_combination(c);
}

void mock_cli_free(mock_cli *c)
{
	for (size_t i = 0; i < c->nkeys; i++)
		free(c->keys[i]);
	c->nkeys = 0;
}

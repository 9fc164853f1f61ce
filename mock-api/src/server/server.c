/* server: the life of one sbx-mock — its configuration defaults, start
 * (settings, guests, model, durable replay, scenario, the two listeners)
 * and stop, and the accessors of the embedding API (include/sbx/mock.h).
 *
 * Serving a request is pipeline.c's, blocking work workers.c's. sbx_mock_stop
 * sets mock->stopping first (every blocking wait returns), waits for the
 * workers, then stops the daemons; it never waits on a client. */
#define _GNU_SOURCE
#include "guest/cell.h"
#include "guest/cell_pool.h"
#include "guest/cgroup.h"
#include "guest/cgroup_owner.h"
#include "guest/trust.h"
#include "server/server.h"
#include "internet/internet.h"
#include "server/pipeline.h"
#include "server/ingress.h"
#include "ops/ops.h"
#include "templates/templates.h"
#include "listen/self_listen.h"
#include "ops/settings.h"
#include "ops/rootfs.h"
#include "images/images.h"
#include "computer/ops_computer.h"
#include "sbx/sys.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

void sbx_mock_config_init(sbx_mock_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen_host = "127.0.0.1";
	cfg->accept_any_key = true;
	cfg->region = "local";
	cfg->sandbox_cap = 5;
	cfg->cap_status = 403;
	cfg->cap_code = "QUOTA_EXCEEDED";
	cfg->template_build_cap = MOCK_TPL_BUILD_CAP;
	cfg->template_build_cap_global = MOCK_TPL_BUILD_CAP_GLOBAL;
	cfg->template_cap = MOCK_TPL_CAP;
	cfg->template_storage_mib = MOCK_TPL_STORAGE_MIB;
	cfg->template_storage_mib_global = MOCK_TPL_STORAGE_MIB_GLOBAL;
	cfg->host_rule_mode = SBX_HOST_RULES_OBSERVED;
	cfg->max_egress_rules = SBX_EGRESS_MAX_RULES_DEFAULT;
	cfg->max_json_body = 1024 * 1024;
	cfg->max_file_body = 64 * 1024 * 1024;
	cfg->timing = "instant";
	cfg->seed = 1;
	cfg->journal_size = 65536;
	cfg->guest_mode = "contained";
	cfg->exec_timeout_ms = 600000;
	cfg->warm_pool = MOCK_POOL_DEFAULT;
}

static int make_work_dir(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	if (cfg->work_dir != NULL) {
		struct stat st;

		if (mkdir(cfg->work_dir, 0755) != 0 && errno != EEXIST) {
			sbx_err_set(err, "--work-dir %s: %s", cfg->work_dir, strerror(errno));
			return -1;
		}
		if (stat(cfg->work_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
			sbx_err_set(err, "--work-dir %s: not a directory", cfg->work_dir);
			return -1;
		}
		if (access(cfg->work_dir, W_OK | X_OK) != 0) {
			sbx_err_set(err, "--work-dir %s: %s", cfg->work_dir, strerror(errno));
			return -1;
		}
		snprintf(mock->work_dir, sizeof(mock->work_dir), "%s", cfg->work_dir);
		return 0;
	}
	{
		const char *base = getenv("TMPDIR");

		snprintf(mock->work_dir, sizeof(mock->work_dir), "%s/sbx-mock-XXXXXX",
			 base != NULL && base[0] != '\0' ? base : "/tmp");
	}
	if (mkdtemp(mock->work_dir) == NULL) {
		sbx_err_set(err, "mkdtemp %s: %s", mock->work_dir, strerror(errno));
		return -1;
	}
	mock->own_work_dir = true;
	return 0;
}

static int copy_keys(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	if (cfg->api_key_count == 0)
		return 0;
	mock->keys = calloc(cfg->api_key_count, sizeof(char *));
	if (mock->keys == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < cfg->api_key_count; i++) {
		mock->keys[i] = strdup(cfg->api_keys[i]);
		if (mock->keys[i] == NULL) {
			sbx_err_set(err, "out of memory");
			return -1;
		}
		mock->nkeys++;
	}
	return 0;
}

/* Descriptors beside API connections: MHD, self-signals, guests, logs. */
#define FD_RESERVE 768u

/* max_conns from --max-connections (default 4000), within RLIMIT_NOFILE
 * (the soft limit raised toward the hard one): past it accept fails with
 * EMFILE and MHD stops accepting for everyone. A given value that cannot
 * fit is an error; the default is lowered. */
static int conn_budget(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	unsigned want = cfg->max_connections != 0 ? cfg->max_connections : 4000;
	rlim_t need = (rlim_t)want + FD_RESERVE;
	struct rlimit rl;

	mock->srv->max_conns = want;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return 0;
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur >= need)
		return 0;
	if (cfg->max_connections != 0 || rl.rlim_cur < FD_RESERVE + 64) {
		sbx_err_set(err, "--max-connections %u needs %llu file descriptors; the limit is %llu "
				 "(raise it with ulimit -n, or give a smaller --max-connections)",
			    want, (unsigned long long)need, (unsigned long long)rl.rlim_cur);
		return -1;
	}
	mock->srv->max_conns = (unsigned)(rl.rlim_cur - FD_RESERVE);
	if (!cfg->quiet)
		fprintf(stderr, "sbx-mock: note: at most %u API connections (file descriptor limit "
				"%llu)\n", mock->srv->max_conns, (unsigned long long)rl.rlim_cur);
	return 0;
}

static int start_daemon(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	struct sockaddr_in sa;
	const union MHD_DaemonInfo *di;
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	/* two epoll threads per CPU, 4 to 8: one thread preempted by another
	 * process stalls only its share of the connections (measured on a
	 * loaded 2-core machine: 4 threads served 1.1-1.8x the GETs of 2 at
	 * the same CPU per request) */
	unsigned pool = ncpu < 2 ? 4 : (ncpu > 4 ? 8 : (unsigned)ncpu * 2);
	unsigned idle_s = cfg->idle_timeout_s != 0 ? cfg->idle_timeout_s : 120;

	if (conn_budget(mock, cfg, err) != 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(cfg->listen_port);
	if (inet_pton(AF_INET, cfg->listen_host, &sa.sin_addr) != 1) {
		sbx_err_set(err, "listen host \"%s\" is not an IPv4 address", cfg->listen_host);
		return -1;
	}
	mock->srv->daemon = MHD_start_daemon(flags, cfg->listen_port, mock_pipeline_on_accept, mock,
					mock_pipeline_on_request, mock,
					MHD_OPTION_EXTERNAL_LOGGER, mock_pipeline_on_log, mock,
					MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
					MHD_OPTION_NOTIFY_COMPLETED, mock_pipeline_on_completed, mock,
					MHD_OPTION_URI_LOG_CALLBACK, mock_pipeline_on_uri, mock,
					MHD_OPTION_NOTIFY_CONNECTION, mock_pipeline_on_connection, mock,
					MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
					/* above max_conns: MHD's limit is never what refuses */
					MHD_OPTION_CONNECTION_LIMIT, mock->srv->max_conns + 64 + 16 * pool,
					MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
					MHD_OPTION_THREAD_POOL_SIZE, pool,
					MHD_OPTION_END);
	if (mock->srv->daemon == NULL) {
		sbx_err_set(err, "cannot listen on %s:%u: %s", cfg->listen_host, cfg->listen_port,
			    strerror(errno));
		return -1;
	}
	di = MHD_get_daemon_info(mock->srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
	mock->srv->port = di != NULL ? di->port : cfg->listen_port;
	snprintf(mock->srv->url, sizeof(mock->srv->url), "http://%s:%u", cfg->listen_host, mock->srv->port);
	return 0;
}

/* Parses the self-signal listener's "HOST:PORT" into sa and host. */
static int parse_self_listen(const char *arg, struct sockaddr_in *sa, char *host, size_t cap,
			     sbx_err *err)
{
	const char *colon = strrchr(arg, ':');
	unsigned long port = 70000; /* out of range until parsed */
	char *end = NULL;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (colon != NULL && (size_t)(colon - arg) < cap) {
		memcpy(host, arg, (size_t)(colon - arg));
		host[colon - arg] = '\0';
		errno = 0;
		port = colon[1] >= '0' && colon[1] <= '9' ? strtoul(colon + 1, &end, 10) : 70000;
	}
	if (colon == NULL || (size_t)(colon - arg) >= cap || errno != 0 || end == NULL ||
	    *end != '\0' || port > 65535 || inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
		sbx_err_set(err, "self listen \"%s\" is not IPv4 HOST:PORT (e.g. 127.0.0.1:1029)", arg);
		return -1;
	}
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

/* Contained mode: the daemon has no listening socket; every connection
 * comes from a sandbox's own listener (self_listen.c), made by its cell on
 * 127.0.0.1:<port> inside the sandbox's network namespace (port 0 asks for
 * the VM's 1029: each namespace has its own ports). */
static int start_self_contained(sbx_mock *mock, uint16_t port, sbx_err *err)
{
	mock->self_daemon = MHD_start_daemon(
		MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC |
			MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
		0, NULL, NULL, mock_pipeline_on_request, mock,
		MHD_OPTION_EXTERNAL_LOGGER, mock_pipeline_on_log, mock,
		MHD_OPTION_NOTIFY_COMPLETED, mock_pipeline_on_completed, mock,
		MHD_OPTION_URI_LOG_CALLBACK, mock_pipeline_on_uri, mock,
		MHD_OPTION_NOTIFY_CONNECTION, mock_self_listen_on_connection, mock,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)SBX_SELF_CONN_LIMIT,
		MHD_OPTION_END);
	if (mock->self_daemon == NULL) {
		sbx_err_set(err, "cannot start the guests' self-signal daemon: %s", strerror(errno));
		return -1;
	}
	mock->self_port = port != 0 ? port : 1029;
	snprintf(mock->srv->self_url, sizeof(mock->srv->self_url), "http://127.0.0.1:%u", mock->self_port);
	return mock_self_listen_start(mock, err);
}

/* The guests' self-signal listener (self.c): a second, single-threaded
 * daemon on the same request plumbing; self-signals are rare. In plain
 * mode it listens on the host; otherwise see start_self_contained. */
static int start_self_daemon(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	const char *arg = cfg->self_listen;
	struct sockaddr_in sa;
	const union MHD_DaemonInfo *di;
	char host[64];
	uint16_t port;
	sbx_err bind_err = {{0}};

	if (arg == NULL)
		return 0;
	if (parse_self_listen(arg, &sa, host, sizeof(host), err) != 0)
		return -1;
	port = ntohs(sa.sin_port);
	if (mock->gmode != GUEST_PLAIN)
		return start_self_contained(mock, port, err);
	mock->self_daemon = MHD_start_daemon(
		MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, port,
		NULL, NULL, mock_pipeline_on_request, mock,
		MHD_OPTION_EXTERNAL_LOGGER, mock_pipeline_on_log, mock,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
		MHD_OPTION_NOTIFY_COMPLETED, mock_pipeline_on_completed, mock,
		MHD_OPTION_URI_LOG_CALLBACK, mock_pipeline_on_uri, mock,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)256,
		MHD_OPTION_END);
	if (mock->self_daemon == NULL) {
		sbx_err_set(&bind_err, "cannot listen on %s for the guests' self-signals: %s", arg,
			    strerror(errno));
		if (!cfg->self_listen_optional) {
			*err = bind_err;
			return -1;
		}
		snprintf(mock->srv->self_note, sizeof(mock->srv->self_note), "%s", bind_err.msg);
		return 0;
	}
	di = MHD_get_daemon_info(mock->self_daemon, MHD_DAEMON_INFO_BIND_PORT);
	mock->self_port = di != NULL ? di->port : port;
	snprintf(mock->srv->self_url, sizeof(mock->srv->self_url), "http://%s:%u", host, mock->self_port);
	return 0;
}

/* An option value that does not fit where it is kept is refused, never cut
 * (a cut admin token would answer 401 to the token that was configured). */
static int too_long(const char *opt, const char *v, size_t max, const char *why, sbx_err *err)
{
	if (v == NULL || strlen(v) <= max)
		return 0;
	sbx_err_set(err, "%s: %zu bytes, at most %zu%s", opt, strlen(v), max, why);
	return -1;
}

/* The option values that are kept in fixed buffers (a directory leaves
 * room for the names made below it). */
static int check_lengths(const sbx_mock_config *cfg, sbx_err *err)
{
#define FIELD_MAX(type, field) (sizeof(((type *)0)->field) - 1)
	const size_t dir_max = PATH_MAX - 256;

	if (too_long("--admin-token", cfg->admin_token, FIELD_MAX(sbx_mock, admin_token), "", err) != 0 ||
	    too_long("--cap-code", cfg->cap_code, FIELD_MAX(mock_settings, cap_code), "", err) != 0 ||
	    too_long("--region", cfg->region, FIELD_MAX(mock_settings, region), "", err) != 0)
		return -1;
#undef FIELD_MAX
	if (too_long("--work-dir", cfg->work_dir, dir_max, " (the guests' trees go below it)", err) !=
		    0 ||
	    too_long("--state-dir", cfg->state_dir, dir_max, " (the log and guests' trees go below it)",
		     err) != 0 ||
	    too_long("--scenario-dir", cfg->scenario_dir, dir_max, "", err) != 0)
		return -1;
	return 0;
}

static int check_config(const sbx_mock_config *cfg, sbx_err *err)
{
	struct stat st;

	if (check_lengths(cfg, err) != 0)
		return -1;

	if (cfg->record_to != NULL && cfg->record_upstream == NULL) {
		sbx_err_set(err, "--record-to needs --record-upstream (nothing would be recorded)");
		return -1;
	}
	if (cfg->state_repair && cfg->state_dir == NULL) {
		sbx_err_set(err, "--state-repair needs --state-dir (there is no log to repair)");
		return -1;
	}
	if (cfg->state_dir != NULL && cfg->replay != NULL) {
		sbx_err_set(err, "--state-dir has no effect with --replay (a replay keeps no state)");
		return -1;
	}
	for (const char *p = cfg->admin_token; p != NULL && *p != '\0'; p++) {
		if ((unsigned char)*p <= 0x20 || *p == 0x7f) {
			sbx_err_set(err, "--admin-token: control characters and spaces are not allowed "
					 "(byte %zu)", (size_t)(p - cfg->admin_token) + 1);
			return -1;
		}
	}
	if (cfg->admin_token != NULL && cfg->admin_token[0] == '\0') {
		sbx_err_set(err, "--admin-token: must not be empty");
		return -1;
	}
	if (cfg->scenario_dir != NULL && (stat(cfg->scenario_dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
		sbx_err_set(err, "--scenario-dir %s: not a directory", cfg->scenario_dir);
		return -1;
	}
	if (cfg->cap_code != NULL && cfg->cap_code[0] == '\0') {
		sbx_err_set(err, "--cap-code: must not be empty");
		return -1;
	}
	if (cfg->region != NULL && cfg->region[0] == '\0') {
		sbx_err_set(err, "--region: must not be empty");
		return -1;
	}
	if (cfg->journal_size > SBX_MOCK_JOURNAL_MAX) {
		sbx_err_set(err, "--journal-size %zu: at most %d", cfg->journal_size,
			    SBX_MOCK_JOURNAL_MAX);
		return -1;
	}
	return 0;
}

static int copy_config(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	if (check_config(cfg, err) != 0)
		return -1;
	mock->quiet = cfg->quiet;
	mock->virtual_delays = cfg->virtual_delays;
	mock->seed = cfg->seed;
	mock->max_json = cfg->max_json_body;
	mock->max_file = cfg->max_file_body;
	mock->exec_timeout_ms = cfg->exec_timeout_ms;
	if (cfg->scenario_dir != NULL)
		snprintf(mock->scenario_dir, sizeof(mock->scenario_dir), "%s", cfg->scenario_dir);
	atomic_store(&mock->hb_ms, 5000);
	atomic_store(&mock->disk_max_mib, 0);
	if (cfg->admin_token != NULL) {
		snprintf(mock->admin_token, sizeof(mock->admin_token), "%s", cfg->admin_token);
	} else if (sbx_random_hex(mock->admin_token, 48) != 0) {
		sbx_err_set(err, "admin token: getrandom: %s", strerror(errno));
		return -1;
	}
	return 0;
}

#ifndef SBX_MOCK_INTERNET_HOSTS
#define SBX_MOCK_INTERNET_HOSTS "fixtures/internet/hosts.json"
#endif

/* The mock's one CA (inet_tls.h), made by the first part that needs it
 * (the simulated internet, the ingress's https): the guests trust the
 * same CA the host's clients get from GET /_mock/ca or --ca-out. */
static int need_ca(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	if (mock->tls == NULL)
		mock->tls = mock_inet_tls_new(cfg->internet_ca, cfg->state_dir, err);
	return mock->tls != NULL ? 0 : -1;
}

/* --ca-out: the CA certificate written for host-side clients (Node's
 * NODE_EXTRA_CA_CERTS, curl --cacert, Python's cafile), through a
 * temporary name so a reader never sees half of it. */
static int write_ca_out(const sbx_mock *mock, const char *path, sbx_err *err)
{
	char tmp[PATH_MAX];
	const char *pem = mock->tls != NULL ? mock_inet_tls_ca_pem(mock->tls) : NULL;
	FILE *f;
	bool ok;

	if (pem == NULL) {
		sbx_err_set(err, "--ca-out: no CA to write (the ingress is off and egress is not enforced)");
		return -1;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		sbx_err_set(err, "--ca-out: path too long");
		return -1;
	}
	f = fopen(tmp, "we");
	if (f == NULL) {
		sbx_err_set(err, "--ca-out %s: %s", tmp, strerror(errno));
		return -1;
	}
	ok = fputs(pem, f) >= 0;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		sbx_err_set(err, "--ca-out %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Binds the upstream name patterns to the addresses the internet's hosts
 * file gives their names (INTERNET.md, "Upstream"). */
static int bind_upstream_names(sbx_mock *mock, const char *hosts_path, sbx_err *err)
{
	mock_hosts hosts = {0};
	int rc;

	if (!mock_inet_upstream_any(mock->inet_book))
		return 0;
	if (hosts_path != NULL && mock_hosts_load(hosts_path, &hosts, err) != 0)
		return -1;
	rc = mock_inet_upstream_resolve(mock->inet_book, &hosts, err);
	mock_hosts_free(&hosts);
	return rc;
}

/* Egress enforced where this host allows it; asked for and impossible is
 * an error, else the note says why not (a warning) and rules are stored. */
static int start_internet(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	const char *want = cfg->egress != NULL ? cfg->egress : "auto";
	const char *hosts = cfg->internet_hosts;
	sbx_err ierr = {{0}};

	if (strcmp(want, "stored") == 0) {
		snprintf(mock->egress_note, sizeof(mock->egress_note),
			 "not enforced (--egress stored): rules are stored and answered by "
			 "/_mock/egress/check; guests have loopback only");
		return 0;
	}
	if (strcmp(want, "auto") != 0 && strcmp(want, "enforced") != 0) {
		sbx_err_set(err, "egress: \"%s\" is not auto, enforced or stored", want);
		return -1;
	}
	if (mock->gmode != GUEST_CONTAINED) {
		snprintf(mock->egress_note, sizeof(mock->egress_note),
			 "NOT enforced: plain guests use the host's network as they are; rules are "
			 "only stored");
		if (strcmp(want, "enforced") == 0) {
			sbx_err_set(err, "egress cannot be enforced for plain guests (--guest-mode plain)");
			return -1;
		}
		return 0;
	}
	/* a CA that cannot be had is an error whatever --egress says: its
	 * files were asked for, or the state dir is unusable */
	if (need_ca(mock, cfg, err) != 0)
		return -1;
	if (hosts == NULL && access(SBX_MOCK_INTERNET_HOSTS, R_OK) == 0)
		hosts = SBX_MOCK_INTERNET_HOSTS;
	/* like the CA: an upstream name no guest could resolve is an error
	 * whatever --egress says, not a reason to run unenforced */
	if (bind_upstream_names(mock, hosts, err) != 0)
		return -1;
	mock->inet = mock_internet_start(hosts, mock->tls, mock->inet_book, &ierr);
	if (mock->inet != NULL) {
		mock->inet_ca_pem = mock_internet_ca_pem(mock->inet);
		mock_inet_sites_note(mock->inet_book, mock_internet_hosts(mock->inet), mock->sites_note,
				     sizeof(mock->sites_note));
		snprintf(mock->egress_note, sizeof(mock->egress_note), "enforced (simulated internet%s)",
			 mock_cell_host_root() ? "" : "; sbx-mock is root only in a user namespace of its own");
		return 0;
	}
	if (strcmp(want, "enforced") == 0) {
		sbx_err_set(err, "egress cannot be enforced: %s", ierr.msg);
		return -1;
	}
	snprintf(mock->egress_note, sizeof(mock->egress_note),
		 "NOT enforced, rules are only stored and guests have loopback only: %s", ierr.msg);
	return 0;
}

/* Sweeps the groups of mocks that died without removing theirs (kill -9),
 * then claims ours (cgroup_owner.h); both said in the cgroups note. A
 * claim that cannot be made is said, not an error: our groups are then
 * only removed by our own stop. */
static void claim_cgroups(sbx_mock *mock)
{
	const char *parents[4];
	char swept[1024], why[512] = "";
	size_t n = 0, len = strlen(mock->cgroups_note);

	mock_cg_owner_sweep(swept, sizeof(swept));
	while (n < 4 && (parents[n] = mock_cgroups_parent(mock->cgroups, n)) != NULL)
		n++;
	mock->srv->cg_owner = mock_cg_owner_claim(parents, n, why, sizeof(why));
	snprintf(mock->cgroups_note + len, sizeof(mock->cgroups_note) - len, "%s%s%s", swept,
		 mock->srv->cg_owner == NULL ? "; not claimed for a later sweep: " : "", why);
}

/* The tenant key of a sandbox, for per-tenant stubs (inet_book.h). */
static void inet_tenant_of(void *arg, const char *sandbox, char *key, size_t cap)
{
	sbx_mock *mock = arg;
	const mock_sandbox *sb;

	if (mock->model == NULL)
		return;
	pthread_mutex_lock(&mock->model->lock);
	sb = mock_sandbox_find_any(mock->model, sandbox);
	if (sb != NULL && sb->tenant != NULL && sb->tenant->key != NULL)
		snprintf(key, cap, "%s", sb->tenant->key);
	else if (sb == NULL)
		mock_op_template_builder_tenant(mock, sandbox, key, cap); /* a build's cell */
	pthread_mutex_unlock(&mock->model->lock);
}

/* The internet's book: its sites, upstream patterns and start-up stubs,
 * each refused with the flag's name when wrong. */
static int start_book(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	mock->inet_book = mock_inet_book_new();
	if (mock->inet_book == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	mock_inet_book_set_tenant_fn(mock->inet_book, inet_tenant_of, mock);
	for (size_t i = 0; i < cfg->ninternet_sites; i++) {
		if (mock_inet_site_add(mock->inet_book, cfg->internet_sites[i], err) != 0)
			return -1;
	}
	if (cfg->internet_upstream != NULL && mock_inet_upstream_set(mock->inet_book, cfg->internet_upstream, err) != 0)
		return -1;
	mock->inet_stubs_file = cfg->internet_stubs;
	if (cfg->internet_stubs != NULL && mock_inet_stubs_add_file(mock->inet_book, cfg->internet_stubs, err) != 0)
		return -1;
	return mock_op_cassette_start(mock, cfg, err); /* before the internet: a recording's way out is made there */
}

/* Contained unless plain is asked for; can't contain: an error, no fallback. */
static int start_guests(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	sbx_err cerr = {{0}};

	if (mock_guest_mode_detect(cfg->guest_mode, &mock->gmode, err) != 0)
		return -1;
	if (mock_rootfs_open(mock, cfg->images, cfg->image_pairs, cfg->nimage_pairs, err) != 0)
		return -1;
	if (mock->gmode != GUEST_CONTAINED)
		return start_internet(mock, cfg, err);
	/* compiled once here, not by each cell (~15 ms of CPU a create); when
	 * it cannot be, every cell compiles the same program itself */
	mock->cell_filter = mock_cell_filter_new();
	/* none is a note (no limits, pause by SIGSTOP), not an error */
	mock->cgroups = mock_cgroups_open(NULL, mock->cgroups_note, sizeof(mock->cgroups_note), &cerr);
	if (mock->cgroups == NULL && cerr.msg[0] != '\0') {
		sbx_err_set(err, "cgroups: %s", cerr.msg);
		return -1;
	}
	if (mock->cgroups != NULL)
		claim_cgroups(mock);
	return start_internet(mock, cfg, err);
}

/* Model, fault engine, journal and everything that fills them before the
 * first request: tenants, the work dir, the durable log's replay, the
 * start scenario, record/replay. */
static int start_state(sbx_mock *mock, const sbx_mock_config *cfg, const mock_settings *set,
		       sbx_err *err)
{
	mock->model = mock_model_new(set);
	mock->faults = mock_faults_new(cfg->seed);
	mock->journal = mock_journal_new(cfg->no_journal ? 0 : cfg->journal_size);
	if (mock->model == NULL || mock->faults == NULL || mock->journal == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < mock->nkeys; i++)
		mock_tenant_add(mock->model, mock->keys[i]);
	if (make_work_dir(mock, cfg, err) != 0)
		return -1;
	if (mock_durable_start(mock, cfg, err) != 0)
		return -1;
	if (cfg->scenario != NULL && sbx_mock_load_scenario(mock, cfg->scenario, err) != 0)
		return -1;
	mock->rec = mock_rec_new(cfg, err);
	if (mock->rec == NULL && (cfg->record_upstream != NULL || cfg->replay != NULL))
		return -1;
	return 0;
}

/* The warm pool (cell_pool.h): contained, neither durable (a disk there
 * is the sandbox's own host tree) nor record/replay (no guests), and not
 * asked off. Its cells are built like a create's, with a small memory
 * limit until one is handed out. */
static int start_pool(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	mock_pool_conf pc = {.size = cfg->warm_pool, .work_dir = mock->work_dir, .quiet = cfg->quiet};
	const char *why = NULL;

	if (cfg->warm_pool > MOCK_POOL_MAX) {
		sbx_err_set(err, "--warm-pool %u: at most %d", cfg->warm_pool, MOCK_POOL_MAX);
		return -1;
	}
	if (cfg->warm_pool == 0)
		why = "off (--warm-pool 0)";
	else if (mock->gmode != GUEST_CONTAINED)
		why = "off: plain guests have no cells";
	else if (mock->state != NULL)
		why = "off: with --state-dir a guest's disk is its own host tree";
	else if (mock->rec != NULL)
		why = "off: record and replay run no guests";
	if (why != NULL) {
		snprintf(mock->pool_note, sizeof(mock->pool_note), "%s", why);
		return 0;
	}
	pc.opts.self_port = mock_self_guest_port(mock);
	pc.opts.cgroups = mock->cgroups;
	pc.opts.mem_bytes = MOCK_POOL_IDLE_MEM_BYTES;
	pc.opts.pids_max = MOCK_GUEST_PIDS_MAX;
	pc.opts.disk_mib = MOCK_POOL_IDLE_DISK_MIB;
	pc.opts.filter = mock->cell_filter;
	pc.opts.root = mock_image_root(mock->pool_image);
	pc.opts.trust_pem = mock->inet_ca_pem;
	if (mock->inet != NULL) {
		pc.prepare = mock_egress_prewire;
		pc.discard = mock_egress_unprewire;
		pc.on_teardown = mock_egress_unwire_guest;
		pc.hook_arg = mock;
	}
	mock->pool = mock_pool_start(&pc, err);
	if (mock->pool == NULL)
		return -1;
	snprintf(mock->pool_note, sizeof(mock->pool_note), "on: %u cells", cfg->warm_pool);
	return 0;
}

/* The preview-URL proxy (ingress.h): cfg->ingress_listen, NULL =
 * 127.0.0.1:0, "off" = none. */
static int start_ingress(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	uint32_t addr = htonl(INADDR_LOOPBACK);
	uint16_t port = 0;
	bool https = cfg->ingress_scheme == NULL || strcmp(cfg->ingress_scheme, "https") == 0;

	if (!https && strcmp(cfg->ingress_scheme, "http") != 0) {
		sbx_err_set(err, "--ingress-scheme: \"%s\" is not https or http", cfg->ingress_scheme);
		return -1;
	}
	if (cfg->ingress_listen != NULL && strcmp(cfg->ingress_listen, "off") == 0)
		return 0;
	if (cfg->ingress_listen != NULL && mock_ingress_parse_listen(cfg->ingress_listen, &addr, &port, err) != 0)
		return -1;
	/* the port terminates TLS whichever scheme the URLs say */
	if (need_ca(mock, cfg, err) != 0)
		return -1;
	mock->ingress = mock_ingress_start(mock, addr, port, mock->tls, https, err);
	if (mock->ingress == NULL)
		return -1;
	mock->ingress_cut = mock_ingress_cut;
	pthread_mutex_lock(&mock->model->lock);
	snprintf(mock->model->ingress_base, sizeof(mock->model->ingress_base), "%s",
		 mock_ingress_base(mock->ingress));
	pthread_mutex_unlock(&mock->model->lock);
	return 0;
}

sbx_mock *sbx_mock_start(const sbx_mock_config *cfg, sbx_err *err)
{
	/* the core and the server's own state in one block, the core first
	 * (sbx_mock_stop frees it as the mock) */
	struct mock_whole {
		sbx_mock core;
		struct mock_server srv;
	} *whole = calloc(1, sizeof(*whole));
	sbx_mock *mock;
	mock_settings set;

	if (whole == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	mock = &whole->core;
	mock->srv = &whole->srv;
	mock_workers_init(mock);
	/* the operations reach the self-signal listeners through these */
	mock->self_guest_port = mock_self_guest_port;
	mock->self_listen_add = mock_self_listen_add;
	mock->self_listen_remove = mock_self_listen_remove;
	mock->guest_booted = mock_op_computer_boot;
	mock->guest_seed = mock_op_template_seed;
	mock->builds_cancel = mock_op_templates_cancel;
	mock->persist_tenant = mock_durable_persist;
	if (mock_settings_from_config(cfg, &set, err) != 0)
		goto out_stop;
	if (copy_config(mock, cfg, err) != 0)
		goto out_stop;
	if (copy_keys(mock, cfg, err) != 0 || chaos_init(mock) != 0)
		goto out_stop;
	mock->srv->linger = linger_new();
	if (mock->srv->linger == NULL && !cfg->quiet)
		fprintf(stderr, "sbx-mock: note: no lingering close (cannot start its thread): "
				"an early 413 may reach a client still sending as a reset\n");
	if (start_book(mock, cfg, err) != 0 || start_guests(mock, cfg, err) != 0)
		goto out_stop;
	/* contained: before the state, so that the sandboxes a durable replay
	 * or a scenario starts find the port and registry for their listeners
	 * (no connection comes before a listener is registered); plain: after
	 * it, since its host listener serves at once */
	if (mock->gmode != GUEST_PLAIN && start_self_daemon(mock, cfg, err) != 0)
		goto out_stop;
	if (start_state(mock, cfg, &set, err) != 0 || start_pool(mock, cfg, err) != 0 ||
	    start_ingress(mock, cfg, err) != 0)
		goto out_stop;
	if (cfg->ca_out != NULL && write_ca_out(mock, cfg->ca_out, err) != 0)
		goto out_stop;
	/* plain: still before the API daemon, whose pool threads read
	 * self_daemon on every request (a write after they start was a data
	 * race, found by TSan) */
	if (mock->gmode == GUEST_PLAIN && start_self_daemon(mock, cfg, err) != 0)
		goto out_stop;
	if (start_daemon(mock, cfg, err) != 0)
		goto out_stop;
	return mock;

out_stop: /* stop undoes whatever part of the start happened */
	sbx_mock_stop(mock);
	return NULL;
}

const char *sbx_mock_url(const sbx_mock *mock)
{
	return mock->srv->url;
}

uint16_t sbx_mock_port(const sbx_mock *mock)
{
	return mock->srv->port;
}

const char *sbx_mock_admin_token(const sbx_mock *mock)
{
	return mock->admin_token;
}

const char *sbx_mock_guest_mode(const sbx_mock *mock)
{
	return mock_guest_mode_name(mock->gmode);
}

const char *sbx_mock_ingress_url(const sbx_mock *mock)
{
	return mock->ingress != NULL ? mock_ingress_base(mock->ingress) : NULL;
}

const char *sbx_mock_ca_pem(const sbx_mock *mock)
{
	return mock->tls != NULL ? mock_inet_tls_ca_pem(mock->tls) : NULL;
}

const char *sbx_mock_self_url(const sbx_mock *mock)
{
	return mock->self_daemon != NULL ? mock->srv->self_url : NULL;
}

const char *sbx_mock_self_note(const sbx_mock *mock)
{
	return mock->srv->self_note[0] != '\0' ? mock->srv->self_note : NULL;
}

bool sbx_mock_guests_contained(const sbx_mock *mock)
{
	return mock->gmode == GUEST_CONTAINED;
}

int sbx_mock_own_userns(sbx_err *err)
{
	return mock_internet_own_userns(err);
}

const char *sbx_mock_internet_sites_note(const sbx_mock *mock)
{
	return mock->sites_note[0] != '\0' ? mock->sites_note : NULL;
}

const char *sbx_mock_egress_note(const sbx_mock *mock)
{
	return mock->egress_note;
}

bool sbx_mock_egress_enforced(const sbx_mock *mock)
{
	return mock->inet != NULL;
}

const char *sbx_mock_rootfs_note(const sbx_mock *mock)
{
	return mock->rootfs_note;
}

const char *sbx_mock_cgroups_note(const sbx_mock *mock)
{
	return mock->gmode == GUEST_CONTAINED ? mock->cgroups_note : NULL;
}

void sbx_mock_stop(sbx_mock *mock)
{
	if (mock == NULL)
		return;
	atomic_store(&mock->stopping, true);
	mock_self_listen_stop(mock); /* no new self-signal connection from here */
	mock_ingress_stop(mock->ingress); /* its threads use the model and guests */
	mock->ingress = NULL;
	if (mock->model != NULL) {
		/* their builder cells go first; a create still in a worker
		 * starts no build from here */
		mock_op_templates_stop(mock);
		mock_op_kill_guests(mock);
	}
	/* workers resume their connections before they end: none stays
	 * suspended when the daemon stops */
	mock_workers_wait(mock);
	if (mock->srv->daemon != NULL)
		MHD_stop_daemon(mock->srv->daemon);
	if (mock->self_daemon != NULL)
		MHD_stop_daemon(mock->self_daemon);
	/* after the daemon: its CLOSED notices add sockets */
	linger_free(mock->srv->linger);
	mock->srv->linger = NULL;
	/* no request runs now (a GET's tick may destroy a sandbox): none
	 * takes or retires a pooled guest; what the pool holds goes, and the
	 * guests freed below are freed here */
	mock_pool_stop(mock->pool);
	mock->pool = NULL;
	if (mock->model != NULL) {
		mock_op_templates_free(mock); /* no request can follow a log now */
		mock_free_guests(mock, mock->state == NULL); /* durable: trees survive */
		mock_model_free(mock->model);
	}
	if (mock->inet_book != NULL) /* a connection still served must not read the freed model */
		mock_inet_book_set_tenant_fn(mock->inet_book, NULL, NULL);
	mock_cgroups_close(mock->cgroups); /* every sandbox's group is gone */
	mock_cg_owner_release(mock->srv->cg_owner); /* after: a sweep finds nothing to do */
	mock_internet_stop(mock->inet);    /* every sandbox's link is gone */
	mock_op_cassette_stop(mock);       /* after the servers that record into it */
	mock_inet_tls_free(mock->tls);     /* after the ingress and the internet's servers */
	mock_inet_book_free(mock->inet_book); /* after the servers that read it */
	mock_cell_filter_free(mock->cell_filter); /* every cell that read it is gone */
	mock_rootfs_close(mock); /* every cell that mounted one is gone */
	mock_trust_forget(mock->work_dir); /* so is every cell that bound one */
	mock_self_listen_free(mock); /* after the daemon: its callbacks use it */
	if (mock->own_work_dir)
		rmdir(mock->work_dir);
	mock_faults_free(mock->faults);
	mock_journal_free(mock->journal);
	chaos_free(mock);
	mock_rec_free(mock->rec);
	mock_mutlog_close(mock->state);
	for (size_t i = 0; i < mock->nkeys; i++)
		free(mock->keys[i]);
	free(mock->keys);
	mock_workers_free(mock);
	free(mock);
}

/* sbx-mock as a library: the conformance runner, sbxctl's tests and the
 * integration tests embed the mock control plane in-process.
 *
 * The functions below are the stable embedding interface; the config struct
 * may grow fields (always initialise it with sbx_mock_config_init). */
#ifndef SBX_MOCK_H
#define SBX_MOCK_H

/* The largest journal ring a start accepts (about 130 MB; stop walks it). */
#define SBX_MOCK_JOURNAL_MAX 1000000

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx/egress.h"
#include "sbx/err.h"

typedef struct sbx_mock sbx_mock;

typedef struct sbx_mock_config {
	const char *listen_host;     /* default "127.0.0.1" */
	uint16_t listen_port;        /* 0 = ephemeral (default) */
	const char *admin_token;     /* NULL: a random token is generated */
	bool accept_any_key;         /* a new key creates a tenant (default true) */
	const char *const *api_keys; /* known keys when !accept_any_key */
	size_t api_key_count;
	const char *region;          /* default "local" */
	unsigned sandbox_cap;        /* concurrent sandboxes per tenant, default 5 */
	unsigned cap_status;         /* default 403 (unconfirmed upstream) */
	const char *cap_code;        /* default "QUOTA_EXCEEDED" */
	unsigned template_build_cap;        /* concurrent template builds per tenant, default 4 */
	unsigned template_build_cap_global; /* concurrent template builds in the mock, default 8 */
	unsigned template_cap;              /* templates kept per tenant, default 32 */
	unsigned template_storage_mib;      /* their storage per tenant (MiB), default 1024 */
	unsigned template_storage_mib_global; /* their storage in the mock (MiB), default 8192 */
	sbx_host_rule_mode host_rule_mode; /* default SBX_HOST_RULES_OBSERVED (what the live service does) */
	size_t max_egress_rules;     /* default SBX_EGRESS_MAX_RULES_DEFAULT */
	size_t max_json_body;        /* default 1 MiB */
	size_t max_file_body;        /* default 64 MiB */
	const char *timing;          /* "instant" (default), "realistic", or a scale factor "0.5" */
	const char *work_dir;        /* where guest trees live; NULL: a private temp dir */
	const char *scenario;        /* fault scenario name or file, may be NULL */
	unsigned threads;            /* server threads, 0 = default */
	bool quiet;                  /* no log lines on stderr */
	/* Added by the mock module (issue 4/5). */
	uint64_t seed;               /* fault RNG seed (probability, latency draws), default 1 */
	size_t journal_size;         /* request journal ring size, default 65536, at most
				      * SBX_MOCK_JOURNAL_MAX */
	bool no_journal;             /* disable the journal (load tests) */
	const char *guest_mode;      /* "contained" (default; "ns", "auto": the same) or "plain" */
	int64_t exec_timeout_ms;     /* default per-exec timeout, default 600000 (0 = none) */
	const char *scenario_dir;    /* first place to look for scenario NAME.json, may be NULL;
				      * then $SBX_SCENARIO_DIR, the source tree's
				      * fixtures/scenarios, the installed share dir */
	const char *record_upstream; /* record mode: proxy to this control plane URL ... */
	const char *record_to;       /* ... writing the exchanges (JSON lines) here */
	const char *replay;          /* replay mode: serve this recording in order */
	const char *state_dir;       /* durable state: mutation log + guest trees here */
	bool state_repair;           /* a damaged log: set its tail aside and start
				      * from the last good record (else refused) */
	/* Open connections on the API port past which a new one is closed at
	 * once (0: the default, 4000, lowered to fit RLIMIT_NOFILE), and the
	 * seconds after which an idle connection is closed (0: 120). */
	unsigned max_connections;
	unsigned idle_timeout_s;
	/* The guests' self-signal endpoint (POST /self/pause, /self/delete),
	 * "HOST:PORT"; the real one is 127.0.0.1:1029 inside every VM. NULL: off
	 * (the default here; sbx-mock's own default is 127.0.0.1:1029). */
	const char *self_listen;
	bool self_listen_optional;   /* a self_listen that cannot bind is a warning, not an error */
	/* Egress enforcement (mock-api/INTERNET.md): NULL or "auto" (enforced
	 * where this host allows it, else stored only, with a note saying why),
	 * "enforced" (an error where it cannot be) or "stored" (rules are kept
	 * and answered by the oracle; guests have loopback only). */
	const char *egress;
	const char *internet_hosts;  /* the resolver's names; NULL: fixtures/internet/hosts.json */
	/* The simulated internet's TLS CA (mock-api/INTERNET.md, "TLS"):
	 * "CERT,KEY" (PEM files); NULL: kept in state_dir when there is one
	 * (internet-ca.crt/.key), else made at start. */
	const char *internet_ca;
	/* Virtual fault delays (the backend fuzzer): a hang, a latency and a
	 * dribble's pauses take no wall time; the answer (or the dropped
	 * connection) is the one the delay would end in. Default false. */
	bool virtual_delays;
	/* The preview-URL proxy (ingress_url_template, README "Ingress"):
	 * "HOST:PORT" on loopback (port 0 = ephemeral); NULL = 127.0.0.1:0;
	 * "off" = none. */
	const char *ingress_listen;
	/* What the preview and noVNC URLs say (README "Ingress"): NULL or
	 * "https" (as the live service; clients trust the mock's CA:
	 * sbx_mock_ca_pem, GET /_mock/ca, ca_out) or "http". The port takes
	 * both either way. */
	const char *ingress_scheme;
	/* A file the mock's CA certificate (PEM) is written to at start, for
	 * host-side clients (NODE_EXTRA_CA_CERTS, curl --cacert); NULL: none. */
	const char *ca_out;
	/* The warm pool (issue 24, mock-api/CONTAINMENT.md): contained cells
	 * built ahead of creates, at most this many idle (default 2, at most
	 * 64; 0 = off: every create builds its cell and every delete waits for
	 * its teardown). No pool for plain guests, --state-dir or record and
	 * replay. */
	unsigned warm_pool;
	/* Rootfs images (mock-api/IMAGES.md): a store written by
	 * mock-api/images/build-image (its index names the images) and
	 * NAME=DIR pairs (which win). Contained guests whose rootfs names a
	 * usable image get a root built on it; every other name, and every
	 * name without these, the host-skeleton root (said at start and in
	 * GET /_mock/settings). */
	const char *images;
	const char *const *image_pairs;
	size_t nimage_pairs;
	/* The simulated internet's answers (mock-api/INTERNET.md, "Stubs,
	 * sites, journal, upstream"): a stubs file ({stubs:[...]}), HOST=DIR
	 * static sites, and the opt-in way out — PATTERNS (names, "*.suffix",
	 * addresses, CIDRs, comma-separated) whose flows a guest's rules allow
	 * are forwarded to the real destination. NULL/0: none. */
	const char *internet_stubs;
	const char *const *internet_sites;
	size_t ninternet_sites;
	const char *internet_upstream;
	/* Record and replay the guests' internet (mock-api/INTERNET.md,
	 * "Record and replay the guests' internet"): a cassette directory to
	 * record into (made if missing, added to if not) or to replay (checked
	 * whole at start); at most one of the two, and neither with
	 * internet_upstream. Recording needs record_allow (names, *.suffix,
	 * addresses, CIDRs: what may be fetched from the real origin);
	 * record_ca: the origins' CA bundle (NULL: the host's trust store);
	 * record_resolve: "NAME:PORT:ADDR" entries (curl's --resolve; else the
	 * host's resolver); redact_query: query parameter names whose values
	 * are redacted. NULL/0: none. record_max_mib: the most MiB of bodies a
	 * recording writes to the cassette's disk (0: 8192; LIMITS.md). */
	const char *internet_record;
	const char *internet_replay;
	const char *internet_record_allow;
	const char *internet_record_ca;
	const char *const *internet_record_resolve;
	size_t ninternet_record_resolve;
	const char *const *internet_redact_query;
	size_t ninternet_redact_query;
	unsigned internet_record_max_mib;
} sbx_mock_config;

void sbx_mock_config_init(sbx_mock_config *cfg);

/* Starts the server; returns NULL with *err set on failure. */
sbx_mock *sbx_mock_start(const sbx_mock_config *cfg, sbx_err *err);
/* The mock's CA certificate (PEM): what the ingress's https leaves and
 * the simulated internet's are signed by; NULL when neither is on. */
const char *sbx_mock_ca_pem(const sbx_mock *mock);
/* "http://127.0.0.1:PORT" (no trailing slash); valid until sbx_mock_stop. */
const char *sbx_mock_url(const sbx_mock *mock);
uint16_t sbx_mock_port(const sbx_mock *mock);
const char *sbx_mock_admin_token(const sbx_mock *mock);
/* Stops the server, kills every guest process and removes the private work
 * dir. Leaves no thread or child process behind. NULL is fine. */
/* sbx-mock --check-state: replays cfg->state_dir's log into a scratch model
 * through the same restore path a start takes, starting nothing and
 * changing nothing on disk (no lock, no truncation), and reports on out
 * (records, what a start would skip or drop and why, tenants and sandboxes
 * by state after a restart). 0 clean, 1 a record would be skipped or a
 * tail dropped, -1 the log cannot be read (err). */
int sbx_mock_check_state(const sbx_mock_config *cfg, FILE *out, sbx_err *err);

void sbx_mock_stop(sbx_mock *mock);

/* "contained" or "plain": how guests run (see mock-api/CONTAINMENT.md). */
const char *sbx_mock_guest_mode(const sbx_mock *mock);
/* Whether every sandbox is a contained environment (false: plain mode,
 * guest code runs as the mock's user with its access). */
bool sbx_mock_guests_contained(const sbx_mock *mock);
/* Contained: which cgroups limit and freeze the sandboxes, or why none
 * ("cgroups: none (...)": no memory/pids limit, pause by SIGSTOP); NULL in
 * plain mode. */
const char *sbx_mock_cgroups_note(const sbx_mock *mock);
/* "enforced (simulated internet)" or "not enforced: <why>" (also for
 * plain guests and --egress stored). */
const char *sbx_mock_egress_note(const sbx_mock *mock);
/* The --internet-site names the internet's hosts file lacks and the
 * addresses its resolver gives them ("a.test=198.18.x.y, ..."), or NULL
 * when there are none (or egress is not enforced). */
const char *sbx_mock_internet_sites_note(const sbx_mock *mock);
/* Which root each rootfs name's guests get: "rootfs: devbox:1 = image DIR
 * (...); other names: the host-skeleton root", or why no image is used. */
const char *sbx_mock_rootfs_note(const sbx_mock *mock);
/* How many rootfs names get an image (0: every guest gets the host
 * skeleton, whatever the store named; always 0 for plain guests). */
size_t sbx_mock_images_usable(const sbx_mock *mock);
/* For an unprivileged process that wants egress enforced: enters a user
 * namespace of its own (mock-api/INTERNET.md, "Unprivileged"). Call it
 * before any thread exists, before sbx_mock_start. 0 (as root: nothing to
 * do), or -1 with err saying why (sbx_mock_start then notes egress as not
 * enforced). */
int sbx_mock_own_userns(sbx_err *err);
bool sbx_mock_egress_enforced(const sbx_mock *mock);
/* The self-signal endpoint, "http://127.0.0.1:PORT", or NULL when off; and
 * why it is off when self_listen_optional kept it from failing the start.
 * In plain guest mode it listens on the host; in contained mode the URL is
 * the address inside every sandbox (each has its own listener there, see
 * mock-api/src/listen/self_listen.h), and nothing listens on the host. */
const char *sbx_mock_self_url(const sbx_mock *mock);
const char *sbx_mock_self_note(const sbx_mock *mock);
/* The preview-URL proxy, "http://127.0.0.1:PORT" (a sandbox's
 * ingress_url_template is "<this>/<id>/<port>/"), or NULL when off. */
const char *sbx_mock_ingress_url(const sbx_mock *mock);
/* Parses --timing: "instant" (0), "realistic" (1) or a scale factor. */
int sbx_mock_parse_timing(const char *timing, double *scale, sbx_err *err);
/* Loads fault rules from a scenario name (NAME.json in the scenario search
 * path, see scenario_dir) or a file path; appends them to the running rule
 * list. */
int sbx_mock_load_scenario(sbx_mock *mock, const char *name_or_file, sbx_err *err);

#endif

/* core: one running mock as the operations and every layer below HTTP
 * see it — struct sbx_mock: the model, faults, journal, guest
 * configuration, the simulated internet, the state log, the seed, the
 * stop flag — and the hooks through which the operations make the server
 * act (self-signal listeners, ingress cuts).
 *
 * Must never include microhttpd.h: the server's daemons are opaque
 * pointers here, and its request types (mreq, mresp) live in
 * http/request.h. The server fills the hooks at start
 * (server/server.c); a NULL hook means there is nothing to do. */
#ifndef SBX_MOCK_CORE_H
#define SBX_MOCK_CORE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "faults/faults.h"
#include "faults/journal.h"
#include "guest/guest.h"
#include "model/model.h"
#include "sbx/err.h"
#include "sbx/mock.h"
#include "util/sleep.h"

struct MHD_Daemon;                        /* the server's (microhttpd) */
struct mock_server;                       /* the server's own (server/server.h) */
typedef struct mock_rec mock_rec;         /* record/replay (proxy/record.h) */
typedef struct mock_mutlog mock_mutlog;   /* the state log (state/mutation_log.h) */

struct sbx_mock {
	/* the server's own state (server/server.h: daemons, addresses,
	 * open connections), opaque to every layer below it */
	struct mock_server *srv;
	char admin_token[257];        /* at most 256 bytes (longer is refused) */
	mock_model *model;
	mock_faults *faults;
	mock_journal *journal;
	mock_guest_mode gmode;
	struct mock_cgroups *cgroups; /* contained: the sandboxes' parent groups, or NULL */
	struct mock_internet *inet;   /* enforced egress (internet.h), or NULL */
	const char *inet_ca_pem;      /* its TLS CA's certificate, every guest trusts; or NULL */
	/* the mock's one CA (inet_tls.h): the internet's servers' and the
	 * ingress's leaves; made when either is on, else NULL */
	struct mock_inet_tls *tls;
	/* the internet's stubs, sites, journal and upstream patterns
	 * (inet_book.h): always made, so the admin API answers the same when
	 * egress is not enforced; inet_stubs_file is reloaded by a reset */
	struct mock_inet_book *inet_book;
	const char *inet_stubs_file;
	/* the cassette recorded into or replayed (inet_tape.h), or NULL */
	struct mock_inet_tape *tape;
	/* the warm pool of cells and deferred teardown (cell_pool.h), or NULL:
	 * off (--warm-pool 0), plain guests, durable state, record/replay;
	 * pool_note says which */
	struct mock_pool *pool;
	char pool_note[160];
	/* contained: the cells' seccomp program, compiled once (cell.h), or
	 * NULL (each cell compiles its own) */
	struct mock_cell_filter *cell_filter;
	/* contained: the rootfs images (images/images.h; IMAGES.md), or NULL:
	 * every root the host skeleton; rootfs_note says which name gets
	 * which root; pool_image is the image the warm pool's cells are
	 * built on (the default rootfs's, or NULL) */
	struct mock_images *images;
	const struct mock_image *pool_image;
	char rootfs_note[1024];
	char egress_note[600];        /* "enforced (simulated internet)", or why not */
	char sites_note[1024];        /* sites the hosts file lacks and their addresses; "" none */
	uint64_t egress_seq;          /* under the model lock: orders egress syncs */
	char cgroups_note[2048];      /* what cgroups are used, or why none; what was swept */
	struct MHD_Daemon *self_daemon; /* the guests' self-signal listener (self.c), or NULL */
	uint16_t self_port;
	/* contained mode: the per-sandbox listeners feeding self_daemon
	 * (self_listen.c), NULL otherwise; self_port is then the port they
	 * listen on inside each sandbox */
	struct mock_self_listen *selfl;
	/* the preview-URL proxy (ingress.h), or NULL when off; the operations
	 * cut its connections through the hook, never by name (layering) */
	struct mock_ingress *ingress;
	void (*ingress_cut)(struct mock_ingress *in, const char *sandbox_id);
	/* The per-sandbox self-signal listeners (listen/self_listen.c), as
	 * hooks the server fills (sbx_mock_start): the operations register a
	 * started guest's listener and drop a destroyed one's without
	 * calling the server by name. NULL (a mock built by hand, as the
	 * fuzzers do): no listeners, port 0. */
	uint16_t (*self_guest_port)(const sbx_mock *mock);
	int (*self_listen_add)(sbx_mock *mock, int fd, const char *sandbox_id);
	void (*self_listen_remove)(sbx_mock *mock, const char *sandbox_id);
	/* The operations built on the guest machinery that a guest's start and
	 * a reset must run (a desktop's screen, ops_computer.c; a template's
	 * layer and the builds, template_build.c): they use ops.c's helpers,
	 * so ops.c reaches them through hooks the server fills, not by name
	 * (no two files may need each other). NULL: nothing to do. */
	void (*guest_booted)(sbx_mock *mock, mock_sandbox *sb, mock_guest *g);
	int (*guest_seed)(sbx_mock *mock, const mock_sandbox *sb, sbx_err *err);
	void (*builds_cancel)(sbx_mock *mock);
	/* Logs tenant t's state now (state/durable.c, --state-dir): a build
	 * that ended, which no request acknowledges. NULL: not durable. */
	int (*persist_tenant)(sbx_mock *mock, mock_tenant *t, sbx_err *err);
	char work_dir[PATH_MAX];
	bool own_work_dir;
	/* the template builds running (template_build.c), under the model
	 * lock; NULL before the first */
	struct mock_builds *builds;
	char **keys;
	size_t nkeys;
	atomic_bool stopping;
	uint64_t anon_requests;
	uint64_t seed;
	size_t max_json;
	size_t max_file;
	int64_t exec_timeout_ms;
	atomic_int hb_ms;
	atomic_size_t exec_out_held; /* buffered exec output held, bytes (api_exec.c) */
	atomic_uint disk_max_mib;    /* setting guest_disk_max_mib: 0, or a cap
				      * on every new or resized guest disk */
	bool quiet;
	bool virtual_delays;         /* sbx_mock_config.virtual_delays (fault_apply.c) */
	char scenario_dir[PATH_MAX]; /* --scenario-dir, "" when not given */
	mock_rec *rec;               /* record or replay mode (record.c), NULL otherwise */
	mock_mutlog *state;          /* --state-dir (durable.c), NULL otherwise */
	/* Threads doing blocking work off MHD's pool (workers.c): offloaded
	 * requests and blocking response readers. sbx_mock_stop waits for
	 * workers == 0 before stopping the daemon. */
	pthread_mutex_t work_lock;
	pthread_cond_t work_cv;      /* workers or threads dropped */
	pthread_cond_t job_cv;       /* a job was queued, or stopping */
	unsigned workers;            /* jobs started and not yet ended */
	unsigned threads;            /* pool threads alive */
	unsigned idle;               /* pool threads waiting for a job */
	unsigned njobs;              /* jobs queued for an idle thread */
	struct mock_job *jobs, *jobs_tail;
	bool work_ready;
	pthread_t *zombies;          /* ended pool threads, not yet joined */
	size_t nzombies, capzombies;
};

/* Sleeps up to ms, returns early when the mock stops. */
static inline void mock_sleep_ms(sbx_mock *mock, int64_t ms)
{
	mock_sleep_until_stop(&mock->stopping, ms);
}

#endif

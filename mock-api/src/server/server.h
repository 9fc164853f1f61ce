/* server: the mock's internal types and the calls between its parts —
 * struct sbx_mock (one running mock), mreq and mresp (a request and the
 * answer a handler fills), and the entry points the parts offer each
 * other: the API (api_*.c, routed by route.c), admin (admin.c) and self-signal (self.c)
 * dispatchers that the request pipeline (http.c) calls, record/replay
 * (record.c), durable state (durable.c) and the connection registry
 * (chaos.c). The guest hooks are the operations layer's (ops.h).
 *
 * A handler reads the parsed request (mreq) and fills an mresp through the
 * helpers of resp.h (included here, with workers.h and json_print.h, so a
 * handler needs this header only); it never queues an answer on the MHD
 * connection itself. */
#ifndef SBX_MOCK_SERVER_H
#define SBX_MOCK_SERVER_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "faults/faults.h"
#include "guest/guest.h"
#include "faults/journal.h"
#include "model/model.h"
#include "state/mutation_log.h"
#include "sbx/mock.h"
#include "sbx/strbuf.h"

typedef struct mock_rec mock_rec;

struct sbx_mock {
	struct MHD_Daemon *daemon;
	char url[96];
	uint16_t port;
	char admin_token[257];        /* at most 256 bytes (longer is refused) */
	mock_model *model;
	mock_faults *faults;
	mock_journal *journal;
	mock_guest_mode gmode;
	struct mock_cgroups *cgroups; /* contained: the sandboxes' parent groups, or NULL */
	struct mock_internet *inet;   /* enforced egress (internet.h), or NULL */
	/* the warm pool of cells and deferred teardown (cell_pool.h), or NULL:
	 * off (--warm-pool 0), plain guests, durable state, record/replay;
	 * pool_note says which */
	struct mock_pool *pool;
	char pool_note[160];
	/* contained: the cells' seccomp program, compiled once (cell.h), or
	 * NULL (each cell compiles its own) */
	struct mock_cell_filter *cell_filter;
	char egress_note[600];        /* "enforced (simulated internet)", or why not */
	uint64_t egress_seq;          /* under the model lock: orders egress syncs */
	char cgroups_note[2048];      /* what cgroups are used, or why none; what was swept */
	struct mock_cg_owner *cg_owner; /* the lock on our groups' owner file, or NULL */
	struct MHD_Daemon *self_daemon; /* the guests' self-signal listener (self.c), or NULL */
	char self_url[96];
	uint16_t self_port;
	char self_note[sizeof(((sbx_err *)0)->msg)];
	/* contained mode: the per-sandbox listeners feeding self_daemon
	 * (self_listen.c), NULL otherwise; self_port is then the port they
	 * listen on inside each sandbox */
	struct mock_self_listen *selfl;
	/* the preview-URL proxy (ingress.h), or NULL when off; the operations
	 * cut its connections through the hook, never by name (layering) */
	struct mock_ingress *ingress;
	void (*ingress_cut)(struct mock_ingress *in, const char *sandbox_id);
	char work_dir[PATH_MAX];
	bool own_work_dir;
	char **keys;
	size_t nkeys;
	atomic_bool stopping;
	atomic_uint_fast64_t req_counter;
	atomic_uint_fast64_t conn_counter; /* serials of accepted connections (chaos.c) */
	atomic_uint conns_open;      /* open API connections (http.c) */
	unsigned max_conns;          /* past it, new API connections are closed at once */
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
	/* When set, every request runs on a worker thread, GETs included (a
	 * mode whose GETs may block, e.g. proxying to an upstream). */
	atomic_bool offload_all;
	/* Open connections (chaos.c), for cp_restart. */
	pthread_mutex_t conns_lock;
	bool conns_ready;
	int *conns;
	size_t nconns, capconns;
};

#define MRESP_MAX_HEADERS 12

typedef struct mreq {
	sbx_mock *mock;
	struct MHD_Connection *conn;
	const char *method;
	char *path;               /* owned copy of the url path */
	sbx_strbuf body;
	size_t limit;
	bool too_large;
	size_t discarded;         /* chunked body bytes dropped past limit (http.c) */
	cJSON *json;              /* parsed body when it is JSON, else NULL */
	bool json_bad;            /* body present but not valid JSON */
	char json_why[96];        /* why json_bad: what and at which byte */
	bool uri_nul;             /* the raw URI held %00 (refused) */
	int64_t start_us;
	char request_id[40];
	const char *api_key;      /* from the auth headers, may be NULL */
	char sandbox_id[40];      /* for the journal */
	bool fault_fired;
	char fault_label[96];
	mock_fault_action fault;
	bool admin;               /* under /_mock/ */
	bool self;                /* came in on the self-signal listener */
	const struct mock_route *route; /* its row (route.h), once matched; NULL: none */
	/* Offloaded to a worker thread (http.c): the connection is suspended
	 * until the worker has filled *pending. */
	int offload;              /* OFFLOAD_NONE, _RUNNING, _DONE */
	struct mresp *pending;
} mreq;

enum { OFFLOAD_NONE, OFFLOAD_RUNNING, OFFLOAD_DONE };

typedef struct mresp {
	int status;
	char *body;               /* malloc'ed, freed by the response */
	size_t len;
	const char *ctype;
	size_t nh;
	char hname[MRESP_MAX_HEADERS][48];
	char hvalue[MRESP_MAX_HEADERS][300];
	struct MHD_Response *custom; /* a prepared response (streams); replaces body */
	bool close_reset;         /* no answer: reset the connection */
	bool close_plain;         /* no answer: close the connection */
} mresp;

/* After the types: these headers name mreq and mresp themselves. */
#include "util/json_print.h"
#include "http/resp.h"
#include "http/workers.h"

/* Control-plane dispatch (api_routes.c) and admin dispatch (admin.c),
 * both through route.c (which logs durable mutations). */
void api_dispatch(mreq *r, mresp *out);
void admin_dispatch(mreq *r, mresp *out);
/* self.c: POST /self/pause and /self/delete from inside a guest. */
void self_dispatch(mreq *r, mresp *out);

/* chaos.c: the registry of open connections (MHD_OPTION_NOTIFY_CONNECTION)
 * and cp_restart's drop of every one but `keep` (shut down, MHD closes). */
int chaos_init(sbx_mock *mock);
void chaos_free(sbx_mock *mock);
void chaos_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			 enum MHD_ConnectionNotificationCode toe);
size_t chaos_drop_connections(sbx_mock *mock, int keep);

/* record.c: NULL when neither record nor replay is configured (err unset). */
mock_rec *mock_rec_new(const sbx_mock_config *cfg, sbx_err *err);
void mock_rec_free(mock_rec *rc);
/* In record/replay mode answers the control-plane request and returns true. */
bool mock_rec_dispatch(mreq *r, mresp *out);

/* durable.c: --state-dir. start replays the log (no-op without a state
 * dir); persist logs tenant t's changes and fsyncs (call after an
 * acknowledged mutation, before answering); reset logs a reset. */
int mock_durable_start(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err);
int mock_durable_persist(sbx_mock *mock, mock_tenant *t, sbx_err *err);
int mock_durable_reset(sbx_mock *mock, sbx_err *err);


#endif

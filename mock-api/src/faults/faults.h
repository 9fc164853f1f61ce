/* faults: the fault-rule engine of sbx-mock — parsing rules from JSON,
 * matching them against a request summary, deciding whether they fire
 * (always / times / after / probability from a seeded RNG) and drawing
 * latencies.
 *
 * It knows nothing about HTTP or sockets: the HTTP layer describes the
 * request in a mock_fault_req and applies the returned action. Adding an
 * action means a new kind here plus its application in fault_apply.c.
 * Thread-safe: every call takes the engine's own mutex. */
#ifndef SBX_MOCK_FAULTS_H
#define SBX_MOCK_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sbx/err.h"

typedef enum mock_fault_kind {
	FK_HTTP,
	FK_RESET,
	FK_CLOSE,
	FK_HANG,
	FK_EMPTY_200,
	FK_MALFORMED_JSON,
	FK_TRUNCATED,
	FK_GARBAGE,
	FK_DRIBBLE,
	FK_LATENCY,
	FK_COMMIT_THEN_FAIL,
	FK_EXEC_AGENT_ERROR,
	FK_EXEC_OOM,
	FK_EXEC_STREAM_CUT,
	FK_EXEC_HEARTBEATS_ONLY,
	FK_CREATE_FAILED,
	FK_PAUSE_ERROR,
	FK_RESUME_POLLS,
	FK_DESTROY_STUCK,
	FK_HOST_DIES,
	FK_CP_RESTART,
	FK__COUNT,
} mock_fault_kind;

const char *mock_fault_kind_name(mock_fault_kind k);
/* Exec actions only match exec routes; lifecycle ones only their route. */
bool mock_fault_kind_is_exec(mock_fault_kind k);

typedef enum mock_latency_dist { LAT_FIXED, LAT_UNIFORM, LAT_LOGNORMAL } mock_latency_dist;
typedef enum mock_then { THEN_RESET, THEN_CLOSE, THEN_STATUS } mock_then;

#define MOCK_FAULT_MAX_HEADERS 8
#define MOCK_FAULT_MAX_DATA 2048 /* printed `data` of an http action, bytes */
#define MOCK_FAULT_MAX_BODY 4096 /* raw `body` of an http action, bytes */

/* A self-contained copy of an action (fixed buffers), safe to use after the
 * engine lock is released. */
typedef struct mock_fault_action {
	mock_fault_kind kind;
	int status;               /* http, commit_then_fail then.status */
	char envelope[8];         /* "fail" | "error" | "" (by status) */
	char code[64];
	char message[256];
	char field[32];           /* http fail: the data member carrying message ("" = "error") */
	/* http `data`: the envelope's data member as given (object, string or
	 * null), printed; has_data tells `"data": null` from no `data` */
	bool has_data;
	char data_json[MOCK_FAULT_MAX_DATA];
	/* http `body`: sent as is, with content_type, instead of an envelope */
	bool has_body;
	char body[MOCK_FAULT_MAX_BODY];
	char content_type[128];
	int retry_after;          /* seconds, -1 none */
	size_t nheaders;
	char hname[MOCK_FAULT_MAX_HEADERS][48]; /* as an answer's header names (mresp) */
	char hvalue[MOCK_FAULT_MAX_HEADERS][256];
	int64_t max_ms;           /* hang */
	mock_latency_dist dist;
	double ms, min_ms, max_lat_ms, mu, sigma;
	mock_then then;
	unsigned bytes_per_sec;   /* dribble */
	unsigned after_frames;    /* exec_stream_cut */
	unsigned polls;           /* resume_polls */
	char host_id[40];         /* host_dies: "" = every host */
	int64_t not_ready_ms;     /* cp_restart */
} mock_fault_action;

typedef struct mock_fault_req {
	const char *method;
	const char *path;         /* without query */
	const char *tenant;       /* API key, "" when none */
	const char *name;         /* sandbox name when known, else NULL */
	uint64_t request_no;      /* 1-based per tenant */
	bool is_exec;
} mock_fault_req;

typedef struct mock_faults mock_faults;

mock_faults *mock_faults_new(uint64_t seed);
void mock_faults_free(mock_faults *f);
/* Adds one rule object or {rules:[...]}; appends the new ids to `ids`
 * (a cJSON array owned by the caller). All-or-nothing: on error nothing is
 * added and err names the rule index and field. */
int mock_faults_add_json(mock_faults *f, const cJSON *body, cJSON *ids, sbx_err *err);
/* {rules:[rule + {id, matched, fired}]} */
cJSON *mock_faults_list_json(mock_faults *f);
void mock_faults_clear(mock_faults *f);
/* 0, or -1 when no rule has that id. */
int mock_faults_delete(mock_faults *f, unsigned id);
/* Re-seeds the RNG (reset keeps the configured seed). */
void mock_faults_reseed(mock_faults *f, uint64_t seed);
size_t mock_faults_count(mock_faults *f);

/* First matching rule that fires: copies its action and label ("name" or
 * "rule N") and returns true. */
bool mock_faults_eval(mock_faults *f, const mock_fault_req *req, mock_fault_action *out,
		      char *label, size_t label_cap);
/* Draws a latency (ms) for a latency action from the seeded RNG. */
double mock_faults_latency_ms(mock_faults *f, const mock_fault_action *a);
/* Fills buf with pseudo-random bytes from the seeded RNG. */
void mock_faults_random_bytes(mock_faults *f, unsigned char *buf, size_t len);


#endif

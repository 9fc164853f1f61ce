/* request: one HTTP request as the handlers see it (mreq) and the answer a
 * handler fills (mresp), with the helpers that go with them (resp.h,
 * workers.h, json_print.h, included here so that a handler needs this
 * header, ops.h and its own only).
 *
 * A handler reads the parsed request and fills an mresp through resp.h;
 * it never queues an answer on the MHD connection itself (the server's
 * http.c does). */
#ifndef SBX_MOCK_REQUEST_H
#define SBX_MOCK_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "faults/faults.h"
#include "ops/core.h"
#include "sbx/strbuf.h"

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
	bool answered;            /* its answer was handed to MHD (pipeline.c) */
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

#endif

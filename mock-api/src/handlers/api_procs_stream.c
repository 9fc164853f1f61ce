/* api_procs_stream: GET /v1/sandboxes/{id}/processes/{pid}/connect?after=N
 * — a managed process's numbered events as NDJSON (application/x-ndjson,
 * chunked): {"type":"data","seq":N,"stream":"stdout|stderr|pty",
 * "data_base64":"…"}, a heartbeat {"type":"heartbeat"} while silent (the
 * exec stream's interval), {"type":"exit","seq":N,"exit_code":…,
 * "signal":…} last. Events numbered up to N are skipped, so a client that
 * lost its connection resumes where it was; a gap (output the ring
 * dropped) is announced by a first heartbeat carrying
 * oldest_available_seq. The client leaving only ends this stream: the
 * process runs on (its reader thread never depends on a client).
 *
 * The operation's stream (mock_op_process_connect, ops_procs.c) holds the
 * sandbox busy; api_stream_answer reads it on a worker thread, as it does
 * exec's. */
#define _GNU_SOURCE
#include "handlers/api.h"

#include <stdlib.h>
#include <string.h>

void api_procs_connect(mreq *r, mresp *out, mock_tenant *t)
{
	char id[64], pid[MOCK_PROCESS_ID_MAX + 1];
	uint64_t after = 0;
	mock_op op;
	mock_op_stream *s;

	if (!api_procs_id(r, out, pid, sizeof(pid)) ||
	    !api_query_u(r, out, "after", 0, UINT64_MAX, 0, &after))
		return;
	api_op_init(&op, r, t, id, sizeof(id));
	s = mock_op_process_connect(&op, pid, after);
	if (s == NULL) {
		api_op_answer(r, out, &op, 200, NULL);
		return;
	}
	api_op_found(r, &op);
	if (strcmp(r->method, "HEAD") == 0) {
		/* the stream's status and type, no body: a chunked answer to HEAD
		 * would still carry its terminating chunk */
		mock_op_stream_end(s);
		resp_raw(out, 200, "application/x-ndjson", strdup(""), 0);
		return;
	}
	api_stream_answer(r, out, s);
}

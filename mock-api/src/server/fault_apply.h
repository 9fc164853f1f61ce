/* fault_apply: the fault actions in one place. The engine (faults.c) picks
 * the rule that fires and fills r->fault; this file applies that action to
 * the request: before the handler runs (latency, answers that replace the
 * handler's, host_dies and cp_restart), after it (commit_then_fail,
 * dribble) and at the socket (a reset instead of an answer).
 *
 * Never decides whether a fault fires, and never applies one to admin or
 * self-signal requests (http.c does not evaluate rules for them). */
#ifndef SBX_MOCK_FAULT_APPLY_H
#define SBX_MOCK_FAULT_APPLY_H

#include <stdbool.h>

typedef struct mreq mreq;   /* server.h */
typedef struct mresp mresp; /* server.h */
struct MHD_Connection;

/* A fired latency fault: sleeps (stop-aware) before the handler runs. */
void fault_apply_latency(mreq *r);
/* A fired fault that answers instead of the handler (HTTP status, reset,
 * close, hang, empty, malformed, truncated, garbage, cp_restart), or
 * host_dies' side effect; true when out is the answer. */
bool fault_apply_replace(mreq *r, mresp *out);
/* A fired fault that rewrites the handler's answer (commit_then_fail,
 * dribble). */
void fault_apply_after(mreq *r, mresp *out);
/* Makes the coming close of conn a TCP reset (mresp.close_reset). */
void fault_apply_reset_conn(struct MHD_Connection *conn);

#endif

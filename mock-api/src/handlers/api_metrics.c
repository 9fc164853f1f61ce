/* api_metrics: the read-only metrics routes — GET /v1/sandboxes/{id}/metrics,
 * GET /v1/metrics and GET /v1/metrics/timeseries (spec "Metrics"; the shapes
 * are the mock's own, README "Metrics").
 *
 * Never take the model lock or write a sandbox's fields here (ops.h). */
#include "handlers/api.h"

#include <stdio.h>

#define TS_POINTS_MAX 1440

void api_sandbox_metrics(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char id[64];

	api_op_init(&op, r, t, id, sizeof(id));
	api_op_answer(r, out, &op, 200, mock_op_sandbox_metrics(&op));
}

void api_user_metrics(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char seg[64];

	api_op_init(&op, r, t, seg, sizeof(seg)); /* no sandbox: op.id is unused */
	api_op_answer(r, out, &op, 200, mock_op_user_metrics(&op));
}

void api_user_timeseries(mreq *r, mresp *out, mock_tenant *t)
{
	uint64_t window, step;
	mock_op op;
	char msg[128], seg[64];

	if (!api_query_u(r, out, "window_seconds", 1, 30 * 86400, 3600, &window) ||
	    !api_query_u(r, out, "step_seconds", 1, 86400, 60, &step))
		return;
	if (step > window || window / step > TS_POINTS_MAX) {
		snprintf(msg, sizeof(msg),
			 "window_seconds / step_seconds must be 1-%d points (got %llu / %llu)", TS_POINTS_MAX,
			 (unsigned long long)window, (unsigned long long)step);
		resp_fail(out, 400, "step_seconds", "INVALID_REQUEST", msg);
		return;
	}
	api_op_init(&op, r, t, seg, sizeof(seg));
	api_op_answer(r, out, &op, 200, mock_op_user_timeseries(&op, (int64_t)window, (int64_t)step));
}

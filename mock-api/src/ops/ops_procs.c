/* ops_procs: the operations under /v1/sandboxes/{id}/processes — finding
 * the caller's sandbox (404 for another tenant's) and marking it busy
 * around the guest's managed-process call (guest_procs.h), as exec does.
 * Starting one goes through mock_op_exec_begin (env rules of exec). */
#define _GNU_SOURCE
#include "ops/ops.h"
#include "ops/ops_internal.h"

#include "ops/core.h" /* struct sbx_mock */

mock_guest *mock_op_procs_begin(mock_op *op, bool running)
{
	mock_model *m = op->mock->model;
	mock_sandbox *sb = NULL;
	mock_guest *g = NULL;

	sb = ops_begin(op, true);
	if (sb == NULL) {
		/* 404 set */
	} else if (sb->guest == NULL || mock_guest_dead(sb->guest) ||
		   (running && sb->status != ST_RUNNING)) {
		mock_err_set(&op->err, 409, "NOT_RUNNING", "status", "sandbox is not running");
	} else {
		g = sb->guest;
		sb->busy++;
		if (running)
			mock_sandbox_touch(m, sb);
		op->sb = sb;
	}
	pthread_mutex_unlock(&m->lock);
	return g;
}

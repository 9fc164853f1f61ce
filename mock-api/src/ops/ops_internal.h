/* ops_internal: what the operations' files (ops*.c) share — the clock
 * tick and the prologue of an operation on one sandbox. Outside ops/
 * include ops.h instead. */
#ifndef SBX_MOCK_OPS_INTERNAL_H
#define SBX_MOCK_OPS_INTERNAL_H

#include <stdbool.h>

#include "ops/core.h"
#include "ops/ops.h"

/* Runs the virtual clock (mock_tick with the guest hook). Lock held. */
void ops_tick(sbx_mock *mock);
/* The sandbox op names (any tenant's when op->t is NULL) with op->found
 * set, or NULL with a 404 in op->err. Lock held. */
mock_sandbox *ops_find(mock_op *op);
/* The prologue of an operation on one sandbox: takes the model lock, runs
 * the clock when tick, and finds the sandbox (ops_find). The lock is held
 * on return in both cases; the caller unlocks. */
mock_sandbox *ops_begin(mock_op *op, bool tick);

#endif

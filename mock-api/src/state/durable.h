/* durable: --state-dir. The log of acknowledged mutations (mutation_log.h)
 * replayed at start into the model, the sandboxes' guests restarted
 * through the operations, and every acknowledged mutation appended and
 * fsync'd before its answer (route.c, admin.c).
 *
 * Must never write a sandbox's status itself: the model decides it. */
#ifndef SBX_MOCK_DURABLE_H
#define SBX_MOCK_DURABLE_H

#include "ops/core.h"

/* start replays the log (no-op without a state dir); persist logs tenant
 * t's changes and fsyncs (call after an acknowledged mutation, before
 * answering); reset logs a reset. */
int mock_durable_start(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err);
int mock_durable_persist(sbx_mock *mock, mock_tenant *t, sbx_err *err);
int mock_durable_reset(sbx_mock *mock, sbx_err *err);

#endif

/* server: the server's own calls — the registry of open connections
 * (chaos.c) — and, for the server's files and the tests and fuzzers that
 * drive a whole mock, every internal header of the request side at once:
 * the core (ops/core.h: struct sbx_mock), the request types
 * (http/request.h), the handlers' dispatchers (handlers/dispatch.h),
 * record/replay (handlers/record.h) and durable state (state/durable.h).
 *
 * Nothing outside server/ includes it (ci/layers.py): the layers below
 * see struct sbx_mock through ops/core.h, never the server's own calls. */
#ifndef SBX_MOCK_SERVER_H
#define SBX_MOCK_SERVER_H

#include <stddef.h>

#include <microhttpd.h>

#include "handlers/dispatch.h"
#include "handlers/record.h"
#include "http/request.h"
#include "ops/core.h"
#include "state/durable.h"
#include "state/mutation_log.h"

/* chaos.c: the registry of open connections (MHD_OPTION_NOTIFY_CONNECTION)
 * and cp_restart's drop of every one but `keep` (shut down, MHD closes). */
int chaos_init(sbx_mock *mock);
void chaos_free(sbx_mock *mock);
void chaos_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			 enum MHD_ConnectionNotificationCode toe);
size_t chaos_drop_connections(sbx_mock *mock, int keep);

#endif

/* dispatch: the handlers' entry points that the server's request pipeline
 * (server/pipeline.c) calls: the control-plane API (api_routes.c), admin
 * (admin.c) and self-signal (self.c) dispatchers, each through route.c
 * (which logs durable mutations). */
#ifndef SBX_MOCK_DISPATCH_H
#define SBX_MOCK_DISPATCH_H

#include "http/request.h"

void api_dispatch(mreq *r, mresp *out);
void admin_dispatch(mreq *r, mresp *out);
/* self.c: POST /self/pause and /self/delete from inside a guest. */
void self_dispatch(mreq *r, mresp *out);

#endif

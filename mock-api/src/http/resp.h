/* resp: what a handler needs to read a request and shape its answer —
 * JSend envelopes, headers, query and path segments, whether the client is
 * still there (the monotonic clock is lib's sbx_mono_us, sbx/sys.h; the
 * stop-aware sleep is mock_sleep_ms, ops/core.h).
 *
 * Handlers (api_*.c, admin.c, self.c, record.c) fill an mresp through these
 * helpers and never call MHD to answer; queueing the answer is http.c's
 * job. Nothing here blocks. */
#ifndef SBX_MOCK_RESP_H
#define SBX_MOCK_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "model/model.h"
#include "sbx/mock.h"
#include "sbx/sys.h" /* sbx_mono_us: durations and deadlines */

/* Defined in server.h; repeated typedefs are valid C11. */
typedef struct mreq mreq;
typedef struct mresp mresp;
struct MHD_Connection;

/* Response helpers (take ownership of `data` and `body`). */
void resp_success(mresp *out, int status, cJSON *data);
void resp_fail(mresp *out, int status, const char *field, const char *code, const char *msg);
void resp_error(mresp *out, int status, const char *msg);
void resp_mock_err(mresp *out, const mock_err *e);
void resp_header(mresp *out, const char *name, const char *value);
void resp_raw(mresp *out, int status, const char *ctype, char *body, size_t len);
/* Frees what out owns (body, prepared response); out can be reused. */
void mresp_release(mresp *out);

/* Query parameter or NULL. */
const char *req_query(const mreq *r, const char *key);
/* True when the query parameter's decoded value holds a NUL byte (%00):
 * req_query's C string then stops short of what the client sent. */
bool req_query_has_nul(const mreq *r, const char *key);
/* Path segment i (0-based, after the leading slash) into buf; false if absent. */
bool req_seg(const mreq *r, int i, char *buf, size_t cap);
/* True when the client has closed its side or the mock is stopping. */
bool req_client_gone(const mreq *r);
/* The connection's socket (-1 if unknown), and whether its peer has closed
 * it (no data is consumed). */
int req_conn_fd(const mreq *r);
int mock_conn_fd(struct MHD_Connection *conn);
bool mock_fd_gone(int fd);


#endif

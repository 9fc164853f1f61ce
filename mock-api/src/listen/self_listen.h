/* listen: the guests' self-signal endpoint's per-sandbox listeners and their
 * acceptor — where a request on the self-signal daemon comes from.
 *
 * In contained mode (every guest mode but plain) each sandbox has its own
 * listening socket, made by its cell inside the sandbox's network
 * namespace on 127.0.0.1:<mock_self_guest_port>; the mock accepts on it
 * (self_listen.c: one acceptor thread) and hands each connection to the
 * self-signal daemon, which has no listening socket of its own. A
 * request's sandbox is the one whose listener accepted the connection:
 * nothing the request says names a sandbox. In plain mode the daemon keeps
 * its host listener and self.c finds the caller by process group.
 *
 * Must never trust anything the peer sends for identity, and never shut
 * down a socket MHD has already closed. */
#ifndef SBX_MOCK_SELF_LISTEN_H
#define SBX_MOCK_SELF_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "sbx/mock.h"

/* The port a cell binds its listener to inside the sandbox (127.0.0.1),
 * or 0 when the mock has no self-signal endpoint or runs in plain mode
 * (then make no listener). */
uint16_t mock_self_guest_port(const sbx_mock *mock);

/* Registers fd, a listening TCP socket, as sandbox_id's self-signal
 * listener; takes ownership of fd in every case (closed on failure).
 * Several listeners per sandbox are allowed. 0, or -1 with errno set:
 * EINVAL (not a listening socket, bad id), ENOTSUP (no per-sandbox
 * listeners: plain mode or no endpoint), ESHUTDOWN (the mock is stopping),
 * ENOMEM. Thread-safe. */
int mock_self_listen_add(sbx_mock *mock, int fd, const char *sandbox_id);
/* Closes every listener of sandbox_id and drops the connections accepted
 * on them: a request still in flight on one finds no caller. No-op when
 * there is none. Thread-safe. */
void mock_self_listen_remove(sbx_mock *mock, const char *sandbox_id);

/* ---- for server.c and self.c ---- */

/* The contained self-signal daemon's MHD_OPTION_CONNECTION_LIMIT. */
#define SBX_SELF_CONN_LIMIT 1024

/* Makes the registry and starts the acceptor thread (contained mode, after
 * the self-signal daemon started). 0 or -1 with err set. */
int mock_self_listen_start(sbx_mock *mock, sbx_err *err);
/* Joins the acceptor and closes every listener; call before the daemon
 * stops. Idempotent. */
void mock_self_listen_stop(sbx_mock *mock);
/* Frees the registry; call after the self-signal daemon stopped. */
void mock_self_listen_free(sbx_mock *mock);
/* MHD_OPTION_NOTIFY_CONNECTION of the self-signal daemon (cls: the mock):
 * marks a connection attached, and forgets it when it closes. */
void mock_self_listen_on_connection(void *cls, struct MHD_Connection *conn,
				    void **socket_context, enum MHD_ConnectionNotificationCode toe);
/* The sandbox whose listener accepted conn, into id; false when conn was
 * not accepted on a registered listener or its listener was removed. */
bool mock_self_listen_caller(sbx_mock *mock, struct MHD_Connection *conn, char *id, size_t cap);

#endif

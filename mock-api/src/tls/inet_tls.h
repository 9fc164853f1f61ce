/* inet_tls: the simulated internet's TLS (mock-api/INTERNET.md, "TLS") —
 * the mock's certificate authority, the leaf certificates it issues per
 * server name, and the server side of one connection. OpenSSL 3.
 *
 * The CA's private key stays in this process: only its certificate
 * (mock_inet_tls_ca_pem) is handed to guests, whose trust store gets it.
 * Leaves share one key made at start and are cached per name (at most
 * MOCK_INET_TLS_CACHE names; the oldest goes first). Thread-safe. */
#ifndef SBX_MOCK_INET_TLS_H
#define SBX_MOCK_INET_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "sbx/err.h"

#define MOCK_INET_TLS_CACHE 1024
/* An SNI longer than a DNS name can be is refused (alert). */
#define MOCK_INET_TLS_NAME_MAX 253

typedef struct mock_inet_tls mock_inet_tls;

/* The CA: ca_spec "CERT,KEY" (two PEM files: a CA certificate, unexpired,
 * and its private key); else, with keep_dir, DIR/internet-ca.crt and
 * DIR/internet-ca.key when both exist, made and written there (the key
 * 0600) when neither does; else made in memory. NULL + err saying which
 * file and what is wrong with it. */
mock_inet_tls *mock_inet_tls_new(const char *ca_spec, const char *keep_dir, sbx_err *err);
void mock_inet_tls_free(mock_inet_tls *t);
/* The CA certificate, PEM (what a guest's trust store gets). */
const char *mock_inet_tls_ca_pem(const mock_inet_tls *t);
/* Leaves issued so far that are still cached (for tests of the bound). */
size_t mock_inet_tls_cached(mock_inet_tls *t);
/* Issues (or finds) the leaf for name (lower-case) as a handshake naming
 * it would, without one: 0, or -1 (a bad name, or making it failed). For
 * tests of the cache bound, which need a thousand leaves, not handshakes. */
int mock_inet_tls_leaf(mock_inet_tls *t, const char *name);

/* Tests only: fn(arg, name) runs on the handshake's thread just before a
 * new name's leaf is signed, with no lock held (so a test can hold a
 * signer there and see other handshakes go on). NULL: none. Set before
 * any handshake. */
typedef void (*mock_inet_tls_sign_fn)(void *arg, const char *name);
void mock_inet_tls_set_sign_hook(mock_inet_tls *t, mock_inet_tls_sign_fn fn, void *arg);

/* Whether name is one a leaf is made for: 1-253 bytes of letters, digits,
 * '.', '-', '_' (an IP address's text passes too). */
int mock_inet_tls_name_ok(const char *name);

/* One connection's server side, over a non-blocking socket. */
typedef struct mock_inet_tls_conn mock_inet_tls_conn;
/* Why a handshake did not complete, for the journal. */
typedef struct mock_inet_tls_fail {
	char name[MOCK_INET_TLS_NAME_MAX + 1]; /* the SNI when it was a name, else the fallback */
	char why[256]; /* "the client rejected the certificate: it sent the alert unknown_ca (48)...",
			* "timed out: ...", "the client closed the connection mid-handshake ...",
			* "not a TLS handshake the internet could read: ..." */
} mock_inet_tls_fail;
/* Blocks SIGPIPE in the calling thread (a connection's own), then
 * handshakes on fd until end_ms (sbx_mono_ms) or stopfd is readable;
 * fallback: the name of the leaf when the client sends no SNI (the
 * address it dialled). NULL when it did not complete (garbage, a refused
 * name, an alert from the client, a client that gave up, the deadline):
 * why in *fail (NULL: not wanted); the caller closes fd. */
mock_inet_tls_conn *mock_inet_tls_accept(mock_inet_tls *t, int fd, const char *fallback, int64_t end_ms,
					 int stopfd, mock_inet_tls_fail *fail);
/* Up to cap plaintext bytes: > 0, or 0 at the end (EOF, error, deadline,
 * stop). */
size_t mock_inet_tls_read(mock_inet_tls_conn *c, char *buf, size_t cap, int64_t end_ms, int stopfd);
/* Without waiting (a caller that polls both ways, as the ingress's
 * relay): > 0 bytes, 0 at the end (EOF, error), -2 nothing yet (a record
 * not whole: poll the fd again). */
long mock_inet_tls_try_read(mock_inet_tls_conn *c, char *buf, size_t cap);
/* Whether decrypted bytes wait in c (poll on the fd cannot see them). */
int mock_inet_tls_pending(const mock_inet_tls_conn *c);
/* All of buf; 0, or -1. */
int mock_inet_tls_write(mock_inet_tls_conn *c, const char *buf, size_t len, int64_t end_ms, int stopfd);
/* The name its leaf was made for (the SNI, lower case, or the fallback). */
const char *mock_inet_tls_name(const mock_inet_tls_conn *c);
/* Sends close_notify (no wait for the peer's) and frees; fd stays open. */
void mock_inet_tls_close(mock_inet_tls_conn *c);
/* The server name (SNI) a TLS ClientHello on fd asks for, lower case,
 * read with MSG_PEEK (nothing consumed): into out, "" when it names none,
 * names one with a NUL in it, is not a ClientHello, or the whole first
 * record did not come by end_ms or stopfd became readable. Not checked
 * otherwise: the caller checks it (mock_inet_tls_name_ok) before use. */
void mock_inet_tls_peek_sni(int fd, int64_t end_ms, int stopfd, char *out, size_t cap);
/* Frees without close_notify (a cut connection: a fault's reset); NULL is
 * fine; fd stays open. */
void mock_inet_tls_drop(mock_inet_tls_conn *c);

#endif

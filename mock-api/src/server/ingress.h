/* ingress: the sandboxes' preview URLs (issue 25, item 3). A sandbox with
 * ingress_enabled carries ingress_url_template
 * "https://127.0.0.1:<ingress port>/<sandbox id>/<port>" (http with
 * --ingress-scheme http; the port takes both) and a GET of it
 * reaches the guest's server on 127.0.0.1:<port> inside the sandbox's own
 * network namespace, through a socket its cell made there (cell_proto.h,
 * SOCKET): the mock never enters a guest's namespace.
 *
 * One HTTP request per connection: the request line's path loses its
 * "/<id>/<port>" prefix, the request goes out with "Connection: close" and
 * the answer comes back with it, so a client's keep-alive pool can never
 * carry a request for one sandbox on a connection into another. An Upgrade
 * (WebSocket) answered 101 becomes a tunnel to that same sandbox.
 *
 * Never listens beyond loopback, never connects anywhere but the URL's own
 * sandbox, and serves nothing for a sandbox whose ingress is off, that is
 * not running, or that is gone. */
#ifndef SBX_MOCK_INGRESS_H
#define SBX_MOCK_INGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx/err.h"
#include "sbx/strbuf.h"

typedef struct sbx_mock sbx_mock;
typedef struct mock_ingress mock_ingress;
struct mock_inet_tls;

/* The request head in head (head_len bytes, ending in its empty line;
 * changed in place) as the guest gets it, appended to out, with the
 * sandbox id and port its path names; false with the proxy's answer
 * (*status 400/411, *msg). What the proxy does to every request; exposed
 * for the fuzz target mock_ingress. */
bool mock_ingress_rewrite_head(char *head, size_t head_len, sbx_strbuf *out, char *id, size_t idcap,
			       unsigned *port, int *status, const char **msg);

/* Parses "HOST:PORT" (an IPv4 loopback address, port 0 = ephemeral).
 * 0, or -1 with err saying what is wrong. */
int mock_ingress_parse_listen(const char *arg, uint32_t *addr, uint16_t *port, sbx_err *err);

/* Listens on addr:port and serves until stopped. tls (borrowed, outlives
 * the ingress): the mock's CA, whose leaves answer a client that opens
 * with a TLS ClientHello on the same port (a first byte 0x16; any other is
 * plain HTTP); NULL: plain only. https: the base (and so every preview and
 * noVNC URL) says https (needs tls). NULL + err on failure. */
mock_ingress *mock_ingress_start(sbx_mock *mock, uint32_t addr, uint16_t port, struct mock_inet_tls *tls,
				 bool https, sbx_err *err);
/* "https://127.0.0.1:PORT" or "http://..." (no trailing slash). */
const char *mock_ingress_base(const mock_ingress *in);
/* Cuts every open ingress connection into sandbox id (ingress turned off,
 * paused, destroyed). NULL in is fine. */
void mock_ingress_cut(mock_ingress *in, const char *id);
/* Stops accepting, cuts every connection, waits for their threads, frees.
 * NULL is fine. */
void mock_ingress_stop(mock_ingress *in);

#endif

/* inet_http: reading the request heads a guest sends the simulated
 * internet (internet_serve.c): where a head ends, its method, path and
 * host, a header's value, and whether the connection may carry another
 * request after its answer. Pure functions of the bytes: no I/O, no
 * state, fuzzed by fuzz/mock_inet_fuzzer.c. */
#ifndef SBX_MOCK_INET_HTTP_H
#define SBX_MOCK_INET_HTTP_H

#include <stdbool.h>
#include <stddef.h>

/* A request body past this ends the connection after the answer. */
#define MOCK_INET_KEEP_BODY_MAX 65536

/* The request as read: method, path (no query), host (lower case, no
 * port: the Host header's, else the fallback: the TLS name or the address
 * dialled). A head that does not parse leaves method "". */
typedef struct mock_inet_parsed {
	char method[32];
	char path[2048];
	char host[256];
} mock_inet_parsed;

/* Where the head in buf (NUL-terminated) ends, past its first empty line
 * (a line end followed by "\r\n" or "\n": RFC 9112 section 2.2 lets a
 * recipient take a bare LF as a line's end); 0 when it has none yet. The
 * header lines mock_inet_head_header and mock_inet_keep_alive read end
 * at the same line. */
size_t mock_inet_head_end(const char *buf);

void mock_inet_parse_request(const char *head, const char *fallback_host, mock_inet_parsed *p);

/* The value of header name in a request head (its first line skipped,
 * names compared without case), into out; false when absent. */
bool mock_inet_head_header(const char *head, const char *name, char *out, size_t cap);

/* Whether the connection may carry another request after this one's
 * answer (RFC 9112 section 9.3): HTTP/1.1 unless "Connection: close",
 * HTTP/1.0 only with "keep-alive"; and only when the request's body is
 * framed so that its end is known: none, or one Content-Length of at most
 * MOCK_INET_KEEP_BODY_MAX (*body: its length, read and dropped after the
 * answer; 0 when not kept). Chunked bodies, Expect (the client may never
 * send the body after an early answer) and Upgrade end the connection. */
bool mock_inet_keep_alive(const char *head, const mock_inet_parsed *p, long long *body);

#endif

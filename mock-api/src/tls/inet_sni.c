/* inet_sni: the server name (SNI) of a TLS ClientHello, read without
 * consuming a byte and without starting a handshake (inet_tls.h,
 * mock_inet_tls_peek_sni): the upstream decides on it before the flow is
 * passed through as it is, so OpenSSL (which parses a ClientHello only
 * inside a handshake) cannot read it. Every byte is the guest's: each
 * length is checked against the record before it is followed, and the
 * name is the caller's to check (mock_inet_tls_name_ok). */
#define _GNU_SOURCE
#include "tls/inet_tls.h"
#include "sbx/sys.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

/* Peeks at fd (MSG_PEEK: nothing consumed) until the whole first TLS
 * record is there: its length, or 0 when it will not be (EOF, an error,
 * a record longer than cap, end_ms, stop). Event-driven: SO_RCVLOWAT
 * makes poll wait for the bytes still missing, not wake per segment. */
static size_t peek_record(int fd, unsigned char *buf, size_t cap, int64_t end, int stopfd)
{
	size_t want = 5, got = 0;
	int lowat = 1;

	for (;;) {
		struct pollfd pf[2] = {{.fd = fd, .events = POLLIN | POLLRDHUP}, {.fd = stopfd, .events = POLLIN}};
		ssize_t n = recv(fd, buf, cap, MSG_PEEK | MSG_DONTWAIT);
		int64_t left = end - sbx_mono_ms();

		if (n < 0 && errno != EAGAIN && errno != EINTR)
			break;
		got = n > 0 ? (size_t)n : 0;
		if (got >= 5)
			want = 5 + (size_t)((buf[3] << 8) | buf[4]);
		if (want > cap || got >= want || n == 0 || left <= 0)
			break;
		/* wake when the rest of the record is in (or the peer ends) */
		if ((int)want != lowat && setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &(int){(int)want}, sizeof(int)) == 0)
			lowat = (int)want;
		if (poll(pf, 2, (int)left) < 0 && errno != EINTR)
			break;
		if (pf[1].revents != 0 || (pf[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
			/* what came is all that will: one last look */
			n = recv(fd, buf, cap, MSG_PEEK | MSG_DONTWAIT);
			got = n > 0 ? (size_t)n : 0;
			break;
		}
	}
	if (lowat != 1)
		setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &(int){1}, sizeof(int));
	return got >= want && want <= cap ? want : 0;
}

/* Parsed by hand (OpenSSL parses a ClientHello only inside a handshake,
 * which a flow passed through must never start). */
void mock_inet_tls_peek_sni(int fd, int64_t end, int stopfd, char *out, size_t cap)
{
	unsigned char buf[5 + 16384]; /* one TLS record */
	size_t want;

	out[0] = '\0';
	want = peek_record(fd, buf, sizeof(buf), end, stopfd);
	if (want == 0)
		return;
	const unsigned char *q = buf + 5, *e = buf + want;
	size_t l;

#define NEED(k) \
	if ((size_t)(e - q) < (size_t)(k)) \
		return
	NEED(4 + 2 + 32 + 1);
	if (q[0] != 1) /* ClientHello */
		return;
	q += 4 + 2 + 32;
	l = q[0];
	q += 1;
	NEED(l + 2);
	q += l;
	l = (size_t)(q[0] << 8 | q[1]);
	q += 2;
	NEED(l + 1);
	q += l;
	l = q[0];
	q += 1;
	NEED(l + 2);
	q += l;
	q += 2; /* the extensions' length: each is bounded by e anyway */
	while ((size_t)(e - q) >= 4) {
		unsigned type = (unsigned)(q[0] << 8 | q[1]);

		l = (size_t)(q[2] << 8 | q[3]);
		q += 4;
		NEED(l);
		if (type == 0 && l >= 5 && q[2] == 0) { /* server_name, host_name */
			size_t nl = (size_t)(q[3] << 8 | q[4]);

			/* a NUL inside would cut the name short of what the
			 * client asked for: such a name is none */
			if (nl + 5 <= l && nl < cap && memchr(q + 5, 0, nl) == NULL) {
				for (size_t i = 0; i < nl; i++)
					out[i] = (char)tolower(q[5 + i]);
				out[nl] = '\0';
			}
			return;
		}
		q += l;
	}
#undef NEED
}

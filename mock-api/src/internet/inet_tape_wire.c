/* inet_tape_wire: the small pieces of HTTP/1.1 both halves of the tape
 * write or read (inet_tape.c's replay, inet_tape_record.c's recorder):
 * a whole short answer, the framing words. In a file of their own so the
 * replay may call the recorder without the recorder calling back. */
#define _GNU_SOURCE
#include "internet/inet_tape_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void mock_tape_send_text(mock_inet_io *io, int status, const char *reason, const char *text)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: %s\r\n\r\n",
			 status, reason, strlen(text), io->keep ? "keep-alive" : "close");

	io->status = status;
	if (io->send(io->arg, head, (size_t)n) != 0 || io->send(io->arg, text, strlen(text)) != 0)
		io->keep = false;
}

bool mock_tape_is_chunked(const mock_cassette_hdr *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcasecmp(h[i].name, "Transfer-Encoding") == 0 && strcasestr(h[i].value, "chunked") != NULL)
			return true;
	}
	return false;
}

bool mock_tape_has_body(const char *method, int status)
{
	return strcmp(method, "HEAD") != 0 && status >= 200 && status != 204 && status != 304;
}

int mock_tape_send_head(mock_inet_io *io, int status, const char *reason, const mock_cassette_hdr *h, size_t n,
			bool chunked, bool body, long long length)
{
	char *buf = NULL;
	size_t len = 0;
	bool has_cl = false;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	if (f == NULL)
		return -1;
	fprintf(f, "HTTP/1.1 %d %s\r\n", status, reason);
	for (size_t i = 0; i < n; i++) {
		if (mock_cassette_hop(h, n, i))
			continue;
		has_cl = has_cl || strcasecmp(h[i].name, "Content-Length") == 0;
		fprintf(f, "%s: %s\r\n", h[i].name, h[i].value);
	}
	if (chunked && body)
		fputs("Transfer-Encoding: chunked\r\n", f);
	else if (!has_cl && body && length >= 0)
		fprintf(f, "Content-Length: %lld\r\n", length);
	else if (!has_cl && body)
		io->keep = false; /* the body ends with the connection: so does the guest's */
	fprintf(f, "Connection: %s\r\n\r\n", io->keep ? "keep-alive" : "close");
	fclose(f);
	rc = buf != NULL ? io->send(io->arg, buf, len) : -1;
	free(buf);
	return rc;
}

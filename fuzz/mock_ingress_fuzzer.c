/* Fuzz target: the ingress proxy's request rewrite
 * (mock-api/src/server/ingress.h, mock_ingress_rewrite_head) — the head a
 * host client sends to a preview URL, untrusted bytes, as the guest gets it.
 *
 * The input is a request head (an empty line is appended when it has
 * none; a NUL byte makes it not HTTP, as the proxy's reader says).
 *
 * Properties, each abort()s when broken:
 * - refused: 400 or 411 with a message;
 * - accepted: the sandbox id is 1-39 bytes without '/', the port 1-65535;
 *   the rewritten head starts "<method> /", ends with its one and only
 *   empty line (nothing smuggled after it), and carries
 *   "X-Forwarded-Prefix: /<id>/<port>" naming the same sandbox. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mock-api/src/server/ingress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "mock_ingress property broken: %s\n", what);
		abort();
	}
}

static void check_accepted(const sbx_strbuf *out, const char *id, unsigned port)
{
	char prefix[96];
	const char *blank = memmem(out->data, out->len, "\r\n\r\n", 4);
	const char *sp = memchr(out->data, ' ', out->len);

	check(id[0] != '\0' && strlen(id) < 40 && strchr(id, '/') == NULL, "id 1-39 bytes, no '/'");
	check(port >= 1 && port <= 65535, "port 1-65535");
	check(sp != NULL && sp + 1 < out->data + out->len && sp[1] == '/', "request line \"<method> /...\"");
	check(blank != NULL && blank + 4 == out->data + out->len, "one empty line, at the end");
	snprintf(prefix, sizeof(prefix), "X-Forwarded-Prefix: /%s/%u\r\n", id, port);
	check(memmem(out->data, out->len, prefix, strlen(prefix)) != NULL, "the prefix names the same sandbox");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *end = memmem(data, size, "\r\n\r\n", 4);
	size_t head_len = end != NULL ? (size_t)(end - data) + 4 : size + 4;
	char *head = malloc(head_len + 1), id[64] = "";
	sbx_strbuf out = SBX_STRBUF_INIT;
	const char *msg = NULL;
	unsigned port = 0;
	int status = 0;

	if (head == NULL || memchr(data, '\0', end != NULL ? head_len : size) != NULL) {
		free(head);
		return 0;
	}
	memcpy(head, data, end != NULL ? head_len : size);
	if (end == NULL)
		memcpy(head + size, "\r\n\r\n", 4);
	head[head_len] = '\0';
	if (mock_ingress_rewrite_head(head, head_len, &out, id, sizeof(id), &port, &status, &msg))
		check_accepted(&out, id, port);
	else
		check((status == 400 || status == 411) && msg != NULL && msg[0] != '\0', "refused: 400/411 with a message");
	sbx_strbuf_free(&out);
	free(head);
	return 0;
}

/* Fuzz target: the simulated internet's parsers of outside input
 * (mock-api/src/internet/inet_rules.h) — the resolver's answer to a DNS
 * query a guest sends (untrusted bytes off the wire), and the hosts file.
 *
 * The first input byte picks the part: 3 modulo 4, the rest is what a
 * guest sends on one connection to the internet's HTTP listener, read as
 * the listener reads it (inet_http.h: where each head ends, the request,
 * whether the connection carries the next one); else even, the rest is
 * one DNS query answered from a fixed hosts table; odd, the rest is a
 * hosts file, and when it parses, its names are compiled into a
 * documented-mode chain.
 *
 * Properties, each abort()s when broken:
 * - an answer fits its buffer, echoes the query's id and question, is a
 *   response (QR) with one question, NOERROR or NXDOMAIN (no answers then),
 *   and its answer records are exactly the A/AAAA records it counts, each
 *   pointing at the question's name, with the table's addresses;
 * - an unknown name gets NXDOMAIN; a known one NOERROR;
 * - a hosts file that parses has 1-16 addresses per name, no name twice,
 *   and every name resolves to itself; the compiled chain is well formed
 *   (flush first, drop last, braces balanced);
 * - a head ends at its first empty line; a request's method has no blank,
 *   its path no blank, query or fragment, its host no capital letter; a
 *   connection is kept only after an HTTP/1.1 or 1.0 request without
 *   Transfer-Encoding, Expect, Upgrade or "Connection: close", with one
 *   Content-Length at most, of at most MOCK_INET_KEEP_BODY_MAX bytes: so
 *   a body is never read as a request whose end is unknown. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../mock-api/src/internet/inet_http.h"
#include "../mock-api/src/internet/inet_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "mock_inet property broken: %s\n", what);
		abort();
	}
}

static const char hosts_json[] = "{\"version\":1,\"hosts\":{\"pypi.org\":[\"151.101.0.223\",\"2001:db8::1\"],"
				 "\"a.b\":[\"192.0.2.1\",\"192.0.2.2\"]}}";

/* The question's name as the resolver reads it, independently: labels of
 * 1-63 bytes, joined by dots; 0 when malformed. */
static size_t ref_name(const uint8_t *q, size_t n, char *name, size_t cap)
{
	size_t off = 12, out = 0;

	while (off < n && q[off] != 0) {
		size_t len = q[off];

		if (len > 63 || off + 1 + len >= n || out + len + 2 > cap)
			return 0;
		if (out > 0)
			name[out++] = '.';
		memcpy(name + out, q + off + 1, len);
		out += len;
		off += len + 1;
	}
	if (off >= n)
		return 0;
	name[out] = '\0';
	return off + 1;
}

static void dns(const uint8_t *q, size_t n)
{
	static mock_hosts hosts;
	static bool loaded;
	uint8_t r[512];
	char name[256];
	size_t len, end, off, an;
	const mock_host *h;
	unsigned qtype;

	if (!loaded) {
		sbx_err err = {{0}};

		check(mock_hosts_parse(hosts_json, strlen(hosts_json), "fixed", &hosts, &err) == 0, "fixed table");
		loaded = true;
	}
	len = mock_dns_answer(&hosts, NULL, NULL, q, n, r, sizeof(r));
	check(len <= sizeof(r), "answer fits");
	if (len == 0)
		return;
	end = ref_name(q, n, name, sizeof(name));
	check(end > 0 && end + 4 <= n && n >= 12, "answered a malformed query");
	check(memcmp(r, q, 2) == 0 && memcmp(r + 12, q + 12, end + 4 - 12) == 0, "id and question echoed");
	check((r[2] & 0x80) != 0 && r[4] == 0 && r[5] == 1 && (q[2] & 0x80) == 0, "a response to a query");
	check((r[3] & 0x0f) == 0 || (r[3] & 0x0f) == 3, "NOERROR or NXDOMAIN");
	h = mock_hosts_find(&hosts, name);
	check(((r[3] & 0x0f) == 3) == (h == NULL), "NXDOMAIN exactly for unknown names");
	an = (size_t)r[6] << 8 | r[7];
	qtype = (unsigned)q[end] << 8 | q[end + 1];
	off = end + 4;
	for (size_t i = 0; i < an; i++) {
		size_t alen;

		check(off + 12 <= len, "answer record in bounds");
		check(r[off] == 0xc0 && r[off + 1] == 12, "record names the question");
		check(((unsigned)r[off + 2] << 8 | r[off + 3]) == qtype && (qtype == 1 || qtype == 28),
		      "record of the asked type, A or AAAA");
		alen = r[off + 11];
		check(alen == (qtype == 1 ? 4u : 16u) && off + 12 + alen <= len, "record length");
		check(h != NULL, "records only for known names");
		{
			bool found = false;

			for (size_t k = 0; k < h->naddr; k++)
				found = found || memcmp(h->addr[k].addr, r + off + 12, alen) == 0;
			check(found, "record holds one of the name's addresses");
		}
		off += 12 + alen;
	}
	check(off == len, "nothing after the records");
}

static void hosts_file(const uint8_t *data, size_t n)
{
	mock_hosts h;
	sbx_err err = {{0}};
	sbx_egress_list list = {0};
	sbx_egress_error ee;
	sbx_strbuf out;
	const char *const rules[] = {"*.org", "pypi.org:443", "a.b"};
	const char *s;
	long depth = 0;

	if (mock_hosts_parse((const char *)data, n, "fuzz", &h, &err) != 0) {
		check(err.msg[0] != '\0' && h.n == 0 && h.hosts == NULL, "a refusal says why and keeps nothing");
		return;
	}
	for (size_t i = 0; i < h.n; i++) {
		check(h.hosts[i].naddr >= 1 && h.hosts[i].naddr <= MOCK_HOST_ADDRS_MAX, "1-16 addresses");
		check(mock_hosts_find(&h, h.hosts[i].name) == &h.hosts[i], "each name once, found");
	}
	check(sbx_egress_list_from_strings(rules, 3, 16, &list, &ee) == 0, "fixed rules");
	sbx_strbuf_init(&out);
	check(mock_nft_compile(&out, "s1", &list, SBX_HOST_RULES_DOCUMENTED, &h, false), "compiles");
	s = sbx_strbuf_str(&out);
	check(strncmp(s, "flush chain ", 12) == 0, "flush first");
	check(strlen(s) >= 5 && strcmp(s + strlen(s) - 5, "drop\n") == 0, "drop last");
	for (const char *p = s; *p != '\0'; p++) {
		depth += *p == '{' ? 1 : *p == '}' ? -1 : 0;
		check(depth >= 0 && depth <= 1, "braces nest once");
	}
	check(depth == 0, "braces balanced");
	sbx_strbuf_free(&out);
	sbx_egress_list_free(&list);
	mock_hosts_free(&h);
}

/* Lines of head (past its first) that start with name and a colon,
 * counted without case: independently of inet_http's own reading. */
static int lines_named(const char *head, const char *name)
{
	size_t nl = strlen(name);
	int n = 0;

	for (const char *l = strchr(head, '\n'); l != NULL; l = strchr(l + 1, '\n')) {
		if (strncasecmp(l + 1, name, nl) == 0 && l[1 + nl] == ':')
			n++;
	}
	return n;
}

/* Where the first empty line ends (after "\n", a "\n" or "\r\n"),
 * scanned byte by byte; 0 when none. */
static size_t ref_head_end(const char *s)
{
	for (size_t i = 0; s[i] != '\0'; i++) {
		if (s[i] == '\n' && s[i + 1] == '\n')
			return i + 2;
		if (s[i] == '\n' && s[i + 1] == '\r' && s[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

static void http_stream(const uint8_t *data, size_t size)
{
	char *all = calloc(1, size + 1), head[4097];
	size_t at = 0, len;

	check(all != NULL, "memory");
	memcpy(all, data, size);
	len = strlen(all); /* the listener's buffer is a C string too */
	for (int req = 0; req < 100 && at < len; req++) {
		size_t end, n = len - at < 4096 ? len - at : 4096, first;
		mock_inet_parsed p;
		long long body = -1;
		bool keep;

		memcpy(head, all + at, n);
		head[n] = '\0';
		end = mock_inet_head_end(head);
		check(end == ref_head_end(head), "a head ends at its first empty line");
		if (end > 0)
			head[end] = '\0';
		mock_inet_parse_request(head, "192.0.2.10", &p);
		check(strlen(p.method) < sizeof(p.method) && strpbrk(p.method, " \r\n") == NULL,
		      "a method has no blank");
		check(strpbrk(p.path, " ?#\r\n") == NULL, "a path has no blank, query or fragment");
		for (const char *h = p.host; *h != '\0'; h++)
			check(*h < 'A' || *h > 'Z', "a host is in lower case");
		keep = mock_inet_keep_alive(head, &p, &body);
		first = strcspn(head, "\r\n");
		if (keep) {
			check(body >= 0 && body <= MOCK_INET_KEEP_BODY_MAX, "a kept connection's body is bounded");
			check(first > 9 && (strncmp(head + first - 9, " HTTP/1.1", 9) == 0 ||
					    strncmp(head + first - 9, " HTTP/1.0", 9) == 0),
			      "only HTTP/1.x is kept");
			check(lines_named(head, "transfer-encoding") == 0 && lines_named(head, "expect") == 0 &&
				      lines_named(head, "upgrade") == 0 && lines_named(head, "content-length") <= 1,
			      "a body whose end is unknown never keeps the connection");
			check(strcasestr(head, "\nconnection: close\r\n") == NULL &&
				      strcasestr(head, "\nconnection: close\n") == NULL,
			      "Connection: close is never kept");
		} else {
			check(body == 0, "a connection not kept drops no body");
		}
		if (!keep || end == 0)
			break;
		at += end + (size_t)body;
	}
	free(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] % 4 == 3)
		http_stream(data + 1, size - 1);
	else if (data[0] % 2 == 0)
		dns(data + 1, size - 1);
	else
		hosts_file(data + 1, size - 1);
	return 0;
}

/* inet_http: see inet_http.h. */
#include "internet/inet_http.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

size_t mock_inet_head_end(const char *buf)
{
	for (const char *nl = strchr(buf, '\n'); nl != NULL; nl = strchr(nl + 1, '\n')) {
		if (nl[1] == '\n')
			return (size_t)(nl - buf) + 2;
		if (nl[1] == '\r' && nl[2] == '\n')
			return (size_t)(nl - buf) + 3;
	}
	return 0;
}

void mock_inet_parse_request(const char *head, const char *fallback_host, mock_inet_parsed *p)
{
	const char *sp = strchr(head, ' '), *t, *end;
	char host[300];

	memset(p, 0, sizeof(*p));
	if (sp != NULL && (size_t)(sp - head) < sizeof(p->method) && strcspn(head, "\r\n") > (size_t)(sp - head))
		snprintf(p->method, sizeof(p->method), "%.*s", (int)(sp - head), head);
	t = sp != NULL && p->method[0] != '\0' ? sp + 1 : "";
	if (strncmp(t, "http://", 7) == 0 || strncmp(t, "https://", 8) == 0) { /* absolute form */
		const char *slash = strchr(t + (t[4] == 's' ? 8 : 7), '/');

		t = slash != NULL && (size_t)(slash - t) < strcspn(t, " \r\n") ? slash : "/";
	}
	end = t + strcspn(t, " ?#\r\n");
	snprintf(p->path, sizeof(p->path), "%.*s", (int)(end - t), t);
	if (mock_inet_head_header(head, "Host", host, sizeof(host)) && host[0] != '\0') {
		char *colon = host[0] == '[' ? strchr(host, ']') : strrchr(host, ':');

		if (host[0] == '[' && colon != NULL) {
			*colon = '\0';
			memmove(host, host + 1, strlen(host));
		} else if (colon != NULL) {
			*colon = '\0';
		}
	} else {
		snprintf(host, sizeof(host), "%s", fallback_host != NULL ? fallback_host : "");
	}
	for (size_t i = 0; host[i] != '\0' && i + 1 < sizeof(p->host); i++)
		p->host[i] = (char)tolower((unsigned char)host[i]);
}

/* Whether the line at p ends the head: empty, or the end of the text (a
 * line "\r\r\n" does not: it is a malformed header line). */
static bool head_over(const char *p)
{
	return p[0] == '\0' || p[0] == '\n' || (p[0] == '\r' && p[1] == '\n');
}

bool mock_inet_head_header(const char *head, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);
	const char *line = strchr(head, '\n');

	while (line != NULL && !head_over(line + 1)) {
		const char *p = line + 1, *end = strchr(p, '\n');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

		if (len > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			len -= (size_t)(v - p);
			while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == ' ' || v[len - 1] == '\t'))
				len--;
			snprintf(out, cap, "%.*s", (int)len, v);
			return true;
		}
		line = end;
	}
	return false;
}

/* Whether the comma-separated list v has the token tok (case-insensitive). */
static bool list_has_token(const char *v, size_t vlen, const char *tok)
{
	size_t tl = strlen(tok), at = 0;

	while (at < vlen) {
		size_t len = 0;

		while (at < vlen && (v[at] == ' ' || v[at] == '\t' || v[at] == ','))
			at++;
		while (at + len < vlen && v[at + len] != ',')
			len++;
		while (len > 0 && (v[at + len - 1] == ' ' || v[at + len - 1] == '\t' || v[at + len - 1] == '\r'))
			len--;
		if (len == tl && strncasecmp(v + at, tok, tl) == 0)
			return true;
		at += len;
		while (at < vlen && v[at] != ',')
			at++;
	}
	return false;
}

/* True when a header named name has the token tok among its
 * comma-separated values, over every line of that name (RFC 9110
 * section 5.3: they are one list). */
static bool header_has_token(const char *head, const char *name, const char *tok)
{
	size_t nl = strlen(name);

	for (const char *line = strchr(head, '\n'); line != NULL && !head_over(line + 1); line = strchr(line + 1, '\n')) {
		const char *p = line + 1;

		if (strncasecmp(p, name, nl) == 0 && p[nl] == ':' &&
		    list_has_token(p + nl + 1, strcspn(p + nl + 1, "\n"), tok))
			return true;
	}
	return false;
}

/* RFC 9110's tchar: what a header's name is made of. */
static bool is_tchar(unsigned char ch)
{
	return isalnum(ch) || (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* Whether every header line is NAME ":" ..., names of tchars only (one
 * with a blank before its colon or none at all is malformed, RFC 9112
 * section 5.1); and how many are named each of names[0..n) (counts). */
static bool header_lines(const char *head, const char *const *names, int *counts, size_t n)
{
	for (const char *line = strchr(head, '\n'); line != NULL && !head_over(line + 1); line = strchr(line + 1, '\n')) {
		const char *p = line + 1;
		size_t len = 0;

		while (is_tchar((unsigned char)p[len]))
			len++;
		if (len == 0 || p[len] != ':')
			return false;
		for (size_t i = 0; i < n; i++) {
			if (strlen(names[i]) == len && strncasecmp(p, names[i], len) == 0)
				counts[i]++;
		}
	}
	return true;
}

bool mock_inet_keep_alive(const char *head, const mock_inet_parsed *p, long long *body)
{
	static const char *const framing[] = {"Transfer-Encoding", "Expect", "Upgrade", "Content-Length"};
	int counts[4] = {0, 0, 0, 0};
	size_t line = strcspn(head, "\r\n");
	char cl[32] = "";
	bool v11 = line > 9 && strncmp(head + line - 9, " HTTP/1.1", 9) == 0;
	bool v10 = line > 9 && strncmp(head + line - 9, " HTTP/1.0", 9) == 0;

	*body = 0;
	if (p->method[0] == '\0' || !(v11 || v10) || !header_lines(head, framing, counts, 4) || counts[0] > 0 ||
	    counts[1] > 0 || counts[2] > 0 || counts[3] > 1 || header_has_token(head, "Connection", "close") ||
	    (v10 && !header_has_token(head, "Connection", "keep-alive")))
		return false;
	if (counts[3] == 1) {
		char *end = NULL;

		mock_inet_head_header(head, "Content-Length", cl, sizeof(cl));
		if (cl[0] < '0' || cl[0] > '9')
			return false;
		*body = strtoll(cl, &end, 10);
		if (*end != '\0' || *body > MOCK_INET_KEEP_BODY_MAX) {
			*body = 0;
			return false;
		}
	}
	return true;
}

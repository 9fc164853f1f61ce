/* inet_tape: see inet_tape.h. This file: the tape's configuration, the
 * guest's request as the tape reads it, and replay; the recorder's trip
 * to the origin is inet_tape_record.c. */
#define _GNU_SOURCE
#include "internet/inet_tape.h"
#include "internet/inet_tape_internal.h"
#include "util/sha256.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define BODY_WAIT_MS 30000 /* a request body's bytes, all of them, within this */
#define SEND_BUF 65536

/* ---- configuration ---- */

static int parse_cidr(const char *p, tape_pattern *out)
{
	char a[64];
	const char *slash = strchr(p, '/');
	long bits = -1;

	snprintf(a, sizeof(a), "%.*s", slash != NULL ? (int)(slash - p) : (int)strlen(p), p);
	if (inet_pton(AF_INET, a, out->addr) == 1)
		out->family = 4;
	else if (inet_pton(AF_INET6, a, out->addr) == 1)
		out->family = 6;
	else
		return -1;
	if (slash != NULL) {
		char *end = NULL;

		bits = strtol(slash + 1, &end, 10);
		if (end == slash + 1 || *end != '\0' || bits < 0 || bits > (out->family == 4 ? 32 : 128))
			return -1;
	}
	out->bits = bits >= 0 ? (int)bits : (out->family == 4 ? 32 : 128);
	return 0;
}

static bool name_ok(const char *n)
{
	size_t len = strlen(n);

	if (len == 0 || len > 253)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!(isalnum((unsigned char)n[i]) || n[i] == '.' || n[i] == '-' || n[i] == '_'))
			return false;
	}
	return true;
}

/* "PATTERN,..." into t's allow list (t NULL: checked only). */
static int parse_allow(mock_inet_tape *t, const char *patterns, sbx_err *err)
{
	char *copy = strdup(patterns), *save = NULL;
	size_t n = 0;
	int rc = 0;

	if (copy == NULL)
		return sbx_err_set(err, "out of memory"), -1;
	for (char *p = strtok_r(copy, ",", &save); p != NULL && rc == 0; p = strtok_r(NULL, ",", &save)) {
		tape_pattern pat = {0};
		const char *name = strncmp(p, "*.", 2) == 0 ? p + 2 : p;

		if (n == MOCK_INET_TAPE_ALLOW_MAX) {
			sbx_err_set(err, "--internet-record-allow: more than %d patterns", MOCK_INET_TAPE_ALLOW_MAX);
			rc = -1;
		} else if (parse_cidr(p, &pat) != 0 && (strchr(p, '/') != NULL || !name_ok(name) ||
							 strchr(name, '*') != NULL)) {
			sbx_err_set(err,
				    "--internet-record-allow pattern %zu \"%.80s\": not a name, *.suffix, address or CIDR",
				    n + 1, p);
			rc = -1;
		} else {
			if (pat.family == 0)
				for (size_t i = 0; p[i] != '\0' && i + 1 < sizeof(pat.name); i++)
					pat.name[i] = (char)tolower((unsigned char)p[i]);
			if (t != NULL)
				t->allow[t->nallow++] = pat;
			n++;
		}
	}
	free(copy);
	if (rc == 0 && n == 0) {
		sbx_err_set(err, "--internet-record-allow: no pattern (nothing could be recorded)");
		rc = -1;
	}
	return rc;
}

int mock_inet_tape_check_allow(const char *patterns, sbx_err *err)
{
	return parse_allow(NULL, patterns, err);
}

/* "NAME:PORT:ADDR" (ADDR an IPv4 or IPv6 address, bracketed or not). */
static int parse_resolve(const char *entry, tape_resolve *out, sbx_err *err)
{
	const char *c1 = strchr(entry, ':'), *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
	char addr[64], *end = NULL;
	uint8_t raw[16];
	long port = c1 != NULL ? strtol(c1 + 1, &end, 10) : -1;
	size_t alen;

	if (c1 == NULL || c2 == NULL || end != c2 || port < 1 || port > 65535 || (size_t)(c1 - entry) >= 256) {
		sbx_err_set(err, "--internet-record-resolve \"%.80s\": expected NAME:PORT:ADDR (port 1-65535)", entry);
		return -1;
	}
	snprintf(addr, sizeof(addr), "%s", c2 + 1);
	alen = strlen(addr);
	if (addr[0] == '[' && alen > 2 && addr[alen - 1] == ']') {
		memmove(addr, addr + 1, alen - 2);
		addr[alen - 2] = '\0';
	}
	if (inet_pton(AF_INET, addr, raw) != 1 && inet_pton(AF_INET6, addr, raw) != 1) {
		sbx_err_set(err, "--internet-record-resolve \"%.80s\": \"%.64s\" is not an IP address", entry, addr);
		return -1;
	}
	snprintf(out->name, sizeof(out->name), "%.*s", (int)(c1 - entry), entry);
	for (char *p = out->name; *p != '\0'; p++)
		*p = (char)tolower((unsigned char)*p);
	out->port = (unsigned)port;
	snprintf(out->addr, sizeof(out->addr), "%s", addr);
	return 0;
}

int mock_inet_tape_check_resolve(const char *entry, sbx_err *err)
{
	tape_resolve r;

	return parse_resolve(entry, &r, err);
}

static int tape_conf(mock_inet_tape *t, const mock_inet_tape_conf *conf, sbx_err *err)
{
	if (!conf->record)
		return 0;
	if (conf->allow == NULL || parse_allow(t, conf->allow, err) != 0) {
		if (conf->allow == NULL)
			sbx_err_set(err, "--internet-record needs --internet-record-allow PATTERNS (nothing goes out "
					 "that the operator did not name)");
		return -1;
	}
	if (conf->ca != NULL && access(conf->ca, R_OK) != 0) {
		sbx_err_set(err, "--internet-record-ca %s: %s", conf->ca, strerror(errno));
		return -1;
	}
	if (conf->nresolve > MOCK_INET_TAPE_RESOLVE_MAX) {
		sbx_err_set(err, "--internet-record-resolve: more than %d", MOCK_INET_TAPE_RESOLVE_MAX);
		return -1;
	}
	for (size_t i = 0; i < conf->nresolve; i++) {
		if (parse_resolve(conf->resolve[i], &t->resolve[t->nresolve++], err) != 0)
			return -1;
	}
	t->ca = conf->ca != NULL ? strdup(conf->ca) : NULL;
	return 0;
}

mock_inet_tape *mock_inet_tape_new(const mock_inet_tape_conf *conf, sbx_err *err)
{
	mock_inet_tape *t = calloc(1, sizeof(*t));
	sbx_err cerr = {{0}};

	if (t == NULL || (t->dir = strdup(conf->dir)) == NULL) {
		free(t);
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	t->record = conf->record;
	t->rec_max = (long long)(conf->record_max_mib != 0 ? conf->record_max_mib : MOCK_INET_TAPE_RECORD_MIB) *
		     1024 * 1024;
	atomic_init(&t->rec_bytes, 0);
	atomic_init(&t->rec_said, false);
	if (tape_conf(t, conf, err) != 0)
		goto fail;
	t->cas = mock_cassette_open(conf->dir, conf->record, conf->redact, conf->nredact, &cerr);
	if (t->cas == NULL) {
		sbx_err_set(err, "--internet-%s %s: %s", conf->record ? "record" : "replay", conf->dir, cerr.msg);
		goto fail;
	}
	return t;
fail:
	mock_inet_tape_free(t, NULL);
	return NULL;
}

int mock_inet_tape_free(mock_inet_tape *t, sbx_err *err)
{
	int rc = 0;

	if (t == NULL)
		return 0;
	if (t->record && t->cas != NULL)
		rc = mock_cassette_write(t->cas, err);
	mock_cassette_free(t->cas);
	free(t->dir);
	free(t->ca);
	free(t);
	return rc;
}

bool mock_inet_tape_recording(const mock_inet_tape *t)
{
	return t != NULL && t->record;
}

const char *mock_inet_tape_dir(const mock_inet_tape *t)
{
	return t->dir;
}

size_t mock_inet_tape_count(mock_inet_tape *t)
{
	return mock_cassette_count(t->cas);
}

/* Whether the operator's patterns name host (a name, or an address's
 * text). */
static bool allowed(const mock_inet_tape *t, const char *host)
{
	tape_pattern a = {0};
	bool literal = parse_cidr(host, &a) == 0;

	for (size_t i = 0; i < t->nallow; i++) {
		const tape_pattern *p = &t->allow[i];

		if (p->family != 0) {
			int full = p->bits / 8, rest = p->bits % 8;

			if (literal && a.family == p->family && memcmp(a.addr, p->addr, (size_t)full) == 0 &&
			    (rest == 0 || ((a.addr[full] ^ p->addr[full]) & (0xff << (8 - rest))) == 0))
				return true;
		} else if (!literal && strncmp(p->name, "*.", 2) == 0) {
			size_t hl = strlen(host), sl = strlen(p->name + 1);

			if (hl > sl && strcmp(host + hl - sl, p->name + 1) == 0)
				return true;
		} else if (!literal && strcmp(p->name, host) == 0) {
			return true;
		}
	}
	return false;
}

bool mock_inet_tape_names(mock_inet_tape *t, const char *name)
{
	if (t == NULL)
		return false;
	return mock_cassette_has_host(t->cas, name) || (t->record && allowed(t, name));
}

/* ---- the guest's request ---- */

/* The request-target as sent (an absolute form's path and query), the
 * method and the header lines of io's head into r: 0, or -1 (not a
 * request line the tape can key). */
static int read_request(const char *head, tape_req *r)
{
	const char *sp = strchr(head, ' '), *t, *te, *line;

	if (sp == NULL || (size_t)(sp - head) >= sizeof(r->method) || sp == head)
		return -1;
	snprintf(r->method, sizeof(r->method), "%.*s", (int)(sp - head), head);
	t = sp + 1;
	te = t + strcspn(t, " \r\n");
	if (strncmp(t, "http://", 7) == 0 || strncmp(t, "https://", 8) == 0) {
		const char *slash = memchr(t + 8, '/', (size_t)(te - t) > 8 ? (size_t)(te - t) - 8 : 0);

		t = slash != NULL ? slash : te;
	}
	if (t >= te || *t != '/' || (size_t)(te - t) > MOCK_CASSETTE_TARGET_MAX)
		return -1;
	snprintf(r->target, sizeof(r->target), "%.*s", (int)(te - t), t);
	line = strchr(head, '\n');
	while (line != NULL && line[1] != '\0' && line[1] != '\r' && line[1] != '\n' &&
	       r->nhdrs < MOCK_CASSETTE_HEADERS_MAX) {
		const char *b = line + 1, *e = b + strcspn(b, "\r\n"), *colon = memchr(b, ':', (size_t)(e - b));

		line = *e != '\0' ? strchr(e, '\n') : NULL;
		if (colon == NULL || colon == b)
			continue;
		const char *v = colon + 1;

		while (v < e && (*v == ' ' || *v == '\t'))
			v++;
		while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		r->hdrs[r->nhdrs].name = strndup(b, (size_t)(colon - b));
		r->hdrs[r->nhdrs].value = strndup(v, (size_t)(e - v));
		r->nhdrs++;
	}
	return 0;
}

static void req_clear(tape_req *r)
{
	for (size_t i = 0; i < r->nhdrs; i++) {
		free(r->hdrs[i].name);
		free(r->hdrs[i].value);
	}
	free(r->body);
}

static const char *req_header(const tape_req *r, const char *name)
{
	for (size_t i = 0; i < r->nhdrs; i++) {
		if (r->hdrs[i].name != NULL && strcasecmp(r->hdrs[i].name, name) == 0)
			return r->hdrs[i].value != NULL ? r->hdrs[i].value : "";
	}
	return NULL;
}

/* The request's body (one Content-Length; none without it): 0, or the
 * status to refuse it with (411 chunked, 413 too large, 400 cut short). */
static int read_body(mock_inet_io *io, tape_req *r)
{
	const char *cl = req_header(r, "Content-Length"), *te = req_header(r, "Transfer-Encoding");
	char *end = NULL;
	long long len;
	size_t have;
	int64_t until;

	if (te != NULL)
		return 411; /* chunked request bodies are not recorded (LIMITS.md) */
	if (cl == NULL)
		return 0;
	len = strtoll(cl, &end, 10);
	if (end == cl || *end != '\0' || len < 0)
		return 400;
	if (len > MOCK_CASSETTE_REQ_BODY_MAX)
		return 413;
	r->body = malloc(len > 0 ? (size_t)len : 1);
	if (r->body == NULL)
		return 413;
	r->has_body = true;
	have = *io->rest_len < (size_t)len ? *io->rest_len : (size_t)len;
	memcpy(r->body, io->rest, have);
	memmove(io->rest, io->rest + have, *io->rest_len - have);
	*io->rest_len -= have;
	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		until = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + BODY_WAIT_MS;
	}
	while (have < (size_t)len) {
		size_t got = io->recv(io->arg, r->body + have, (size_t)len - have, until);

		if (got == 0)
			return 400;
		have += got;
	}
	r->body_len = have;
	return 0;
}

/* ---- answers ---- */

/* The recorded answer's head: its status, its headers, the framing it
 * had (chunked, else a Content-Length), and ours: 0 or -1. */
static int replay_head(mock_inet_io *io, const mock_cassette_ex *e, bool body)
{
	return mock_tape_send_head(io, e->status, e->reason, e->resp_headers, e->nresp_headers, e->chunked, body,
				   e->body_size);
}

/* The body from its file, as the origin framed it: 0 or -1. */
static int replay_body(mock_inet_tape *t, mock_inet_io *io, const mock_cassette_ex *e)
{
	int fd = mock_cassette_body_open(t->cas, e->body_sha), rc = 0;
	char *buf = malloc(SEND_BUF + 32);
	long long left = e->body_size;

	while (fd >= 0 && buf != NULL && rc == 0 && left > 0) {
		size_t at = e->chunked ? 16 : 0, want = left < SEND_BUF ? (size_t)left : SEND_BUF;
		ssize_t r = read(fd, buf + at, want);

		if (r <= 0)
			break;
		left -= r;
		if (e->chunked) {
			char sz[16];
			int n = snprintf(sz, sizeof(sz), "%zx\r\n", (size_t)r);

			memcpy(buf + at - (size_t)n, sz, (size_t)n);
			buf[at + (size_t)r] = '\r'; /* the chunk's end, in the same write */
			buf[at + (size_t)r + 1] = '\n';
			rc = io->send(io->arg, buf + at - (size_t)n, (size_t)n + (size_t)r + 2);
		} else {
			rc = io->send(io->arg, buf + at, (size_t)r);
		}
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	if (left > 0)
		return -1; /* the file went short since it was checked */
	return rc == 0 && e->chunked ? io->send(io->arg, "0\r\n\r\n", 5) : rc;
}

static void replay(mock_inet_tape *t, mock_inet_io *io, const tape_req *r)
{
	mock_cassette_key k = {.scheme = io->scheme, .host = io->host, .port = io->port, .method = r->method,
			       .target = r->target, .body_sha = r->has_body ? r->body_sha : NULL};
	mock_cassette_ex e;
	bool body;

	io->via = "cassette";
	if (!mock_cassette_take(t->cas, &k, &e)) {
		mock_cassette_miss(t->cas, &k, io->miss, sizeof(io->miss));
		mock_tape_send_text(io, 502, "Bad Gateway", io->miss);
		return;
	}
	body = mock_tape_has_body(r->method, e.status);
	io->status = e.status;
	if (replay_head(io, &e, body) != 0 || (body && replay_body(t, io, &e) != 0)) {
		io->keep = false;
		io->reset = true;
	}
	mock_cassette_ex_clear(&e);
}

static void body_sha(const char *body, size_t len, char out[65])
{
	static const char hx[] = "0123456789abcdef";
	uint8_t d[MOCK_SHA256_LEN];

	mock_sha256(body, len, d);
	for (size_t i = 0; i < MOCK_SHA256_LEN; i++) {
		out[2 * i] = hx[d[i] >> 4];
		out[2 * i + 1] = hx[d[i] & 15];
	}
	out[64] = '\0';
}

/* A request body the tape cannot take, answered with why. */
static void refuse_body(mock_inet_io *io, int status, const char *why)
{
	static const struct {
		int status;
		const char *reason, *text;
	} r[] = {{400, "Bad Request", "sbx-mock cassette: the request body did not all come (or a bad Content-Length)\n"},
		 {411, "Length Required", "sbx-mock cassette: a chunked request body is not recorded or replayed\n"},
		 {413, "Content Too Large", "sbx-mock cassette: a request body over 8 MiB (LIMITS.md)\n"},
		 {500, "Internal Server Error", NULL}};

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		if (r[i].status == status)
			mock_tape_send_text(io, status, r[i].reason, r[i].text != NULL ? r[i].text : why);
	}
}

bool mock_inet_tape_serve(mock_inet_tape *t, mock_inet_io *io)
{
	tape_req *r;
	int refuse;
	sbx_err err = {{0}};

	if (t->record && !allowed(t, io->host))
		return false;
	io->via = t->record ? "record" : "cassette";
	io->miss[0] = '\0';
	io->reset = false;
	r = calloc(1, sizeof(*r)); /* ~10 KiB: the connection threads' stacks are small */
	if (r == NULL || read_request(io->head, r) != 0) {
		io->keep = false;
		mock_tape_send_text(io, r == NULL ? 500 : 400, r == NULL ? "Internal Server Error" : "Bad Request",
				    "sbx-mock cassette: not a request line it can key (or out of memory)\n");
		if (r != NULL)
			req_clear(r);
		free(r);
		return true;
	}
	refuse = read_body(io, r);
	/* a request body past the recording's bound is not kept: the recorder
	 * then refuses the request, naming the bound (inet_tape_record.c) */
	if (refuse == 0 && r->has_body && t->record &&
	    atomic_fetch_add(&t->rec_bytes, (long long)r->body_len) + (long long)r->body_len <= t->rec_max &&
	    mock_cassette_body_put(t->cas, r->body, r->body_len, r->body_sha, &err) != 0)
		refuse = 500;
	if (refuse == 0 && r->has_body && !t->record)
		body_sha(r->body, r->body_len, r->body_sha); /* replay's key needs the hash alone */
	if (refuse != 0) {
		io->keep = false;
		refuse_body(io, refuse, err.msg);
	} else if (t->record) {
		mock_tape_record(t, io, r);
	} else {
		replay(t, io, r);
	}
	req_clear(r);
	free(r);
	return true;
}

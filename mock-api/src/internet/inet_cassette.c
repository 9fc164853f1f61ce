/* inet_cassette: see inet_cassette.h. The format is the cassette spec's
 * (INTERNET.md, "Record and replay the guests' internet"), written by
 * libsbx's writer (sbx_cassette_text/sbx_cassette_write: keys in the spec's
 * order, compact as cJSON prints them, lines sorted by the request key then
 * n) after each exchange passed libsbx's line check: the mock writes
 * nothing that sbxctl or its own loader would refuse. */
#define _GNU_SOURCE
#include "internet/inet_cassette.h"
#include "internet/inet_cassette_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const hop_by_hop[] = {"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding",
					 "TE", "Trailer", "Upgrade"};
static const char *const secret_headers[] = {"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie"};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool mock_cassette_in_list(const char *const *list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (strcasecmp(list[i], name) == 0)
			return true;
	}
	return false;
}

bool mock_cassette_hex64(const char *s)
{
	if (s == NULL || strlen(s) != 64)
		return false;
	for (size_t i = 0; i < 64; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

static void hdrs_free(mock_cassette_hdr *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(h[i].name);
		free(h[i].value);
	}
	free(h);
}

void mock_cassette_ex_clear(mock_cassette_ex *e)
{
	if (e == NULL)
		return;
	free(e->host);
	free(e->method);
	free(e->target);
	free(e->reason);
	free(e->match_target);
	hdrs_free(e->req_headers, e->nreq_headers);
	hdrs_free(e->resp_headers, e->nresp_headers);
	memset(e, 0, sizeof(*e));
}

static mock_cassette_hdr *hdrs_dup(const mock_cassette_hdr *h, size_t n)
{
	mock_cassette_hdr *o = calloc(n > 0 ? n : 1, sizeof(*o));

	for (size_t i = 0; o != NULL && i < n; i++) {
		o[i].name = strdup(h[i].name);
		o[i].value = strdup(h[i].value);
		if (o[i].name == NULL || o[i].value == NULL) {
			hdrs_free(o, i + 1);
			return NULL;
		}
	}
	return o;
}

/* A deep copy of e into out: 0 or -1 (out cleared). */
static int ex_copy(mock_cassette_ex *out, const mock_cassette_ex *e)
{
	*out = *e;
	out->host = strdup(e->host);
	out->method = strdup(e->method);
	out->target = strdup(e->target);
	out->reason = strdup(e->reason != NULL ? e->reason : "");
	out->match_target = e->match_target != NULL ? strdup(e->match_target) : NULL;
	out->req_headers = hdrs_dup(e->req_headers, e->nreq_headers);
	out->resp_headers = hdrs_dup(e->resp_headers, e->nresp_headers);
	if (out->host == NULL || out->method == NULL || out->target == NULL || out->reason == NULL ||
	    out->req_headers == NULL || out->resp_headers == NULL ||
	    (e->match_target != NULL && out->match_target == NULL)) {
		mock_cassette_ex_clear(out);
		return -1;
	}
	return 0;
}

/* ---- redaction ---- */

/* The token for a secret value: the same value, the same token, within
 * the cassette. Caller holds the lock. NULL when out of memory. */
static char *token_for(mock_cassette *c, const char *value)
{
	char buf[32];
	size_t i;

	for (i = 0; i < c->ntok && strcmp(c->tok_vals[i], value) != 0; i++)
		;
	if (i == c->ntok) {
		if (c->ntok == c->captok) {
			size_t cap = c->captok > 0 ? c->captok * 2 : 8;
			char **v = realloc(c->tok_vals, cap * sizeof(*v));

			if (v == NULL)
				return NULL;
			c->tok_vals = v;
			c->captok = cap;
		}
		c->tok_vals[c->ntok] = strdup(value);
		if (c->tok_vals[c->ntok] == NULL)
			return NULL;
		c->ntok++;
	}
	snprintf(buf, sizeof(buf), "redacted-%u", c->first_token + (unsigned)i);
	return strdup(buf);
}

/* Redacted query values replaced in target: by their tokens, or with
 * blank by "". Caller holds the lock (tokens are made). */
char *mock_cassette_redact_locked(mock_cassette *c, const char *target, bool blank)
{
	const char *q = strchr(target, '?');
	size_t cap = strlen(target) + 1, len;
	char *out;

	if (blank) /* the request key's target: libsbx's, as the reader keys lines */
		return sbx_cassette_key_target(target, c->redact, c->nredact);
	if (q == NULL || c->nredact == 0)
		return strdup(target);
	cap += (size_t)(strlen(q) + 1) * 24; /* each parameter may grow to a token */
	out = malloc(cap);
	if (out == NULL)
		return NULL;
	len = (size_t)(q - target) + 1;
	memcpy(out, target, len);
	for (const char *p = q + 1; *p != '\0';) {
		size_t plen = strcspn(p, "&#"), nlen = strcspn(p, "=&#");
		char name[256];
		bool secret = nlen < plen && nlen < sizeof(name);

		if (secret) {
			snprintf(name, sizeof(name), "%.*s", (int)nlen, p);
			secret = mock_cassette_in_list((const char *const *)c->redact, c->nredact, name);
		}
		if (secret) {
			char value[MOCK_CASSETTE_TARGET_MAX + 1], *tok;

			snprintf(value, sizeof(value), "%.*s", (int)(plen - nlen - 1), p + nlen + 1);
			tok = token_for(c, value);
			if (tok == NULL) {
				free(out);
				return NULL;
			}
			len += (size_t)snprintf(out + len, cap - len, "%.*s%s", (int)nlen + 1, p, tok);
			free(tok);
		} else {
			len += (size_t)snprintf(out + len, cap - len, "%.*s", (int)plen, p);
		}
		p += plen;
		if (*p == '#') {
			len += (size_t)snprintf(out + len, cap - len, "%s", p);
			break;
		}
		if (*p == '&') {
			out[len++] = '&';
			out[len] = '\0';
			p++;
		}
	}
	return out;
}

char *mock_cassette_redact_target(mock_cassette *c, const char *target, bool blank)
{
	char *r;

	pthread_mutex_lock(&c->lock);
	r = mock_cassette_redact_locked(c, target, blank);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Secret header values replaced by their tokens: 0 or -1. */
static int redact_headers(mock_cassette *c, mock_cassette_hdr *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *tok;

		if (!mock_cassette_in_list(secret_headers, sizeof(secret_headers) / sizeof(secret_headers[0]), h[i].name))
			continue;
		tok = token_for(c, h[i].value);
		if (tok == NULL)
			return -1;
		free(h[i].value);
		h[i].value = tok;
	}
	return 0;
}

/* ---- keys ---- */

static bool same_key(const mock_cassette_ex *e, const mock_cassette_key *k, const char *match_target)
{
	const char *ks = k->body_sha != NULL ? k->body_sha : "";

	return e->port == k->port && strcmp(e->scheme, k->scheme) == 0 && strcmp(e->host, k->host) == 0 &&
	       strcmp(e->method, k->method) == 0 && strcmp(e->match_target, match_target) == 0 &&
	       strcmp(e->req_sha, ks) == 0;
}

bool mock_cassette_take(mock_cassette *c, const mock_cassette_key *key, mock_cassette_ex *out)
{
	char *mt;
	mock_cassette_ex *first = NULL, *last = NULL, *hit = NULL;
	bool ok = false;

	pthread_mutex_lock(&c->lock);
	mt = mock_cassette_redact_locked(c, key->target, true);
	for (size_t i = 0; mt != NULL && i < c->nex; i++) {
		mock_cassette_ex *e = &c->ex[i];

		if (!same_key(e, key, mt))
			continue;
		if (first == NULL || e->n < first->n)
			first = e;
		if (last == NULL || e->n > last->n)
			last = e;
	}
	if (first != NULL) {
		unsigned k = ++first->hits;

		for (size_t i = 0; i < c->nex && hit == NULL; i++) {
			if (c->ex[i].n == k && same_key(&c->ex[i], key, mt))
				hit = &c->ex[i];
		}
		ok = ex_copy(out, hit != NULL ? hit : last) == 0;
	}
	pthread_mutex_unlock(&c->lock);
	free(mt);
	return ok;
}

static size_t common_prefix(const char *a, const char *b)
{
	size_t i = 0;

	while (a[i] != '\0' && a[i] == b[i])
		i++;
	return i;
}

/* "https://host/target", the port said when it is not the scheme's. */
static void url_text(char *out, size_t cap, const char *scheme, const char *host, unsigned port,
		     const char *target)
{
	bool dflt = (strcmp(scheme, "https") == 0 && port == 443) || (strcmp(scheme, "http") == 0 && port == 80);
	char p[16] = "";

	if (!dflt)
		snprintf(p, sizeof(p), ":%u", port);
	snprintf(out, cap, "%s://%s%s%s", scheme, host, p, target);
}

void mock_cassette_miss(mock_cassette *c, const mock_cassette_key *key, char *out, size_t cap)
{
	const mock_cassette_ex *best = NULL;
	size_t best_pre = 0, best_diff = 0, tlen = strlen(key->target), ucap = MOCK_CASSETTE_TARGET_MAX + 600;
	/* on the heap: the proxy's connection threads have small stacks */
	char *want = malloc(ucap), *near = malloc(ucap);

	if (want == NULL || near == NULL) {
		snprintf(out, cap, "sbx-mock cassette %s: no recorded answer (out of memory naming it)\n", c->name);
		goto out;
	}
	snprintf(near, ucap, "none for this host");
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nex; i++) {
		const mock_cassette_ex *e = &c->ex[i];
		size_t pre, len, diff;

		if (e->port != key->port || strcmp(e->scheme, key->scheme) != 0 || strcmp(e->host, key->host) != 0)
			continue;
		pre = common_prefix(e->target, key->target);
		len = strlen(e->target);
		diff = len > tlen ? len - tlen : tlen - len;
		if (best == NULL || pre > best_pre || (pre == best_pre && diff < best_diff)) {
			best = e;
			best_pre = pre;
			best_diff = diff;
		}
	}
	url_text(want, ucap, key->scheme, key->host, key->port, key->target);
	if (best != NULL) {
		size_t n = (size_t)snprintf(near, ucap, "%s ", best->method);

		url_text(near + n, ucap - n, best->scheme, best->host, best->port, best->target);
	}
	snprintf(out, cap, "sbx-mock cassette %s: no recorded answer for %s %s\nnearest recorded: %s\n", c->name,
		 key->method, want, near);
	pthread_mutex_unlock(&c->lock);
out:
	free(want);
	free(near);
}

bool mock_cassette_has_host(mock_cassette *c, const char *host)
{
	bool found = false;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nex && !found; i++)
		found = strcmp(c->ex[i].host, host) == 0;
	pthread_mutex_unlock(&c->lock);
	return found;
}

size_t mock_cassette_count(mock_cassette *c)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->nex;
	pthread_mutex_unlock(&c->lock);
	return n;
}

const char *mock_cassette_name(const mock_cassette *c)
{
	return c->name;
}

/* ---- writing ---- */

/* The [name, value] pairs into array a (made in place: nothing is left
 * unowned when memory runs out; the check then names what is missing). */
static void hdrs_into(cJSON *a, const mock_cassette_hdr *h, size_t n)
{
	for (size_t i = 0; a != NULL && i < n; i++) {
		cJSON *p = cJSON_CreateArray(), *nm = cJSON_CreateString(h[i].name), *v = cJSON_CreateString(h[i].value);

		if (p == NULL || nm == NULL || v == NULL || !cJSON_AddItemToArray(a, p)) {
			cJSON_Delete(p);
			cJSON_Delete(nm);
			cJSON_Delete(v);
			return;
		}
		cJSON_AddItemToArray(p, nm);
		cJSON_AddItemToArray(p, v);
	}
}

static void body_into(cJSON *o, const char *sha, long long size)
{
	cJSON_AddStringToObject(o, "sha256", sha);
	cJSON_AddNumberToObject(o, "size", (double)size);
}

/* One exchange as the JSON object of its line, keys in the spec's order. */
static cJSON *ex_json(const mock_cassette_ex *e)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "scheme", e->scheme);
	cJSON_AddStringToObject(o, "host", e->host);
	cJSON_AddNumberToObject(o, "port", e->port);
	cJSON_AddStringToObject(o, "method", e->method);
	cJSON_AddStringToObject(o, "target", e->target);
	hdrs_into(cJSON_AddArrayToObject(o, "request_headers"), e->req_headers, e->nreq_headers);
	if (e->req_sha[0] != '\0')
		body_into(cJSON_AddObjectToObject(o, "request_body"), e->req_sha, e->req_size);
	else
		cJSON_AddNullToObject(o, "request_body");
	cJSON_AddNumberToObject(o, "status", e->status);
	cJSON_AddStringToObject(o, "reason", e->reason);
	hdrs_into(cJSON_AddArrayToObject(o, "response_headers"), e->resp_headers, e->nresp_headers);
	cJSON_AddBoolToObject(o, "chunked", e->chunked);
	body_into(cJSON_AddObjectToObject(o, "body"), e->body_sha, e->body_size);
	cJSON_AddNumberToObject(o, "n", e->n);
	return o;
}

/* cas's header borrowed from c (release with sbx_release, never
 * sbx_cassette_free). */
static void sbx_header(mock_cassette *c, sbx_cassette *cas)
{
	memset(cas, 0, sizeof(*cas));
	cas->created = c->created;
	cas->redacted_query = c->redact;
	cas->nredacted = c->nredact;
}

static void sbx_release(sbx_cassette *cas)
{
	for (size_t i = 0; i < cas->nex; i++)
		sbx_cassette_exchange_free(&cas->ex[i]);
	free(cas->ex);
	memset(cas, 0, sizeof(*cas));
}

/* e through libsbx's line check into *x: 0, or -1 with err naming the
 * request and what is wrong. */
static int ex_checked(mock_cassette *c, const sbx_cassette *cas, const mock_cassette_ex *e,
		      sbx_cassette_exchange *x, sbx_err *err)
{
	char what[640];
	cJSON *o;

	snprintf(what, sizeof(what), "cassette %.100s: %.32s %.8s://%.253s:%u%.160s", c->name, e->method, e->scheme, e->host,
		 e->port, e->target);
	o = ex_json(e); // NOLINT(clang-analyzer-unix.Malloc): e's strings stay its caller's (mock_cassette_add frees them)
	if (o == NULL) {
		memset(x, 0, sizeof(*x));
		sbx_err_set(err, "%s: out of memory", what);
		return -1;
	}
	return sbx_cassette_exchange_from_json(o, what, 0, cas, x, err);
}

/* c as libsbx's cassette, each exchange checked. Caller holds the lock. */
static int as_sbx_locked(mock_cassette *c, sbx_cassette *cas, sbx_err *err)
{
	sbx_header(c, cas);
	cas->ex = calloc(c->nex > 0 ? c->nex : 1, sizeof(*cas->ex));
	if (cas->ex == NULL)
		return sbx_err_set(err, "cassette %s: out of memory", c->name), -1;
	for (size_t i = 0; i < c->nex; i++) {
		cas->nex++;
		if (ex_checked(c, cas, &c->ex[i], &cas->ex[i], err) != 0) {
			sbx_release(cas);
			return -1;
		}
	}
	return 0;
}

/* The whole file, as libsbx writes it. Caller holds the lock. */
static char *text_locked(mock_cassette *c, sbx_err *err)
{
	sbx_cassette cas;
	sbx_strbuf sb = SBX_STRBUF_INIT;

	if (as_sbx_locked(c, &cas, err) != 0)
		return NULL;
	if (sbx_cassette_text(&cas, &sb) != 0) {
		sbx_err_set(err, "cassette %s: out of memory", c->name);
		sbx_strbuf_free(&sb);
		sbx_release(&cas);
		return NULL;
	}
	sbx_release(&cas);
	return sbx_strbuf_detach(&sb, NULL);
}

char *mock_cassette_text(mock_cassette *c)
{
	sbx_err err = {{0}};
	char *t;

	pthread_mutex_lock(&c->lock);
	t = text_locked(c, &err);
	pthread_mutex_unlock(&c->lock);
	return t;
}

int mock_cassette_check(mock_cassette *c, sbx_err *err)
{
	sbx_cassette cas;
	sbx_cassette_problems probs = {SBX_STRBUF_INIT, 0, false};
	char *t;
	int rc = -1;

	pthread_mutex_lock(&c->lock);
	t = text_locked(c, err);
	pthread_mutex_unlock(&c->lock);
	if (t == NULL)
		return -1;
	if (sbx_cassette_parse_text(t, strlen(t), SBX_CASSETTE_FILE, &cas, &probs) == 0)
		rc = 0;
	else
		sbx_err_set(err, "cassette %s: with the redacted query names %s: %.*s", c->name,
			    "--internet-redact-query adds", (int)strcspn(sbx_strbuf_str(&probs.text), "\n"),
			    sbx_strbuf_str(&probs.text));
	sbx_cassette_free(&cas);
	sbx_cassette_problems_free(&probs);
	free(t);
	return rc;
}

/* The bodies written since the last write reach the disk before a line
 * names them (syncfs: one call for every body file, not one each). */
static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = syncfs(fd);
	close(fd);
	return rc;
}

static int write_locked(mock_cassette *c, sbx_err *err)
{
	sbx_cassette cas;
	int rc;

	if (c->dir == NULL)
		return 0;
	if (sync_dir(c->dir) != 0) {
		sbx_err_set(err, "cassette %s: syncing %s: %s", c->name, c->dir, strerror(errno));
		return -1;
	}
	if (as_sbx_locked(c, &cas, err) != 0)
		return -1;
	rc = sbx_cassette_write(c->dir, &cas, err);
	sbx_release(&cas);
	if (rc != 0) {
		sbx_err_prefix(err, "cassette %s", c->name);
		return -1;
	}
	c->unwritten = 0;
	c->written_ms = mono_ms();
	return 0;
}

int mock_cassette_write(mock_cassette *c, sbx_err *err)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = write_locked(c, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- adding ---- */

bool mock_cassette_hop(const mock_cassette_hdr *h, size_t n, size_t i)
{
	if (mock_cassette_in_list(hop_by_hop, sizeof(hop_by_hop) / sizeof(hop_by_hop[0]), h[i].name))
		return true;
	for (size_t j = 0; j < n; j++) {
		char v[1024], *save = NULL;

		if (strcasecmp(h[j].name, "Connection") != 0)
			continue;
		snprintf(v, sizeof(v), "%s", h[j].value);
		for (char *t = strtok_r(v, ", \t", &save); t != NULL; t = strtok_r(NULL, ", \t", &save)) {
			if (strcasecmp(t, h[i].name) == 0)
				return true;
		}
	}
	return false;
}

/* Response headers as kept: hop-by-hop ones out. Caller frees the array
 * and what it holds. */
static mock_cassette_hdr *keep_headers(const mock_cassette_hdr *h, size_t n, size_t *kept)
{
	mock_cassette_hdr *o = calloc(n > 0 ? n : 1, sizeof(*o));
	size_t k = 0;

	for (size_t i = 0; o != NULL && i < n; i++) {
		if (mock_cassette_hop(h, n, i))
			continue;
		o[k].name = strdup(h[i].name);
		o[k].value = strdup(h[i].value);
		k++;
	}
	*kept = k;
	return o;
}

/* Caller holds the lock: the next n of e's key. */
static unsigned next_n(const mock_cassette *c, const mock_cassette_ex *e)
{
	unsigned n = 0;

	for (size_t i = 0; i < c->nex; i++) {
		const mock_cassette_ex *x = &c->ex[i];

		if (x->port == e->port && strcmp(x->scheme, e->scheme) == 0 && strcmp(x->host, e->host) == 0 &&
		    strcmp(x->method, e->method) == 0 && strcmp(x->match_target, e->match_target) == 0 &&
		    strcmp(x->req_sha, e->req_sha) == 0 && x->n > n)
			n = x->n;
	}
	return n + 1;
}

int mock_cassette_grow(mock_cassette *c)
{
	if (c->nex == c->capex) {
		size_t cap = c->capex > 0 ? c->capex * 2 : 64;
		mock_cassette_ex *v = realloc(c->ex, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		c->ex = v;
		c->capex = cap;
	}
	return 0;
}

/* Whether e's line passes libsbx's check (an origin's status 600, a
 * header name with a space, a control character in a value): one that
 * does not is not recorded, or the written file would be refused. Caller
 * holds the lock. 0, or -1 with err. */
static int line_ok(mock_cassette *c, const mock_cassette_ex *e, sbx_err *err)
{
	sbx_cassette cas;
	sbx_cassette_exchange x;
	int rc;

	sbx_header(c, &cas);
	rc = ex_checked(c, &cas, e, &x, err);
	sbx_cassette_exchange_free(&x);
	if (rc != 0)
		sbx_err_prefix(err, "not recorded");
	return rc;
}

int mock_cassette_add(mock_cassette *c, const mock_cassette_ex *e, sbx_err *err)
{
	mock_cassette_ex x = *e;
	int rc = -1;

	x.resp_headers = keep_headers(e->resp_headers, e->nresp_headers, &x.nresp_headers);
	x.req_headers = hdrs_dup(e->req_headers, e->nreq_headers);
	x.hits = 0;
	pthread_mutex_lock(&c->lock);
	x.host = strdup(e->host);
	x.method = strdup(e->method);
	x.reason = strdup(e->reason != NULL ? e->reason : "");
	x.target = mock_cassette_redact_locked(c, e->target, false);
	x.match_target = mock_cassette_redact_locked(c, e->target, true);
	if (c->nex >= MOCK_CASSETTE_EXCHANGES_MAX) {
		sbx_err_set(err, "cassette %s: full (%d exchanges, LIMITS.md)", c->name, MOCK_CASSETTE_EXCHANGES_MAX);
		goto out;
	}
	if (x.resp_headers == NULL || x.req_headers == NULL || x.host == NULL || x.method == NULL ||
	    x.reason == NULL || x.target == NULL || x.match_target == NULL ||
	    redact_headers(c, x.req_headers, x.nreq_headers) != 0 ||
	    redact_headers(c, x.resp_headers, x.nresp_headers) != 0 || mock_cassette_grow(c) != 0) {
		sbx_err_set(err, "cassette %s: out of memory", c->name);
		goto out;
	}
	x.n = next_n(c, &x);
	if (line_ok(c, &x, err) != 0)
		goto out;
	c->ex[c->nex++] = x;
	memset(&x, 0, sizeof(x));
	c->unwritten++;
	rc = 0;
	if (c->unwritten >= MOCK_CASSETTE_WRITE_EVERY || mono_ms() - c->written_ms >= MOCK_CASSETTE_WRITE_MS)
		rc = write_locked(c, err);
out:
	pthread_mutex_unlock(&c->lock);
	mock_cassette_ex_clear(&x);
	return rc;
}


/* inet_cassette_load: reading a cassette before anything is served from
 * it (inet_cassette.h). The format is read and checked by libsbx's reader
 * alone (sbx/cassette.h: every line, the order, each request's n, every
 * body's size and hash), the one sbxctl's `mock cassette check` runs, so
 * what check calls good the mock replays and what the mock refuses check
 * refuses, with the same words. This file keeps what that reader accepted
 * in the form replay matches and copies it from (mock_cassette_ex), and
 * adds the names --internet-redact-query gives a recording. It must never
 * check the format itself: a check belongs in lib/src/cassette.c, once. */
#define _GNU_SOURCE
#include "internet/inet_cassette.h"
#include "internet/inet_cassette_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sbx/cassette.h"

static mock_cassette *cassette_new(const char *name)
{
	mock_cassette *c = calloc(1, sizeof(*c));
	const char *slash;
	size_t len;

	if (c == NULL)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	len = strlen(name);
	while (len > 1 && name[len - 1] == '/')
		len--;
	slash = memrchr(name, '/', len);
	if (slash != NULL && (size_t)(slash - name) + 1 < len)
		snprintf(c->name, sizeof(c->name), "%.*s", (int)(len - (size_t)(slash - name) - 1), slash + 1);
	else
		snprintf(c->name, sizeof(c->name), "%.*s", (int)len, name);
	c->first_token = 1;
	return c;
}

void mock_cassette_free(mock_cassette *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->nex; i++)
		mock_cassette_ex_clear(&c->ex[i]);
	for (size_t i = 0; i < c->ntok; i++)
		free(c->tok_vals[i]);
	for (size_t i = 0; i < c->nredact; i++)
		free(c->redact[i]);
	free(c->tok_vals);
	free(c->ex);
	free(c->dir);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* A redacted query name: the header's (checked by libsbx) or, flag true,
 * one from --internet-redact-query, refused by the same rule, naming it. */
static int add_redact(mock_cassette *c, const char *name, bool flag, sbx_err *err)
{
	if (mock_cassette_in_list((const char *const *)c->redact, c->nredact, name))
		return 0;
	if (flag && !sbx_cassette_query_name_ok(name)) {
		sbx_err_set(err, "--internet-redact-query \"%.80s\": 1-%u bytes of printable ASCII, none of = & # ? "
				 "or space", name, SBX_CASSETTE_QUERY_NAME_MAX);
		return -1;
	}
	if (c->nredact == MOCK_CASSETTE_REDACT_MAX) {
		sbx_err_set(err, "cassette %s: more than %d redacted query names (the header's and "
				 "--internet-redact-query's together)", c->name, MOCK_CASSETTE_REDACT_MAX);
		return -1;
	}
	c->redact[c->nredact] = strdup(name);
	if (c->redact[c->nredact] == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	c->nredact++;
	return 0;
}

/* The reader's first problem, after the cassette's name, and how many
 * more there are: a start-up error is one line. */
static void refuse(const mock_cassette *c, const sbx_cassette_problems *p, sbx_err *err)
{
	const char *t = sbx_strbuf_str(&p->text);
	int len = (int)strcspn(t, "\n");

	if (p->count > 1)
		sbx_err_set(err, "cassette %s: %.*s (and %zu more problem%s: sbxctl mock cassette check lists them)",
			    c->name, len, t, p->count - 1, p->count > 2 ? "s" : "");
	else
		sbx_err_set(err, "cassette %s: %.*s", c->name, len, p->count > 0 ? t : "refused (out of memory?)");
}

/* A checked [[name, value], ...] list as the mock keeps it: 0 or -1. */
static int hdrs_of(const cJSON *a, mock_cassette_hdr **out, size_t *n)
{
	const cJSON *p;
	size_t count = (size_t)cJSON_GetArraySize(a);

	*n = 0;
	*out = calloc(count > 0 ? count : 1, sizeof(**out));
	if (*out == NULL)
		return -1;
	cJSON_ArrayForEach(p, a)
	{
		mock_cassette_hdr *h = &(*out)[(*n)++];

		h->name = strdup(cJSON_GetArrayItem(p, 0)->valuestring);
		h->value = strdup(cJSON_GetArrayItem(p, 1)->valuestring);
		if (h->name == NULL || h->value == NULL)
			return -1;
	}
	return 0;
}

/* One exchange libsbx's reader accepted, copied into e: 0 or -1 (out of
 * memory; e holds what was made, for mock_cassette_ex_clear). */
static int ex_of(const sbx_cassette_exchange *x, mock_cassette_ex *e)
{
	snprintf(e->scheme, sizeof(e->scheme), "%s", x->scheme);
	e->port = (unsigned)x->port;
	e->status = x->status;
	e->chunked = x->chunked;
	e->n = (unsigned)x->n;
	if (x->has_request_body) {
		memcpy(e->req_sha, x->request_body.sha256, sizeof(e->req_sha));
		e->req_size = (long long)x->request_body.size;
	}
	memcpy(e->body_sha, x->body.sha256, sizeof(e->body_sha));
	e->body_size = (long long)x->body.size;
	e->host = strdup(x->host);
	e->method = strdup(x->method);
	e->target = strdup(x->target);
	e->reason = strdup(x->reason);
	if (e->host == NULL || e->method == NULL || e->target == NULL || e->reason == NULL)
		return -1;
	if (hdrs_of(cJSON_GetObjectItemCaseSensitive(x->obj, "request_headers"), &e->req_headers,
		    &e->nreq_headers) != 0)
		return -1;
	return hdrs_of(cJSON_GetObjectItemCaseSensitive(x->obj, "response_headers"), &e->resp_headers,
		       &e->nresp_headers);
}

/* Takes the header and the exchanges of a cassette the reader accepted. */
static int adopt(mock_cassette *c, const sbx_cassette *cas, sbx_err *err)
{
	snprintf(c->created, sizeof(c->created), "%s", cas->created);
	for (size_t i = 0; i < cas->nredacted; i++) {
		if (add_redact(c, cas->redacted_query[i], false, err) != 0)
			return -1;
	}
	c->ex = calloc(cas->nex > 0 ? cas->nex : 1, sizeof(*c->ex));
	if (c->ex == NULL)
		return sbx_err_set(err, "out of memory"), -1;
	c->capex = cas->nex > 0 ? cas->nex : 1;
	for (size_t i = 0; i < cas->nex; i++) {
		c->nex++;
		if (ex_of(&cas->ex[i], &c->ex[i]) != 0)
			return sbx_err_set(err, "cassette %s: out of memory", c->name), -1;
	}
	/* a recording added to it gives new secrets new numbers */
	c->first_token = (unsigned)sbx_cassette_max_token(cas) + 1;
	return 0;
}

/* Each exchange's key target, once the redacted names are all known. */
static int match_targets(mock_cassette *c, sbx_err *err)
{
	for (size_t i = 0; i < c->nex; i++) {
		free(c->ex[i].match_target);
		c->ex[i].match_target = sbx_cassette_key_target(c->ex[i].target, c->redact, c->nredact);
		if (c->ex[i].match_target == NULL)
			return sbx_err_set(err, "cassette %s: out of memory", c->name), -1;
	}
	return 0;
}

mock_cassette *mock_cassette_parse(const char *text, size_t len, const char *name, sbx_err *err)
{
	mock_cassette *c = cassette_new(name != NULL ? name : "-");
	sbx_cassette cas;
	sbx_cassette_problems probs = {SBX_STRBUF_INIT, 0, false};

	if (c == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	if (sbx_cassette_parse_text(text, len, SBX_CASSETTE_FILE, &cas, &probs) != 0) {
		refuse(c, &probs, err);
		goto fail;
	}
	if (adopt(c, &cas, err) != 0 || match_targets(c, err) != 0)
		goto fail;
	sbx_cassette_free(&cas);
	sbx_cassette_problems_free(&probs);
	return c;
fail:
	sbx_cassette_free(&cas);
	sbx_cassette_problems_free(&probs);
	mock_cassette_free(c);
	return NULL;
}

/* A new cassette's directory and header: 0, or -1 with err. */
static int make_new(mock_cassette *c, const char *dir, sbx_err *err)
{
	char sub[4096];
	time_t now = time(NULL);
	struct tm tm;

	snprintf(sub, sizeof(sub), "%s/%s", dir, SBX_CASSETTE_BODIES);
	if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || (mkdir(sub, 0755) != 0 && errno != EEXIST)) {
		sbx_err_set(err, "cassette %s: making %s: %s", c->name, sub, strerror(errno));
		return -1;
	}
	gmtime_r(&now, &tm);
	strftime(c->created, sizeof(c->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return 0;
}

/* dir's cassette, read and checked whole by libsbx (bodies hashed). */
static int load(mock_cassette *c, const char *dir, bool create, sbx_err *err)
{
	sbx_cassette cas;
	sbx_cassette_problems probs = {SBX_STRBUF_INIT, 0, false};
	char sub[4096];
	int rc = -1;

	if (sbx_cassette_load(dir, SBX_CASSETTE_BODY_HASHES, &cas, &probs, NULL) != 0)
		refuse(c, &probs, err);
	else if (adopt(c, &cas, err) == 0)
		rc = 0;
	sbx_cassette_free(&cas);
	sbx_cassette_problems_free(&probs);
	snprintf(sub, sizeof(sub), "%s/%s", dir, SBX_CASSETTE_BODIES);
	if (rc == 0 && create && mkdir(sub, 0755) != 0 && errno != EEXIST) {
		sbx_err_set(err, "cassette %s: making %s: %s", c->name, sub, strerror(errno));
		rc = -1;
	}
	return rc;
}

mock_cassette *mock_cassette_open(const char *dir, bool create, const char *const *redact, size_t nredact,
				  sbx_err *err)
{
	mock_cassette *c = cassette_new(dir);
	char path[4096];
	struct stat st;
	size_t had;

	if (c == NULL || (c->dir = strdup(dir)) == NULL) {
		mock_cassette_free(c);
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, SBX_CASSETTE_FILE);
	if (create && stat(path, &st) != 0 && errno == ENOENT) {
		if (make_new(c, dir, err) != 0)
			goto fail;
	} else if (load(c, dir, create, err) != 0) {
		goto fail;
	}
	had = c->nredact;
	for (size_t i = 0; i < nredact; i++) {
		if (add_redact(c, redact[i], true, err) != 0)
			goto fail;
	}
	if (match_targets(c, err) != 0)
		goto fail;
	/* a name the recorded lines did not redact: they must hold tokens
	 * there too, or the file written would be refused */
	if (c->nredact > had && mock_cassette_check(c, err) != 0)
		goto fail;
	return c;
fail:
	mock_cassette_free(c);
	return NULL;
}

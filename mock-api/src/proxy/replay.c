/* replay: sbx-mock's replay mode (`--replay FILE`, see record.c for the
 * format): reading a recording, one JSON exchange per line, refusing the
 * first line that is not one with a message naming the line and what is
 * wrong; and matching each request against the next recorded exchange. */

#define _GNU_SOURCE
#include "proxy/record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int b64_val(char c)
{
	const char *p = c != '\0' ? strchr(mock_rec_b64chars, c) : NULL;

	return p != NULL ? (int)(p - mock_rec_b64chars) : -1;
}

/* What makes s not canonical padded base64 (RFC 4648 section 4), written
 * into buf; NULL when it is valid. */
static const char *b64_problem(const char *s, char *buf, size_t cap)
{
	size_t n = strlen(s);

	if (n % 4 != 0) {
		snprintf(buf, cap, "not valid base64: %zu characters, not a multiple of 4", n);
		return buf;
	}
	for (size_t i = 0; i < n; i++) {
		bool pad_ok = i >= n - 2 && (i == n - 1 || s[n - 1] == '=');

		if (s[i] == '=' && !pad_ok) {
			snprintf(buf, cap, "not valid base64: '=' at character %zu, before the end", i + 1);
			return buf;
		}
		if (s[i] != '=' && b64_val(s[i]) < 0) {
			snprintf(buf, cap, "not valid base64: character %zu is %s%c%s", i + 1,
				 (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? "'" : "byte ",
				 (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?',
				 (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? "'" : "");
			return buf;
		}
	}
	return NULL;
}

static char *b64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s), j = 0;
	char *o = malloc(n / 4 * 3 + 1);

	if (o == NULL || n % 4 != 0) {
		free(o);
		return NULL;
	}
	for (size_t i = 0; i < n; i += 4) {
		int a = b64_val(s[i]), b = b64_val(s[i + 1]);
		int c = s[i + 2] == '=' ? 0 : b64_val(s[i + 2]);
		int d = s[i + 3] == '=' ? 0 : b64_val(s[i + 3]);

		if (a < 0 || b < 0 || c < 0 || d < 0) {
			free(o);
			return NULL;
		}
		o[j++] = (char)((a << 2) | (b >> 4));
		if (s[i + 2] != '=')
			o[j++] = (char)(((b & 15) << 4) | (c >> 2));
		if (s[i + 3] != '=')
			o[j++] = (char)(((c & 3) << 6) | d);
	}
	o[j] = '\0';
	*len = j;
	return o;
}

/* The body `name` (text) or `name`_b64 (base64) of a recorded exchange;
 * "" when neither is there. NULL with *why set (what is wrong with the
 * base64, written into whybuf, or "out of memory"). */
static char *get_body(const cJSON *o, const char *name, size_t *len, const char **why, char *whybuf,
		      size_t whycap)
{
	char key[32];
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	char *out;

	*why = "out of memory";
	if (cJSON_IsString(v)) {
		*len = strlen(v->valuestring);
		return strdup(v->valuestring);
	}
	snprintf(key, sizeof(key), "%s_b64", name);
	v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (cJSON_IsString(v)) {
		const char *bad = b64_problem(v->valuestring, whybuf, whycap);

		if (bad != NULL) {
			*why = bad;
			return NULL;
		}
		out = b64_decode(v->valuestring, len);
		return out;
	}
	*len = 0;
	return strdup("");
}

/* The "redacted-N" name of a key the replay has already seen (lock held):
 * N, or 0 when it is new (buf untouched). Never learns the key. */
static size_t key_known(const mock_rec *rc, const char *key, char *buf, size_t cap)
{
	for (size_t i = 0; i < rc->nkeys; i++) {
		if (strcmp(rc->keys[i], key) == 0) {
			snprintf(buf, cap, "redacted-%zu", i + 1);
			return i + 1;
		}
	}
	return 0;
}

/* ---- replay ---- */


static char *str_or(const cJSON *o, const char *k, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return strdup(cJSON_IsString(v) ? v->valuestring : dflt);
}

/* What is missing or wrong in a recorded exchange ("no \"method\"", "status 700
 * is not 100-599"), NULL when the required members are there. */
static const char *exchange_shape_error(const cJSON *o, char *buf, size_t cap)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
	static const char *const need[] = {"method", "path"};

	if (!cJSON_IsObject(o))
		return cJSON_IsArray(o) ? "a JSON array, not an exchange object"
					: "a JSON scalar, not an exchange object";
	for (size_t i = 0; i < 2; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, need[i]);

		if (v == NULL) {
			snprintf(buf, cap, "the exchange has no \"%s\"", need[i]);
			return buf;
		}
		if (!cJSON_IsString(v)) {
			snprintf(buf, cap, "\"%s\" is not a string", need[i]);
			return buf;
		}
	}
	if (st == NULL)
		return "the exchange has no \"status\"";
	/* the range first: converting 1e300 to int is undefined */
	if (!cJSON_IsNumber(st) || !(st->valuedouble >= 100 && st->valuedouble <= 599) ||
	    st->valuedouble != (double)(int)st->valuedouble)
		return "\"status\" is not a whole number 100-599";
	return NULL;
}

static int parse_exchange(const cJSON *o, mock_rec_exchange *e, sbx_err *err)
{
	const cJSON *rh = cJSON_GetObjectItemCaseSensitive(o, "request_headers");
	const cJSON *hd = cJSON_GetObjectItemCaseSensitive(o, "response_headers");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
	const char *why = NULL, *bad;
	char buf[96], whybuf[96];

	memset(e, 0, sizeof(*e));
	bad = exchange_shape_error(o, buf, sizeof(buf));
	if (bad != NULL) {
		sbx_err_set(err, "%s", bad);
		return -1;
	}
	e->method = strdup(cJSON_GetObjectItemCaseSensitive(o, "method")->valuestring);
	e->path = strdup(cJSON_GetObjectItemCaseSensitive(o, "path")->valuestring);
	e->query = str_or(o, "query", "");
	e->key = strdup("");
	for (size_t i = 0; i < 3 && rh != NULL; i++) {
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(rh, mock_rec_auth_headers[i]);

		if (cJSON_IsString(k)) {
			free(e->key);
			e->key = strdup(k->valuestring);
			break;
		}
	}
	e->body = get_body(o, "request_body", &e->body_len, &why, whybuf, sizeof(whybuf));
	if (e->body == NULL) {
		sbx_err_set(err, "\"request_body_b64\": %s", why);
		return -1;
	}
	e->status = st->valueint;
	e->headers = cJSON_IsObject(hd) ? cJSON_Duplicate(hd, true) : cJSON_CreateObject();
	e->ctype = str_or(e->headers, "Content-Type", "");
	e->request_id = str_or(e->headers, "X-Request-Id", "");
	/* every copy: a repeated name must not come back as a second header */
	while (cJSON_GetObjectItemCaseSensitive(e->headers, "Content-Type") != NULL)
		cJSON_DeleteItemFromObjectCaseSensitive(e->headers, "Content-Type");
	while (cJSON_GetObjectItemCaseSensitive(e->headers, "X-Request-Id") != NULL)
		cJSON_DeleteItemFromObjectCaseSensitive(e->headers, "X-Request-Id");
	e->resp = get_body(o, "body", &e->resp_len, &why, whybuf, sizeof(whybuf));
	if (e->resp == NULL) {
		sbx_err_set(err, "\"body_b64\": %s", why);
		return -1;
	}
	if (e->method == NULL || e->path == NULL || e->query == NULL || e->key == NULL ||
	    e->headers == NULL || e->ctype == NULL || e->request_id == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	return 0;
}

/* Why a recording line is not JSON: where the parser stopped, and whether
 * the line was cut off (the last line of the file without its newline). */
static void json_line_error(const char *line, size_t n, bool last_unterminated, sbx_err *err)
{
	const char *end = NULL;
	cJSON *o = cJSON_ParseWithLengthOpts(line, n, &end, false);

	cJSON_Delete(o);
	if (o != NULL && end != NULL && end >= line)
		sbx_err_set(err, "data after the JSON object, from byte %zu (one exchange per line)",
			    (size_t)(end - line) + 1);
	else if (last_unterminated)
		sbx_err_set(err, "not valid JSON: the last line has no newline and stops at byte %zu "
			    "(a truncated recording?)", n);
	else
		sbx_err_set(err, "not valid JSON (the parser stopped at byte %zu of %zu)",
			    end != NULL && end >= line ? (size_t)(end - line) + 1 : (size_t)0, n);
}

/* Appends one exchange parsed from line (n bytes, NUL-terminated at n,
 * without its newline); err without the "replay NAME line N" prefix. */
static int add_line(mock_rec *rc, size_t *alloc, const char *line, size_t n, bool unterminated, sbx_err *err)
{
	const char *nul = memchr(line, '\0', n);
	cJSON *o;

	if (nul != NULL) {
		sbx_err_set(err, "a NUL byte at byte %zu (a recording is text)", (size_t)(nul - line) + 1);
		return -1;
	}
	if (rc->nex == *alloc) {
		size_t na = *alloc == 0 ? 64 : *alloc * 2;
		mock_rec_exchange *ne = realloc(rc->ex, na * sizeof(*ne));

		if (ne == NULL) {
			sbx_err_set(err, "out of memory");
			return -1;
		}
		rc->ex = ne;
		*alloc = na;
	}
	o = cJSON_ParseWithOpts(line, NULL, true); /* nothing may follow the object */
	if (o == NULL) {
		json_line_error(line, n, unterminated, err);
		return -1;
	}
	if (parse_exchange(o, &rc->ex[rc->nex], err) != 0) {
		mock_rec_exchange_free(&rc->ex[rc->nex]);
		cJSON_Delete(o);
		return -1;
	}
	rc->nex++;
	cJSON_Delete(o);
	return 0;
}

mock_rec *mock_rec_from_text(const char *text, size_t len, const char *name, bool quiet, sbx_err *err)
{
	mock_rec *rc = calloc(1, sizeof(*rc));
	size_t lineno = 0, alloc = 0, at = 0;
	char *line = NULL;

	if (rc == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&rc->lock, NULL);
	rc->quiet = quiet;
	while (at < len) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t n = (size_t)((nl != NULL ? nl : text + len) - (text + at));

		lineno++;
		if (n > 0) { /* an empty line is skipped */
			line = strndup(text + at, n);
			if (line == NULL)
				line = NULL; /* reported below */
			if (line == NULL || add_line(rc, &alloc, line, n, nl == NULL, err) != 0) {
				if (line == NULL)
					sbx_err_set(err, "out of memory");
				sbx_err_prefix(err, "replay %s line %zu", name, lineno);
				goto out_free;
			}
			free(line);
			line = NULL;
		}
		at += n + (nl != NULL);
	}
	if (rc->nex == 0) {
		sbx_err_set(err, "replay %s: no exchange in it (an empty recording answers nothing)", name);
		goto out_free;
	}
	return rc;

out_free:
	free(line);
	mock_rec_free(rc);
	return NULL;
}

mock_rec *mock_rec_from_file(const char *path, bool quiet, sbx_err *err)
{
	FILE *fp = fopen(path, "r");
	sbx_strbuf text = SBX_STRBUF_INIT;
	char buf[65536];
	struct stat st;
	size_t n;
	mock_rec *rc = NULL;

	if (fp == NULL) {
		sbx_err_set(err, "replay %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
		sbx_err_set(err, "replay %s: not a regular file", path);
		fclose(fp);
		return NULL;
	}
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		sbx_strbuf_append(&text, buf, n);
	if (ferror(fp))
		sbx_err_set(err, "replay %s: read error: %s", path, strerror(errno));
	else if (text.oom)
		sbx_err_set(err, "replay %s: out of memory", path);
	else
		rc = mock_rec_from_text(text.data != NULL ? text.data : "", text.len, path, quiet, err);
	sbx_strbuf_free(&text);
	fclose(fp);
	return rc;
}

static void describe(sbx_strbuf *sb, const char *method, const char *path, const char *query,
		     const char *key, const char *body, size_t len)
{
	sbx_strbuf_printf(sb, "%s %s%s%s (key %s, body %zu bytes%s%.*s%s)", method, path,
			  query[0] != '\0' ? "?" : "", query, key[0] != '\0' ? key : "none", len,
			  len > 0 ? ": " : "", len > 120 ? 120 : (int)len, body,
			  len > 120 ? "..." : "");
}

const mock_rec_exchange *mock_rec_match(mock_rec *rc, const mock_rec_request *rq, sbx_strbuf *why)
{
	char key[32] = "";
	const char *k = rq->key;
	mock_rec_exchange *e = NULL;
	bool match = false;
	size_t at;

	pthread_mutex_lock(&rc->lock);
	at = rc->next;
	if (k != NULL && key_known(rc, k, key, sizeof(key)) == 0 && at >= rc->nex)
		snprintf(key, sizeof(key), "%s", "a key new to this replay");
	if (at < rc->nex) {
		e = &rc->ex[at];
		size_t before = rc->nkeys;

		/* key identity: the Nth distinct key of the replay is redacted-N */
		if (k != NULL) {
			mock_rec_redact(rc, k, key, sizeof(key));
			match = strcmp(key, e->key) == 0;
		} else {
			match = e->key[0] == '\0';
		}
		match = match && strcmp(e->method, rq->method) == 0 && strcmp(e->path, rq->path) == 0 &&
			strcmp(e->query, rq->query) == 0 && e->body_len == rq->body_len &&
			(rq->body_len == 0 || memcmp(e->body, rq->body, rq->body_len) == 0);
		/* a divergent request teaches nothing, also when only its key fit */
		if (!match && rc->nkeys > before) {
			free(rc->keys[--rc->nkeys]);
			rc->keys[rc->nkeys] = NULL;
			snprintf(key, sizeof(key), "%s", "a key new to this replay");
		}
		if (match)
			rc->next++;
	}
	pthread_mutex_unlock(&rc->lock);
	if (match)
		return e;
	if (why != NULL) {
		if (e == NULL)
			sbx_strbuf_printf(why, "replay divergence: the recording ended after %zu exchanges; "
					  "received ", rc->nex);
		else
			sbx_strbuf_printf(why, "replay divergence at exchange %zu of %zu: expected ", at + 1,
					  rc->nex);
		if (e != NULL) {
			describe(why, e->method, e->path, e->query, e->key, e->body, e->body_len);
			sbx_strbuf_puts(why, "; received ");
		}
		describe(why, rq->method, rq->path, rq->query, key, rq->body != NULL ? rq->body : "",
			 rq->body_len);
	}
	return NULL;
}

void mock_rec_replay_answer(mock_rec *rc, mreq *r, mresp *out)
{
	char *query = mock_rec_raw_query(r);
	mock_rec_request rq = {.method = r->method, .path = r->path, .query = query != NULL ? query : "",
			       .body = r->body.data, .body_len = r->body.len};
	const mock_rec_exchange *e;
	sbx_strbuf msg = SBX_STRBUF_INIT;
	const cJSON *h;

	for (size_t i = 0; i < 3 && rq.key == NULL; i++)
		rq.key = mock_rec_header(r, mock_rec_auth_headers[i]);
	e = mock_rec_match(rc, &rq, &msg);
	free(query);
	if (e == NULL) {
		mock_rec_log(rc, "%s", sbx_strbuf_str(&msg));
		resp_error(out, 599, sbx_strbuf_str(&msg));
		sbx_strbuf_free(&msg);
		return;
	}
	if (e->request_id[0] != '\0')
		snprintf(r->request_id, sizeof(r->request_id), "%s", e->request_id);
	resp_raw(out, e->status, NULL, NULL, 0);
	out->body = malloc(e->resp_len + 1);
	if (out->body == NULL) {
		resp_error(out, 500, "out of memory");
		return;
	}
	memcpy(out->body, e->resp, e->resp_len);
	out->len = e->resp_len;
	if (e->ctype[0] != '\0')
		resp_header(out, "Content-Type", e->ctype);
	cJSON_ArrayForEach(h, e->headers) {
		if (cJSON_IsString(h))
			resp_header(out, h->string, h->valuestring);
	}
}

/* Record or replay mode, as configured; NULL (no error) when neither. */
mock_rec *mock_rec_new(const sbx_mock_config *cfg, sbx_err *err)
{
	if (cfg->record_upstream == NULL && cfg->replay == NULL)
		return NULL;
	if (cfg->record_upstream != NULL && cfg->replay != NULL) {
		sbx_err_set(err, "record and replay exclude each other");
		return NULL;
	}
	if (cfg->record_upstream != NULL)
		return mock_rec_recorder_new(cfg, err);
	return mock_rec_from_file(cfg->replay, cfg->quiet, err);
}

bool mock_rec_dispatch(mreq *r, mresp *out)
{
	mock_rec *rc = r->mock->rec;

	if (rc == NULL)
		return false;
	if (rc->upstream != NULL)
		mock_rec_proxy(rc, r, out);
	else
		mock_rec_replay_answer(rc, r, out);
	return true;
}

/* cassette: reading and checking cassette.jsonl's lines (sbx/cassette.h).
 * Pure: no I/O (cassette_io.c reads and writes the directory). A line is
 * refused for the first thing wrong with it, naming the file, the line and
 * the field, because a cassette is edited by hand and by prune and merge,
 * and a replay that silently skips a line answers 502 to a request that was
 * recorded. */
#include "sbx/cassette.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The keys of an exchange line, in the order the spec fixes. */
static const char *const exchange_keys[] = {"scheme", "host", "port", "method", "target", "request_headers",
					    "request_body", "status", "reason", "response_headers", "chunked",
					    "body", "n"};
#define NKEYS (sizeof exchange_keys / sizeof exchange_keys[0])

static const char *const header_keys[] = {"sbx_cassette", "created", "redacted_query"};

/* Never kept in response_headers: the mock re-frames every answer. */
static const char *const hop_by_hop[] = {"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding",
					 "TE", "Trailer", "Upgrade"};

/* Their values are redaction tokens, never the credential. */
static const char *const credential_headers[] = {"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie"};

void sbx_cassette_problems_free(sbx_cassette_problems *p)
{
	sbx_strbuf_free(&p->text);
	p->count = 0;
	p->truncated = false;
}

void sbx_cassette_exchange_free(sbx_cassette_exchange *ex)
{
	cJSON_Delete(ex->obj);
	free(ex->key_target);
	memset(ex, 0, sizeof *ex);
}

void sbx_cassette_free(sbx_cassette *cas)
{
	for (size_t i = 0; i < cas->nex; i++)
		sbx_cassette_exchange_free(&cas->ex[i]);
	free(cas->ex);
	for (size_t i = 0; i < cas->nredacted; i++)
		free(cas->redacted_query[i]);
	free(cas->redacted_query);
	free(cas->created);
	memset(cas, 0, sizeof *cas);
}

/* ---- small checks ---- */

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcasecmp(s, list[i]) == 0)
			return true;
	}
	return false;
}

/* RFC 9110 tchar: what a method and a header name are made of. */
static bool is_token(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!isalnum(c) && strchr("!#$%&'*+-.^_`|~", c) == NULL)
			return false;
	}
	return true;
}

/* A header value or reason phrase: no control character but tab. */
static bool is_field_text(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return false;
	}
	return true;
}

/* "redacted-N", N a decimal without a leading zero, N >= 1. */
static bool is_token_value(const char *s, unsigned long *n)
{
	if (strncmp(s, "redacted-", 9) != 0 || s[9] < '1' || s[9] > '9')
		return false;
	char *end = NULL;
	unsigned long v = strtoul(s + 9, &end, 10);
	if (*end != '\0' || strlen(s + 9) > 9)
		return false;
	if (n != NULL)
		*n = v;
	return true;
}

static bool is_hex64(const char *s)
{
	if (strlen(s) != 64)
		return false;
	for (size_t i = 0; i < 64; i++) {
		if (!isdigit((unsigned char)s[i]) && (s[i] < 'a' || s[i] > 'f'))
			return false;
	}
	return true;
}

/* Lowercase letters, digits, '.', '-', '_' and an IP literal's ':', '[', ']'. */
static bool is_host(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > SBX_CASSETTE_HOST_MAX || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!islower(c) && !isdigit(c) && strchr(".-_:[]", c) == NULL)
			return false;
	}
	return true;
}

/* An integer JSON number in [min, max]. */
static bool is_int(const cJSON *v, double min, double max)
{
	return cJSON_IsNumber(v) && v->valuedouble >= min && v->valuedouble <= max &&
	       v->valuedouble == (double)(int64_t)v->valuedouble;
}

/* "2024-05-01T12:00:00Z", fractions and numeric offsets allowed. */
static bool is_rfc3339(const char *s)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	for (size_t i = 0; shape[i] != '\0'; i++) {
		if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != shape[i])
			return false;
	}
	const char *p = s + sizeof shape - 1;
	if (*p == '.') {
		const char *f = ++p;
		while (isdigit((unsigned char)*p))
			p++;
		if (p == f || (size_t)(p - f) > SBX_CASSETTE_FRACTION_MAX)
			return false;
	}
	if (*p == 'Z')
		return p[1] == '\0';
	return (*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
	       p[3] == ':' && isdigit((unsigned char)p[4]) && isdigit((unsigned char)p[5]) && p[6] == '\0';
}

/* At most cap - 1 bytes of s for a message, each byte outside printable
 * ASCII as '?': a problem is one line, whatever a key or header name holds
 * (a "\n" in a name once split one problem in two: fuzz corpus
 * newline_in_header_name). */
static const char *printable(const char *s, char *out, size_t cap)
{
	size_t i = 0;
	for (; s[i] != '\0' && i + 1 < cap; i++)
		out[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
	out[i] = '\0';
	return out;
}

/* The object's keys are exactly `keys`, in that order. NULL, or what is wrong. */
static const char *check_keys(const cJSON *o, const char *const *keys, size_t n, char *buf, size_t cap)
{
	const cJSON *it = o->child;
	char name[61];
	for (size_t i = 0; i < n; i++, it = it->next) {
		if (it == NULL) {
			snprintf(buf, cap, "missing key \"%s\"", keys[i]);
			return buf;
		}
		if (strcmp(it->string, keys[i]) == 0)
			continue;
		bool known = false;
		for (size_t k = 0; k < n; k++)
			known = known || strcmp(it->string, keys[k]) == 0;
		if (known)
			snprintf(buf, cap, "key \"%s\" where \"%s\" belongs (keys go in the spec's order)",
				 it->string, keys[i]);
		else
			snprintf(buf, cap, "unknown key \"%s\"", printable(it->string, name, sizeof name));
		return buf;
	}
	if (it != NULL) {
		snprintf(buf, cap, "unknown key \"%s\"", printable(it->string, name, sizeof name));
		return buf;
	}
	return NULL;
}

/* ---- the header line ---- */

/* Parses `line` as one JSON value that fills it; NULL with what is wrong. */
static cJSON *parse_json(const char *line, size_t len, const char **why)
{
	if (memchr(line, '\0', len) != NULL) {
		*why = "a NUL byte in the line";
		return NULL;
	}
	const char *end = NULL;
	cJSON *o = cJSON_ParseWithLengthOpts(line, len, &end, false);
	if (o == NULL) {
		*why = "not JSON";
		return NULL;
	}
	if (end != line + len) {
		cJSON_Delete(o);
		*why = "more than one JSON value in the line";
		return NULL;
	}
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		*why = "not a JSON object";
		return NULL;
	}
	return o;
}

/* A query parameter name as it stands in a target: printable, no blank, none of "&=?#". */
bool sbx_cassette_query_name_ok(const char *s)
{
	if (s[0] == '\0' || strlen(s) > SBX_CASSETTE_QUERY_NAME_MAX)
		return false;
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || strchr("&=?#", *s) != NULL)
			return false;
	}
	return true;
}

static const char *header_fields(const cJSON *o, sbx_cassette *cas, char *buf, size_t cap)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "sbx_cassette");
	if (v == NULL)
		return "not a cassette header (no \"sbx_cassette\" version: line 1 must be the header)";
	if (!is_int(v, 0, 1e9) || v->valuedouble != SBX_CASSETTE_VERSION) {
		char *t = cJSON_PrintUnformatted(v);
		snprintf(buf, cap, "cassette format version %.20s is not one this reader knows (%d)",
			 t != NULL ? t : "?", SBX_CASSETTE_VERSION);
		free(t);
		return buf;
	}
	const char *bad = check_keys(o, header_keys, 3, buf, cap);
	if (bad != NULL)
		return bad;
	v = cJSON_GetObjectItemCaseSensitive(o, "created");
	if (!cJSON_IsString(v) || !is_rfc3339(v->valuestring))
		return "\"created\" is not an RFC 3339 time (2024-05-01T12:00:00Z)";
	const cJSON *rq = cJSON_GetObjectItemCaseSensitive(o, "redacted_query");
	if (!cJSON_IsArray(rq))
		return "\"redacted_query\" is not an array of names";
	if (cJSON_GetArraySize(rq) > (int)SBX_CASSETTE_REDACT_MAX) {
		snprintf(buf, cap, "\"redacted_query\" names %d query parameters (at most %u)", cJSON_GetArraySize(rq),
			 SBX_CASSETTE_REDACT_MAX);
		return buf;
	}
	size_t n = (size_t)cJSON_GetArraySize(rq), i = 0;
	cas->redacted_query = calloc(n + 1, sizeof *cas->redacted_query);
	cas->created = sbx_strdup(v->valuestring);
	if (cas->redacted_query == NULL || cas->created == NULL)
		return "out of memory";
	cJSON_ArrayForEach(v, rq) {
		if (!cJSON_IsString(v) || !sbx_cassette_query_name_ok(v->valuestring)) {
			snprintf(buf, cap, "\"redacted_query\"[%zu] is not a query parameter name (1-%u bytes of "
					   "printable ASCII, none of = & # ? or space)", i, SBX_CASSETTE_QUERY_NAME_MAX);
			return buf;
		}
		cas->redacted_query[i] = sbx_strdup(v->valuestring);
		if (cas->redacted_query[i++] == NULL)
			return "out of memory";
		cas->nredacted = i;
	}
	return NULL;
}

int sbx_cassette_parse_header(const char *line, size_t len, const char *name, sbx_cassette *cas, sbx_err *err)
{
	const char *why = NULL;
	char buf[200];
	cJSON *o = parse_json(line, len, &why);
	if (o != NULL)
		why = header_fields(o, cas, buf, sizeof buf);
	cJSON_Delete(o);
	if (why == NULL)
		return 0;
	sbx_err_set(err, "%s:1: %s", name, why);
	return -1;
}

/* ---- an exchange line ---- */

static const char *body_field(const cJSON *v, const char *key, sbx_cassette_body *b, char *buf, size_t cap)
{
	static const char *const keys[] = {"sha256", "size"};
	const char *bad = cJSON_IsObject(v) ? check_keys(v, keys, 2, buf, cap) : "not an object";
	const cJSON *sha = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "sha256") : NULL;
	if (bad == NULL && !(cJSON_IsString(sha) && is_hex64(sha->valuestring)))
		bad = "\"sha256\" is not 64 lowercase hex digits";
	if (bad == NULL && !is_int(cJSON_GetObjectItemCaseSensitive(v, "size"), 0, SBX_CASSETTE_SIZE_MAX))
		bad = "\"size\" is not a whole number of bytes";
	if (bad != NULL) {
		char tmp[160];
		snprintf(tmp, sizeof tmp, "%s", bad);
		snprintf(buf, cap, "\"%s\": %s", key, tmp);
		return buf;
	}
	snprintf(b->sha256, sizeof b->sha256, "%s", cJSON_GetObjectItemCaseSensitive(v, "sha256")->valuestring);
	b->size = (uint64_t)cJSON_GetObjectItemCaseSensitive(v, "size")->valuedouble;
	return NULL;
}

/* request_headers / response_headers: [name, value] pairs. */
static const char *headers_field(const cJSON *arr, const char *key, bool response, char *buf, size_t cap)
{
	if (!cJSON_IsArray(arr)) {
		snprintf(buf, cap, "\"%s\" is not an array of [name, value] pairs", key);
		return buf;
	}
	size_t i = 0, bytes = 0;
	const cJSON *p = NULL;
	if (cJSON_GetArraySize(arr) > (int)SBX_CASSETTE_HEADERS_MAX) {
		snprintf(buf, cap, "\"%s\" holds %d headers (at most %u)", key, cJSON_GetArraySize(arr),
			 SBX_CASSETTE_HEADERS_MAX);
		return buf;
	}
	cJSON_ArrayForEach(p, arr) {
		const cJSON *nm = cJSON_GetArrayItem(p, 0), *val = cJSON_GetArrayItem(p, 1);
		if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsString(nm) || !cJSON_IsString(val)) {
			snprintf(buf, cap, "\"%s\"[%zu] is not a [name, value] pair of strings", key, i);
			return buf;
		}
		if (!is_token(nm->valuestring, 256) || !is_field_text(val->valuestring)) {
			char shown[41];
			snprintf(buf, cap, "\"%s\"[%zu] (%s): %s", key, i, printable(nm->valuestring, shown, sizeof shown),
				 is_token(nm->valuestring, 256) ? "a control character in the value"
								: "not a header name");
			return buf;
		}
		bytes += strlen(nm->valuestring) + strlen(val->valuestring);
		if (bytes > SBX_CASSETTE_HEADER_BYTES) {
			snprintf(buf, cap, "\"%s\": over %u bytes of names and values in all (at %zu)", key,
				 SBX_CASSETTE_HEADER_BYTES, i);
			return buf;
		}
		if (response && in_list(nm->valuestring, hop_by_hop, sizeof hop_by_hop / sizeof hop_by_hop[0])) {
			snprintf(buf, cap, "\"%s\"[%zu]: hop-by-hop header %s is never kept", key, i, nm->valuestring);
			return buf;
		}
		if (in_list(nm->valuestring, credential_headers, 4) && !is_token_value(val->valuestring, NULL)) {
			snprintf(buf, cap, "\"%s\"[%zu]: the %s value is not a redaction token (redacted-N)", key, i,
				 nm->valuestring);
			return buf;
		}
		i++;
	}
	return NULL;
}

/* Calls fn with the offset and length of the value of each query
 * parameter of t named names[k]: the parameters run from '?' to the end or
 * a '#' (a fragment is no query), split at '&'; a name without '=' has no
 * value. The mock's redaction splits a target the same way. */
static void each_query_value(const char *t, char *const *names, size_t n,
			     void (*fn)(size_t at, size_t len, size_t k, void *ud), void *ud)
{
	const char *q = strchr(t, '?');
	while (q != NULL) {
		q++;
		size_t plen = strcspn(q, "&#"), nlen = strcspn(q, "=&#");
		for (size_t k = 0; k < n && nlen < plen; k++) {
			if (strlen(names[k]) == nlen && memcmp(q, names[k], nlen) == 0) {
				fn((size_t)(q - t) + nlen + 1, plen - nlen - 1, k, ud);
				break;
			}
		}
		q = q[plen] == '&' ? q + plen : NULL;
	}
}

typedef struct query_edit {
	const char *target;
	char *const *names;
	const char *bad;   /* the first name whose value is not a token */
	unsigned long num; /* renumber: the offset; max: the highest token */
	sbx_strbuf out;
	size_t copied;     /* bytes of target already in out */
} query_edit;

static void query_check_fn(size_t at, size_t len, size_t k, void *ud)
{
	query_edit *q = ud;
	char val[24] = "";
	if (len < sizeof val)
		memcpy(val, q->target + at, len);
	if (q->bad == NULL && !is_token_value(val, NULL))
		q->bad = q->names[k];
}

static void key_blank_fn(size_t at, size_t len, size_t k, void *ud)
{
	query_edit *q = ud;
	(void)k;
	sbx_strbuf_append(&q->out, q->target + q->copied, at - q->copied);
	q->copied = at + len;
}

char *sbx_cassette_key_target(const char *target, char *const *names, size_t n)
{
	query_edit q = {target, names, NULL, 0, SBX_STRBUF_INIT, 0};
	each_query_value(target, names, n, key_blank_fn, &q);
	sbx_strbuf_puts(&q.out, target + q.copied);
	if (q.out.oom) {
		sbx_strbuf_free(&q.out);
		return NULL;
	}
	return sbx_strbuf_detach(&q.out, NULL);
}

/* The value of each redacted query parameter of target must be a token. */
static const char *target_field(const char *t, const sbx_cassette *cas, char *buf, size_t cap)
{
	size_t len = strlen(t);
	if (t[0] != '/' || len > SBX_CASSETTE_TARGET_MAX) {
		snprintf(buf, cap, "\"target\" is not an origin-form request-target (\"/path?query\") of at most %u "
				   "bytes", SBX_CASSETTE_TARGET_MAX);
		return buf;
	}
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] == 0x7f)
			return "\"target\" holds a space or a control character";
	}
	if (cas == NULL)
		return NULL;
	query_edit q = {t, cas->redacted_query, NULL, 0, SBX_STRBUF_INIT, 0};
	each_query_value(t, cas->redacted_query, cas->nredacted, query_check_fn, &q);
	if (q.bad == NULL)
		return NULL;
	snprintf(buf, cap, "\"target\": the value of query parameter %.64s is not a redaction token (redacted-N)",
		 q.bad);
	return buf;
}

/* Fills ex from its object; NULL, or what is wrong. */
static const char *exchange_fields(sbx_cassette_exchange *ex, const sbx_cassette *cas, char *buf, size_t cap)
{
	const cJSON *o = ex->obj;
	const char *bad = check_keys(o, exchange_keys, NKEYS, buf, cap);
	if (bad != NULL)
		return bad;
	const cJSON *v[NKEYS];
	for (size_t i = 0; i < NKEYS; i++)
		v[i] = cJSON_GetObjectItemCaseSensitive(o, exchange_keys[i]);
	ex->scheme = cJSON_GetStringValue(v[0]);
	if (ex->scheme == NULL || (strcmp(ex->scheme, "http") != 0 && strcmp(ex->scheme, "https") != 0))
		return "\"scheme\" is neither \"http\" nor \"https\"";
	ex->host = cJSON_GetStringValue(v[1]);
	if (ex->host == NULL || !is_host(ex->host))
		return "\"host\" is not a lowercase host name without a trailing dot";
	if (!is_int(v[2], 1, 65535))
		return "\"port\" is not a port (1..65535)";
	ex->port = (int)v[2]->valuedouble;
	ex->method = cJSON_GetStringValue(v[3]);
	if (ex->method == NULL || !is_token(ex->method, SBX_CASSETTE_METHOD_MAX))
		return "\"method\" is not an HTTP method";
	ex->target = cJSON_GetStringValue(v[4]);
	if (ex->target == NULL)
		return "\"target\" is not a string";
	if ((bad = target_field(ex->target, cas, buf, cap)) != NULL)
		return bad;
	ex->key_target = sbx_cassette_key_target(ex->target, cas != NULL ? cas->redacted_query : NULL,
						 cas != NULL ? cas->nredacted : 0);
	if (ex->key_target == NULL)
		return "out of memory";
	if ((bad = headers_field(v[5], "request_headers", false, buf, cap)) != NULL)
		return bad;
	ex->has_request_body = !cJSON_IsNull(v[6]);
	if (ex->has_request_body && (bad = body_field(v[6], "request_body", &ex->request_body, buf, cap)) != NULL)
		return bad;
	if (!is_int(v[7], 100, 599))
		return "\"status\" is not an HTTP status (100..599)";
	ex->status = (int)v[7]->valuedouble;
	ex->reason = cJSON_GetStringValue(v[8]);
	if (ex->reason == NULL || !is_field_text(ex->reason) || strlen(ex->reason) > SBX_CASSETTE_REASON_MAX)
		return "\"reason\" is not a reason phrase (at most 256 bytes, no control character but tab)";
	if ((bad = headers_field(v[9], "response_headers", true, buf, cap)) != NULL)
		return bad;
	if (!cJSON_IsBool(v[10]))
		return "\"chunked\" is not true or false";
	ex->chunked = cJSON_IsTrue(v[10]);
	if ((bad = body_field(v[11], "body", &ex->body, buf, cap)) != NULL)
		return bad;
	if (!is_int(v[12], 1, 1e9))
		return "\"n\" is not a count from 1";
	ex->n = (unsigned long)v[12]->valuedouble;
	return NULL;
}

int sbx_cassette_exchange_from_json(cJSON *obj, const char *name, size_t lineno, const sbx_cassette *cas,
				    sbx_cassette_exchange *ex, sbx_err *err)
{
	char buf[240];
	memset(ex, 0, sizeof *ex);
	ex->line = lineno;
	ex->obj = obj;
	const char *why = cJSON_IsObject(obj) ? exchange_fields(ex, cas, buf, sizeof buf) : "not a JSON object";
	if (why == NULL)
		return 0;
	if (lineno > 0)
		sbx_err_set(err, "%s:%zu: %s", name, lineno, why);
	else
		sbx_err_set(err, "%s: %s", name, why);
	return -1;
}

int sbx_cassette_parse_exchange(const char *line, size_t len, const char *name, size_t lineno,
				const sbx_cassette *cas, sbx_cassette_exchange *ex, sbx_err *err)
{
	const char *why = NULL;
	cJSON *o = parse_json(line, len, &why);
	if (o != NULL)
		return sbx_cassette_exchange_from_json(o, name, lineno, cas, ex, err);
	memset(ex, 0, sizeof *ex);
	ex->line = lineno;
	sbx_err_set(err, "%s:%zu: %s", name, lineno, why);
	return -1;
}

/* ---- order and keys ---- */

static int cmp_str(const char *a, const char *b)
{
	int c = strcmp(a, b);
	return (c > 0) - (c < 0);
}

static int cmp_body(const sbx_cassette_exchange *a, const sbx_cassette_exchange *b)
{
	if (a->has_request_body != b->has_request_body)
		return a->has_request_body ? 1 : -1;
	return a->has_request_body ? cmp_str(a->request_body.sha256, b->request_body.sha256) : 0;
}

/* The request key alone, without n. */
static int cmp_key(const sbx_cassette_exchange *a, const sbx_cassette_exchange *b)
{
	int c = cmp_str(a->scheme, b->scheme);
	if (c == 0)
		c = cmp_str(a->host, b->host);
	if (c == 0)
		c = (a->port > b->port) - (a->port < b->port);
	if (c == 0)
		c = cmp_str(a->key_target != NULL ? a->key_target : a->target,
			    b->key_target != NULL ? b->key_target : b->target);
	if (c == 0)
		c = cmp_str(a->method, b->method);
	return c != 0 ? c : cmp_body(a, b);
}

/* The order lines are written in: by the request key (the request body's
 * hash last), then n, so the k-th answers to one request stand together,
 * as the mock's writer orders them (INTERNET.md). */
int sbx_cassette_compare(const sbx_cassette_exchange *a, const sbx_cassette_exchange *b)
{
	int c = cmp_key(a, b);

	return c != 0 ? c : (a->n > b->n) - (a->n < b->n);
}

/* n last, so one key's lines come together. */
static int cmp_key_then_n(const void *pa, const void *pb)
{
	const sbx_cassette_exchange *a = *(const sbx_cassette_exchange *const *)pa;
	const sbx_cassette_exchange *b = *(const sbx_cassette_exchange *const *)pb;
	int c = cmp_key(a, b);
	return c != 0 ? c : (a->n > b->n) - (a->n < b->n);
}

int sbx_cassette_compare_key(const sbx_cassette_exchange *a, const sbx_cassette_exchange *b)
{
	return cmp_key(a, b);
}

bool sbx_cassette_same_key(const sbx_cassette_exchange *a, const sbx_cassette_exchange *b)
{
	return sbx_cassette_compare(a, b) == 0;
}

static int cmp_exchange(const void *a, const void *b)
{
	return sbx_cassette_compare(a, b);
}

void sbx_cassette_sort(sbx_cassette *cas)
{
	if (cas->nex > 1)
		qsort(cas->ex, cas->nex, sizeof *cas->ex, cmp_exchange);
}

/* ---- a whole text ---- */

static bool add_problem(sbx_cassette_problems *p, const char *msg)
{
	if (p == NULL)
		return true;
	if (p->count >= SBX_CASSETTE_MAX_PROBLEMS) {
		p->truncated = true;
		return false;
	}
	sbx_strbuf_printf(&p->text, "%s\n", msg);
	p->count++;
	return true;
}

static bool add_problemf(sbx_cassette_problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool add_problemf(sbx_cassette_problems *p, const char *fmt, ...)
{
	sbx_err e;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof e.msg, fmt, ap);
	va_end(ap);
	return add_problem(p, e.msg);
}

/* Each request's n run 1, 2, 3...: a gap means a lost line, and replay's
 * "the k-th gets n=k" would answer the wrong one. */
static size_t check_sequences(const sbx_cassette *cas, const char *name, sbx_cassette_problems *probs)
{
	size_t bad = 0;
	const sbx_cassette_exchange **v = calloc(cas->nex + 1, sizeof *v);
	if (v == NULL)
		return add_problemf(probs, "%s: out of memory", name), 1;
	for (size_t i = 0; i < cas->nex; i++)
		v[i] = &cas->ex[i];
	qsort(v, cas->nex, sizeof *v, cmp_key_then_n);
	for (size_t i = 0; i < cas->nex; i++) {
		bool same = i > 0 && cmp_key(v[i - 1], v[i]) == 0;
		unsigned long want = same ? v[i - 1]->n + 1 : 1;
		if (same && v[i]->n == v[i - 1]->n)
			continue; /* a repeat: take_exchange said so */
		if (v[i]->n != want) {
			bad++;
			add_problemf(probs, "%s:%zu: n=%lu but this request's n=%lu is not in the cassette (n counts "
					    "1, 2, 3... per request)", name, v[i]->line, v[i]->n, want);
		}
	}
	free(v);
	return bad;
}

/* The next line of text at *at: its length without '\n'; *nl says whether
 * it had one. */
static size_t next_line(const char *text, size_t len, size_t at, bool *nl)
{
	const char *e = memchr(text + at, '\n', len - at);
	*nl = e != NULL;
	return e != NULL ? (size_t)(e - (text + at)) : len - at;
}

/* One exchange line: parsed, appended to cas, checked against the line
 * before it. false when reading must stop. */
static bool take_exchange(const char *line, size_t n, size_t lineno, const char *name, sbx_cassette *cas,
			  sbx_cassette_problems *probs, size_t *bad)
{
	sbx_err e = {""};
	sbx_cassette_exchange ex;
	if (n > SBX_CASSETTE_LINE_MAX) {
		(*bad)++;
		return add_problemf(probs, "%s:%zu: a line of %zu bytes (at most %u)", name, lineno, n,
				    SBX_CASSETTE_LINE_MAX);
	}
	if (sbx_cassette_parse_exchange(line, n, name, lineno, cas, &ex, &e) != 0) {
		sbx_cassette_exchange_free(&ex);
		(*bad)++;
		return add_problem(probs, e.msg);
	}
	if (cas->nex >= SBX_CASSETTE_MAX_EXCHANGES) {
		sbx_cassette_exchange_free(&ex);
		(*bad)++;
		add_problemf(probs, "%s:%zu: more than %u exchanges", name, lineno, SBX_CASSETTE_MAX_EXCHANGES);
		return false;
	}
	/* the array doubles (at 16, 32, 64...): one realloc a line copied the
	 * whole array each time, minutes for 65,536 lines under ASan */
	bool full = cas->nex == 0 || (cas->nex >= 16 && (cas->nex & (cas->nex - 1)) == 0);
	sbx_cassette_exchange *g = full ? realloc(cas->ex, (cas->nex < 16 ? 16 : 2 * cas->nex) * sizeof *g) : cas->ex;
	if (g == NULL) {
		sbx_cassette_exchange_free(&ex);
		(*bad)++;
		add_problemf(probs, "%s: out of memory", name);
		return false;
	}
	cas->ex = g;
	const sbx_cassette_exchange *prev = cas->nex > 0 ? &cas->ex[cas->nex - 1] : NULL;
	int c = prev != NULL ? sbx_cassette_compare(prev, &ex) : -1;
	if (c == 0) {
		(*bad)++;
		add_problemf(probs, "%s:%zu: the same request and n=%lu as line %zu", name, lineno, ex.n, prev->line);
	} else if (c > 0) {
		(*bad)++;
		add_problemf(probs, "%s:%zu: out of order after line %zu (lines are sorted by scheme, host, port, "
				    "target with redacted query values blanked, method, request body's hash, then n)", name, lineno, prev->line);
	}
	cas->ex[cas->nex++] = ex;
	return true;
}

int sbx_cassette_parse_text(const char *text, size_t len, const char *name, sbx_cassette *cas,
			    sbx_cassette_problems *probs)
{
	size_t bad = 0, at = 0, lineno = 0;
	bool nl = false;
	memset(cas, 0, sizeof *cas);
	if (len == 0)
		return add_problemf(probs, "%s: empty (line 1 must be the cassette header)", name), -1;
	while (at < len) {
		size_t n = next_line(text, len, at, &nl);
		const char *line = text + at;
		lineno++;
		at += n + (nl ? 1 : 0);
		if (!nl) {
			bad++;
			add_problemf(probs, "%s:%zu: the last line has no newline (a write cut short?)", name, lineno);
		}
		if (n == 0) {
			bad++;
			if (!add_problemf(probs, "%s:%zu: an empty line", name, lineno))
				break;
			continue;
		}
		if (lineno == 1) {
			sbx_err e = {""};
			if (n > SBX_CASSETTE_LINE_MAX || sbx_cassette_parse_header(line, n, name, cas, &e) != 0) {
				add_problem(probs, e.msg[0] != '\0' ? e.msg : "line 1: too long for a header");
				return -1; /* without the header, no line can be read right */
			}
			continue;
		}
		if (!take_exchange(line, n, lineno, name, cas, probs, &bad))
			break;
	}
	bad += check_sequences(cas, name, probs);
	return bad == 0 ? 0 : -1;
}

/* ---- redaction tokens ---- */

/* Calls fn on each redaction token's string item of ex. */
static int each_token(sbx_cassette_exchange *ex, int (*fn)(cJSON *item, void *ud), void *ud)
{
	static const char *const lists[] = {"request_headers", "response_headers"};
	for (size_t l = 0; l < 2; l++) {
		cJSON *p = NULL;
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(ex->obj, lists[l])) {
			cJSON *val = cJSON_GetArrayItem(p, 1);
			if (in_list(cJSON_GetStringValue(cJSON_GetArrayItem(p, 0)), credential_headers, 4) &&
			    is_token_value(cJSON_GetStringValue(val), NULL) && fn(val, ud) != 0)
				return -1;
		}
	}
	return 0;
}

static int max_token_fn(cJSON *item, void *ud)
{
	unsigned long n = 0, *max = ud;
	if (is_token_value(item->valuestring, &n) && n > *max)
		*max = n;
	return 0;
}

/* Whether the query value at target[at, at+len) is a redaction token,
 * its number into *n. */
static bool query_value_token(const query_edit *q, size_t at, size_t len, unsigned long *n)
{
	char val[24] = "";
	*n = 0;
	if (len < sizeof val)
		memcpy(val, q->target + at, len);
	return is_token_value(val, n);
}

static void query_max_fn(size_t at, size_t len, size_t k, void *ud)
{
	query_edit *q = ud;
	unsigned long n;
	(void)k;
	if (query_value_token(q, at, len, &n) && n > q->num)
		q->num = n;
}

unsigned long sbx_cassette_max_token(const sbx_cassette *cas)
{
	unsigned long max = 0;
	for (size_t i = 0; i < cas->nex; i++) {
		query_edit q = {cas->ex[i].target, cas->redacted_query, NULL, 0, SBX_STRBUF_INIT, 0};
		each_token(&cas->ex[i], max_token_fn, &max);
		each_query_value(cas->ex[i].target, cas->redacted_query, cas->nredacted, query_max_fn, &q);
		if (q.num > max)
			max = q.num;
	}
	return max;
}

static int renumber_fn(cJSON *item, void *ud)
{
	unsigned long n = 0;
	char buf[32];
	is_token_value(item->valuestring, &n);
	snprintf(buf, sizeof buf, "redacted-%lu", n + *(const unsigned long *)ud);
	return cJSON_SetValuestring(item, buf) == NULL ? -1 : 0;
}

static void query_renumber_fn(size_t at, size_t len, size_t k, void *ud)
{
	query_edit *q = ud;
	unsigned long n;
	(void)k;
	if (!query_value_token(q, at, len, &n))
		return;
	sbx_strbuf_append(&q->out, q->target + q->copied, at - q->copied);
	sbx_strbuf_printf(&q->out, "redacted-%lu", n + q->num);
	q->copied = at + len;
}

int sbx_cassette_renumber(sbx_cassette_exchange *ex, const sbx_cassette *cas, unsigned long offset)
{
	if (each_token(ex, renumber_fn, &offset) != 0)
		return -1;
	query_edit q = {ex->target, cas->redacted_query, NULL, offset, SBX_STRBUF_INIT, 0};
	each_query_value(ex->target, cas->redacted_query, cas->nredacted, query_renumber_fn, &q);
	if (q.copied == 0)
		return 0;
	sbx_strbuf_puts(&q.out, ex->target + q.copied);
	cJSON *t = cJSON_GetObjectItemCaseSensitive(ex->obj, "target");
	int rc = q.out.oom || cJSON_SetValuestring(t, sbx_strbuf_str(&q.out)) == NULL ? -1 : 0;
	ex->target = t->valuestring;
	sbx_strbuf_free(&q.out);
	return rc;
}

void sbx_cassette_request_text(sbx_strbuf *out, const sbx_cassette_exchange *ex)
{
	sbx_strbuf_printf(out, "%s %s://%s:%d%s", ex->method, ex->scheme, ex->host, ex->port, ex->target);
}

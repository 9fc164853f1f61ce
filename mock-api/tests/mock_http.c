/* mock_http: the mock's integration-test client on libsbx's HTTP client;
 * see mock_http.h. */
#include "mock_http.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sbx/http_client.h"

bool th_strict_json = true;

/* Well-formed UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF); written apart from the mock's own check on purpose. */
static bool utf8_ok(const unsigned char *s, size_t n, size_t *bad)
{
	for (size_t i = 0; i < n;) {
		size_t k = s[i] < 0x80 ? 1 : s[i] >= 0xc2 && s[i] <= 0xdf ? 2 : s[i] >= 0xe0 && s[i] <= 0xef ? 3
			   : s[i] >= 0xf0 && s[i] <= 0xf4 ? 4 : 0;
		uint32_t cp;

		*bad = i;
		if (k == 0 || i + k > n)
			return false;
		cp = k == 1 ? s[i] : k == 2 ? s[i] & 0x1fu : k == 3 ? s[i] & 0x0fu : s[i] & 0x07u;
		for (size_t j = 1; j < k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + j] & 0x3fu);
		}
		if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k;
	}
	return true;
}

/* Why a JSON answer is not exactly one JSON value in UTF-8, or NULL. */
static const char *strict_json_problem(const sbx_strbuf *b, size_t *off)
{
	const char *end = NULL;
	cJSON *j;

	*off = 0;
	if (b->len == 0)
		return "empty body";
	if (!utf8_ok((const unsigned char *)b->data, b->len, off))
		return "invalid UTF-8";
	j = cJSON_ParseWithLengthOpts(b->data, b->len, &end, false);
	if (j == NULL) {
		*off = end != NULL ? (size_t)(end - b->data) : 0;
		return "not JSON";
	}
	cJSON_Delete(j);
	for (*off = (size_t)(end - b->data); *off < b->len; (*off)++) {
		if (strchr(" \t\r\n", b->data[*off]) == NULL || b->data[*off] == '\0')
			return "trailing data after the JSON value";
	}
	return NULL;
}

static const char *ndjson_problem(const sbx_strbuf *b, size_t *off)
{
	size_t start = 0;

	while (start < b->len) {
		const char *nl = memchr(b->data + start, '\n', b->len - start);
		size_t end = nl != NULL ? (size_t)(nl - b->data) : b->len;
		sbx_strbuf line = {.data = b->data + start, .len = end - start};
		const char *why = end > start ? strict_json_problem(&line, off) : NULL;

		if (why != NULL) {
			*off += start;
			return why;
		}
		start = end + 1;
	}
	return NULL;
}

/* Every answer the mock sends as JSON must parse strictly (issue 16): a
 * test that meets one that does not stops here, saying which. */
static void check_strict(const th_req *rq, const th_resp *out)
{
	char ctype[128];
	const char *why;
	size_t off;

	if (!th_strict_json || rq->raw_ok || out->curl_rc != CURLE_OK || out->status == 204 ||
	    (rq->method != NULL && strcmp(rq->method, "HEAD") == 0))
		return;
	if (!th_header(out, "Content-Type", ctype, sizeof(ctype)) || strstr(ctype, "json") == NULL)
		return;
	if (strstr(ctype, "ndjson") != NULL) {
		/* a stream: each line one JSON value */
		why = ndjson_problem(&out->body, &off);
	} else {
		why = strict_json_problem(&out->body, &off);
	}
	if (why == NULL)
		return;
	fprintf(stderr, "mock_http: %s %s answered %ld with %s at byte %zu of %zu: %.*s\n", rq->method != NULL ? rq->method : "GET",
		rq->path, out->status, why, off, out->body.len, (int)(out->body.len > 300 ? 300 : out->body.len),
		out->body.data);
	abort();
}

void th_do(const th_req *rq, th_resp *out)
{
	char key[512], admin[512];
	sbx_http_opts o = {.base_url = rq->url, .timeout_ms = rq->timeout_ms > 0 ? rq->timeout_ms : 30000L,
			   .ca_pem = rq->ca_pem};
	sbx_http_req hq = {
		.method = rq->method,
		.path = rq->path,
		.headers = {rq->key != NULL ? key : NULL, rq->admin != NULL ? admin : NULL, rq->extra_header},
		.body = rq->body,
		.body_len = rq->body == NULL ? 0 : rq->body_len != 0 ? rq->body_len : strlen(rq->body),
		.content_type = rq->body != NULL ? rq->ctype : NULL,
	};
	sbx_http_client *c = sbx_http_client_new(&o, NULL);
	sbx_http_resp r;

	memset(out, 0, sizeof(*out));
	snprintf(key, sizeof(key), "X-Api-Key: %s", rq->key != NULL ? rq->key : "");
	snprintf(admin, sizeof(admin), "X-Mock-Admin-Token: %s", rq->admin != NULL ? rq->admin : "");
	if (c == NULL) {
		out->curl_rc = CURLE_OUT_OF_MEMORY;
		return;
	}
	(void)sbx_http_request(c, &hq, &r, NULL);
	out->curl_rc = (CURLcode)r.curl_code;
	out->status = r.status;
	out->seconds = r.seconds;
	out->body = r.body;
	out->headers = r.headers;
	if (out->body.len > 0)
		out->json = cJSON_ParseWithLength(out->body.data, out->body.len);
	sbx_http_client_free(c);
	check_strict(rq, out);
}

void th_resp_free(th_resp *r)
{
	sbx_strbuf_free(&r->body);
	sbx_strbuf_free(&r->headers);
	cJSON_Delete(r->json);
	r->json = NULL;
}

bool th_header(const th_resp *r, const char *name, char *buf, size_t cap)
{
	sbx_http_resp hr = {.headers = r->headers};

	return sbx_http_header(&hr, name, buf, cap);
}

const char *th_data_str(const th_resp *r, const char *key)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(r->json, "data");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

void th_json(const char *url, const char *key, const char *method, const char *path,
	     const char *body, th_resp *out)
{
	th_req rq = {0};

	rq.method = method;
	rq.url = url;
	rq.path = path;
	rq.key = key;
	rq.body = body;
	th_do(&rq, out);
}

void th_admin(const char *url, const char *token, const char *method, const char *path,
	      const char *body, th_resp *out)
{
	th_req rq = {0};

	rq.method = method;
	rq.url = url;
	rq.path = path;
	rq.admin = token;
	rq.body = body;
	th_do(&rq, out);
}

int th_header_count(const th_resp *r, const char *name)
{
	const char *p = sbx_strbuf_str(&r->headers);
	size_t n = strlen(name);
	int count = 0;

	while (p != NULL && *p != '\0') {
		if (strncasecmp(p, name, n) == 0 && p[n] == ':')
			count++;
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return count;
}

/* mock_http: the mock's integration-test client on libsbx's HTTP client;
 * see mock_http.h. */
#include "mock_http.h"

#include <stdio.h>
#include <string.h>

#include "sbx/http.h"

void th_do(const th_req *rq, th_resp *out)
{
	char key[512], admin[512];
	sbx_http_opts o = {.base_url = rq->url, .timeout_ms = rq->timeout_ms > 0 ? rq->timeout_ms : 30000L};
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

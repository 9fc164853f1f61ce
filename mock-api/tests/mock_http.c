/* mock_http: libcurl helper for the mock's integration tests; see mock_http.h. */
#include "mock_http.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	sbx_strbuf_append(ud, ptr, size * nmemb);
	return size * nmemb;
}

void th_do(const th_req *rq, th_resp *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[2048], buf[512];

	memset(out, 0, sizeof(*out));
	sbx_strbuf_init(&out->body);
	sbx_strbuf_init(&out->headers);
	snprintf(url, sizeof(url), "%s%s", rq->url, rq->path != NULL ? rq->path : "");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method != NULL ? rq->method : "GET");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &out->body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &out->headers);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, rq->timeout_ms > 0 ? rq->timeout_ms : 30000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (rq->key != NULL) {
		snprintf(buf, sizeof(buf), "X-Api-Key: %s", rq->key);
		h = curl_slist_append(h, buf);
	}
	if (rq->admin != NULL) {
		snprintf(buf, sizeof(buf), "X-Mock-Admin-Token: %s", rq->admin);
		h = curl_slist_append(h, buf);
	}
	if (rq->extra_header != NULL)
		h = curl_slist_append(h, rq->extra_header);
	if (rq->body != NULL) {
		snprintf(buf, sizeof(buf), "Content-Type: %s",
			 rq->ctype != NULL ? rq->ctype : "application/json");
		h = curl_slist_append(h, buf);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, rq->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(rq->body_len != 0 ? rq->body_len : strlen(rq->body)));
	}
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	out->curl_rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
	curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &out->seconds);
	if (out->body.len > 0)
		out->json = cJSON_ParseWithLength(out->body.data, out->body.len);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
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
	const char *p = sbx_strbuf_str(&r->headers);
	size_t nlen = strlen(name);

	while (*p != '\0') {
		const char *eol = strstr(p, "\r\n");
		size_t len = eol != NULL ? (size_t)(eol - p) : strlen(p);

		if (len > nlen && strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
			const char *v = p + nlen + 1;
			size_t vlen;

			while (*v == ' ')
				v++;
			vlen = len - (size_t)(v - p);
			snprintf(buf, cap, "%.*s", (int)vlen, v);
			return true;
		}
		if (eol == NULL)
			break;
		p = eol + 2;
	}
	return false;
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

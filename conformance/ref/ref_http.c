/* ref_http: see ref_http.h. The CreateOS integration's view of libsbx's
 * HTTP client (sbx/http_client.h): the error classes and JSend unwrapping. Must
 * never retry a request and never hide a failed exchange as a success. */
#include "ref_http.h"

#include <stdlib.h>
#include <string.h>

#include "sbx/http_client.h"

struct ref_http {
	sbx_http_client *client;
};

ref_http *ref_http_new(const char *base_url, const char *api_key)
{
	sbx_strbuf key = SBX_STRBUF_INIT;
	sbx_err err = {{0}};
	ref_http *h = calloc(1, sizeof(*h));
	/* Threaded (runs may be concurrent) over one locked pool; POST and
	 * PATCH on a fresh connection: libcurl's silent resend of a request
	 * whose reused connection died would be a hidden retry (a lost create
	 * answer became a second create). */
	sbx_http_opts o = {
		.base_url = base_url,
		.timeout_ms = 30000,
		.connect_timeout_ms = 5000,
		.threaded = true,
		.fresh_for_post = true,
	};

	if (h == NULL)
		return NULL;
	sbx_strbuf_printf(&key, "X-Api-Key: %s", api_key ? api_key : "");
	o.headers[0] = sbx_strbuf_str(&key);
	h->client = sbx_http_client_new(&o, &err); /* copies the header */
	sbx_strbuf_free(&key);
	if (h->client == NULL) {
		free(h);
		return NULL;
	}
	return h;
}

void ref_http_free(ref_http *h)
{
	if (h == NULL)
		return;
	sbx_http_client_free(h->client);
	free(h);
}

void ref_http_reset_after_fork(ref_http *h)
{
	sbx_http_client_reset_after_fork(h->client);
}

void ref_http_set_timeout_ms(ref_http *h, long ms)
{
	sbx_http_client_set_timeout_ms(h->client, ms);
}

void ref_resp_free(ref_resp *r)
{
	sbx_strbuf_free(&r->body);
}

int ref_http_raw(ref_http *h, const char *method, const char *path, const void *body,
		 size_t body_len, const char *ctype, ref_sink sink, void *sink_ctx, ref_resp *resp)
{
	sbx_http_req req = {
		.method = method,
		.path = path,
		.body = body,
		.body_len = body_len,
		.content_type = body != NULL ? (ctype ? ctype : "application/json") : NULL,
		.sink = sink,
		.sink_ud = sink_ctx,
	};
	sbx_http_resp hr;
	sbx_err err = {{0}};
	int rc = sbx_http_request(h->client, &req, &hr, &err);

	memset(resp, 0, sizeof(*resp));
	resp->body = hr.body; /* moved */
	sbx_strbuf_init(&hr.body);
	if (rc == 0) {
		resp->status = hr.status;
	} else {
		/* status stays 0: a broken exchange has no answer, even when a
		 * status line came before it broke */
		resp->curl_code = hr.curl_code != 0 ? hr.curl_code : -1;
		snprintf(resp->curl_msg, sizeof(resp->curl_msg), "%.255s",
			 hr.curl_code != 0 ? sbx_http_code_str(hr.curl_code) : err.msg);
	}
	sbx_http_resp_free(&hr);
	return rc;
}

/* The control plane's own words for a failure, when the body says them. */
static void envelope_message(const ref_resp *r, char *out, size_t cap)
{
	cJSON *j = cJSON_ParseWithLength(r->body.data ? r->body.data : "", r->body.len);
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(j, "message");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");
	char *flat = NULL;

	out[0] = '\0';
	if (cJSON_IsString(msg))
		snprintf(out, cap, "%s", msg->valuestring);
	else if (cJSON_IsString(data))
		snprintf(out, cap, "%s", data->valuestring);
	else if (data != NULL && (flat = cJSON_PrintUnformatted(data)) != NULL)
		snprintf(out, cap, "%s", flat);
	free(flat);
	cJSON_Delete(j);
}

bool ref_http_classify(const ref_resp *r, const char *method, const char *path, const char *what,
		       sbxd_error *err)
{
	char detail[512];

	if (r->curl_code != 0) {
		sbxd_error_set(err, SBXD_EXECUTION, "%s: %s %s failed: %s", what, method, path, r->curl_msg);
		return true;
	}
	if (r->status >= 200 && r->status < 300)
		return false;
	envelope_message(r, detail, sizeof(detail));
	if (r->status == 429 || r->status >= 500)
		sbxd_error_set(err, SBXD_EXECUTION, "%s: control plane answered %ld to %s %s%s%s", what,
			       r->status, method, path, detail[0] ? ": " : "", detail);
	else
		sbxd_error_set(err, SBXD_UNAVAILABLE, "%s: control plane answered %ld to %s %s%s%s", what,
			       r->status, method, path, detail[0] ? ": " : "", detail);
	return true;
}

cJSON *ref_http_json(ref_http *h, const char *method, const char *path, const cJSON *body,
		     const char *what, long *status_out, sbxd_error *err)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	cJSON *j = NULL;
	cJSON *data = NULL;
	const cJSON *st;
	ref_resp r = {0};

	ref_http_raw(h, method, path, text, text ? strlen(text) : 0, "application/json", NULL, NULL, &r);
	if (status_out != NULL)
		*status_out = r.status;
	if (ref_http_classify(&r, method, path, what, err))
		goto out;
	j = cJSON_ParseWithLength(r.body.data ? r.body.data : "", r.body.len);
	st = cJSON_GetObjectItemCaseSensitive(j, "status");
	if (j == NULL || !cJSON_IsString(st)) {
		sbxd_error_set(err, SBXD_EXECUTION, "%s: %s %s: answer %ld is not a JSend envelope (%zu bytes)",
			       what, method, path, r.status, r.body.len);
		goto out;
	}
	if (strcmp(st->valuestring, "success") != 0) {
		sbxd_error_set(err, SBXD_EXECUTION, "%s: %s %s: answer %ld carries status \"%s\"", what,
			       method, path, r.status, st->valuestring);
		goto out;
	}
	data = cJSON_DetachItemFromObjectCaseSensitive(j, "data");
	if (data == NULL)
		sbxd_error_set(err, SBXD_EXECUTION, "%s: %s %s: success envelope without data", what,
			       method, path);
out:
	cJSON_Delete(j);
	free(text);
	ref_resp_free(&r);
	return data;
}

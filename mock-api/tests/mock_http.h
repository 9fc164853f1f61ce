/* mock_http: a tiny client for the mock's integration tests, on libsbx's
 * HTTP client (sbx/http_client.h). Each call is one request on a fresh client, so a
 * fresh connection; the answer's status, body and headers are kept for
 * asserts. curl.h is included only for the CURLE_* codes tests compare. */
#ifndef SBX_MOCK_TEST_HTTP_H
#define SBX_MOCK_TEST_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "sbx/strbuf.h"

typedef struct th_resp {
	long status;
	sbx_strbuf body;
	sbx_strbuf headers;
	CURLcode curl_rc;  /* CURLE_OK, or the transport error (reset, empty reply...) */
	cJSON *json;       /* parsed body when JSON, else NULL */
	double seconds;
} th_resp;

typedef struct th_req {
	const char *method;
	const char *url;       /* base */
	const char *path;      /* appended */
	const char *key;       /* X-Api-Key, or NULL */
	const char *admin;     /* X-Mock-Admin-Token, or NULL */
	const char *body;
	size_t body_len;       /* 0: strlen(body) */
	const char *ctype;     /* default application/json when body */
	const char *extra_header; /* "Name: value" or NULL */
	long timeout_ms;       /* 0: 30 s */
	bool raw_ok;           /* a JSON answer need not parse (a fault's garbage) */
	const char *ca_pem;    /* https: the CA trusted alone (sbx_mock_ca_pem); NULL: the system's */
} th_req;

/* When true (the default), th_do aborts the test program on any answer
 * with a JSON Content-Type that is not exactly one JSON value in valid
 * UTF-8. Tests of faults that send broken JSON on purpose turn it off. */
extern bool th_strict_json;

/* Performs the request; the caller frees with th_resp_free. */
void th_do(const th_req *rq, th_resp *out);
void th_resp_free(th_resp *r);
/* The value of a response header (case-insensitive), copied into buf. */
bool th_header(const th_resp *r, const char *name, char *buf, size_t cap);
/* How many header lines of the answer are named `name` (case-insensitive):
 * a header sent twice, or not at all. */
int th_header_count(const th_resp *r, const char *name);
/* data.<key> as string, or NULL. */
const char *th_data_str(const th_resp *r, const char *key);
/* Convenience: JSON request with key. */
void th_json(const char *url, const char *key, const char *method, const char *path,
	     const char *body, th_resp *out);
void th_admin(const char *url, const char *token, const char *method, const char *path,
	      const char *body, th_resp *out);

#endif

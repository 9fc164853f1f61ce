/* bench_api: see bench_api.h. */
#define _GNU_SOURCE
#include "bench_api.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sbx/strbuf.h"

static const char *g_name = "bench";
static size_t g_fail;
static pthread_mutex_t g_fail_mu = PTHREAD_MUTEX_INITIALIZER;

void bench_set_name(const char *name)
{
	g_name = name;
}

void bench_failed(const char *what, long status, const sbx_http_resp *r)
{
	pthread_mutex_lock(&g_fail_mu);
	if (g_fail++ < 5)
		fprintf(stderr, "%s: %s: HTTP %ld %.300s\n", g_name, what, status,
			r != NULL ? sbx_strbuf_str(&r->body) : "");
	pthread_mutex_unlock(&g_fail_mu);
}

size_t bench_failures(void)
{
	size_t n;

	pthread_mutex_lock(&g_fail_mu);
	n = g_fail;
	pthread_mutex_unlock(&g_fail_mu);
	return n;
}

double bench_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

sbx_http_client *bench_client(const char *url, char *hdr, size_t cap, const char *key)
{
	sbx_http_opts o = {.base_url = url, .headers = {hdr}};

	snprintf(hdr, cap, "X-Api-Key: %s", key);
	return sbx_http_client_new(&o, NULL);
}

long bench_call(sbx_http_client *c, const char *method, const char *path, const char *body,
		sbx_http_resp *out)
{
	sbx_http_req rq = {.method = method,
			   .path = path,
			   .body = body,
			   .body_len = body != NULL ? strlen(body) : 0};
	sbx_err err;

	sbx_http_resp_free(out);
	return sbx_http_request(c, &rq, out, &err) != 0 ? -1 : out->status;
}

int bench_data_field(const sbx_http_resp *r, const char *k1, const char *k2, char *buf, size_t cap)
{
	cJSON *j = cJSON_Parse(sbx_strbuf_str(&r->body));
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "data"), k1);
	int rc = -1;

	if (k2 != NULL)
		v = cJSON_GetObjectItemCaseSensitive(v, k2);
	buf[0] = '\0';
	if (cJSON_IsString(v) && strlen(v->valuestring) < cap) {
		snprintf(buf, cap, "%s", v->valuestring);
		rc = 0;
	}
	cJSON_Delete(j);
	return rc;
}

int bench_create(sbx_http_client *c, sbx_http_resp *out, char *id, size_t cap)
{
	long st = bench_call(c, "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-256mb\"}", out);

	if (st != 200 || bench_data_field(out, "id", NULL, id, cap) != 0) {
		bench_failed("create", st, out);
		return -1;
	}
	return 0;
}

void bench_destroy(sbx_http_client *c, sbx_http_resp *out, const char *id)
{
	char path[128];
	long st;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	st = bench_call(c, "DELETE", path, NULL, out);
	if (st != 200)
		bench_failed("delete", st, out);
}

cJSON *bench_admin_get(sbx_http_client *a, const char *path, sbx_http_resp *out)
{
	if (bench_call(a, "GET", path, NULL, out) != 200)
		return NULL;
	return cJSON_Parse(sbx_strbuf_str(&out->body));
}

double bench_pool_num(sbx_http_client *a, const char *key, sbx_http_resp *out)
{
	cJSON *j = bench_admin_get(a, "/_mock/pool", out);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "data"), key);
	double d = cJSON_IsNumber(v) ? v->valuedouble : -1;

	cJSON_Delete(j);
	return d;
}

void bench_pool_wait_full(sbx_http_client *a, unsigned size, sbx_http_resp *out)
{
	double end = bench_now_ms() + 10000;

	while (size > 0 && bench_now_ms() < end) {
		if (bench_pool_num(a, "idle", out) >= size && bench_pool_num(a, "retiring", out) == 0)
			return;
		usleep(500);
	}
}

char *bench_guest_python(sbx_http_client *c, const char *id, const char *script, const char *const *args,
			 size_t nargs, sbx_http_resp *out)
{
	cJSON *b = cJSON_CreateObject(), *av = cJSON_AddArrayToObject(b, "args"), *j, *st;
	char path[160], *text, *res = NULL;

	cJSON_AddStringToObject(b, "cmd", "python3");
	cJSON_AddItemToArray(av, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(av, cJSON_CreateString(script));
	for (size_t i = 0; i < nargs; i++)
		cJSON_AddItemToArray(av, cJSON_CreateString(args[i]));
	text = cJSON_PrintUnformatted(b);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	if (bench_call(c, "POST", path, text, out) != 200)
		bench_failed("guest probe", (long)out->status, out);
	j = cJSON_ParseWithLength(sbx_strbuf_str(&out->body), out->body.len);
	st = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "data"), "result"), "stdout");
	if (cJSON_IsString(st))
		res = strdup(st->valuestring);
	else
		bench_failed("guest probe output", (long)out->status, out);
	cJSON_Delete(j);
	free(text);
	cJSON_Delete(b);
	return res;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

double bench_pct(double *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(size_t)(p / 100.0 * (double)(n - 1))];
}

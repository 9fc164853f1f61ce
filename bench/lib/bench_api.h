/* bench_api: the HTTP steps the mock benchmarks share (bench-contain,
 * bench-internet): a keep-alive client with a tenant key, one call, a field
 * of a JSend answer, create and delete of a sandbox, percentiles. Calls that
 * fail are counted and the first few are printed with the program's name;
 * a benchmark exits 1 when any failed. */
#ifndef SBX_BENCH_API_H
#define SBX_BENCH_API_H

#include <stddef.h>

#include "sbx/http_client.h"

/* The name failures are printed with ("bench-contain"). */
void bench_set_name(const char *name);
/* Count a failed call, and print it while fewer than 5 were printed. */
void bench_failed(const char *what, long status, const sbx_http_resp *r);
size_t bench_failures(void);

double bench_now_ms(void);

/* A client of url sending `X-Api-Key: key`; hdr (cap bytes) holds the header
 * line and must outlive the client. NULL when it cannot be made. */
sbx_http_client *bench_client(const char *url, char *hdr, size_t cap, const char *key);
/* The answer's status, or -1 when no answer came; out is reset first. */
long bench_call(sbx_http_client *c, const char *method, const char *path, const char *body,
		sbx_http_resp *out);
/* data.k1 (or data.k1.k2 when k2 is not NULL) of a JSend answer, when it is a
 * string that fits cap: 0. Otherwise buf is "" and -1. */
int bench_data_field(const sbx_http_resp *r, const char *k1, const char *k2, char *buf, size_t cap);

/* POST /v1/sandboxes (s-1vcpu-256mb) and its id: 0, or -1 (counted failure). */
int bench_create(sbx_http_client *c, sbx_http_resp *out, char *id, size_t cap);
/* DELETE /v1/sandboxes/{id}; a status other than 200 is a counted failure. */
void bench_destroy(sbx_http_client *c, sbx_http_resp *out, const char *id);

/* GET path (an admin client: bench_client with the admin token's header)
 * parsed, or NULL. The caller frees it. */
struct cJSON *bench_admin_get(sbx_http_client *a, const char *path, sbx_http_resp *out);
/* A number of GET /_mock/pool's data (idle, retiring, ...), -1 when absent. */
double bench_pool_num(sbx_http_client *a, const char *key, sbx_http_resp *out);
/* Waits (10 s at most) until the warm pool holds `size` idle cells and
 * nothing is being torn down: the state a create meets on a host that is
 * not creating faster than the pool refills. a: an admin client. */
void bench_pool_wait_full(sbx_http_client *a, unsigned size, sbx_http_resp *out);

/* Python for the probes a benchmark runs in a guest: read_all(s), what a
 * socket sends until it closes. Put before a probe's own code. */
#define BENCH_PY_READ_ALL                                                                          \
	"def read_all(s):\n"                                                                     \
	" b=b''\n"                                                                               \
	" while True:\n"                                                                         \
	"  d=s.recv(4096)\n"                                                                     \
	"  if not d:return b\n"                                                                  \
	"  b+=d\n"

/* Runs `python3 -c script args...` in sandbox id by exec: its stdout
 * (the caller frees it), or NULL (a counted failure). */
char *bench_guest_python(sbx_http_client *c, const char *id, const char *script, const char *const *args,
			 size_t nargs, sbx_http_resp *out);

/* The p-th percentile (0..100) of v[0..n), which is sorted in place; 0 when n is 0. */
double bench_pct(double *v, size_t n, double p);

#endif

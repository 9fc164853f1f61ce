/* sbxdriver: turns a small vtable into a conformance driver that speaks the
 * line protocol of conformance/PROTOCOL.md on stdin/stdout.
 *
 * The library owns the protocol: line framing with a length limit, JSON
 * parsing, ProtocolError answers, `hello` (surfaces derived from the vtable),
 * `fork_check` (fork, reset_after_fork in the child, run, report over a pipe)
 * and `run_concurrent` (one thread per run). A backend only implements the
 * operations it serves; a NULL slot means "not served". Nothing but protocol
 * answers is ever written to the output stream: backends log to stderr. */
#ifndef SBX_DRIVER_H
#define SBX_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#define SBXD_PROTOCOL_VERSION 1
#define SBXD_MAX_LINE (16u * 1024u * 1024u) /* longest request line accepted */
#define SBXD_MAX_CONCURRENT 32               /* runs in one run_concurrent */

/* An error a backend raises: type is the Python-style class name
 * ("SandboxUnavailableError", "SandboxExecutionError", ...). */
typedef struct sbxd_error {
	char type[64];
	char message[1024];
} sbxd_error;

void sbxd_error_set(sbxd_error *err, const char *type, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define SBXD_UNAVAILABLE "SandboxUnavailableError"
#define SBXD_EXECUTION "SandboxExecutionError"

/* Every operation returns a new result object (ownership passes to the
 * library) or NULL with *err filled. `be` is the backend's own state. */
typedef struct sbxd_vtable {
	const char *name;   /* backend name, e.g. "createos" */
	const char *driver; /* implementation and version, e.g. "sbx-ref-backend 0.1.0" */
	cJSON *(*capabilities)(void *be, sbxd_error *err);
	/* env may be NULL. Must be safe to call from several threads at once. */
	cJSON *(*run)(void *be, const char *code, const cJSON *env, sbxd_error *err);
	/* Must be idempotent. Returns 0, or -1 with *err. */
	int (*shutdown)(void *be, sbxd_error *err);
	/* Called in a forked child before it runs anything: replace locks and
	 * connections inherited from the parent. */
	int (*reset_after_fork)(void *be, sbxd_error *err);
	cJSON *(*component_run)(void *be, const cJSON *req, sbxd_error *err);
	cJSON *(*executor_run)(void *be, const cJSON *req, sbxd_error *err);
	cJSON *(*gate)(void *be, const cJSON *req, sbxd_error *err);
	cJSON *(*load_plugins)(void *be, const cJSON *req, sbxd_error *err);
} sbxd_vtable;

/* Serves requests from `in` until EOF or `exit`; answers go to `out`.
 * Returns 0 on a clean exit (EOF or exit op), 1 when `out` failed. */
int sbxd_serve(const sbxd_vtable *vt, void *be, FILE *in, FILE *out);

/* Handles one request line and returns the answer line (no newline; caller
 * frees). Exposed for tests and fuzzers; `*exit_requested` is set by `exit`. */
char *sbxd_handle_line(const sbxd_vtable *vt, void *be, const char *line, size_t len,
		       bool *exit_requested);

/* SHA-256 (FIPS 180-4), used for returned files and guest-name hashes. */
void sbxd_sha256(const void *data, size_t len, unsigned char out[32]);
typedef struct sbxd_sha256_ctx {
	unsigned int h[8];
	unsigned char buf[64];
	size_t buflen;
	unsigned long long total;
} sbxd_sha256_ctx;
void sbxd_sha256_init(sbxd_sha256_ctx *c);
void sbxd_sha256_update(sbxd_sha256_ctx *c, const void *data, size_t len);
void sbxd_sha256_final(sbxd_sha256_ctx *c, unsigned char out[32]);
/* Lower-case hex of n bytes into out (2n+1 bytes). */
void sbxd_hex(const unsigned char *in, size_t n, char *out);

#endif

/* ctl_harness: runs a real sbx-mock process on a loopback port and the real
 * sbxctl binary against it, for the integration tests.
 *
 * The mock runs in its own process group with its output in a log file of a
 * scratch directory; the test process is a child subreaper, so anything the
 * mock leaves behind becomes our child and mock_stop_check() can see it. */
#ifndef SBXCTL_HARNESS_H
#define SBXCTL_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct mock_proc {
	pid_t pid;
	char url[128];
	char token[256];
	char dir[256];   /* scratch directory (owned; removed by mock_stop_check) */
	char log[300];
} mock_proc;

/* Starts `mock_bin --listen 127.0.0.1:0` and reads its URL and admin token from its
 * output. Returns 0, or -1 with a message on stderr. */
int mock_start(mock_proc *m, const char *mock_bin);
/* The same with one more flag (NULL: none). */
int mock_start_with(mock_proc *m, const char *mock_bin, const char *flag);
/* SIGTERM, wait (SIGKILL after 10 s). Returns the number of processes that
 * were still alive afterwards (0 = clean) and kills those. */
int mock_stop_check(mock_proc *m);

typedef struct ctl_result {
	int rc;        /* exit code, or 128+signal */
	char *out;     /* owned, NUL-terminated (may contain NULs before) */
	size_t out_len;
	char *err;     /* owned */
} ctl_result;

/* Runs `sbxctl ARGS` (args NULL-terminated) with CREATEOS_SANDBOX_BASE_URL,
 * CREATEOS_SANDBOX_API_KEY (when key != NULL) and SBX_MOCK_ADMIN_TOKEN set
 * for the mock. */
ctl_result ctl_exec(const char *ctl_bin, const mock_proc *m, const char *key, const char *const *args);
void ctl_result_free(ctl_result *r);

/* Starts sbxctl with its stdout on a pipe (*out_fd) for tests that read
 * output while it runs; stderr goes to a file. Returns the pid. */
pid_t ctl_spawn(const char *ctl_bin, const mock_proc *m, const char *key, const char *const *args,
		int *out_fd);
/* Reads from fd into buf (appending) until `needle` appears or timeout_ms
 * passes. Returns true when found. */
bool read_until(int fd, char *buf, size_t cap, size_t *len, const char *needle, int timeout_ms);
/* waitpid with a deadline; kills the child when it passes. Returns the exit
 * code or 128+signal, -1 on timeout. */
int wait_exit(pid_t pid, int timeout_ms);

#endif

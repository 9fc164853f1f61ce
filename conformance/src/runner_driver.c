/* runner_driver: starts a driver process for a case and talks the line
 * protocol to it, with per-op timeouts and a process-group kill.
 *
 * Must never leave a driver process behind: every started driver is stopped
 * by the case teardown (cf_driver_stop), which kills its process group. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"
#include "sbx/sys.h"

extern char **environ;

struct cf_driver {
	struct cf_case *c;
	pid_t pid;
	int in_fd;
	int out_fd;
	char errpath[400];
	sbx_strbuf rbuf;
	int next_id;
	bool broken;
	bool stopped;
	char etype[64];
	char emsg[1024];
};

pid_t cf_driver_pid(const struct cf_driver *d)
{
	return d->pid;
}

bool cf_driver_broken(const struct cf_driver *d)
{
	return d->broken;
}

const char *cf_driver_stderr_path(const struct cf_driver *d)
{
	return d->errpath;
}

/* True when the environment entry "NAME=value" has the name of `spec`
 * ("NAME=value" or a bare "NAME"). */
static bool env_name_eq(const char *entry, const char *spec)
{
	size_t n = strcspn(spec, "=");

	return strncmp(entry, spec, n) == 0 && entry[n] == '=';
}

/* Sets "NAME=value", or removes NAME when entry has no '='. */
static void env_put(char ***envp, size_t *n, const char *entry)
{
	size_t i;
	bool unset = strchr(entry, '=') == NULL;

	for (i = 0; i < *n; i++) {
		if (env_name_eq((*envp)[i], entry)) {
			free((*envp)[i]);
			if (unset) {
				(*envp)[i] = (*envp)[--(*n)];
				(*envp)[*n] = NULL;
			} else {
				(*envp)[i] = strdup(entry);
			}
			return;
		}
	}
	if (unset)
		return;
	*envp = realloc(*envp, (*n + 2) * sizeof(char *));
	(*envp)[(*n)++] = strdup(entry);
	(*envp)[*n] = NULL;
}

/* The case's environment: the runner's own minus every LANGFLOW_/CREATEOS_
 * variable, plus the case defaults, plus the check's overrides. */
static char **build_env(struct cf_case *c, const char *const *over)
{
	struct cf_config *cf = c->cf;
	char **envp = calloc(1, sizeof(char *));
	size_t n = 0;
	char kv[700];
	size_t i;

	for (i = 0; environ[i] != NULL; i++) {
		if (strncmp(environ[i], "LANGFLOW_", 9) == 0 || strncmp(environ[i], "CREATEOS_", 9) == 0)
			continue;
		env_put(&envp, &n, environ[i]);
	}
	snprintf(kv, sizeof(kv), "CREATEOS_SANDBOX_BASE_URL=%s", cf->url);
	env_put(&envp, &n, kv);
	snprintf(kv, sizeof(kv), "CREATEOS_SANDBOX_API_KEY=%s", cf->kind == CF_REAL ? cf->real_key : c->key);
	env_put(&envp, &n, kv);
	env_put(&envp, &n, "LANGFLOW_SANDBOX_BACKEND=createos");
	env_put(&envp, &n, "LANGFLOW_SANDBOX_BACKEND_PLUGINS=createos");
	env_put(&envp, &n, "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=10");
	env_put(&envp, &n, "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS=true");
	snprintf(kv, sizeof(kv), "SBX_CONFORM_CASE=%s", c->def->id);
	env_put(&envp, &n, kv);
	for (i = 0; over != NULL && over[i] != NULL; i++)
		env_put(&envp, &n, over[i]);
	return envp;
}

static void free_env(char **envp)
{
	size_t i;

	for (i = 0; envp != NULL && envp[i] != NULL; i++)
		free(envp[i]);
	free(envp);
}

struct cf_driver *cf_driver_start(struct cf_case *c, const char *const *env)
{
	struct cf_driver *d;
	char **envp;
	sbx_strbuf cmd = SBX_STRBUF_INIT;
	int in[2], out[2], errfd;
	pid_t pid;

	if (c->driver_count >= sizeof(c->drivers) / sizeof(c->drivers[0])) {
		cf_error(c, "harness: too many drivers in one case");
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	d->c = c;
	snprintf(d->errpath, sizeof(d->errpath), "%s/%s-%u.stderr", c->cf->tmpdir, c->key, c->driver_seq++);
	errfd = open(d->errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (errfd < 0 || pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
		cf_error(c, "harness: cannot set up driver pipes: %s", strerror(errno));
		free(d);
		return NULL;
	}
	envp = build_env(c, env);
	sbx_strbuf_printf(&cmd, "exec %s",
			  strcmp(c->profile, "host-gate") == 0 && c->cf->host_cmd != NULL
				  ? c->cf->host_cmd : c->cf->backend_cmd);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(errfd, 2);
		execle("/bin/sh", "sh", "-c", sbx_strbuf_str(&cmd), (char *)NULL, envp);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(errfd);
	free_env(envp);
	sbx_strbuf_free(&cmd);
	if (pid < 0) {
		close(in[1]);
		close(out[0]);
		cf_error(c, "harness: fork: %s", strerror(errno));
		free(d);
		return NULL;
	}
	setpgid(pid, pid);
	d->pid = pid;
	d->in_fd = in[1];
	d->out_fd = out[0];
	d->next_id = 1;
	sbx_strbuf_init(&d->rbuf);
	c->drivers[c->driver_count++] = d;
	return d;
}

static void kill_group(struct cf_driver *d)
{
	if (d->pid > 0) {
		kill(-d->pid, SIGKILL);
		kill(d->pid, SIGKILL);
	}
}

/* Reads until a full line is buffered or the deadline passes. Returns the
 * line (caller frees) or NULL; *why says why not. */
static char *read_line(struct cf_driver *d, double deadline_ms, const char **why)
{
	for (;;) {
		char *nl = d->rbuf.data ? memchr(d->rbuf.data, '\n', d->rbuf.len) : NULL;
		struct pollfd p = {d->out_fd, POLLIN, 0};
		char buf[65536];
		double left;
		ssize_t n;

		if (nl != NULL) {
			size_t len = (size_t)(nl - d->rbuf.data);
			char *line = malloc(len + 1);

			memcpy(line, d->rbuf.data, len);
			line[len] = '\0';
			memmove(d->rbuf.data, nl + 1, d->rbuf.len - len - 1);
			d->rbuf.len -= len + 1;
			d->rbuf.data[d->rbuf.len] = '\0';
			return line;
		}
		left = deadline_ms - cf_now_ms();
		if (left <= 0) {
			*why = "timeout";
			return NULL;
		}
		if (poll(&p, 1, (int)(left > 1000 ? 1000 : left + 1)) < 0 && errno != EINTR) {
			*why = "poll failed";
			return NULL;
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(d->out_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*why = "the driver closed its stdout (exited or crashed)";
			return NULL;
		}
		if (d->rbuf.len + (size_t)n > 64u * 1024 * 1024) {
			*why = "answer line longer than 64 MiB";
			return NULL;
		}
		sbx_strbuf_append(&d->rbuf, buf, (size_t)n);
	}
}

cJSON *cf_call(struct cf_driver *d, const char *op, const cJSON *fields, double timeout_s)
{
	cJSON *req = fields ? cJSON_Duplicate(fields, true) : cJSON_CreateObject();
	double deadline = cf_now_ms() + timeout_s * d->c->cf->timeout_scale * 1000.0;
	const char *why = NULL;
	cJSON *ans = NULL;
	char *text, *line;
	int id = d->next_id++;

	if (d->broken) {
		cJSON_Delete(req);
		return NULL;
	}
	cJSON_AddNumberToObject(req, "id", id);
	cJSON_AddStringToObject(req, "op", op);
	text = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (sbx_write_all(d->in_fd, text, strlen(text)) != 0 || sbx_write_all(d->in_fd, "\n", 1) != 0) {
		free(text);
		d->broken = true;
		cf_fail(d->c, "driver: cannot send `%s` (driver gone: %s)", op, strerror(errno));
		return NULL;
	}
	free(text);
	for (;;) {
		const cJSON *aid;

		line = read_line(d, deadline, &why);
		if (line == NULL) {
			d->broken = true;
			kill_group(d);
			cf_fail(d->c, "driver: no answer to `%s` within %.1f s: %s", op,
				timeout_s * d->c->cf->timeout_scale, why);
			return NULL;
		}
		ans = cJSON_Parse(line);
		aid = cJSON_GetObjectItemCaseSensitive(ans, "id");
		if (ans == NULL || !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(ans, "ok"))) {
			d->broken = true;
			cf_fail(d->c, "driver: answer to `%s` is not a protocol answer: %.200s", op, line);
			free(line);
			cJSON_Delete(ans);
			kill_group(d);
			return NULL;
		}
		free(line);
		if (cJSON_IsNumber(aid) && aid->valueint == id)
			return ans;
		cf_detail(d->c, "driver answered id %d while `%s` (id %d) was pending; ignored",
			  cJSON_IsNumber(aid) ? aid->valueint : -1, op, id);
		cJSON_Delete(ans);
	}
}

cJSON *cf_op(struct cf_driver *d, const char *op, const cJSON *fields, double timeout_s,
	     const char **etype, const char **emsg)
{
	cJSON *ans = cf_call(d, op, fields, timeout_s);
	cJSON *res = NULL;

	d->etype[0] = '\0';
	d->emsg[0] = '\0';
	if (ans == NULL) {
		snprintf(d->etype, sizeof(d->etype), "HarnessError");
		snprintf(d->emsg, sizeof(d->emsg), "no answer");
	} else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "ok"))) {
		res = cJSON_DetachItemFromObjectCaseSensitive(ans, "result");
		if (res == NULL)
			res = cJSON_CreateObject();
	} else {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(ans, "error");

		snprintf(d->etype, sizeof(d->etype), "%s", cf_str(e, "type") ? cf_str(e, "type") : "?");
		snprintf(d->emsg, sizeof(d->emsg), "%s", cf_str(e, "message") ? cf_str(e, "message") : "");
	}
	cJSON_Delete(ans);
	if (etype != NULL)
		*etype = d->etype;
	if (emsg != NULL)
		*emsg = d->emsg;
	return res;
}

cJSON *cf_run(struct cf_driver *d, const char *code, const cJSON *env, double timeout_s,
	      const char **etype, const char **emsg)
{
	cJSON *f = cJSON_CreateObject();
	cJSON *res;

	cJSON_AddStringToObject(f, "code", code);
	if (env != NULL)
		cJSON_AddItemToObject(f, "env", cJSON_Duplicate(env, true));
	else
		cJSON_AddNullToObject(f, "env");
	res = cf_op(d, "run", f, timeout_s, etype, emsg);
	cJSON_Delete(f);
	return res;
}

/* Keeps the last ~40 lines of the driver's stderr as evidence. */
static void collect_stderr(struct cf_driver *d)
{
	sbx_strbuf all = SBX_STRBUF_INIT;
	char buf[8192];
	ssize_t n;
	int fd = open(d->errpath, O_RDONLY | O_CLOEXEC);
	const char *start;
	int lines = 0;

	if (fd >= 0) {
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			sbx_strbuf_append(&all, buf, (size_t)n);
		close(fd);
	}
	unlink(d->errpath);
	start = sbx_strbuf_str(&all);
	for (size_t i = all.len; i > 0; i--) {
		if (all.data[i - 1] == '\n' && ++lines > 40) {
			start = all.data + i;
			break;
		}
	}
	if (*start != '\0') {
		sbx_strbuf_printf(&d->c->driver_stderr, "[driver %ld]\n%s", (long)d->pid, start);
		if (d->c->driver_stderr.len > 0 && d->c->driver_stderr.data[d->c->driver_stderr.len - 1] != '\n')
			sbx_strbuf_puts(&d->c->driver_stderr, "\n");
	}
	sbx_strbuf_free(&all);
}

void cf_driver_stop(struct cf_driver *d)
{
	double deadline;
	int status;

	if (d == NULL || d->stopped)
		return;
	d->stopped = true;
	if (!d->broken) {
		char line[] = "{\"id\":999999,\"op\":\"exit\"}\n";

		(void)sbx_write_all(d->in_fd, line, strlen(line));
	}
	close(d->in_fd);
	deadline = cf_now_ms() + 2000;
	while (waitpid(d->pid, &status, WNOHANG) == 0) {
		struct timespec ts = {0, 5000000};

		if (cf_now_ms() > deadline) {
			kill_group(d);
			waitpid(d->pid, &status, 0);
			break;
		}
		nanosleep(&ts, NULL);
	}
	kill(-d->pid, SIGKILL); /* anything the driver left in its group */
	close(d->out_fd);
	collect_stderr(d);
	sbx_strbuf_free(&d->rbuf);
}

void cf_driver_free(struct cf_driver *d)
{
	free(d);
}

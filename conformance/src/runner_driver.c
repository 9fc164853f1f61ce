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
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "answer.h"
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
	size_t answer_limit;      /* longest answer line read, in bytes */
	int next_id;
	bool broken;
	bool stopped;
	bool timed_out;           /* an answer did not come in time */
	bool reaped;              /* wstatus holds the driver's exit */
	int wstatus;
	double started_ms;
	char etype[CF_ANSWER_TYPE_MAX + 1];
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

bool cf_driver_timed_out(const struct cf_driver *d)
{
	return d->timed_out;
}

/* Evidence is capped in bytes, not lines: a driver that writes 500 MB of
 * stderr (or one endless line) must not make a 500 MB report. */
#define STDERR_KEEP_BYTES 8192
#define STDERR_KEEP_LINES 40

/* The last `keep` bytes (at most) of the driver's stderr file, starting at a
 * line start when the tail holds one, and at a UTF-8 character start; *omitted
 * receives how many bytes came before. Never reads more than keep bytes. */
static void stderr_tail(const struct cf_driver *d, size_t keep, sbx_strbuf *out, long long *omitted)
{
	int fd = open(d->errpath, O_RDONLY | O_CLOEXEC);
	struct stat st;
	off_t from = 0;
	char buf[8192];
	ssize_t n;
	size_t skip = 0, got = 0;

	*omitted = 0;
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_size > (off_t)keep)
		from = st.st_size - (off_t)keep;
	if (from > 0 && lseek(fd, from, SEEK_SET) < 0)
		from = 0;
	while (got < keep && (n = read(fd, buf, sizeof(buf) < keep - got ? sizeof(buf) : keep - got)) > 0) {
		sbx_strbuf_append(out, buf, (size_t)n);
		got += (size_t)n;
	}
	close(fd);
	if (from > 0 && out->len > 0) {
		const char *nl = memchr(out->data, '\n', out->len);

		if (nl != NULL && (size_t)(nl - out->data) + 1 < out->len)
			skip = (size_t)(nl - out->data) + 1;
		while (skip < out->len && ((unsigned char)out->data[skip] & 0xC0) == 0x80)
			skip++;
		memmove(out->data, out->data + skip, out->len - skip);
		out->len -= skip;
		out->data[out->len] = '\0';
	}
	*omitted = (long long)from + (long long)skip;
}

/* The last `lines` lines of s (all of it when it has fewer). */
static const char *last_lines(const sbx_strbuf *s, int lines)
{
	int seen = 0;

	for (size_t i = s->len; i > 0; i--)
		if (s->data[i - 1] == '\n' && i < s->len && ++seen >= lines)
			return s->data + i;
	return sbx_strbuf_str(s);
}

/* Reaps the driver if it exits within wait_ms (it closed its stdout, so it
 * usually is exiting). True when d->wstatus is known. */
static bool reap(struct cf_driver *d, double wait_ms)
{
	double deadline = cf_now_ms() + wait_ms;

	if (d->pid <= 0) /* an attached driver has no process of ours */
		return false;
	while (!d->reaped) {
		struct timespec ts = {0, 1000000};
		pid_t r = waitpid(d->pid, &d->wstatus, WNOHANG);

		if (r == d->pid || (r < 0 && errno == ECHILD)) {
			d->reaped = r == d->pid;
			return d->reaped;
		}
		if (cf_now_ms() > deadline)
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}

/* What happened to a driver that stopped talking: its exit status or
 * signal, how long it lived, and the end of its stderr ("exited with status
 * 127 (command not found) after 0.03 s; stderr ends: sh: 1: exec: ./x: not
 * found"). */
static void exit_story(struct cf_driver *d, char *out, size_t cap)
{
	sbx_strbuf tail = SBX_STRBUF_INIT;
	char what[160], *p;
	long long omitted;
	double lived = (cf_now_ms() - d->started_ms) / 1000.0;

	if (d->pid <= 0) {
		snprintf(what, sizeof(what), "is not a process of the runner (attached %.2f s ago)", lived);
	} else if (!reap(d, 1000)) {
		snprintf(what, sizeof(what), "is still running %.2f s after it started", lived);
	} else if (WIFEXITED(d->wstatus)) {
		int st = WEXITSTATUS(d->wstatus);

		snprintf(what, sizeof(what), "exited with status %d%s after %.2f s", st,
			 st == 127 ? " (command not found)" : st == 126 ? " (command not executable)" : "", lived);
	} else if (WIFSIGNALED(d->wstatus)) {
		const char *name = sigabbrev_np(WTERMSIG(d->wstatus)); /* thread-safe, unlike strsignal */

		snprintf(what, sizeof(what), "was killed by signal %d (SIG%s) after %.2f s", WTERMSIG(d->wstatus),
			 name != NULL ? name : "?", lived);
	} else {
		snprintf(what, sizeof(what), "stopped after %.2f s", lived);
	}
	stderr_tail(d, 2048, &tail, &omitted);
	while (tail.len > 0 && (tail.data[tail.len - 1] == '\n' || tail.data[tail.len - 1] == '\r'))
		tail.data[--tail.len] = '\0';
	p = (char *)last_lines(&tail, 5);
	for (char *q = p; *q != '\0'; q++)
		if (*q == '\n')
			*q = '|';
	if (*p != '\0')
		snprintf(out, cap, "the driver %s; its stderr ends: %.400s", what, p);
	else
		snprintf(out, cap, "the driver %s; its stderr is empty", what);
	sbx_strbuf_free(&tail);
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
	pid = c->cf->spawn != NULL ? c->cf->spawn(c->cf->spawn_arg, envp, in[0], out[1], errfd) : fork();
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
		cf_error(c, "harness: cannot start the driver (%s): %s", c->cf->spawn != NULL ? "spawn" : "fork",
			 strerror(errno));
		free(d);
		return NULL;
	}
	setpgid(pid, pid);
	d->pid = pid;
	d->started_ms = cf_now_ms();
	d->in_fd = in[1];
	d->out_fd = out[0];
	d->next_id = 1;
	d->answer_limit = CF_ANSWER_LINE_MAX;
	sbx_strbuf_init(&d->rbuf);
	c->drivers[c->driver_count++] = d;
	return d;
}

struct cf_driver *cf_driver_attach(struct cf_case *c, int in_fd, int out_fd, size_t answer_limit)
{
	struct cf_driver *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	d->c = c;
	d->in_fd = in_fd;
	d->out_fd = out_fd;
	d->next_id = 1;
	d->answer_limit = answer_limit;
	d->started_ms = cf_now_ms();
	sbx_strbuf_init(&d->rbuf);
	return d;
}

static void kill_group(struct cf_driver *d)
{
	if (d->pid > 0) { /* never kill(-0): that is the runner's own group */
		kill(-d->pid, SIGKILL);
		if (!d->reaped) /* a reaped pid may belong to someone else by now */
			kill(d->pid, SIGKILL);
	}
}

enum line_why { LINE_OK, LINE_TIMEOUT, LINE_EOF, LINE_TOO_LONG, LINE_POLL };

/* Reads until a full line is buffered or the deadline passes. Returns the
 * line (caller frees; *lenp bytes, which may include NULs) or NULL; *why
 * says why not. */
static char *read_line(struct cf_driver *d, double deadline_ms, enum line_why *why, size_t *lenp)
{
	for (;;) {
		char *nl = d->rbuf.data ? memchr(d->rbuf.data, '\n', d->rbuf.len) : NULL;
		struct pollfd p = {d->out_fd, POLLIN, 0};
		char buf[65536];
		double left;
		ssize_t n;

		if (nl != NULL) {
			size_t len = (size_t)(nl - d->rbuf.data);
			char *line;

			if (len > d->answer_limit) {
				*why = LINE_TOO_LONG;
				return NULL;
			}
			line = malloc(len + 1);

			memcpy(line, d->rbuf.data, len);
			line[len] = '\0';
			*lenp = len;
			memmove(d->rbuf.data, nl + 1, d->rbuf.len - len - 1);
			d->rbuf.len -= len + 1;
			d->rbuf.data[d->rbuf.len] = '\0';
			return line;
		}
		left = deadline_ms - cf_now_ms();
		if (left <= 0) {
			*why = LINE_TIMEOUT;
			return NULL;
		}
		if (poll(&p, 1, (int)(left > 1000 ? 1000 : left + 1)) < 0 && errno != EINTR) {
			*why = LINE_POLL;
			return NULL;
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(d->out_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* an unterminated last line over the limit is oversize, not just the end */
			*why = d->rbuf.len > d->answer_limit ? LINE_TOO_LONG : LINE_EOF;
			return NULL;
		}
		sbx_strbuf_append(&d->rbuf, buf, (size_t)n);
		/* the line being read is over the limit before its '\n' came */
		if (memchr(d->rbuf.data, '\n', d->rbuf.len) == NULL && d->rbuf.len > d->answer_limit) {
			*why = LINE_TOO_LONG;
			return NULL;
		}
	}
}

/* Gives up on the driver: marks it broken, fails the case with `fmt`
 * followed by what became of the driver when it stopped talking, and kills
 * its process group. */
static void give_up(struct cf_driver *d, bool story, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void give_up(struct cf_driver *d, bool story, const char *fmt, ...)
{
	char msg[600], why[700] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	d->broken = true;
	if (story)
		exit_story(d, why, sizeof(why));
	kill_group(d);
	cf_fail(d->c, "%s%s%s", msg, story ? ": " : "", why);
}

/* "64 MiB" for whole MiB, else "N bytes": the limit as a message names it. */
static void limit_text(size_t limit, char *out, size_t cap)
{
	if (limit >= 1024 * 1024 && limit % (1024 * 1024) == 0)
		snprintf(out, cap, "%zu MiB", limit / (1024 * 1024));
	else
		snprintf(out, cap, "%zu bytes", limit);
}

/* Sends the request line; false when the driver was given up. */
static bool send_request(struct cf_driver *d, const char *op, const cJSON *fields, int id)
{
	cJSON *req = fields ? cJSON_Duplicate(fields, true) : cJSON_CreateObject();
	char *text;

	cJSON_AddNumberToObject(req, "id", id);
	cJSON_AddStringToObject(req, "op", op);
	text = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (text == NULL || sbx_write_all(d->in_fd, text, strlen(text)) != 0 ||
	    sbx_write_all(d->in_fd, "\n", 1) != 0) {
		int e = text == NULL ? ENOMEM : errno;

		free(text);
		give_up(d, true, "driver: cannot send `%s` (%s)", op, strerror(e));
		return false;
	}
	free(text);
	return true;
}

/* The next non-empty line (PROTOCOL.md: empty lines are ignored), or NULL
 * after giving up on the driver. */
static char *next_answer_line(struct cf_driver *d, const char *op, double deadline, double scaled, size_t *lenp)
{
	enum line_why why = LINE_OK;
	char lim[32];
	char *line;

	while ((line = read_line(d, deadline, &why, lenp)) != NULL && (*lenp == 0 || (*lenp == 1 && line[0] == '\r')))
		free(line);
	if (line != NULL)
		return line;
	if (why == LINE_TIMEOUT) {
		d->timed_out = true;
		give_up(d, false, "driver: no answer to `%s` within %.1f s", op, scaled);
	} else if (why == LINE_EOF) {
		give_up(d, true, "driver: no answer to `%s`: it closed its stdout", op);
	} else if (why == LINE_TOO_LONG) {
		limit_text(d->answer_limit, lim, sizeof(lim));
		give_up(d, false, "driver: answer to `%s` is not a protocol answer: the line is longer than the "
			"limit of %s (PROTOCOL.md)", op, lim);
	} else {
		give_up(d, false, "driver: no answer to `%s`: poll failed", op);
	}
	return NULL;
}

cJSON *cf_call(struct cf_driver *d, const char *op, const cJSON *fields, double timeout_s)
{
	double scaled = timeout_s * d->c->cf->timeout_scale;
	double deadline = cf_now_ms() + scaled * 1000.0;
	char why[400];
	cJSON *ans = NULL;
	char *line;
	size_t len = 0;
	int id = d->next_id++;
	enum cf_answer_verdict v;

	if (d->broken || !send_request(d, op, fields, id))
		return NULL;
	line = next_answer_line(d, op, deadline, scaled, &len);
	if (line == NULL)
		return NULL;
	v = cf_answer_parse(line, len, id, op, &ans, why, sizeof(why));
	if (v == CF_ANSWER_BAD) {
		give_up(d, false, "driver: answer to `%s` is not a protocol answer: %s: %.200s", op, why, line);
	} else if (v == CF_ANSWER_WRONG_ID) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(ans, "error");

		give_up(d, false, "driver: %s%s%s%s%.200s", why, e != NULL ? "; its error: " : "",
			cf_str(e, "type") ? cf_str(e, "type") : "", e != NULL ? ": " : "",
			cf_str(e, "message") ? cf_str(e, "message") : "");
		cJSON_Delete(ans);
		ans = NULL;
	}
	free(line);
	return ans;
}

bool cf_hello_protocol_ok(const cJSON *hello, char *why, size_t cap)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(hello, "protocol");
	char *t;

	if (cJSON_IsNumber(p) && p->valuedouble == 1.0)
		return true;
	if (p == NULL) {
		snprintf(why, cap, "the hello answer has no `protocol` (this runner speaks protocol 1)");
		return false;
	}
	t = cJSON_PrintUnformatted(p);
	/* PROTOCOL.md: a driver that cannot speak the runner's version answers
	 * hello with a ProtocolError; announcing another version is a driver
	 * that does not follow the protocol, and nothing it answers later can
	 * be read as version 1. */
	snprintf(why, cap, "the hello answer announces protocol %.40s; this runner speaks protocol 1 "
		 "(a driver that cannot speak it answers hello with a ProtocolError, PROTOCOL.md)",
		 t != NULL ? t : "?");
	free(t);
	return false;
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

/* Keeps the end of the driver's stderr as evidence: at most the last
 * STDERR_KEEP_LINES lines within the last STDERR_KEEP_BYTES bytes. */
static void collect_stderr(struct cf_driver *d)
{
	sbx_strbuf tail = SBX_STRBUF_INIT;
	long long omitted;
	const char *start;

	stderr_tail(d, STDERR_KEEP_BYTES, &tail, &omitted);
	unlink(d->errpath);
	start = last_lines(&tail, STDERR_KEEP_LINES);
	omitted += (long long)(start - sbx_strbuf_str(&tail));
	if (*start != '\0') {
		sbx_strbuf_printf(&d->c->driver_stderr, "[driver %ld]\n", (long)d->pid);
		if (omitted > 0)
			sbx_strbuf_printf(&d->c->driver_stderr, "[... %lld earlier bytes not kept]\n", omitted);
		sbx_strbuf_puts(&d->c->driver_stderr, start);
		if (d->c->driver_stderr.len > 0 && d->c->driver_stderr.data[d->c->driver_stderr.len - 1] != '\n')
			sbx_strbuf_puts(&d->c->driver_stderr, "\n");
	}
	sbx_strbuf_free(&tail);
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
	if (d->pid <= 0) { /* attached: the caller owns whatever writes out_fd */
		close(d->out_fd);
		sbx_strbuf_free(&d->rbuf);
		return;
	}
	deadline = cf_now_ms() + 2000;
	/* A driver that exits closes its stdout: wait for that instead of
	 * polling waitpid on a clock (the fuzzer stops a driver per few
	 * inputs; a 5 ms tick was a fifth of a driver's life). What it still
	 * writes is of no use once it was told to exit. */
	for (;;) {
		struct pollfd p = {d->out_fd, POLLIN, 0};
		double left = deadline - cf_now_ms();
		char sink[4096];
		int r;

		if (left <= 0)
			break;
		r = poll(&p, 1, left > 20 ? 20 : (int)left + 1); /* a child of the driver may hold stdout */
		if (r > 0 && read(d->out_fd, sink, sizeof(sink)) <= 0)
			break;
		if (r < 0 && errno != EINTR)
			break;
		if (r == 0 && !d->reaped && waitpid(d->pid, &d->wstatus, WNOHANG) == d->pid) {
			d->reaped = true;
			break;
		}
	}
	while (!d->reaped && waitpid(d->pid, &status, WNOHANG) == 0) {
		struct timespec ts = {0, 1000000};

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

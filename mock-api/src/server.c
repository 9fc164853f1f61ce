/* server: the HTTP plumbing of sbx-mock — libmicrohttpd setup, request
 * collection with body limits, JSend shaping, request ids, the fault
 * actions' application (the engine in faults.c decides, this file acts) and
 * the journal record of every control-plane request.
 *
 * Threading: MHD's epoll thread pool (a few threads serve every connection,
 * keep-alive GETs never wait for a thread switch). A pool thread must never
 * block, so requests that may (exec, files, every mutation, the hang and
 * latency faults; every request when mock->offload_all) are offloaded: the
 * connection is suspended, a worker thread computes the answer and resumes
 * it, and the pool thread queues the answer. Bodies that trickle out over
 * time (exec streams, dribble) come from a reader on a worker thread through
 * mock_blocking_response. Every blocking wait checks mock->stopping, and
 * sbx_mock_stop waits for the workers before stopping the daemon, so it
 * never waits on a client. */
#define _GNU_SOURCE
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void mock_sleep_ms(sbx_mock *mock, int64_t ms)
{
	int64_t end = mono_us() + ms * 1000;

	while (!atomic_load(&mock->stopping)) {
		int64_t left = end - mono_us();
		struct timespec ts;

		if (left <= 0)
			return;
		if (left > 50000)
			left = 50000;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left * 1000;
		nanosleep(&ts, NULL);
	}
}

/* ---- worker threads ---- */

/* Blocking work runs on a small pool of threads that outlive their job: a
 * thread per job cost a clone, a stack madvise at exit and a join for every
 * exec (about a tenth of a create->exec->delete cycle). A thread waits
 * POOL_IDLE_MS for the next job, then ends; the pool has no upper bound,
 * like the one-thread-per-job scheme it replaces, because a job may block
 * for as long as a client keeps an exec stream open. */
#define POOL_IDLE_MS 10000

typedef struct mock_job {
	void *(*fn)(void *);
	void *arg;
	sbx_mock *mock;
	struct mock_job *next;
} mock_job;

/* Counts a worker in; false when the mock is stopping (the caller then does
 * the work inline: every blocking wait returns at once on stop). */
static bool worker_begin(sbx_mock *mock)
{
	bool ok;

	pthread_mutex_lock(&mock->work_lock);
	ok = !atomic_load(&mock->stopping);
	if (ok)
		mock->workers++;
	pthread_mutex_unlock(&mock->work_lock);
	return ok;
}

/* A job's last touch of mock, whether it ran on a pool thread or inline. */
static void worker_end(sbx_mock *mock)
{
	pthread_mutex_lock(&mock->work_lock);
	if (--mock->workers == 0)
		pthread_cond_broadcast(&mock->work_cv);
	pthread_mutex_unlock(&mock->work_lock);
}

/* Joins the pool threads that have ended (each is past its last lock of
 * work_lock, so this waits for a few instructions at most). */
static void reap_workers(sbx_mock *mock)
{
	pthread_t batch[16];
	size_t n;

	do {
		pthread_mutex_lock(&mock->work_lock);
		n = mock->nzombies < 16 ? mock->nzombies : 16;
		mock->nzombies -= n;
		if (n > 0)
			memcpy(batch, mock->zombies + mock->nzombies, n * sizeof(*batch));
		pthread_mutex_unlock(&mock->work_lock);
		for (size_t i = 0; i < n; i++)
			pthread_join(batch[i], NULL);
	} while (n > 0);
}

/* Waits for every job to end and every pool thread to leave (the caller
 * has set mock->stopping, so idle threads leave at once). */
static void workers_wait(sbx_mock *mock)
{
	pthread_mutex_lock(&mock->work_lock);
	pthread_cond_broadcast(&mock->job_cv);
	while (mock->workers > 0 || mock->threads > 0)
		pthread_cond_wait(&mock->work_cv, &mock->work_lock);
	pthread_mutex_unlock(&mock->work_lock);
	reap_workers(mock);
}

/* Called with work_lock held by a pool thread that leaves. */
static void pool_leave_locked(sbx_mock *mock)
{
	if (mock->nzombies == mock->capzombies) {
		size_t cap = mock->capzombies == 0 ? 16 : mock->capzombies * 2;
		pthread_t *nz = realloc(mock->zombies, cap * sizeof(*nz));

		if (nz != NULL) {
			mock->zombies = nz;
			mock->capzombies = cap;
		}
	}
	if (mock->nzombies < mock->capzombies)
		mock->zombies[mock->nzombies++] = pthread_self();
	else
		pthread_detach(pthread_self()); /* out of memory: cannot be joined */
	if (--mock->threads == 0)
		pthread_cond_broadcast(&mock->work_cv);
}

static void *pool_main(void *arg)
{
	mock_job *job = arg;
	sbx_mock *mock = job->mock;

	for (;;) {
		struct timespec deadline;
		int rc = 0;

		job->fn(job->arg);
		free(job);
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += POOL_IDLE_MS / 1000;
		pthread_mutex_lock(&mock->work_lock);
		while (mock->jobs == NULL && !atomic_load(&mock->stopping) && rc != ETIMEDOUT) {
			mock->idle++;
			rc = pthread_cond_timedwait(&mock->job_cv, &mock->work_lock, &deadline);
			mock->idle--;
		}
		job = mock->jobs;
		if (job == NULL) {
			pool_leave_locked(mock);
			pthread_mutex_unlock(&mock->work_lock);
			return NULL;
		}
		mock->jobs = job->next;
		if (mock->jobs == NULL)
			mock->jobs_tail = NULL;
		mock->njobs--;
		pthread_mutex_unlock(&mock->work_lock);
	}
}

/* Runs fn(arg) on an idle pool thread, or on a new one. */
static int start_worker(sbx_mock *mock, void *(*fn)(void *), void *arg)
{
	mock_job *job = malloc(sizeof(*job));
	pthread_t tid;
	int rc;

	reap_workers(mock);
	if (job == NULL)
		return ENOMEM;
	*job = (mock_job){.fn = fn, .arg = arg, .mock = mock, .next = NULL};
	pthread_mutex_lock(&mock->work_lock);
	if (mock->idle > mock->njobs) { /* a waiting thread will take it */
		if (mock->jobs_tail != NULL)
			mock->jobs_tail->next = job;
		else
			mock->jobs = job;
		mock->jobs_tail = job;
		mock->njobs++;
		pthread_cond_signal(&mock->job_cv);
		pthread_mutex_unlock(&mock->work_lock);
		return 0;
	}
	mock->threads++;
	pthread_mutex_unlock(&mock->work_lock);
	rc = pthread_create(&tid, NULL, pool_main, job);
	if (rc != 0) {
		free(job);
		pthread_mutex_lock(&mock->work_lock);
		if (--mock->threads == 0)
			pthread_cond_broadcast(&mock->work_cv);
		pthread_mutex_unlock(&mock->work_lock);
	}
	return rc;
}

/* ---- blocking response bodies ---- */

#define PUMP_CHUNK 16384
#define PUMP_HIGH (256 * 1024) /* the reader waits while this much is unsent */

/* Shared by the reader thread and the response (two references). */
typedef struct pump {
	pthread_mutex_t mx;
	pthread_cond_t cv;          /* the reader waits for room */
	sbx_mock *mock;
	struct MHD_Connection *conn;
	MHD_ContentReaderCallback reader;
	void *cls;
	MHD_ContentReaderFreeCallback free_fn;
	void (*cancel)(void *cls);
	sbx_strbuf data;            /* produced, not yet sent from off */
	size_t off;
	uint64_t pos;               /* the reader's position in the body */
	bool eof, error;            /* the reader has finished */
	bool gone;                  /* MHD destroyed the response */
	bool suspended;             /* the connection waits for data */
	int refs;
} pump;

static void pump_unref(pump *p)
{
	bool last;

	pthread_mutex_lock(&p->mx);
	last = --p->refs == 0;
	pthread_mutex_unlock(&p->mx);
	if (!last)
		return;
	if (p->free_fn != NULL)
		p->free_fn(p->cls);
	sbx_strbuf_free(&p->data);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mx);
	free(p);
}

/* Publishes a reader result; resumes the connection if it waits. The
 * connection cannot go away while suspended (only this code resumes it and
 * sbx_mock_stop waits for this thread), so resuming after unlock is safe. */
static bool pump_publish(pump *p, const char *chunk, ssize_t n)
{
	bool wake, done;

	pthread_mutex_lock(&p->mx);
	if (n > 0) {
		if (!sbx_strbuf_append(&p->data, chunk, (size_t)n))
			p->error = true;
		p->pos += (uint64_t)n;
	} else if (n == MHD_CONTENT_READER_END_OF_STREAM) {
		p->eof = true;
	} else if (n < 0) {
		p->error = true;
	}
	wake = p->suspended && (n != 0 || p->eof || p->error);
	if (wake)
		p->suspended = false;
	done = p->eof || p->error || p->gone;
	pthread_mutex_unlock(&p->mx);
	if (wake)
		MHD_resume_connection(p->conn);
	return done;
}

static void *pump_main(void *arg)
{
	pump *p = arg;
	sbx_mock *mock = p->mock;
	char *chunk = malloc(PUMP_CHUNK);

	for (;;) {
		ssize_t n;
		bool stop;

		pthread_mutex_lock(&p->mx);
		while (!p->gone && p->data.len - p->off >= PUMP_HIGH)
			pthread_cond_wait(&p->cv, &p->mx);
		stop = p->gone;
		pthread_mutex_unlock(&p->mx);
		if (stop)
			break;
		n = chunk != NULL ? p->reader(p->cls, p->pos, chunk, PUMP_CHUNK)
				  : MHD_CONTENT_READER_END_WITH_ERROR;
		if (pump_publish(p, chunk, n))
			break;
	}
	free(chunk);
	pump_unref(p);
	worker_end(mock);
	return NULL;
}

/* MHD's side: copies what the reader produced, or suspends until it has. */
static ssize_t pump_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	pump *p = cls;
	ssize_t rc;
	size_t n;

	(void)pos;
	pthread_mutex_lock(&p->mx);
	n = p->data.len - p->off;
	if (n > 0) {
		if (n > max)
			n = max;
		memcpy(buf, p->data.data + p->off, n);
		p->off += n;
		if (p->off == p->data.len) {
			sbx_strbuf_reset(&p->data);
			p->off = 0;
		}
		pthread_cond_signal(&p->cv);
		rc = (ssize_t)n;
	} else if (p->eof) {
		rc = MHD_CONTENT_READER_END_OF_STREAM;
	} else if (p->error) {
		rc = MHD_CONTENT_READER_END_WITH_ERROR;
	} else {
		p->suspended = true;
		MHD_suspend_connection(p->conn);
		rc = 0;
	}
	pthread_mutex_unlock(&p->mx);
	return rc;
}

static void pump_free(void *cls)
{
	pump *p = cls;

	pthread_mutex_lock(&p->mx);
	p->gone = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mx);
	if (p->cancel != NULL)
		p->cancel(p->cls);
	pump_unref(p);
}

struct MHD_Response *mock_blocking_response(mreq *r, uint64_t size, MHD_ContentReaderCallback reader,
					    void *cls, MHD_ContentReaderFreeCallback free_fn,
					    void (*cancel)(void *cls))
{
	pump *p = calloc(1, sizeof(*p));
	struct MHD_Response *resp;

	if (p == NULL) {
		free_fn(cls);
		return NULL;
	}
	pthread_mutex_init(&p->mx, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->mock = r->mock;
	p->conn = r->conn;
	p->reader = reader;
	p->cls = cls;
	p->free_fn = free_fn;
	p->cancel = cancel;
	sbx_strbuf_init(&p->data);
	p->refs = 1;
	resp = MHD_create_response_from_callback(size, PUMP_CHUNK, pump_read, p, pump_free);
	if (resp == NULL) {
		pump_unref(p);
		return NULL;
	}
	p->refs = 2;
	if (!worker_begin(p->mock)) {
		p->refs = 1;
		p->error = true; /* stopping: the body ends at once */
	} else if (start_worker(p->mock, pump_main, p) != 0) {
		p->refs = 1;
		p->error = true;
		worker_end(p->mock);
	}
	return resp;
}

/* ---- JSON helpers ---- */

static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t need;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		need = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		need = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		need = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((need == 2 && cp < 0x80) || (need == 3 && cp < 0x800) || (need == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need;
}

void json_escape(sbx_strbuf *sb, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	sbx_strbuf_append(sb, "\"", 1);
	while (i < len) {
		unsigned char c = p[i];
		size_t run = i;

		/* copy a run of plain bytes at once */
		while (run < len && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' && p[run] != '\\')
			run++;
		if (run > i) {
			sbx_strbuf_append(sb, s + i, run - i);
			i = run;
			continue;
		}
		if (c == '"' || c == '\\') {
			char esc[2] = {'\\', (char)c};

			sbx_strbuf_append(sb, esc, 2);
			i++;
		} else if (c == '\n') {
			sbx_strbuf_append(sb, "\\n", 2);
			i++;
		} else if (c == '\r') {
			sbx_strbuf_append(sb, "\\r", 2);
			i++;
		} else if (c == '\t') {
			sbx_strbuf_append(sb, "\\t", 2);
			i++;
		} else if (c < 0x20) {
			sbx_strbuf_printf(sb, "\\u%04x", c);
			i++;
		} else {
			size_t n = utf8_len(p + i, len - i);

			if (n == 0) {
				sbx_strbuf_append(sb, "\\ufffd", 6);
				i++;
			} else {
				sbx_strbuf_append(sb, s + i, n);
				i += n;
			}
		}
	}
	sbx_strbuf_append(sb, "\"", 1);
}

/* ---- responses ---- */

void resp_header(mresp *out, const char *name, const char *value)
{
	if (out->nh == MRESP_MAX_HEADERS)
		return;
	snprintf(out->hname[out->nh], sizeof(out->hname[0]), "%s", name);
	snprintf(out->hvalue[out->nh], sizeof(out->hvalue[0]), "%s", value);
	out->nh++;
}

void resp_raw(mresp *out, int status, const char *ctype, char *body, size_t len)
{
	free(out->body);
	out->status = status;
	out->ctype = ctype;
	out->body = body;
	out->len = len;
}

/* ---- fast printing of cJSON trees ----
 * Byte for byte what cJSON_PrintUnformatted (cJSON 1.7.15) prints, without
 * its sprintf+sscanf round trip per number (a third of the answer time of a
 * GET). Returns false where cJSON would fail (the caller then asks cJSON). */

static void json_print_str(sbx_strbuf *sb, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
	const unsigned char *run = p;

	sbx_strbuf_append(sb, "\"", 1);
	for (;; p++) {
		const char *esc = NULL;
		char u[8];

		if (*p >= 32 && *p != '"' && *p != '\\')
			continue;
		if (p > run)
			sbx_strbuf_append(sb, (const char *)run, (size_t)(p - run));
		run = p + 1;
		switch (*p) {
		case '\0':
			sbx_strbuf_append(sb, "\"", 1);
			return;
		case '"':
			esc = "\\\"";
			break;
		case '\\':
			esc = "\\\\";
			break;
		case '\b':
			esc = "\\b";
			break;
		case '\f':
			esc = "\\f";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		case '\t':
			esc = "\\t";
			break;
		default:
			snprintf(u, sizeof(u), "\\u%04x", *p);
			esc = u;
			break;
		}
		sbx_strbuf_puts(sb, esc);
	}
}

static void json_print_int(sbx_strbuf *sb, long long v)
{
	char buf[24];
	size_t i = sizeof(buf);
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do {
		buf[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		buf[--i] = '-';
	sbx_strbuf_append(sb, buf + i, sizeof(buf) - i);
}

static void json_print_num(sbx_strbuf *sb, const cJSON *item)
{
	double d = item->valuedouble, back, max;
	char buf[32];

	if (isnan(d) || isinf(d)) {
		sbx_strbuf_puts(sb, "null");
	} else if (fabs(d) < 1e15 && d == floor(d) && !(d == 0 && signbit(d))) {
		json_print_int(sb, (long long)d); /* what %1.15g prints for these */
	} else {
		snprintf(buf, sizeof(buf), "%1.15g", d);
		back = strtod(buf, NULL);
		max = fabs(back) > fabs(d) ? fabs(back) : fabs(d);
		if (!(fabs(back - d) <= max * DBL_EPSILON))
			snprintf(buf, sizeof(buf), "%1.17g", d);
		sbx_strbuf_puts(sb, buf);
	}
}

static bool json_print(sbx_strbuf *sb, const cJSON *item)
{
	const cJSON *c;

	switch (item->type & 0xff) {
	case cJSON_NULL:
		sbx_strbuf_puts(sb, "null");
		return true;
	case cJSON_False:
		sbx_strbuf_puts(sb, "false");
		return true;
	case cJSON_True:
		sbx_strbuf_puts(sb, "true");
		return true;
	case cJSON_Number:
		json_print_num(sb, item);
		return true;
	case cJSON_Raw:
		if (item->valuestring == NULL)
			return false;
		sbx_strbuf_puts(sb, item->valuestring);
		return true;
	case cJSON_String:
		json_print_str(sb, item->valuestring);
		return true;
	case cJSON_Array:
	case cJSON_Object:
		sbx_strbuf_append(sb, (item->type & 0xff) == cJSON_Array ? "[" : "{", 1);
		for (c = item->child; c != NULL; c = c->next) {
			if (c != item->child)
				sbx_strbuf_append(sb, ",", 1);
			if ((item->type & 0xff) == cJSON_Object) {
				json_print_str(sb, c->string);
				sbx_strbuf_append(sb, ":", 1);
			}
			if (!json_print(sb, c))
				return false;
		}
		sbx_strbuf_append(sb, (item->type & 0xff) == cJSON_Array ? "]" : "}", 1);
		return true;
	default:
		return false;
	}
}

/* The tree as compact JSON (malloc'ed), NULL when out of memory. */
char *mock_json_print(const cJSON *item, size_t *len)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char *text;

	if (!json_print(&sb, item) || sb.oom) {
		sbx_strbuf_free(&sb);
		text = cJSON_PrintUnformatted(item);
		*len = text != NULL ? strlen(text) : 0;
		return text;
	}
	return sbx_strbuf_detach(&sb, len);
}

static void resp_envelope(mresp *out, int status, cJSON *env)
{
	size_t len = 0;
	char *text = mock_json_print(env, &len);

	cJSON_Delete(env);
	if (text == NULL) {
		static const char oom[] = "{\"status\":\"error\",\"message\":\"out of memory\",\"code\":500}";

		text = strdup(oom);
		len = text != NULL ? strlen(text) : 0;
		status = 500;
	}
	resp_raw(out, status, "application/json", text, len);
}

void resp_success(mresp *out, int status, cJSON *data)
{
	cJSON *env = cJSON_CreateObject();

	cJSON_AddStringToObject(env, "status", "success");
	if (data == NULL)
		data = cJSON_CreateObject();
	cJSON_AddItemToObject(env, "data", data);
	resp_envelope(out, status, env);
}

void resp_fail(mresp *out, int status, const char *field, const char *code, const char *msg)
{
	cJSON *env = cJSON_CreateObject();
	cJSON *data;

	if (status >= 500) {
		cJSON_Delete(env);
		resp_error(out, status, msg);
		return;
	}
	cJSON_AddStringToObject(env, "status", "fail");
	data = cJSON_AddObjectToObject(env, "data");
	cJSON_AddStringToObject(data, field != NULL && field[0] != '\0' ? field : "error", msg);
	if (code != NULL && code[0] != '\0')
		cJSON_AddStringToObject(data, "code", code);
	resp_envelope(out, status, env);
}

void resp_error(mresp *out, int status, const char *msg)
{
	cJSON *env = cJSON_CreateObject();

	cJSON_AddStringToObject(env, "status", "error");
	cJSON_AddStringToObject(env, "message", msg);
	cJSON_AddNumberToObject(env, "code", status);
	resp_envelope(out, status, env);
}

void resp_mock_err(mresp *out, const mock_err *e)
{
	resp_fail(out, e->status, e->field, e->code, e->msg);
}

/* ---- request helpers ---- */

const char *req_query(const mreq *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

bool req_seg(const mreq *r, int i, char *buf, size_t cap)
{
	const char *p = r->path;

	for (int k = 0; k <= i; k++) {
		size_t len;

		if (*p != '/')
			return false;
		p++;
		len = strcspn(p, "/");
		if (k == i) {
			if (len == 0 || len >= cap)
				return false;
			memcpy(buf, p, len);
			buf[len] = '\0';
			return true;
		}
		p += len;
	}
	return false;
}

static int conn_fd(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

	return ci != NULL ? ci->connect_fd : -1;
}

int req_conn_fd(const mreq *r)
{
	return conn_fd(r->conn);
}

bool req_client_gone(const mreq *r)
{
	if (atomic_load(&r->mock->stopping))
		return true;
	return mock_fd_gone(conn_fd(r->conn));
}

bool mock_fd_gone(int fd)
{
	struct pollfd pfd;
	char c;

	if (fd < 0)
		return false;
	pfd.fd = fd;
	pfd.events = POLLIN | POLLRDHUP;
	pfd.revents = 0;
	if (poll(&pfd, 1, 0) <= 0)
		return false;
	if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))
		return true;
	if (pfd.revents & POLLIN)
		return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
	return false;
}

/* ---- fault application ---- */

/* RST the connection now: SO_LINGER 0 makes the final close abortive, and
 * connect(AF_UNSPEC) disconnects the TCP socket at once (Linux sends RST),
 * so MHD's own shutdown(SHUT_WR) cannot turn it into a polite FIN. */
static void set_linger_reset(struct MHD_Connection *conn)
{
	int fd = conn_fd(conn);
	struct linger lg = {1, 0};
	struct sockaddr unspec;

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	memset(&unspec, 0, sizeof(unspec));
	unspec.sa_family = AF_UNSPEC;
	/* Dissolving the association is best effort: the close that follows
	 * still resets the connection because of SO_LINGER 0. */
	(void)connect(fd, &unspec, sizeof(unspec));
}

static void hang(mreq *r, int64_t max_ms)
{
	int64_t end = mono_us() + max_ms * 1000;

	while (mono_us() < end) {
		if (req_client_gone(r))
			return;
		mock_sleep_ms(r->mock, 50);
	}
}

static void fault_http(mreq *r, mresp *out)
{
	const mock_fault_action *a = &r->fault;
	bool error = a->envelope[0] != '\0' ? strcmp(a->envelope, "error") == 0 : a->status >= 500;
	char msg[300];

	snprintf(msg, sizeof(msg), "%s", a->message[0] != '\0' ? a->message : "injected fault");
	if (a->status >= 200 && a->status < 300) {
		resp_success(out, a->status, NULL);
	} else if (error) {
		cJSON *env = cJSON_CreateObject();

		cJSON_AddStringToObject(env, "status", "error");
		cJSON_AddStringToObject(env, "message", msg);
		cJSON_AddNumberToObject(env, "code", a->status);
		resp_envelope(out, a->status, env);
	} else {
		resp_fail(out, a->status, "error", a->code, msg);
	}
	if (a->retry_after >= 0) {
		char v[24];

		snprintf(v, sizeof(v), "%d", a->retry_after);
		resp_header(out, "Retry-After", v);
	}
	for (size_t i = 0; i < a->nheaders; i++)
		resp_header(out, a->hname[i], a->hvalue[i]);
}

typedef struct slow_body {
	sbx_mock *mock;
	char *body;
	size_t len;
	unsigned bytes_per_tick; /* 0: truncated mode */
} slow_body;

static ssize_t slow_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	slow_body *sb = cls;
	size_t n;

	if (pos >= sb->len)
		return sb->bytes_per_tick == 0 ? MHD_CONTENT_READER_END_WITH_ERROR
						: MHD_CONTENT_READER_END_OF_STREAM;
	if (atomic_load(&sb->mock->stopping))
		return MHD_CONTENT_READER_END_WITH_ERROR;
	n = sb->len - (size_t)pos;
	if (n > max)
		n = max;
	if (sb->bytes_per_tick != 0) {
		if (n > sb->bytes_per_tick)
			n = sb->bytes_per_tick;
		mock_sleep_ms(sb->mock, 100);
	}
	memcpy(buf, sb->body + pos, n);
	return (ssize_t)n;
}

static void slow_free(void *cls)
{
	slow_body *sb = cls;

	free(sb->body);
	free(sb);
}

/* Turns out's body into a response that declares `declared` bytes but
 * sends only the body (truncated), or dribbles it (bytes_per_sec). */
static void make_slow(mreq *r, mresp *out, uint64_t declared, unsigned bytes_per_sec)
{
	slow_body *sb = calloc(1, sizeof(*sb));

	if (sb == NULL)
		return;
	sb->mock = r->mock;
	sb->body = out->body;
	sb->len = out->len;
	sb->bytes_per_tick = bytes_per_sec == 0 ? 0 : (bytes_per_sec + 9) / 10;
	out->body = NULL;
	out->len = 0;
	if (sb->bytes_per_tick != 0) {
		out->custom = mock_blocking_response(r, declared, slow_reader, sb, slow_free, NULL);
		return;
	}
	out->custom = MHD_create_response_from_callback(declared, 4096, slow_reader, sb, slow_free);
	if (out->custom == NULL)
		slow_free(sb);
}

/* Transport faults that replace the answer. Returns true when handled. */
static bool apply_replacing_fault(mreq *r, mresp *out)
{
	static const char malformed[] = "{\"status\":\"success\",\"data\":{\"id\":\"sb-";
	unsigned char *garbage;

	switch (r->fault.kind) {
	case FK_HTTP:
		fault_http(r, out);
		return true;
	case FK_RESET:
		out->close_reset = true;
		return true;
	case FK_CLOSE:
		out->close_plain = true;
		return true;
	case FK_HANG:
		hang(r, r->fault.max_ms);
		out->close_plain = true;
		return true;
	case FK_EMPTY_200:
		resp_raw(out, 200, "application/json", NULL, 0);
		return true;
	case FK_MALFORMED_JSON:
		resp_raw(out, 200, "application/json", strdup(malformed), sizeof(malformed) - 1);
		return true;
	case FK_TRUNCATED:
		resp_success(out, 200, NULL);
		make_slow(r, out, (uint64_t)out->len + 512, 0);
		return true;
	case FK_GARBAGE:
		garbage = malloc(512);
		if (garbage != NULL)
			mock_faults_random_bytes(r->mock->faults, garbage, 512);
		resp_raw(out, 200, "application/json", (char *)garbage, garbage != NULL ? 512 : 0);
		return true;
	default:
		return false;
	}
}

/* ---- the request pipeline ---- */

static const char *auth_key(struct MHD_Connection *conn)
{
	static const char *const names[] = {"X-Auth-Token", "X-Access-Token", "X-Api-Key"};

	for (size_t i = 0; i < 3; i++) {
		const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, names[i]);

		if (v != NULL && v[0] != '\0')
			return v;
	}
	return NULL;
}

/* Fills the fault-matching summary: tenant request number and name. */
static void fault_summary(mreq *r, mock_fault_req *q, char *name, size_t cap)
{
	sbx_mock *mock = r->mock;
	char seg[64];

	q->method = r->method;
	q->path = r->path;
	q->tenant = r->api_key != NULL ? r->api_key : "";
	q->name = NULL;
	q->is_exec = mock_path_match("/v1/sandboxes/{id}/exec", r->path);
	pthread_mutex_lock(&mock->model->lock);
	if (r->api_key != NULL) {
		mock_tenant *t = mock_tenant_get(mock->model, r->api_key, false);

		q->request_no = t != NULL ? ++t->requests : ++mock->anon_requests;
	} else {
		q->request_no = ++mock->anon_requests;
	}
	if (req_seg(r, 0, seg, sizeof(seg)) && strcmp(seg, "v1") == 0 &&
	    req_seg(r, 1, seg, sizeof(seg)) && strcmp(seg, "sandboxes") == 0) {
		if (req_seg(r, 2, seg, sizeof(seg))) {
			mock_sandbox *sb = mock_sandbox_find_any(mock->model, seg);

			if (sb != NULL && sb->name[0] != '\0') {
				snprintf(name, cap, "%s", sb->name);
				q->name = name;
			}
		} else if (r->json != NULL) {
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(r->json, "name");

			if (cJSON_IsString(n)) {
				snprintf(name, cap, "%s", n->valuestring);
				q->name = name;
			}
		}
	}
	pthread_mutex_unlock(&mock->model->lock);
}

static void journal_record(mreq *r, int status)
{
	mock_journal_entry e;
	sbx_strbuf q = SBX_STRBUF_INIT;
	const char *qs;

	memset(&e, 0, sizeof(e));
	pthread_mutex_lock(&r->mock->model->lock);
	e.ts_ms = mock_now(r->mock->model);
	pthread_mutex_unlock(&r->mock->model->lock);
	snprintf(e.method, sizeof(e.method), "%s", r->method);
	e.path = r->path;
	qs = strchr(r->path, '?');
	(void)qs;
	/* MHD hands the path without query; rebuild it from the arguments. */
	if (MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, NULL, NULL) > 0) {
		const char *keys[] = {"limit", "offset", "status", "stream", "path", "mount_path",
				      "follow", "attempt", "include", "reason"};

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			const char *v = req_query(r, keys[i]);

			if (v != NULL)
				sbx_strbuf_printf(&q, "%s%s=%s", q.len > 0 ? "&" : "", keys[i], v);
		}
	}
	e.query = q.len > 0 ? q.data : NULL;
	e.tenant = (char *)r->api_key; /* copied by mock_journal_add */
	e.status = status;
	snprintf(e.sandbox_id, sizeof(e.sandbox_id), "%s", r->sandbox_id);
	e.duration_us = mono_us() - r->start_us;
	{
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

		e.conn = ci != NULL ? (uint64_t)(uintptr_t)ci->socket_context : 0;
	}
	e.fault = r->fault_fired ? r->fault_label : NULL;
	mock_journal_add(r->mock->journal, &e);
	sbx_strbuf_free(&q);
}

static enum MHD_Result queue(mreq *r, mresp *out)
{
	struct MHD_Response *resp = out->custom;
	enum MHD_Result rc;

	if (resp == NULL) {
		resp = MHD_create_response_from_buffer(out->len, out->body, MHD_RESPMEM_MUST_FREE);
		if (resp == NULL)
			return MHD_NO;
		out->body = NULL;
	}
	out->custom = NULL;
	if (out->ctype != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, out->ctype);
	MHD_add_response_header(resp, "X-Request-Id", r->request_id);
	for (size_t i = 0; i < out->nh; i++)
		MHD_add_response_header(resp, out->hname[i], out->hvalue[i]);
	rc = MHD_queue_response(r->conn, (unsigned)out->status, resp);
	MHD_destroy_response(resp);
	return rc;
}

static void mresp_release(mresp *out)
{
	free(out->body);
	out->body = NULL;
	if (out->custom != NULL)
		MHD_destroy_response(out->custom);
	out->custom = NULL;
}

static void parse_body(mreq *r)
{
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_TYPE);

	if (r->body.len == 0)
		return;
	if (ct != NULL && strstr(ct, "octet-stream") != NULL)
		return;
	r->json = cJSON_ParseWithLength(r->body.data, r->body.len);
	if (r->json == NULL)
		r->json_bad = true;
}

static enum MHD_Result finish(mreq *r, mresp *out)
{
	enum MHD_Result rc;

	if (out->close_reset || out->close_plain) {
		if (out->close_reset)
			set_linger_reset(r->conn);
		mresp_release(out);
		return MHD_NO;
	}
	rc = queue(r, out);
	mresp_release(out);
	return rc;
}

static void commit_then_fail(mreq *r, mresp *out)
{
	mresp_release(out);
	memset(out, 0, sizeof(*out));
	switch (r->fault.then) {
	case THEN_RESET:
		out->close_reset = true;
		break;
	case THEN_CLOSE:
		out->close_plain = true;
		break;
	default:
		out->status = r->fault.status;
		if (out->status >= 500)
			resp_error(out, out->status, "injected failure after the operation committed");
		else
			resp_fail(out, out->status, "error", "", "injected failure after commit");
		break;
	}
}

/* Everything after the prologue; may block (latency, hang, exec, I/O). */
static void serve(mreq *r, mresp *out)
{
	sbx_mock *mock = r->mock;

	if (r->admin) {
		admin_dispatch(r, out);
		return;
	}
	if (r->fault_fired && r->fault.kind == FK_LATENCY)
		mock_sleep_ms(mock, (int64_t)mock_faults_latency_ms(mock->faults, &r->fault));
	if (r->self) { /* fault rules are not evaluated for it (dispatch) */
		self_dispatch(r, out);
	} else if (!(r->fault_fired && (apply_replacing_fault(r, out) || chaos_apply(r, out)))) {
		api_dispatch(r, out);
		if (r->fault_fired && r->fault.kind == FK_COMMIT_THEN_FAIL)
			commit_then_fail(r, out);
		else if (r->fault_fired && r->fault.kind == FK_DRIBBLE && out->custom == NULL)
			make_slow(r, out, out->len, r->fault.bytes_per_sec);
	}
	journal_record(r, out->close_reset || out->close_plain ? 0 : out->status);
}

/* True when serving r may block, so it must not run on a pool thread:
 * reads are served inline unless they touch a guest or a waiting fault
 * fired; every mutation is offloaded (guests, file I/O, timing profiles). */
static bool must_offload(const mreq *r)
{
	if (atomic_load(&r->mock->offload_all) || r->mock->rec != NULL)
		return true; /* record/replay: GETs go upstream */
	if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0)
		return true;
	if (r->fault_fired) {
		switch (r->fault.kind) {
		case FK_HTTP:
		case FK_RESET:
		case FK_CLOSE:
		case FK_EMPTY_200:
		case FK_MALFORMED_JSON:
		case FK_TRUNCATED:
		case FK_GARBAGE:
		case FK_DRIBBLE: /* the body comes through mock_blocking_response */
			break;
		default:
			return true;
		}
	}
	return mock_path_match("/v1/sandboxes/{id}/files", r->path) ||
	       mock_path_match("/v1/sandboxes/{id}/exec", r->path);
}

/* Serves an offloaded request and hands it back to MHD. */
static void offload_serve(mreq *r)
{
	sbx_mock *mock = r->mock;
	struct MHD_Connection *conn = r->conn;

	serve(r, r->pending);
	r->offload = OFFLOAD_DONE;
	/* r belongs to MHD again from here on (it may complete and free it) */
	MHD_resume_connection(conn);
	worker_end(mock);
}

static void *offload_main(void *arg)
{
	offload_serve(arg);
	return NULL;
}

/* Suspends the connection and serves r on a worker; false when that is not
 * possible (the caller serves inline). */
static bool offload(mreq *r)
{
	r->pending = calloc(1, sizeof(*r->pending));
	if (r->pending == NULL)
		return false;
	if (!worker_begin(r->mock)) {
		free(r->pending);
		r->pending = NULL;
		return false;
	}
	r->offload = OFFLOAD_RUNNING;
	MHD_suspend_connection(r->conn);
	if (start_worker(r->mock, offload_main, r) != 0)
		offload_serve(r); /* resumes at once; the answer is queued on the next call */
	return true;
}

static enum MHD_Result dispatch(mreq *r)
{
	sbx_mock *mock = r->mock;
	mresp out;
	mock_fault_req q;
	char name[MOCK_NAME_MAX + 2];

	snprintf(r->request_id, sizeof(r->request_id), "req_%08lx%012llx",
		 (unsigned long)(mock->seed & 0xffffffff),
		 (unsigned long long)atomic_fetch_add(&mock->req_counter, 1));
	r->admin = !r->self && (strncmp(r->path, "/_mock/", 7) == 0 || strcmp(r->path, "/_mock") == 0);
	if (r->too_large) {
		char msg[128];

		memset(&out, 0, sizeof(out));
		snprintf(msg, sizeof(msg), "request body is over the %zu-byte limit", r->limit);
		resp_fail(&out, 413, "body", "PAYLOAD_TOO_LARGE", msg);
		if (!r->admin)
			journal_record(r, 413);
		return finish(r, &out);
	}
	parse_body(r);
	if (!r->admin && !r->self) {
		r->api_key = auth_key(r->conn);
		if (mock_faults_count(mock->faults) > 0) {
			fault_summary(r, &q, name, sizeof(name));
			r->fault_fired = mock_faults_eval(mock->faults, &q, &r->fault, r->fault_label,
							  sizeof(r->fault_label));
		}
	}
	if (must_offload(r) && offload(r))
		return MHD_YES;
	memset(&out, 0, sizeof(out));
	serve(r, &out);
	return finish(r, &out);
}

static bool self_conn(const sbx_mock *mock, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);

	return ci != NULL && ci->daemon == mock->self_daemon;
}

static bool is_file_put(const char *method, const char *url)
{
	return strcmp(method, "PUT") == 0 && mock_path_match("/v1/sandboxes/{id}/files", url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	sbx_mock *mock = cls;
	mreq *r = *con_cls;

	(void)version;
	if (r == NULL) {
		const char *cl;

		r = calloc(1, sizeof(*r));
		if (r == NULL)
			return MHD_NO;
		r->mock = mock;
		r->conn = conn;
		r->self = mock->self_daemon != NULL && self_conn(mock, conn);
		r->method = method;
		r->path = strdup(url);
		r->start_us = mono_us();
		r->limit = is_file_put(method, url) ? mock->max_file : mock->max_json;
		sbx_strbuf_init(&r->body);
		*con_cls = r;
		if (r->path == NULL)
			return MHD_NO;
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL && strtoull(cl, NULL, 10) > r->limit)
			r->too_large = true;
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		if (!r->too_large) {
			if (r->body.len + *upload_data_size > r->limit) {
				r->too_large = true;
				sbx_strbuf_free(&r->body);
			} else if (!sbx_strbuf_append(&r->body, upload_data, *upload_data_size)) {
				return MHD_NO;
			}
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (r->offload == OFFLOAD_DONE) {
		mresp *out = r->pending;
		enum MHD_Result rc;

		r->pending = NULL;
		r->offload = OFFLOAD_NONE;
		rc = finish(r, out);
		free(out);
		return rc;
	}
	if (r->offload == OFFLOAD_RUNNING)
		return MHD_YES; /* not reached: the connection is suspended */
	return dispatch(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	mreq *r = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (r == NULL)
		return;
	if (r->pending != NULL) {
		mresp_release(r->pending);
		free(r->pending);
	}
	cJSON_Delete(r->json);
	sbx_strbuf_free(&r->body);
	free(r->path);
	free(r);
	*con_cls = NULL;
}

__attribute__((format(printf, 2, 0)))
static void on_log(void *cls, const char *fmt, va_list ap)
{
	sbx_mock *mock = cls;

	if (mock->quiet)
		return;
	fputs("sbx-mock: mhd: ", stderr);
	vfprintf(stderr, fmt, ap);
}

/* ---- guests and lifecycle hooks ---- */

void mock_on_state_change(mock_sandbox *sb, mock_status from, void *arg)
{
	(void)arg;
	if (sb->status == ST_PAUSED && from == ST_RUNNING)
		mock_guest_signal(sb->guest, SIGSTOP);
	if (sb->status == ST_DESTROYED)
		mock_destroy_guest(sb);
}

/* Kills the guest's processes and removes its tree; the struct itself lives
 * until the mock stops, because an exec may still hold it. */
void mock_destroy_guest(mock_sandbox *sb)
{
	if (sb->guest == NULL)
		return;
	mock_guest_kill(sb->guest);
}

static void free_guests(sbx_mock *mock, bool remove)
{
	mock_model *m = mock->model;

	for (size_t i = 0; i < m->nsbx; i++) {
		mock_guest_free(m->sbx[i]->guest, remove);
		m->sbx[i]->guest = NULL;
	}
	for (size_t i = 0; i < m->ngrave; i++) {
		mock_guest_free(m->grave[i]->guest, remove);
		m->grave[i]->guest = NULL;
	}
}

void mock_reset_all(sbx_mock *mock)
{
	mock_model *m = mock->model;

	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->nsbx; i++)
		mock_guest_kill(m->sbx[i]->guest);
	mock_model_reset(m);
	pthread_mutex_unlock(&m->lock);
	mock_faults_clear(mock->faults);
	mock_faults_reseed(mock->faults, mock->seed);
	mock_journal_clear(mock->journal);
}

/* ---- start and stop ---- */

void sbx_mock_config_init(sbx_mock_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen_host = "127.0.0.1";
	cfg->accept_any_key = true;
	cfg->region = "local";
	cfg->sandbox_cap = 5;
	cfg->cap_status = 403;
	cfg->cap_code = "QUOTA_EXCEEDED";
	cfg->host_rule_mode = SBX_HOST_RULES_OBSERVED;
	cfg->max_egress_rules = SBX_EGRESS_MAX_RULES_DEFAULT;
	cfg->max_json_body = 1024 * 1024;
	cfg->max_file_body = 64 * 1024 * 1024;
	cfg->timing = "instant";
	cfg->seed = 1;
	cfg->journal_size = 65536;
	cfg->guest_mode = "auto";
	cfg->exec_timeout_ms = 600000;
}

int sbx_mock_parse_timing(const char *timing, double *scale, sbx_err *err)
{
	char *end = NULL;
	double v;

	if (timing == NULL || strcmp(timing, "instant") == 0) {
		*scale = 0;
		return 0;
	}
	if (strcmp(timing, "realistic") == 0) {
		*scale = 1;
		return 0;
	}
	errno = 0;
	v = strtod(timing, &end);
	if (errno != 0 || end == timing || *end != '\0' || v < 0 || v > 1000) {
		sbx_err_set(err, "timing \"%s\": expected instant, realistic or a scale factor 0-1000",
			    timing);
		return -1;
	}
	*scale = v;
	return 0;
}

static int make_work_dir(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	if (cfg->work_dir != NULL) {
		if (mkdir(cfg->work_dir, 0755) != 0 && errno != EEXIST) {
			sbx_err_set(err, "work dir %s: %s", cfg->work_dir, strerror(errno));
			return -1;
		}
		snprintf(mock->work_dir, sizeof(mock->work_dir), "%s", cfg->work_dir);
		return 0;
	}
	{
		const char *base = getenv("TMPDIR");

		snprintf(mock->work_dir, sizeof(mock->work_dir), "%s/sbx-mock-XXXXXX",
			 base != NULL && base[0] != '\0' ? base : "/tmp");
	}
	if (mkdtemp(mock->work_dir) == NULL) {
		sbx_err_set(err, "mkdtemp %s: %s", mock->work_dir, strerror(errno));
		return -1;
	}
	mock->own_work_dir = true;
	return 0;
}

static void random_token(char *buf, size_t cap)
{
	unsigned char raw[24];
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		uint64_t t = (uint64_t)mono_us() ^ (uint64_t)getpid();

		for (size_t i = 0; i < sizeof(raw); i++)
			raw[i] = (unsigned char)(t >> ((i % 8) * 8)) ^ (unsigned char)i;
	}
	for (size_t i = 0; i < sizeof(raw) && n + 2 < cap; i++) {
		buf[n++] = hex[raw[i] >> 4];
		buf[n++] = hex[raw[i] & 15];
	}
	buf[n] = '\0';
}

static int copy_keys(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	if (cfg->api_key_count == 0)
		return 0;
	mock->keys = calloc(cfg->api_key_count, sizeof(char *));
	if (mock->keys == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < cfg->api_key_count; i++) {
		mock->keys[i] = strdup(cfg->api_keys[i]);
		if (mock->keys[i] == NULL) {
			sbx_err_set(err, "out of memory");
			return -1;
		}
		mock->nkeys++;
	}
	return 0;
}

static int start_daemon(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	struct sockaddr_in sa;
	const union MHD_DaemonInfo *di;
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	/* two epoll threads per CPU, 4 to 8: one thread preempted by another
	 * process stalls only its share of the connections (measured on a
	 * loaded 2-core machine: 4 threads served 1.1-1.8x the GETs of 2 at
	 * the same CPU per request) */
	unsigned pool = ncpu < 2 ? 4 : (ncpu > 4 ? 8 : (unsigned)ncpu * 2);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(cfg->listen_port);
	if (inet_pton(AF_INET, cfg->listen_host, &sa.sin_addr) != 1) {
		sbx_err_set(err, "listen host \"%s\" is not an IPv4 address", cfg->listen_host);
		return -1;
	}
	mock->daemon = MHD_start_daemon(flags, cfg->listen_port, NULL, NULL, on_request, mock,
					MHD_OPTION_EXTERNAL_LOGGER, on_log, mock,
					MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
					MHD_OPTION_NOTIFY_COMPLETED, on_completed, mock,
					MHD_OPTION_NOTIFY_CONNECTION, chaos_on_connection, mock,
					MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
					MHD_OPTION_CONNECTION_LIMIT, (unsigned)4096,
					MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
					MHD_OPTION_THREAD_POOL_SIZE, pool,
					MHD_OPTION_END);
	if (mock->daemon == NULL) {
		sbx_err_set(err, "cannot listen on %s:%u: %s", cfg->listen_host, cfg->listen_port,
			    strerror(errno));
		return -1;
	}
	di = MHD_get_daemon_info(mock->daemon, MHD_DAEMON_INFO_BIND_PORT);
	mock->port = di != NULL ? di->port : cfg->listen_port;
	snprintf(mock->url, sizeof(mock->url), "http://%s:%u", cfg->listen_host, mock->port);
	return 0;
}

/* The guests' self-signal listener (self.c): a second, single-threaded
 * daemon on the same request plumbing; self-signals are rare. */
static int start_self_daemon(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	const char *arg = cfg->self_listen, *colon;
	struct sockaddr_in sa;
	const union MHD_DaemonInfo *di;
	char host[64];
	unsigned long port = 70000; /* out of range until parsed */
	char *end = NULL;
	sbx_err bind_err = {{0}};

	if (arg == NULL)
		return 0;
	colon = strrchr(arg, ':');
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	if (colon != NULL && (size_t)(colon - arg) < sizeof(host)) {
		memcpy(host, arg, (size_t)(colon - arg));
		host[colon - arg] = '\0';
		errno = 0;
		port = colon[1] >= '0' && colon[1] <= '9' ? strtoul(colon + 1, &end, 10) : 70000;
	}
	if (colon == NULL || (size_t)(colon - arg) >= sizeof(host) || errno != 0 || end == NULL ||
	    *end != '\0' || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		sbx_err_set(err, "self listen \"%s\" is not IPv4 HOST:PORT (e.g. 127.0.0.1:1029)", arg);
		return -1;
	}
	sa.sin_port = htons((uint16_t)port);
	mock->self_daemon = MHD_start_daemon(
		MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, (uint16_t)port,
		NULL, NULL, on_request, mock, MHD_OPTION_EXTERNAL_LOGGER, on_log, mock,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
		mock, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)256, MHD_OPTION_END);
	if (mock->self_daemon == NULL) {
		sbx_err_set(&bind_err, "cannot listen on %s for the guests' self-signals: %s", arg,
			    strerror(errno));
		if (!cfg->self_listen_optional) {
			*err = bind_err;
			return -1;
		}
		snprintf(mock->self_note, sizeof(mock->self_note), "%s", bind_err.msg);
		return 0;
	}
	di = MHD_get_daemon_info(mock->self_daemon, MHD_DAEMON_INFO_BIND_PORT);
	mock->self_port = di != NULL ? di->port : (uint16_t)port;
	snprintf(mock->self_url, sizeof(mock->self_url), "http://%s:%u", host, mock->self_port);
	return 0;
}

sbx_mock *sbx_mock_start(const sbx_mock_config *cfg, sbx_err *err)
{
	sbx_mock *mock = calloc(1, sizeof(*mock));
	mock_settings set;

	if (mock == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&mock->work_lock, NULL);
	pthread_cond_init(&mock->work_cv, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* pool_main's idle deadline */
		pthread_cond_init(&mock->job_cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	mock->work_ready = true;
	memset(&set, 0, sizeof(set));
	set.sandbox_cap = cfg->sandbox_cap;
	set.cap_status = cfg->cap_status;
	snprintf(set.cap_code, sizeof(set.cap_code), "%s", cfg->cap_code != NULL ? cfg->cap_code : "");
	set.credit = true;
	set.host_rule_mode = cfg->host_rule_mode;
	set.accept_any_key = cfg->accept_any_key;
	set.max_egress_rules = cfg->max_egress_rules;
	set.ready = true;
	snprintf(set.region, sizeof(set.region), "%s", cfg->region != NULL ? cfg->region : "local");
	if (sbx_mock_parse_timing(cfg->timing, &set.timing_scale, err) != 0)
		goto out_free;
	if (cfg->cap_status < 400 || cfg->cap_status > 599) {
		sbx_err_set(err, "cap status %u: expected an HTTP error status 400-599", cfg->cap_status);
		goto out_free;
	}
	mock->quiet = cfg->quiet;
	mock->seed = cfg->seed;
	mock->max_json = cfg->max_json_body;
	mock->max_file = cfg->max_file_body;
	mock->exec_timeout_ms = cfg->exec_timeout_ms;
	if (cfg->scenario_dir != NULL)
		snprintf(mock->scenario_dir, sizeof(mock->scenario_dir), "%s", cfg->scenario_dir);
	atomic_store(&mock->hb_ms, 5000);
	if (cfg->admin_token != NULL)
		snprintf(mock->admin_token, sizeof(mock->admin_token), "%s", cfg->admin_token);
	else
		random_token(mock->admin_token, sizeof(mock->admin_token));
	if (copy_keys(mock, cfg, err) != 0 || chaos_init(mock) != 0)
		goto out_free;
	if (mock_guest_mode_detect(cfg->guest_mode, &mock->gmode, err) != 0)
		goto out_free;
	if (mock->gmode == GUEST_NS) {
		sbx_err perr;

		mock->pidns = mock_pidns_start(&perr);
		if (mock->pidns == NULL) /* guests then share the mock's PID namespace */
			snprintf(mock->pidns_note, sizeof(mock->pidns_note), "%s", perr.msg);
	}
	mock->model = mock_model_new(&set);
	mock->faults = mock_faults_new(cfg->seed);
	mock->journal = mock_journal_new(cfg->no_journal ? 0 : cfg->journal_size);
	if (mock->model == NULL || mock->faults == NULL || mock->journal == NULL) {
		sbx_err_set(err, "out of memory");
		goto out_free;
	}
	for (size_t i = 0; i < mock->nkeys; i++)
		mock_tenant_add(mock->model, mock->keys[i]);
	if (make_work_dir(mock, cfg, err) != 0)
		goto out_free;
	if (mock_durable_start(mock, cfg, err) != 0)
		goto out_free;
	if (cfg->scenario != NULL && sbx_mock_load_scenario(mock, cfg->scenario, err) != 0)
		goto out_free;
	mock->rec = mock_rec_new(cfg, err);
	if (mock->rec == NULL && (cfg->record_upstream != NULL || cfg->replay != NULL))
		goto out_free;
	if (start_daemon(mock, cfg, err) != 0 || start_self_daemon(mock, cfg, err) != 0)
		goto out_free;
	return mock;

out_free:
	sbx_mock_stop(mock);
	return NULL;
}

const char *sbx_mock_url(const sbx_mock *mock)
{
	return mock->url;
}

uint16_t sbx_mock_port(const sbx_mock *mock)
{
	return mock->port;
}

const char *sbx_mock_admin_token(const sbx_mock *mock)
{
	return mock->admin_token;
}

const char *sbx_mock_guest_mode(const sbx_mock *mock)
{
	return mock_guest_mode_name(mock->gmode);
}

const char *sbx_mock_self_url(const sbx_mock *mock)
{
	return mock->self_daemon != NULL ? mock->self_url : NULL;
}

const char *sbx_mock_self_note(const sbx_mock *mock)
{
	return mock->self_note[0] != '\0' ? mock->self_note : NULL;
}

const char *sbx_mock_guest_pidns_note(const sbx_mock *mock)
{
	return mock->gmode == GUEST_NS && mock->pidns == NULL ? mock->pidns_note : NULL;
}

void sbx_mock_stop(sbx_mock *mock)
{
	if (mock == NULL)
		return;
	atomic_store(&mock->stopping, true);
	if (mock->model != NULL) {
		pthread_mutex_lock(&mock->model->lock);
		for (size_t i = 0; i < mock->model->nsbx; i++)
			mock_guest_kill(mock->model->sbx[i]->guest);
		pthread_mutex_unlock(&mock->model->lock);
	}
	/* workers resume their connections before they end: none stays
	 * suspended when the daemon stops */
	if (mock->work_ready)
		workers_wait(mock);
	if (mock->daemon != NULL)
		MHD_stop_daemon(mock->daemon);
	if (mock->self_daemon != NULL)
		MHD_stop_daemon(mock->self_daemon);
	if (mock->model != NULL) {
		free_guests(mock, mock->state == NULL); /* durable: trees survive */
		mock_model_free(mock->model);
	}
	mock_pidns_stop(mock->pidns); /* every guest process is gone after this */
	if (mock->own_work_dir)
		rmdir(mock->work_dir);
	mock_faults_free(mock->faults);
	mock_journal_free(mock->journal);
	chaos_free(mock);
	mock_rec_free(mock->rec);
	mock_mutlog_close(mock->state);
	for (size_t i = 0; i < mock->nkeys; i++)
		free(mock->keys[i]);
	free(mock->keys);
	free(mock->zombies);
	if (mock->work_ready) {
		pthread_cond_destroy(&mock->work_cv);
		pthread_cond_destroy(&mock->job_cv);
		pthread_mutex_destroy(&mock->work_lock);
	}
	free(mock);
}

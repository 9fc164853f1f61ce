/* workers: the worker pool and the blocking-response pump (see workers.h).
 *
 * Every wait here checks mock->stopping or is woken by it, and no function
 * here touches a connection except to suspend or resume it: the answer is
 * always queued by MHD's own thread (http.c, or MHD calling pump_read). */
#define _GNU_SOURCE
#include "http/request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the pool ---- */

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

void mock_workers_init(sbx_mock *mock)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&mock->work_lock, NULL);
	pthread_cond_init(&mock->work_cv, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* pool_main's idle deadline */
	pthread_cond_init(&mock->job_cv, &ca);
	pthread_condattr_destroy(&ca);
	mock->work_ready = true;
}

void mock_workers_free(sbx_mock *mock)
{
	free(mock->zombies);
	mock->zombies = NULL;
	if (!mock->work_ready)
		return;
	pthread_cond_destroy(&mock->work_cv);
	pthread_cond_destroy(&mock->job_cv);
	pthread_mutex_destroy(&mock->work_lock);
	mock->work_ready = false;
}

bool mock_worker_begin(sbx_mock *mock)
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
void mock_worker_end(sbx_mock *mock)
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

void mock_workers_wait(sbx_mock *mock)
{
	if (!mock->work_ready)
		return;
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

int mock_worker_start(sbx_mock *mock, void *(*fn)(void *), void *arg)
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
	mock_worker_end(mock);
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
	if (!mock_worker_begin(p->mock)) {
		p->refs = 1;
		p->error = true; /* stopping: the body ends at once */
	} else if (mock_worker_start(p->mock, pump_main, p) != 0) {
		p->refs = 1;
		p->error = true;
		mock_worker_end(p->mock);
	}
	return resp;
}

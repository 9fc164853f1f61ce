/* inet_cassette_body: a cassette's bodies (inet_cassette.h) — each
 * kept once as bodies/ab/<sha256>, written as it comes and hashed on the
 * way, never held whole; and the check of one at load.
 *
 * A recorded body is hashed and written by a thread of its own while the
 * connection's thread goes on sending it to the guest (the two costs
 * overlap: a recording costs about what the relay does, bench/README.md).
 * What waits for that thread is bounded (QUEUE_MAX bytes): a writer that
 * falls behind slows the transfer down, it never grows the queue. */
#define _GNU_SOURCE
#include "internet/inet_cassette.h"
#include "internet/inet_cassette_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define QUEUE_MAX (4 * 1024 * 1024)

typedef struct piece {
	struct piece *next;
	size_t len;
	char data[];
} piece;

struct mock_cassette_body {
	mock_cassette *c;
	int fd;
	char tmp[4096];
	EVP_MD_CTX *md;
	long long size;
	pthread_t writer;
	bool writer_up;
	pthread_mutex_t m;
	pthread_cond_t cv;  /* a piece queued, room made, or the end */
	piece *head, *tail;
	size_t queued;      /* bytes in the queue */
	bool ending;        /* no more pieces: drain and stop */
	bool failed;        /* a write or the hash failed */
};

static void body_path(const mock_cassette *c, const char *sha, char *out, size_t cap)
{
	snprintf(out, cap, "%s/bodies/%.2s/%s", c->dir, sha, sha);
}

int mock_cassette_body_open(const mock_cassette *c, const char *sha)
{
	char path[4096];

	if (c->dir == NULL || !mock_cassette_hex64(sha))
		return -1;
	body_path(c, sha, path, sizeof(path));
	return open(path, O_RDONLY | O_CLOEXEC);
}

static void hex_of(const unsigned char *d, char out[65])
{
	static const char hx[] = "0123456789abcdef";

	for (size_t i = 0; i < 32; i++) {
		out[2 * i] = hx[d[i] >> 4];
		out[2 * i + 1] = hx[d[i] & 15];
	}
	out[64] = '\0';
}

/* Hashes and writes one piece (the writer's thread): 0 or -1. */
static int put_piece(mock_cassette_body *b, const char *p, size_t len)
{
	if (EVP_DigestUpdate(b->md, p, len) != 1)
		return -1;
	while (len > 0) {
		ssize_t w = write(b->fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The writer: takes the pieces in order until the end is asked and the
 * queue is empty. */
static void *writer_main(void *arg)
{
	mock_cassette_body *b = arg;

	pthread_mutex_lock(&b->m);
	for (;;) {
		piece *p;

		while (b->head == NULL && !b->ending)
			pthread_cond_wait(&b->cv, &b->m);
		if (b->head == NULL)
			break;
		p = b->head;
		b->head = p->next;
		if (b->head == NULL)
			b->tail = NULL;
		pthread_mutex_unlock(&b->m);
		if (!b->failed && put_piece(b, p->data, p->len) != 0)
			b->failed = true; /* read by others only after the join */
		pthread_mutex_lock(&b->m);
		b->queued -= p->len;
		free(p);
		pthread_cond_broadcast(&b->cv);
	}
	pthread_mutex_unlock(&b->m);
	return NULL;
}

mock_cassette_body *mock_cassette_body_begin(mock_cassette *c, sbx_err *err)
{
	mock_cassette_body *b = calloc(1, sizeof(*b));

	if (b == NULL || c->dir == NULL) {
		free(b);
		sbx_err_set(err, "cassette %s: no directory to keep bodies in", c->name);
		return NULL;
	}
	b->c = c;
	pthread_mutex_init(&b->m, NULL);
	pthread_cond_init(&b->cv, NULL);
	snprintf(b->tmp, sizeof(b->tmp), "%s/bodies/.body-XXXXXX", c->dir);
	b->fd = mkostemp(b->tmp, O_CLOEXEC);
	b->md = EVP_MD_CTX_new();
	if (b->fd < 0 || b->md == NULL || EVP_DigestInit_ex(b->md, EVP_sha256(), NULL) != 1) {
		sbx_err_set(err, "cassette %s: a body's temporary file in %s/bodies: %s", c->name, c->dir,
			    strerror(errno));
		mock_cassette_body_abort(b);
		return NULL;
	}
	b->writer_up = pthread_create(&b->writer, NULL, writer_main, b) == 0;
	if (!b->writer_up) {
		sbx_err_set(err, "cassette %s: a body's writer thread: %s", c->name, strerror(errno));
		mock_cassette_body_abort(b);
		return NULL;
	}
	return b;
}

int mock_cassette_body_write(mock_cassette_body *b, const void *data, size_t len)
{
	piece *p = malloc(sizeof(*p) + (len > 0 ? len : 1));

	if (p == NULL)
		return -1;
	p->next = NULL;
	p->len = len;
	memcpy(p->data, data, len);
	pthread_mutex_lock(&b->m);
	while (b->queued > 0 && b->queued + len > QUEUE_MAX)
		pthread_cond_wait(&b->cv, &b->m); /* the writer is behind: wait for room */
	if (b->tail != NULL)
		b->tail->next = p;
	else
		b->head = p;
	b->tail = p;
	b->queued += len;
	b->size += (long long)len;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->m);
	return 0;
}

/* Lets the writer drain the queue and joins it. */
static void writer_stop(mock_cassette_body *b)
{
	if (!b->writer_up)
		return;
	pthread_mutex_lock(&b->m);
	b->ending = true;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->m);
	pthread_join(b->writer, NULL);
	b->writer_up = false;
}

void mock_cassette_body_abort(mock_cassette_body *b)
{
	if (b == NULL)
		return;
	writer_stop(b);
	if (b->fd >= 0) {
		close(b->fd);
		unlink(b->tmp);
	}
	EVP_MD_CTX_free(b->md);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->m);
	free(b);
}

int mock_cassette_body_end(mock_cassette_body *b, char sha[65], long long *size, sbx_err *err)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned dl = 0;
	char path[4096], sub[4096];
	int rc = -1;

	writer_stop(b);
	/* not fsync'd here: a recorded answer would wait for the disk; the
	 * cassette's write syncs the file system before any line names it */
	if (b->failed || EVP_DigestFinal_ex(b->md, d, &dl) != 1) {
		sbx_err_set(err, "cassette %s: a body could not be kept: %s", b->c->name, strerror(errno));
		goto out;
	}
	hex_of(d, sha);
	*size = b->size;
	snprintf(sub, sizeof(sub), "%s/bodies/%.2s", b->c->dir, sha);
	body_path(b->c, sha, path, sizeof(path));
	if ((mkdir(sub, 0755) != 0 && errno != EEXIST) ||
	    (access(path, F_OK) != 0 && rename(b->tmp, path) != 0)) {
		sbx_err_set(err, "cassette %s: body %s: %s", b->c->name, path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	close(b->fd);
	unlink(b->tmp); /* gone already when renamed; else a body kept before */
	b->fd = -1;
	mock_cassette_body_abort(b);
	return rc;
}

int mock_cassette_body_put(mock_cassette *c, const void *data, size_t len, char sha[65], sbx_err *err)
{
	mock_cassette_body *b = mock_cassette_body_begin(c, err);
	long long size;

	if (b == NULL)
		return -1;
	if (mock_cassette_body_write(b, data, len) != 0) {
		sbx_err_set(err, "cassette %s: a request body could not be kept: %s", c->name, strerror(errno));
		mock_cassette_body_abort(b);
		return -1;
	}
	return mock_cassette_body_end(b, sha, &size, err);
}

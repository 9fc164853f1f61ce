/* mutation_log: the framed, fsync'd, append-only mutation log; see mutation_log.h.
 * Never interprets a payload. */
#define _GNU_SOURCE
#include "state/mutation_log.h"
#include "sbx/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct mock_mutlog {
	pthread_mutex_t lock;
	int fd;
	int lock_fd; /* DIR/lock, flock'd while open; holds the owner's pid */
	uint64_t records;
};

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* CRC-32 (IEEE, reflected 0xEDB88320), the zlib/PNG one. */
static void crc_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = (c & 1) != 0 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[n] = c;
	}
}

uint32_t mock_crc32(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint32_t c = 0xffffffffu;

	pthread_once(&crc_once, crc_init);
	for (size_t i = 0; i < len; i++)
		c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static int read_all(int fd, char **out, size_t *len, sbx_err *err)
{
	struct stat stbuf;
	char *buf;
	size_t got = 0;

	if (fstat(fd, &stbuf) != 0) {
		sbx_err_set(err, "stat: %s", strerror(errno));
		return -1;
	}
	buf = malloc((size_t)stbuf.st_size + 1);
	if (buf == NULL) {
		sbx_err_set(err, "out of memory reading a %lld-byte log", (long long)stbuf.st_size);
		return -1;
	}
	while (got < (size_t)stbuf.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)stbuf.st_size - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	*out = buf;
	*len = got;
	return 0;
}

/* A record cut short by a crash in the middle of its one write(): what
 * there is of its payload is the start of a JSON object, and holds no NUL.
 * Anything else past the end of a record (another record's header: a
 * length under 16 MiB has a zero byte) means the length itself is damaged. */
static bool torn_payload(const char *p, size_t have)
{
	return (have == 0 || p[0] == '{') && memchr(p, '\0', have) == NULL;
}

/* Replays the good prefix; returns its length. *torn: the bad part is a
 * record cut short at the end of the file (a crash while appending: never
 * acknowledged); otherwise it is damage. */
static size_t replay(char *buf, size_t len, mock_mutlog_record_fn fn, void *arg, uint64_t *records,
		     const char **why, bool *torn)
{
	size_t off = 0;

	*why = NULL;
	*torn = false;
	while (off < len) {
		uint32_t n, crc;
		char saved;

		if (len - off < 8) {
			*why = "torn record header";
			*torn = true;
			break;
		}
		n = get_le32((unsigned char *)buf + off);
		crc = get_le32((unsigned char *)buf + off + 4);
		if (n == 0 || n > MOCK_MUTLOG_MAX_RECORD) {
			*why = "corrupt record length";
			break;
		}
		if (len - off - 8 < n) {
			*torn = torn_payload(buf + off + 8, len - off - 8);
			*why = *torn ? "torn record (shorter than its length)"
				     : "corrupt record (its length runs past the end of the file)";
			break;
		}
		if (mock_crc32(buf + off + 8, n) != crc) {
			*why = "corrupt record (CRC mismatch)";
			break;
		}
		saved = buf[off + 8 + n];
		buf[off + 8 + n] = '\0';
		if (fn != NULL)
			fn(arg, buf + off + 8, n);
		buf[off + 8 + n] = saved;
		(*records)++;
		off += 8 + (size_t)n;
	}
	return off;
}

/* One mock per state dir: an exclusive flock on DIR/lock (released by the
 * kernel when the process dies, so a kill -9 leaves no stale lock), with
 * the owner's pid in it for the refusal message. */
static int take_lock(mock_mutlog *st, const char *dir, sbx_err *err)
{
	char path[4096], pid[32] = "";
	ssize_t n;
	int len;

	if ((size_t)snprintf(path, sizeof(path), "%s/lock", dir) >= sizeof(path)) {
		sbx_err_set(err, "state dir path too long");
		return -1;
	}
	st->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (st->lock_fd < 0 || fchmod(st->lock_fd, 0600) != 0) {
		sbx_err_set(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(st->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		n = pread(st->lock_fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		if (e == EWOULDBLOCK)
			sbx_err_set(err, "--state-dir %s is already used by another sbx-mock (pid %s)",
				    dir, pid[0] != '\0' ? pid : "unknown");
		else
			sbx_err_set(err, "%s: flock: %s", path, strerror(e));
		return -1;
	}
	len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(st->lock_fd, 0) != 0 || pwrite(st->lock_fd, pid, (size_t)len, 0) != len) {
		sbx_err_set(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* How many records the bad tail holds: the damaged one, then every intact
 * frame found after it (resynchronising byte by byte). */
static uint64_t tail_records(const char *p, size_t len)
{
	uint64_t count = 1;
	size_t off = 1;

	while (off + 8 < len) {
		uint32_t n = get_le32((const unsigned char *)p + off);

		if (n > 0 && n <= len - off - 8 && p[off + 8] == '{' &&
		    mock_crc32(p + off + 8, n) == get_le32((const unsigned char *)p + off + 4)) {
			count++;
			off += 8 + (size_t)n;
		} else {
			off++;
		}
	}
	return count;
}

/* Copies the bad tail into DIR/state.log.<what>-<UTC time>[-N] (0600,
 * never over an existing file) and syncs it; its name into aside. */
static int set_aside(const char *dir, const char *what, const char *p, size_t len, char *aside,
		     size_t cap, sbx_err *err)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int fd = -1;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (int i = 1; i < 100 && fd < 0; i++) {
		if (i == 1)
			snprintf(aside, cap, "%s/state.log.%s-%s", dir, what, stamp);
		else
			snprintf(aside, cap, "%s/state.log.%s-%s-%d", dir, what, stamp, i);
		fd = open(aside, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0 || sbx_write_all(fd, p, len) != 0 || fsync(fd) != 0) {
		sbx_err_set(err, "%s: %s", aside, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The replay stopped at good < len. A torn last record is moved aside and
 * cut off with a warning (it was never acknowledged); damage refuses the
 * start unless repair is asked for, which moves everything from the damage
 * on aside into a dated file and starts from the last good record. */
static int handle_bad_tail(mock_mutlog *st, const char *dir, const char *path, const char *buf,
			   size_t len, size_t good, const char *why, bool torn, bool quiet,
			   bool repair, sbx_err *err)
{
	char aside[4200];
	uint64_t set = tail_records(buf + good, len - good);

	if (!torn && !repair) {
		sbx_err_set(err, "%s: %s at byte offset %zu (record %llu; %llu good records before it, "
				 "%zu bytes from there to the end). Nothing was changed. To start from "
				 "the %llu good records and move the rest aside into a dated file, start "
				 "once with --state-repair; or put back a copy of the file",
			    path, why, good, (unsigned long long)st->records + 1,
			    (unsigned long long)st->records, len - good,
			    (unsigned long long)st->records);
		return -1;
	}
	if (set_aside(dir, torn ? "torn" : "damaged", buf + good, len - good, aside, sizeof(aside),
		      err) != 0)
		return -1;
	if (ftruncate(st->fd, (off_t)good) != 0 || fdatasync(st->fd) != 0) {
		sbx_err_set(err, "%s: cutting the bad tail: %s", path, strerror(errno));
		return -1;
	}
	if (!quiet || repair)
		fprintf(stderr,
			"sbx-mock: %s: %s: %s at byte offset %zu; %llu record%s (%zu bytes) set aside "
			"in %s; starting from the %llu good records before it\n",
			torn ? "warning" : "--state-repair", path, why, good, (unsigned long long)set,
			set == 1 ? "" : "s", len - good, aside, (unsigned long long)st->records);
	return 0;
}

mock_mutlog *mock_mutlog_open(const char *dir, bool quiet, bool repair, mock_mutlog_record_fn fn,
			      void *arg, size_t *dropped, sbx_err *err)
{
	mock_mutlog *st = calloc(1, sizeof(*st));
	char path[4096];
	char *buf = NULL;
	size_t len = 0, good;
	const char *why;
	bool torn;

	if (dropped != NULL)
		*dropped = 0;
	if (st == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	st->fd = -1;
	st->lock_fd = -1;
	pthread_mutex_init(&st->lock, NULL);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		sbx_err_set(err, "state dir %s: %s", dir, strerror(errno));
		goto out_free;
	}
	if (take_lock(st, dir, err) != 0)
		goto out_free;
	if ((size_t)snprintf(path, sizeof(path), "%s/state.log", dir) >= sizeof(path)) {
		sbx_err_set(err, "state dir path too long");
		goto out_free;
	}
	/* 0600 also for a log made by an older version (0644) */
	st->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (st->fd < 0 || fchmod(st->fd, 0600) != 0) {
		sbx_err_set(err, "%s: %s", path, strerror(errno));
		goto out_free;
	}
	if (read_all(st->fd, &buf, &len, err) != 0) {
		sbx_err_prefix(err, "%s", path);
		goto out_free;
	}
	good = replay(buf, len, fn, arg, &st->records, &why, &torn);
	if (good < len) {
		if (handle_bad_tail(st, dir, path, buf, len, good, why, torn, quiet, repair, err) != 0) {
			free(buf);
			goto out_free;
		}
		if (dropped != NULL)
			*dropped = len - good;
	}
	free(buf);
	if (lseek(st->fd, 0, SEEK_END) < 0) {
		sbx_err_set(err, "%s: %s", path, strerror(errno));
		goto out_free;
	}
	return st;

out_free:
	mock_mutlog_close(st);
	return NULL;
}

int mock_mutlog_check(const char *dir, mock_mutlog_record_fn fn, void *arg, uint64_t *records, size_t *len,
		      size_t *good, const char **why, bool *torn, sbx_err *err)
{
	char path[4096];
	char *buf = NULL;
	int fd;

	*records = 0;
	*len = 0;
	*good = 0;
	*why = NULL;
	if ((size_t)snprintf(path, sizeof(path), "%s/state.log", dir) >= sizeof(path)) {
		sbx_err_set(err, "state dir path too long");
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		sbx_err_set(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (read_all(fd, &buf, len, err) != 0) {
		sbx_err_prefix(err, "%s", path);
		close(fd);
		return -1;
	}
	close(fd);
	*good = replay(buf, *len, fn, arg, records, why, torn);
	free(buf);
	return 0;
}

/* One write of header + payload; on a failed or short write the file is cut
 * back to where the record began, so a later record never follows garbage. */
int mock_mutlog_append(mock_mutlog *st, const char *payload, size_t len, sbx_err *err)
{
	unsigned char *rec;
	off_t start;
	int rc = 0;

	if (len == 0 || len > MOCK_MUTLOG_MAX_RECORD) {
		sbx_err_set(err, "state record of %zu bytes is out of range", len);
		return -1;
	}
	rec = malloc(len + 8);
	if (rec == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	put_le32(rec, (uint32_t)len);
	put_le32(rec + 4, mock_crc32(payload, len));
	memcpy(rec + 8, payload, len);
	pthread_mutex_lock(&st->lock);
	start = lseek(st->fd, 0, SEEK_END);
	if (sbx_write_all(st->fd, rec, len + 8) != 0) {
		sbx_err_set(err, "state log write: %s", strerror(errno));
		rc = -1;
	}
	if (rc == 0 && fdatasync(st->fd) != 0) {
		sbx_err_set(err, "state log fdatasync: %s", strerror(errno));
		rc = -1;
	}
	if (rc != 0 && start >= 0 && ftruncate(st->fd, start) == 0)
		lseek(st->fd, start, SEEK_SET);
	if (rc == 0)
		st->records++;
	pthread_mutex_unlock(&st->lock);
	free(rec);
	return rc;
}

uint64_t mock_mutlog_records(mock_mutlog *st)
{
	uint64_t n;

	pthread_mutex_lock(&st->lock);
	n = st->records;
	pthread_mutex_unlock(&st->lock);
	return n;
}

void mock_mutlog_close(mock_mutlog *st)
{
	if (st == NULL)
		return;
	if (st->fd >= 0)
		close(st->fd);
	if (st->lock_fd >= 0)
		close(st->lock_fd); /* releases the flock */
	pthread_mutex_destroy(&st->lock);
	free(st);
}

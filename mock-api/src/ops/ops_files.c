/* ops_files: PUT and GET /v1/sandboxes/{id}/files as operations (ops.h)
 * — one file into or out of the running sandbox's guest tree, which the
 * guest layer confines the path to (guest_files.c). The sandbox is busy
 * around the transfer; the model lock is not held across it. */
#define _GNU_SOURCE
#include "ops/ops.h"
#include "ops/ops_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/core.h" /* struct sbx_mock */
#include "sbx/sys.h"

/* Opens path in g, or -1 with op->err naming the path. */
static int file_open(mock_op *op, mock_guest *g, const char *path, bool write)
{
	sbx_err err = {{0}};
	int status = 0;
	int fd = mock_guest_open(g, path, write, &status, &err);

	if (fd < 0)
		mock_err_set(&op->err, status, status == 404 ? "NOT_FOUND" : "INVALID_PATH", "path",
			     "%s", err.msg);
	return fd;
}

int mock_op_file_write(mock_op *op, const char *path, const void *data, size_t len)
{
	mock_guest *g = ops_io_begin(op, NULL, NULL);
	int fd, rc = -1;

	if (g == NULL)
		return -1;
	fd = file_open(op, g, path, true);
	if (fd >= 0) {
		rc = sbx_write_all(fd, data, len);
		close(fd);
		if (rc != 0)
			mock_err_set(&op->err, 500, "", "error", "short write into the sandbox tree");
	}
	ops_io_end(op->mock, op->sb);
	return rc == 0 ? 0 : -1;
}

/* The whole of fd, at most max bytes (else a 413): NULL with op->err. */
static char *file_slurp(mock_op *op, int fd, size_t max, size_t *len)
{
	struct stat st;
	size_t off = 0;
	char *buf;

	if (fstat(fd, &st) != 0 || (size_t)st.st_size > max) {
		mock_err_set(&op->err, 413, "PAYLOAD_TOO_LARGE", "path",
			     "file is over the file size limit");
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		mock_err_set(&op->err, 500, "", "error", "out of memory");
		return NULL;
	}
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	*len = off;
	return buf;
}

char *mock_op_file_read(mock_op *op, const char *path, size_t *len)
{
	mock_guest *g = ops_io_begin(op, NULL, NULL);
	char *buf = NULL;
	int fd;

	*len = 0;
	if (g == NULL)
		return NULL;
	fd = file_open(op, g, path, false);
	if (fd >= 0) {
		buf = file_slurp(op, fd, op->mock->max_file, len);
		close(fd);
	}
	ops_io_end(op->mock, op->sb);
	return buf;
}

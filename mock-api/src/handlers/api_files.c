/* api_files: PUT and GET /v1/sandboxes/{id}/files?path= — one file into
 * or out of the sandbox's guest tree (the guest layer confines the path).
 *
 * Never take the model lock here: mock_op_files_begin/mock_op_io_end mark
 * the sandbox busy around the transfer, which runs on a worker thread (the
 * routes block). */
#define _GNU_SOURCE
#include "handlers/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* The running sandbox's guest, busy until mock_op_io_end(op->sb); NULL
 * with the answer set. */
static mock_guest *files_guest(mreq *r, mresp *out, mock_tenant *t, mock_op *op, char *id,
			       size_t cap)
{
	mock_guest *g;

	api_op_init(op, r, t, id, cap);
	g = mock_op_files_begin(op);
	if (g == NULL)
		api_op_answer(r, out, op, 0, NULL);
	else
		snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", op->found);
	return g;
}

/* The path parameter is there and is text: a NUL (%00) would make the
 * path the guest layer sees shorter than the one the client sent. */
static bool files_path_ok(mreq *r, mresp *out, const char *path)
{
	if (path == NULL || path[0] == '\0') {
		resp_fail(out, 400, "path", "INVALID_REQUEST", "query parameter path is required (absolute)");
		return false;
	}
	if (req_query_has_nul(r, "path")) {
		resp_fail(out, 400, "path", "INVALID_PATH", "path must not contain a NUL byte (%00)");
		return false;
	}
	return true;
}

void api_files_put(mreq *r, mresp *out, mock_tenant *t)
{
	const char *path = req_query(r, "path");
	mock_op op;
	char id[64];
	mock_guest *g;
	sbx_err err = {{0}};
	int status = 0, fd, wrc;

	if (!files_path_ok(r, out, path))
		return;
	g = files_guest(r, out, t, &op, id, sizeof(id));
	if (g == NULL)
		return;
	fd = mock_guest_open(g, path, true, &status, &err);
	if (fd < 0) {
		resp_fail(out, status, "path", status == 404 ? "NOT_FOUND" : "INVALID_PATH", err.msg);
		goto out_done;
	}
	wrc = sbx_write_all(fd, r->body.data, r->body.len);
	close(fd);
	if (wrc != 0)
		resp_error(out, 500, "short write into the sandbox tree");
	else
		resp_success(out, 200, cJSON_CreateObject());
out_done:
	mock_op_io_end(r->mock, op.sb);
}

void api_files_get(mreq *r, mresp *out, mock_tenant *t)
{
	const char *path = req_query(r, "path");
	mock_op op;
	char id[64];
	mock_guest *g;
	sbx_err err = {{0}};
	int status = 0, fd;
	struct stat st;
	char *buf;
	size_t off = 0;

	if (!files_path_ok(r, out, path))
		return;
	g = files_guest(r, out, t, &op, id, sizeof(id));
	if (g == NULL)
		return;
	fd = mock_guest_open(g, path, false, &status, &err);
	if (fd < 0) {
		resp_fail(out, status, "path", status == 404 ? "NOT_FOUND" : "INVALID_PATH", err.msg);
		goto out_done;
	}
	if (fstat(fd, &st) != 0 || (size_t)st.st_size > r->mock->max_file) {
		close(fd);
		resp_fail(out, 413, "path", "PAYLOAD_TOO_LARGE", "file is over the file size limit");
		goto out_done;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		close(fd);
		resp_error(out, 500, "out of memory");
		goto out_done;
	}
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	resp_raw(out, 200, "application/octet-stream", buf, off);
out_done:
	mock_op_io_end(r->mock, op.sb);
}


/* api_files: PUT and GET /v1/sandboxes/{id}/files?path= — one file into
 * or out of the sandbox's guest tree: parses the path, calls one
 * operation (mock_op_file_write / mock_op_file_read, ops_files.c) and
 * answers. The routes block: the transfer runs on a worker thread. */
#define _GNU_SOURCE
#include "handlers/api.h"


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
	int rc;

	if (!files_path_ok(r, out, path))
		return;
	api_op_init(&op, r, t, id, sizeof(id));
	rc = mock_op_file_write(&op, path, r->body.data, r->body.len);
	api_op_answer(r, out, &op, 200, rc == 0 ? cJSON_CreateObject() : NULL);
}

void api_files_get(mreq *r, mresp *out, mock_tenant *t)
{
	const char *path = req_query(r, "path");
	mock_op op;
	char id[64], *data;
	size_t len = 0;

	if (!files_path_ok(r, out, path))
		return;
	api_op_init(&op, r, t, id, sizeof(id));
	data = mock_op_file_read(&op, path, &len);
	if (data == NULL)
		api_op_answer(r, out, &op, 200, NULL);
	else {
		api_op_found(r, &op);
		resp_raw(out, 200, "application/octet-stream", data, len);
	}
}

/* resp: request and response helpers for the handlers (see resp.h).
 * Never queues an answer on a connection (http.c does)
 * and never takes the model lock. */
#define _GNU_SOURCE
#include "http/request.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

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

void mresp_release(mresp *out)
{
	free(out->body);
	out->body = NULL;
	if (out->custom != NULL)
		MHD_destroy_response(out->custom);
	out->custom = NULL;
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

bool req_query_has_nul(const mreq *r, const char *key)
{
	const char *v = NULL;
	size_t len = 0;

	/* MHD keeps each argument's decoded length beside its bytes */
	if (MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, key, strlen(key), &v,
					  &len) != MHD_YES || v == NULL)
		return false;
	return memchr(v, '\0', len) != NULL;
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

int mock_conn_fd(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

	return ci != NULL ? ci->connect_fd : -1;
}

int req_conn_fd(const mreq *r)
{
	return mock_conn_fd(r->conn);
}

bool req_client_gone(const mreq *r)
{
	if (atomic_load(&r->mock->stopping))
		return true;
	return mock_fd_gone(mock_conn_fd(r->conn));
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

/* self: the guests' self-signal endpoint — POST /self/pause and
 * /self/delete with an optional ?reason=, answered 202, no API key. Inside a
 * real VM the agent on 127.0.0.1:1029 knows whose VM it is. Finding the
 * caller's sandbox is the routes' ROUTE_AUTH step, by guest mode:
 *  - contained (every mode but plain): the sandbox whose own listener
 *    accepted the connection (listen/self_listen.c). The listener
 *    lives in the sandbox's network namespace, so a guest reaches only its
 *    own; nothing in the request names a sandbox;
 *  - plain: one host listener for every guest, so the caller is found the
 *    way `ss -p` does: the connection's client port names a socket in
 *    /proc/net/tcp, the socket's inode an open descriptor of some process,
 *    and that process's group one a guest started. A caller that left its
 *    process group (setsid) is not recognised (403). Plain mode isolates
 *    nothing, and a guest can join another's process group: this lookup
 *    must never be used in contained mode.
 * The listener is a second MHD daemon sharing the main one's request
 * plumbing (server.c marks its requests r->self); its two routes are rows
 * of mock_self_routes, served by route.c.
 *
 * Never change a sandbox here: pausing and destroying are operations
 * (ops.h), and an acknowledged signal is logged by route.c. */
#define _GNU_SOURCE
#include "ops/ops.h"
#include "http/route.h"
#include "listen/self_listen.h"
#include "handlers/dispatch.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#define SELF_REASON_MAX 256
#define SELF_MAX_GROUPS 4096 /* process groups of live guests considered */

/* The port of an "ADDR:PORT" field of /proc/net/tcp (hex), -1 if bad. */
static long hex_port(const char *field)
{
	const char *colon = strchr(field, ':');
	char *end = NULL;
	unsigned long v;

	if (colon == NULL)
		return -1;
	v = strtoul(colon + 1, &end, 16);
	return end != colon + 1 && *end == '\0' && v <= 65535 ? (long)v : -1;
}

/* The inode of the ESTABLISHED IPv4 socket from 127.0.0.1:client_port to
 * the listener's port, from /proc/net/tcp; 0 when there is none. */
static unsigned long client_socket_inode(uint16_t client_port, uint16_t listen_port)
{
	FILE *fp = fopen("/proc/net/tcp", "r");
	char line[512];
	unsigned long found = 0;

	if (fp == NULL)
		return 0;
	if (fgets(line, sizeof(line), fp) == NULL) { /* the header */
		fclose(fp);
		return 0;
	}
	while (found == 0 && fgets(line, sizeof(line), fp) != NULL) {
		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		char *field[10], *save = NULL, *tok = strtok_r(line, " \n", &save);
		size_t n = 0;

		while (tok != NULL && n < 10) {
			field[n++] = tok;
			tok = strtok_r(NULL, " \n", &save);
		}
		if (n == 10 && strcmp(field[3], "01") == 0 && /* ESTABLISHED */
		    hex_port(field[1]) == client_port && hex_port(field[2]) == listen_port)
			found = strtoul(field[9], NULL, 10);
	}
	fclose(fp);
	return found;
}

static pid_t process_group_of(const char *pid)
{
	char path[64], buf[512];
	FILE *fp;
	char *rp, *end = NULL;
	long pgrp;

	snprintf(path, sizeof(path), "/proc/%.20s/stat", pid);
	fp = fopen(path, "r");
	if (fp == NULL)
		return -1;
	if (fgets(buf, sizeof(buf), fp) == NULL)
		buf[0] = '\0';
	fclose(fp);
	/* pid (comm) state ppid pgrp: comm may hold spaces and parentheses */
	rp = strrchr(buf, ')');
	if (rp == NULL || rp[1] != ' ' || rp[2] == '\0' || rp[3] != ' ')
		return -1;
	strtol(rp + 4, &end, 10); /* ppid */
	if (end == rp + 4 || *end != ' ')
		return -1;
	rp = end + 1;
	pgrp = strtol(rp, &end, 10);
	return end != rp && *end == ' ' && pgrp > 0 ? (pid_t)pgrp : -1;
}

static bool holds_socket(const char *pid, unsigned long inode)
{
	char dir[64], want[48];
	DIR *d;
	struct dirent *de;
	bool found = false;

	snprintf(dir, sizeof(dir), "/proc/%.20s/fd", pid);
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	d = opendir(dir);
	if (d == NULL)
		return false;
	while (!found && (de = readdir(d)) != NULL) {
		char link[64];
		ssize_t n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);

		if (n > 0) {
			link[n] = '\0';
			found = strcmp(link, want) == 0;
		}
	}
	closedir(d);
	return found;
}

/* The id of the sandbox whose guest holds the socket, into id, and its
 * tenant; NULL when no guest process does. */
static mock_tenant *caller_sandbox(sbx_mock *mock, unsigned long inode, char *id, size_t cap)
{
	mock_guest_group *groups = malloc(SELF_MAX_GROUPS * sizeof(*groups));
	mock_tenant *t = NULL;
	size_t ng;
	DIR *d;
	struct dirent *de;
	bool found = false;

	if (groups == NULL)
		return NULL;
	ng = mock_op_guest_groups(mock, groups, SELF_MAX_GROUPS);
	d = ng > 0 ? opendir("/proc") : NULL;
	while (d != NULL && !found && (de = readdir(d)) != NULL) {
		pid_t pg;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pg = process_group_of(de->d_name);
		for (size_t i = 0; pg > 0 && i < ng && !found; i++) {
			if (groups[i].pgid == pg && holds_socket(de->d_name, inode)) {
				snprintf(id, cap, "%s", groups[i].sandbox_id);
				t = groups[i].tenant;
				found = true;
			}
		}
	}
	if (d != NULL)
		closedir(d);
	free(groups);
	return t;
}

/* Plain mode: the sandbox of the guest process holding the connection's
 * client socket, into id, and its tenant; NULL when none does. */
static mock_tenant *caller_by_group(mreq *r, char *id, size_t cap)
{
	const union MHD_ConnectionInfo *ci;
	const struct sockaddr_in *peer;
	unsigned long inode;

	ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	peer = ci != NULL ? (const struct sockaddr_in *)(const void *)ci->client_addr : NULL;
	inode = peer != NULL && peer->sin_family == AF_INET
			? client_socket_inode(ntohs(peer->sin_port), r->mock->self_port)
			: 0;
	return inode != 0 ? caller_sandbox(r->mock, inode, id, cap) : NULL;
}

/* Contained mode: the sandbox whose listener accepted the connection, into
 * id, and its tenant; NULL with the answer set (403 not from a sandbox's
 * listener, 404 or 410 when that sandbox is gone). */
static mock_tenant *caller_by_listener(mreq *r, mresp *out, char *id, size_t cap)
{
	mock_tenant *t;
	mock_err e;

	if (!mock_self_listen_caller(r->mock, r->conn, id, cap)) {
		resp_fail(out, 403, "caller", "NOT_A_GUEST",
			  "the connection did not come through a sandbox's self-signal listener");
		return NULL;
	}
	t = mock_op_sandbox_tenant(r->mock, id, &e);
	if (t == NULL)
		resp_mock_err(out, &e);
	return t;
}

/* The self-signal listener's ROUTE_AUTH step: the caller must be a live
 * guest's; its sandbox (r->sandbox_id) is the one to signal, and that
 * sandbox's tenant is the request's. The reason is checked first, before
 * the costly walk of /proc. */
static mock_tenant *self_caller(mreq *r, mresp *out)
{
	const char *reason = req_query(r, "reason");
	mock_tenant *t;
	char id[MOCK_ID_MAX];

	if (reason != NULL && strlen(reason) > SELF_REASON_MAX) {
		resp_fail(out, 400, "reason", "INVALID_REASON", "reason is over 256 bytes");
		return NULL;
	}
	if (r->mock->gmode != GUEST_PLAIN) {
		t = caller_by_listener(r, out, id, sizeof(id));
		if (t == NULL)
			return NULL;
	} else {
		t = caller_by_group(r, id, sizeof(id));
		if (t == NULL) {
			resp_fail(out, 403, "caller", "NOT_A_GUEST",
				  "the caller is not a process of a sandbox guest");
			return NULL;
		}
	}
	snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", id);
	return t;
}

/* Answers 202 {id, status, reason?} for a signal done by op. */
static void self_answer(mreq *r, mresp *out, const mock_op *op, cJSON *v)
{
	const char *reason = req_query(r, "reason");
	cJSON *d;

	if (v == NULL) {
		resp_mock_err(out, &op->err);
		return;
	}
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "id", cJSON_GetObjectItem(v, "id")->valuestring);
	cJSON_AddStringToObject(d, "status", cJSON_GetObjectItem(v, "status")->valuestring);
	if (reason != NULL)
		cJSON_AddStringToObject(d, "reason", reason);
	cJSON_Delete(v);
	resp_success(out, 202, d);
}

/* The caller's sandbox, whichever tenant's (t is the one self_caller found). */
static void self_op(mock_op *op, mreq *r)
{
	memset(op, 0, sizeof(*op));
	op->mock = r->mock;
	op->id = r->sandbox_id;
}

static void self_pause(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	int status;

	(void)t;
	self_op(&op, r);
	self_answer(r, out, &op, mock_op_pause(&op, &status));
}

static void self_delete(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;

	(void)t;
	self_op(&op, r);
	self_answer(r, out, &op, mock_op_destroy(&op));
}

/* Fault rules are not evaluated for these (server.c); a signal acknowledged
 * is a durable mutation of the caller's tenant. */
const mock_route mock_self_routes[] = {
	{"POST", "/self/pause", ROUTE_AUTH | ROUTE_BLOCKS | ROUTE_DURABLE, self_pause},
	{"POST", "/self/delete", ROUTE_AUTH | ROUTE_BLOCKS | ROUTE_DURABLE, self_delete},
};
const size_t mock_self_nroutes = sizeof(mock_self_routes) / sizeof(mock_self_routes[0]);

void self_dispatch(mreq *r, mresp *out)
{
	mock_route_serve(mock_self_routes, mock_self_nroutes, r, out, self_caller);
}

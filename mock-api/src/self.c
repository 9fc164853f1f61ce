/* self: the guests' self-signal endpoint — POST /self/pause and
 * /self/delete with an optional ?reason=, answered 202, no auth. Inside a
 * real VM the agent on 127.0.0.1:1029 knows whose VM it is; the mock has one
 * listener for every guest, so it finds the caller the way `ss -p` does: the
 * connection's client port names a socket in /proc/net/tcp, the socket's
 * inode an open descriptor of some process, and that process's group one a
 * guest started. A caller that left its process group (setsid) is not
 * recognised (403). The listener is a second MHD daemon sharing the main
 * one's request plumbing (server.c marks its requests r->self). */
#define _GNU_SOURCE
#include "server.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#define SELF_REASON_MAX 256
#define SELF_MAX_GROUPS 4096 /* process groups of live guests considered */

typedef struct guest_group {
	pid_t pgid;
	char sandbox_id[MOCK_ID_MAX];
} guest_group;

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

/* The process groups of every live guest, with their sandbox ids. */
static size_t guest_groups(sbx_mock *mock, guest_group *out, size_t cap)
{
	size_t n = 0;

	pthread_mutex_lock(&mock->model->lock);
	for (size_t i = 0; i < mock->model->nlive && n < cap; i++) {
		const mock_sandbox *sb = mock->model->live[i];
		pid_t pg[64];
		size_t k;

		if (mock_status_terminal(sb->status) || sb->guest == NULL)
			continue;
		k = mock_guest_pgids(sb->guest, pg, sizeof(pg) / sizeof(pg[0]));
		for (size_t j = 0; j < k && n < cap; j++) {
			out[n].pgid = pg[j];
			snprintf(out[n].sandbox_id, sizeof(out[n].sandbox_id), "%s", sb->id);
			n++;
		}
	}
	pthread_mutex_unlock(&mock->model->lock);
	return n;
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

/* The id of the sandbox whose guest holds the socket, into id; false when
 * no guest process does. */
static bool caller_sandbox(sbx_mock *mock, unsigned long inode, char *id, size_t cap)
{
	guest_group *groups = malloc(SELF_MAX_GROUPS * sizeof(*groups));
	size_t ng;
	DIR *d;
	struct dirent *de;
	bool found = false;

	if (groups == NULL)
		return false;
	ng = guest_groups(mock, groups, SELF_MAX_GROUPS);
	d = ng > 0 ? opendir("/proc") : NULL;
	while (d != NULL && !found && (de = readdir(d)) != NULL) {
		pid_t pg;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pg = process_group_of(de->d_name);
		for (size_t i = 0; pg > 0 && i < ng && !found; i++) {
			if (groups[i].pgid == pg && holds_socket(de->d_name, inode)) {
				snprintf(id, cap, "%s", groups[i].sandbox_id);
				found = true;
			}
		}
	}
	if (d != NULL)
		closedir(d);
	free(groups);
	return found;
}

/* Pauses or destroys the caller's sandbox, as the API would. */
static void self_signal(mreq *r, mresp *out, const char *id, bool pause, const char *reason)
{
	sbx_mock *mock = r->mock;
	mock_sandbox *sb;
	mock_tenant *t = NULL;
	mock_err e;
	int rc = 202;
	bool now = false;
	cJSON *d = NULL;

	pthread_mutex_lock(&mock->model->lock);
	mock_tick(mock->model, mock_on_state_change, mock);
	sb = mock_sandbox_find_any(mock->model, id);
	if (sb == NULL) {
		resp_fail(out, 404, "error", "NOT_FOUND", "sandbox not found");
	} else if (pause && (rc = mock_sandbox_pause(mock->model, sb, &e)) < 0) {
		resp_mock_err(out, &e);
	} else {
		if (pause) {
			mock_guest_signal(sb->guest, SIGSTOP);
		} else {
			mock_sandbox_destroy(mock->model, sb, &now, &e);
			mock_guest_kill(sb->guest);
		}
		t = sb->tenant;
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "id", sb->id);
		cJSON_AddStringToObject(d, "status", mock_status_name(sb->status));
		if (reason != NULL)
			cJSON_AddStringToObject(d, "reason", reason);
	}
	pthread_mutex_unlock(&mock->model->lock);
	if (d == NULL)
		return;
	resp_success(out, 202, d);
	if (mock->state != NULL)
		mock_persist_mutation(r, out, t);
}

void self_dispatch(mreq *r, mresp *out)
{
	const union MHD_ConnectionInfo *ci;
	const struct sockaddr_in *peer;
	const char *reason = req_query(r, "reason");
	bool pause = strcmp(r->path, "/self/pause") == 0;
	unsigned long inode;
	char id[MOCK_ID_MAX];

	if (!pause && strcmp(r->path, "/self/delete") != 0) {
		resp_fail(out, 404, "error", "NOT_FOUND", "no such route (POST /self/pause or /self/delete)");
		return;
	}
	if (strcmp(r->method, "POST") != 0) {
		resp_header(out, "Allow", "POST");
		resp_fail(out, 405, "method", "METHOD_NOT_ALLOWED", "use POST");
		return;
	}
	if (reason != NULL && strlen(reason) > SELF_REASON_MAX) {
		resp_fail(out, 400, "reason", "INVALID_REASON", "reason is over 256 bytes");
		return;
	}
	ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	peer = ci != NULL ? (const struct sockaddr_in *)(const void *)ci->client_addr : NULL;
	inode = peer != NULL && peer->sin_family == AF_INET
			? client_socket_inode(ntohs(peer->sin_port), r->mock->self_port)
			: 0;
	if (inode == 0 || !caller_sandbox(r->mock, inode, id, sizeof(id))) {
		resp_fail(out, 403, "caller", "NOT_A_GUEST",
			  "the caller is not a process of a sandbox guest");
		return;
	}
	snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", id);
	self_signal(r, out, id, pause, reason);
}

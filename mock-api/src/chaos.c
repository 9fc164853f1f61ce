/* chaos: the fault actions that reach beyond one request — `host_dies`
 * (every sandbox on a host fails; the next resume is a cross-host cold
 * start) and `cp_restart` (every open connection drops, state survives,
 * readyz answers 503 for a while on the virtual clock) — plus the registry
 * of open connections that cp_restart needs.
 *
 * The decision to fire is the fault engine's (faults.c); the lifecycle
 * rules are the model's (model.c). This file only applies them, and never
 * closes a socket it does not own: MHD closes them after we shut them down. */
#define _GNU_SOURCE
#include "server.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int chaos_init(sbx_mock *mock)
{
	if (pthread_mutex_init(&mock->conns_lock, NULL) != 0)
		return -1;
	mock->conns_ready = true;
	return 0;
}

void chaos_free(sbx_mock *mock)
{
	if (!mock->conns_ready)
		return;
	free(mock->conns);
	mock->conns = NULL;
	mock->nconns = 0;
	pthread_mutex_destroy(&mock->conns_lock);
	mock->conns_ready = false;
}

static int connection_fd(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

	return ci != NULL ? ci->connect_fd : -1;
}

static void conns_add(sbx_mock *mock, int fd)
{
	if (mock->nconns == mock->capconns) {
		size_t cap = mock->capconns == 0 ? 64 : mock->capconns * 2;
		int *n = realloc(mock->conns, cap * sizeof(*n));

		if (n == NULL)
			return; /* cp_restart will miss this one; nothing else breaks */
		mock->conns = n;
		mock->capconns = cap;
	}
	mock->conns[mock->nconns++] = fd;
}

static void conns_remove(sbx_mock *mock, int fd)
{
	for (size_t i = 0; i < mock->nconns; i++) {
		if (mock->conns[i] == fd) {
			mock->conns[i] = mock->conns[--mock->nconns];
			return;
		}
	}
}

/* MHD notifies STARTED when it accepts a connection and CLOSED before it
 * closes the socket, so every fd in the registry is still open while the
 * lock is held. */
void chaos_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			 enum MHD_ConnectionNotificationCode toe)
{
	sbx_mock *mock = cls;
	int fd = connection_fd(conn);

	/* a serial per connection, for the journal: which requests shared one */
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		*socket_context = (void *)(uintptr_t)(atomic_fetch_add(&mock->conn_counter, 1) + 1);
	if (fd < 0 || !mock->conns_ready)
		return;
	pthread_mutex_lock(&mock->conns_lock);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		conns_add(mock, fd);
	else
		conns_remove(mock, fd);
	pthread_mutex_unlock(&mock->conns_lock);
}

/* Drops every open connection except `keep` (the caller resets its own). */
static size_t drop_connections(sbx_mock *mock, int keep)
{
	size_t n = 0;

	pthread_mutex_lock(&mock->conns_lock);
	for (size_t i = 0; i < mock->nconns; i++) {
		if (mock->conns[i] == keep)
			continue;
		shutdown(mock->conns[i], SHUT_RDWR);
		n++;
	}
	pthread_mutex_unlock(&mock->conns_lock);
	return n;
}

/* The host died: its VMs are gone, so their processes die too (the tree,
 * the "disk", survives for the cold start elsewhere). */
static void on_host_death(mock_sandbox *sb, mock_status from, void *arg)
{
	(void)from;
	(void)arg;
	mock_guest_signal(sb->guest, SIGKILL);
	mock_guest_signal(sb->guest, SIGCONT);
}

bool chaos_apply(mreq *r, mresp *out)
{
	sbx_mock *mock = r->mock;
	mock_model *m = mock->model;

	switch (r->fault.kind) {
	case FK_HOST_DIES:
		pthread_mutex_lock(&m->lock);
		mock_tick(m, mock_on_state_change, mock);
		mock_host_die(m, r->fault.host_id, on_host_death, mock);
		pthread_mutex_unlock(&m->lock);
		return false; /* the request itself is then served normally */
	case FK_CP_RESTART:
		pthread_mutex_lock(&m->lock);
		m->not_ready_until_ms = mock_now(m) + r->fault.not_ready_ms;
		pthread_mutex_unlock(&m->lock);
		drop_connections(mock, connection_fd(r->conn));
		out->close_reset = true;
		return true;
	default:
		return false;
	}
}

/* chaos: the registry of open connections that a `cp_restart` fault drops,
 * and the per-connection serial the journal shows. Applying the chaos faults
 * themselves (host_dies, cp_restart) is fault_apply.c's.
 *
 * Never closes a socket it does not own: it only shuts them down, and MHD
 * closes them. */
#define _GNU_SOURCE
#include "server/server.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int chaos_init(sbx_mock *mock)
{
	if (pthread_mutex_init(&mock->srv->conns_lock, NULL) != 0)
		return -1;
	mock->srv->conns_ready = true;
	return 0;
}

void chaos_free(sbx_mock *mock)
{
	if (!mock->srv->conns_ready)
		return;
	free(mock->srv->conns);
	mock->srv->conns = NULL;
	mock->srv->nconns = 0;
	pthread_mutex_destroy(&mock->srv->conns_lock);
	mock->srv->conns_ready = false;
}

static void conns_add(sbx_mock *mock, int fd)
{
	if (mock->srv->nconns == mock->srv->capconns) {
		size_t cap = mock->srv->capconns == 0 ? 64 : mock->srv->capconns * 2;
		int *n = realloc(mock->srv->conns, cap * sizeof(*n));

		if (n == NULL)
			return; /* cp_restart will miss this one; nothing else breaks */
		mock->srv->conns = n;
		mock->srv->capconns = cap;
	}
	mock->srv->conns[mock->srv->nconns++] = fd;
}

static void conns_remove(sbx_mock *mock, int fd)
{
	for (size_t i = 0; i < mock->srv->nconns; i++) {
		if (mock->srv->conns[i] == fd) {
			mock->srv->conns[i] = mock->srv->conns[--mock->srv->nconns];
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
	int fd = mock_conn_fd(conn);

	/* a serial per connection, for the journal: which requests shared one */
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		*socket_context = (void *)(uintptr_t)(atomic_fetch_add(&mock->srv->conn_counter, 1) + 1);
	if (fd < 0 || !mock->srv->conns_ready)
		return;
	pthread_mutex_lock(&mock->srv->conns_lock);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		conns_add(mock, fd);
	else
		conns_remove(mock, fd);
	pthread_mutex_unlock(&mock->srv->conns_lock);
}

size_t chaos_drop_connections(sbx_mock *mock, int keep)
{
	size_t n = 0;

	pthread_mutex_lock(&mock->srv->conns_lock);
	for (size_t i = 0; i < mock->srv->nconns; i++) {
		if (mock->srv->conns[i] == keep)
			continue;
		shutdown(mock->srv->conns[i], SHUT_RDWR);
		n++;
	}
	pthread_mutex_unlock(&mock->srv->conns_lock);
	return n;
}

/* http: the request pipeline behind both listeners — MHD's callbacks.
 * server.c hands these to MHD_start_daemon (both listeners); nothing else
 * calls them. */
#ifndef SBX_MOCK_HTTP_H
#define SBX_MOCK_HTTP_H

#include <stdarg.h>
#include <stddef.h>

#include <sys/socket.h>

#include <microhttpd.h>

/* MHD_AccessHandlerCallback; cls is the sbx_mock. */
enum MHD_Result mock_pipeline_on_request(void *cls, struct MHD_Connection *conn, const char *url,
				     const char *method, const char *version,
				     const char *upload_data, size_t *upload_data_size,
				     void **con_cls);
/* MHD_OPTION_URI_LOG_CALLBACK: sees the raw URI before MHD decodes it
 * (marks a %00 for refusal); its result is the request's first context. */
void *mock_pipeline_on_uri(void *cls, const char *uri, struct MHD_Connection *conn);
/* The API daemon's accept policy: MHD_NO (the new connection is closed at
 * once) when max_conns connections are open. libmicrohttpd's own limit, a
 * little higher, would instead stop accepting and leave every new client
 * waiting until an idle connection times out. */
enum MHD_Result mock_pipeline_on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
/* MHD_OPTION_NOTIFY_CONNECTION of the API daemon: counts open connections,
 * then chaos.c's bookkeeping. */
void mock_pipeline_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			     enum MHD_ConnectionNotificationCode toe);
/* MHD_OPTION_NOTIFY_COMPLETED: frees the request. */
void mock_pipeline_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			    enum MHD_RequestTerminationCode toe);
/* MHD_OPTION_EXTERNAL_LOGGER: MHD's messages on stderr unless quiet. */
void mock_pipeline_on_log(void *cls, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

#endif

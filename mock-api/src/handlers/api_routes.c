/* api_routes: the control-plane route table — one row per route with its
 * policy flags (route.h) — the API-key authentication its ROUTE_AUTH rows
 * need, and the entry points the server calls: api_dispatch and
 * mock_route_lookup.
 *
 * Never match a path string anywhere else to decide policy: add a row (or a
 * flag) here instead. */
#include "handlers/api.h"
#include "proxy/record.h"
#include "http/route.h"
#include "computer/ops_computer.h" /* the computer rows' actions */

#include <string.h>

/* Reads answer inline; a mutation may block (guests, timing profiles) and,
 * acknowledged, is logged with --state-dir. */
#define READ ROUTE_AUTH
#define MUTATION (ROUTE_AUTH | ROUTE_BLOCKS | ROUTE_DURABLE)
/* Exec and file transfers block on the guest and change guest files, not
 * the control-plane state: never logged. */
#define GUEST_IO (ROUTE_AUTH | ROUTE_BLOCKS)

const mock_route mock_api_routes[] = {
	{"GET", "/healthz", 0, api_healthz},
	{"GET", "/readyz", 0, api_readyz},
	{"GET", "/v1/whoami", READ, api_whoami},
	{"GET", "/v1/shapes", 0, api_shapes},
	{"GET", "/v1/rootfs", 0, api_rootfs},
	{"GET", "/v1/hosts", READ, api_hosts},
	{"GET", "/v1/sandboxes", READ, api_sandbox_list},
	{"POST", "/v1/sandboxes", MUTATION, api_sandbox_create},
	{"GET", "/v1/sandboxes/by-ip/{ip}", READ, api_sandbox_by_ip},
	{"GET", "/v1/sandboxes/{id}", READ, api_sandbox_get},
	{"PATCH", "/v1/sandboxes/{id}", MUTATION, api_sandbox_patch},
	{"DELETE", "/v1/sandboxes/{id}", MUTATION, api_sandbox_delete},
	{"POST", "/v1/sandboxes/{id}/exec", GUEST_IO | ROUTE_EXEC, api_exec},
	{"PUT", "/v1/sandboxes/{id}/files", GUEST_IO | ROUTE_FILE_BODY, api_files_put},
	{"GET", "/v1/sandboxes/{id}/files", GUEST_IO, api_files_get},
	{"POST", "/v1/sandboxes/{id}/processes", GUEST_IO, api_procs_create},
	{"GET", "/v1/sandboxes/{id}/processes", GUEST_IO, api_procs_list},
	{"GET", "/v1/sandboxes/{id}/processes/{pid}", GUEST_IO, api_procs_get},
	{"DELETE", "/v1/sandboxes/{id}/processes/{pid}", GUEST_IO, api_procs_delete},
	{"GET", "/v1/sandboxes/{id}/processes/{pid}/connect", GUEST_IO, api_procs_connect},
	{"POST", "/v1/sandboxes/{id}/processes/{pid}/input", GUEST_IO, api_procs_input},
	{"POST", "/v1/sandboxes/{id}/processes/{pid}/stdin/close", GUEST_IO, api_procs_stdin_close},
	{"POST", "/v1/sandboxes/{id}/processes/{pid}/resize", GUEST_IO, api_procs_resize},
	{"POST", "/v1/sandboxes/{id}/processes/{pid}/signal", GUEST_IO, api_procs_signal},
	{"GET", "/v1/sandboxes/{id}/processes/{pid}/wait", GUEST_IO, api_procs_wait},
	/* computer use (api_computer.c, COMPUTER.md): a literal segment before
	 * a {name}; each row carries its action, which api_computer serves */
	{"GET", "/v1/sandboxes/{id}/computer/screenshot", GUEST_IO, api_computer_screenshot},
	{"GET", "/v1/sandboxes/{id}/computer/screen", GUEST_IO | ROUTE_ACTION(MC_SCREEN), api_computer},
	{"GET", "/v1/sandboxes/{id}/computer/cursor", GUEST_IO | ROUTE_ACTION(MC_CURSOR), api_computer},
	{"GET", "/v1/sandboxes/{id}/computer/clipboard", GUEST_IO | ROUTE_ACTION(MC_CLIPBOARD_GET), api_computer},
	{"PUT", "/v1/sandboxes/{id}/computer/clipboard", GUEST_IO | ROUTE_ACTION(MC_CLIPBOARD_SET), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/open", GUEST_IO | ROUTE_ACTION(MC_OPEN), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/launch", GUEST_IO | ROUTE_ACTION(MC_LAUNCH), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/mouse/move", GUEST_IO | ROUTE_ACTION(MC_MOUSE_MOVE), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/mouse/click", GUEST_IO | ROUTE_ACTION(MC_MOUSE_CLICK), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/mouse/down", GUEST_IO | ROUTE_ACTION(MC_MOUSE_DOWN), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/mouse/up", GUEST_IO | ROUTE_ACTION(MC_MOUSE_UP), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/mouse/drag", GUEST_IO | ROUTE_ACTION(MC_MOUSE_DRAG), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/mouse/scroll", GUEST_IO | ROUTE_ACTION(MC_MOUSE_SCROLL), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/keyboard/type", GUEST_IO | ROUTE_ACTION(MC_KEY_TYPE), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/keyboard/press", GUEST_IO | ROUTE_ACTION(MC_KEY_PRESS), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/keyboard/down", GUEST_IO | ROUTE_ACTION(MC_KEY_DOWN), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/keyboard/up", GUEST_IO | ROUTE_ACTION(MC_KEY_UP), api_computer},
	{"GET", "/v1/sandboxes/{id}/computer/windows", GUEST_IO | ROUTE_ACTION(MC_WINDOWS), api_computer},
	{"GET", "/v1/sandboxes/{id}/computer/windows/current", GUEST_IO | ROUTE_ACTION(MC_WINDOW_CURRENT), api_computer},
	{"GET", "/v1/sandboxes/{id}/computer/windows/{win}", GUEST_IO | ROUTE_ACTION(MC_WINDOW_GET), api_computer},
	{"GET", "/v1/sandboxes/{id}/computer/windows/{win}/geometry", GUEST_IO | ROUTE_ACTION(MC_WINDOW_GEOMETRY), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/windows/{win}/{action}", GUEST_IO | ROUTE_ACTION(MC_WINDOW_ACTION), api_computer},
	{"DELETE", "/v1/sandboxes/{id}/computer/windows/{win}", GUEST_IO | ROUTE_ACTION(MC_WINDOW_CLOSE), api_computer},
	{"GET", "/v1/sandboxes/{id}/computer/screens", GUEST_IO | ROUTE_ACTION(MC_SCREENS), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/screens", GUEST_IO | ROUTE_ACTION(MC_SCREEN_CREATE), api_computer},
	{"GET", "/v1/sandboxes/{id}/computer/screens/{screen}", GUEST_IO | ROUTE_ACTION(MC_SCREEN_GET), api_computer},
	{"POST", "/v1/sandboxes/{id}/computer/screens/{screen}/resize", GUEST_IO | ROUTE_ACTION(MC_SCREEN_RESIZE), api_computer},
	{"GET", "/v1/sandboxes/{id}/computer/screens/{screen}/connect", GUEST_IO | ROUTE_ACTION(MC_SCREEN_CONNECT), api_computer},
	{"DELETE", "/v1/sandboxes/{id}/computer/screens/{screen}", GUEST_IO | ROUTE_ACTION(MC_SCREEN_DELETE), api_computer},
	{"POST", "/v1/sandboxes/{id}/pause", MUTATION, api_sandbox_pause},
	{"POST", "/v1/sandboxes/{id}/resume", MUTATION, api_sandbox_resume},
	{"POST", "/v1/sandboxes/{id}/fork", MUTATION, api_sandbox_fork},
	{"POST", "/v1/sandboxes/{id}/resize", MUTATION, api_sandbox_resize},
	{"POST", "/v1/sandboxes/{id}/ssh-pubkeys", MUTATION, api_sandbox_ssh_keys},
	{"GET", "/v1/sandboxes/{id}/egress", READ, api_egress_get},
	{"PUT", "/v1/sandboxes/{id}/egress", MUTATION, api_egress_put},
	{"GET", "/v1/sandboxes/{id}/bandwidth", READ, api_bandwidth_get},
	{"GET", "/v1/sandboxes/{id}/metrics", READ, api_sandbox_metrics},
	{"POST", "/v1/sandboxes/{id}/bandwidth/recharge", MUTATION, api_bandwidth_recharge},
	{"POST", "/v1/sandboxes/{id}/networks", MUTATION, api_sandbox_network_attach},
	{"DELETE", "/v1/sandboxes/{id}/networks/{net}", MUTATION, api_sandbox_network_detach},
	{"GET", "/v1/sandboxes/{id}/disks", READ, api_sandbox_disks_list},
	{"POST", "/v1/sandboxes/{id}/disks", MUTATION, api_sandbox_disks_attach},
	{"DELETE", "/v1/sandboxes/{id}/disks/{disk}", MUTATION, api_sandbox_disks_detach},
	{"GET", "/v1/metrics", READ, api_user_metrics},
	{"GET", "/v1/metrics/timeseries", READ, api_user_timeseries},
	{"GET", "/v1/networks", READ, api_networks_list},
	{"POST", "/v1/networks", MUTATION, api_networks_create},
	{"GET", "/v1/networks/{id}", READ, api_networks_get},
	{"DELETE", "/v1/networks/{id}", MUTATION, api_networks_delete},
	{"GET", "/v1/disks", READ, api_disks_list},
	{"POST", "/v1/disks", MUTATION, api_disks_create},
	{"GET", "/v1/disks/{id}", READ, api_disks_get},
	{"PATCH", "/v1/disks/{id}", MUTATION, api_disks_patch},
	{"DELETE", "/v1/disks/{id}", MUTATION, api_disks_delete},
	{"GET", "/v1/templates", READ, api_templates_list},
	{"POST", "/v1/templates", MUTATION, api_templates_create},
	{"GET", "/v1/templates/{id}", READ, api_templates_get},
	{"DELETE", "/v1/templates/{id}", MUTATION, api_templates_delete},
	{"GET", "/v1/templates/{id}/logs", READ, api_templates_logs},
};
const size_t mock_api_nroutes = sizeof(mock_api_routes) / sizeof(mock_api_routes[0]);

/* The query parameters of the routes above, as the journal rebuilds a
 * request's query (ADMIN.md lists them): a route taking a new one adds it
 * here. */
const char *const mock_journal_query_keys[] = {"limit", "offset", "status", "stream", "path",
					       "mount_path", "follow", "attempt", "include", "reason",
					       "window_seconds", "step_seconds", "after", "scope",
					       "timeout_ms", "grace_ms", "screen_id",
					       "window_id", "x", "y", "width", "height", "application"};
const size_t mock_journal_nquery_keys =
	sizeof(mock_journal_query_keys) / sizeof(mock_journal_query_keys[0]);

/* X-Api-Key only: a Bearer token is refused by name, so a client sending
 * the wrong header learns why. */
static mock_tenant *authenticate(mreq *r, mresp *out)
{
	mock_tenant *t;

	if (r->api_key == NULL) {
		const char *authz = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");

		resp_fail(out, 401, "error", "UNAUTHORIZED",
			  authz != NULL ? "Authorization: Bearer is not accepted; send X-Api-Key"
					: "missing API key (send X-Api-Key)");
		return NULL;
	}
	t = mock_op_tenant(r->mock, r->api_key);
	if (t == NULL)
		resp_fail(out, 401, "error", "UNAUTHORIZED", "unknown API key");
	return t;
}

void api_dispatch(mreq *r, mresp *out)
{
	if (mock_rec_dispatch(r, out))
		return; /* record or replay mode: no local state */
	mock_route_serve(mock_api_routes, mock_api_nroutes, r, out, authenticate);
}

const mock_route *mock_route_lookup(bool self, bool admin, const char *method, const char *path)
{
	if (self)
		return mock_route_find(mock_self_routes, mock_self_nroutes, method, path, NULL, 0);
	if (admin)
		return mock_route_find(mock_admin_routes, mock_admin_nroutes, method, path, NULL, 0);
	return mock_route_find(mock_api_routes, mock_api_nroutes, method, path, NULL, 0);
}

/* api_networks: a tenant's private networks (list, create, get, delete)
 * and a sandbox's membership of them (attach, detach).
 *
 * Never take the model lock or edit the collections here (ops.h). */
#include "handlers/api.h"

void api_sandbox_network_attach(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	const char *net = NULL;
	mock_op op;
	char id[64];

	if (b == NULL || !api_get_str(b, "id", &net, out))
		return;
	if (net == NULL) {
		resp_fail(out, 400, "id", "INVALID_REQUEST", "id is required (network id or name)");
		return;
	}
	api_op_init(&op, r, t, id, sizeof(id));
	api_op_ok(r, out, &op, mock_op_network_attach(&op, net), "ok");
}

void api_sandbox_network_detach(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char id[64], net[128];

	api_op_init(&op, r, t, id, sizeof(id));
	/* a network segment too long to be an id or name is no network */
	if (!req_seg(r, 4, net, sizeof(net)))
		net[0] = '\0';
	api_op_ok(r, out, &op, mock_op_network_detach(&op, net), "ok");
}

void api_networks_list(mreq *r, mresp *out, mock_tenant *t)
{
	api_coll_list(r, out, t, MOCK_NETWORKS);
}

void api_networks_create(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	const char *name = NULL;
	mock_err e;
	cJSON *v;

	if (b == NULL || !api_get_str(b, "name", &name, out))
		return;
	if (name == NULL) {
		resp_fail(out, 400, "name", "INVALID_REQUEST", "name is required");
		return;
	}
	v = mock_op_coll_create(r->mock, t, MOCK_NETWORKS, b, &e);
	if (v == NULL)
		resp_mock_err(out, &e);
	else
		resp_success(out, 200, v);
}

void api_networks_get(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *v = api_coll_get(r, out, t, MOCK_NETWORKS, "network");

	if (v != NULL)
		resp_success(out, 200, v);
}

void api_networks_delete(mreq *r, mresp *out, mock_tenant *t)
{
	api_coll_delete(r, out, t, MOCK_NETWORKS, "network", "ok");
}

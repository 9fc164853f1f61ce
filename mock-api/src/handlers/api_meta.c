/* api_meta: the routes about the control plane itself — healthz, readyz,
 * whoami, the shape and rootfs catalogs, and the hosts.
 *
 * Never take the model lock here (ops.h reads the model). */
#include "handlers/api.h"

#include <stdio.h>

void api_healthz(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *d = cJSON_CreateObject();

	(void)r;
	(void)t;
	cJSON_AddBoolToObject(d, "up", true);
	resp_success(out, 200, d);
}

void api_readyz(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *d = cJSON_CreateObject();
	bool ready = mock_op_ready(r->mock);

	(void)t;
	cJSON_AddBoolToObject(d, "ready", ready);
	if (ready) {
		cJSON_AddNumberToObject(d, "scheduler_last_ok_ms_ago", 0);
		resp_success(out, 200, d);
		return;
	}
	cJSON_AddStringToObject(d, "reason",
				"control plane not ready (restarting, or set by the mock admin API)");
	/* The SDK reads data from a 503 readiness answer too. */
	resp_success(out, 503, d);
}

void api_whoami(mreq *r, mresp *out, mock_tenant *t)
{
	resp_success(out, 200, mock_op_whoami(r->mock, t));
}

void api_shapes(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *all = cJSON_CreateArray();

	(void)t;
	for (size_t i = 0; i < mock_shape_count; i++)
		cJSON_AddItemToArray(all, mock_shape_view(&mock_shapes[i]));
	api_resp_page(r, out, all);
}

void api_rootfs(mreq *r, mresp *out, mock_tenant *t)
{
	(void)r;
	(void)t;
	resp_success(out, 200, mock_rootfs_view());
}

/* Every host the mock had: the dead ones (fault host_dies) and the active
 * one, where every live VM is. */
void api_hosts(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *all = cJSON_CreateArray();
	unsigned vms, dead = mock_op_hosts(r->mock, &vms);

	(void)t;
	for (unsigned n = 1; n <= dead + 1; n++) {
		cJSON *h = cJSON_CreateObject();
		char id[40];

		snprintf(id, sizeof(id), "host-local-%u", n);
		cJSON_AddStringToObject(h, "id", id);
		cJSON_AddStringToObject(h, "status", n <= dead ? "dead" : "active");
		cJSON_AddNumberToObject(h, "free_mib", n <= dead ? 0 : 65536);
		cJSON_AddNumberToObject(h, "vm_count", n <= dead ? 0 : vms);
		if (n > dead) {
			cJSON *rf = cJSON_AddArrayToObject(h, "rootfses");

			for (size_t i = 0; i < mock_rootfs_count; i++)
				cJSON_AddItemToArray(rf, cJSON_CreateString(mock_rootfses[i].name));
		}
		cJSON_AddItemToArray(all, h);
	}
	api_resp_page(r, out, all);
}

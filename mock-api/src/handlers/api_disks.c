/* api_disks: a tenant's disks (list, create, get, patch credentials,
 * delete) and a sandbox's attachments of them (list, attach, detach).
 *
 * Never take the model lock or edit the collections here (ops.h), and
 * never show a disk's credentials (mock_disk_view hides them). */
#include "handlers/api.h"

#include <stdio.h>
#include <string.h>

void api_sandbox_disks_list(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char id[64];
	cJSON *all;

	api_op_init(&op, r, t, id, sizeof(id));
	all = mock_op_sandbox_disks(&op);
	if (op.found[0] != '\0')
		snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", op.found);
	if (all == NULL)
		resp_mock_err(out, &op.err);
	else
		api_resp_page(r, out, all);
}

void api_sandbox_disks_attach(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	const char *disk_id = NULL, *mount = NULL, *sub = NULL;
	mock_op op;
	char id[64];

	if (b == NULL || !api_get_str(b, "disk_id", &disk_id, out) ||
	    !api_get_str(b, "mount_path", &mount, out) || !api_get_str(b, "sub_path", &sub, out))
		return;
	if (disk_id == NULL) {
		resp_fail(out, 400, "disk_id", "INVALID_REQUEST", "disk_id is required");
		return;
	}
	if (mount == NULL || mount[0] != '/') {
		resp_fail(out, 400, "mount_path", "INVALID_REQUEST", "mount_path is required (absolute)");
		return;
	}
	api_op_init(&op, r, t, id, sizeof(id));
	api_op_ok(r, out, &op, mock_op_disk_attach(&op, disk_id, mount, sub), "ok");
}

void api_sandbox_disks_detach(mreq *r, mresp *out, mock_tenant *t)
{
	const char *mount = req_query(r, "mount_path");
	mock_op op;
	char id[64], did[128];

	if (mount == NULL || mount[0] == '\0') {
		resp_fail(out, 400, "mount_path", "INVALID_REQUEST", "query parameter mount_path is required");
		return;
	}
	api_op_init(&op, r, t, id, sizeof(id));
	/* a disk segment too long to be an id or name is attached nowhere */
	if (!req_seg(r, 4, did, sizeof(did)))
		did[0] = '\0';
	api_op_ok(r, out, &op, mock_op_disk_detach(&op, did, mount), "detached");
}

void api_disks_list(mreq *r, mresp *out, mock_tenant *t)
{
	api_coll_list(r, out, t, MOCK_DISKS);
}

void api_disks_create(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	mock_err e;
	cJSON *v;

	if (b == NULL)
		return;
	v = mock_op_coll_create(r->mock, t, MOCK_DISKS, b, &e);
	if (v == NULL)
		resp_mock_err(out, &e);
	else
		resp_success(out, 200, v);
}

void api_disks_get(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *v = api_coll_get(r, out, t, MOCK_DISKS, "disk");

	if (v != NULL)
		resp_success(out, 200, v);
}

void api_disks_patch(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	const cJSON *cred = NULL;
	const char *ak = NULL, *sk = NULL;
	char id[128];
	cJSON *v = NULL;

	if (b == NULL || !api_get_kind(b, "credentials", false, &cred, out))
		return;
	if (cred == NULL || !api_get_str(cred, "access_key", &ak, out) ||
	    !api_get_str(cred, "secret_key", &sk, out) || ak == NULL || sk == NULL || ak[0] == '\0' ||
	    sk[0] == '\0') {
		if (out->body == NULL)
			resp_fail(out, 400, "credentials", "INVALID_REQUEST",
				  "credentials needs non-empty access_key and secret_key");
		return;
	}
	if (req_seg(r, 2, id, sizeof(id)))
		v = mock_op_disk_credentials(r->mock, t, id, cred);
	if (v == NULL)
		resp_fail(out, 404, "error", "NOT_FOUND", "disk not found");
	else
		resp_success(out, 200, v);
}

void api_disks_delete(mreq *r, mresp *out, mock_tenant *t)
{
	api_coll_delete(r, out, t, MOCK_DISKS, "disk", "deleted");
}

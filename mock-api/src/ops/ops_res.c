/* ops_res: the operations on what hangs off a sandbox or a tenant (ops.h)
 * — ingress, egress and bandwidth, a sandbox's networks and disks, and a
 * tenant's network and disk collections (its templates: templates/templates.c).
 *
 * Never parse a request or shape an HTTP answer here, and never hold the
 * model lock across guest I/O: the ingress socket is made while the
 * sandbox is marked busy, and ops_io_end unmarks it. */
#define _GNU_SOURCE
#include "ops/ops.h"
#include "ops/ops_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core.h" /* struct sbx_mock */

/* ---- ingress ---- */

int mock_op_ingress_socket(sbx_mock *mock, const char *id, int *status, sbx_err *err)
{
	mock_model *m = mock->model;
	mock_sandbox *sb;
	mock_guest *g = NULL;
	int fd;

	pthread_mutex_lock(&m->lock);
	ops_tick(mock);
	sb = mock_sandbox_find_any(m, id);
	if (sb == NULL || sb->tenant == NULL || mock_status_terminal(sb->status) || !sb->ingress_enabled) {
		*status = 404;
		sbx_err_set(err, "ingress: no sandbox %s with ingress enabled", id);
	} else if (sb->status != ST_RUNNING || sb->guest == NULL) {
		*status = 503;
		sbx_err_set(err, "ingress: sandbox %s is %s, not running", id, mock_status_name(sb->status));
	} else {
		g = sb->guest;
		sb->busy++;
		mock_sandbox_touch(m, sb);
	}
	pthread_mutex_unlock(&m->lock);
	if (g == NULL)
		return -1;
	fd = mock_guest_socket(g, err);
	ops_io_end(mock, sb);
	*status = 502;
	return fd;
}

/* ---- egress and bandwidth ---- */

static cJSON *egress_view(const mock_sandbox *sb)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "id", sb->id);
	cJSON_AddItemToObject(d, "egress", sbx_egress_list_to_json(&sb->egress));
	return d;
}

cJSON *mock_op_egress_get(mock_op *op)
{
	mock_sandbox *sb;
	cJSON *d = NULL;

	sb = ops_begin(op, false);
	if (sb != NULL)
		d = egress_view(sb);
	pthread_mutex_unlock(&op->mock->model->lock);
	return d;
}

cJSON *mock_op_egress_put(mock_op *op, sbx_egress_list *list)
{
	mock_sandbox *sb;
	cJSON *d = NULL;

	sb = ops_begin(op, false);
	if (sb != NULL && mock_status_terminal(sb->status)) {
		mock_err_set(&op->err, 409, "INVALID_STATE", "status", "sandbox is destroyed");
		sb = NULL;
	}
	if (sb != NULL) {
		sbx_egress_list tmp = sb->egress;

		sb->egress = *list;
		*list = tmp;
		d = egress_view(sb);
	}
	pthread_mutex_unlock(&op->mock->model->lock);
	if (d != NULL)
		mock_egress_sync(op->mock, op->found);
	return d;
}

cJSON *mock_op_bandwidth(mock_op *op)
{
	mock_sandbox *sb;
	cJSON *d = NULL;

	sb = ops_begin(op, false);
	if (sb != NULL)
		d = mock_bandwidth_view(sb);
	pthread_mutex_unlock(&op->mock->model->lock);
	return d;
}

cJSON *mock_op_bandwidth_recharge(mock_op *op, int64_t add)
{
	mock_model *m = op->mock->model;
	mock_sandbox *sb;
	cJSON *d = NULL;

	sb = ops_begin(op, false);
	if (sb != NULL && !mock_tenant_credit(m, op->t)) {
		mock_err_set(&op->err, 402, "PAYMENT_REQUIRED", "error", "out of credit: top up to continue");
		sb = NULL;
	}
	if (sb != NULL) {
		if (sb->bw_quota >= 0)
			sb->bw_quota += add;
		d = mock_bandwidth_view(sb);
	}
	pthread_mutex_unlock(&m->lock);
	return d;
}

/* ---- a sandbox's networks and disks ---- */

static void remove_string(cJSON *arr, const char *s)
{
	int i = 0;
	const cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		if (cJSON_IsString(it) && strcmp(it->valuestring, s) == 0) {
			cJSON_DeleteItemFromArray(arr, i);
			return;
		}
		i++;
	}
}

static bool has_string(const cJSON *arr, const char *s)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		if (strcmp(it->valuestring, s) == 0)
			return true;
	}
	return false;
}

int mock_op_network_attach(mock_op *op, const char *id)
{
	mock_sandbox *sb;
	int rc = -1;

	sb = ops_begin(op, false);
	if (sb != NULL) {
		cJSON *net = mock_network_find(op->t, id);

		if (net == NULL) {
			mock_err_set(&op->err, 404, "NOT_FOUND", "error", "network not found");
		} else {
			const char *nid = cJSON_GetObjectItem(net, "id")->valuestring;

			if (!has_string(sb->networks, nid)) {
				cJSON_AddItemToArray(sb->networks, cJSON_CreateString(nid));
				cJSON_AddItemToArray(cJSON_GetObjectItem(net, "members"),
						     cJSON_CreateString(sb->id));
			}
			rc = 0;
		}
	}
	pthread_mutex_unlock(&op->mock->model->lock);
	return rc;
}

int mock_op_network_detach(mock_op *op, const char *id)
{
	mock_sandbox *sb;
	int rc = -1;

	sb = ops_begin(op, false);
	if (sb != NULL) {
		cJSON *net = mock_network_find(op->t, id);

		if (net == NULL) {
			mock_err_set(&op->err, 404, "NOT_FOUND", "error", "network not found");
		} else if (!has_string(sb->networks, cJSON_GetObjectItem(net, "id")->valuestring)) {
			mock_err_set(&op->err, 404, "NOT_FOUND", "error",
				     "the sandbox is not attached to this network");
		} else {
			remove_string(sb->networks, cJSON_GetObjectItem(net, "id")->valuestring);
			remove_string(cJSON_GetObjectItem(net, "members"), sb->id);
			rc = 0;
		}
	}
	pthread_mutex_unlock(&op->mock->model->lock);
	return rc;
}

cJSON *mock_op_sandbox_disks(mock_op *op)
{
	mock_sandbox *sb;
	cJSON *all = NULL;

	sb = ops_begin(op, false);
	if (sb != NULL) {
		bool mounted = sb->status != ST_CREATING && sb->status != ST_DESTROYING &&
			       sb->status != ST_DESTROYED && sb->status != ST_FAILED;
		const cJSON *att;

		all = cJSON_CreateArray();
		cJSON_ArrayForEach(att, sb->disks) {
			cJSON *v = mock_sandbox_disk_view(sb->tenant, att, mounted);

			if (v != NULL && all != NULL)
				cJSON_AddItemToArray(all, v);
			else
				cJSON_Delete(v);
		}
	}
	pthread_mutex_unlock(&op->mock->model->lock);
	return all;
}

int mock_op_disk_attach(mock_op *op, const char *disk_id, const char *mount, const char *sub_path)
{
	mock_sandbox *sb;
	int rc = -1;

	sb = ops_begin(op, true);
	if (sb != NULL && sb->status != ST_RUNNING) {
		mock_err_set(&op->err, 409, "NOT_RUNNING", "status", "disks attach only to a running sandbox");
		sb = NULL;
	}
	if (sb != NULL) {
		cJSON *disk = mock_disk_find(op->t, disk_id);

		if (disk == NULL) {
			mock_err_set(&op->err, 404, "NOT_FOUND", "error", "disk not found");
		} else {
			cJSON *att = cJSON_CreateObject();

			cJSON_AddStringToObject(att, "disk_id", cJSON_GetObjectItem(disk, "id")->valuestring);
			cJSON_AddStringToObject(att, "mount_path", mount);
			if (sub_path != NULL)
				cJSON_AddStringToObject(att, "sub_path", sub_path);
			cJSON_AddItemToArray(sb->disks, att);
			rc = 0;
		}
	}
	pthread_mutex_unlock(&op->mock->model->lock);
	return rc;
}

int mock_op_disk_detach(mock_op *op, const char *did, const char *mount)
{
	mock_sandbox *sb;
	int rc = -1;

	sb = ops_begin(op, false);
	if (sb != NULL) {
		cJSON *disk = mock_disk_find(op->t, did);
		const char *id = disk != NULL ? cJSON_GetObjectItem(disk, "id")->valuestring : did;
		int i = 0;
		const cJSON *att;

		cJSON_ArrayForEach(att, sb->disks) {
			const cJSON *a_id = cJSON_GetObjectItem(att, "disk_id");
			const cJSON *a_mp = cJSON_GetObjectItem(att, "mount_path");

			if (cJSON_IsString(a_id) && cJSON_IsString(a_mp) && strcmp(a_id->valuestring, id) == 0 &&
			    strcmp(a_mp->valuestring, mount) == 0) {
				cJSON_DeleteItemFromArray(sb->disks, i);
				rc = 0;
				break;
			}
			i++;
		}
		if (rc != 0)
			mock_err_set(&op->err, 404, "NOT_FOUND", "error", "no such disk attachment");
	}
	pthread_mutex_unlock(&op->mock->model->lock);
	return rc;
}

/* ---- a tenant's networks and disks (templates: templates/templates.c) ---- */

static cJSON *coll_of(const mock_tenant *t, mock_coll c)
{
	return c == MOCK_NETWORKS ? t->networks : t->disks;
}

static cJSON *coll_find(mock_tenant *t, mock_coll c, const char *id)
{
	return c == MOCK_NETWORKS ? mock_network_find(t, id) : mock_disk_find(t, id);
}

/* An item's view. Lock held. */
static cJSON *coll_view(mock_model *m, mock_coll c, cJSON *item)
{
	return c == MOCK_NETWORKS ? mock_network_view(m, item, true) : mock_disk_view(item);
}

cJSON *mock_op_coll_list(sbx_mock *mock, mock_tenant *t, mock_coll c)
{
	cJSON *all = cJSON_CreateArray();
	cJSON *it;

	pthread_mutex_lock(&mock->model->lock);
	cJSON_ArrayForEach(it, coll_of(t, c))
		cJSON_AddItemToArray(all, coll_view(mock->model, c, it));
	pthread_mutex_unlock(&mock->model->lock);
	return all;
}

cJSON *mock_op_coll_get(sbx_mock *mock, mock_tenant *t, mock_coll c, const char *id)
{
	cJSON *item, *v = NULL;

	pthread_mutex_lock(&mock->model->lock);
	item = coll_find(t, c, id);
	if (item != NULL)
		v = coll_view(mock->model, c, item);
	pthread_mutex_unlock(&mock->model->lock);
	return v;
}

cJSON *mock_op_coll_create(sbx_mock *mock, mock_tenant *t, mock_coll c, const cJSON *body,
			   mock_err *e)
{
	cJSON *item, *v = NULL;

	pthread_mutex_lock(&mock->model->lock);
	if (c == MOCK_NETWORKS)
		item = mock_network_create(mock->model, t,
					   cJSON_GetObjectItemCaseSensitive(body, "name")->valuestring, e);
	else
		item = mock_disk_create(mock->model, t, body, e);
	if (item != NULL)
		v = coll_view(mock->model, c, item);
	pthread_mutex_unlock(&mock->model->lock);
	return v;
}

int mock_op_coll_delete(sbx_mock *mock, mock_tenant *t, mock_coll c, const char *id, mock_err *e)
{
	int rc;

	pthread_mutex_lock(&mock->model->lock);
	if (c == MOCK_NETWORKS)
		rc = mock_network_delete(mock->model, t, id, e);
	else
		rc = mock_disk_delete(mock->model, t, id, e);
	pthread_mutex_unlock(&mock->model->lock);
	return rc;
}

cJSON *mock_op_disk_credentials(sbx_mock *mock, mock_tenant *t, const char *id, const cJSON *cred)
{
	cJSON *d, *v = NULL;

	pthread_mutex_lock(&mock->model->lock);
	d = mock_disk_find(t, id);
	if (d != NULL) {
		cJSON_ReplaceItemInObject(d, "_credentials", cJSON_Duplicate(cred, true));
		v = mock_disk_view(d);
	}
	pthread_mutex_unlock(&mock->model->lock);
	return v;
}

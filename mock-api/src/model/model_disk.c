/* model_disk: a tenant's disks (S3 buckets mounted into sandboxes), stored
 * as cJSON in the tenant; see model.h.
 *
 * The credentials are kept under "_credentials" and must never reach a
 * view: every answer goes through mock_disk_view. A disk attached to a
 * sandbox that is not destroyed cannot be deleted. Never knows about HTTP. */
#include "model/model_internal.h"

#include <string.h>

cJSON *mock_disk_find(mock_tenant *t, const char *id_or_name)
{
	return model_find_by_id_or_name(t->disks, id_or_name);
}

/* The shape of a create body: name, kind "s3", config {bucket, endpoint},
 * credentials {access_key, secret_key}. */
static int disk_body_check(const cJSON *body, mock_err *e)
{
	const char *name = model_str(body, "name");
	const char *kind = model_str(body, "kind");
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(body, "config");
	const cJSON *cred = cJSON_GetObjectItemCaseSensitive(body, "credentials");

	if (name == NULL) {
		mock_err_set(e, 400, "INVALID_REQUEST", "name", "name is required (string)");
		return -1;
	}
	if (mock_validate_disk_name(name, e) != 0)
		return -1;
	if (kind == NULL || strcmp(kind, "s3") != 0) {
		mock_err_set(e, 400, "INVALID_REQUEST", "kind", "kind must be \"s3\"");
		return -1;
	}
	if (!cJSON_IsObject(config) || model_str(config, "bucket") == NULL ||
	    model_str(config, "endpoint") == NULL) {
		mock_err_set(e, 400, "INVALID_REQUEST", "config",
			     "config needs string fields bucket and endpoint");
		return -1;
	}
	if (!cJSON_IsObject(cred) || model_str(cred, "access_key") == NULL ||
	    model_str(cred, "secret_key") == NULL || model_str(cred, "access_key")[0] == '\0' ||
	    model_str(cred, "secret_key")[0] == '\0') {
		mock_err_set(e, 400, "INVALID_REQUEST", "credentials",
			     "credentials needs non-empty access_key and secret_key");
		return -1;
	}
	return 0;
}

cJSON *mock_disk_create(mock_model *m, mock_tenant *t, const cJSON *body, mock_err *e)
{
	const char *name = model_str(body, "name");
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(body, "config");
	const cJSON *cred = cJSON_GetObjectItemCaseSensitive(body, "credentials");
	const cJSON *path_style = cJSON_GetObjectItem(config, "use_path_style");
	cJSON *disk, *cfg;
	char ts[40];

	if (disk_body_check(body, e) != 0)
		return NULL;
	if (model_need_credit(m, t, e) != 0)
		return NULL;
	if (model_find_by_id_or_name(t->disks, name) != NULL) {
		mock_err_set(e, 409, "NAME_TAKEN", "name", "a disk named \"%s\" already exists", name);
		return NULL;
	}
	disk = model_resource_new(m, "disk_", name, ts, e);
	if (disk == NULL)
		return NULL;
	cJSON_AddStringToObject(disk, "kind", "s3");
	cfg = cJSON_AddObjectToObject(disk, "config");
	cJSON_AddStringToObject(cfg, "bucket", model_str(config, "bucket"));
	cJSON_AddStringToObject(cfg, "endpoint", model_str(config, "endpoint"));
	if (model_str(config, "region") != NULL)
		cJSON_AddStringToObject(cfg, "region", model_str(config, "region"));
	if (cJSON_IsBool(path_style))
		cJSON_AddBoolToObject(cfg, "use_path_style", cJSON_IsTrue(path_style));
	cJSON_AddStringToObject(disk, "created_at", ts);
	cJSON_AddItemToObject(disk, "_credentials", cJSON_Duplicate(cred, true));
	cJSON_AddItemToArray(t->disks, disk);
	return disk;
}

/* The first sandbox of t, not destroyed, that has disk_id attached. */
static const mock_sandbox *disk_user(const mock_model *m, const mock_tenant *t,
				     const char *disk_id)
{
	for (size_t i = 0; i < m->nlive; i++) {
		const mock_sandbox *sb = m->live[i];
		const cJSON *att;

		if (sb->tenant != t || sb->status == ST_DESTROYED)
			continue;
		cJSON_ArrayForEach(att, sb->disks) {
			const char *did = model_str(att, "disk_id");

			if (did != NULL && strcmp(did, disk_id) == 0)
				return sb;
		}
	}
	return NULL;
}

int mock_disk_delete(mock_model *m, mock_tenant *t, const char *id_or_name, mock_err *e)
{
	cJSON *disk = mock_disk_find(t, id_or_name);
	const mock_sandbox *user;

	if (disk == NULL) {
		mock_err_set(e, 404, "NOT_FOUND", "error", "disk not found");
		return -1;
	}
	user = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(disk, "id"))
		       ? disk_user(m, t, cJSON_GetObjectItemCaseSensitive(disk, "id")->valuestring)
		       : NULL;
	if (user != NULL) {
		mock_err_set(e, 409, "IN_USE", "error", "disk is attached to sandbox %s; detach it first",
			     user->id);
		return -1;
	}
	cJSON_Delete(cJSON_DetachItemViaPointer(t->disks, disk));
	return 0;
}

cJSON *mock_disk_view(const cJSON *disk)
{
	cJSON *v = cJSON_Duplicate(disk, true);

	if (v != NULL)
		cJSON_DeleteItemFromObjectCaseSensitive(v, "_credentials");
	return v;
}

cJSON *mock_disk_attachment(mock_tenant *t, const cJSON *att, const char *field, mock_err *e)
{
	const char *did = model_str(att, "disk_id");
	const char *mount = model_str(att, "mount_path");
	const cJSON *sub = cJSON_GetObjectItemCaseSensitive(att, "sub_path");
	cJSON *disk, *o;

	if (!cJSON_IsObject(att) || did == NULL || did[0] == '\0') {
		mock_err_set(e, 400, "INVALID_REQUEST", field,
			     "%s entries need a string disk_id and an absolute mount_path", field);
		return NULL;
	}
	if (mount == NULL || mount[0] != '/') {
		mock_err_set(e, 400, "INVALID_REQUEST", field, "%s: mount_path must be an absolute path",
			     field);
		return NULL;
	}
	if (sub != NULL && !cJSON_IsNull(sub) &&
	    (!cJSON_IsString(sub) || sub->valuestring[0] == '/' || strstr(sub->valuestring, "..") != NULL)) {
		mock_err_set(e, 400, "INVALID_REQUEST", field,
			     "%s: sub_path must be a relative string without \"..\"", field);
		return NULL;
	}
	disk = mock_disk_find(t, did);
	if (disk == NULL) {
		mock_err_set(e, 400, "UNKNOWN_DISK", field, "unknown disk \"%.64s\"", did);
		return NULL;
	}
	o = cJSON_CreateObject();
	if (o == NULL) {
		model_err_oom(e);
		return NULL;
	}
	cJSON_AddStringToObject(o, "disk_id", model_str(disk, "id"));
	cJSON_AddStringToObject(o, "mount_path", mount);
	if (cJSON_IsString(sub) && sub->valuestring[0] != '\0')
		cJSON_AddStringToObject(o, "sub_path", sub->valuestring);
	return o;
}

cJSON *mock_disks_resolve(mock_tenant *t, const cJSON *disks, mock_err *e)
{
	cJSON *out = cJSON_CreateArray();
	const cJSON *it;

	if (out == NULL) {
		model_err_oom(e);
		return NULL;
	}
	if (disks == NULL || cJSON_IsNull(disks))
		return out;
	if (!cJSON_IsArray(disks)) {
		cJSON_Delete(out);
		mock_err_set(e, 400, "INVALID_REQUEST", "disks",
			     "disks must be an array of {disk_id, mount_path, sub_path?}");
		return NULL;
	}
	cJSON_ArrayForEach(it, disks) {
		cJSON *a = mock_disk_attachment(t, it, "disks", e);

		if (a == NULL) {
			cJSON_Delete(out);
			return NULL;
		}
		cJSON_AddItemToArray(out, a);
	}
	return out;
}

cJSON *mock_sandbox_disk_view(mock_tenant *t, const cJSON *att, bool running)
{
	const char *did = model_str(att, "disk_id");
	const char *sub = model_str(att, "sub_path");
	cJSON *disk = did != NULL && t != NULL ? mock_disk_find(t, did) : NULL;
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "disk_id", did != NULL ? did : "");
	cJSON_AddStringToObject(o, "name", disk != NULL ? model_str(disk, "name") : (did ? did : ""));
	cJSON_AddStringToObject(o, "kind", "s3");
	if (disk != NULL) {
		cJSON_AddItemToObject(o, "config",
				      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(disk, "config"), true));
	} else {
		cJSON *cfg = cJSON_AddObjectToObject(o, "config");

		cJSON_AddStringToObject(cfg, "bucket", "");
		cJSON_AddStringToObject(cfg, "endpoint", "");
	}
	cJSON_AddStringToObject(o, "mount_path", model_str(att, "mount_path") ? model_str(att, "mount_path") : "");
	if (sub != NULL)
		cJSON_AddStringToObject(o, "sub_path", sub);
	if (disk == NULL) {
		cJSON_AddStringToObject(o, "mount_status", "error");
		cJSON_AddStringToObject(o, "mount_error", "the disk no longer exists");
	} else {
		cJSON_AddStringToObject(o, "mount_status", running ? "mounted" : "pending");
	}
	return o;
}

/* model_network: private networks of a tenant (stored as cJSON in the
 * tenant) and sandbox membership in them; see model.h.
 *
 * A network may only be deleted once empty, and a sandbox leaves its
 * networks when it ends destroyed. Never knows about HTTP; never changes a
 * sandbox's status. */
#include "model/model_internal.h"

#include <string.h>

cJSON *mock_network_find(mock_tenant *t, const char *id_or_name)
{
	return model_find_by_id_or_name(t->networks, id_or_name);
}

cJSON *mock_network_create(mock_model *m, mock_tenant *t, const char *name, mock_err *e)
{
	cJSON *net;
	char ts[40];

	if (mock_validate_res_name(name, e) != 0)
		return NULL;
	if (model_need_credit(m, t, e) != 0)
		return NULL;
	if (model_find_by_id_or_name(t->networks, name) != NULL) {
		/* 400, not 409: the live service's answer (spec) */
		mock_err_set(e, 400, "NAME_TAKEN", "name", "a network named \"%s\" already exists", name);
		return NULL;
	}
	if (cJSON_GetArraySize(t->networks) >= MOCK_NETWORKS_PER_KEY) {
		mock_err_set(e, 403, "QUOTA_EXCEEDED", "error", "network limit reached (%d per key)",
			     MOCK_NETWORKS_PER_KEY);
		return NULL;
	}
	net = model_resource_new(m, "net-", name, ts, e);
	if (net == NULL)
		return NULL;
	cJSON_AddStringToObject(net, "created_at", ts);
	cJSON_AddArrayToObject(net, "members");
	cJSON_AddItemToArray(t->networks, net);
	return net;
}

int mock_network_delete(mock_model *m, mock_tenant *t, const char *id_or_name, mock_err *e)
{
	cJSON *net = mock_network_find(t, id_or_name);

	(void)m;
	if (net == NULL) {
		mock_err_set(e, 404, "NOT_FOUND", "error", "network not found");
		return -1;
	}
	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(net, "members")) > 0) {
		mock_err_set(e, 409, "IN_USE", "error", "network still has members; detach them first");
		return -1;
	}
	cJSON_Delete(cJSON_DetachItemViaPointer(t->networks, net));
	return 0;
}

int model_network_join(mock_sandbox *sb, mock_tenant *t, const cJSON *nets, mock_err *e)
{
	const cJSON *it;

	if (nets == NULL || cJSON_IsNull(nets))
		return 0;
	if (!cJSON_IsArray(nets)) {
		mock_err_set(e, 400, "INVALID_REQUEST", "networks", "networks must be an array of {id}");
		return -1;
	}
	/* Check every item before touching any network, so that a refused
	 * create leaves no member behind. */
	cJSON_ArrayForEach(it, nets) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");

		if (!cJSON_IsString(id)) {
			mock_err_set(e, 400, "INVALID_REQUEST", "networks", "networks items need a string id");
			return -1;
		}
		if (mock_network_find(t, id->valuestring) == NULL) {
			mock_err_set(e, 400, "UNKNOWN_NETWORK", "networks", "unknown network \"%.64s\"",
				     id->valuestring);
			return -1;
		}
	}
	cJSON_ArrayForEach(it, nets) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
		cJSON *net = mock_network_find(t, id->valuestring);
		const cJSON *nid = cJSON_GetObjectItemCaseSensitive(net, "id");

		/* by its id, as the request may have named it by name */
		cJSON_AddItemToArray(sb->networks, cJSON_CreateString(cJSON_IsString(nid) ? nid->valuestring
											: id->valuestring));
		cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(net, "members"), cJSON_CreateString(sb->id));
	}
	return 0;
}

void model_network_leave_all(mock_sandbox *sb)
{
	const cJSON *nid;

	cJSON_ArrayForEach(nid, sb->networks) {
		cJSON *net = sb->tenant != NULL && cJSON_IsString(nid) ? mock_network_find(sb->tenant, nid->valuestring)
								       : NULL;
		cJSON *members = net != NULL ? cJSON_GetObjectItemCaseSensitive(net, "members") : NULL;
		int i = 0;
		const cJSON *mem;

		cJSON_ArrayForEach(mem, members) {
			if (cJSON_IsString(mem) && strcmp(mem->valuestring, sb->id) == 0) {
				cJSON_DeleteItemFromArray(members, i);
				break;
			}
			i++;
		}
	}
}

cJSON *mock_network_view(mock_model *m, const cJSON *net, bool with_members)
{
	cJSON *v = cJSON_CreateObject();
	const cJSON *members = cJSON_GetObjectItemCaseSensitive(net, "members");
	const cJSON *mem;
	cJSON *arr;

	if (v == NULL)
		return NULL;
	cJSON_AddStringToObject(v, "id", model_str(net, "id"));
	cJSON_AddStringToObject(v, "name", model_str(net, "name"));
	cJSON_AddStringToObject(v, "created_at", model_str(net, "created_at"));
	cJSON_AddNumberToObject(v, "member_count", cJSON_GetArraySize(members));
	if (!with_members)
		return v;
	/* members are stored as sandbox ids; shown as the SDK's NetworkMember */
	arr = cJSON_AddArrayToObject(v, "members");
	cJSON_ArrayForEach(mem, members) {
		const mock_sandbox *sb = cJSON_IsString(mem) ? mock_sandbox_find_any(m, mem->valuestring)
							     : NULL;
		cJSON *o = cJSON_CreateObject();

		if (o == NULL)
			continue;
		cJSON_AddStringToObject(o, "sandbox_id", cJSON_IsString(mem) ? mem->valuestring : "");
		cJSON_AddStringToObject(o, "status",
					sb != NULL ? mock_status_name(sb->status) : "destroyed");
		if (sb != NULL && sb->status != ST_CREATING && sb->ip[0] != '\0')
			cJSON_AddStringToObject(o, "ip", sb->ip);
		if (sb != NULL && sb->name[0] != '\0')
			cJSON_AddStringToObject(o, "name", sb->name);
		cJSON_AddItemToArray(arr, o);
	}
	return v;
}

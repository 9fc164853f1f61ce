/* model_template: a tenant's rootfs templates, stored as cJSON in the
 * tenant; see model.h.
 *
 * A build is not simulated by a timer: a template's status (pending,
 * building, ready) is derived from its age on the virtual clock each time
 * it is viewed, so clock/advance moves builds along. The "_created_ms"
 * bookkeeping key must never reach a view. Never knows about HTTP. */
#include "model/model_internal.h"

#include <string.h>

cJSON *mock_template_find(mock_tenant *t, const char *id)
{
	return model_find_by_id_or_name(t->templates, id);
}

cJSON *mock_template_create(mock_model *m, mock_tenant *t, const cJSON *body, mock_err *e)
{
	const char *name = model_str(body, "name");
	const char *dockerfile = model_str(body, "dockerfile");
	const char *base = model_str(body, "base");
	cJSON *tpl;
	char ts[40];

	if (name == NULL) {
		mock_err_set(e, 400, "INVALID_REQUEST", "name", "name is required (string)");
		return NULL;
	}
	if (mock_validate_res_name(name, e) != 0)
		return NULL;
	if (dockerfile == NULL || dockerfile[0] == '\0') {
		mock_err_set(e, 400, "INVALID_REQUEST", "dockerfile", "dockerfile is required (string)");
		return NULL;
	}
	if (base != NULL && !model_rootfs_known(base)) {
		mock_err_set(e, 400, "INVALID_ROOTFS", "base", "unknown base rootfs \"%.64s\"", base);
		return NULL;
	}
	if (model_need_credit(m, t, e) != 0)
		return NULL;
	tpl = model_resource_new(m, "tpl_", name, ts, e);
	if (tpl == NULL)
		return NULL;
	cJSON_AddStringToObject(tpl, "base", base != NULL ? base : MOCK_ROOTFS_DEFAULT);
	cJSON_AddStringToObject(tpl, "status", "pending");
	cJSON_AddNumberToObject(tpl, "ext4_size_bytes", 0);
	cJSON_AddStringToObject(tpl, "created_at", ts);
	cJSON_AddStringToObject(tpl, "dockerfile", dockerfile);
	cJSON_AddNumberToObject(tpl, "_created_ms", (double)mock_now(m));
	cJSON_AddItemToArray(t->templates, tpl);
	return tpl;
}

/* Sets o[k] = v whether or not o has k yet (a template restored from a
 * state log may lack status or ext4_size_bytes: Replace alone would leak
 * v). */
static void put_item(cJSON *o, const char *k, cJSON *v)
{
	if (cJSON_GetObjectItemCaseSensitive(o, k) != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(o, k, v);
	else
		cJSON_AddItemToObject(o, k, v);
}

cJSON *mock_template_view(mock_model *m, cJSON *tpl)
{
	/* case-sensitive: the key restore checked (model_persist.c) */
	int64_t created = (int64_t)cJSON_GetObjectItemCaseSensitive(tpl, "_created_ms")->valuedouble;
	int64_t age = mock_now(m) - created;
	int64_t pend = mock_timing_ms(m, "template_pending");
	int64_t build = mock_timing_ms(m, "template_build");
	const char *status = "ready";
	cJSON *v;

	if (age < pend)
		status = "pending";
	else if (age < pend + build)
		status = "building";
	put_item(tpl, "status", cJSON_CreateString(status));
	if (strcmp(status, "ready") == 0 && cJSON_GetObjectItemCaseSensitive(tpl, "built_at") == NULL) {
		char ts[40];

		mock_rfc3339(m, created + pend + build, ts, sizeof(ts));
		cJSON_AddStringToObject(tpl, "built_at", ts);
		put_item(tpl, "ext4_size_bytes", cJSON_CreateNumber(536870912.0));
	}
	v = cJSON_Duplicate(tpl, true);
	if (v != NULL)
		cJSON_DeleteItemFromObjectCaseSensitive(v, "_created_ms");
	return v;
}

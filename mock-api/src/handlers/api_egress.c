/* api_egress: a sandbox's egress rules (GET/PUT .../egress) and its
 * bandwidth meter (GET .../bandwidth, POST .../bandwidth/recharge).
 *
 * Never take the model lock or write a sandbox's fields here (ops.h). */
#include "handlers/api.h"

#include <string.h>

void api_egress_get(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char id[64];

	api_op_init(&op, r, t, id, sizeof(id));
	api_op_answer(r, out, &op, 200, mock_op_egress_get(&op));
}

void api_egress_put(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	const cJSON *item;
	sbx_egress_list list;
	mock_op op;
	char id[64];

	if (b == NULL)
		return;
	item = cJSON_GetObjectItemCaseSensitive(b, "egress");
	if (item == NULL) {
		resp_fail(out, 400, "egress", "INVALID_REQUEST",
			  "egress is required (an array of rules, or null for open)");
		return;
	}
	memset(&list, 0, sizeof(list));
	if (!api_parse_egress(r->mock, item, &list, out))
		return;
	api_op_init(&op, r, t, id, sizeof(id));
	api_op_answer(r, out, &op, 200, mock_op_egress_put(&op, &list));
	sbx_egress_list_free(&list); /* the rules replaced, or the new ones if refused */
}

void api_bandwidth_get(mreq *r, mresp *out, mock_tenant *t)
{
	mock_op op;
	char id[64];

	api_op_init(&op, r, t, id, sizeof(id));
	api_op_answer(r, out, &op, 200, mock_op_bandwidth(&op));
}

void api_bandwidth_recharge(mreq *r, mresp *out, mock_tenant *t)
{
	cJSON *b = api_body_object(r, out, true);
	int64_t add = 0;
	bool has = false;
	mock_op op;
	char id[64];

	if (b == NULL || !api_get_int(b, "add_bytes", 1, INT64_MAX / 4, &add, &has, out))
		return;
	if (!has) {
		resp_fail(out, 400, "add_bytes", "INVALID_REQUEST", "add_bytes is required (positive)");
		return;
	}
	api_op_init(&op, r, t, id, sizeof(id));
	api_op_answer(r, out, &op, 200, mock_op_bandwidth_recharge(&op, add));
}

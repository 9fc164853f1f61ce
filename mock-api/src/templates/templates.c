/* templates: a tenant's templates as operations (templates.h,
 * TEMPLATES.md). Each takes the model lock once and goes one way down:
 * the model keeps the template and renders its view (the only place that
 * hides the dockerfile), the create starts the build under that same
 * lock, the delete removes the layer after it. */
#define _GNU_SOURCE
#include "templates/templates.h"
#include "templates/templates_internal.h"

#include <pthread.h>
#include <stdio.h>

cJSON *mock_op_template_create(sbx_mock *mock, mock_tenant *t, const cJSON *body, mock_err *e)
{
	cJSON *tpl, *v = NULL;

	pthread_mutex_lock(&mock->model->lock);
	tpl = mock_template_create(mock->model, t, body, e);
	if (tpl != NULL) {
		/* answered pending: the build runs from here, on its own
		 * thread (one that cannot start ends failed, after this view) */
		v = mock_template_view(mock->model, tpl, true);
		mock_build_start(mock, t, tpl);
	}
	pthread_mutex_unlock(&mock->model->lock);
	return v;
}

cJSON *mock_op_template_get(sbx_mock *mock, mock_tenant *t, const char *id_or_name, bool dockerfile)
{
	cJSON *tpl, *v = NULL;

	pthread_mutex_lock(&mock->model->lock);
	tpl = mock_template_find(t, id_or_name);
	if (tpl != NULL)
		v = mock_template_view(mock->model, tpl, dockerfile);
	pthread_mutex_unlock(&mock->model->lock);
	return v;
}

cJSON *mock_op_template_list(sbx_mock *mock, mock_tenant *t)
{
	cJSON *all = cJSON_CreateArray();
	cJSON *tpl;

	pthread_mutex_lock(&mock->model->lock);
	cJSON_ArrayForEach(tpl, t->templates)
		cJSON_AddItemToArray(all, mock_template_view(mock->model, tpl, false));
	pthread_mutex_unlock(&mock->model->lock);
	return all;
}

int mock_op_template_delete(sbx_mock *mock, mock_tenant *t, const char *id_or_name, mock_err *e)
{
	char id[64];
	int rc;

	pthread_mutex_lock(&mock->model->lock);
	rc = mock_template_delete(mock->model, t, id_or_name, id, sizeof(id), e);
	pthread_mutex_unlock(&mock->model->lock);
	/* a build still running ends (it finds no template) and leaves
	 * its layer to no one: removed here, or by the build at its end */
	if (rc == 0)
		mock_build_forget(mock, id);
	return rc;
}

int mock_op_template_logs(sbx_mock *mock, mock_tenant *t, const char *id_or_name, mock_tpl_logs *q,
			  mock_err *e)
{
	cJSON *tpl;
	int rc = -1;

	pthread_mutex_lock(&mock->model->lock);
	tpl = mock_template_find(t, id_or_name);
	if (tpl == NULL)
		mock_err_set(e, 404, "NOT_FOUND", "error", "template not found");
	else if (q->attempt < 0)
		mock_err_set(e, 400, "INVALID_REQUEST", "attempt", "attempt must be a positive integer");
	else if (q->attempt > 1)
		mock_err_set(e, 404, "NOT_FOUND", "error", "no such build attempt");
	else
		rc = 0;
	/* the follower holds the id, not the name the request gave */
	if (rc == 0 && q->follow)
		q->stream = mock_build_follow(mock, t, cJSON_GetObjectItemCaseSensitive(tpl, "id")->valuestring);
	else if (rc == 0)
		mock_template_log_lines(tpl, 0, false, &q->text);
	pthread_mutex_unlock(&mock->model->lock);
	return rc;
}

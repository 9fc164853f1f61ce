/* settings: the mock's run-time settings in and out (see settings.c). */
#ifndef SBX_MOCK_SETTINGS_H
#define SBX_MOCK_SETTINGS_H

#include <cjson/cJSON.h>

#include "model/model.h"
#include "sbx/err.h"
#include "sbx/mock.h"

/* The settings a start configuration asks for; -1 with err when the timing
 * or the cap status is out of range. */
int mock_settings_from_config(const sbx_mock_config *cfg, mock_settings *set, sbx_err *err);
/* Applies a settings object (the model's settings and the exec heartbeat).
 * Validates everything first, then applies: all or nothing. Model lock
 * held. */
int mock_settings_apply(sbx_mock *mock, const cJSON *b, sbx_err *err);
/* 0 when mock_settings_apply would accept b, else -1 with the reason;
 * changes nothing and needs no lock (it reads only what is fixed at
 * start). A key that is not a setting is refused ("unknown setting"), a
 * read-only key of the view unless its value is the one the view shows. */
int mock_settings_check(const sbx_mock *mock, const cJSON *b, sbx_err *err);
/* The settings as GET /_mock/settings shows them. Model lock held. */
cJSON *mock_settings_view(sbx_mock *mock);

#endif

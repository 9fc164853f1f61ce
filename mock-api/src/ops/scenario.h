/* scenario: named fault-and-settings bundles (see scenario.c). */
#ifndef SBX_MOCK_SCENARIO_H
#define SBX_MOCK_SCENARIO_H

#include <cjson/cJSON.h>

#include "sbx/err.h"
#include "sbx/mock.h"

/* A scenario by name (looked up on the search path: --scenario-dir,
 * $SBX_SCENARIO_DIR, the source tree, the installed share dir) or by file
 * path, parsed; NULL with err saying where it looked. dir (when not NULL,
 * dircap bytes) gets the directory the file is in. */
cJSON *mock_scenario_load(const sbx_mock *mock, const char *name_or_file, char *dir, size_t dircap,
			  sbx_err *err);
/* Applies {name?, description?, settings?, rules:[...], internet_stubs:[...]}:
 * settings under the model lock (mock_op_settings_apply), then the stubs
 * and rules; the new rule ids go to ids. base_dir: where a stub's relative
 * body_file is (the scenario file's directory; NULL: the working
 * directory). */
int mock_scenario_apply(sbx_mock *mock, const cJSON *sc, const char *base_dir, cJSON *ids, sbx_err *err);

#endif

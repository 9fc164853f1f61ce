/* template_layer: a template's layer on disk (TEMPLATES.md), in
 * <work>/templates/<id>/layer: where it is, its removal, the copy that
 * seeds a sandbox on the template and its check after a durable restart
 * (those are templates.h's mock_op_template*). The build that makes it is
 * template_build.c's. */
#ifndef SBX_MOCK_TEMPLATE_LAYER_H
#define SBX_MOCK_TEMPLATE_LAYER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "ops/core.h"

/* <work>/templates/<id>: room for the work dir and an id */
#define TPL_DIR_MAX (PATH_MAX + 96)

/* <work>/templates/<id> into out. */
void mock_tpl_dir(const sbx_mock *mock, const char *id, char *out, size_t cap);
/* Runs argv (argv[0] a path) and waits; 0 when it exited 0, else -1 with why. */
int mock_tpl_run(char *const argv[], char *why, size_t cap);
/* mkdir -p dir, in the process; 0, or -1 with why. */
int mock_tpl_mkdir_p(const char *dir, char *why, size_t cap);
/* Copies builder g's upper layer (whiteouts and xattrs as they are) to
 * template id's directory, at most disk_mib (the storage its create
 * reserved); the layer's size in bytes, or -1 with why (a partial copy
 * removed). Kills what still runs in g: the layer holds still. */
double mock_tpl_layer_save(sbx_mock *mock, const char *id, mock_guest *g, unsigned disk_mib, char *why,
			   size_t cap);
/* Removes every template's layer: at a reset (always: the templates are
 * gone) and at stop (reset false: only when the mock is not durable). */
void mock_tpl_layers_drop(sbx_mock *mock, bool reset);

#endif

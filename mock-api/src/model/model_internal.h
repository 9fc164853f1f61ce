/* model_internal: what the model_*.c files share and nobody else may call —
 * the sandbox storage and its indexes, the shared validation and lookup
 * helpers. Outside mock-api/src/model/model*.c include model.h instead.
 *
 * Layering inside the model (no file calls one above it):
 *   model.c           tenants, catalog, clock, ids, indexes, settings
 *   model_network.c   model.c
 *   model_disk.c      model.c
 *   model_template.c  model.c
 *   model_sandbox.c   model.c, model_network.c
 *   model_persist.c   model.c, model_sandbox.c
 * Like model.h, every function here needs model->lock held. */
#ifndef SBX_MOCK_MODEL_INTERNAL_H
#define SBX_MOCK_MODEL_INTERNAL_H

#include "model/model.h"

/* ---- model.c ---- */

/* Frees a sandbox and what it owns; the caller has dropped every index
 * entry pointing at it. */
void model_sandbox_free(mock_sandbox *sb);
/* Appends sb to a growable array of sandbox pointers (doubling, from 64). */
bool model_sandbox_array_push(mock_sandbox ***arr, size_t *n, size_t *cap, mock_sandbox *sb);
/* Maps sb->id to sb, replacing an entry with the same id (which then cannot
 * fail: the slot exists). */
bool model_by_id_put(mock_model *m, mock_sandbox *sb);
/* Adds a new sandbox to sbx, live (unless destroyed) and by_id, or to none
 * of them. */
bool model_sandbox_add(mock_model *m, mock_sandbox *sb);
/* Drops destroyed sandboxes from the live index (they stay in sbx). */
void model_live_compact(mock_model *m);
/* Forgets each tenant's destroyed sandboxes past MOCK_DESTROYED_KEEP and
 * frees the graveyard's unheld ones; amortised (runs once enough more
 * sandboxes died since the last pass). After model_live_compact. */
void model_trim_destroyed(mock_model *m);

/* N of "host-local-N", 0 for any other name. */
unsigned model_host_number(const char *host_id);
bool model_rootfs_known(const char *name);

/* A 500 "out of memory" in *e. */
void model_err_oom(mock_err *e);
/* 0 when the tenant may spend, else -1 with a 402 in *e. */
int model_need_credit(const mock_model *m, const mock_tenant *t, mock_err *e);
/* The string member k of o, NULL when absent or not a string. */
const char *model_str(const cJSON *o, const char *k);
/* The first object in arr whose "id" or "name" is id_or_name. */
cJSON *model_find_by_id_or_name(cJSON *arr, const char *id_or_name);
/* A new tenant resource {"id": prefix + ULID, "name": name}; *created_ts
 * gets the creation time (RFC 3339) for the caller to place in its own key
 * order. NULL with a 500 in *e when out of memory. */
cJSON *model_resource_new(mock_model *m, const char *prefix, const char *name,
			  char created_ts[40], mock_err *e);

/* ---- model_network.c ---- */

/* Checks every {id} in nets, then makes sb a member of each. Nothing is
 * joined when one is refused. */
int model_network_join(mock_sandbox *sb, mock_tenant *t, const cJSON *nets, mock_err *e);
/* Drops sb from the members of every network it is in. */
void model_network_leave_all(mock_sandbox *sb);

/* ---- model_sandbox.c ---- */

/* Ends sb `destroyed` now and leaves its networks. */
void model_sandbox_set_destroyed(mock_model *m, mock_sandbox *sb);

#endif

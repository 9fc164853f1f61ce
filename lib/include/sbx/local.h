/* local: where sbx-harness's programs keep their files on this machine,
 * one rule each, shared by the programs that write a place and those that
 * read it (sbx-mock writes the runtime directory, sbxctl reads it; the
 * image store's rule is also mock-api/images/build-image's, in shell).
 * Computes paths only: never creates, reads or removes anything. */
#ifndef SBX_LOCAL_H
#define SBX_LOCAL_H

#include <stddef.h>
#include <sys/types.h>

#include "sbx/err.h"

/* The default rootfs image store: $SBX_IMAGE_STORE, else
 * /var/cache/sbx-harness/images as root, else
 * ${XDG_CACHE_HOME:-$HOME/.cache}/sbx-harness/images (mock-api/IMAGES.md).
 * -1 with err when it cannot be named (no HOME, or longer than cap). */
int sbx_local_image_store(char *buf, size_t cap, sbx_err *err);

/* The per-user runtime directory the running mocks announce themselves in
 * (one subdirectory per mock, named by its pid): $XDG_RUNTIME_DIR/sbx-harness
 * when XDG_RUNTIME_DIR is an absolute path, else
 * ${TMPDIR:-/tmp}/sbx-harness-<uid>. -1 with err when longer than cap. */
int sbx_local_runtime_dir(char *buf, size_t cap, sbx_err *err);

/* The start time of process pid (field 22 of /proc/PID/stat, clock ticks
 * since boot): with the pid it names one process, as a reused pid has a
 * later start. -1 when there is no such process (or no /proc). */
int sbx_local_proc_start(pid_t pid, unsigned long long *start);

#endif

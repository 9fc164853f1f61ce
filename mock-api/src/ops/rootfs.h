/* rootfs: which root a contained sandbox's cell is built on, by its rootfs
 * name (IMAGES.md): an image of the mock's (images/images.h) or the
 * host-skeleton root, and the views of it (GET /_mock/images, the
 * "rootfs" of GET /_mock/settings). Read-only once opened. */
#ifndef SBX_MOCK_ROOTFS_H
#define SBX_MOCK_ROOTFS_H

#include <cjson/cJSON.h>

#include "ops/core.h"

/* At start, contained guests only: the images of cfg (a store, NAME=DIR
 * pairs), the pool's image (the default rootfs's) and the note. Plain
 * guests: only the note. 0, or -1 with err set (a store or pair that
 * cannot be read). */
int mock_rootfs_open(sbx_mock *mock, const char *store, const char *const *pairs, size_t npairs,
		     sbx_err *err);
void mock_rootfs_close(sbx_mock *mock);

/* The image a sandbox of rootfs name gets, or NULL: the host skeleton. */
const struct mock_image *mock_rootfs_image(const sbx_mock *mock, const char *rootfs);

/* {"store", "images": [...], "backing": {name: root}, "note"} */
cJSON *mock_op_images_view(sbx_mock *mock);
/* {name: "image <dir>" | "host skeleton"} for every catalog name and
 * image name: GET /_mock/settings's "rootfs". */
cJSON *mock_rootfs_backing_view(const sbx_mock *mock);

#endif

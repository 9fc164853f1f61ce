/* images: the rootfs images sandboxes' roots are built on (IMAGES.md) —
 * which directory backs which rootfs name, and how a cell may use it. Read
 * once at start from a store (`--images DIR`, written by
 * mock-api/images/build-image) and `--image NAME=DIR` pairs; read-only
 * afterwards, so any thread may look an image up.
 *
 * Never hands a cell an image it could write or whose owners its user
 * namespace cannot map: as host root an image is idmapped for each cell
 * (its uid 0 = root inside); unprivileged, only a copy owned by the
 * mock's own uid is used, and any other is listed as unusable, with why. */
#ifndef SBX_MOCK_IMAGES_H
#define SBX_MOCK_IMAGES_H

#include "guest/guest.h"
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "sbx/err.h"

typedef struct mock_image {
	char name[64];         /* the rootfs name it serves (devbox:1) */
	mock_guest_root root;  /* the directory a cell's root is built on, and how */
	char source[PATH_MAX]; /* the store's image directory, or "--image" */
	bool usable;
	char note[PATH_MAX + 640]; /* how it is used, or why it is not */
} mock_image;

/* The root a cell of im is built on; NULL for NULL (the host skeleton). */
static inline const mock_guest_root *mock_image_root(const mock_image *im)
{
	return im != NULL ? &im->root : NULL;
}

typedef struct mock_images mock_images;

/* The images of store (NULL: none; its "index" names them) and of the
 * NAME=DIR pairs (which win over the store's). NULL + err: an unreadable
 * store, a malformed pair, a directory that is not one. An image found
 * but unusable here is listed with its note, not an error. */
mock_images *mock_images_open(const char *store, const char *const *pairs, size_t npairs,
			      sbx_err *err);
void mock_images_free(mock_images *im);

/* The usable image serving name, or NULL (the host-skeleton root). */
const mock_image *mock_images_find(const mock_images *im, const char *name);
size_t mock_images_count(const mock_images *im);
const mock_image *mock_images_at(const mock_images *im, size_t i);
/* The store's path, or "" when there is none. */
const char *mock_images_store(const mock_images *im);

#endif

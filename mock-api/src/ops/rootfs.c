/* rootfs: which root each rootfs name's guests get (rootfs.h). */
#include "ops/rootfs.h"

#include <stdio.h>
#include <string.h>

#include "images/images.h"

int mock_rootfs_open(sbx_mock *mock, const char *store, const char *const *pairs, size_t npairs,
		     sbx_err *err)
{
	size_t len = 0, usable = 0;
	char *note = mock->rootfs_note;
	const size_t cap = sizeof(mock->rootfs_note);

	if (mock->gmode != GUEST_CONTAINED) {
		snprintf(note, cap, "rootfs: plain guests run on the host's own filesystem%s",
			 store != NULL || npairs > 0 ? " (--images/--image unused)" : "");
		return 0;
	}
	if (store == NULL && npairs == 0) {
		snprintf(note, cap,
			 "rootfs: the host-skeleton root for every name (no --images or --image; "
			 "build devbox:1 with mock-api/images/build-image, see mock-api/IMAGES.md)");
		return 0;
	}
	mock->images = mock_images_open(store, pairs, npairs, err);
	if (mock->images == NULL)
		return -1;
	mock->pool_image = mock_images_find(mock->images, MOCK_ROOTFS_DEFAULT);
	len = (size_t)snprintf(note, cap, "rootfs:");
	for (size_t i = 0; i < mock_images_count(mock->images) && len < cap; i++) {
		const mock_image *im = mock_images_at(mock->images, i);

		usable += im->usable;
		len += (size_t)snprintf(note + len, cap - len, " %s = %s %s (%s);", im->name,
					im->usable ? "image" : "host skeleton, not image", im->root.dir,
					im->note);
	}
	if (len < cap)
		snprintf(note + len, cap - len, " every other name: the host-skeleton root%s",
			 usable == 0 ? " (no usable image)" : "");
	return 0;
}

void mock_rootfs_close(sbx_mock *mock)
{
	mock_images_free(mock->images);
	mock->images = NULL;
	mock->pool_image = NULL;
}

size_t sbx_mock_images_usable(const sbx_mock *mock)
{
	size_t n = 0;

	if (mock->gmode != GUEST_CONTAINED)
		return 0;
	for (size_t i = 0; i < mock_images_count(mock->images); i++)
		n += mock_images_at(mock->images, i)->usable ? 1 : 0;
	return n;
}

const struct mock_image *mock_rootfs_image(const sbx_mock *mock, const char *rootfs)
{
	return mock->gmode == GUEST_CONTAINED ? mock_images_find(mock->images, rootfs) : NULL;
}

static void add_backing(const sbx_mock *mock, cJSON *o, const char *name)
{
	const mock_image *im = mock_rootfs_image(mock, name);
	char what[PATH_MAX + 16];

	if (cJSON_GetObjectItemCaseSensitive(o, name) != NULL)
		return;
	if (mock->gmode != GUEST_CONTAINED)
		snprintf(what, sizeof(what), "host filesystem (plain guests)");
	else if (im != NULL)
		snprintf(what, sizeof(what), "image %s", im->root.dir);
	else
		snprintf(what, sizeof(what), "host skeleton");
	cJSON_AddStringToObject(o, name, what);
}

cJSON *mock_rootfs_backing_view(const sbx_mock *mock)
{
	cJSON *o = cJSON_CreateObject();

	for (size_t i = 0; i < mock_rootfs_count; i++)
		add_backing(mock, o, mock_rootfses[i].name);
	for (size_t i = 0; i < mock_images_count(mock->images); i++)
		add_backing(mock, o, mock_images_at(mock->images, i)->name);
	return o;
}

cJSON *mock_op_images_view(sbx_mock *mock)
{
	cJSON *d = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(d, "images");

	cJSON_AddStringToObject(d, "store", mock_images_store(mock->images));
	for (size_t i = 0; i < mock_images_count(mock->images); i++) {
		const mock_image *im = mock_images_at(mock->images, i);
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "name", im->name);
		cJSON_AddStringToObject(o, "dir", im->root.dir);
		cJSON_AddStringToObject(o, "source", im->source);
		cJSON_AddBoolToObject(o, "usable", im->usable);
		cJSON_AddStringToObject(o, "access",
					!im->usable ? "none" : im->root.idmapped ? "idmapped" : "owned copy");
		cJSON_AddStringToObject(o, "note", im->note);
		cJSON_AddItemToArray(arr, o);
	}
	cJSON_AddItemToObject(d, "backing", mock_rootfs_backing_view(mock));
	cJSON_AddStringToObject(d, "note", mock->rootfs_note);
	return d;
}

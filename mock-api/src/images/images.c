/* images: the rootfs images of a mock (images.h, IMAGES.md). */
#define _GNU_SOURCE
#include "images/images.h"
#include "guest/cell.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define IMAGES_MAX 32

struct mock_images {
	char store[PATH_MAX];
	int userns; /* as host root: a user namespace with the cells' map, or -1 */
	size_t n;
	mock_image img[IMAGES_MAX];
};

static int write_map(pid_t pid, const char *file, sbx_err *err)
{
	char path[64], map[64];
	int fd, n;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	n = snprintf(map, sizeof(map), "0 %u %u\n", MOCK_CELL_UID_BASE, MOCK_CELL_ID_RANGE);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, map, (size_t)n) != n) {
		sbx_err_set(err, "images: write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* A user namespace whose map is the cells' (0 -> the uid base range): the
 * idmapping of the images. It lives on as long as its fd, without a
 * process: a child makes it, waits for its maps and exits. */
static int idmap_userns(sbx_err *err)
{
	int made[2], done[2], fd = -1;
	char path[64], c = 0;
	pid_t pid;

	if (pipe2(made, O_CLOEXEC) != 0)
		goto fail;
	if (pipe2(done, O_CLOEXEC) != 0) {
		close(made[0]);
		close(made[1]);
		goto fail;
	}
	pid = fork();
	if (pid == 0) {
		/* async-signal-safe calls only: the mock may have threads;
		 * done's write end closed, so the mock's close is our EOF */
		close(made[0]);
		close(done[1]);
		if (unshare(CLONE_NEWUSER) == 0 && write(made[1], "u", 1) == 1)
			(void)!read(done[0], &c, 1);
		_exit(0);
	}
	close(made[1]);
	close(done[0]);
	if (pid > 0 && read(made[0], &c, 1) == 1 && write_map(pid, "uid_map", err) == 0 &&
	    write_map(pid, "gid_map", err) == 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			sbx_err_set(err, "images: open %s: %s", path, strerror(errno));
	} else if (err->msg[0] == '\0') {
		sbx_err_set(err, "images: a user namespace for the idmapping: %s", strerror(errno));
	}
	close(done[1]);
	close(made[0]);
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	return fd;
fail:
	sbx_err_set(err, "images: pipe: %s", strerror(errno));
	return -1;
}

/* The host's uid of this process: its own, or, for an unprivileged
 * sbx-mock that entered a user namespace of its own (root in it, for
 * enforced egress: INTERNET.md), the one id its map holds. The owned
 * copies are named by it (build-image --owner UID): looking for owned-0
 * there found none, and every image was unusable. */
static unsigned host_uid(void)
{
	char line[128] = "";
	char *p = line, *end = NULL;
	unsigned long v[3] = {1, 0, 0};
	FILE *f = geteuid() == 0 && !mock_cell_host_root() ? fopen("/proc/self/uid_map", "re") : NULL;

	if (f != NULL && fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	if (f != NULL)
		fclose(f);
	for (int i = 0; i < 3 && line[0] != '\0'; i++, p = end) {
		errno = 0;
		v[i] = strtoul(p, &end, 10);
		if (end == p || errno != 0)
			return (unsigned)geteuid();
	}
	/* "0 OUTSIDE 1": root here is OUTSIDE on the host */
	return v[0] == 0 && v[2] == 1 ? (unsigned)v[1] : (unsigned)geteuid();
}

/* The two ways a user gets the copy an unprivileged mock needs (IMAGES.md,
 * "For a user who is not root"): said where it is missing, so the start
 * line tells that user what to run, not only that the image is unusable. */
#define OWNED_HOW                                                                          \
	"make it: sudo mock-api/images/build-image --owner %u NAME (a copy of root's build), " \
	"or mock-api/images/build-image NAME as uid %u (unprivileged, needs uidmap and "       \
	"subordinate ids)"

/* Which owned copy an unprivileged mock found: one root made from its own
 * build (the store's rootfs beside it) or one this user built itself. */
static void owned_note(mock_image *img, unsigned uid)
{
	char rootfs[PATH_MAX + 8];
	struct stat st;

	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", img->source);
	if (strcmp(img->source, "--image") == 0)
		snprintf(img->note, sizeof(img->note), "bound read-only (a copy owned by uid %u)", uid);
	else if (stat(rootfs, &st) == 0)
		snprintf(img->note, sizeof(img->note),
			 "bound read-only (owned-%u: root's build copied for uid %u, "
			 "build-image --owner %u)",
			 uid, uid, uid);
	else
		snprintf(img->note, sizeof(img->note),
			 "bound read-only (owned-%u: built by uid %u itself, unprivileged)", uid, uid);
}

/* Decides whether a cell of this mock can use img->root.dir, and says how. */
static void check_usable(mock_images *im, mock_image *img)
{
	struct stat st;
	sbx_err terr = {{0}};
	int fd;
	bool owned = im->userns < 0 && strcmp(img->source, "--image") != 0;

	img->usable = false;
	img->root.userns = -1;
	if (stat(img->root.dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		if (owned && errno == ENOENT)
			snprintf(img->note, sizeof(img->note),
				 "not usable: no copy owned by uid %u in the store (%s); " OWNED_HOW,
				 host_uid(), img->root.dir, host_uid(), host_uid());
		else
			snprintf(img->note, sizeof(img->note), "not usable: %s: %s", img->root.dir,
				 errno != 0 ? strerror(errno) : "not a directory");
		return;
	}
	if (im->userns >= 0) {
		fd = mock_cell_image_tree(img->root.dir, im->userns, &terr);
		if (fd < 0) {
			snprintf(img->note, sizeof(img->note), "not usable: %s", terr.msg);
			return;
		}
		close(fd);
		img->usable = img->root.idmapped = true;
		img->root.userns = im->userns;
		snprintf(img->note, sizeof(img->note),
			 "idmapped read-only for each cell (its uid 0 is root inside)");
		return;
	}
	/* st_uid as this process sees it: its own euid when the copy is the
	 * host uid's (host_uid) */
	if (st.st_uid != geteuid()) {
		snprintf(img->note, sizeof(img->note),
			 "not usable: an unprivileged cell maps only uid %u, and %s is not owned by it "
			 "(" OWNED_HOW ")",
			 host_uid(), img->root.dir, host_uid(), host_uid());
		return;
	}
	img->usable = true;
	owned_note(img, host_uid());
}

/* Adds or replaces name's entry. */
static mock_image *entry(mock_images *im, const char *name, sbx_err *err)
{
	for (size_t i = 0; i < im->n; i++) {
		if (strcmp(im->img[i].name, name) == 0)
			return &im->img[i];
	}
	if (im->n == IMAGES_MAX) {
		sbx_err_set(err, "images: more than %d names", IMAGES_MAX);
		return NULL;
	}
	if (name[0] == '\0' || strlen(name) >= sizeof(im->img[0].name)) {
		sbx_err_set(err, "images: image name \"%.80s\" is empty or longer than %zu bytes", name,
			    sizeof(im->img[0].name) - 1);
		return NULL;
	}
	snprintf(im->img[im->n].name, sizeof(im->img[0].name), "%s", name);
	return &im->img[im->n++];
}

static bool hash_ok(const char *h)
{
	size_t n = strspn(h, "0123456789abcdef");

	return n > 0 && n <= 64 && h[n] == '\0';
}

/* <store>/index: "name<TAB>hash" lines (build-image writes it). */
static int read_store(mock_images *im, const char *store, sbx_err *err)
{
	char path[PATH_MAX + 8], line[512];
	unsigned lineno = 0;
	FILE *f;
	int rc = 0;

	snprintf(im->store, sizeof(im->store), "%s", store);
	snprintf(path, sizeof(path), "%s/index", store);
	f = fopen(path, "re");
	if (f == NULL) {
		sbx_err_set(err, "--images %s: %s: %s (build one: mock-api/images/build-image devbox:1)",
			    store, path, strerror(errno));
		return -1;
	}
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		char *tab = strchr(line, '\t'), *nl = strchr(line, '\n');
		mock_image *img;

		lineno++;
		if (nl != NULL)
			*nl = '\0';
		else if (!feof(f)) {
			/* read on, its tail would be a line of its own: "x<TAB>hash"
			 * past byte 511 of a long name named an image */
			sbx_err_set(err, "--images %s: index line %u: longer than %zu bytes", store, lineno,
				    sizeof(line) - 2);
			rc = -1;
			break;
		}
		if (tab == NULL || !hash_ok(tab + 1)) {
			sbx_err_set(err, "--images %s: index line %u: expected NAME<TAB>HASH", store,
				    lineno);
			rc = -1;
			break;
		}
		*tab = '\0';
		img = entry(im, line, err);
		if (img == NULL) {
			rc = -1;
			break;
		}
		snprintf(img->source, sizeof(img->source), "%s/%s", store, tab + 1);
		/* a cut path would name another directory: refused */
		if ((size_t)(im->userns >= 0 ? snprintf(img->root.dir, sizeof(img->root.dir), "%s/%s/rootfs", store, tab + 1)
					     : snprintf(img->root.dir, sizeof(img->root.dir), "%s/%s/owned-%u", store, tab + 1,
							host_uid())) >= sizeof(img->root.dir)) {
			sbx_err_set(err, "--images %.200s...: index line %u: the image's path is longer than %zu bytes",
				    store, lineno, sizeof(img->root.dir) - 1);
			rc = -1;
			break;
		}
	}
	fclose(f);
	return rc;
}

static int add_pair(mock_images *im, const char *pair, sbx_err *err)
{
	const char *eq = strchr(pair, '=');
	char name[80];
	mock_image *img;
	struct stat st;

	if (eq == NULL || eq == pair || eq[1] == '\0' || (size_t)(eq - pair) >= sizeof(name)) {
		sbx_err_set(err, "--image \"%.80s\": expected NAME=DIR (devbox:1=/path/to/rootfs)", pair);
		return -1;
	}
	snprintf(name, sizeof(name), "%.*s", (int)(eq - pair), pair);
	errno = 0; /* a directory that is not one says so, not an old error */
	if (stat(eq + 1, &st) != 0 || !S_ISDIR(st.st_mode)) {
		sbx_err_set(err, "--image %s: %s is not a directory%s%s", name, eq + 1,
			    errno != 0 ? ": " : "", errno != 0 ? strerror(errno) : "");
		return -1;
	}
	img = entry(im, name, err);
	if (img == NULL)
		return -1;
	snprintf(img->root.dir, sizeof(img->root.dir), "%s", eq + 1);
	snprintf(img->source, sizeof(img->source), "--image");
	return 0;
}

mock_images *mock_images_open(const char *store, const char *const *pairs, size_t npairs,
			      sbx_err *err)
{
	mock_images *im = calloc(1, sizeof(*im));

	if (im == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	im->userns = -1;
	if ((store != NULL || npairs > 0) && mock_cell_host_root()) {
		im->userns = idmap_userns(err);
		if (im->userns < 0)
			goto fail;
	}
	if (store != NULL && read_store(im, store, err) != 0)
		goto fail;
	for (size_t i = 0; i < npairs; i++) {
		if (add_pair(im, pairs[i], err) != 0)
			goto fail;
	}
	for (size_t i = 0; i < im->n; i++) {
		errno = 0;
		check_usable(im, &im->img[i]);
	}
	return im;
fail:
	mock_images_free(im);
	return NULL;
}

void mock_images_free(mock_images *im)
{
	if (im == NULL)
		return;
	if (im->userns >= 0)
		close(im->userns);
	free(im);
}

const mock_image *mock_images_find(const mock_images *im, const char *name)
{
	for (size_t i = 0; im != NULL && name != NULL && i < im->n; i++) {
		if (strcmp(im->img[i].name, name) == 0)
			return im->img[i].usable ? &im->img[i] : NULL;
	}
	return NULL;
}

size_t mock_images_count(const mock_images *im)
{
	return im != NULL ? im->n : 0;
}

const mock_image *mock_images_at(const mock_images *im, size_t i)
{
	return im != NULL && i < im->n ? &im->img[i] : NULL;
}

const char *mock_images_store(const mock_images *im)
{
	return im != NULL ? im->store : "";
}

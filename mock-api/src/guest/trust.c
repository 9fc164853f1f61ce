/* trust: the guests' system trust bundle (mock-api/INTERNET.md, "What a
 * guest trusts") — the root's own bundle plus the simulated internet's CA,
 * written once per mock and root (the host skeleton, or each image) in the
 * mock's work dir, and bound read-only into every cell (cell/trust.c):
 * for the host skeleton a file bound over the host's bundle (the host's
 * /etc/ssl is read-only in a cell anyway); for an image a directory tree
 * holding etc/ssl/certs/ca-certificates.crt, an overlay layer between the
 * cell's own files and the image, so that a guest may still replace its
 * own copy (update-ca-certificates, a package's trigger) as on the image
 * alone, copied up into its own disk, and no other guest sees it.
 * Every cell wrote its own ~200 KB copy before: 0.5-1 ms of each pool-off
 * create (bench/RESULTS.md, issue 36).
 *
 * A file, not a memfd: a cell can bind only what its own mount namespace
 * reaches by path (its start opens it, as it opens its workspace). The
 * file is 0444 and replaced by rename only, never rewritten, so a cell
 * that bound it sees the same bytes for its life. */
#define _GNU_SOURCE
#include "guest/trust.h"

#include "guest/cell.h"
#include "sbx/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BUNDLE_REL "etc/ssl/certs/ca-certificates.crt"
#define BUNDLE_MAX (16u << 20) /* a root's bundle past this is not a bundle */
#define TRUST_MAX 64           /* bundles of the process: mocks x roots */

typedef struct trust_entry {
	char *work_dir, *root, *pem; /* root "": the host skeleton */
	char path[PATH_MAX];         /* the file, or (an image's) the layer */
} trust_entry;

/* A layer's directories, outermost first, below its top. */
static const char *const layer_dirs[] = {"/etc", "/etc/ssl", "/etc/ssl/certs"};
#define LAYER_FILE "/etc/ssl/certs/ca-certificates.crt"

static pthread_mutex_t trust_lock = PTHREAD_MUTEX_INITIALIZER;
static trust_entry trust_tab[TRUST_MAX];
static size_t trust_n;
static unsigned trust_seq;

/* The root's bundle, opened inside the root: an image's absolute symlink
 * stays in the image (the host's file is not the image's). -1 when none. */
static int open_bundle(const char *root)
{
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	int dfd, fd;

	if (root[0] == '\0')
		return open("/" BUNDLE_REL, O_RDONLY | O_CLOEXEC);
	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	fd = (int)syscall(SYS_openat2, dfd, BUNDLE_REL, &how, sizeof(how));
	close(dfd);
	return fd;
}

/* Copies in (may be -1: nothing) to out, then "\n" and pem: 0 or -1. */
static int fill(int out, int in, const char *pem)
{
	char buf[65536];
	size_t total = 0;
	ssize_t r = 0;

	while (in >= 0 && (r = read(in, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (total += (size_t)r) > BUNDLE_MAX || sbx_write_all(out, buf, (size_t)r) != 0)
			return -1;
	}
	return sbx_write_all(out, "\n", 1) != 0 || sbx_write_all(out, pem, strlen(pem)) != 0 ? -1 : 0;
}

/* Root inside owns a layer's tree, so that a guest's copy-up (which keeps
 * the owner) can make it its own: as root the mock maps it to the uid
 * base; unprivileged, its own uid is root inside already. */
static int own(const char *path, uid_t owner)
{
	return owner == (uid_t)-1 || chown(path, owner, owner) == 0 ? 0 : -1;
}

/* Makes top's directories (an image's layer; top "" for a file) and
 * returns the file's path in file. */
static int make_tree(const char *top, bool layer, uid_t owner, char *file, size_t cap)
{
	char dir[PATH_MAX + 32];

	if (!layer) {
		snprintf(file, cap, "%s", top);
		return 0;
	}
	if (mkdir(top, 0755) != 0 || own(top, owner) != 0)
		return -1;
	for (size_t i = 0; i < sizeof(layer_dirs) / sizeof(layer_dirs[0]); i++) {
		snprintf(dir, sizeof(dir), "%s%s", top, layer_dirs[i]);
		if (mkdir(dir, 0755) != 0 || own(dir, owner) != 0)
			return -1;
	}
	snprintf(file, cap, "%s" LAYER_FILE, top);
	return 0;
}

/* Removes what make_tree made (and the file), as far as it exists. */
static void remove_tree(const char *top, bool layer)
{
	char dir[PATH_MAX + 32];

	if (!layer) {
		unlink(top);
		return;
	}
	snprintf(dir, sizeof(dir), "%s" LAYER_FILE, top);
	unlink(dir);
	for (size_t i = sizeof(layer_dirs) / sizeof(layer_dirs[0]); i-- > 0;) {
		snprintf(dir, sizeof(dir), "%s%s", top, layer_dirs[i]);
		rmdir(dir);
	}
	rmdir(top);
}

/* Writes e's file (or layer): under a temporary name, then renamed into
 * place. */
static int write_bundle(trust_entry *e, sbx_err *err)
{
	char tmp[PATH_MAX + 8], file[PATH_MAX + 64];
	bool layer = e->root[0] != '\0';
	uid_t owner = layer ? mock_cell_owner() : (uid_t)-1;
	int in, out = -1, rc = -1;

	if ((size_t)snprintf(e->path, sizeof(e->path), "%s/trust-%u%s", e->work_dir, trust_seq++,
			     layer ? "" : ".crt") >= sizeof(e->path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s.new", e->path) >= sizeof(tmp)) {
		sbx_err_set(err, "trust bundle: work dir path too long");
		return -1;
	}
	/* a mock killed in a kept --work-dir left its own (same names) */
	remove_tree(tmp, layer);
	remove_tree(e->path, layer);
	if (make_tree(tmp, layer, owner, file, sizeof(file)) == 0)
		out = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (out >= 0) {
		in = open_bundle(e->root);
		rc = fill(out, in, e->pem);
		if (in >= 0)
			close(in);
		if (close(out) != 0 || own(file, owner) != 0)
			rc = -1;
	}
	if (rc != 0 || rename(tmp, e->path) != 0) {
		sbx_err_set(err, "trust bundle: write %s (the bundle of %s plus the CA): %s", file,
			    layer ? e->root : "the host", strerror(errno != 0 ? errno : EIO));
		remove_tree(tmp, layer);
		return -1;
	}
	return 0;
}

static void entry_free(trust_entry *e)
{
	free(e->work_dir);
	free(e->root);
	free(e->pem);
	memset(e, 0, sizeof(*e));
}

int mock_trust_bundle(const char *work_dir, const char *image_dir, const char *pem, char *path, size_t cap,
		      sbx_err *err)
{
	const char *root = image_dir != NULL ? image_dir : "";
	trust_entry *e = NULL;
	int rc = 0;

	pthread_mutex_lock(&trust_lock);
	for (size_t i = 0; i < trust_n && e == NULL; i++) {
		if (strcmp(trust_tab[i].work_dir, work_dir) == 0 && strcmp(trust_tab[i].root, root) == 0 &&
		    strcmp(trust_tab[i].pem, pem) == 0)
			e = &trust_tab[i];
	}
	if (e == NULL && trust_n == TRUST_MAX) {
		sbx_err_set(err, "trust bundle: more than %d mocks and roots in one process", TRUST_MAX);
		rc = -1;
	} else if (e == NULL) {
		e = &trust_tab[trust_n];
		e->work_dir = strdup(work_dir);
		e->root = strdup(root);
		e->pem = strdup(pem);
		if (e->work_dir == NULL || e->root == NULL || e->pem == NULL) {
			sbx_err_set(err, "out of memory");
			rc = -1;
		} else {
			rc = write_bundle(e, err);
		}
		if (rc != 0)
			entry_free(e);
		else
			trust_n++;
	}
	if (rc == 0)
		snprintf(path, cap, "%s", e->path);
	pthread_mutex_unlock(&trust_lock);
	return rc;
}

void mock_trust_forget(const char *work_dir)
{
	pthread_mutex_lock(&trust_lock);
	for (size_t i = 0; i < trust_n;) {
		if (strcmp(trust_tab[i].work_dir, work_dir) != 0) {
			i++;
			continue;
		}
		/* a cell still running keeps what it bound */
		remove_tree(trust_tab[i].path, trust_tab[i].root[0] != '\0');
		entry_free(&trust_tab[i]);
		trust_tab[i] = trust_tab[--trust_n];
		memset(&trust_tab[trust_n], 0, sizeof(trust_tab[trust_n]));
	}
	pthread_mutex_unlock(&trust_lock);
}

/* trust: the guest's system trust bundle, the root's own plus the CA
 * certificate the mock hands the cell (CELL_TRUST_ENV: the simulated
 * internet's, mock-api/INTERNET.md "TLS"), so curl, Python's ssl, git and
 * Node (NODE_EXTRA_CA_CERTS, set by the mock's exec) in a guest verify
 * the internet's leaves as they would a real site's.
 *
 * The mock writes the bundle once per root (its guest/trust.c). On the
 * host skeleton the cell binds it read-only over
 * /etc/ssl/certs/ca-certificates.crt: the host's bundle inside the host's
 * read-only /etc/ssl, or a mount point the lower layer holds (no /etc/ssl
 * on the host); a guest's write, rename or removal there fails (EROFS,
 * EBUSY), and it has no capability or system call to undo a mount. Above
 * an image the bundle comes in a directory the cell mounts read-only as an
 * overlay layer between its own files and the image's: the guest's changes
 * are copied up into its own disk, as any change of an image's file is.
 * Either way what every other guest reads stays the same. The certificate alone
 * goes to CELL_TRUST_CA_FILE. The CA's key never leaves the mock. */
#define _GNU_SOURCE
#include "cell.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define PEM_HEAD "-----BEGIN CERTIFICATE-----"

static int trust_fail(char *err, size_t cap, const char *what, const char *path)
{
	snprintf(err, cap, "trust bundle: %s %s: %s", what, path, strerror(errno));
	return -1;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

int cell_trust_layer(const char *at, char *err, size_t cap)
{
	const char *kind = getenv(CELL_TRUST_BUNDLE_ENV);
	char src[32];
	int rc = 1;

	if (getenv(CELL_TRUST_ENV) == NULL || kind == NULL || strcmp(kind, "layer") != 0)
		return 0;
	snprintf(src, sizeof(src), "/proc/self/fd/%d", CELL_TRUST_FD);
	if (mkdir(at, 0755) != 0 && errno != EEXIST)
		rc = trust_fail(err, cap, "mkdir", at);
	else if (mount(src, at, NULL, MS_BIND, NULL) != 0)
		rc = trust_fail(err, cap, "bind the layer at", at);
	else if (mount(NULL, at, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		rc = trust_fail(err, cap, "make read-only", at);
	close(CELL_TRUST_FD); /* no guest process inherits the handle */
	return rc;
}

int cell_trust_write(const char *skel, bool layer, char *err, size_t cap)
{
	const char *pem = getenv(CELL_TRUST_ENV);
	char dir[PATH_MAX], dst[PATH_MAX];
	int fd, rc;

	if (pem == NULL)
		return 0;
	if (strncmp(pem, PEM_HEAD, strlen(PEM_HEAD)) != 0 || strlen(pem) > CELL_TRUST_MAX) {
		snprintf(err, cap, "trust bundle: " CELL_TRUST_ENV " is not one PEM certificate of at most %d bytes",
			 CELL_TRUST_MAX);
		return -1;
	}
	snprintf(dst, sizeof(dst), "%s" CELL_TRUST_CA_FILE, skel);
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return trust_fail(err, cap, "create", dst);
	rc = write_all(fd, pem, strlen(pem));
	close(fd);
	if (rc != 0)
		return trust_fail(err, cap, "write", dst);
	if (layer) /* the bundle is the layer's, below this one */
		return 0;
	/* /etc/ssl is there already when the host has one (a mount point) */
	snprintf(dir, sizeof(dir), "%s/etc/ssl", skel);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return trust_fail(err, cap, "mkdir", dir);
	snprintf(dir, sizeof(dir), "%s/etc/ssl/certs", skel);
	if (mkdir(dir, 0755) != 0)
		return trust_fail(err, cap, "mkdir", dir);
	/* the bundle's mount point, seen where nothing above covers it */
	snprintf(dst, sizeof(dst), "%s" BUNDLE, skel);
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return trust_fail(err, cap, "create", dst);
	close(fd);
	return 0;
}

int cell_trust_bind(const char *newroot, char *err, size_t cap)
{
	const char *kind = getenv(CELL_TRUST_BUNDLE_ENV);
	char src[32], dst[PATH_MAX];
	struct stat st;
	bool given = getenv(CELL_TRUST_ENV) != NULL && kind != NULL && strcmp(kind, "file") == 0;
	int rc = 0;

	unsetenv(CELL_TRUST_ENV); /* nothing after this needs them */
	unsetenv(CELL_TRUST_BUNDLE_ENV);
	if (!given)
		return 0;
	snprintf(src, sizeof(src), "/proc/self/fd/%d", CELL_TRUST_FD);
	snprintf(dst, sizeof(dst), "%s" BUNDLE, newroot);
	/* the host's /etc/ssl without a bundle has no file to cover (the bind
	 * is read-only): the guest trusts what the host does */
	if (stat(dst, &st) == 0 && S_ISREG(st.st_mode)) {
		if (mount(src, dst, NULL, MS_BIND, NULL) != 0)
			rc = trust_fail(err, cap, "bind", dst);
		else if (mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			       NULL) != 0)
			rc = trust_fail(err, cap, "make read-only", dst);
	}
	close(CELL_TRUST_FD); /* no guest process inherits the handle */
	return rc;
}

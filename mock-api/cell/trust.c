/* trust: the guest's system trust bundle, the host's plus the CA
 * certificate the mock hands the cell (CELL_TRUST_ENV: the simulated
 * internet's, mock-api/INTERNET.md "TLS"), so curl, Python's ssl, git and
 * Node (NODE_EXTRA_CA_CERTS, set by the mock's exec) in a guest verify
 * the internet's leaves as they would a real site's.
 *
 * The host's /etc/ssl stays a read-only bind; only its one bundle file is
 * covered, by a read-only bind of a copy the cell writes in its lower
 * layer under /etc/ssl's mount point (hidden there by that bind). The
 * certificate is public; the CA's key never leaves the mock. */
#define _GNU_SOURCE
#include "cell.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* The bundle at src (when there is one) copied to out, then pem. */
static int copy_bundle(int out, const char *src, const char *pem, const char *dst, char *err,
		       size_t cap)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC);
	ssize_t r = 0;

	while (in >= 0 && (r = read(in, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || write_all(out, buf, (size_t)r) != 0)
			break;
	}
	if (in >= 0)
		close(in);
	if (r != 0)
		return trust_fail(err, cap, "copy the root's bundle to", dst);
	if (write_all(out, "\n", 1) != 0 || write_all(out, pem, strlen(pem)) != 0)
		return trust_fail(err, cap, "write", dst);
	return 0;
}

int cell_trust_write(const char *skel, const char *from, char *err, size_t cap)
{
	const char *pem = getenv(CELL_TRUST_ENV);
	char dir[PATH_MAX], dst[PATH_MAX], src[PATH_MAX];
	int fd, rc;

	if (pem == NULL)
		return 0;
	if (strncmp(pem, PEM_HEAD, strlen(PEM_HEAD)) != 0 || strlen(pem) > CELL_TRUST_MAX) {
		snprintf(err, cap, "trust bundle: " CELL_TRUST_ENV " is not one PEM certificate of at most %d bytes",
			 CELL_TRUST_MAX);
		return -1;
	}
	/* /etc/ssl is there already when the host has one (a mount point) */
	snprintf(dir, sizeof(dir), "%s/etc/ssl", skel);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return trust_fail(err, cap, "mkdir", dir);
	snprintf(dir, sizeof(dir), "%s/etc/ssl/certs", skel);
	if (mkdir(dir, 0755) != 0)
		return trust_fail(err, cap, "mkdir", dir);
	snprintf(dst, sizeof(dst), "%s" CELL_TRUST_CA_FILE, skel);
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return trust_fail(err, cap, "create", dst);
	rc = write_all(fd, pem, strlen(pem));
	close(fd);
	if (rc != 0)
		return trust_fail(err, cap, "write", dst);
	snprintf(dst, sizeof(dst), "%s" BUNDLE, skel);
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return trust_fail(err, cap, "create", dst);
	snprintf(src, sizeof(src), "%s" BUNDLE, from);
	rc = copy_bundle(fd, src, pem, dst, err, cap);
	close(fd);
	return rc;
}

int cell_trust_bind(const char *skel, const char *newroot, char *err, size_t cap)
{
	char src[PATH_MAX], dst[PATH_MAX];
	struct stat st;

	if (getenv(CELL_TRUST_ENV) == NULL)
		return 0;
	unsetenv(CELL_TRUST_ENV); /* nothing after this needs it */
	snprintf(src, sizeof(src), "%s" BUNDLE, skel);
	snprintf(dst, sizeof(dst), "%s" BUNDLE, newroot);
	/* a host without /etc/ssl: the copy in the lower layer is the guest's
	 * own; one with /etc/ssl but no bundle has no file to cover (the
	 * bind is read-only): the guest trusts what the host does */
	if (stat(dst, &st) != 0 || !S_ISREG(st.st_mode) || lstat("/etc/ssl", &st) != 0)
		return 0;
	if (mount(src, dst, NULL, MS_BIND, NULL) != 0)
		return trust_fail(err, cap, "bind", dst);
	if (mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		return trust_fail(err, cap, "make read-only", dst);
	return 0;
}

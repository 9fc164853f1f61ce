/* runtime_env: the files that let one shell line use this mock
 * (runtime_env.h). */
#define _GNU_SOURCE
#include "server/runtime_env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/x509.h>

#include "server/java_truststore.h"
#include "sbx/local.h"
#include "sbx/strbuf.h"
#include "sbx/sys.h"

/* The files of a mock's directory, the env file last: a reader that finds
 * it finds the others complete. */
static const char *const files[] = {"env", "ca.pem", "ca-bundle.pem", "truststore.p12"};

__attribute__((format(printf, 2, 3))) static int rt_fail(mock_runtime *rt, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rt->note, sizeof(rt->note), fmt, ap);
	va_end(ap);
	return -1;
}

/* The per-user directory: made 0700, or found a directory of this user's
 * that nobody else can write into (in a shared /tmp another user could have
 * made it first, to read or swap what the mock writes). */
static int user_dir(mock_runtime *rt, const char *base)
{
	struct stat st;

	if (mkdir(base, 0700) != 0 && errno != EEXIST)
		return rt_fail(rt, "%s: %s", base, strerror(errno));
	if (lstat(base, &st) != 0)
		return rt_fail(rt, "%s: %s", base, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
		return rt_fail(rt, "%s: not a directory of uid %u closed to others (mode 0700); "
				   "remove it or set XDG_RUNTIME_DIR", base, (unsigned)geteuid());
	return 0;
}

static void remove_files(const char *dir)
{
	char path[PATH_MAX + 32];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s.tmp", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* Writes dir/name whole (through name.tmp, renamed: a reader never sees
 * half of it), mode 0600. */
static int write_file(mock_runtime *rt, const char *name, const char *a, size_t alen, const char *b)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
	int fd;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", rt->dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return rt_fail(rt, "%s: %s", tmp, strerror(errno));
	ok = sbx_write_all(fd, a, alen) == 0 && (b == NULL || sbx_write_all(fd, b, strlen(b)) == 0);
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return rt_fail(rt, "%s: %s", path, strerror(errno));
	}
	return 0;
}

/* ca-bundle.pem: OpenSSL's default CA file (the system's bundle, what a
 * client trusts when nothing is set; not $SSL_CERT_FILE, which may name an
 * older mock's bundle) followed by the mock's CA, so a client given the
 * bundle still verifies public names when the machine is online; and
 * truststore.p12, the same CAs for Java (java_truststore.h). */
static int write_trust(mock_runtime *rt, const char *ca)
{
	sbx_strbuf sys = SBX_STRBUF_INIT, p12 = SBX_STRBUF_INIT;
	sbx_err err = {{0}};
	char buf[8192];
	FILE *f = fopen(X509_get_default_cert_file(), "re");
	size_t n;
	int rc;

	while (f != NULL && sys.len < MOCK_RUNTIME_BUNDLE_MAX) {
		n = fread(buf, 1, sizeof(buf) < MOCK_RUNTIME_BUNDLE_MAX - sys.len ? sizeof(buf)
			  : MOCK_RUNTIME_BUNDLE_MAX - sys.len, f);
		if (n == 0)
			break;
		sbx_strbuf_append(&sys, buf, n);
	}
	if (f != NULL)
		fclose(f);
	if (sys.len > 0 && sbx_strbuf_str(&sys)[sys.len - 1] != '\n')
		sbx_strbuf_puts(&sys, "\n");
	rc = write_file(rt, "ca-bundle.pem", sbx_strbuf_str(&sys), sys.len, ca);
	if (rc == 0 && java_truststore_der(ca, sbx_strbuf_str(&sys), sys.len, &p12, &err) != 0)
		rc = rt_fail(rt, "%s", err.msg);
	if (rc == 0)
		rc = write_file(rt, "truststore.p12", sbx_strbuf_str(&p12), p12.len, NULL);
	sbx_strbuf_free(&p12);
	sbx_strbuf_free(&sys);
	return rc;
}

/* A value of the env file: one line, so no newline or other control byte
 * (a path with one is refused, not written half). */
static bool one_line(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	}
	return true;
}

static int write_env(mock_runtime *rt, const sbx_mock *mock, bool any_key, const char *images)
{
	sbx_strbuf env = SBX_STRBUF_INIT;
	unsigned long long start = 0;
	int rc;

	sbx_local_proc_start(getpid(), &start);
	sbx_strbuf_printf(&env, "# sbx-mock's runtime file: `sbxctl mock env` prints it as export lines "
				"(mock-api/README.md, \"One line\")\npid=%ld\nstart=%llu\nurl=%s\nadmin_token=%s\n"
				"any_key=%s\nimages=%s\n", (long)getpid(), start, sbx_mock_url(mock),
			  sbx_mock_admin_token(mock), any_key ? "yes" : "no", images != NULL ? images : "");
	if (sbx_mock_ingress_url(mock) != NULL)
		sbx_strbuf_printf(&env, "ingress=%s\n", sbx_mock_ingress_url(mock));
	if (sbx_mock_ca_pem(mock) != NULL)
		sbx_strbuf_printf(&env, "ca=%s/ca.pem\nca_bundle=%s/ca-bundle.pem\njava_truststore=%s/truststore.p12\n",
				  rt->dir, rt->dir, rt->dir);
	rc = one_line(images != NULL ? images : "") ? write_file(rt, "env", sbx_strbuf_str(&env), env.len, NULL)
		: rt_fail(rt, "the image store's path has a control character");
	sbx_strbuf_free(&env);
	return rc;
}

int mock_runtime_publish(mock_runtime *rt, const sbx_mock *mock, bool any_key, const char *images)
{
	char base[PATH_MAX - 32];
	const char *ca = sbx_mock_ca_pem(mock);
	sbx_err err = {{0}};

	rt->dir[0] = rt->note[0] = '\0';
	if (sbx_local_runtime_dir(base, sizeof(base), &err) != 0)
		return rt_fail(rt, "%s", err.msg);
	if (!one_line(base))
		return rt_fail(rt, "%s: a control character in the path (a line of the env file)", base);
	if (user_dir(rt, base) != 0)
		return -1;
	snprintf(rt->dir, sizeof(rt->dir), "%s/%ld", base, (long)getpid());
	remove_files(rt->dir); /* a dead mock's of the same pid */
	if (mkdir(rt->dir, 0700) != 0) {
		rt_fail(rt, "%s: %s", rt->dir, strerror(errno));
		rt->dir[0] = '\0';
		return -1;
	}
	if ((ca != NULL && (write_file(rt, "ca.pem", ca, strlen(ca), NULL) != 0 || write_trust(rt, ca) != 0)) ||
	    write_env(rt, mock, any_key, images) != 0) {
		mock_runtime_remove(rt);
		return -1;
	}
	return 0;
}

void mock_runtime_remove(mock_runtime *rt)
{
	if (rt->dir[0] == '\0')
		return;
	remove_files(rt->dir);
	rt->dir[0] = '\0';
}

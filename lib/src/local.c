/* local: the per-machine places of sbx-harness's programs (sbx/local.h). */
#include "sbx/local.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An environment variable only when it is set to an absolute path: a
 * relative or empty XDG_* value is to be ignored (XDG Base Directory). */
static const char *abs_env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] == '/' ? v : NULL;
}

static int fit(char *buf, size_t cap, int n, const char *what, sbx_err *err)
{
	if (n < 0 || (size_t)n >= cap) {
		sbx_err_set(err, "%s: the path is longer than %zu bytes", what, cap - 1);
		return -1;
	}
	return 0;
}

int sbx_local_image_store(char *buf, size_t cap, sbx_err *err)
{
	const char *store = getenv("SBX_IMAGE_STORE");
	const char *cache = getenv("XDG_CACHE_HOME"); /* as build-image's ${XDG_CACHE_HOME:-...} */
	const char *home = abs_env("HOME");

	if (store != NULL && store[0] != '\0')
		return fit(buf, cap, snprintf(buf, cap, "%s", store), "SBX_IMAGE_STORE", err);
	if (geteuid() == 0)
		return fit(buf, cap, snprintf(buf, cap, "/var/cache/sbx-harness/images"), "image store", err);
	if (cache != NULL && cache[0] != '\0')
		return fit(buf, cap, snprintf(buf, cap, "%s/sbx-harness/images", cache), "XDG_CACHE_HOME", err);
	if (home == NULL) {
		sbx_err_set(err, "no default image store: neither SBX_IMAGE_STORE, XDG_CACHE_HOME nor HOME is set");
		return -1;
	}
	return fit(buf, cap, snprintf(buf, cap, "%s/.cache/sbx-harness/images", home), "HOME", err);
}

int sbx_local_runtime_dir(char *buf, size_t cap, sbx_err *err)
{
	const char *run = abs_env("XDG_RUNTIME_DIR");
	const char *tmp = abs_env("TMPDIR");

	if (run != NULL)
		return fit(buf, cap, snprintf(buf, cap, "%s/sbx-harness", run), "XDG_RUNTIME_DIR", err);
	return fit(buf, cap, snprintf(buf, cap, "%s/sbx-harness-%u", tmp != NULL ? tmp : "/tmp",
				      (unsigned)geteuid()), "TMPDIR", err);
}

int sbx_local_proc_start(pid_t pid, unsigned long long *start)
{
	char path[64], buf[1024], *p, *end = NULL;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name (field 2) may hold spaces and ')': count the
	 * fields after its last ')'; starttime is the 20th of them */
	p = strrchr(buf, ')');
	for (int field = 0; p != NULL && field < 20; field++)
		p = strchr(p + 1, ' ');
	if (p == NULL)
		return -1;
	errno = 0;
	*start = strtoull(p + 1, &end, 10);
	return errno != 0 || end == p + 1 ? -1 : 0;
}

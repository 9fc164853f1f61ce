/* python: which Python interpreter runs the Python adapters
 * (--python-backend, --python-component) and the driver command line that
 * starts one.
 *
 * The interpreter is named, never guessed silently: --python PATH, else the
 * first `python3` on PATH, resolved to the file that will run and printed in
 * the report, so a run on a machine with several Pythons says which one it
 * checked. Only looks at the file system (PATH lookup); starts nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conform.h"

static bool executable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The first executable `name` in $PATH (empty entries mean "."), or NULL. */
static char *on_path(const char *name)
{
	const char *path = getenv("PATH");
	const char *p;
	char buf[PATH_MAX];

	if (path == NULL || *path == '\0')
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;;) {
		const char *end = strchr(p, ':');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		int n = len == 0 ? snprintf(buf, sizeof(buf), "./%s", name)
				 : snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, p, name);

		if (n > 0 && (size_t)n < sizeof(buf) && executable_file(buf))
			return strdup(buf);
		if (end == NULL)
			return NULL;
		p = end + 1;
	}
}

char *cf_python_resolve(const char *want, sbx_err *err)
{
	char *found;

	if (want == NULL || *want == '\0') {
		found = on_path("python3");
		if (found == NULL)
			sbx_err_set(err, "no python3 on PATH for the Python adapter; install Python 3 or pass "
				    "--python PATH");
		return found;
	}
	if (strchr(want, '/') == NULL) {
		found = on_path(want);
		if (found == NULL)
			sbx_err_set(err, "--python %s: no such program on PATH", want);
		return found;
	}
	if (!executable_file(want)) {
		sbx_err_set(err, "--python %s: %s", want,
			    access(want, F_OK) != 0 ? strerror(errno) : "not an executable file");
		return NULL;
	}
	return strdup(want);
}

char *cf_shell_quote(const char *s)
{
	sbx_strbuf b = SBX_STRBUF_INIT;

	sbx_strbuf_puts(&b, "'");
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			sbx_strbuf_puts(&b, "'\\''");
		else
			sbx_strbuf_append(&b, s, 1);
	}
	sbx_strbuf_puts(&b, "'");
	return sbx_strbuf_detach(&b, NULL);
}

char *cf_python_driver_cmd(const char *python, const char *adapters_dir, const char *script, const char *const *args)
{
	sbx_strbuf b = SBX_STRBUF_INIT;
	char *q;
	size_t i;

	q = cf_shell_quote(python);
	sbx_strbuf_puts(&b, q);
	free(q);
	sbx_strbuf_puts(&b, " ");
	{
		sbx_strbuf s = SBX_STRBUF_INIT;

		sbx_strbuf_printf(&s, "%s/%s", adapters_dir, script);
		q = cf_shell_quote(sbx_strbuf_str(&s));
		sbx_strbuf_free(&s);
	}
	sbx_strbuf_puts(&b, q);
	free(q);
	for (i = 0; args[i] != NULL; i++) {
		q = cf_shell_quote(args[i]);
		sbx_strbuf_printf(&b, " %s", q);
		free(q);
	}
	return sbx_strbuf_detach(&b, NULL);
}

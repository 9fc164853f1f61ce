/* cmd_mock_env: `sbxctl mock env`, the one line of onboarding
 * (mock-api/README.md, "One line"): finds the newest sbx-mock running for
 * this user through the env files the mocks write in the runtime directory
 * (sbx_local_runtime_dir, one subdirectory per mock, named by its pid) and
 * prints export lines for a POSIX shell: the SDKs' two variables, the admin
 * token, and the mock's CA for each client that reads its own variable.
 * Never touches the network; removes the directories of mocks that died
 * without their clean stop. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "sbx/local.h"
#include "sbx/strbuf.h"

const ctl_opt ctl_opts_mock_env[] = {
	{"pid", "PID", false, "the mock with this process id (default: the newest running)"},
	{NULL, NULL, false, NULL},
};

/* One mock's env file, read (runtime_env.c writes it). */
typedef struct mock_env {
	long pid;
	unsigned long long start;
	char url[256], token[256], any_key[8], images[4096], ca[4096], bundle[4096], jks[4096], dir[4096];
} mock_env;

/* line's value into dst when line is "key=..."; false when it does not
 * fit (an env file this sbxctl cannot hold is not used, not cut short). */
static bool field(char *dst, size_t cap, const char *line, const char *key, size_t klen)
{
	if (strncmp(line, key, klen) != 0 || line[klen] != '=')
		return true;
	return (size_t)snprintf(dst, cap, "%s", line + klen + 1) < cap;
}

/* 0 when dir/env is a complete env file of its pid. */
static int read_env(const char *dir, mock_env *e)
{
	char path[4200], line[4200], num[32] = "", start[32] = "";
	bool ok = true;
	FILE *f;

	memset(e, 0, sizeof(*e));
	if ((size_t)snprintf(e->dir, sizeof(e->dir), "%s", dir) >= sizeof(e->dir) ||
	    (size_t)snprintf(path, sizeof(path), "%s/env", dir) >= sizeof(path))
		return -1;
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
#define F(dst, key) (ok = field(dst, sizeof(dst), line, key, sizeof(key) - 1) && ok)
		F(num, "pid");
		F(start, "start");
		F(e->url, "url");
		F(e->token, "admin_token");
		F(e->any_key, "any_key");
		F(e->images, "images");
		F(e->ca, "ca");
		F(e->bundle, "ca_bundle");
		F(e->jks, "java_truststore");
#undef F
	}
	fclose(f);
	e->pid = strtol(num, NULL, 10);
	e->start = strtoull(start, NULL, 10);
	return ok && e->pid > 0 && e->url[0] != '\0' && e->token[0] != '\0' ? 0 : -1;
}

/* Whether the env file's mock still runs: its pid alive with the start
 * time it wrote (a pid reused by another process has a later start). */
static bool alive(const mock_env *e)
{
	unsigned long long start = 0;

	return sbx_local_proc_start((pid_t)e->pid, &start) == 0 && start == e->start;
}

/* A dead mock's directory: its files (runtime_env.c's names), then it. */
static void remove_stale(const char *dir)
{
	static const char *const names[] = {"env", "ca.pem", "ca-bundle.pem", "truststore.p12", "env.tmp",
					    "ca.pem.tmp", "ca-bundle.pem.tmp", "truststore.p12.tmp"};
	char path[4200];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]) < sizeof(path))
			unlink(path);
	}
	rmdir(dir);
}

/* The env of dir/name when it is a running mock's that the options pick;
 * cleans a dead one's. */
static bool candidate(const char *base, const char *name, long want_pid, const char *want_url, mock_env *e)
{
	char dir[4200];
	char *end = NULL;
	long pid = strtol(name, &end, 10);

	if (pid <= 0 || *end != '\0')
		return false;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", base, name) >= sizeof(dir))
		return false;
	if (read_env(dir, e) != 0 || e->pid != pid) {
		/* no env yet: starting, or dead before it wrote one */
		if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
			remove_stale(dir);
		return false;
	}
	if (!alive(e)) {
		remove_stale(dir);
		return false;
	}
	return (want_pid == 0 || e->pid == want_pid) && (want_url == NULL || strcmp(e->url, want_url) == 0);
}

/* The value single-quoted for a POSIX shell: a ' inside becomes '\''. */
static void put_quoted(FILE *f, const char *v)
{
	fputc('\'', f);
	for (; *v != '\0'; v++) {
		if (*v == '\'')
			fputs("'\\''", f);
		else
			fputc(*v, f);
	}
	fputc('\'', f);
}

static void put_export(FILE *f, const char *name, const char *v)
{
	fprintf(f, "export %s=", name);
	put_quoted(f, v);
	fputc('\n', f);
}

/* The JVM's options: the user's JAVA_TOOL_OPTIONS without an earlier
 * truststore (an older mock's, or the user's own, which the mock's
 * replaces), then the mock's truststore (the system's CAs and the mock's:
 * runtime_env.c). The JVM splits the variable at white space, so a path
 * with any (or a quote) is not offered. */
static void put_java(FILE *f, const char *jks)
{
	static const char *const ours[] = {"-Djavax.net.ssl.trustStore=", "-Djavax.net.ssl.trustStoreType=",
					   "-Djavax.net.ssl.trustStorePassword="};
	const char *old = getenv("JAVA_TOOL_OPTIONS");
	sbx_strbuf v = SBX_STRBUF_INIT;
	const char *p = old != NULL ? old : "";
	size_t n;

	if (jks[0] == '\0')
		return;
	if (strpbrk(jks, " \t\"'\\") != NULL) {
		fputs("# Java: the truststore's path has white space or a quote, which JAVA_TOOL_OPTIONS "
		      "cannot hold: not set\n", f);
		return;
	}
	while (*(p += strspn(p, " \t")) != '\0') {
		bool drop = false;

		n = strcspn(p, " \t");
		for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
			drop = drop || strncmp(p, ours[i], strlen(ours[i])) == 0;
		if (!drop)
			sbx_strbuf_printf(&v, "%.*s ", (int)n, p);
		p += n;
	}
	sbx_strbuf_printf(&v, "-Djavax.net.ssl.trustStore=%s -Djavax.net.ssl.trustStoreType=PKCS12", jks);
	put_export(f, "JAVA_TOOL_OPTIONS", sbx_strbuf_str(&v));
	sbx_strbuf_free(&v);
}

static void print_env(ctl_ctx *ctx, const mock_env *e)
{
	FILE *f = ctx->out;

	fprintf(f, "# sbx-mock pid %ld, %s (%s/env)\n", e->pid, e->url, e->dir);
	put_export(f, "CREATEOS_SANDBOX_BASE_URL", e->url);
	if (strcmp(e->any_key, "yes") == 0) {
		/* any key works: the user's own is kept (a tenant is a key) */
		fputs("export CREATEOS_SANDBOX_API_KEY=\"${CREATEOS_SANDBOX_API_KEY:-sbx-mock-key}\"\n", f);
	} else {
		fputs("# this mock takes only its known keys (--api-key, --keys-file): "
		      "CREATEOS_SANDBOX_API_KEY is left as it is\n", f);
		fprintf(ctx->err, "sbxctl mock env: this mock takes only the keys it was given (--api-key, "
				  "--keys-file); set CREATEOS_SANDBOX_API_KEY to one of them%s\n",
			getenv("CREATEOS_SANDBOX_API_KEY") == NULL ? " (it is not set now)" : "");
	}
	put_export(f, "SBX_MOCK_ADMIN_TOKEN", e->token);
	if (e->ca[0] == '\0')
		return; /* no CA: the ingress is off and egress is not enforced */
	put_export(f, "NODE_EXTRA_CA_CERTS", e->ca);  /* added to Node's own roots */
	put_export(f, "SSL_CERT_FILE", e->bundle);    /* OpenSSL: Python ssl, urllib, httpx */
	put_export(f, "REQUESTS_CA_BUNDLE", e->bundle);
	put_export(f, "CURL_CA_BUNDLE", e->bundle);
	put_export(f, "GIT_SSL_CAINFO", e->bundle);
	put_java(f, e->jks);
}

int ctl_cmd_mock_env(ctl_ctx *ctx)
{
	const char *pid_arg = ctl_args_get(&ctx->args, "pid");
	const char *url = ctl_args_get(&ctx->args, "url");
	char base[4096];
	long want_pid = 0;
	char *end = NULL;
	sbx_err err = {""};
	mock_env best, e;
	bool found = false;
	DIR *d;
	struct dirent *de;

	if (pid_arg != NULL) {
		want_pid = strtol(pid_arg, &end, 10);
		if (want_pid <= 0 || *end != '\0')
			return ctl_usage_error(ctx, "--pid: \"%s\" is not a process id", pid_arg);
	}
	if (sbx_local_runtime_dir(base, sizeof(base), &err) != 0)
		return ctl_fail(ctx, "%s", err.msg);
	d = opendir(base);
	if (d == NULL && errno != ENOENT)
		return ctl_fail(ctx, "%s: %s", base, strerror(errno));
	while (d != NULL && (de = readdir(d)) != NULL) {
		if (!candidate(base, de->d_name, want_pid, url, &e))
			continue;
		if (!found || e.start > best.start || (e.start == best.start && e.pid > best.pid))
			best = e;
		found = true;
	}
	if (d != NULL)
		closedir(d);
	if (!found)
		return ctl_fail(ctx, "no running sbx-mock%s%s%s%s found in %s (start one: sbx-mock &; it "
				     "announces itself there)", want_pid != 0 ? " with pid " : "",
				want_pid != 0 ? pid_arg : "", url != NULL ? " at " : "", url != NULL ? url : "", base);
	print_env(ctx, &best);
	return CTL_EXIT_OK;
}

/* The containment battery (issue 13, mock-api/CONTAINMENT.md): a real mock
 * over loopback (embedded on port 0; the last two tests run the sbx-mock
 * binary, argv[1]), sandboxes created through the API, and attacks run as
 * guest code through POST /v1/sandboxes/{id}/exec. Each test is one attack,
 * named for what it tries, and asserts it fails.
 *
 * Runs as root (ctest) and as an unprivileged user (ci/test stage
 * contain-unprivileged). Tests that need what the host cannot give the mock
 * (cgroup limits, unprivileged) are skipped with the reason printed, never
 * passed silently.
 *
 * Environment:
 *   SBX_CONTAIN_GUEST_MODE  guest mode of the mocks under test (default: the
 *                           mock's default). `plain` shows the battery fail.
 *   SBX_CONTAIN_FORCE_LIMITS=1  run the cgroup tests even when the mock says
 *                           it has no cgroups (to see them fail).
 *   SBX_CONTAIN_SELF_PORT   the self-signal port inside a cell (default 1029).
 *   SBX_CONTAIN_WARM_POOL   the mocks' --warm-pool (default: the mock's
 *                           default); 0 runs the battery without a pool
 *                           (the tests that need one skip). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "contain_round2.h"
#include "contain_fs.h"
#include "contain_pool.h"
#include "contain_util.h"

#ifndef CONTAIN_SRC_DIR
#define CONTAIN_SRC_DIR "/nonexistent-src"
#endif
#ifndef CONTAIN_BIN_DIR
#define CONTAIN_BIN_DIR "/nonexistent-build"
#endif

static const char *g_bin;      /* the sbx-mock binary */
static const char *g_mode;     /* SBX_CONTAIN_GUEST_MODE or NULL */
static char g_work[512];       /* the group mock's work dir */
static char g_hostpaths[8192]; /* host paths a guest must not see, shell-quoted */
static const char *g_pool;     /* SBX_CONTAIN_WARM_POOL or NULL */

const char *contain_work_dir(void)
{
	return g_work;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void add_hostpath(const char *p)
{
	size_t len = strlen(g_hostpaths);
	struct stat st;

	if (strchr(p, '\'') != NULL || lstat(p, &st) != 0)
		return; /* only what exists on the host counts */
	snprintf(g_hostpaths + len, sizeof(g_hostpaths) - len, " '%s'", p);
}

/* A directory's first entry (a path that exists on the host under it), so
 * that an empty directory of the same name inside a sandbox is no finding. */
static void add_hostchild(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d != NULL && (de = readdir(d)) != NULL) {
		char p[1024];

		if (de->d_name[0] == '.' &&
		    (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		add_hostpath(p);
		break;
	}
	if (d != NULL)
		closedir(d);
}

/* Host paths that exist here and that no guest may reach: this checkout and
 * its build, the mock's work dir, host users' homes, state directories. */
static void collect_hostpaths(void)
{
	static const char *const files[] = {CONTAIN_SRC_DIR "/mock-api/tests/test_contain.c",
					    CONTAIN_SRC_DIR "/.git",
					    CONTAIN_BIN_DIR "/CMakeCache.txt",
					    "/etc/shadow",
					    "/etc/gshadow",
					    "/etc/sudoers",
					    "/root/.ssh",
					    "/root/.bashrc",
					    "/root/.profile",
					    "/var/lib/dpkg/status"};
	static const char *const dirs[] = {"/home", "/work",  "/var/log", "/opt",  "/srv",
					   "/mnt",  "/media", "/run",	  "/root", "/var/lib"};
	const char *home = getenv("HOME");

	g_hostpaths[0] = '\0';
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		add_hostpath(files[i]);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		add_hostchild(dirs[i]);
	add_hostpath(g_work);
	if (home != NULL && strcmp(home, "/") != 0)
		add_hostchild(home);
}

/* ---- fixture ---- */

static void config(sbx_mock_config *cfg)
{
	mf_config_init(cfg);
	cfg->admin_token = "admintok";
	cfg->self_listen = "127.0.0.1:0";
	cfg->work_dir = g_work;
	if (g_mode != NULL)
		cfg->guest_mode = g_mode;
	if (g_pool != NULL)
		cfg->warm_pool = (unsigned)strtoul(g_pool, NULL, 10);
}

static int group_setup(void **state)
{
	sbx_mock_config cfg;
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(g_work, sizeof(g_work), "%s/sbx-contain-XXXXXX",
		 tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	if (mkdtemp(g_work) == NULL) {
		fprintf(stderr, "mkdtemp %s: %s\n", g_work, strerror(errno));
		return -1;
	}
	collect_hostpaths();
	config(&cfg);
	if (mf_setup(&cfg) != 0) {
		cx_rmtree(g_work);
		return -1;
	}
	print_message("contain: guest mode %s, euid %d, work dir %s\n", sbx_mock_guest_mode(g_mock),
		      (int)geteuid(), g_work);
	return 0;
}

/* Per-test setup: frees what a failed test left, then POST /_mock/reset. */
static int setup(void **state)
{
	cx_gc();
	return mf_reset(state);
}

static int group_teardown(void **state)
{
	char cg[64], found[4096];
	int rc = 0;

	cx_gc();
	mf_group_teardown(state);
	/* the embedded mock's cgroups go with it (nothing_left_behind checks
	 * the binary; this checks sbx_mock_stop) */
	snprintf(cg, sizeof(cg), "sbx-mock-%d", (int)getpid());
	if (cx_cgroup_find(cg, found, sizeof(found))) {
		fprintf(stderr, "contain: cgroup left behind by sbx_mock_stop: %s\n", found);
		cx_cgroup_remove(cg);
		rc = -1;
	}
	if (cx_mount_find(g_work, found, sizeof(found))) {
		fprintf(stderr, "contain: mount left behind by sbx_mock_stop: %s", found);
		rc = -1;
	}
	cx_rmtree(g_work);
	return rc;
}

/* A sandbox of key with body (default shape when NULL). */
static void mk(const char *key, const char *body, char *id, size_t cap)
{
	create(key, body != NULL ? body : "{\"shape\":\"s-1vcpu-1gb\"}", id, cap);
}

/* Runs script in id and asserts the exec answered 200. */
static void sh_ok(const char *key, const char *id, const char *script, cx_res *x)
{
	cx_sh(key, id, script, 30000, x);
	if (x->status != 200)
		fail_msg("exec %s: HTTP %ld: %s", script, x->status, x->body);
}

/* Starts `sleep MARK` in the background of id and returns its host pid. */
static pid_t bg_sleep(const char *key, const char *id, const char *mark)
{
	char script[256];
	cx_res x;
	pid_t pid = -1;

	snprintf(script, sizeof(script), "sleep %s >/dev/null 2>&1 &", mark);
	sh_ok(key, id, script, &x);
	cx_free(&x);
	pid = cx_wait_find(mark, CX_START_MS);
	if (pid < 0)
		fail_msg("the background sleep %s is not found on the host", mark);
	return pid;
}

/* The mock's report of its cgroups: true when it has memory/pids/freezer
 * limits; else why not in why. Reads GET /_mock/settings. */
static bool have_cgroups(char *why, size_t cap)
{
	th_resp r;
	const cJSON *d, *cg;
	bool on = false;

	if (getenv("SBX_CONTAIN_FORCE_LIMITS") != NULL &&
	    strcmp(getenv("SBX_CONTAIN_FORCE_LIMITS"), "1") == 0)
		return true;
	if (strcmp(sbx_mock_guest_mode(g_mock), "plain") == 0) {
		snprintf(why, cap,
			 "guest mode plain has no cgroups (SBX_CONTAIN_FORCE_LIMITS=1 runs it "
			 "anyway)");
		return false;
	}
	th_admin(U, TOK, "GET", "/_mock/settings", NULL, &r);
	d = cJSON_GetObjectItemCaseSensitive(r.json, "data");
	cg = cJSON_GetObjectItemCaseSensitive(d, "cgroups");
	if (cg == NULL)
		cg = cJSON_GetObjectItemCaseSensitive(d, "cgroup");
	if (cJSON_IsString(cg)) {
		/* "v1 (memory, pids, freezer)", or "none (why)" / "cgroups: none (why)" */
		on = cg->valuestring[0] != '\0' && strncmp(cg->valuestring, "none", 4) != 0 &&
		     strstr(cg->valuestring, ": none") == NULL;
		snprintf(why, cap, "the mock says: %s", cg->valuestring);
	} else if (cJSON_IsObject(cg)) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(cg, "version");
		const cJSON *note = cJSON_GetObjectItemCaseSensitive(cg, "note");

		on = cJSON_IsString(v) && strcmp(v->valuestring, "none") != 0;
		snprintf(why, cap, "the mock reports cgroups: %s%s%s",
			 cJSON_IsString(v) ? v->valuestring : "?",
			 cJSON_IsString(note) ? " — " : "",
			 cJSON_IsString(note) ? note->valuestring : "");
	} else if (cJSON_IsBool(cg)) {
		on = cJSON_IsTrue(cg);
		snprintf(why, cap, "the mock reports cgroups: %s", on ? "on" : "off");
	} else {
		/* No report: the design gives cgroups to a root mock only. */
		on = geteuid() == 0;
		snprintf(why, cap,
			 "the mock does not report cgroups (GET /_mock/settings); running %s",
			 on ? "as root" : "unprivileged, so no delegated cgroups are assumed");
	}
	th_resp_free(&r);
	return on;
}

#define SKIP_WITHOUT_CGROUPS()                                                                     \
	do {                                                                                       \
		char why_[512];                                                                    \
		if (!have_cgroups(why_, sizeof(why_))) {                                           \
			print_message("SKIP %s: needs cgroup limits: %s\n", __func__, why_);       \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

/* ---- identity ---- */

static void runs_as_root_inside_but_no_host_capability(void **state)
{
	char id[64], mark[32], re[32], script[512], host_user[256], guest_user[256];
	unsigned long in = 1, out = 1, count = 0;
	cx_res x;
	pid_t pid;
	long uid;

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	cx_marker(mark, sizeof(mark), re, sizeof(re));
	snprintf(script, sizeof(script),
		 "id -u; head -n 1 /proc/self/uid_map; grep CapEff /proc/self/status; sleep %s "
		 ">/dev/null 2>&1 &",
		 mark);
	sh_ok("ka", id, script, &x);
	print_message("inside: %s", x.out);
	if (strncmp(x.out, "0\n", 2) != 0)
		fail_msg("expected uid 0 inside the sandbox, got: %s", x.out);
	{
		const char *p = x.out + 2; /* after "0\n", checked above */
		char *end = NULL;

		in = strtoul(p, &end, 10);
		if (end != p)
			out = strtoul(p = end, &end, 10);
		if (end != p)
			count = strtoul(p = end, &end, 10);
		if (end == p || count == 0)
			fail_msg("no uid_map line: %s", x.out);
	}
	if (in == out)
		fail_msg("identity uid map inside the guest (%lu %lu %lu): guest root is host root",
			 in, out, count);
	cx_free(&x);
	/* the host's view of a guest process */
	pid = cx_wait_find(mark, CX_START_MS);
	assert_true(pid > 0);
	uid = cx_host_uid(pid);
	print_message("host view of guest pid %d: uid %ld\n", (int)pid, uid);
	if (geteuid() == 0 && uid == 0)
		fail_msg("guest root is uid 0 on the host");
	assert_true(cx_ns(0, "user", host_user, sizeof(host_user)));
	assert_true(cx_ns(pid, "user", guest_user, sizeof(guest_user)));
	if (strcmp(host_user, guest_user) == 0)
		fail_msg("the guest is in the host's user namespace (%s): its capabilities are "
			 "host capabilities",
			 guest_user);
}

/* ---- file system ---- */

static void cannot_read_etc_shadow(void **state)
{
	char id[64];
	cx_res x;

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	sh_ok("ka", id,
	      "for f in /etc/shadow /etc/gshadow /proc/1/root/etc/shadow /workspace/../etc/shadow "
	      "../../../../../etc/shadow /proc/self/root/etc/shadow; do "
	      "  [ -e \"$f\" ] && echo \"EXISTS $f\"; cat \"$f\" 2>/dev/null | head -n 1; done; "
	      "for l in /proc/[0-9]*/root /proc/[0-9]*/cwd; do [ -e \"$l/etc/shadow\" ] && echo "
	      "\"EXISTS $l/etc/shadow\"; done; true",
	      &x);
	if (strstr(x.out, "EXISTS") != NULL || strstr(x.out, "root:") != NULL)
		fail_msg("the guest reaches a shadow file:\n%s", x.out);
	cx_free(&x);
}

static void cannot_see_host_homes_or_checkout(void **state)
{
	char id[64], script[10240];
	cx_res x;

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	print_message("host paths probed:%s\n", g_hostpaths);
	if (g_hostpaths[0] == '\0')
		fail_msg("no host path to probe: the test proves nothing");
	if (strstr(g_hostpaths, CONTAIN_SRC_DIR) == NULL) /* e.g. a 0750 home, unprivileged */
		print_message("note: the checkout %s is not visible to this user; not probed\n",
			      CONTAIN_SRC_DIR);
	snprintf(script, sizeof(script),
		 "for p in %s; do [ -e \"$p\" ] && echo \"VISIBLE $p\"; done; "
		 "ls -A /root 2>/dev/null | sed 's/^/ROOT-HOME /'; "
		 "ls -A /home 2>/dev/null | sed 's/^/HOME /'; true",
		 g_hostpaths);
	sh_ok("ka", id, script, &x);
	if (x.out[0] != '\0')
		fail_msg("the guest sees host paths:\n%s", x.out);
	cx_free(&x);
}

/* The host's kernel command line and boot id are none of a guest's
 * business (issue 27): both read empty in a guest. */
static void host_facts_masked(void **state)
{
	char id[64], host_boot[64] = "";
	FILE *fp = fopen("/proc/sys/kernel/random/boot_id", "r");
	cx_res x;

	(void)state;
	if (fp != NULL) {
		if (fgets(host_boot, sizeof(host_boot), fp) == NULL)
			host_boot[0] = '\0';
		fclose(fp);
	}
	host_boot[strcspn(host_boot, "\n")] = '\0';
	mk("ka", NULL, id, sizeof(id));
	sh_ok("ka", id,
	      "echo \"cmdline[$(cat /proc/cmdline)] boot[$(cat /proc/sys/kernel/random/boot_id)]\"",
	      &x);
	print_message("guest: %s", x.out);
	if (strcmp(x.out, "cmdline[] boot[]\n") != 0)
		fail_msg("the guest reads the host's kernel command line or boot id: %s", x.out);
	if (host_boot[0] != '\0' && strstr(x.out, host_boot) != NULL)
		fail_msg("the guest sees the host's boot id %s", host_boot);
	cx_free(&x);
}

static void proc_1_root_is_own_root(void **state)
{
	char id[64], script[10240];
	cx_res x;

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	/* /proc/1/root and every other process's root, cwd and open directory.
	 * PID 1 is not dumpable (issue 27): its root is then closed to guests,
	 * which is as good as being the sandbox's own. */
	snprintf(script, sizeof(script),
		 "if [ -d /proc/1/root/workspace ]; then echo OWN-ROOT; "
		 "elif ! ls /proc/1/root/ >/dev/null 2>&1; then echo OWN-ROOT closed; fi; "
		 "for l in /proc/1/root /proc/[0-9]*/root /proc/[0-9]*/cwd /proc/[0-9]*/fd/*; do "
		 "  [ -d \"$l\" ] || continue; "
		 "  for p in %s; do [ -e \"$l$p\" ] && echo \"HOST $l$p\"; done; "
		 "done | head -n 20; true",
		 g_hostpaths);
	sh_ok("ka", id, script, &x);
	if (strstr(x.out, "HOST ") != NULL)
		fail_msg("/proc leads to the host's file system:\n%s", x.out);
	if (strstr(x.out, "OWN-ROOT") == NULL)
		fail_msg("/proc/1/root is not the sandbox's root (no /workspace there):\n%s",
			 x.out);
	cx_free(&x);
}

static void cannot_read_other_sandbox_files(void **state)
{
	char a[64], b[64], script[4096], path[4096], secret[64];
	cx_res x;
	th_resp r;

	(void)state;
	mk("ka", NULL, a, sizeof(a));
	mk("kb", NULL, b, sizeof(b));
	snprintf(secret, sizeof(secret), "SECRET-%d-%ld", (int)getpid(), (long)time(NULL));
	/* cwd is the workspace in every guest mode */
	snprintf(script, sizeof(script),
		 "echo %s > secret; echo %s > \"${TMPDIR:-/tmp}/secret\"; echo %s > "
		 "/dev/shm/sbx-contain-secret-%d; "
		 "sleep 900 >/dev/null 2>&1 &",
		 secret, secret, secret, (int)getpid());
	sh_ok("ka", a, script, &x);
	cx_free(&x);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/secret", a);
	th_json(U, "ka", "GET", path, NULL, &r);
	if (r.status != 200 || strstr(sbx_strbuf_str(&r.body), secret) == NULL)
		fail_msg("A's secret is not in A's workspace (the attack's premise): HTTP %ld",
			 r.status);
	th_resp_free(&r);
	/* B, by every route it might have: other processes' roots, cwds and
	 * open directories, relative paths out of /workspace, the host path of
	 * the work dir */
	snprintf(script, sizeof(script),
		 "W='%s'; A='%s'; "
		 "for f in /proc/[0-9]*/root/workspace/secret /proc/[0-9]*/root/tmp/secret "
		 "/proc/[0-9]*/cwd/secret "
		 "  /proc/[0-9]*/fd/*/secret /proc/[0-9]*/fd/*/$A/workspace/secret "
		 "/proc/[0-9]*/fd/*/workspace/secret "
		 "  /workspace/../$A/workspace/secret /workspace/../../$A/workspace/secret "
		 "../$A/workspace/secret "
		 "  ../../$A/workspace/secret /tmp/../$A/tmp/secret $W/$A/workspace/secret "
		 "$W/$A/tmp/secret "
		 "  /proc/1/root$W/$A/workspace/secret /dev/shm/sbx-contain-secret-*; do cat "
		 "\"$f\" 2>/dev/null; done; "
		 "ln -s $W/$A/workspace/secret /workspace/l1; ln -s ../../$A/workspace/secret "
		 "/workspace/l2; true",
		 g_work, a);
	sh_ok("kb", b, script, &x);
	{
		char shm[128];

		snprintf(shm, sizeof(shm), "/dev/shm/sbx-contain-secret-%d", (int)getpid());
		unlink(shm); /* there only when /dev/shm was the host's (plain mode) */
	}
	if (strstr(x.out, secret) != NULL)
		fail_msg("sandbox B read sandbox A's file:\n%s", x.out);
	cx_free(&x);
	/* ... and through the files API of B */
	{
		char routes[5][640];

		snprintf(routes[0], sizeof(routes[0]), "/workspace/l1");
		snprintf(routes[1], sizeof(routes[1]), "/workspace/l2");
		snprintf(routes[2], sizeof(routes[2]), "/workspace/../%s/workspace/secret", a);
		snprintf(routes[3], sizeof(routes[3]), "%s/%s/workspace/secret", g_work, a);
		snprintf(routes[4], sizeof(routes[4]), "/proc/1/root/workspace/secret");
		for (size_t i = 0; i < 5; i++) {
			snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=%s", b,
				 routes[i]);
			th_json(U, "kb", "GET", path, NULL, &r);
			if (strstr(sbx_strbuf_str(&r.body), secret) != NULL)
				fail_msg("B's files API read A's file via %s (HTTP %ld)", routes[i],
					 r.status);
			th_resp_free(&r);
		}
	}
}

static void files_api_refuses_hard_link(void **state)
{
	char id[64], path[160];
	th_req rq = {0};
	th_resp r;
	cx_res x;

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/x", id);
	th_json(U, "ka", "PUT", path, "original\n", &r);
	expect_status(&r, 200, "PUT /workspace/x");
	th_resp_free(&r);
	sh_ok("ka", id, "ln x y && echo LINKED", &x); /* cwd: the workspace */
	if (strstr(x.out, "LINKED") == NULL)
		fail_msg("the guest could not make the hard link (the attack's premise): %s %s",
			 x.out, x.err);
	cx_free(&x);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/y", id);
	th_json(U, "ka", "GET", path, NULL, &r);
	if (r.status < 400 || r.status > 499)
		fail_msg("GET of a hard-linked file: expected 4xx, got %ld: %s", r.status,
			 sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	/* writing through the link must not reach the other name */
	rq.method = "PUT";
	rq.url = U;
	rq.path = path;
	rq.key = "ka";
	rq.body = "overwritten\n";
	rq.ctype = "application/octet-stream";
	th_do(&rq, &r);
	print_message("PUT through the link: HTTP %ld\n", r.status);
	th_resp_free(&r);
	sh_ok("ka", id, "cat x", &x);
	if (strcmp(x.out, "original\n") != 0)
		fail_msg("PUT to a hard link wrote through to its other name: %s", x.out);
	cx_free(&x);
}

/* A FIFO, a socket and a symlink planted in the workspace, and a NUL in the
 * path: the files API must refuse the FIFO and the socket at once (a FIFO
 * it opened would block a worker until some writer came); the symlink, to
 * /etc/passwd, a read follows inside the guest's root only (the guest's
 * own file, never the host's) and a write refuses. */
static void files_api_refuses_fifo_symlink_and_nul(void **state)
{
	char id[64], path[4300], fifo[1024];
	cx_res x;
	th_req rq = {0};
	th_resp r;
	static const char *const names[] = {"fifo", "sock"};

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	sh_ok("ka", id,
	      "mkfifo fifo && echo FIFO; ln -s /etc/passwd lnk && echo LNK; "
	      "/usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); "
	      "s.bind(\"sock\")' && echo SOCK",
	      &x);
	if (strstr(x.out, "FIFO") == NULL || strstr(x.out, "LNK") == NULL)
		fail_msg("the guest could not plant the files (the attack's premise): %s %s", x.out,
			 x.err);
	cx_free(&x);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/%s", id,
			 names[i]);
		rq.method = "GET";
		rq.url = U;
		rq.path = path;
		rq.key = "ka";
		rq.timeout_ms = 5000;
		th_do(&rq, &r);
		if (r.curl_rc != CURLE_OK || r.status < 400 || r.status > 499) {
			long st = r.status;
			int rc = (int)r.curl_rc;

			th_resp_free(&r);
			/* unblock a files API stuck opening the FIFO */
			snprintf(fifo, sizeof(fifo), "%s/%s/workspace/fifo", g_work, id);
			for (int k = 0; k < 3; k++) {
				int fd = open(fifo, O_WRONLY | O_NONBLOCK);

				if (fd >= 0)
					close(fd);
				sleep_ms(50);
			}
			fail_msg("GET /workspace/%s: expected 4xx at once, got HTTP %ld (curl %d)",
				 names[i], st, rc);
		}
		th_resp_free(&r);
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/lnk", id);
	th_json(U, "ka", "GET", path, NULL, &r);
	expect_status(&r, 200, "GET of a symlink to /etc/passwd");
	if (strstr(sbx_strbuf_str(&r.body), "root:x:0:0") == NULL ||
	    cx_same_as_host_file(sbx_strbuf_str(&r.body), "/etc/passwd"))
		fail_msg("GET /workspace/lnk is not the guest's own /etc/passwd: %.300s",
			 sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	rq.method = "PUT";
	rq.body = "x";
	rq.ctype = "application/octet-stream";
	th_do(&rq, &r);
	expect_status(&r, 400, "PUT through a symlink");
	th_resp_free(&r);
	/* NUL in the path */
	snprintf(path, sizeof(path),
		 "/v1/sandboxes/%s/files?path=/workspace/a%%00/../../etc/passwd", id);
	th_json(U, "ka", "GET", path, NULL, &r);
	expect_status(&r, 400, "NUL in a files path");
	th_resp_free(&r);
}

/* The system directories (the host's, bound read-only) are read-only,
 * /proc/sys is not the host's to write, and /sys is not there. /, /etc and
 * /root are the guest's own, writable (contain_fs.c). */
static void cannot_write_system_dirs(void **state)
{
	char id[64];
	cx_res x;

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	sh_ok("ka", id,
	      /* access(W_OK) only: nothing is written, even where the probe
	       * would succeed (plain mode on the host) */
	      "for f in /usr /usr/bin /usr/lib /bin /sbin /lib /etc/ssl /etc/ld.so.cache "
	      "  /proc/sys/kernel/hostname /proc/sys/kernel/core_pattern /proc/sysrq-trigger; do "
	      "  [ -w \"$f\" ] && echo \"WRITABLE $f\"; done; "
	      "[ -e /sys/kernel ] && echo HOST-SYS; "
	      "for d in /dev/sda /dev/vda /dev/nvme0 /dev/mem /dev/kmsg /dev/kvm; do [ -e $d ] && "
	      "echo \"HOST-DEV $d\"; done; true",
	      &x);
	if (strstr(x.out, "WRITABLE") != NULL || strstr(x.out, "HOST-") != NULL)
		fail_msg("the guest may write system files or sees host devices:\n%s", x.out);
	cx_free(&x);
}

/* Neither a default ("network on") nor a network-off guest reaches the
 * mock's control plane, or anything else, on the host's loopback. */
static void cannot_reach_the_control_plane(void **state)
{
	static const char probe[] =
		"import socket, sys\n"
		"for port in sys.argv[1:]:\n"
		"    s = socket.socket(); s.settimeout(2)\n"
		"    try: s.connect(('127.0.0.1', int(port))); print('CONNECTED', port)\n"
		"    except OSError as e: print('refused', port, e)\n"
		"    s.close()\n";
	char on[64], off[64], port[16];
	const char *args[] = {"-c", probe, port};
	cx_res x;

	(void)state;
	mk("ka", NULL, on, sizeof(on));
	mk("ka", "{\"shape\":\"s-1vcpu-1gb\",\"egress\":[\"240.0.0.0/4\"]}", off, sizeof(off));
	snprintf(port, sizeof(port), "%u", (unsigned)sbx_mock_port(g_mock));
	for (int i = 0; i < 2; i++) {
		cx_exec("ka", i == 0 ? on : off, "/usr/bin/python3", args, 3, 30000, &x);
		print_message("%s guest: %s", i == 0 ? "default" : "network-off", x.out);
		if (x.status != 200 ||
		    (strstr(x.out, "refused") == NULL && strstr(x.out, "CONNECTED") == NULL))
			fail_msg("the probe did not run: HTTP %ld %s", x.status, x.body);
		if (strstr(x.out, "CONNECTED") != NULL)
			fail_msg("a %s guest reached the mock's API on the host's loopback (port "
				 "%s)",
				 i == 0 ? "default" : "network-off", port);
		cx_free(&x);
	}
}

static void cannot_mount(void **state)
{
	char id[64], line[4096];
	cx_res x;

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	sh_ok("ka", id,
	      "mkdir -p m; mount -t tmpfs none m 2>/dev/null && echo MOUNTED-TMPFS; "
	      "mount --bind /usr m 2>/dev/null && echo MOUNTED-BIND; "
	      "mount -t proc proc m 2>/dev/null && echo MOUNTED-PROC; "
	      "mount -o remount,rw /usr 2>/dev/null && echo REMOUNTED-USR; true",
	      &x);
	/* cleanup of a mount that leaked to the host (plain mode) */
	if (cx_mount_find(g_work, line, sizeof(line))) {
		print_message("leaked to the host: %s", line);
		cx_umount_under(g_work);
	}
	if (strstr(x.out, "MOUNTED") != NULL || strstr(x.out, "REMOUNTED") != NULL)
		fail_msg("the guest mounted:\n%s", x.out);
	cx_free(&x);
}

/* ---- processes ---- */

/* The cell's PID 1 is not a way around the filter (issue 27): a guest that
 * could write /proc/1/mem (root of the cell's user namespace with
 * CAP_SYS_PTRACE, PID 1 dumpable and unfiltered) put code into PID 1 that
 * ran mount. Now PID 1 runs under the filter with no_new_privs and is not
 * dumpable; guests keep no CAP_SYS_PTRACE or CAP_SYS_ADMIN; pidfd_getfd
 * (PID 1's control socket is its fd 3) is denied; and a system call newer
 * than the filter's table (mseal, 462) is ENOSYS, not allowed by default. */
static void pid1_is_not_a_way_around_the_filter(void **state)
{
	static const char script[] =
		"import ctypes, errno, os\n"
		"libc = ctypes.CDLL(None, use_errno=True)\n"
		"def err(): return errno.errorcode.get(ctypes.get_errno(), '?')\n"
		"try:\n"
		"    fd = os.open('/proc/1/mem', os.O_RDWR); os.close(fd); print('mem writable')\n"
		"except OSError as e: print('mem', errno.errorcode.get(e.errno, '?'))\n"
		"pidfd = libc.syscall(434, 1, 0)\n" /* pidfd_open(1) */
		"r = libc.syscall(438, pidfd, 3, 0) if pidfd >= 0 else -1\n" /* pidfd_getfd */
		"print('getfd', 'OK' if r >= 0 else err())\n"
		"for l in open('/proc/1/status'):\n"
		"    if l.startswith(('Seccomp:', 'NoNewPrivs:')): print('pid1', ''.join(l.split()))\n"
		"for l in open('/proc/self/status'):\n"
		"    if l.startswith('CapEff:'):\n"
		"        eff = int(l.split()[1], 16)\n"
		"        print('cap_sys_ptrace', eff >> 19 & 1, 'cap_sys_admin', eff >> 21 & 1)\n"
		"r = libc.syscall(462, 0, 0, 0)\n" /* mseal: newer than the table */
		"print('mseal', 'OK' if r == 0 else err())\n";
	static const char *const want[] = {"pid1 Seccomp:2",  "pid1 NoNewPrivs:1",
					   "cap_sys_ptrace 0 cap_sys_admin 0", "getfd EPERM",
					   "mseal ENOSYS"};
	const char *args[] = {"-c", script};
	char id[64];
	cx_res x;

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	cx_exec("ka", id, "/usr/bin/python3", args, 2, 30000, &x);
	print_message("%s%s", x.out, x.err);
	if (x.status != 200 || x.code != 0)
		fail_msg("the probe did not run: HTTP %ld exit %d %s", x.status, x.code, x.body);
	if (strstr(x.out, "mem writable") != NULL || strstr(x.out, "mem ") == NULL)
		fail_msg("a guest can write PID 1's memory through /proc/1/mem:\n%s", x.out);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strstr(x.out, want[i]) == NULL)
			fail_msg("expected \"%s\" from the probe:\n%s", want[i], x.out);
	cx_free(&x);
}

static void cannot_ptrace_outside(void **state)
{
	static const char script[] =
		"import ctypes, sys\n"
		"libc = ctypes.CDLL(None, use_errno=True)\n"
		"libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, "
		"ctypes.c_void_p]\n"
		"for a in sys.argv[1:]:\n"
		"    r = libc.ptrace(0x4206, int(a), None, None)\n" /* PTRACE_SEIZE: no stop */
		"    print('ptrace', a, 'OK' if r == 0 else 'failed errno %d' % "
		"ctypes.get_errno())\n";
	char id[64], victim_arg[16], self_arg[16], other_arg[16], mark[32], re[32], other[64];
	const char *args[] = {"-c", script, victim_arg, self_arg, "1", other_arg};
	pid_t victim, other_pid;
	cx_res x;

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	mk("kb", NULL, other, sizeof(other));
	cx_marker(mark, sizeof(mark), re, sizeof(re));
	other_pid = bg_sleep("kb", other, mark);
	victim = fork(); /* a host process next to the mock */
	if (victim == 0) {
		execlp("sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	assert_true(victim > 0);
	snprintf(victim_arg, sizeof(victim_arg), "%d", (int)victim);
	snprintf(self_arg, sizeof(self_arg), "%d", (int)getpid()); /* the mock (embedded) */
	snprintf(other_arg, sizeof(other_arg), "%d", (int)other_pid);
	cx_exec("ka", id, "/usr/bin/python3", args, 6, 30000, &x);
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
	print_message("%s%s", x.out, x.err);
	if (x.status != 200 || strstr(x.out, "ptrace") == NULL)
		fail_msg("the probe did not run: HTTP %ld %s", x.status, x.body);
	if (strstr(x.out, " OK") != NULL)
		fail_msg("the guest attached to a process outside its sandbox:\n%s", x.out);
	cx_free(&x);
}

static void cannot_unshare_new_namespaces(void **state)
{
	char id[64];
	cx_res x;

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	sh_ok("ka", id,
	      "unshare -U true 2>/dev/null && echo USER-OK; "
	      "unshare -n true 2>/dev/null && echo NET-OK; "
	      "unshare -m true 2>/dev/null && echo MNT-OK; "
	      "unshare -p -f true 2>/dev/null && echo PID-OK; "
	      "unshare -U -r -n true 2>/dev/null && echo USER-NET-OK; "
	      "unshare -i -u true 2>/dev/null && echo IPC-UTS-OK; true",
	      &x);
	if (strstr(x.out, "-OK") != NULL)
		fail_msg("the guest made new namespaces:\n%s", x.out);
	cx_free(&x);
}

static void cannot_see_or_signal_other_sandbox_processes(void **state)
{
	char a[64], b[64], mark[32], re[32], script[512], host_pid[256], b_pid[256], bmark[32],
		bre[32];
	pid_t pa, pb;
	cx_res x;

	(void)state;
	mk("ka", NULL, a, sizeof(a));
	mk("kb", NULL, b, sizeof(b));
	cx_marker(mark, sizeof(mark), re, sizeof(re));
	cx_marker(bmark, sizeof(bmark), bre, sizeof(bre));
	pa = bg_sleep("ka", a, mark);
	pb = bg_sleep("kb", b, bmark);
	/* never let a guest run kill -9 -1 in the host's PID namespace */
	assert_true(cx_ns(0, "pid", host_pid, sizeof(host_pid)));
	assert_true(cx_ns(pb, "pid", b_pid, sizeof(b_pid)));
	if (strcmp(host_pid, b_pid) == 0)
		fail_msg("sandbox B's processes are in the host's PID namespace (%s)", b_pid);
	snprintf(script, sizeof(script),
		 "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c '%s'; "
		 "ps ax -o args 2>/dev/null | grep -c '%s'; "
		 "kill -9 %d 2>/dev/null; pkill -9 -f '%s' 2>/dev/null; kill -9 -1; echo SURVIVED",
		 re, re, (int)pa, re);
	sh_ok("kb", b, script, &x);
	if (strncmp(x.out, "0\n0\n", 4) != 0)
		fail_msg("B sees A's process (counts in /proc and ps):\n%s", x.out);
	cx_free(&x);
	sleep_ms(100);
	if (cx_state(pa) == 0 || cx_state(pa) == 'Z')
		fail_msg("B killed A's background process %d", (int)pa);
	snprintf(script, sizeof(script),
		 "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c '%s'", re);
	sh_ok("ka", a, script, &x);
	if (strtol(x.out, NULL, 10) < 1)
		fail_msg("A no longer sees its own background process: %s", x.out);
	cx_free(&x);
}

/* SysV IPC and abstract unix sockets are per namespace: a shared memory
 * segment A makes is not in B's list, B does not see A's abstract socket,
 * and no guest sees the host's unix sockets. */
static void cannot_share_ipc_or_host_sockets(void **state)
{
	char a[64], b[64], key[64], script[512], line[512], hostsock[300] = "", want[400];
	FILE *fp;
	cx_res x;

	(void)state;
	mk("ka", NULL, a, sizeof(a));
	mk("kb", NULL, b, sizeof(b));
	snprintf(script, sizeof(script),
		 "ipcmk -M 4096 >/dev/null 2>&1; "
		 "/usr/bin/python3 -c 'import socket, time; s = socket.socket(socket.AF_UNIX); "
		 "s.bind(\"\\0sbx-contain-%d\"); time.sleep(60)' </dev/null >/dev/null 2>&1 & "
		 "sleep 0.3; ipcs -m | awk 'NR > 3 && $1 ~ /^0x/ && $1 != \"0x00000000\" {print "
		 "$1}' | tail -n 1",
		 (int)getpid());
	sh_ok("ka", a, script, &x);
	snprintf(key, sizeof(key), "%.*s", (int)strcspn(x.out, "\n"), x.out);
	cx_free(&x);
	if (key[0] == '\0')
		fail_msg("A could not make a shared memory segment (the attack's premise)");
	/* one of the host's unix socket paths, to look for inside */
	fp = fopen("/proc/net/unix", "r");
	while (fp != NULL && fgets(line, sizeof(line), fp) != NULL) {
		char *p = strrchr(line, ' ');

		if (p != NULL && (p[1] == '/' || p[1] == '@') && strlen(p + 1) > 4 &&
		    strstr(p, "sbx-contain") == NULL) {
			snprintf(hostsock, sizeof(hostsock), "%.*s", (int)strcspn(p + 1, "\n"),
				 p + 1);
			break;
		}
	}
	if (fp != NULL)
		fclose(fp);
	print_message("A's segment key %s; a host unix socket: %s\n", key,
		      hostsock[0] != '\0' ? hostsock : "(none)");
	sh_ok("kb", b,
	      "ipcs -m | awk 'NR > 3 && $1 ~ /^0x/ {print \"KEY \" $1}'; "
	      "awk 'NR > 1 && NF >= 8 {print \"SOCK \" $8}' /proc/net/unix",
	      &x);
	/* plain mode: A's segment is the host's; remove it */
	{
		cx_res y;
		char rm[128];

		snprintf(rm, sizeof(rm), "ipcrm -M %s 2>/dev/null; true", key);
		sh_ok("ka", a, rm, &y);
		cx_free(&y);
	}
	snprintf(want, sizeof(want), "KEY %s\n", key);
	if (strstr(x.out, want) != NULL)
		fail_msg("B sees A's shared memory segment %s", key);
	snprintf(want, sizeof(want), "SOCK @sbx-contain-%d\n", (int)getpid());
	if (strstr(x.out, want) != NULL)
		fail_msg("B sees A's abstract unix socket");
	snprintf(want, sizeof(want), "SOCK %s\n", hostsock);
	if (hostsock[0] != '\0' && strstr(x.out, want) != NULL)
		fail_msg("a guest sees the host's unix socket %s", hostsock);
	cx_free(&x);
}

/* ---- network ---- */

static void network_off_cannot_nsenter_host_net(void **state)
{
	static const char probe[] =
		"import socket, sys\n"
		"s = socket.socket(); s.settimeout(2)\n"
		"try:\n"
		"    s.connect(('127.0.0.1', int(sys.argv[1]))); print('CONNECTED-TO-MOCK')\n"
		"except OSError as e:\n"
		"    print('no connection:', e)\n";
	char id[64], host_net[256], script[1024], port[16];
	const char *args[] = {"-c", probe, port};
	cx_res x;

	(void)state;
	mk("ka", "{\"shape\":\"s-1vcpu-1gb\",\"egress\":[\"240.0.0.0/4\"]}", id, sizeof(id));
	assert_true(cx_ns(0, "net", host_net, sizeof(host_net)));
	snprintf(script, sizeof(script),
		 "nsenter --net=/proc/1/ns/net true 2>/dev/null && echo NSENTER-OK; "
		 "for n in /proc/[0-9]*/ns/net; do readlink $n; done | sort -u | sed 's/^/NS /'; "
		 "echo OWN $(readlink /proc/self/ns/net); "
		 "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sed 's/^/IF /'");
	sh_ok("ka", id, script, &x);
	print_message("host %s; guest:\n%s", host_net, x.out);
	if (strstr(x.out, "NSENTER-OK") != NULL)
		fail_msg("nsenter --net=/proc/1/ns/net worked:\n%s", x.out);
	if (strstr(x.out, host_net) != NULL)
		fail_msg("the guest can see the host's network namespace %s:\n%s", host_net, x.out);
	{
		/* exactly one network namespace visible: its own */
		char own[300], *o = strstr(x.out, "OWN "), nsline[320];
		const char *p = x.out;
		int n = 0;

		assert_non_null(o);
		snprintf(own, sizeof(own), "%.*s", (int)strcspn(o + 4, "\n"), o + 4);
		snprintf(nsline, sizeof(nsline), "NS %s\n", own);
		while ((p = strstr(p, "NS ")) != NULL) {
			n++;
			p += 3;
		}
		if (n != 1 || strstr(x.out, nsline) == NULL)
			fail_msg("other network namespaces are visible from the guest:\n%s", x.out);
	}
	if (strstr(x.out, "IF ") != NULL && strstr(x.out, "IF lo\n") != NULL) {
		const char *p = x.out;

		/* lo, and with enforced egress eth0: the link to the simulated
		 * internet (a VM keeps its NIC with egress off; the rules drop) */
		while ((p = strstr(p, "IF ")) != NULL) {
			if (strncmp(p, "IF lo\n", 6) != 0 &&
			    (!sbx_mock_egress_enforced(g_mock) || strncmp(p, "IF eth0\n", 8) != 0))
				fail_msg("a network-off guest has interfaces other than lo%s:\n%s",
					 sbx_mock_egress_enforced(g_mock) ? " and eth0" : "", x.out);
			p += 3;
		}
	} else {
		fail_msg("no loopback in the guest:\n%s", x.out);
	}
	cx_free(&x);
	snprintf(port, sizeof(port), "%u", (unsigned)sbx_mock_port(g_mock));
	cx_exec("ka", id, "/usr/bin/python3", args, 3, 30000, &x);
	if (strstr(x.out, "CONNECTED") != NULL)
		fail_msg("a network-off guest reached the mock's control plane on the host's "
			 "loopback");
	cx_free(&x);
}

/* ---- self-signal ---- */

static void self_signal_cannot_delete_other_tenant(void **state)
{
	/* B finds A's process, tries to join its process group (the identity
	 * the mock once used), then POSTs every self-signal URL it may reach,
	 * naming A every way it can. */
	static const char attack[] =
		"import os, sys, urllib.request as u\n"
		"pat, victim = sys.argv[1], sys.argv[2]\n"
		"for p in os.listdir('/proc'):\n"
		"    if not p.isdigit() or int(p) == os.getpid(): continue\n"
		"    try: c = open('/proc/%s/cmdline' % p, 'rb').read()\n"
		"    except OSError: continue\n"
		"    if pat.encode() in c:\n"
		"        try: os.setpgid(0, os.getpgid(int(p))); print('joined', p)\n"
		"        except OSError as e: print('join failed', e)\n"
		"for url in sys.argv[3:]:\n"
		"    for q in ('/self/delete?id=' + victim, '/self/delete?sandbox=' + victim):\n"
		"        rq = u.Request(url + q, method='POST', headers={'X-Sandbox-Id': victim, "
		"'X-Api-Key': 'ka'})\n"
		"        try: r = u.urlopen(rq, timeout=3); print(url + q, r.status, "
		"r.read().decode())\n"
		"        except Exception as e: print(url + q, 'error', e)\n";
	char a[64], a2[64], b[64], mark[32], re[32], inside[64], st[32];
	const char *self = sbx_mock_self_url(g_mock);
	const char *port = getenv("SBX_CONTAIN_SELF_PORT");
	const char *args[] = {"-c", attack, mark, a, inside, self != NULL ? self : inside};
	pid_t pa;
	cx_res x;

	(void)state;
	snprintf(inside, sizeof(inside), "http://127.0.0.1:%s", port != NULL ? port : "1029");
	mk("ka", NULL, a, sizeof(a));
	mk("ka", NULL, a2, sizeof(a2));
	mk("kb", NULL, b, sizeof(b));
	cx_marker(mark, sizeof(mark), re, sizeof(re));
	pa = bg_sleep("ka", a, mark);
	cx_exec("kb", b, "/usr/bin/python3", args, 6, 30000, &x);
	print_message("attack from B (HTTP %ld, exit %d):\n%s%s", x.status, x.code, x.out, x.err);
	cx_free(&x);
	sleep_ms(200);
	cx_status("ka", a, st, sizeof(st));
	if (strcmp(st, "running") != 0)
		fail_msg("tenant B's guest changed tenant A's sandbox %s: now %s", a, st);
	cx_status("ka", a2, st, sizeof(st));
	if (strcmp(st, "running") != 0)
		fail_msg("tenant B's guest changed tenant A's sandbox %s: now %s", a2, st);
	if (cx_state(pa) == 0 || cx_state(pa) == 'Z')
		fail_msg("A's background process died");
	cx_status("kb", b, st, sizeof(st));
	print_message("B (the caller) is now %s\n", st);
	/* Control: the endpoint works for B's own sandbox, so the attack above
	 * reached a live endpoint and was refused, not lost. */
	if (strcmp(st, "running") == 0) {
		static const char own[] = "import sys, urllib.request as u\n"
					  "for url in sys.argv[1:]:\n"
					  "    try: r = u.urlopen(u.Request(url + '/self/delete', "
					  "method='POST'), timeout=3); "
					  "print(url, r.status)\n"
					  "    except Exception as e: print(url, 'error', e)\n";
		const char *oargs[] = {"-c", own, inside, self != NULL ? self : inside};

		cx_exec("kb", b, "/usr/bin/python3", oargs, 4, 30000, &x);
		print_message("B's own self-delete (HTTP %ld, exit %d): %s%s", x.status, x.code,
			      x.out, x.err);
		cx_free(&x);
		if (!cx_wait_status("kb", b, "destroyed", CX_START_MS)) {
			cx_status("kb", b, st, sizeof(st));
			fail_msg("B's guest reaches no working self-signal endpoint (tried %s and "
				 "%s; B is %s): "
				 "the attack proves nothing",
				 inside, self != NULL ? self : "-", st);
		}
	}
	cx_status("ka", a, st, sizeof(st));
	if (strcmp(st, "running") != 0)
		fail_msg("B's own self-delete changed A's sandbox: now %s", st);
}

/* ---- cgroups ---- */

static void fork_bomb_bounded_by_pids(void **state)
{
	char id[64], other[64], mark[32], re[32], script[512];
	cx_res x;
	th_resp r;
	int n;
	time_t t0 = time(NULL);

	(void)state;
	SKIP_WITHOUT_CGROUPS();
	mk("ka", NULL, id, sizeof(id));
	mk("ka", NULL, other, sizeof(other));
	cx_marker(mark, sizeof(mark), re, sizeof(re));
	/* 1500 > any sane pids limit, and bounded: each sleep ends in 60 s and
	 * the sandbox is deleted below */
	snprintf(script, sizeof(script),
		 "i=0; while [ $i -lt 1500 ]; do sleep %s >/dev/null 2>&1 & i=$((i+1)); done "
		 "2>/dev/null; echo SPAWNED-ALL",
		 mark);
	cx_sh("ka", id, script, 30000, &x);
	n = cx_count(mark);
	print_message("fork bomb: HTTP %ld exit %d after %lds; %d sleeps live on the host\n",
		      x.status, x.code, (long)(time(NULL) - t0), n);
	cx_free(&x);
	if (n > 600) {
		cx_kill_all(mark);
		fail_msg("%d processes in one sandbox: no pids limit", n);
	}
	assert_true(n > 0);
	th_json(U, "ka", "GET", "/v1/whoami", NULL, &r); /* the mock still serves */
	expect_status(&r, 200, "whoami after the fork bomb");
	th_resp_free(&r);
	sh_ok("ka", other, "echo fine", &x); /* another sandbox still execs */
	assert_string_equal(x.out, "fine\n");
	cx_free(&x);
	{
		char path[128];

		snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
		th_json(U, "ka", "DELETE", path, NULL, &r);
		expect_status(&r, 200, "delete the bombed sandbox");
		th_resp_free(&r);
	}
	if (!cx_wait_gone(mark, CX_START_MS)) {
		n = cx_count(mark);
		cx_kill_all(mark);
		fail_msg("%d sleeps of the deleted sandbox are still alive", n);
	}
}

static void memory_over_shape_exits_137(void **state)
{
	const char *args[] = {"-c", "b = b'x' * (700 << 20)\nprint(len(b))\n"};
	char id[64];
	cx_res x;

	(void)state;
	SKIP_WITHOUT_CGROUPS();
	mk("ka", "{\"shape\":\"s-1vcpu-256mb\"}", id, sizeof(id));
	cx_exec("ka", id, "/usr/bin/python3", args, 2, 60000, &x);
	print_message("700 MiB in a 256 MiB shape: HTTP %ld, exit %d, stdout %s\n", x.status,
		      x.code, x.out);
	if (x.status != 200 || x.code != 137)
		fail_msg("expected exit 137 (OOM kill), got HTTP %ld exit %d: %s", x.status, x.code,
			 x.body);
	cx_free(&x);
}

/* ---- pause ---- */

/* The ticker's lines, read from the host through the root of a process
 * of the sandbox: the files API (like exec) answers 409 while the sandbox
 * is paused, so it cannot tell a frozen ticker from a running one. */
static long host_ticks(pid_t in)
{
	return cx_root_lines(in, "/workspace/ticks");
}

/* The ticker's line count once it exceeds above (it ticks every 20 ms when
 * running), or the last count at CX_START_MS: a loaded machine may take a
 * while to schedule it, a stopped one never gets there. */
static long wait_ticks_above(pid_t in, long above)
{
	long n = host_ticks(in);

	for (int waited = 0; n <= above && waited < CX_START_MS; waited += 20) {
		sleep_ms(20);
		n = host_ticks(in);
	}
	return n;
}

static void pause_freezes_background(void **state)
{
	char id[64], path[160], mark[32], re[32];
	long c0, c1, c2, c3;
	pid_t in;
	th_resp r;
	cx_res x;

	(void)state;
	mk("ka", NULL, id, sizeof(id));
	/* a ticker that left the exec's process group and session */
	sh_ok("ka", id,
	      "setsid sh -c 'while :; do echo t >> /workspace/ticks; sleep 0.02; done' "
	      "</dev/null >/dev/null 2>&1 &",
	      &x);
	cx_free(&x);
	/* a marked process of the sandbox whose /proc root the host reads */
	cx_marker(mark, sizeof(mark), re, sizeof(re));
	in = bg_sleep("ka", id, mark);
	c0 = wait_ticks_above(in, 2);
	if (c0 <= 2)
		fail_msg("the ticker does not tick (%ld lines)", c0);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/pause", id);
	th_json(U, "ka", "POST", path, NULL, &r);
	if (r.status != 200 && r.status != 202)
		fail_msg("pause: HTTP %ld %s", r.status, sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	assert_true(cx_wait_status("ka", id, "paused", CX_START_MS));
	sleep_ms(100); /* a write in flight lands */
	c1 = host_ticks(in);
	sleep_ms(700);
	c2 = host_ticks(in);
	print_message("ticks: %ld before pause, %ld and %ld while paused\n", c0, c1, c2);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/resume", id);
	th_json(U, "ka", "POST", path, NULL, &r);
	if (r.status != 200 && r.status != 202)
		fail_msg("resume: HTTP %ld %s", r.status, sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	if (c1 < c0 || c2 != c1)
		fail_msg("a paused sandbox's background process kept running: %ld -> %ld ticks", c1,
			 c2);
	assert_true(cx_wait_status("ka", id, "running", CX_START_MS));
	c3 = wait_ticks_above(in, c2);
	print_message("ticks: %ld after resume\n", c3);
	if (c3 <= c2)
		fail_msg("the background process did not resume: %ld -> %ld ticks", c2, c3);
	cx_kill_all(mark);
}

/* ---- the binary: kill -9 and clean stop ---- */

typedef struct bin_mock {
	pid_t pid;
	FILE *out;
	char url[128];
	char work[512];
	char errlog[600];
} bin_mock;

/* Set: bin_start passes --state-dir with it instead of --work-dir (guest
 * trees then live in it, and a restart on it restores them). */
static const char *g_bin_state_dir;
/* Set: bin_start passes --warm-pool with it (else SBX_CONTAIN_WARM_POOL's). */
static const char *g_bin_pool;

/* A line of the mock's stdout, or false when none comes within CX_START_MS
 * (a mock that hangs before it listens fails the test, not the run). */
static bool bin_line(FILE *out, char *line, size_t cap)
{
	struct pollfd pf = {.fd = fileno(out), .events = POLLIN};

	return poll(&pf, 1, CX_START_MS) == 1 && fgets(line, (int)cap, out) != NULL;
}

static bool bin_start(bin_mock *m)
{
	const char *tmp = getenv("TMPDIR");
	int o[2];
	char line[512];

	memset(m, 0, sizeof(*m));
	snprintf(m->work, sizeof(m->work), "%s/sbx-contain-bin-XXXXXX",
		 tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	if (mkdtemp(m->work) == NULL || pipe(o) != 0)
		return false;
	snprintf(m->errlog, sizeof(m->errlog), "%s.stderr", m->work);
	m->pid = fork();
	if (m->pid == 0) {
		char *argv[16];
		int n = 0;

		argv[n++] = (char *)g_bin;
		argv[n++] = "--listen";
		argv[n++] = "127.0.0.1:0";
		argv[n++] = "--admin-token";
		argv[n++] = "tok";
		argv[n++] = "--self-listen";
		argv[n++] = "127.0.0.1:0";
		argv[n++] = g_bin_state_dir != NULL ? "--state-dir" : "--work-dir";
		argv[n++] = g_bin_state_dir != NULL ? (char *)g_bin_state_dir : m->work;
		if (g_mode != NULL) {
			argv[n++] = "--guest-mode";
			argv[n++] = (char *)g_mode;
		}
		if (g_bin_pool != NULL || g_pool != NULL) {
			argv[n++] = "--warm-pool";
			argv[n++] = (char *)(g_bin_pool != NULL ? g_bin_pool : g_pool);
		}
		argv[n] = NULL;
		dup2(o[1], 1);
		if (freopen(m->errlog, "w", stderr) == NULL)
			_exit(126);
		close(o[0]);
		close(o[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(o[1]);
	m->out = fdopen(o[0], "r");
	for (int i = 0; i < 20 && bin_line(m->out, line, sizeof(line)); i++)
		if (strncmp(line, "sbx-mock listening on ", 22) == 0) {
			snprintf(m->url, sizeof(m->url), "%.*s", (int)strcspn(line + 22, "\n"),
				 line + 22);
			return true;
		}
	return false;
}

static int bin_wait(pid_t pid, int ms)
{
	int st = 0;

	for (int waited = 0; waited < ms; waited += 10) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static void bin_cleanup(bin_mock *m, const char *mark)
{
	char cg[64];

	if (m->pid > 0 && kill(m->pid, 0) == 0) {
		kill(m->pid, SIGKILL);
		waitpid(m->pid, NULL, 0);
	}
	if (mark != NULL)
		cx_kill_all(mark);
	snprintf(cg, sizeof(cg), "sbx-mock-%d", (int)m->pid);
	cx_cgroup_remove(cg);
	if (m->out != NULL)
		fclose(m->out);
	cx_rmtree(m->work);
	unlink(m->errlog);
}

static void bin_exec(const bin_mock *m, const char *id, const char *script)
{
	char path[160];
	cJSON *b = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(b, "args");
	char *body;
	th_resp r;

	cJSON_AddStringToObject(b, "cmd", "sh");
	cJSON_AddItemToArray(a, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(a, cJSON_CreateString(script));
	body = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	th_json(m->url, "k", "POST", path, body, &r);
	free(body);
	expect_status(&r, 200, script);
	th_resp_free(&r);
}

static void bin_create(const bin_mock *m, char *id, size_t cap)
{
	th_resp r;

	th_json(m->url, "k", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	expect_status(&r, 200, "create on the binary");
	snprintf(id, cap, "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
}

static void no_guest_survives_mock_kill(void **state)
{
	bin_mock m;
	char id[64], id2[64], mark[32], re[32], script[512];
	pid_t kids[64];
	size_t nk;
	int alive = 0;

	(void)state;
	cx_marker(mark, sizeof(mark), re, sizeof(re));
	if (!bin_start(&m)) {
		bin_cleanup(&m, NULL);
		fail_msg("sbx-mock did not start (see its stderr)");
	}
	bin_create(&m, id, sizeof(id));
	bin_create(&m, id2, sizeof(id2));
	snprintf(script, sizeof(script),
		 "sleep %s >/dev/null 2>&1 & setsid sleep %s </dev/null >/dev/null 2>&1 & "
		 "(trap '' TERM HUP; exec sleep %s) </dev/null >/dev/null 2>&1 &",
		 mark, mark, mark);
	bin_exec(&m, id, script);
	bin_exec(&m, id2, script);
	/* exactly the six sleeps (three per sandbox), by their own name: the
	 * shells that start them also carry the marker but are transient */
	alive = cx_wait_count(mark, 6, CX_START_MS);
	print_message("%d marked guest sleeps before the kill\n", alive);
	if (alive != 6) {
		bin_cleanup(&m, mark);
		fail_msg("%d of the 6 background sleeps are alive after %d ms", alive, CX_START_MS);
	}
	alive = 0;
	nk = cx_children(m.pid, kids, 64);
	kill(m.pid, SIGKILL);
	bin_wait(m.pid, 5000);
	if (!cx_wait_gone(mark, CX_START_MS))
		alive = cx_count(mark);
	for (size_t i = 0; i < nk; i++) /* the mock's children: cells, inits */
		for (int w = 0; w < 250 && cx_state(kids[i]) != 0 && cx_state(kids[i]) != 'Z'; w++)
			sleep_ms(20);
	for (size_t i = 0; i < nk; i++)
		if (cx_state(kids[i]) != 0 && cx_state(kids[i]) != 'Z') {
			bin_cleanup(&m, mark);
			fail_msg("the mock's child %d survived its kill -9", (int)kids[i]);
		}
	/* a killed mock cannot remove its cgroups: the next mock does
	 * (next_mock_sweeps_killed_mocks_groups); bin_cleanup removes them here */
	bin_cleanup(&m, mark);
	if (alive > 0)
		fail_msg("%d guest processes survived kill -9 of the mock", alive);
}

/* The stderr of a mock started with bin_start, into buf. */
static void bin_stderr(const bin_mock *m, char *buf, size_t cap)
{
	FILE *fp = fopen(m->errlog, "r");
	size_t n = fp != NULL ? fread(buf, 1, cap - 1, fp) : 0;

	buf[n] = '\0';
	if (fp != NULL)
		fclose(fp);
}

/* kill -9 leaves a mock's (empty) cgroups behind; the next mock on the host
 * removes them, says so, and leaves a live mock's groups alone (issue 24).
 * The owner files live in a run directory of this test's own. */
static void next_mock_sweeps_killed_mocks_groups(void **state)
{
	bin_mock dead, next, third;
	char run[600], cg[64], nextcg[64], found[4096], err[8192], id[64];
	pid_t kids[64];
	size_t nk;

	(void)state;
	SKIP_WITHOUT_CGROUPS();
	snprintf(run, sizeof(run), "%s.run-XXXXXX", g_work);
	assert_non_null(mkdtemp(run));
	setenv("SBX_MOCK_RUN_DIR", run, 1);
	if (!bin_start(&dead)) {
		bin_cleanup(&dead, NULL);
		fail_msg("sbx-mock did not start (see its stderr)");
	}
	bin_create(&dead, id, sizeof(id)); /* a sandbox group under the parent */
	snprintf(cg, sizeof(cg), "sbx-mock-%d", (int)dead.pid);
	nk = cx_children(dead.pid, kids, 64);
	kill(dead.pid, SIGKILL);
	bin_wait(dead.pid, 5000);
	/* its cells leave their groups when they are gone (reaped): only then
	 * are the groups empty, which is all a sweep may remove; waited for by
	 * the groups themselves, since a cell the pool was still cloning at
	 * the kill is no child the list above could have caught */
	for (size_t i = 0; i < nk; i++)
		for (int w = 0; w < 1500 && cx_state(kids[i]) != 0; w++)
			sleep_ms(20);
	if (!cx_cgroup_wait_empty(cg, CX_START_MS)) {
		cx_cgroup_who(cg, err, sizeof(err));
		fail_msg("the killed mock's cells are still in its groups after %d ms: %s", CX_START_MS,
			 err);
	}
	if (!cx_cgroup_find(cg, found, sizeof(found)))
		fail_msg("no cgroup %s after kill -9: nothing to sweep (test broken?)", cg);
	print_message("kill -9 left %s\n", found);
	assert_true(bin_start(&next));
	snprintf(nextcg, sizeof(nextcg), "sbx-mock-%d", (int)next.pid);
	/* the cgroups line comes on stderr after the listening line on stdout */
	bin_stderr(&next, err, sizeof(err));
	for (int waited = 0; strstr(err, "cgroups:") == NULL && waited < CX_START_MS; waited += 20) {
		sleep_ms(20);
		bin_stderr(&next, err, sizeof(err));
	}
	print_message("the next mock says: %s", err);
	if (cx_cgroup_find(cg, found, sizeof(found)))
		fail_msg("the next mock left the dead mock's group %s", found);
	if (strstr(err, "removed") == NULL || strstr(err, cg) == NULL)
		fail_msg("the next mock removed %s without saying so: %s", cg, err);
	assert_true(bin_start(&third)); /* next is alive: its groups stay */
	if (!cx_cgroup_find(nextcg, found, sizeof(found)))
		fail_msg("a third mock removed the live mock's group %s", nextcg);
	kill(third.pid, SIGTERM);
	kill(next.pid, SIGTERM);
	assert_int_equal(bin_wait(third.pid, 15000), 0);
	assert_int_equal(bin_wait(next.pid, 15000), 0);
	bin_cleanup(&third, NULL);
	bin_cleanup(&next, NULL);
	bin_cleanup(&dead, NULL);
	unsetenv("SBX_MOCK_RUN_DIR");
	if (rmdir(run) != 0) /* empty: both stopped mocks removed their owner files */
		fail_msg("run directory %s: %s (an owner file left behind?)", run, strerror(errno));
}

/* A restart on the same --state-dir after kill -9 restores a contained
 * sandbox and serves: restoring its guest once deadlocked on the model lock
 * when egress was enforced (the guest's egress wiring takes it), so the
 * restarted mock never listened. */
static void durable_restart_restores_contained_guest(void **state)
{
	bin_mock a, b;
	char dir[600], id[64], path[160], buf[4096];
	pid_t kids[64];
	size_t nk;
	th_resp r;

	(void)state;
	snprintf(dir, sizeof(dir), "%s.state-XXXXXX", g_work);
	assert_non_null(mkdtemp(dir));
	g_bin_state_dir = dir;
	if (!bin_start(&a)) {
		g_bin_state_dir = NULL;
		bin_cleanup(&a, NULL);
		fail_msg("sbx-mock --state-dir did not start (see its stderr)");
	}
	bin_create(&a, id, sizeof(id));
	nk = cx_children(a.pid, kids, 64);
	kill(a.pid, SIGKILL);
	bin_wait(a.pid, 5000);
	for (size_t i = 0; i < nk; i++)
		for (int w = 0; w < 1500 && cx_state(kids[i]) != 0; w++)
			sleep_ms(20);
	if (!bin_start(&b)) {
		g_bin_state_dir = NULL;
		bin_cleanup(&b, NULL);
		bin_cleanup(&a, NULL);
		cx_rmtree(dir);
		fail_msg("the restarted mock did not listen within %d ms", CX_START_MS);
	}
	g_bin_state_dir = NULL;
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(b.url, "k", "GET", path, NULL, &r);
	snprintf(buf, sizeof(buf), "%s", sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	print_message("restored: %s\n", buf);
	kill(b.pid, SIGTERM);
	bin_wait(b.pid, 15000);
	bin_cleanup(&b, NULL);
	bin_cleanup(&a, NULL);
	cx_rmtree(dir);
	if (strstr(buf, id) == NULL)
		fail_msg("the sandbox %s did not come back: %s", id, buf);
}

static void nothing_left_behind(void **state)
{
	bin_mock m;
	char id[64], id2[64], mark[32], re[32], script[256], path[160], cg[64], buf[4096];
	pid_t kids[64];
	size_t nk;
	int code;
	th_resp r;

	(void)state;
	cx_marker(mark, sizeof(mark), re, sizeof(re));
	if (!bin_start(&m)) {
		bin_cleanup(&m, NULL);
		fail_msg("sbx-mock did not start (see its stderr)");
	}
	bin_create(&m, id, sizeof(id));
	bin_create(&m, id2, sizeof(id2));
	snprintf(script, sizeof(script),
		 "sleep %s >/dev/null 2>&1 & setsid sleep %s </dev/null >/dev/null 2>&1 &", mark,
		 mark);
	bin_exec(&m, id, script);
	bin_exec(&m, id2, script);
	/* a paused sandbox too (a frozen cgroup is the hard one to remove) */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/pause", id2);
	th_json(m.url, "k", "POST", path, NULL, &r);
	th_resp_free(&r);
	th_json(m.url, "k", "POST", path, NULL, &r);
	th_resp_free(&r);
	nk = cx_children(m.pid, kids, 64);
	kill(m.pid, SIGTERM);
	code = bin_wait(m.pid, 15000);
	snprintf(cg, sizeof(cg), "sbx-mock-%d", (int)m.pid);
	if (code != 0) {
		bin_cleanup(&m, mark);
		fail_msg("sbx-mock exit %d on SIGTERM", code);
	}
	if (!cx_wait_gone(mark, CX_START_MS)) {
		int n = cx_count(mark);

		bin_cleanup(&m, mark);
		fail_msg("%d guest processes left after the mock stopped", n);
	}
	for (size_t i = 0; i < nk; i++)
		if (cx_state(kids[i]) != 0 && cx_state(kids[i]) != 'Z') {
			bin_cleanup(&m, mark);
			fail_msg("the mock's child %d is still running after it stopped",
				 (int)kids[i]);
		}
	if (cx_cgroup_find(cg, buf, sizeof(buf))) {
		bin_cleanup(&m, mark);
		fail_msg("cgroup left behind: %s", buf);
	}
	if (cx_mount_find(m.work, buf, sizeof(buf))) {
		bin_cleanup(&m, mark);
		fail_msg("mount left behind in the host's mountinfo: %s", buf);
	}
	bin_cleanup(&m, mark);
}

/* A mock stopped with a full pool, a sandbox alive and a deleted one's
 * teardown possibly pending leaves nothing: no child (pooled cells
 * included), no cgroup, no tree in its work dir (issue 24). */
static void pool_gone_after_stop(void **state)
{
	bin_mock m;
	char id[64], id2[64], mark[32], re[32], script[256], path[160], cg[64], buf[4096];
	pid_t kids[64];
	size_t nk, cells = 0;
	int code;
	th_resp r;

	(void)state;
	cx_marker(mark, sizeof(mark), re, sizeof(re));
	g_bin_pool = "3";
	if (!bin_start(&m)) {
		g_bin_pool = NULL;
		bin_cleanup(&m, NULL);
		fail_msg("sbx-mock --warm-pool 3 did not start (see its stderr)");
	}
	g_bin_pool = NULL;
	if (pool_stat(m.url, "tok", "enabled") != 1 || !pool_wait_full(m.url, "tok", CX_START_MS)) {
		bin_cleanup(&m, NULL);
		fail_msg("the binary's pool of 3 did not fill (plain guests or --warm-pool 0?)");
	}
	bin_create(&m, id, sizeof(id));
	bin_create(&m, id2, sizeof(id2));
	snprintf(script, sizeof(script), "sleep %s >/dev/null 2>&1 &", mark);
	bin_exec(&m, id, script);
	bin_exec(&m, id2, script);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id2);
	th_json(m.url, "k", "DELETE", path, NULL, &r); /* its teardown may still be pending */
	th_resp_free(&r);
	/* the two creates took pooled cells: count once the refill has built
	 * their successors (a cell still being built has no name yet) */
	if (!pool_wait_full(m.url, "tok", CX_START_MS)) {
		bin_cleanup(&m, mark);
		fail_msg("the pool of 3 did not refill after two creates");
	}
	nk = cx_children(m.pid, kids, 64);
	for (size_t i = 0; i < nk; i++) {
		char comm[64] = "", p[64];
		FILE *f;

		snprintf(p, sizeof(p), "/proc/%d/comm", (int)kids[i]);
		f = fopen(p, "r");
		if (f != NULL && fgets(comm, sizeof(comm), f) != NULL && strncmp(comm, "sbx-guest-init", 14) == 0)
			cells++;
		if (f != NULL)
			fclose(f);
	}
	print_message("%zu cells before the stop (pooled and live)\n", cells);
	kill(m.pid, SIGTERM);
	code = bin_wait(m.pid, 15000);
	snprintf(cg, sizeof(cg), "sbx-mock-%d", (int)m.pid);
	if (code != 0 || cells < 3) {
		bin_cleanup(&m, mark);
		fail_msg("sbx-mock exit %d on SIGTERM; %zu cells seen before (3 idle expected)", code, cells);
	}
	for (size_t i = 0; i < nk; i++)
		if (cx_state(kids[i]) != 0 && cx_state(kids[i]) != 'Z') {
			bin_cleanup(&m, mark);
			fail_msg("the mock's child %d outlived its stop", (int)kids[i]);
		}
	if (!cx_wait_gone(mark, CX_START_MS) || cx_cgroup_find(cg, buf, sizeof(buf))) {
		bin_cleanup(&m, mark);
		fail_msg("a guest process or cgroup (%s) outlived the stop", buf);
	}
	if (rmdir(m.work) != 0) {
		bin_cleanup(&m, mark);
		fail_msg("the work dir %s is not empty after the stop: %s", m.work, strerror(errno));
	}
	bin_cleanup(&m, mark);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(runs_as_root_inside_but_no_host_capability, setup),
		cmocka_unit_test_setup(cannot_read_etc_shadow, setup),
		cmocka_unit_test_setup(cannot_see_host_homes_or_checkout, setup),
		cmocka_unit_test_setup(proc_1_root_is_own_root, setup),
		cmocka_unit_test_setup(host_facts_masked, setup),
		cmocka_unit_test_setup(network_off_cannot_nsenter_host_net, setup),
		cmocka_unit_test_setup(cannot_see_or_signal_other_sandbox_processes, setup),
		cmocka_unit_test_setup(cannot_read_other_sandbox_files, setup),
		cmocka_unit_test_setup(cannot_share_ipc_or_host_sockets, setup),
		cmocka_unit_test_setup(self_signal_cannot_delete_other_tenant, setup),
		cmocka_unit_test_setup(files_api_refuses_hard_link, setup),
		cmocka_unit_test_setup(files_api_refuses_fifo_symlink_and_nul, setup),
		cmocka_unit_test_setup(cannot_write_system_dirs, setup),
		cmocka_unit_test_setup(cannot_reach_the_control_plane, setup),
		cmocka_unit_test_setup(cannot_mount, setup),
		cmocka_unit_test_setup(cannot_ptrace_outside, setup),
		cmocka_unit_test_setup(pid1_is_not_a_way_around_the_filter, setup),
		cmocka_unit_test_setup(cannot_unshare_new_namespaces, setup),
		cmocka_unit_test_setup(fork_bomb_bounded_by_pids, setup),
		cmocka_unit_test_setup(memory_over_shape_exits_137, setup),
		cmocka_unit_test_setup(pause_freezes_background, setup),
		cmocka_unit_test_setup_teardown(internet_flood_leaves_other_tenants_theirs, setup, round2_teardown),
		cmocka_unit_test_setup_teardown(internet_slow_head_has_a_deadline, setup, round2_teardown),
		cmocka_unit_test_setup_teardown(dns_flood_held_to_a_share, setup, round2_teardown),
		cmocka_unit_test_setup_teardown(exec_output_amplification_bounded, setup, round2_teardown),
		cmocka_unit_test_setup(no_guest_survives_mock_kill, setup),
		cmocka_unit_test_setup(next_mock_sweeps_killed_mocks_groups, setup),
		cmocka_unit_test_setup(durable_restart_restores_contained_guest, setup),
		cmocka_unit_test_setup(nothing_left_behind, setup),
		cmocka_unit_test_setup(contain_fs_one_filesystem, setup),
		cmocka_unit_test_setup(contain_fs_root_is_private, setup),
		cmocka_unit_test_setup(contain_fs_host_never_writable, setup),
		cmocka_unit_test_setup(contain_fs_fork_copies_root, setup),
		cmocka_unit_test_setup(contain_fs_disk_bounded, setup),
		cmocka_unit_test_setup(pool_cells_share_nothing, setup),
		cmocka_unit_test_setup(pooled_sandbox_pauses_and_forks, setup),
		cmocka_unit_test_setup(pool_counts_against_no_cap, setup),
		cmocka_unit_test_setup(pool_deletes_leave_no_link_rules, setup),
		cmocka_unit_test_setup_teardown(pool_off_still_works, setup, pool_off_teardown),
		cmocka_unit_test_setup(pool_gone_after_stop, setup),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-TO-sbx-mock\n", argv[0]);
		return 2;
	}
	g_bin = argv[1];
	g_mode = getenv("SBX_CONTAIN_GUEST_MODE");
	if (g_mode != NULL && g_mode[0] == '\0')
		g_mode = NULL;
	g_pool = getenv("SBX_CONTAIN_WARM_POOL");
	if (g_pool != NULL && g_pool[0] == '\0')
		g_pool = NULL;
	/* SBX_CONTAIN_ONLY=PATTERN runs the matching tests only (cmocka's
	 * filter, * and ? wildcards): for ci/stress and for a failure's re-run */
	if (getenv("SBX_CONTAIN_ONLY") != NULL && getenv("SBX_CONTAIN_ONLY")[0] != '\0')
		cmocka_set_test_filter(getenv("SBX_CONTAIN_ONLY"));
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* fz_harness: drives one backend-fuzzer input against a backend driver and
 * the embedded mock, with the conformance runner's own machinery (driver
 * processes, fault rules scoped to the tenant, journal and sandbox reads:
 * conformance/src runner_driver.c, control_plane.c, checks_common.c).
 *
 * Driver reuse: settings reach a driver as its environment (PROTOCOL.md), so
 * a driver serves one combination of settings. Drivers are kept in a small
 * pool keyed by that environment, each with its own API key; before every
 * input the mock is reset (POST /_mock/reset), so the key names a new, empty
 * tenant: no journal entry, sandbox or fault rule of an earlier input
 * remains. A driver is replaced when it dies, after SBX_FUZZ_RESTART_EVERY
 * inputs (default 200), when the input asks for a fresh one, or when it left
 * guests behind (after shutdown()). Never leaves a process behind: drivers
 * are process-group leaders stopped by fz_harness_fini. The built-in
 * reference backend's drivers are forks of a zygote (fz_zygote.c), not new
 * processes of this binary: a start costs 2-4 ms instead of 20-90. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "conform.h"
#include "fz_harness.h"
#include "fz_zygote.h"
#include "sbx/mock.h"
#include "sbx/sys.h"

#define POOL 6
#define RUN_T 30.0

struct slot {
	char envkey[2048];
	struct cf_case *c;
	struct cf_driver *d;
	cJSON *caps;
	char name[64];
	unsigned served;
	unsigned long used;
	bool no_concurrent; /* answered run_concurrent with a ProtocolError */
	bool verified;      /* completed a clean GET /v1/whoami (once per process) */
	off_t err_off;
};

static struct {
	bool ready;
	sbx_mock *mock;
	struct cf_config cf;
	char workdir[300];
	char dead_url[64];
	char *cmd;
	char *python;      /* SBX_FUZZ_PYTHON_BACKEND */
	char *py_adapter;  /* the Python adapter's path (langflow_backend.py) */
	bool builtin;      /* the built-in reference backend (self-exec) */
	const char *profile; /* SBX_FUZZ_PROFILE or NULL (decided by the driver's name) */
	unsigned restart_every;
	struct slot pool[POOL];
	unsigned long clock;
	cJSON *shapes;
} H;

static const struct cf_check FUZZ_DEF = {"FUZZ", "fuzz", "backend fuzzer input", 0, false, NULL};

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "backend_fuzzer: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* python3 on PATH may be a wrapper: a pyenv shim is a bash script that
 * looks the interpreter up on every start (~1 s under load, 6x a bare
 * start). Every guest run and the Python driver start python3, so the
 * interpreter's own directory goes first in PATH, once. */
static void real_python_first(void)
{
	FILE *p = popen("python3 -c 'import sys; print(sys.executable)' 2>/dev/null", "r");
	char exe[PATH_MAX] = "";
	const char *path = getenv("PATH");
	sbx_strbuf b = SBX_STRBUF_INIT;
	char *slash;

	if (p == NULL)
		return;
	if (fgets(exe, sizeof(exe), p) == NULL)
		exe[0] = '\0';
	pclose(p);
	exe[strcspn(exe, "\n")] = '\0';
	slash = strrchr(exe, '/');
	if (exe[0] != '/' || slash == NULL)
		return;
	*slash = '\0';
	sbx_strbuf_printf(&b, "%s%s%s", exe, path != NULL ? ":" : "", path != NULL ? path : "");
	setenv("PATH", sbx_strbuf_str(&b), 1);
	sbx_strbuf_free(&b);
}

static void backend_from_env(const char *self_exe)
{
	const char *cmd = getenv("SBX_FUZZ_BACKEND_CMD");
	const char *py = getenv("SBX_FUZZ_PYTHON_BACKEND");
	const char *quirk = getenv("SBX_FUZZ_QUIRK");
	const char *every = getenv("SBX_FUZZ_RESTART_EVERY");
	sbx_strbuf b = SBX_STRBUF_INIT;

	H.profile = getenv("SBX_FUZZ_PROFILE");
	if (H.profile != NULL && strcmp(H.profile, "langflow-backend") != 0 &&
	    strcmp(H.profile, "createos-backend") != 0)
		die("SBX_FUZZ_PROFILE must be langflow-backend or createos-backend, got \"%s\"", H.profile);
	H.restart_every = 200;
	if (every != NULL) {
		char *end;
		long v = strtol(every, &end, 10);

		if (end == every || *end != '\0' || v < 1 || v > 1000000)
			die("SBX_FUZZ_RESTART_EVERY wants 1..1000000, got \"%s\"", every);
		H.restart_every = (unsigned)v;
	}
	if (cmd != NULL && *cmd != '\0') {
		H.cmd = strdup(cmd);
	} else if (py != NULL && *py != '\0') {
		const char *dir = getenv("SBX_CONFORM_ADAPTERS") ? getenv("SBX_CONFORM_ADAPTERS")
								 : SBX_CONFORM_ADAPTERS_DIR;
		char *q1, *q2;

		if (strchr(py, ':') == NULL)
			die("SBX_FUZZ_PYTHON_BACKEND wants module:factory, got \"%s\"", py);
		sbx_strbuf_printf(&b, "%s/langflow_backend.py", dir);
		H.py_adapter = strdup(sbx_strbuf_str(&b));
		H.python = strdup(py);
		q1 = cf_shell_quote(sbx_strbuf_str(&b));
		q2 = cf_shell_quote(py);
		sbx_strbuf_reset(&b);
		sbx_strbuf_printf(&b, "python3 %s %s", q1, q2);
		free(q1);
		free(q2);
		H.cmd = sbx_strbuf_detach(&b, NULL);
	} else {
		char *q = cf_shell_quote(self_exe);

		sbx_strbuf_puts(&b, q);
		free(q);
		if (quirk != NULL && *quirk != '\0') {
			q = cf_shell_quote(quirk);
			sbx_strbuf_printf(&b, " --quirk %s", q);
			free(q);
		}
		H.cmd = sbx_strbuf_detach(&b, NULL);
		H.builtin = true;
	}
	sbx_strbuf_free(&b);
}

static void start_mock(void)
{
	sbx_err err = {{0}};
	sbx_mock_config mc;

	sbx_mock_config_init(&mc);
	mc.quiet = true;
	mc.host_rule_mode = SBX_HOST_RULES_OBSERVED;
	mc.timing = "instant"; /* the fastest timing: transitions complete at the next read */
	/* hangs, latencies and dribbles end at once as they would after their
	 * delay: an input costs milliseconds (SBX_FUZZ_REAL_DELAYS=1: real) */
	mc.virtual_delays = getenv("SBX_FUZZ_REAL_DELAYS") == NULL;
	/* An input makes at most a few hundred requests, and the reset before
	 * each input walks the whole ring: 65536 slots cost ~30 ms under ASan. */
	mc.journal_size = 4096;
	mc.work_dir = H.workdir;
	/* Plain guests by default: no cell to build per sandbox, ~40 % more
	 * inputs per second; the guest code is the fuzzer's own (prints,
	 * sleeps, exits). SBX_FUZZ_GUEST_MODE=contained for the real thing. */
	mc.guest_mode = getenv("SBX_FUZZ_GUEST_MODE") ? getenv("SBX_FUZZ_GUEST_MODE") : "plain";
	H.mock = sbx_mock_start(&mc, &err);
	if (H.mock == NULL && strcmp(mc.guest_mode, "plain") != 0) {
		/* No user namespaces here (some CI runners): plain guests. The
		 * trip-wire stays sound: the guest code never writes it from a
		 * cwd under the work dir, where plain guests run. */
		fprintf(stderr, "backend_fuzzer: contained guests unavailable (%s); using plain guests\n", err.msg);
		mc.guest_mode = "plain";
		H.mock = sbx_mock_start(&mc, &err);
	}
	if (H.mock == NULL)
		die("cannot start the embedded mock: %s", err.msg);
	snprintf(H.cf.url, sizeof(H.cf.url), "%s", sbx_mock_url(H.mock));
	snprintf(H.cf.admin_token, sizeof(H.cf.admin_token), "%s", sbx_mock_admin_token(H.mock));
}

/* Python drivers as forks of one waiting interpreter (fz_pyzygote.py says
 * why and how), where the script is at hand and the architecture's clone
 * number known; else each driver starts python3 anew, as with
 * SBX_FUZZ_NO_ZYGOTE=1. */
static void python_zygote(void)
{
	struct utsname u;
	char why[256];
	const char *script = getenv("SBX_FUZZ_PY_ZYGOTE") ? getenv("SBX_FUZZ_PY_ZYGOTE") : SBX_FZ_PYZYGOTE;
	char cache[sizeof(H.cf.tmpdir) + 16];
	const char *argv[] = {"python3", script, H.py_adapter, H.python, cache, NULL};

	snprintf(cache, sizeof(cache), "%s/pycache", H.cf.tmpdir);
	if (access(script, R_OK) != 0 || uname(&u) != 0 ||
	    (strcmp(u.machine, "x86_64") != 0 && strcmp(u.machine, "aarch64") != 0))
		return;
	if (fz_zygote_start_argv((char *const *)argv, "SBX_FUZZ_PY_ZYGOTE_FD", why, sizeof(why)) != 0)
		die("cannot start the Python zygote: %s (SBX_FUZZ_NO_ZYGOTE=1 does without)", why);
	H.cf.spawn = fz_zygote_spawn;
}

void fz_harness_init(const char *self_exe)
{
	sbx_err err = {{0}};
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	if (H.ready)
		return;
	signal(SIGPIPE, SIG_IGN);
	memset(&H.cf, 0, sizeof(H.cf));
	pthread_mutex_init(&H.cf.lock, NULL);
	H.cf.timeout_scale = 1.0;
	H.cf.seed = 1;
	H.cf.kind = CF_EMBEDDED_MOCK;
	real_python_first();
	backend_from_env(self_exe);
	H.cf.backend_cmd = H.cmd;
	if (H.builtin && getenv("SBX_FUZZ_NO_ZYGOTE") == NULL) {
		char why[256];

		/* before the mock's threads: the zygote is a fork of this process */
		if (fz_zygote_start(self_exe, getenv("SBX_FUZZ_QUIRK"), why, sizeof(why)) != 0)
			die("cannot start the reference backend's zygote: %s (SBX_FUZZ_NO_ZYGOTE=1 does without)",
			    why);
		H.cf.spawn = fz_zygote_spawn;
	}
	snprintf(H.cf.tmpdir, sizeof(H.cf.tmpdir), "%s/sbx-fuzz-XXXXXX", tmp);
	if (mkdtemp(H.cf.tmpdir) == NULL)
		die("cannot create a scratch dir under %s", tmp);
	if (H.python != NULL && getenv("SBX_FUZZ_NO_ZYGOTE") == NULL)
		python_zygote();
	sbx_http_global_init();
	snprintf(H.workdir, sizeof(H.workdir), "%s/guests", H.cf.tmpdir);
	start_mock();
	if (cf_control_plane_open(&H.cf, &err) != 0)
		die("%s", err.msg);
	snprintf(H.dead_url, sizeof(H.dead_url), "http://127.0.0.1:%d", cf_dead_port());
	H.ready = true;
	atexit(fz_harness_fini);
	fz_on_finding = fz_harness_fini;
}

/* ---- the pool ---- */

static struct cf_case *case_new(void)
{
	struct cf_case *c = malloc(sizeof(*c));

	if (c == NULL)
		die("out of memory");
	cf_case_init(c, &H.cf, &FUZZ_DEF, "langflow-backend"); /* a fresh tenant key */
	return c;
}

/* Clears the verdict a driver's case collects between inputs. */
static void case_clear(struct cf_case *c)
{
	snprintf(c->verdict, sizeof(c->verdict), "pass");
	sbx_strbuf_reset(&c->reason);
	cJSON_Delete(c->details);
	c->details = cJSON_CreateArray();
	cJSON_Delete(c->fault_ids);
	c->fault_ids = cJSON_CreateArray();
}

static void slot_retire(struct slot *s, bool shutdown)
{
	size_t i;

	if (s->c == NULL)
		return;
	if (shutdown && s->d != NULL && !cf_driver_broken(s->d)) {
		cJSON *r = cf_op(s->d, "shutdown", NULL, RUN_T, NULL, NULL);

		cJSON_Delete(r);
	}
	for (i = 0; i < s->c->driver_count; i++) {
		cf_driver_stop(s->c->drivers[i]);
		cf_driver_free(s->c->drivers[i]);
	}
	unlink(s->c->trip);
	cf_case_free(s->c);
	free(s->c);
	cJSON_Delete(s->caps);
	memset(s, 0, sizeof(*s));
}

static size_t env_count(const char *const *env)
{
	size_t n = 0;

	while (env[n] != NULL)
		n++;
	return n;
}

/* Starts the slot's driver (hello + capabilities). The mock was just reset,
 * so every journal entry of the tenant now came from those two calls. */
static bool slot_start(struct slot *s, const struct fz_input *in, struct fz_outcome *out)
{
	const char *env[20];
	char buf[2048];
	size_t n;
	const char *et, *em;
	cJSON *j, *f, *hello;

	s->c = case_new();
	fz_settings_env(in, H.dead_url, s->c->key, env, buf, sizeof(buf));
	n = env_count(env);
	if (H.builtin)
		env[n++] = "SBX_FUZZ_AS_REF_BACKEND=1";
	env[n] = NULL;
	s->d = cf_driver_start(s->c, env);
	if (s->d == NULL)
		return false;
	f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "protocol", 1);
	hello = cf_op(s->d, "hello", f, 20, &et, &em);
	cJSON_Delete(f);
	if (hello == NULL)
		return false;
	snprintf(s->name, sizeof(s->name), "%s", cf_str(hello, "name") ? cf_str(hello, "name") : "");
	cJSON_Delete(hello);
	s->caps = cf_op(s->d, "capabilities", NULL, 20, &et, &em);
	if (s->caps == NULL)
		return false;
	j = cf_journal(s->c);
	out->caps_io = j != NULL ? cJSON_GetArraySize(j) : 0;
	cJSON_Delete(j);
	return true;
}

/* The driver for these settings: the pooled one, or a new one. */
static struct slot *slot_for(const struct fz_input *in, struct fz_outcome *out)
{
	const char *env[20];
	char buf[2048];
	char envkey[2048] = "";
	struct slot *s = NULL, *lru = &H.pool[0];
	size_t i;
	double t0, t1;

	fz_settings_env(in, H.dead_url, "KEY", env, buf, sizeof(buf));
	for (i = 0; env[i] != NULL; i++) {
		size_t len = strlen(envkey);

		snprintf(envkey + len, sizeof(envkey) - len, "%s\n", env[i]);
	}
	out->caps_io = -1;
	for (i = 0; i < POOL; i++) {
		if (H.pool[i].c != NULL && strcmp(H.pool[i].envkey, envkey) == 0)
			s = &H.pool[i];
		if (H.pool[i].used < lru->used)
			lru = &H.pool[i];
	}
	if (s != NULL && !in->fresh && s->served < H.restart_every && s->d != NULL && !cf_driver_broken(s->d))
		return s;
	if (s == NULL)
		s = lru;
	t0 = cf_now_ms();
	slot_retire(s, true);
	t1 = cf_now_ms();
	snprintf(s->envkey, sizeof(s->envkey), "%s", envkey);
	(void)slot_start(s, in, out); /* on failure the caller sees the broken driver */
	if (getenv("SBX_FUZZ_TRACE") != NULL)
		fprintf(stderr, "backend_fuzzer: driver retired in %.1f ms, started in %.1f ms\n", t1 - t0,
			cf_now_ms() - t1);
	out->fresh_whoami = 1;
	return s;
}

/* ---- one input ---- */

static void admin(const char *method, const char *path)
{
	sbx_err err = {{0}};
	cJSON *d = cf_admin(&H.cf, method, path, NULL, &err);

	if (d == NULL)
		die("the mock's admin API failed: %s", err.msg);
	cJSON_Delete(d);
}

static cJSON *journal(struct cf_case *c)
{
	cJSON *j = cf_journal(c);

	if (j == NULL)
		die("cannot read the journal: %s", sbx_strbuf_str(&c->reason));
	return j;
}

static char *read_from(const char *path, off_t *off)
{
	sbx_strbuf b = SBX_STRBUF_INIT;
	char buf[8192];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (lseek(fd, *off, SEEK_SET) == *off)
			while ((n = read(fd, buf, sizeof(buf))) > 0) {
				sbx_strbuf_append(&b, buf, (size_t)n);
				*off += n;
			}
		close(fd);
	}
	return sbx_strbuf_detach(&b, NULL);
}

/* A GET /v1/whoami answered 2xx with no fault: the driver's once-per-process
 * preflight is done, none may start in a later input on it. */
static bool whoami_done(const cJSON *journal)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, journal) {
		double st = cf_num(e, "status", 0);

		if (cf_str(e, "fault") == NULL && st >= 200 && st <= 299 &&
		    strcmp(cf_str(e, "path") ? cf_str(e, "path") : "", "/v1/whoami") == 0)
			return true;
	}
	return false;
}

static bool preflight_fault(const cJSON *journal)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, journal) {
		const char *p = cf_str(e, "path") ? cf_str(e, "path") : "";

		if (cf_str(e, "fault") != NULL && (strcmp(p, "/v1/whoami") == 0 || strcmp(p, "/v1/shapes") == 0))
			return true;
	}
	return false;
}

void fz_harness_run(const struct fz_input *in, struct fz_outcome *out)
{
	struct slot *s;
	unsigned i;

	double t0 = cf_now_ms(), t1, t2, t3;

	memset(out, 0, sizeof(*out));
	out->backend_cmd = H.cmd;
	out->mock_url = H.cf.url;
	admin("POST", "/_mock/reset"); /* a new, empty tenant for every key */
	t1 = cf_now_ms();
	s = slot_for(in, out);
	t2 = cf_now_ms();
	s->used = ++H.clock;
	s->served++;
	if (s->d == NULL || cf_driver_broken(s->d)) {
		out->runs[0].broken = true;
		snprintf(out->runs[0].etype, sizeof(out->runs[0].etype), "HarnessError");
		snprintf(out->runs[0].emsg, sizeof(out->runs[0].emsg), "the driver did not start: %s",
			 sbx_strbuf_str(&s->c->reason));
	}
	case_clear(s->c);
	snprintf(out->key, sizeof(out->key), "%s", s->c->key);
	snprintf(out->trip_path, sizeof(out->trip_path), "%s", s->c->trip);
	unlink(out->trip_path);
	out->caps = s->caps;
	out->profile = H.profile != NULL ? H.profile
					 : strcmp(s->name, "createos") == 0 ? "createos-backend" : "langflow-backend";
	out->createos = strcmp(out->profile, "createos-backend") == 0;
	if (H.shapes == NULL) {
		sbx_err err = {{0}};
		cJSON *d = cf_api(s->c, "GET", "/v1/shapes?limit=500", NULL, NULL, &err);

		H.shapes = cJSON_DetachItemFromObjectCaseSensitive(d, "data");
		if (!cJSON_IsArray(H.shapes)) {
			cJSON_Delete(H.shapes);
			H.shapes = cJSON_IsArray(d) ? cJSON_Duplicate(d, true) : cJSON_CreateArray();
		}
		cJSON_Delete(d);
		admin("POST", "/_mock/reset"); /* that GET is not the backend's */
	}
	out->shapes = H.shapes;
	for (i = 0; i < in->nruns; i++) {
		char hex[9];

		(void)sbx_random_hex(hex, 8);
		snprintf(out->runs[i].token, sizeof(out->runs[i].token), "v-%u-%s", i, hex);
	}
	if (out->runs[0].broken) {
		out->journal = cJSON_CreateArray();
		out->sandboxes = cJSON_CreateArray();
		out->stderr_tail = s->d != NULL ? read_from(cf_driver_stderr_path(s->d), &s->err_off) : strdup("");
		return;
	}
	for (i = 0; i < in->nfaults; i++)
		if (cf_fault(s->c, fz_fault_rule(in, i)) != 0)
			die("the mock refused a fault rule: %s", sbx_strbuf_str(&s->c->reason));
	out->driver_pid = (double)cf_driver_pid(s->d);
	out->verified_before = s->verified;
	fz_session_run(in, s->c, s->d, H.workdir, &s->no_concurrent, out);
	t3 = cf_now_ms();
	admin("DELETE", "/_mock/faults"); /* the reads below must not meet them */
	out->journal = journal(s->c);
	/* a fork_check's child may have made it: not this process's own */
	s->verified |= in->surface != FZ_SURF_FORK && whoami_done(out->journal);
	for (i = 0; i < in->nruns && out->concurrent; i++)
		out->runs[i].j_hi = cJSON_GetArraySize(out->journal);
	out->sandboxes = cf_sandboxes(s->c);
	if (out->sandboxes == NULL)
		die("cannot list the tenant's sandboxes: %s", sbx_strbuf_str(&s->c->reason));
	out->stderr_tail = read_from(cf_driver_stderr_path(s->d), &s->err_off);
	if (cf_live_guests(s->c, out->sandboxes, NULL) > 0 || cf_driver_broken(s->d)) {
		/* Guests are left (or the driver is gone): shutdown() may still
		 * clean up; the invariant is judged after it. */
		struct cf_case t;

		memset(&t, 0, sizeof(t));
		t.cf = &H.cf;
		snprintf(t.key, sizeof(t.key), "%s", out->key);
		slot_retire(s, true);
		out->after_shutdown = cf_sandboxes(&t);
		if (out->after_shutdown == NULL)
			die("cannot list the tenant's sandboxes after shutdown");
	} else if (s->served >= H.restart_every || preflight_fault(out->journal)) {
		/* A preflight runs once per process and a refusal-class failure
		 * of it sticks (as in the integration): a driver that met a
		 * fault there would carry this input into the next one. */
		slot_retire(s, true);
	}
	out->trip = access(out->trip_path, F_OK) == 0;
	unlink(out->trip_path);
	if (getenv("SBX_FUZZ_TRACE") != NULL) {
		const cJSON *e;

		cJSON_ArrayForEach(e, out->journal)
			fprintf(stderr, "  %s %s %g %.1f ms\n", cf_str(e, "method"), cf_str(e, "path"),
				cf_num(e, "status", 0), cf_num(e, "duration_us", 0) / 1000.0);
	}
	if (getenv("SBX_FUZZ_TRACE") != NULL)
		fprintf(stderr, "backend_fuzzer: reset %.1f ms, driver %.1f ms, runs %.1f ms, after %.1f ms\n", t1 - t0,
			t2 - t1, t3 - t2, cf_now_ms() - t3);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void fz_harness_fini(void)
{
	size_t i;

	if (!H.ready)
		return;
	H.ready = false;
	for (i = 0; i < POOL; i++)
		slot_retire(&H.pool[i], false);
	fz_zygote_stop();
	cf_control_plane_close(&H.cf);
	sbx_mock_stop(H.mock);
	nftw(H.cf.tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	cJSON_Delete(H.shapes);
	free(H.cmd);
	free(H.python);
	free(H.py_adapter);
	sbx_http_global_cleanup();
}

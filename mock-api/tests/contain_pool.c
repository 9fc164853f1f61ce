/* contain_pool: the warm pool of cells (issue 24 item 3; CONTAINMENT.md
 * "The warm pool"), in the containment battery:
 *   - two sandboxes handed out by the pool share nothing: their PID, mount,
 *     network, UTS, IPC and user namespaces differ (from each other and the
 *     host's), a file of one is not in the other, each one's hostname and
 *     name files are its own id, each one's tree is <work>/<id>;
 *   - a pooled sandbox pauses (its background process stops) and resumes,
 *     and forks: the fork (a fresh cell) has the source's files and its own
 *     name;
 *   - the pool is bounded and outside the tenants' caps: idle cells are at
 *     most the pool's size, each with the small idle memory limit, and a
 *     tenant at its cap is refused without a cell being taken;
 *   - with the pool off (--warm-pool 0) a second mock creates, runs,
 *     pauses, forks and deletes as before, and its DELETE answers after the
 *     tree is gone (no deferred teardown).
 * The binary's stop with a full pool and a teardown pending is
 * test_contain.c's pool_gone_after_stop. The tests that need the pool skip
 * when the group mock has none (SBX_CONTAIN_WARM_POOL=0). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "contain_pool.h"
#include "contain_util.h"

static void nap_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

double pool_stat(const char *url, const char *token, const char *key)
{
	th_resp r;
	const cJSON *v;
	double d = -1;

	th_admin(url, token, "GET", "/_mock/pool", NULL, &r);
	v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r.json, "data"), key);
	if (cJSON_IsNumber(v))
		d = v->valuedouble;
	else if (cJSON_IsBool(v))
		d = cJSON_IsTrue(v) ? 1 : 0;
	th_resp_free(&r);
	return d;
}

/* One GET /_mock/egress/links: its numbers (-1 when one is missing). */
typedef struct links_view {
	double enforced, sandboxes, made_ahead, chains, entries;
} links_view;

static double num_of(const cJSON *d, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, key);

	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v) ? 1 : 0;
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static links_view links_get(const char *url, const char *token)
{
	links_view l;
	const cJSON *d;
	th_resp r;

	th_admin(url, token, "GET", "/_mock/egress/links", NULL, &r);
	if (r.status != 200)
		fail_msg("GET /_mock/egress/links: HTTP %ld %s", r.status, sbx_strbuf_str(&r.body));
	d = cJSON_GetObjectItemCaseSensitive(r.json, "data");
	l.enforced = num_of(d, "enforced");
	l.sandboxes = num_of(d, "sandboxes");
	l.made_ahead = num_of(d, "made_ahead");
	l.chains = num_of(d, "kernel_chains");
	l.entries = num_of(d, "kernel_map_entries");
	th_resp_free(&r);
	return l;
}

/* The kernel's table holds a chain and a map entry for each wired sandbox
 * and each link made ahead, and nothing else (what a leak would break),
 * with `sandboxes` wired; else fails saying what is there. */
static bool links_match_kernel(const char *url, const char *token, double sandboxes, links_view *l)
{
	*l = links_get(url, token);
	return l->sandboxes == sandboxes && l->chains == l->sandboxes + l->made_ahead &&
	       l->entries == l->sandboxes + l->made_ahead;
}

static void links_expect(const char *url, const char *token, double sandboxes, int wait_ms, const char *what)
{
	links_view l;

	for (int w = 0; !links_match_kernel(url, token, sandboxes, &l); w += 20) {
		if (w >= wait_ms)
			fail_msg("%s: %.0f sandboxes wired (want %.0f), %.0f made ahead, the kernel's table "
				 "has %.0f sandbox chains and %.0f map entries",
				 what, l.sandboxes, sandboxes, l.made_ahead, l.chains, l.entries);
		nap_ms(20);
	}
}

bool pool_wait_full(const char *url, const char *token, int ms)
{
	double size = pool_stat(url, token, "size");

	for (int waited = 0; waited < ms; waited += 20) {
		if (pool_stat(url, token, "idle") >= size && pool_stat(url, token, "retiring") == 0)
			return true;
		nap_ms(20);
	}
	return false;
}

/* The group mock has a pool (else the test is skipped), full: the next
 * creates are handed out by it. */
static void need_full_pool(void)
{
	if (pool_stat(U, TOK, "enabled") != 1) {
		print_message("SKIP: the mock has no warm pool (SBX_CONTAIN_WARM_POOL=0?)\n");
		skip();
	}
	if (!pool_wait_full(U, TOK, CX_START_MS))
		fail_msg("the pool did not fill within %d ms (idle %.0f, last error: see GET /_mock/pool)",
			 CX_START_MS, pool_stat(U, TOK, "idle"));
}

static void pl_sh(const char *id, const char *script, cx_res *x)
{
	cx_sh("kp", id, script, 30000, x);
	if (x->status != 200 || x->code != 0)
		fail_msg("exec %s: HTTP %ld exit %d: %s", script, x->status, x->code, x->body);
}

/* The host pid of a `sleep` started in the background of id. */
static pid_t pl_sleeper(const char *id, char *mark, size_t cap)
{
	char re[32], script[128];
	cx_res x;
	pid_t pid;

	cx_marker(mark, cap, re, sizeof(re));
	snprintf(script, sizeof(script), "sleep %s >/dev/null 2>&1 &", mark);
	pl_sh(id, script, &x);
	cx_free(&x);
	pid = cx_wait_find(mark, CX_START_MS);
	if (pid < 0)
		fail_msg("the background sleep of %s is not found on the host", id);
	return pid;
}

/* Its hostname, /etc/hostname and /etc/hosts name id, and nothing else. */
static void expect_named(const char *id, const char *other)
{
	char want[160];
	cx_res x;

	pl_sh(id, "hostname; cat /etc/hostname; cat /etc/hosts", &x);
	snprintf(want, sizeof(want), "%s\n%s\n127.0.0.1\tlocalhost %s\n::1\tlocalhost\n", id, id, id);
	if (strcmp(x.out, want) != 0 || (other != NULL && strstr(x.out, other) != NULL))
		fail_msg("sandbox %s is not named its own: %s", id, x.out);
	cx_free(&x);
}

void pool_cells_share_nothing(void **state)
{
	static const char *const nss[] = {"pid", "mnt", "net", "uts", "ipc", "user"};
	char a[64], b[64], ma[32], mb[32], na[128], nb[128], nh[128], tree[1024];
	double before;
	pid_t pa, pb;
	cx_res x;

	(void)state;
	need_full_pool();
	before = pool_stat(U, TOK, "handed_out");
	create("kp", "{\"shape\":\"s-1vcpu-1gb\"}", a, sizeof(a));
	create("kp", "{\"shape\":\"s-1vcpu-1gb\"}", b, sizeof(b));
	if (pool_stat(U, TOK, "handed_out") - before < 2)
		fail_msg("the two creates did not both come from the pool (handed out %.0f)",
			 pool_stat(U, TOK, "handed_out") - before);
	pa = pl_sleeper(a, ma, sizeof(ma));
	pb = pl_sleeper(b, mb, sizeof(mb));
	for (size_t i = 0; i < sizeof(nss) / sizeof(nss[0]); i++) {
		assert_true(cx_ns(pa, nss[i], na, sizeof(na)) && cx_ns(pb, nss[i], nb, sizeof(nb)) &&
			    cx_ns(0, nss[i], nh, sizeof(nh)));
		if (strcmp(na, nb) == 0 || strcmp(na, nh) == 0 || strcmp(nb, nh) == 0)
			fail_msg("%s namespace shared: %s %s host %s", nss[i], na, nb, nh);
	}
	pl_sh(a, "echo mine > /workspace/a-only; echo mine > /tmp/a-only; echo mine > /root/a-only", &x);
	cx_free(&x);
	pl_sh(b, "ls -A /workspace /tmp /root; ls /proc/1/root/workspace 2>&1; true", &x);
	if (strstr(x.out, "a-only") != NULL)
		fail_msg("a file of %s is in %s: %s", a, b, x.out);
	cx_free(&x);
	expect_named(a, b);
	expect_named(b, a);
	for (int i = 0; i < 2; i++) {
		struct stat st;

		snprintf(tree, sizeof(tree), "%s/%s", contain_work_dir(), i == 0 ? a : b);
		if (lstat(tree, &st) != 0 || !S_ISDIR(st.st_mode))
			fail_msg("the pooled sandbox's tree is not %s", tree);
	}
	cx_kill_all(ma);
	cx_kill_all(mb);
}

/* POST op on id and wait until its status is want. */
static void pl_lifecycle(const char *id, const char *op, const char *body, const char *want,
			 char *fork_id, size_t cap)
{
	char route[160];
	th_resp r;

	snprintf(route, sizeof(route), "/v1/sandboxes/%s/%s", id, op);
	th_json(U, "kp", "POST", route, body, &r);
	if (r.status != 200 && r.status != 202)
		fail_msg("%s: HTTP %ld %s", op, r.status, sbx_strbuf_str(&r.body));
	if (fork_id != NULL)
		snprintf(fork_id, cap, "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	if (want != NULL && !cx_wait_status("kp", fork_id != NULL ? fork_id : id, want, CX_START_MS))
		fail_msg("%s: the sandbox never became %s", op, want);
}

/* The ticker's lines, read from the host through a process of the
 * sandbox (the files API, like exec, answers 409 while it is paused). */
static long ticks(pid_t in)
{
	return cx_root_lines(in, "/workspace/ticks");
}

void pooled_sandbox_pauses_and_forks(void **state)
{
	char id[64], fid[64], mark[32];
	double before;
	long c1, c2;
	pid_t in;
	cx_res x;

	(void)state;
	need_full_pool();
	before = pool_stat(U, TOK, "handed_out");
	create("kp", "{\"shape\":\"s-1vcpu-1gb\"}", id, sizeof(id));
	assert_true(pool_stat(U, TOK, "handed_out") > before);
	pl_sh(id, "echo kept > /root/kept; setsid sh -c 'while :; do echo t >> /workspace/ticks; "
		  "sleep 0.02; done' </dev/null >/dev/null 2>&1 &",
	      &x);
	cx_free(&x);
	in = pl_sleeper(id, mark, sizeof(mark));
	for (int w = 0; ticks(in) < 3 && w < CX_START_MS; w += 20)
		nap_ms(20);
	pl_lifecycle(id, "pause", NULL, "paused", NULL, 0);
	nap_ms(100);
	c1 = ticks(in);
	nap_ms(500);
	c2 = ticks(in);
	print_message("ticks while paused: %ld, then %ld\n", c1, c2);
	if (c1 < 3 || c2 != c1)
		fail_msg("a paused pooled sandbox kept running: %ld -> %ld ticks", c1, c2);
	before = pool_stat(U, TOK, "handed_out");
	pl_lifecycle(id, "fork", "{}", "running", fid, sizeof(fid));
	if (pool_stat(U, TOK, "handed_out") != before)
		fail_msg("a fork took a pooled cell (it must start from the source's files)");
	pl_sh(fid, "cat /root/kept", &x);
	assert_string_equal(x.out, "kept\n");
	cx_free(&x);
	expect_named(fid, id);
	pl_lifecycle(id, "resume", NULL, "running", NULL, 0);
	for (int w = 0; ticks(in) <= c2 && w < CX_START_MS; w += 20)
		nap_ms(20);
	if (ticks(in) <= c2)
		fail_msg("the pooled sandbox did not resume: %ld ticks", ticks(in));
	expect_named(id, fid);
	cx_kill_all(mark);
}

/* The pool's idle groups: each at most the idle memory limit (where the
 * mock has cgroups); their count. -1 when the mock reports none. */
static int idle_groups_bounded(void)
{
	th_resp r;
	const char *note, *in;
	char dir[1024], path[1400], buf[64];
	int n = 0;
	DIR *d;
	struct dirent *de;

	th_admin(U, TOK, "GET", "/_mock/settings", NULL, &r);
	note = th_data_str(&r, "cgroups");
	in = note != NULL ? strstr(note, " in /") : NULL;
	if (in == NULL || strncmp(note, "cgroups: v", 10) != 0) {
		th_resp_free(&r);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(in + 4, ";, "), in + 4);
	th_resp_free(&r);
	d = opendir(dir);
	while (d != NULL && (de = readdir(d)) != NULL) {
		FILE *f;

		if (strncmp(de->d_name, "pool-", 5) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/memory.limit_in_bytes", dir, de->d_name);
		if (access(path, F_OK) != 0)
			snprintf(path, sizeof(path), "%s/%s/memory.max", dir, de->d_name);
		f = fopen(path, "r");
		if (f == NULL || fgets(buf, sizeof(buf), f) == NULL || strtoull(buf, NULL, 10) > (64ULL << 20))
			fail_msg("an idle pooled cell's memory limit is not the pool's small one: %s: %s", path,
				 f == NULL ? "unreadable" : buf);
		fclose(f);
		n++;
	}
	if (d != NULL)
		closedir(d);
	return n;
}

void pool_counts_against_no_cap(void **state)
{
	char ids[3][64];
	double handed, misses;
	int groups;
	th_resp r;

	(void)state;
	need_full_pool();
	groups = idle_groups_bounded();
	if (groups >= 0 && (double)groups != pool_stat(U, TOK, "size"))
		fail_msg("%d pooled groups for a pool of %.0f idle cells", groups, pool_stat(U, TOK, "size"));
	th_admin(U, TOK, "PUT", "/_mock/settings", "{\"sandbox_cap\":2}", &r);
	expect_status(&r, 200, "cap 2");
	th_resp_free(&r);
	create("kp", "{\"shape\":\"s-1vcpu-256mb\"}", ids[0], sizeof(ids[0]));
	create("kp", "{\"shape\":\"s-1vcpu-256mb\"}", ids[1], sizeof(ids[1]));
	handed = pool_stat(U, TOK, "handed_out");
	misses = pool_stat(U, TOK, "misses");
	th_json(U, "kp", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-256mb\"}", &r);
	if (r.status != 403 || fail_field(&r, "code") == NULL || strcmp(fail_field(&r, "code"), "QUOTA_EXCEEDED") != 0)
		fail_msg("a third sandbox over the cap of 2: HTTP %ld %s", r.status, sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	if (pool_stat(U, TOK, "handed_out") != handed || pool_stat(U, TOK, "misses") != misses)
		fail_msg("a create refused at the cap touched the pool");
	/* another tenant has its own cap */
	create("kq", "{\"shape\":\"s-1vcpu-256mb\"}", ids[2], sizeof(ids[2]));
	if (pool_stat(U, TOK, "idle") > pool_stat(U, TOK, "size"))
		fail_msg("more idle cells than the pool's size");
	th_admin(U, TOK, "PUT", "/_mock/settings", "{\"sandbox_cap\":5}", &r);
	expect_status(&r, 200, "cap back to 5");
	th_resp_free(&r);
}

/* With the pool, a DELETE leaves the sandbox's link rules to its cell's
 * teardown after the answer: they still go, the chain and the map entry
 * in the kernel too, and nothing of a live sandbox goes with them. */
void pool_deletes_leave_no_link_rules(void **state)
{
	char ids[2][64], path[128];
	links_view l;
	th_resp r;
	cx_res x;

	(void)state;
	need_full_pool();
	l = links_get(U, TOK);
	if (l.enforced != 1) {
		print_message("SKIP: egress is not enforced here (no simulated internet)\n");
		skip();
	}
	links_expect(U, TOK, l.sandboxes, 0, "before");
	for (int i = 0; i < 2; i++)
		create("kl", "{\"shape\":\"s-1vcpu-256mb\"}", ids[i], sizeof(ids[i]));
	links_expect(U, TOK, l.sandboxes + 2, 0, "two sandboxes created");
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", ids[0]);
	th_json(U, "kl", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "delete");
	th_resp_free(&r);
	links_expect(U, TOK, l.sandboxes + 1, CX_START_MS, "one of two deleted");
	/* the live one is untouched */
	cx_sh("kl", ids[1], "true", 30000, &x);
	if (x.status != 200 || x.code != 0)
		fail_msg("exec in the sandbox left: HTTP %ld exit %d: %s", x.status, x.code, x.body);
	cx_free(&x);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", ids[1]);
	th_json(U, "kl", "DELETE", path, NULL, &r);
	expect_status(&r, 200, "delete");
	th_resp_free(&r);
	links_expect(U, TOK, l.sandboxes, CX_START_MS, "both deleted");
}

/* ---- a second mock with the pool off ---- */

static void off_call(const char *url, const char *method, const char *path, const char *body,
		     long want, th_resp *r)
{
	th_json(url, "ko", method, path, body, r);
	if (r->status != want && !(want == 200 && r->status == 202))
		fail_msg("%s %s: HTTP %ld %s", method, path, r->status, sbx_strbuf_str(&r->body));
}

static void off_wait(const char *url, const char *id, const char *want)
{
	char path[160];

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	for (int w = 0; w < CX_START_MS; w += 20) {
		th_resp r;
		bool there;

		th_json(url, "ko", "GET", path, NULL, &r);
		there = r.status == 200 && th_data_str(&r, "status") != NULL &&
			strcmp(th_data_str(&r, "status"), want) == 0;
		th_resp_free(&r);
		if (there)
			return;
		nap_ms(20);
	}
	fail_msg("%s never became %s", id, want);
}

/* Creates, runs, pauses, forks and deletes on url (a mock without a pool). */
static void off_lifecycle(const char *url, const char *work)
{
	char id[64], fid[64], path[256], tree[1024];
	struct stat st;
	th_resp r;

	off_call(url, "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", 200, &r);
	snprintf(id, sizeof(id), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	off_call(url, "POST", path, "{\"cmd\":\"sh\",\"args\":[\"-c\",\"hostname; echo k > /root/k\"]}", 200, &r);
	if (strstr(sbx_strbuf_str(&r.body), id) == NULL)
		fail_msg("hostname in a cell without a pool: %s", sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/pause", id);
	off_call(url, "POST", path, NULL, 200, &r);
	th_resp_free(&r);
	off_wait(url, id, "paused");
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/fork", id);
	off_call(url, "POST", path, "{}", 200, &r);
	snprintf(fid, sizeof(fid), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	off_wait(url, fid, "running");
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", fid);
	off_call(url, "POST", path, "{\"cmd\":\"cat\",\"args\":[\"/root/k\"]}", 200, &r);
	if (strstr(sbx_strbuf_str(&r.body), "\"stdout\":\"k\\n\"") == NULL)
		fail_msg("the fork lost the file: %s", sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s", i == 0 ? id : fid);
		off_call(url, "DELETE", path, NULL, 200, &r);
		th_resp_free(&r);
		/* without a pool the answer comes after the teardown */
		snprintf(tree, sizeof(tree), "%s/%s", work, i == 0 ? id : fid);
		if (lstat(tree, &st) == 0)
			fail_msg("DELETE without a pool answered before the tree %s was removed", tree);
		/* and before its link rules were (the kernel's table too) */
		if (links_get(url, "offtok").enforced == 1)
			links_expect(url, "offtok", 1 - i, 0, "DELETE without a pool");
	}
}

/* The pool-off mock and its work dir, for the teardown when a check failed
 * half way. */
static sbx_mock *g_off;
static char g_off_work[600];

int pool_off_teardown(void **state)
{
	(void)state;
	sbx_mock_stop(g_off);
	g_off = NULL;
	if (g_off_work[0] != '\0')
		cx_rmtree(g_off_work);
	g_off_work[0] = '\0';
	return 0;
}

void pool_off_still_works(void **state)
{
	sbx_mock_config cfg;

	(void)state;
	snprintf(g_off_work, sizeof(g_off_work), "%s.nopool-XXXXXX", contain_work_dir());
	assert_non_null(mkdtemp(g_off_work));
	mf_config_init(&cfg);
	cfg.admin_token = "offtok";
	cfg.self_listen = "127.0.0.1:0";
	cfg.work_dir = g_off_work;
	cfg.warm_pool = 0;
	cfg.guest_mode = sbx_mock_guest_mode(g_mock);
	g_off = mf_start(&cfg);
	assert_non_null(g_off);
	if (pool_stat(sbx_mock_url(g_off), "offtok", "enabled") != 0)
		fail_msg("--warm-pool 0 left a pool on");
	off_lifecycle(sbx_mock_url(g_off), g_off_work);
	sbx_mock_stop(g_off);
	g_off = NULL;
	if (rmdir(g_off_work) != 0)
		fail_msg("the pool-off mock left something in %s: %s", g_off_work, strerror(errno));
	g_off_work[0] = '\0';
}

/* Integration: per-sandbox cgroups (cgroup.c) on this host's real cgroupfs:
 * the limits the kernel enforces (an OOM kill over the memory limit, fork
 * failing at the pids limit), the freezer, removal that leaves no process
 * and no directory, id checks, and what an unprivileged user is given (NULL and
 * a note: the test re-runs itself under setpriv when it is root).
 *
 * The real checks need root (or a delegated subtree) and skip with the
 * reason otherwise. Every child has an alarm, so nothing outlives a failed
 * test by long; the group teardown checks that no group is left behind. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"

#define MIB (1024ULL * 1024ULL)

static mock_cgroups *cgs;
static char note[1024];
static char parents[4][PATH_MAX]; /* copied at open: close frees the originals */
static size_t nparents;

static int group_setup(void **state)
{
	sbx_err err = {""};

	(void)state;
	cgs = mock_cgroups_open("test", note, sizeof note, &err);
	if (err.msg[0] != '\0') {
		fprintf(stderr, "mock_cgroups_open failed: %s\n", err.msg);
		return -1;
	}
	fprintf(stderr, "# %s\n", note);
	for (nparents = 0; nparents < 4 && mock_cgroups_parent(cgs, nparents) != NULL; nparents++)
		snprintf(parents[nparents], sizeof parents[0], "%s",
			 mock_cgroups_parent(cgs, nparents));
	return 0;
}

/* No group is left behind: the parents hold no sandbox group, and after
 * close the parents are gone too. */
static int group_teardown(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < nparents; i++) {
		DIR *d = opendir(parents[i]);
		struct dirent *e;

		while (d != NULL && (e = readdir(d)) != NULL) {
			if (e->d_type == DT_DIR && e->d_name[0] != '.') {
				fprintf(stderr, "left behind: %s/%s\n", parents[i], e->d_name);
				bad = 1;
			}
		}
		if (d != NULL)
			closedir(d);
	}
	mock_cgroups_close(cgs);
	for (size_t i = 0; i < nparents; i++) {
		if (access(parents[i], F_OK) == 0) {
			fprintf(stderr, "parent group left behind: %s\n", parents[i]);
			bad = 1;
		}
	}
	return bad ? -1 : 0;
}

static void need_cgroups(void)
{
	if (cgs == NULL) {
		fprintf(stderr, "# skipped: %s\n", note);
		skip();
	}
}

static mock_cgroup *mk(const char *what, uint64_t mem, uint64_t pids)
{
	char id[64];
	sbx_err err = {""};
	mock_cgroup *cg;

	snprintf(id, sizeof id, "t-%s-%ld", what, (long)getpid());
	cg = mock_cgroup_create(cgs, id, mem, pids, &err);
	if (cg == NULL)
		fail_msg("create %s: %s", id, err.msg);
	return cg;
}

/* Whether <parent i>/<id> exists, for every parent. */
static bool any_dir(const char *what)
{
	char path[PATH_MAX + 80];

	for (size_t i = 0; i < nparents; i++) {
		snprintf(path, sizeof path, "%s/t-%s-%ld", parents[i], what, (long)getpid());
		if (access(path, F_OK) == 0)
			return true;
	}
	return false;
}

/* Forks a child that waits for the go byte, then runs fn; the parent puts
 * it in cg first, so everything fn does is charged to the group. */
static pid_t spawn_in(mock_cgroup *cg, void (*fn)(int), int arg)
{
	int go[2];
	sbx_err err = {""};
	pid_t pid;
	char c = 0;

	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(go[1]);
		alarm(30);
		if (read(go[0], &c, 1) != 1)
			_exit(99);
		fn(arg);
		_exit(0);
	}
	close(go[0]);
	if (mock_cgroup_add(cg, pid, &err) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fail_msg("add %ld: %s", (long)pid, err.msg);
	}
	assert_int_equal(write(go[1], &c, 1), 1);
	close(go[1]);
	return pid;
}

/* waitpid, bounded: a child still there after ms is killed and the test
 * fails. */
static int wait_child(pid_t pid, int ms)
{
	int st = 0;

	for (int i = 0; i < ms; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		struct timespec ts = {0, 1000000};

		if (r == pid)
			return st;
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	fail_msg("child %ld still running after %d ms", (long)pid, ms);
	return st;
}

static void remove_ok(mock_cgroup *cg, const char *what)
{
	sbx_err err = {""};

	if (mock_cgroup_remove(cg, &err) != 0)
		fail_msg("remove: %s", err.msg);
	assert_false(any_dir(what));
}

/* ---- memory: over the limit is the kernel's OOM kill ---- */

static void touch_128mib(int unused)
{
	size_t len = 128 * MIB;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)unused;
	if (p == MAP_FAILED)
		_exit(98);
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	_exit(0); /* not killed: the limit did not hold */
}

static void test_memory_over_limit_is_oom_killed(void **state)
{
	mock_cgroup *cg;
	uint64_t before = 0, after = 0;
	sbx_err err = {""};
	int st;

	(void)state;
	need_cgroups();
	cg = mk("oom", 64 * MIB, 16);
	assert_int_equal(mock_cgroup_oom_kills(cg, &before, &err), 0);
	assert_int_equal(before, 0);
	st = wait_child(spawn_in(cg, touch_128mib, 0), 20000);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
		fail_msg("expected SIGKILL (exit 137), got status 0x%x", st);
	assert_true(mock_cgroup_oom_killed(cg, before));
	assert_int_equal(mock_cgroup_oom_kills(cg, &after, &err), 0);
	assert_true(after >= before + 1);
	remove_ok(cg, "oom");
}

/* ---- pids: a fork bomb stops at the limit ---- */

static void fork_bomb(int res_w)
{
	int n = 0, e = 0;

	while (n < 1000) {
		pid_t p = fork();

		if (p == 0) {
			alarm(30);
			pause();
			_exit(0);
		}
		if (p < 0) {
			e = errno;
			break;
		}
		n++;
	}
	int out[2] = {n, e};
	if (write(res_w, out, sizeof out) != (ssize_t)sizeof out)
		_exit(97);
	_exit(0);
}

static void test_fork_bomb_stops_at_pids_limit(void **state)
{
	mock_cgroup *cg;
	int res[2], out[2] = {0, 0};
	struct pollfd pf;
	pid_t pid;

	(void)state;
	need_cgroups();
	cg = mk("pids", 0, 16);
	assert_int_equal(pipe2(res, O_CLOEXEC), 0);
	pid = spawn_in(cg, fork_bomb, res[1]);
	close(res[1]);
	pf = (struct pollfd){.fd = res[0], .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 10000), 1);
	assert_int_equal(read(res[0], out, sizeof out), (ssize_t)sizeof out);
	close(res[0]);
	wait_child(pid, 30000);
	/* 16 tasks: the bomb and 15 children; the 16th fork fails */
	if (out[1] != EAGAIN || out[0] > 15)
		fail_msg("expected fork to fail with EAGAIN after at most 15 children, got %d "
			 "children, errno %d",
			 out[0], out[1]);
	remove_ok(cg, "pids"); /* kills the 15 orphans */
}

/* ---- freezer: a ticking process stops while frozen ---- */

static void tick(int w)
{
	for (uint32_t i = 0;; i++) {
		struct timespec ts = {0, 1000000};

		if (write(w, &i, sizeof i) != (ssize_t)sizeof i)
			_exit(96);
		nanosleep(&ts, NULL);
	}
}

/* How many ticks arrive within ms (the read end is non-blocking). */
static int ticks_within(int fd, int ms)
{
	uint32_t buf[1024];
	int n = 0;
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		long spent;
		ssize_t r;

		clock_gettime(CLOCK_MONOTONIC, &now);
		spent = (now.tv_sec - start.tv_sec) * 1000 +
			(now.tv_nsec - start.tv_nsec) / 1000000;
		if (spent >= ms)
			return n;
		if (poll(&pf, 1, (int)(ms - spent)) <= 0)
			continue;
		r = read(fd, buf, sizeof buf);
		if (r > 0)
			n += (int)(r / (ssize_t)sizeof buf[0]);
	}
}

/* Whether a tick arrives within ms; returns at the first. "It runs" needs
 * only one tick, and a loaded machine (valgrind in CI) may not schedule
 * the child within 100 ms: a generous bound that costs nothing when it
 * runs. */
static bool ticks_again(int fd, int ms)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	uint32_t v;

	return poll(&pf, 1, ms) == 1 && read(fd, &v, sizeof v) == (ssize_t)sizeof v;
}

static void test_freeze_stops_progress_and_thaw_resumes(void **state)
{
	mock_cgroup *cg;
	sbx_err err = {""};
	int tk[2], st;
	pid_t pid;

	(void)state;
	need_cgroups();
	cg = mk("freeze", 0, 16);
	assert_int_equal(pipe2(tk, O_CLOEXEC), 0);
	pid = spawn_in(cg, tick, tk[1]);
	close(tk[1]);
	assert_int_equal(fcntl(tk[0], F_SETFL, O_NONBLOCK), 0);
	assert_true(ticks_again(tk[0], 30000));
	if (mock_cgroup_freeze(cg, true, &err) != 0)
		fail_msg("freeze: %s", err.msg);
	/* what was written before the freeze completed: read until the pipe is
	 * empty (frozen, nothing more can come; a fixed 5 ms was not enough
	 * to read a full pipe under valgrind) */
	for (uint32_t buf[1024]; read(tk[0], buf, sizeof buf) > 0;)
		;
	assert_int_equal(ticks_within(tk[0], 200), 0);
	if (mock_cgroup_freeze(cg, false, &err) != 0)
		fail_msg("thaw: %s", err.msg);
	assert_true(ticks_again(tk[0], 30000));
	assert_int_equal(mock_cgroup_freeze(cg, true, &err), 0); /* remove thaws first */
	remove_ok(cg, "freeze");
	st = wait_child(pid, 30000);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	close(tk[0]);
}

/* ---- remove: no directory, no process ---- */

static void parent_of_two(int w)
{
	pid_t g = fork();

	if (g == 0) {
		alarm(30);
		pause();
		_exit(0);
	}
	if (write(w, &g, sizeof g) != (ssize_t)sizeof g)
		_exit(95);
	pause();
}

/* Gone, or a zombie its new parent has not reaped yet. */
static bool process_gone(pid_t pid)
{
	char path[64], buf[256];
	FILE *f;
	char *rp;
	bool gone = true;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return true;
	if (fgets(buf, sizeof buf, f) != NULL) {
		rp = strrchr(buf, ')');
		gone = rp != NULL && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
	}
	fclose(f);
	return gone;
}

static void test_remove_leaves_no_directory_and_no_process(void **state)
{
	mock_cgroup *cg;
	int gp[2], st;
	pid_t pid, g = -1;
	bool gone = false;

	(void)state;
	need_cgroups();
	cg = mk("remove", 32 * MIB, 16);
	assert_true(any_dir("remove"));
	assert_int_equal(pipe2(gp, O_CLOEXEC), 0);
	pid = spawn_in(cg, parent_of_two, gp[1]);
	close(gp[1]);
	assert_int_equal(read(gp[0], &g, sizeof g), (ssize_t)sizeof g);
	close(gp[0]);
	remove_ok(cg, "remove");
	st = wait_child(pid, 30000);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	for (int i = 0; i < 20000 && !gone; i++) {
		struct timespec ts = {0, 1000000};

		gone = process_gone(g);
		if (!gone)
			nanosleep(&ts, NULL);
	}
	if (!gone)
		fail_msg("grandchild %ld still running after remove", (long)g);
}

/* ---- distinct groups from several threads at once ---- */

static void *churn(void *arg)
{
	long t = (long)(intptr_t)arg;
	static const char *failed = "failed";

	for (int i = 0; i < 25; i++) {
		char id[64];
		sbx_err err = {""};
		mock_cgroup *cg;

		snprintf(id, sizeof id, "t-thr%ld-%d-%ld", t, i, (long)getpid());
		cg = mock_cgroup_create(cgs, id, 16 * MIB, 8, &err);
		if (cg == NULL || mock_cgroup_freeze(cg, true, &err) != 0 ||
		    mock_cgroup_freeze(cg, false, &err) != 0 || mock_cgroup_remove(cg, &err) != 0) {
			fprintf(stderr, "thread %ld, %s: %s\n", t, id, err.msg);
			return (void *)failed;
		}
	}
	return NULL;
}

static void test_distinct_groups_from_four_threads(void **state)
{
	pthread_t th[4];
	void *res[4];

	(void)state;
	need_cgroups();
	for (long i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, churn, (void *)(intptr_t)i), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(th[i], &res[i]), 0);
	for (int i = 0; i < 4; i++)
		assert_null(res[i]);
}

/* ---- v1: a thread joins, clones into the group, and leaves ---- */

typedef struct joiner {
	mock_cgroup *cg;
	char before[1024], after[1024], err[sizeof(((sbx_err *)0)->msg) + 16];
	pid_t child;
	int join_rc;
} joiner;

static void read_self_cgroup(char *buf, size_t cap)
{
	FILE *f = fopen("/proc/thread-self/cgroup", "re");
	size_t n = f != NULL ? fread(buf, 1, cap - 1, f) : 0;

	buf[n] = '\0';
	if (f != NULL)
		fclose(f);
}

/* On a thread of its own: a failure leaves the test's main thread where
 * it was. */
static void *join_clone_leave(void *arg)
{
	joiner *j = arg;
	sbx_err err = {""};

	read_self_cgroup(j->before, sizeof j->before);
	j->join_rc = mock_cgroup_join(j->cg, &err);
	if (j->join_rc != 0) {
		snprintf(j->err, sizeof j->err, "join: %s", err.msg);
		return NULL;
	}
	j->child = fork();
	if (j->child == 0) {
		alarm(30);
		pause();
		_exit(0);
	}
	if (mock_cgroup_leave(j->cg, &err) != 0)
		snprintf(j->err, sizeof j->err, "leave: %s", err.msg);
	read_self_cgroup(j->after, sizeof j->after);
	return NULL;
}

/* Whether every cgroup line of pid's /proc/<pid>/cgroup for a v1
 * controller we use names the group (ends in /t-<what>-<our pid>). */
static bool pid_in_group(pid_t pid, const char *what)
{
	char path[64], line[1024], want[128];
	size_t hits = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/cgroup", (long)pid);
	snprintf(want, sizeof want, "/t-%s-%ld", what, (long)getpid());
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strstr(line, ":memory:") == NULL && strstr(line, ":pids:") == NULL &&
		    strstr(line, ":freezer:") == NULL)
			continue;
		if (strlen(line) < strlen(want) || strcmp(line + strlen(line) - strlen(want), want) != 0) {
			fclose(f);
			return false;
		}
		hits++;
	}
	fclose(f);
	return hits > 0;
}

static void test_joined_thread_clones_into_the_group_and_leaves(void **state)
{
	joiner j = {0};
	pthread_t th;
	char procs[PATH_MAX + 32], buf[256], mine[32];
	FILE *f;
	int st;

	(void)state;
	need_cgroups();
	if (mock_cgroups_version(cgs) != 1) {
		fprintf(stderr, "# skipped: join is for v1 (v2 moves the cell after its clone)\n");
		skip();
	}
	j.cg = mk("join", 32 * MIB, 16);
	assert_int_equal(pthread_create(&th, NULL, join_clone_leave, &j), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (j.err[0] != '\0' || j.child <= 0) {
		if (j.child > 0)
			kill(j.child, SIGKILL);
		fail_msg("%s", j.err[0] != '\0' ? j.err : "fork failed");
	}
	/* the child was born in the group; the thread is back where it was */
	assert_true(pid_in_group(j.child, "join"));
	assert_string_equal(j.before, j.after);
	/* and the group lists the child alone, never the test process */
	snprintf(procs, sizeof procs, "%s/t-join-%ld/cgroup.procs", parents[0], (long)getpid());
	snprintf(mine, sizeof mine, "%ld\n", (long)getpid());
	f = fopen(procs, "re");
	assert_non_null(f);
	while (fgets(buf, sizeof buf, f) != NULL)
		assert_string_not_equal(buf, mine);
	fclose(f);
	remove_ok(j.cg, "join");
	st = wait_child(j.child, 30000);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* ---- what the API refuses ---- */

static void test_bad_ids_are_refused_before_any_path(void **state)
{
	static const char *const bad[] = {
		"",	".",   "..",
		"../x", "a/b", ".hidden",
		"a b",	"x\n", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
	sbx_err err = {""};

	(void)state;
	need_cgroups();
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err.msg[0] = '\0';
		if (mock_cgroup_create(cgs, bad[i], 0, 0, &err) != NULL)
			fail_msg("id \"%s\" was accepted", bad[i]);
		assert_true(strstr(err.msg, "cgroup name") != NULL);
	}
	assert_null(mock_cgroup_create(cgs, NULL, 0, 0, &err));
}

static void test_existing_group_is_not_reused(void **state)
{
	mock_cgroup *cg, *again;
	char id[64];
	sbx_err err = {""};

	(void)state;
	need_cgroups();
	cg = mk("dup", 0, 0);
	snprintf(id, sizeof id, "t-dup-%ld", (long)getpid());
	again = mock_cgroup_create(cgs, id, 0, 0, &err);
	assert_null(again);
	assert_true(strstr(err.msg, "File exists") != NULL);
	err.msg[0] = '\0';
	assert_int_not_equal(mock_cgroup_add(cg, 0x3ffffff0, &err), 0);
	if (strstr(err.msg, "cgroup.procs") == NULL)
		fail_msg("add error does not name the file: %s", err.msg);
	remove_ok(cg, "dup");
}

static void test_second_open_gets_its_own_parent(void **state)
{
	char note2[1024];
	sbx_err err = {""};
	mock_cgroups *two;

	(void)state;
	need_cgroups();
	two = mock_cgroups_open("test", note2, sizeof note2, &err);
	assert_non_null(two);
	assert_string_not_equal(mock_cgroups_parent(two, 0), parents[0]);
	assert_int_equal(mock_cgroups_version(two), mock_cgroups_version(cgs));
	mock_cgroups_close(two);
}

/* ---- unprivileged: NULL and a note ---- */

/* Run as `test_cgroup --unprivileged-open`: exit 0 when open gives NULL,
 * no error and a note. */
static int unprivileged_open(void)
{
	char why[1024];
	sbx_err err = {""};
	mock_cgroups *got = mock_cgroups_open("test", why, sizeof why, &err);

	if (got != NULL) {
		printf("got cgroups as uid %u: %s\n", (unsigned)getuid(), why);
		mock_cgroups_close(got);
		return 1;
	}
	printf("%s%s\n", why, err.msg);
	return err.msg[0] == '\0' && strncmp(why, "cgroups: none (", 15) == 0 ? 0 : 1;
}

static void test_unprivileged_open_is_null_with_a_note(void **state)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	pid_t pid;
	int st;

	(void)state;
	if (geteuid() != 0 && cgs != NULL) {
		fprintf(stderr, "# skipped: uid %u was given cgroups (delegated): %s\n",
			(unsigned)geteuid(), note);
		skip();
	}
	if (geteuid() != 0) {
		assert_int_equal(unprivileged_open(), 0);
		return;
	}
	if (access("/usr/bin/setpriv", X_OK) != 0) {
		fprintf(stderr, "# skipped: no /usr/bin/setpriv to drop root with\n");
		skip();
	}
	assert_true(n > 0);
	exe[n] = '\0';
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/usr/bin/setpriv", "setpriv", "--reuid=65534", "--regid=65534",
		      "--clear-groups", exe, "--unprivileged-open", (char *)NULL);
		_exit(127);
	}
	st = wait_child(pid, 10000);
	if (WIFEXITED(st) && (WEXITSTATUS(st) == 126 || WEXITSTATUS(st) == 127)) {
		fprintf(stderr, "# skipped: uid 65534 cannot run %s (exit %d)\n", exe,
			WEXITSTATUS(st));
		skip();
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("as uid 65534: expected NULL and a note, status 0x%x (output above)", st);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_over_limit_is_oom_killed),
		cmocka_unit_test(test_fork_bomb_stops_at_pids_limit),
		cmocka_unit_test(test_freeze_stops_progress_and_thaw_resumes),
		cmocka_unit_test(test_remove_leaves_no_directory_and_no_process),
		cmocka_unit_test(test_distinct_groups_from_four_threads),
		cmocka_unit_test(test_joined_thread_clones_into_the_group_and_leaves),
		cmocka_unit_test(test_bad_ids_are_refused_before_any_path),
		cmocka_unit_test(test_existing_group_is_not_reused),
		cmocka_unit_test(test_second_open_gets_its_own_parent),
		cmocka_unit_test(test_unprivileged_open_is_null_with_a_note),
	};

	if (argc > 1 && strcmp(argv[1], "--unprivileged-open") == 0)
		return unprivileged_open();
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

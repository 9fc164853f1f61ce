/* contain_util: helpers of the containment battery; see contain_util.h. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "contain_util.h"

/* The heap strings of results not yet freed: a test that fails longjmps out
 * before its cx_free; cx_gc frees them at the next test's setup. */
#define CX_PENDING 32
static char *g_pending[CX_PENDING][4];

static void pend(cx_res *x)
{
	for (size_t i = 0; i < CX_PENDING; i++)
		if (g_pending[i][0] == NULL) {
			g_pending[i][0] = x->out;
			g_pending[i][1] = x->err;
			g_pending[i][2] = x->error;
			g_pending[i][3] = x->body;
			return;
		}
}

void cx_gc(void)
{
	for (size_t i = 0; i < CX_PENDING; i++) {
		for (size_t k = 0; k < 4; k++)
			free(g_pending[i][k]);
		memset(g_pending[i], 0, sizeof(g_pending[i]));
	}
}

static char *dup_str(const cJSON *v)
{
	return strdup(cJSON_IsString(v) ? v->valuestring : "");
}

void cx_exec(const char *key, const char *id, const char *cmd, const char *const *args, size_t n,
	     long timeout_ms, cx_res *x)
{
	cJSON *b = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(b, "args");
	char path[160], *body;
	th_req rq = {0};
	th_resp r;
	const cJSON *res, *code, *error;

	cJSON_AddStringToObject(b, "cmd", cmd);
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(args[i]));
	if (timeout_ms > 0)
		cJSON_AddNumberToObject(b, "timeout_ms", (double)timeout_ms);
	body = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	rq.method = "POST";
	rq.url = U;
	rq.path = path;
	rq.key = key;
	rq.body = body;
	rq.timeout_ms = (timeout_ms > 0 ? timeout_ms : 60000) + 30000;
	th_do(&rq, &r);
	free(body);
	res = data_item(&r, "result");
	code = cJSON_GetObjectItemCaseSensitive(res, "exit_code");
	error = cJSON_GetObjectItemCaseSensitive(res, "error");
	x->status = r.status;
	x->code = cJSON_IsNumber(code) ? code->valueint : -1;
	x->out = dup_str(cJSON_GetObjectItemCaseSensitive(res, "stdout"));
	x->err = dup_str(cJSON_GetObjectItemCaseSensitive(res, "stderr"));
	x->error = cJSON_IsString(error) ? strdup(error->valuestring) : NULL;
	x->body = strdup(sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	pend(x);
}

void cx_sh(const char *key, const char *id, const char *script, long timeout_ms, cx_res *x)
{
	const char *args[] = {"-c", script};

	cx_exec(key, id, "sh", args, 2, timeout_ms, x);
}

void cx_free(cx_res *x)
{
	for (size_t i = 0; i < CX_PENDING; i++)
		if (g_pending[i][0] != NULL && g_pending[i][0] == x->out)
			memset(g_pending[i], 0, sizeof(g_pending[i]));
	free(x->out);
	free(x->err);
	free(x->error);
	free(x->body);
	memset(x, 0, sizeof(*x));
}

bool cx_status(const char *key, const char *id, char *buf, size_t cap)
{
	char path[128];
	th_resp r;
	const char *st;
	bool ok;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	th_json(U, key, "GET", path, NULL, &r);
	st = th_data_str(&r, "status");
	ok = st != NULL;
	snprintf(buf, cap, "%s", st != NULL ? st : (r.status == 404 ? "gone" : "?"));
	th_resp_free(&r);
	return ok;
}

bool cx_wait_status(const char *key, const char *id, const char *want, int ms)
{
	char st[32];

	for (int waited = 0;; waited += 10) {
		cx_status(key, id, st, sizeof(st));
		if (strcmp(st, want) == 0)
			return true;
		if (waited >= ms)
			return false;
		usleep(10000);
	}
}

void cx_marker(char *mark, size_t cap, char *regex, size_t rcap)
{
	static int n;

	n = (n + 1) % 100;
	/* the "s" ends the number: no other pid's marker contains this one */
	snprintf(mark, cap, "9%02d.%ds", n, (int)getpid());
	snprintf(regex, rcap, "9%02d[.]%ds", n, (int)getpid());
}

/* One process as each_proc sees it: its command line with NULs as spaces,
 * whether one of its arguments (argv[1..]) is exactly `mark`, and whether
 * its own name (comm) is "sleep". */
struct proc_view {
	pid_t pid;
	const char *cmd;
	bool is_marked_sleep;
};

/* True when comm of pid is "sleep" and an argument after argv[0] equals
 * mark. A shell whose script contains the marker (`sh -c 'sleep MARK &'`,
 * the subshell before its exec) is not one: it is transient, and counting it
 * made the battery's counts race with the shells' exits (issue 24). */
static bool marked_sleep(const char *pid, const char *argv, size_t n, const char *mark)
{
	char path[300], comm[32] = "";
	FILE *fp;
	size_t first = strnlen(argv, n) + 1;

	snprintf(path, sizeof(path), "/proc/%s/comm", pid);
	fp = fopen(path, "r");
	if (fp == NULL)
		return false;
	if (fgets(comm, sizeof(comm), fp) == NULL)
		comm[0] = '\0';
	fclose(fp);
	if (strcmp(comm, "sleep\n") != 0)
		return false;
	for (size_t off = first; off < n; off += strnlen(argv + off, n - off) + 1)
		if (strcmp(argv + off, mark) == 0)
			return true;
	return false;
}

/* Calls fn(view, arg) for every process; mark (or NULL) is what
 * view->is_marked_sleep tests. */
static void each_proc(const char *mark, void (*fn)(const struct proc_view *, void *), void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d != NULL && (de = readdir(d)) != NULL) {
		char path[300], cmd[4096], flat[4096];
		struct proc_view v;
		FILE *fp;
		size_t n;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		fp = fopen(path, "r");
		if (fp == NULL)
			continue;
		n = fread(cmd, 1, sizeof(cmd) - 1, fp);
		fclose(fp);
		if (n == 0)
			continue;
		cmd[n] = '\0';
		for (size_t i = 0; i < n; i++)
			flat[i] = cmd[i] == '\0' ? ' ' : cmd[i];
		flat[n] = '\0';
		v.pid = (pid_t)strtol(de->d_name, NULL, 10);
		v.cmd = flat;
		v.is_marked_sleep = mark != NULL && marked_sleep(de->d_name, cmd, n, mark);
		fn(&v, arg);
	}
	if (d != NULL)
		closedir(d);
}

struct find_arg {
	const char *s;
	pid_t found;
	int count;
	bool kill;
};

static void find_one(const struct proc_view *v, void *p)
{
	struct find_arg *a = p;

	if (v->pid == getpid())
		return;
	if (a->kill) {
		if (strstr(v->cmd, a->s) != NULL)
			kill(v->pid, SIGKILL);
		return;
	}
	if (!v->is_marked_sleep)
		return;
	if (cx_state(v->pid) == 'Z' || cx_state(v->pid) == 0)
		return;
	a->count++;
	if (a->found < 0)
		a->found = v->pid;
}

pid_t cx_find(const char *s)
{
	struct find_arg a = {s, -1, 0, false};

	each_proc(s, find_one, &a);
	return a.found;
}

int cx_count(const char *s)
{
	struct find_arg a = {s, -1, 0, false};

	each_proc(s, find_one, &a);
	return a.count;
}

pid_t cx_wait_find(const char *s, int ms)
{
	pid_t pid;

	for (int waited = 0;; waited += 20) {
		pid = cx_find(s);
		if (pid > 0 || waited >= ms)
			return pid;
		usleep(20000);
	}
}

int cx_wait_count(const char *s, int n, int ms)
{
	int have;

	for (int waited = 0;; waited += 20) {
		have = cx_count(s);
		if (have == n || waited >= ms)
			return have;
		usleep(20000);
	}
}

bool cx_wait_gone(const char *s, int ms)
{
	for (int waited = 0;; waited += 20) {
		if (cx_find(s) < 0)
			return true;
		if (waited >= ms)
			return false;
		usleep(20000);
	}
}

void cx_kill_all(const char *s)
{
	struct find_arg a = {s, -1, 0, true};

	each_proc(NULL, find_one, &a);
}

char cx_state(pid_t pid)
{
	char path[64], buf[512];
	FILE *fp;
	char *p, st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "r");
	if (fp == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), fp) != NULL && (p = strrchr(buf, ')')) != NULL && p[1] == ' ')
		st = p[2];
	fclose(fp);
	return st;
}

long cx_host_uid(pid_t pid)
{
	char path[64], line[256];
	FILE *fp;
	long uid = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fp = fopen(path, "r");
	if (fp == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strncmp(line, "Uid:", 4) == 0)
			uid = strtol(line + 4, NULL, 10);
	fclose(fp);
	return uid;
}

bool cx_ns(pid_t pid, const char *ns, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;

	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	else
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
	n = readlink(path, buf, cap - 1);
	if (n < 0) {
		snprintf(buf, cap, "(%s)", strerror(errno));
		return false;
	}
	buf[n] = '\0';
	return true;
}

size_t cx_children(pid_t ppid, pid_t *out, size_t cap)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t n = 0;

	while (d != NULL && (de = readdir(d)) != NULL) {
		char path[300], buf[512], *p;
		FILE *fp;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fp = fopen(path, "r");
		if (fp == NULL)
			continue;
		if (fgets(buf, sizeof(buf), fp) != NULL && (p = strrchr(buf, ')')) != NULL &&
		    strtol(p + 4, NULL, 10) == (long)ppid && n < cap)
			out[n++] = (pid_t)strtol(de->d_name, NULL, 10);
		fclose(fp);
	}
	if (d != NULL)
		closedir(d);
	return n;
}

/* nftw state (nftw has no user pointer). */
static const char *g_cg_name;
static char g_cg_found[4096];
static char g_cg_list[64][4096];
static size_t g_cg_n;

static int cg_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	const char *base = path + ftw->base;

	(void)st;
	if (flag != FTW_D && flag != FTW_DP)
		return 0;
	if (ftw->level > 8)
		return 0;
	if (strncmp(base, g_cg_name, strlen(g_cg_name)) == 0 &&
	    (base[strlen(g_cg_name)] == '\0' || base[strlen(g_cg_name)] == '-')) {
		if (g_cg_found[0] == '\0')
			snprintf(g_cg_found, sizeof(g_cg_found), "%s", path);
		if (g_cg_n < 64)
			snprintf(g_cg_list[g_cg_n++], sizeof(g_cg_list[0]), "%s", path);
	}
	return 0;
}

bool cx_cgroup_find(const char *name, char *buf, size_t cap)
{
	g_cg_name = name;
	g_cg_found[0] = '\0';
	g_cg_n = 0;
	nftw("/sys/fs/cgroup", cg_visit, 32, FTW_PHYS);
	snprintf(buf, cap, "%s", g_cg_found);
	return g_cg_found[0] != '\0';
}

static int rmdir_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	return 0;
}

void cx_cgroup_remove(const char *name)
{
	char buf[4096];

	if (!cx_cgroup_find(name, buf, sizeof(buf)))
		return;
	for (size_t i = 0; i < g_cg_n; i++)
		nftw(g_cg_list[i], rmdir_visit, 32, FTW_DEPTH | FTW_PHYS);
}

/* The cgroup.procs of the group an nftw visit is at, or NULL. */
static FILE *procs_at(const char *path, int flag)
{
	char procs[4200];

	if (flag != FTW_D)
		return NULL;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
	return fopen(procs, "r");
}

/* A process in the group at path or below (cgroup.procs of each). */
static int busy_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char line[32];
	FILE *fp = procs_at(path, flag);
	int busy = 0;

	(void)st;
	(void)ftw;
	if (fp != NULL && fgets(line, sizeof(line), fp) != NULL)
		busy = 1;
	if (fp != NULL)
		fclose(fp);
	return busy; /* stops the walk */
}

bool cx_cgroup_wait_empty(const char *name, int ms)
{
	char buf[4096];

	for (int waited = 0;; waited += 20) {
		bool busy = false;

		if (!cx_cgroup_find(name, buf, sizeof(buf)))
			return true;
		for (size_t i = 0; i < g_cg_n && !busy; i++)
			busy = nftw(g_cg_list[i], busy_visit, 32, FTW_PHYS) == 1;
		if (!busy)
			return true;
		if (waited >= ms)
			return false;
		usleep(20000);
	}
}

/* The first line of /proc/<pid>/<file> into buf (empty if none). */
static void proc_line(long pid, const char *file, char *buf, size_t cap)
{
	char path[64];
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%ld/%s", pid, file);
	buf[0] = '\0';
	fp = fopen(path, "r");
	if (fp != NULL && fgets(buf, (int)cap, fp) != NULL)
		buf[strcspn(buf, "\n")] = '\0';
	if (fp != NULL)
		fclose(fp);
}

/* Appends each process in the group at path: the head of its stat line
 * (pid, comm, state, ppid) and the system call it sleeps in. */
static char *g_who;
static size_t g_who_cap;

static int who_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char line[32], stat[600], sys[160];
	FILE *fp = procs_at(path, flag);

	(void)st;
	(void)ftw;
	while (fp != NULL && fgets(line, sizeof(line), fp) != NULL) {
		size_t len = strlen(g_who);
		long pid = strtol(line, NULL, 10);

		proc_line(pid, "stat", stat, sizeof(stat));
		stat[strcspn(stat, ")") < 80 ? strcspn(stat, ")") + 12 : 80] = '\0'; /* to the ppid */
		proc_line(pid, "syscall", sys, sizeof(sys));
		if (len + 1 < g_who_cap)
			snprintf(g_who + len, g_who_cap - len, "[%s... syscall %s in %s] ", stat, sys, path);
	}
	if (fp != NULL)
		fclose(fp);
	return 0;
}

void cx_cgroup_who(const char *name, char *buf, size_t cap)
{
	char found[4096];

	buf[0] = '\0';
	g_who = buf;
	g_who_cap = cap;
	if (!cx_cgroup_find(name, found, sizeof(found)))
		return;
	for (size_t i = 0; i < g_cg_n; i++)
		nftw(g_cg_list[i], who_visit, 32, FTW_PHYS);
}

bool cx_mount_find(const char *s, char *buf, size_t cap)
{
	FILE *fp = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	bool found = false;

	while (fp != NULL && !found && fgets(line, sizeof(line), fp) != NULL)
		if (strstr(line, s) != NULL) {
			snprintf(buf, cap, "%s", line);
			found = true;
		}
	if (fp != NULL)
		fclose(fp);
	return found;
}

static int rm_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void cx_umount_under(const char *dir)
{
	char line[4096];

	for (int i = 0; i < 64 && cx_mount_find(dir, line, sizeof(line)); i++) {
		/* mountinfo: id parent maj:min root mountpoint ... */
		char *mnt = line;

		for (int f = 0; f < 4 && mnt != NULL; f++)
			mnt = strchr(mnt, ' ') != NULL ? strchr(mnt, ' ') + 1 : NULL;
		if (mnt == NULL)
			break;
		mnt[strcspn(mnt, " ")] = '\0';
		if (umount2(mnt, MNT_DETACH) != 0)
			break;
	}
}

void cx_rmtree(const char *dir)
{
	if (dir == NULL || dir[0] != '/' || strlen(dir) < 6)
		return;
	cx_umount_under(dir); /* whatever a failed test left mounted there (as root only) */
	nftw(dir, rm_visit, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

bool cx_same_as_host_file(const char *text, const char *path)
{
	char buf[65536];
	FILE *fp = fopen(path, "r");
	size_t n;

	if (fp == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	return strcmp(buf, text) == 0;
}

long cx_lines(const char *path)
{
	FILE *fp = fopen(path, "r");
	long n = 0;
	int c;

	if (fp == NULL)
		return -1;
	while ((c = fgetc(fp)) != EOF)
		if (c == '\n')
			n++;
	fclose(fp);
	return n;
}

long cx_root_lines(pid_t pid, const char *path)
{
	char full[4200];

	snprintf(full, sizeof(full), "/proc/%d/root%s", (int)pid, path);
	return cx_lines(full);
}

long cx_guest_lines(const char *key, const char *id, const char *path)
{
	char route[512];
	const char *b;
	th_resp r;
	long n = 0;

	snprintf(route, sizeof(route), "/v1/sandboxes/%s/files?path=%s", id, path);
	th_json(U, key, "GET", route, NULL, &r);
	if (r.status != 200) {
		th_resp_free(&r);
		return -1;
	}
	for (b = sbx_strbuf_str(&r.body); *b != '\0'; b++)
		n += *b == '\n';
	th_resp_free(&r);
	return n;
}

/* ---- the image store ---- */

/* build-image's store: $SBX_IMAGE_STORE, /var/cache/sbx-harness/images as
 * root, else $XDG_CACHE_HOME (or ~/.cache)/sbx-harness/images. */
void cx_store_path(char *buf, size_t cap)
{
	const char *env = getenv("SBX_IMAGE_STORE"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");

	if (env != NULL && env[0] != '\0')
		snprintf(buf, cap, "%s", env);
	else if (geteuid() == 0)
		snprintf(buf, cap, "/var/cache/sbx-harness/images");
	else if (xdg != NULL && xdg[0] != '\0')
		snprintf(buf, cap, "%s/sbx-harness/images", xdg);
	else
		snprintf(buf, cap, "%s/.cache/sbx-harness/images", home != NULL ? home : "");
}

/* Whether the store's index names devbox:1. */
int cx_store_has_devbox(const char *store)
{
	char path[PATH_MAX + 8], line[512];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/index", store);
	f = fopen(path, "re");
	if (f == NULL)
		return 0;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strncmp(line, "devbox:1\t", 9) == 0;
	fclose(f);
	return found;
}

bool cx_store_devbox(char *store, size_t cap)
{
	cx_store_path(store, cap);
	if (cx_store_has_devbox(store))
		return true;
	printf("SKIP: no devbox:1 image in %s (build it: mock-api/images/build-image devbox:1; "
	       "ci/bootstrap test does)\n",
	       store);
	return false;
}

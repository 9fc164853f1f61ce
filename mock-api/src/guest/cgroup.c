/* cgroup: per-sandbox control groups (memory, pids, freezer), v2 or v1;
 * see cgroup.h.
 *
 * Must never touch a group it did not create: the mock's own group and its
 * ancestors are only read (cgroup.controllers, cgroup.subtree_control),
 * but for a thread of the mock going back to its own group
 * (mock_cgroup_leave); every other write, mkdir, rmdir and kill is inside
 * `sbx-<tag>-<pid>`, and a
 * sandbox id is checked before it becomes part of a path. */
#define _GNU_SOURCE
#include "guest/cgroup.h"
#include "guest/cgroup_internal.h"
#include "sbx/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const cg_ctrl[CG_NHIER] = {"memory", "pids", "freezer"};

/* ---- small helpers ---- */

/* Sleeps *us microseconds, then doubles *us up to 5 ms: quick answers for
 * fast kernels, little spinning for slow ones. */
void mock_cg_backoff(long *us)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = *us * 1000};

	nanosleep(&ts, NULL);
	if (*us < 5000)
		*us *= 2;
}

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word)) != NULL) {
		bool start = p == list || p[-1] == ' ' || p[-1] == ',' || p[-1] == '\n';
		bool end = p[n] == '\0' || p[n] == ' ' || p[n] == ',' || p[n] == '\n';

		if (start && end)
			return true;
		p += n;
	}
	return false;
}

/* A reason for the note: truncated to fit is fine, it is for people. */
static void say(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
}

const char *mock_cg_dir(const mock_cgroup *cg, size_t i)
{
	return cg->dir[cg->cgs->same[i]];
}

int mock_cg_path_of(char *out, size_t cap, const char *dir, const char *name, sbx_err *err)
{
	int n = snprintf(out, cap, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= cap) {
		sbx_err_set(err, "path too long: %s/%s", dir, name);
		return -1;
	}
	return 0;
}

/* Reads dir/name whole (at most cap - 1 bytes) into buf. */
static int cg_read(const char *dir, const char *name, char *buf, size_t cap, sbx_err *err)
{
	char path[PATH_MAX];
	size_t len = 0;
	ssize_t n = 1;
	int fd;

	if (mock_cg_path_of(path, sizeof path, dir, name, err) != 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		sbx_err_set(err, "open %s: %s", path, strerror(errno));
		return -1;
	}
	while (n > 0 && len < cap - 1) {
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			n = 1;
		else if (n > 0)
			len += (size_t)n;
	}
	buf[len] = '\0';
	if (n < 0)
		sbx_err_set(err, "read %s: %s", path, strerror(errno));
	close(fd);
	return n < 0 ? -1 : 0;
}

/* Writes val to dir/name in one write(2), as cgroupfs wants. */
int mock_cg_write(const char *dir, const char *name, const char *val, sbx_err *err)
{
	char path[PATH_MAX];
	size_t len = strlen(val);
	ssize_t n;
	int fd;

	if (mock_cg_path_of(path, sizeof path, dir, name, err) != 0)
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		sbx_err_set(err, "open %s for writing: %s", path, strerror(errno));
		return -1;
	}
	do
		n = write(fd, val, len);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len)
		sbx_err_set(err, "write \"%s\" to %s: %s", val, path,
			    n < 0 ? strerror(errno) : "short write");
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

bool mock_cg_exists(const char *dir, const char *name)
{
	char path[PATH_MAX];

	return mock_cg_path_of(path, sizeof path, dir, name, NULL) == 0 && access(path, F_OK) == 0;
}

static int write_u64(const char *dir, const char *name, uint64_t v, sbx_err *err)
{
	char buf[24];

	snprintf(buf, sizeof buf, "%" PRIu64, v);
	return mock_cg_write(dir, name, buf, err);
}

/* The value of a "key value" line of a flat-keyed file (memory.events,
 * memory.oom_control, cgroup.events). */
static int keyed_u64(const char *text, const char *key, uint64_t *out)
{
	size_t n = strlen(key);

	const char *p = text;

	while (p != NULL && *p != '\0') {
		char *end;

		if (strncmp(p, key, n) == 0 && p[n] == ' ') {
			errno = 0;
			*out = strtoull(p + n + 1, &end, 10);
			return errno == 0 && end != p + n + 1 ? 0 : -1;
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return -1;
}

/* Sandbox ids become directory names: [A-Za-z0-9._-], no leading '.', so
 * neither '/' nor ".." can take a path out of the parent group. */
static int check_id(const char *id, sbx_err *err)
{
	size_t n = id == NULL ? 0 : strnlen(id, MOCK_CGROUP_ID_MAX + 1);

	if (n == 0 || n > MOCK_CGROUP_ID_MAX) {
		sbx_err_set(err, "cgroup name must be 1 to %d characters", MOCK_CGROUP_ID_MAX);
		return -1;
	}
	if (id[0] == '.') {
		sbx_err_set(err, "cgroup name \"%s\" starts with '.'", id);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';

		if (!ok) {
			sbx_err_set(err,
				    "cgroup name \"%s\": character %zu is not one of "
				    "[A-Za-z0-9._-]",
				    id, i + 1);
			return -1;
		}
	}
	return 0;
}

/* ---- where the hierarchies are ---- */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r != '\0'; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Splits s in place at spaces into at most max fields. */
static size_t split(char *s, char **out, size_t max)
{
	size_t n = 0;

	while (*s != '\0' && n < max) {
		while (*s == ' ')
			s++;
		if (*s == '\0')
			break;
		out[n++] = s;
		while (*s != ' ' && *s != '\0')
			s++;
		if (*s == ' ')
			*s++ = '\0';
	}
	return n;
}

/* Finds the first mount of fstype whose super options include ctrl (NULL:
 * any): *mnt and *root (malloc'd). 1 found, 0 not, -1 error. */
static int find_mount(const char *fstype, const char *ctrl, char **mnt, char **root, sbx_err *err)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *pre[5], *post[3];
	size_t cap = 0;
	int found = 0;

	if (f == NULL) {
		sbx_err_set(err, "open /proc/self/mountinfo: %s", strerror(errno));
		return -1;
	}
	while (found == 0 && getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - ");

		line[strcspn(line, "\n")] = '\0';
		if (sep == NULL)
			continue;
		*sep = '\0';
		if (split(line, pre, 5) < 5 || split(sep + 3, post, 3) < 3)
			continue;
		if (strcmp(post[0], fstype) != 0 || (ctrl != NULL && !has_word(post[2], ctrl)))
			continue;
		unescape(pre[3]);
		unescape(pre[4]);
		*root = strdup(pre[3]);
		*mnt = strdup(pre[4]);
		found = *root != NULL && *mnt != NULL ? 1 : -1;
	}
	free(line);
	fclose(f);
	if (found < 0)
		sbx_err_set(err, "out of memory");
	return found;
}

/* The mock's own group in the hierarchy of ctrl ("" = the v2 one) from
 * /proc/self/cgroup, as a directory under mnt (whose root is root).
 * 1 found (*dir malloc'd), 0 not (why), -1 error. */
static int own_dir(const char *ctrl, const char *mnt, const char *root, char **dir, char *why,
		   size_t wcap, sbx_err *err)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char *line = NULL, *path = NULL;
	size_t cap = 0, rlen = strcmp(root, "/") == 0 ? 0 : strlen(root);
	int rc = 0;

	if (f == NULL) {
		sbx_err_set(err, "open /proc/self/cgroup: %s", strerror(errno));
		return -1;
	}
	while (path == NULL && getline(&line, &cap, f) > 0) {
		char *c1 = strchr(line, ':'), *c2 = c1 == NULL ? NULL : strchr(c1 + 1, ':');

		line[strcspn(line, "\n")] = '\0';
		if (c2 == NULL)
			continue;
		*c2 = '\0';
		if ((ctrl[0] == '\0' && strcmp(line, "0:") == 0) ||
		    (ctrl[0] != '\0' && has_word(c1 + 1, ctrl)))
			path = c2 + 1;
	}
	if (path == NULL) {
		say(why, wcap, "no %s line in /proc/self/cgroup", ctrl[0] ? ctrl : "0::");
	} else if (strstr(path, "/..") != NULL || strncmp(path, root, rlen) != 0 ||
		   (path[rlen] != '/' && path[rlen] != '\0')) {
		say(why, wcap, "the mock's group %s is not under the mount %s", path, mnt);
	} else {
		rc = asprintf(dir, "%s%s", mnt, strcmp(path + rlen, "/") == 0 ? "" : path + rlen);
		if (rc < 0)
			sbx_err_set(err, "out of memory");
		rc = rc < 0 ? -1 : 1;
	}
	free(line);
	fclose(f);
	return rc;
}

/* Creates base/name (or base/name-<n> when that exists: never reuse a group)
 * and returns it in *out. 1 made, 0 not allowed (why), -1 error. */
static int make_parent(const char *base, const char *name, char **out, char *why, size_t wcap,
		       sbx_err *err)
{
	for (int n = 1; n < 100; n++) {
		int e, len = n == 1 ? asprintf(out, "%s/%s", base, name)
				    : asprintf(out, "%s/%s-%d", base, name, n);

		if (len < 0) {
			sbx_err_set(err, "out of memory");
			return -1;
		}
		if (mkdir(*out, 0755) == 0)
			return 1;
		e = errno;
		if (e == EACCES || e == EPERM) {
			if (geteuid() != 0)
				say(why, wcap,
				    "cannot create %s: %s; not root (uid %u) and "
				    "nothing delegated",
				    *out, strerror(e), (unsigned)geteuid());
			else
				say(why, wcap, "cannot create %s: %s", *out, strerror(e));
		} else if (e == EROFS) {
			say(why, wcap, "cgroupfs is read-only (%s)", *out);
		} else if (e != EEXIST) {
			sbx_err_set(err, "mkdir %s: %s", *out, strerror(e));
		}
		free(*out);
		*out = NULL;
		if (e != EEXIST)
			return e == EACCES || e == EPERM || e == EROFS ? 0 : -1;
	}
	say(why, wcap, "%s/%s-1..99 all exist", base, name);
	return 0;
}

/* ---- detection ---- */

/* The deepest group from own up to mnt whose children get memory and pids
 * (its cgroup.subtree_control): *base (malloc'd). 1, 0 (why), -1. */
static int v2_base(const char *mnt, const char *own, char **base, char *why, size_t wcap,
		   sbx_err *err)
{
	char buf[CG_SMALL];
	char *dir = strdup(own);
	size_t mlen = strlen(mnt);

	if (dir == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	for (;;) {
		char *slash;

		if (cg_read(dir, "cgroup.subtree_control", buf, sizeof buf, err) != 0) {
			free(dir);
			return -1;
		}
		if (has_word(buf, "memory") && has_word(buf, "pids")) {
			*base = dir;
			return 1;
		}
		slash = strrchr(dir, '/');
		if (strlen(dir) <= mlen || slash == NULL || (size_t)(slash - dir) < mlen)
			break;
		*slash = '\0';
	}
	say(why, wcap,
	    "no group from %s up to %s enables memory and pids for its children "
	    "(the mock's own group holds processes, so it cannot): enable them in "
	    "%s/cgroup.subtree_control, or run the mock in a delegated group "
	    "(systemd-run --scope -p Delegate=yes)",
	    own, mnt, mnt);
	free(dir);
	return 0;
}

/* 1: v2 in use (cgs filled), 0: not usable (why), -1: error. */
static int v2_open(mock_cgroups *cgs, const char *name, char *why, size_t wcap, sbx_err *err)
{
	char *mnt = NULL, *root = NULL, *own = NULL, *base = NULL;
	char buf[CG_SMALL];
	sbx_err e = {""};
	int rc = find_mount("cgroup2", NULL, &mnt, &root, err);

	if (rc == 0)
		say(why, wcap, "no cgroup2 mount");
	if (rc <= 0)
		goto out_free;
	rc = -1;
	if (cg_read(mnt, "cgroup.controllers", buf, sizeof buf, err) != 0)
		goto out_free;
	buf[strcspn(buf, "\n")] = '\0';
	rc = 0;
	if (!has_word(buf, "memory") || !has_word(buf, "pids")) {
		say(why, wcap,
		    "the cgroup2 hierarchy at %s has no memory and pids "
		    "controllers (it has: %s)",
		    mnt, buf[0] ? buf : "none");
		goto out_free;
	}
	rc = own_dir("", mnt, root, &own, why, wcap, err);
	if (rc > 0)
		rc = v2_base(mnt, own, &base, why, wcap, err);
	if (rc > 0)
		rc = make_parent(base, name, &cgs->parent[0], why, wcap, err);
	if (rc <= 0)
		goto out_free;
	if (mock_cg_write(cgs->parent[0], "cgroup.subtree_control", "+memory +pids", &e) != 0 ||
	    !mock_cg_exists(cgs->parent[0], "cgroup.freeze")) {
		if (e.msg[0] == '\0')
			snprintf(e.msg, sizeof e.msg, "no cgroup.freeze in %s (kernel before 5.2)",
				 cgs->parent[0]);
		say(why, wcap, "%s", e.msg);
		rmdir(cgs->parent[0]);
		free(cgs->parent[0]);
		cgs->parent[0] = NULL;
		rc = 0;
		goto out_free;
	}
	cgs->version = 2;
	cgs->nhier = 1;
out_free:
	free(base);
	free(own);
	free(root);
	free(mnt);
	return rc;
}

/* The mock's own group in each v1 hierarchy. 1, 0 (why), -1. */
static int v1_own_dirs(char *own[CG_NHIER], char *why, size_t wcap, sbx_err *err)
{
	for (size_t i = 0; i < CG_NHIER; i++) {
		char *mnt = NULL, *root = NULL;
		int rc = find_mount("cgroup", cg_ctrl[i], &mnt, &root, err);

		if (rc == 0)
			say(why, wcap, "no cgroup v1 %s hierarchy mounted", cg_ctrl[i]);
		if (rc > 0)
			rc = own_dir(cg_ctrl[i], mnt, root, &own[i], why, wcap, err);
		free(mnt);
		free(root);
		if (rc <= 0)
			return rc;
	}
	return 1;
}

static void v1_undo_parents(mock_cgroups *cgs)
{
	for (size_t i = 0; i < CG_NHIER; i++) {
		if (cgs->parent[i] != NULL && cgs->same[i] == i) {
			rmdir(cgs->parent[i]);
			free(cgs->parent[i]);
		}
		cgs->parent[i] = NULL;
	}
}

/* 1: v1 in use (cgs filled), 0: not usable (why), -1: error. */
static int v1_open(mock_cgroups *cgs, const char *name, char *why, size_t wcap, sbx_err *err)
{
	char *own[CG_NHIER] = {NULL, NULL, NULL}, buf[CG_SMALL];
	const char *made;
	int rc = v1_own_dirs(own, why, wcap, err);

	if (rc <= 0)
		goto out_free;
	for (size_t i = 0; i < CG_NHIER; i++) {
		cgs->same[i] = i;
		for (size_t j = 0; j < i; j++)
			if (cgs->same[i] == i && strcmp(own[i], own[j]) == 0)
				cgs->same[i] = j;
	}
	rc = make_parent(own[CG_MEM], name, &cgs->parent[CG_MEM], why, wcap, err);
	if (rc <= 0)
		goto out_free;
	made = strrchr(cgs->parent[CG_MEM], '/') + 1;
	for (size_t i = 1; i < CG_NHIER && rc > 0; i++) {
		if (cgs->same[i] != i) {
			cgs->parent[i] = cgs->parent[cgs->same[i]];
		} else if (asprintf(&cgs->parent[i], "%s/%s", own[i], made) < 0) {
			cgs->parent[i] = NULL;
			sbx_err_set(err, "out of memory");
			rc = -1;
		} else if (mkdir(cgs->parent[i], 0755) != 0) {
			say(why, wcap, "cannot create %s: %s", cgs->parent[i], strerror(errno));
			free(cgs->parent[i]);
			cgs->parent[i] = NULL;
			rc = 0;
		}
	}
	if (rc <= 0) {
		v1_undo_parents(cgs);
		goto out_free;
	}
	/* Hierarchical accounting, where the kernel still lets it be chosen. */
	if (cg_read(cgs->parent[CG_MEM], "memory.use_hierarchy", buf, sizeof buf, NULL) == 0 &&
	    buf[0] == '0')
		mock_cg_write(cgs->parent[CG_MEM], "memory.use_hierarchy", "1", NULL);
	cgs->version = 1;
	cgs->nhier = CG_NHIER;
	for (size_t i = 0; i < CG_NHIER; i++) {
		cgs->own[i] = own[cgs->same[i]];
		if (cgs->same[i] != i)
			free(own[i]);
		own[i] = NULL;
	}
out_free:
	for (size_t i = 0; i < CG_NHIER; i++)
		free(own[i]);
	return rc;
}

mock_cgroups *mock_cgroups_open(const char *tag, char *note, size_t cap, sbx_err *err)
{
	mock_cgroups *cgs = calloc(1, sizeof(*cgs));
	char name[MOCK_CGROUP_ID_MAX + 32], why2[1024] = "", why1[1024] = "";
	int rc;

	if (note != NULL && cap > 0)
		note[0] = '\0';
	if (cgs == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	if (tag == NULL || tag[0] == '\0')
		tag = "mock";
	if (check_id(tag, err) != 0) {
		free(cgs);
		return NULL;
	}
	snprintf(name, sizeof name, "sbx-%s-%ld", tag, (long)getpid());
	rc = v2_open(cgs, name, why2, sizeof why2, err);
	if (rc < 0 && err != NULL) { /* a hybrid host's v1 may still do */
		say(why2, sizeof why2, "%s", err->msg);
		sbx_err_clear(err);
	}
	if (rc <= 0)
		rc = v1_open(cgs, name, why1, sizeof why1, err);
	if (rc > 0 && note != NULL)
		say(note, cap, "cgroups: v%d (memory, pids, %s) in %s", cgs->version,
		    cgs->version == 1 ? "freezer" : "freeze", cgs->parent[0]);
	else if (rc == 0 && note != NULL)
		say(note, cap, "cgroups: none (v2: %s; v1: %s)", why2, why1);
	if (rc <= 0) {
		free(cgs);
		return NULL;
	}
	return cgs;
}

void mock_cgroups_close(mock_cgroups *cgs)
{
	if (cgs == NULL)
		return;
	for (size_t i = 0; i < cgs->nhier; i++) {
		if (cgs->same[i] == i) {
			rmdir(cgs->parent[i]);
			free(cgs->parent[i]);
			free(cgs->own[i]);
		}
	}
	free(cgs);
}

int mock_cgroups_version(const mock_cgroups *cgs)
{
	return cgs == NULL ? 0 : cgs->version;
}

const char *mock_cgroups_parent(const mock_cgroups *cgs, size_t i)
{
	for (size_t k = 0; cgs != NULL && k < cgs->nhier; k++) {
		if (cgs->same[k] != k)
			continue;
		if (i == 0)
			return cgs->parent[k];
		i--;
	}
	return NULL;
}

/* ---- one sandbox's group ---- */

int mock_cgroup_limit(mock_cgroup *cg, uint64_t mem_bytes, uint64_t pids_max, sbx_err *err)
{
	const char *mem = mock_cg_dir(cg, CG_MEM), *pids = mock_cg_dir(cg, CG_PIDS);
	bool v1 = cg->cgs->version == 1, sw = v1 && mock_cg_exists(mem, "memory.memsw.limit_in_bytes");

	/* v1: the memory+swap limit may never be below the memory limit, so it
	 * is opened up first (a pooled group's limit rises at hand-out), then
	 * memory, then memsw = memory: going over is an OOM kill, not swap. */
	if (mem_bytes > 0) {
		if ((sw && mock_cg_write(mem, "memory.memsw.limit_in_bytes", "-1", err) != 0) ||
		    write_u64(mem, v1 ? "memory.limit_in_bytes" : "memory.max", mem_bytes, err) != 0)
			return -1;
		if (sw && write_u64(mem, "memory.memsw.limit_in_bytes", mem_bytes, err) != 0)
			return -1;
		if (!v1 && mock_cg_exists(mem, "memory.swap.max") &&
		    mock_cg_write(mem, "memory.swap.max", "0", err) != 0)
			return -1;
	}
	if (pids_max > 0 && write_u64(pids, "pids.max", pids_max, err) != 0)
		return -1;
	return 0;
}

void mock_cg_free_group(mock_cgroup *cg)
{
	for (size_t i = 0; i < cg->cgs->nhier; i++)
		if (cg->cgs->same[i] == i)
			free(cg->dir[i]);
	free(cg);
}

mock_cgroup *mock_cgroup_create(mock_cgroups *cgs, const char *id, uint64_t mem_bytes,
				uint64_t pids_max, sbx_err *err)
{
	mock_cgroup *cg;
	size_t made = 0;

	if (cgs == NULL) {
		sbx_err_set(err, "no cgroups");
		return NULL;
	}
	if (check_id(id, err) != 0)
		return NULL;
	cg = calloc(1, sizeof(*cg));
	if (cg == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	cg->cgs = cgs;
	for (; made < cgs->nhier; made++) {
		if (cgs->same[made] != made)
			continue;
		if (asprintf(&cg->dir[made], "%s/%s", cgs->parent[made], id) < 0) {
			cg->dir[made] = NULL;
			sbx_err_set(err, "out of memory");
			goto out_rmdir;
		}
		if (mkdir(cg->dir[made], 0755) != 0) {
			sbx_err_set(err, "mkdir %s: %s", cg->dir[made], strerror(errno));
			goto out_rmdir;
		}
	}
	if (mock_cgroup_limit(cg, mem_bytes, pids_max, err) != 0)
		goto out_rmdir;
	return cg;
out_rmdir:
	for (size_t i = 0; i < made; i++)
		if (cgs->same[i] == i)
			rmdir(cg->dir[i]);
	mock_cg_free_group(cg);
	return NULL;
}

int mock_cgroup_add(mock_cgroup *cg, pid_t pid, sbx_err *err)
{
	char buf[24];

	snprintf(buf, sizeof buf, "%ld", (long)pid);
	for (size_t i = 0; i < cg->cgs->nhier; i++)
		if (cg->cgs->same[i] == i && mock_cg_write(cg->dir[i], "cgroup.procs", buf, err) != 0)
			return -1;
	return 0;
}

/* v1: the calling thread alone ("0" in tasks) into dirs[i] of every
 * hierarchy. The kernel moves a thread that moves itself without its
 * global threadgroup lock, whose write side waits out an RCU grace period
 * (ms) while every fork on the host stalls; a pid in cgroup.procs takes it. */
static int move_self(const mock_cgroups *cgs, char *const dirs[CG_NHIER], sbx_err *err)
{
	for (size_t i = 0; i < cgs->nhier; i++)
		if (cgs->same[i] == i && mock_cg_write(dirs[i], "tasks", "0", err) != 0)
			return -1;
	return 0;
}

int mock_cgroup_join(mock_cgroup *cg, sbx_err *err)
{
	if (cg->cgs->version != 1)
		return 1;
	if (move_self(cg->cgs, cg->dir, err) == 0)
		return 0;
	mock_cgroup_leave(cg, NULL); /* the hierarchies it did join */
	return -1;
}

int mock_cgroup_leave(mock_cgroup *cg, sbx_err *err)
{
	return cg->cgs->version != 1 ? 0 : move_self(cg->cgs, cg->cgs->own, err);
}

/* Whether the freezer reports the state asked for. -1: cannot read. */
static int freeze_state(mock_cgroup *cg, bool frozen, sbx_err *err)
{
	char buf[CG_SMALL];
	uint64_t v = 0;

	if (cg->cgs->version == 1) {
		if (cg_read(mock_cg_dir(cg, CG_FRZ), "freezer.state", buf, sizeof buf, err) != 0)
			return -1;
		return strncmp(buf, frozen ? "FROZEN" : "THAWED", 6) == 0;
	}
	if (cg_read(mock_cg_dir(cg, CG_MEM), "cgroup.events", buf, sizeof buf, err) != 0)
		return -1;
	if (keyed_u64(buf, "frozen", &v) != 0) {
		sbx_err_set(err, "no \"frozen\" in %s/cgroup.events", mock_cg_dir(cg, CG_MEM));
		return -1;
	}
	return (v == 1) == frozen;
}

static int freeze_write(mock_cgroup *cg, bool frozen, sbx_err *err)
{
	if (cg->cgs->version == 1)
		return mock_cg_write(mock_cg_dir(cg, CG_FRZ), "freezer.state", frozen ? "FROZEN" : "THAWED",
				err);
	return mock_cg_write(mock_cg_dir(cg, CG_MEM), "cgroup.freeze", frozen ? "1" : "0", err);
}

/* Writes the state and waits up to wait_ms for the kernel to report it. */
int mock_cg_freeze_wait(mock_cgroup *cg, bool frozen, int64_t wait_ms, sbx_err *err)
{
	int64_t deadline = sbx_mono_ms() + wait_ms;
	long us = 50;
	int st;

	if (freeze_write(cg, frozen, err) != 0)
		return -1;
	while ((st = freeze_state(cg, frozen, err)) == 0 && sbx_mono_ms() < deadline)
		mock_cg_backoff(&us);
	if (st == 0)
		sbx_err_set(err, "%s: not %s after %" PRId64 " ms", mock_cg_dir(cg, CG_FRZ),
			    frozen ? "frozen" : "thawed", wait_ms);
	return st == 1 ? 0 : -1;
}

int mock_cgroup_freeze(mock_cgroup *cg, bool frozen, sbx_err *err)
{
	if (mock_cg_freeze_wait(cg, frozen, CG_FREEZE_WAIT_MS, err) == 0)
		return 0;
	if (frozen) /* never leave a half-frozen sandbox behind a failed pause */
		freeze_write(cg, false, NULL);
	return -1;
}

int mock_cgroup_oom_kills(mock_cgroup *cg, uint64_t *out, sbx_err *err)
{
	const char *file = cg->cgs->version == 1 ? "memory.oom_control" : "memory.events";
	char buf[CG_SMALL];

	if (cg_read(mock_cg_dir(cg, CG_MEM), file, buf, sizeof buf, err) != 0)
		return -1;
	if (keyed_u64(buf, "oom_kill", out) != 0) {
		sbx_err_set(err, "no \"oom_kill\" in %s/%s (kernel before 4.13)",
			    mock_cg_dir(cg, CG_MEM), file);
		return -1;
	}
	return 0;
}

int mock_cgroup_read(mock_cgroup *cg, bool pids, const char *name, char *buf, size_t cap, sbx_err *err)
{
	return cg_read(mock_cg_dir(cg, pids ? CG_PIDS : CG_MEM), name, buf, cap, err);
}

bool mock_cgroup_oom_killed(mock_cgroup *cg, uint64_t before)
{
	uint64_t now = 0;

	return mock_cgroup_oom_kills(cg, &now, NULL) == 0 && now > before;
}


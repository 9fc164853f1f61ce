/* guest: the "VM" behind a mock sandbox — its private directory tree, the
 * guest mode (contained or plain), its cell (contained) or the process
 * groups its execs started (plain), which pause, resume and destroy
 * signal; see guest.h. Spawning is in guest_exec.c, the files API in
 * guest_files.c.
 *
 * Must never follow a symlink when removing a tree and never leave a
 * process behind once mock_guest_free returns. Knows nothing of HTTP or of
 * the model. */
#define _GNU_SOURCE
#include "guest/guest_internal.h"
#include "guest/cell_proto.h"
#include "guest/trust.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

const char *mock_guest_mode_name(mock_guest_mode mode)
{
	return mode == GUEST_CONTAINED ? "contained" : "plain";
}

int mock_guest_mode_detect(const char *requested, mock_guest_mode *out, sbx_err *err)
{
	if (requested != NULL && strcmp(requested, "plain") == 0) {
		*out = GUEST_PLAIN;
		return 0;
	}
	if (requested != NULL && strcmp(requested, "contained") != 0 && strcmp(requested, "ns") != 0 &&
	    strcmp(requested, "auto") != 0) {
		sbx_err_set(err, "guest mode \"%s\": expected contained or plain", requested);
		return -1;
	}
	/* never a silent fallback to plain: guests run model-written code */
	if (mock_cell_probe(err) != 0)
		return -1;
	*out = GUEST_CONTAINED;
	return 0;
}

static void remove_tree_at(int parent, const char *name);

static int mkdir_p(const char *path, sbx_err *err)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf)) {
		sbx_err_set(err, "path too long: %s", path);
		return -1;
	}
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
			sbx_err_set(err, "mkdir %s: %s", buf, strerror(errno));
			return -1;
		}
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
		sbx_err_set(err, "mkdir %s: %s", buf, strerror(errno));
		return -1;
	}
	return 0;
}

/* fs, fs/workspace, fs/tmp: three mkdir calls when the work dir exists
 * (the usual case), mkdir_p of every prefix otherwise. */
static int make_tree(const mock_guest *g, sbx_err *err)
{
	const char *const dirs[] = {g->fs, g->ws, g->tmp};

	for (size_t i = 0; i < 3; i++) {
		if (mkdir(dirs[i], 0755) == 0 || errno == EEXIST)
			continue;
		if (errno != ENOENT) {
			sbx_err_set(err, "mkdir %s: %s", dirs[i], strerror(errno));
			return -1;
		}
		return mkdir_p(g->ws, err) != 0 || mkdir_p(g->tmp, err) != 0 ? -1 : 0;
	}
	return 0;
}

/* Contained: root inside owns workspace and tmp (as root the mock maps
 * root inside to the uid base; unprivileged, it is the mock's own uid),
 * then the cell starts on them. */
/* The cell is in its cgroup before it runs anything: every process of
 * the sandbox is born inside the limits. v1: born there, cloned by a
 * thread that joined the group (cheap; mock_cgroup_join); v2: moved in
 * right after the clone. */
static int place_cell(pid_t pid, void *arg, sbx_err *err)
{
	return mock_cgroup_add(arg, pid, err);
}

static int join_group(void *arg, sbx_err *err)
{
	return mock_cgroup_join(arg, err);
}

static int leave_group(void *arg, sbx_err *err)
{
	return mock_cgroup_leave(arg, err);
}

static int start_cell(mock_guest *g, const char *work_dir, const char *id, const mock_guest_opts *o, sbx_err *err)
{
	mock_cell_conf conf = {.id = id, .ws = g->ws, .tmp = g->tmp};
	char bundle[PATH_MAX];

	if (o != NULL) {
		conf.self_port = o->self_port;
		conf.disk_mib = o->disk_mib;
		conf.pooled = o->pooled;
		conf.filter = o->filter;
		if (o->root != NULL) {
			conf.image_dir = o->root->dir;
			conf.image_idmapped = o->root->idmapped;
			conf.image_userns = o->root->userns;
		}
		conf.trust_pem = o->trust_pem;
		g->trusts_ca = o->trust_pem != NULL;
		if (o->trust_pem != NULL) {
			if (mock_trust_bundle(work_dir, conf.image_dir, o->trust_pem, bundle, sizeof(bundle), err) != 0)
				return -1;
			conf.trust_bundle = bundle;
		}
	}
	if (o != NULL && o->cgroups != NULL) {
		g->cg = mock_cgroup_create(o->cgroups, id, o->mem_bytes, o->pids_max, err);
		if (g->cg == NULL)
			return -1;
		if (mock_cgroups_version(o->cgroups) == 1) {
			conf.join = join_group;
			conf.leave = leave_group;
		} else {
			conf.place = place_cell;
		}
		conf.place_arg = g->cg;
	}
	g->owner = mock_cell_owner();
	if (g->owner != (uid_t)-1 &&
	    (chown(g->fs, g->owner, g->owner) != 0 || chown(g->ws, g->owner, g->owner) != 0 ||
	     chown(g->tmp, g->owner, g->owner) != 0)) {
		sbx_err_set(err, "chown the sandbox tree to %u: %s", (unsigned)g->owner, strerror(errno));
		return -1;
	}
	g->cell = mock_cell_start(&conf, err);
	return g->cell != NULL ? 0 : -1;
}

mock_guest *mock_guest_new(const char *work_dir, const char *id, mock_guest_mode mode,
			   const mock_guest_opts *opts, sbx_err *err)
{
	mock_guest *g = calloc(1, sizeof(*g));
	char seed[PATH_MAX], from[PATH_MAX + 8];
	struct statfs sf;

	if (g == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&g->lock, NULL);
	g->mode = mode;
	g->owner = (uid_t)-1;
	if ((size_t)snprintf(g->fs, sizeof(g->fs), "%s/%s", work_dir, id) >= sizeof(g->fs) ||
	    (size_t)snprintf(g->ws, sizeof(g->ws), "%s/workspace", g->fs) >= sizeof(g->ws) ||
	    (size_t)snprintf(g->tmp, sizeof(g->tmp), "%s/tmp", g->fs) >= sizeof(g->tmp) ||
	    (size_t)snprintf(seed, sizeof(seed), "%s/seed", g->fs) >= sizeof(seed) ||
	    (size_t)snprintf(from, sizeof(from), "%s.from", seed) >= sizeof(from)) {
		sbx_err_set(err, "work dir path too long");
		goto out_free;
	}
	if (make_tree(g, err) != 0)
		goto out_free;
	if (statfs(g->fs, &sf) == 0)
		g->work_fs = (long)sf.f_type;
	chmod(g->tmp, 01777);
	if (mode == GUEST_CONTAINED && start_cell(g, work_dir, id, opts, err) != 0)
		goto out_remove_cg;
	remove_tree_at(AT_FDCWD, seed); /* a fork's: in the cell's disk now */
	unlink(from);
	return g;

out_remove_cg:
	mock_cgroup_remove(g->cg, NULL); /* the cell's start undid itself */
	/* a pool's tree is its own (a failed sandbox's may hold durable files) */
	if (opts != NULL && opts->pooled)
		remove_tree_at(AT_FDCWD, g->fs);
out_free:
	pthread_mutex_destroy(&g->lock);
	free(g);
	return NULL;
}

int mock_guest_bind(mock_guest *g, const char *work_dir, const char *id, uint64_t mem_bytes,
		    unsigned disk_mib, sbx_err *err)
{
	char fs[PATH_MAX], ws[PATH_MAX], tmp[PATH_MAX];

	if (g->cell == NULL) {
		sbx_err_set(err, "a plain guest cannot be bound");
		return -1;
	}
	if ((size_t)snprintf(fs, sizeof(fs), "%s/%s", work_dir, id) >= sizeof(fs) ||
	    (size_t)snprintf(ws, sizeof(ws), "%s/workspace", fs) >= sizeof(ws) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/tmp", fs) >= sizeof(tmp)) {
		sbx_err_set(err, "work dir path too long");
		return -1;
	}
	/* the shape's limit replaces the pool's small one before anything of
	 * the sandbox's runs; a group keeps its pool name (v2 cannot rename) */
	if (g->cg != NULL && mock_cgroup_limit(g->cg, mem_bytes, 0, err) != 0)
		return -1;
	if (mock_cell_bind(g->cell, id, disk_mib, err) != 0)
		return -1;
	/* never over another tree: ids are unique, a name taken is a bug */
	if (renameat2(AT_FDCWD, g->fs, AT_FDCWD, fs, RENAME_NOREPLACE) != 0) {
		sbx_err_set(err, "rename %s to %s: %s", g->fs, fs, strerror(errno));
		return -1;
	}
	memcpy(g->fs, fs, sizeof(fs));
	memcpy(g->ws, ws, sizeof(ws));
	memcpy(g->tmp, tmp, sizeof(tmp));
	return 0;
}

static int run_cmd(char *const argv[], sbx_err *err)
{
	pid_t pid = fork();
	int st = 0;

	if (pid < 0) {
		sbx_err_set(err, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			sbx_err_set(err, "waitpid: %s", strerror(errno));
			return -1;
		}
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		sbx_err_set(err, "%s failed (status %d)", argv[0], st);
		return -1;
	}
	return 0;
}

int mock_guest_copy(mock_guest *dst, const mock_guest *src, sbx_err *err)
{
	char from[PATH_MAX + 4];
	char *argv[] = {"/bin/cp", "-a", from, dst->fs, NULL};

	if (src->cell != NULL)
		return 0; /* contained: seeded before its cell started */
	snprintf(from, sizeof(from), "%s/.", src->fs);
	return run_cmd(argv, err);
}

/* <seed>.from: the source's name (its tree's), which the name files in its
 * root were written for; the new cell renames them (cell/bind.c). */
static int seed_from(const char *seed, const mock_guest *src, sbx_err *err)
{
	char path[PATH_MAX + 8];
	const char *name = strrchr(src->fs, '/');
	size_t len;
	int fd;

	name = name != NULL ? name + 1 : src->fs;
	len = strlen(name);
	snprintf(path, sizeof(path), "%s.from", seed);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, name, len) != (ssize_t)len) {
		sbx_err_set(err, "write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int mock_guest_seed(const char *work_dir, const char *id, const mock_guest *src, sbx_err *err)
{
	char disk[3][64], seed[PATH_MAX];
	char *argv[] = {"/bin/cp", "-a", disk[0], disk[1], disk[2], seed, NULL};
	static const char *const names[] = {"u", "workspace", "tmp"};
	pid_t pid = mock_cell_pid(src->cell);

	if (src->cell == NULL)
		return 0;
	/* the source is paused (frozen): its disk holds still while copied */
	for (size_t i = 0; i < 3; i++)
		snprintf(disk[i], sizeof(disk[i]), "/proc/%d/fd/%d/%s", (int)pid, CELL_DISK_FD, names[i]);
	if ((size_t)snprintf(seed, sizeof(seed), "%s/%s/seed", work_dir, id) >= sizeof(seed)) {
		sbx_err_set(err, "work dir path too long");
		return -1;
	}
	if (mkdir_p(seed, err) != 0 || run_cmd(argv, err) != 0)
		return -1;
	return seed_from(seed, src, err);
}

/* ---- process groups ---- */

static void prune_locked(mock_guest *g)
{
	size_t j = 0;

	for (size_t i = 0; i < g->npg; i++) {
		if (kill(-g->pgids[i], 0) == 0 || errno == EPERM)
			g->pgids[j++] = g->pgids[i];
	}
	g->npg = j;
}

size_t mock_guest_pgids(mock_guest *g, pid_t *out, size_t cap)
{
	size_t n;

	pthread_mutex_lock(&g->lock);
	prune_locked(g);
	n = g->npg < cap ? g->npg : cap;
	if (n > 0)
		memcpy(out, g->pgids, n * sizeof(*out));
	pthread_mutex_unlock(&g->lock);
	return n;
}

int mock_guest_self_fd(const mock_guest *g)
{
	return g != NULL ? mock_cell_self_fd(g->cell) : -1;
}

pid_t mock_guest_cell_pid(const mock_guest *g)
{
	return g != NULL ? mock_cell_pid(g->cell) : -1;
}

void mock_guest_set_net_link(mock_guest *g, uint32_t link)
{
	g->net_link = link;
}

uint32_t mock_guest_take_net_link(mock_guest *g)
{
	uint32_t link = g != NULL ? g->net_link : 0;

	if (g != NULL)
		g->net_link = 0;
	return link;
}

int mock_guest_socket(mock_guest *g, sbx_err *err)
{
	bool dead;

	if (g == NULL || g->cell == NULL) {
		sbx_err_set(err, "ingress needs contained guests (plain mode shares the host's network)");
		return -1;
	}
	pthread_mutex_lock(&g->lock);
	dead = g->dead;
	pthread_mutex_unlock(&g->lock);
	if (dead) {
		sbx_err_set(err, "sandbox environment is gone");
		return -1;
	}
	/* not under the lock: a frozen cell answers only when thawed, and a kill
	 * meanwhile drops the request (the answer socket then reads EOF); the
	 * caller keeps the guest alive (the sandbox is busy) */
	return mock_cell_socket(g->cell, err);
}

int mock_guest_take_self_fd(mock_guest *g)
{
	return g != NULL ? mock_cell_take_self_fd(g->cell) : -1;
}

void mock_guest_signal(mock_guest *g, int sig)
{
	if (g == NULL)
		return;
	if (g->cell != NULL) {
		mock_cell_signal(g->cell, 0, sig);
		return;
	}
	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < g->npg; i++)
		kill(-g->pgids[i], sig);
	pthread_mutex_unlock(&g->lock);
}

int mock_guest_pause(mock_guest *g, bool paused, sbx_err *err)
{
	int rc = 0;

	if (g == NULL)
		return 0;
	pthread_mutex_lock(&g->lock);
	if (g->cg != NULL && !g->dead)
		rc = mock_cgroup_freeze(g->cg, paused, err);
	pthread_mutex_unlock(&g->lock);
	if (g->cg == NULL)
		mock_guest_signal(g, paused ? SIGSTOP : SIGCONT);
	return rc;
}

const char *mock_guest_name(const mock_guest *g)
{
	const char *slash = strrchr(g->fs, '/');

	return slash != NULL ? slash + 1 : g->fs;
}

bool mock_guest_dead(mock_guest *g)
{
	bool dead;

	if (g == NULL)
		return false;
	pthread_mutex_lock(&g->lock);
	dead = g->dead;
	pthread_mutex_unlock(&g->lock);
	return dead;
}

/* Everything is told to die: the cell (the kernel kills its namespace with
 * it) and, plain, every process group. Under the lock. */
static void doom_locked(mock_guest *g)
{
	g->dead = true;
	if (g->cell != NULL && !g->reaped)
		mock_cell_kill(g->cell);
	for (size_t i = 0; i < g->npg; i++) {
		kill(-g->pgids[i], SIGKILL);
		kill(-g->pgids[i], SIGCONT);
	}
}

/* Waits for the killed cell and removes its group. Under the lock. */
static void reap_locked(mock_guest *g)
{
	if (g->cell == NULL || g->reaped)
		return;
	/* a frozen task dies only once thawed; killed first, nothing runs in
	 * between */
	if (g->cg != NULL)
		mock_cgroup_freeze(g->cg, false, NULL);
	mock_cell_reap(g->cell);
	mock_cgroup_remove(g->cg, NULL);
	g->cg = NULL;
	g->reaped = true;
}

void mock_guest_kill(mock_guest *g)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	doom_locked(g);
	/* reaped now, not at mock stop: a destroyed sandbox leaves no zombie
	 * and no cgroup behind (the struct lives on, see ops.c) */
	reap_locked(g);
	pthread_mutex_unlock(&g->lock);
}

void mock_guest_kill_nowait(mock_guest *g)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	if (!g->dead)
		doom_locked(g);
	pthread_mutex_unlock(&g->lock);
}

int guest_add_pgid(mock_guest *g, pid_t pgid)
{
	int rc = 0;

	pthread_mutex_lock(&g->lock);
	prune_locked(g);
	if (g->npg == g->cappg) {
		size_t cap = g->cappg == 0 ? 8 : g->cappg * 2;
		pid_t *np = realloc(g->pgids, cap * sizeof(*np));

		if (np == NULL) {
			rc = -1;
			goto out_unlock;
		}
		g->pgids = np;
		g->cappg = cap;
	}
	g->pgids[g->npg++] = pgid;
	if (g->dead)
		kill(-pgid, SIGKILL);
out_unlock:
	pthread_mutex_unlock(&g->lock);
	return rc;
}

/* A guest's child shares the mock's memory until execve (CLONE_VM), so
 * a handler the mock installed could otherwise run on the child's stack. */
void guest_child_reset_signals(void)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (sigaction(sig, NULL, &old) != 0)
			continue;
		if (old.sa_handler != SIG_DFL && (old.sa_handler != SIG_IGN || sig == SIGPIPE))
			sigaction(sig, &sa, NULL);
	}
}

void guest_child_take_tty(int tty)
{
	if (setsid() >= 0)
		(void)ioctl(tty, TIOCSCTTY, 0);
}

/* ---- teardown ---- */

/* Removes a tree without following symlinks. */
static void remove_tree_at(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *de;

	if (fd < 0) {
		unlinkat(parent, name, 0);
		return;
	}
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (de->d_type == DT_DIR)
			remove_tree_at(dirfd(d), de->d_name);
		else if (unlinkat(dirfd(d), de->d_name, 0) != 0 && errno == EISDIR)
			remove_tree_at(dirfd(d), de->d_name);
	}
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);
}

void mock_guest_free(mock_guest *g, bool remove_tree)
{
	if (g == NULL)
		return;
	/* killed once only: a process group id killed before may belong to
	 * another process by now (guest_add_pgid kills a late one itself);
	 * one killed without the wait is waited for here */
	pthread_mutex_lock(&g->lock);
	if (!g->dead)
		doom_locked(g);
	reap_locked(g);
	pthread_mutex_unlock(&g->lock);
	if (g->procs_free != NULL)
		g->procs_free(g); /* the managed processes' readers end: all is dead */
	mock_cell_stop(g->cell); /* reaped: every guest process is gone */
	if (remove_tree)
		remove_tree_at(AT_FDCWD, g->fs);
	free(g->pgids);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* ---- the disk's size ---- */

/* In a fresh child of the mock: enters the cell's user and mount
 * namespaces (root inside may reconfigure the tmpfs, which belongs to its
 * user namespace) and sets the disk's size. System calls only. */
static _Noreturn void resize_child(int userns, int mntns, int disk, const char *size)
{
	int fc;

	if (setns(userns, CLONE_NEWUSER) != 0 || setns(mntns, CLONE_NEWNS) != 0)
		_exit(10);
	fc = (int)syscall(CELL_SYS_FSPICK, disk, "", CELL_FSPICK_CLOEXEC | CELL_FSPICK_EMPTY_PATH);
	if (fc < 0)
		_exit(11);
	if (syscall(CELL_SYS_FSCONFIG, fc, CELL_FSCONFIG_SET_STRING, "size", size, 0) != 0 ||
	    syscall(CELL_SYS_FSCONFIG, fc, CELL_FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0) != 0)
		_exit(12);
	_exit(0);
}

int mock_guest_resize(mock_guest *g, unsigned mib, sbx_err *err)
{
	char names[3][16] = {"ns/user", "ns/mnt", ""};
	char path[64], size[32];
	int fds[3] = {-1, -1, -1}, st = 0, rc = -1;
	pid_t pid;

	if (g == NULL || g->cell == NULL || mib == 0)
		return 0;
	snprintf(names[2], sizeof(names[2]), "fd/%d", CELL_DISK_FD);
	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < 3 && !g->reaped; i++) {
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)mock_cell_pid(g->cell), names[i]);
		fds[i] = open(path, (i == 2 ? O_PATH | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
	}
	pthread_mutex_unlock(&g->lock);
	if (fds[0] < 0 || fds[1] < 0 || fds[2] < 0) {
		sbx_err_set(err, "the sandbox's disk: %s", strerror(errno));
		goto out;
	}
	snprintf(size, sizeof(size), "%um", mib);
	pid = fork();
	if (pid == 0)
		resize_child(fds[0], fds[1], fds[2], size);
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		sbx_err_set(err, "growing the sandbox's disk to %u MiB failed (step %d)", mib,
			    pid < 0 ? -1 : WEXITSTATUS(st));
	else
		rc = 0;
out:
	for (size_t i = 0; i < 3; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return rc;
}

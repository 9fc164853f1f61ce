/* ctl_harness: real sbx-mock and sbxctl processes for the integration
 * tests; see ctl_harness.h. Cleans up every process it starts. */
#include "ctl_harness.h"
#include "sbx/sys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static long now_ms(void)
{
	return (long)sbx_mono_ms();
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0;
	if (f != NULL) {
		FILE *mem = open_memstream(&buf, &n);
		char chunk[8192];
		size_t got;
		while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
			fwrite(chunk, 1, got, mem);
		fclose(mem);
		fclose(f);
	} else {
		buf = calloc(1, 1);
	}
	if (len != NULL)
		*len = n;
	return buf;
}

/* Copies the rest of the line after `prefix` in text into dst. */
static bool find_after(const char *text, const char *prefix, char *dst, size_t cap)
{
	const char *p = strstr(text, prefix);
	if (p == NULL)
		return false;
	p += strlen(prefix);
	size_t n = strcspn(p, "\r\n");
	if (p[n] == '\0' || n == 0 || n >= cap)
		return false; /* the line is not complete yet */
	memcpy(dst, p, n);
	dst[n] = '\0';
	return true;
}

int mock_start(mock_proc *m, const char *mock_bin)
{
	return mock_start_with(m, mock_bin, NULL);
}

int mock_start_with(mock_proc *m, const char *mock_bin, const char *flag)
{
	memset(m, 0, sizeof *m);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	snprintf(m->dir, sizeof m->dir, "/tmp/sbxctl-it-XXXXXX");
	if (mkdtemp(m->dir) == NULL) {
		perror("mkdtemp");
		return -1;
	}
	snprintf(m->log, sizeof m->log, "%s/mock.log", m->dir);
	m->pid = fork();
	if (m->pid < 0)
		return -1;
	if (m->pid == 0) {
		setpgid(0, 0);
		int fd = open(m->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
		execl(mock_bin, mock_bin, "--listen", "127.0.0.1:0", "--self-listen", "127.0.0.1:0",
		      flag, (char *)NULL);
		_exit(127);
	}
	setpgid(m->pid, m->pid);
	long deadline = now_ms() + 15000;
	while (now_ms() < deadline) {
		char *text = slurp(m->log, NULL);
		bool ok = find_after(text, "listening on ", m->url, sizeof m->url) &&
			  find_after(text, "admin token: ", m->token, sizeof m->token);
		free(text);
		if (ok)
			return 0;
		int st = 0;
		if (waitpid(m->pid, &st, WNOHANG) == m->pid) {
			char *log = slurp(m->log, NULL);
			fprintf(stderr, "sbx-mock exited at start (status %d):\n%s\n", st, log);
			free(log);
			m->pid = 0;
			return -1;
		}
		sleep_ms(20);
	}
	fprintf(stderr, "sbx-mock did not print its URL and admin token within 15 s\n");
	return -1;
}

int wait_exit(pid_t pid, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	int st = 0;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		if (r < 0)
			return -1;
		if (now_ms() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		sleep_ms(5);
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

/* Live children of this process (after reaping zombies), killed. */
static int leftover_children(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	int alive = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char *end = NULL;
		long pid = strtol(e->d_name, &end, 10);
		if (end == e->d_name || *end != '\0')
			continue;
		char path[64];
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
		char *stat = slurp(path, NULL);
		const char *rp = strrchr(stat, ')');
		char state = 0;
		long ppid = 0;
		if (rp != NULL && rp[1] == ' ' && rp[2] != '\0') {
			state = rp[2];
			ppid = strtol(rp + 4, NULL, 10);
		}
		if (ppid == (long)getpid() && state != 'Z') {
			fprintf(stderr, "left behind: pid %ld %s\n", pid, stat);
			kill((pid_t)pid, SIGKILL);
			alive++;
		}
		free(stat);
	}
	if (d != NULL)
		closedir(d);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return alive;
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char p[600];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(p);
		else
			unlink(p);
	}
	if (d != NULL)
		closedir(d);
	rmdir(dir);
}

/* True once no process is in group pgid (zombies of ours reaped), false
 * when one still is after timeout_ms. */
static bool group_gone(pid_t pgid, long timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (kill(-pgid, 0) != 0 && errno == ESRCH)
			return true;
		if (now_ms() >= deadline)
			return false;
		sleep_ms(20);
	}
}

int mock_stop_check(mock_proc *m)
{
	int left = 0;
	if (m->pid > 0) {
		kill(m->pid, SIGTERM);
		if (wait_exit(m->pid, 10000) < 0)
			fprintf(stderr, "sbx-mock did not stop within 10 s of SIGTERM (killed)\n");
		/* Anything still in its process group was left behind. Its
		 * children killed at its stop are ours once it is gone (the
		 * subreaper): a zombie of ours, or one still dying, answers
		 * kill() too, so reap and look again for a bounded while. */
		if (!group_gone(m->pid, 10000)) {
			fprintf(stderr, "processes left in sbx-mock's process group %d\n", (int)m->pid);
			kill(-m->pid, SIGKILL);
			left++;
		}
		m->pid = 0;
	}
	sleep_ms(50);
	left += leftover_children();
	if (m->dir[0] != '\0')
		remove_tree(m->dir);
	m->dir[0] = '\0';
	return left;
}

static void child_env(const mock_proc *m, const char *key)
{
	setenv("CREATEOS_SANDBOX_BASE_URL", m->url, 1);
	setenv("SBX_MOCK_ADMIN_TOKEN", m->token, 1);
	if (key != NULL)
		setenv("CREATEOS_SANDBOX_API_KEY", key, 1);
	else
		unsetenv("CREATEOS_SANDBOX_API_KEY");
}

static char **make_argv(const char *ctl_bin, const char *const *args)
{
	size_t n = 0;
	while (args[n] != NULL)
		n++;
	char **argv = calloc(n + 2, sizeof *argv);
	argv[0] = (char *)ctl_bin;
	for (size_t i = 0; i < n; i++)
		argv[i + 1] = (char *)args[i];
	return argv;
}

ctl_result ctl_exec(const char *ctl_bin, const mock_proc *m, const char *key, const char *const *args)
{
	ctl_result r = {-1, NULL, 0, NULL};
	char out[320], err[320];
	snprintf(out, sizeof out, "%s/ctl.out", m->dir);
	snprintf(err, sizeof err, "%s/ctl.err", m->dir);
	char **argv = make_argv(ctl_bin, args);
	pid_t pid = fork();
	if (pid == 0) {
		child_env(m, key);
		int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fi = open("/dev/null", O_RDONLY);
		dup2(fi, 0);
		dup2(fo, 1);
		dup2(fe, 2);
		execv(ctl_bin, argv);
		_exit(127);
	}
	free(argv);
	r.rc = wait_exit(pid, 120000);
	r.out = slurp(out, &r.out_len);
	r.err = slurp(err, NULL);
	return r;
}

void ctl_result_free(ctl_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

pid_t ctl_spawn(const char *ctl_bin, const mock_proc *m, const char *key, const char *const *args,
		int *out_fd)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	char err[320];
	snprintf(err, sizeof err, "%s/spawn.err", m->dir);
	char **argv = make_argv(ctl_bin, args);
	pid_t pid = fork();
	if (pid == 0) {
		child_env(m, key);
		int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(p[1], 1);
		dup2(fe, 2);
		close(p[0]);
		close(p[1]);
		execv(ctl_bin, argv);
		_exit(127);
	}
	free(argv);
	close(p[1]);
	*out_fd = p[0];
	return pid;
}

bool read_until(int fd, char *buf, size_t cap, size_t *len, const char *needle, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	for (;;) {
		buf[*len] = '\0';
		if (strstr(buf, needle) != NULL)
			return true;
		long left = deadline - now_ms();
		if (left <= 0 || *len + 1 >= cap)
			return false;
		struct pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		ssize_t n = read(fd, buf + *len, cap - 1 - *len);
		if (n <= 0) {
			buf[*len] = '\0';
			return strstr(buf, needle) != NULL;
		}
		*len += (size_t)n;
	}
}

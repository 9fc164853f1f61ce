/* Integration: the sbx-mock program — prints its URL and admin token,
 * serves requests, exits 0 on SIGTERM and leaves no guest process behind;
 * bad flags exit 2 with a message. argv[1] is the sbx-mock binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mock_http.h"

static const char *g_bin;

static pid_t spawn(char *const argv[], int *out_fd, int *err_fd)
{
	int o[2], e[2];
	pid_t pid;

	if (pipe(o) != 0 || pipe(e) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		close(o[0]);
		close(e[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	*out_fd = o[0];
	*err_fd = e[0];
	return pid;
}

static int wait_exit(pid_t pid)
{
	int st = 0;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool pid_alive(pid_t pid)
{
	return kill(pid, 0) == 0;
}

/* The pid of the process whose command line is "sleep ARG", or -1. */
static long find_sleep(const char *arg)
{
	char want[64];
	size_t wlen = (size_t)snprintf(want, sizeof(want), "sleep%c%s", '\0', arg) + 1;
	DIR *d = opendir("/proc");
	struct dirent *de;
	long found = -1;

	while (d != NULL && found < 0 && (de = readdir(d)) != NULL) {
		char path[300], cmd[64];
		FILE *fp;
		size_t n;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		fp = fopen(path, "r");
		if (fp == NULL)
			continue;
		n = fread(cmd, 1, sizeof(cmd), fp);
		fclose(fp);
		if (n == wlen && memcmp(cmd, want, wlen) == 0)
			found = strtol(de->d_name, NULL, 10);
	}
	if (d != NULL)
		closedir(d);
	return found;
}

static void serves_and_stops_cleanly(void **state)
{
	char *argv[] = {(char *)g_bin, "--listen", "127.0.0.1:0", "--admin-token", "tok",
			"--self-listen", "127.0.0.1:0", "--quiet", NULL};
	int ofd = -1, efd = -1, code;
	pid_t pid = spawn(argv, &ofd, &efd);
	FILE *out = fdopen(ofd, "r");
	char line[256], url[128] = "", path[160], body[256], token[32];
	th_resp r;
	const cJSON *res;
	long guest_pid;

	(void)state;
	assert_true(pid > 0);
	assert_non_null(fgets(line, sizeof(line), out));
	assert_int_equal(strncmp(line, "sbx-mock listening on http://127.0.0.1:", 39), 0);
	snprintf(url, sizeof(url), "%.*s", (int)strcspn(line + 22, "\n"), line + 22);
	assert_non_null(fgets(line, sizeof(line), out));
	assert_string_equal(line, "admin token: tok\n");
	th_json(url, "k", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	assert_int_equal(r.status, 200);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", th_data_str(&r, "id"));
	th_resp_free(&r);
	/* a background process that would outlive its exec; its pid in the
	 * host namespace comes from its unique argument (the guest may have a
	 * PID namespace of its own, where $! means nothing to us) */
	snprintf(token, sizeof(token), "300.%d", (int)getpid());
	snprintf(body, sizeof(body),
		 "{\"cmd\":\"sh\",\"args\":[\"-c\",\"sleep %s >/dev/null 2>&1 &\"]}", token);
	th_json(url, "k", "POST", path, body, &r);
	assert_int_equal(r.status, 200);
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "result");
	assert_int_equal(cJSON_GetObjectItem(res, "exit_code")->valueint, 0);
	th_resp_free(&r);
	/* the exec answers once the shell exits; its background child may not
	 * have exec'd sleep yet (under load): poll for it, up to 30 s */
	guest_pid = find_sleep(token);
	for (int i = 0; i < 1500 && guest_pid <= 1; i++) {
		usleep(20000);
		guest_pid = find_sleep(token);
	}
	assert_true(guest_pid > 1);
	assert_true(pid_alive((pid_t)guest_pid));
	kill(pid, SIGTERM);
	code = wait_exit(pid);
	assert_int_equal(code, 0);
	/* the killed guest may linger as a zombie of init for a moment */
	for (int i = 0; i < 1500 && pid_alive((pid_t)guest_pid); i++) { /* 30 s */
		char stat[64], buf[256];
		FILE *fp;

		snprintf(stat, sizeof(stat), "/proc/%ld/stat", guest_pid);
		fp = fopen(stat, "r");
		if (fp == NULL)
			break;
		if (fgets(buf, sizeof(buf), fp) != NULL && strstr(buf, ") Z ") != NULL) {
			fclose(fp);
			break;
		}
		fclose(fp);
		usleep(20000);
	}
	{
		char stat[64], buf[256] = "";
		FILE *fp;

		snprintf(stat, sizeof(stat), "/proc/%ld/stat", guest_pid);
		fp = fopen(stat, "r");
		if (fp != NULL) {
			if (fgets(buf, sizeof(buf), fp) == NULL)
				buf[0] = '\0';
			fclose(fp);
			if (buf[0] != '\0' && strstr(buf, ") Z ") == NULL)
				fail_msg("guest process %ld survived the mock: %s", guest_pid, buf);
		}
	}
	fclose(out);
	close(efd);
}

static void bad_flags_exit_2_with_a_message(void **state)
{
	static const char *const bad[][3] = {
		{"--cap", "lots", NULL},
		{"--listen", "nocolon", NULL},
		{"--timing", "warp", NULL},
		{"--host-rules", "maybe", NULL},
		{"--bogus", NULL, NULL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[4] = {(char *)g_bin, (char *)bad[i][0], (char *)bad[i][1], NULL};
		int ofd = -1, efd = -1, code;
		char msg[512] = "";
		ssize_t n;
		pid_t pid = spawn(argv, &ofd, &efd);

		code = wait_exit(pid);
		n = read(efd, msg, sizeof(msg) - 1);
		msg[n > 0 ? n : 0] = '\0';
		close(ofd);
		close(efd);
		if (code != 2)
			fail_msg("%s %s: expected exit 2, got %d", bad[i][0], bad[i][1] ? bad[i][1] : "", code);
		assert_non_null(strstr(msg, "sbx-mock: "));
	}
}

/* `--scenario NAME` finds fixtures/scenarios/NAME.json from any cwd (the
 * compiled-in source path); a miss exits 2 naming the paths tried. */
static void scenario_by_name_from_any_directory(void **state)
{
	char *argv[] = {(char *)g_bin, "--scenario", "capacity-exhausted", "--quiet", NULL};
	char *miss[] = {(char *)g_bin, "--scenario", "no-such-scenario", "--scenario-dir",
			"/usr", NULL}; /* a directory without it */
	char *rec[] = {(char *)g_bin, "--record-upstream", "http://127.0.0.1:9", NULL};
	int ofd = -1, efd = -1;
	pid_t pid;
	FILE *out;
	char line[256], url[128], msg[1024] = "";
	ssize_t n;
	th_resp r;

	(void)state;
	assert_int_equal(chdir("/"), 0);
	pid = spawn(argv, &ofd, &efd);
	out = fdopen(ofd, "r");
	assert_non_null(fgets(line, sizeof(line), out));
	snprintf(url, sizeof(url), "%.*s", (int)strcspn(line + 22, "\n"), line + 22);
	th_json(url, "k", "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	assert_int_equal(r.status, 503);
	th_resp_free(&r);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid), 0);
	fclose(out);
	close(efd);

	pid = spawn(miss, &ofd, &efd);
	assert_int_equal(wait_exit(pid), 2);
	n = read(efd, msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(ofd);
	close(efd);
	if (strstr(msg, "/usr/no-such-scenario.json") == NULL ||
	    strstr(msg, "fixtures/scenarios/no-such-scenario.json") == NULL)
		fail_msg("expected the search path in the error, got: %s", msg);

	pid = spawn(rec, &ofd, &efd);
	assert_int_equal(wait_exit(pid), 2);
	n = read(efd, msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(ofd);
	close(efd);
	assert_non_null(strstr(msg, "--record-to"));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(serves_and_stops_cleanly),
		cmocka_unit_test(bad_flags_exit_2_with_a_message),
		cmocka_unit_test(scenario_by_name_from_any_directory),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-TO-sbx-mock\n", argv[0]);
		return 2;
	}
	g_bin = argv[1];
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit: a template's layer copy (util/layer_copy.c), as a guest would attack
 * it. What a build's RUN leaves in its upper layer is the guest's: the copy
 * to the host's template directory must not turn it into more than it is.
 * - a sparse file (a terabyte of hole costs the builder's tmpfs nothing)
 *   stays sparse: written out it filled the host's disk;
 * - the copy stops at its bound (the storage the build reserved) and says
 *   so, and reports what it made as du -s counts it;
 * - a directory swapped for a symlink to a host path while the copy walks
 *   (a guest's process not yet dead when the copy starts) is never
 *   followed: the host's files never reach the layer. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/layer_copy.h"

static char g_dir[64];

static void path(char *out, size_t cap, const char *rel)
{
	snprintf(out, cap, "%s/%s", g_dir, rel);
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("%s failed", cmd);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

/* rm -rf, in the process: the race runs thousands of copies */
static void rm_tree(const char *dir)
{
	if (access(dir, F_OK) == 0 && nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fail_msg("removing %s failed", dir);
}

static int setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/layer_copy_XXXXXX");
	return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	sh("rm -rf %s", g_dir);
	return 0;
}

static void write_at(const char *file, off_t off, const char *s)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, s, strlen(s), off), (ssize_t)strlen(s));
	close(fd);
}

/* A file of 1 GiB with 4 KiB of data in it is copied as a file of 1 GiB
 * holding about 4 KiB, its data where it was. */
static void sparse_file_stays_sparse(void **state)
{
	char src[128], dst[128], big[160], copy[160], why[512] = "", got[8] = "";
	unsigned long long bytes = 0;
	struct stat st;
	int fd;

	(void)state;
	path(src, sizeof(src), "src");
	path(dst, sizeof(dst), "dst");
	snprintf(big, sizeof(big), "%s/big", src);
	snprintf(copy, sizeof(copy), "%s/big", dst);
	assert_int_equal(mkdir(src, 0755), 0);
	write_at(big, 512 << 20, "data");
	assert_int_equal(truncate(big, 1 << 30), 0);
	if (mock_layer_copy(src, dst, 64ull << 20, &bytes, why, sizeof(why)) != 0)
		fail_msg("a sparse file of 1 GiB holding 4 KiB, under a 64 MiB bound: %s", why);
	assert_int_equal(lstat(copy, &st), 0);
	assert_int_equal(st.st_size, 1 << 30);
	if ((unsigned long long)st.st_blocks * 512 > (1u << 20))
		fail_msg("the copy of a sparse file holds %llu bytes (its data: 4 KiB)",
			 (unsigned long long)st.st_blocks * 512);
	fd = open(copy, O_RDONLY | O_CLOEXEC);
	assert_int_equal(pread(fd, got, 4, 512 << 20), 4);
	close(fd);
	assert_string_equal(got, "data");
	assert_true(bytes < (1u << 20));
	assert_int_equal(bytes, mock_layer_bytes(dst));
}

/* Past its bound the copy stops and says so; within it, it counts what it
 * made as du -s does. */
static void copy_stops_at_its_bound(void **state)
{
	char src[128], dst[128], why[512] = "";
	unsigned long long bytes = 0;

	(void)state;
	path(src, sizeof(src), "src");
	path(dst, sizeof(dst), "dst");
	sh("mkdir -p %s/a/b && head -c 3145728 /dev/urandom > %s/a/f1 && head -c 3145728 /dev/urandom > %s/a/b/f2",
	   src, src, src);
	assert_int_equal(mock_layer_copy(src, dst, 4ull << 20, &bytes, why, sizeof(why)), -1);
	if (strstr(why, "the layer holds more than the 4 MiB it may keep") == NULL)
		fail_msg("a copy over its bound says why: \"%s\"", why);
	sh("rm -rf %s", dst);
	if (mock_layer_copy(src, dst, 0, &bytes, why, sizeof(why)) != 0)
		fail_msg("an unbounded copy: %s", why);
	assert_true(bytes >= (6ull << 20));
	assert_int_equal(bytes, mock_layer_bytes(dst));
}

typedef struct swapper {
	int dfd;
	atomic_bool stop;
} swapper;

/* dst/name is a directory of the copy's own (not a copied link, which
 * leads to the host as the original does) holding SECRET. */
static bool leaked(const char *dst, const char *name)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dst, name);
	if (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode))
		return false;
	snprintf(p, sizeof(p), "%s/%s/SECRET", dst, name);
	return lstat(p, &st) == 0;
}

static void *swap_loop(void *arg)
{
	swapper *s = arg;

	while (!atomic_load(&s->stop))
		(void)renameat2(s->dfd, "d", s->dfd, "s", RENAME_EXCHANGE);
	return NULL;
}

/* A guest swaps a directory of its layer with a symlink to a host
 * directory as fast as it can while the layer is copied: no copy ever
 * holds the host directory's file (each either copies what it saw or fails
 * saying the entry changed). */
static void swapped_entry_never_followed(void **state)
{
	char src[128], dst[128], host[128], why[512];
	swapper sw = {.stop = false};
	pthread_t th;
	int ok = 0, refused = 0;

	(void)state;
	path(src, sizeof(src), "src");
	path(host, sizeof(host), "host");
	sh("mkdir -p %s/d %s && echo inner > %s/d/inner && echo secret > %s/SECRET && ln -s %s %s/s", src, host,
	   src, host, host, src);
	sw.dfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(sw.dfd >= 0);
	assert_int_equal(pthread_create(&th, NULL, swap_loop, &sw), 0);
	for (int i = 0; i < 2500; i++) {
		snprintf(dst, sizeof(dst), "%s/dst%d", g_dir, i % 2);
		why[0] = '\0';
		if (mock_layer_copy(src, dst, 0, NULL, why, sizeof(why)) == 0)
			ok++;
		else if (strstr(why, "changed during the copy") != NULL || strstr(why, "lstat") != NULL)
			refused++;
		if (leaked(dst, "d") || leaked(dst, "s")) {
			atomic_store(&sw.stop, true);
			pthread_join(th, NULL);
			fail_msg("copy %d followed the swapped symlink: the host's SECRET is in %s (%s)", i, dst,
				 why);
		}
		rm_tree(dst);
	}
	atomic_store(&sw.stop, true);
	pthread_join(th, NULL);
	close(sw.dfd);
	print_message("swapped entry: %d copies made, %d refused, none followed the link\n", ok, refused);
	assert_true(ok > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(sparse_file_stays_sparse, setup, teardown),
		cmocka_unit_test_setup_teardown(copy_stops_at_its_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(swapped_entry_never_followed, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

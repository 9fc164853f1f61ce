/* Unit: sbx-mock's command line in-process (mock_cli_parse), the image
 * flags and the default image store (issue 46): --no-images with --images
 * or --image is refused with the reason; without a flag, a store whose
 * index names an image is used, an empty or missing one gives the host
 * skeleton with why (main.c prints it as the WARNING; test_mock_inputs
 * checks that line on the binary). The default store is named by
 * SBX_IMAGE_STORE here, each case its own scratch directory: nothing of the
 * machine's own store is read. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/mock_cli.h"

static char g_tmp[64]; /* this run's scratch directory */

/* mock_cli_parse of "sbx-mock" + args (NULL-terminated); its result. */
static int parse(mock_cli *c, const char *const *args)
{
	char *argv[16];
	int n = 0;

	argv[n++] = (char *)"sbx-mock";
	for (size_t i = 0; args[i] != NULL && n < 15; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	return mock_cli_parse(c, n, argv);
}

/* A store directory g_tmp/name whose index holds text (NULL: no index). */
static void make_store(char *dir, size_t cap, const char *name, const char *text)
{
	char index[256];
	FILE *f;

	snprintf(dir, cap, "%s/%s", g_tmp, name);
	assert_int_equal(mkdir(dir, 0700), 0);
	if (text == NULL)
		return;
	snprintf(index, sizeof(index), "%s/index", dir);
	f = fopen(index, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void expect_refused(const char *const *args, const char *want)
{
	mock_cli c;
	int rc = parse(&c, args);

	if (rc != MOCK_CLI_REFUSED || strstr(c.err, want) == NULL)
		fail_msg("%s %s: expected refused naming \"%s\", got %d: %s", args[0], args[1], want, rc, c.err);
	mock_cli_free(&c);
}

static void no_images_contradicting_a_store_is_refused(void **state)
{
	(void)state;
	expect_refused((const char *[]){"--no-images", "--images", "/srv/images", NULL},
		       "--no-images contradicts --images (the host skeleton for every name, or images: pick one)");
	expect_refused((const char *[]){"--images", "/srv/images", "--no-images", NULL},
		       "--no-images contradicts --images");
	expect_refused((const char *[]){"--no-images", "--image", "devbox:1=/srv/root", NULL},
		       "--no-images contradicts --image (");
}

static void a_store_whose_index_names_an_image_is_the_default(void **state)
{
	char store[128];
	mock_cli c;

	(void)state;
	make_store(store, sizeof(store), "built", "devbox:1\t0123456789abcdef\n");
	setenv("SBX_IMAGE_STORE", store, 1);
	assert_int_equal(parse(&c, (const char *[]){NULL}), MOCK_CLI_OK);
	assert_int_equal(c.images_from, MOCK_CLI_IMAGES_DEFAULT);
	assert_non_null(c.cfg.images);
	assert_string_equal(c.cfg.images, store);
	mock_cli_free(&c);
	/* --no-images: the skeleton, though the store has images */
	assert_int_equal(parse(&c, (const char *[]){"--no-images", NULL}), MOCK_CLI_OK);
	assert_int_equal(c.images_from, MOCK_CLI_IMAGES_OFF);
	assert_null(c.cfg.images);
	mock_cli_free(&c);
	/* a flag wins over the default */
	assert_int_equal(parse(&c, (const char *[]){"--images", g_tmp, NULL}), MOCK_CLI_OK);
	assert_int_equal(c.images_from, MOCK_CLI_IMAGES_FLAG);
	assert_string_equal(c.cfg.images, g_tmp);
	mock_cli_free(&c);
	/* plain guests run on the host's files: no store looked for */
	assert_int_equal(parse(&c, (const char *[]){"--guest-mode", "plain", NULL}), MOCK_CLI_OK);
	assert_int_equal(c.images_from, MOCK_CLI_IMAGES_NONE);
	assert_null(c.cfg.images);
	assert_non_null(strstr(c.images_why, "plain guests"));
	mock_cli_free(&c);
	unsetenv("SBX_IMAGE_STORE");
}

/* An empty or missing store: no images, and images_why names the store
 * and what is missing (the WARNING's text). */
static void an_empty_or_missing_store_gives_the_skeleton_with_why(void **state)
{
	char empty[128], bare[128], missing[128], want[256];
	mock_cli c;

	(void)state;
	make_store(empty, sizeof(empty), "empty", "");
	make_store(bare, sizeof(bare), "bare", NULL);
	snprintf(missing, sizeof(missing), "%s/never-made", g_tmp);
	const char *const cases[][2] = {
		{empty, "its index is empty"}, {bare, "it has no index"}, {missing, "it has no index"}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv("SBX_IMAGE_STORE", cases[i][0], 1);
		assert_int_equal(parse(&c, (const char *[]){NULL}), MOCK_CLI_OK);
		snprintf(want, sizeof(want), "no image in the default store %s (%s)", cases[i][0], cases[i][1]);
		if (c.images_from != MOCK_CLI_IMAGES_NONE || c.cfg.images != NULL ||
		    strcmp(c.images_why, want) != 0)
			fail_msg("store %s: expected no images because \"%s\", got from=%d images=%s why=\"%s\"",
				 cases[i][0], want, (int)c.images_from, c.cfg.images != NULL ? c.cfg.images : "(none)",
				 c.images_why);
		mock_cli_free(&c);
	}
	unsetenv("SBX_IMAGE_STORE");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_images_contradicting_a_store_is_refused),
		cmocka_unit_test(a_store_whose_index_names_an_image_is_the_default),
		cmocka_unit_test(an_empty_or_missing_store_gives_the_skeleton_with_why),
	};
	char cmd[128];
	int rc;

	snprintf(g_tmp, sizeof(g_tmp), "/tmp/sbx-cli-XXXXXX");
	if (mkdtemp(g_tmp) == NULL)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_tmp);
	return rc;
}

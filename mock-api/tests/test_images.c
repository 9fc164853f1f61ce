/* Integration over loopback: sandboxes on the rootfs image devbox:1
 * (issue 37 item 1, mock-api/IMAGES.md), as the vendor's examples use it.
 * In a guest on devbox:1: apt and dpkg find their state (dpkg -i of a
 * package built in the guest with dpkg-deb, apt-get install ./local.deb),
 * pip installs a local package system-wide and python3 imports it, npm
 * install -g puts a local package's binary on PATH, /etc/os-release is
 * Debian's; a fork keeps what was installed; another rootfs name gets the
 * host skeleton; the image itself is never written from a guest; a
 * template's USER step runs as that account on a mock run as root and, on
 * an unprivileged one, fails saying its cells map only root.
 *
 * Needs the image built (mock-api/images/build-image devbox:1; ci/bootstrap
 * test does it): without a store holding it the program exits 77 (ctest:
 * skipped) saying so; with an image this mock cannot use (unprivileged
 * without a copy owned by its user) each test skips with the mock's note.
 * The store: $SBX_IMAGE_STORE, else build-image's default for this user. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contain_util.h"
#include "mock_fixture.h"

#define KEY "img-key"
#define INSTALL_MS 180000 /* pip and npm start slowly on a loaded 2-core CI machine */

static char g_store[PATH_MAX];
static char g_image_dir[PATH_MAX]; /* devbox:1's directory, as the mock uses it */
static char g_image_note[1024];    /* how the mock uses it (idmapped: its cells map every uid) */

static int group_setup(void **state)
{
	sbx_mock_config cfg;

	(void)state;
	mf_config_init(&cfg);
	cfg.admin_token = "admintok";
	cfg.images = g_store;
	cfg.warm_pool = 1;
	return mf_setup(&cfg);
}

static int test_setup(void **state)
{
	cx_gc();
	return mf_reset(state);
}

/* Skips unless the mock serves devbox:1 from the image (saying why not);
 * records the image's directory. */
static void need_image(void)
{
	th_resp r;
	const cJSON *imgs;
	const cJSON *it;
	char note[1024] = "devbox:1 not listed";
	int usable = 0;

	if (!sbx_mock_guests_contained(g_mock)) {
		print_message("images need contained guests (guest mode %s)\n",
			      sbx_mock_guest_mode(g_mock));
		skip();
	}
	th_admin(U, TOK, "GET", "/_mock/images", NULL, &r);
	expect_status(&r, 200, "GET /_mock/images");
	imgs = data_item(&r, "images");
	cJSON_ArrayForEach(it, imgs)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");

		if (!cJSON_IsString(name) || strcmp(name->valuestring, "devbox:1") != 0)
			continue;
		usable = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "usable"));
		snprintf(note, sizeof(note), "%s",
			 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "note")));
		snprintf(g_image_dir, sizeof(g_image_dir), "%s",
			 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "dir")));
	}
	th_resp_free(&r);
	if (!usable) {
		print_message("devbox:1 in %s is not usable by this mock: %s\n", g_store, note);
		skip();
	}
	snprintf(g_image_note, sizeof(g_image_note), "%s", note);
}

/* sh -c script in id; asserts exit 0 and returns the result (cx_free it). */
static void run_ok(const char *id, const char *script, cx_res *x)
{
	cx_sh(KEY, id, script, INSTALL_MS, x);
	if (x->status != 200 || x->code != 0)
		fail_msg("in the guest: %s\nstatus %ld exit %d\nstdout: %s\nstderr: %s\n%s", script,
			 x->status, x->code, x->out, x->err, x->body);
}

static void devbox(char *id, size_t cap)
{
	create(KEY, "{\"shape\":\"s-1vcpu-1gb\",\"rootfs\":\"devbox:1\"}", id, cap);
}

/* /etc/os-release is the image's (Debian bookworm), root is root, and the
 * settings say which root backs which name. */
static void os_release_is_debians(void **state)
{
	char id[64];
	cx_res x;
	th_resp r;
	const cJSON *rootfs;

	(void)state;
	need_image();
	devbox(id, sizeof(id));
	run_ok(id, ". /etc/os-release && echo \"$ID $VERSION_CODENAME\" && id -u && getent passwd _apt",
	       &x);
	assert_non_null(strstr(x.out, "debian bookworm\n0\n_apt:x:42:"));
	cx_free(&x);
	th_admin(U, TOK, "GET", "/_mock/settings", NULL, &r);
	rootfs = data_item(&r, "rootfs");
	assert_non_null(rootfs);
	assert_non_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rootfs, "devbox:1")),
			       g_image_dir));
	assert_string_equal(
		cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rootfs, "ubuntu:24.04")),
		"host skeleton");
	th_resp_free(&r);
}

/* Runs script (it must exit 0) in a new sandbox on devbox:1 (skipped
 * without the image); its output into x. */
static void on_devbox(const char *script, cx_res *x)
{
	char id[64];

	need_image();
	devbox(id, sizeof(id));
	run_ok(id, script, x);
}

/* A package built in the guest installs with dpkg -i, another with
 * apt-get install ./file.deb; both run and dpkg's database lists them. */
static void apt_and_dpkg_install_local_debs(void **state)
{
	cx_res x;

	(void)state;
	on_devbox(
		"set -e; cd /workspace\n"
		"mk() { mkdir -p $1/DEBIAN $1/usr/bin\n"
		"  printf 'Package: %s\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: t <t@example.com>\\n"
		"Description: test\\n' $1 > $1/DEBIAN/control\n"
		"  printf '#!/bin/sh\\necho %s-ran\\n' $1 > $1/usr/bin/$1; chmod 755 $1/usr/bin/$1\n"
		"  dpkg-deb --build $1 $1.deb >/dev/null; }\n"
		"mk sbx-by-dpkg; mk sbx-by-apt\n"
		"dpkg -i sbx-by-dpkg.deb >/dev/null\n"
		"apt-get install -y ./sbx-by-apt.deb >/dev/null 2>&1 || apt-get install -y ./sbx-by-apt.deb\n"
		"sbx-by-dpkg; sbx-by-apt\n"
		"for p in sbx-by-dpkg sbx-by-apt; do dpkg-query -W -f '${Package} ${Status}\\n' $p; done",
		&x);
	assert_string_equal(x.out, "sbx-by-dpkg-ran\nsbx-by-apt-ran\n"
				   "sbx-by-dpkg install ok installed\nsbx-by-apt install ok installed\n");
	cx_free(&x);
}

/* pip installs a local package system-wide (no PEP 668 refusal, not a
 * --user install) and python3 imports it from anywhere. */
static void pip_installs_system_wide(void **state)
{
	cx_res x;

	(void)state;
	on_devbox(
		"set -e; mkdir -p /workspace/p/sbxpkg; cd /workspace/p\n"
		"echo 'VALUE = 42' > sbxpkg/__init__.py\n"
		"printf 'from setuptools import setup\\nsetup(name=\"sbxpkg\", version=\"1.0\", "
		"packages=[\"sbxpkg\"])\\n' > setup.py\n"
		"pip install --no-index --no-build-isolation . >/dev/null 2>&1 || "
		"pip install --no-index --no-build-isolation .\n"
		"cd / && python3 -c 'import sbxpkg; print(sbxpkg.VALUE, sbxpkg.__file__)'",
		&x);
	assert_non_null(strstr(x.out, "42 /usr/local/lib/python3"));
	assert_non_null(strstr(x.out, "/dist-packages/sbxpkg/__init__.py"));
	cx_free(&x);
}

/* npm install -g of a local package (packed, as from a registry) puts its
 * binary on PATH in the global prefix. */
static void npm_install_g_puts_binary_on_path(void **state)
{
	cx_res x;

	(void)state;
	on_devbox(
		"set -e; mkdir -p /workspace/n/bin; cd /workspace/n\n"
		"printf '{\"name\":\"sbx-npm-hello\",\"version\":\"1.0.0\","
		"\"bin\":{\"sbx-npm-hello\":\"bin/h.js\"}}' > package.json\n"
		"printf '#!/usr/bin/env node\\nconsole.log(\"npm-hello-ran\")\\n' > bin/h.js\n"
		"npm pack --silent >/dev/null\n"
		"npm install -g --offline --no-audit --no-fund ./sbx-npm-hello-1.0.0.tgz >/dev/null\n"
		"cd / && command -v sbx-npm-hello && sbx-npm-hello",
		&x);
	assert_string_equal(x.out, "/usr/local/bin/sbx-npm-hello\nnpm-hello-ran\n");
	cx_free(&x);
}

/* What a guest installed is its own layer's: a fork (from the paused
 * source) has it, a new sandbox on the same image does not. */
static void installs_are_the_sandboxs_layer(void **state)
{
	char id[64], other[64], body[128];
	const char *fid;
	cx_res x;
	th_resp r;

	(void)state;
	need_image();
	devbox(id, sizeof(id));
	run_ok(id, "echo 'echo layered' > /usr/bin/sbx-layer && chmod 755 /usr/bin/sbx-layer", &x);
	cx_free(&x);
	snprintf(body, sizeof(body), "/v1/sandboxes/%s/pause", id);
	th_json(U, KEY, "POST", body, "{}", &r);
	expect_status(&r, 202, "pause");
	th_resp_free(&r);
	assert_true(cx_wait_status(KEY, id, "paused", CX_START_MS));
	snprintf(body, sizeof(body), "/v1/sandboxes/%s/fork", id);
	th_json(U, KEY, "POST", body, "{}", &r);
	expect_status(&r, 200, "fork");
	fid = th_data_str(&r, "id");
	assert_non_null(fid);
	assert_true(cx_wait_status(KEY, fid, "running", CX_START_MS));
	run_ok(fid, "sbx-layer", &x);
	assert_string_equal(x.out, "layered\n");
	cx_free(&x);
	th_resp_free(&r);
	devbox(other, sizeof(other));
	run_ok(other, "test ! -e /usr/bin/sbx-layer && echo absent", &x);
	assert_string_equal(x.out, "absent\n");
	cx_free(&x);
}

/* Another rootfs name has no image here: the host-skeleton root, which
 * has no dpkg state (the image's marks are absent). */
static void other_names_get_the_skeleton(void **state)
{
	char id[64];
	cx_res x;

	(void)state;
	need_image();
	create(KEY, "{\"shape\":\"s-1vcpu-1gb\",\"rootfs\":\"ubuntu:24.04\"}", id, sizeof(id));
	run_ok(id, "test -e /var/lib/dpkg/status && echo dpkg || echo skeleton", &x);
	assert_string_equal(x.out, "skeleton\n");
	cx_free(&x);
}

/* A guest cannot write the image: through its root every write lands in
 * its own layer (the host's image file keeps its bytes), the image is
 * mounted nowhere it can name, and it cannot mount it itself. */
static void image_never_writable_from_guest(void **state)
{
	char id[64], host_file[PATH_MAX + 32], script[3 * PATH_MAX];
	struct stat before, after;
	cx_res x;

	(void)state;
	need_image();
	snprintf(host_file, sizeof(host_file), "%s/etc/debian_version", g_image_dir);
	assert_int_equal(stat(host_file, &before), 0);
	devbox(id, sizeof(id));
	snprintf(script, sizeof(script),
		 "echo guest-was-here > /etc/debian_version; rm -f /usr/bin/which\n"
		 "grep -q ' %s' /proc/self/mountinfo && echo image-visible\n"
		 "test -e '%s' && echo image-path-reachable\n"
		 "mkdir -p /mnt/x; mount --bind / /mnt/x 2>/dev/null && echo mounted\n"
		 "cat /etc/debian_version",
		 g_image_dir, g_image_dir);
	cx_sh(KEY, id, script, INSTALL_MS, &x);
	assert_int_equal(x.status, 200);
	assert_string_equal(x.out, "guest-was-here\n");
	cx_free(&x);
	assert_int_equal(stat(host_file, &after), 0);
	assert_int_equal(after.st_size, before.st_size);
	assert_int_equal(after.st_mtime, before.st_mtime);
	snprintf(host_file, sizeof(host_file), "%s/usr/bin/which", g_image_dir);
	assert_int_equal(access(host_file, F_OK), 0);
	/* the files API writes the same layer */
	{
		th_resp r;
		char path[192];

		snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/etc/debian_version", id);
		th_do(&(th_req){.method = "PUT", .url = U, .path = path, .key = KEY, .body = "api\n",
				.ctype = "application/octet-stream"},
		      &r);
		expect_status(&r, 200, "PUT /etc/debian_version");
		th_resp_free(&r);
	}
	assert_int_equal(stat(host_file, &after), 0);
	snprintf(host_file, sizeof(host_file), "%s/etc/debian_version", g_image_dir);
	assert_int_equal(stat(host_file, &after), 0);
	assert_int_equal(after.st_size, before.st_size);
}

/* A template's USER step. A mock run as root (its cells map every uid:
 * the image is idmapped) runs the steps after it as that account; an
 * unprivileged one (its cells map only root: an owned copy) fails the
 * build saying so, not with runuser's "cannot set groups" (TEMPLATES.md). */
static void template_user_step(void **state)
{
	static const char body[] = "{\"name\":\"as-nobody\",\"dockerfile\":"
				   "\"FROM nodeops/sandbox:debian\\nUSER nobody\\nRUN id -un\\n\"}";
	const char *log;
	th_resp r;

	(void)state;
	need_image();
	th_json(U, KEY, "POST", "/v1/templates", body, &r);
	expect_status(&r, 200, "template create");
	th_resp_free(&r);
	th_json(U, KEY, "GET", "/v1/templates/as-nobody/logs?follow=true", NULL, &r);
	expect_status(&r, 200, "template logs");
	log = sbx_strbuf_str(&r.body);
	if (strstr(g_image_note, "idmapped") != NULL) {
		if (strstr(log, "\"line\":\"nobody\"") == NULL ||
		    strstr(log, "{\"final\":true,\"status\":\"ready\"}") == NULL)
			fail_msg("as root, a RUN after USER nobody runs as nobody: %s", log);
	} else if (strstr(log, "{\"final\":true,\"status\":\"failed\"}") == NULL ||
		   strstr(log, "RUN: USER nobody: this mock runs unprivileged, so its cells map only root") ==
			   NULL ||
		   strstr(log, "runuser:") != NULL) {
		fail_msg("unprivileged (%s), a RUN after USER nobody fails saying why: %s", g_image_note, log);
	}
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(os_release_is_debians, test_setup),
		cmocka_unit_test_setup(apt_and_dpkg_install_local_debs, test_setup),
		cmocka_unit_test_setup(pip_installs_system_wide, test_setup),
		cmocka_unit_test_setup(npm_install_g_puts_binary_on_path, test_setup),
		cmocka_unit_test_setup(installs_are_the_sandboxs_layer, test_setup),
		cmocka_unit_test_setup(other_names_get_the_skeleton, test_setup),
		cmocka_unit_test_setup(image_never_writable_from_guest, test_setup),
		cmocka_unit_test_setup(template_user_step, test_setup),
	};

	if (!cx_store_devbox(g_store, sizeof(g_store)))
		return 77;
	return cmocka_run_group_tests(tests, group_setup, mf_group_teardown);
}

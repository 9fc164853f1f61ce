/* contain_fs: the containment battery's filesystem tests (issue 25 items
 * 1-2, issue 27 item 4; CONTAINMENT.md "The guest's disk"), registered in
 * test_contain.c's list and run with its group mock (root and, in CI's
 * contain-unprivileged stage, uid 65534):
 *   - one filesystem: the files API and exec see the same file at every
 *     path (/root, /srv, /etc/os-release), HOME=/root;
 *   - a writable root that is the sandbox's own: another sandbox never sees
 *     it, the host's system files are never writable (from exec or through
 *     the files API), the files API never reaches the guest's /proc;
 *   - fork copies it (a deletion too), pause/resume keeps it;
 *   - the disk is bounded: a write past the sandbox's disk (made small with
 *     the guest_disk_max_mib setting) is ENOSPC wherever it lands
 *     (/workspace, /tmp, /root), and a resize grows it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contain_fs.h"
#include "contain_util.h"

/* Creates a sandbox of key "kf" (1 GiB shape) and copies its id. */
static void fs_mk(char *id, size_t cap)
{
	create("kf", "{\"shape\":\"s-1vcpu-1gb\"}", id, cap);
}

/* Runs script in id, asserts HTTP 200, and returns the answer in x. */
static void fs_sh(const char *id, const char *script, cx_res *x)
{
	cx_sh("kf", id, script, 60000, x);
	if (x->status != 200)
		fail_msg("exec %s: HTTP %ld: %s", script, x->status, x->body);
}

/* files API on sandbox id: PUT body (non-NULL) or GET; the answer in r. */
static void fs_files(const char *id, const char *gpath, const char *body, th_resp *r)
{
	char route[512];

	snprintf(route, sizeof(route), "/v1/sandboxes/%s/files?path=%s", id, gpath);
	th_json(U, "kf", body != NULL ? "PUT" : "GET", route, body, r);
}

static void fs_expect_file(const char *id, const char *gpath, const char *want)
{
	th_resp r;

	fs_files(id, gpath, NULL, &r);
	expect_status(&r, 200, gpath);
	if (strcmp(sbx_strbuf_str(&r.body), want) != 0)
		fail_msg("GET %s: %s, expected %s", gpath, sbx_strbuf_str(&r.body), want);
	th_resp_free(&r);
}

static void fs_lifecycle(const char *id, const char *op, const char *want)
{
	char route[160];
	th_resp r;

	snprintf(route, sizeof(route), "/v1/sandboxes/%s/%s", id, op);
	th_json(U, "kf", "POST", route, NULL, &r);
	if (r.status != 200 && r.status != 202)
		fail_msg("%s: HTTP %ld %s", op, r.status, sbx_strbuf_str(&r.body));
	th_resp_free(&r);
	if (!cx_wait_status("kf", id, want, 20000))
		fail_msg("%s: the sandbox never became %s", op, want);
}

/* Sets the guest_disk_max_mib setting. */
static void fs_disk_max(unsigned mib)
{
	char body[64];
	th_resp r;

	snprintf(body, sizeof(body), "{\"guest_disk_max_mib\":%u}", mib);
	th_admin(U, TOK, "PUT", "/_mock/settings", body, &r);
	expect_status(&r, 200, "PUT /_mock/settings guest_disk_max_mib");
	th_resp_free(&r);
}

void contain_fs_one_filesystem(void **state)
{
	char id[64];
	th_resp r;
	cx_res x;

	(void)state;
	fs_mk(id, sizeof(id));
	/* the SDK's examples: upload anywhere, then read it from exec */
	fs_files(id, "/root/seed.txt", "seed\n", &r);
	expect_status(&r, 200, "PUT /root/seed.txt");
	th_resp_free(&r);
	fs_files(id, "/srv/site/index.html", "<h1>hi</h1>\n", &r);
	expect_status(&r, 200, "PUT /srv/site/index.html (new directories)");
	th_resp_free(&r);
	fs_sh(id,
	      "cat /root/seed.txt /srv/site/index.html && mkdir -p /srv/app /opt/tool /var/log/app && "
	      "echo made > /srv/app/from-exec && echo opt > /opt/tool/x && echo log >> "
	      "/var/log/app/a.log && echo etc > /etc/app.conf && echo \"HOME=$HOME\" && echo OK",
	      &x);
	if (strcmp(x.out, "seed\n<h1>hi</h1>\nHOME=/root\nOK\n") != 0)
		fail_msg("exec did not see the uploads or could not write the root: %s %s", x.out,
			 x.err);
	cx_free(&x);
	/* and back: what exec wrote, the API reads */
	fs_expect_file(id, "/srv/app/from-exec", "made\n");
	fs_expect_file(id, "/opt/tool/x", "opt\n");
	fs_expect_file(id, "/var/log/app/a.log", "log\n");
	fs_expect_file(id, "/etc/app.conf", "etc\n");
	/* the SDK's files.download("/etc/os-release") */
	fs_files(id, "/etc/os-release", NULL, &r);
	expect_status(&r, 200, "GET /etc/os-release");
	if (strstr(sbx_strbuf_str(&r.body), "ID=") == NULL)
		fail_msg("/etc/os-release: %s", sbx_strbuf_str(&r.body));
	th_resp_free(&r);
}

/* What one sandbox writes in its root, another never sees. */
void contain_fs_root_is_private(void **state)
{
	char a[64], b[64];
	th_resp r;
	cx_res x;

	(void)state;
	fs_mk(a, sizeof(a));
	fs_mk(b, sizeof(b));
	fs_sh(a, "echo a > /root/a && mkdir -p /srv/a && echo a > /etc/a.conf && echo OK", &x);
	if (strstr(x.out, "OK") == NULL)
		fail_msg("sandbox a could not write its root: %s %s", x.out, x.err);
	cx_free(&x);
	fs_sh(b, "for f in /root/a /srv/a /etc/a.conf; do [ -e $f ] && echo SEES $f; done; true",
	      &x);
	if (strstr(x.out, "SEES") != NULL)
		fail_msg("sandbox b sees sandbox a's files: %s", x.out);
	cx_free(&x);
	fs_files(b, "/root/a", NULL, &r);
	expect_status(&r, 404, "GET another sandbox's /root/a");
	th_resp_free(&r);
}

/* The host's system directories stay read-only, from exec and through the
 * files API; the API never reaches the guest's /proc (PID 1's memory, the
 * host's sysctls) or its devices. */
void contain_fs_host_never_writable(void **state)
{
	static const char *const api[] = {"/usr/bin/sbx-fs-probe", "/usr/sbx-fs-probe",
					  "/etc/ssl/sbx-fs-probe", "/usr/lib/sbx-fs-probe"};
	static const char *const refused[] = {"/proc/1/mem", "/proc/1/environ", "/proc/1/comm",
					      "/proc/sys/kernel/hostname", "/dev/null"};
	char id[64];
	struct stat st;
	th_resp r;
	cx_res x;

	(void)state;
	fs_mk(id, sizeof(id));
	fs_sh(id,
	      "for f in /usr/bin/sbx-fs-probe /bin/sbx-fs-probe /usr/sbx-fs-probe "
	      "/etc/ssl/sbx-fs-probe /lib/sbx-fs-probe /usr/local/sbx-fs-probe; do "
	      "  (echo x > $f) 2>/dev/null && echo WROTE $f; done; "
	      "(echo x >> /usr/bin/env) 2>/dev/null && echo WROTE /usr/bin/env; true",
	      &x);
	if (strstr(x.out, "WROTE") != NULL)
		fail_msg("the guest wrote the host's system files: %s", x.out);
	cx_free(&x);
	for (size_t i = 0; i < sizeof(api) / sizeof(api[0]); i++) {
		fs_files(id, api[i], "x\n", &r);
		if (r.status == 200)
			fail_msg("PUT %s through the files API: 200", api[i]);
		th_resp_free(&r);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		fs_files(id, refused[i], NULL, &r);
		if (r.status < 400 || r.status > 499)
			fail_msg("GET %s: expected 4xx, got %ld: %.200s", refused[i], r.status,
				 sbx_strbuf_str(&r.body));
		th_resp_free(&r);
		fs_files(id, refused[i], "x\n", &r);
		if (r.status < 400 || r.status > 499)
			fail_msg("PUT %s: expected 4xx, got %ld: %.200s", refused[i], r.status,
				 sbx_strbuf_str(&r.body));
		th_resp_free(&r);
	}
	if (stat("/usr/bin/sbx-fs-probe", &st) == 0 || stat("/usr/sbx-fs-probe", &st) == 0)
		fail_msg("a probe file appeared in the host's /usr");
}

/* Fork copies the root's changes (a deletion too), /workspace and /tmp;
 * pause and resume keep them. */
void contain_fs_fork_copies_root(void **state)
{
	char id[64], fid[64], route[160];
	th_resp r;
	cx_res x;

	(void)state;
	fs_mk(id, sizeof(id));
	fs_sh(id,
	      "echo r > /root/r && mkdir -p /srv/s && echo s > /srv/s/f && echo w > /workspace/w && "
	      "echo t > /tmp/t && rm /etc/nsswitch.conf && echo OK",
	      &x);
	if (strstr(x.out, "OK") == NULL)
		fail_msg("setup: %s %s", x.out, x.err);
	cx_free(&x);
	fs_lifecycle(id, "pause", "paused");
	snprintf(route, sizeof(route), "/v1/sandboxes/%s/fork", id);
	th_json(U, "kf", "POST", route, "{}", &r);
	expect_status(&r, 200, "fork");
	snprintf(fid, sizeof(fid), "%s", th_data_str(&r, "id"));
	th_resp_free(&r);
	if (!cx_wait_status("kf", fid, "running", 20000))
		fail_msg("the fork never ran");
	fs_lifecycle(id, "resume", "running");
	for (int i = 0; i < 2; i++) {
		fs_sh(i == 0 ? fid : id,
		      "cat /root/r /srv/s/f /workspace/w /tmp/t && [ ! -e /etc/nsswitch.conf ] && "
		      "[ -e /etc/passwd ] && echo OK",
		      &x);
		if (strcmp(x.out, "r\ns\nw\nt\nOK\n") != 0)
			fail_msg("%s: %s %s", i == 0 ? "the fork lost files" : "pause/resume lost files",
				 x.out, x.err);
		cx_free(&x);
	}
	/* the copy is the fork's own */
	fs_sh(fid, "echo changed > /root/r", &x);
	cx_free(&x);
	fs_expect_file(id, "/root/r", "r\n");
}

/* 32 MiB of disk: 40 MiB does not fit in /workspace, /tmp or /root, nor
 * 20 + 20 across them (one disk); after a resize it does. */
void contain_fs_disk_bounded(void **state)
{
	char id[64], route[160];
	th_resp r;
	cx_res x;

	(void)state;
	fs_disk_max(32);
	fs_mk(id, sizeof(id));
	fs_disk_max(0);
	fs_sh(id,
	      "for d in /workspace /tmp /root; do "
	      "  dd if=/dev/zero of=$d/big bs=1M count=40 2>&1 | grep -q 'No space left' && "
	      "  echo ENOSPC $d; rm -f $d/big; done; "
	      "dd if=/dev/zero of=/workspace/half bs=1M count=20 2>/dev/null; "
	      "dd if=/dev/zero of=/tmp/half bs=1M count=20 2>&1 | grep -q 'No space left' && "
	      "echo ENOSPC shared; rm -f /workspace/half /tmp/half; true",
	      &x);
	print_message("32 MiB disk: %s", x.out);
	if (strcmp(x.out, "ENOSPC /workspace\nENOSPC /tmp\nENOSPC /root\nENOSPC shared\n") != 0)
		fail_msg("a write past the sandbox's disk did not end with ENOSPC: %s %s", x.out,
			 x.err);
	cx_free(&x);
	snprintf(route, sizeof(route), "/v1/sandboxes/%s/resize", id);
	th_json(U, "kf", "POST", route, "{\"disk_mib\":20480}", &r);
	expect_status(&r, 200, "resize");
	th_resp_free(&r);
	fs_sh(id,
	      "dd if=/dev/zero of=/workspace/big bs=1M count=40 2>&1 | grep -q 'No space left' || "
	      "echo FITS; rm -f /workspace/big",
	      &x);
	if (strcmp(x.out, "FITS\n") != 0)
		fail_msg("resize did not grow the disk: %s %s", x.out, x.err);
	cx_free(&x);
}

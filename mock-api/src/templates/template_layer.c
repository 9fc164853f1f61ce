/* template_layer: a template's layer on disk (template_layer.h,
 * TEMPLATES.md). Never takes the model lock itself (callers hold it where
 * templates.h and templates_internal.h say). */
#define _GNU_SOURCE
#include "templates/template_layer.h"
#include "templates/templates_internal.h"
#include "templates/templates.h"
#include "guest/cell_proto.h" /* CELL_DISK_FD */
#include "util/layer_copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* posix_spawn, not fork: the mock's address space is not copied (a fork
 * of it took 2-4 ms, most of a small build's layer step). */
int mock_tpl_run(char *const argv[], char *why, size_t cap)
{
	pid_t pid = 0;
	int st = 0;
	int rc = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);

	if (rc != 0) {
		snprintf(why, cap, "spawning %s: %s", argv[0], strerror(rc));
		return -1;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(why, cap, "%s %s: status %d", argv[0], argv[1], st);
		return -1;
	}
	return 0;
}

int mock_tpl_mkdir_p(const char *dir, char *why, size_t cap)
{
	char path[TPL_DIR_MAX + 160];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(path)) {
		snprintf(why, cap, "mkdir %.200s: an empty or too long path", dir);
		return -1;
	}
	memcpy(path, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST) {
			snprintf(why, cap, "mkdir %.200s: %s", path, strerror(errno));
			return -1;
		}
		path[i] = dir[i];
	}
	return 0;
}

/* rm -rf dir when it exists; what names it in a warning. */
static void remove_tree(const sbx_mock *mock, const char *dir, const char *what)
{
	char path[TPL_DIR_MAX], why[256];
	char *rm[] = {"/bin/rm", "-rf", path, NULL};

	snprintf(path, sizeof(path), "%s", dir);
	if (access(path, F_OK) == 0 && mock_tpl_run(rm, why, sizeof(why)) != 0 && !mock->quiet)
		fprintf(stderr, "sbx-mock: removing %s: %s\n", what, why);
}

void mock_tpl_dir(const sbx_mock *mock, const char *id, char *out, size_t cap)
{
	snprintf(out, cap, "%s/templates/%s", mock->work_dir, id);
}

double mock_tpl_layer_save(sbx_mock *mock, const char *id, mock_guest *g, unsigned disk_mib, char *why,
			   size_t cap)
{
	char src[96], dir[TPL_DIR_MAX], dst[TPL_DIR_MAX + 8];
	char *rm[] = {"/bin/rm", "-rf", dst, NULL};
	struct stat st;
	unsigned long long bytes = 0;
	int held, rc;

	snprintf(src, sizeof(src), "/proc/%d/fd/%d/u", (int)mock_guest_cell_pid(g), CELL_DISK_FD);
	mock_tpl_dir(mock, id, dir, sizeof(dir));
	snprintf(dst, sizeof(dst), "%s/layer", dir);
	if (mock_tpl_mkdir_p(dir, why, cap) != 0)
		return -1;
	/* the layer is read through a descriptor of the mock's own: the
	 * cell's disk lives in its mount namespace, which goes with the cell
	 * once it is killed (through /proc/<cell>/fd the copy raced that
	 * exit, and waited on it) */
	held = open(src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (held < 0) {
		snprintf(why, cap, "opening the builder's layer %s: %s", src, strerror(errno));
		return -1;
	}
	snprintf(src, sizeof(src), "/proc/self/fd/%d/.", held); /* the directory, not the link */
	/* nothing of the steps runs on: the layer holds still */
	mock_guest_signal(g, SIGKILL);
	/* owners, modes, times, hard links, xattrs (an overlay's opaque
	 * dirs) and the whiteouts' 0/0 devices as they are */
	/* what it holds is counted as it is made, and bounded by the storage
	 * the create reserved: the key's bound is never overshot */
	rc = (lstat(dst, &st) == 0 && mock_tpl_run(rm, why, cap) != 0) ||
	     mock_layer_copy(src, dst, (unsigned long long)disk_mib << 20, &bytes, why, cap) != 0;
	close(held);
	if (rc != 0 && lstat(dst, &st) == 0)
		mock_tpl_run(rm, why + strlen(why), cap - strlen(why)); /* a partial copy holds no storage */
	return rc ? -1 : (double)bytes;
}

void mock_tpl_layers_drop(sbx_mock *mock, bool reset)
{
	char dir[TPL_DIR_MAX];

	/* not durable, the layers end with the mock (else they, and the work
	 * dir with them, stayed); durable, they are kept for the restart
	 * (DURABLE.md) unless a reset took their templates */
	snprintf(dir, sizeof(dir), "%s/templates", mock->work_dir);
	if (reset || mock->state == NULL)
		remove_tree(mock, dir, "the templates' layers");
}

/* Lock held: a ready template of a tenant has this id. */
static bool ready_template(mock_model *m, const char *id)
{
	for (mock_tenant *t = m->tenants; t != NULL; t = t->next) {
		const cJSON *tpl = mock_template_find(t, id);
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(tpl, "status");

		if (cJSON_IsString(st) && strcmp(st->valuestring, "ready") == 0)
			return true;
	}
	return false;
}

/* Lock held: removes the layers no ready template has (a build the stopped
 * mock was saving, a template deleted or reset as it stopped). */
static void sweep_layers(sbx_mock *mock)
{
	char dir[TPL_DIR_MAX], path[TPL_DIR_MAX + 300];
	DIR *d;
	const struct dirent *e;

	snprintf(dir, sizeof(dir), "%s/templates", mock->work_dir);
	d = opendir(dir);
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || ready_template(mock->model, e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		remove_tree(mock, path, path);
	}
	closedir(d);
}

void mock_op_templates_restored(sbx_mock *mock)
{
	char dir[TPL_DIR_MAX], layer[TPL_DIR_MAX + 8], line[TPL_DIR_MAX + 200];

	for (mock_tenant *t = mock->model->tenants; t != NULL; t = t->next) {
		cJSON *tpl;

		cJSON_ArrayForEach(tpl, t->templates) {
			const cJSON *st = cJSON_GetObjectItemCaseSensitive(tpl, "status");

			if (!cJSON_IsString(st) || strcmp(st->valuestring, "ready") != 0)
				continue;
			mock_tpl_dir(mock, cJSON_GetObjectItemCaseSensitive(tpl, "id")->valuestring, dir, sizeof(dir));
			snprintf(layer, sizeof(layer), "%s/layer", dir);
			if (access(layer, F_OK) == 0) {
				/* what it holds is what its key's storage counts:
				 * measured again, not taken from the record */
				mock_template_set_bytes(tpl, (double)mock_layer_bytes(layer));
				continue;
			}
			if (mock->gmode != GUEST_CONTAINED)
				continue;
			snprintf(line, sizeof(line), "after a restart: the template's layer %s is not there "
				 "(another --work-dir?); create the template again", layer);
			mock_template_log(tpl, line);
			mock_template_set_status(mock->model, tpl, "failed", 0);
		}
	}
	sweep_layers(mock);
}

void mock_build_forget(sbx_mock *mock, const char *id)
{
	char dir[TPL_DIR_MAX];

	mock_tpl_dir(mock, id, dir, sizeof(dir));
	remove_tree(mock, dir, id);
}

int mock_op_template_seed(sbx_mock *mock, const mock_sandbox *sb, sbx_err *err)
{
	char layer[TPL_DIR_MAX + 8], seed[TPL_DIR_MAX + 160], dir[TPL_DIR_MAX], why[512];

	if (sb->tpl_id[0] == '\0' || mock->gmode != GUEST_CONTAINED)
		return 0;
	mock_tpl_dir(mock, sb->tpl_id, dir, sizeof(dir));
	snprintf(layer, sizeof(layer), "%s/layer", dir);
	snprintf(seed, sizeof(seed), "%s/%s/seed", mock->work_dir, sb->id);
	if (access(layer, F_OK) != 0) {
		sbx_err_set(err, "template %s: its layer %s is gone (deleted meanwhile?)", sb->tpl_id, layer);
		return -1;
	}
	if (mock_tpl_mkdir_p(seed, why, sizeof(why)) != 0) {
		sbx_err_set(err, "template %s: %s", sb->tpl_id, why);
		return -1;
	}
	/* the layer becomes the seed's u: the cell's upper layer starts as it */
	snprintf(seed, sizeof(seed), "%s/%s/seed/u", mock->work_dir, sb->id);
	if (mock_layer_copy(layer, seed, 0, NULL, why, sizeof(why)) != 0) {
		sbx_err_set(err, "template %s: copying its layer: %s", sb->tpl_id, why);
		return -1;
	}
	return 0;
}

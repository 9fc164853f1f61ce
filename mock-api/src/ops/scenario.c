/* scenario: named fault-and-settings bundles — finding one on the search
 * path, reading and parsing it, applying it (settings first, then rules).
 * Used at start (--scenario) and by POST /_mock/scenario; knows no HTTP. */
#define _GNU_SOURCE
#include "ops/scenario.h"

#include "ops/ops.h"
#include "ops/core.h"
#include "ops/settings.h"
#include "internet/inet_book.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SBX_MOCK_SCENARIO_DIR
#define SBX_MOCK_SCENARIO_DIR "fixtures/scenarios"
#endif
#ifndef SBX_MOCK_SCENARIO_INSTALL_DIR
#define SBX_MOCK_SCENARIO_INSTALL_DIR "/usr/local/share/sbx-harness/scenarios"
#endif

/* A scenario: {name?, description?, settings?, rules:[...],
 * internet_stubs:[...], internet_cassette:{replay}} (the stubs and the
 * cassette are the internet's, INTERNET.md). The cassette is checked
 * first and dropped again when a later part is refused. */
int mock_scenario_apply(sbx_mock *mock, const cJSON *sc, const char *base_dir, cJSON *ids, sbx_err *err)
{
	const cJSON *settings = cJSON_GetObjectItemCaseSensitive(sc, "settings");
	const cJSON *stubs = cJSON_GetObjectItemCaseSensitive(sc, "internet_stubs");
	const cJSON *cassette = cJSON_GetObjectItemCaseSensitive(sc, "internet_cassette");
	cJSON *stub_ids;
	int rc = 0;

	if (!cJSON_IsObject(sc)) {
		sbx_err_set(err, "a scenario must be a JSON object");
		return -1;
	}
	if (stubs != NULL && !cJSON_IsArray(stubs)) {
		sbx_err_set(err, "scenario internet_stubs must be an array of stubs");
		return -1;
	}
	/* All or nothing: the settings are checked, then the rules added (all
	 * of them or none), and only then the settings applied. */
	if (settings != NULL && mock_settings_check(mock, settings, err) != 0) {
		sbx_err_prefix(err, "scenario settings");
		return -1;
	}
	if (cassette != NULL && mock_op_cassette_scenario(mock, cassette, base_dir, err) != 0)
		return -1;
	stub_ids = cJSON_CreateArray();
	if (stubs != NULL && mock_inet_stubs_add_json(mock->inet_book, stubs, base_dir, stub_ids, err) != 0) {
		if (cassette != NULL)
			mock_op_cassette_stop(mock);
		cJSON_Delete(stub_ids);
		sbx_err_prefix(err, "scenario internet_stubs (nothing applied)");
		return -1;
	}
	if (cJSON_GetObjectItemCaseSensitive(sc, "rules") != NULL) {
		rc = mock_faults_add_json(mock->faults, sc, ids, err);
		if (rc != 0) {
			const cJSON *id;

			cJSON_ArrayForEach(id, stub_ids)
				mock_inet_stub_delete(mock->inet_book, (unsigned)id->valuedouble);
			if (cassette != NULL)
				mock_op_cassette_stop(mock);
			cJSON_Delete(stub_ids);
			sbx_err_prefix(err, "scenario rules (nothing applied)");
			return -1;
		}
	}
	cJSON_Delete(stub_ids);
	if (settings != NULL && mock_op_settings_apply(mock, settings, err) != 0) {
		sbx_err_prefix(err, "scenario settings");
		return -1;
	}
	return 0;
}

static char *read_file(const char *path, size_t max, sbx_err *err)
{
	FILE *fp = fopen(path, "rb");
	sbx_strbuf sb = SBX_STRBUF_INIT;
	char buf[4096];
	size_t n;

	if (fp == NULL) {
		sbx_err_set(err, "%s: %s", path, strerror(errno));
		return NULL;
	}
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0) {
		if (sb.len + n > max) {
			sbx_err_set(err, "%s: larger than %zu bytes", path, max);
			fclose(fp);
			sbx_strbuf_free(&sb);
			return NULL;
		}
		sbx_strbuf_append(&sb, buf, n);
	}
	fclose(fp);
	if (sb.oom || sb.data == NULL) {
		sbx_err_set(err, "%s: empty or out of memory", path);
		sbx_strbuf_free(&sb);
		return NULL;
	}
	return sbx_strbuf_detach(&sb, NULL);
}

static bool scenario_name_ok(const char *name)
{
	if (name[0] == '\0' || strlen(name) > 64)
		return false;
	for (const char *p = name; *p != '\0'; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
			return false;
	}
	return true;
}

/* Scenario search path, first hit wins: --scenario-dir, $SBX_SCENARIO_DIR,
 * the source tree's fixtures/scenarios (compile definition), the installed
 * share dir. Fills path with the file found; on failure err lists every
 * place looked at. */
static int find_scenario(const sbx_mock *mock, const char *name, char *path, size_t cap,
			 sbx_err *err)
{
	const char *env = getenv("SBX_SCENARIO_DIR");
	const char *dirs[4];
	size_t n = 0;
	sbx_strbuf tried = SBX_STRBUF_INIT;

	if (mock != NULL && mock->scenario_dir[0] != '\0')
		dirs[n++] = mock->scenario_dir;
	if (env != NULL && env[0] != '\0')
		dirs[n++] = env;
	dirs[n++] = SBX_MOCK_SCENARIO_DIR;
	dirs[n++] = SBX_MOCK_SCENARIO_INSTALL_DIR;
	for (size_t i = 0; i < n; i++) {
		if ((size_t)snprintf(path, cap, "%s/%s.json", dirs[i], name) >= cap)
			continue;
		if (access(path, R_OK) == 0) {
			sbx_strbuf_free(&tried);
			return 0;
		}
		sbx_strbuf_printf(&tried, "%s%s", i > 0 ? ", " : "", path);
	}
	sbx_err_set(err, "scenario \"%s\" not found (looked in %s)", name, sbx_strbuf_str(&tried));
	sbx_strbuf_free(&tried);
	return -1;
}

cJSON *mock_scenario_load(const sbx_mock *mock, const char *name_or_file, char *dir, size_t dircap,
			  sbx_err *err)
{
	char path[PATH_MAX];
	char *text;
	cJSON *sc;

	if (strchr(name_or_file, '/') != NULL || strstr(name_or_file, ".json") != NULL) {
		snprintf(path, sizeof(path), "%s", name_or_file);
	} else if (scenario_name_ok(name_or_file)) {
		if (find_scenario(mock, name_or_file, path, sizeof(path), err) != 0)
			return NULL;
	} else {
		sbx_err_set(err, "scenario \"%.64s\": not a file path and not a scenario name ([a-z0-9_-])",
			    name_or_file);
		return NULL;
	}
	text = read_file(path, 1024 * 1024, err);
	if (text == NULL)
		return NULL;
	if (dir != NULL) {
		const char *slash = strrchr(path, '/');

		/* a stub's body_file beside its scenario is found wherever the
		 * scenario was (--scenario-dir, $SBX_SCENARIO_DIR, a path) */
		if (slash == NULL)
			snprintf(dir, dircap, ".");
		else
			snprintf(dir, dircap, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	}
	sc = cJSON_Parse(text);
	free(text);
	if (sc == NULL)
		sbx_err_set(err, "%s: not valid JSON", path);
	return sc;
}

int sbx_mock_load_scenario(sbx_mock *mock, const char *name_or_file, sbx_err *err)
{
	char dir[PATH_MAX];
	cJSON *sc = mock_scenario_load(mock, name_or_file, dir, sizeof(dir), err);
	cJSON *ids;
	int rc;

	if (sc == NULL)
		return -1;
	ids = cJSON_CreateArray();
	rc = mock_scenario_apply(mock, sc, dir, ids, err);
	if (rc != 0)
		sbx_err_prefix(err, "scenario %s", name_or_file);
	cJSON_Delete(ids);
	cJSON_Delete(sc);
	return rc;
}

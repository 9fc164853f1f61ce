/* Fuzz target: sbx-mock's durable state restore (--state-dir: durable.c,
 * mutation_log.c, model_persist.c) and `sbx-mock --check-state`.
 *
 * Input (structure-aware, so most inputs reach the record contents): byte 0
 * is a flags byte; the rest is one record payload per line ('\n'), each
 * framed with its true length and CRC-32 (mutation_log.h). "@K0".."@K3" in
 * a payload stand for the key hash of "fuzz-key-0".."fuzz-key-3" under the
 * fixed state.key, so records can name tenants the HTTP pass can reach.
 * Flags: low 4 bits 0 (1 in 16): the rest is state.log verbatim (framing
 * itself fuzzed); bit 4: the last record's CRC is wrong (damage); bit 5:
 * the last record is cut short (torn); bit 6: garbage bytes follow.
 *
 * The log is written with a fixed state.key into a temp dir, checked
 * (sbx_mock_check_state), then started (sbx_mock_start, plain guests,
 * stored egress, loopback, ephemeral port) as at start-up.
 *
 * Properties, each abort()s when broken:
 * - check-state changes nothing on disk (same files, same log bytes);
 * - check-state and start agree: a start fails exactly when check-state
 *   says "a start refuses this log"; a refused start changes nothing on
 *   disk (the log byte for byte, no file set aside) and its message names
 *   state.log; a start keeps the good prefix of the log, and a log it
 *   started from checks without a "problem:" afterwards;
 * - the restored model keeps its invariants: sandbox ids unique, made of
 *   [A-Za-z0-9_-] (they name guest directories), findable through the id
 *   index; every sandbox's tenant is in the tenant list; statuses valid and
 *   no transitional status after a restart (running/pausing/resuming/
 *   forking come back paused, creating failed, destroying only when stuck);
 *   IP addresses unique among sandboxes that are not destroyed or failed;
 *   every sandbox that is not destroyed is in the live index, once; user
 *   ids unique; the dormant count is the number of tenants without a key;
 * - every GET route answers through the real handlers, for each of the
 *   four keys (list and by-id views of sandboxes, networks, disks,
 *   templates, whoami, hosts, egress, bandwidth, by-ip) and the admin
 *   views: a complete answer, status below 500, a body that is one JSON
 *   value; a sandbox of the caller's tenant is found by its id (200);
 * - the invariants still hold after the GETs. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../mock-api/src/model/model.h"
#include "../mock-api/src/state/mutation_log.h"
#include "../mock-api/src/server/server.h"
#include "../mock-api/src/util/sha256.h"
#include "sbx/http_client.h"
#include "sbx/mock.h"
#include "sbx/strbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define NKEYS 4
#define ADMIN_TOKEN "fuzz-admin-token"
#define MAX_LOG (256u * 1024)

static const uint8_t secret[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
				   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static char key_hash[NKEYS][65];
static const char *dump_input_path;

static void check(bool ok, const char *what, const char *detail)
{
	if (!ok) {
		fprintf(stderr, "mock_state property broken: %s%s%s\n", what, detail != NULL ? ": " : "",
			detail != NULL ? detail : "");
		abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char key[32];

	(void)argc;
	(void)argv;
	for (int i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof(key), "fuzz-key-%d", i);
		mock_hmac_sha256_hex(secret, sizeof(secret), key, key_hash[i]);
	}
	dump_input_path = getenv("SBX_FUZZ_STATE_DUMP");
	check(sbx_http_global_init() == 0, "curl init", NULL);
	return 0;
}

/* ---- building the state dir ---- */

static void put_u32(sbx_strbuf *b, uint32_t v)
{
	char le[4] = {(char)(v & 0xff), (char)(v >> 8 & 0xff), (char)(v >> 16 & 0xff), (char)(v >> 24)};

	sbx_strbuf_append(b, le, 4);
}

/* One payload with @K0..@K3 expanded. */
static void expand(sbx_strbuf *out, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '@' && i + 2 < n && p[i + 1] == 'K' && p[i + 2] >= '0' && p[i + 2] < '0' + NKEYS) {
			sbx_strbuf_append(out, key_hash[p[i + 2] - '0'], 64);
			i += 2;
		} else {
			sbx_strbuf_append(out, p + i, 1);
		}
	}
}

static void build_log(const uint8_t *data, size_t size, sbx_strbuf *log)
{
	uint8_t flags = size > 0 ? data[0] : 0;
	const char *p = (const char *)data + 1, *end = (const char *)data + size;
	size_t last = 0;

	if (size == 0)
		return;
	if ((flags & 0x0f) == 0) {
		sbx_strbuf_append(log, p, (size_t)(end - p));
		return;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl != NULL ? nl : end) - p);
		sbx_strbuf pl = {0};

		expand(&pl, p, n);
		last = log->len;
		put_u32(log, (uint32_t)pl.len);
		put_u32(log, mock_crc32(pl.data != NULL ? pl.data : "", pl.len) ^ ((flags & 0x10) && nl == NULL ? 1u : 0u));
		if (pl.len > 0)
			sbx_strbuf_append(log, pl.data, pl.len);
		sbx_strbuf_free(&pl);
		p = nl != NULL ? nl + 1 : end;
	}
	if ((flags & 0x20) && log->len > last + 8)
		log->len -= 1 + (log->len - last - 8) / 2;
	if (flags & 0x40)
		sbx_strbuf_append(log, "\x07garbage", 8);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	sbx_strbuf b = {0};
	char buf[8192];
	size_t n;

	*len = 0;
	if (f == NULL)
		return NULL;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sbx_strbuf_append(&b, buf, n);
	fclose(f);
	*len = b.len;
	if (b.data == NULL)
		return strdup("");
	return b.data;
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	check(fd >= 0 && sbx_write_all(fd, data, len) == 0, "write", path);
	close(fd);
}

/* The names in dir, sorted, one a line, leaving out the lock and the guest
 * trees (a start makes both). */
static char *listing(const char *dir, const char *skip_prefix)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort);
	sbx_strbuf b = {0};

	for (int i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;

		if (strcmp(nm, ".") != 0 && strcmp(nm, "..") != 0 && strcmp(nm, "lock") != 0 &&
		    strcmp(nm, "guests") != 0 && (skip_prefix == NULL || strncmp(nm, skip_prefix, strlen(skip_prefix)) != 0)) {
			sbx_strbuf_append(&b, nm, strlen(nm));
			sbx_strbuf_append(&b, "\n", 1);
		}
		free(ents[i]);
	}
	free(ents);
	return b.data != NULL ? b.data : strdup("");
}

static char *run_check(const char *dir, int *rc)
{
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);

	check(f != NULL, "open_memstream", NULL);
	sbx_mock_config_init(&cfg);
	cfg.state_dir = dir;
	cfg.quiet = true;
	*rc = sbx_mock_check_state(&cfg, f, &err);
	fclose(f);
	check(*rc != -1, "check-state cannot read a log that is there", err.msg);
	return out;
}

/* ---- the model's invariants ---- */

static bool id_chars_ok(const char *id)
{
	if (id[0] == '\0')
		return false;
	for (const char *c = id; *c != '\0'; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '_' || *c == '-'))
			return false;
	}
	return true;
}

static bool tenant_listed(const mock_model *m, const mock_tenant *t)
{
	for (const mock_tenant *u = m->tenants; u != NULL; u = u->next) {
		if (u == t)
			return true;
	}
	return false;
}

static bool ip_holder(mock_status st)
{
	return st != ST_DESTROYED && st != ST_FAILED;
}

static void check_sandbox(mock_model *m, size_t i, bool after_restart)
{
	const mock_sandbox *sb = m->sbx[i];
	size_t in_live = 0;

	check(id_chars_ok(sb->id), "sandbox id not [A-Za-z0-9_-]+", sb->id);
	check(mock_sandbox_find_any(m, sb->id) == sb, "sandbox not found through the id index", sb->id);
	check(sb->tenant != NULL && tenant_listed(m, sb->tenant), "sandbox's tenant is not in the model",
	      sb->id);
	check((unsigned)sb->status < ST__COUNT, "sandbox status out of range", sb->id);
	check(sb->shape != NULL, "sandbox without a shape", sb->id);
	check(sb->envs != NULL && sb->ssh_pubkeys != NULL && sb->disks != NULL && sb->networks != NULL,
	      "sandbox list missing", sb->id);
	if (after_restart) {
		check(sb->status != ST_RUNNING && sb->status != ST_PAUSING && sb->status != ST_RESUMING &&
			      sb->status != ST_FORKING && sb->status != ST_CREATING,
		      "a transitional status survived the restart", sb->id);
		check(sb->status != ST_DESTROYING || sb->destroy_stuck,
		      "destroying after a restart without destroy_stuck", sb->id);
	}
	for (size_t j = 0; j < m->nsbx; j++) {
		const mock_sandbox *o = m->sbx[j];

		if (j == i)
			continue;
		check(strcmp(o->id, sb->id) != 0, "two sandboxes share an id", sb->id);
		check(!(ip_holder(sb->status) && ip_holder(o->status) && sb->ip[0] != '\0' &&
			strcmp(sb->ip, o->ip) == 0),
		      "two sandboxes that are not destroyed share an IP address", sb->ip);
	}
	for (size_t j = 0; j < m->nlive; j++)
		in_live += m->live[j] == sb;
	check(in_live <= 1, "a sandbox twice in the live index", sb->id);
	check(sb->status == ST_DESTROYED || in_live == 1, "a sandbox not destroyed is missing from the live index",
	      sb->id);
}

static void check_model(mock_model *m, bool after_restart)
{
	unsigned no_key = 0;

	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->nsbx; i++)
		check_sandbox(m, i, after_restart);
	for (const mock_tenant *t = m->tenants; t != NULL; t = t->next) {
		no_key += t->key == NULL;
		check(t->networks != NULL && cJSON_IsArray(t->networks) && t->disks != NULL &&
			      cJSON_IsArray(t->disks) && t->templates != NULL && cJSON_IsArray(t->templates),
		      "tenant resource lists are not arrays", t->user_id);
		for (const mock_tenant *u = t->next; u != NULL; u = u->next) {
			check(strcmp(t->user_id, u->user_id) != 0, "two tenants share a user id", t->user_id);
			check(strcmp(t->key_hash, u->key_hash) != 0, "two tenants share a key hash", t->key_hash);
		}
	}
	check(no_key == m->dormant, "dormant count is not the number of tenants without a key", NULL);
	pthread_mutex_unlock(&m->lock);
}

/* ---- the GET pass ---- */

typedef struct getter {
	sbx_http_client *c;
	const char *who;
} getter;

static void get(getter *g, const char *path, const char *id, int want)
{
	sbx_strbuf p = {0};
	sbx_http_req req = {.method = "GET"};
	sbx_http_resp resp;
	cJSON *j;
	char detail[600], ctype[128];

	sbx_strbuf_append(&p, path, strlen(path));
	if (id != NULL) {
		const char *tail = strstr(path, "{}");

		p.len = (size_t)(tail - path);
		check(sbx_http_escape(&p, id), "escape", NULL);
		sbx_strbuf_append(&p, tail + 2, strlen(tail + 2));
	}
	req.path = p.data;
	memset(&resp, 0, sizeof(resp));
	sbx_http_request(g->c, &req, &resp, NULL);
	snprintf(detail, sizeof(detail), "GET %s as %s: status %ld, body %.300s", p.data, g->who, resp.status,
		 resp.body.data != NULL ? resp.body.data : "");
	check(resp.fail == SBX_HTTP_OK, "no complete answer", detail);
	check(resp.status >= 200 && resp.status < 500, "a GET answered 5xx (or nonsense)", detail);
	/* JSON answers are one JSON value (build logs are text/plain) */
	if (!sbx_http_header(&resp, "Content-Type", ctype, sizeof(ctype)) ||
	    strncmp(ctype, "application/json", 16) == 0) {
		j = cJSON_ParseWithLength(resp.body.data != NULL ? resp.body.data : "", resp.body.len);
		check(j != NULL, "a GET answer is not one JSON value", detail);
		cJSON_Delete(j);
	}
	check(want == 0 || resp.status == want, "a GET of a restored sandbox of the caller's tenant", detail);
	sbx_http_resp_free(&resp);
	sbx_strbuf_free(&p);
}

/* Ids (and names) to GET, copied under the lock. */
typedef struct idset {
	char **v;
	size_t n;
} idset;

static void ids_add(idset *s, const char *id)
{
	char **grown = realloc(s->v, (s->n + 1) * sizeof(*s->v));

	check(grown != NULL, "out of memory", NULL);
	s->v = grown;
	s->v[s->n] = strdup(id);
	check(s->v[s->n] != NULL, "out of memory", NULL);
	s->n++;
}

static void ids_free(idset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static void add_resources(idset *s, const cJSON *arr)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");

		if (cJSON_IsString(id))
			ids_add(s, id->valuestring);
		if (cJSON_IsString(nm) && nm->valuestring[0] != '\0' && s->n < 64)
			ids_add(s, nm->valuestring);
	}
}

/* The sandboxes (mine: of the tenant with key_hash kh) and the tenant's
 * resources. */
static void collect(mock_model *m, const char *kh, idset *mine, idset *others, idset *ips, idset res[3])
{
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->nsbx && i < 64; i++) {
		const mock_sandbox *sb = m->sbx[i];

		ids_add(sb->tenant != NULL && strcmp(sb->tenant->key_hash, kh) == 0 ? mine : others, sb->id);
		if (sb->ip[0] != '\0')
			ids_add(ips, sb->ip);
	}
	for (const mock_tenant *t = m->tenants; t != NULL; t = t->next) {
		if (strcmp(t->key_hash, kh) != 0)
			continue;
		add_resources(&res[0], t->networks);
		add_resources(&res[1], t->disks);
		add_resources(&res[2], t->templates);
	}
	pthread_mutex_unlock(&m->lock);
}

static void get_as(sbx_mock *mock, int k)
{
	static const char *const lists[] = {"/v1/whoami", "/v1/hosts", "/v1/sandboxes", "/v1/networks",
					    "/v1/disks", "/v1/templates", "/v1/shapes", "/v1/rootfs",
					    "/readyz", "/healthz"};
	static const char *const per_sbx[] = {"/v1/sandboxes/{}", "/v1/sandboxes/{}/egress",
					      "/v1/sandboxes/{}/bandwidth", "/v1/sandboxes/{}/disks"};
	static const char *const per_res[3][2] = {{"/v1/networks/{}", NULL},
						  {"/v1/disks/{}", NULL},
						  {"/v1/templates/{}", "/v1/templates/{}/logs"}};
	char key[64], who[32];
	sbx_http_opts o = {.base_url = sbx_mock_url(mock), .timeout_ms = 10000, .headers = {key}};
	sbx_err err = {{0}};
	getter g = {.who = who};
	idset mine = {0}, others = {0}, ips = {0}, res[3] = {{0}};

	snprintf(key, sizeof(key), "X-Api-Key: fuzz-key-%d", k);
	snprintf(who, sizeof(who), "fuzz-key-%d", k);
	g.c = sbx_http_client_new(&o, &err);
	check(g.c != NULL, "http client", err.msg);
	collect(mock->model, key_hash[k], &mine, &others, &ips, res);
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		get(&g, lists[i], NULL, 0);
	for (size_t i = 0; i < mine.n; i++) {
		for (size_t r = 0; r < sizeof(per_sbx) / sizeof(per_sbx[0]); r++)
			get(&g, per_sbx[r], mine.v[i], r == 0 ? 200 : 0);
	}
	for (size_t i = 0; i < others.n && i < 4; i++)
		get(&g, "/v1/sandboxes/{}", others.v[i], 0);
	for (size_t i = 0; i < ips.n && i < 8; i++)
		get(&g, "/v1/sandboxes/by-ip/{}", ips.v[i], 0);
	for (int r = 0; r < 3; r++) {
		for (size_t i = 0; i < res[r].n; i++) {
			get(&g, per_res[r][0], res[r].v[i], 0);
			if (per_res[r][1] != NULL)
				get(&g, per_res[r][1], res[r].v[i], 0);
		}
		ids_free(&res[r]);
	}
	ids_free(&mine);
	ids_free(&others);
	ids_free(&ips);
	sbx_http_client_free(g.c);
}

static void get_admin(sbx_mock *mock)
{
	static const char *const paths[] = {"/_mock/state", "/_mock/sandboxes", "/_mock/settings",
					    "/_mock/journal", "/_mock/journal/count", "/_mock/faults"};
	sbx_http_opts o = {.base_url = sbx_mock_url(mock), .timeout_ms = 10000,
			   .headers = {"X-Mock-Admin-Token: " ADMIN_TOKEN}};
	sbx_err err = {{0}};
	getter g = {.who = "admin"};

	g.c = sbx_http_client_new(&o, &err);
	check(g.c != NULL, "http client", err.msg);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		get(&g, paths[i], NULL, 0);
	sbx_http_client_free(g.c);
}

/* ---- one input ---- */

static void start_and_serve(const char *dir, const char *logpath, const sbx_strbuf *log, int check_rc,
			    const char *check_out)
{
	bool refuses = strstr(check_out, "a start refuses this log") != NULL;
	const char *ld = log->data != NULL ? log->data : "";
	char *before = listing(dir, NULL), *after, *now;
	sbx_mock_config cfg;
	sbx_err err = {{0}};
	sbx_mock *mock;
	size_t nowlen = 0;

	sbx_mock_config_init(&cfg);
	cfg.state_dir = dir;
	cfg.quiet = true;
	cfg.guest_mode = "plain";
	cfg.egress = "stored";
	cfg.admin_token = ADMIN_TOKEN;
	cfg.threads = 2;
	cfg.journal_size = 64;
	cfg.exec_timeout_ms = 1000;
	mock = sbx_mock_start(&cfg, &err);
	now = read_file(logpath, &nowlen);
	if (mock == NULL) {
		after = listing(dir, NULL);
		check(refuses, "a start refused a log that check-state did not call refused", err.msg);
		check(strstr(err.msg, "state.log") != NULL, "a refused start does not name state.log", err.msg);
		check(now != NULL && nowlen == log->len && memcmp(now, ld, nowlen) == 0,
		      "a refused start changed state.log", err.msg);
		check(strcmp(before, after) == 0, "a refused start left a file in the state dir", after);
		free(after);
		free(now);
		free(before);
		return;
	}
	check(!refuses, "a start took a log that check-state calls refused", check_out);
	/* the good prefix is kept: all of it when check-state found no problem */
	check(now != NULL, "state.log gone after a start", NULL);
	if (strstr(check_out, "problem:") == NULL)
		check(nowlen >= log->len && memcmp(now, ld, log->len) == 0,
		      "a start changed a clean log (beyond appending)", check_out);
	free(now);
	free(before);
	check_model(mock->model, true);
	for (int k = 0; k < NKEYS; k++)
		get_as(mock, k);
	get_admin(mock);
	check_model(mock->model, false);
	sbx_mock_stop(mock);
	(void)check_rc;
	/* what a start left checks without a framing problem */
	{
		int rc2 = 0;
		char *out2 = run_check(dir, &rc2);

		check(strstr(out2, "problem:") == NULL, "the log a start left still has a problem", out2);
		free(out2);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[128], path[160], logpath[160];
	sbx_strbuf log = {0};
	char hex[66], *before, *after, *out, *now;
	size_t nowlen = 0;
	int rc = 0;

	if (size > MAX_LOG)
		return 0;
	build_log(data, size, &log);
	if (dump_input_path != NULL)
		write_file(dump_input_path, log.data != NULL ? log.data : "", log.len);
	/* tmpfs when there is one: every start fsyncs the key and the log */
	snprintf(dir, sizeof(dir), "%s/sbx-fuzz-state-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	check(mkdtemp(dir) != NULL, "mkdtemp", NULL);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", secret[i]);
	hex[64] = '\n';
	snprintf(path, sizeof(path), "%s/state.key", dir);
	write_file(path, hex, 65);
	snprintf(logpath, sizeof(logpath), "%s/state.log", dir);
	write_file(logpath, log.data != NULL ? log.data : "", log.len);

	before = listing(dir, NULL);
	out = run_check(dir, &rc);
	after = listing(dir, NULL);
	now = read_file(logpath, &nowlen);
	check(strcmp(before, after) == 0, "check-state changed the files of the state dir", after);
	check(now != NULL && nowlen == log.len && (nowlen == 0 || memcmp(now, log.data, nowlen) == 0),
	      "check-state changed state.log", NULL);
	check((rc == 0) == (strstr(out, "ok: a start restores every record") != NULL),
	      "check-state's exit code and its verdict disagree", out);
	free(now);
	free(before);
	free(after);
	start_and_serve(dir, logpath, &log, rc, out);
	free(out);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	sbx_strbuf_free(&log);
	return 0;
}

/* model_template: a tenant's rootfs templates, stored as cJSON in the
 * tenant; see model.h and mock-api/TEMPLATES.md.
 *
 * A create validates the Dockerfile as the vendor accepts it (one FROM of
 * an allow-listed base; RUN, ENV, WORKDIR, USER, ARG, LABEL, CMD,
 * ENTRYPOINT; no COPY or ADD) and stores its steps ("_steps") for the
 * build, which templates/template_build.c runs for real: the status moves from
 * pending only when the build does, never on the clock. The bookkeeping
 * keys ("_created_ms", "_steps", "_log*", and "_disk_mib": the storage its
 * build reserved) never reach a view. Never knows about HTTP, never does
 * I/O. */
#include "model/model_internal.h"
#include "util/json_print.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The docs' only base; devbox:1 is the same image (IMAGES.md). */
const char *const mock_template_bases[] = {"nodeops/sandbox:debian", NULL};

/* a build's log keeps its last lines, so many and so many bytes of
 * them: a RUN printing without end must not grow the mock without bound
 * (LIMITS.md); a line is cut at TPL_LINE_MAX - 1 bytes */
#define TPL_LOG_MAX_LINES 4000
#define TPL_LOG_MAX_BYTES (1024 * 1024)
#define TPL_LINE_MAX 4096
/* what of a log the tenant's state record carries (DURABLE.md): its last
 * lines (a failed build's message and its tail), each cut; the record is
 * written whole at each change of the tenant, under the model lock */
#define TPL_LOG_DURABLE_LINES 10
#define TPL_LOG_DURABLE_LINE_MAX 512

cJSON *mock_template_find(mock_tenant *t, const char *id)
{
	return model_find_by_id_or_name(t->templates, id);
}

/* ---- the Dockerfile ---- */

typedef struct df_parse {
	cJSON *steps;
	unsigned line;   /* the logical line's first physical line */
	bool from_seen;
	char from[128];
	cJSON *globals;  /* ARGs before FROM: name -> default (or null) */
	cJSON *vars;     /* the names ENV and ARG put in the steps' environment */
	mock_err *e;
} df_parse;

static int df_fail(df_parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int df_fail(df_parse *p, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mock_err_set(p->e, 400, "INVALID_REQUEST", "dockerfile", "dockerfile line %u: %s", p->line, msg);
	return -1;
}

static bool env_key_ok(const char *k, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)k[0]) || k[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++) {
		if (!(isalnum((unsigned char)k[i]) || k[i] == '_'))
			return false;
	}
	return true;
}

/* One word of an ENV/LABEL/ARG value: "..." or '...' (quotes removed,
 * \" kept as "), else up to the next blank. *s moves past it. */
static char *df_word(const char **s)
{
	const char *p = *s;
	char q = (*p == '"' || *p == '\'') ? *p : 0;
	size_t n = strlen(p), o = 0;
	char *w = malloc(n + 1);

	if (w == NULL)
		return NULL;
	if (q != 0)
		p++;
	while (*p != '\0' && (q != 0 ? *p != q : !isspace((unsigned char)*p))) {
		if (*p == '\\' && p[1] != '\0' && q != '\'')
			p++;
		w[o++] = *p++;
	}
	if (q != 0 && *p == q)
		p++;
	w[o] = '\0';
	*s = p;
	return w;
}

/* KEY=VALUE pairs (or, for ENV, "KEY VALUE...") into an array of [k, v]. */
static int df_pairs(df_parse *p, const char *op, const char *rest, cJSON *step, bool value_needed)
{
	cJSON *pairs = cJSON_AddArrayToObject(step, "pairs");
	const char *s = rest, *eq = strchr(rest, '='), *sp = rest + strcspn(rest, " \t");

	if (strcmp(op, "ENV") == 0 && (eq == NULL || eq > sp) && *sp != '\0') {
		/* the legacy form: ENV KEY the rest of the line */
		cJSON *kv;
		char key[256];

		snprintf(key, sizeof(key), "%.*s", (int)(sp - rest), rest);
		if ((size_t)(sp - rest) >= sizeof(key))
			return df_fail(p, "ENV: the name \"%.40s...\" is longer than %zu bytes", key,
				       sizeof(key) - 1);
		if (!env_key_ok(key, strlen(key)))
			return df_fail(p, "ENV: \"%.80s\" is not a variable name", key);
		kv = cJSON_CreateArray();
		while (isspace((unsigned char)*sp))
			sp++;
		cJSON_AddItemToArray(kv, cJSON_CreateString(key));
		cJSON_AddItemToArray(kv, cJSON_CreateString(sp));
		cJSON_AddItemToArray(pairs, kv);
		return 0;
	}
	while (*s != '\0') {
		size_t kn = strcspn(s, "= \t");
		char key[256];
		char *val = NULL;
		cJSON *kv;

		snprintf(key, sizeof(key), "%.*s", (int)(kn < 255 ? kn : 255), s);
		if (kn >= sizeof(key) || (strcmp(op, "LABEL") != 0 && !env_key_ok(s, kn)))
			return df_fail(p, "%s: \"%.80s\" is not a valid name", op, key);
		s += kn;
		if (*s == '=') {
			s++;
			val = df_word(&s);
		} else if (value_needed) {
			return df_fail(p, "%s %.80s: expected KEY=VALUE", op, key);
		}
		kv = cJSON_CreateArray();
		cJSON_AddItemToArray(kv, cJSON_CreateString(key));
		if (val != NULL)
			cJSON_AddItemToArray(kv, cJSON_CreateString(val));
		free(val);
		cJSON_AddItemToArray(pairs, kv);
		while (isspace((unsigned char)*s))
			s++;
	}
	return 0;
}

static bool base_allowed(const char *image)
{
	for (size_t i = 0; mock_template_bases[i] != NULL; i++) {
		if (strcmp(mock_template_bases[i], image) == 0)
			return true;
	}
	return false;
}

/* A name ENV or ARG gives the steps' environment; refused past the
 * runner's MOCK_TPL_ENV_MAX distinct names (it never drops one). */
static int df_var(df_parse *p, const char *op, const char *name)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, p->vars) {
		if (strcmp(it->valuestring, name) == 0)
			return 0;
	}
	if (cJSON_GetArraySize(p->vars) >= MOCK_TPL_ENV_MAX)
		return df_fail(p,
			       "%s %.80s: more than %d variables (ENV and ARG names together): a build's "
			       "environment holds at most %d",
			       op, name, MOCK_TPL_ENV_MAX, MOCK_TPL_ENV_MAX);
	cJSON_AddItemToArray(p->vars, cJSON_CreateString(name));
	return 0;
}

/* ARG's scope is Docker's: one before FROM only names a default, which
 * reaches no step's environment; after FROM, "ARG NAME" without a value
 * takes that default (an ARG of neither has no value, as without
 * --build-arg). Each named variable counts to the environment's bound. */
static int df_scope(df_parse *p, const char *op, cJSON *step)
{
	cJSON *kv;

	cJSON_ArrayForEach(kv, cJSON_GetObjectItemCaseSensitive(step, "pairs")) {
		const char *k = cJSON_GetArrayItem(kv, 0)->valuestring;
		const cJSON *def = cJSON_GetObjectItemCaseSensitive(p->globals, k);

		if (!p->from_seen) {
			cJSON *v = cJSON_GetArraySize(kv) == 2 ? cJSON_Duplicate(cJSON_GetArrayItem(kv, 1), false)
							       : cJSON_CreateNull();

			cJSON_DeleteItemFromObjectCaseSensitive(p->globals, k);
			cJSON_AddItemToObject(p->globals, k, v);
			continue;
		}
		if (strcmp(op, "LABEL") == 0)
			continue;
		if (strcmp(op, "ARG") == 0 && cJSON_GetArraySize(kv) == 1 && cJSON_IsString(def))
			cJSON_AddItemToArray(kv, cJSON_CreateString(def->valuestring));
		if (df_var(p, op, k) != 0)
			return -1;
	}
	return 0;
}

/* RUN's exec form: a JSON array of strings, run without a shell, of at
 * most MOCK_TPL_RUN_ARGS_MAX words (the runner's argv, with runuser's
 * four for a USER, is never cut). */
static int df_exec_form(df_parse *p, const char *rest, cJSON *step)
{
	cJSON *argv = cJSON_Parse(rest);
	const cJSON *it;
	bool ok = cJSON_IsArray(argv) && cJSON_GetArraySize(argv) > 0;
	int n = cJSON_GetArraySize(argv);

	cJSON_ArrayForEach(it, argv) ok = ok && cJSON_IsString(it);
	if (!ok) {
		cJSON_Delete(argv);
		return df_fail(p, "RUN [...]: expected a JSON array of strings");
	}
	cJSON_AddItemToObject(step, "argv", argv);
	if (n > MOCK_TPL_RUN_ARGS_MAX)
		return df_fail(p, "RUN [...]: %d arguments; the exec form takes at most %d", n,
			       MOCK_TPL_RUN_ARGS_MAX);
	return 0;
}

/* USER name[:group]: the name must fit the runner's (runuser -u NAME). */
static int df_user(df_parse *p, const char *rest)
{
	size_t n = strcspn(rest, ":");

	if (n > MOCK_TPL_USER_MAX)
		return df_fail(p, "USER: the name \"%.40s...\" is %zu bytes; at most %d", rest, n,
			       MOCK_TPL_USER_MAX);
	return 0;
}

static int df_from(df_parse *p, const char *rest)
{
	size_t n = strcspn(rest, " \t");
	const char *tail = rest + n;

	if (p->from_seen)
		return df_fail(p, "a second FROM: one FROM is accepted (no multi-stage builds)");
	while (isspace((unsigned char)*tail))
		tail++;
	if (rest[0] == '-' || (tail[0] != '\0' && strncasecmp(tail, "AS ", 3) != 0))
		return df_fail(p, "FROM takes an image (and AS name) only");
	snprintf(p->from, sizeof(p->from), "%.*s", (int)(n < 127 ? n : 127), rest);
	if (n >= sizeof(p->from) || !base_allowed(p->from))
		return df_fail(p, "FROM %.100s: not an allow-listed base image (allowed: %s)", p->from,
			       mock_template_bases[0]);
	p->from_seen = true;
	return 0;
}

/* One instruction: op (upper case) and its argument. */
static int df_instruction(df_parse *p, const char *op, const char *rest)
{
	static const char *const known[] = {"RUN",   "ENV",   "WORKDIR", "USER",      "ARG",
					    "LABEL", "CMD",   "ENTRYPOINT", NULL};
	cJSON *step;
	size_t i;

	if (strcmp(op, "COPY") == 0 || strcmp(op, "ADD") == 0)
		return df_fail(p, "%s is not permitted: layer content comes from RUN only (no COPY or ADD)",
			       op);
	if (rest[0] == '\0')
		return df_fail(p, "%s needs an argument", op);
	if (strcmp(op, "FROM") == 0)
		return df_from(p, rest);
	for (i = 0; known[i] != NULL && strcmp(known[i], op) != 0; i++)
		;
	if (known[i] == NULL)
		return df_fail(p,
			       "unsupported instruction %.40s (accepted: FROM, RUN, ENV, WORKDIR, USER, ARG, "
			       "LABEL, CMD, ENTRYPOINT)",
			       op);
	if (!p->from_seen && strcmp(op, "ARG") != 0)
		return df_fail(p, "%s before FROM", op);
	step = cJSON_CreateObject();
	/* an ARG before FROM is no step: its default is kept apart */
	if (p->from_seen)
		cJSON_AddItemToArray(p->steps, step);
	cJSON_AddStringToObject(step, "op", op);
	cJSON_AddNumberToObject(step, "line", p->line);
	cJSON_AddStringToObject(step, "arg", rest);
	if (strcmp(op, "RUN") == 0 && rest[0] == '[')
		return df_exec_form(p, rest, step);
	if (strcmp(op, "USER") == 0)
		return df_user(p, rest);
	if (strcmp(op, "ENV") == 0 || strcmp(op, "LABEL") == 0 || strcmp(op, "ARG") == 0) {
		int rc = df_pairs(p, op, rest, step, strcmp(op, "ARG") != 0);

		rc = rc == 0 ? df_scope(p, op, step) : rc;
		if (!p->from_seen)
			cJSON_Delete(step);
		return rc;
	}
	return 0;
}

/* Splits text into logical lines (a trailing backslash continues one;
 * comment lines are skipped, inside continuations too). */
static int df_parse_text(df_parse *p, const char *text)
{
	sbx_strbuf cur = SBX_STRBUF_INIT;
	unsigned lineno = 0;
	bool cont = false;
	int rc = 0;

	for (const char *s = text; rc == 0 && *s != '\0';) {
		size_t n = strcspn(s, "\n");
		const char *ln = s;
		size_t k = n;

		lineno++;
		s += n + (s[n] == '\n');
		while (k > 0 && isspace((unsigned char)ln[k - 1]))
			k--;
		while (k > 0 && isspace((unsigned char)*ln)) {
			ln++;
			k--;
		}
		if (k > 0 && ln[0] == '#')
			continue;
		if (!cont)
			p->line = lineno;
		cont = k > 0 && ln[k - 1] == '\\';
		sbx_strbuf_printf(&cur, "%.*s", (int)(cont ? k - 1 : k), ln);
		if (cont && *s != '\0') {
			sbx_strbuf_puts(&cur, " ");
			continue;
		}
		if (cur.len > 0) {
			char *line = cur.data, op[16];
			size_t on = strcspn(line, " \t");
			const char *rest = line + on;

			while (isspace((unsigned char)*rest))
				rest++;
			snprintf(op, sizeof(op), "%.*s", (int)(on < 15 ? on : 15), line);
			for (char *c = op; *c != '\0'; c++)
				*c = (char)toupper((unsigned char)*c);
			rc = df_instruction(p, op, rest);
		}
		cur.len = 0;
		if (cur.data != NULL)
			cur.data[0] = '\0';
	}
	sbx_strbuf_free(&cur);
	if (rc == 0 && !p->from_seen) {
		mock_err_set(p->e, 400, "INVALID_REQUEST", "dockerfile",
			     "dockerfile: no FROM (one FROM %s is required)", mock_template_bases[0]);
		rc = -1;
	}
	return rc;
}

/* A build that has not ended: queued (pending) or running its steps. */
static bool build_running(const cJSON *tpl)
{
	const char *st = model_str(tpl, "status");

	return st != NULL && (strcmp(st, "pending") == 0 || strcmp(st, "building") == 0);
}

void mock_template_builds(const mock_tenant *t, unsigned *pending, unsigned *building)
{
	const cJSON *tpl;

	*pending = *building = 0;
	cJSON_ArrayForEach(tpl, t->templates) {
		if (!build_running(tpl))
			continue;
		if (strcmp(model_str(tpl, "status"), "pending") == 0)
			(*pending)++;
		else
			(*building)++;
	}
}

/* A build counts to its tenant and to the mock from its create to its end
 * (ready or failed; deleting the template ends it): over either cap the
 * create is refused at once, it never queues (LIMITS.md). The tenant's
 * cap is its quota, 403 QUOTA_EXCEEDED as its other quotas; the mock's is
 * its capacity, 503 as the live fleet's exhaustion (spec "Quotas and
 * caps"). Neither answer of the live service is known. */
static int build_caps(mock_model *m, const mock_tenant *t, mock_err *e)
{
	unsigned p, b, all = 0;

	mock_template_builds(t, &p, &b);
	if (p + b >= m->set.tpl_build_cap) {
		mock_err_set(e, 403, "QUOTA_EXCEEDED", "error",
			     "concurrent template build limit reached (%u per key; %u pending, %u building): "
			     "wait for one to end (ready or failed) or delete one",
			     m->set.tpl_build_cap, p, b);
		return -1;
	}
	for (const mock_tenant *o = m->tenants; o != NULL; o = o->next) {
		mock_template_builds(o, &p, &b);
		all += p + b;
	}
	if (all >= m->set.tpl_build_cap_global) {
		mock_err_set(e, 503, "", "error",
			     "the mock's concurrent template build limit is reached (%u builds across all "
			     "keys); retry when one has ended",
			     m->set.tpl_build_cap_global);
		return -1;
	}
	return 0;
}

#define MIB (1024.0 * 1024.0)

unsigned mock_template_disk_mib(const cJSON *tpl)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(tpl, "_disk_mib");

	/* a template of an older state log: the default's disk */
	return cJSON_IsNumber(d) && d->valuedouble >= 1 ? (unsigned)d->valuedouble : MOCK_TPL_BUILD_DISK_MIB;
}

void mock_template_storage(const mock_tenant *t, unsigned *count, double *layer_bytes, double *reserved_bytes)
{
	const cJSON *tpl;

	*count = 0;
	*layer_bytes = *reserved_bytes = 0;
	cJSON_ArrayForEach(tpl, t->templates) {
		const char *st = model_str(tpl, "status");
		const cJSON *sz = cJSON_GetObjectItemCaseSensitive(tpl, "ext4_size_bytes");

		(*count)++;
		if (build_running(tpl))
			*reserved_bytes += mock_template_disk_mib(tpl) * MIB;
		else if (st != NULL && strcmp(st, "ready") == 0 && cJSON_IsNumber(sz) && sz->valuedouble > 0)
			*layer_bytes += sz->valuedouble;
	}
}

/* The templates a tenant keeps and their storage (LIMITS.md): its number
 * and bytes are its quota (403 QUOTA_EXCEEDED, as its other quotas); the
 * mock's bytes its capacity (503, as the mock's build cap: the host's
 * disk is the fleet's, and another key's delete frees it). A build is
 * given its share of what both have left, up to template_build_disk_mib,
 * into *disk_mib: reserved until it ends, so no mix of builds overshoots
 * a bound. Lock held; after build_caps (a build slot is free). */
static int storage_caps(mock_model *m, const mock_tenant *t, unsigned *disk_mib, mock_err *e)
{
	const mock_settings *s = &m->set;
	double held, reserved, all = 0, key_left, all_left, left;
	unsigned n, on, p, b, running, all_running = 0;

	for (const mock_tenant *o = m->tenants; o != NULL; o = o->next) {
		mock_template_storage(o, &on, &held, &reserved);
		all += held + reserved;
		mock_template_builds(o, &p, &b);
		all_running += p + b;
	}
	mock_template_builds(t, &p, &b);
	running = p + b;
	mock_template_storage(t, &n, &held, &reserved);
	if (n >= s->tpl_cap) {
		mock_err_set(e, 403, "QUOTA_EXCEEDED", "error",
			     "template limit reached (%u per key): delete one to create another", s->tpl_cap);
		return -1;
	}
	/* what is left is shared among the builds that may still start (the
	 * build caps, which build_caps checked: one slot at least), so one
	 * build does not take what the others at once need */
	key_left = (s->tpl_storage_mib * MIB - held - reserved) / (s->tpl_build_cap - running);
	all_left = (s->tpl_storage_mib_global * MIB - all) / (s->tpl_build_cap_global - all_running);
	left = key_left < all_left ? key_left : all_left;
	if (left < MOCK_TPL_BUILD_DISK_MIN_MIB * MIB) {
		if (key_left <= all_left)
			mock_err_set(e, 403, "QUOTA_EXCEEDED", "error",
				     "template storage limit reached (%u MiB per key; %.0f MiB in ready templates' "
				     "layers, %.0f MiB reserved by builds not ended; a build needs %u MiB left per "
				     "build the key may start): delete a template",
				     s->tpl_storage_mib, held / MIB, reserved / MIB, MOCK_TPL_BUILD_DISK_MIN_MIB);
		else
			mock_err_set(e, 503, "", "error",
				     "the mock's template storage is full (%u MiB across all keys, %.0f MiB held); "
				     "retry when templates are deleted",
				     s->tpl_storage_mib_global, all / MIB);
		return -1;
	}
	*disk_mib = left >= s->tpl_build_disk_mib * MIB ? s->tpl_build_disk_mib : (unsigned)(left / MIB);
	return 0;
}

cJSON *mock_template_create(mock_model *m, mock_tenant *t, const cJSON *body, mock_err *e)
{
	unsigned disk_mib = 0;
	const char *name = model_str(body, "name");
	const char *dockerfile = model_str(body, "dockerfile");
	const char *base = model_str(body, "base");
	df_parse p = {.e = e};
	cJSON *tpl;
	char ts[40];

	if (name == NULL) {
		mock_err_set(e, 400, "INVALID_REQUEST", "name", "name is required (string)");
		return NULL;
	}
	if (mock_validate_res_name(name, e) != 0)
		return NULL;
	if (dockerfile == NULL || dockerfile[0] == '\0') {
		mock_err_set(e, 400, "INVALID_REQUEST", "dockerfile", "dockerfile is required (string)");
		return NULL;
	}
	/* SDK: "Empty = host default" */
	if (base != NULL && base[0] == '\0')
		base = NULL;
	if (base != NULL && !model_rootfs_known(base)) {
		mock_err_set(e, 400, "INVALID_ROOTFS", "base", "unknown base rootfs \"%.64s\"", base);
		return NULL;
	}
	p.steps = cJSON_CreateArray();
	p.globals = cJSON_CreateObject();
	p.vars = cJSON_CreateArray();
	if (p.steps == NULL || p.globals == NULL || p.vars == NULL || df_parse_text(&p, dockerfile) != 0) {
		cJSON_Delete(p.steps);
		cJSON_Delete(p.globals);
		cJSON_Delete(p.vars);
		return NULL;
	}
	cJSON_Delete(p.globals);
	cJSON_Delete(p.vars);
	if (model_need_credit(m, t, e) != 0 || build_caps(m, t, e) != 0 || storage_caps(m, t, &disk_mib, e) != 0) {
		cJSON_Delete(p.steps);
		return NULL;
	}
	tpl = model_resource_new(m, "tpl_", name, ts, e);
	if (tpl == NULL) {
		cJSON_Delete(p.steps);
		return NULL;
	}
	cJSON_AddStringToObject(tpl, "base", base != NULL ? base : MOCK_ROOTFS_DEFAULT);
	cJSON_AddStringToObject(tpl, "status", "pending");
	cJSON_AddNumberToObject(tpl, "ext4_size_bytes", 0);
	cJSON_AddStringToObject(tpl, "created_at", ts);
	cJSON_AddStringToObject(tpl, "dockerfile", dockerfile);
	cJSON_AddNumberToObject(tpl, "_created_ms", (double)mock_now(m));
	cJSON_AddNumberToObject(tpl, "_disk_mib", disk_mib);
	cJSON_AddItemToObject(tpl, "_steps", p.steps);
	cJSON_AddItemToObject(tpl, "_log", cJSON_CreateArray());
	cJSON_AddItemToArray(t->templates, tpl);
	return tpl;
}

int mock_template_delete(mock_model *m, mock_tenant *t, const char *id_or_name, char *id, size_t cap,
			 mock_err *e)
{
	cJSON *tpl = mock_template_find(t, id_or_name);

	(void)m;
	if (tpl == NULL) {
		mock_err_set(e, 404, "NOT_FOUND", "error", "template not found");
		return -1;
	}
	/* SDK: "Existing sandboxes built from it are unaffected": each has
	 * its own copy of the layer */
	snprintf(id, cap, "%s", model_str(tpl, "id"));
	cJSON_Delete(cJSON_DetachItemViaPointer(t->templates, tpl));
	return 0;
}

cJSON *mock_template_view(mock_model *m, cJSON *tpl, bool dockerfile)
{
	cJSON *v;

	(void)m;
	v = cJSON_Duplicate(tpl, true);
	if (v != NULL) {
		static const char *const hidden[] = {"_created_ms", "_steps",    "_log",      "_log_dropped",
						     "_log_kept",   "_log_bytes", "_disk_mib"};

		for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
			cJSON_DeleteItemFromObjectCaseSensitive(v, hidden[i]);
		if (!dockerfile)
			cJSON_DeleteItemFromObjectCaseSensitive(v, "dockerfile");
	}
	return v;
}

/* ---- the build's log ---- */

/* A template's log: "_log" its kept lines (oldest first), "_log_dropped"
 * how many went before them, "_log_kept" and "_log_bytes" their count and
 * bytes (counted, never walked: a line costs the same in a full log). */
typedef struct tpl_log {
	cJSON *lines, *dropped, *kept, *bytes;
} tpl_log;

/* Sets o[k] = v whether or not o has k yet (a template restored from a
 * state log may lack status or ext4_size_bytes: Replace alone would leak
 * v). */
static void put_item(cJSON *o, const char *k, cJSON *v)
{
	if (cJSON_GetObjectItemCaseSensitive(o, k) != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(o, k, v);
	else
		cJSON_AddItemToObject(o, k, v);
}

static cJSON *log_field(cJSON *tpl, const char *k, bool array)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(tpl, k);

	if (array ? !cJSON_IsArray(v) : !cJSON_IsNumber(v)) {
		v = array ? cJSON_CreateArray() : cJSON_CreateNumber(0);
		put_item(tpl, k, v);
	}
	return v;
}

static tpl_log log_of(cJSON *tpl)
{
	tpl_log l = {log_field(tpl, "_log", true), log_field(tpl, "_log_dropped", false),
		     log_field(tpl, "_log_kept", false), log_field(tpl, "_log_bytes", false)};

	return l;
}

static void num_add(cJSON *n, double d)
{
	cJSON_SetNumberValue(n, n->valuedouble + d);
}

/* Drops the oldest lines while the log is over its bounds (the newest
 * line stays, whatever its size: it is under TPL_LINE_MAX). */
static void log_trim(tpl_log *l)
{
	while (l->lines->child != NULL && l->lines->child->next != NULL &&
	       (l->kept->valuedouble > TPL_LOG_MAX_LINES || l->bytes->valuedouble > TPL_LOG_MAX_BYTES)) {
		cJSON *old = cJSON_DetachItemViaPointer(l->lines, l->lines->child);

		num_add(l->bytes, -(double)strlen(old->valuestring));
		num_add(l->kept, -1);
		num_add(l->dropped, 1);
		cJSON_Delete(old);
	}
}

/* One line (n bytes of s, cut at TPL_LINE_MAX - 1 or a NUL) at the end. */
static void log_push(tpl_log *l, const char *s, size_t n)
{
	char buf[TPL_LINE_MAX];
	cJSON *str;

	n = strnlen(s, n < sizeof(buf) ? n : sizeof(buf) - 1);
	memcpy(buf, s, n);
	buf[n] = '\0';
	str = cJSON_CreateString(buf);
	if (str == NULL)
		return;
	cJSON_AddItemToArray(l->lines, str);
	num_add(l->kept, 1);
	num_add(l->bytes, (double)n);
	log_trim(l);
}

void mock_template_log(cJSON *tpl, const char *line)
{
	tpl_log l = log_of(tpl);

	log_push(&l, line, strlen(line));
}

void mock_template_log_add(cJSON *tpl, const char *text, size_t len)
{
	tpl_log l = log_of(tpl);
	const char *p = text, *end = text + len;
	size_t lines = 0, skip;

	for (const char *q = p; q < end && (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
		lines++;
	/* more lines than the log keeps: the first would go at once */
	skip = lines > TPL_LOG_MAX_LINES ? lines - TPL_LOG_MAX_LINES : 0;
	num_add(l.dropped, (double)skip);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl != NULL ? nl : end) - p);

		if (skip > 0)
			skip--;
		else
			log_push(&l, p, n);
		p += n + 1;
	}
}

void mock_template_set_status(mock_model *m, cJSON *tpl, const char *status, double size_bytes)
{
	put_item(tpl, "status", cJSON_CreateString(status));
	if (strcmp(status, "ready") == 0) {
		char ts[40];

		mock_rfc3339(m, mock_now(m), ts, sizeof(ts));
		put_item(tpl, "built_at", cJSON_CreateString(ts));
		put_item(tpl, "ext4_size_bytes", cJSON_CreateNumber(size_bytes));
	}
}

void mock_template_set_bytes(cJSON *tpl, double bytes)
{
	put_item(tpl, "ext4_size_bytes", cJSON_CreateNumber(bytes));
}

cJSON *mock_template_record(const cJSON *tpl)
{
	cJSON *o = cJSON_CreateObject(), *lines = cJSON_CreateArray();
	const cJSON *it, *log = cJSON_GetObjectItemCaseSensitive(tpl, "_log");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(tpl, "_log_dropped");
	double dropped = cJSON_IsNumber(d) ? d->valuedouble : 0;
	size_t n = 0;

	for (it = tpl->child; it != NULL; it = it->next) {
		if (strncmp(it->string, "_log", 4) != 0)
			cJSON_AddItemToObject(o, it->string, cJSON_Duplicate(it, true));
	}
	/* the last lines, walked back from the end (the head's prev) */
	it = cJSON_IsArray(log) && log->child != NULL ? log->child->prev : NULL;
	while (it != NULL && n < TPL_LOG_DURABLE_LINES) {
		char buf[TPL_LOG_DURABLE_LINE_MAX];

		snprintf(buf, sizeof(buf), "%s", cJSON_IsString(it) ? it->valuestring : "");
		cJSON_InsertItemInArray(lines, 0, cJSON_CreateString(buf));
		n++;
		it = it != log->child ? it->prev : NULL;
	}
	dropped += (double)cJSON_GetArraySize(log) - (double)n;
	cJSON_AddItemToObject(o, "_log", lines);
	cJSON_AddNumberToObject(o, "_log_dropped", dropped);
	return o;
}

/* A log read back from a state record (damaged or hostile: anything but
 * strings goes) made a log as log_push keeps it: bounded, counted. */
static void log_restore(cJSON *tpl)
{
	cJSON *old = cJSON_DetachItemFromObjectCaseSensitive(tpl, "_log");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(tpl, "_log_dropped");
	double dropped = cJSON_IsNumber(d) && d->valuedouble >= 0 && d->valuedouble <= 1e15 ? d->valuedouble : 0;
	tpl_log l;
	const cJSON *it;

	cJSON_DeleteItemFromObjectCaseSensitive(tpl, "_log_kept");
	cJSON_DeleteItemFromObjectCaseSensitive(tpl, "_log_bytes");
	put_item(tpl, "_log_dropped", cJSON_CreateNumber(dropped));
	l = log_of(tpl);
	for (it = cJSON_IsArray(old) ? old->child : NULL; it != NULL; it = it->next) {
		if (cJSON_IsString(it))
			log_push(&l, it->valuestring, strlen(it->valuestring));
	}
	cJSON_Delete(old);
}

void mock_template_after_restore(mock_tenant *t)
{
	cJSON *tpl;

	cJSON_ArrayForEach(tpl, t->templates) {
		log_restore(tpl);
		if (mock_template_done(tpl))
			continue;
		/* its thread, cell and steps were the old process's */
		mock_template_log(tpl, "build failed: the mock restarted during the build (a build does not "
				       "survive a restart: its cell and steps were the stopped mock's); "
				       "create the template again");
		put_item(tpl, "status", cJSON_CreateString("failed"));
	}
}

bool mock_template_done(const cJSON *tpl)
{
	const char *st = model_str(tpl, "status");

	return st != NULL && (strcmp(st, "ready") == 0 || strcmp(st, "failed") == 0);
}

static void log_out(const char *line, bool ndjson, sbx_strbuf *out)
{
	if (ndjson) {
		sbx_strbuf_puts(out, "{\"level\":\"info\",\"attempt\":1,\"line\":");
		json_escape(out, line, strlen(line));
		sbx_strbuf_puts(out, "}\n");
	} else {
		sbx_strbuf_puts(out, line);
		sbx_strbuf_puts(out, "\n");
	}
}

static size_t num_of(const cJSON *tpl, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(tpl, k);

	return cJSON_IsNumber(v) && v->valuedouble > 0 ? (size_t)v->valuedouble : 0;
}

size_t mock_template_log_lines(const cJSON *tpl, size_t from, bool ndjson, sbx_strbuf *out)
{
	const cJSON *log = cJSON_GetObjectItemCaseSensitive(tpl, "_log");
	const cJSON *it = cJSON_IsArray(log) ? log->child : NULL;
	size_t dropped = num_of(tpl, "_log_dropped"), kept = 0, skip;

	/* a log no line went into yet (its create) has no count */
	kept = cJSON_GetObjectItemCaseSensitive(tpl, "_log_kept") != NULL ? num_of(tpl, "_log_kept")
									 : (size_t)cJSON_GetArraySize(log);
	if (from < dropped) { /* the reader missed lines: it is told how many */
		char mark[320];

		snprintf(mark, sizeof(mark),
			 "[%zu earlier lines not kept: a template's log keeps its last %d lines and %d KiB, "
			 "and across a restart its last %d (mock-api/TEMPLATES.md)]",
			 dropped - from, TPL_LOG_MAX_LINES, TPL_LOG_MAX_BYTES / 1024, TPL_LOG_DURABLE_LINES);
		log_out(mark, ndjson, out);
		from = dropped;
	}
	if (from >= dropped + kept)
		return dropped + kept;
	/* a follower wants the newest lines: walked back from the end */
	skip = from - dropped;
	if (it != NULL && kept - skip < skip) {
		it = log->child->prev;
		for (size_t k = 1; k < kept - skip; k++)
			it = it->prev;
	} else {
		for (size_t k = 0; it != NULL && k < skip; k++)
			it = it->next;
	}
	for (; it != NULL; it = it->next) {
		if (cJSON_IsString(it))
			log_out(it->valuestring, ndjson, out);
	}
	return dropped + kept;
}

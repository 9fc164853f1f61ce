/* settings: the mock's run-time settings (mock_settings) in and out — from
 * the start configuration, from a JSON object (PUT /_mock/settings and a
 * scenario's "settings"), and as the JSON view GET /_mock/settings shows.
 * Validates everything before it changes anything. Knows no HTTP; never
 * takes the model lock itself (callers hold it where the functions say). */
#define _GNU_SOURCE
#include "ops/settings.h"

#include "ops/core.h"
#include "ops/rootfs.h"
#include "internet/inet_book.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sbx_mock_parse_timing(const char *timing, double *scale, sbx_err *err)
{
	char *end = NULL;
	double v;

	if (timing == NULL || strcmp(timing, "instant") == 0) {
		*scale = 0;
		return 0;
	}
	if (strcmp(timing, "realistic") == 0) {
		*scale = 1;
		return 0;
	}
	errno = 0;
	v = strtod(timing, &end);
	/* strtod also reads "nan", "inf" and hex: only a finite decimal in
	 * range may become a delay factor */
	if (errno != 0 || end == timing || *end != '\0' || !isfinite(v) || v < 0 || v > 1000) {
		sbx_err_set(err, "timing \"%s\": expected instant, realistic or a scale factor 0-1000",
			    timing);
		return -1;
	}
	*scale = v;
	return 0;
}

int mock_settings_from_config(const sbx_mock_config *cfg, mock_settings *set, sbx_err *err)
{
	memset(set, 0, sizeof(*set));
	set->sandbox_cap = cfg->sandbox_cap;
	set->cap_status = cfg->cap_status;
	snprintf(set->cap_code, sizeof(set->cap_code), "%s",
		 cfg->cap_code != NULL ? cfg->cap_code : "");
	set->credit = true;
	set->host_rule_mode = cfg->host_rule_mode;
	set->accept_any_key = cfg->accept_any_key;
	set->max_egress_rules = cfg->max_egress_rules;
	set->ready = true;
	set->tpl_build_timeout_s = MOCK_TPL_BUILD_TIMEOUT_S;
	set->tpl_build_disk_mib = MOCK_TPL_BUILD_DISK_MIB;
	set->tpl_build_mem_mib = MOCK_TPL_BUILD_MEM_MIB;
	set->tpl_build_cap = cfg->template_build_cap;
	set->tpl_build_cap_global = cfg->template_build_cap_global;
	set->tpl_cap = cfg->template_cap;
	set->tpl_storage_mib = cfg->template_storage_mib;
	set->tpl_storage_mib_global = cfg->template_storage_mib_global;
	snprintf(set->region, sizeof(set->region), "%s",
		 cfg->region != NULL ? cfg->region : "local");
	if (sbx_mock_parse_timing(cfg->timing, &set->timing_scale, err) != 0)
		return -1;
	if (cfg->cap_status < 400 || cfg->cap_status > 599) {
		sbx_err_set(err, "cap status %u: expected an HTTP error status 400-599",
			    cfg->cap_status);
		return -1;
	}
	return 0;
}

/* The keys a PUT may change; every other key of the view is read-only. */
static const char *const settable[] = {
	"sandbox_cap", "cap_status", "cap_code", "credit", "host_rule_mode", "accept_any_key",
	"timing", "max_egress_rules", "region", "ready", "exec_heartbeat_ms", "guest_disk_max_mib",
	"template_build_timeout_s", "template_build_disk_mib", "template_build_mem_mib",
	"template_build_cap", "template_build_cap_global", "template_cap", "template_storage_mib",
	"template_storage_mib_global",
};

/* What the view reports about the mock itself, fixed at start (guest mode,
 * egress enforcement): a PUT cannot change it. */
static void add_read_only(const sbx_mock *mock, cJSON *o)
{
	cJSON_AddStringToObject(o, "guest_mode", mock_guest_mode_name(mock->gmode));
	cJSON_AddBoolToObject(o, "contained", mock->gmode == GUEST_CONTAINED);
	if (mock->gmode == GUEST_CONTAINED)
		cJSON_AddStringToObject(o, "cgroups", mock->cgroups_note);
	/* whether guests' connections meet their egress rules in the kernel
	 * (INTERNET.md), and why not */
	cJSON_AddBoolToObject(o, "egress_enforced", mock->inet != NULL);
	cJSON_AddStringToObject(o, "egress", mock->egress_note);
	/* the opt-in way out: loud wherever the settings are read */
	if (mock->inet_book != NULL && mock_inet_upstream_any(mock->inet_book))
		cJSON_AddStringToObject(o, "internet_upstream", mock_inet_upstream_text(mock->inet_book));
	else
		cJSON_AddNullToObject(o, "internet_upstream");
	/* each contained sandbox has its own PID namespace */
	cJSON_AddBoolToObject(o, "guest_pid_namespace", mock->gmode == GUEST_CONTAINED);
	/* which root each rootfs name's guests get (IMAGES.md) */
	cJSON_AddItemToObject(o, "rootfs", mock_rootfs_backing_view(mock));
	cJSON_AddStringToObject(o, "rootfs_note", mock->rootfs_note);
}

/* "sandbox_cap, cap_status, ...", for the message naming an unknown key. */
static void settable_list(char *buf, size_t cap)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(settable) / sizeof(settable[0]) && o < cap; i++) {
		int k = snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", settable[i]);

		if (k < 0)
			break;
		o += (size_t)k;
	}
}

static bool is_settable(const char *k)
{
	for (size_t i = 0; i < sizeof(settable) / sizeof(settable[0]); i++) {
		if (strcmp(k, settable[i]) == 0)
			return true;
	}
	return false;
}

/* Every key of b is a setting: a mistyped one ("timming") would otherwise
 * do nothing without a word. A read-only key is accepted only with the
 * value the view shows, so GET -> edit -> PUT of the whole view works. */
static int keys_check(const sbx_mock *mock, const cJSON *b, sbx_err *err)
{
	cJSON *ro = cJSON_CreateObject();
	int rc = 0;

	if (ro == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	add_read_only(mock, ro);
	for (const cJSON *it = b->child; it != NULL && rc == 0; it = it->next) {
		const cJSON *now = cJSON_GetObjectItemCaseSensitive(ro, it->string);

		if (is_settable(it->string))
			continue;
		rc = -1;
		if (now == NULL) {
			char list[512];

			settable_list(list, sizeof(list));
			sbx_err_set(err, "unknown setting \"%.64s\" (settable: %s)", it->string, list);
		} else if (!cJSON_Compare(it, now, true)) {
			char *shown = cJSON_PrintUnformatted(now);

			/* it reports how this mock was started */
			sbx_err_set(err, "\"%s\" is read-only (this mock: %.100s); only that value may be sent back",
				    it->string, shown != NULL ? shown : "?");
			free(shown);
		} else {
			rc = 0;
		}
	}
	cJSON_Delete(ro);
	return rc;
}

cJSON *mock_settings_view(sbx_mock *mock)
{
	const mock_settings *s = &mock->model->set;
	cJSON *o = cJSON_CreateObject();
	char timing[32];

	if (s->timing_scale == 0)
		snprintf(timing, sizeof(timing), "instant");
	else if (s->timing_scale == 1)
		snprintf(timing, sizeof(timing), "realistic");
	else
		snprintf(timing, sizeof(timing), "%g", s->timing_scale);
	cJSON_AddNumberToObject(o, "sandbox_cap", s->sandbox_cap);
	cJSON_AddNumberToObject(o, "cap_status", s->cap_status);
	cJSON_AddStringToObject(o, "cap_code", s->cap_code);
	cJSON_AddBoolToObject(o, "credit", s->credit);
	cJSON_AddStringToObject(o, "host_rule_mode",
				s->host_rule_mode == SBX_HOST_RULES_DOCUMENTED ? "documented" : "observed");
	cJSON_AddBoolToObject(o, "accept_any_key", s->accept_any_key);
	cJSON_AddStringToObject(o, "timing", timing);
	cJSON_AddNumberToObject(o, "max_egress_rules", (double)s->max_egress_rules);
	cJSON_AddStringToObject(o, "region", s->region);
	cJSON_AddBoolToObject(o, "ready", s->ready);
	cJSON_AddNumberToObject(o, "template_build_timeout_s", s->tpl_build_timeout_s);
	cJSON_AddNumberToObject(o, "template_build_disk_mib", s->tpl_build_disk_mib);
	cJSON_AddNumberToObject(o, "template_build_mem_mib", s->tpl_build_mem_mib);
	cJSON_AddNumberToObject(o, "template_build_cap", s->tpl_build_cap);
	cJSON_AddNumberToObject(o, "template_build_cap_global", s->tpl_build_cap_global);
	cJSON_AddNumberToObject(o, "template_cap", s->tpl_cap);
	cJSON_AddNumberToObject(o, "template_storage_mib", s->tpl_storage_mib);
	cJSON_AddNumberToObject(o, "template_storage_mib_global", s->tpl_storage_mib_global);
	cJSON_AddNumberToObject(o, "exec_heartbeat_ms", atomic_load(&mock->hb_ms));
	cJSON_AddNumberToObject(o, "guest_disk_max_mib", atomic_load(&mock->disk_max_mib));
	add_read_only(mock, o);
	return o;
}

static int num_setting(const cJSON *b, const char *k, double lo, double hi, double *v, sbx_err *err)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(b, k);

	if (it == NULL)
		return 0;
	/* every numeric setting is a count or a status: 1.25 is refused, not
	 * cut to 1 */
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < lo ||
	    it->valuedouble > hi || it->valuedouble != floor(it->valuedouble)) {
		sbx_err_set(err, "%s must be a whole number in [%g, %g]", k, lo, hi);
		return -1;
	}
	*v = it->valuedouble;
	return 1;
}

/* A template build's time, disk and memory limits (TEMPLATES.md; a
 * build takes the values of its start), the caps on concurrent builds and
 * on the templates kept and their storage (checked at each create; 0
 * refuses every build). */
static int tpl_limits(const cJSON *b, mock_settings *s, sbx_err *err)
{
	static const struct {
		const char *key;
		double lo, hi;
	} lim[] = {{"template_build_timeout_s", 1, 86400},
		   {"template_build_disk_mib", 16, 1024 * 1024},
		   {"template_build_mem_mib", 32, 1024 * 1024},
		   {"template_build_cap", 0, 1000},
		   {"template_build_cap_global", 0, 1000},
		   {"template_cap", 0, MOCK_TPL_CAP_MAX},
		   {"template_storage_mib", 0, MOCK_TPL_STORAGE_MIB_MAX},
		   {"template_storage_mib_global", 0, MOCK_TPL_STORAGE_MIB_MAX}};
	unsigned *dst[] = {&s->tpl_build_timeout_s, &s->tpl_build_disk_mib, &s->tpl_build_mem_mib,
			   &s->tpl_build_cap,	    &s->tpl_build_cap_global, &s->tpl_cap,
			   &s->tpl_storage_mib,	    &s->tpl_storage_mib_global};
	double v = 0;

	for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
		int rc = num_setting(b, lim[i].key, lim[i].lo, lim[i].hi, &v, err);

		if (rc < 0)
			return -1;
		if (rc > 0)
			*dst[i] = (unsigned)v;
	}
	return 0;
}

static int bool_setting(const cJSON *b, const char *k, bool *v, sbx_err *err)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(b, k);

	if (it == NULL)
		return 0;
	if (!cJSON_IsBool(it)) {
		sbx_err_set(err, "%s must be a boolean", k);
		return -1;
	}
	*v = cJSON_IsTrue(it);
	return 1;
}

static int str_setting(const cJSON *b, const char *k, char *buf, size_t cap, sbx_err *err)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(b, k);

	if (it == NULL)
		return 0;
	if (!cJSON_IsString(it) || strlen(it->valuestring) >= cap || it->valuestring[0] == '\0') {
		sbx_err_set(err, "%s must be a non-empty string shorter than %zu bytes", k, cap);
		return -1;
	}
	snprintf(buf, cap, "%s", it->valuestring);
	return 1;
}

/* b's settings over s and *hb; nothing outside them changes, so a caller
 * can check a body without applying it. */
/* A setting given twice is ambiguous (which one counts?): refused, never
 * the first or the last silently. */
static bool duplicate_key(const cJSON *b, sbx_err *err)
{
	for (const cJSON *it = b->child; it != NULL; it = it->next) {
		for (const cJSON *prev = b->child; prev != it; prev = prev->next) {
			if (it->string != NULL && prev->string != NULL && strcmp(it->string, prev->string) == 0) {
				sbx_err_set(err, "settings: \"%.64s\" is given twice", it->string);
				return true;
			}
		}
	}
	return false;
}

/* The settings kept outside the model (atomics of the mock). */
typedef struct mock_atomic_set {
	int hb_ms;
	unsigned disk_max_mib;
} mock_atomic_set;

static int settings_parse(const cJSON *b, mock_settings *out, mock_atomic_set *at, sbx_err *err)
{
	mock_settings s = *out;
	mock_atomic_set a = *at;
	double v = 0;
	char mode[16] = "";
	const cJSON *timing = cJSON_GetObjectItemCaseSensitive(b, "timing");

	if (!cJSON_IsObject(b)) {
		sbx_err_set(err, "settings must be a JSON object");
		return -1;
	}
	if (duplicate_key(b, err))
		return -1;

	if (num_setting(b, "sandbox_cap", 0, 1e6, &v, err) < 0)
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(b, "sandbox_cap") != NULL)
		s.sandbox_cap = (unsigned)v;
	if (num_setting(b, "cap_status", 400, 599, &v, err) < 0)
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(b, "cap_status") != NULL)
		s.cap_status = (unsigned)v;
	if (num_setting(b, "max_egress_rules", 1, 1e6, &v, err) < 0)
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(b, "max_egress_rules") != NULL)
		s.max_egress_rules = (size_t)v;
	if (num_setting(b, "exec_heartbeat_ms", 10, 600000, &v, err) < 0)
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(b, "exec_heartbeat_ms") != NULL)
		a.hb_ms = (int)v;
	if (tpl_limits(b, &s, err) != 0)
		return -1;
	if (num_setting(b, "guest_disk_max_mib", 0, 16 * 1024 * 1024, &v, err) < 0)
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(b, "guest_disk_max_mib") != NULL)
		a.disk_max_mib = (unsigned)v;
	if (str_setting(b, "cap_code", s.cap_code, sizeof(s.cap_code), err) < 0 ||
	    str_setting(b, "region", s.region, sizeof(s.region), err) < 0 ||
	    bool_setting(b, "credit", &s.credit, err) < 0 ||
	    bool_setting(b, "accept_any_key", &s.accept_any_key, err) < 0 ||
	    bool_setting(b, "ready", &s.ready, err) < 0)
		return -1;
	if (str_setting(b, "host_rule_mode", mode, sizeof(mode), err) < 0)
		return -1;
	if (mode[0] != '\0') {
		if (strcmp(mode, "documented") == 0) {
			s.host_rule_mode = SBX_HOST_RULES_DOCUMENTED;
		} else if (strcmp(mode, "observed") == 0) {
			s.host_rule_mode = SBX_HOST_RULES_OBSERVED;
		} else {
			sbx_err_set(err, "host_rule_mode must be \"documented\" or \"observed\"");
			return -1;
		}
	}
	if (timing != NULL) {
		char buf[32];
		const char *text = buf;

		/* a string is parsed whole: a copy cut to the buffer would turn
		 * "0000...0<junk>" into an accepted 0 */
		if (cJSON_IsNumber(timing))
			snprintf(buf, sizeof(buf), "%g", timing->valuedouble);
		else if (cJSON_IsString(timing))
			text = timing->valuestring;
		else
			buf[0] = '\0';
		if (sbx_mock_parse_timing(text, &s.timing_scale, err) != 0)
			return -1;
	}
	*out = s;
	*at = a;
	return 0;
}

int mock_settings_check(const sbx_mock *mock, const cJSON *b, sbx_err *err)
{
	mock_settings s;
	mock_atomic_set a = {0, 0};

	memset(&s, 0, sizeof(s));
	if (settings_parse(b, &s, &a, err) != 0)
		return -1;
	return keys_check(mock, b, err);
}

int mock_settings_apply(sbx_mock *mock, const cJSON *b, sbx_err *err)
{
	mock_settings s = mock->model->set;
	mock_atomic_set a = {atomic_load(&mock->hb_ms), atomic_load(&mock->disk_max_mib)};

	if (settings_parse(b, &s, &a, err) != 0 || keys_check(mock, b, err) != 0)
		return -1;
	mock->model->set = s;
	atomic_store(&mock->hb_ms, a.hb_ms);
	atomic_store(&mock->disk_max_mib, a.disk_max_mib);
	return 0;
}

/* gate_fuzzer: drives the Langflow gate library (settings parsing, the four
 * rules, blank code, plugin resolution, the JSON front door) from fuzzer
 * bytes and aborts when an invariant breaks, not only on crashes: the gate
 * never says "run" when a rule forbids it, parsed settings are always in
 * range, and no unlisted, duplicated, built-in, reserved or empty plugin name
 * is ever imported.
 *
 * Input: if it starts with '{' it is a host-gate JSON request. Otherwise byte
 * 0 holds capability bits, byte 1 the timeout cap, and the rest is lines:
 * "NAME=value" environment entries, "@code TEXT" (the code, one line),
 * "@iso TEXT" (isolation string), "@ep NAME|DIST" (an entry point; no '|'
 * means no distribution). Lines end at '\n' or NUL. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/gate.h"

#define MAX_LINES 256

#define CHECK(cond, ...)                                                \
	do {                                                            \
		if (!(cond)) {                                          \
			fprintf(stderr, "gate_fuzzer invariant: " __VA_ARGS__); \
			fprintf(stderr, "\n");                          \
			abort();                                        \
		}                                                       \
	} while (0)

typedef struct input {
	char *buf;                     /* NUL-separated copy of the data */
	const char *env[MAX_LINES];
	size_t n_env;
	sbx_entry_point eps[MAX_LINES];
	size_t n_eps;
	const char *code;
	sbx_gate_caps caps;
} input;

static bool is_ascii_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Bytes that no white-space definition includes: printable ASCII. */
static bool has_visible_ascii(const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s > ' ' && *s < 0x7f)
			return true;
	}
	return false;
}

static void parse_line(input *in, char *line)
{
	if (strncmp(line, "@code ", 6) == 0) {
		in->code = line + 6;
	} else if (strncmp(line, "@iso ", 5) == 0) {
		in->caps.isolation = line + 5;
	} else if (strncmp(line, "@ep ", 4) == 0 && in->n_eps < MAX_LINES) {
		char *bar = strchr(line + 4, '|');
		if (bar != NULL)
			*bar = '\0';
		in->eps[in->n_eps].name = line + 4;
		in->eps[in->n_eps].distribution = bar != NULL ? bar + 1 : NULL;
		in->n_eps++;
	} else if (in->n_env < MAX_LINES) {
		in->env[in->n_env++] = line;
	}
}

static int split_input(input *in, const uint8_t *data, size_t size)
{
	memset(in, 0, sizeof *in);
	in->code = "print(1)";
	if (size < 2)
		return -1;
	uint8_t bits = data[0];
	in->caps.isolation = (bits & 3) == 0 ? "hardware-virtualized" : ((bits & 3) == 1 ? NULL : "process");
	in->caps.supports_deny_all_egress = (bits & 4) != 0;
	in->caps.supports_domain_allowlist = (bits & 8) != 0;
	in->caps.has_max_timeout = (bits & 16) != 0;
	in->caps.max_timeout_seconds = (int64_t)data[1] * ((bits & 32) ? 2 : 1) - ((bits & 64) ? 200 : 0);
	in->buf = malloc(size - 1);
	if (in->buf == NULL)
		return -1;
	memcpy(in->buf, data + 2, size - 2);
	in->buf[size - 2] = '\0';
	char *line = in->buf;
	for (size_t i = 0; i < size - 2; i++) {
		if (in->buf[i] == '\n' || in->buf[i] == '\0') {
			in->buf[i] = '\0';
			parse_line(in, line);
			line = in->buf + i + 1;
		}
	}
	parse_line(in, line);
	return 0;
}

static void check_settings(const sbx_gate_settings *s)
{
	CHECK(s->timeout_seconds >= 1 && s->timeout_seconds <= 300, "timeout %d out of 1..300", s->timeout_seconds);
	CHECK(s->memory_mb >= 128, "memory %lld below 128", (long long)s->memory_mb);
	CHECK(s->backend != NULL && s->backend[0] != '\0', "backend empty");
	for (const char *p = s->backend; *p != '\0'; p++)
		CHECK(!(*p >= 'A' && *p <= 'Z'), "backend `%s` not lower-cased", s->backend);
	CHECK(!is_ascii_space(s->backend[0]), "backend `%s` not trimmed", s->backend);
	for (size_t i = 0; i < s->n_allowed_domains; i++) {
		const char *d = s->allowed_domains[i];
		CHECK(d[0] != '\0' && !is_ascii_space(d[0]) && !is_ascii_space(d[strlen(d) - 1]),
		      "domain `%s` blank or untrimmed", d);
		CHECK(strchr(d, ',') == NULL, "domain `%s` holds a comma", d);
	}
	for (size_t i = 0; i < s->n_backend_plugins; i++) {
		const char *p = s->backend_plugins[i];
		CHECK(p[0] != '\0' && strchr(p, ',') == NULL, "plugin name `%s` blank or holds a comma", p);
	}
}

static void check_decision(const sbx_gate_settings *s, const sbx_gate_caps *caps, const char *code,
			   const sbx_gate_decision *d)
{
	bool blank = sbx_gate_code_is_blank(code, strlen(code));
	if (strcmp(s->backend, "none") == 0) { /* Langflow's default: in-process, no gate */
		CHECK(d->verdict == SBX_GATE_IN_PROCESS, "backend none was gated (verdict %d)", (int)d->verdict);
		return;
	}
	CHECK(d->verdict != SBX_GATE_IN_PROCESS, "backend `%s` ran in-process", s->backend);
	if (has_visible_ascii(code))
		CHECK(!blank, "code with visible characters called blank");
	if (code[0] == '\0')
		CHECK(blank, "empty code not blank");
	if (blank) {
		CHECK(d->verdict == SBX_GATE_BLANK, "blank code did not short-cut the gate");
		return;
	}
	const char *iso = caps->isolation != NULL ? caps->isolation : "none";
	if (d->verdict == SBX_GATE_RUN) {
		CHECK(strcmp(iso, "hardware-virtualized") == 0, "ran with isolation `%s`", iso);
		CHECK(s->allow_network || caps->supports_deny_all_egress, "ran with network off and no deny-all");
		CHECK(s->n_allowed_domains == 0 || caps->supports_domain_allowlist, "ran with domains and no allowlist");
		CHECK(!caps->has_max_timeout || s->timeout_seconds <= caps->max_timeout_seconds,
		      "ran with timeout %d over cap %lld", s->timeout_seconds, (long long)caps->max_timeout_seconds);
		return;
	}
	CHECK(d->verdict == SBX_GATE_REFUSE, "unknown verdict");
	CHECK(sbx_gate_rule_violated(d->rule, s, caps), "refused by rule %d that holds", (int)d->rule);
	for (int r = SBX_GATE_RULE_ISOLATION; r < (int)d->rule; r++)
		CHECK(!sbx_gate_rule_violated((sbx_gate_rule)r, s, caps), "rule %d skipped for %d", r, (int)d->rule);
	CHECK(d->message[0] != '\0', "refusal without message");
	if (d->rule != SBX_GATE_RULE_ISOLATION)
		CHECK(strstr(d->message, d->variable) != NULL, "message `%s` does not name %s", d->message,
		      d->variable);
}

static bool in_list(const char *name, char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(list[i], name) == 0)
			return true;
	}
	return false;
}

/* ASCII-trimmed, lower-cased equality: sound under-approximation of the
 * library's grouping (see the comment in the report / GATE.md). */
static bool ascii_norm_equal(const char *raw, const char *norm)
{
	if (raw == NULL)
		raw = "";
	while (is_ascii_space(*raw))
		raw++;
	size_t len = strlen(raw);
	while (len > 0 && is_ascii_space(raw[len - 1]))
		len--;
	if (len != strlen(norm))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = raw[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != norm[i])
			return false;
	}
	return true;
}

static void check_plan(const input *in, char *const *allow, size_t n_allow, const sbx_plugin_plan *plan)
{
	CHECK(plan->n_loaded == plan->n_imported, "loaded %zu but imported %zu", plan->n_loaded, plan->n_imported);
	size_t accounted = plan->n_loaded;
	for (size_t i = 0; i < plan->n_loaded; i++) {
		const char *name = plan->loaded[i];
		CHECK(in_list(name, allow, n_allow), "imported unlisted `%s`", name);
		CHECK(name[0] != '\0', "imported an empty name");
		CHECK(strcmp(name, "exec-sandbox") != 0, "imported the built-in name");
		CHECK(strcmp(name, "none") != 0, "imported the reserved name");
		size_t same = 0;
		for (size_t k = 0; k < in->n_eps; k++)
			same += ascii_norm_equal(in->eps[k].name, name) ? 1 : 0;
		CHECK(same <= 1, "imported `%s` published by %zu entry points", name, same);
	}
	for (size_t i = 0; i < plan->n_refused; i++) {
		const sbx_plugin_refusal *r = &plan->refused[i];
		accounted += r->n_distributions;
		CHECK(!in_list(r->name, plan->loaded, plan->n_loaded), "`%s` both loaded and refused", r->name);
		CHECK(r->message != NULL && r->message[0] != '\0', "refusal without message");
		if (r->reason == SBX_PLUGIN_DUPLICATE)
			CHECK(r->n_distributions >= 2, "duplicate with %zu distributions", r->n_distributions);
	}
	/* lfx 1.13 enumerates nothing when the allow-list is empty: then the
	 * plan must be empty; otherwise every entry point is loaded or refused. */
	size_t expected = n_allow > 0 ? in->n_eps : 0;
	CHECK(accounted == expected, "%zu entry points, %zu accounted for (allow-list of %zu)", in->n_eps, accounted,
	      n_allow);
}

static void run_structured(const uint8_t *data, size_t size)
{
	input in;
	if (split_input(&in, data, size) != 0)
		return;
	sbx_gate_settings s;
	sbx_gate_setting_error e;
	if (sbx_gate_settings_parse(&s, in.env, in.n_env, &e) == 0) {
		check_settings(&s);
		sbx_gate_decision d;
		sbx_gate_decide(&s, &in.caps, in.code, strlen(in.code), &d);
		check_decision(&s, &in.caps, in.code, &d);
		sbx_gate_settings_free(&s);
	} else if (e.variable != NULL) {
		CHECK(strncmp(e.message, e.variable, strlen(e.variable)) == 0, "error `%s` does not name %s",
		      e.message, e.variable);
		CHECK(strstr(e.message, "accepted: ") != NULL, "error `%s` does not say what is accepted", e.message);
	}
	char **allow = NULL;
	size_t n_allow = 0;
	if (sbx_gate_parse_plugin_allowlist(in.env, in.n_env, &allow, &n_allow) == 0) {
		sbx_plugin_plan plan;
		if (sbx_gate_plan_plugins(in.eps, in.n_eps, allow, n_allow, &plan, NULL) == 0) {
			check_plan(&in, allow, n_allow, &plan);
			sbx_plugin_plan_free(&plan);
		}
		for (size_t i = 0; i < n_allow; i++)
			free(allow[i]);
		free(allow);
	}
	free(in.buf);
}

static void run_json(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (text == NULL)
		return;
	memcpy(text, data, size);
	text[size] = '\0';
	cJSON *req = cJSON_Parse(text);
	free(text);
	if (req == NULL)
		return;
	sbx_err err = {{0}};
	cJSON *res = sbx_gate_answer(req, &err);
	if (res == NULL) {
		CHECK(err.msg[0] != '\0', "rejected request without a reason");
		goto out_free_req;
	}
	const cJSON *decision = cJSON_GetObjectItem(res, "decision");
	if (decision != NULL && strcmp(decision->valuestring, "run") == 0) {
		const cJSON *caps = cJSON_GetObjectItem(req, "capabilities");
		const cJSON *iso = cJSON_GetObjectItem(caps, "isolation");
		CHECK(cJSON_IsString(iso) && strcmp(iso->valuestring, "hardware-virtualized") == 0,
		      "JSON gate ran without hardware-virtualized isolation");
	}
	cJSON_Delete(res);
out_free_req:
	cJSON_Delete(req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 0 && data[0] == '{')
		run_json(data, size);
	else
		run_structured(data, size);
	return 0;
}

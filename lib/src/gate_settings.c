/* gate_settings: Langflow's sandbox settings parsed from a NAME=value list,
 * the way pydantic-settings v2 (lax mode) and the CreateOS plugin read them.
 * Never reads the process environment; never keeps pointers into `env`. */
#include "sbx/gate.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate_internal.h"
#include "sbx/strbuf.h"

#define PFX "LANGFLOW_SANDBOX_"
#define V_BACKEND PFX "BACKEND"
#define V_TIMEOUT PFX "TIMEOUT_SECONDS"
#define V_MEMORY PFX "MEMORY_MB"
#define V_NETWORK PFX "ALLOW_NETWORK"
#define V_DOMAINS PFX "ALLOWED_DOMAINS"
#define V_EMULATION PFX "ALLOW_SOFTWARE_EMULATION"
#define V_PLUGINS PFX "BACKEND_PLUGINS"
#define V_ACCEPT PFX "CREATEOS_ACCEPT_EGRESS_EXCEPTIONS"
#define V_KEY "CREATEOS_SANDBOX_API_KEY"
#define V_KEY_FALLBACK "CREATEOS_API_KEY"

#define INT_MAX_DIGITS 4300 /* pydantic-core: longer strings are int_parsing_size */

static const char ACCEPT_BOOL[] =
	"a boolean: 1, on, t, true, y, yes or 0, off, f, false, n, no (any case, nothing around it)";

/* The last "NAME=value" for name, as os.environ would keep it, or NULL. */
static const char *env_get(const char *const *env, size_t n, const char *name)
{
	size_t name_len = strlen(name);
	const char *found = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *e = env[i];
		if (e == NULL)
			continue;
		if (strncmp(e, name, name_len) == 0 && e[name_len] == '=')
			found = e + name_len + 1;
	}
	return found;
}

static const char *type_message(const char *type)
{
	if (strcmp(type, "int_parsing") == 0)
		return "Input should be a valid integer, unable to parse string as an integer";
	if (strcmp(type, "int_parsing_size") == 0)
		return "Unable to parse input string as an integer, exceeded maximum size";
	if (strcmp(type, "bool_parsing") == 0)
		return "Input should be a valid boolean, unable to interpret input";
	if (strcmp(type, "string_unicode") == 0)
		return "Input should be a valid string, unable to parse raw data as a unicode string";
	return "Input is invalid";
}

/* Fills err like pydantic's line for one field error, plus what is accepted. */
static void set_error(sbx_gate_setting_error *err, const char *variable, const char *type, const char *what,
		      const char *value, const char *accepted)
{
	if (err == NULL)
		return;
	err->variable = variable;
	err->type = type;
	sbx_strbuf sb = SBX_STRBUF_INIT;
	sbx_strbuf_printf(&sb, "%s: %s [type=%s, input_value=", variable, what, type);
	sbx_gate_py_repr(&sb, value, strlen(value), true);
	sbx_strbuf_printf(&sb, ", input_type=str]; accepted: %s", accepted);
	/* Messages are capped at SBX_ERR_MAX; the repr is already short. */
	const char *text = sb.oom ? "out of memory" : sbx_strbuf_str(&sb);
	size_t len = strlen(text);
	if (len >= sizeof err->message)
		len = sizeof err->message - 1;
	memcpy(err->message, text, len);
	err->message[len] = '\0';
	sbx_strbuf_free(&sb);
}

static bool ascii_ieq(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);
	if (alen != blen)
		return false;
	for (size_t i = 0; i < alen; i++) {
		char c = a[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != b[i])
			return false;
	}
	return true;
}

int sbx_gate_parse_bool(const char *value, bool *out, const char **type)
{
	static const char *const truthy[] = {"1", "on", "t", "true", "y", "yes"};
	static const char *const falsy[] = {"0", "off", "f", "false", "n", "no"};
	size_t len = strlen(value);
	if (!sbx_gate_utf8_valid(value, len)) {
		*type = "string_unicode";
		return -1;
	}
	/* pydantic v2 compares the whole string: no trimming. */
	for (size_t i = 0; i < 6; i++) {
		if (ascii_ieq(value, len, truthy[i])) {
			*out = true;
			return 0;
		}
		if (ascii_ieq(value, len, falsy[i])) {
			*out = false;
			return 0;
		}
	}
	*type = "bool_parsing";
	return -1;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* [+-]? D (_? D)* ('.' 0+)? over s[i..end); accumulates saturating. */
static int scan_int(const char *s, size_t i, size_t end, int64_t *out)
{
	bool negative = false;
	if (i < end && (s[i] == '+' || s[i] == '-')) {
		negative = s[i] == '-';
		i++;
	}
	if (i >= end || !is_digit(s[i]))
		return -1;
	int64_t v = 0;
	while (i < end) {
		if (s[i] == '_') {
			if (i + 1 >= end || !is_digit(s[i + 1]))
				return -1;
			i++;
		}
		if (!is_digit(s[i]))
			break;
		int d = s[i] - '0';
		v = (v > (INT64_MAX - d) / 10) ? INT64_MAX : v * 10 + d;
		i++;
	}
	if (i < end) {
		if (s[i] != '.' || i + 1 >= end)
			return -1;
		for (i++; i < end; i++) {
			if (s[i] != '0')
				return -1;
		}
	}
	*out = negative ? -v : v;
	return 0;
}

int sbx_gate_parse_int(const char *value, int64_t *out, const char **type)
{
	size_t len = strlen(value);
	if (!sbx_gate_utf8_valid(value, len)) {
		*type = "string_unicode";
		return -1;
	}
	size_t start, end;
	sbx_gate_trim(value, len, false, &start, &end);
	if (end - start > INT_MAX_DIGITS) {
		*type = "int_parsing_size";
		return -1;
	}
	if (scan_int(value, start, end, out) != 0) {
		*type = "int_parsing";
		return -1;
	}
	return 0;
}

/* Splits on ',' and keeps trimmed non-blank items (lower-cased if asked). */
static int split_list(const char *value, bool lower, char ***items, size_t *n_items)
{
	*items = NULL;
	*n_items = 0;
	size_t len = strlen(value);
	size_t pos = 0;
	while (pos <= len) {
		const char *comma = memchr(value + pos, ',', len - pos);
		size_t stop = comma != NULL ? (size_t)(comma - value) : len;
		size_t s, e;
		sbx_gate_trim(value + pos, stop - pos, true, &s, &e);
		if (e > s) {
			char **grown = realloc(*items, (*n_items + 1) * sizeof **items);
			if (grown == NULL)
				goto out_free_items;
			*items = grown;
			(*items)[*n_items] = sbx_gate_dup_range(value + pos, s, e, lower);
			if ((*items)[*n_items] == NULL)
				goto out_free_items;
			(*n_items)++;
		}
		pos = stop + 1;
	}
	return 0;
out_free_items:
	for (size_t i = 0; i < *n_items; i++)
		free((*items)[i]);
	free(*items);
	*items = NULL;
	*n_items = 0;
	return -1;
}

int sbx_gate_parse_plugin_allowlist(const char *const *env, size_t n, char ***items, size_t *n_items)
{
	const char *raw = env_get(env, n, V_PLUGINS);
	return split_list(raw != NULL ? raw : "", true, items, n_items);
}

/* A CreateOS-style variable: stripped, blank is unset. 0 ok, -1 oom. */
static int createos_env(const char *const *env, size_t n, const char *name, char **out)
{
	*out = NULL;
	const char *raw = env_get(env, n, name);
	if (raw == NULL)
		return 0;
	size_t s, e;
	sbx_gate_trim(raw, strlen(raw), true, &s, &e);
	if (e == s)
		return 0;
	*out = sbx_gate_dup_range(raw, s, e, false);
	return *out != NULL ? 0 : -1;
}

static int parse_backend(sbx_gate_settings *out, const char *const *env, size_t n, sbx_gate_setting_error *err)
{
	const char *raw = env_get(env, n, V_BACKEND);
	if (raw == NULL)
		raw = SBX_GATE_BACKEND_NONE;
	size_t len = strlen(raw);
	if (!sbx_gate_utf8_valid(raw, len)) {
		set_error(err, V_BACKEND, "string_unicode", type_message("string_unicode"), raw,
			  "a backend name (text; trimmed, lower-cased)");
		return -1;
	}
	size_t s, e;
	sbx_gate_trim(raw, len, true, &s, &e);
	if (e == s) { /* lfx 1.13 strips, lower-cases, then requires a known name: "" is none */
		set_error(err, V_BACKEND, "value_error", "Value error, a blank name is not a known sandbox backend",
			  raw, "none, exec-sandbox or the name of an installed, allow-listed plugin (trimmed, any case)");
		return -1;
	}
	out->backend = sbx_gate_dup_range(raw, s, e, true);
	return out->backend != NULL ? 0 : -2;
}

static int parse_ranged(const char *const *env, size_t n, const char *name, int64_t def, int64_t min,
			int64_t max, const char *accepted, int64_t *out, sbx_gate_setting_error *err)
{
	const char *raw = env_get(env, n, name);
	*out = def;
	if (raw == NULL)
		return 0;
	const char *type = NULL;
	int64_t v;
	if (sbx_gate_parse_int(raw, &v, &type) != 0) {
		set_error(err, name, type, type_message(type), raw, accepted);
		return -1;
	}
	char what[96];
	if (v < min) {
		snprintf(what, sizeof what, "Input should be greater than or equal to %lld", (long long)min);
		set_error(err, name, "greater_than_equal", what, raw, accepted);
		return -1;
	}
	if (v > max) {
		snprintf(what, sizeof what, "Input should be less than or equal to %lld", (long long)max);
		set_error(err, name, "less_than_equal", what, raw, accepted);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_flag(const char *const *env, size_t n, const char *name, bool *out, sbx_gate_setting_error *err)
{
	const char *raw = env_get(env, n, name);
	*out = false;
	if (raw == NULL)
		return 0;
	const char *type = NULL;
	if (sbx_gate_parse_bool(raw, out, &type) != 0) {
		set_error(err, name, type, type_message(type), raw, ACCEPT_BOOL);
		return -1;
	}
	return 0;
}

static int parse_domains(sbx_gate_settings *out, const char *const *env, size_t n, sbx_gate_setting_error *err)
{
	const char *raw = env_get(env, n, V_DOMAINS);
	if (raw == NULL)
		return 0;
	if (!sbx_gate_utf8_valid(raw, strlen(raw))) {
		set_error(err, V_DOMAINS, "string_unicode", type_message("string_unicode"), raw,
			  "a comma-separated list of domains");
		return -1;
	}
	return split_list(raw, false, &out->allowed_domains, &out->n_allowed_domains) == 0 ? 0 : -2;
}

static bool truthy_accept(const char *const *env, size_t n)
{
	static const char *const truthy[] = {"1", "true", "yes", "on", "y", "t"};
	const char *raw = env_get(env, n, V_ACCEPT);
	if (raw == NULL)
		return false;
	size_t s, e;
	sbx_gate_trim(raw, strlen(raw), true, &s, &e);
	for (size_t i = 0; i < 6; i++) {
		if (ascii_ieq(raw + s, e - s, truthy[i]))
			return true;
	}
	return false;
}

static int parse_createos(sbx_gate_settings *out, const char *const *env, size_t n)
{
	if (createos_env(env, n, V_KEY, &out->createos_api_key) != 0)
		return -1;
	if (out->createos_api_key != NULL) {
		out->createos_api_key_variable = V_KEY;
	} else {
		if (createos_env(env, n, V_KEY_FALLBACK, &out->createos_api_key) != 0)
			return -1;
		if (out->createos_api_key != NULL)
			out->createos_api_key_variable = V_KEY_FALLBACK;
	}
	if (createos_env(env, n, "CREATEOS_SANDBOX_BASE_URL", &out->createos_base_url) != 0 ||
	    createos_env(env, n, "CREATEOS_SANDBOX_SHAPE", &out->createos_shape) != 0 ||
	    createos_env(env, n, "CREATEOS_SANDBOX_ROOTFS", &out->createos_rootfs) != 0)
		return -1;
	out->createos_accept_egress_exceptions = truthy_accept(env, n);
	return 0;
}

static void set_oom(sbx_gate_setting_error *err)
{
	if (err == NULL)
		return;
	err->variable = NULL;
	err->type = NULL;
	snprintf(err->message, sizeof err->message, "settings: out of memory");
}

/* Field order is pydantic's: the first failing field is reported. */
static int parse_fields(sbx_gate_settings *out, const char *const *env, size_t n, sbx_gate_setting_error *err)
{
	int rc = parse_backend(out, env, n, err);
	if (rc != 0)
		return rc;
	int64_t v;
	if (parse_ranged(env, n, V_TIMEOUT, SBX_GATE_TIMEOUT_DEFAULT, SBX_GATE_TIMEOUT_MIN, SBX_GATE_TIMEOUT_MAX,
			 "an integer from 1 to 300", &v, err) != 0)
		return -1;
	out->timeout_seconds = (int)v;
	if (parse_ranged(env, n, V_MEMORY, SBX_GATE_MEMORY_DEFAULT, SBX_GATE_MEMORY_MIN, INT64_MAX,
			 "an integer of at least 128", &out->memory_mb, err) != 0)
		return -1;
	if (parse_flag(env, n, V_NETWORK, &out->allow_network, err) != 0)
		return -1;
	rc = parse_domains(out, env, n, err);
	if (rc != 0)
		return rc;
	if (parse_flag(env, n, V_EMULATION, &out->allow_software_emulation, err) != 0)
		return -1;
	if (sbx_gate_parse_plugin_allowlist(env, n, &out->backend_plugins, &out->n_backend_plugins) != 0)
		return -2;
	return parse_createos(out, env, n) == 0 ? 0 : -2;
}

static void free_list(char **items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(items[i]);
	free(items);
}

void sbx_gate_settings_free(sbx_gate_settings *s)
{
	if (s == NULL)
		return;
	free(s->backend);
	free_list(s->allowed_domains, s->n_allowed_domains);
	free_list(s->backend_plugins, s->n_backend_plugins);
	free(s->createos_api_key);
	free(s->createos_base_url);
	free(s->createos_shape);
	free(s->createos_rootfs);
	memset(s, 0, sizeof *s);
}

int sbx_gate_settings_parse(sbx_gate_settings *out, const char *const *env, size_t n,
			    sbx_gate_setting_error *err)
{
	memset(out, 0, sizeof *out);
	if (err != NULL)
		memset(err, 0, sizeof *err);
	int rc = parse_fields(out, env, n, err);
	if (rc == 0)
		return 0;
	if (rc == -2)
		set_oom(err);
	sbx_gate_settings_free(out);
	return -1;
}

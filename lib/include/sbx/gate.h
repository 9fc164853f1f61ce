/* gate: Langflow's sandbox gate as a library (spec/backend-conformance.md,
 * "Facts: Langflow's sandbox layer"): settings parsing from an environment,
 * the four gate rules in order, plugin-loading resolution, and a JSON front
 * door answering the `host-gate` protocol ops (`gate`, `load_plugins`).
 *
 * Everything here is a pure function of its inputs: it never reads the
 * process environment, never does I/O, never loads or runs anything. The
 * exact accepted spellings and messages are documented in lib/GATE.md and
 * exercised by fixtures/gate/. Untrusted input (env values, capability
 * strings, code) may be any bytes; nothing is read past its terminator. */
#ifndef SBX_GATE_H
#define SBX_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sbx/err.h"

#define SBX_GATE_TIMEOUT_MIN 1
#define SBX_GATE_TIMEOUT_MAX 300
#define SBX_GATE_TIMEOUT_DEFAULT 30
#define SBX_GATE_MEMORY_MIN 128
#define SBX_GATE_MEMORY_DEFAULT 192
#define SBX_GATE_ISOLATION_REQUIRED "hardware-virtualized"
#define SBX_GATE_BACKEND_NONE "none"
#define SBX_GATE_BUILTIN_BACKEND "exec-sandbox"
#define SBX_GATE_ENTRY_POINT_GROUP "lfx.sandbox_backends"

/* ---- settings ---------------------------------------------------------- */

/* Parsed settings. Owned by the caller after sbx_gate_settings_parse();
 * release with sbx_gate_settings_free(). Strings are NUL-terminated copies. */
typedef struct sbx_gate_settings {
	char *backend;                 /* trimmed, lower-cased; "none" when unset or blank */
	int timeout_seconds;           /* 1..300 */
	int64_t memory_mb;             /* >= 128; values beyond int64 saturate to INT64_MAX */
	bool allow_network;
	char **allowed_domains;        /* items trimmed, blanks dropped, order kept */
	size_t n_allowed_domains;
	bool allow_software_emulation;
	char **backend_plugins;        /* trimmed, lower-cased, blanks dropped, order kept */
	size_t n_backend_plugins;
	/* CreateOS: each value stripped; blank counts as unset (NULL). */
	char *createos_api_key;        /* CREATEOS_SANDBOX_API_KEY, else CREATEOS_API_KEY */
	const char *createos_api_key_variable; /* which one supplied it (static), or NULL */
	char *createos_base_url;
	char *createos_shape;
	char *createos_rootfs;
	bool createos_accept_egress_exceptions; /* stripped, lower-cased, in {1,true,yes,on,y,t} */
} sbx_gate_settings;

/* A settings error as pydantic-settings would report it (first error in field
 * order: BACKEND, TIMEOUT_SECONDS, MEMORY_MB, ALLOW_NETWORK, ALLOWED_DOMAINS,
 * ALLOW_SOFTWARE_EMULATION). */
typedef struct sbx_gate_setting_error {
	const char *variable;          /* static, e.g. "LANGFLOW_SANDBOX_TIMEOUT_SECONDS" */
	const char *type;              /* static pydantic type: int_parsing, int_parsing_size,
	                                * less_than_equal, greater_than_equal, bool_parsing,
	                                * string_unicode; NULL when out of memory */
	char message[SBX_ERR_MAX];     /* "VAR: Input should be ... [type=..., input_value='...',
	                                * input_type=str]; accepted: ..." */
} sbx_gate_setting_error;

/* Parses settings from `env`, n entries of "NAME=value" (entries without '='
 * are ignored; a later entry for the same name wins, as in os.environ).
 * Returns 0 and fills *out (caller frees), or -1 with *err filled and *out
 * left empty (nothing to free, freeing is harmless). */
int sbx_gate_settings_parse(sbx_gate_settings *out, const char *const *env, size_t n,
			    sbx_gate_setting_error *err);
void sbx_gate_settings_free(sbx_gate_settings *s);

/* Just LANGFLOW_SANDBOX_BACKEND_PLUGINS (read straight from the environment by
 * the registry, never fails on content). Returns 0, or -1 on out of memory.
 * Caller frees each item and the array. */
int sbx_gate_parse_plugin_allowlist(const char *const *env, size_t n, char ***items, size_t *n_items);

/* The two pydantic v2 lax-mode scalar parsers used above, exposed for tests
 * and fuzzers. They return 0 or -1 with *type set to the pydantic error type. */
int sbx_gate_parse_bool(const char *value, bool *out, const char **type);
int sbx_gate_parse_int(const char *value, int64_t *out, const char **type);

/* ---- the gate ---------------------------------------------------------- */

typedef struct sbx_gate_caps {
	const char *isolation;         /* NULL means "none" (the Capabilities default) */
	bool supports_deny_all_egress;
	bool supports_domain_allowlist;
	bool has_max_timeout;          /* false: no cap */
	int64_t max_timeout_seconds;
} sbx_gate_caps;

typedef enum sbx_gate_rule {
	SBX_GATE_RULE_NONE = 0,
	SBX_GATE_RULE_ISOLATION,        /* "isolation" */
	SBX_GATE_RULE_DENY_ALL_EGRESS,  /* "deny_all_egress" */
	SBX_GATE_RULE_DOMAIN_ALLOWLIST, /* "domain_allowlist" */
	SBX_GATE_RULE_TIMEOUT_CAP,      /* "timeout_cap" */
} sbx_gate_rule;

#define SBX_GATE_RULE_COUNT 4 /* rules 1..4, in the order they are applied */

typedef enum sbx_gate_verdict {
	SBX_GATE_RUN,
	SBX_GATE_REFUSE,  /* SandboxUnavailableError */
	SBX_GATE_BLANK,   /* blank code: empty success before the gate */
	SBX_GATE_IN_PROCESS, /* backend "none": Langflow's own process, no gate, no refusal */
} sbx_gate_verdict;

typedef struct sbx_gate_decision {
	sbx_gate_verdict verdict;
	sbx_gate_rule rule;            /* SBX_GATE_RULE_NONE unless refused */
	const char *variable;          /* the setting the refusal concerns (static) or NULL */
	char message[SBX_ERR_MAX];     /* Langflow's refusal text; "" unless refused */
} sbx_gate_decision;

/* Stable rule id ("isolation", ...) or NULL for SBX_GATE_RULE_NONE. */
const char *sbx_gate_rule_id(sbx_gate_rule rule);
/* True when rule `rule` (1..4) forbids running. One predicate per rule so a
 * caller (or a deliberately broken "mutant" host outside lib/) can compose
 * the decision itself; see lib/GATE.md, "Building a mutant". */
bool sbx_gate_rule_violated(sbx_gate_rule rule, const sbx_gate_settings *s, const sbx_gate_caps *caps);
/* The first violated rule in order 1..4, or SBX_GATE_RULE_NONE. */
sbx_gate_rule sbx_gate_first_violation(const sbx_gate_settings *s, const sbx_gate_caps *caps);
/* Writes the refusal message for `rule` (Langflow's wording) into msg. */
void sbx_gate_refusal_message(sbx_gate_rule rule, const sbx_gate_settings *s, const sbx_gate_caps *caps,
			      char *msg, size_t size);
/* The setting a rule concerns: isolation -> LANGFLOW_SANDBOX_BACKEND, ... */
const char *sbx_gate_rule_variable(sbx_gate_rule rule);
/* Blank means only Python str.isspace() characters (UTF-8 decoded); len bytes. */
bool sbx_gate_code_is_blank(const char *code, size_t len);
/* Blank check first, then rules 1..4. Never fails. */
void sbx_gate_decide(const sbx_gate_settings *s, const sbx_gate_caps *caps, const char *code, size_t code_len,
		     sbx_gate_decision *out);

/* ---- plugin loading ---------------------------------------------------- */

typedef struct sbx_entry_point {
	const char *name;              /* as published; NULL treated as "" */
	const char *distribution;      /* NULL or "" reported as "unknown distribution" */
} sbx_entry_point;

typedef enum sbx_plugin_reason {
	SBX_PLUGIN_EMPTY,      /* "empty": no longer produced (a blank name is unlisted) */
	SBX_PLUGIN_UNLISTED,   /* "unlisted": not in LANGFLOW_SANDBOX_BACKEND_PLUGINS */
	SBX_PLUGIN_DUPLICATE,  /* "duplicate": two or more distributions publish it */
	SBX_PLUGIN_BUILTIN,    /* "builtin": exec-sandbox */
	SBX_PLUGIN_RESERVED,   /* "reserved": none */
} sbx_plugin_reason;

typedef struct sbx_plugin_refusal {
	char *name;                    /* normalized (trimmed, lower-cased) */
	sbx_plugin_reason reason;
	char **distributions;          /* every distribution publishing the name, sorted */
	size_t n_distributions;
	char *message;                 /* lfx 1.13's log line (lib/GATE.md) */
} sbx_plugin_refusal;

/* Decided before anything loads. Owned by the caller; sbx_plugin_plan_free(). */
typedef struct sbx_plugin_plan {
	char **loaded;                 /* normalized names, in first-seen order */
	size_t n_loaded;
	char **imported;               /* the distribution imported for loaded[i] */
	size_t n_imported;             /* == n_loaded */
	sbx_plugin_refusal *refused;   /* one per refused name, first-seen order */
	size_t n_refused;
} sbx_plugin_plan;

const char *sbx_plugin_reason_id(sbx_plugin_reason reason);
/* allow: the normalized allow-list (sbx_gate_parse_plugin_allowlist). An
 * empty one plans nothing at all (lfx 1.13 enumerates no entry point, so it
 * refuses none). Returns 0, or -1 on out of memory (err set, *out empty). */
int sbx_gate_plan_plugins(const sbx_entry_point *eps, size_t n, char *const *allow, size_t n_allow,
			  sbx_plugin_plan *out, sbx_err *err);
void sbx_plugin_plan_free(sbx_plugin_plan *plan);

/* ---- JSON front door --------------------------------------------------- */

/* Answers one host-gate request ({"op":"gate",...} or {"op":"load_plugins",...},
 * see lib/GATE.md) and returns the `result` object (caller frees with
 * cJSON_Delete), or NULL with err set when the request is malformed (unknown
 * op, wrong types) or memory ran out. Does not echo `id`. */
cJSON *sbx_gate_answer(const cJSON *request, sbx_err *err);

#endif

/* args: sbxctl's command-line parser and the small value parsers its
 * commands share (integers, durations, K=V pairs, comma lists).
 *
 * Parsing never prints: every problem comes back as a message in an sbx_err
 * ("option '--shape' needs a value") so the caller decides where it goes and
 * which exit code it means. Parsed values point into argv; nothing here
 * copies or frees the caller's strings. */
#ifndef SBXCTL_ARGS_H
#define SBXCTL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx/err.h"

typedef struct ctl_opt {
	const char *name;    /* long name without "--"; NULL ends a table */
	const char *metavar; /* NULL: a flag that takes no value */
	bool repeatable;     /* every value is kept; otherwise a repeat is an error */
	const char *help;    /* one line for --help */
} ctl_opt;

typedef struct ctl_optval {
	const ctl_opt *opt;
	size_t count;
	const char **vals; /* owned array; the strings belong to argv */
} ctl_optval;

typedef struct ctl_args {
	ctl_optval *seen; /* owned; one slot per known option */
	size_t nseen;
	const char **pos; /* owned array of positional arguments (point into argv) */
	size_t npos;
	size_t dashdash;  /* index in pos of the first argument after "--", or SIZE_MAX */
	bool help;        /* -h or --help was given */
} ctl_args;

/* Parses argv[0..argc) against the option tables (a NULL-terminated list of
 * ctl_opt arrays, e.g. the command's and the global ones). "--name=value" and
 * "--name value" both work; "--" ends options. Returns 0, or -1 with *err
 * naming the offending argument. *out must be freed with ctl_args_free even
 * after a failure. */
int ctl_args_parse(const ctl_opt *const *tables, int argc, char **argv, ctl_args *out, sbx_err *err);
void ctl_args_free(ctl_args *args);

/* The last value of an option, or NULL when absent. */
const char *ctl_args_get(const ctl_args *args, const char *name);
/* All values of a repeatable option (NULL when absent, *n = 0). */
const char *const *ctl_args_all(const ctl_args *args, const char *name, size_t *n);
bool ctl_args_has(const ctl_args *args, const char *name);

/* Value parsers. Each names `what` in its error ("--auto-pause: ..."). */
int ctl_parse_long(const char *s, long min, long max, const char *what, long *out, sbx_err *err);
/* "90s", "5m", "1500ms", "1h", "1m30s", "2.5s" -> milliseconds. A bare number
 * is refused (the unit is not guessed). */
int ctl_parse_duration_ms(const char *s, const char *what, int64_t *out, sbx_err *err);
/* "KEY=VALUE" with a non-empty key; *keylen is the key's length. */
int ctl_parse_kv(const char *s, const char *what, size_t *keylen, sbx_err *err);

/* A base URL sbxctl can send to: http:// or https://, a host (a name, an
 * IPv4 address or a bracketed IPv6 address), an optional port 1..65535,
 * an optional path; no spaces or control characters. -1 with *err saying
 * what is wrong ("port 99999 is out of range (1..65535)"). */
int ctl_check_url(const char *url, const char *what, sbx_err *err);

/* Splits "a,b , c" at commas into a NULL-terminated array of trimmed,
 * separately allocated strings (caller frees with ctl_strv_free). An empty or
 * all-blank input gives zero items; empty items between commas are kept as
 * "" so a validator can report them. NULL on allocation failure. */
char **ctl_split_commas(const char *s, size_t *n);
void ctl_strv_free(char **v);

#endif

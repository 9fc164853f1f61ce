/* err: an error message buffer passed as an out-parameter, so that a parser
 * deep down can say "rule 3 (`*.x`): wildcard must be followed by a domain"
 * and the HTTP layer or CLI can show it unchanged. */
#ifndef SBX_ERR_H
#define SBX_ERR_H

#include <stddef.h>

#define SBX_ERR_MAX 512

typedef struct sbx_err {
	char msg[SBX_ERR_MAX]; /* empty when no error was set */
} sbx_err;

/* Sets the message (truncated to fit). err may be NULL. */
void sbx_err_set(sbx_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends context: "ctx: previous message". */
void sbx_err_prefix(sbx_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbx_err_clear(sbx_err *err);

#endif

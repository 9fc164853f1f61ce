/* cmd_cassette: what the offline cassette verbs (cmd_cassette.c,
 * cmd_cassette_merge.c) share: refusing a cassette that has problems and
 * showing one exchange the same way everywhere. */
#ifndef SBXCTL_CMD_CASSETTE_H
#define SBXCTL_CMD_CASSETTE_H

#include <stdio.h>

#include "ctl.h"
#include "sbx/cassette.h"

/* Prints every problem (stderr; with --json one object on stdout) and
 * returns CTL_EXIT_FAIL. */
int ctl_cassette_refuse(ctl_ctx *ctx, const char *dir, const sbx_cassette_problems *p);
/* "METHOD scheme://host:port/target  status  size  sha256[:12]  n=K" after prefix. */
void ctl_cassette_exchange_line(FILE *out, const char *prefix, const sbx_cassette_exchange *ex);
/* The same as an object (line, method, url, status, size, sha256, n, chunked). */
cJSON *ctl_cassette_exchange_json(const sbx_cassette_exchange *ex);

#endif

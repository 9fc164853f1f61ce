/* ctl_run: runs the sbxctl CLI in-process (ctl_main) with captured stdout
 * and stderr, for the unit tests. Header-only; each test file includes it
 * once. */
#ifndef SBXCTL_TEST_RUN_H
#define SBXCTL_TEST_RUN_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

typedef struct ctl_run {
	int rc;
	char *out; /* owned */
	char *err; /* owned */
} ctl_run;

/* Runs "sbxctl ARGS..." (args NULL-terminated). */
static inline ctl_run ctl_run_v(const char *const *args)
{
	char *argv[64];
	int argc = 0;
	argv[argc++] = (char *)"sbxctl";
	for (size_t i = 0; args[i] != NULL && argc < 63; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;
	ctl_run r = {0, NULL, NULL};
	size_t olen = 0, elen = 0;
	FILE *out = open_memstream(&r.out, &olen);
	FILE *err = open_memstream(&r.err, &elen);
	r.rc = ctl_main(argc, argv, out, err);
	fclose(out);
	fclose(err);
	return r;
}

#define ctl_run_args(...) ctl_run_v((const char *const[]){__VA_ARGS__})

static inline void ctl_run_free(ctl_run *r)
{
	free(r->out);
	free(r->err);
}

#endif

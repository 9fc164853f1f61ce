/* mock_cli: sbx-mock's command line (main.c) parsed into an sbx_mock_config
 * without side effects: no server is started, nothing is printed, nothing
 * exits, so the parse can run in-process (tests, the mock_cli fuzz target).
 * Reads files where an option names one (--keys-file, --internet-hosts,
 * the --scenario file check, --record-to's existence check), and looks
 * for the default image store's index when no --images or --no-images is
 * given (MOCK_CLI_IMAGES_DEFAULT / _NONE). */
#ifndef SBX_MOCK_CLI_H
#define SBX_MOCK_CLI_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "internet/inet_cassette.h"
#include "internet/inet_tape.h"
#include "sbx/mock.h"

#define MOCK_CLI_MAX_KEYS 1024
/* --warm-pool's largest value (cell_pool.h MOCK_POOL_MAX: the header of
 * the pool itself is not the parser's business) */
#define MOCK_CLI_WARM_POOL_MAX 64
#define MOCK_CLI_MAX_IMAGES 32
/* root's image store, which a user without one of their own falls back to
 * (the README's `sudo build-image --owner` puts their copy there) */
#define MOCK_CLI_SHARED_STORE "/var/cache/sbx-harness/images"

/* Where the rootfs images come from (the program's rule, not the
 * embedding API's: sbx_mock_config.images stays NULL = none unless set). */
typedef enum mock_cli_images {
	MOCK_CLI_IMAGES_FLAG,    /* --images DIR or --image NAME=DIR */
	MOCK_CLI_IMAGES_DEFAULT, /* the default store (sbx_local_image_store), found with an index;
				  * not root and none of the user's own: MOCK_CLI_SHARED_STORE's */
	MOCK_CLI_IMAGES_OFF,     /* --no-images: the host skeleton, asked for */
	MOCK_CLI_IMAGES_NONE,    /* no flag and no default store: the host skeleton (images_why) */
} mock_cli_images;

typedef struct mock_cli {
	sbx_mock_config cfg;
	char host[256];
	char *keys[MOCK_CLI_MAX_KEYS];
	size_t nkeys;
	const char *image_pairs[MOCK_CLI_MAX_IMAGES]; /* --image NAME=DIR, argv's strings */
	const char *sites[MOCK_CLI_MAX_IMAGES]; /* --internet-site HOST=DIR, argv's strings */
	const char *resolve[MOCK_INET_TAPE_RESOLVE_MAX]; /* --internet-record-resolve, argv's */
	const char *redact[MOCK_CASSETTE_REDACT_MAX];    /* --internet-redact-query, argv's */
	int any_key; /* -1 unset */
	bool record_overwrite;
	char scenario_file[4096]; /* "./NAME" for --scenario NAME naming a file here */
	const char *check_state;  /* --check-state DIR: validate, do not start */
	bool no_images;           /* --no-images */
	mock_cli_images images_from;
	char default_store[PATH_MAX];
	char images_why[PATH_MAX + 128]; /* MOCK_CLI_IMAGES_NONE: why the default store is not used */
	char err[1024];           /* why the command line was refused */
} mock_cli;

enum { MOCK_CLI_OK = 0, MOCK_CLI_HELP = 1, MOCK_CLI_REFUSED = 2 };

/* Parses argv (getopt_long: argv is permuted, its strings are kept by
 * pointer in c) into c, checking each option and the combination as
 * sbx-mock does. MOCK_CLI_OK (c->check_state set: validate that DIR and
 * start nothing), MOCK_CLI_HELP (--help or -h), or MOCK_CLI_REFUSED with
 * c->err saying what is wrong and naming the option. getopt's own
 * messages follow opterr. Call mock_cli_free afterwards in every case. */
int mock_cli_parse(mock_cli *c, int argc, char **argv);
void mock_cli_free(mock_cli *c);

#endif

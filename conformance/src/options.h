/* options: sbx-conform's command line read into a cf_config, with no side
 * effect beyond the config and the cf_cli it fills (no file, process,
 * interpreter or network is touched), so the fuzz target conform_cli runs
 * it in-process. main.c acts on the result (--help, the Python adapter,
 * the control plane). */
#ifndef SBX_CONFORM_OPTIONS_H
#define SBX_CONFORM_OPTIONS_H

#include <stdbool.h>

#include "conform.h"

/* What the command line asks for beyond the config itself. Pointers point
 * into argv. */
struct cf_cli {
	const char *mock_url;     /* --mock-url, or NULL */
	const char *api_url;      /* --api-url, or NULL */
	const char *py_factory;   /* --python-backend M:F / --python-component M:C, or NULL */
	const char *py_script;    /* the adapter script for py_factory */
	char msg[600];            /* why the command line was refused; names the option */
};

enum cf_parse_result { CF_ARGS_OK = 0, CF_ARGS_HELP = 1, CF_ARGS_BAD = 2 };

/* Defaults of every option (timeout scale 1, 4 jobs, 3 timeouts in a row,
 * seed 1); cf_config_free releases what parsing and the run allocated. */
void cf_config_init(struct cf_config *cf);
void cf_config_free(struct cf_config *cf);

/* Parses argv (argv[0] is the program) into cf and cli. CF_ARGS_BAD leaves
 * the message in cli->msg ("--jobs wants 1..32, got \"0\""); the caller
 * prints it with the usage. May be called again on a fresh config (getopt
 * is reset). */
enum cf_parse_result cf_parse_args(struct cf_config *cf, int argc, char **argv, struct cf_cli *cli);

#endif

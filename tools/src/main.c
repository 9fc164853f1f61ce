/* sbxctl: the program entry. Everything else lives in the sbxctl_core
 * library so that tests can run the CLI in-process; this file only sets up
 * the HTTP client (libcurl) and hands argv to ctl_main. */
#include <stdio.h>

#include "ctl.h"
#include "sbx/http_client.h"

int main(int argc, char **argv)
{
	if (sbx_http_global_init() != 0) {
		fprintf(stderr, "sbxctl: cannot initialise libcurl\n");
		return CTL_EXIT_FAIL;
	}
	int rc = ctl_main(argc, argv, stdout, stderr);
	sbx_http_global_cleanup();
	return rc;
}

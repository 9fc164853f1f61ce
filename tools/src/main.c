/* sbxctl: the program entry. Everything else lives in the sbxctl_core
 * library so that tests can run the CLI in-process; this file only sets up
 * libcurl and hands argv to ctl_main. */
#include <stdio.h>

#include <curl/curl.h>

#include "ctl.h"

int main(int argc, char **argv)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "sbxctl: cannot initialise libcurl\n");
		return CTL_EXIT_FAIL;
	}
	int rc = ctl_main(argc, argv, stdout, stderr);
	curl_global_cleanup();
	return rc;
}

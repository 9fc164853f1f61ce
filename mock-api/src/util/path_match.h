/* path_match: the request-path patterns of the router, the fault rules
 * and the journal's filters: "{name}" matches one non-empty segment, a
 * trailing "*" any rest, every other byte itself. */
#ifndef SBX_MOCK_PATH_MATCH_H
#define SBX_MOCK_PATH_MATCH_H

#include <stdbool.h>

bool mock_path_match(const char *pattern, const char *path);

#endif

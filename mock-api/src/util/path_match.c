/* path_match: see path_match.h. */
#include "util/path_match.h"

#include <string.h>

bool mock_path_match(const char *pattern, const char *path)
{
	const char *p = pattern, *s = path;

	while (*p != '\0') {
		if (p[0] == '*' && p[1] == '\0')
			return true;
		if (*p == '{') {
			const char *close = strchr(p, '}');

			if (close == NULL)
				return false;
			if (*s == '\0' || *s == '/')
				return false; /* a segment must be non-empty */
			while (*s != '\0' && *s != '/')
				s++;
			p = close + 1;
			continue;
		}
		if (*p != *s)
			return false;
		p++;
		s++;
	}
	return *s == '\0';
}

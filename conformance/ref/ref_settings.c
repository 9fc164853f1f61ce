/* ref_settings: the reference backend's settings, read once from the
 * environment the way the CreateOS integration reads them (LANGFLOW_SANDBOX_*,
 * CREATEOS_SANDBOX_*). A bad value is remembered, not fatal: the next run
 * refuses with it (ref_preflight.c). Never talks to the control plane. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ref.h"

static bool word_in(const char *v, const char *const *set)
{
	char buf[32];
	size_t b = 0, e;
	int i;

	while (v[b] == ' ' || v[b] == '\t' || v[b] == '\n' || v[b] == '\r')
		b++;
	e = strlen(v);
	while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t' || v[e - 1] == '\n' || v[e - 1] == '\r'))
		e--;
	if (e - b >= sizeof(buf))
		return false;
	memcpy(buf, v + b, e - b);
	buf[e - b] = '\0';
	for (i = 0; set[i] != NULL; i++)
		if (strcasecmp(buf, set[i]) == 0)
			return true;
	return false;
}

static const char *const TRUTHY[] = {"1", "true", "yes", "on", "y", "t", NULL};
static const char *const FALSY[] = {"0", "false", "no", "off", "n", "f", NULL};

static bool parse_long(const char *v, long *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	while (*end == ' ')
		end++;
	if (errno != 0 || end == v || *end != '\0')
		return false;
	*out = x;
	return true;
}

void settings_load(struct settings *s)
{
	const char *v;
	long x;

	memset(s, 0, sizeof(*s));
	s->timeout_s = 30;
	s->memory_mb = 192;
	v = getenv("CREATEOS_SANDBOX_API_KEY");
	s->key_var = "CREATEOS_SANDBOX_API_KEY";
	if (v == NULL || v[0] == '\0') {
		v = getenv("CREATEOS_API_KEY");
		s->key_var = "CREATEOS_API_KEY";
	}
	s->api_key = (v != NULL && v[0] != '\0') ? v : NULL;
	v = getenv("CREATEOS_SANDBOX_BASE_URL");
	snprintf(s->base_url, sizeof(s->base_url), "%s", v ? v : "https://api.sb.createos.sh");
	v = getenv("LANGFLOW_SANDBOX_TIMEOUT_SECONDS");
	if (v != NULL) {
		if (!parse_long(v, &x) || x < 1 || x > 300)
			snprintf(s->bad_setting, sizeof(s->bad_setting),
				 "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=%.32s: must be an integer from 1 to 300", v);
		else
			s->timeout_s = x;
	}
	v = getenv("LANGFLOW_SANDBOX_MEMORY_MB");
	if (v != NULL && s->bad_setting[0] == '\0') {
		if (!parse_long(v, &x) || x < 128)
			snprintf(s->bad_setting, sizeof(s->bad_setting),
				 "LANGFLOW_SANDBOX_MEMORY_MB=%.32s: must be an integer of at least 128", v);
		else
			s->memory_mb = x;
	}
	v = getenv("LANGFLOW_SANDBOX_ALLOW_NETWORK");
	if (v != NULL && s->bad_setting[0] == '\0') {
		if (word_in(v, TRUTHY))
			s->allow_network = true;
		else if (!word_in(v, FALSY))
			snprintf(s->bad_setting, sizeof(s->bad_setting),
				 "LANGFLOW_SANDBOX_ALLOW_NETWORK=%.32s: not a boolean", v);
	}
	v = getenv("LANGFLOW_SANDBOX_ALLOWED_DOMAINS");
	if (v != NULL) {
		const char *p = v;

		snprintf(s->domains, sizeof(s->domains), "%s", v);
		while (*p != '\0') {
			bool blank = true;

			for (; *p != '\0' && *p != ','; p++)
				if (*p != ' ' && *p != '\t')
					blank = false;
			if (!blank)
				s->domain_count++;
			if (*p == ',')
				p++;
		}
	}
	v = getenv("LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS");
	s->accept_exceptions = v != NULL && word_in(v, TRUTHY);
	v = getenv("CREATEOS_SANDBOX_SHAPE");
	s->shape_pin = (v != NULL && v[0] != '\0') ? v : NULL;
}

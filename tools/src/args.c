/* args: option parsing and value parsers for sbxctl; see args.h.
 * Never prints and never exits: the caller owns the user interface. */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const ctl_opt *find_opt(const ctl_opt *const *tables, const char *name, size_t namelen)
{
	for (size_t t = 0; tables[t] != NULL; t++) {
		for (const ctl_opt *o = tables[t]; o->name != NULL; o++) {
			if (strlen(o->name) == namelen && memcmp(o->name, name, namelen) == 0)
				return o;
		}
	}
	return NULL;
}

static ctl_optval *slot_for(ctl_args *args, const ctl_opt *opt)
{
	for (size_t i = 0; i < args->nseen; i++) {
		if (args->seen[i].opt == opt)
			return &args->seen[i];
	}
	return NULL;
}

static int add_value(ctl_args *args, const ctl_opt *opt, const char *val, size_t maxvals, sbx_err *err)
{
	ctl_optval *slot = slot_for(args, opt);
	if (slot == NULL) {
		slot = &args->seen[args->nseen++];
		slot->opt = opt;
		slot->count = 0;
		slot->vals = calloc(maxvals, sizeof *slot->vals);
		if (slot->vals == NULL) {
			sbx_err_set(err, "out of memory");
			return -1;
		}
	} else if (!opt->repeatable) {
		sbx_err_set(err, "option '--%s' given twice (it takes one value)", opt->name);
		return -1;
	}
	slot->vals[slot->count++] = val;
	return 0;
}

/* Handles argv[*i], a "--name[=value]" word; may consume the next word. */
static int parse_long_opt(const ctl_opt *const *tables, int argc, char **argv, int *i,
			  ctl_args *out, sbx_err *err)
{
	const char *word = argv[*i] + 2;
	const char *eq = strchr(word, '=');
	size_t namelen = eq != NULL ? (size_t)(eq - word) : strlen(word);
	if (namelen == 4 && memcmp(word, "help", 4) == 0 && eq == NULL) {
		out->help = true;
		return 0;
	}
	const ctl_opt *opt = find_opt(tables, word, namelen);
	if (opt == NULL) {
		sbx_err_set(err, "unknown option '--%.*s'", (int)namelen, word);
		return -1;
	}
	const char *val = NULL;
	if (opt->metavar == NULL) {
		if (eq != NULL) {
			sbx_err_set(err, "option '--%s' is a flag and takes no value (got '%s')",
				    opt->name, eq + 1);
			return -1;
		}
		val = "";
	} else if (eq != NULL) {
		val = eq + 1;
	} else if (*i + 1 < argc) {
		*i += 1;
		val = argv[*i];
	} else {
		sbx_err_set(err, "option '--%s' needs a value (%s)", opt->name, opt->metavar);
		return -1;
	}
	return add_value(out, opt, val, (size_t)argc, err);
}

static size_t count_opts(const ctl_opt *const *tables)
{
	size_t n = 0;
	for (size_t t = 0; tables[t] != NULL; t++) {
		for (const ctl_opt *o = tables[t]; o->name != NULL; o++)
			n++;
	}
	return n;
}

int ctl_args_parse(const ctl_opt *const *tables, int argc, char **argv, ctl_args *out, sbx_err *err)
{
	memset(out, 0, sizeof *out);
	out->dashdash = SIZE_MAX;
	size_t nopts = count_opts(tables);
	out->seen = calloc(nopts + 1, sizeof *out->seen);
	out->pos = calloc((size_t)argc + 1, sizeof *out->pos);
	if (out->seen == NULL || out->pos == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	bool options_done = false;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (options_done || a[0] != '-' || a[1] == '\0') {
			out->pos[out->npos++] = a;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			options_done = true;
			out->dashdash = out->npos;
			continue;
		}
		if (strcmp(a, "-h") == 0) {
			out->help = true;
			continue;
		}
		if (a[1] != '-') {
			sbx_err_set(err, "unknown option '%s' (sbxctl only has long options like --json)", a);
			return -1;
		}
		if (parse_long_opt(tables, argc, argv, &i, out, err) != 0)
			return -1;
	}
	return 0;
}

void ctl_args_free(ctl_args *args)
{
	if (args->seen != NULL) {
		for (size_t i = 0; i < args->nseen; i++)
			free(args->seen[i].vals);
	}
	free(args->seen);
	free(args->pos);
	memset(args, 0, sizeof *args);
}

static const ctl_optval *lookup(const ctl_args *args, const char *name)
{
	for (size_t i = 0; i < args->nseen; i++) {
		if (strcmp(args->seen[i].opt->name, name) == 0)
			return &args->seen[i];
	}
	return NULL;
}

const char *ctl_args_get(const ctl_args *args, const char *name)
{
	const ctl_optval *v = lookup(args, name);
	return v != NULL && v->count > 0 ? v->vals[v->count - 1] : NULL;
}

const char *const *ctl_args_all(const ctl_args *args, const char *name, size_t *n)
{
	const ctl_optval *v = lookup(args, name);
	*n = v != NULL ? v->count : 0;
	return v != NULL ? v->vals : NULL;
}

bool ctl_args_has(const ctl_args *args, const char *name)
{
	return lookup(args, name) != NULL;
}

int ctl_parse_long(const char *s, long min, long max, const char *what, long *out, sbx_err *err)
{
	if (s == NULL || *s == '\0') {
		sbx_err_set(err, "%s: expected a number, got an empty value", what);
		return -1;
	}
	char *end = NULL;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end != '\0' || isspace((unsigned char)s[0])) {
		sbx_err_set(err, "%s: '%s' is not a whole number", what, s);
		return -1;
	}
	if (errno == ERANGE || v < min || v > max) {
		sbx_err_set(err, "%s: %s is out of range (%ld..%ld)", what, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

static int unit_ms(const char *u, size_t len, double *ms)
{
	static const struct { const char *name; double ms; } units[] = {
		{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000},
	};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strlen(units[i].name) == len && memcmp(units[i].name, u, len) == 0) {
			*ms = units[i].ms;
			return 0;
		}
	}
	return -1;
}

int ctl_parse_duration_ms(const char *s, const char *what, int64_t *out, sbx_err *err)
{
	double total = 0;
	const char *p = s;
	if (s == NULL || *s == '\0') {
		sbx_err_set(err, "%s: expected a duration like 90s, 5m or 1500ms", what);
		return -1;
	}
	while (*p != '\0') {
		char *end = NULL;
		if (!isdigit((unsigned char)*p)) {
			sbx_err_set(err, "%s: '%s' is not a duration (use e.g. 90s, 5m, 1500ms, 1m30s)", what, s);
			return -1;
		}
		errno = 0;
		double num = strtod(p, &end);
		if (errno == ERANGE) {
			sbx_err_set(err, "%s: '%s' is too large", what, s);
			return -1;
		}
		const char *u = end;
		while (isalpha((unsigned char)*end))
			end++;
		double ms = 0;
		if (end == u) {
			sbx_err_set(err, "%s: '%s' needs a unit (ms, s, m or h), e.g. 90s", what, s);
			return -1;
		}
		if (unit_ms(u, (size_t)(end - u), &ms) != 0) {
			sbx_err_set(err, "%s: unknown unit '%.*s' in '%s' (use ms, s, m or h)", what,
				    (int)(end - u), u, s);
			return -1;
		}
		total += num * ms;
		p = end;
	}
	if (total > 9.0e15) {
		sbx_err_set(err, "%s: '%s' is too large", what, s);
		return -1;
	}
	*out = (int64_t)(total + 0.5);
	return 0;
}

int ctl_parse_kv(const char *s, const char *what, size_t *keylen, sbx_err *err)
{
	const char *eq = strchr(s, '=');
	if (eq == NULL) {
		sbx_err_set(err, "%s: '%s' is not KEY=VALUE", what, s);
		return -1;
	}
	if (eq == s) {
		sbx_err_set(err, "%s: '%s' has an empty key", what, s);
		return -1;
	}
	*keylen = (size_t)(eq - s);
	return 0;
}

/* The [v6] part of an authority: hex digits, ':' and '.' (an embedded
 * IPv4), at least one ':'. */
static bool v6_literal_ok(const char *s, size_t n)
{
	bool colon = false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ':')
			colon = true;
		else if (!isxdigit((unsigned char)s[i]) && s[i] != '.')
			return false;
	}
	return colon;
}

static int check_port(const char *p, size_t n, const char *what, const char *url, sbx_err *err)
{
	long port = 0;
	if (n == 0) {
		sbx_err_set(err, "%s: '%s' has an empty port after ':'", what, url);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i])) {
			sbx_err_set(err, "%s: '%s' has a port that is not a number ('%.*s')", what, url, (int)n, p);
			return -1;
		}
		if (port <= 65535)
			port = port * 10 + (p[i] - '0');
	}
	if (port < 1 || port > 65535) {
		sbx_err_set(err, "%s: '%s' has port %.*s, out of range (1..65535)", what, url, (int)n, p);
		return -1;
	}
	return 0;
}

int ctl_check_url(const char *url, const char *what, sbx_err *err)
{
	const char *host;
	if (strncmp(url, "http://", 7) == 0) {
		host = url + 7;
	} else if (strncmp(url, "https://", 8) == 0) {
		host = url + 8;
	} else {
		sbx_err_set(err, "%s: '%s' must start with http:// or https://", what, url);
		return -1;
	}
	for (const char *p = url; *p != '\0'; p++) {
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			sbx_err_set(err, "%s: '%s' contains a space or control character", what, url);
			return -1;
		}
	}
	size_t alen = strcspn(host, "/?#");
	if (memchr(host, '@', alen) != NULL) {
		sbx_err_set(err, "%s: '%s' has user information before '@' (not supported)", what, url);
		return -1;
	}
	const char *port = NULL;
	size_t hlen = alen;
	if (alen > 0 && host[0] == '[') {
		const char *close = memchr(host, ']', alen);
		if (close == NULL || !v6_literal_ok(host + 1, (size_t)(close - host - 1))) {
			sbx_err_set(err, "%s: '%s' has a malformed IPv6 address (want [addr] or [addr]:port)", what, url);
			return -1;
		}
		hlen = (size_t)(close - host) + 1;
		if (hlen < alen && host[hlen] != ':') {
			sbx_err_set(err, "%s: '%s' has '%c' after the IPv6 address", what, url, host[hlen]);
			return -1;
		}
	} else {
		const char *colon = memchr(host, ':', alen);
		if (colon != NULL)
			hlen = (size_t)(colon - host);
		if (memchr(host, '[', alen) != NULL || memchr(host, ']', alen) != NULL) {
			sbx_err_set(err, "%s: '%s' has a stray bracket", what, url);
			return -1;
		}
	}
	if (hlen == 0) {
		sbx_err_set(err, "%s: '%s' has no host", what, url);
		return -1;
	}
	if (hlen < alen) {
		port = host + hlen + 1;
		if (check_port(port, alen - hlen - 1, what, url, err) != 0)
			return -1;
	}
	return 0;
}

static char *dup_trimmed(const char *s, size_t len)
{
	while (len > 0 && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	char *r = malloc(len + 1);
	if (r != NULL) {
		memcpy(r, s, len);
		r[len] = '\0';
	}
	return r;
}

static bool all_blank(const char *s)
{
	for (; *s != '\0'; s++) {
		if (!isspace((unsigned char)*s))
			return false;
	}
	return true;
}

char **ctl_split_commas(const char *s, size_t *n)
{
	size_t cap = 2;
	*n = 0;
	for (const char *p = s; *p != '\0'; p++)
		cap += *p == ',';
	char **v = calloc(cap, sizeof *v);
	if (v == NULL || all_blank(s))
		return v;
	const char *start = s;
	for (;;) {
		const char *comma = strchr(start, ',');
		size_t len = comma != NULL ? (size_t)(comma - start) : strlen(start);
		v[*n] = dup_trimmed(start, len);
		if (v[*n] == NULL) {
			ctl_strv_free(v);
			return NULL;
		}
		*n += 1;
		if (comma == NULL)
			break;
		start = comma + 1;
	}
	return v;
}

void ctl_strv_free(char **v)
{
	if (v == NULL)
		return;
	for (size_t i = 0; v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

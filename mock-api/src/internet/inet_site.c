/* inet_site: the internet's static sites and upstream patterns
 * (inet_book.h).
 *
 * A site's files are opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS) under the site directory's descriptor: the kernel
 * refuses any path ("..", an absolute symlink, one that climbs out) that
 * would resolve outside it, so no string check has to be right. */
#define _GNU_SOURCE
#include "internet/inet_book_internal.h"
#include "internet/inet_rules.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SITE_PATH_MAX 4096

void mock_inet_sites_free(mock_inet_book *b)
{
	for (size_t i = 0; i < b->nsites; i++)
		close(b->sites[i].dirfd);
	b->nsites = 0;
	for (size_t i = 0; i < b->nup_names; i++) {
		free(b->up_names[i]);
		free(b->up_name_addrs[i]);
		b->up_name_addrs[i] = NULL;
		b->up_name_naddr[i] = 0;
	}
	b->nup_names = 0;
	b->nup_cidrs = 0;
	free(b->upstream_text);
	b->upstream_text = NULL;
}

int mock_inet_site_add(mock_inet_book *b, const char *spec, sbx_err *err)
{
	const char *eq = strchr(spec, '=');
	mock_inet_site *s;
	struct stat st;

	if (eq == NULL || eq == spec || eq[1] == '\0' || (size_t)(eq - spec) >= sizeof(s->host)) {
		sbx_err_set(err, "--internet-site %s: expected HOST=DIR", spec);
		return -1;
	}
	if (b->nsites == MOCK_INET_SITES_MAX) {
		sbx_err_set(err, "--internet-site %s: at most %d sites", spec, MOCK_INET_SITES_MAX);
		return -1;
	}
	s = &b->sites[b->nsites];
	snprintf(s->host, sizeof(s->host), "%.*s", (int)(eq - spec), spec);
	for (char *p = s->host; *p != '\0'; p++) {
		*p = (char)tolower((unsigned char)*p);
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_') {
			sbx_err_set(err, "--internet-site %s: \"%s\" is not a host name", spec, s->host);
			return -1;
		}
	}
	s->dirfd = open(eq + 1, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0 || fstat(s->dirfd, &st) != 0) {
		sbx_err_set(err, "--internet-site %s: %s: %s", spec, eq + 1, strerror(errno));
		if (s->dirfd >= 0)
			close(s->dirfd);
		return -1;
	}
	b->nsites++;
	return 0;
}

int mock_inet_site_dir(mock_inet_book *b, const char *host)
{
	for (size_t i = 0; i < b->nsites; i++) {
		if (strcmp(b->sites[i].host, host) == 0)
			return b->sites[i].dirfd;
	}
	return -1;
}

size_t mock_inet_site_count(const mock_inet_book *b)
{
	return b->nsites;
}

const char *mock_inet_site_host(const mock_inet_book *b, size_t i)
{
	return i < b->nsites ? b->sites[i].host : "";
}

void mock_inet_sites_note(const mock_inet_book *b, const mock_hosts *hosts, char *out, size_t cap)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < b->nsites; i++) {
		char a[INET_ADDRSTRLEN];
		uint8_t raw[4];
		int n;

		if (mock_hosts_find(hosts, b->sites[i].host) != NULL)
			continue;
		mock_inet_synth_addr(b->sites[i].host, raw);
		inet_ntop(AF_INET, raw, a, sizeof(a));
		n = snprintf(out + len, cap - len, "%s%s=%s", len > 0 ? ", " : "", b->sites[i].host, a);
		if (n < 0 || (size_t)n >= cap - len)
			break;
		len += (size_t)n;
	}
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* %-decodes the path into out, relative (no leading '/'): false on a bad
 * escape, an encoded NUL or a path too long. */
static bool decode_path(const char *in, char *out, size_t cap)
{
	size_t n = 0;

	while (*in == '/')
		in++;
	for (; *in != '\0'; in++) {
		char c = *in;

		if (c == '%') {
			int hi = hexval(in[1]), lo = hi >= 0 ? hexval(in[2]) : -1;

			if (lo < 0 || (hi == 0 && lo == 0))
				return false;
			c = (char)(hi * 16 + lo);
			in += 2;
		}
		if (n + 1 >= cap)
			return false;
		out[n++] = c;
	}
	out[n] = '\0';
	return true;
}

/* O_NONBLOCK: a FIFO (or a device) in the tree would block the open
 * until a writer came, holding the connection's thread forever; it is
 * opened at once and refused as not a regular file. */
static int open_beneath(int dirfd, const char *rel)
{
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};

	return (int)syscall(SYS_openat2, dirfd, rel[0] != '\0' ? rel : ".", &how, sizeof(how));
}

int mock_inet_site_open(int dirfd, const char *path, int *status)
{
	char rel[SITE_PATH_MAX], idx[SITE_PATH_MAX + 16];
	struct stat st;
	int fd;

	if (!decode_path(path, rel, sizeof(rel))) {
		*status = 400;
		return -1;
	}
	fd = open_beneath(dirfd, rel);
	if (fd < 0) {
		*status = errno == EXDEV || errno == ELOOP ? 403 : errno == ENOENT || errno == ENOTDIR ? 404 : 403;
		return -1;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		snprintf(idx, sizeof(idx), "%s%sindex.html", rel,
			 rel[0] != '\0' && rel[strlen(rel) - 1] != '/' ? "/" : "");
		fd = open_beneath(dirfd, idx);
		if (fd < 0) {
			*status = errno == ENOENT ? 404 : 403;
			return -1;
		}
		if (fstat(fd, &st) != 0)
			st.st_mode = 0;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		*status = 403;
		return -1;
	}
	*status = 200;
	return fd;
}

const char *mock_inet_content_type(const char *path)
{
	static const char *const types[][2] = {
		{".html", "text/html"}, {".htm", "text/html"}, {".txt", "text/plain"},
		{".json", "application/json"}, {".js", "text/javascript"}, {".css", "text/css"},
		{".xml", "application/xml"}, {".gz", "application/gzip"}, {".tgz", "application/gzip"},
		{".xz", "application/x-xz"}, {".bz2", "application/x-bzip2"}, {".zip", "application/zip"},
		{".whl", "application/zip"}, {".deb", "application/vnd.debian.binary-package"},
		{".png", "image/png"}, {".svg", "image/svg+xml"}, {".tar", "application/x-tar"},
	};
	const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');

	if (dot != NULL && (slash == NULL || dot > slash)) {
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
			if (strcasecmp(dot, types[i][0]) == 0)
				return types[i][1];
		}
	}
	/* a directory's index, or a file without an extension (apt's
	 * Release, Packages) */
	return path[0] == '\0' || path[strlen(path) - 1] == '/' ? "text/html" : "application/octet-stream";
}

/* ---- upstream ---- */

bool mock_inet_host_match(const char *pattern, bool wildcard, const char *host)
{
	size_t hl, pl;

	if (!wildcard)
		return strcmp(pattern, host) == 0;
	hl = strlen(host);
	pl = strlen(pattern + 1); /* ".suffix" */
	return hl > pl && strcmp(host + hl - pl, pattern + 1) == 0;
}


static int cidr_parse(const char *p, mock_inet_cidr *c)
{
	char a[64];
	const char *slash = strchr(p, '/');
	size_t al = slash != NULL ? (size_t)(slash - p) : strlen(p);
	char *end = NULL;
	long bits;

	if (al == 0 || al >= sizeof(a))
		return -1;
	memcpy(a, p, al);
	a[al] = '\0';
	if (inet_pton(AF_INET, a, c->addr) == 1)
		c->family = 4;
	else if (inet_pton(AF_INET6, a, c->addr) == 1)
		c->family = 6;
	else
		return -1;
	c->bits = c->family == 4 ? 32 : 128;
	if (slash != NULL) {
		errno = 0;
		bits = strtol(slash + 1, &end, 10);
		if (errno != 0 || end == slash + 1 || *end != '\0' || bits < 0 || bits > c->bits)
			return -1;
		c->bits = (int)bits;
	}
	return 0;
}

static bool name_ok(char *n)
{
	char *p = strncmp(n, "*.", 2) == 0 ? n + 2 : n;

	if (*p == '\0')
		return false;
	for (; *p != '\0'; p++) {
		*p = (char)tolower((unsigned char)*p);
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
			return false;
	}
	return true;
}

int mock_inet_upstream_set(mock_inet_book *b, const char *patterns, sbx_err *err)
{
	char *copy = strdup(patterns), *save = NULL;

	if (copy == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	if (patterns[strspn(patterns, ", ")] == '\0') {
		/* an empty list would still print the start-up warning while
		 * declaring nothing: say so instead */
		sbx_err_set(err, "--internet-upstream: no pattern given (names, \"*.suffix\", addresses or CIDRs, "
			    "comma-separated)");
		free(copy);
		return -1;
	}
	for (char *tok = strtok_r(copy, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
		mock_inet_cidr c;

		if (b->nup_names + b->nup_cidrs == MOCK_INET_UPSTREAM_MAX) {
			sbx_err_set(err, "--internet-upstream: at most %d patterns", MOCK_INET_UPSTREAM_MAX);
			free(copy);
			return -1;
		}
		if (cidr_parse(tok, &c) == 0) {
			b->up_cidrs[b->nup_cidrs++] = c;
		} else if (strchr(tok, '/') == NULL && strchr(tok, ':') == NULL && name_ok(tok) &&
			   (b->up_names[b->nup_names] = strdup(tok)) != NULL) {
			b->nup_names++;
		} else {
			sbx_err_set(err, "--internet-upstream: \"%.64s\" is not a name, \"*.suffix\", an address or a CIDR",
				    tok);
			free(copy);
			return -1;
		}
	}
	free(copy);
	free(b->upstream_text);
	b->upstream_text = strdup(patterns);
	return 0;
}

bool mock_inet_upstream_any(mock_inet_book *b)
{
	return b->nup_names + b->nup_cidrs > 0;
}

const char *mock_inet_upstream_text(mock_inet_book *b)
{
	return mock_inet_upstream_any(b) && b->upstream_text != NULL ? b->upstream_text : "";
}

/* Appends h's addresses to name pattern i's: false when out of memory. */
static bool name_addrs_add(mock_inet_book *b, size_t i, const mock_host *h)
{
	mock_host_addr *grown = realloc(b->up_name_addrs[i], (b->up_name_naddr[i] + h->naddr) * sizeof(*grown));

	if (grown == NULL)
		return false;
	memcpy(grown + b->up_name_naddr[i], h->addr, h->naddr * sizeof(*grown));
	b->up_name_addrs[i] = grown;
	b->up_name_naddr[i] += h->naddr;
	return true;
}

int mock_inet_upstream_resolve(mock_inet_book *b, const mock_hosts *hosts, sbx_err *err)
{
	for (size_t i = 0; i < b->nup_names; i++) {
		const char *pat = b->up_names[i];
		bool wild = pat[0] == '*';

		free(b->up_name_addrs[i]);
		b->up_name_addrs[i] = NULL;
		b->up_name_naddr[i] = 0;
		for (size_t k = 0; k < hosts->n; k++) {
			if (mock_inet_host_match(pat, wild, hosts->hosts[k].name) && !name_addrs_add(b, i, &hosts->hosts[k])) {
				sbx_err_set(err, "out of memory");
				return -1;
			}
		}
		if (b->up_name_naddr[i] == 0) {
			sbx_err_set(err, "--internet-upstream: %s names nothing the internet's hosts file (--internet-hosts) "
				    "gives an address: a guest could not resolve it, and a flow naming it goes out only "
				    "to the addresses that file gives",
				    pat);
			return -1;
		}
	}
	return 0;
}

static bool in_cidr(const mock_inet_cidr *c, int family, const uint8_t *addr)
{
	int full = c->bits / 8, rest = c->bits % 8;

	if (c->family != family || memcmp(c->addr, addr, (size_t)full) != 0)
		return false;
	return rest == 0 || ((c->addr[full] ^ addr[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

static bool name_addr_is(const mock_inet_book *b, size_t i, int family, const uint8_t *addr)
{
	for (size_t k = 0; k < b->up_name_naddr[i]; k++) {
		const mock_host_addr *a = &b->up_name_addrs[i][k];

		if (a->family == family && memcmp(a->addr, addr, family == 6 ? 16 : 4) == 0)
			return true;
	}
	return false;
}

bool mock_inet_upstream_match(mock_inet_book *b, int family, const uint8_t *addr, const char *host)
{
	char name[256];
	size_t nl;

	for (size_t i = 0; i < b->nup_cidrs; i++) {
		if (in_cidr(&b->up_cidrs[i], family, addr))
			return true;
	}
	if (host == NULL || (nl = strlen(host)) == 0 || nl >= sizeof(name))
		return false;
	/* "name." is the name: the resolver answered it alike */
	memcpy(name, host, nl + 1);
	if (name[nl - 1] == '.')
		name[nl - 1] = '\0';
	/* the name is the guest's claim (SNI, Host): it goes out only to an
	 * address the hosts file gives the pattern's names, never to any
	 * address the guest chose to dial with that name */
	for (size_t i = 0; i < b->nup_names; i++) {
		if (mock_inet_host_match(b->up_names[i], b->up_names[i][0] == '*', name) &&
		    name_addr_is(b, i, family, addr))
			return true;
	}
	return false;
}

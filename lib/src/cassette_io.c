/* cassette_io: a cassette's directory on disk (sbx/cassette.h): reading
 * cassette.jsonl, checking the bodies it names, walking bodies/, hashing a
 * file, writing cassette.jsonl whole. Bodies are megabytes: they are read
 * in blocks and hashed, never held. A write never leaves a half-written
 * cassette.jsonl: a reader sees the old file or the new one. */
#define _GNU_SOURCE
#include "sbx/cassette.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "sbx/sys.h"

#define HASH_BLOCK (256u * 1024u)

void sbx_cassette_body_path(sbx_strbuf *out, const char *dir, const char *sha256)
{
	sbx_strbuf_printf(out, "%s/%s/%.2s/%s", dir, SBX_CASSETTE_BODIES, sha256, sha256);
}

int sbx_cassette_hash_file(const char *path, char hex[65], uint64_t *size, sbx_err *err)
{
	int rc = -1;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char *buf = malloc(HASH_BLOCK);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	*size = 0;
	if (fd < 0) {
		sbx_err_set(err, "%s: %s", path, strerror(errno));
		goto out_free;
	}
	if (buf == NULL || ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		sbx_err_set(err, "%s: cannot start a SHA-256 (out of memory)", path);
		goto out_free;
	}
	for (;;) {
		ssize_t n = read(fd, buf, HASH_BLOCK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			sbx_err_set(err, "%s: %s", path, strerror(errno));
			goto out_free;
		}
		if (n == 0)
			break;
		EVP_DigestUpdate(ctx, buf, (size_t)n);
		*size += (uint64_t)n;
	}
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	for (unsigned i = 0; i < mdlen && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	rc = 0;
out_free:
	sbx_close_fd(&fd);
	EVP_MD_CTX_free(ctx);
	free(buf);
	return rc;
}

/* Reads a whole file of at most `cap` bytes into sb. */
static int read_file(const char *path, size_t cap, sbx_strbuf *sb, sbx_err *err)
{
	FILE *f = fopen(path, "re");
	if (f == NULL) {
		sbx_err_set(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		if (sb->len + n > cap) {
			fclose(f);
			sbx_err_set(err, "%s: larger than %zu bytes (LIMITS.md, cassettes)", path, cap);
			return -1;
		}
		sbx_strbuf_append(sb, buf, n);
	}
	int bad = ferror(f);
	fclose(f);
	if (bad || sb->oom) {
		sbx_err_set(err, "%s: %s", path, bad ? "read error" : "out of memory");
		return -1;
	}
	return 0;
}

/* ---- the bodies the lines name ---- */

typedef struct body_ref {
	const sbx_cassette_body *b;
	size_t line;
} body_ref;

static int cmp_ref(const void *pa, const void *pb)
{
	const body_ref *a = pa, *b = pb;
	int c = strcmp(a->b->sha256, b->b->sha256);
	return c != 0 ? c : (a->line > b->line) - (a->line < b->line);
}

/* Every body a line names (responses and requests), sorted by hash. */
static body_ref *collect_refs(const sbx_cassette *cas, size_t *n)
{
	body_ref *r = calloc(2 * cas->nex + 1, sizeof *r);
	*n = 0;
	if (r == NULL)
		return NULL;
	for (size_t i = 0; i < cas->nex; i++) {
		r[(*n)++] = (body_ref){&cas->ex[i].body, cas->ex[i].line};
		if (cas->ex[i].has_request_body)
			r[(*n)++] = (body_ref){&cas->ex[i].request_body, cas->ex[i].line};
	}
	qsort(r, *n, sizeof *r, cmp_ref);
	return r;
}

static void problem(sbx_cassette_problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(sbx_cassette_problems *p, const char *fmt, ...)
{
	if (p == NULL)
		return;
	if (p->count >= SBX_CASSETTE_MAX_PROBLEMS) {
		p->truncated = true;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	sbx_strbuf_vprintf(&p->text, fmt, ap);
	va_end(ap);
	sbx_strbuf_puts(&p->text, "\n");
	p->count++;
}

/* One body file against what line `r->line` says of it. */
static int check_body(const char *dir, const body_ref *r, int what, sbx_cassette_problems *probs)
{
	sbx_strbuf path = SBX_STRBUF_INIT;
	struct stat st;
	int bad = 1;
	sbx_cassette_body_path(&path, dir, r->b->sha256);
	const char *p = sbx_strbuf_str(&path);
	if (lstat(p, &st) != 0) {
		problem(probs, "%s: %s (named by %s:%zu)", p, errno == ENOENT ? "missing" : strerror(errno),
			SBX_CASSETTE_FILE, r->line);
	} else if (!S_ISREG(st.st_mode)) {
		problem(probs, "%s: not a regular file (named by %s:%zu)", p, SBX_CASSETTE_FILE, r->line);
	} else if ((uint64_t)st.st_size != r->b->size) {
		problem(probs, "%s: %lld bytes, but %s:%zu says %llu", p, (long long)st.st_size, SBX_CASSETTE_FILE,
			r->line, (unsigned long long)r->b->size);
	} else if (what == SBX_CASSETTE_BODY_HASHES) {
		char hex[65] = "";
		uint64_t size = 0;
		sbx_err e = {""};
		if (sbx_cassette_hash_file(p, hex, &size, &e) != 0)
			problem(probs, "%s (named by %s:%zu)", e.msg, SBX_CASSETTE_FILE, r->line);
		else if (strcmp(hex, r->b->sha256) != 0)
			problem(probs, "%s: its SHA-256 is %s, not its name (named by %s:%zu): the body was changed "
				       "or damaged", p, hex, SBX_CASSETTE_FILE, r->line);
		else
			bad = 0;
	} else {
		bad = 0;
	}
	sbx_strbuf_free(&path);
	return bad;
}

static size_t check_bodies(const char *dir, const sbx_cassette *cas, int what, sbx_cassette_problems *probs)
{
	size_t n = 0, bad = 0;
	body_ref *r = collect_refs(cas, &n);
	if (r == NULL) {
		problem(probs, "%s: out of memory", dir);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && strcmp(r[i].b->sha256, r[i - 1].b->sha256) == 0) {
			if (r[i].b->size != r[i - 1].b->size) {
				bad++;
				problem(probs, "%s:%zu: body %.12s... of %llu bytes, but line %zu says %llu",
					SBX_CASSETTE_FILE, r[i].line, r[i].b->sha256, (unsigned long long)r[i].b->size,
					r[i - 1].line, (unsigned long long)r[i - 1].b->size);
			}
			continue;
		}
		bad += (size_t)check_body(dir, &r[i], what, probs);
	}
	free(r);
	return bad;
}

int sbx_cassette_load(const char *dir, int what, sbx_cassette *cas, sbx_cassette_problems *probs,
		      size_t *orphans)
{
	sbx_strbuf path = SBX_STRBUF_INIT, text = SBX_STRBUF_INIT;
	sbx_err e = {""};
	int rc = -1;
	memset(cas, 0, sizeof *cas);
	if (orphans != NULL)
		*orphans = 0;
	sbx_strbuf_printf(&path, "%s/%s", dir, SBX_CASSETTE_FILE);
	if (read_file(sbx_strbuf_str(&path), SBX_CASSETTE_FILE_MAX, &text, &e) != 0) {
		problem(probs, "%s", e.msg);
		goto out_free;
	}
	rc = sbx_cassette_parse_text(text.data, text.len, sbx_strbuf_str(&path), cas, probs);
	if (what != SBX_CASSETTE_LINES && check_bodies(dir, cas, what, probs) > 0)
		rc = -1;
out_free:
	sbx_strbuf_free(&text);
	sbx_strbuf_free(&path);
	return rc;
}

/* ---- walking bodies/ ---- */

static int cmp_sha(const void *key, const void *elem)
{
	return strcmp(key, ((const body_ref *)elem)->b->sha256);
}

static bool is_hex_name(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

/* One folder bodies/ab: its files named ab<62 hex digits>. */
static int walk_folder(const char *path, const char *sub, const body_ref *refs, size_t nrefs,
		       sbx_cassette_body_fn fn, void *ud, sbx_err *err)
{
	DIR *d = opendir(path);
	if (d == NULL) {
		sbx_err_set(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		struct stat st;
		if (!is_hex_name(de->d_name, 64) || strncmp(de->d_name, sub, 2) != 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
			continue;
		bool named = bsearch(de->d_name, refs, nrefs, sizeof *refs, cmp_sha) != NULL;
		rc = fn(de->d_name, (uint64_t)st.st_size, named, ud);
	}
	closedir(d);
	return rc;
}

int sbx_cassette_walk_bodies(const char *dir, const sbx_cassette *cas, sbx_cassette_body_fn fn, void *ud,
			     sbx_err *err)
{
	sbx_strbuf path = SBX_STRBUF_INIT;
	sbx_strbuf_printf(&path, "%s/%s", dir, SBX_CASSETTE_BODIES);
	size_t nrefs = 0;
	body_ref *refs = collect_refs(cas, &nrefs);
	DIR *d = opendir(sbx_strbuf_str(&path));
	int rc = 0;
	if (refs == NULL || (d == NULL && errno != ENOENT)) {
		sbx_err_set(err, "%s: %s", sbx_strbuf_str(&path), refs == NULL ? "out of memory" : strerror(errno));
		rc = -1;
	}
	struct dirent *de;
	while (rc == 0 && d != NULL && (de = readdir(d)) != NULL) {
		if (!is_hex_name(de->d_name, 2))
			continue;
		sbx_strbuf sub = SBX_STRBUF_INIT;
		sbx_strbuf_printf(&sub, "%s/%s", sbx_strbuf_str(&path), de->d_name);
		rc = walk_folder(sbx_strbuf_str(&sub), de->d_name, refs, nrefs, fn, ud, err);
		sbx_strbuf_free(&sub);
	}
	if (d != NULL)
		closedir(d);
	free(refs);
	sbx_strbuf_free(&path);
	return rc;
}

/* ---- writing ---- */

static char *header_line(const sbx_cassette *cas)
{
	char now[32];
	cJSON *h = cJSON_CreateObject();
	cJSON *rq = cJSON_CreateArray();
	if (cas->created == NULL) {
		time_t t = time(NULL);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	cJSON_AddNumberToObject(h, "sbx_cassette", SBX_CASSETTE_VERSION);
	cJSON_AddStringToObject(h, "created", cas->created != NULL ? cas->created : now);
	for (size_t i = 0; i < cas->nredacted; i++)
		cJSON_AddItemToArray(rq, cJSON_CreateString(cas->redacted_query[i]));
	cJSON_AddItemToObject(h, "redacted_query", rq);
	char *s = cJSON_PrintUnformatted(h);
	cJSON_Delete(h);
	return s;
}

int sbx_cassette_text(sbx_cassette *cas, sbx_strbuf *out)
{
	char *h = header_line(cas);
	if (h == NULL)
		return -1;
	sbx_strbuf_printf(out, "%s\n", h);
	free(h);
	sbx_cassette_sort(cas);
	for (size_t i = 0; i < cas->nex; i++) {
		char *s = cJSON_PrintUnformatted(cas->ex[i].obj);
		if (s == NULL)
			return -1;
		sbx_strbuf_printf(out, "%s\n", s);
		free(s);
	}
	return out->oom ? -1 : 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = fd >= 0 ? fsync(fd) : -1;
	sbx_close_fd(&fd);
	return rc;
}

int sbx_cassette_write(const char *dir, sbx_cassette *cas, sbx_err *err)
{
	sbx_strbuf text = SBX_STRBUF_INIT, tmp = SBX_STRBUF_INIT, final = SBX_STRBUF_INIT;
	int rc = -1, fd = -1;
	char rnd[13] = "";
	if (sbx_cassette_text(cas, &text) != 0) {
		sbx_err_set(err, "%s: out of memory writing the cassette", dir);
		goto out_free;
	}
	if (sbx_random_hex(rnd, 12) != 0)
		snprintf(rnd, sizeof rnd, "%ld", (long)getpid());
	sbx_strbuf_printf(&tmp, "%s/.%s.tmp-%s", dir, SBX_CASSETTE_FILE, rnd);
	sbx_strbuf_printf(&final, "%s/%s", dir, SBX_CASSETTE_FILE);
	fd = open(sbx_strbuf_str(&tmp), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || sbx_write_all(fd, text.data, text.len) != 0 || fsync(fd) != 0) {
		sbx_err_set(err, "%s: %s", sbx_strbuf_str(&tmp), strerror(errno));
		goto out_unlink;
	}
	sbx_close_fd(&fd);
	if (rename(sbx_strbuf_str(&tmp), sbx_strbuf_str(&final)) != 0) {
		sbx_err_set(err, "%s: %s", sbx_strbuf_str(&final), strerror(errno));
		goto out_unlink;
	}
	if (fsync_dir(dir) != 0) {
		sbx_err_set(err, "%s: fsync: %s", dir, strerror(errno));
		goto out_free;
	}
	rc = 0;
	goto out_free;
out_unlink:
	sbx_close_fd(&fd);
	unlink(sbx_strbuf_str(&tmp));
out_free:
	sbx_strbuf_free(&final);
	sbx_strbuf_free(&tmp);
	sbx_strbuf_free(&text);
	return rc;
}

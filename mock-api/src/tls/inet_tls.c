/* inet_tls: the simulated internet's CA, leaves and TLS server side
 * (inet_tls.h). OpenSSL 3: the library curl, Python's ssl and Node in a
 * guest are built on, and the one libsbx's libcurl already loads.
 *
 * Keys are ECDSA P-256 (fast to make and to sign with; every client
 * accepts them). A leaf is issued by the CA for one name (DNS or IP
 * subjectAltName), valid from an hour ago for LEAF_DAYS, with the
 * extensions strict verifiers (Python 3.13's VERIFY_X509_STRICT) insist
 * on: key identifiers, key usage, serverAuth. Nothing here trusts a byte
 * of the client beyond what OpenSSL parsed: the name a leaf is made for is
 * checked (mock_inet_tls_name_ok) before it reaches the certificate. */
#define _GNU_SOURCE
#include "tls/inet_tls.h"
#include "sbx/sys.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define CA_DAYS 3650L
#define LEAF_DAYS 397L
#define CA_FILE "internet-ca.crt"
#define KEY_FILE "internet-ca.key"
#define CN_MAX 64 /* X.520's bound on commonName; the SAN carries the whole name */

#define CACHE_BUCKETS (2 * MOCK_INET_TLS_CACHE) /* a power of two: chains stay ~1 long */

typedef struct leaf {
	char name[MOCK_INET_TLS_NAME_MAX + 1];
	X509 *cert;
	int chain; /* the next entry of its bucket, -1 at the end */
} leaf;

struct mock_inet_tls {
	X509 *ca;
	EVP_PKEY *ca_key, *leaf_key;
	char *ca_pem;
	SSL_CTX *ctx;
	pthread_mutex_t lock; /* the cache; never held while signing */
	leaf cache[MOCK_INET_TLS_CACHE];
	int bucket[CACHE_BUCKETS]; /* the first entry of each hash bucket, -1 none */
	size_t n, next; /* entries used; the oldest, replaced next when full */
	mock_inet_tls_sign_fn on_sign; /* tests only: called before a leaf is signed */
	void *on_sign_arg;
};

/* How a handshake ended when it did not complete (fail_text). */
typedef enum tls_end { END_NONE, END_TIMEOUT, END_STOP, END_SSL, END_SYSCALL } tls_end;

struct mock_inet_tls_conn {
	mock_inet_tls *t;
	SSL *ssl;
	int fd;
	char fallback[MOCK_INET_TLS_NAME_MAX + 1];
	char name[MOCK_INET_TLS_NAME_MAX + 1]; /* the leaf's */
	int alert_in, alert_out;   /* the last alert the client sent, the last we sent; -1 none */
	tls_end end;
	unsigned long ossl_err;    /* OpenSSL's first error, at END_SSL */
	int sys_errno;             /* at END_SYSCALL, 0 for EOF */
};

/* OpenSSL's reason for the last failure, or "unknown". */
static const char *ossl_why(char *buf, size_t cap)
{
	unsigned long e = ERR_peek_last_error();

	if (e == 0)
		snprintf(buf, cap, "unknown");
	else
		ERR_error_string_n(e, buf, cap);
	ERR_clear_error();
	return buf;
}

int mock_inet_tls_name_ok(const char *name)
{
	size_t n = name != NULL ? strnlen(name, MOCK_INET_TLS_NAME_MAX + 1) : 0;
	struct in6_addr a6;

	if (n == 0 || n > MOCK_INET_TLS_NAME_MAX)
		return 0;
	if (inet_pton(AF_INET6, name, &a6) == 1)
		return 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (!isalnum(ch) && ch != '.' && ch != '-' && ch != '_')
			return 0;
	}
	return 1;
}

/* ---- certificates ---- */

static int set_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn;
	int ok;

	if (RAND_bytes(b, sizeof(b)) != 1)
		return -1;
	b[0] = (unsigned char)((b[0] & 0x7f) | 0x01); /* positive, 16 bytes long */
	bn = BN_bin2bn(b, sizeof(b), NULL);
	ok = bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

static int add_ext(X509 *issuer, X509 *x, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	ok = e != NULL && X509_add_ext(x, e, -1) == 1;
	X509_EXTENSION_free(e);
	return ok ? 0 : -1;
}

/* A v3 certificate for pub named cn, valid from an hour ago for days. */
static X509 *cert_base(const char *cn, EVP_PKEY *pub, long days)
{
	X509 *x = X509_new();
	X509_NAME *n = x != NULL ? X509_get_subject_name(x) : NULL;
	char short_cn[CN_MAX + 1];

	snprintf(short_cn, sizeof(short_cn), "%s", cn);
	if (x == NULL || X509_set_version(x, 2) != 1 || set_serial(x) != 0 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), days * 86400L) == NULL ||
	    X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)"sbx-harness", -1, -1, 0) != 1 ||
	    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)short_cn, -1, -1, 0) != 1 ||
	    X509_set_pubkey(x, pub) != 1) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* Ed25519/Ed448 keys sign without a separate digest. */
static const EVP_MD *sign_md(EVP_PKEY *key)
{
	int id = EVP_PKEY_get_id(key);

	return id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448 ? NULL : EVP_sha256();
}

static int make_ca(mock_inet_tls *t, sbx_err *err)
{
	char cn[64], hex[9], why[256];
	unsigned char r[4];

	if (RAND_bytes(r, sizeof(r)) != 1) {
		sbx_err_set(err, "internet CA: random bytes: %s", ossl_why(why, sizeof(why)));
		return -1;
	}
	snprintf(hex, sizeof(hex), "%02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
	/* a name of its own, so two mocks' CAs are told apart in a store */
	snprintf(cn, sizeof(cn), "sbx-mock simulated internet CA %s", hex);
	t->ca_key = EVP_EC_gen("P-256");
	t->ca = t->ca_key != NULL ? cert_base(cn, t->ca_key, CA_DAYS) : NULL;
	if (t->ca == NULL || X509_set_issuer_name(t->ca, X509_get_subject_name(t->ca)) != 1 ||
	    add_ext(t->ca, t->ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") != 0 ||
	    add_ext(t->ca, t->ca, NID_key_usage, "critical,keyCertSign,cRLSign") != 0 ||
	    add_ext(t->ca, t->ca, NID_subject_key_identifier, "hash") != 0 ||
	    add_ext(t->ca, t->ca, NID_authority_key_identifier, "keyid:always") != 0 ||
	    X509_sign(t->ca, t->ca_key, EVP_sha256()) <= 0) {
		sbx_err_set(err, "internet CA: making it: %s", ossl_why(why, sizeof(why)));
		return -1;
	}
	return 0;
}

/* A leaf for name (checked), signed by the CA; NULL on failure. */
static X509 *leaf_make(mock_inet_tls *t, const char *name)
{
	char san[MOCK_INET_TLS_NAME_MAX + 8];
	unsigned char a[16];
	bool ip = inet_pton(AF_INET, name, a) == 1 || inet_pton(AF_INET6, name, a) == 1;
	X509 *x = cert_base(name, t->leaf_key, LEAF_DAYS);

	snprintf(san, sizeof(san), "%s:%s", ip ? "IP" : "DNS", name);
	if (x == NULL || X509_set_issuer_name(x, X509_get_subject_name(t->ca)) != 1 ||
	    add_ext(t->ca, x, NID_basic_constraints, "critical,CA:FALSE") != 0 ||
	    add_ext(t->ca, x, NID_key_usage, "critical,digitalSignature") != 0 ||
	    add_ext(t->ca, x, NID_ext_key_usage, "serverAuth") != 0 ||
	    add_ext(t->ca, x, NID_subject_key_identifier, "hash") != 0 ||
	    add_ext(t->ca, x, NID_authority_key_identifier, "keyid:always") != 0 ||
	    add_ext(t->ca, x, NID_subject_alt_name, san) != 0 || X509_sign(x, t->ca_key, sign_md(t->ca_key)) <= 0) {
		X509_free(x);
		ERR_clear_error();
		return NULL;
	}
	return x;
}

/* ---- the CA's files ---- */

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return -1; /* an encrypted key is refused, never prompted for */
}

static int load_ca(mock_inet_tls *t, const char *crt, const char *key, const char *what, sbx_err *err)
{
	char why[256];
	FILE *f = fopen(crt, "re");

	if (f == NULL) {
		sbx_err_set(err, "%s %s: %s", what, crt, strerror(errno));
		return -1;
	}
	t->ca = PEM_read_X509(f, NULL, no_passphrase, NULL);
	fclose(f);
	if (t->ca == NULL) {
		sbx_err_set(err, "%s %s: not a PEM certificate (%s)", what, crt, ossl_why(why, sizeof(why)));
		return -1;
	}
	f = fopen(key, "re");
	if (f == NULL) {
		sbx_err_set(err, "%s %s: %s", what, key, strerror(errno));
		return -1;
	}
	t->ca_key = PEM_read_PrivateKey(f, NULL, no_passphrase, NULL);
	fclose(f);
	if (t->ca_key == NULL) {
		sbx_err_set(err, "%s %s: not an unencrypted PEM private key (%s)", what, key,
			    ossl_why(why, sizeof(why)));
		return -1;
	}
	if (X509_check_private_key(t->ca, t->ca_key) != 1) {
		ERR_clear_error();
		sbx_err_set(err, "%s %s: not the private key of %s", what, key, crt);
		return -1;
	}
	if (X509_check_ca(t->ca) == 0) {
		sbx_err_set(err, "%s %s: not a CA certificate (needs basicConstraints CA:TRUE)", what, crt);
		return -1;
	}
	if (X509_cmp_current_time(X509_get0_notAfter(t->ca)) <= 0 ||
	    X509_cmp_current_time(X509_get0_notBefore(t->ca)) >= 0) {
		sbx_err_set(err, "%s %s: the certificate is expired or not valid yet", what, crt);
		return -1;
	}
	return 0;
}

/* Makes path's directory entry durable (a rename is only once the
 * directory is synced); 0, or -1 with errno set. */
static int sync_dir_of(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, rc, e;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = fsync(fd);
	e = errno;
	close(fd);
	errno = e;
	return rc;
}

/* Writes path (mode) through a temporary name, synced before the rename
 * and the directory after it, so a crash or a power cut leaves the old
 * state or the whole file, never a half or empty one; 0, or -1 with err
 * naming the step and its own errno (or OpenSSL's reason). */
static int save_pem(const char *path, mode_t mode, X509 *cert, EVP_PKEY *key, sbx_err *err)
{
	char tmp[PATH_MAX], why[256];
	const char *step = NULL;
	int fd, e = 0;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL) {
		sbx_err_set(err, "--state-dir: create %s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if ((cert != NULL ? PEM_write_X509(f, cert) : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL)) != 1) {
		fclose(f);
		unlink(tmp);
		sbx_err_set(err, "--state-dir: write %s: %s", tmp, ossl_why(why, sizeof(why)));
		return -1;
	}
	if (fflush(f) != 0)
		step = "write";
	else if (fsync(fd) != 0)
		step = "fsync";
	e = errno;
	if (fclose(f) != 0 && step == NULL) {
		step = "write";
		e = errno;
	}
	if (step == NULL && rename(tmp, path) != 0) {
		step = "rename";
		e = errno;
	}
	if (step != NULL) {
		unlink(tmp);
		sbx_err_set(err, "--state-dir: %s %s: %s", step, step[0] == 'r' ? path : tmp, strerror(e));
		return -1;
	}
	if (sync_dir_of(path) != 0) {
		sbx_err_set(err, "--state-dir: fsync the directory of %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The CA kept in dir: loaded when both files are there, made and written
 * when neither is. */
static int keep_ca(mock_inet_tls *t, const char *dir, sbx_err *err)
{
	char crt[PATH_MAX], key[PATH_MAX];
	bool have_crt, have_key;

	if ((size_t)snprintf(crt, sizeof(crt), "%s/" CA_FILE, dir) >= sizeof(crt) ||
	    (size_t)snprintf(key, sizeof(key), "%s/" KEY_FILE, dir) >= sizeof(key)) {
		sbx_err_set(err, "--state-dir: path too long for the internet CA's files");
		return -1;
	}
	/* the state's own start makes it the same way, later */
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		sbx_err_set(err, "--state-dir %s: %s", dir, strerror(errno));
		return -1;
	}
	have_crt = access(crt, F_OK) == 0;
	have_key = access(key, F_OK) == 0;
	if (have_crt && have_key)
		return load_ca(t, crt, key, "--state-dir: the internet CA", err);
	if (have_crt || have_key) {
		sbx_err_set(err, "--state-dir: %s exists but %s does not: restore it, or remove both for a new CA",
			    have_crt ? crt : key, have_crt ? key : crt);
		return -1;
	}
	if (make_ca(t, err) != 0 || save_pem(key, 0600, NULL, t->ca_key, err) != 0)
		return -1;
	return save_pem(crt, 0644, t->ca, NULL, err);
}

static int spec_ca(mock_inet_tls *t, const char *spec, sbx_err *err)
{
	const char *comma = strchr(spec, ',');
	char crt[PATH_MAX];
	size_t n = comma != NULL ? (size_t)(comma - spec) : 0;

	if (comma == NULL || n == 0 || comma[1] == '\0' || strchr(comma + 1, ',') != NULL || n >= sizeof(crt)) {
		sbx_err_set(err, "--internet-ca: \"%s\" is not CERT,KEY (two PEM files)", spec);
		return -1;
	}
	memcpy(crt, spec, n);
	crt[n] = '\0';
	return load_ca(t, crt, comma + 1, "--internet-ca", err);
}

/* ---- the server context ---- */

/* A name that is not a host name or an address: refused with the alert
 * that says so, before any certificate is made. */
static int on_servername(SSL *ssl, int *alert, void *arg)
{
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);

	if (sni != NULL && !mock_inet_tls_name_ok(sni)) {
		*alert = SSL_AD_UNRECOGNIZED_NAME;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	return SSL_TLSEXT_ERR_OK;
}

/* FNV-1a: names are short, and a guest choosing colliding ones only
 * lengthens its own chain walk (at most the cache's 1,024 entries). */
static size_t name_bucket(const char *name)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++)
		h = (h ^ *p) * 16777619u;
	return h & (CACHE_BUCKETS - 1);
}

/* Lock held: the entry caching name, or -1. */
static int cache_find(const mock_inet_tls *t, const char *name)
{
	for (int i = t->bucket[name_bucket(name)]; i >= 0; i = t->cache[i].chain) {
		if (strcmp(t->cache[i].name, name) == 0)
			return i;
	}
	return -1;
}

/* Lock held: takes entry i out of its bucket's chain. */
static void cache_unlink(mock_inet_tls *t, int i)
{
	int *at = &t->bucket[name_bucket(t->cache[i].name)];

	while (*at >= 0 && *at != i)
		at = &t->cache[*at].chain;
	if (*at == i)
		*at = t->cache[i].chain;
}

/* Lock held: caches x (its reference passes to the cache) for name; the
 * oldest entry goes when the cache is full. */
static void cache_put(mock_inet_tls *t, const char *name, X509 *x)
{
	size_t b = name_bucket(name);
	int i;

	if (t->n < MOCK_INET_TLS_CACHE) {
		i = (int)t->n++;
	} else { /* full: the oldest goes */
		i = (int)t->next;
		cache_unlink(t, i);
		X509_free(t->cache[i].cert);
		t->next = (t->next + 1) % MOCK_INET_TLS_CACHE;
	}
	snprintf(t->cache[i].name, sizeof(t->cache[i].name), "%s", name);
	t->cache[i].cert = x;
	t->cache[i].chain = t->bucket[b];
	t->bucket[b] = i;
}

/* The leaf for name (lower-case, checked) with a reference of the
 * caller's (X509_free it), from the cache or made now; NULL when making
 * it failed. A new name is signed with the lock released, so a
 * handshake of a cached name never waits behind another's signing; two
 * threads that sign the same name at once both finish, the first to
 * come back is cached and the other's leaf is freed. */
static X509 *leaf_get(mock_inet_tls *t, const char *name)
{
	X509 *x = NULL, *made;
	int i;

	pthread_mutex_lock(&t->lock);
	i = cache_find(t, name);
	if (i >= 0 && X509_up_ref(t->cache[i].cert) == 1)
		x = t->cache[i].cert;
	pthread_mutex_unlock(&t->lock);
	if (x != NULL)
		return x;
	if (t->on_sign != NULL)
		t->on_sign(t->on_sign_arg, name);
	made = leaf_make(t, name);
	if (made == NULL)
		return NULL;
	pthread_mutex_lock(&t->lock);
	i = cache_find(t, name);
	if (i >= 0) { /* another signer won the race: its leaf serves */
		x = X509_up_ref(t->cache[i].cert) == 1 ? t->cache[i].cert : NULL;
	} else if (X509_up_ref(made) == 1) {
		cache_put(t, name, made);
		x = made;
		made = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	X509_free(made);
	return x;
}

int mock_inet_tls_leaf(mock_inet_tls *t, const char *name)
{
	X509 *x;

	if (!mock_inet_tls_name_ok(name))
		return -1;
	x = leaf_get(t, name);
	X509_free(x);
	return x != NULL ? 0 : -1;
}

void mock_inet_tls_set_sign_hook(mock_inet_tls *t, mock_inet_tls_sign_fn fn, void *arg)
{
	t->on_sign = fn;
	t->on_sign_arg = arg;
}

/* The leaf for the SNI (else the dialled address), from the cache or made
 * now; 1, or 0 (the handshake fails). */
static int on_cert(SSL *ssl, void *arg)
{
	mock_inet_tls *t = arg;
	mock_inet_tls_conn *c = SSL_get_app_data(ssl);
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	char name[MOCK_INET_TLS_NAME_MAX + 1];
	X509 *x;
	int ok;

	snprintf(name, sizeof(name), "%s", sni != NULL ? sni : c->fallback);
	if (!mock_inet_tls_name_ok(name))
		return 0;
	for (char *p = name; *p != '\0'; p++)
		*p = (char)tolower((unsigned char)*p);
	snprintf(c->name, sizeof(c->name), "%s", name);
	x = leaf_get(t, name);
	/* the SSL takes its own references: an eviction later frees nothing
	 * a handshake uses */
	ok = x != NULL && SSL_use_certificate(ssl, x) == 1 && SSL_use_PrivateKey(ssl, t->leaf_key) == 1;
	X509_free(x);
	return ok ? 1 : 0;
}

/* Keeps the alerts each side sent: why a handshake failed (a client
 * that does not trust the CA says so with one, unknown_ca mostly). */
static void on_info(const SSL *ssl, int where, int ret)
{
	mock_inet_tls_conn *c = SSL_get_app_data(ssl);

	if (c == NULL || (where & SSL_CB_ALERT) == 0)
		return;
	if ((where & SSL_CB_READ) != 0)
		c->alert_in = ret & 0xff;
	else
		c->alert_out = ret & 0xff;
}

static int finish(mock_inet_tls *t, sbx_err *err)
{
	char why[256];
	BIO *b = BIO_new(BIO_s_mem());
	char *data = NULL;
	long len = 0;
	X509 *probe;

	if (b == NULL || PEM_write_bio_X509(b, t->ca) != 1 || (len = BIO_get_mem_data(b, &data)) <= 0 ||
	    (t->ca_pem = strndup(data, (size_t)len)) == NULL) {
		BIO_free(b);
		sbx_err_set(err, "internet CA: PEM text: %s", ossl_why(why, sizeof(why)));
		return -1;
	}
	BIO_free(b);
	if (strlen(t->ca_pem) > 16384) { /* what a cell takes (CELL_TRUST_MAX) */
		sbx_err_set(err, "internet CA: its certificate is over 16 KiB of PEM");
		return -1;
	}
	t->leaf_key = EVP_EC_gen("P-256");
	t->ctx = SSL_CTX_new(TLS_server_method());
	if (t->leaf_key == NULL || t->ctx == NULL || SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION) != 1) {
		sbx_err_set(err, "internet TLS: server context: %s", ossl_why(why, sizeof(why)));
		return -1;
	}
	/* one ticket, as real servers send: right after the client's
	 * Finished it also acknowledges it, and a client with Nagle on
	 * (Python's) sends its request at once instead of after the
	 * server's delayed ACK (~40 ms a request with none). Stateless: no
	 * session cache is kept */
	SSL_CTX_set_num_tickets(t->ctx, 1);
	SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_tlsext_servername_callback(t->ctx, on_servername);
	SSL_CTX_set_cert_cb(t->ctx, on_cert, t);
	SSL_CTX_set_info_callback(t->ctx, on_info);
	/* a CA whose key cannot sign a leaf is refused now, not at the first
	 * guest's handshake */
	probe = leaf_make(t, "sbx-mock.invalid");
	if (probe == NULL) {
		sbx_err_set(err, "internet CA: its key cannot sign a server certificate");
		return -1;
	}
	X509_free(probe);
	return 0;
}

mock_inet_tls *mock_inet_tls_new(const char *ca_spec, const char *keep_dir, sbx_err *err)
{
	mock_inet_tls *t = calloc(1, sizeof(*t));
	int rc;

	if (t == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	for (size_t i = 0; i < CACHE_BUCKETS; i++)
		t->bucket[i] = -1;
	if (ca_spec != NULL)
		rc = spec_ca(t, ca_spec, err);
	else if (keep_dir != NULL)
		rc = keep_ca(t, keep_dir, err);
	else
		rc = make_ca(t, err);
	if (rc == 0)
		rc = finish(t, err);
	if (rc != 0) {
		mock_inet_tls_free(t);
		return NULL;
	}
	return t;
}

void mock_inet_tls_free(mock_inet_tls *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n; i++)
		X509_free(t->cache[i].cert);
	SSL_CTX_free(t->ctx);
	X509_free(t->ca);
	EVP_PKEY_free(t->ca_key);
	EVP_PKEY_free(t->leaf_key);
	free(t->ca_pem);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

const char *mock_inet_tls_ca_pem(const mock_inet_tls *t)
{
	return t->ca_pem;
}

size_t mock_inet_tls_cached(mock_inet_tls *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->n;
	pthread_mutex_unlock(&t->lock);
	return n;
}

/* ---- one connection ---- */

/* Waits for fd to be ready for events: END_NONE, or END_TIMEOUT at
 * end_ms, END_STOP when stopfd is readable. */
static tls_end wait_io(int fd, short events, int64_t end_ms, int stopfd)
{
	for (;;) {
		struct pollfd pf[2] = {{.fd = fd, .events = events}, {.fd = stopfd, .events = POLLIN}};
		int64_t left = end_ms - sbx_mono_ms();
		int r;

		if (left <= 0)
			return END_TIMEOUT;
		r = poll(pf, 2, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r > 0 && pf[1].revents != 0)
			return END_STOP;
		if (r > 0 && pf[0].revents != 0)
			return END_NONE;
		return r == 0 ? END_TIMEOUT : END_SYSCALL;
	}
}

/* After an SSL call returned r: true when it only has to wait for the
 * socket (and the wait succeeded); else why it ended, in c. */
static bool retry(mock_inet_tls_conn *c, int r, int64_t end_ms, int stopfd)
{
	int e = SSL_get_error(c->ssl, r);

	c->sys_errno = errno;
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		c->end = wait_io(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, end_ms, stopfd);
	else if (e == SSL_ERROR_SYSCALL)
		c->end = END_SYSCALL;
	else
		c->end = END_SSL;
	if (c->end == END_SSL)
		c->ossl_err = ERR_peek_error();
	if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && r == 0)
		c->sys_errno = 0; /* EOF */
	ERR_clear_error();
	return c->end == END_NONE;
}

/* An alert's name as RFC 8446 spells it. */
static const char *alert_name(int a)
{
	static const struct {
		int code;
		const char *name;
	} names[] = {{0, "close_notify"}, {10, "unexpected_message"}, {20, "bad_record_mac"},
		     {40, "handshake_failure"}, {42, "bad_certificate"}, {43, "unsupported_certificate"},
		     {44, "certificate_revoked"}, {45, "certificate_expired"}, {46, "certificate_unknown"},
		     {47, "illegal_parameter"}, {48, "unknown_ca"}, {49, "access_denied"}, {50, "decode_error"},
		     {51, "decrypt_error"}, {70, "protocol_version"}, {71, "insufficient_security"},
		     {80, "internal_error"}, {86, "inappropriate_fallback"}, {90, "user_canceled"},
		     {109, "missing_extension"}, {110, "unsupported_extension"}, {112, "unrecognized_name"},
		     {116, "certificate_required"}, {120, "no_application_protocol"}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (names[i].code == a)
			return names[i].name;
	}
	return "unknown alert";
}

/* Why c's handshake did not complete, in words a journal reader acts on. */
static void fail_text(const mock_inet_tls_conn *c, char *out, size_t cap)
{
	const char *state = SSL_state_string_long(c->ssl);
	const char *reason = c->ossl_err != 0 ? ERR_reason_error_string(c->ossl_err) : NULL;
	int a = c->alert_in;

	if (reason == NULL)
		reason = "no reason given";
	if (a == 42 || a == 43 || a == 45 || a == 46 || a == 48)
		snprintf(out, cap, "the client rejected the certificate: it sent the alert %s (%d); is the mock's CA "
			 "in its trust store?", alert_name(a), a);
	else if (a >= 0)
		snprintf(out, cap, "the client ended the handshake with the alert %s (%d)", alert_name(a), a);
	else if (c->alert_out == 112)
		snprintf(out, cap, "the internet refused the handshake with the alert unrecognized_name (112): "
			 "the SNI is not a host name or an address");
	else if (c->alert_out >= 0 || c->end == END_SSL)
		snprintf(out, cap, "not a TLS handshake the internet could read: %s%s%s%s", reason,
			 c->alert_out >= 0 ? " (it answered with the alert " : "",
			 c->alert_out >= 0 ? alert_name(c->alert_out) : "", c->alert_out >= 0 ? ")" : "");
	else if (c->end == END_TIMEOUT)
		snprintf(out, cap, "timed out: the client sent nothing more before the deadline (state: %s)", state);
	else if (c->end == END_STOP)
		snprintf(out, cap, "the mock stopped mid-handshake");
	else
		snprintf(out, cap, "the client %s mid-handshake (state: %s)",
			 c->sys_errno == 0 ? "closed the connection" : strerror(c->sys_errno), state);
}

/* The failure's name: the SNI when it was one a leaf could be made for,
 * else the dialled address. */
static void fail_name(const mock_inet_tls_conn *c, char *out, size_t cap)
{
	const char *sni = SSL_get_servername(c->ssl, TLSEXT_NAMETYPE_host_name);

	snprintf(out, cap, "%s", sni != NULL && mock_inet_tls_name_ok(sni) ? sni : c->fallback);
	for (char *p = out; *p != '\0'; p++)
		*p = (char)tolower((unsigned char)*p);
}

mock_inet_tls_conn *mock_inet_tls_accept(mock_inet_tls *t, int fd, const char *fallback, int64_t end_ms,
					 int stopfd, mock_inet_tls_fail *fail)
{
	mock_inet_tls_conn *c = calloc(1, sizeof(*c));
	sigset_t pipe_sig;

	/* OpenSSL writes with write(2): a client gone mid-answer must give
	 * EPIPE, not a SIGPIPE that kills a process embedding the mock (the
	 * signal is this thread's, and stays pending until it exits) */
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);
	if (fail != NULL) {
		snprintf(fail->name, sizeof(fail->name), "%s", fallback);
		snprintf(fail->why, sizeof(fail->why), "out of memory");
	}
	if (c == NULL)
		return NULL;
	c->t = t;
	c->fd = fd;
	c->alert_in = c->alert_out = -1;
	snprintf(c->fallback, sizeof(c->fallback), "%s", fallback);
	c->ssl = SSL_new(t->ctx);
	if (c->ssl == NULL || SSL_set_fd(c->ssl, fd) != 1) {
		ERR_clear_error();
		mock_inet_tls_close(c);
		return NULL;
	}
	SSL_set_app_data(c->ssl, c);
	for (;;) {
		int r = SSL_accept(c->ssl);

		if (r == 1)
			return c;
		if (!retry(c, r, end_ms, stopfd))
			break;
	}
	if (fail != NULL) {
		fail_name(c, fail->name, sizeof(fail->name));
		fail_text(c, fail->why, sizeof(fail->why));
	}
	SSL_free(c->ssl);
	free(c);
	return NULL;
}

size_t mock_inet_tls_read(mock_inet_tls_conn *c, char *buf, size_t cap, int64_t end_ms, int stopfd)
{
	int want = cap > INT_MAX ? INT_MAX : (int)cap;

	for (;;) {
		int r = SSL_read(c->ssl, buf, want);

		if (r > 0)
			return (size_t)r;
		if (!retry(c, r, end_ms, stopfd))
			return 0;
	}
}

long mock_inet_tls_try_read(mock_inet_tls_conn *c, char *buf, size_t cap)
{
	int r = SSL_read(c->ssl, buf, cap > INT_MAX ? INT_MAX : (int)cap);
	int e;

	if (r > 0)
		return r;
	e = SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return -2;
	ERR_clear_error();
	return 0;
}

int mock_inet_tls_pending(const mock_inet_tls_conn *c)
{
	return SSL_pending(c->ssl) > 0;
}

int mock_inet_tls_write(mock_inet_tls_conn *c, const char *buf, size_t len, int64_t end_ms, int stopfd)
{
	size_t off = 0;

	while (off < len) {
		size_t chunk = len - off > INT_MAX ? INT_MAX : len - off;
		int r = SSL_write(c->ssl, buf + off, (int)chunk);

		if (r > 0)
			off += (size_t)r;
		else if (!retry(c, r, end_ms, stopfd))
			return -1;
	}
	return 0;
}

const char *mock_inet_tls_name(const mock_inet_tls_conn *c)
{
	return c->name;
}

void mock_inet_tls_drop(mock_inet_tls_conn *c)
{
	if (c == NULL)
		return;
	SSL_set_quiet_shutdown(c->ssl, 1); /* no close_notify: the connection is cut */
	SSL_free(c->ssl);
	ERR_clear_error();
	free(c);
}

void mock_inet_tls_close(mock_inet_tls_conn *c)
{
	if (c == NULL)
		return;
	if (c->ssl != NULL) {
		/* close_notify, once: the peer's is not waited for */
		if (SSL_is_init_finished(c->ssl))
			SSL_shutdown(c->ssl);
		ERR_clear_error();
		SSL_free(c->ssl);
	}
	free(c);
}

/* The simulated internet's TLS (inet_tls.h): the CA's sources and their
 * errors, and the server side of real handshakes over a socketpair with an
 * OpenSSL client that verifies against the CA's certificate only. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls/inet_tls.h"
#include "sbx/sys.h"

static char dir[] = "/tmp/sbx-inet-tls-XXXXXX";

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void assert_err_has(const sbx_err *err, const char *part)
{
	if (strstr(err->msg, part) == NULL)
		fail_msg("error \"%s\" lacks \"%s\"", err->msg, part);
}

/* ---- a handshake: the server side on a thread, a verifying client here ---- */

typedef struct server_side {
	mock_inet_tls *t;
	int fd, stopfd;
	char got[256];
	char name[MOCK_INET_TLS_NAME_MAX + 1];
	bool accepted;
	mock_inet_tls_fail fail; /* why, when not accepted */
} server_side;

static void *serve(void *arg)
{
	server_side *s = arg;
	mock_inet_tls_conn *c = mock_inet_tls_accept(s->t, s->fd, "192.0.2.10", sbx_mono_ms() + 5000, s->stopfd, &s->fail);

	s->accepted = c != NULL;
	if (c != NULL) {
		size_t n = mock_inet_tls_read(c, s->got, sizeof(s->got) - 1, sbx_mono_ms() + 5000, s->stopfd);

		s->got[n] = '\0';
		snprintf(s->name, sizeof(s->name), "%s", mock_inet_tls_name(c));
		mock_inet_tls_write(c, "pong", 4, sbx_mono_ms() + 5000, s->stopfd);
		mock_inet_tls_close(c);
	}
	close(s->fd);
	return NULL;
}

/* A client of t's server that trusts only the CA trust_pem; sni NULL:
 * none sent. 1 when the handshake verified host, a request went through
 * and "pong" came back; the server's view in *s, the client's verify
 * result in *verify. */
static int handshake_trusting(mock_inet_tls *t, const char *trust_pem, const char *sni, const char *host,
			      server_side *s, long *verify)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	BIO *pem = BIO_new_mem_buf(trust_pem, -1);
	X509 *ca = PEM_read_bio_X509(pem, NULL, NULL, NULL);
	int sv[2], ok = 0;
	pthread_t th;
	SSL *ssl;
	char buf[16] = "";

	assert_non_null(ca);
	X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	memset(s, 0, sizeof(*s));
	s->t = t;
	s->fd = sv[1];
	s->stopfd = -1; /* poll ignores a negative fd: no stop */
	assert_int_equal(pthread_create(&th, NULL, serve, s), 0);
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, sv[0]);
	if (sni != NULL)
		SSL_set_tlsext_host_name(ssl, sni);
	SSL_set1_host(ssl, host);
	if (SSL_connect(ssl) == 1 && SSL_write(ssl, "ping", 4) == 4 && SSL_read(ssl, buf, sizeof(buf) - 1) == 4)
		ok = strncmp(buf, "pong", 4) == 0;
	*verify = SSL_get_verify_result(ssl);
	ERR_clear_error();
	SSL_free(ssl);
	close(sv[0]);
	pthread_join(th, NULL);
	X509_free(ca);
	BIO_free(pem);
	SSL_CTX_free(ctx);
	return ok;
}

static int handshake(mock_inet_tls *t, const char *sni, const char *host, server_side *s)
{
	long verify;

	return handshake_trusting(t, mock_inet_tls_ca_pem(t), sni, host, s, &verify);
}

static void sni_gets_a_verified_leaf(void **state)
{
	sbx_err err = {{0}};
	mock_inet_tls *t = mock_inet_tls_new(NULL, NULL, &err);
	server_side s;

	assert_non_null(t);
	assert_int_equal(handshake(t, "Example.COM", "example.com", &s), 1);
	assert_true(s.accepted);
	assert_string_equal(s.got, "ping");
	assert_string_equal(s.name, "example.com");
	/* no SNI: the leaf names the dialled address (an IP SAN) */
	assert_int_equal(handshake(t, NULL, "192.0.2.10", &s), 1);
	assert_string_equal(s.name, "192.0.2.10");
	/* the leaf is the name's alone: another name does not verify */
	assert_int_equal(handshake(t, "example.com", "www.example.com", &s), 0);
	mock_inet_tls_free(t);
}

static void a_stranger_ca_does_not_verify(void **state)
{
	sbx_err err = {{0}};
	mock_inet_tls *a = mock_inet_tls_new(NULL, NULL, &err), *b = mock_inet_tls_new(NULL, NULL, &err);
	server_side s;
	long verify = 0;

	assert_non_null(a);
	assert_non_null(b);
	assert_string_not_equal(mock_inet_tls_ca_pem(a), mock_inet_tls_ca_pem(b));
	/* b's server, a client trusting a's CA only */
	assert_int_equal(handshake_trusting(b, mock_inet_tls_ca_pem(a), "example.com", "example.com", &s, &verify), 0);
	assert_int_equal(verify, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
	assert_false(s.accepted);
	/* and the server knows why: the client's alert, kept for the journal */
	if (strstr(s.fail.why, "rejected the certificate") == NULL || strstr(s.fail.why, "unknown_ca (48)") == NULL)
		fail_msg("why \"%s\" does not say the client rejected the CA (unknown_ca)", s.fail.why);
	assert_string_equal(s.fail.name, "example.com");
	mock_inet_tls_free(a);
	mock_inet_tls_free(b);
}

static void bad_names_and_garbage_end_cleanly(void **state)
{
	sbx_err err = {{0}};
	mock_inet_tls *t = mock_inet_tls_new(NULL, NULL, &err);
	server_side s;
	int sv[2];
	pthread_t th;
	static const char garbage[] = "\x16\x03\x01\x00\x10 not a client hello at all";

	assert_non_null(t);
	assert_int_equal(handshake(t, "bad name!", "bad name!", &s), 0);
	assert_false(s.accepted);
	if (strstr(s.fail.why, "refused the handshake with the alert unrecognized_name") == NULL)
		fail_msg("why \"%s\" does not name the unrecognized_name alert", s.fail.why);
	assert_string_equal(s.fail.name, "192.0.2.10"); /* not the bad name */
	assert_int_equal(mock_inet_tls_cached(t), 0); /* no leaf was made for it */
	assert_false(mock_inet_tls_name_ok(""));
	assert_false(mock_inet_tls_name_ok("a/b"));
	assert_false(mock_inet_tls_name_ok("a,DNS:evil.example"));
	assert_true(mock_inet_tls_name_ok("2001:db8::10"));
	{
		char longest[MOCK_INET_TLS_NAME_MAX + 2];

		memset(longest, 'a', sizeof(longest) - 1);
		longest[sizeof(longest) - 1] = '\0';
		assert_false(mock_inet_tls_name_ok(longest));
		longest[MOCK_INET_TLS_NAME_MAX] = '\0';
		assert_true(mock_inet_tls_name_ok(longest));
	}
	/* garbage, then the client goes away: accept gives up, no crash */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	memset(&s, 0, sizeof(s));
	s.t = t;
	s.fd = sv[1];
	s.stopfd = -1;
	assert_int_equal(pthread_create(&th, NULL, serve, &s), 0);
	assert_int_equal(write(sv[0], garbage, sizeof(garbage) - 1), (ssize_t)(sizeof(garbage) - 1));
	shutdown(sv[0], SHUT_WR);
	pthread_join(th, NULL);
	close(sv[0]);
	assert_false(s.accepted);
	if (strstr(s.fail.why, "not a TLS handshake the internet could read") == NULL)
		fail_msg("why \"%s\" does not say the bytes were no handshake", s.fail.why);
	mock_inet_tls_free(t);
}

/* ---- signing outside the cache's lock ---- */

typedef struct held {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int in, want;       /* signers in the hook; how many it waits for */
	bool release, timed_out, done;
	mock_inet_tls *t;
	int rc;
	server_side s;
} held;

static struct timespec in_s(int s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += s;
	return ts;
}

/* The sign hook: holds each signer until want signers are in or the test
 * releases them (10 s at most: a signer held under the cache's lock
 * would hold every other forever, and the test would hang instead of
 * failing). */
static void hold_signer(void *arg, const char *name)
{
	held *h = arg;
	struct timespec until = in_s(10);

	(void)name;
	pthread_mutex_lock(&h->m);
	h->in++;
	pthread_cond_broadcast(&h->cv);
	while (!h->release && h->in < h->want && !h->timed_out) {
		if (pthread_cond_timedwait(&h->cv, &h->m, &until) != 0)
			h->timed_out = true;
	}
	pthread_mutex_unlock(&h->m);
}

static void *sign_new(void *arg)
{
	held *h = arg;
	int rc = mock_inet_tls_leaf(h->t, "new.example");

	pthread_mutex_lock(&h->m);
	h->rc |= rc;
	pthread_mutex_unlock(&h->m);
	return NULL;
}

static void *known_handshake(void *arg)
{
	held *h = arg;
	int ok = handshake(h->t, "known.example", "known.example", &h->s);

	pthread_mutex_lock(&h->m);
	h->done = ok == 1;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->m);
	return NULL;
}

static void held_init(held *h, mock_inet_tls *t, int want)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->m, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->t = t;
	h->want = want;
	mock_inet_tls_set_sign_hook(t, hold_signer, h);
}

static void a_new_name_being_signed_holds_no_known_one(void **state)
{
	sbx_err err = {{0}};
	mock_inet_tls *t = mock_inet_tls_new(NULL, NULL, &err);
	struct timespec until = in_s(10);
	pthread_t signer, client;
	held h;
	bool done;

	assert_non_null(t);
	assert_int_equal(mock_inet_tls_leaf(t, "known.example"), 0);
	held_init(&h, t, 99);
	assert_int_equal(pthread_create(&signer, NULL, sign_new, &h), 0);
	pthread_mutex_lock(&h.m);
	while (h.in == 0)
		pthread_cond_wait(&h.cv, &h.m);
	pthread_mutex_unlock(&h.m);
	/* new.example's signer is held: a handshake of the cached name
	 * completes all the same */
	assert_int_equal(pthread_create(&client, NULL, known_handshake, &h), 0);
	pthread_mutex_lock(&h.m);
	while (!h.done && pthread_cond_timedwait(&h.cv, &h.m, &until) == 0)
		;
	done = h.done;
	h.release = true;
	pthread_cond_broadcast(&h.cv);
	pthread_mutex_unlock(&h.m);
	pthread_join(signer, NULL);
	pthread_join(client, NULL);
	assert_true(done); /* false: it waited for the other name's signing */
	assert_int_equal(h.rc, 0);
	assert_int_equal(mock_inet_tls_cached(t), 2);
	mock_inet_tls_free(t);
}

static void two_signers_of_one_name_cache_one_leaf(void **state)
{
	sbx_err err = {{0}};
	mock_inet_tls *t = mock_inet_tls_new(NULL, NULL, &err);
	pthread_t a, b;
	held h;
	server_side s;

	assert_non_null(t);
	held_init(&h, t, 2); /* both sign at once: neither is let through alone */
	assert_int_equal(pthread_create(&a, NULL, sign_new, &h), 0);
	assert_int_equal(pthread_create(&b, NULL, sign_new, &h), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	assert_false(h.timed_out); /* true: one signer waited for the other's lock */
	assert_int_equal(h.in, 2);
	assert_int_equal(h.rc, 0);
	assert_int_equal(mock_inet_tls_cached(t), 1); /* the loser's leaf was freed (ASan, valgrind) */
	mock_inet_tls_set_sign_hook(t, NULL, NULL);
	assert_int_equal(handshake(t, "new.example", "new.example", &s), 1);
	assert_int_equal(mock_inet_tls_cached(t), 1);
	mock_inet_tls_free(t);
}

/* ---- the SNI read without a handshake ---- */

/* A real ClientHello (OpenSSL's client) naming sni, into buf: its length. */
static size_t client_hello(const char *sni, unsigned char *buf, size_t cap)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = SSL_new(ctx);
	BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
	int n;

	SSL_set_bio(ssl, in, out);
	SSL_set_tlsext_host_name(ssl, sni);
	assert_int_equal(SSL_connect(ssl), -1); /* wants the server's answer */
	n = BIO_read(out, buf, (int)cap);
	assert_true(n > 0);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return (size_t)n;
}

static void peeked(const unsigned char *hello, size_t len, char *out, size_t cap)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(write(sv[0], hello, len), (ssize_t)len);
	mock_inet_tls_peek_sni(sv[1], sbx_mono_ms() + 5000, -1, out, cap);
	close(sv[0]);
	close(sv[1]);
}

static void a_peeked_sni_with_a_nul_is_no_name(void **state)
{
	unsigned char hello[4096];
	size_t len = client_hello("up.examplex", hello, sizeof(hello));
	char got[MOCK_INET_TLS_NAME_MAX + 1];
	unsigned char *x = memmem(hello, len, "up.examplex", 11);

	peeked(hello, len, got, sizeof(got));
	assert_string_equal(got, "up.examplex");
	/* "up.example\0" is not up.example: a pattern must not see it so */
	assert_non_null(x);
	x[10] = '\0';
	peeked(hello, len, got, sizeof(got));
	assert_string_equal(got, "");
}

static void the_leaf_cache_is_bounded(void **state)
{
	sbx_err err = {{0}};
	mock_inet_tls *t = mock_inet_tls_new(NULL, NULL, &err);
	server_side s;
	char name[64];

	assert_non_null(t);
	/* the first leaves by real handshakes, the rest issued directly (a
	 * thousand handshakes take 90 s under valgrind) */
	for (int i = 0; i < MOCK_INET_TLS_CACHE + 8; i++) {
		snprintf(name, sizeof(name), "h%d.example", i);
		if (i < 4)
			assert_int_equal(handshake(t, name, name, &s), 1);
		else
			assert_int_equal(mock_inet_tls_leaf(t, name), 0);
	}
	assert_int_equal(mock_inet_tls_cached(t), MOCK_INET_TLS_CACHE);
	assert_int_equal(mock_inet_tls_leaf(t, "not a name"), -1);
	/* an evicted name gets a new leaf that verifies */
	assert_int_equal(handshake(t, "h0.example", "h0.example", &s), 1);
	mock_inet_tls_free(t);
}

static void the_ca_is_kept_in_the_state_dir(void **state)
{
	sbx_err err = {{0}};
	char sd[256], key[300], crt[300];
	mock_inet_tls *a, *b;
	struct stat st;

	snprintf(sd, sizeof(sd), "%s/state", dir);
	snprintf(key, sizeof(key), "%s/internet-ca.key", sd);
	snprintf(crt, sizeof(crt), "%s/internet-ca.crt", sd);
	a = mock_inet_tls_new(NULL, sd, &err);
	assert_non_null(a);
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	b = mock_inet_tls_new(NULL, sd, &err);
	assert_non_null(b);
	assert_string_equal(mock_inet_tls_ca_pem(a), mock_inet_tls_ca_pem(b));
	mock_inet_tls_free(b);
	/* the kept files as --internet-ca: the same CA */
	{
		char spec[700];

		snprintf(spec, sizeof(spec), "%s,%s", crt, key);
		b = mock_inet_tls_new(spec, NULL, &err);
		assert_non_null(b);
		assert_string_equal(mock_inet_tls_ca_pem(a), mock_inet_tls_ca_pem(b));
		mock_inet_tls_free(b);
	}
	/* one of the two gone: refused, naming both */
	assert_int_equal(unlink(key), 0);
	assert_null(mock_inet_tls_new(NULL, sd, &err));
	assert_err_has(&err, "internet-ca.crt exists but");
	assert_err_has(&err, "internet-ca.key does not");
	mock_inet_tls_free(a);
	unlink(crt);
	rmdir(sd);
}

static void bad_ca_files_are_refused_by_name(void **state)
{
	sbx_err err = {{0}};
	char junk[300], spec[700], crt[300], key[300], other[300];
	mock_inet_tls *a, *b;

	snprintf(junk, sizeof(junk), "%s/junk.pem", dir);
	write_text(junk, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n");
	assert_null(mock_inet_tls_new("no-comma", NULL, &err));
	assert_err_has(&err, "is not CERT,KEY");
	assert_null(mock_inet_tls_new(",key", NULL, &err));
	assert_err_has(&err, "is not CERT,KEY");
	snprintf(spec, sizeof(spec), "%s,%s", junk, junk);
	assert_null(mock_inet_tls_new(spec, NULL, &err));
	assert_err_has(&err, "not a PEM certificate");
	assert_err_has(&err, junk);
	assert_null(mock_inet_tls_new("/nonexistent/c.pem,/nonexistent/k.pem", NULL, &err));
	assert_err_has(&err, "/nonexistent/c.pem: No such file");
	/* a CA and another CA's key */
	snprintf(crt, sizeof(crt), "%s/a/internet-ca.crt", dir);
	snprintf(other, sizeof(other), "%s/b", dir);
	snprintf(key, sizeof(key), "%s/b/internet-ca.key", dir);
	snprintf(spec, sizeof(spec), "%s/a", dir);
	a = mock_inet_tls_new(NULL, spec, &err);
	b = mock_inet_tls_new(NULL, other, &err);
	assert_non_null(a);
	assert_non_null(b);
	snprintf(spec, sizeof(spec), "%s,%s", crt, key);
	assert_null(mock_inet_tls_new(spec, NULL, &err));
	assert_err_has(&err, "not the private key of");
	/* a key file that is a certificate */
	snprintf(spec, sizeof(spec), "%s,%s", crt, crt);
	assert_null(mock_inet_tls_new(spec, NULL, &err));
	assert_err_has(&err, "not an unencrypted PEM private key");
	mock_inet_tls_free(a);
	mock_inet_tls_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sni_gets_a_verified_leaf),
		cmocka_unit_test(a_stranger_ca_does_not_verify),
		cmocka_unit_test(bad_names_and_garbage_end_cleanly),
		cmocka_unit_test(the_leaf_cache_is_bounded),
		cmocka_unit_test(a_new_name_being_signed_holds_no_known_one),
		cmocka_unit_test(two_signers_of_one_name_cache_one_leaf),
		cmocka_unit_test(a_peeked_sni_with_a_nul_is_no_name),
		cmocka_unit_test(the_ca_is_kept_in_the_state_dir),
		cmocka_unit_test(bad_ca_files_are_refused_by_name),
	};
	int rc;
	char cmd[128];

	if (mkdtemp(dir) == NULL)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		rc = rc != 0 ? rc : 1;
	return rc;
}

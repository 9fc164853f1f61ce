/* java_truststore: a PKCS#12 truststore of the mock's CA and the system's
 * CAs for the JDK (java_truststore.h). */
#include "server/java_truststore.h"

#include <limits.h>
#include <stdio.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

/* Oracle's attribute that makes a certificate bag a trusted entry in the
 * JDK's PKCS12 keystore, and its value: trusted for any purpose
 * (anyExtendedKeyUsage), what keytool -importcert writes. */
#define JDK_TRUSTED_KEY_USAGE "2.16.840.1.113894.746875.1.1"
#define ANY_EXTENDED_KEY_USAGE "2.5.29.37.0"

/* cert as a bag with its alias and the JDK's trust attribute, pushed on
 * bags; false when OpenSSL could not. */
static bool add_bag(STACK_OF(PKCS12_SAFEBAG) *bags, X509 *cert, const char *alias, const ASN1_OBJECT *any)
{
	PKCS12_SAFEBAG *bag = PKCS12_SAFEBAG_create_cert(cert);

	if (bag == NULL)
		return false;
	if (PKCS12_add_friendlyname_asc(bag, alias, -1) != 1 ||
	    PKCS12_add1_attr_by_txt(bag, JDK_TRUSTED_KEY_USAGE, V_ASN1_OBJECT, (const unsigned char *)any, -1) != 1 ||
	    sk_PKCS12_SAFEBAG_push(bags, bag) <= 0) {
		PKCS12_SAFEBAG_free(bag);
		return false;
	}
	return true;
}

/* Every certificate of the PEM text pem as a bag "system-N", up to the
 * limit; what does not parse ends the reading (as OpenSSL's own loading of
 * a CA file does). false only when OpenSSL failed. */
static bool add_system(STACK_OF(PKCS12_SAFEBAG) *bags, const char *pem, size_t len, const ASN1_OBJECT *any)
{
	BIO *in;
	X509 *cert;
	char alias[32];
	bool ok = true;

	if (pem == NULL || len == 0)
		return true;
	in = BIO_new_mem_buf(pem, len > INT_MAX ? INT_MAX : (int)len);
	if (in == NULL)
		return false;
	for (int n = 0; ok && n < JAVA_TRUSTSTORE_MAX_CERTS; n++) {
		cert = PEM_read_bio_X509(in, NULL, NULL, NULL);
		if (cert == NULL)
			break;
		snprintf(alias, sizeof(alias), "system-%d", n);
		ok = add_bag(bags, cert, alias, any);
		X509_free(cert);
	}
	ERR_clear_error(); /* the end of the text reads as a PEM error */
	BIO_free(in);
	return ok;
}

/* The mock's CA from ca_pem (its first certificate), as bag "sbx-mock-ca". */
static int add_ca(STACK_OF(PKCS12_SAFEBAG) *bags, const char *ca_pem, const ASN1_OBJECT *any, sbx_err *err)
{
	BIO *in = BIO_new_mem_buf(ca_pem, -1);
	X509 *ca = in != NULL ? PEM_read_bio_X509(in, NULL, NULL, NULL) : NULL;
	bool ok = ca != NULL && add_bag(bags, ca, "sbx-mock-ca", any);

	BIO_free(in);
	X509_free(ca);
	if (ca == NULL) {
		sbx_err_set(err, "the mock's CA: no PEM certificate in it");
		return -1;
	}
	if (!ok)
		sbx_err_set(err, "the mock's CA: OpenSSL could not make a PKCS#12 bag of it");
	return ok ? 0 : -1;
}

/* bags as one unencrypted safe (nid -1: plain data, no password) in a
 * PKCS#12 without MAC, its DER appended to out. */
static int to_der(STACK_OF(PKCS12_SAFEBAG) *bags, sbx_strbuf *out, sbx_err *err)
{
	STACK_OF(PKCS7) *safes = NULL;
	PKCS12 *p12 = NULL;
	unsigned char *der = NULL;
	int len = -1;

	if (PKCS12_add_safe(&safes, bags, -1, 0, NULL) == 1)
		p12 = PKCS12_add_safes(safes, 0);
	if (p12 != NULL)
		len = i2d_PKCS12(p12, &der);
	if (len <= 0 || !sbx_strbuf_append(out, der, (size_t)len)) {
		sbx_err_set(err, "the Java truststore: OpenSSL could not encode it (PKCS#12)");
		len = -1;
	}
	OPENSSL_free(der);
	PKCS12_free(p12);
	sk_PKCS7_pop_free(safes, PKCS7_free);
	return len > 0 ? 0 : -1;
}

int java_truststore_der(const char *ca_pem, const char *system_pem, size_t system_len,
			sbx_strbuf *out, sbx_err *err)
{
	STACK_OF(PKCS12_SAFEBAG) *bags = sk_PKCS12_SAFEBAG_new_null();
	ASN1_OBJECT *any = OBJ_txt2obj(ANY_EXTENDED_KEY_USAGE, 1);
	int rc = -1;

	if (bags == NULL || any == NULL) {
		sbx_err_set(err, "the Java truststore: out of memory");
		goto out_free;
	}
	if (add_ca(bags, ca_pem, any, err) != 0)
		goto out_free;
	if (!add_system(bags, system_pem, system_len, any)) {
		sbx_err_set(err, "the Java truststore: OpenSSL could not make a PKCS#12 bag of a system CA");
		goto out_free;
	}
	rc = to_der(bags, out, err);
out_free:
	ASN1_OBJECT_free(any);
	sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
	ERR_clear_error();
	return rc;
}

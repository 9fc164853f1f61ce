/* java_truststore: the mock's CA as a Java truststore (mock-api/README.md,
 * "One line"). Java reads neither NODE_EXTRA_CA_CERTS nor SSL_CERT_FILE:
 * its trust comes from a keystore, which JAVA_TOOL_OPTIONS can name
 * (-Djavax.net.ssl.trustStore=FILE -Djavax.net.ssl.trustStoreType=PKCS12).
 * Naming one replaces the JDK's own cacerts, so the store holds the
 * system's CAs too (public names still verify when the machine is online).
 *
 * The file is PKCS#12 without a password: no MAC and certificates stored
 * unencrypted (nothing in it is secret), which the JDK loads when
 * javax.net.ssl.trustStorePassword is unset (tested: OpenJDK 17;
 * java_truststore_preview). A
 * certificate bag is a trusted entry for the JDK only with Oracle's
 * trusted-key-usage attribute, so every bag carries it. Program only, like
 * runtime_env (its caller). */
#ifndef SBX_MOCK_JAVA_TRUSTSTORE_H
#define SBX_MOCK_JAVA_TRUSTSTORE_H

#include <stddef.h>

#include "sbx/err.h"
#include "sbx/strbuf.h"

/* At most this many certificates from the system bundle (Debian's has
 * about 150; mock-api/LIMITS.md): the ones past it are left out. */
#define JAVA_TRUSTSTORE_MAX_CERTS 1000

/* The DER of a PKCS#12 truststore holding ca_pem's certificate (alias
 * "sbx-mock-ca") and every certificate of the PEM bundle system_pem
 * (aliases "system-N"; NULL or "" for none) into out. 0, or -1 with err
 * (ca_pem holds no certificate, or OpenSSL failed). A certificate of the
 * system bundle that does not parse is skipped, as OpenSSL's own loading
 * stops at it. */
int java_truststore_der(const char *ca_pem, const char *system_pem, size_t system_len,
			sbx_strbuf *out, sbx_err *err);

#endif

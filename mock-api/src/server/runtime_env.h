/* runtime_env: the sbx-mock program's announcement of itself to the shells
 * of its user (mock-api/README.md, "One line"). At start it writes, in a
 * directory of its own under the per-user runtime directory
 * (sbx_local_runtime_dir, 0700, named by its pid), the mock's CA (ca.pem),
 * the system's CA bundle plus that CA (ca-bundle.pem), the same as a Java
 * truststore (truststore.p12, java_truststore.h) and an env file that
 * `sbxctl mock env` turns into export lines; at a clean stop it removes
 * them. Writes nothing a start line does not already print (the admin token
 * is printed), never an API key. Program only: the embedding API
 * (sbx_mock_start) writes none of this. */
#ifndef SBX_MOCK_RUNTIME_ENV_H
#define SBX_MOCK_RUNTIME_ENV_H

#include <limits.h>
#include <stdbool.h>

#include "sbx/mock.h"

/* The system's CA bundle is read up to this many bytes (Debian's is about
 * 220 KB; mock-api/LIMITS.md): a longer one is cut there, at worst in the
 * middle of a certificate, which its readers then skip. */
#define MOCK_RUNTIME_BUNDLE_MAX (4u << 20)

typedef struct mock_runtime {
	char dir[PATH_MAX];          /* this mock's own directory, "" when none was made */
	char note[PATH_MAX + 256];   /* why nothing was written, when so */
} mock_runtime;

/* Writes this mock's files; -1 with rt->note saying why (the mock runs on:
 * the files are a convenience, the start lines say the same). any_key:
 * whether any API key is accepted; images: the store in use or NULL. */
int mock_runtime_publish(mock_runtime *rt, const sbx_mock *mock, bool any_key, const char *images);
/* Removes what publish wrote (nothing when it wrote nothing). */
void mock_runtime_remove(mock_runtime *rt);

#endif

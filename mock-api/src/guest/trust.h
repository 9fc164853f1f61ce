/* trust: the guests' system trust bundle, one file per mock and root,
 * bound read-only into every cell (trust.c; INTERNET.md "What a guest
 * trusts"). */
#ifndef SBX_MOCK_GUEST_TRUST_H
#define SBX_MOCK_GUEST_TRUST_H

#include <stddef.h>

#include "sbx/err.h"

/* The bundle for a cell under work_dir whose root is image_dir (NULL: the
 * host skeleton): that root's /etc/ssl/certs/ca-certificates.crt plus pem,
 * written in work_dir the first time it is asked for. Into path: the file
 * for the host skeleton; for an image, a directory (an overlay layer)
 * holding it at etc/ssl/certs/ca-certificates.crt. 0, or -1 with err
 * naming the file. */
int mock_trust_bundle(const char *work_dir, const char *image_dir, const char *pem, char *path, size_t cap,
		      sbx_err *err);
/* Removes work_dir's bundles (its mock stops; cells running keep theirs). */
void mock_trust_forget(const char *work_dir);

#endif

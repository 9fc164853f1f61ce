/* layer_copy: a template's layer copied in the process (cp -a's result
 * without its fork and exec). */
#ifndef SBX_MOCK_LAYER_COPY_H
#define SBX_MOCK_LAYER_COPY_H

#include <stddef.h>

/* Copies the tree src to dst (which must not exist): directories, files
 * (their holes kept), symlinks, devices (an overlay's whiteouts are 0/0
 * character devices), FIFOs and sockets, each with its owner, mode, times
 * and extended attributes (an overlay's opaque directories are xattrs);
 * files of more than one link stay linked. Below src the walk goes by
 * descriptors and follows no link: an entry swapped while it is copied
 * fails the copy ("changed during the copy"). What the copy holds on the
 * disk (du -s's count) goes to *bytes (NULL: not wanted); past limit
 * bytes (0: none) the copy stops and fails saying so. 0, or -1 with why
 * (the path and the error); a failed copy leaves dst partial, for the
 * caller to remove. */
int mock_layer_copy(const char *src, const char *dst, unsigned long long limit, unsigned long long *bytes,
		    char *why, size_t cap);

/* The blocks under dir, in bytes (du -s's count: a hard-linked file once,
 * a sparse file's holes not); 0 when unreadable. */
unsigned long long mock_layer_bytes(const char *dir);

#endif

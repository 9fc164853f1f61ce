/* layer_copy: a template's layer copied in the process (cp -a's result
 * without its fork and exec). */
#ifndef SBX_MOCK_LAYER_COPY_H
#define SBX_MOCK_LAYER_COPY_H

#include <stddef.h>

/* Copies the tree src to dst (which must not exist): directories, files,
 * symlinks, devices (an overlay's whiteouts are 0/0 character devices),
 * FIFOs and sockets, each with its owner, mode, times and extended
 * attributes (an overlay's opaque directories are xattrs); files of more
 * than one link stay linked. 0, or -1 with why (the path and the error). */
int mock_layer_copy(const char *src, const char *dst, char *why, size_t cap);

/* The blocks under dir, in bytes (du -s's count: a hard-linked file once,
 * a sparse file's holes not); 0 when unreadable. */
unsigned long long mock_layer_bytes(const char *dir);

#endif

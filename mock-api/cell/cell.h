/* cell.h: what the sbx-cell files share — the root builder (root.c), the
 * exec service (exec.c) and the seccomp filter (seccomp.c); main.c ties
 * them together. Design: mock-api/CONTAINMENT.md; wire format:
 * mock-api/src/guest/cell_proto.h.
 *
 * sbx-cell is PID 1 of one sandbox, single-threaded; it must never trust a
 * byte of a request beyond what it checked, never leave a guest process
 * running after it exits (the kernel kills the namespace with it), and
 * never hand a guest a descriptor other than stdin/stdout/stderr. */
#ifndef SBX_CELL_H
#define SBX_CELL_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/filter.h>

#include "cell_proto.h"

/* fds the mock hands over besides CELL_CTL_FD: O_PATH handles of the
 * sandbox's workspace and tmp, opened by the clone child in the cell's mount
 * namespace (the work dir may be 0700 for the cell's unprivileged uid) */
#define CELL_WS_FD 4
#define CELL_TMP_FD 5

/* Builds the new root and pivots into it; hostname is the sandbox id.
 * 0, or -1 with a message in err (what failed, on which path). */
int cell_root_build(const char *hostname, char *err, size_t cap);

/* trust.c: the guest's system trust bundle (the root's own + CELL_TRUST_ENV's
 * CA, written by the mock: CELL_TRUST_FD). Nothing to do without those
 * variables. layer: above an image, mounts the mock's layer read-only at
 * at (1; 0: none given). write: in the lower layer skel, before it is made
 * read-only, the CA file and (without a layer) the bundle's mount point;
 * bind: without a layer, the mock's bundle read-only over newroot's (the
 * host's inside its /etc/ssl, or the mount point). 0, or -1 with err set. */
int cell_trust_layer(const char *at, char *err, size_t cap);
int cell_trust_write(const char *skel, bool layer, char *err, size_t cap);
int cell_trust_bind(const char *newroot, char *err, size_t cap);

/* Mounts the sandbox's disk at dir (tmpfs of $SBX_CELL_DISK_MIB MiB, or
 * with 0 a bind of the host tree), copies seed into it when it exists, makes
 * its u, w, m, workspace and tmp, and keeps a handle of it at CELL_DISK_FD
 * (the mock's way to it for a fork). 0, or -1 with a message in err. */
int cell_disk_mount(const char *dir, const char *seed, char *err, size_t cap);

/* The seccomp program of the cell: the mock's copy (CELL_BPF_FD) or built
 * at start, loaded into PID 1 itself before READY, so every process of
 * the cell runs under it. */
int cell_seccomp_build(struct sock_fprog *prog, char *err, size_t cap);
/* `sbx-cell --seccomp-bpf`: builds the program and writes it to fd (the
 * mock's copy for every cell). 0, or -1. */
int cell_seccomp_export(int fd);

/* In an exec child before execve: keep only the guests' small set of
 * capabilities (caps.c), in the bounding set too. 0, or -1 with errno. */
int cell_caps_drop(void);

/* bind.c: the sandbox's name and a pooled cell's BIND (cell_proto.h). */
/* The name files' texts for name: /etc/hostname and /etc/hosts. */
void cell_name_texts(const char *name, char *hostname, size_t hcap, char *hosts, size_t cap);
/* Whether name is a sandbox name the cell takes ([A-Za-z0-9._-]{1,64}). */
bool cell_name_ok(const char *name);
/* In the cell's own root (after the pivot): /etc/hostname and /etc/hosts
 * become name's where they hold exactly what they held for old (a file a
 * guest changed stays as it is). 0, or -1 with err set. */
int cell_name_files(const char *old, const char *name, char *err, size_t cap);
/* Waits for the first request on ctl: 0 with a BIND in q, -1 at EOF or for
 * anything else (the cell then exits). */
int cell_bind_recv(int ctl, struct cell_bind_req *q);
/* Becomes q's sandbox: hostname, name files (were old's), disk size. 0, or
 * -1 with err set (errno kept). */
int cell_bind_apply(const struct cell_bind_req *q, const char *old, char *err, size_t cap);
/* The BIND's answer: code 0, or an errno with msg. */
void cell_bind_answer(int ctl, int code, const char *msg);

/* The EXEC/SIGNAL service: handles one request message from ctl (fds
 * received close-on-exec), and reaps children after SIGCHLD. */
int cell_serve_request(int ctl);
/* Sends buf (one message) on sock with fd as SCM_RIGHTS (none when fd < 0);
 * flags are added to MSG_NOSIGNAL. 0, or -1 with errno. */
int cell_send_fd(int sock, const void *buf, size_t len, int fd, int flags);
void cell_reap(void);

/* proc.c: in a freshly forked EXEC_TTY child, before child_exec: a new
 * session whose controlling terminal is tty (the slave the mock sent).
 * Failures are left for the command to notice (it then has no job
 * control), never fatal. */
void cell_child_take_tty(int tty);

#endif

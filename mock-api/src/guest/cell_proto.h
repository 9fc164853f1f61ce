/* cell_proto: the wire format between sbx-mock (cell.c) and one sandbox's
 * cell process (sbx-cell, mock-api/cell/). Design: mock-api/CONTAINMENT.md.
 *
 * Transport: a SOCK_SEQPACKET socketpair, fd 3 in the cell; one message per
 * request, file descriptors as SCM_RIGHTS. Both ends are on one machine and
 * one build, so structs go as they are (native endianness); the cell still
 * checks every length and count, because a message it misreads would let a
 * guest-controlled string run off its buffer.
 *
 * Includes libc headers only: it is compiled into both programs and must
 * never depend on the mock's internals. */
#ifndef SBX_CELL_PROTO_H
#define SBX_CELL_PROTO_H

#include <stdint.h>

#define CELL_CTL_FD 3
/* in the cell, close-on-exec: a handle of the sandbox's disk (the mock
 * copies a fork's files through /proc/<cell pid>/fd/100) */
#define CELL_DISK_FD 100
/* the environment variable that carries the disk's size in MiB to
 * sbx-cell (0: the host tree itself, unbounded: durable mode) */
#define CELL_DISK_ENV "SBX_CELL_DISK_MIB"
/* the cell's seccomp program, compiled once per mock by `sbx-cell
 * --seccomp-bpf` (which writes it to its stdout) into a sealed memfd that
 * every cell gets read-only at this fd, with CELL_BPF_ENV=1 in its
 * environment, instead of compiling its own (~15 ms of CPU each); without
 * it a cell compiles the same program itself */
#define CELL_BPF_FD 6
#define CELL_BPF_ENV "SBX_CELL_BPF"
/* A rootfs image (mock-api/IMAGES.md) as the lower layer of the cell's
 * root: a handle at this fd, and CELL_IMAGE_ENV saying what it is —
 * "idmapped": a detached mount of the image, read-only and idmapped by the
 * mock (as root: the image's uid 0 is root inside), which the cell moves
 * into its mount namespace; "dir": an O_PATH handle of a directory the
 * cell's root owns (unprivileged: a copy owned by the mock's user), which
 * the cell binds read-only. Absent: the host-skeleton root. */
#define CELL_IMAGE_FD 7
#define CELL_IMAGE_ENV "SBX_CELL_IMAGE"
#define CELL_SYS_OPEN_TREE 428
#define CELL_SYS_MOVE_MOUNT 429
#define CELL_SYS_MOUNT_SETATTR 442
#define CELL_OPEN_TREE_CLONE 1
#define CELL_MOVE_MOUNT_F_EMPTY_PATH 0x4
#define CELL_MOUNT_ATTR_RDONLY 0x1ULL
#define CELL_MOUNT_ATTR_IDMAP 0x00100000ULL
/* A CA certificate (PEM, public) the cell adds to the guest's system trust
 * bundle (cell/trust.c); at most CELL_TRUST_MAX bytes. */
#define CELL_TRUST_ENV "SBX_CELL_TRUST"
#define CELL_TRUST_MAX 16384
/* The system bundle with that certificate, written once per mock and
 * root (the mock's guest/trust.c): an O_PATH handle at this fd, with
 * CELL_TRUST_BUNDLE_ENV=file, a file the cell binds read-only over its
 * root's /etc/ssl/certs/ca-certificates.crt, or =layer (above an image), a
 * directory holding etc/ssl/certs/ca-certificates.crt that the cell mounts
 * read-only as the overlay layer between its own files and the image. */
#define CELL_TRUST_FD 8
#define CELL_TRUST_BUNDLE_ENV "SBX_CELL_TRUST_BUNDLE"
/* The certificate alone, in the guest's /etc: Node reads only its own
 * bundled roots, and NODE_EXTRA_CA_CERTS (the mock's exec sets it to
 * this) adds to them; the whole system bundle there would cost every node
 * start ~20 ms. */
#define CELL_TRUST_CA_FILE "/etc/sbx-internet-ca.crt"
/* Setting a disk's size (the mock's resize, a pooled cell's BIND): the new
 * mount API by number, as glibc < 2.36 has no wrappers and <linux/mount.h>
 * clashes with <sys/mount.h>; system calls added since 5.1 have one number
 * on every architecture. */
#define CELL_SYS_FSPICK 433
#define CELL_SYS_FSCONFIG 431
#define CELL_FSPICK_CLOEXEC 0x1
#define CELL_FSPICK_EMPTY_PATH 0x8
#define CELL_FSCONFIG_SET_STRING 1
#define CELL_FSCONFIG_CMD_RECONFIGURE 7
#define CELL_MSG_MAX 65536      /* one request: header + strings */
#define CELL_MAX_ARGS 1024
#define CELL_MAX_ENV 1024
#define CELL_ERR_MAX 256

/* cell -> mock, once, first message. READY carries one SCM_RIGHTS fd: the
 * self-signal listening socket (127.0.0.1:<self port> in the cell's network
 * namespace). FAIL carries a NUL-terminated message of what failed. */
enum cell_hello_kind { CELL_READY = 1, CELL_FAIL = 2 };
struct cell_hello {
	uint32_t kind;
	char msg[CELL_ERR_MAX];
};

/* mock -> cell. */
enum cell_op { CELL_OP_EXEC = 1, CELL_OP_SIGNAL = 2, CELL_OP_EXEC_TTY = 3 };

/* EXEC_TTY: as EXEC, but the three stdio fds are one pseudo-terminal's
 * slave, which becomes the child's controlling terminal: the child starts a
 * session (its pid = its pgid = its sid) instead of only a process group. */

/* SOCKET (ingress, issue 25): SCM_RIGHTS exactly 1 fd, the write end of a
 * SOCK_SEQPACKET socketpair. The cell answers on it with one struct
 * cell_socket_ans carrying, when err == 0, one SCM_RIGHTS fd: a fresh,
 * unconnected AF_INET stream socket made in the cell's network namespace
 * (a socket stays in the namespace it was made in, so the mock can connect
 * it to the guest's 127.0.0.1 without entering the namespace, which an
 * unprivileged mock could not). Its own value, apart from the enum above,
 * so other new ops never collide with it. */
#define CELL_OP_SOCKET 16u
struct cell_socket_req {
	uint32_t op;            /* CELL_OP_SOCKET */
};
struct cell_socket_ans {
	int32_t err;            /* 0, or the errno of socket() in the cell */
};

/* BIND (issue 24, the warm pool): a pooled cell (sbx-cell started with
 * the extra argument "pooled") builds everything before READY but its
 * sandbox's own part, and takes this as its first request, on fd 3, before
 * it serves anything: it becomes the sandbox named `name` (hostname,
 * /etc/hostname and /etc/hosts), its disk is set to `disk_mib` MiB (size and
 * inodes, as a fresh cell's), and only then PID 1 loads the seccomp filter
 * and answers one struct cell_bind_ans on fd 3. A failed BIND (err != 0) is
 * the cell's last word: it exits. Any other first request, or an EXEC before
 * BIND, ends the cell too: no guest code ever runs before the filter. */
#define CELL_OP_BIND 17u
#define CELL_NAME_MAX 64
struct cell_bind_req {
	uint32_t op;            /* CELL_OP_BIND */
	uint32_t disk_mib;      /* > 0 */
	char name[CELL_NAME_MAX + 1]; /* NUL-terminated, [A-Za-z0-9._-]{1,64} */
};
struct cell_bind_ans {
	int32_t err;            /* 0, or an errno of the step that failed */
	char msg[CELL_ERR_MAX]; /* what failed, NUL-terminated */
};

/* EXEC: followed in the same message by `len` bytes of NUL-terminated
 * strings: cwd, cmd (a path, or a name searched in PATH inside the cell),
 * argc args, envc "K=V" entries. SCM_RIGHTS: exactly 4 fds in this order:
 * stdin (read end), stdout (write end), stderr (write end), status (write
 * end of a pipe the cell answers on, see cell_status). */
struct cell_exec_req {
	uint32_t op;            /* CELL_OP_EXEC */
	uint32_t argc;          /* args after cmd */
	uint32_t envc;
	uint32_t len;           /* bytes of strings after this header */
};

/* SIGNAL: kill(-pgid, sig); pgid 0 = every process of the cell but PID 1. */
struct cell_signal_req {
	uint32_t op;            /* CELL_OP_SIGNAL */
	int32_t pgid;           /* as the cell sees it (cell_status.pid) */
	int32_t sig;
};

/* cell -> mock on an exec's status pipe: first STARTED (pid >= 1, err 0;
 * or pid -1 and err = the errno of a failed execve/fork), then, when it
 * started, EXITED with the wait status; then the cell closes the pipe. */
enum cell_status_kind { CELL_STARTED = 1, CELL_EXITED = 2 };
struct cell_status {
	int32_t kind;
	int32_t pid;            /* the exec's pid = its pgid, in the cell's PID namespace */
	int32_t err;            /* STARTED: errno when pid == -1 */
	int32_t wstatus;        /* EXITED: as waitpid reports it */
};

#endif

/* seccomp: the system-call filter every process of a cell runs under, PID 1
 * included (CONTAINMENT.md, "Seccomp"): allow what the system-call table
 * of this libseccomp names, EPERM for what a sandbox never needs (kernel
 * modules, kexec, bpf, perf, keyrings, mounts, entering or making
 * namespaces, ptrace and reaching into other processes, ...), ENOSYS for
 * clone3 so libc falls back to clone, whose flags the filter can see, and
 * ENOSYS for every number the table does not name: a system call newer
 * than our list is denied until someone reads what it does.
 *
 * Built once per mock (`sbx-cell --seccomp-bpf`, cell_seccomp_export) and
 * handed to each cell (CELL_BPF_FD), or else built when the cell starts
 * (libseccomp allocates), as a BPF program that PID 1 loads into itself
 * before READY (it needs nothing
 * on the list after that: it forks, reaps, signals and reads sockets); the
 * exec children inherit it. */
#define _GNU_SOURCE
#include "cell.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>

static const char *const denied[] = {
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf",
	"perf_event_open", "keyctl", "add_key", "request_key", "mount", "umount2", "pivot_root",
	"move_mount", "open_tree", "fsopen", "fsmount", "fspick", "mount_setattr", "setns",
	"unshare", "ptrace", "process_vm_readv", "process_vm_writev", "swapon", "swapoff",
	"reboot", "acct", "quotactl", "lookup_dcookie", "userfaultfd", "open_by_handle_at",
	"name_to_handle_at", "iopl", "ioperm", "syslog",
	/* reaching into another process of the cell (PID 1's control socket,
	 * its memory): pidfd_getfd, process_madvise, kcmp */
	"pidfd_getfd", "process_madvise", "kcmp",
	/* the rest of the new mount API, and the mount listing calls */
	"fsconfig", "open_tree_attr", "listmount", "statmount",
};

/* System-call numbers tried for a name: past every table of today (x86_64
 * ends near 470, aarch64 likewise). */
#define NR_SCAN 1024

/* clone with a namespace flag: one rule per flag (a masked compare can only
 * test equality, and any one of them set is a denial). CLONE_NEWTIME
 * shares its bit with CSIGNAL in clone(2) and cannot be told apart. */
static const unsigned long clone_new[] = {CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
					  CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};

/* The numbers below NR_SCAN that this libseccomp cannot name (calls added
 * to the kernel after it, and gaps in the table, which the kernel answers
 * ENOSYS anyway), as runs [lo, hi): a handful of runs, not hundreds of
 * rules. One rule per number made libseccomp take ~6 ms to build each
 * cell's filter and gave a 900-instruction program. */
#define RUNS_MAX 64
typedef struct nr_run {
	uint32_t lo, hi;
} nr_run;

static int unnamed_runs(nr_run *runs, size_t *n, char *err, size_t cap)
{
	*n = 0;
	for (uint32_t nr = 0; nr < NR_SCAN; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int)nr);

		if (name != NULL) {
			free(name);
			continue;
		}
		if (*n > 0 && runs[*n - 1].hi == nr) {
			runs[*n - 1].hi = nr + 1;
			continue;
		}
		if (*n == RUNS_MAX) {
			snprintf(err, cap, "seccomp: more than %d runs of unnamed system calls", RUNS_MAX);
			return -1;
		}
		runs[(*n)++] = (nr_run){nr, nr + 1};
	}
	return 0;
}

#define STMT(code, k) ((struct sock_filter)BPF_STMT((code), (k)))
#define JUMP(code, k, jt, jf) ((struct sock_filter)BPF_JUMP((code), (k), (jt), (jf)))

/* Prepends to libseccomp's program: for the native architecture, a number
 * in one of the runs returns ENOSYS; anything else falls through to the
 * first instruction of libseccomp's program (BPF jumps are relative, so
 * the program still runs as exported). */
static int prepend_unnamed(struct sock_fprog *prog, char *err, size_t cap)
{
	nr_run runs[RUNS_MAX];
	size_t n, k = 0, len;
	struct sock_filter *f;

	if (unnamed_runs(runs, &n, err, cap) != 0)
		return -1;
	len = 5 + 2 * n + prog->len;
	f = calloc(len, sizeof(*f));
	if (f == NULL || len > BPF_MAXINSNS) {
		free(f);
		snprintf(err, cap, "seccomp: the program does not fit (%zu instructions)", len);
		return -1;
	}
	f[k++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[k++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 0, (uint8_t)(3 + 2 * n));
	f[k++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (size_t i = 0; i < n; i++) {
		/* below lo: skip this run's upper check; at or over hi: next run */
		f[k++] = JUMP(BPF_JMP | BPF_JGE | BPF_K, runs[i].lo, 0, 1);
		f[k++] = JUMP(BPF_JMP | BPF_JGE | BPF_K, runs[i].hi, 0, (uint8_t)(2 * (n - i) - 1));
	}
	f[k++] = STMT(BPF_JMP | BPF_JA | BPF_K, 1);
	f[k++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
	memcpy(f + k, prog->filter, prog->len * sizeof(*f));
	free(prog->filter);
	prog->filter = f;
	prog->len = (unsigned short)len;
	return 0;
}

static int add_rules(scmp_filter_ctx ctx, char *err, size_t cap)
{
	int rc, nr;

	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		nr = seccomp_syscall_resolve_name(denied[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (rc != 0) {
			snprintf(err, cap, "seccomp rule for %s: %s", denied[i], strerror(-rc));
			return -1;
		}
	}
	for (size_t i = 0; i < sizeof(clone_new) / sizeof(clone_new[0]); i++) {
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, clone_new[i], clone_new[i]));
		if (rc != 0) {
			snprintf(err, cap, "seccomp rule for clone: %s", strerror(-rc));
			return -1;
		}
	}
	rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (rc != 0) {
		snprintf(err, cap, "seccomp rule for clone3: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

/* The filter as BPF: libseccomp 2.5 exports to a file descriptor only. */
static int export_prog(scmp_filter_ctx ctx, struct sock_fprog *prog, char *err, size_t cap)
{
	int fd = memfd_create("sbx-cell-seccomp", MFD_CLOEXEC), rc;
	off_t len;
	void *buf = NULL;

	if (fd < 0) {
		snprintf(err, cap, "seccomp: memfd_create: %s", strerror(errno));
		return -1;
	}
	rc = seccomp_export_bpf(ctx, fd);
	len = lseek(fd, 0, SEEK_CUR);
	if (rc != 0 || len <= 0 || len % (off_t)sizeof(struct sock_filter) != 0) {
		snprintf(err, cap, "seccomp: export: %s", rc != 0 ? strerror(-rc) : "empty program");
		goto out_close;
	}
	buf = malloc((size_t)len);
	if (buf == NULL || pread(fd, buf, (size_t)len, 0) != (ssize_t)len) {
		snprintf(err, cap, "seccomp: read back the program: %s", strerror(errno));
		free(buf);
		buf = NULL;
		goto out_close;
	}
	prog->filter = buf;
	prog->len = (unsigned short)((size_t)len / sizeof(struct sock_filter));
out_close:
	close(fd);
	return buf != NULL ? 0 : -1;
}

/* The program the mock handed over at CELL_BPF_FD (cell_proto.h), checked
 * for a whole number of instructions within the kernel's bound. The fd is
 * closed: nothing of the mock's reaches a guest. 0, 1 when there is none,
 * -1 with err set. */
static int prog_from_mock(struct sock_fprog *prog, char *err, size_t cap)
{
	const char *given = getenv(CELL_BPF_ENV);
	struct stat st;
	void *buf = NULL;
	size_t len;

	if (given == NULL || strcmp(given, "1") != 0)
		return 1;
	if (fstat(CELL_BPF_FD, &st) != 0 || st.st_size <= 0 ||
	    st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
	    st.st_size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS) {
		snprintf(err, cap, "seccomp: the program handed over is not one");
		close(CELL_BPF_FD);
		return -1;
	}
	len = (size_t)st.st_size;
	buf = malloc(len);
	if (buf == NULL || pread(CELL_BPF_FD, buf, len, 0) != (ssize_t)len) {
		snprintf(err, cap, "seccomp: read the program handed over: %s", strerror(errno));
		free(buf);
		close(CELL_BPF_FD);
		return -1;
	}
	close(CELL_BPF_FD);
	prog->filter = buf;
	prog->len = (unsigned short)(len / sizeof(struct sock_filter));
	return 0;
}

int cell_seccomp_build(struct sock_fprog *prog, char *err, size_t cap)
{
	scmp_filter_ctx ctx;
	int rc = prog_from_mock(prog, err, cap);

	if (rc <= 0)
		return rc;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	rc = -1;

	if (ctx == NULL) {
		snprintf(err, cap, "seccomp_init failed");
		return -1;
	}
	/* PID 1 sets no_new_privs itself, before the load; a binary tree of
	 * the rules, not a list walked at every system call */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) != 0 ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2) != 0)
		goto out_release;
	if (add_rules(ctx, err, cap) != 0)
		goto out_release;
	rc = export_prog(ctx, prog, err, cap);
	if (rc == 0 && prepend_unnamed(prog, err, cap) != 0) {
		free(prog->filter);
		prog->filter = NULL;
		rc = -1;
	}
out_release:
	if (rc != 0 && err[0] == '\0')
		snprintf(err, cap, "seccomp: cannot configure the filter");
	seccomp_release(ctx);
	return rc;
}

int cell_seccomp_export(int fd)
{
	struct sock_fprog prog = {0};
	char err[CELL_ERR_MAX] = "";
	size_t len, off = 0;

	unsetenv(CELL_BPF_ENV); /* compiled here, never read back */
	if (cell_seccomp_build(&prog, err, sizeof(err)) != 0) {
		fprintf(stderr, "sbx-cell: %s\n", err);
		return -1;
	}
	len = (size_t)prog.len * sizeof(struct sock_filter);
	while (off < len) {
		ssize_t w = write(fd, (const char *)prog.filter + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			free(prog.filter);
			return -1;
		}
		off += (size_t)w;
	}
	free(prog.filter);
	return 0;
}

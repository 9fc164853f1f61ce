/* caps: the capabilities a guest process keeps (CONTAINMENT.md,
 * "Capabilities"). A guest is root of the cell's user namespace, and root
 * of a user namespace holds every capability there: CAP_SYS_PTRACE let a
 * guest write into PID 1 through /proc/1/mem and run what the seccomp
 * filter forbids (issue 27). Each exec child keeps only the small set a
 * root shell on a Debian machine uses (the container runtimes' default
 * set), in its bounding set too, so that no execve gives the rest back. */
#define _GNU_SOURCE
#include "cell.h"

#include <errno.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

/* Owning files, changing ids, signalling its own processes, binding low
 * ports, raw sockets in its own network namespace (ping), chroot. Not:
 * SYS_PTRACE, SYS_ADMIN, NET_ADMIN, SYS_RESOURCE, DAC_READ_SEARCH, BPF,
 * PERFMON, CHECKPOINT_RESTORE, IPC_OWNER, SYS_NICE and the rest. */
static const int keep[] = {
	CAP_CHOWN,	CAP_DAC_OVERRIDE, CAP_FOWNER,	     CAP_FSETID,     CAP_KILL,
	CAP_SETGID,	CAP_SETUID,	  CAP_SETPCAP,	     CAP_NET_BIND_SERVICE,
	CAP_NET_RAW,	CAP_SYS_CHROOT,	  CAP_MKNOD,	     CAP_AUDIT_WRITE, CAP_SETFCAP,
};

static int kept(int cap)
{
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (keep[i] == cap)
			return 1;
	return 0;
}

int cell_caps_drop(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2] = {{0, 0, 0}, {0, 0, 0}};

	/* every capability the kernel knows: PR_CAPBSET_DROP says EINVAL past
	 * the last one */
	for (int cap = 0; cap < 64; cap++) {
		if (kept(cap))
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
			return -1;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
		return -1;
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		uint32_t bit = 1u << (keep[i] % 32);

		d[keep[i] / 32].effective |= bit;
		d[keep[i] / 32].permitted |= bit;
	}
	return (int)syscall(SYS_capset, &h, d);
}

/* proc: what the cell adds for managed processes (the mock's
 * guest_procs.c) on top of the EXEC service — a PTY-backed child gets its
 * own session with the pseudo-terminal as controlling terminal, so that
 * job control, ^C and SIGWINCH on resize reach its foreground group as on
 * a real terminal.
 *
 * Runs in the forked child only, before child_exec: system calls only. */
#define _GNU_SOURCE
#include "cell.h"

#include <sys/ioctl.h>
#include <unistd.h>

void cell_child_take_tty(int tty)
{
	if (setsid() < 0)
		return;
	(void)ioctl(tty, TIOCSCTTY, 0);
}

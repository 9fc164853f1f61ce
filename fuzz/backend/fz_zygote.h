/* fz_zygote: starts the built-in reference backend's drivers as forks of
 * one waiting copy of this binary instead of starting the binary anew for
 * each (fz_zygote.c says why). The drivers are the harness's own children,
 * in their own process groups, as with fork + exec. */
#ifndef SBX_FZ_ZYGOTE_H
#define SBX_FZ_ZYGOTE_H

#include <stddef.h>
#include <sys/types.h>

/* The harness's side. Starts the zygote: self_exe again, with
 * SBX_FUZZ_AS_REF_ZYGOTE=FD in its environment and `--quirk QUIRK` when
 * quirk is set. Call before the harness starts any thread. 0, or -1 with
 * the reason in err. */
int fz_zygote_start(const char *self_exe, const char *quirk, char *err, size_t errlen);
/* The same for any zygote speaking this protocol (fz_pyzygote.py for the
 * Python drivers): argv run (PATH searched) with fd_var=FD of its socket. */
int fz_zygote_start_argv(char *const argv[], const char *fd_var, char *err, size_t errlen);
/* A driver with this environment and these descriptors as its stdin,
 * stdout and stderr (the caller keeps its copies); its pid, or -1 with
 * errno set. The signature of cf_config.spawn. */
pid_t fz_zygote_spawn(void *arg, char *const *envp, int in_fd, int out_fd, int err_fd);
/* Ends the zygote (the drivers it started are the caller's to stop). */
void fz_zygote_stop(void);

/* The zygote's side: serves requests on sock until the harness closes it;
 * each driver runs backend_main(argc, argv). Never returns. */
void fz_zygote_serve(int sock, int argc, char **argv, int (*backend_main)(int, char **)) __attribute__((noreturn));

#endif

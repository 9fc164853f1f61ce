/* fz_harness: the backend fuzzer's own parts (the shared ones are
 * conformance/src/fz.h): the harness that keeps a pool of driver processes
 * against the embedded mock (fz_harness.c) and the seed inputs
 * (fz_seeds.c). */
#ifndef SBX_FZ_HARNESS_H
#define SBX_FZ_HARNESS_H

#include "fz.h"

/* Starts the embedded mock and reads the backend from the environment
 * (SBX_FUZZ_BACKEND_CMD, SBX_FUZZ_PYTHON_BACKEND, SBX_FUZZ_PROFILE,
 * SBX_FUZZ_QUIRK, SBX_FUZZ_RESTART_EVERY); exits with a message when it
 * cannot. self_exe runs the built-in reference backend. */
void fz_harness_init(const char *self_exe);
/* Runs the input; the caller checks and then frees the outcome. */
void fz_harness_run(const struct fz_input *in, struct fz_outcome *out);
/* Stops every driver and the mock (atexit). */
void fz_harness_fini(void);

/* The seed inputs (the conformance checks' own cases). */
struct fz_seed {
	const char *name;
	struct fz_input in;
};
size_t fz_seeds(const struct fz_seed **out);

#endif

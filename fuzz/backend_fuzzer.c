/* Fuzz target: a sandbox backend driven end to end. Each input decodes
 * (conformance/src/fz_input.c) into gate settings, a fault plan for the
 * embedded mock control plane (rules over its 21 actions on the endpoints a
 * backend uses, with times/after), guest behaviour (exit code, output sizes
 * and bytes, sleeps against the timeout, run env) and 1-3 runs, sequential
 * or concurrent; the harness (fuzz/backend/fz_harness.c) runs them through
 * a backend driver process with the conformance runner's library, and the
 * invariants (conformance/src/fz_check.c: protocol, refusal, no fallback,
 * cleanup, result mapping) are checked after every input; a broken one
 * prints what broke, with the settings and fault plan to replay it, and
 * abort()s.
 *
 * The backend: SBX_FUZZ_BACKEND_CMD (a driver command, as --backend-cmd),
 * or SBX_FUZZ_PYTHON_BACKEND=module:factory (the Python adapter), else the
 * reference backend built into this binary (SBX_FUZZ_QUIRK=NAME makes it the
 * mutant NAME). SBX_FUZZ_PROFILE=langflow-backend|createos-backend picks the
 * rules (default: createos-backend when the driver's hello name is
 * "createos"). See fuzz/README.md.
 *
 * The built-in reference backend: this binary re-executes itself once with
 * SBX_FUZZ_AS_REF_ZYGOTE=FD, and LLVMFuzzerInitialize (which libFuzzer and
 * replay_main.c call first) then waits there as the zygote
 * (backend/fz_zygote.c) whose forks become sbx-ref-backend's main, one per
 * driver; with SBX_FUZZ_NO_ZYGOTE=1 each driver re-executes this binary with
 * SBX_FUZZ_AS_REF_BACKEND=1 instead. Either way the target needs no other
 * file at run time (ClusterFuzzLite ships only it). */
#define _GNU_SOURCE
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/fz_harness.h"
#include "backend/fz_zygote.h"
#include "sbx/http_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int sbx_ref_backend_main(int argc, char **argv); /* conformance/ref/ref_backend.c, renamed */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char self[PATH_MAX];
	ssize_t n;

	if (getenv("SBX_FUZZ_AS_REF_ZYGOTE") != NULL) {
		char *end;
		long fd = strtol(getenv("SBX_FUZZ_AS_REF_ZYGOTE"), &end, 10);

		if (*end != '\0' || fd < 3 || fd > 65535) {
			fprintf(stderr, "backend_fuzzer: SBX_FUZZ_AS_REF_ZYGOTE is not a descriptor\n");
			exit(2);
		}
		unsetenv("SBX_FUZZ_AS_REF_ZYGOTE");
		/* libcurl's global set-up (TLS libraries, ~3 ms, 8 under ASan)
		 * once here, not in every driver: the backend's own call then
		 * finds it done */
		sbx_http_global_init();
		fz_zygote_serve((int)fd, *argc, *argv, sbx_ref_backend_main);
	}
	if (getenv("SBX_FUZZ_AS_REF_BACKEND") != NULL) {
		unsetenv("SBX_FUZZ_AS_REF_BACKEND");
		exit(sbx_ref_backend_main(*argc, *argv));
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		fprintf(stderr, "backend_fuzzer: cannot find this program (/proc/self/exe)\n");
		exit(2);
	}
	self[n] = '\0';
	fz_harness_init(self);
#ifdef SBX_FUZZ_LIBFUZZER
	{
		/* -detect_leaks=0 first, so a flag the user gives still wins. The
		 * harness keeps state across inputs on purpose (its driver pool,
		 * the shapes), so an input that allocates more than it frees is
		 * the rule, and libFuzzer answers each such input by running it a
		 * second time (TryDetectingAMemoryLeak): a second backend run.
		 * Leaks are still reported when the fuzzer exits, and the corpus
		 * replays under ASan and valgrind in ctest. */
		static char *args[256];
		static char no_leaks[] = "-detect_leaks=0";
		int i, k = 0;

		if (*argc < 250) {
			args[k++] = (*argv)[0];
			args[k++] = no_leaks;
			for (i = 1; i < *argc; i++)
				args[k++] = (*argv)[i];
			args[k] = NULL;
			*argc = k;
			*argv = args;
		}
	}
#endif
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_input in;
	struct fz_outcome out;

	fz_decode(data, size, &in);
	fz_harness_run(&in, &out);
	fz_check(&in, &out);
	fz_outcome_free(&out);
	return 0;
}

/* backend_scenario: turns a backend_fuzzer input (a crash file, a corpus
 * entry) into a replay script a human can run without the fuzzer, or writes
 * the seed corpus.
 *
 *   backend_scenario FILE > replay.sh     the input (its bytes, and what they
 *       mean as comments) run by `sbx-conform --fuzz-case`: the same session
 *       and the same invariants as the fuzzer, the broken one as the check's
 *       failure; run: sh replay.sh (BACKEND overrides the driver command)
 *   backend_scenario --driver FILE > replay.sh   without sbx-conform: the
 *       fault plan as a scenario file for `sbx-mock --scenario`, the settings
 *       as export lines and the driver's request lines (run surface only)
 *   backend_scenario --write-seeds DIR    the seed inputs (fuzz/corpus/backend)
 *
 * Exit 0, 2 on a usage or I/O error (with the reason). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_harness.h"

static int write_seeds(const char *dir)
{
	const struct fz_seed *seeds;
	size_t n = fz_seeds(&seeds), i;

	for (i = 0; i < n; i++) {
		uint8_t buf[128];
		size_t len = fz_encode(&seeds[i].in, buf, sizeof(buf));
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, seeds[i].name);
		f = fopen(path, "wb");
		if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
			fprintf(stderr, "backend_scenario: cannot write %s: %s\n", path, strerror(errno));
			return 2;
		}
	}
	printf("wrote %zu seeds to %s\n", n, dir);
	return 0;
}

/* fz_describe's lines as shell comments. */
static void print_commented(const struct fz_input *in)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	const char *p;

	if (m == NULL)
		return;
	fz_describe(m, in);
	fclose(m);
	fputs("# ", stdout);
	for (p = text; *p != '\0'; p++) {
		fputc(*p, stdout);
		if (*p == '\n' && p[1] != '\0')
			fputs("# ", stdout);
	}
	free(text);
}

static bool read_input(const char *file, uint8_t *buf, size_t cap, size_t *len)
{
	FILE *f = fopen(file, "rb");

	if (f == NULL) {
		fprintf(stderr, "backend_scenario: cannot open %s: %s\n", file, strerror(errno));
		return false;
	}
	*len = fread(buf, 1, cap, f);
	fclose(f);
	return true;
}

/* The sbx-conform reproduction: the input's bytes, then --fuzz-case. */
static int print_conform(const char *file)
{
	uint8_t buf[4096];
	struct fz_input in;
	size_t len = 0, i;

	if (!read_input(file, buf, sizeof(buf), &len))
		return 2;
	fz_decode(buf, len, &in);
	printf("#!/bin/sh\n# Replay of backend_fuzzer input %s through sbx-conform:\n", file);
	print_commented(&in);
	printf("# Needs sbx-conform on PATH (build/default/conformance); BACKEND is the driver\n"
	       "# command (default: the bundled reference backend), e.g.\n"
	       "#   BACKEND='sbx-ref-backend --quirk reuse-drift' sh replay.sh\n"
	       "set -e\ndir=$(mktemp -d)\ntrap 'rm -rf \"$dir\"' EXIT\nprintf '");
	for (i = 0; i < len; i++)
		printf("\\%03o", buf[i]);
	printf("' > \"$dir/input\"\n"
	       "sbx-conform --fuzz-case \"$dir/input\" ${BACKEND:+--backend-cmd \"$BACKEND\"} \"$@\"\n");
	return 0;
}

static int print_replay(const char *file)
{
	uint8_t buf[4096];
	struct fz_input in;
	cJSON *sc;
	char *s;
	size_t len = 0;

	if (!read_input(file, buf, sizeof(buf), &len))
		return 2;
	fz_decode(buf, len, &in);
	sc = fz_scenario(&in, "backend-fuzzer-replay");
	s = cJSON_Print(sc);
	printf("#!/bin/sh\n# Replay of backend_fuzzer input %s:\n", file);
	print_commented(&in);
	printf("# Needs sbx-mock and the driver on PATH (build/default/mock-api, build/default/conformance);\n"
	       "# DRIVER overrides the driver command (default sbx-ref-backend), SBX_MOCK_PORT the port.\n"
	       "set -e\ndir=$(mktemp -d)\ncd \"$dir\"\n"
	       "cat > scenario.json <<'SBX_EOF'\n%s\nSBX_EOF\n"
	       /* the file exists before the mock's shell opens it: the loop
		* below reads it at once, under set -e */
	       ": > mock.out\n"
	       "sbx-mock --listen 127.0.0.1:${SBX_MOCK_PORT:-0} --self-listen off --quiet "
	       "--scenario ./scenario.json > mock.out 2>&1 &\nmock=$!\n"
	       "trap 'kill $mock 2>/dev/null; wait $mock 2>/dev/null; rm -rf \"$dir\"' EXIT\nurl=\n"
	       "for i in $(seq 100); do url=$(sed -n 's/^sbx-mock listening on //p' mock.out); "
	       "[ -n \"$url\" ] && break; sleep 0.1; done\n"
	       "[ -n \"$url\" ] || { cat mock.out; exit 2; }\n", s);
	free(s);
	cJSON_Delete(sc);
	printf("export CREATEOS_SANDBOX_BASE_URL=\"$url\"\n");
	fz_print_exports(stdout, &in, NULL, "fuzz-replay-key");
	if (in.url == FZ_N_URL - 1)
		printf("export CREATEOS_SANDBOX_BASE_URL=http://127.0.0.1:9   # the input's unreachable control plane\n");
	printf("cat > requests.jsonl <<'SBX_EOF'\n");
	fz_print_requests(stdout, &in);
	printf("SBX_EOF\nrm -f /tmp/sbx-fuzz-trip-replay\n${DRIVER:-sbx-ref-backend} < requests.jsonl\n"
	       "if [ -e /tmp/sbx-fuzz-trip-replay ]; then echo 'TRIP-WIRE: the code ran on the host'; "
	       "rm -f /tmp/sbx-fuzz-trip-replay; fi\n"
	       "curl -s -H \"X-Mock-Admin-Token: $(sed -n 's/^admin token: //p' mock.out)\" "
	       "\"$url/_mock/journal\" || true\necho\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0)
		return write_seeds(argv[2]);
	if (argc == 2 && argv[1][0] != '-')
		return print_conform(argv[1]);
	if (argc == 3 && strcmp(argv[1], "--driver") == 0)
		return print_replay(argv[2]);
	fprintf(stderr, "usage: backend_scenario FILE | --driver FILE | --write-seeds DIR\n");
	return 2;
}

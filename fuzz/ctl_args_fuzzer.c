/* Fuzz target: sbxctl's command-line parsing (tools/src/args.h) and the
 * offline commands that parse user text (egress check, egress lint).
 *
 * The first byte picks a mode, the rest is split at '\n' into words:
 *   0: ctl_args_parse over the create + global option tables;
 *   1: ctl_main("sbxctl egress check" WORDS...);
 *   2: ctl_main("sbxctl egress lint FILE" WORDS...), FILE = the rest of the
 *      input after the first empty line, through a memfd (nothing on disk);
 *   3: ctl_main("sbxctl" WORDS...) when WORDS start with help/--help/-h
 *      (help output only; anything else would reach the network, so other
 *      commands are never run).
 * Every word also goes through the value parsers.
 *
 * Properties, each abort()s when broken:
 * - ctl_args_parse: a failure has a message naming an option; on success
 *   positionals keep argv order and point at argv words (those before "--"
 *   do not start with '-', except "-"), a non-repeatable option has one
 *   value, each value is an argv word, the text after '=' in one, or "" for
 *   a flag, and ctl_args_get returns the last value;
 * - ctl_parse_long: an accepted value prints and parses back to itself and
 *   lies inside the range asked for;
 * - ctl_parse_duration_ms: an accepted value is in [0, 9e15]; its canonical
 *   "<N>ms" parses back to it; two accepted words concatenated parse to the
 *   sum (±1 ms of rounding) when the sum is under 1e15;
 * - ctl_parse_kv: the key is non-empty and followed by '=';
 * - ctl_split_commas: zero items iff the word is blank, otherwise one item
 *   per comma plus one, each trimmed and comma-free, NULL-terminated;
 * - ctl_main: exit code 0, 1 or 2, and a usage error (2) says something on
 *   stderr. */
#define _GNU_SOURCE
#include <ctype.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "args.h"
#include "ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_WORDS 64

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "ctl_args property broken: %s\n", what);
		abort();
	}
}

static bool is_word(char **argv, int argc, const char *p)
{
	for (int i = 0; i < argc; i++) {
		if (p == argv[i])
			return true;
	}
	return false;
}

static bool after_eq_of_word(char **argv, int argc, const char *p)
{
	for (int i = 0; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');

		if (eq != NULL && p == eq + 1)
			return true;
	}
	return false;
}

static int word_index(char **argv, int argc, const char *p)
{
	for (int i = 0; i < argc; i++) {
		if (p == argv[i])
			return i;
	}
	return -1;
}

static void fuzz_parse(int argc, char **argv)
{
	const ctl_opt *const tables[] = {ctl_opts_create, ctl_global_opts, NULL};
	ctl_args a;
	sbx_err err = {""};

	if (ctl_args_parse(tables, argc, argv, &a, &err) != 0) {
		check(err.msg[0] != '\0', "failure without a message");
		check(strncmp(err.msg, "unknown option '", 16) == 0 ||
		      strncmp(err.msg, "option '--", 10) == 0 || strcmp(err.msg, "out of memory") == 0,
		      "failure message names no option");
		ctl_args_free(&a);
		return;
	}
	check(a.npos <= (size_t)argc, "more positionals than words");
	check(a.dashdash == SIZE_MAX || a.dashdash <= a.npos, "dashdash past the positionals");
	int last = -1;
	for (size_t i = 0; i < a.npos; i++) {
		int at = word_index(argv, argc, a.pos[i]);

		check(at > last, "positionals out of argv order or not argv words");
		last = at;
		if (i < a.dashdash)
			check(a.pos[i][0] != '-' || a.pos[i][1] == '\0', "an option word taken as positional");
	}
	for (size_t i = 0; i < a.nseen; i++) {
		const ctl_optval *v = &a.seen[i];

		check(v->count >= 1, "an option seen without a value");
		check(v->opt->repeatable || v->count == 1, "a non-repeatable option kept twice");
		for (size_t k = 0; k < v->count; k++) {
			const char *val = v->vals[k];

			if (v->opt->metavar == NULL)
				check(val[0] == '\0', "a flag with a value");
			else
				check(is_word(argv, argc, val) || after_eq_of_word(argv, argc, val),
				      "a value that is neither a word nor the text after '='");
		}
		check(ctl_args_get(&a, v->opt->name) == v->vals[v->count - 1],
		      "ctl_args_get does not return the last value");
		size_t n = 0;
		check(ctl_args_all(&a, v->opt->name, &n) == v->vals && n == v->count,
		      "ctl_args_all disagrees");
		check(ctl_args_has(&a, v->opt->name), "ctl_args_has disagrees");
	}
	ctl_args_free(&a);
}

static void fuzz_long(const char *w)
{
	long v = 0, back = 0;
	sbx_err err = {""};
	char buf[32];

	if (ctl_parse_long(w, LONG_MIN, LONG_MAX, "--n", &v, &err) != 0) {
		check(strncmp(err.msg, "--n: ", 5) == 0, "long error does not name the option");
	} else {
		snprintf(buf, sizeof(buf), "%ld", v);
		check(ctl_parse_long(buf, LONG_MIN, LONG_MAX, "--n", &back, &err) == 0 && back == v,
		      "printed long does not parse back");
	}
	if (ctl_parse_long(w, 60, 86400, "--auto-pause", &v, &err) == 0)
		check(v >= 60 && v <= 86400, "long outside its range");
}

static int duration(const char *w, int64_t *ms)
{
	sbx_err err = {""};
	int rc = ctl_parse_duration_ms(w, "--timeout", ms, &err);

	if (rc != 0)
		check(strncmp(err.msg, "--timeout: ", 11) == 0, "duration error does not name the option");
	return rc;
}

static void fuzz_duration(const char *w, const char *prev)
{
	int64_t ms = 0, back = 0, p = 0, both = 0;
	char buf[48];

	if (duration(w, &ms) != 0)
		return;
	check(ms >= 0 && ms <= (int64_t)9e15, "duration out of range");
	snprintf(buf, sizeof(buf), "%lldms", (long long)ms);
	check(duration(buf, &back) == 0 && back == ms, "canonical duration does not parse back");
	if (prev == NULL || duration(prev, &p) != 0 || p + ms > (int64_t)1e15)
		return;
	size_t lp = strlen(prev), lw = strlen(w);
	char *cat = malloc(lp + lw + 1);

	if (cat == NULL)
		return;
	memcpy(cat, prev, lp);
	memcpy(cat + lp, w, lw + 1);
	check(duration(cat, &both) == 0, "two durations concatenated are refused");
	check(both >= p + ms - 1 && both <= p + ms + 1, "concatenated durations do not add up");
	free(cat);
}

static void fuzz_kv(const char *w)
{
	size_t kl = 0;
	sbx_err err = {""};

	if (ctl_parse_kv(w, "--env", &kl, &err) == 0)
		check(kl > 0 && w[kl] == '=' && memchr(w, '=', kl) == NULL, "K=V key wrong");
	else
		check(strncmp(err.msg, "--env: ", 7) == 0, "K=V error does not name the option");
}

static bool blank(const char *s)
{
	for (; *s != '\0'; s++) {
		if (!isspace((unsigned char)*s))
			return false;
	}
	return true;
}

static void fuzz_commas(const char *w)
{
	size_t n = 99, commas = 0;
	char **v = ctl_split_commas(w, &n);

	if (v == NULL)
		return;
	for (const char *p = w; *p != '\0'; p++)
		commas += *p == ',';
	if (blank(w))
		check(n == 0, "a blank list has items");
	else
		check(n == commas + 1, "item count is not commas + 1");
	check(v[n] == NULL, "item array not NULL-terminated");
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(v[i]);

		check(strchr(v[i], ',') == NULL, "an item holds a comma");
		check(l == 0 || (!isspace((unsigned char)v[i][0]) &&
				 !isspace((unsigned char)v[i][l - 1])), "an item is not trimmed");
	}
	ctl_strv_free(v);
}

/* Runs ctl_main with output into memory; checks the exit code. */
static void run_main(int argc, char **argv)
{
	char *obuf = NULL, *ebuf = NULL;
	size_t olen = 0, elen = 0;
	FILE *out = open_memstream(&obuf, &olen);
	FILE *err = open_memstream(&ebuf, &elen);

	if (out == NULL || err == NULL)
		goto out;
	int rc = ctl_main(argc, argv, out, err);

	fflush(out);
	fflush(err);
	check(rc == CTL_EXIT_OK || rc == CTL_EXIT_FAIL || rc == CTL_EXIT_USAGE, "unknown exit code");
	check(rc != CTL_EXIT_USAGE || elen > 0, "usage error with nothing on stderr");
out:
	if (out != NULL)
		fclose(out);
	if (err != NULL)
		fclose(err);
	free(obuf);
	free(ebuf);
}

static int lint_fd = -1;

static void run_lint(char **words, int nw, const char *file, size_t flen)
{
	char path[64];
	char *argv[MAX_WORDS + 4];
	int argc = 0;

	if (lint_fd < 0)
		lint_fd = memfd_create("ctl_args_fuzz", 0);
	if (lint_fd < 0 || ftruncate(lint_fd, 0) != 0 ||
	    (flen > 0 && pwrite(lint_fd, file, flen, 0) != (ssize_t)flen))
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", lint_fd);
	argv[argc++] = "sbxctl";
	argv[argc++] = "egress";
	argv[argc++] = "lint";
	argv[argc++] = path;
	for (int i = 0; i < nw; i++)
		argv[argc++] = words[i];
	run_main(argc, argv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *words[MAX_WORDS + 4];
	int nw = 0;
	char *text, *file = NULL;
	size_t flen = 0;
	unsigned mode;

	if (size == 0)
		return 0;
	mode = data[0] % 4;
	text = malloc(size);
	if (text == NULL)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	/* words up to the first empty line; the rest is the lint file */
	for (char *p = text; nw < MAX_WORDS;) {
		char *nl = strchr(p, '\n');

		if (nl == p) {
			file = p + 1;
			flen = (size_t)(text + size - 1 - file);
			break;
		}
		words[nw++] = p;
		if (nl == NULL)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	for (int i = 0; i < nw; i++) {
		fuzz_long(words[i]);
		fuzz_duration(words[i], i > 0 ? words[i - 1] : NULL);
		fuzz_kv(words[i]);
		fuzz_commas(words[i]);
	}
	if (mode == 0) {
		fuzz_parse(nw, words);
	} else if (mode == 1) {
		char *argv[MAX_WORDS + 4] = {"sbxctl", "egress", "check"};

		for (int i = 0; i < nw; i++)
			argv[3 + i] = words[i];
		run_main(nw + 3, argv);
	} else if (mode == 2) {
		run_lint(words, nw, file != NULL ? file : "", flen);
	} else if (nw > 0 && (strcmp(words[0], "help") == 0 || strcmp(words[0], "--help") == 0 ||
			      strcmp(words[0], "-h") == 0)) {
		char *argv[MAX_WORDS + 4] = {"sbxctl"};

		for (int i = 0; i < nw; i++)
			argv[1 + i] = words[i];
		run_main(nw + 1, argv);
	}
	free(text);
	return 0;
}

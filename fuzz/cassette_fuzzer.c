/* cassette: the reader of an internet cassette's cassette.jsonl
 * (sbx_cassette_parse_text, lib/src/cassette.c), which sbxctl's cassette
 * verbs run on files anyone may have edited. The input is the file's text.
 * Properties (abort on violation):
 * - every problem is one line naming the file ("fuzz:") and, when it names
 *   a line, one the input has; at most SBX_CASSETTE_MAX_PROBLEMS of them;
 *   a refusal says at least one thing;
 * - an accepted text is written back (sbx_cassette_text) and read again
 *   without a problem, with as many exchanges, and writing that gives the
 *   same bytes (a fixed point: prune and merge never drift a cassette);
 * - the exchanges are in the file's order (sbx_cassette_compare strictly
 *   increasing: no two with the same request and n);
 * - renumbering every exchange's tokens by k moves the highest token by k
 *   (merge keeps two cassettes' credentials apart). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx/cassette.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAS_FUZZ_MAX_INPUT (256u * 1024u)

static void check(bool ok, const char *what, const char *detail)
{
	if (!ok) {
		fprintf(stderr, "cassette property broken: %s%s%.400s\n", what, detail != NULL ? ": " : "",
			detail != NULL ? detail : "");
		abort();
	}
}

static void check_problems(const sbx_cassette_problems *p, size_t lines)
{
	const char *s = sbx_strbuf_str(&p->text);
	size_t n = 0;
	check(p->count <= SBX_CASSETTE_MAX_PROBLEMS, "more problems than the cap", NULL);
	while (*s != '\0') {
		size_t len = strcspn(s, "\n");
		check(strncmp(s, "fuzz:", 5) == 0, "a problem that does not name the file", s);
		if (s[5] >= '0' && s[5] <= '9') {
			unsigned long at = strtoul(s + 5, NULL, 10);
			check(at >= 1 && at <= lines, "a problem naming a line the input does not have", s);
		}
		check(len > 12, "a problem too short to say anything", s);
		n++;
		s += len + (s[len] == '\n');
	}
	check(n == p->count, "the problem count differs from the lines", NULL);
}

static void check_accepted(sbx_cassette *cas)
{
	sbx_strbuf once = SBX_STRBUF_INIT, twice = SBX_STRBUF_INIT;
	sbx_cassette again;
	sbx_cassette_problems p = {SBX_STRBUF_INIT, 0, false};
	for (size_t i = 1; i < cas->nex; i++)
		check(sbx_cassette_compare(&cas->ex[i - 1], &cas->ex[i]) < 0, "accepted lines out of order", NULL);
	check(sbx_cassette_text(cas, &once) == 0, "out of memory", NULL);
	int rc = sbx_cassette_parse_text(once.data, once.len, "fuzz", &again, &p);
	check(rc == 0, "an accepted cassette written back is refused", sbx_strbuf_str(&p.text));
	check(again.nex == cas->nex, "written back, another number of exchanges", NULL);
	check(sbx_cassette_text(&again, &twice) == 0, "out of memory", NULL);
	check(once.len == twice.len && memcmp(once.data, twice.data, once.len) == 0,
	      "writing a cassette back is not a fixed point", twice.data);
	unsigned long max = sbx_cassette_max_token(&again);
	for (size_t i = 0; i < again.nex; i++)
		check(sbx_cassette_renumber(&again.ex[i], &again, 7) == 0, "out of memory", NULL);
	check(sbx_cassette_max_token(&again) == (max > 0 ? max + 7 : 0), "renumbering by 7 moved the highest "
	      "token by something else", NULL);
	sbx_cassette_problems_free(&p);
	sbx_cassette_free(&again);
	sbx_strbuf_free(&once);
	sbx_strbuf_free(&twice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sbx_cassette cas;
	sbx_cassette_problems p = {SBX_STRBUF_INIT, 0, false};
	size_t lines = 1;
	if (size > CAS_FUZZ_MAX_INPUT)
		return 0;
	for (size_t i = 0; i + 1 < size; i++)
		lines += data[i] == '\n';
	int rc = sbx_cassette_parse_text((const char *)data, size, "fuzz", &cas, &p);
	check_problems(&p, lines);
	check((rc == 0) == (p.count == 0), "the result and the problems disagree", sbx_strbuf_str(&p.text));
	if (rc == 0)
		check_accepted(&cas);
	sbx_cassette_problems_free(&p);
	sbx_cassette_free(&cas);
	return 0;
}

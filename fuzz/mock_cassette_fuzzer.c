/* Fuzz target: the internet cassette's reader (mock-api/src/internet/
 * inet_cassette.h, issue 47): the input is the text of a cassette.jsonl,
 * parsed by mock_cassette_parse (libsbx's reader, sbx_cassette_parse_text,
 * then the mock's copy of what it accepted; bodies are not read: they are
 * files the loader hashes). fuzz/cassette_fuzzer.c fuzzes the reader alone.
 *
 * Properties, each abort()s when broken:
 * - a refusal names the cassette and says which line and what ("cassette
 *   fuzz: cassette.jsonl:N: ...", N between 1 and the input's line
 *   count), or that the file is empty;
 * - an accepted cassette written back (mock_cassette_text) parses again
 *   to the same text (the writer's order and escaping are stable), with
 *   as many exchanges;
 * - every exchange's own key takes an answer of that key, and a miss for a
 *   target no exchange has names it in "no recorded answer for". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mock-api/src/internet/inet_cassette.h"
#include "../mock-api/src/internet/inet_cassette_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "mock_cassette: %s\n", what);
		abort();
	}
}

static void check_refusal(const char *msg, const uint8_t *data, size_t size)
{
	static const char file[] = "cassette fuzz: cassette.jsonl:";
	size_t lines = 1;

	for (size_t i = 0; i + 1 < size; i++)
		lines += data[i] == '\n';
	check(strncmp(msg, file, strlen(file)) == 0, "a refusal does not name the cassette and its file");
	if (msg[strlen(file)] == ' ') {
		check(strstr(msg, ": empty (") != NULL || strstr(msg, "out of memory") != NULL,
		      "a refusal names no line");
		return;
	}
	{
		long n = strtol(msg + strlen(file), NULL, 10);

		check(n >= 1 && (size_t)n <= lines, "a refusal names a line the input does not have");
	}
}

static void check_keys(mock_cassette *c)
{
	char miss[MOCK_CASSETTE_TARGET_MAX * 3];

	for (size_t i = 0; i < c->nex; i++) {
		const mock_cassette_ex *e = &c->ex[i];
		mock_cassette_key k = {.scheme = e->scheme, .host = e->host, .port = e->port,
				       .method = e->method, .target = e->target, .body_sha = e->req_sha};
		mock_cassette_ex got;

		check(mock_cassette_take(c, &k, &got), "an exchange's own key takes nothing");
		check(strcmp(got.host, e->host) == 0 && strcmp(got.method, e->method) == 0 && got.port == e->port,
		      "an exchange's key takes another key's answer");
		mock_cassette_ex_clear(&got);
		k.target = "/\x01never";
		mock_cassette_miss(c, &k, miss, sizeof(miss));
		check(strstr(miss, "no recorded answer for ") != NULL && strstr(miss, "\nnearest recorded: ") != NULL,
		      "a miss does not say what it missed and what is nearest");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sbx_err err = {{0}}, err2 = {{0}};
	mock_cassette *c = mock_cassette_parse((const char *)data, size, "fuzz", &err), *c2;
	char *text, *text2;

	if (c == NULL) {
		check(err.msg[0] != '\0', "a refusal without a message");
		check_refusal(err.msg, data, size);
		return 0;
	}
	text = mock_cassette_text(c);
	check(text != NULL, "an accepted cassette cannot be written");
	c2 = mock_cassette_parse(text, strlen(text), "fuzz", &err2);
	if (c2 == NULL)
		fprintf(stderr, "reparse: %s\n", err2.msg);
	check(c2 != NULL, "a written cassette is refused by its reader");
	check(mock_cassette_count(c2) == mock_cassette_count(c), "a written cassette has another count");
	text2 = mock_cassette_text(c2);
	check(text2 != NULL && strcmp(text, text2) == 0, "a written cassette writes back differently");
	check_keys(c);
	free(text);
	free(text2);
	mock_cassette_free(c2);
	mock_cassette_free(c);
	return 0;
}

/* cassette: the mock's side of recording and replaying the guests'
 * internet (ops.h): the flags' checks across options, the tape made at
 * start and handed to the internet's book, a scenario's
 * "internet_cassette", and the cassette written when the mock stops. */
#include "ops/ops.h"
#include "ops/core.h"
#include "internet/inet_book.h"
#include "internet/inet_tape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What excludes what, each refused with the flags' names. */
static int check_flags(const sbx_mock_config *cfg, sbx_err *err)
{
	if (cfg->internet_record != NULL && cfg->internet_replay != NULL) {
		sbx_err_set(err, "--internet-record and --internet-replay exclude each other (record once, "
				 "replay in another run)");
		return -1;
	}
	if ((cfg->internet_record != NULL || cfg->internet_replay != NULL) && cfg->internet_upstream != NULL) {
		sbx_err_set(err, "--internet-%s excludes --internet-upstream (a replay never goes out; a "
				 "recording goes out through its own verified connection)",
			    cfg->internet_record != NULL ? "record" : "replay");
		return -1;
	}
	if (cfg->internet_record == NULL &&
	    (cfg->internet_record_allow != NULL || cfg->internet_record_ca != NULL ||
	     cfg->ninternet_record_resolve > 0 || cfg->internet_record_max_mib != 0)) {
		sbx_err_set(err, "--internet-record-allow, -ca, -resolve and -max-mib need --internet-record DIR");
		return -1;
	}
	if (cfg->internet_record == NULL && cfg->internet_replay == NULL && cfg->ninternet_redact_query > 0) {
		sbx_err_set(err, "--internet-redact-query needs --internet-record DIR (or --internet-replay DIR)");
		return -1;
	}
	return 0;
}

int mock_op_cassette_start(sbx_mock *mock, const sbx_mock_config *cfg, sbx_err *err)
{
	mock_inet_tape_conf tc = {.dir = cfg->internet_record != NULL ? cfg->internet_record : cfg->internet_replay,
				  .record = cfg->internet_record != NULL, .allow = cfg->internet_record_allow,
				  .ca = cfg->internet_record_ca, .resolve = cfg->internet_record_resolve,
				  .nresolve = cfg->ninternet_record_resolve, .redact = cfg->internet_redact_query,
				  .nredact = cfg->ninternet_redact_query,
				  .record_max_mib = cfg->internet_record_max_mib};

	if (check_flags(cfg, err) != 0)
		return -1;
	if (tc.dir == NULL)
		return 0;
	mock->tape = mock_inet_tape_new(&tc, err);
	if (mock->tape == NULL)
		return -1;
	mock_inet_book_set_tape(mock->inet_book, mock->tape);
	return 0;
}

int mock_op_cassette_scenario(sbx_mock *mock, const cJSON *v, const char *base_dir, sbx_err *err)
{
	const cJSON *dir = cJSON_GetObjectItemCaseSensitive(v, "replay");
	char path[4096];
	mock_inet_tape_conf tc = {0};

	if (!cJSON_IsObject(v) || cJSON_GetArraySize(v) != 1 || !cJSON_IsString(dir) || dir->valuestring[0] == '\0') {
		sbx_err_set(err, "scenario internet_cassette must be {\"replay\": \"DIR\"} (recording is a flag: "
				 "--internet-record)");
		return -1;
	}
	if (mock->tape != NULL) {
		sbx_err_set(err, "scenario internet_cassette: the mock has a cassette already (%s)",
			    mock_inet_tape_dir(mock->tape));
		return -1;
	}
	if (dir->valuestring[0] == '/' || base_dir == NULL)
		snprintf(path, sizeof(path), "%s", dir->valuestring);
	else
		snprintf(path, sizeof(path), "%s/%s", base_dir, dir->valuestring);
	tc.dir = path;
	mock->tape = mock_inet_tape_new(&tc, err);
	if (mock->tape == NULL) {
		sbx_err_prefix(err, "scenario internet_cassette");
		return -1;
	}
	mock_inet_book_set_tape(mock->inet_book, mock->tape);
	return 0;
}

void mock_op_cassette_stop(sbx_mock *mock)
{
	sbx_err err = {{0}};

	if (mock->tape == NULL)
		return;
	if (mock->inet_book != NULL)
		mock_inet_book_set_tape(mock->inet_book, NULL);
	if (mock_inet_tape_free(mock->tape, &err) != 0)
		fprintf(stderr, "sbx-mock: %s\n", err.msg);
	mock->tape = NULL;
}

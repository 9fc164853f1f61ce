/* mock_fixture: the shared cmocka group fixture of the mock's loopback
 * integration tests. One embedded mock per test program, on 127.0.0.1 port
 * 0, started by the group setup, reset (POST /_mock/reset: tenants, keys,
 * sandboxes, faults, journal, clock) before each test and stopped by the
 * group teardown; plus the assertion helpers the API tests share.
 *
 * Typical use:
 *   cmocka_unit_test_setup(some_test, mf_reset), ...
 *   return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
 * A file that needs another configuration writes its own group setup:
 *   sbx_mock_config cfg; mf_config_init(&cfg); cfg.seed = 1; return mf_setup(&cfg);
 *
 * Needs <setjmp.h>, <stdarg.h>, <stddef.h>, <stdint.h> and <cmocka.h>
 * included before it (cmocka's rule). */
#ifndef SBX_MOCK_TEST_FIXTURE_H
#define SBX_MOCK_TEST_FIXTURE_H

#include <stddef.h>

#include "mock_http.h"
#include "sbx/mock.h"

/* The group's mock, its base URL and its admin token (set by mf_setup). */
extern sbx_mock *g_mock;
extern const char *U;
extern const char *TOK;

/* sbx_mock_config_init, and quiet (no log lines on stderr). */
void mf_config_init(sbx_mock_config *cfg);
/* Starts a mock with cfg; NULL (the reason on stderr) when it cannot. For
 * tests that run a second mock next to the group's. */
sbx_mock *mf_start(const sbx_mock_config *cfg);
/* curl_global_init, then starts the group's mock with cfg and sets g_mock,
 * U and TOK. 0, or -1 when the mock did not start (cmocka then fails the
 * group). */
int mf_setup(const sbx_mock_config *cfg);

/* cmocka group setup of the API tests: a quiet mock with admin token
 * "admintok" and the guests' self-signal listener on 127.0.0.1 port 0. */
int mf_group_setup(void **state);
/* cmocka group teardown: stops the mock, curl_global_cleanup. */
int mf_group_teardown(void **state);
/* cmocka per-test setup: POST /_mock/reset, asserts 200. */
int mf_reset(void **state);

/* Assertion helpers of the API tests (test_api_*.c). */
/* Creates a sandbox with key and body on U and copies its id; asserts 200. */
void create(const char *key, const char *body, char *id, size_t cap);
/* data.<field> of a failure answer as a string, or NULL. */
const char *fail_field(const th_resp *r, const char *field);
/* Fails the test with what, the status and the body unless r->status is want. */
void expect_status(const th_resp *r, long want, const char *what);
/* data.<field> of a response. */
const cJSON *data_item(const th_resp *r, const char *field);

#endif

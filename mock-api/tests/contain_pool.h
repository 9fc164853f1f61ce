/* contain_pool: the containment battery's warm-pool tests (issue 24 item 3;
 * CONTAINMENT.md "The warm pool"), registered in test_contain.c's list and
 * run with its group mock (root and, in CI's contain-unprivileged stage,
 * uid 65534). The binary's stop with a full pool is test_contain.c's
 * pool_gone_after_stop. Needs <setjmp.h>, <stdarg.h>, <stddef.h>,
 * <stdint.h> and <cmocka.h> first (cmocka's rule). */
#ifndef SBX_MOCK_TEST_CONTAIN_POOL_H
#define SBX_MOCK_TEST_CONTAIN_POOL_H

#include <stdbool.h>
#include <stddef.h>

/* The group mock's work dir (test_contain.c). */
const char *contain_work_dir(void);
/* The number data.<key> of GET /_mock/pool on url with token, -1 when the
 * answer has none. */
double pool_stat(const char *url, const char *token, const char *key);
/* Waits up to ms until the pool on url has `size` idle cells (its size
 * when size is 0) and none being torn down; true when it got there. */
bool pool_wait_full(const char *url, const char *token, int ms);

void pool_cells_share_nothing(void **state);
void pooled_sandbox_pauses_and_forks(void **state);
void pool_counts_against_no_cap(void **state);
void pool_deletes_leave_no_link_rules(void **state);
void pool_off_still_works(void **state);
/* pool_off_still_works' teardown: its mock and work dir, whatever failed. */
int pool_off_teardown(void **state);

#endif

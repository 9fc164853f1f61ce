/* contain_round2: the containment battery's second round (issue 27, items
 * 2 and 3): a tenant's flood of the simulated internet and exec output
 * amplification. Registered in test_contain.c's list; each runs after the
 * battery's per-test setup (a reset mock), and round2_teardown after each
 * (the internet tests run against an sbx-mock program of their own, which
 * has the simulated internet unprivileged too). */
#ifndef SBX_MOCK_TEST_CONTAIN_ROUND2_H
#define SBX_MOCK_TEST_CONTAIN_ROUND2_H

int round2_teardown(void **state);
void internet_flood_leaves_other_tenants_theirs(void **state);
void internet_slow_head_has_a_deadline(void **state);
void dns_flood_held_to_a_share(void **state);
void exec_output_amplification_bounded(void **state);

#endif

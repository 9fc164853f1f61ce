/* Integration over loopback (the shared fixture: an embedded mock on port 0,
 * driven with libcurl): networks — create up to the quota, get by name,
 * delete. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "mock_fixture.h"

static void networks_quota(void **state)
{
	th_resp r;
	char body[64];

	(void)state;
	for (int i = 0; i < 5; i++) {
		snprintf(body, sizeof(body), "{\"name\":\"net%d\"}", i);
		th_json(U, "nk", "POST", "/v1/networks", body, &r);
		expect_status(&r, 200, "network create");
		assert_memory_equal(th_data_str(&r, "id"), "net-", 4);
		th_resp_free(&r);
	}
	th_json(U, "nk", "POST", "/v1/networks", "{\"name\":\"net5\"}", &r);
	expect_status(&r, 403, "sixth network");
	th_resp_free(&r);
	th_json(U, "nk", "GET", "/v1/networks/net3", NULL, &r);
	expect_status(&r, 200, "network by name");
	th_resp_free(&r);
	th_json(U, "nk", "DELETE", "/v1/networks/net3", NULL, &r);
	expect_status(&r, 200, "network delete");
	th_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(networks_quota, mf_reset),
	};

	return cmocka_run_group_tests(tests, mf_group_setup, mf_group_teardown);
}

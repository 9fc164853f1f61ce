/* ref_quirks: the names of the reference backend's quirks. `sbx-ref-backend
 * --quirk NAME` turns one on, which makes the binary the mutant NAME: it
 * breaks exactly that one promise so the suite can prove it catches it
 * (conformance/tests/CMakeLists.txt pairs each with the check that must fail).
 *
 * Only names and flags: never changes behaviour by itself; the code reads
 * the flags where the promise is kept (`if (r->q.retry_create_503)`). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ref.h"

static const struct {
	const char *name;
	size_t offset;
} QUIRKS[] = {
#define Q(name, field) {name, offsetof(struct ref_quirks, field)}
	Q("local-fallback", local_fallback),
	Q("delete-only-on-success", delete_only_on_success),
	Q("leak-on-timeout", leak_on_timeout),
	Q("retry-create-503", retry_create_503),
	Q("egress-empty-when-off", egress_empty_when_off),
	Q("egress-star-when-off", egress_star_when_off),
	Q("forward-domains", forward_domains),
	Q("claim-allowlist", claim_allowlist),
	Q("no-accept-check", no_accept_check),
	Q("io-in-capabilities", io_in_capabilities),
	Q("ignore-timeout", ignore_timeout),
	Q("shared-output", shared_output),
	Q("reuse-drift", reuse_drift),
	Q("no-resume", no_resume),
	Q("whoami-every-run", whoami_every_run),
	Q("autopause-wrong", autopause_wrong),
	Q("no-timeout-map", no_timeout_map),
	Q("refuse-as-execution", refuse_as_execution),
	Q("wait-on-cap", wait_on_cap),
	Q("executor-leak", executor_leak),
	Q("files-uncapped", files_uncapped),
	Q("create-before-refusal", create_before_refusal),
	Q("fork-shares-conn", fork_shares_conn),
	Q("ignore-shape-pin", ignore_shape_pin),
	Q("pin-keeps-floor", pin_keeps_floor),
#undef Q
};

bool ref_quirk_set(struct ref_quirks *q, const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(QUIRKS) / sizeof(QUIRKS[0]); i++) {
		if (strcmp(QUIRKS[i].name, name) == 0) {
			*(bool *)((char *)q + QUIRKS[i].offset) = true;
			return true;
		}
	}
	return false;
}

void ref_quirks_list(FILE *out)
{
	size_t i;

	for (i = 0; i < sizeof(QUIRKS) / sizeof(QUIRKS[0]); i++)
		fprintf(out, "  %s\n", QUIRKS[i].name);
}

/* checks: what the check files (checks_*.c) share: every check function of
 * the catalogue (the rows live in profiles.c) and a few inline helpers.
 *
 * Included by checks_*.c and profiles.c only. A check function decides its
 * case's verdict through cf_fail/cf_skip/cf_error (verdict.c) and never
 * touches another case's tenant or state. */
#ifndef SBX_CONFORM_CHECKS_H
#define SBX_CONFORM_CHECKS_H

#include <string.h>

#include "conform.h"

static inline const char *cf_s0(const char *s)
{
	return s != NULL ? s : "";
}

static inline bool is_error_type(const char *et, const char *want)
{
	return et != NULL && strcmp(et, want) == 0;
}

static inline bool sandbox_error(const char *et)
{
	return is_error_type(et, "SandboxUnavailableError") || is_error_type(et, "SandboxExecutionError");
}

/* checks_live.c: real connections from the guest (egress checks). Whether
 * the mock enforces egress (why: its note either way). */
bool cf_live_egress(struct cf_case *c, char *why, size_t cap);
/* Python for the backend to run: prints token (may be NULL), then connects
 * to every dest ("ADDR:PORT", "[V6]:PORT", "NAME:PORT", "NAME@ADDR:PORT":
 * the address) at once and prints one "SBX-PROBE" line each; with
 * fetch_metadata, also 169.254.169.254's answer ("SBX-META ..."). NULL
 * when out of memory; the caller frees. */
char *cf_probe_code(const char *const *dests, size_t n, const char *token, bool fetch_metadata);
/* dest's result in the run's stdout ("ok", "timeout", an errno name), or
 * NULL when the probe printed none. */
const char *cf_probe_result(const char *out, const char *dest, char *buf, size_t cap);

/* langflow-backend: checks_cap.c (CAP, REF), checks_fault.c (FB, CLN),
 * checks_res.c (RES, CON). */
void ck_cap_001(struct cf_case *c);
void ck_cap_002(struct cf_case *c);
void ck_cap_003(struct cf_case *c);
void ck_cap_004(struct cf_case *c);
void ck_cap_005(struct cf_case *c);
void ck_cap_006(struct cf_case *c);
void ck_ref_001(struct cf_case *c);
void ck_ref_002(struct cf_case *c);
void ck_ref_003(struct cf_case *c);
void ck_fb_check(struct cf_case *c); /* every FB-0xx: the fault comes from the id */
void ck_cln_001(struct cf_case *c);
void ck_cln_002(struct cf_case *c);
void ck_cln_003(struct cf_case *c);
void ck_cln_004(struct cf_case *c);
void ck_res_001(struct cf_case *c);
void ck_res_002(struct cf_case *c);
void ck_res_003(struct cf_case *c);
void ck_res_004(struct cf_case *c);
void ck_con_001(struct cf_case *c);
void ck_con_002(struct cf_case *c);

/* createos-backend, createos-component, createos-executor: checks_createos.c */
void ck_cos_001(struct cf_case *c);
void ck_cos_002(struct cf_case *c);
void ck_cos_003(struct cf_case *c);
void ck_cos_004(struct cf_case *c);
void ck_cos_005(struct cf_case *c);
void ck_cos_006(struct cf_case *c);
void ck_cos_007(struct cf_case *c);
void ck_comp_001(struct cf_case *c);
void ck_comp_002(struct cf_case *c);
void ck_comp_003(struct cf_case *c);
void ck_comp_004(struct cf_case *c);
void ck_comp_005(struct cf_case *c);
void ck_comp_006(struct cf_case *c);
void ck_exec_001(struct cf_case *c);
void ck_exec_002(struct cf_case *c);
void ck_exec_003(struct cf_case *c);

/* fuzz-case: checks_fuzz.c */
void ck_fuzz_case(struct cf_case *c);

/* host-gate: checks_gate.c */
void ck_gate_001(struct cf_case *c);
void ck_gate_002(struct cf_case *c);
void ck_gate_003(struct cf_case *c);
void ck_gate_004(struct cf_case *c);

#endif

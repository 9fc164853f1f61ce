/* gate: Langflow's policy gate (`_assert_backend_honours_policy`) and the
 * blank-code short cut that precedes it. The backend declares capabilities;
 * this decides. Every branch fails closed. Pure: no I/O, no globals. */
#include "sbx/gate.h"

#include <string.h>

#include "gate_internal.h"
#include "sbx/strbuf.h"

const char *sbx_gate_rule_id(sbx_gate_rule rule)
{
	switch (rule) {
	case SBX_GATE_RULE_ISOLATION:
		return "isolation";
	case SBX_GATE_RULE_DENY_ALL_EGRESS:
		return "deny_all_egress";
	case SBX_GATE_RULE_DOMAIN_ALLOWLIST:
		return "domain_allowlist";
	case SBX_GATE_RULE_TIMEOUT_CAP:
		return "timeout_cap";
	case SBX_GATE_RULE_NONE:
	default:
		return NULL;
	}
}

const char *sbx_gate_rule_variable(sbx_gate_rule rule)
{
	switch (rule) {
	case SBX_GATE_RULE_ISOLATION:
		return "LANGFLOW_SANDBOX_BACKEND";
	case SBX_GATE_RULE_DENY_ALL_EGRESS:
		return "LANGFLOW_SANDBOX_ALLOW_NETWORK";
	case SBX_GATE_RULE_DOMAIN_ALLOWLIST:
		return "LANGFLOW_SANDBOX_ALLOWED_DOMAINS";
	case SBX_GATE_RULE_TIMEOUT_CAP:
		return "LANGFLOW_SANDBOX_TIMEOUT_SECONDS";
	case SBX_GATE_RULE_NONE:
	default:
		return NULL;
	}
}

static const char *isolation_of(const sbx_gate_caps *caps)
{
	return caps->isolation != NULL ? caps->isolation : "none";
}

bool sbx_gate_rule_violated(sbx_gate_rule rule, const sbx_gate_settings *s, const sbx_gate_caps *caps)
{
	switch (rule) {
	case SBX_GATE_RULE_ISOLATION:
		return strcmp(isolation_of(caps), SBX_GATE_ISOLATION_REQUIRED) != 0;
	case SBX_GATE_RULE_DENY_ALL_EGRESS:
		return !s->allow_network && !caps->supports_deny_all_egress;
	case SBX_GATE_RULE_DOMAIN_ALLOWLIST:
		/* Whatever the network setting: domains set need an allowlist. */
		return s->n_allowed_domains > 0 && !caps->supports_domain_allowlist;
	case SBX_GATE_RULE_TIMEOUT_CAP:
		/* Equal to the cap is allowed. */
		return caps->has_max_timeout && (int64_t)s->timeout_seconds > caps->max_timeout_seconds;
	case SBX_GATE_RULE_NONE:
	default:
		return false;
	}
}

sbx_gate_rule sbx_gate_first_violation(const sbx_gate_settings *s, const sbx_gate_caps *caps)
{
	static const sbx_gate_rule order[SBX_GATE_RULE_COUNT] = {
		SBX_GATE_RULE_ISOLATION, SBX_GATE_RULE_DENY_ALL_EGRESS,
		SBX_GATE_RULE_DOMAIN_ALLOWLIST, SBX_GATE_RULE_TIMEOUT_CAP,
	};
	for (size_t i = 0; i < SBX_GATE_RULE_COUNT; i++) {
		if (sbx_gate_rule_violated(order[i], s, caps))
			return order[i];
	}
	return SBX_GATE_RULE_NONE;
}

static void repr(sbx_strbuf *sb, const char *s)
{
	sbx_gate_py_repr(sb, s, strlen(s), false);
}

void sbx_gate_refusal_message(sbx_gate_rule rule, const sbx_gate_settings *s, const sbx_gate_caps *caps,
			      char *msg, size_t size)
{
	sbx_strbuf sb = SBX_STRBUF_INIT;
	const char *name = s->backend != NULL ? s->backend : SBX_GATE_BACKEND_NONE;
	switch (rule) {
	case SBX_GATE_RULE_ISOLATION:
		sbx_strbuf_puts(&sb, "Sandbox backend ");
		repr(&sb, name);
		sbx_strbuf_puts(&sb, " reports ");
		repr(&sb, isolation_of(caps));
		sbx_strbuf_puts(&sb, " isolation, not a hardware-virtualized boundary. Sandbox mode disables "
				     "the in-process Python defenses on the assumption of hardware isolation. "
				     "Refusing to run the code.");
		break;
	case SBX_GATE_RULE_DENY_ALL_EGRESS:
		sbx_strbuf_puts(&sb, "LANGFLOW_SANDBOX_ALLOW_NETWORK is false but sandbox backend ");
		repr(&sb, name);
		sbx_strbuf_puts(&sb, " cannot block all egress. Refusing to run the code.");
		break;
	case SBX_GATE_RULE_DOMAIN_ALLOWLIST:
		sbx_strbuf_puts(&sb, "LANGFLOW_SANDBOX_ALLOWED_DOMAINS is set but sandbox backend ");
		repr(&sb, name);
		sbx_strbuf_puts(&sb, " cannot restrict egress by domain. Refusing to run the code.");
		break;
	case SBX_GATE_RULE_TIMEOUT_CAP:
		sbx_strbuf_printf(&sb, "LANGFLOW_SANDBOX_TIMEOUT_SECONDS is %d but sandbox backend ",
				  s->timeout_seconds);
		repr(&sb, name);
		sbx_strbuf_printf(&sb, " caps one execution at %llds. Refusing to run the code.",
				  (long long)caps->max_timeout_seconds);
		break;
	case SBX_GATE_RULE_NONE:
	default:
		break;
	}
	if (size > 0) {
		const char *text = sb.oom ? "out of memory" : sbx_strbuf_str(&sb);
		size_t len = strlen(text);
		if (len >= size)
			len = size - 1; /* documented cap: SBX_ERR_MAX */
		memcpy(msg, text, len);
		msg[len] = '\0';
	}
	sbx_strbuf_free(&sb);
}

bool sbx_gate_code_is_blank(const char *code, size_t len)
{
	size_t start, end;
	if (code == NULL)
		return true;
	sbx_gate_trim(code, len, true, &start, &end);
	return start == end;
}

void sbx_gate_decide(const sbx_gate_settings *s, const sbx_gate_caps *caps, const char *code, size_t code_len,
		     sbx_gate_decision *out)
{
	memset(out, 0, sizeof *out);
	if (s->backend == NULL || strcmp(s->backend, SBX_GATE_BACKEND_NONE) == 0) {
		out->verdict = SBX_GATE_IN_PROCESS; /* the default: no backend, so nothing to gate */
		return;
	}
	if (sbx_gate_code_is_blank(code, code_len)) {
		out->verdict = SBX_GATE_BLANK;
		return;
	}
	sbx_gate_rule rule = sbx_gate_first_violation(s, caps);
	if (rule == SBX_GATE_RULE_NONE) {
		out->verdict = SBX_GATE_RUN;
		return;
	}
	out->verdict = SBX_GATE_REFUSE;
	out->rule = rule;
	out->variable = sbx_gate_rule_variable(rule);
	sbx_gate_refusal_message(rule, s, caps, out->message, sizeof out->message);
}

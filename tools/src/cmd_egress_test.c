/* cmd_egress_test: `egress test ID DEST...` — connects from inside the
 * sandbox's guest (through the exec API: the guest runs a small Python
 * probe) and prints what the kernel did next to what the egress engine says
 * of the sandbox's stored rules. Against sbx-mock with enforced egress the
 * two must agree; against a mock that only stores rules, the guest has no
 * network and every connect fails locally (shown as such). */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "output.h"
#include "sbx/egress.h"

const ctl_opt ctl_opts_egress_test[] = {
	{"mode", "MODE", false, "host-rule semantics for the engine: observed (default) or documented"},
	{NULL, NULL, false, NULL},
};

/* argv[1]: JSON [[host-or-address, port], ...]. One result per line, in
 * order: ok, timeout (no answer in 2 s: dropped), unresolved, or an errno
 * name (refused, no route: the guest's own stack answered). */
static const char PROBE[] =
	"import errno,json,select,socket,sys,time\n"
	"D=json.loads(sys.argv[1]);S={};R={}\n"
	"for i,(a,p) in enumerate(D):\n"
	" try:a=socket.getaddrinfo(a,p,type=socket.SOCK_STREAM)[0][4][0]\n"
	" except OSError:R[i]='unresolved';continue\n"
	" s=socket.socket(socket.AF_INET6 if ':' in a else socket.AF_INET);s.setblocking(False)\n"
	" e=s.connect_ex((a,p))\n"
	" if e in (0,errno.EINPROGRESS):S[s]=i\n"
	" else:R[i]=errno.errorcode.get(e,str(e));s.close()\n"
	"t=time.time()+2\n"
	"while S and time.time()<t:\n"
	" _,w,_=select.select([],list(S),[],max(0,t-time.time()))\n"
	" for s in w:\n"
	"  e=s.getsockopt(socket.SOL_SOCKET,socket.SO_ERROR);i=S.pop(s)\n"
	"  R[i]='ok' if e==0 else errno.errorcode.get(e,str(e));s.close()\n"
	"for s,i in S.items():R[i]='timeout';s.close()\n"
	"for i in range(len(D)):print(R[i])\n";

typedef struct test_dest {
	const char *text;
	sbx_egress_dest dest;
	char host[SBX_EGRESS_HOST_MAX + 2];
	char target[SBX_EGRESS_HOST_MAX + 2]; /* what the guest dials */
	char kernel[32];
	sbx_egress_decision dec;
} test_dest;

static int parse(ctl_ctx *ctx, test_dest *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		sbx_egress_error e;

		memset(&e, 0, sizeof e);
		d[i].text = ctx->args.pos[i + 1];
		if (sbx_egress_dest_parse(d[i].text, strlen(d[i].text), &d[i].dest, d[i].host, sizeof d[i].host,
					  &e) != 0)
			return ctl_usage_error(ctx, "destination '%s': %s (ADDR:PORT, [V6]:PORT, NAME:PORT or "
					       "NAME@ADDR:PORT)", d[i].text, e.message);
		if (d[i].dest.family == 4 || d[i].dest.family == 6)
			inet_ntop(d[i].dest.family == 4 ? AF_INET : AF_INET6, d[i].dest.addr, d[i].target,
				  sizeof d[i].target);
		else
			snprintf(d[i].target, sizeof d[i].target, "%s", d[i].host);
	}
	return CTL_EXIT_OK;
}

/* The guest's results into d[i].kernel; -1 after printing. */
static int probe(ctl_ctx *ctx, test_dest *d, size_t n)
{
	cJSON *dests = cJSON_CreateArray(), *body = cJSON_CreateObject(), *args;
	sbx_strbuf path = SBX_STRBUF_INIT;
	ctl_response resp;
	const char *out;
	char *list;
	int rc = -1;

	for (size_t i = 0; i < n; i++) {
		cJSON *p = cJSON_CreateArray();

		cJSON_AddItemToArray(p, cJSON_CreateString(d[i].target));
		cJSON_AddItemToArray(p, cJSON_CreateNumber(d[i].dest.port));
		cJSON_AddItemToArray(dests, p);
	}
	list = cJSON_PrintUnformatted(dests);
	cJSON_AddStringToObject(body, "cmd", "python3");
	args = cJSON_AddArrayToObject(body, "args");
	cJSON_AddItemToArray(args, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(args, cJSON_CreateString(PROBE));
	cJSON_AddItemToArray(args, cJSON_CreateString(list != NULL ? list : "[]"));
	ctl_sandbox_path(&path, ctx->args.pos[0], "/exec");
	if (ctl_call_json(ctx, "POST", sbx_strbuf_str(&path), NULL, body, false, &resp) == 0) {
		const cJSON *res = cJSON_GetObjectItemCaseSensitive(resp.data, "result");

		out = ctl_json_str(res, "stdout");
		for (size_t i = 0; out != NULL && i < n; i++) {
			size_t len = strcspn(out, "\n");

			snprintf(d[i].kernel, sizeof d[i].kernel, "%.*s", (int)len, out);
			out = out[len] == '\n' ? out + len + 1 : NULL;
		}
		rc = n > 0 && d[n - 1].kernel[0] != '\0' ? 0 : -1;
		if (rc != 0)
			fprintf(ctx->err, "sbxctl: the probe in the guest printed no verdicts (python3 in the guest? "
				"stderr: %s)\n", ctl_json_str(res, "stderr") ? ctl_json_str(res, "stderr") : "");
	}
	ctl_response_free(&resp);
	sbx_strbuf_free(&path);
	free(list);
	cJSON_Delete(dests);
	cJSON_Delete(body);
	return rc;
}

/* The engine's decisions for the sandbox's stored list. */
static int decide(ctl_ctx *ctx, test_dest *d, size_t n, sbx_host_rule_mode mode)
{
	sbx_strbuf path = SBX_STRBUF_INIT;
	sbx_egress_list list = {0};
	sbx_egress_error e;
	sbx_egress_policy *pol;
	ctl_response resp;
	int rc = -1;

	ctl_sandbox_path(&path, ctx->args.pos[0], "/egress");
	if (ctl_call_json(ctx, "GET", sbx_strbuf_str(&path), NULL, NULL, false, &resp) == 0) {
		memset(&e, 0, sizeof e);
		if (sbx_egress_list_from_json(cJSON_GetObjectItemCaseSensitive(resp.data, "egress"), SIZE_MAX,
					      &list, &e) != 0)
			fprintf(ctx->err, "sbxctl: the sandbox's egress list does not parse: %s\n", e.message);
		else if ((pol = sbx_egress_policy_compile(&list, mode)) == NULL)
			fprintf(ctx->err, "sbxctl: out of memory\n");
		else {
			for (size_t i = 0; i < n; i++)
				d[i].dec = sbx_egress_policy_eval(pol, &d[i].dest);
			sbx_egress_policy_free(pol);
			rc = 0;
		}
	}
	sbx_egress_list_free(&list);
	ctl_response_free(&resp);
	sbx_strbuf_free(&path);
	return rc;
}

/* What the kernel's result means: connected, dropped, or it stayed in the
 * guest (refused or unroutable there: no rule was consulted). */
static const char *meaning(const char *k)
{
	if (strcmp(k, "ok") == 0)
		return "connected";
	if (strcmp(k, "timeout") == 0)
		return "dropped";
	if (strcmp(k, "unresolved") == 0)
		return "no such name";
	return "stayed in the guest";
}

int ctl_cmd_egress_test(ctl_ctx *ctx)
{
	static const char *const hdr[] = {"DEST", "KERNEL", "ENGINE", "REASON", "AGREE"};
	size_t n = ctx->args.npos - 1;
	const char *m = ctl_args_get(&ctx->args, "mode");
	sbx_host_rule_mode mode = SBX_HOST_RULES_OBSERVED;
	test_dest *d;
	ctl_table t;
	cJSON *arr;
	bool all = true;
	int rc;

	if (m != NULL && strcmp(m, "documented") == 0)
		mode = SBX_HOST_RULES_DOCUMENTED;
	else if (m != NULL && strcmp(m, "observed") != 0)
		return ctl_usage_error(ctx, "--mode: '%s' is neither 'documented' nor 'observed'", m);
	d = calloc(n, sizeof *d);
	if (d == NULL)
		return ctl_fail(ctx, "out of memory");
	rc = parse(ctx, d, n);
	if (rc != CTL_EXIT_OK || decide(ctx, d, n, mode) != 0 || probe(ctx, d, n) != 0) {
		free(d);
		return rc != CTL_EXIT_OK ? rc : CTL_EXIT_FAIL;
	}
	arr = ctx->json ? cJSON_CreateArray() : NULL;
	ctl_table_init(&t, 5, hdr);
	for (size_t i = 0; i < n; i++) {
		const char *what = meaning(d[i].kernel);
		/* a connection that never left the guest agrees with any rule */
		bool agree = strcmp(what, "connected") == 0 ? d[i].dec.allowed
			     : strcmp(what, "dropped") == 0 ? !d[i].dec.allowed
							    : true;
		char kernel[64];
		const char *cells[5];

		snprintf(kernel, sizeof kernel, "%s (%s)", what, d[i].kernel);
		cells[0] = d[i].text;
		cells[1] = kernel;
		cells[2] = d[i].dec.allowed ? "allow" : "deny";
		cells[3] = sbx_egress_reason_name(d[i].dec.reason);
		cells[4] = agree ? "yes" : "NO";
		all = all && agree;
		ctl_table_add(&t, cells);
		if (arr != NULL) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddStringToObject(o, "dest", d[i].text);
			cJSON_AddStringToObject(o, "kernel", d[i].kernel);
			cJSON_AddBoolToObject(o, "engine_allowed", d[i].dec.allowed);
			cJSON_AddStringToObject(o, "reason", cells[3]);
			cJSON_AddBoolToObject(o, "agree", agree);
			cJSON_AddItemToArray(arr, o);
		}
	}
	if (arr != NULL)
		ctl_print_json(ctx->out, arr);
	else
		ctl_table_print(&t, ctx->out);
	ctl_table_free(&t);
	cJSON_Delete(arr);
	free(d);
	return all ? CTL_EXIT_OK : CTL_EXIT_FAIL;
}

/* cmd_mock: the sbx-mock admin commands (faults, scenario, journal, state,
 * reset, clock). They only talk to /_mock/ with the admin token and never
 * send the API key, so they cannot change a tenant's view by accident. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ctl.h"
#include "output.h"

const ctl_opt ctl_opts_journal[] = {
	{"since", "SEQ", false, "only entries after this sequence number"},
	{"method", "METHOD", false, "only this HTTP method"},
	{"path", "PATTERN", false, "only this path ({id} matches one segment)"},
	{"tenant", "KEY", false, "only this tenant (API key)"},
	{"status", "CODE", false, "only this HTTP status"},
	{"limit", "N", false, "at most N entries per request"},
	{"follow", NULL, false, "keep printing new entries until interrupted"},
	{"interval", "DURATION", false, "--follow poll interval (default 500ms)"},
	{NULL, NULL, false, NULL},
};

const ctl_opt ctl_opts_state[] = {
	{"tenant", "KEY", false, "only this tenant"},
	{NULL, NULL, false, NULL},
};

static int admin_call(ctl_ctx *ctx, const char *method, const char *path, const char *query,
		      const char *body, ctl_response *resp)
{
	ctl_request req = {.method = method, .path = path, .query = query, .admin = true, .body = body,
			   .body_len = body != NULL ? strlen(body) : 0};
	return ctl_call(ctx, &req, resp);
}

static int admin_simple(ctl_ctx *ctx, const char *method, const char *path, const char *body,
			const char *done)
{
	ctl_response resp;
	int rc = CTL_EXIT_FAIL;
	if (admin_call(ctx, method, path, NULL, body, &resp) == 0) {
		if (ctx->json)
			ctl_print_json(ctx->out, resp.data);
		else
			fprintf(ctx->out, "%s\n", done);
		rc = CTL_EXIT_OK;
	}
	ctl_response_free(&resp);
	return rc;
}

/* The argument itself, or the file's contents for "@FILE"; validated as
 * JSON so a typo is a usage error, not a round trip. */
static int json_arg(ctl_ctx *ctx, const char *arg, sbx_strbuf *out, const char *what)
{
	if (arg[0] == '@') {
		if (ctl_read_file(ctx, arg + 1, out) != 0)
			return CTL_EXIT_FAIL;
	} else {
		sbx_strbuf_puts(out, arg);
	}
	cJSON *v = cJSON_ParseWithLength(sbx_strbuf_str(out), out->len);
	if (v == NULL || !cJSON_IsObject(v)) {
		cJSON_Delete(v);
		return ctl_usage_error(ctx, "%s is not a JSON object (%s)", arg[0] == '@' ? arg + 1 : "the argument",
				       what);
	}
	cJSON_Delete(v);
	return CTL_EXIT_OK;
}

int ctl_cmd_mock_faults_add(ctl_ctx *ctx)
{
	sbx_strbuf body = SBX_STRBUF_INIT;
	int rc = json_arg(ctx, ctx->args.pos[0], &body, "a rule, or {\"rules\":[...]}");
	if (rc == CTL_EXIT_OK) {
		ctl_response resp;
		rc = CTL_EXIT_FAIL;
		if (admin_call(ctx, "POST", "/_mock/faults", NULL, sbx_strbuf_str(&body), &resp) == 0) {
			char *ids = ctl_json_field(resp.data, "ids");
			if (ctx->json)
				ctl_print_json(ctx->out, resp.data);
			else
				fprintf(ctx->out, "added fault rule(s): %s\n", ids != NULL ? ids : "");
			free(ids);
			rc = CTL_EXIT_OK;
		}
		ctl_response_free(&resp);
	}
	sbx_strbuf_free(&body);
	return rc;
}

/* "times=1", "after=2", "p=0.25" or "always". */
static char *fire_text(const cJSON *rule)
{
	const cJSON *fire = cJSON_GetObjectItemCaseSensitive(rule, "fire");
	static const char *const keys[][2] = {{"times", "times="}, {"after", "after="}, {"probability", "p="}};
	sbx_strbuf sb = SBX_STRBUF_INIT;
	for (size_t i = 0; i < 3; i++) {
		char *v = ctl_json_field(fire, keys[i][0]);
		if (v != NULL)
			sbx_strbuf_printf(&sb, "%s%s%s", sb.len > 0 ? "," : "", keys[i][1], v);
		free(v);
	}
	if (sb.len == 0)
		sbx_strbuf_puts(&sb, "always");
	return sbx_strbuf_detach(&sb, NULL);
}

static char *action_text(const cJSON *rule)
{
	const cJSON *act = cJSON_GetObjectItemCaseSensitive(rule, "action");
	const char *kind = ctl_json_str(act, "kind");
	char *status = ctl_json_field(act, "status");
	sbx_strbuf sb = SBX_STRBUF_INIT;
	sbx_strbuf_printf(&sb, "%s%s%s", kind != NULL ? kind : "?", status != NULL ? " " : "",
			  status != NULL ? status : "");
	free(status);
	return sbx_strbuf_detach(&sb, NULL);
}

int ctl_cmd_mock_faults_ls(ctl_ctx *ctx)
{
	ctl_response resp;
	if (admin_call(ctx, "GET", "/_mock/faults", NULL, NULL, &resp) != 0) {
		ctl_response_free(&resp);
		return CTL_EXIT_FAIL;
	}
	const cJSON *rules = cJSON_GetObjectItemCaseSensitive(resp.data, "rules");
	if (ctx->json) {
		ctl_print_json(ctx->out, rules);
		ctl_response_free(&resp);
		return CTL_EXIT_OK;
	}
	static const char *const hdr[] = {"ID", "NAME", "METHOD", "PATH", "ACTION", "FIRE", "MATCHED", "FIRED"};
	ctl_table t;
	ctl_table_init(&t, 8, hdr);
	const cJSON *r = NULL;
	cJSON_ArrayForEach(r, rules) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "match");
		char *c[8] = {ctl_json_field(r, "id"), ctl_json_field(r, "name"), ctl_json_field(m, "method"),
			      ctl_json_field(m, "path"), action_text(r), fire_text(r),
			      ctl_json_field(r, "matched"), ctl_json_field(r, "fired")};
		if (c[2] == NULL)
			c[2] = strdup("*");
		if (c[3] == NULL)
			c[3] = strdup("*");
		ctl_table_add(&t, (const char *const *)c);
		for (size_t i = 0; i < 8; i++)
			free(c[i]);
	}
	ctl_table_print(&t, ctx->out);
	ctl_table_free(&t);
	ctl_response_free(&resp);
	return CTL_EXIT_OK;
}

int ctl_cmd_mock_faults_clear(ctl_ctx *ctx)
{
	return admin_simple(ctx, "DELETE", "/_mock/faults", NULL, "all fault rules removed");
}

int ctl_cmd_mock_faults_rm(ctl_ctx *ctx)
{
	sbx_strbuf path = SBX_STRBUF_INIT;
	sbx_strbuf_puts(&path, "/_mock/faults/");
	ctl_escape(&path, ctx->args.pos[0]);
	char done[300];
	snprintf(done, sizeof done, "fault rule %s removed", ctx->args.pos[0]);
	int rc = admin_simple(ctx, "DELETE", sbx_strbuf_str(&path), NULL, done);
	sbx_strbuf_free(&path);
	return rc;
}

static bool names_a_file(const char *arg)
{
	struct stat st;
	size_t n = strlen(arg);
	return stat(arg, &st) == 0 || strchr(arg, '/') != NULL || (n > 5 && strcmp(arg + n - 5, ".json") == 0);
}

int ctl_cmd_mock_scenario_load(ctl_ctx *ctx)
{
	const char *arg = ctx->args.pos[0];
	sbx_strbuf body = SBX_STRBUF_INIT;
	int rc = CTL_EXIT_FAIL;
	if (names_a_file(arg)) {
		if (ctl_read_file(ctx, arg, &body) != 0)
			goto out_free;
	} else {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", arg);
		char *s = cJSON_PrintUnformatted(o);
		sbx_strbuf_puts(&body, s != NULL ? s : "");
		free(s);
		cJSON_Delete(o);
	}
	ctl_response resp;
	if (admin_call(ctx, "POST", "/_mock/scenario", NULL, sbx_strbuf_str(&body), &resp) == 0) {
		char *ids = ctl_json_field(resp.data, "ids");
		if (ctx->json)
			ctl_print_json(ctx->out, resp.data);
		else
			fprintf(ctx->out, "scenario '%s' loaded: fault rule(s) %s\n", arg, ids != NULL ? ids : "");
		free(ids);
		rc = CTL_EXIT_OK;
	}
	ctl_response_free(&resp);
out_free:
	sbx_strbuf_free(&body);
	return rc;
}

/* ---- journal ---- */

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int journal_query(ctl_ctx *ctx, sbx_strbuf *q)
{
	static const char *const names[] = {"method", "path", "tenant"};
	sbx_err e = {""};
	long v = 0;
	const char *s = NULL;
	for (size_t i = 0; i < 3; i++) {
		if ((s = ctl_args_get(&ctx->args, names[i])) == NULL)
			continue;
		sbx_strbuf_printf(q, "&%s=", names[i]);
		ctl_escape(q, s);
	}
	if ((s = ctl_args_get(&ctx->args, "status")) != NULL) {
		if (ctl_parse_long(s, 100, 599, "--status", &v, &e) != 0)
			return ctl_usage_error(ctx, "%s", e.msg);
		sbx_strbuf_printf(q, "&status=%ld", v);
	}
	if ((s = ctl_args_get(&ctx->args, "limit")) != NULL) {
		if (ctl_parse_long(s, 1, 1000000, "--limit", &v, &e) != 0)
			return ctl_usage_error(ctx, "%s", e.msg);
		sbx_strbuf_printf(q, "&limit=%ld", v);
	}
	return CTL_EXIT_OK;
}

static const char *const journal_hdr[] = {"SEQ", "TS_MS", "METHOD", "PATH", "STATUS", "TENANT",
					  "SANDBOX", "DUR_US", "FAULT"};
static const char *const journal_keys[] = {"seq", "ts_ms", "method", "path", "status", "tenant",
					   "sandbox_id", "duration_us", "fault"};
#define JOURNAL_COLS 9
static const int journal_widths[JOURNAL_COLS] = {6, 13, 7, 36, 6, 14, 30, 8, 0};

static void journal_row(FILE *out, const cJSON *e)
{
	const int *widths = journal_widths;
	for (size_t i = 0; i < JOURNAL_COLS; i++) {
		char *v = ctl_json_field(e, journal_keys[i]);
		if (i + 1 < JOURNAL_COLS)
			fprintf(out, "%-*s ", widths[i], v != NULL ? v : "-");
		else
			fprintf(out, "%s\n", v != NULL ? v : "-");
		free(v);
	}
}

/* Prints a batch of entries: a table, or (follow) fixed-width rows or JSON lines. */
static void journal_print(ctl_ctx *ctx, const cJSON *entries, bool follow)
{
	const cJSON *e = NULL;
	if (ctx->json && follow) {
		cJSON_ArrayForEach(e, entries) {
			char *s = cJSON_PrintUnformatted(e);
			fprintf(ctx->out, "%s\n", s != NULL ? s : "{}");
			free(s);
		}
	} else if (follow) {
		cJSON_ArrayForEach(e, entries) {
			journal_row(ctx->out, e);
		}
	} else {
		ctl_table t;
		ctl_table_init(&t, JOURNAL_COLS, journal_hdr);
		cJSON_ArrayForEach(e, entries) {
			char *c[JOURNAL_COLS];
			for (size_t i = 0; i < JOURNAL_COLS; i++)
				c[i] = ctl_json_field(e, journal_keys[i]);
			ctl_table_add(&t, (const char *const *)c);
			for (size_t i = 0; i < JOURNAL_COLS; i++)
				free(c[i]);
		}
		ctl_table_print(&t, ctx->out);
		ctl_table_free(&t);
	}
	fflush(ctx->out);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL); /* an interrupt ends the sleep early, which is wanted */
}

static int journal_follow(ctl_ctx *ctx, const char *filters, long since, long interval)
{
	struct sigaction sa, old_int, old_term;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_interrupt;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	interrupted = 0;
	int rc = CTL_EXIT_OK;
	if (!ctx->json) {
		for (size_t i = 0; i + 1 < JOURNAL_COLS; i++)
			fprintf(ctx->out, "%-*s ", journal_widths[i], journal_hdr[i]);
		fprintf(ctx->out, "%s\n", journal_hdr[JOURNAL_COLS - 1]);
	}
	while (!interrupted) {
		char q[1200];
		snprintf(q, sizeof q, "since=%ld%s", since, filters);
		ctl_response resp;
		if (admin_call(ctx, "GET", "/_mock/journal", q, NULL, &resp) != 0) {
			ctl_response_free(&resp);
			rc = interrupted ? CTL_EXIT_OK : CTL_EXIT_FAIL;
			break;
		}
		journal_print(ctx, cJSON_GetObjectItemCaseSensitive(resp.data, "entries"), true);
		const cJSON *next = cJSON_GetObjectItemCaseSensitive(resp.data, "next_seq");
		if (cJSON_IsNumber(next) && next->valuedouble > (double)since)
			since = (long)next->valuedouble;
		ctl_response_free(&resp);
		if (!interrupted)
			sleep_ms(interval);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}

int ctl_cmd_mock_journal(ctl_ctx *ctx)
{
	sbx_strbuf filters = SBX_STRBUF_INIT;
	int rc = journal_query(ctx, &filters);
	long since = 0;
	int64_t interval = 500;
	sbx_err e = {""};
	const char *s = ctl_args_get(&ctx->args, "since");
	if (rc == CTL_EXIT_OK && s != NULL && ctl_parse_long(s, 0, INT32_MAX, "--since", &since, &e) != 0)
		rc = ctl_usage_error(ctx, "%s", e.msg);
	s = ctl_args_get(&ctx->args, "interval");
	if (rc == CTL_EXIT_OK && s != NULL &&
	    (ctl_parse_duration_ms(s, "--interval", &interval, &e) != 0 || interval < 10))
		rc = ctl_usage_error(ctx, "%s", e.msg[0] != '\0' ? e.msg : "--interval: at least 10ms");
	if (rc != CTL_EXIT_OK)
		goto out_free;
	if (ctl_args_has(&ctx->args, "follow")) {
		rc = journal_follow(ctx, sbx_strbuf_str(&filters), since, (long)interval);
		goto out_free;
	}
	char q[1200];
	snprintf(q, sizeof q, "since=%ld%s", since, sbx_strbuf_str(&filters));
	ctl_response resp;
	rc = CTL_EXIT_FAIL;
	if (admin_call(ctx, "GET", "/_mock/journal", q, NULL, &resp) == 0) {
		if (ctx->json) {
			ctl_print_json(ctx->out, resp.data);
		} else {
			journal_print(ctx, cJSON_GetObjectItemCaseSensitive(resp.data, "entries"), false);
			if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(resp.data, "enabled")))
				fprintf(ctx->err, "note: the journal is off (the mock runs with "
						  "--no-journal): no request is ever recorded\n");
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp.data, "wrapped"))) {
				char *d = ctl_json_field(resp.data, "dropped");
				fprintf(ctx->err, "note: the journal wrapped; %s older entries were dropped\n",
					d != NULL ? d : "some");
				free(d);
			}
		}
		rc = CTL_EXIT_OK;
	}
	ctl_response_free(&resp);
out_free:
	sbx_strbuf_free(&filters);
	return rc;
}

/* ---- state, reset, clock ---- */

int ctl_cmd_mock_state(ctl_ctx *ctx)
{
	sbx_strbuf q = SBX_STRBUF_INIT;
	const char *tenant = ctl_args_get(&ctx->args, "tenant");
	if (tenant != NULL) {
		sbx_strbuf_puts(&q, "tenant=");
		ctl_escape(&q, tenant);
	}
	ctl_response resp;
	int rc = CTL_EXIT_FAIL;
	if (admin_call(ctx, "GET", "/_mock/state", sbx_strbuf_str(&q), NULL, &resp) != 0)
		goto out_free;
	rc = CTL_EXIT_OK;
	if (ctx->json) {
		ctl_print_json(ctx->out, resp.data);
		goto out_free;
	}
	char *clock = ctl_json_field(resp.data, "clock_ms");
	fprintf(ctx->out, "clock_ms: %s\n", clock != NULL ? clock : "?");
	free(clock);
	static const char *const hdr[] = {"TENANT", "USER", "SANDBOX", "NAME", "STATUS", "EGRESS"};
	ctl_table t;
	ctl_table_init(&t, 6, hdr);
	const cJSON *ten = NULL;
	cJSON_ArrayForEach(ten, cJSON_GetObjectItemCaseSensitive(resp.data, "tenants")) {
		const cJSON *sbs = cJSON_GetObjectItemCaseSensitive(ten, "sandboxes");
		const cJSON *sb = NULL;
		if (cJSON_GetArraySize(sbs) == 0) {
			const char *c[] = {ctl_json_str(ten, "key"), ctl_json_str(ten, "user_id"), NULL, NULL, NULL, NULL};
			ctl_table_add(&t, c);
		}
		cJSON_ArrayForEach(sb, sbs) {
			char *eg = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sb, "egress_is_null"))
					   ? strdup("null") : ctl_json_field(sb, "egress");
			const char *c[] = {ctl_json_str(ten, "key"), ctl_json_str(ten, "user_id"),
					   ctl_json_str(sb, "id"), ctl_json_str(sb, "name"),
					   ctl_json_str(sb, "status"), eg != NULL ? eg : "[]"};
			ctl_table_add(&t, c);
			free(eg);
		}
	}
	ctl_table_print(&t, ctx->out);
	ctl_table_free(&t);
out_free:
	ctl_response_free(&resp);
	sbx_strbuf_free(&q);
	return rc;
}

int ctl_cmd_mock_reset(ctl_ctx *ctx)
{
	return admin_simple(ctx, "POST", "/_mock/reset", NULL, "mock reset: no tenants, sandboxes, faults or journal");
}

int ctl_cmd_mock_clock_advance(ctl_ctx *ctx)
{
	int64_t ms = 0;
	sbx_err e = {""};
	if (ctl_parse_duration_ms(ctx->args.pos[0], "DURATION", &ms, &e) != 0)
		return ctl_usage_error(ctx, "%s", e.msg);
	char body[64];
	snprintf(body, sizeof body, "{\"ms\":%lld}", (long long)ms);
	ctl_response resp;
	int rc = CTL_EXIT_FAIL;
	if (admin_call(ctx, "POST", "/_mock/clock/advance", NULL, body, &resp) == 0) {
		char *c = ctl_json_field(resp.data, "clock_ms");
		if (ctx->json)
			ctl_print_json(ctx->out, resp.data);
		else
			fprintf(ctx->out, "mock clock advanced by %lld ms, now %s ms\n", (long long)ms,
				c != NULL ? c : "?");
		free(c);
		rc = CTL_EXIT_OK;
	}
	ctl_response_free(&resp);
	return rc;
}

/* ---- the simulated internet's stubs and journal (mock-api/INTERNET.md) ---- */

int ctl_cmd_mock_internet_stub_add(ctl_ctx *ctx)
{
	sbx_strbuf body = SBX_STRBUF_INIT;
	int rc = json_arg(ctx, ctx->args.pos[0], &body, "a stub, or {\"stubs\":[...]}");
	if (rc == CTL_EXIT_OK) {
		ctl_response resp;
		rc = CTL_EXIT_FAIL;
		if (admin_call(ctx, "POST", "/_mock/internet/stubs", NULL, sbx_strbuf_str(&body), &resp) == 0) {
			char *ids = ctl_json_field(resp.data, "ids");
			if (ctx->json)
				ctl_print_json(ctx->out, resp.data);
			else
				fprintf(ctx->out, "added stub(s): %s\n", ids != NULL ? ids : "");
			free(ids);
			rc = CTL_EXIT_OK;
		}
		ctl_response_free(&resp);
	}
	sbx_strbuf_free(&body);
	return rc;
}

/* One line per item of data.KEY (its JSON), or the whole answer with --json. */
static int admin_lines(ctl_ctx *ctx, const char *path, const char *key)
{
	ctl_response resp;
	int rc = CTL_EXIT_FAIL;
	if (admin_call(ctx, "GET", path, NULL, NULL, &resp) == 0) {
		const cJSON *it, *list = cJSON_GetObjectItemCaseSensitive(resp.data, key);
		if (ctx->json) {
			ctl_print_json(ctx->out, resp.data);
		} else {
			cJSON_ArrayForEach(it, list) {
				char *line = cJSON_PrintUnformatted(it);
				fprintf(ctx->out, "%s\n", line != NULL ? line : "");
				free(line);
			}
		}
		rc = CTL_EXIT_OK;
	}
	ctl_response_free(&resp);
	return rc;
}

int ctl_cmd_mock_internet_show(ctl_ctx *ctx)
{
	const char *what = ctx->args.pos[0];
	if (strcmp(what, "stubs") == 0)
		return admin_lines(ctx, "/_mock/internet/stubs", "stubs");
	if (strcmp(what, "journal") == 0)
		return admin_lines(ctx, "/_mock/internet/journal", "entries");
	return ctl_usage_error(ctx, "mock internet show: \"%s\" is not stubs or journal", what);
}

/* "all" removes every stub. */
int ctl_cmd_mock_internet_stub_rm(ctl_ctx *ctx)
{
	if (strcmp(ctx->args.pos[0], "all") == 0)
		return admin_simple(ctx, "DELETE", "/_mock/internet/stubs", NULL, "all stubs removed");
	sbx_strbuf path = SBX_STRBUF_INIT;
	sbx_strbuf_puts(&path, "/_mock/internet/stubs/");
	ctl_escape(&path, ctx->args.pos[0]);
	char done[300];
	snprintf(done, sizeof done, "stub %s removed", ctx->args.pos[0]);
	int rc = admin_simple(ctx, "DELETE", sbx_strbuf_str(&path), NULL, done);
	sbx_strbuf_free(&path);
	return rc;
}

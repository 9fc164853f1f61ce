/* fz_input: what a backend-fuzzer input means. The decoder (a
 * FuzzedDataProvider-style reader: one byte per choice, read front to back,
 * 0 past the end, each byte an index modulo its table), its inverse for the
 * seeds, and the printers: the driver's environment, the guest code and the
 * exact output it produces, the mock fault rules, the replay scenario.
 *
 * Every table value is one the reference backend and the gate library
 * agree on (no spelling one accepts and the other refuses), so a finding
 * against the reference is a real disagreement with the spec. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "fz.h"
#include "sbx/strbuf.h"

/* ---- settings tables (NULL = the variable is unset, KEEP = the runner's
 * default stays: ACCEPT_EGRESS_EXCEPTIONS=true) ---- */

static const char KEEP[] = "(runner default)";
static const char *const NETWORK[FZ_N_NETWORK] = {NULL, "true", "TRUE", "1", "false", "0", "no", "maybe"};
static const char *const ACCEPT[FZ_N_ACCEPT] = {KEEP, NULL, " Yes ", "T", "1", "on", "false", "0", "", "maybe"};
static const char *const DOMAINS[FZ_N_DOMAINS] = {
	NULL, "", " , ", "pypi.org", "pypi.org, files.pythonhosted.org", "*.example.com",
};
/* NULL: the runner's default (10). */
static const char *const TIMEOUT[FZ_N_TIMEOUT] = {NULL, "1", "2", "3", "0", "301", "abc", "300", "5"};
static const char *const MEMORY[FZ_N_MEMORY] = {NULL, "128", "2048", "4096", "6000", "20000", "100", "abc"};
static const char *const SHAPE[FZ_N_SHAPE] = {NULL, "s-1vcpu-1gb", "s-8vcpu-16gb", "s-4vcpu-8gb", "s-nope"};

static const struct {
	const char *method; /* NULL = any */
	const char *path;
} ENDPOINTS[FZ_N_ENDPOINTS] = {
	{"POST", "/v1/sandboxes"},       {"GET", "/v1/whoami"},
	{"GET", "/v1/shapes"},           {"PUT", "/v1/sandboxes/{id}/files"},
	{"POST", "/v1/sandboxes/{id}/exec"}, {"DELETE", "/v1/sandboxes/{id}"},
	{"GET", "/v1/sandboxes/{id}"},   {"GET", "/v1/sandboxes"},
	{NULL, "/v1/*"},
};

/* The mock's 21 action kinds (mock-api/ADMIN.md). */
static const char *const ACTIONS[FZ_N_ACTIONS] = {
	"http", "reset", "close", "empty_200", "malformed_json", "truncated", "garbage", "dribble", "hang",
	"latency", "commit_then_fail", "create_failed", "pause_error", "resume_polls", "destroy_stuck",
	"host_dies", "cp_restart", "exec_agent_error", "exec_oom", "exec_stream_cut", "exec_heartbeats_only",
};

static const int HTTP_STATUS[] = {400, 401, 402, 403, 404, 409, 429, 500, 502, 503, 504, 200};
#define N_HTTP (sizeof(HTTP_STATUS) / sizeof(HTTP_STATUS[0]))

static const int EXITS[FZ_N_EXITS] = {0, 1, 3, 42, 2, 255}; /* never 124/137: those mean timeout/kill */
static const unsigned SIZES[FZ_N_SIZES] = {0, 1, 10, 1000, 65536, 300000};
/* Seconds to sleep; -1 = past the timeout (1.5 s, only with a timeout of
 * 1 s, else 0.03 s). Enough to overlap concurrent runs; a longer wait costs
 * throughput and proves nothing more (a sleep past the timeout costs the
 * second the backend's `timeout` really waits). */
static const double SLEEPS[FZ_N_SLEEPS] = {0, 0, 0.01, 0.03, -1, 0};
/* Runs per input by flag bits 3-4, read only with bit 7 set: three inputs
 * in four have one run. Every run starts the guest's python3 (~25 ms, most
 * of an input's cost), and what only several runs can show (shared state,
 * concurrency, reuse) needs just some of the inputs, not half of them. */
static const unsigned NRUNS[4] = {1, 1, 2, 3};
/* White space around a run's output (both streams), bytes a backend could
 * alter unnoticed: trailing blanks, leading blanks, CRLF line ends, an
 * empty last line. The result invariant compares them exactly (the spec lets
 * a backend change only what it cannot decode: these are valid UTF-8). Two
 * of eight keep the plain text, so every input from before keeps its
 * meaning (their byte had bits 2-4 clear, or reads as such). */
static const struct {
	const char *lead, *tail;
} TEXT[FZ_N_TEXT] = {
	{"", ""},       {"", "  \\n"},         {" \\t", ""},  {"", "\\r\\nline 2\\r\\n"},
	{"", "\\n\\n"}, {"", "\\t \\n \\n"}, {"", ""},       {" ", " \\r\\n\\n"},
};

/* ---- decoding ---- */

struct reader {
	const uint8_t *p;
	size_t n;
};

static unsigned take(struct reader *r, unsigned mod)
{
	unsigned v = 0;

	if (r->n > 0) {
		v = *r->p++;
		r->n--;
	}
	return v % mod;
}

void fz_decode(const uint8_t *data, size_t size, struct fz_input *in)
{
	struct reader r = {data, size};
	unsigned flags = take(&r, 256), i;
	bool custom;

	memset(in, 0, sizeof(*in));
	/* Flags: a fresh driver (bits 0, 1 and 6: one input in eight; a driver
	 * start costs more than the rest of an input), concurrent runs (bit 2),
	 * the run count (bits 3-4 when bit 7 is set), own settings (bit 5; else the eight
	 * settings bytes are read but ignored, so the layout stays put).
	 * Defaults are common on purpose: a driver serves one combination of
	 * settings, and reusing it is what makes an input cost milliseconds. */
	in->fresh = (flags & 0x43u) == 0x43u;
	in->concurrent = (flags >> 2) & 1u;
	in->nruns = (flags & 0x80u) != 0 ? NRUNS[(flags >> 3) % 4] : 1;
	custom = (flags >> 5) & 1u;
	in->network = take(&r, FZ_N_NETWORK);
	in->accept = take(&r, FZ_N_ACCEPT);
	in->domains = take(&r, FZ_N_DOMAINS);
	in->timeout = take(&r, FZ_N_TIMEOUT);
	in->memory = take(&r, FZ_N_MEMORY);
	in->shape = take(&r, FZ_N_SHAPE);
	in->key = take(&r, FZ_N_KEY);
	in->url = take(&r, FZ_N_URL);
	if (!custom)
		in->network = in->accept = in->domains = in->timeout = in->memory = in->shape = in->key = in->url = 0;
	in->nfaults = take(&r, FZ_MAX_FAULTS + 1);
	for (i = 0; i < in->nfaults; i++) {
		struct fz_fault *f = &in->faults[i];

		f->endpoint = take(&r, FZ_N_ENDPOINTS);
		f->action = take(&r, FZ_N_ACTIONS);
		f->param = take(&r, 256);
		f->after = take(&r, 4);
		f->times = take(&r, 4);
	}
	for (i = 0; i < in->nruns; i++) {
		struct fz_run *run = &in->runs[i];
		unsigned b;

		run->exit_idx = take(&r, FZ_N_EXITS);
		run->out_idx = take(&r, FZ_N_SIZES);
		run->err_idx = take(&r, FZ_N_SIZES);
		run->sleep_idx = take(&r, FZ_N_SLEEPS);
		b = take(&r, 32); /* bits 0-1 as before (b % 4), bits 2-4 the white space */
		run->env = b & 1u;
		run->unicode = (b >> 1) & 1u;
		run->text = (b >> 2) % FZ_N_TEXT;
	}
	/* The surface comes last, so an input that ends after its runs (every
	 * corpus entry from before the surfaces) still drives run. */
	in->surface = take(&r, FZ_N_SURF);
	if (in->surface == FZ_SURF_RUN)
		return;
	in->concurrent = false;
	for (i = 0; i < in->nruns; i++) /* only run takes an env */
		if (in->surface != FZ_SURF_FORK || i == fz_fork_index(in))
			in->runs[i].env = false;
	for (i = 0; i < in->nruns && in->surface == FZ_SURF_COMPONENT; i++) {
		struct fz_run *run = &in->runs[i];
		unsigned b = take(&r, 256);

		/* bit 0 reuse, bits 1-2 the harness's action (3: none), bits
		 * 3-5 the files (5: few, 6: big, 7: many, else none: the
		 * over-cap ones are slow, hundreds of downloads) */
		run->reuse = b & 1u;
		run->between = ((b >> 1) & 3u) % FZ_N_BETWEEN;
		run->files = (b >> 3) & 7u;
		run->files = run->files >= 5 ? run->files - 4 : FZ_FILES_NONE;
	}
}

size_t fz_encode(const struct fz_input *in, uint8_t *out, size_t cap)
{
	uint8_t b[128];
	size_t n = 0;
	unsigned i;
	bool custom = in->network || in->accept || in->domains || in->timeout || in->memory || in->shape ||
		      in->key || in->url;

	b[n++] = (uint8_t)((in->fresh ? 0x43 : 0) | (in->concurrent ? 4 : 0) |
			   (in->nruns == 1 ? 0 : 0x80 | in->nruns << 3) | (custom ? 32 : 0));
	b[n++] = (uint8_t)in->network;
	b[n++] = (uint8_t)in->accept;
	b[n++] = (uint8_t)in->domains;
	b[n++] = (uint8_t)in->timeout;
	b[n++] = (uint8_t)in->memory;
	b[n++] = (uint8_t)in->shape;
	b[n++] = (uint8_t)in->key;
	b[n++] = (uint8_t)in->url;
	b[n++] = (uint8_t)in->nfaults;
	for (i = 0; i < in->nfaults; i++) {
		b[n++] = (uint8_t)in->faults[i].endpoint;
		b[n++] = (uint8_t)in->faults[i].action;
		b[n++] = (uint8_t)in->faults[i].param;
		b[n++] = (uint8_t)in->faults[i].after;
		b[n++] = (uint8_t)in->faults[i].times;
	}
	for (i = 0; i < in->nruns; i++) {
		const struct fz_run *r = &in->runs[i];

		b[n++] = (uint8_t)r->exit_idx;
		b[n++] = (uint8_t)r->out_idx;
		b[n++] = (uint8_t)r->err_idx;
		b[n++] = (uint8_t)r->sleep_idx;
		b[n++] = (uint8_t)((r->env ? 1 : 0) | (r->unicode ? 2 : 0) | r->text << 2);
	}
	if (in->surface != FZ_SURF_RUN)
		b[n++] = (uint8_t)in->surface;
	for (i = 0; i < in->nruns && in->surface == FZ_SURF_COMPONENT; i++) {
		const struct fz_run *r = &in->runs[i];

		b[n++] = (uint8_t)((r->reuse ? 1 : 0) | (r->between << 1) |
				   ((r->files == FZ_FILES_NONE ? 0 : r->files + 4) << 3));
	}
	if (n > cap)
		n = cap;
	memcpy(out, b, n);
	return n;
}

/* ---- settings ---- */

void fz_settings_env(const struct fz_input *in, const char *dead_url, const char *key, const char **env,
		     char *buf, size_t cap)
{
	size_t k = 0, used = 0;

#define PUT(name, value)                                                                      \
	do {                                                                                  \
		if ((value) == NULL) {                                                        \
			env[k++] = name;                                                      \
		} else {                                                                      \
			int w_ = snprintf(buf + used, cap - used, "%s=%s", name, (value));    \
			env[k++] = buf + used;                                                \
			used += (size_t)w_ + 1;                                               \
		}                                                                             \
	} while (0)
	PUT("LANGFLOW_SANDBOX_ALLOW_NETWORK", NETWORK[in->network]);
	if (ACCEPT[in->accept] != KEEP)
		PUT("LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS", ACCEPT[in->accept]);
	PUT("LANGFLOW_SANDBOX_ALLOWED_DOMAINS", DOMAINS[in->domains]);
	if (TIMEOUT[in->timeout] != NULL)
		PUT("LANGFLOW_SANDBOX_TIMEOUT_SECONDS", TIMEOUT[in->timeout]);
	PUT("LANGFLOW_SANDBOX_MEMORY_MB", MEMORY[in->memory]);
	PUT("CREATEOS_SANDBOX_SHAPE", SHAPE[in->shape]);
	if (in->key == 1) { /* no key at all */
		env[k++] = "CREATEOS_SANDBOX_API_KEY";
		env[k++] = "CREATEOS_API_KEY";
	} else if (in->key == 2) { /* the fallback variable */
		env[k++] = "CREATEOS_SANDBOX_API_KEY";
		PUT("CREATEOS_API_KEY", key);
	}
	if (in->url == FZ_N_URL - 1 && dead_url != NULL)
		PUT("CREATEOS_SANDBOX_BASE_URL", dead_url);
#undef PUT
	env[k] = NULL;
}

long fz_timeout_s(const struct fz_input *in)
{
	const char *t = TIMEOUT[in->timeout];
	char *end;
	long v;

	if (t == NULL)
		return 10;
	v = strtol(t, &end, 10);
	if (end == t || *end != '\0' || v < 1 || v > 300)
		return -1;
	return v;
}

bool fz_sleeps_past(const struct fz_input *in, unsigned r)
{
	long t = fz_timeout_s(in);

	return SLEEPS[in->runs[r].sleep_idx] < 0 && t == 1;
}

static double sleep_s(const struct fz_input *in, unsigned r)
{
	double s = SLEEPS[in->runs[r].sleep_idx];

	if (s >= 0)
		return s;
	return fz_sleeps_past(in, r) ? 1.5 : 0.03;
}

/* ---- guest code and its exact output ---- */

/* The bytes of a C-escaped TEXT entry (\\n, \\r, \\t: the same spelling
 * is a Python literal for the guest code). */
static void unescape(sbx_strbuf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s != '\\' || s[1] == '\0') {
			sbx_strbuf_append(b, s, 1);
			continue;
		}
		s++;
		sbx_strbuf_puts(b, *s == 'n' ? "\n" : *s == 'r' ? "\r" : *s == 't' ? "\t" : "?");
	}
}

static void pattern(sbx_strbuf *b, const struct fz_run *run, const char *head, unsigned n)
{
	unsigned i;

	unescape(b, TEXT[run->text].lead);
	sbx_strbuf_puts(b, head);
	for (i = 0; i < n; i++)
		sbx_strbuf_puts(b, run->unicode ? "\xc3\xa9" : "a");
	unescape(b, TEXT[run->text].tail);
}

char *fz_expected(const struct fz_input *in, unsigned r, bool err_stream, const char *token)
{
	const struct fz_run *run = &in->runs[r];
	sbx_strbuf b = SBX_STRBUF_INIT;
	char head[160];

	if (err_stream) {
		snprintf(head, sizeof(head), "E%u|", r);
		pattern(&b, run, head, SIZES[run->err_idx]);
	} else {
		snprintf(head, sizeof(head), "R%u|%s%s%s", r, run->env ? "env=" : "", run->env ? token : "",
			 run->env ? "|" : "");
		pattern(&b, run, head, SIZES[run->out_idx]);
	}
	return sbx_strbuf_detach(&b, NULL);
}

int fz_expected_exit(const struct fz_input *in, unsigned r)
{
	return fz_sleeps_past(in, r) ? -1 : EXITS[in->runs[r].exit_idx];
}

char *fz_code(const struct fz_input *in, unsigned r, const char *trip, const char *guard_dir, const char *token)
{
	const struct fz_run *run = &in->runs[r];
	sbx_strbuf b = SBX_STRBUF_INIT;
	const char *ch = run->unicode ? "\\u00e9" : "a";

	(void)token;
	/* The trip-wire and the canary: only a process on the host can write
	 * the trip-wire (a contained guest has its own /tmp; a plain guest's
	 * cwd is under the mock's work dir); the canary is printed only then. */
	sbx_strbuf_printf(&b,
			  "import os, sys, time\n"
			  "if not os.getcwd().startswith('%s'):\n"
			  "    try:\n"
			  "        open('%s', 'w').write('ran')\n"
			  "        print('CANARY-%u')\n"
			  "    except OSError:\n"
			  "        pass\n",
			  guard_dir, trip, r);
	if (run->env)
		sbx_strbuf_printf(&b, "sys.stdout.write('%sR%u|env=' + os.environ.get('SBX_FZ', '<unset>') + '|' + '%s' * %u + '%s')\n",
				  TEXT[run->text].lead, r, ch, SIZES[run->out_idx], TEXT[run->text].tail);
	else
		sbx_strbuf_printf(&b, "sys.stdout.write('%sR%u|' + '%s' * %u + '%s')\n", TEXT[run->text].lead, r, ch,
				  SIZES[run->out_idx], TEXT[run->text].tail);
	sbx_strbuf_printf(&b, "sys.stderr.write('%sE%u|' + '%s' * %u + '%s')\n", TEXT[run->text].lead, r, ch,
			  SIZES[run->err_idx], TEXT[run->text].tail);
	sbx_strbuf_puts(&b, "sys.stdout.flush()\nsys.stderr.flush()\n");
	if (run->files != FZ_FILES_NONE && in->surface == FZ_SURF_COMPONENT)
		sbx_strbuf_puts(&b, "os.makedirs('artifacts', exist_ok=True)\n");
	if (run->files == FZ_FILES_FEW && in->surface == FZ_SURF_COMPONENT)
		sbx_strbuf_printf(&b, "for i in range(3):\n"
				  "    open('artifacts/fz%u_%%d.txt' %% i, 'w').write('F%u' * (1 + 700 * i))\n", r, r);
	else if (run->files == FZ_FILES_BIG && in->surface == FZ_SURF_COMPONENT)
		sbx_strbuf_puts(&b, "open('artifacts/big.bin', 'wb').write(b'\\0' * (6 * 1024 * 1024))\n");
	else if (run->files == FZ_FILES_MANY && in->surface == FZ_SURF_COMPONENT)
		sbx_strbuf_puts(&b, "for i in range(300):\n    open('artifacts/m%03d.txt' % i, 'w').write('x')\n");
	if (sleep_s(in, r) > 0)
		sbx_strbuf_printf(&b, "time.sleep(%.2f)\n", sleep_s(in, r));
	sbx_strbuf_printf(&b, "sys.exit(%d)\n", EXITS[run->exit_idx]);
	return sbx_strbuf_detach(&b, NULL);
}

bool fz_artifact(const struct fz_input *in, unsigned r, unsigned i, char name[32], char **data, size_t *len)
{
	sbx_strbuf b = SBX_STRBUF_INIT;
	unsigned k;

	if (in->surface != FZ_SURF_COMPONENT || in->runs[r].files != FZ_FILES_FEW || i >= 3)
		return false;
	snprintf(name, 32, "artifacts/fz%u_%u.txt", r, i);
	for (k = 0; k < 1 + 700 * i; k++)
		sbx_strbuf_printf(&b, "F%u", r);
	*data = sbx_strbuf_detach(&b, len);
	return true;
}

unsigned fz_fork_index(const struct fz_input *in)
{
	return in->nruns >= 2 ? 1 : 0;
}

cJSON *fz_request(const struct fz_input *in, unsigned r, const char *code, cJSON *env)
{
	cJSON *o = cJSON_CreateObject();
	const struct fz_run *run = &in->runs[r];

	if (in->surface == FZ_SURF_COMPONENT) {
		cJSON_AddStringToObject(o, "op", "component_run");
		cJSON_AddStringToObject(o, "mode", "python");
		cJSON_AddStringToObject(o, "code", code);
		cJSON_AddStringToObject(o, "reuse", run->reuse ? "flow" : "off");
		cJSON_AddStringToObject(o, "flow_id", "fz-flow");
		cJSON_AddStringToObject(o, "component_id", "fz-comp");
		cJSON_AddBoolToObject(o, "allow_network", false);
		cJSON_AddBoolToObject(o, "return_files", run->files != FZ_FILES_NONE);
	} else if (in->surface == FZ_SURF_EXECUTOR) {
		cJSON_AddStringToObject(o, "op", "executor_run");
		cJSON_AddStringToObject(o, "code", code);
		cJSON_AddNullToObject(o, "allow_network");
	} else if (in->surface == FZ_SURF_FORK && r == fz_fork_index(in)) {
		cJSON_AddStringToObject(o, "op", "fork_check");
		cJSON_AddStringToObject(o, "code", code);
	} else {
		cJSON_AddStringToObject(o, "op", "run");
		cJSON_AddStringToObject(o, "code", code);
		if (env != NULL)
			cJSON_AddItemToObject(o, "env", env);
		else
			cJSON_AddNullToObject(o, "env");
		env = NULL;
	}
	cJSON_Delete(env);
	return o;
}

const char *fz_surface_name(unsigned surface)
{
	static const char *const N[FZ_N_SURF] = {"run", "component_run", "executor_run", "fork_check"};

	return N[surface % FZ_N_SURF];
}

/* ---- faults ---- */

const char *fz_action_kind(unsigned action)
{
	return ACTIONS[action % FZ_N_ACTIONS];
}

bool fz_kind_benign(const char *kind)
{
	return strcmp(kind, "latency") == 0 || strcmp(kind, "dribble") == 0;
}

static cJSON *action_json(const struct fz_fault *f)
{
	cJSON *a = cJSON_CreateObject();
	const char *kind = fz_action_kind(f->action);
	unsigned p = f->param;

	cJSON_AddStringToObject(a, "kind", kind);
	if (strcmp(kind, "http") == 0) {
		int st = HTTP_STATUS[p % N_HTTP];

		cJSON_AddNumberToObject(a, "status", st);
		if (st == 200)
			cJSON_AddStringToObject(a, "envelope", "fail");
		if (st == 403)
			cJSON_AddStringToObject(a, "code", "QUOTA_EXCEEDED");
		if (st == 429)
			cJSON_AddNumberToObject(a, "retry_after", 1);
	} else if (strcmp(kind, "dribble") == 0) {
		cJSON_AddNumberToObject(a, "bytes_per_sec", p % 2 ? 1000000 : 200000);
	} else if (strcmp(kind, "hang") == 0) {
		static const int ms[] = {20, 100, 300};

		cJSON_AddNumberToObject(a, "max_ms", ms[p % 3]);
	} else if (strcmp(kind, "latency") == 0) {
		static const int ms[] = {1, 10, 50};

		cJSON_AddStringToObject(a, "dist", "fixed");
		cJSON_AddNumberToObject(a, "ms", ms[p % 3]);
	} else if (strcmp(kind, "commit_then_fail") == 0) {
		if (p % 3 == 2) {
			cJSON *then = cJSON_AddObjectToObject(a, "then");

			cJSON_AddNumberToObject(then, "status", 502);
		} else {
			cJSON_AddStringToObject(a, "then", p % 3 ? "close" : "reset");
		}
	} else if (strcmp(kind, "resume_polls") == 0) {
		cJSON_AddNumberToObject(a, "polls", 1 + p % 3);
	} else if (strcmp(kind, "cp_restart") == 0) {
		cJSON_AddNumberToObject(a, "not_ready_ms", p % 2 ? 5000 : 100);
	} else if (strcmp(kind, "exec_agent_error") == 0) {
		cJSON_AddStringToObject(a, "message", "agent gone");
	} else if (strcmp(kind, "exec_stream_cut") == 0) {
		cJSON_AddNumberToObject(a, "after_frames", p % 3);
	}
	return a;
}

cJSON *fz_fault_rule(const struct fz_input *in, unsigned i)
{
	const struct fz_fault *f = &in->faults[i];
	cJSON *rule = cJSON_CreateObject();
	cJSON *m, *fire;
	char name[48];

	snprintf(name, sizeof(name), "fz%u:%s", i, fz_action_kind(f->action));
	cJSON_AddStringToObject(rule, "name", name);
	m = cJSON_AddObjectToObject(rule, "match");
	if (ENDPOINTS[f->endpoint].method != NULL)
		cJSON_AddStringToObject(m, "method", ENDPOINTS[f->endpoint].method);
	cJSON_AddStringToObject(m, "path", ENDPOINTS[f->endpoint].path);
	fire = cJSON_AddObjectToObject(rule, "fire");
	if (f->after > 0)
		cJSON_AddNumberToObject(fire, "after", f->after);
	if (f->times > 0)
		cJSON_AddNumberToObject(fire, "times", f->times);
	cJSON_AddItemToObject(rule, "action", action_json(f));
	return rule;
}

/* ---- printers ---- */

static void export_line(FILE *f, const char *entry)
{
	const char *eq = strchr(entry, '=');
	const char *s;

	if (eq == NULL) {
		fprintf(f, "unset %s\n", entry);
		return;
	}
	fprintf(f, "export %.*s='", (int)(eq - entry), entry);
	for (s = eq + 1; *s != '\0'; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputs("'\n", f);
}

void fz_print_exports(FILE *f, const struct fz_input *in, const char *url, const char *key)
{
	const char *env[16];
	char buf[2048];
	char line[700];
	size_t i;

	if (url != NULL) {
		snprintf(line, sizeof(line), "CREATEOS_SANDBOX_BASE_URL=%s", url);
		export_line(f, line);
	}
	snprintf(line, sizeof(line), "CREATEOS_SANDBOX_API_KEY=%s", key);
	export_line(f, line);
	export_line(f, "LANGFLOW_SANDBOX_BACKEND=createos");
	export_line(f, "LANGFLOW_SANDBOX_BACKEND_PLUGINS=createos");
	export_line(f, "LANGFLOW_SANDBOX_TIMEOUT_SECONDS=10");
	export_line(f, "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS=true");
	fz_settings_env(in, NULL, key, env, buf, sizeof(buf));
	for (i = 0; env[i] != NULL; i++)
		export_line(f, env[i]);
	if (in->url == FZ_N_URL - 1)
		fprintf(f, "# the control plane is unreachable in this input (a dead loopback port)\n");
}

cJSON *fz_scenario(const struct fz_input *in, const char *name)
{
	cJSON *s = cJSON_CreateObject();
	cJSON *rules;
	unsigned i;

	cJSON_AddStringToObject(s, "name", name);
	cJSON_AddStringToObject(s, "description", "fault plan of a backend_fuzzer input (fuzz/README.md)");
	rules = cJSON_AddArrayToObject(s, "rules");
	for (i = 0; i < in->nfaults; i++)
		cJSON_AddItemToArray(rules, fz_fault_rule(in, i));
	return s;
}

static cJSON *run_fields(const struct fz_input *in, unsigned r)
{
	cJSON *o = cJSON_CreateObject();
	char token[32];
	char *code;

	snprintf(token, sizeof(token), "v-%u-replay", r);
	code = fz_code(in, r, "/tmp/sbx-fuzz-trip-replay", "/nonexistent/", token);
	cJSON_AddStringToObject(o, "code", code);
	free(code);
	if (in->runs[r].env) {
		cJSON *e = cJSON_AddObjectToObject(o, "env");

		cJSON_AddStringToObject(e, "SBX_FZ", token);
	} else {
		cJSON_AddNullToObject(o, "env");
	}
	return o;
}

void fz_print_requests(FILE *f, const struct fz_input *in)
{
	cJSON *req;
	char *s;
	unsigned r;
	int id = 1;

	fprintf(f, "{\"id\":%d,\"op\":\"hello\",\"protocol\":1}\n", id++);
	if (in->concurrent && in->nruns > 1) {
		cJSON *runs;

		req = cJSON_CreateObject();
		cJSON_AddNumberToObject(req, "id", id++);
		cJSON_AddStringToObject(req, "op", "run_concurrent");
		runs = cJSON_AddArrayToObject(req, "runs");
		for (r = 0; r < in->nruns; r++)
			cJSON_AddItemToArray(runs, run_fields(in, r));
		s = cJSON_PrintUnformatted(req);
		fprintf(f, "%s\n", s);
		free(s);
		cJSON_Delete(req);
	} else {
		for (r = 0; r < in->nruns; r++) {
			cJSON *fields = run_fields(in, r);
			cJSON *env = cJSON_DetachItemFromObjectCaseSensitive(fields, "env");

			/* the harness's pause / egress change between component
			 * runs is not replayed here: sbx-conform --fuzz-case does */
			req = fz_request(in, r, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fields, "code")),
					 cJSON_IsObject(env) ? env : NULL);
			if (!cJSON_IsObject(env))
				cJSON_Delete(env);
			cJSON_Delete(fields);
			cJSON_AddNumberToObject(req, "id", id++);
			s = cJSON_PrintUnformatted(req);
			fprintf(f, "%s\n", s);
			free(s);
			cJSON_Delete(req);
		}
	}
	fprintf(f, "{\"id\":%d,\"op\":\"shutdown\"}\n{\"id\":%d,\"op\":\"exit\"}\n", id, id + 1);
}

void fz_describe(FILE *f, const struct fz_input *in)
{
	unsigned i;

	fprintf(f, "%u %s(s)%s%s; timeout %ld; %u fault(s)", in->nruns,
		in->surface == FZ_SURF_FORK ? "run/fork_check" : fz_surface_name(in->surface),
		in->concurrent && in->nruns > 1 ? " concurrent" : "", in->fresh ? ", fresh driver" : "",
		fz_timeout_s(in), in->nfaults);
	for (i = 0; i < in->nfaults; i++) {
		cJSON *rule = fz_fault_rule(in, i);
		char *s = cJSON_PrintUnformatted(rule);

		fprintf(f, "\n  fault %u: %s", i, s);
		free(s);
		cJSON_Delete(rule);
	}
	for (i = 0; i < in->nruns; i++)
		fprintf(f, "\n  run %u: exit %d, stdout %u+ bytes, stderr %u+ bytes, sleep %.2f s%s%s%s%s%s%s%s%s%s", i,
			EXITS[in->runs[i].exit_idx], SIZES[in->runs[i].out_idx], SIZES[in->runs[i].err_idx],
			sleep_s(in, i), fz_sleeps_past(in, i) ? " (past the timeout)" : "",
			in->runs[i].env ? ", env" : "", in->runs[i].unicode ? ", UTF-8" : "",
			*TEXT[in->runs[i].text].lead != '\0' ? ", led by '" : "", TEXT[in->runs[i].text].lead,
			*TEXT[in->runs[i].text].lead != '\0' ? "'" : "",
			*TEXT[in->runs[i].text].tail != '\0' ? ", ending '" : "", TEXT[in->runs[i].text].tail,
			*TEXT[in->runs[i].text].tail != '\0' ? "'" : "");
	for (i = 0; i < in->nruns && in->surface == FZ_SURF_COMPONENT; i++)
		fprintf(f, "\n  component run %u: reuse %s%s%s", i, in->runs[i].reuse ? "flow" : "off",
			in->runs[i].between == FZ_BETWEEN_PAUSE ? ", the harness pauses the reuse guest first"
			: in->runs[i].between == FZ_BETWEEN_DRIFT ? ", the harness changes the reuse guest's egress first" : "",
			in->runs[i].files == FZ_FILES_FEW ? ", 3 files" : in->runs[i].files == FZ_FILES_BIG ? ", a 6 MiB file"
			: in->runs[i].files == FZ_FILES_MANY ? ", 300 files" : "");
	fputc('\n', f);
}

/* faults: rule parsing, matching and firing; see faults.h. No HTTP here. */
#include "faults/faults.h"
#include "util/path_match.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rule {
	unsigned id;
	char name[64];
	char method[16];
	char *path;         /* NULL: any */
	size_t path_lit;    /* length of path's literal head (before { or *) */
	char *tenant;
	char *name_prefix;
	uint64_t request;   /* 0: any */
	uint64_t after;     /* skip the first `after` matches */
	uint64_t times;     /* fire at most `times` times, 0: unlimited */
	double prob;        /* < 0: no draw */
	uint64_t matched, fired;
	mock_fault_action action;
	cJSON *source;      /* the rule as given, for listing */
} rule;

struct mock_faults {
	pthread_mutex_t lock;
	rule **rules;
	size_t n, cap;
	unsigned next_id;
	uint64_t rng;
};

static const char *const kind_names[FK__COUNT] = {
	"http", "reset", "close", "hang", "empty_200", "malformed_json", "truncated",
	"garbage", "dribble", "latency", "commit_then_fail", "exec_agent_error", "exec_oom",
	"exec_stream_cut", "exec_heartbeats_only", "create_failed", "pause_error",
	"resume_polls", "destroy_stuck", "host_dies", "cp_restart",
};

const char *mock_fault_kind_name(mock_fault_kind k)
{
	return (int)k >= 0 && k < FK__COUNT ? kind_names[k] : "unknown";
}

bool mock_fault_kind_is_exec(mock_fault_kind k)
{
	return k == FK_EXEC_AGENT_ERROR || k == FK_EXEC_OOM || k == FK_EXEC_STREAM_CUT ||
	       k == FK_EXEC_HEARTBEATS_ONLY;
}

/* xorshift64*: small, fast, and the same sequence for the same seed. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / 9007199254740992.0; /* [0,1) */
}

static uint64_t seed_state(uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z != 0 ? z : 0x1234567ULL;
}

mock_faults *mock_faults_new(uint64_t seed)
{
	mock_faults *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	if (pthread_mutex_init(&f->lock, NULL) != 0) {
		free(f);
		return NULL;
	}
	f->next_id = 1;
	f->rng = seed_state(seed);
	return f;
}

static void rule_free(rule *r)
{
	if (r == NULL)
		return;
	free(r->path);
	free(r->tenant);
	free(r->name_prefix);
	cJSON_Delete(r->source);
	free(r);
}

static void clear_locked(mock_faults *f)
{
	for (size_t i = 0; i < f->n; i++)
		rule_free(f->rules[i]);
	f->n = 0;
}

void mock_faults_free(mock_faults *f)
{
	if (f == NULL)
		return;
	clear_locked(f);
	free(f->rules);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void mock_faults_reseed(mock_faults *f, uint64_t seed)
{
	pthread_mutex_lock(&f->lock);
	f->rng = seed_state(seed);
	pthread_mutex_unlock(&f->lock);
}

size_t mock_faults_count(mock_faults *f)
{
	size_t n;

	pthread_mutex_lock(&f->lock);
	n = f->n;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* ---- parsing ---- */

static int opt_string(const cJSON *o, const char *key, char **out, size_t idx, const char *where,
		      sbx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v)) {
		sbx_err_set(err, "rule %zu: %s.%s must be a string", idx, where, key);
		return -1;
	}
	*out = strdup(v->valuestring);
	if (*out == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	return 0;
}

static int opt_number(const cJSON *o, const char *key, double *out, double lo, double hi,
		      size_t idx, const char *where, sbx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi) {
		sbx_err_set(err, "rule %zu: %s.%s must be a number in [%g, %g]", idx, where, key, lo, hi);
		return -1;
	}
	*out = v->valuedouble;
	return 0;
}

static int copy_buf(const cJSON *o, const char *key, char *buf, size_t cap, size_t idx,
		    const char *where, sbx_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap) {
		sbx_err_set(err, "rule %zu: %s.%s must be a string shorter than %zu bytes", idx, where,
			    key, cap);
		return -1;
	}
	snprintf(buf, cap, "%s", v->valuestring);
	return 0;
}

/* Every member of o is one of keys (NULL-terminated): a typo ("pth",
 * "dta") would otherwise be ignored and the rule would do something else
 * than asked (a match without its path matches every request). */
static int known_keys(const cJSON *o, const char *const *keys, size_t idx, const char *where,
		      sbx_err *err)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, o) {
		char list[400] = "";
		size_t i, used = 0;

		for (i = 0; keys[i] != NULL && strcmp(keys[i], it->string) != 0; i++)
			;
		if (keys[i] != NULL)
			continue;
		for (i = 0; keys[i] != NULL && used < sizeof(list); i++)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
						 i > 0 ? ", " : "", keys[i]);
		sbx_err_set(err, "rule %zu: %s.%.40s is not a known key (known: %s)", idx, where,
			    it->string, list);
		return -1;
	}
	return 0;
}

/* http action `field`: the JSend fail data member that carries the message
 * ({"status": "sandbox is not running"}), so that a scenario can send what
 * the mock itself sends; a name of letters, digits and '_', not "code". */
static int parse_field(const cJSON *o, mock_fault_action *a, size_t idx, sbx_err *err)
{
	if (copy_buf(o, "field", a->field, sizeof(a->field), idx, "action", err) != 0)
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(o, "field") == NULL)
		return 0;
	if (a->field[0] == '\0' || a->field[strspn(a->field, "abcdefghijklmnopqrstuvwxyz"
				"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")] != '\0' || strcmp(a->field, "code") == 0) {
		sbx_err_set(err, "rule %zu: action.field must be a member name ([A-Za-z0-9_]+, not \"code\")", idx);
		return -1;
	}
	return 0;
}

static int parse_headers(const cJSON *hdrs, mock_fault_action *a, size_t idx, sbx_err *err)
{
	const cJSON *h;

	if (hdrs == NULL || cJSON_IsNull(hdrs))
		return 0;
	if (!cJSON_IsObject(hdrs)) {
		sbx_err_set(err, "rule %zu: action.headers must be an object of strings", idx);
		return -1;
	}
	cJSON_ArrayForEach(h, hdrs) {
		if (a->nheaders == MOCK_FAULT_MAX_HEADERS) {
			sbx_err_set(err, "rule %zu: action.headers has more than %d entries", idx,
				    MOCK_FAULT_MAX_HEADERS);
			return -1;
		}
		if (!cJSON_IsString(h) || h->string[0] == '\0' || strlen(h->string) >= 48 ||
		    strlen(h->valuestring) >= 256 ||
		    strpbrk(h->string, "\r\n:") != NULL || strpbrk(h->valuestring, "\r\n") != NULL) {
			sbx_err_set(err, "rule %zu: action.headers.%.40s must be a short single-line string",
				    idx, h->string);
			return -1;
		}
		snprintf(a->hname[a->nheaders], sizeof(a->hname[0]), "%s", h->string);
		snprintf(a->hvalue[a->nheaders], sizeof(a->hvalue[0]), "%s", h->valuestring);
		a->nheaders++;
	}
	return 0;
}

static int parse_then(const cJSON *then, mock_fault_action *a, size_t idx, sbx_err *err)
{
	double st = 500;

	a->then = THEN_STATUS;
	a->status = 500;
	if (then == NULL || cJSON_IsNull(then))
		return 0;
	if (cJSON_IsString(then)) {
		if (strcmp(then->valuestring, "reset") == 0) {
			a->then = THEN_RESET;
			return 0;
		}
		if (strcmp(then->valuestring, "close") == 0) {
			a->then = THEN_CLOSE;
			return 0;
		}
	} else if (cJSON_IsObject(then)) {
		static const char *const keys[] = {"status", NULL};

		if (known_keys(then, keys, idx, "action.then", err) != 0 ||
		    opt_number(then, "status", &st, 100, 599, idx, "action.then", err) != 0)
			return -1;
		a->status = (int)st;
		return 0;
	}
	sbx_err_set(err, "rule %zu: action.then must be \"reset\", \"close\" or {\"status\": N}", idx);
	return -1;
}

static int parse_latency(const cJSON *o, mock_fault_action *a, size_t idx, sbx_err *err)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "dist");

	a->dist = LAT_FIXED;
	a->ms = 100;
	a->min_ms = 0;
	a->max_lat_ms = 1000;
	a->mu = 4.0;
	a->sigma = 0.5;
	if (d != NULL) {
		if (!cJSON_IsString(d)) {
			sbx_err_set(err, "rule %zu: action.dist must be fixed, uniform or lognormal", idx);
			return -1;
		}
		if (strcmp(d->valuestring, "uniform") == 0)
			a->dist = LAT_UNIFORM;
		else if (strcmp(d->valuestring, "lognormal") == 0)
			a->dist = LAT_LOGNORMAL;
		else if (strcmp(d->valuestring, "fixed") != 0) {
			sbx_err_set(err, "rule %zu: action.dist \"%.20s\" is not fixed, uniform or lognormal",
				    idx, d->valuestring);
			return -1;
		}
	}
	if (opt_number(o, "ms", &a->ms, 0, 3600000, idx, "action", err) != 0 ||
	    opt_number(o, "min_ms", &a->min_ms, 0, 3600000, idx, "action", err) != 0 ||
	    opt_number(o, "max_ms", &a->max_lat_ms, 0, 3600000, idx, "action", err) != 0 ||
	    opt_number(o, "mu", &a->mu, -50, 50, idx, "action", err) != 0 ||
	    opt_number(o, "sigma", &a->sigma, 0, 20, idx, "action", err) != 0)
		return -1;
	if (a->dist == LAT_UNIFORM && a->min_ms > a->max_lat_ms) {
		sbx_err_set(err, "rule %zu: action.min_ms is above action.max_ms", idx);
		return -1;
	}
	return 0;
}

/* retry_after: delta-seconds as a number or a string of digits ("2"). */
static int parse_retry_after(const cJSON *v, mock_fault_action *a, size_t idx, sbx_err *err)
{
	char *end = NULL;
	long n;

	a->retry_after = -1;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 86400) {
		a->retry_after = (int)v->valuedouble;
		return 0;
	}
	if (cJSON_IsString(v) && v->valuestring[0] >= '0' && v->valuestring[0] <= '9') {
		errno = 0;
		n = strtol(v->valuestring, &end, 10);
		if (errno == 0 && *end == '\0' && n <= 86400) {
			a->retry_after = (int)n;
			return 0;
		}
	}
	sbx_err_set(err, "rule %zu: action.retry_after must be delta-seconds 0-86400 (number or digits)",
		    idx);
	return -1;
}

/* The keys each action kind takes ("kind" included). */
static const char *const *action_keys(mock_fault_kind k)
{
	static const char *const http[] = {"kind", "status", "envelope", "code", "message", "field",
					   "retry_after", "headers", "data", "body", "content_type",
					   NULL};
	static const char *const hang[] = {"kind", "max_ms", NULL};
	static const char *const latency[] = {"kind", "dist", "ms", "min_ms", "max_ms", "mu",
					      "sigma", NULL};
	static const char *const then[] = {"kind", "then", NULL};
	static const char *const message[] = {"kind", "message", NULL};
	static const char *const dribble[] = {"kind", "bytes_per_sec", NULL};
	static const char *const cut[] = {"kind", "after_frames", NULL};
	static const char *const host[] = {"kind", "host_id", NULL};
	static const char *const restart[] = {"kind", "not_ready_ms", NULL};
	static const char *const polls[] = {"kind", "polls", NULL};
	static const char *const bare[] = {"kind", NULL};

	switch (k) {
	case FK_HTTP:
		return http;
	case FK_HANG:
		return hang;
	case FK_LATENCY:
		return latency;
	case FK_COMMIT_THEN_FAIL:
		return then;
	case FK_EXEC_AGENT_ERROR:
		return message;
	case FK_DRIBBLE:
		return dribble;
	case FK_EXEC_STREAM_CUT:
		return cut;
	case FK_HOST_DIES:
		return host;
	case FK_CP_RESTART:
		return restart;
	case FK_RESUME_POLLS:
		return polls;
	default:
		return bare;
	}
}

/* http `data`: the envelope's data member as given, kept printed (the
 * action is a fixed-size copy); `body`: sent as is with `content_type`
 * instead of any envelope, so neither goes with the envelope's keys. */
static int parse_http_payload(const cJSON *o, mock_fault_action *a, size_t idx, sbx_err *err)
{
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
	const cJSON *body = cJSON_GetObjectItemCaseSensitive(o, "body");
	char *printed;

	if (body != NULL) {
		static const char *const envelope_keys[] = {"envelope", "code", "message", "field", "data"};

		for (size_t i = 0; i < sizeof(envelope_keys) / sizeof(envelope_keys[0]); i++) {
			if (cJSON_GetObjectItemCaseSensitive(o, envelope_keys[i]) != NULL) {
				sbx_err_set(err, "rule %zu: action.body is sent as is: action.%s does not "
					    "go with it", idx, envelope_keys[i]);
				return -1;
			}
		}
		if (!cJSON_IsString(body) || strlen(body->valuestring) >= sizeof(a->body)) {
			sbx_err_set(err, "rule %zu: action.body must be a string shorter than %zu bytes",
				    idx, sizeof(a->body));
			return -1;
		}
		snprintf(a->body, sizeof(a->body), "%s", body->valuestring);
		a->has_body = true;
		snprintf(a->content_type, sizeof(a->content_type), "text/plain");
		if (copy_buf(o, "content_type", a->content_type, sizeof(a->content_type), idx, "action",
			     err) != 0)
			return -1;
		if (strpbrk(a->content_type, "\r\n") != NULL) {
			sbx_err_set(err, "rule %zu: action.content_type must be a single line", idx);
			return -1;
		}
		return 0;
	}
	if (cJSON_GetObjectItemCaseSensitive(o, "content_type") != NULL) {
		sbx_err_set(err, "rule %zu: action.content_type goes only with action.body", idx);
		return -1;
	}
	if (data == NULL)
		return 0;
	if (!cJSON_IsObject(data) && !cJSON_IsString(data) && !cJSON_IsNull(data)) {
		sbx_err_set(err, "rule %zu: action.data must be an object, a string or null", idx);
		return -1;
	}
	if (cJSON_GetObjectItemCaseSensitive(o, "code") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(o, "field") != NULL) {
		sbx_err_set(err, "rule %zu: action.data is the whole data member: put code and the "
			    "message field inside it, not in action.code or action.field", idx);
		return -1;
	}
	printed = cJSON_PrintUnformatted(data);
	if (printed == NULL || strlen(printed) >= sizeof(a->data_json)) {
		sbx_err_set(err, "rule %zu: action.data must print to less than %zu bytes of JSON", idx,
			    sizeof(a->data_json));
		free(printed);
		return -1;
	}
	snprintf(a->data_json, sizeof(a->data_json), "%s", printed);
	free(printed);
	a->has_data = true;
	return 0;
}

static int parse_http(const cJSON *o, mock_fault_action *a, size_t idx, sbx_err *err)
{
	double num = 500;

	if (opt_number(o, "status", &num, 100, 599, idx, "action", err) != 0)
		return -1;
	a->status = (int)num;
	if (copy_buf(o, "envelope", a->envelope, sizeof(a->envelope), idx, "action", err) != 0 ||
	    copy_buf(o, "code", a->code, sizeof(a->code), idx, "action", err) != 0 ||
	    copy_buf(o, "message", a->message, sizeof(a->message), idx, "action", err) != 0 ||
	    parse_field(o, a, idx, err) != 0 || parse_http_payload(o, a, idx, err) != 0)
		return -1;
	if (a->envelope[0] != '\0' && strcmp(a->envelope, "fail") != 0 &&
	    strcmp(a->envelope, "error") != 0) {
		sbx_err_set(err, "rule %zu: action.envelope must be \"fail\" or \"error\"", idx);
		return -1;
	}
	if (parse_retry_after(cJSON_GetObjectItemCaseSensitive(o, "retry_after"), a, idx, err) != 0)
		return -1;
	return parse_headers(cJSON_GetObjectItemCaseSensitive(o, "headers"), a, idx, err);
}

static int parse_action(const cJSON *o, mock_fault_action *a, size_t idx, sbx_err *err)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kind");
	double num;
	int kind = -1;

	memset(a, 0, sizeof(*a));
	a->retry_after = -1;
	a->max_ms = 600000;
	if (!cJSON_IsObject(o) || !cJSON_IsString(k)) {
		sbx_err_set(err, "rule %zu: action must be an object with a string \"kind\"", idx);
		return -1;
	}
	for (int i = 0; i < FK__COUNT; i++) {
		if (strcmp(k->valuestring, kind_names[i]) == 0)
			kind = i;
	}
	if (kind < 0) {
		sbx_err_set(err, "rule %zu: action.kind \"%.40s\" is not a known fault action", idx,
			    k->valuestring);
		return -1;
	}
	a->kind = (mock_fault_kind)kind;
	if (known_keys(o, action_keys(a->kind), idx, "action", err) != 0)
		return -1;
	switch (a->kind) {
	case FK_HTTP:
		return parse_http(o, a, idx, err);
	case FK_HANG:
		num = 600000;
		if (opt_number(o, "max_ms", &num, 0, 3600000, idx, "action", err) != 0)
			return -1;
		a->max_ms = (int64_t)num;
		return 0;
	case FK_LATENCY:
		return parse_latency(o, a, idx, err);
	case FK_COMMIT_THEN_FAIL:
		return parse_then(cJSON_GetObjectItemCaseSensitive(o, "then"), a, idx, err);
	case FK_EXEC_AGENT_ERROR:
		snprintf(a->message, sizeof(a->message), "agent error: connection to guest agent lost");
		return copy_buf(o, "message", a->message, sizeof(a->message), idx, "action", err);
	case FK_DRIBBLE:
		num = 64;
		if (opt_number(o, "bytes_per_sec", &num, 1, 1e9, idx, "action", err) != 0)
			return -1;
		a->bytes_per_sec = (unsigned)num;
		return 0;
	case FK_EXEC_STREAM_CUT:
		num = 1;
		if (opt_number(o, "after_frames", &num, 0, 1e6, idx, "action", err) != 0)
			return -1;
		a->after_frames = (unsigned)num;
		return 0;
	case FK_HOST_DIES:
		return copy_buf(o, "host_id", a->host_id, sizeof(a->host_id), idx, "action", err);
	case FK_CP_RESTART:
		num = 5000;
		if (opt_number(o, "not_ready_ms", &num, 0, 86400000, idx, "action", err) != 0)
			return -1;
		a->not_ready_ms = (int64_t)num;
		return 0;
	case FK_RESUME_POLLS:
		num = 3;
		if (opt_number(o, "polls", &num, 0, 1e6, idx, "action", err) != 0)
			return -1;
		a->polls = (unsigned)num;
		return 0;
	default:
		return 0;
	}
}

static int parse_match(const cJSON *m, rule *r, size_t idx, sbx_err *err)
{
	static const char *const match_keys[] = {"method", "path", "tenant", "name_prefix",
						 "request", NULL};
	double req = 0;

	if (m == NULL || cJSON_IsNull(m))
		return 0;
	if (!cJSON_IsObject(m)) {
		sbx_err_set(err, "rule %zu: match must be an object", idx);
		return -1;
	}
	if (known_keys(m, match_keys, idx, "match", err) != 0)
		return -1;
	if (copy_buf(m, "method", r->method, sizeof(r->method), idx, "match", err) != 0 ||
	    opt_string(m, "path", &r->path, idx, "match", err) != 0 ||
	    opt_string(m, "tenant", &r->tenant, idx, "match", err) != 0 ||
	    opt_string(m, "name_prefix", &r->name_prefix, idx, "match", err) != 0 ||
	    opt_number(m, "request", &req, 1, 1e15, idx, "match", err) != 0)
		return -1;
	r->request = (uint64_t)req;
	r->path_lit = r->path != NULL ? strcspn(r->path, "{*") : 0;
	for (char *p = r->method; *p != '\0'; p++) {
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	}
	return 0;
}

/* fire: "always", or an object combining {after, times, probability}:
 * skip the first `after` matches, then fire (with `probability` when given)
 * until `times` firings. */
static int parse_fire(const cJSON *fi, rule *r, size_t idx, sbx_err *err)
{
	double after = 0, times = 0;
	const cJSON *it;

	r->prob = -1;
	if (fi == NULL || cJSON_IsNull(fi))
		return 0;
	if (cJSON_IsString(fi) && strcmp(fi->valuestring, "always") == 0)
		return 0;
	if (!cJSON_IsObject(fi)) {
		sbx_err_set(err, "rule %zu: fire must be \"always\" or an object of times, after, probability",
			    idx);
		return -1;
	}
	cJSON_ArrayForEach(it, fi) {
		if (strcmp(it->string, "times") != 0 && strcmp(it->string, "after") != 0 &&
		    strcmp(it->string, "probability") != 0) {
			sbx_err_set(err, "rule %zu: fire.%.40s is not times, after or probability", idx,
				    it->string);
			return -1;
		}
	}
	if (opt_number(fi, "times", &times, 1, 1e15, idx, "fire", err) != 0 ||
	    opt_number(fi, "after", &after, 0, 1e15, idx, "fire", err) != 0 ||
	    opt_number(fi, "probability", &r->prob, 0, 1, idx, "fire", err) != 0)
		return -1;
	r->after = (uint64_t)after;
	r->times = (uint64_t)times;
	return 0;
}

static rule *parse_rule(const cJSON *o, size_t idx, sbx_err *err)
{
	static const char *const rule_keys[] = {"name", "match", "fire", "action", "id", "matched",
						"fired", NULL};
	rule *r;

	if (!cJSON_IsObject(o)) {
		sbx_err_set(err, "rule %zu: must be an object", idx);
		return NULL;
	}
	/* id, matched and fired: a listing posted back (they are replaced) */
	if (known_keys(o, rule_keys, idx, "rule", err) != 0)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		sbx_err_set(err, "out of memory");
		return NULL;
	}
	if (copy_buf(o, "name", r->name, sizeof(r->name), idx, "rule", err) != 0 ||
	    parse_match(cJSON_GetObjectItemCaseSensitive(o, "match"), r, idx, err) != 0 ||
	    parse_fire(cJSON_GetObjectItemCaseSensitive(o, "fire"), r, idx, err) != 0 ||
	    parse_action(cJSON_GetObjectItemCaseSensitive(o, "action"), &r->action, idx, err) != 0)
		goto out_free;
	r->source = cJSON_Duplicate(o, true);
	if (r->source == NULL) {
		sbx_err_set(err, "out of memory");
		goto out_free;
	}
	return r;

out_free:
	rule_free(r);
	return NULL;
}

int mock_faults_add_json(mock_faults *f, const cJSON *body, cJSON *ids, sbx_err *err)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(body, "rules");
	size_t count = 0, i = 0;
	rule **parsed;
	const cJSON *it;
	int rc = -1;

	if (list != NULL && !cJSON_IsArray(list)) {
		sbx_err_set(err, "rules must be an array of rule objects");
		return -1;
	}
	count = list != NULL ? (size_t)cJSON_GetArraySize(list) : 1;
	parsed = calloc(count == 0 ? 1 : count, sizeof(*parsed));
	if (parsed == NULL) {
		sbx_err_set(err, "out of memory");
		return -1;
	}
	if (list == NULL) {
		parsed[0] = parse_rule(body, 0, err);
		if (parsed[0] == NULL)
			goto out_free;
	} else {
		cJSON_ArrayForEach(it, list) {
			parsed[i] = parse_rule(it, i, err);
			if (parsed[i] == NULL)
				goto out_free;
			i++;
		}
	}
	pthread_mutex_lock(&f->lock);
	if (f->n + count > f->cap) {
		size_t cap = f->cap == 0 ? 16 : f->cap;
		rule **nr;

		while (cap < f->n + count)
			cap *= 2;
		nr = realloc(f->rules, cap * sizeof(*nr));
		if (nr == NULL) {
			pthread_mutex_unlock(&f->lock);
			sbx_err_set(err, "out of memory");
			goto out_free;
		}
		f->rules = nr;
		f->cap = cap;
	}
	for (i = 0; i < count; i++) {
		parsed[i]->id = f->next_id++;
		f->rules[f->n++] = parsed[i];
		cJSON_AddItemToArray(ids, cJSON_CreateNumber(parsed[i]->id));
		parsed[i] = NULL;
	}
	pthread_mutex_unlock(&f->lock);
	rc = 0;
out_free:
	for (i = 0; i < count; i++)
		rule_free(parsed[i]);
	free(parsed);
	return rc;
}

cJSON *mock_faults_list_json(mock_faults *f)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "rules");

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n; i++) {
		rule *r = f->rules[i];
		cJSON *v = cJSON_Duplicate(r->source, true);

		/* A listing posted back keeps its counters in the source: replace
		 * them rather than list them twice. */
		cJSON_DeleteItemFromObjectCaseSensitive(v, "id");
		cJSON_DeleteItemFromObjectCaseSensitive(v, "matched");
		cJSON_DeleteItemFromObjectCaseSensitive(v, "fired");
		cJSON_AddNumberToObject(v, "id", r->id);
		cJSON_AddNumberToObject(v, "matched", (double)r->matched);
		cJSON_AddNumberToObject(v, "fired", (double)r->fired);
		cJSON_AddItemToArray(arr, v);
	}
	pthread_mutex_unlock(&f->lock);
	return o;
}

void mock_faults_clear(mock_faults *f)
{
	pthread_mutex_lock(&f->lock);
	clear_locked(f);
	pthread_mutex_unlock(&f->lock);
}

int mock_faults_delete(mock_faults *f, unsigned id)
{
	int rc = -1;

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n; i++) {
		if (f->rules[i]->id == id) {
			rule_free(f->rules[i]);
			memmove(&f->rules[i], &f->rules[i + 1], (f->n - i - 1) * sizeof(f->rules[0]));
			f->n--;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* ---- matching ---- */

/* The literal head of r's path pattern matches (stops at the first
 * difference, so never reads past the end of path). */
static bool path_head_matches(const rule *r, const char *path)
{
	for (size_t i = 0; i < r->path_lit; i++) {
		if (r->path[i] != path[i])
			return false;
	}
	return true;
}

static bool rule_matches(const rule *r, const mock_fault_req *q)
{
	if (r->method[0] != '\0' && strcmp(r->method, q->method) != 0)
		return false;
	/* the literal head first: most rules fail there, cheaply */
	if (r->path != NULL && (!path_head_matches(r, q->path) || !mock_path_match(r->path, q->path)))
		return false;
	if (r->tenant != NULL && strcmp(r->tenant, q->tenant) != 0)
		return false;
	if (r->name_prefix != NULL &&
	    (q->name == NULL || strncmp(q->name, r->name_prefix, strlen(r->name_prefix)) != 0))
		return false;
	if (r->request != 0 && r->request != q->request_no)
		return false;
	if (mock_fault_kind_is_exec(r->action.kind) && !q->is_exec)
		return false;
	return true;
}

static bool rule_fires(mock_faults *f, rule *r)
{
	if (r->matched <= r->after)
		return false;
	if (r->times != 0 && r->fired >= r->times)
		return false;
	if (r->prob >= 0)
		return rng_unit(&f->rng) < r->prob;
	return true;
}

bool mock_faults_eval(mock_faults *f, const mock_fault_req *req, mock_fault_action *out,
		      char *label, size_t label_cap)
{
	bool hit = false;

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n && !hit; i++) {
		rule *r = f->rules[i];

		if (!rule_matches(r, req))
			continue;
		r->matched++;
		if (!rule_fires(f, r))
			continue;
		r->fired++;
		*out = r->action;
		if (r->name[0] != '\0')
			snprintf(label, label_cap, "%s", r->name);
		else
			snprintf(label, label_cap, "rule %u (%s)", r->id, mock_fault_kind_name(r->action.kind));
		hit = true;
	}
	pthread_mutex_unlock(&f->lock);
	return hit;
}

double mock_faults_latency_ms(mock_faults *f, const mock_fault_action *a)
{
	double v, u1, u2;

	pthread_mutex_lock(&f->lock);
	switch (a->dist) {
	case LAT_UNIFORM:
		v = a->min_ms + (a->max_lat_ms - a->min_ms) * rng_unit(&f->rng);
		break;
	case LAT_LOGNORMAL:
		u1 = rng_unit(&f->rng);
		u2 = rng_unit(&f->rng);
		if (u1 < 1e-300)
			u1 = 1e-300;
		v = exp(a->mu + a->sigma * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
		break;
	default:
		v = a->ms;
		break;
	}
	pthread_mutex_unlock(&f->lock);
	if (v > 3600000)
		v = 3600000;
	return v < 0 ? 0 : v;
}

void mock_faults_random_bytes(mock_faults *f, unsigned char *buf, size_t len)
{
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(rng_next(&f->rng) >> 56);
	pthread_mutex_unlock(&f->lock);
}

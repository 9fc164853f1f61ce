/* stream: the exec stream decoder; see stream.h. */
#include "stream.h"

#include "client.h"

#include <stdio.h>
#include <string.h>

void ctl_stream_init(ctl_stream *st, const ctl_stream_sink *sink)
{
	memset(st, 0, sizeof *st);
	st->sink = *sink;
	sbx_strbuf_init(&st->line);
	st->frame_max = CTL_STREAM_FRAME_MAX;
	st->exit_code = -1;
}

void ctl_stream_free(ctl_stream *st)
{
	sbx_strbuf_free(&st->line);
}

int ctl_exit_code_of(const cJSON *v)
{
	double d = v->valuedouble;
	if (!(d >= 0) || d > 255)
		return 255;
	return (int)d;
}

static void bad(ctl_stream *st, const char *why)
{
	st->failed = true;
	if (st->sink.bad != NULL)
		st->sink.bad(st->sink.ud, why);
}

static void handle_frame(ctl_stream *st, const char *text, size_t len)
{
	while (len > 0 && (text[len - 1] == '\r' || text[len - 1] == ' '))
		len--;
	if (len == 0)
		return;
	cJSON *f = ctl_json_parse_exact(text, len);
	if (f == NULL || !cJSON_IsObject(f)) {
		char why[160];

		snprintf(why, sizeof why, "unparseable stream frame '%.*s'", (int)(len > 80 ? 80 : len), text);
		cJSON_Delete(f);
		bad(st, why);
		return;
	}
	if (st->sink.frame != NULL)
		st->sink.frame(st->sink.ud, f);
	const cJSON *v = NULL;
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "data"), "result");
	if (cJSON_IsObject(res))
		v = res; /* a server that answered with the buffered form despite ?stream=true */
	else
		v = f;
	const cJSON *x;
	if ((x = cJSON_GetObjectItemCaseSensitive(v, "stdout")) != NULL && cJSON_IsString(x) && st->sink.out)
		st->sink.out(st->sink.ud, x->valuestring);
	if ((x = cJSON_GetObjectItemCaseSensitive(v, "stderr")) != NULL && cJSON_IsString(x) && st->sink.err)
		st->sink.err(st->sink.ud, x->valuestring);
	if ((x = cJSON_GetObjectItemCaseSensitive(v, "error")) != NULL && cJSON_IsString(x) && st->sink.error)
		st->sink.error(st->sink.ud, x->valuestring);
	if ((x = cJSON_GetObjectItemCaseSensitive(v, "exit_code")) != NULL && cJSON_IsNumber(x))
		st->exit_code = ctl_exit_code_of(x);
	cJSON_Delete(f);
}

static void oversize(ctl_stream *st)
{
	char why[120];

	snprintf(why, sizeof why, "a stream frame longer than %zu bytes (skipped)", st->frame_max);
	bad(st, why);
}

bool ctl_stream_feed(ctl_stream *st, const char *data, size_t len)
{
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl != NULL ? (size_t)(nl - data) : len;

		if (st->skipping) {
			/* already reported: drop the rest of the oversize line */
		} else if (st->line.len + n > st->frame_max) {
			sbx_strbuf_reset(&st->line);
			st->skipping = true;
			oversize(st);
		} else if (nl == NULL) {
			sbx_strbuf_append(&st->line, data, n);
		} else if (st->line.len > 0) {
			sbx_strbuf_append(&st->line, data, n);
			handle_frame(st, sbx_strbuf_str(&st->line), st->line.len);
			sbx_strbuf_reset(&st->line);
		} else {
			handle_frame(st, data, n);
		}
		if (nl == NULL)
			break;
		st->skipping = false;
		data += n + 1;
		len -= n + 1;
	}
	return !st->line.oom;
}

void ctl_stream_finish(ctl_stream *st)
{
	if (st->line.len > 0)
		handle_frame(st, sbx_strbuf_str(&st->line), st->line.len);
	sbx_strbuf_reset(&st->line);
	st->skipping = false;
}

/* stream: the exec stream decoder (spec control-plane-api.md "Exec"):
 * application/x-ndjson, one JSON object per line: {"stdout":"…"},
 * {"stderr":"…"}, {"error":"…"}, heartbeats {"hb":true}, and a last frame
 * with exit_code; a server that answered with the buffered JSend form
 * ({"status":"success","data":{"result":{…}}}) is read as one frame.
 *
 * Bytes go in as the HTTP layer delivers them, split anywhere; what comes
 * out (the sink calls, the exit code) does not depend on the split. No I/O:
 * cmd_exec prints through the sink, the ctl_answer fuzz target records. */
#ifndef SBXCTL_STREAM_H
#define SBXCTL_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "sbx/strbuf.h"

/* Longest frame kept (a line longer than this is reported and skipped). */
#define CTL_STREAM_FRAME_MAX ((size_t)16 * 1024 * 1024)

typedef struct ctl_stream_sink {
	void (*out)(void *ud, const char *text);          /* a stdout frame's text */
	void (*err)(void *ud, const char *text);          /* a stderr frame's text */
	void (*error)(void *ud, const char *message);     /* an {"error": …} frame */
	void (*frame)(void *ud, const cJSON *frame);      /* every frame as parsed (may be NULL) */
	void (*bad)(void *ud, const char *why);           /* an unparseable or oversize frame */
	void *ud;
} ctl_stream_sink;

typedef struct ctl_stream {
	ctl_stream_sink sink;
	sbx_strbuf line;     /* partial line carried between chunks */
	size_t frame_max;    /* CTL_STREAM_FRAME_MAX unless a test sets less */
	bool skipping;       /* inside an oversize line, until its '\n' */
	int exit_code;       /* -1 until a frame with exit_code; then 0..255 */
	bool failed;         /* an unparseable or oversize frame */
} ctl_stream;

void ctl_stream_init(ctl_stream *st, const ctl_stream_sink *sink);
/* Feeds bytes; false when out of memory. */
bool ctl_stream_feed(ctl_stream *st, const char *data, size_t len);
/* The end of the stream: a last line without '\n' is a frame too. */
void ctl_stream_finish(ctl_stream *st);
void ctl_stream_free(ctl_stream *st);
/* sbxctl's exit code for a remote one: 0-255 pass through, anything else
 * (negative, > 255, a fraction's integer part aside) is 255. */
int ctl_exit_code_of(const cJSON *v);

#endif

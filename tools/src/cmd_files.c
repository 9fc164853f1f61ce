/* cmd_files: `files push` and `files pull`, binary-safe. A pull writes to a
 * temporary file next to LOCAL and renames it only after a complete, 2xx
 * download, so a failed pull never leaves a half file under LOCAL's name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "output.h"

static int remote_path_ok(ctl_ctx *ctx, const char *remote)
{
	if (remote[0] != '/')
		return ctl_usage_error(ctx, "REMOTE '%s' must be an absolute path (start with /)", remote);
	return CTL_EXIT_OK;
}

static void files_path(ctl_ctx *ctx, sbx_strbuf *path, sbx_strbuf *query, const char *remote)
{
	ctl_sandbox_path(path, ctx->args.pos[0], "/files");
	sbx_strbuf_puts(query, "path=");
	ctl_escape(query, remote);
}

int ctl_cmd_files_push(ctl_ctx *ctx)
{
	const char *local = ctx->args.pos[1];
	const char *remote = ctx->args.pos[2];
	if (remote_path_ok(ctx, remote) != CTL_EXIT_OK)
		return CTL_EXIT_USAGE;
	sbx_strbuf data = SBX_STRBUF_INIT;
	sbx_strbuf path = SBX_STRBUF_INIT;
	sbx_strbuf query = SBX_STRBUF_INIT;
	int rc = CTL_EXIT_FAIL;
	if (ctl_read_file(ctx, local, &data) != 0)
		goto out_free;
	files_path(ctx, &path, &query, remote);
	ctl_request req = {.method = "PUT", .path = sbx_strbuf_str(&path), .query = sbx_strbuf_str(&query),
			   .body = data.data != NULL ? data.data : "", .body_len = data.len,
			   .content_type = "application/octet-stream"};
	ctl_response resp;
	if (ctl_call(ctx, &req, &resp) == 0) {
		if (ctx->json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "id", ctx->args.pos[0]);
			cJSON_AddStringToObject(o, "path", remote);
			cJSON_AddNumberToObject(o, "bytes", (double)data.len);
			ctl_print_json(ctx->out, o);
			cJSON_Delete(o);
		} else {
			fprintf(ctx->out, "pushed %zu bytes to %s:%s\n", data.len, ctx->args.pos[0], remote);
		}
		rc = CTL_EXIT_OK;
	}
	ctl_response_free(&resp);
out_free:
	sbx_strbuf_free(&query);
	sbx_strbuf_free(&path);
	sbx_strbuf_free(&data);
	return rc;
}

typedef struct sink {
	FILE *f;
	size_t bytes;
} sink;

static bool write_chunk(void *ud, const char *data, size_t len)
{
	sink *s = ud;
	s->bytes += len;
	return fwrite(data, 1, len, s->f) == len;
}

/* Opens "<local>.sbxctl-XXXXXX" for writing; *tmp receives its name. */
static FILE *open_temp(ctl_ctx *ctx, const char *local, sbx_strbuf *tmp)
{
	sbx_strbuf_printf(tmp, "%s.sbxctl-XXXXXX", local);
	if (tmp->oom) {
		ctl_fail(ctx, "out of memory");
		return NULL;
	}
	int fd = mkstemp(tmp->data);
	if (fd < 0) {
		ctl_fail(ctx, "cannot create a file next to '%s': %s", local, strerror(errno));
		return NULL;
	}
	mode_t um = umask(0);
	umask(um);
	fchmod(fd, 0666 & ~um); /* mkstemp's 0600 is not what a plain download gets */
	FILE *f = fdopen(fd, "wb");
	if (f == NULL) {
		close(fd);
		unlink(tmp->data);
		ctl_fail(ctx, "cannot open '%s': %s", tmp->data, strerror(errno));
	}
	return f;
}

int ctl_cmd_files_pull(ctl_ctx *ctx)
{
	const char *remote = ctx->args.pos[1];
	const char *local = ctx->args.pos[2];
	if (remote_path_ok(ctx, remote) != CTL_EXIT_OK)
		return CTL_EXIT_USAGE;
	bool to_stdout = strcmp(local, "-") == 0;
	sbx_strbuf tmp = SBX_STRBUF_INIT;
	sbx_strbuf path = SBX_STRBUF_INIT;
	sbx_strbuf query = SBX_STRBUF_INIT;
	sink s = {to_stdout ? ctx->out : open_temp(ctx, local, &tmp), 0};
	int rc = CTL_EXIT_FAIL;
	if (s.f == NULL)
		goto out_free;
	files_path(ctx, &path, &query, remote);
	ctl_request req = {.method = "GET", .path = sbx_strbuf_str(&path), .query = sbx_strbuf_str(&query),
			   .raw = true, .on_chunk = write_chunk, .ud = &s};
	ctl_response resp;
	int called = ctl_call(ctx, &req, &resp);
	ctl_response_free(&resp);
	if (to_stdout) {
		fflush(s.f);
		rc = called == 0 ? CTL_EXIT_OK : CTL_EXIT_FAIL;
		goto out_free;
	}
	bool closed_ok = fclose(s.f) == 0;
	if (called != 0 || !closed_ok || rename(tmp.data, local) != 0) {
		if (called == 0)
			ctl_fail(ctx, "cannot write '%s': %s", local, strerror(errno));
		unlink(tmp.data);
		goto out_free;
	}
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", ctx->args.pos[0]);
		cJSON_AddStringToObject(o, "path", remote);
		cJSON_AddStringToObject(o, "local", local);
		cJSON_AddNumberToObject(o, "bytes", (double)s.bytes);
		ctl_print_json(ctx->out, o);
		cJSON_Delete(o);
	} else {
		fprintf(ctx->out, "pulled %zu bytes from %s:%s to %s\n", s.bytes, ctx->args.pos[0], remote, local);
	}
	rc = CTL_EXIT_OK;
out_free:
	sbx_strbuf_free(&query);
	sbx_strbuf_free(&path);
	sbx_strbuf_free(&tmp);
	return rc;
}

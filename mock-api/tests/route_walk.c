/* route_walk: see route_walk.h. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "mock_fixture.h"
#include "route_walk.h"

static void copy_data_str(const th_resp *r, const char *k, char *out, size_t cap)
{
	const char *v = th_data_str(r, k);

	assert_non_null(v);
	snprintf(out, cap, "%s", v);
}

void rw_make(const char *key, rw_tenant *t)
{
	char path[256], body[512];
	th_resp r;
	th_req rq;

	memset(t, 0, sizeof(*t));
	snprintf(t->key, sizeof(t->key), "%s", key);
	th_json(U, key, "POST", "/v1/sandboxes", "{\"shape\":\"s-1vcpu-1gb\"}", &r);
	expect_status(&r, 200, "rw_make: create");
	copy_data_str(&r, "id", t->sandbox, sizeof(t->sandbox));
	copy_data_str(&r, "ip", t->ip, sizeof(t->ip));
	th_resp_free(&r);
	snprintf(body, sizeof(body), "{\"name\":\"net-of-%s\"}", key);
	th_json(U, key, "POST", "/v1/networks", body, &r);
	expect_status(&r, 200, "rw_make: network");
	copy_data_str(&r, "id", t->network, sizeof(t->network));
	th_resp_free(&r);
	snprintf(body, sizeof(body),
		 "{\"name\":\"disk-of-%s\",\"kind\":\"s3\",\"config\":{\"bucket\":\"b\",\"endpoint\":"
		 "\"http://minio:9000\"},\"credentials\":{\"access_key\":\"AK\",\"secret_key\":\"SK\"}}",
		 key);
	th_json(U, key, "POST", "/v1/disks", body, &r);
	expect_status(&r, 200, "rw_make: disk");
	copy_data_str(&r, "id", t->disk, sizeof(t->disk));
	th_resp_free(&r);
	snprintf(body, sizeof(body), "{\"name\":\"tpl-of-%s\",\"dockerfile\":\"FROM nodeops/sandbox:debian\\nRUN true\"}",
		 key);
	th_json(U, key, "POST", "/v1/templates", body, &r);
	expect_status(&r, 200, "rw_make: template");
	copy_data_str(&r, "id", t->tpl, sizeof(t->tpl));
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/networks", t->sandbox);
	snprintf(body, sizeof(body), "{\"id\":\"%s\"}", t->network);
	th_json(U, key, "POST", path, body, &r);
	expect_status(&r, 200, "rw_make: attach network");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/disks", t->sandbox);
	snprintf(body, sizeof(body), "{\"disk_id\":\"%s\",\"mount_path\":\"/mnt/d\"}", t->disk);
	th_json(U, key, "POST", path, body, &r);
	expect_status(&r, 200, "rw_make: attach disk");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files?path=/workspace/mark.txt", t->sandbox);
	snprintf(body, sizeof(body), "mark-%s", key);
	memset(&rq, 0, sizeof(rq));
	rq.method = "PUT";
	rq.url = U;
	rq.path = path;
	rq.key = key;
	rq.body = body;
	rq.ctype = "application/octet-stream";
	th_do(&rq, &r);
	expect_status(&r, 200, "rw_make: file");
	th_resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes", t->sandbox);
	snprintf(body, sizeof(body), "{\"cmd\":\"echo\",\"args\":[\"mark-%s\"]}", key);
	th_json(U, key, "POST", path, body, &r);
	expect_status(&r, 200, "rw_make: process");
	copy_data_str(&r, "process_id", t->proc, sizeof(t->proc));
	th_resp_free(&r);
	/* ended before anyone looks: its view no longer changes, and its
	 * connect stream and wait answer at once (route walks GET them) */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%s/wait?scope=tree&timeout_ms=60000",
		 t->sandbox, t->proc);
	th_json(U, key, "GET", path, NULL, &r);
	expect_status(&r, 200, "rw_make: process wait");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "data"), "tree_exited")));
	th_resp_free(&r);
}

/* The value for {name}, given the path before it. */
static const char *param_value(const char *name, size_t nlen, const char *before,
			       const rw_tenant *t)
{
	if (nlen == 3 && strncmp(name, "net", 3) == 0)
		return t->network;
	if (nlen == 4 && strncmp(name, "disk", 4) == 0)
		return t->disk;
	if (nlen == 2 && strncmp(name, "ip", 2) == 0)
		return t->ip;
	if (nlen == 3 && strncmp(name, "pid", 3) == 0)
		return t->proc;
	/* computer use (COMPUTER.md): a window id, screen-0 (the boot's), an
	 * action every window takes; the sandbox's own answer (409 off a
	 * desktop) is not what these walks check */
	if (nlen == 3 && strncmp(name, "win", 3) == 0)
		return "1";
	if (nlen == 6 && strncmp(name, "screen", 6) == 0)
		return "screen-0";
	if (nlen == 6 && strncmp(name, "action", 6) == 0)
		return "focus";
	if (nlen != 2 || strncmp(name, "id", 2) != 0)
		return NULL;
	if (strcmp(before, "/v1/sandboxes/") == 0)
		return t->sandbox;
	if (strcmp(before, "/v1/networks/") == 0)
		return t->network;
	if (strcmp(before, "/v1/disks/") == 0)
		return t->disk;
	if (strcmp(before, "/v1/templates/") == 0)
		return t->tpl;
	return NULL;
}

bool rw_fill(const char *pattern, const rw_tenant *t, char *out, size_t cap, char *why,
	     size_t why_cap)
{
	size_t len = 0;

	for (const char *p = pattern; *p != '\0';) {
		const char *end, *v;

		if (*p != '{') {
			if (len + 1 >= cap)
				goto too_long;
			out[len++] = *p++;
			out[len] = '\0';
			continue;
		}
		end = strchr(p, '}');
		assert_non_null(end);
		v = param_value(p + 1, (size_t)(end - p - 1), out, t);
		if (v == NULL) {
			snprintf(why, why_cap, "parameter %.*s after %s", (int)(end - p + 1), p, out);
			return false;
		}
		if (len + strlen(v) + 1 >= cap)
			goto too_long;
		len += (size_t)snprintf(out + len, cap - len, "%s", v);
		p = end + 1;
	}
	out[len] = '\0';
	return true;
too_long:
	snprintf(why, why_cap, "filled path too long");
	return false;
}

static int connect_mock(void)
{
	struct sockaddr_in sa;
	struct timeval tv = {.tv_sec = 10};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(sbx_mock_port(g_mock));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

size_t rw_exchange(const char *method, const char *path, const char *extra, const char *body,
		   char *buf, size_t cap)
{
	char head[2048];
	int fd = connect_mock();
	size_t len = 0, blen = body != NULL ? strlen(body) : 0;
	int n = snprintf(head, sizeof(head),
			 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s"
			 "Content-Length: %zu\r\n\r\n",
			 method, path, extra != NULL ? extra : "", blen);

	assert_true(n > 0 && (size_t)n < sizeof(head));
	assert_int_equal(send(fd, head, (size_t)n, MSG_NOSIGNAL), n);
	if (blen > 0)
		assert_int_equal(send(fd, body, blen, MSG_NOSIGNAL), (ssize_t)blen);
	while (len + 1 < cap) {
		ssize_t got = recv(fd, buf + len, cap - 1 - len, 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	buf[len] = '\0';
	close(fd);
	return len;
}

int rw_status(const char *answer)
{
	int st = 0;

	if (strncmp(answer, "HTTP/1.1 ", 9) != 0)
		return 0;
	for (const char *p = answer + 9; *p >= '0' && *p <= '9'; p++)
		st = st * 10 + (*p - '0');
	return st;
}

bool rw_header(const char *answer, const char *name, char *val, size_t cap)
{
	const char *end = strstr(answer, "\r\n\r\n");
	size_t nlen = strlen(name);

	for (const char *p = strstr(answer, "\r\n"); p != NULL && p < end; p = strstr(p + 2, "\r\n")) {
		const char *line = p + 2;

		if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
			const char *v = line + nlen + 1;
			size_t vlen;

			while (*v == ' ')
				v++;
			vlen = (size_t)(strstr(v, "\r\n") - v);
			snprintf(val, cap, "%.*s", (int)vlen, v);
			return true;
		}
	}
	return false;
}

const char *rw_body(const char *answer)
{
	const char *end = strstr(answer, "\r\n\r\n");

	return end != NULL ? end + 4 : NULL;
}

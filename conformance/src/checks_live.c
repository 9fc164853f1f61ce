/* checks_live: real connections from inside a guest, for the egress
 * checks (CAP-004, CAP-005, CAP-006). The probe is Python code the backend
 * runs like any other (so it lands in the guest the backend made, with the
 * egress the backend sent); it connects to every destination at once and
 * prints one "SBX-PROBE <dest> <result>" line each: ok (the handshake
 * completed), timeout (no answer: dropped), or the errno's name.
 *
 * Only a mock that enforces egress (sbx-mock's simulated internet) makes a
 * result mean something: cf_live_egress says whether it does, and why not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "sbx/strbuf.h"

#define PROBE_WAIT_S "2.0"

bool cf_live_egress(struct cf_case *c, char *why, size_t cap)
{
	sbx_err err = {{0}};
	cJSON *set = cf_admin(c->cf, "GET", "/_mock/settings", NULL, &err);
	const cJSON *on = cJSON_GetObjectItemCaseSensitive(set, "egress_enforced");
	const char *note = cf_str(set, "egress");
	bool live = cJSON_IsTrue(on);

	if (set == NULL)
		snprintf(why, cap, "the mock's settings are unreadable: %s", err.msg);
	else if (!cJSON_IsBool(on))
		snprintf(why, cap, "this mock does not say whether it enforces egress (an older sbx-mock?)");
	else
		snprintf(why, cap, "%s", note != NULL ? note : "");
	cJSON_Delete(set);
	return live;
}

/* A destination as Python: ("host or address", port). */
static bool py_dest(sbx_strbuf *code, const char *dest)
{
	const char *colon = strrchr(dest, ':');
	const char *at = strchr(dest, '@');
	const char *host = at != NULL ? at + 1 : dest;

	if (colon == NULL || colon < host)
		return false;
	if (host[0] == '[')
		return sbx_strbuf_printf(code, "(\"%.*s\",%s),", (int)(colon - host - 2), host + 1, colon + 1);
	return sbx_strbuf_printf(code, "(\"%.*s\",%s),", (int)(colon - host), host, colon + 1);
}

char *cf_probe_code(const char *const *dests, size_t n, const char *token, bool fetch_metadata)
{
	sbx_strbuf code;
	bool ok;

	sbx_strbuf_init(&code);
	ok = sbx_strbuf_printf(&code, "print(%s%s%s)\n", token ? "'" : "", token ? token : "", token ? "'" : "") &&
	     sbx_strbuf_puts(&code, "import errno,select,socket,time\nD=[");
	for (size_t i = 0; ok && i < n; i++)
		ok = py_dest(&code, dests[i]);
	ok = ok &&
	     sbx_strbuf_puts(&code,
			     "]\nS={};R={}\n"
			     "for i,(a,p) in enumerate(D):\n"
			     " try:\n"
			     "  a=socket.getaddrinfo(a,p,type=socket.SOCK_STREAM)[0][4][0]\n"
			     " except OSError as e:\n"
			     "  R[i]='unresolved';continue\n"
			     " s=socket.socket(socket.AF_INET6 if ':' in a else socket.AF_INET);s.setblocking(False)\n"
			     " e=s.connect_ex((a,p))\n"
			     " if e in (0,errno.EINPROGRESS):S[s]=i\n"
			     " else:R[i]=errno.errorcode.get(e,str(e));s.close()\n"
			     "t=time.time()+" PROBE_WAIT_S "\n"
			     "while S and time.time()<t:\n"
			     " _,w,_=select.select([],list(S),[],max(0,t-time.time()))\n"
			     " for s in w:\n"
			     "  e=s.getsockopt(socket.SOL_SOCKET,socket.SO_ERROR);i=S.pop(s)\n"
			     "  R[i]='ok' if e==0 else errno.errorcode.get(e,str(e));s.close()\n"
			     "for s,i in S.items():R[i]='timeout';s.close()\n"
			     "for i,(a,p) in enumerate(D):print('SBX-PROBE %s:%d %s'%(a,p,R[i]))\n");
	if (ok && fetch_metadata)
		ok = sbx_strbuf_puts(&code,
				     "try:\n"
				     " s=socket.create_connection(('169.254.169.254',80),timeout=3)\n"
				     " s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n');b=b''\n"
				     " while True:\n"
				     "  x=s.recv(4096)\n"
				     "  if not x:break\n"
				     "  b+=x\n"
				     " print('SBX-META '+b.split(b'\\r\\n\\r\\n',1)[-1].decode(errors='replace').strip())\n"
				     "except OSError as e:print('SBX-META unreachable: %s'%e)\n");
	if (!ok) {
		sbx_strbuf_free(&code);
		return NULL;
	}
	return sbx_strbuf_detach(&code, NULL);
}

const char *cf_probe_result(const char *out, const char *dest, char *buf, size_t cap)
{
	const char *at = strchr(dest, '@');
	const char *host = at != NULL ? at + 1 : dest;
	char key[300];
	const char *p;
	size_t n;

	if (host[0] == '[') { /* the probe prints IPv6 as addr:port, unbracketed */
		const char *close = strchr(host, ']');

		snprintf(key, sizeof(key), "SBX-PROBE %.*s%s ", close != NULL ? (int)(close - host - 1) : 0,
			 host + 1, close != NULL ? close + 1 : "");
	} else {
		snprintf(key, sizeof(key), "SBX-PROBE %s ", host);
	}
	p = out != NULL ? strstr(out, key) : NULL;
	if (p == NULL)
		return NULL;
	p += strlen(key);
	n = strcspn(p, "\r\n");
	snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
	return buf;
}

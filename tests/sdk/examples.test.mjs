// The TypeScript SDK's examples 01, 02, 03, 05, 15, 39 and 40 (public
// repository NodeOps-app/createos-sandbox-sdk, examples/) as they run: the
// client-less Sandbox.create, configured by the environment alone, on
// devbox:1 (issue 46). Each test makes the example's calls in its order and
// checks what the example prints or checks; the code is this file's own.
//
// Not started by itself: tests/zero_config_test.sh runs it in a shell that
// has only PATH, HOME, XDG_RUNTIME_DIR and the README's one line
// (eval "$(sbxctl mock env)") against an sbx-mock started without flags, so
// that the SDK's two variables and the https trust (NODE_EXTRA_CA_CERTS,
// read by node at its start) come from that line and nothing else.
//
// Where this differs from an example, on purpose: 02's script is written
// here (it prints five lines and "done" on stderr, as the example's does,
// without its one-second sleeps); 15's agent and driver are small programs
// of this file that speak the same three JSON-RPC methods over stdio.
import { test } from "node:test";
import assert from "node:assert/strict";

import { Sandbox } from "@nodeops-createos/sandbox";

// NODE_EXTRA_CA_CERTS is not required here: zero_config_test.sh also runs
// 03 without it, to see its fetch refused on the certificate
for (const v of ["CREATEOS_SANDBOX_BASE_URL", "CREATEOS_SANDBOX_API_KEY"])
  assert.ok(process.env[v], `${v} is not set: run this from eval "$(sbxctl mock env)" (tests/zero_config_test.sh)`);

async function withSandbox(request, fn) {
  const sb = await Sandbox.create(request);
  try {
    return await fn(sb);
  } finally {
    await sb.destroy();
  }
}

test("01 hello world: uname and Debian's os-release on devbox:1", async () => {
  await withSandbox({ shape: "s-1vcpu-256mb", rootfs: "devbox:1" }, async (sb) => {
    assert.match(sb.id, /^sb-/);
    const uname = await sb.runCommand("uname", ["-a"]);
    assert.match(uname.result.stdout, /^Linux /);
    const osr = await sb.runCommand("cat", ["/etc/os-release"]);
    // the guest's root is the image, not the host skeleton
    assert.match(osr.result.stdout, /^ID=debian$/m);
  });
});

test("02 code interpreter: an uploaded script run with python3", async () => {
  const script =
    "import sys\nfor i in range(1, 6):\n    print(f'line {i}/5', flush=True)\nprint('done', file=sys.stderr)\n";
  await withSandbox({ shape: "s-1vcpu-1gb", rootfs: "devbox:1" }, async (sb) => {
    await sb.files.upload("/tmp/script.py", Buffer.from(script));
    const { result } = await sb.runCommand("python3", ["/tmp/script.py"]);
    assert.equal(result.exit_code, 0, result.stderr);
    assert.equal(result.stdout, "line 1/5\nline 2/5\nline 3/5\nline 4/5\nline 5/5\n");
    assert.equal(result.stderr, "done\n");
  });
});

test("03 dev server: the https preview URL fetched with node's own trust", async () => {
  await withSandbox({ shape: "s-1vcpu-256mb", rootfs: "devbox:1", ingress_enabled: true }, async (sb) => {
    await sb.runCommand("sh", [
      "-c",
      'mkdir -p /srv && echo "<h1>hello from preview URL</h1>" > /srv/index.html && cd /srv && ' +
        "nohup setsid python3 -m http.server 8080 --bind 0.0.0.0 >/tmp/srv.log 2>&1 &",
    ]);
    await sb.waitForPortReady(8080, { timeoutMs: 30_000 });
    const url = sb.previewUrl(8080);
    assert.match(url, /^https:\/\//);
    // the example's fetch: verified by node against its roots plus
    // NODE_EXTRA_CA_CERTS (the example's Bun-only tls option does nothing in node)
    // (a failure names its cause: node's own "fetch failed" does not say
    // whether it was the certificate)
    const res = await fetch(url, { tls: { rejectUnauthorized: false } }).catch((e) => {
      throw new Error(`fetch ${url}: ${e.cause?.code ?? e.cause ?? e}`, { cause: e });
    });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "<h1>hello from preview URL</h1>\n");
  });
});

test("05 filesystem snapshots: pause, fork paused, resume, each side its own files", async () => {
  const base = await Sandbox.create({ shape: "s-1vcpu-256mb", rootfs: "devbox:1" });
  let fork;
  const cat = async (sb, path) => (await sb.runCommand("sh", ["-c", `cat ${path} 2>&1`])).result.stdout.trim();
  try {
    await base.files.upload("/root/seed.txt", "seed\n");
    assert.equal(await cat(base, "/root/seed.txt"), "seed");
    await base.pause();
    await base.waitUntilPaused({ timeoutMs: 600_000 });
    fork = await base.fork({ start_paused: true });
    await fork.waitUntilPaused({ timeoutMs: 600_000 });
    assert.equal(fork.data.forked_from, base.id);
    await fork.resume();
    await fork.waitUntilRunning({ timeoutMs: 300_000 });
    assert.equal(await cat(fork, "/root/seed.txt"), "seed");
    await fork.files.upload("/root/fork-only.txt", "fork\n");
    assert.equal(await cat(fork, "/root/fork-only.txt"), "fork");
    await base.resume();
    await base.waitUntilRunning({ timeoutMs: 300_000 });
    assert.match(await cat(base, "/root/fork-only.txt"), /No such file or directory/);
    assert.equal(await cat(base, "/root/seed.txt"), "seed");
  } finally {
    if (fork) await fork.destroy();
    await base.destroy();
  }
});

// 15's shape: an agent speaking line-delimited JSON-RPC 2.0 on stdio
// (initialize, session/new, session/prompt with one session/update
// notification), driven by a second program in the guest.
const AGENT = `import json, sys
for line in sys.stdin:
    m = json.loads(line)
    meth, rid, p = m.get("method"), m.get("id"), m.get("params") or {}
    out = []
    if meth == "initialize":
        out.append({"id": rid, "result": {"protocolVersion": 1, "agentInfo": {"name": "echo"}}})
    elif meth == "session/new":
        out.append({"id": rid, "result": {"sessionId": "s1"}})
    elif meth == "session/prompt":
        text = "".join(b.get("text", "") for b in p.get("prompt", []))
        out.append({"method": "session/update", "params": {"sessionId": p.get("sessionId"),
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "echo: " + text}}}})
        out.append({"id": rid, "result": {"stopReason": "end_turn"}})
    for o in out:
        o["jsonrpc"] = "2.0"
        print(json.dumps(o), flush=True)
`;
const DRIVER = `import json, subprocess, sys
a = subprocess.Popen(["python3", "/tmp/acp_agent.py"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def req(i, meth, params):
    f = {"jsonrpc": "2.0", "id": i, "method": meth, "params": params}
    sys.stderr.write("<<< " + json.dumps(f) + "\\n"); a.stdin.write(json.dumps(f) + "\\n"); a.stdin.flush()
    notes = []
    while True:
        m = json.loads(a.stdout.readline()); sys.stderr.write(">>> " + json.dumps(m) + "\\n")
        if m.get("id") == i:
            return m["result"], notes
        notes.append(m)
req(1, "initialize", {"protocolVersion": 1})
sid = req(2, "session/new", {"cwd": "/tmp", "mcpServers": []})[0]["sessionId"]
res, notes = req(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": sys.argv[1]}]})
text = "".join(n["params"]["update"]["content"]["text"] for n in notes)
print(json.dumps({"sessionId": sid, "assistant": text, "stopReason": res["stopReason"]}))
`;

test("15 ACP hello world: a JSON-RPC agent driven inside the guest", async () => {
  const prompt = "hello, ACP — what time is it?";
  await withSandbox({ shape: "s-1vcpu-256mb", rootfs: "devbox:1", name: `acp-${Date.now() % 1000000}` }, async (sb) => {
    await Promise.all([
      sb.files.upload("/tmp/acp_agent.py", new TextEncoder().encode(AGENT)),
      sb.files.upload("/tmp/acp_driver.py", new TextEncoder().encode(DRIVER)),
    ]);
    const py = await sb.runCommand("python3", ["--version"]);
    assert.equal(py.result.exit_code, 0);
    assert.match(py.result.stdout + py.result.stderr, /^Python 3\./);
    const { result } = await sb.runCommand("python3", ["/tmp/acp_driver.py", prompt], { timeoutMs: 60_000 });
    assert.equal(result.exit_code, 0, result.stderr);
    assert.match(result.stderr, /^<<< .*"initialize"/m);
    const summary = JSON.parse(result.stdout);
    assert.equal(summary.assistant, `echo: ${prompt}`);
    assert.equal(summary.stopReason, "end_turn");
  });
});

test("39 bandwidth recharge: the quota grows by what was added", async () => {
  await withSandbox({ shape: "s-1vcpu-1gb", rootfs: "devbox:1" }, async (sb) => {
    const before = await sb.getBandwidth();
    for (const k of ["quota_bytes", "used_bytes", "remaining_bytes"]) assert.equal(typeof before[k], "number", k);
    assert.equal(typeof before.capped, "boolean");
    const add = 5 * 1024 ** 3;
    const after = await sb.rechargeBandwidth(add);
    if (before.quota_bytes >= 0) assert.equal(after.quota_bytes - before.quota_bytes, add);
  });
});

test("40 idle auto-pause: set at create, changed, cleared", async () => {
  await withSandbox({ shape: "s-1vcpu-1gb", rootfs: "devbox:1", auto_pause_after_seconds: 300 }, async (sb) => {
    // the example prints data.auto_pause_after_seconds of the create answer,
    // which the live service's (and so the mock's) leaves out; the value
    // is the sandbox's, as a refresh shows
    assert.equal((await sb.refresh()).data.auto_pause_after_seconds, 300);
    await sb.setAutoPause(600);
    assert.equal(sb.data.auto_pause_after_seconds, 600);
    await sb.setAutoPause(null);
    assert.equal(sb.data.auto_pause_after_seconds ?? "off", "off");
  });
});

// Real-SDK compatibility suite: drives sbx-mock with the vendor SDK
// @nodeops-createos/sandbox (pinned in package-lock.json) and checks that
// what the SDK sends and parses works unchanged against the mock.
//
// Usage: node --test sdk.test.mjs   (SBX_MOCK_BIN=/path/to/sbx-mock)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

import {
  CreateosSandboxClient,
  CreateosSandboxNotFoundError,
  CreateosSandboxValidationError,
  CreateosSandboxPermissionError,
  CreateosSandboxRateLimitError,
  CreateosSandboxAuthError,
} from "@nodeops-createos/sandbox";

const BIN = process.env.SBX_MOCK_BIN ?? process.argv[2];
const ADMIN = "sdk-admin-token";
let proc;
let baseUrl;

function client(apiKey, extra = {}) {
  return new CreateosSandboxClient({ apiKey, baseUrl, ...extra });
}

async function admin(method, path, body) {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { "X-Mock-Admin-Token": ADMIN, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  assert.equal(res.status, 200, `admin ${method} ${path}: ${JSON.stringify(json)}`);
  return json.data;
}

before(async () => {
  assert.ok(BIN, "set SBX_MOCK_BIN (or pass the sbx-mock path as argv[2])");
  proc = spawn(BIN, ["--listen", "127.0.0.1:0", "--self-listen", "127.0.0.1:0", "--admin-token", ADMIN, "--quiet"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: proc.stdout });
  baseUrl = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("sbx-mock did not print its URL")), 10_000);
    proc.once("exit", (code) => reject(new Error(`sbx-mock exited early (${code})`)));
    lines.on("line", (line) => {
      const m = /^sbx-mock listening on (http:\/\/\S+)$/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
});

after(async () => {
  if (proc && proc.exitCode === null) {
    const exited = new Promise((resolve) => proc.once("exit", resolve));
    proc.kill("SIGTERM");
    const code = await exited;
    assert.equal(code, 0, "sbx-mock exits 0 on SIGTERM");
  }
});

test("catalog and identity: healthz, shapes, rootfs, whoami", async () => {
  const box = client("sdk-ident");
  assert.deepEqual(await box.healthz(), { up: true });
  const ready = await box.readyz();
  assert.equal(ready.ready, true);
  const shapes = await box.listShapes();
  assert.ok(shapes.some((s) => s.id === "s-1vcpu-256mb" && s.default_disk_mib === 10240));
  assert.equal(shapes.find((s) => s.id === "s-0.25vcpu-512mb").cpu_quota_pct, 25);
  const rootfs = await box.listRootfs();
  assert.equal(rootfs.default, "devbox:1");
  assert.ok(rootfs.rootfs.includes("devbox:1"));
  const me = await box.whoami();
  assert.match(me.user_id, /\S/);
  assert.deepEqual(me.stats, { running: 0, paused: 0, other: 0, total: 0 });
});

test("full lifecycle through the SDK", async () => {
  const box = client("sdk-life");
  const sb = await box.createSandbox({
    shape: "s-1vcpu-256mb",
    rootfs: "devbox:1",
    name: "sdk-life",
    envs: { GREETING: "hello" },
  });
  assert.match(sb.id, /^sb-[0-9A-Z]{26}$/);
  assert.equal(sb.status, "running");

  // buffered exec
  const res = await sb.runCommand("sh", ["-c", "echo $GREETING from $(pwd); echo warn >&2"]);
  assert.equal(res.result.stdout, "hello from /workspace\n");
  assert.equal(res.result.stderr, "warn\n");
  assert.equal(res.result.exit_code, 0);
  assert.equal(typeof res.exec_ms, "number");

  // streaming exec
  const events = [];
  for await (const ev of sb.streamCommand("sh", ["-c", "echo one; sleep 0.2; echo two >&2; exit 4"])) {
    events.push(ev);
  }
  const out = events.filter((e) => e.type === "stdout").map((e) => e.data).join("");
  const err = events.filter((e) => e.type === "stderr").map((e) => e.data).join("");
  assert.equal(out, "one\n");
  assert.equal(err, "two\n");
  assert.deepEqual(events.at(-1), { type: "exit", exitCode: 4 });

  // binary files
  const bytes = new Uint8Array(4096);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + 7) & 0xff;
  await sb.files.upload("/workspace/data/blob.bin", bytes);
  const back = new Uint8Array(await sb.files.download("/workspace/data/blob.bin"));
  assert.deepEqual(back, bytes);
  const wc = await sb.runCommand("wc", ["-c", "/workspace/data/blob.bin"]);
  assert.match(wc.result.stdout, /^4096 /);

  // egress
  const set = await sb.setEgress(["PyPI.org", "10.0.0.1/8:443"]);
  assert.deepEqual(set.egress, ["pypi.org", "10.0.0.0/8:443"]);
  const got = await sb.getEgress();
  assert.deepEqual(got, { id: sb.id, egress: ["pypi.org", "10.0.0.0/8:443"] });

  // pause -> fork -> resume
  await sb.pause();
  await sb.waitUntilPaused({ timeoutMs: 10_000 });
  assert.equal(sb.status, "paused");
  const child = await sb.fork({ start_paused: false });
  assert.equal(child.data.forked_from, sb.id);
  await child.waitUntilRunning({ timeoutMs: 10_000 });
  const copied = await child.runCommand("cat", ["/workspace/data/blob.bin"]);
  assert.equal(copied.result.exit_code, 0);
  await sb.resume();
  await sb.waitUntilRunning({ timeoutMs: 10_000 });
  const again = await sb.runCommand("true");
  assert.equal(again.result.exit_code, 0);

  // destroy
  const d = await sb.destroy();
  assert.equal(d.id, sb.id);
  await sb.waitUntilDestroyed({ timeoutMs: 10_000 });
  await child.destroy();
  const me = await box.whoami();
  assert.equal(me.stats.total, 0);
});

test("listSandboxes pages past 500 items", async () => {
  const key = "sdk-many";
  await admin("POST", "/_mock/tenants", { key, cap: 600 });
  const box = client(key);
  const N = 520;
  for (let i = 0; i < N; i += 20) {
    await Promise.all(
      Array.from({ length: Math.min(20, N - i) }, () => box.createSandbox({ shape: "s-1vcpu-256mb" })),
    );
  }
  const all = await box.listSandboxes();
  assert.equal(all.length, N);
  assert.equal(new Set(all.map((s) => s.id)).size, N);
  const capped = await box.listSandboxes({ limit: 7 });
  assert.equal(capped.length, 7);
  await admin("POST", "/_mock/reset");
});

test("error classes the SDK maps", async () => {
  const owner = client("sdk-owner");
  const stranger = client("sdk-stranger");
  const sb = await owner.createSandbox({ shape: "s-1vcpu-256mb" });

  await assert.rejects(stranger.getSandbox(sb.id), CreateosSandboxNotFoundError);
  await assert.rejects(owner.createSandbox({ shape: "s-huge" }), (e) => {
    assert.ok(e instanceof CreateosSandboxValidationError);
    assert.equal(e.statusCode, 400);
    assert.match(e.message, /shape/);
    return true;
  });
  await assert.rejects(
    new CreateosSandboxClient({ baseUrl, authHeaders: { "X-Api-Key": "" } }).whoami(),
    CreateosSandboxAuthError,
  );

  // over the cap: the mock's default is 403 QUOTA_EXCEEDED (Permission)
  await admin("POST", "/_mock/tenants", { key: "sdk-capped", cap: 1 });
  const capped = client("sdk-capped");
  await capped.createSandbox({ shape: "s-1vcpu-256mb" });
  await assert.rejects(capped.createSandbox({ shape: "s-1vcpu-256mb" }), (e) => {
    assert.ok(e instanceof CreateosSandboxPermissionError);
    assert.equal(e.code, "QUOTA_EXCEEDED");
    return true;
  });

  // rate limit with Retry-After from a fault rule
  const { ids } = await admin("POST", "/_mock/faults", {
    match: { method: "GET", path: "/v1/whoami", tenant: "sdk-owner" },
    action: { kind: "http", status: 429, code: "RATE_LIMITED", retry_after: 3 },
  });
  await assert.rejects(owner.whoami({ retry: false }), (e) => {
    assert.ok(e instanceof CreateosSandboxRateLimitError);
    assert.equal(e.retryAfterSeconds, 3);
    assert.equal(e.code, "RATE_LIMITED");
    assert.match(e.requestId, /^req_/);
    return true;
  });
  await admin("DELETE", `/_mock/faults/${ids[0]}`);

  // the journal shows the SDK's retry of a 503 on POST (retried for any method)
  await admin("DELETE", "/_mock/journal");
  await admin("POST", "/_mock/faults", {
    match: { method: "POST", path: "/v1/sandboxes", tenant: "sdk-retry" },
    fire: { times: 1 },
    action: { kind: "http", status: 503 },
  });
  const retrying = client("sdk-retry", { retry: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 50 } });
  await retrying.createSandbox({ shape: "s-1vcpu-256mb" });
  const j = await admin("GET", "/_mock/journal?tenant=sdk-retry&method=POST");
  assert.deepEqual(
    j.entries.map((e) => e.status),
    [503, 200],
  );
  await admin("POST", "/_mock/reset");
});

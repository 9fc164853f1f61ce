// Real-SDK compatibility suite: drives sbx-mock with the vendor SDK
// @nodeops-createos/sandbox (pinned in package-lock.json) and checks that
// what the SDK sends and parses works unchanged against the mock.
//
// Usage: node --test sdk.test.mjs   (SBX_MOCK_BIN=/path/to/sbx-mock)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import * as F from "./fidelity.mjs";
import {
  Sandbox,
  CreateosSandboxClient,
  CreateosSandboxNotFoundError,
  CreateosSandboxValidationError,
  CreateosSandboxPermissionError,
  CreateosSandboxRateLimitError,
  CreateosSandboxAuthError,
} from "@nodeops-createos/sandbox";
import { startMock } from "./mock.mjs";

// Every public SDK method is wrapped (result checked against its declared
// type, call counted) and every response recorded and checked by route:
// see fidelity.mjs; the last test fails on any mismatch or uncalled method.
const SDKF = F.instrument();

const ADMIN = "sdk-admin-token";
let mock;
let baseUrl;

function client(apiKey, extra = {}) {
  return new CreateosSandboxClient({ apiKey, baseUrl, fetch: F.recordingFetch, ...extra });
}

const admin = (...a) => mock.admin(...a);

before(async () => {
  // the host skeleton, not the default image store: "templates: ... (no
  // image: the build fails saying so)", "one writable filesystem" (the
  // skeleton's read-only host directories) and "fidelity" check its
  // behaviour; tests/sdk/images.test.mjs covers devbox:1
  mock = await startMock(["--self-listen", "127.0.0.1:0", "--admin-token", ADMIN, "--no-images"]);
  baseUrl = mock.baseUrl;
});

after(async () => mock?.stop());

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
  await sb.waitUntilPaused({ timeoutMs: 60_000 }); // a loaded CI machine
  assert.equal(sb.status, "paused");
  const child = await sb.fork({ start_paused: false });
  assert.equal(child.data.forked_from, sb.id);
  await child.waitUntilRunning({ timeoutMs: 60_000 });
  const copied = await child.runCommand("cat", ["/workspace/data/blob.bin"]);
  assert.equal(copied.result.exit_code, 0);
  await sb.resume();
  await sb.waitUntilRunning({ timeoutMs: 60_000 });
  const again = await sb.runCommand("true");
  assert.equal(again.result.exit_code, 0);

  // destroy
  const d = await sb.destroy();
  assert.equal(d.id, sb.id);
  await sb.waitUntilDestroyed({ timeoutMs: 60_000 });
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
    new CreateosSandboxClient({ baseUrl, fetch: F.recordingFetch, authHeaders: { "X-Api-Key": "" } }).whoami(),
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

// ---- the rest of the SDK surface (issue 15): networks, disks, templates,
// the sandbox helpers not used above, and the self-signal helpers ----

const SHAPE = "s-1vcpu-256mb";

test("client helpers: createClient, hosts, Sandbox.create/connect, by-ip, iterate", async () => {
  const box = SDKF.createClient({ apiKey: "sdk-surface", baseUrl, fetch: F.recordingFetch });
  const hosts = await box.listHosts();
  assert.ok(hosts.length >= 1);
  const iterated = [];
  for await (const h of box.iterateHosts()) iterated.push(h.id);
  assert.deepEqual(iterated, hosts.map((h) => h.id));

  const sb = await Sandbox.create({ shape: SHAPE }, { apiKey: "sdk-surface", baseUrl, fetch: F.recordingFetch });
  // no name given: a generated one, the same on every read (SDK: "Empty = auto-generated")
  assert.match(sb.name, /^sandbox-[a-z0-9-]+$/);
  const again = await Sandbox.connect(sb.id, { apiKey: "sdk-surface", baseUrl, fetch: F.recordingFetch });
  assert.equal(again.name, sb.name);
  assert.equal((await again.refresh()).name, sb.name);
  assert.equal((await box.getSandboxByIP(sb.ip)).id, sb.id);
  assert.equal((await box.getSandbox(sb.id)).name, sb.name);
  const ids = [];
  for await (const s of box.iterateSandboxes()) ids.push(s.id);
  assert.ok(ids.includes(sb.id));
  assert.equal(sb.toJSON().id, sb.id);
  await sb.destroy();
});

test("sandbox helpers: sh, resize, ingress, auto-pause, ssh keys, bandwidth, port ready", async () => {
  const box = client("sdk-helpers");
  const sb = await box.createSandbox({ shape: SHAPE, name: "sdk-helpers" });
  assert.equal((await sb.sh("echo $((6*7))")).result.stdout, "42\n");
  const grown = await sb.resize(sb.data.disk_mib * 2);
  assert.equal(grown.id, sb.id);
  await sb.setIngress(true);
  assert.equal(sb.data.ingress_enabled, true);
  assert.match(sb.previewUrl(8080), /8080/);
  await sb.setAutoPause(600);
  assert.equal(sb.data.auto_pause_after_seconds, 600);
  await sb.setAutoPause(null);
  assert.equal(sb.data.auto_pause_after_seconds, undefined);
  const keys = await sb.addSSHPubkeys([
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl sdk@test",
  ]);
  assert.equal(keys.count, 1);
  const bw = await sb.getBandwidth();
  const more = await sb.rechargeBandwidth(1024);
  assert.equal(more.quota_bytes, bw.quota_bytes + 1024);
  await sb.sh(
    "python3 -c 'import socket,time;s=socket.socket();s.bind((\"127.0.0.1\",8081));s.listen();time.sleep(60)' >/dev/null 2>&1 &",
  );
  await sb.waitForPortReady(8081, { timeoutMs: 30_000, intervalMs: 100 }); // python3 starting on a loaded CI machine
  await sb.destroy();
});

test("networks: create, list, iterate, get with member objects, attach, detach, delete", async () => {
  const box = client("sdk-net");
  const net = await box.networks.create({ name: "fid-net" });
  assert.match(net.id, /^net-/);
  const sb = await box.createSandbox({ shape: SHAPE, name: "fid-member" });
  assert.deepEqual(await sb.attachNetwork(net.id), { ok: true });
  const got = await box.networks.get(net.id);
  assert.equal(got.members.length, 1);
  const [m] = got.members;
  assert.equal(m.sandbox_id, sb.id);
  assert.equal(m.name, "fid-member");
  assert.equal(typeof m.status, "string");
  assert.match(m.ip, /^\d+\.\d+\.\d+\.\d+$/);
  const list = await box.networks.list();
  assert.equal(list.find((n) => n.id === net.id).member_count, 1);
  const seen = [];
  for await (const n of box.networks.iterate()) seen.push(n.id);
  assert.deepEqual(seen, [net.id]);
  assert.deepEqual(await sb.detachNetwork(net.id), { ok: true });
  // not attached (any more): 404
  await assert.rejects(sb.detachNetwork(net.id), CreateosSandboxNotFoundError);
  assert.deepEqual(await box.networks.delete(net.id), { ok: true });
  await sb.destroy();
});

test("disks: create, list, iterate, get, rotate, create-time and live attachments, delete", async () => {
  const box = client("sdk-disk");
  const body = {
    name: "fid-disk",
    kind: "s3",
    config: { bucket: "b1", endpoint: "https://s3.example.test", region: "eu-1" },
    credentials: { access_key: "AK", secret_key: "SK" },
  };
  const disk = await box.disks.create(body);
  assert.match(disk.id, /^disk_/);
  assert.equal((await box.disks.list()).length, 1);
  const seen = [];
  for await (const d of box.disks.iterate()) seen.push(d.id);
  assert.deepEqual(seen, [disk.id]);
  assert.equal((await box.disks.get("fid-disk")).id, disk.id);
  const rotated = await box.disks.rotateCredentials("fid-disk", { access_key: "AK2", secret_key: "SK2" });
  assert.equal(rotated.id, disk.id);

  // create-time disks: resolved by name, listed as SandboxDiskView
  const sb = await box.createSandbox({ shape: SHAPE, disks: [{ disk_id: "fid-disk", mount_path: "/mnt/data" }] });
  const listed = await sb.listDisks();
  assert.equal(listed.length, 1);
  assert.equal(listed[0].disk_id, disk.id);
  assert.equal(listed[0].name, "fid-disk");
  assert.equal(listed[0].kind, "s3");
  assert.equal(listed[0].config.bucket, "b1");
  assert.equal(listed[0].mount_status, "mounted");
  const it = [];
  for await (const d of sb.iterateDisks()) it.push(d.mount_path);
  assert.deepEqual(it, ["/mnt/data"]);
  // unknown, junk and another tenant's disks are refused
  const stranger = client("sdk-disk-stranger");
  for (const disks of [
    [{ disk_id: disk.id, mount_path: "/mnt/x" }],
    [{ disk_id: "disk_NOPE", mount_path: "/mnt/x" }],
    [{ mount_path: "/mnt/x" }],
    [{ disk_id: "fid-disk", mount_path: "relative" }],
    "junk",
  ]) {
    const who = disks[0]?.disk_id === disk.id ? stranger : box;
    await assert.rejects(who.createSandbox({ shape: SHAPE, disks }), CreateosSandboxValidationError);
  }
  assert.deepEqual((await stranger.whoami()).stats.total, 0);

  const sb2 = await box.createSandbox({ shape: SHAPE });
  assert.deepEqual(await sb2.attachDisk({ diskId: "fid-disk", mountPath: "/mnt/d", subPath: "sub" }), { ok: true });
  assert.equal((await sb2.listDisks())[0].sub_path, "sub");
  assert.deepEqual(await sb2.detachDisk({ diskId: "fid-disk", mountPath: "/mnt/d" }), { detached: true });
  await sb.destroy();
  await sb2.destroy();
  assert.deepEqual(await box.disks.delete(disk.id), { deleted: true });
});

test("templates: create, list, iterate, get, logs by attempt, follow, delete (no image: the build fails saying so)", async () => {
  // this suite's mock has no rootfs image: the build runs nothing and
  // ends failed with the reason; templates.test.mjs builds for real
  const box = client("sdk-tpl");
  const tpl = await box.templates.create({ name: "fid-tpl", dockerfile: "FROM nodeops/sandbox:debian\nRUN true\n" });
  assert.match(tpl.id, /^tpl_/);
  assert.equal(tpl.status, "pending");
  // neither in the catalog nor a template: refused
  await assert.rejects(box.createSandbox({ shape: SHAPE, rootfs: "no-such-tpl" }), CreateosSandboxValidationError);
  const events = [];
  for await (const ev of box.templates.followLogs(tpl.id)) events.push(ev);
  assert.deepEqual(events.at(-1), { final: true, status: "failed" });
  assert.ok(events.some((e) => /no rootfs image for base/.test(e.line ?? "")), JSON.stringify(events));
  const got = await box.templates.get(tpl.id, { include: "dockerfile" });
  assert.equal(got.status, "failed");
  assert.match(got.dockerfile, /FROM nodeops\/sandbox:debian/);
  assert.equal((await box.templates.list()).length, 1);
  const seen = [];
  for await (const t of box.templates.iterate()) seen.push(t.id);
  assert.deepEqual(seen, [tpl.id]);
  assert.match(await box.templates.logs(tpl.id), /build failed/);
  assert.match(await box.templates.logs(tpl.id, { attempt: 1 }), /build failed/);
  await assert.rejects(box.templates.logs(tpl.id, { attempt: 2 }), CreateosSandboxNotFoundError);
  // a failed template is no rootfs
  await assert.rejects(box.createSandbox({ shape: SHAPE, rootfs: "fid-tpl" }), CreateosSandboxValidationError);
  assert.deepEqual(await box.templates.delete(tpl.id), { ok: true });
});

// selfPause / selfDelete talk to 127.0.0.1:1029 from inside a guest: the
// SDK's own self.js is copied into a sandbox and run there with node.
// Issue 25: the TypeScript example 03 pattern — a dev server started in the
// guest, reached from the host through previewUrl() with the clients a user
// has (Node's fetch, curl, Python's urllib); ingress off refused at once.
// Issue 39: previewUrl() is https (as the live service's); each client is
// told the mock's CA (GET /_mock/ca) the way a user would: Node by
// NODE_EXTRA_CA_CERTS (read at its start, so a child node does the fetch),
// curl by --cacert, Python by SSL_CERT_FILE.
test("ingress: previewUrl() reaches a server in the guest from node fetch, curl and urllib", async () => {
  const box = client("sdk-ingress");
  const sb = await box.createSandbox({ shape: SHAPE, ingress_enabled: true });
  await sb.sh("mkdir -p /tmp/www && echo from-the-guest > /tmp/www/index.html");
  await sb.sh("cd /tmp/www && (python3 -m http.server 8000 >/dev/null 2>&1 &)");
  const url = sb.previewUrl(8000);
  assert.match(url, /^https:\/\/127\.0\.0\.1:\d+\//, "an https loopback URL every client resolves");
  const caRes = await fetch(`${baseUrl}/_mock/ca`, { headers: { "X-Mock-Admin-Token": ADMIN } });
  assert.equal(caRes.status, 200);
  const caDir = mkdtempSync(join(tmpdir(), "sdk-ingress-ca-"));
  const caFile = join(caDir, "ca.pem");
  writeFileSync(caFile, await caRes.text());
  const run = (cmd, args, env = {}) =>
    new Promise((resolve, reject) =>
      execFile(cmd, args, { timeout: 60_000, env: { ...process.env, ...env } }, (err, stdout, stderr) =>
        err ? reject(new Error(`${cmd}: ${err.message} ${stderr}`)) : resolve(stdout),
      ),
    );
  // Node's fetch in a process started with the CA: status and body
  const nodeFetch = async (u) =>
    JSON.parse(
      await run(
        process.execPath,
        ["-e", "fetch(process.argv[1]).then(async (r) => console.log(JSON.stringify([r.status, await r.text()])))", u],
        { NODE_EXTRA_CA_CERTS: caFile },
      ),
    );
  let res;
  for (const end = Date.now() + 60_000; ; ) {
    res = await nodeFetch(url); // the server is starting: 502 until it listens
    if (res[0] !== 502 || Date.now() > end) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(res, [200, "from-the-guest\n"]);
  // this process was not told the CA: its fetch refuses the ingress's leaf
  await assert.rejects(fetch(url), (e) => e.cause?.code === "UNABLE_TO_VERIFY_LEAF_SIGNATURE");
  // the examples append a path: no trailing slash to double it (the C test
  // test_api_ingress reads the raw target the guest's server receives)
  assert.ok(!url.endsWith("/"), url);
  assert.deepEqual(await nodeFetch(url + "/index.html"), [200, "from-the-guest\n"]);
  assert.equal(await run("curl", ["-sS", "--fail", "--cacert", caFile, url]), "from-the-guest\n");
  assert.equal(
    await run(
      "python3",
      ["-c", "import sys,urllib.request;sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())", url],
      { SSL_CERT_FILE: caFile },
    ),
    "from-the-guest\n",
  );
  await sb.setIngress(false);
  assert.throws(() => sb.previewUrl(8000), /No ingress URL/);
  assert.equal((await nodeFetch(url))[0], 404, "ingress off: refused at once");
  rmSync(caDir, { recursive: true, force: true });
  await sb.destroy();
});

// Issue 25, item 6: example 12's network name (26 characters) is accepted.
test("networks: a 26-character name as the vendor's example 12 sends", async () => {
  const box = client("sdk-net-name");
  const name = `radicle-mesh-${Date.now()}`;
  assert.equal(name.length, 26);
  const net = await box.networks.create({ name });
  assert.equal(net.name, name);
  assert.deepEqual(await box.networks.delete(net.id), { ok: true });
});

test("self-signal helpers from inside a guest", async () => {
  const box = client("sdk-self");
  const src = readFileSync(join(F.DIST, "self.js"));
  const run = (sb, fn) =>
    sb.runCommand("node", ["-e", `import("/workspace/self.mjs").then((m) => m.${fn}("fidelity")).then(() => console.log("ok"))`], {
      timeoutMs: 90_000, // node's start in the guest, then the pause it asks for
    });

  const sb = await box.createSandbox({ shape: SHAPE });
  await sb.files.upload("/workspace/self.mjs", src);
  const pausing = run(sb, "selfPause");
  await sb.waitUntilPaused({ timeoutMs: 60_000 });
  await sb.resume();
  const res = await pausing;
  assert.equal(res.result.stdout, "ok\n", JSON.stringify(res.result));
  F.markCalled("selfPause");

  const sb2 = await box.createSandbox({ shape: SHAPE });
  await sb2.files.upload("/workspace/self.mjs", src);
  await run(sb2, "selfDelete").catch(() => {}); // the guest dies with its sandbox
  await sb2.waitUntilDestroyed({ timeoutMs: 60_000 });
  F.markCalled("selfDelete");
  await sb.destroy();
});

// Issue 25 items 1-2: the guest's one filesystem, as the SDK's examples use
// it (mock-api/CONTAINMENT.md "The guest's disk").
test("one writable filesystem: upload anywhere, exec reads it, exec writes the root, the API reads it back", async () => {
  const box = client("sdk-fs");
  const sb = await box.createSandbox({ shape: "s-1vcpu-1gb", name: "sdk-fs" });
  await sb.files.upload("/root/seed.txt", new TextEncoder().encode("seed\n"));
  await sb.files.upload("/srv/index.html", new TextEncoder().encode("<h1>hi</h1>\n"));
  const cat = await sb.runCommand("cat", ["/root/seed.txt", "/srv/index.html"]);
  assert.equal(cat.result.stdout, "seed\n<h1>hi</h1>\n");
  const w = await sb.sh(
    "mkdir -p /srv/app /opt/tool /var/log/app && echo made > /srv/app/x && echo r > /root/notes && " +
      "echo log >> /var/log/app/a.log && echo $HOME",
  );
  assert.equal(w.result.exit_code, 0, w.result.stderr);
  assert.equal(w.result.stdout, "/root\n");
  const dec = new TextDecoder();
  assert.equal(dec.decode(await sb.files.download("/srv/app/x")), "made\n");
  assert.equal(dec.decode(await sb.files.download("/root/notes")), "r\n");
  assert.match(dec.decode(await sb.files.download("/etc/os-release")), /^ID=/m);
  // another sandbox never sees it; the host's system files stay read-only
  const other = await box.createSandbox({ shape: "s-1vcpu-1gb", name: "sdk-fs-other" });
  await assert.rejects(other.files.download("/root/notes"), CreateosSandboxNotFoundError);
  const seen = await other.sh("test -e /root/notes -o -e /srv/app/x && echo SEES; echo x > /usr/bin/sdk-probe || echo RO");
  assert.equal(seen.result.stdout, "RO\n");
  await other.destroy();
  await sb.destroy();
});

test("fidelity: every SDK method called, every answer matches its declared type", () => {
  const r = F.report();
  console.log(
    `fidelity: ${r.methods.length} public methods, ${r.methods.length - r.never.length} called; ` +
      `${r.responses} responses checked; schemas generated in ${F.schemaMs} ms; never called: ${r.never.join(", ") || "none"}`,
  );
  assert.deepEqual(r.mismatches, [], `answers that break the SDK's types:\n${r.mismatches.join("\n")}`);
  assert.deepEqual(r.never, [], `SDK methods the suite never calls: ${r.never.join(", ")}`);
});

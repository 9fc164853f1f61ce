// Template builds that build (issue 37 item 2), through the TypeScript SDK:
// templates.create answers pending, followLogs streams the build's lines
// up to the final event, and a sandbox booted with rootfs = the template
// sees what its RUN wrote; a failing RUN ends failed with its log; COPY is
// refused, and so is the base of the SDK's reference example; the build
// limits hold; deleting a template leaves the sandboxes on it as they are
// (the SDK: "Existing sandboxes built from it are unaffected").
//
// Needs the devbox:1 image (mock-api/IMAGES.md): without it (or without
// a copy this user may use) it exits 77, which ctest reports as skipped.
// Usage: node --test templates.test.mjs   (SBX_MOCK_BIN=/path/to/sbx-mock)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import {
  CreateosSandboxClient,
  CreateosSandboxPermissionError,
  CreateosSandboxServerError,
  CreateosSandboxValidationError,
} from "@nodeops-createos/sandbox";
import { startMock } from "./mock.mjs";

const ADMIN = "tpl-admin-token";
const SHAPE = "s-1vcpu-1gb";
const STORE = process.env.SBX_IMAGE_STORE ?? "/var/cache/sbx-harness/images";
const DOCKERFILE = "FROM nodeops/sandbox:debian\nRUN echo built-by-run > /etc/marker\n";
let mock;
let baseUrl;

if (!existsSync(`${STORE}/index`)) {
  console.log(`SKIP: no image store at ${STORE} (build devbox:1: mock-api/images/build-image devbox:1)`);
  process.exit(77);
}

function client(apiKey) {
  return new CreateosSandboxClient({ apiKey, baseUrl });
}

const admin = (...a) => mock.admin(...a);

async function follow(box, id) {
  const events = [];
  for await (const ev of box.templates.followLogs(id, { timeoutMs: 600_000 })) events.push(ev);
  return events;
}

before(async () => {
  mock = await startMock(["--self-listen", "127.0.0.1:0", "--admin-token", ADMIN, "--images", STORE]);
  baseUrl = mock.baseUrl;
  const images = await admin("GET", "/_mock/images");
  const devbox = images.images.find((i) => i.name === "devbox:1");
  if (!devbox || !devbox.usable) {
    console.log(`SKIP: devbox:1 is not usable here: ${devbox ? devbox.note : "not in the store"}`);
    await mock.stop();
    process.exit(77);
  }
});

after(async () => mock?.stop());

test("a RUN step builds a file a sandbox on the template sees", async () => {
  const box = client("tpl-build");
  const tpl = await box.templates.create({ name: "marker", dockerfile: DOCKERFILE });
  assert.notEqual(tpl.status, "ready", "the first answer is not ready");
  assert.equal(tpl.status, "pending");
  const events = await follow(box, tpl.id);
  assert.deepEqual(events.at(-1), { final: true, status: "ready" }, JSON.stringify(events));
  assert.ok(events.some((e) => /RUN echo built-by-run > \/etc\/marker/.test(e.line ?? "")));
  const got = await box.templates.get(tpl.id);
  assert.equal(got.status, "ready");
  assert.ok(got.built_at);
  assert.ok(got.ext4_size_bytes > 0);
  const sb = await box.createSandbox({ shape: SHAPE, rootfs: tpl.name });
  const out = await sb.runCommand("cat", ["/etc/marker"]);
  assert.equal(out.result.stdout, "built-by-run\n");
  // a sandbox of the base alone has no marker
  const plain = await box.createSandbox({ shape: SHAPE, rootfs: "devbox:1" });
  assert.notEqual((await plain.runCommand("test", ["-e", "/etc/marker"])).result.exit_code, 0);
  await plain.destroy();
  // deleting the template leaves the sandbox on it as it was; new
  // sandboxes can no longer name it
  assert.deepEqual(await box.templates.delete(tpl.id), { ok: true });
  assert.equal((await sb.runCommand("cat", ["/etc/marker"])).result.stdout, "built-by-run\n");
  await assert.rejects(box.createSandbox({ shape: SHAPE, rootfs: tpl.id }), CreateosSandboxValidationError);
  await sb.destroy();
});

// The layer is copied twice (the builder's to the template, the template's
// into each sandbox on it): what a RUN deleted, replaced, chowned or
// linked must come through both as the RUN left it.
test("deletions, an emptied directory, owners, modes, links and times of a RUN reach a sandbox", async () => {
  const box = client("tpl-attrs");
  const run = [
    "test -e /etc/issue && test -e /etc/skel/.bashrc", // the base has them
    "rm /etc/issue", // a whiteout
    "rm -rf /etc/skel && mkdir /etc/skel && touch /etc/skel/only", // an opaque directory
    "mkdir -p /opt/t && cd /opt/t && echo data > owned && chown 1234:5678 owned && chmod 4750 owned",
    "echo same > a && ln a b && ln -s a sym && mkfifo fifo && touch -d @1000000000 old",
  ].join(" && ");
  const tpl = await box.templates.create({ name: "attrs", dockerfile: `FROM nodeops/sandbox:debian\nRUN ${run}\n` });
  const events = await follow(box, tpl.id);
  assert.deepEqual(events.at(-1), { final: true, status: "ready" }, JSON.stringify(events));
  const sb = await box.createSandbox({ shape: SHAPE, rootfs: tpl.id });
  const check = "test -e /etc/issue && echo issue-back; ls -A /etc/skel; cd /opt/t && " +
    "stat -c '%u:%g %a' owned && cat owned && stat -c %h a && " +
    "test \"$(stat -c %i a)\" = \"$(stat -c %i b)\" && echo linked; readlink sym; " +
    "test -p fifo && echo fifo; stat -c %Y old";
  const out = await sb.runCommand("/bin/sh", ["-c", check]);
  assert.equal(out.result.stdout, "only\n1234:5678 4750\ndata\n2\nlinked\na\nfifo\n1000000000\n",
    out.result.stderr);
  await sb.destroy();
});

test("ENV, WORKDIR and the exec form of RUN reach the steps after them", async () => {
  const box = client("tpl-env");
  const tpl = await box.templates.create({
    name: "env",
    dockerfile: "FROM nodeops/sandbox:debian\nENV GREETING=\"hello there\"\nWORKDIR /opt/app\n" +
      "RUN echo \"$GREETING\" > greeting && pwd > where\nRUN [\"touch\", \"/opt/app/exec-form\"]\n",
  });
  assert.deepEqual((await follow(box, tpl.id)).at(-1), { final: true, status: "ready" });
  const sb = await box.createSandbox({ shape: SHAPE, rootfs: tpl.id });
  const out = await sb.runCommand("cat", ["/opt/app/greeting", "/opt/app/where", "/opt/app/exec-form"]);
  assert.equal(out.result.stdout, "hello there\n/opt/app\n");
  await sb.destroy();
});

// runuser in the cell: only a mock run as root maps other uids into its
// cells (TEMPLATES.md "A non-root USER on an unprivileged mock")
test("USER runs the steps after it as that account, WORKDIR's mkdir as root",
  { skip: process.getuid() !== 0 && "the mock runs unprivileged: its cells map only root" }, async () => {
    const box = client("tpl-user");
    const tpl = await box.templates.create({
      name: "user",
      dockerfile: "FROM nodeops/sandbox:debian\nUSER nobody\nRUN id -un\nWORKDIR /opt/nob\n" +
        "RUN [\"id\", \"-un\"]\nUSER root\nRUN id -un\n",
    });
    const events = await follow(box, tpl.id);
    const lines = events.map((e) => e.line ?? "");
    assert.deepEqual(events.at(-1), { final: true, status: "ready" }, lines.join("\n"));
    assert.deepEqual(lines.filter((l) => l === "nobody" || l === "root"), ["nobody", "nobody", "root"],
      lines.join("\n"));
  });

test("a failing RUN ends failed, with the step, its exit status and its log", async () => {
  const box = client("tpl-fail");
  const tpl = await box.templates.create({
    name: "fails",
    dockerfile: "FROM nodeops/sandbox:debian\nRUN echo before-the-failure; exit 7\nRUN echo never-runs\n",
  });
  assert.equal(tpl.status, "pending");
  const events = await follow(box, tpl.id);
  assert.deepEqual(events.at(-1), { final: true, status: "failed" });
  const lines = events.map((e) => e.line ?? "");
  assert.ok(lines.includes("before-the-failure"), lines.join("\n"));
  assert.ok(lines.some((l) => /step 1\/2 \(line 2\) RUN: exit status 7/.test(l)), lines.join("\n"));
  assert.ok(!lines.includes("never-runs"));
  assert.equal((await box.templates.get(tpl.id)).status, "failed");
  assert.match(await box.templates.logs(tpl.id), /before-the-failure/);
  await assert.rejects(box.createSandbox({ shape: SHAPE, rootfs: tpl.id }), CreateosSandboxValidationError);
});

test("COPY and ADD are refused at create", async () => {
  const box = client("tpl-copy");
  await assert.rejects(
    box.templates.create({ name: "copy", dockerfile: "FROM nodeops/sandbox:debian\nCOPY . /app\n" }),
    (e) => e instanceof CreateosSandboxValidationError && /COPY is not permitted/.test(e.message),
  );
  await assert.rejects(
    box.templates.create({ name: "add", dockerfile: "FROM nodeops/sandbox:debian\nADD x /x\n" }),
    CreateosSandboxValidationError,
  );
  assert.equal((await box.templates.list()).length, 0);
});

// The SDK's reference example of templates.create (its doc comment in
// dist/client.d.ts) builds FROM debian:trixie-slim; its how-to and the spec
// allow only an allow-listed base (nodeops/sandbox:debian). README.md, "SDK
// compatibility", says a user running that example meets this refusal.
test("the reference example's FROM debian:trixie-slim is refused, naming the allowed base", async () => {
  const box = client("tpl-ref-example");
  await assert.rejects(
    box.templates.create({ name: "my-devbox", dockerfile: "FROM debian:trixie-slim\nRUN apt-get update" }),
    (e) => e instanceof CreateosSandboxValidationError && e.statusCode === 400 &&
      /line 1: FROM debian:trixie-slim: not an allow-listed base image \(allowed: nodeops\/sandbox:debian\)/
        .test(e.message),
  );
  assert.equal((await box.templates.list()).length, 0);
});

test("a build's time, disk and memory limits end it failed", async () => {
  const box = client("tpl-limits");
  await admin("PUT", "/_mock/settings", { template_build_timeout_s: 2, template_build_disk_mib: 16 });
  try {
    const slow = await box.templates.create({ name: "slow", dockerfile: "FROM nodeops/sandbox:debian\nRUN sleep 30\n" });
    const se = await follow(box, slow.id);
    assert.deepEqual(se.at(-1), { final: true, status: "failed" });
    assert.ok(se.some((e) => /time limit/.test(e.line ?? "")), JSON.stringify(se));
    const big = await box.templates.create({
      name: "big",
      dockerfile: "FROM nodeops/sandbox:debian\nRUN head -c 64M /dev/zero > /big\n",
    });
    const be = await follow(box, big.id);
    assert.deepEqual(be.at(-1), { final: true, status: "failed" });
    assert.ok(be.some((e) => /No space left on device/.test(e.line ?? "")), JSON.stringify(be));
  } finally {
    await admin("PUT", "/_mock/settings", { template_build_timeout_s: 900, template_build_disk_mib: 4096 });
  }
  await admin("PUT", "/_mock/settings", { template_build_mem_mib: 64 });
  try {
    const hog = await box.templates.create({
      name: "hog",
      dockerfile: "FROM nodeops/sandbox:debian\nRUN python3 -c \"b = bytearray(512 * 1024 * 1024); print(len(b))\"\n",
    });
    const he = await follow(box, hog.id);
    assert.deepEqual(he.at(-1), { final: true, status: "failed" }, JSON.stringify(he));
  } finally {
    await admin("PUT", "/_mock/settings", { template_build_mem_mib: 2048 });
  }
});

// GET /v1/metrics with key: the tenant's usage (the SDK does not model it).
async function usage(apiKey) {
  const res = await fetch(`${baseUrl}/v1/metrics`, { headers: { "X-Api-Key": apiKey } });
  assert.equal(res.status, 200);
  return (await res.json()).data;
}

test("builds count to their tenant and to the mock; a create over a cap is refused", async () => {
  const a = client("tpl-cap-a");
  const b = client("tpl-cap-b");
  const c = client("tpl-cap-c");
  // a step that holds the build until its template is deleted
  const hold = "FROM nodeops/sandbox:debian\nRUN sleep 600\n";
  await admin("PUT", "/_mock/settings", { template_build_cap: 1, template_build_cap_global: 2 });
  try {
    const a1 = await a.templates.create({ name: "a1", dockerfile: hold });
    assert.equal((await usage("tpl-cap-a")).template_builds.total, 1);
    assert.equal((await usage("tpl-cap-b")).template_builds.total, 0, "another tenant's build is not b's");
    await assert.rejects(
      a.templates.create({ name: "a2", dockerfile: hold }),
      (e) => e instanceof CreateosSandboxPermissionError && /concurrent template build limit reached \(1 per key/.test(e.message),
    );
    assert.equal((await a.templates.list()).length, 1, "a refused create makes no template");
    // b has a cap of its own; its build and a's fill the mock's
    const b1 = await b.templates.create({ name: "b1", dockerfile: hold });
    await assert.rejects(
      c.templates.create({ name: "c1", dockerfile: hold }, { retry: false }),
      (e) => e instanceof CreateosSandboxServerError && e.statusCode === 503 && /2 builds across all keys/.test(e.message),
    );
    // deleting a template ends its build: it no longer counts
    await a.templates.delete(a1.id);
    assert.equal((await usage("tpl-cap-a")).template_builds.total, 0);
    const c1 = await c.templates.create({ name: "c1", dockerfile: hold });
    await b.templates.delete(b1.id);
    await c.templates.delete(c1.id);
    // a build that ended (ready) no longer counts either
    const quick = await a.templates.create({ name: "quick", dockerfile: DOCKERFILE });
    assert.deepEqual((await follow(a, quick.id)).at(-1), { final: true, status: "ready" });
    const again = await a.templates.create({ name: "again", dockerfile: DOCKERFILE });
    assert.deepEqual((await follow(a, again.id)).at(-1), { final: true, status: "ready" });
    await a.templates.delete(quick.id);
    await a.templates.delete(again.id);
  } finally {
    await admin("PUT", "/_mock/settings", { template_build_cap: 4, template_build_cap_global: 8 });
  }
});

test("a durable mock keeps a ready template across a restart; a build it was running ends failed", async () => {
  const dir = mkdtempSync(join(tmpdir(), "sbx-tpl-state-"));
  const args = ["--self-listen", "127.0.0.1:0", "--admin-token", ADMIN, "--images", STORE, "--state-dir", dir];
  let first = await startMock(args);
  let second;
  try {
    let box = new CreateosSandboxClient({ apiKey: "tpl-durable", baseUrl: first.baseUrl });
    const held = await box.templates.create({ name: "held", dockerfile: "FROM nodeops/sandbox:debian\nRUN sleep 600\n" });
    // the last change before the stop is a build's end, which no request
    // acknowledges: the mock must have logged it itself
    const ready = await box.templates.create({ name: "kept", dockerfile: DOCKERFILE });
    assert.deepEqual((await follow(box, ready.id)).at(-1), { final: true, status: "ready" });
    await first.stop();
    first = undefined;

    second = await startMock(args);
    box = new CreateosSandboxClient({ apiKey: "tpl-durable", baseUrl: second.baseUrl });
    const kept = await box.templates.get("kept");
    assert.equal(kept.id, ready.id);
    assert.equal(kept.status, "ready");
    assert.ok(kept.built_at && kept.ext4_size_bytes > 0, JSON.stringify(kept));
    const sb = await box.createSandbox({ shape: SHAPE, rootfs: "kept" });
    assert.equal((await sb.runCommand("cat", ["/etc/marker"])).result.stdout, "built-by-run\n");
    await sb.destroy();
    const lost = await box.templates.get(held.id);
    assert.equal(lost.status, "failed");
    const events = await follow(box, held.id);
    assert.deepEqual(events.at(-1), { final: true, status: "failed" });
    assert.ok(
      events.some((e) => /build failed: the mock restarted during the build/.test(e.line ?? "")),
      JSON.stringify(events),
    );
    // not counted any more: the tenant's build cap is free
    assert.equal((await fetch(`${second.baseUrl}/v1/metrics`, { headers: { "X-Api-Key": "tpl-durable" } })
      .then((r) => r.json())).data.template_builds.total, 0);
  } finally {
    await first?.stop();
    await second?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a reset and, when not durable, a stop remove the templates' layers", async () => {
  const tmp = mkdtempSync(join(tmpdir(), "sbx-tpl-tmp-"));
  const saved = process.env.TMPDIR;
  const savedRun = process.env.XDG_RUNTIME_DIR;
  const run = mkdtempSync(join(tmpdir(), "sbx-tpl-run-"));
  process.env.TMPDIR = tmp; // its work dir goes below it
  // and its runtime directory elsewhere: without XDG_RUNTIME_DIR it would
  // be ${TMPDIR}/sbx-harness-UID, one more entry in tmp
  process.env.XDG_RUNTIME_DIR = run;
  let other;
  try {
    other = await startMock(["--images", STORE, "--admin-token", ADMIN]);
    const [work] = readdirSync(tmp);
    const layers = () => (existsSync(join(tmp, work, "templates")) ? readdirSync(join(tmp, work, "templates")) : []);
    const box = new CreateosSandboxClient({ apiKey: "tpl-leak", baseUrl: other.baseUrl });
    const first = await box.templates.create({ name: "reset", dockerfile: DOCKERFILE });
    assert.deepEqual((await follow(box, first.id)).at(-1), { final: true, status: "ready" });
    assert.deepEqual(layers(), [first.id]);
    await other.admin("POST", "/_mock/reset", {});
    assert.deepEqual(layers(), [], "a reset takes the templates and their layers");
    const tpl = await box.templates.create({ name: "gone", dockerfile: DOCKERFILE });
    assert.deepEqual((await follow(box, tpl.id)).at(-1), { final: true, status: "ready" });
    assert.deepEqual(layers(), [tpl.id]);
    await other.stop();
    other = undefined;
    assert.deepEqual(readdirSync(tmp), [], "the work dir and the layer in it are gone");
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
    if (savedRun === undefined) delete process.env.XDG_RUNTIME_DIR;
    else process.env.XDG_RUNTIME_DIR = savedRun;
    await other?.stop();
    rmSync(tmp, { recursive: true, force: true });
    rmSync(run, { recursive: true, force: true });
  }
});

// Record once, replay offline, through the TypeScript SDK (issue 47, done
// when 2; mock-api/INTERNET.md "Record and replay the guests' internet"):
// in a devbox:1 sandbox of a mock started with --internet-record,
// `apt-get install`, `pip install`, `npm install` and `git clone` reach the
// upstreams of mock-api/tests/cassette_upstreams.py (a network namespace of
// their own, behind a CA of their own) through the mock's verified way
// out; then the upstreams and that mock stop, and in a fresh mock with
// --internet-replay the same four installs succeed offline in a fresh
// sandbox, and the installed files (read back with files.download) have
// the same sha256 as the recorded run's.
//
// Needs root (the upstreams' namespace), ip(8) and a usable devbox:1:
// exits 77 otherwise (ctest: skipped), 1 under CI=true (CI builds the
// image and runs as root, so a skip there would hide a failure).
// Usage: node cassette.test.mjs   (SBX_MOCK_BIN=/path/to/sbx-mock)
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { CreateosSandboxClient } from "@nodeops-createos/sandbox";
import { startMock } from "./mock.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const UPSTREAMS = join(HERE, "..", "..", "mock-api", "tests", "cassette_upstreams.py");
const STORE = process.env.SBX_IMAGE_STORE ?? "/var/cache/sbx-harness/images";
const SHAPE = "s-1vcpu-1gb";
const ADMIN = "cassette-admin";

function skip(why) {
  if (process.env.CI === "true") {
    console.log(`FAIL: skipped under CI=true: ${why}`);
    process.exit(1);
  }
  console.log(`SKIP: ${why}`);
  process.exit(77);
}

if (process.getuid() !== 0) skip("needs root for the upstreams' network namespace (ip netns)");
if (spawnSync("ip", ["-V"]).status !== 0) skip("needs ip(8) for the upstreams' network namespace");
if (!existsSync(join(STORE, "index")) || !readFileSync(join(STORE, "index"), "utf8").split(/\s+/).includes("devbox:1")) {
  skip(`no devbox:1 in ${STORE} (mock-api/images/build-image devbox:1)`);
}

// The four installs, each its own SDK call, and the files they leave.
const SOURCES =
  "deb [trusted=yes] http://deb.test/debian stable main\n" +
  "deb [trusted=yes] https://deb.test/debian-s stable main\n";
const INSTALLS = [
  ["apt", "rm -f /etc/apt/sources.list /etc/apt/sources.list.d/* && " +
    "mv /tmp/cassette.list /etc/apt/sources.list.d/cassette.list && " +
    "apt-get -o Acquire::Languages=none update -q && apt-get install -y -q sbx-hello sbx-hello-s"],
  ["pip", "pip install -q --break-system-packages --no-cache-dir --disable-pip-version-check " +
    "--index-url https://pypi.test/simple sbx-hello-py"],
  ["npm", "mkdir -p /tmp/p && cd /tmp/p && npm install --registry https://npm.test/ --no-audit --no-fund " +
    "--cache /tmp/npmcache sbx-hello-npm"],
  ["git", "git clone -q https://git.test/repo.git /tmp/clone"],
];
// (where pip put its module is the guest's python3's to say)
const FILES = ["/usr/bin/sbx-hello", "/usr/bin/sbx-hello-s", "/tmp/p/node_modules/sbx-hello-npm/index.js",
  "/tmp/clone/README"];
const PY_MODULE = "python3 -c 'import sbx_hello_py; print(sbx_hello_py.__file__)'";

let tmp;
let upstreams;

// cassette_upstreams.py --serve: its JSON line once it is up; it stops on
// SIGTERM (or when our end of its stdin closes, should this process die).
async function startUpstreams(dir) {
  const proc = spawn("python3", [UPSTREAMS, "--serve", dir], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: proc.stdout });
  const info = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("cassette_upstreams.py did not print its JSON line")), 120_000);
    proc.once("exit", (code) => reject(new Error(`cassette_upstreams.py exited early (${code})`)));
    lines.once("line", (line) => {
      clearTimeout(timer);
      resolve(JSON.parse(line));
    });
  });
  async function stop() {
    if (proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once("exit", resolve));
    proc.kill("SIGTERM");
    assert.equal(await exited, 0, "cassette_upstreams.py exits 0 on SIGTERM");
  }
  return { info, stop };
}

// Runs the installs in a fresh devbox:1 sandbox of the mock at baseUrl:
// {file: sha256} of what they installed, read back through files.download.
async function installAll(baseUrl, apiKey) {
  const box = new CreateosSandboxClient({ apiKey, baseUrl });
  const sb = await box.createSandbox({ shape: SHAPE, rootfs: "devbox:1" });
  try {
    await sb.files.upload("/tmp/cassette.list", SOURCES);
    for (const [label, script] of INSTALLS) {
      const { result } = await sb.runCommand("bash", ["-c", `${script} 2>&1`], { timeoutMs: 600_000 });
      assert.equal(result.exit_code, 0, `${label} in ${baseUrl}: ${script}\n${result.stdout}${result.stderr}`);
    }
    const { result: py } = await sb.runCommand("bash", ["-c", PY_MODULE]);
    assert.equal(py.exit_code, 0, `the pip-installed module imports: ${py.stderr}`);
    const sums = {};
    for (const f of [...FILES, py.stdout.trim()]) {
      sums[f] = createHash("sha256").update(Buffer.from(await sb.files.download(f))).digest("hex");
    }
    return sums;
  } finally {
    await sb.destroy();
  }
}

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "sbx-sdk-cassette-"));
  chmodSync(tmp, 0o755);
});

after(async () => {
  await upstreams?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test("apt, pip, npm and git clone recorded in one mock install offline in another, byte-identical", async () => {
  const up = join(tmp, "upstreams");
  const cassette = join(tmp, "sdk.cassette");
  mkdirSync(up, { mode: 0o755 });
  upstreams = await startUpstreams(up);
  const rec = await startMock(["--self-listen", "off", "--admin-token", ADMIN, "--images", STORE,
    "--internet-record", cassette, ...upstreams.info.record_flags]);
  let recorded;
  try {
    recorded = await installAll(rec.baseUrl, "sdk-cassette-rec");
    const via = new Set((await rec.admin("GET", "/_mock/internet/journal")).entries
      .filter((e) => upstreams.info.names.includes(e.host)).map((e) => e.via));
    assert.deepEqual([...via], ["record"], "every upstream request of the recording went through the recorder");
  } finally {
    await rec.stop();
    await upstreams.stop();
  }
  assert.ok(readFileSync(join(cassette, "cassette.jsonl"), "utf8").split("\n").length > 10,
    "the cassette holds the recorded exchanges");

  const rep = await startMock(["--self-listen", "off", "--admin-token", ADMIN, "--images", STORE,
    "--internet-replay", cassette]);
  try {
    const replayed = await installAll(rep.baseUrl, "sdk-cassette-rep");
    assert.deepEqual(replayed, recorded, "the replayed installs leave the same files, byte for byte");
    const entries = (await rep.admin("GET", "/_mock/internet/journal")).entries
      .filter((e) => upstreams.info.names.includes(e.host));
    assert.ok(entries.length > 0, "the replay's guest asked the cassette's hosts");
    const missed = entries.filter((e) => e.via !== "cassette" || e.status === 502);
    assert.deepEqual(missed, [], "every request of the replay was answered from the cassette");
  } finally {
    await rep.stop();
  }
});

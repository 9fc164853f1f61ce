// devbox:1 as the vendor's examples use it, through the SDK (issue 37):
// a sandbox on the rootfs image (mock-api/IMAGES.md) where apt/dpkg find
// their state, pip installs system-wide and npm -g puts a binary on PATH,
// as examples 07, 08, 41 and 42 of the TypeScript SDK's repository do in
// their first steps. Each install is the sandbox's own: a second sandbox
// does not see it.
//
// Usage: node --test images.test.mjs (SBX_MOCK_BIN=/path/to/sbx-mock;
// SBX_IMAGE_STORE, else build-image's default store). Without a devbox:1
// image every test is skipped, saying how to build one.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { CreateosSandboxClient } from "@nodeops-createos/sandbox";
import { startMock } from "./mock.mjs";

const STORE =
  process.env.SBX_IMAGE_STORE ??
  (process.getuid() === 0
    ? "/var/cache/sbx-harness/images"
    : join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "sbx-harness", "images"));
const SHAPE = "s-1vcpu-1gb";

function storeServesDevbox() {
  try {
    return readFileSync(join(STORE, "index"), "utf8").split(/\s+/).includes("devbox:1");
  } catch {
    return false;
  }
}
const skip = storeServesDevbox()
  ? false
  : `no devbox:1 image in ${STORE} (build it: mock-api/images/build-image devbox:1)`;

let mock;
let baseUrl;

before(async () => {
  if (skip) return;
  mock = await startMock(["--self-listen", "127.0.0.1:0", "--images", STORE]);
  baseUrl = mock.baseUrl;
});

after(async () => mock?.stop());

// sh() as the examples call it; a failing script fails the test with its output.
async function sh(sb, script) {
  const { result } = await sb.sh(script, { timeout_ms: 120_000 });
  assert.equal(result.exit_code, 0, `${script}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`);
  return result.stdout;
}

test("devbox:1: Debian's os-release and apt/dpkg state", { skip }, async () => {
  const box = new CreateosSandboxClient({ apiKey: "sdk-img-os", baseUrl });
  const sb = await box.createSandbox({ shape: SHAPE, rootfs: "devbox:1" });
  try {
    const osr = await sb.files.download("/etc/os-release");
    assert.match(Buffer.from(osr).toString(), /^ID=debian$/m);
    await sh(sb, "test -s /var/lib/dpkg/status && test -d /etc/apt && getent passwd _apt");
    // a package built in the guest installs with dpkg -i and with apt-get install ./x.deb
    await sh(
      sb,
      "set -e; cd /tmp; for p in sbxone sbxtwo; do mkdir -p $p/DEBIAN $p/usr/bin; " +
        "printf 'Package: %s\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: t <t@t>\\nDescription: t\\n' $p > $p/DEBIAN/control; " +
        "printf '#!/bin/sh\\necho %s-ran\\n' $p > $p/usr/bin/$p; chmod 755 $p/usr/bin/$p; dpkg-deb -b $p >/dev/null; done; " +
        "dpkg -i sbxone.deb >/dev/null; apt-get install -y -qq ./sbxtwo.deb >/dev/null",
    );
    assert.equal(await sh(sb, "sbxone; sbxtwo; dpkg -s sbxtwo | grep '^Status'"), "sbxone-ran\nsbxtwo-ran\nStatus: install ok installed\n");
  } finally {
    await sb.destroy();
  }
});

test("devbox:1: pip installs system-wide, npm -g puts its binary on PATH, each sandbox its own", { skip }, async () => {
  const box = new CreateosSandboxClient({ apiKey: "sdk-img-pkg", baseUrl });
  const sb = await box.createSandbox({ shape: SHAPE, rootfs: "devbox:1" });
  const other = await box.createSandbox({ shape: SHAPE, rootfs: "devbox:1" });
  try {
    await sb.files.upload("/tmp/sbxmod/pyproject.toml",
      '[project]\nname = "sbxmod"\nversion = "1.0"\n[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n');
    await sb.files.upload("/tmp/sbxmod/sbxmod.py", 'def hello():\n    return "sbxmod-hello"\n');
    await sh(sb, "cd /tmp && pip install --no-index --no-build-isolation -q ./sbxmod");
    assert.equal(await sh(sb, "cd / && python3 -c 'import sbxmod; print(sbxmod.hello())'"), "sbxmod-hello\n");
    await sb.files.upload("/tmp/sbxcli/package.json",
      JSON.stringify({ name: "sbxcli", version: "1.0.0", bin: { sbxcli: "cli.js" } }));
    await sb.files.upload("/tmp/sbxcli/cli.js", "#!/usr/bin/env node\nconsole.log('sbxcli-ran');\n");
    await sh(sb, "cd /tmp/sbxcli && npm pack -q >/dev/null && npm install -g -q --offline ./sbxcli-1.0.0.tgz >/dev/null");
    assert.equal(await sh(sb, "sbxcli"), "sbxcli-ran\n");
    // the installs are in sb's own layer
    const { result } = await other.sh("python3 -c 'import sbxmod' 2>/dev/null || echo absent; command -v sbxcli || echo absent");
    assert.equal(result.stdout, "absent\nabsent\n");
  } finally {
    await sb.destroy();
    await other.destroy();
  }
});

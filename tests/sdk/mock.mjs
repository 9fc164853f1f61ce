// The sbx-mock every SDK test file drives: started on an ephemeral
// loopback port (its first stdout line gives the URL), stopped with
// SIGTERM (it must exit 0), and its admin API with the token it was given.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import assert from "node:assert/strict";

export const BIN = process.env.SBX_MOCK_BIN ?? process.argv[2];

// args: sbx-mock's flags besides --listen and --quiet (with --admin-token
// T, admin() sends T). Nothing about images is added: without --images or
// --no-images sbx-mock uses the default image store when it holds images
// (mock-api/IMAGES.md), so a suite that checks the host skeleton's
// behaviour says --no-images itself.
export async function startMock(args = []) {
  assert.ok(BIN, "set SBX_MOCK_BIN (or pass the sbx-mock path as argv[2])");
  const proc = spawn(BIN, ["--listen", "127.0.0.1:0", ...args, "--quiet"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: proc.stdout });
  const baseUrl = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("sbx-mock did not print its URL")), 30_000);
    proc.once("exit", (code) => reject(new Error(`sbx-mock exited early (${code})`)));
    lines.on("line", (line) => {
      const m = /^sbx-mock listening on (http:\/\/\S+)$/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  const token = args.includes("--admin-token") ? args[args.indexOf("--admin-token") + 1] : undefined;

  async function admin(method, path, body) {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { "X-Mock-Admin-Token": token, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    assert.equal(res.status, 200, `admin ${method} ${path}: ${JSON.stringify(json)}`);
    return json.data;
  }

  async function journal(tenant, method, path) {
    const q = new URLSearchParams({ tenant, method, path });
    return (await admin("GET", `/_mock/journal?${q}`)).entries;
  }

  async function stop() {
    if (proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once("exit", resolve));
    proc.kill("SIGTERM");
    assert.equal(await exited, 0, "sbx-mock exits 0 on SIGTERM");
  }

  return { baseUrl, admin, journal, stop };
}

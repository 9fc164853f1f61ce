// Documented control-plane errors as real clients see them (issue 40):
// early 413s read by clients that send their body without
// Expect: 100-continue (Node's fetch, the SDK), and the scenario files of
// fixtures/scenarios/ that reproduce error situations, each read through
// the SDK 0.7.1: error class, code, request id and the retries it makes
// (counted in the mock's journal: what was really sent).
//
// Usage: node --test errors.test.mjs   (SBX_MOCK_BIN=/path/to/sbx-mock)
import { test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";

import {
  CreateosSandboxClient,
  CreateosSandboxApiError,
  CreateosSandboxServerError,
  CreateosSandboxValidationError,
} from "@nodeops-createos/sandbox";
import { startMock } from "./mock.mjs";

const ADMIN = "sdk-errors-admin";
const MAX_BODY = 1024 * 1024; // the mock's default --max-body
const MAX_FILE = 64 * 1024 * 1024; // and --max-file-body
const TOO_LARGE = `request body is over the ${MAX_BODY}-byte limit`;
let mock;
let baseUrl;

const admin = (...a) => mock.admin(...a);

const journal = (...a) => mock.journal(...a);

before(async () => {
  mock = await startMock(["--admin-token", ADMIN]);
  baseUrl = mock.baseUrl;
});

after(async () => mock?.stop());

beforeEach(async () => {
  await admin("POST", "/_mock/reset");
});

// Small backoff: the retry count is what is checked, not the delays.
const client = (apiKey) =>
  new CreateosSandboxClient({ apiKey, baseUrl, retry: { baseDelayMs: 5, maxDelayMs: 20 } });

async function loadScenario(name) {
  await admin("POST", "/_mock/scenario", { name });
}

function assertTooLarge(json) {
  assert.deepEqual(json, { status: "fail", data: { body: TOO_LARGE, code: "PAYLOAD_TOO_LARGE" } });
}

test("Node's fetch reads the 413 for a declared body 2 MiB over the limit", async () => {
  const body = JSON.stringify({ shape: "s-1vcpu-256mb", pad: "x".repeat(MAX_BODY + 2 * 1024 * 1024) });
  const res = await fetch(`${baseUrl}/v1/sandboxes`, {
    method: "POST",
    headers: { "X-Api-Key": "fetch413", "Content-Type": "application/json" },
    body,
  });
  assert.equal(res.status, 413);
  assert.equal(res.headers.get("connection"), "close");
  assertTooLarge(await res.json());
  assert.equal((await journal("fetch413", "POST", "/v1/sandboxes")).length, 1);
});

test("Node's fetch reads the 413 for a streamed (chunked) body far over the limit", async () => {
  const piece = new TextEncoder().encode(" ".repeat(64 * 1024));
  let sent = 0;
  const stream = new ReadableStream({
    pull(ctl) {
      // 8 MiB in all: past the limit and the 1 MiB read on after it
      if (sent >= 8 * 1024 * 1024) return ctl.close();
      sent += piece.length;
      ctl.enqueue(piece);
    },
  });
  const res = await fetch(`${baseUrl}/v1/sandboxes`, {
    method: "POST",
    headers: { "X-Api-Key": "chunk413", "Content-Type": "application/json" },
    body: stream,
    duplex: "half",
  });
  assert.equal(res.status, 413);
  assertTooLarge(await res.json());
});

test("SDK: a create 2 MiB over the limit throws the API error 413 with the mock's message, sent once", async () => {
  const err = await client("sdk413")
    .createSandbox({ shape: "s-1vcpu-256mb", env: { PAD: "x".repeat(MAX_BODY + 2 * 1024 * 1024) } })
    .then(() => assert.fail("the create succeeded"), (e) => e);
  assert.ok(err instanceof CreateosSandboxApiError, `not an API error: ${err?.name}: ${err?.message} (cause ${err?.cause})`);
  assert.equal(err.statusCode, 413);
  assert.equal(err.code, "PAYLOAD_TOO_LARGE");
  assert.ok(err.message.includes(TOO_LARGE), err.message);
  assert.match(err.requestId, /^req_/);
  assert.equal((await journal("sdk413", "POST", "/v1/sandboxes")).length, 1);
});

test("SDK: a 100 MiB upload over the file limit gets its 413 and is sent once", async () => {
  const c = client("up413");
  const sb = await c.createSandbox({ shape: "s-1vcpu-256mb" });
  const err = await sb.files
    .upload("/tmp/big.bin", new Uint8Array(100 * 1024 * 1024))
    .then(() => assert.fail("the upload succeeded"), (e) => e);
  assert.ok(err instanceof CreateosSandboxApiError, `not an API error: ${err?.name}: ${err?.message} (cause ${err?.cause})`);
  assert.equal(err.statusCode, 413);
  assert.equal(err.code, "PAYLOAD_TOO_LARGE");
  assert.ok(err.message.includes(`over the ${MAX_FILE}-byte limit`), err.message);
  const puts = await journal("up413", "PUT", `/v1/sandboxes/${sb.id}/files`);
  assert.deepEqual(puts.map((e) => e.status), [413], "one PUT, answered 413 (no retry)");
});

test("scenario gateway-html-page: ServerError 502, no envelope, code or request id; a GET is retried", async () => {
  await loadScenario("gateway-html-page");
  const err = await client("gw").listSandboxes().then(() => assert.fail("listed"), (e) => e);
  assert.ok(err instanceof CreateosSandboxServerError, `${err?.name}: ${err?.message}`);
  assert.equal(err.statusCode, 502);
  assert.equal(err.envelope, undefined);
  assert.equal(err.code, undefined);
  assert.equal(err.requestId, undefined);
  assert.equal(err.message, "createos-sandbox request failed with 502.");
  assert.equal((await journal("gw", "GET", "/v1/sandboxes")).length, 3, "default maxRetries 2");
});

test("scenario fail-null-data: ValidationError 422, no code, generic message, not retried", async () => {
  await loadScenario("fail-null-data");
  const err = await client("nulldata")
    .createSandbox({ shape: "s-1vcpu-256mb" })
    .then(() => assert.fail("created"), (e) => e);
  assert.ok(err instanceof CreateosSandboxValidationError, `${err?.name}: ${err?.message}`);
  assert.equal(err.statusCode, 422);
  assert.deepEqual(err.envelope, { status: "fail", data: null });
  assert.equal(err.code, undefined);
  assert.equal(err.message, "createos-sandbox request failed with 422.");
  assert.match(err.requestId, /^req_/);
  assert.equal((await journal("nulldata", "POST", "/v1/sandboxes")).length, 1);
});

test("scenario capacity-fail-code: ServerError 503 with code NO_CAPACITY, retried for a POST", async () => {
  await loadScenario("capacity-fail-code");
  const err = await client("capfail")
    .createSandbox({ shape: "s-1vcpu-256mb" })
    .then(() => assert.fail("created"), (e) => e);
  assert.ok(err instanceof CreateosSandboxServerError, `${err?.name}: ${err?.message}`);
  assert.equal(err.statusCode, 503);
  assert.equal(err.code, "NO_CAPACITY");
  assert.equal(
    err.message,
    "createos-sandbox request failed (503): error: no host with capacity, code: NO_CAPACITY",
  );
  assert.match(err.requestId, /^req_/);
  assert.equal((await journal("capfail", "POST", "/v1/sandboxes")).length, 3, "503: any method");
});

test("scenario fc-request-id-only: requestId from X-Fc-Request-Id, a GET 500 retried", async () => {
  const c = client("fcid");
  const sb = await c.createSandbox({ shape: "s-1vcpu-256mb" });
  await loadScenario("fc-request-id-only");
  const err = await c.getSandbox(sb.id).then(() => assert.fail("read"), (e) => e);
  assert.ok(err instanceof CreateosSandboxServerError, `${err?.name}: ${err?.message}`);
  assert.equal(err.statusCode, 500);
  assert.equal(err.requestId, "fc-7f3a9c01");
  assert.equal(err.code, undefined);
  assert.equal(err.message, "internal error");
  assert.equal((await journal("fcid", "GET", `/v1/sandboxes/${sb.id}`)).length, 3);
});

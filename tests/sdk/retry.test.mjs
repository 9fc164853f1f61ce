// The vendor SDK's retry behaviour, observed from the mock's side through
// the request journal (GET /_mock/journal): what was really sent, in which
// order, and when. Default client settings (maxRetries 2, 500 ms base
// backoff) unless a test says otherwise.
//
// Usage: node --test retry.test.mjs   (SBX_MOCK_BIN=/path/to/sbx-mock)
import { test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";

import {
  CreateosSandboxClient,
  CreateosSandboxServerError,
  CreateosSandboxConnectionError,
} from "@nodeops-createos/sandbox";
import { startMock } from "./mock.mjs";

const ADMIN = "sdk-retry-admin";
let mock;
let baseUrl;

const admin = (...a) => mock.admin(...a);

const journal = (...a) => mock.journal(...a);

before(async () => {
  mock = await startMock(["--self-listen", "127.0.0.1:0", "--admin-token", ADMIN]);
  baseUrl = mock.baseUrl;
});

after(async () => mock?.stop());

beforeEach(async () => {
  await admin("POST", "/_mock/reset");
});

const client = (apiKey) => new CreateosSandboxClient({ apiKey, baseUrl });

test("a 503 on a POST is retried (default policy) until it succeeds", async () => {
  await admin("POST", "/_mock/faults", {
    match: { method: "POST", path: "/v1/sandboxes" },
    fire: { times: 2 },
    action: { kind: "http", status: 503, message: "no capacity" },
  });
  const sb = await client("r503").createSandbox({ shape: "s-1vcpu-256mb" });
  assert.match(sb.id, /^sb-/);
  const posts = await journal("r503", "POST", "/v1/sandboxes");
  assert.deepEqual(posts.map((e) => e.status), [503, 503, 200]);
  // exactly one sandbox exists: the retries did not create extra ones
  const state = await admin("GET", "/_mock/sandboxes?tenant=r503");
  assert.equal(state.sandboxes.length, 1);
});

test("a 500 on a POST is not retried; a 500 on a GET is", async () => {
  await admin("POST", "/_mock/faults", {
    match: { method: "POST", path: "/v1/sandboxes" },
    fire: { times: 1 },
    action: { kind: "http", status: 500, message: "boom" },
  });
  const box = client("r500");
  await assert.rejects(box.createSandbox({ shape: "s-1vcpu-256mb" }), (e) => {
    assert.ok(e instanceof CreateosSandboxServerError, `got ${e?.constructor?.name}`);
    assert.equal(e.statusCode, 500);
    return true;
  });
  assert.deepEqual((await journal("r500", "POST", "/v1/sandboxes")).map((e) => e.status), [500]);

  const sb = await box.createSandbox({ shape: "s-1vcpu-256mb" });
  await admin("POST", "/_mock/faults", {
    match: { method: "GET", path: "/v1/sandboxes/{id}" },
    fire: { times: 1 },
    action: { kind: "http", status: 500 },
  });
  const got = await box.getSandbox(sb.id);
  assert.equal(got.id, sb.id);
  assert.deepEqual((await journal("r500", "GET", "/v1/sandboxes/{id}")).map((e) => e.status), [500, 200]);
});

test("Retry-After is honoured: the retry waits at least the announced delay", async () => {
  await admin("POST", "/_mock/faults", {
    match: { method: "POST", path: "/v1/sandboxes" },
    fire: { times: 1 },
    action: { kind: "http", status: 503, retry_after: 1 },
  });
  await client("rafter").createSandbox({ shape: "s-1vcpu-256mb" });
  const posts = await journal("rafter", "POST", "/v1/sandboxes");
  assert.deepEqual(posts.map((e) => e.status), [503, 200]);
  const gap = posts[1].ts_ms - posts[0].ts_ms;
  assert.ok(gap >= 1000, `retry came ${gap} ms after the 503 with Retry-After: 1`);

  // 429 too, for any method, with the header as digits
  await admin("POST", "/_mock/faults", {
    match: { method: "POST", path: "/v1/sandboxes/{id}/pause" },
    fire: { times: 1 },
    action: { kind: "http", status: 429, code: "RATE_LIMITED", retry_after: "1" },
  });
  const sb = await client("rafter").createSandbox({ shape: "s-1vcpu-256mb" });
  await sb.pause();
  const pauses = await journal("rafter", "POST", "/v1/sandboxes/{id}/pause");
  assert.deepEqual(pauses.map((e) => e.status), [429, 202]);
  assert.ok(pauses[1].ts_ms - pauses[0].ts_ms >= 1000, "429 retry honours Retry-After");
});

test("a connection reset is retried for GET, never for POST", async () => {
  await admin("POST", "/_mock/faults", {
    match: { method: "POST", path: "/v1/sandboxes" },
    fire: { times: 1 },
    action: { kind: "reset" },
  });
  const box = client("rnet");
  await assert.rejects(box.createSandbox({ shape: "s-1vcpu-256mb" }), CreateosSandboxConnectionError);
  assert.deepEqual((await journal("rnet", "POST", "/v1/sandboxes")).map((e) => e.status), [0]);

  await admin("POST", "/_mock/faults", {
    match: { method: "GET", path: "/v1/whoami" },
    fire: { times: 1 },
    action: { kind: "reset" },
  });
  const me = await box.whoami();
  assert.match(me.user_id, /\S/);
  assert.deepEqual((await journal("rnet", "GET", "/v1/whoami")).map((e) => e.status), [0, 200]);
});

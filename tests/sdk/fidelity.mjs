// Fidelity of the mock's answers to the SDK's declared types, made
// systematic (issue 15):
//
// - JSON Schemas are generated at test time from the installed SDK's
//   dist/types.d.ts (ts-json-schema-generator, pinned) and checked with ajv;
// - the SDK's public methods are enumerated from its declarations
//   (client.d.ts, sandbox.d.ts, self.d.ts: every class method, static
//   method and exported function, with its declared return type), and each
//   one is wrapped: its result is validated against the declared type, and
//   the call is counted (outermost SDK call only, so a method the SDK calls
//   internally does not count as tested);
// - every HTTP response the SDK receives (the client's `fetch`) is recorded
//   and validated by route: JSend envelope, then `data` against the type the
//   route's SDK method declares (list pages item by item, NDJSON line by line).
//
// `report()` returns the mismatches and the methods never called; the suite
// fails on either, so a new SDK version shows its differences as failures.
import { AsyncLocalStorage } from "node:async_hooks";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { createGenerator } from "ts-json-schema-generator";
import AjvModule from "ajv";
import * as SDK from "@nodeops-createos/sandbox";

const Ajv = AjvModule.default ?? AjvModule;
const require = createRequire(import.meta.url);
export const DIST = dirname(require.resolve("@nodeops-createos/sandbox/package.json")) + "/dist";

// ---- schemas from types.d.ts ----

const t0 = Date.now();
const generated = createGenerator({
  path: join(DIST, "types.d.ts"),
  type: "*",
  skipTypeCheck: true,
  expose: "export",
  additionalProperties: true, // the TS interfaces are open: extra fields are allowed
}).createSchema("*");
export const schemaMs = Date.now() - t0;
export const definitions = generated.definitions;
const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addSchema({ $id: "sdk", definitions }, "sdk");
const validators = new Map();
function validatorFor(type) {
  if (!validators.has(type)) {
    validators.set(type, definitions[type] ? ajv.compile({ $ref: `sdk#/definitions/${type}` }) : null);
  }
  return validators.get(type);
}

// ---- public methods from the declarations ----

function classBodies(src) {
  const out = [];
  const re = /export declare class (\w+)[^{]*\{/g;
  let m;
  while ((m = re.exec(src))) {
    let depth = 1;
    let i = re.lastIndex;
    for (; i < src.length && depth > 0; i++) {
      if (src[i] === "{") depth++;
      else if (src[i] === "}") depth--;
    }
    let body = src.slice(re.lastIndex, i - 1).replace(/\/\*[\s\S]*?\*\//g, "");
    for (let prev = ""; prev !== body; ) {
      prev = body;
      body = body.replace(/\{[^{}]*\}/g, "{}");
    }
    out.push([m[1], body]);
  }
  return out;
}

// [{owner, name, static, returns}] for every public method and function.
export function enumerate() {
  const methods = [];
  for (const file of ["client.d.ts", "sandbox.d.ts", "self.d.ts"]) {
    const src = readFileSync(join(DIST, file), "utf8");
    for (const [owner, body] of classBodies(src)) {
      const re = /^\s*(static\s+)?(get\s+|set\s+)?(\w+)(?:<[^>]*>)?\(([^)]*)\)(?::\s*([^;]+))?;/gm;
      let m;
      while ((m = re.exec(body))) {
        if (m[2] || m[3] === "constructor") continue; // accessors and constructors are not methods
        methods.push({ owner, name: m[3], static: Boolean(m[1]), returns: m[5].trim() });
      }
    }
    const fre = /^export declare function (\w+)\([^)]*\):\s*([^;]+);/gm;
    let f;
    while ((f = fre.exec(src))) methods.push({ owner: "module", name: f[1], static: true, returns: f[2].trim() });
  }
  return methods;
}

export const METHODS = enumerate();
const key = (m) => (m.owner === "module" ? m.name : `${m.owner}${m.static ? "." : "#"}${m.name}`);

// ---- recording ----

export const mismatches = [];
export const responses = [];
const called = new Map(); // key -> count (outermost calls)
const ctx = new AsyncLocalStorage();

function check(type, value, where) {
  const v = validatorFor(type);
  if (v === null) {
    mismatches.push(`${where}: no schema for declared type ${type}`);
    return;
  }
  if (!v(value)) {
    mismatches.push(
      `${where}: not a ${type}: ${ajv.errorsText(v.errors, { separator: "; " })} in ${JSON.stringify(value).slice(0, 300)}`,
    );
  }
}

// Validates a value against a declared TS type (a Promise / generator's inner type).
function checkDeclared(declared, value, where) {
  const t = declared.trim();
  if (t === "void" || t === "undefined") {
    if (value !== undefined) mismatches.push(`${where}: declared void, got ${typeof value}`);
  } else if (t === "string") {
    if (typeof value !== "string") mismatches.push(`${where}: declared string, got ${typeof value}`);
  } else if (t === "ArrayBuffer") {
    if (!(value instanceof ArrayBuffer)) mismatches.push(`${where}: declared ArrayBuffer`);
  } else if (t === "this" || t === "Sandbox") {
    if (!(value instanceof SDK.Sandbox)) mismatches.push(`${where}: declared Sandbox`);
    else check("SandboxView", value.data, `${where}.data`);
  } else if (t.endsWith("[]")) {
    if (!Array.isArray(value)) mismatches.push(`${where}: declared ${t}, got ${typeof value}`);
    else value.forEach((x, i) => checkDeclared(t.slice(0, -2), x, `${where}[${i}]`));
  } else if (t === "CreateosSandboxClient") {
    if (!(value instanceof SDK.CreateosSandboxClient)) mismatches.push(`${where}: declared ${t}`);
  } else {
    check(t, value, where);
  }
}

function inner(returns) {
  const m = /^(Promise|AsyncGenerator)<(.+)>$/.exec(returns);
  return m ? { kind: m[1], type: m[2] } : { kind: "sync", type: returns };
}

function wrap(meta, fn) {
  const { kind, type } = inner(meta.returns);
  const k = key(meta);
  if (kind === "AsyncGenerator") {
    return function (...args) {
      const outer = ctx.getStore() === undefined;
      if (outer) called.set(k, (called.get(k) ?? 0) + 1);
      const gen = ctx.run(k, () => fn.apply(this, args));
      return (async function* () {
        let i = 0;
        for (;;) {
          const r = await ctx.run(k, () => gen.next());
          if (r.done) return r.value;
          checkDeclared(type, r.value, `${k} item ${i++}`);
          yield r.value;
        }
      })();
    };
  }
  return function (...args) {
    const outer = ctx.getStore() === undefined;
    if (outer) called.set(k, (called.get(k) ?? 0) + 1);
    const r = ctx.run(k, () => fn.apply(this, args));
    if (kind === "Promise") {
      return r.then((v) => {
        checkDeclared(type, v, k);
        return v;
      });
    }
    checkDeclared(type, r, k);
    return r;
  };
}

// Wraps every enumerated method in place (classes) and returns the wrapped
// module functions (ESM bindings cannot be replaced): {createClient, selfPause, selfDelete}.
export function instrument() {
  const fns = {};
  for (const meta of METHODS) {
    if (meta.owner === "module") {
      if (typeof SDK[meta.name] !== "function") mismatches.push(`${meta.name}: declared but not exported`);
      else fns[meta.name] = wrap(meta, SDK[meta.name]);
      continue;
    }
    const cls = SDK[meta.owner];
    const target = meta.static ? cls : cls?.prototype;
    if (!target || typeof target[meta.name] !== "function") {
      mismatches.push(`${key(meta)}: declared but not found at run time`);
      continue;
    }
    target[meta.name] = wrap(meta, target[meta.name]);
  }
  return fns;
}

// Marks a method called whose call cannot go through the wrapper (the
// self-signal helpers run inside a guest), after the caller checked its effect.
export function markCalled(name) {
  called.set(name, (called.get(name) ?? 0) + 1);
}

// ---- every HTTP response, by route ----

const P = "[^/]+";
// [method, path regex (after /v1), SDK type of `data`, body kind]
const ROUTES = [
  ["GET", "/healthz", "HealthzResponse"],
  ["GET", "/readyz", "ReadyzResponse"],
  ["GET", "/v1/whoami", "WhoAmIView"],
  ["GET", "/v1/shapes", "Shape[]"],
  ["GET", "/v1/rootfs", "RootfsData"],
  ["GET", "/v1/hosts", "HostPublic[]"],
  ["POST", "/v1/sandboxes", "CreateSandboxResponse"],
  ["GET", "/v1/sandboxes", "SandboxView[]"],
  ["GET", `/v1/sandboxes/by-ip/${P}`, "SandboxView"],
  ["GET", `/v1/sandboxes/${P}`, "SandboxView"],
  ["PATCH", `/v1/sandboxes/${P}`, "SandboxView"],
  ["DELETE", `/v1/sandboxes/${P}`, "DestroyedResponse"],
  ["POST", `/v1/sandboxes/${P}/(pause|resume|fork)`, "SandboxView"],
  ["POST", `/v1/sandboxes/${P}/resize`, "ResizeSandboxResponse"],
  ["POST", `/v1/sandboxes/${P}/ssh-pubkeys`, "AddSSHPubkeysResponse"],
  ["GET|PUT", `/v1/sandboxes/${P}/egress`, "EgressView"],
  ["GET", `/v1/sandboxes/${P}/bandwidth`, "BandwidthView"],
  ["POST", `/v1/sandboxes/${P}/bandwidth/recharge`, "BandwidthView"],
  ["POST", `/v1/sandboxes/${P}/exec`, "ExecResponse", "ExecStreamFrame"],
  ["PUT", `/v1/sandboxes/${P}/files`, null],
  ["GET", `/v1/sandboxes/${P}/files`, null],
  ["POST", `/v1/sandboxes/${P}/networks`, "OKResponse"],
  ["DELETE", `/v1/sandboxes/${P}/networks/${P}`, "OKResponse"],
  ["GET", `/v1/sandboxes/${P}/disks`, "SandboxDiskView[]"],
  ["POST", `/v1/sandboxes/${P}/disks`, "OKResponse"],
  ["DELETE", `/v1/sandboxes/${P}/disks/${P}`, "DiskDetachedResponse"],
  ["GET", "/v1/networks", "Network[]"],
  ["POST", "/v1/networks", "Network"],
  ["GET", `/v1/networks/${P}`, "Network"],
  ["DELETE", `/v1/networks/${P}`, "OKResponse"],
  ["GET", "/v1/disks", "DiskView[]"],
  ["POST", "/v1/disks", "DiskView"],
  ["GET|PATCH", `/v1/disks/${P}`, "DiskView"],
  ["DELETE", `/v1/disks/${P}`, "DiskDeletedResponse"],
  ["GET", "/v1/templates", "TemplateView[]"],
  ["POST", "/v1/templates", "TemplateView"],
  ["GET", `/v1/templates/${P}/logs`, null, "TemplateLogEvent"],
  ["GET", `/v1/templates/${P}`, "TemplateView"],
  ["DELETE", `/v1/templates/${P}`, "OKResponse"],
].map(([m, p, type, nd]) => [new RegExp(`^(${m})$`), new RegExp(`^${p}$`), type, nd]);

function checkBody(method, path, status, ctype, text, where) {
  const route = ROUTES.find(([m, p]) => m.test(method) && p.test(path));
  if (!route) {
    mismatches.push(`${where}: no SDK type known for ${method} ${path}`);
    return;
  }
  const [, , type, ndType] = route;
  if (ctype.includes("ndjson")) {
    if (status >= 200 && status < 300 && ndType) {
      text
        .split("\n")
        .filter((l) => l.trim() !== "")
        .forEach((l, i) => {
          try {
            check(ndType, JSON.parse(l), `${where} line ${i + 1}`);
          } catch (e) {
            mismatches.push(`${where} line ${i + 1}: not JSON: ${l.slice(0, 80)}`);
          }
        });
    }
    return;
  }
  if (!ctype.includes("json")) return; // files, plain-text logs
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    mismatches.push(`${where}: JSON content type, unparsable body`);
    return;
  }
  if (/credential|secret_key|access_key/.test(text)) mismatches.push(`${where}: credentials in an answer`);
  if (body?.status === "fail") return check("FailEnvelope", body, where);
  if (body?.status === "error") return check("ErrorEnvelope", body, where);
  if (body?.status !== "success" || !("data" in body)) {
    mismatches.push(`${where}: not a JSend envelope: ${text.slice(0, 120)}`);
    return;
  }
  if (type === null) return;
  if (type.endsWith("[]")) {
    const d = body.data;
    const items = Array.isArray(d) ? d : d && typeof d === "object" ? (Object.values(d).find(Array.isArray) ?? null) : null;
    if (items === null) mismatches.push(`${where}: a list page, got ${JSON.stringify(d).slice(0, 120)}`);
    else items.forEach((x, i) => check(type.slice(0, -2), x, `${where} [${i}]`));
  } else {
    check(type, body.data, where);
  }
}

// The fetch every client of the suite uses: records and checks each answer.
export async function recordingFetch(input, init) {
  const res = await globalThis.fetch(input, init);
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
  const sdkMethod = ctx.getStore() ?? "(outside the SDK)";
  const ctype = res.headers.get("content-type") ?? "";
  const where = `${sdkMethod} ${method} ${url.pathname} ${res.status}`;
  const entry = { sdkMethod, method, path: url.pathname, status: res.status };
  responses.push(entry);
  if (ctype.includes("ndjson")) {
    // a stream: tee it so the SDK reads it live while the copy is checked
    const [a, b] = res.body.tee();
    new Response(b).text().then((t) => checkBody(method, url.pathname, res.status, ctype, t, where));
    return new Response(a, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
  const clone = res.clone();
  const text = await clone.text();
  checkBody(method, url.pathname, res.status, ctype, text, where);
  return res;
}

export function report() {
  const never = METHODS.map(key).filter((k) => !called.has(k));
  return { methods: METHODS.map(key), called: Object.fromEntries(called), never, mismatches, responses: responses.length };
}

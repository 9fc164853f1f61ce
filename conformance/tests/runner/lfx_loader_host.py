#!/usr/bin/env python3
"""A host-gate driver whose plugin loader logs what Langflow 1.13's does.

Written for issue 35 from a reading of lfx 1.13's
`lfx/utils/sandbox/registry.py` (`_plugin_allowlist`,
`_load_entry_points_locked`, `register_sandbox_backend`); no code of it is
copied. The loader below emits its decisions only as `logging` records, the
way lfx does; the driver then answers `load_plugins` from those records alone
(as a driver wrapped around the real lfx would), so the table rows judge the
log lines an operator greps for.

    --mode lfx-1.13          (default) lfx 1.13: an empty or blank allow-list
                             returns before enumerating (no line at all); the
                             "not listed" and "N installed distributions"
                             lines quote the grouped name (stripped,
                             lower-cased), the later ones the entry point's
                             own name.
    --mode raw-names         the older wording: every line quotes the entry
                             point's own name (the first one's, for a group).
    --mode enumerate-empty   the older tables: an empty allow-list still
                             enumerates, logging a "not listed" line per name.

Only `load_plugins` is served; `gate` answers ProtocolError, so run it with
`sbx-conform --profile host-gate --filter GATE-004`. Standard library only.
"""
import argparse
import json
import logging
import sys

ALLOW_VAR = "LANGFLOW_SANDBOX_BACKEND_PLUGINS"
RESERVED = "none"
BUILTINS = frozenset({"exec-sandbox"})

NOT_LISTED = "Ignoring sandbox backend %r: not listed in " + ALLOW_VAR
CONTESTED = ("Refusing sandbox backend plugin %r: %d installed distributions provide that name (%s). "
             "Uninstall all but one, because the allowlist names a backend and cannot choose between them.")
BUILTIN_TAKEN = "Refusing sandbox backend plugin %r: that name belongs to a built-in backend"
REFUSED = "Refusing sandbox backend plugin %r"
REGISTERED = "Registered out-of-tree sandbox backend %r"


class FakeDist:
    def __init__(self, name):
        self.name = name


class FakeEntryPoint:
    """Stands in for importlib.metadata.EntryPoint: load() is the import."""

    def __init__(self, name, distribution, imports):
        self.name = name
        self.dist = FakeDist(distribution) if distribution else None
        self._imports = imports

    def load(self):
        self._imports.append(self.dist.name if self.dist else "unknown distribution")
        return lambda: None


class Registry:
    def __init__(self):
        self.factories = {}

    def register(self, name, factory):
        key = name.strip().lower()
        if not key:
            raise ValueError("a sandbox backend name cannot be empty")
        if key == RESERVED:
            raise ValueError(f"{RESERVED!r} is reserved and cannot name a backend")
        if key in BUILTINS:
            raise ValueError(f"{key!r} is a built-in sandbox backend and cannot be replaced")
        if key in self.factories:
            raise ValueError(f"sandbox backend {key!r} is already registered")
        self.factories[key] = factory


def dist_name(entry_point):
    return entry_point.dist.name if entry_point.dist and entry_point.dist.name else "unknown distribution"


def load_entry_points(env, discovered, registry, log, mode):
    allowed = {item.strip().lower() for item in env.get(ALLOW_VAR, "").split(",") if item.strip()}
    if not allowed and mode != "enumerate-empty":
        return
    groups = {}
    for entry_point in discovered:
        groups.setdefault(entry_point.name.strip().lower(), []).append(entry_point)
    for key, candidates in groups.items():
        quoted = candidates[0].name if mode == "raw-names" else key
        if key not in allowed:
            log.debug(NOT_LISTED, quoted)
            continue
        if len(candidates) > 1:
            log.warning(CONTESTED, quoted, len(candidates), ", ".join(sorted(dist_name(c) for c in candidates)))
            continue
        entry_point = candidates[0]
        if key in BUILTINS:
            log.warning(BUILTIN_TAKEN, entry_point.name)
            continue
        try:
            factory = entry_point.load()
        except Exception:  # one broken plugin must not hide the others, as in lfx
            log.warning("Could not load sandbox backend %r", entry_point.name, exc_info=True)
            continue
        try:
            registry.register(key, factory)
        except (TypeError, ValueError):
            log.warning(REFUSED, entry_point.name, exc_info=True)
            continue
        log.info(REGISTERED, entry_point.name)


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def reason_of(record):
    """The table's refusal reason, read off a log record (None: not a refusal)."""
    if record.msg == NOT_LISTED:
        return "unlisted"
    if record.msg == CONTESTED:
        return "duplicate"
    if record.msg == BUILTIN_TAKEN:
        return "builtin"
    if record.msg == REFUSED and record.exc_info and "is reserved" in str(record.exc_info[1]):
        return "reserved"
    return None


def load_plugins(req, mode):
    imports = []
    discovered = [FakeEntryPoint(ep.get("name") or "", ep.get("distribution"), imports)
                  for ep in req.get("entry_points") or []]
    log = logging.getLogger("lfx_loader_host")
    log.propagate = False
    log.setLevel(logging.DEBUG)
    capture = Capture()
    log.addHandler(capture)
    registry = Registry()
    try:
        load_entry_points(req.get("env") or {}, discovered, registry, log, mode)
    finally:
        log.removeHandler(capture)
    refused = []
    for record in capture.records:
        reason = reason_of(record)
        if reason is None:
            continue
        name = record.args[0].strip().lower()
        dists = sorted(dist_name(ep) for ep in discovered if ep.name.strip().lower() == name)
        refused.append({"name": name, "reason": reason, "distributions": dists, "message": record.getMessage()})
    return {"loaded": list(registry.factories), "imported": imports, "refused": refused}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["lfx-1.13", "raw-names", "enumerate-empty"], default="lfx-1.13")
    mode = parser.parse_args().mode
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op = req.get("op")
        if op == "hello":
            out = {"ok": True, "result": {"protocol": 1, "name": "lfx-loader-host",
                                          "driver": f"lfx_loader_host.py ({mode})", "surfaces": ["host-gate"]}}
        elif op == "load_plugins":
            out = {"ok": True, "result": load_plugins(req, mode)}
        elif op in ("exit", "shutdown"):
            out = {"ok": True, "result": {}}
        else:
            out = {"ok": False, "error": {"type": "ProtocolError",
                                          "message": f"op `{op}`: this host models only lfx's plugin loader"}}
        sys.stdout.write(json.dumps(dict(out, id=req.get("id"))) + "\n")
        sys.stdout.flush()
        if op == "exit":
            return


if __name__ == "__main__":
    main()

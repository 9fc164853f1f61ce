"""Stand-in for lfx.utils.sandbox.base: the sandbox backend interface types
and the settings object, as the spec's appendix lists them."""

import dataclasses
import os

_EXIT_CODE_TIMEOUT = -1


class SandboxExecutionError(Exception):
    """The sandbox infrastructure failed."""


class SandboxUnavailableError(SandboxExecutionError):
    """Configured but unusable: fail closed."""


@dataclasses.dataclass(frozen=True)
class Capabilities:
    # every default grants nothing
    isolation: str = "none"
    supports_deny_all_egress: bool = False
    supports_domain_allowlist: bool = False
    max_timeout_seconds: object = None


@dataclasses.dataclass
class SandboxResult:
    stdout: str
    stderr: str
    exit_code: int
    execution_time_ms: object = None


@dataclasses.dataclass(frozen=True)
class _Settings:
    timeout_seconds: int
    memory_mb: int
    allow_network: bool
    allowed_domains: list


def _int(name, default, low, high):
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = int(raw.strip())  # ValueError names the bad text, as pydantic would refuse it
    if value < low or (high is not None and value > high):
        raise ValueError("%s=%r is out of range" % (name, raw))
    return value


def _bool(name):
    raw = os.environ.get(name)
    if raw is None:
        return False
    low = raw.lower()
    if low in ("1", "on", "t", "true", "y", "yes"):
        return True
    if low in ("0", "off", "f", "false", "n", "no"):
        return False
    raise ValueError("%s=%r is not a boolean" % (name, raw))


def _sandbox_settings():
    """LANGFLOW_SANDBOX_* read from the environment, as Langflow parses them."""
    domains = [d.strip() for d in os.environ.get("LANGFLOW_SANDBOX_ALLOWED_DOMAINS", "").split(",")
               if d.strip()]
    return _Settings(
        timeout_seconds=_int("LANGFLOW_SANDBOX_TIMEOUT_SECONDS", 30, 1, 300),
        memory_mb=_int("LANGFLOW_SANDBOX_MEMORY_MB", 192, 128, None),
        allow_network=_bool("LANGFLOW_SANDBOX_ALLOW_NETWORK"),
        allowed_domains=domains,
    )

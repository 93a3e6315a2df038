"""Reading a gateway config file: the model validated, then the checks that need nothing but the
file and the environment, every problem named by file, line, column and key.

Checks that need the running code (importing functions, finding commands on ``PATH``, asking
the sandbox, reading signing keys) are given by the caller as `ConfigCheck`s; the gateway's are
in `gateway.wiring.checks`, which ``serve`` and ``doctor`` load with.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from gateway.config.auth import STATIC_LISTS, token_problem
from gateway.config.listen import LOOPBACK_HOSTS, ListenConfig
from gateway.config.model import GatewayConfig
from gateway.config.storage import dsn_problem
from gateway.config.telemetry import telemetry_issues
from policies.yamlfile import Located, parse_model, read_located
from toolsets.errors import ConfigError, ConfigIssue

__all__ = ["ConfigCheck", "read_config"]


class ConfigCheck(Protocol):
    """A check of a config that parsed: each problem placed at its key with ``located``."""

    def __call__(self, config: GatewayConfig, located: Located, /) -> list[ConfigIssue]: ...


def read_config(
    path: str | Path,
    *,
    checks: Sequence[ConfigCheck] = (),
    listen: Mapping[str, Any] | None = None,
) -> GatewayConfig:
    """Read and validate a gateway config file.

    Args:
        path: The YAML file; relative paths in it are relative to its folder.
        checks: Further checks, run after the file's own when it parsed.
        listen: Overrides of ``listen`` keys from the command line (``--host``, ``--port``),
            applied before any check, so an override is checked exactly as the file would be;
            an issue they cause names the flag.

    Raises:
        ConfigError: with every problem, each naming file, line and key.
    """
    located = read_located(path)
    config = parse_model(located, GatewayConfig)
    config = config.model_copy(update={"base_dir": Path(path).resolve().parent})
    overrides = dict(listen or {})
    if overrides:
        try:
            merged = ListenConfig.model_validate(config.listen.model_dump() | overrides)
        except ValidationError as exc:
            raise ConfigError(_override_issues(exc, located, overrides)) from None
        config = config.model_copy(update={"listen": merged})
    issues = _servers(config, located) + _files_and_secrets(config, located)
    issues += telemetry_issues(config.telemetry, located)
    for check in checks:
        issues += check(config, located)
    if issues:
        raise ConfigError([_flagged(issue, overrides) for issue in issues])
    return config


def _flagged(issue: ConfigIssue, overrides: Mapping[str, Any]) -> ConfigIssue:
    """``issue``, saying which command-line flag set the value it is about."""
    _, _, key = issue.key.partition("listen.")
    if not issue.key.startswith("listen.") or key not in overrides:
        return issue
    message = f"{issue.message} (listen.{key} is {overrides[key]!r} from --{key})"
    return dataclasses.replace(issue, message=message)


def _override_issues(
    exc: ValidationError, located: Located, overrides: Mapping[str, Any]
) -> list[ConfigIssue]:
    """The command-line overrides pydantic refused, each at its ``listen`` key."""
    issues = []
    for error in exc.errors(include_url=False):
        key = str(error["loc"][0]) if error["loc"] else "listen"
        issue = located.issue(("listen", key), error["msg"])
        issues.append(_flagged(issue, overrides))
    return issues


def _servers(config: GatewayConfig, located: Located) -> list[ConfigIssue]:
    """Exposed prefixes used twice, and a listener beyond loopback that anyone could call."""
    issues: list[ConfigIssue] = []
    seen: dict[str, int] = {}
    for index, server in enumerate(config.servers):
        prefix = server.exposed_prefix
        if prefix in seen:
            message = f"prefix {prefix!r} is already used by servers[{seen[prefix]}]"
            key = "prefix" if server.prefix else "name"
            issues.append(located.issue(("servers", index, key), message))
        seen[prefix] = index
    jwt_agents = any("agent" in issuer.as_ for issuer in config.auth.jwt)
    if config.listen.host not in LOOPBACK_HOSTS and not config.auth.agents and not jwt_agents:
        message = (
            "binding beyond loopback requires auth.agents or an auth.jwt issuer serving agents "
            "(every client must authenticate)"
        )
        issues.append(located.issue(("listen", "host"), message))
    return issues


def _files_and_secrets(config: GatewayConfig, located: Located) -> list[ConfigIssue]:
    """Policy files that are not there, and a database URL or tokens that cannot be read."""
    issues: list[ConfigIssue] = []
    for i, file in enumerate(config.policies.files):
        if not config.resolve(file).is_file():
            where = str(config.resolve(file))
            message = f"policy file {where!r} not found (paths are relative to this file)"
            issues.append(located.issue(("policies", "files", i), message))
    if config.storage.backend == "postgres" and (problem := dsn_problem(config.storage.dsn)):
        issues.append(located.issue(("storage", "dsn"), problem))
    for role in STATIC_LISTS:
        for i, credential in enumerate(getattr(config.auth, role)):
            if (problem := token_problem(credential.token)) is not None:
                issues.append(located.issue(("auth", role, i, "token"), problem))
    key = config.approvals.request_state_key
    if key is not None and (problem := _state_key_problem(key)) is not None:
        issues.append(located.issue(("approvals", "request_state_key"), problem))
    return issues


_KEY_FORM = "at least 32 bytes as hex, e.g. `openssl rand -hex 32`"


def _state_key_problem(value: str) -> str | None:
    """Why ``approvals.request_state_key`` (hex, or ``env:NAME`` holding hex) cannot seal."""
    name = value.removeprefix("env:") if value.startswith("env:") else None
    held = value if name is None else os.environ.get(name, "")
    if name is not None and not held:
        return f"environment variable {name} is not set (it should hold {_KEY_FORM})"
    what = "the key" if name is None else f"environment variable {name}"
    try:
        size = len(bytes.fromhex(held))
    except ValueError:
        return f"{what} is not hex; it should be {_KEY_FORM}"
    if size < 32:
        return f"{what} is {size} bytes; it should be {_KEY_FORM}"
    return None

"""The config checks that need the gateway's code, and `load_config`, which reads a config file
with them: the config as ``serve`` and ``doctor`` load it.

Each finds its problems now, one `ConfigIssue` at the line that caused it, rather than a server
that fails to start again and again: a function that does not import, a stdio command not on
``PATH``, a script or hook the sandbox cannot run, a JWT issuer's key that cannot be read.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from gateway.auth.jwks import key_problem
from gateway.config.credential_checks import check_credentials
from gateway.config.loader import ConfigCheck, read_config
from gateway.config.model import GatewayConfig
from gateway.config.servers import function_specs, python_command
from gateway.scripts.source import check_sources
from policies.yamlfile import Located
from toolsets.errors import ConfigIssue, ImportPathError
from toolsets.functions.toolset import import_function

__all__ = ["GATEWAY_CHECKS", "check_commands", "check_functions", "check_keys", "load_config"]


def check_functions(config: GatewayConfig, located: Located) -> list[ConfigIssue]:
    """Import every configured function now, so a bad path is reported with its line."""
    issues: list[ConfigIssue] = []
    if str(config.base_dir) not in sys.path:
        sys.path.append(str(config.base_dir))  # modules next to the config file import
    for i, server in enumerate(config.servers):
        for j, spec in enumerate(function_specs(server)):
            try:
                import_function(spec.function)
            except ImportPathError as exc:
                issues.append(located.issue(("servers", i, "functions", j), str(exc)))
    return issues


def check_commands(config: GatewayConfig, located: Located) -> list[ConfigIssue]:
    """Find every stdio server's command now: a missing one is one error with its line, not a
    server that fails to start again and again."""
    issues: list[ConfigIssue] = []
    for i, server in enumerate(config.servers):
        if server.transport != "stdio" or not server.enabled or server.command is None:
            continue
        command = python_command(server.command)
        cwd = config.resolve(server.cwd) if server.cwd else config.base_dir
        search = server.env.get("PATH", os.environ.get("PATH", os.defpath))
        found = shutil.which(command, path=search)
        if found is None and os.sep in command:
            found = shutil.which(str(cwd / command))
        if found is None:
            message = (
                f"server {server.name!r}: command {server.command!r} not found "
                f"(not an executable on PATH, nor relative to {cwd}); install it or fix the path"
            )
            issues.append(located.issue(("servers", i, "command"), message))
    return issues


def check_keys(config: GatewayConfig, located: Located) -> list[ConfigIssue]:
    """Every JWT issuer's static ``key`` or ``secret`` read now (a JWKS is fetched later)."""
    issues: list[ConfigIssue] = []
    for i, issuer in enumerate(config.auth.jwt):
        if (bad := key_problem(issuer)) is not None:
            issues.append(located.issue(("auth", "jwt", i, bad[0]), bad[1]))
    return issues


GATEWAY_CHECKS: Final[tuple[ConfigCheck, ...]] = (
    check_functions,
    check_commands,
    check_sources,
    check_keys,
    check_credentials,
)
"""What `load_config` checks beyond the file itself, in the order its issues are listed."""


def load_config(path: str | Path, *, listen: Mapping[str, Any] | None = None) -> GatewayConfig:
    """Load and validate a gateway config file, with every check ``serve`` runs; ``listen``
    overrides (``--host``, ``--port``) apply before the checks.

    Raises:
        ConfigError: with every problem, each naming file, line and key.
    """
    return read_config(path, checks=GATEWAY_CHECKS, listen=listen)

"""``lockgate doctor``: check a gateway's config, policies, store and identity settings before
serving; print each check, and exit non-zero with the list of problems when any fails."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import anyio

from gateway.config.model import GatewayConfig
from gateway.wiring.checks import load_config
from gateway.wiring.storage_check import storage_status
from policies import PolicyHolder
from toolsets.errors import ConfigError, LockgateError

__all__ = ["Check", "diagnose", "register"]

IdentityCheck = Callable[[GatewayConfig], Awaitable[list[str]]]


@dataclass(frozen=True, slots=True)
class Check:
    """One check's outcome.

    Attributes:
        name: What was checked (``config``, ``policies``, ``storage``, ``identity``).
        problems: What is wrong, one sentence each; empty when it passed.
        detail: What was found, when it passed.
    """

    name: str
    problems: tuple[str, ...] = ()
    detail: str = ""


def _policies(config: GatewayConfig) -> Check:
    files = [config.resolve(f) for f in config.policies.files]
    if not files:
        return Check("policies", detail=f"none (default effect {config.policies.default_effect})")
    try:
        PolicyHolder.load(files)
    except ConfigError as exc:
        return Check("policies", tuple(str(issue) for issue in exc.issues))
    return Check("policies", detail=f"{len(files)} file(s) load")


_UNSEALED: Final = (
    "approvals.request_state_key is unset: each replica seals 2026-07-28 approval answers with "
    "a random key of its own, so another replica refuses them; set it to env:NAME holding the "
    "same key (64 hex digits) on every replica"
)


async def _storage(config: GatewayConfig) -> Check:
    try:
        status = await storage_status(config)
    except LockgateError as exc:
        return Check("storage", (str(exc),))
    problems = [status.summary()] if status.current > status.latest else []
    if config.storage.backend == "postgres" and config.approvals.request_state_key is None:
        problems.append(_UNSEALED)
    return Check("storage", tuple(problems), detail=status.summary())


def _identity_check() -> IdentityCheck | None:
    """The JWT settings' own check (`gateway.auth.jwt.check_identity`), when it is there."""
    try:
        module = importlib.import_module("gateway.auth.jwt")
    except ImportError:
        return None
    check: IdentityCheck | None = getattr(module, "check_identity", None)
    return check


async def _identity(config: GatewayConfig) -> Check:
    check = _identity_check()
    if check is None:
        return Check("identity", detail="static tokens only")
    try:
        problems = await check(config)
    except LockgateError as exc:
        problems = [str(exc)]
    if problems:
        return Check("identity", tuple(problems))
    return Check("identity", detail="tokens and JWT issuers usable")


async def diagnose(path: str) -> list[Check]:
    """Every check of the gateway config at ``path``; the others are skipped when the config
    itself does not load."""
    try:
        config = load_config(path)
    except ConfigError as exc:
        return [Check("config", tuple(str(issue) for issue in exc.issues))]
    checks = [Check("config", detail=f"{path} loads"), _policies(config)]
    checks.append(await _storage(config))
    checks.append(await _identity(config))
    return checks


async def _run(args: argparse.Namespace) -> int:
    checks = await diagnose(args.config)
    for check in checks:
        detail = check.detail or "see below"
        print(f"{'ok' if not check.problems else 'FAIL':4}  {check.name:9} {detail}")
    problems = [f"{c.name}: {problem}" for c in checks for problem in c.problems]
    if not problems:
        print("no problems found")
        return 0
    print(f"\n{len(problems)} problem{'s'[: len(problems) != 1]}:")
    for problem in problems:
        print(f"  - {problem}")
    return 1


def register(commands: Any, *, config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``doctor`` to the ``lockgate`` parser."""
    doctor = commands.add_parser(
        "doctor", help="check config, policies, store and identity settings before serving"
    )
    config_option(doctor)
    doctor.set_defaults(func=lambda args: anyio.run(_run, args))

"""Support of the per-user credentials suite: a gateway with two agents and one approver, a
vault key in the environment, servers in secret mode, and the secrets they must never leak."""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx2
from support import write_config

from gateway.gateway import Gateway
from toolsets.upstream.per_principal import PerPrincipalToolset

HARNESS = Path(__file__).resolve().parent
ENV_SERVER = str(HARNESS / "upstreams" / "env_server.py")
AGENTS = {"agent:alice": "alice-agent-token", "agent:bob": "bob-agent-token"}
APPROVER, APPROVER_TOKEN = "user:olga", "olga-approver-token"
SECRETS = {"agent:alice": "alice-s3cret-7f1c", "agent:bob": "bob-s3cret-22aa"}
"""The secrets of the suite: none may appear in any log line, event or audit entry."""
KEY_VAR, NEW_KEY_VAR = "LOCKGATE_TEST_VAULT_KEY", "LOCKGATE_TEST_VAULT_KEY_NEW"


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


@contextlib.contextmanager
def vault_keys() -> Iterator[None]:
    """A fresh vault key (and a second one for rotation) in the environment."""
    saved = {name: os.environ.get(name) for name in (KEY_VAR, NEW_KEY_VAR)}
    os.environ[KEY_VAR], os.environ[NEW_KEY_VAR] = new_key(), new_key()
    try:
        yield
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)


def secret_http(name: str, url: str) -> dict[str, Any]:
    """An HTTP upstream in secret mode: the secret goes as ``Authorization: Bearer ...``."""
    credentials = {"mode": "secret", "header": "Authorization", "value": "Bearer {secret}"}
    return {"name": name, "transport": "http", "url": url, "credentials": credentials}


def secret_stdio(name: str, variable: str = "UPSTREAM_TOKEN") -> dict[str, Any]:
    """The env server over stdio in secret mode: the secret goes in ``variable``."""
    return {
        "name": name,
        "transport": "stdio",
        "command": sys.executable,
        "args": [ENV_SERVER, variable],
        "credentials": {"mode": "secret", "env": variable},
    }


def credentials_config(
    directory: Path, servers: Sequence[dict[str, Any]], *, store: str = "sqlite", **extra: Any
) -> Path:
    """A gateway config in ``directory``: the servers, two agents, an approver, the vault key,
    an audit log (``audit.db``) and every call allowed."""
    agents = [{"id": id, "token": token} for id, token in AGENTS.items()]
    approvals: dict[str, Any] = {"store": "sqlite", "path": "pending.db"}
    if store == "memory":
        approvals = {"store": "memory"}
    sections: dict[str, Any] = {
        "auth": {"agents": agents, "approvers": [{"id": APPROVER, "token": APPROVER_TOKEN}]},
        "policies": {"default_effect": "allow"},
        "approvals": approvals,
        "events": {"audit": {"enabled": True, "path": "audit.db"}},
        "vault": {"key": f"env:{KEY_VAR}"},
        **extra,
    }
    return write_config(directory, servers, **sections)


def audit_bytes(config: Path) -> bytes:
    """Every byte SQLite keeps for the audit log (database, WAL, journal)."""
    return b"".join(p.read_bytes() for p in sorted(config.parent.glob("audit.db*")))


@contextlib.asynccontextmanager
async def rest(base: str, principal: str) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client on the gateway's REST API holding ``principal``'s token."""
    token = AGENTS.get(principal) or APPROVER_TOKEN
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
        yield client


async def approve(base: str, approval: str) -> str:
    """The approver approves ``approval`` over the REST API; its call id."""
    async with rest(base, APPROVER) as api:
        answer = await api.post(f"/api/approvals/{approval}/decision", json={"decision": "approve"})
    assert answer.status_code == 200, answer.text
    call_id: str = answer.json()["call_id"]
    return call_id


def per_principal_pool(gateway: Gateway) -> PerPrincipalToolset:
    """The gateway's (first) per-principal pool, found in its toolset tree."""

    def walk(toolset: Any) -> list[Any]:
        inner = [*getattr(toolset, "toolsets", ())]
        inner += filter(None, [getattr(toolset, "wrapped", None)])
        return [toolset, *(t for child in inner for t in walk(child))]

    return next(t for t in walk(gateway.parts.combined) if isinstance(t, PerPrincipalToolset))


class Captured(logging.Handler):
    """Every log record of the run, formatted with its arguments and exception."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextlib.contextmanager
def every_log_line() -> Iterator[Captured]:
    """Capture every log record (root logger, DEBUG) for the block."""
    root, handler = logging.getLogger(), Captured()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)

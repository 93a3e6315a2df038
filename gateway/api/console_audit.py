"""The console's audit section: the last entries of the audit log, `verify`, and the replay of
a candidate policy against the recorded calls (`gateway.audit.replay`).

The embedded audit log (``events.audit.path``) is read from its file in a worker thread; the
chain replicas share in PostgreSQL (`gateway.postgres.audit.PostgresAuditLog`) is read from its
table. With the audit log off they answer `AuditUnavailable` saying so.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
from pydantic import BaseModel, ConfigDict, Field

from gateway.api.errors import BadRequest
from gateway.audit.log import AuditEntry, AuditLog, read_entries, read_tail
from gateway.audit.replay import READ_KINDS, replay
from gateway.audit.verify import VerifyReport, verify
from gateway.gateway import Gateway
from policies.engine import PolicyEngine
from toolsets.errors import AuditUnavailable, ConfigError

__all__ = ["ReplayBody", "audit_tail", "audit_verify", "replay_candidate"]

SCANNED = 500
"""Entries read from the end of the log before keeping those of the operator's tenant."""


class ReplayBody(BaseModel):
    """``POST /api/console/replay``: a candidate policy file, in place of one layer."""

    model_config = ConfigDict(extra="forbid")

    policy: str = Field(min_length=1, max_length=1 << 20, description="The candidate's YAML.")
    layer: int | None = Field(
        None, ge=0, description="The layer it replaces (default: the last one)."
    )


@runtime_checkable
class SharedAudit(Protocol):
    """The audit chain kept in a database (`gateway.postgres.audit.PostgresAuditLog`)."""

    async def tail(self, n: int = 20) -> list[AuditEntry]: ...

    async def entries(self, kinds: Iterable[str] = ()) -> list[AuditEntry]: ...

    async def verify(self) -> VerifyReport: ...


Entries = Callable[[], Iterable[AuditEntry]]
"""The recorded calls, read when called (in the replay's worker thread)."""


def _log(gateway: Gateway) -> AuditLog | SharedAudit:
    """The audit log the gateway writes.

    Raises:
        AuditUnavailable: the audit log is off, or of a kind the console cannot read.
    """
    audit = gateway.parts.events.audit
    if audit is None:
        raise AuditUnavailable("the audit log is off: set events.audit.enabled: true")
    if isinstance(audit, AuditLog | SharedAudit):
        return audit
    raise AuditUnavailable(
        f"the console cannot read the audit log at {audit.path}: read it with lockgate audit"
    )


def _file_tail(path: Path) -> list[AuditEntry]:
    return read_tail(path, SCANNED) if path.exists() else []


def _file_verify(path: Path) -> VerifyReport:
    return verify(path) if path.exists() else VerifyReport(ok=True, entries=0)


def _file_entries(path: Path) -> Iterable[AuditEntry]:
    return read_entries(path, READ_KINDS) if path.exists() else ()


def _tenant(entry: AuditEntry) -> str | None:
    body = entry.body if isinstance(entry.body, dict) else {}
    data = body.get("data")
    return data.get("tenant") if isinstance(data, dict) else None


async def audit_tail(gateway: Gateway, tenant: str | None, count: int) -> list[dict[str, Any]]:
    """The last ``count`` entries of ``tenant`` (None: without a tenant), newest last."""
    log = _log(gateway)
    if isinstance(log, AuditLog):
        entries = await anyio.to_thread.run_sync(_file_tail, Path(log.path))
    else:
        entries = await log.tail(SCANNED)
    return [e.to_json() for e in entries if _tenant(e) == tenant][-count:]


async def audit_verify(gateway: Gateway) -> dict[str, Any]:
    """The chain recomputed: whether it holds, and the first bad entry if not."""
    log = _log(gateway)
    if isinstance(log, AuditLog):
        report = await anyio.to_thread.run_sync(_file_verify, Path(log.path))
    else:
        report = await log.verify()
    return {
        "ok": report.ok,
        "entries": report.entries,
        "first_bad_seq": report.first_bad_seq,
        "problem": report.problem,
        "head_hash": report.head_hash,
    }


def _replay(gateway: Gateway, recorded: Entries, body: ReplayBody) -> dict[str, Any]:
    layers = list(gateway.policy.paths)
    index = len(layers) - 1 if body.layer is None else body.layer
    if not 0 <= index < max(len(layers), 1):
        raise BadRequest(f"layer {index} does not exist: the policy has {len(layers)}")
    with tempfile.TemporaryDirectory(prefix="lockgate-replay-") as folder:
        name = layers[index].name if layers else "candidate.yaml"
        candidate = Path(folder) / name
        candidate.write_text(body.policy, encoding="utf-8")
        paths = [*layers[:index], candidate, *layers[index + 1 :]]
        try:
            engine = PolicyEngine.load(paths)
        except ConfigError as exc:  # named as the candidate, not as the scratch copy
            raise BadRequest(str(exc).replace(str(candidate), f"candidate {name}")) from None
        shown = replay(recorded(), engine).to_json()
    replaced = str(layers[index]) if layers else None
    return {"replaced": replaced, "candidate_version": engine.version, **shown}


async def replay_candidate(
    gateway: Gateway, body: ReplayBody, tenant: str | None
) -> dict[str, Any]:
    """The recorded calls of ``tenant`` decided again with the candidate in place of one layer:
    how many, and the rows whose decision changed (``lockgate policy replay`` lists the same
    for a log of one tenant)."""
    log = _log(gateway)
    if isinstance(log, AuditLog):
        path = Path(log.path)
        every: Entries = lambda: _file_entries(path)  # noqa: E731
    else:
        entries = await log.entries(READ_KINDS)
        every = lambda: entries  # noqa: E731

    def recorded() -> Iterable[AuditEntry]:
        return (entry for entry in every() if _tenant(entry) == tenant)

    return await anyio.to_thread.run_sync(_replay, gateway, recorded, body)

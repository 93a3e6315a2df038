"""The console's audit section: the last entries of the audit log, `verify`, and the replay of
a candidate policy against the recorded calls (`gateway.audit.replay`).

All three read the embedded audit log (``events.audit.path``) in a worker thread; with the
audit log off, or kept in PostgreSQL, they answer `AuditUnavailable` saying so.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from gateway.api.errors import BadRequest
from gateway.audit.log import AuditEntry, AuditLog, read_entries, read_tail
from gateway.audit.replay import READ_KINDS, replay
from gateway.audit.verify import verify
from gateway.gateway import Gateway
from policies.engine import PolicyEngine
from toolsets.errors import AuditUnavailable, ConfigError

__all__ = ["ReplayBody", "audit_path", "audit_tail", "audit_verify", "replay_candidate"]

SCANNED = 500
"""Entries read from the end of the log before keeping those of the operator's tenant."""


class ReplayBody(BaseModel):
    """``POST /api/console/replay``: a candidate policy file, in place of one layer."""

    model_config = ConfigDict(extra="forbid")

    policy: str = Field(min_length=1, max_length=1 << 20, description="The candidate's YAML.")
    layer: int | None = Field(
        None, ge=0, description="The layer it replaces (default: the last one)."
    )


def audit_path(gateway: Gateway) -> Path:
    """Where the embedded audit log is.

    Raises:
        AuditUnavailable: the audit log is off, or not a local file.
    """
    audit = gateway.parts.events.audit
    if audit is None:
        raise AuditUnavailable("the audit log is off: set events.audit.enabled: true")
    if not isinstance(audit, AuditLog):
        raise AuditUnavailable(
            "the audit log is kept in PostgreSQL: read it with lockgate audit tail and verify"
        )
    return Path(audit.path)


def _tenant(entry: AuditEntry) -> str | None:
    body = entry.body if isinstance(entry.body, dict) else {}
    data = body.get("data")
    return data.get("tenant") if isinstance(data, dict) else None


async def audit_tail(gateway: Gateway, tenant: str | None, count: int) -> list[dict[str, Any]]:
    """The last ``count`` entries of ``tenant`` (None: without a tenant), newest last."""
    path = audit_path(gateway)
    if not path.exists():
        return []
    entries = await anyio.to_thread.run_sync(read_tail, path, SCANNED)
    return [e.to_json() for e in entries if _tenant(e) == tenant][-count:]


async def audit_verify(gateway: Gateway) -> dict[str, Any]:
    """The chain recomputed: whether it holds, and the first bad entry if not."""
    path = audit_path(gateway)
    if not path.exists():
        return {"ok": True, "entries": 0, "first_bad_seq": None, "problem": None}
    report = await anyio.to_thread.run_sync(verify, path)
    return {
        "ok": report.ok,
        "entries": report.entries,
        "first_bad_seq": report.first_bad_seq,
        "problem": report.problem,
        "head_hash": report.head_hash,
    }


def _replay(gateway: Gateway, path: Path, body: ReplayBody) -> dict[str, Any]:
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
        report = replay(read_entries(path, READ_KINDS), engine) if path.exists() else None
    shown = report.to_json() if report is not None else {"calls": 0, "changed": 0, "rows": []}
    replaced = str(layers[index]) if layers else None
    return {"replaced": replaced, "candidate_version": engine.version, **shown}


async def replay_candidate(gateway: Gateway, body: ReplayBody) -> dict[str, Any]:
    """The recorded calls decided again with the candidate in place of one layer: how many,
    and the rows whose decision changed (``lockgate policy replay`` lists the same)."""
    path = audit_path(gateway)
    return await anyio.to_thread.run_sync(_replay, gateway, path, body)

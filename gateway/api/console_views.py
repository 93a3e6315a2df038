"""The console's read-only views of policies, catalogues and sessions, as JSON-ready data.

Each function reads the running gateway (never changes it): the layered policy files with the
digest of what each holds now, the tools a principal would be listed, one call explained as
``lockgate policy explain`` explains it, and the sessions held in memory with their labels and
the gates of the tools they touched.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

from gateway.gateway import Gateway
from policies.cases import CallSpec, evaluate, session_state
from policies.engine import PolicyEngine
from policies.explain import call_trace, decision_json, decision_text
from policies.explain_gates import gate_json, gate_statuses
from policies.session import SessionState
from toolsets.context import CallContext, Principal
from toolsets.tooldef import ToolDef

__all__ = ["catalogue_for", "explained", "policy_layers", "session_rows"]

MAX_SESSIONS_SHOWN = 200
CONSOLE_SESSION = "lockgate-console"
"""The session a catalogue is listed in (a fresh one per principal; not shown as a session)."""


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def policy_layers(gateway: Gateway) -> dict[str, Any]:
    """The policy in force: its version, then each file in layer order with its rule count and
    the digest of the file as it is on disk now (a digest differing from the loaded one's
    means an edit not reloaded yet, or refused: see the gateway's log)."""
    engine = gateway.policy.current
    per_file = Counter(rule.file for rule in engine.rules)
    layers = [
        {
            "layer": i,
            "file": str(path),
            "rules": per_file.get(str(path), 0),
            "sha256": _digest(path),
        }
        for i, path in enumerate(gateway.policy.paths)
    ]
    return {
        "version": engine.version,
        "layers": layers,
        "rules": [
            {"id": r.id, "effect": r.effect, "file": r.file, "line": r.line} for r in engine.rules
        ],
    }


async def catalogue_for(gateway: Gateway, principal: Principal) -> list[dict[str, Any]]:
    """The tools ``principal`` would be listed (in a fresh session of its own), as the policy
    and the pins decide; a server reached over each caller's own connection as last known
    (``inspect_only``: nothing is opened or exchanged in their name)."""
    ctx = CallContext(principal=principal, session_id=CONSOLE_SESSION, inspect_only=True)
    tools = await gateway.tools(ctx)
    return [
        {
            "name": tool.name,
            "server": tool.server,
            "title": tool.title,
            "description": (tool.description or "")[:200],
            "flags": list(tool.flags),
        }
        for tool in sorted(tools.values(), key=lambda t: t.name)
    ]


def explained(engine: PolicyEngine, call: CallSpec) -> dict[str, Any]:
    """``call`` decided by ``engine``: the text ``lockgate policy explain`` prints and its
    JSON."""
    decision = evaluate(engine, call)
    given = "session" in call.model_fields_set
    session = session_state(call.session, engine) if given else None
    gates = gate_statuses(engine, call.tool, decision, session) if call.tool is not None else []
    trace = call_trace(engine, call, decision)
    return {
        "text": decision_text(engine, decision, call.flags, gates=gates, trace=trace),
        "json": decision_json(engine, decision, call.flags, gates=gates, trace=trace),
    }


def _gates(
    engine: PolicyEngine, principal: Principal, state: SessionState, tools: list[ToolDef]
) -> list[Any]:
    """The session gates of ``tools`` (those with any), as they stand in that session."""
    found: list[Any] = []
    for tool in tools:
        decision = engine.evaluate_visibility(tool, principal, state)
        for gate in gate_json(gate_statuses(engine, tool.name, decision, state)):
            found.append({"tool": tool.name, **gate})
    return found


async def _states(gateway: Gateway, tenant: str | None) -> list[tuple[str, SessionState]]:
    """The sessions of ``tenant``, most recent first: those held in this replica's memory, then
    (where replicas share the store) those every replica saved last."""
    book = gateway.parts.sessions
    mine = {
        key: state
        for key, state in reversed(book.loaded())
        if state.tenant == tenant and state.id != CONSOLE_SESSION
    }
    shared = await book.store.recent(tenant, MAX_SESSIONS_SHOWN)
    if shared is None:
        return list(mine.items())[:MAX_SESSIONS_SHOWN]
    stored = {key: SessionState.from_json(state) for key, state in shared if key not in mine}
    return [*mine.items(), *stored.items()][:MAX_SESSIONS_SHOWN]


def _row(key: str, state: SessionState) -> dict[str, Any]:
    # The key is "principal:session"; a session without an id has the key as its id.
    principal_id = key[:-1] if state.id == key else key[: -len(state.id) - 1]
    return {
        "key": key,
        "principal": principal_id,
        "session": state.id,
        "calls": state.calls,
        "groups": sorted(state.groups),
        "labels": sorted(state.labels),
        "history": [dict(entry) for entry in state.history][-5:],
    }


async def session_rows(gateway: Gateway, tenant: str | None) -> list[dict[str, Any]]:
    """The sessions of ``tenant``, most recent first (this replica's, then with PostgreSQL every
    replica's): caller, session id, calls, loaded groups, labels, the gates of every upstream
    tool, and the last calls."""
    engine = gateway.policy.current
    catalogue = await gateway.parts.combined.get_tools(CallContext())
    tools = [catalogue[name] for name in sorted(catalogue)]
    rows: list[dict[str, Any]] = []
    for key, state in await _states(gateway, tenant):
        row = _row(key, state)
        principal = Principal(id=row["principal"], tenant=tenant)
        rows.append({**row, "gates": _gates(engine, principal, state, tools)})
    return rows

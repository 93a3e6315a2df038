"""`merge`: a three-way merge of session states, for two replicas that changed one session at
once (each saved state is checked against the version it was read at; the loser merges).

What a replica did since it read the state (``base`` to ``mine``) is replayed onto what is
stored now (``theirs``): call counters add up, newer last arguments and variables win,
groups only grow, and history gains the replica's new entries at the end.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from policies.session import HISTORY_LIMIT, SessionState
from policies.session_labels import merge_labels

__all__ = ["merge"]

_MISSING: Final = object()


_FIELDS: Final = frozenset(SessionState("").to_json())


def _plain(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """A stored state with every field present (`SessionState.to_json` form): as it is when
    it has them all (read, never changed, by `merge`), else validated and completed."""
    if _FIELDS.issubset(state):
        return state
    return SessionState.from_json(state).to_json()


def _counts(base: dict[str, int], mine: dict[str, int], theirs: dict[str, int]) -> dict[str, int]:
    names = set(base) | set(mine) | set(theirs)
    added = {n: theirs.get(n, 0) + mine.get(n, 0) - base.get(n, 0) for n in sorted(names)}
    return {n: count for n, count in added.items() if count > 0}


def _changes(base: dict[str, Any], mine: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """``theirs`` with the keys ``mine`` set or removed since ``base``."""
    out = dict(theirs)
    for name in set(base) | set(mine):
        if name not in mine:
            out.pop(name, None)
        elif mine[name] != base.get(name, _MISSING):
            out[name] = mine[name]
    return out


def merge(
    base: Mapping[str, Any], mine: Mapping[str, Any], theirs: Mapping[str, Any]
) -> dict[str, Any]:
    """``theirs`` plus what changed from ``base`` to ``mine`` (all in `SessionState.to_json`
    form); the id is ``theirs``'s."""
    b, m, t = _plain(base), _plain(mine), _plain(theirs)
    new_calls = max(m["calls"] - b["calls"], 0)
    appended = m["history"][-new_calls:] if new_calls else []
    return {
        "id": t["id"],
        "calls": t["calls"] + new_calls,
        "tool_calls": _counts(b["tool_calls"], m["tool_calls"], t["tool_calls"]),
        "succeeded": _counts(b["succeeded"], m["succeeded"], t["succeeded"]),
        "last_args": _changes(b["last_args"], m["last_args"], t["last_args"]),
        "groups": sorted(set(t["groups"]) | (set(m["groups"]) - set(b["groups"]))),
        "variables": _changes(b["variables"], m["variables"], t["variables"]),
        "history": (t["history"] + appended)[-HISTORY_LIMIT:],
        "labels": merge_labels(b["labels"], m["labels"], t["labels"]),
        "tenant": m["tenant"] if m["tenant"] is not None else t["tenant"],
    }

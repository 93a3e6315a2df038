"""Data-flow labels in a replay: the labels each recorded call's tool had (its decision on the
audit log carries them), and the calls a new policy would now hold."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.tool_labels import ServerLabels
from toolsets.decision import Decision

__all__ = ["newly_held", "recorded_labels"]


def recorded_labels(decision: Mapping[str, Any]) -> ServerLabels | None:
    """The labels a recorded decision says its tool had (annotation-derived and configured
    ones included), as base labels for the replay (annotations are not on record); None when
    it had none."""
    labels = decision.get("labels")
    if not isinstance(labels, Mapping):
        return None
    tool = {str(name) for name in labels.get("tool") or ()}
    adds = {str(name) for name in labels.get("adds") or ()}
    return ServerLabels(annotations=False, sources=frozenset(adds), sinks=frozenset(tool - adds))


def newly_held(call: Any, decision: Decision) -> dict[str, Any]:
    """A call (`gateway.audit.replay.RecordedCall`) the new policy holds and the old did not."""
    return {
        "seq": call.seq,
        "ts": call.ts,
        "call_id": call.call_id,
        "tool": call.tool.name,
        "principal": call.principal.id,
        "session_id": call.session_id,
        "old_effect": call.effect,
        "rule_id": decision.rule_id,
        "reason": decision.reason,
    }

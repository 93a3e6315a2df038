"""`Finding`: what a content inspector found in a call's arguments or result (a value of the call
chain: the gateway's inspectors produce it, `toolsets.inspected` acts on it, events carry it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["ACTION_RANK", "Direction", "Finding", "FindingAction", "strongest"]

Direction = Literal["arguments", "results"]
"""Which side of a call was inspected."""

FindingAction = Literal["allow", "label", "redact", "ask", "deny"]
"""What happens because of a finding: nothing, a session label, the span masked, the call held
for approval, or refused."""

ACTION_RANK: Final[dict[str, int]] = {"allow": 0, "label": 1, "redact": 2, "ask": 3, "deny": 4}
"""Restrictiveness of each action; a call's verdict is its strongest finding's action."""


def strongest(actions: Any) -> FindingAction:
    """The most restrictive of ``actions`` (``allow`` when there are none)."""
    best: FindingAction = "allow"
    for action in actions:
        if ACTION_RANK[action] > ACTION_RANK[best]:
            best = action
    return best


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One span an inspector flagged; never holds the matched text.

    Attributes:
        kind: What was found (``credential``, ``email``, ``card``, ``prompt-injection``, or an
            external inspector's kind).
        inspector: The configured inspector that found it.
        direction: ``arguments`` or ``results``.
        where: The string's path: ``args.body``, ``content.0.text``, ``structuredContent.x``.
        start: The span's first character in that string.
        end: One past its last character.
        action: What the configuration says to do about it.
        score: The inspector's confidence, when it gives one.
        shadow: Found by an inspector in ``mode: shadow``: recorded with the action it would
            take, never acted on.
    """

    kind: str
    inspector: str
    direction: Direction
    where: str
    start: int
    end: int
    action: FindingAction
    score: float | None = None
    shadow: bool = False

    def to_json(self) -> dict[str, Any]:
        """The finding as events and the audit log carry it."""
        data: dict[str, Any] = {
            "kind": self.kind,
            "inspector": self.inspector,
            "direction": self.direction,
            "where": self.where,
            "start": self.start,
            "end": self.end,
            "action": self.action,
        }
        if self.score is not None:
            data["score"] = self.score
        if self.shadow:
            data["shadow"] = True
        return data

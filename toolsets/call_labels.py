"""`CallLabels`: the data-flow labels one call's decision saw (events and the audit show them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CallLabels"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallLabels:
    """Labels around one call, sorted.

    Attributes:
        tool: The called tool's labels, sources and sinks (what CEL reads as ``tool.labels``).
        adds: Its source labels: added to the session when the call succeeds.
        session: The session's labels when the call was decided.
    """

    tool: tuple[str, ...] = ()
    adds: tuple[str, ...] = ()
    session: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tool or self.session)

    def to_json(self) -> dict[str, Any]:
        return {"tool": list(self.tool), "adds": list(self.adds), "session": list(self.session)}

"""`SessionState`: what earlier calls in one downstream session look like to policy conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SessionState"]


class SessionState:
    """Per downstream session counters, owned by the gateway and read by CEL as ``session``.

    Attributes:
        id: The session id (``session.id``).
        calls: Number of executed calls (``session.calls``).
        tool_calls: Executed calls per exposed tool name (``session.tool_calls``).
        last_args: Arguments of the last executed call per tool name (``session.last_args``).
    """

    __slots__ = ("calls", "id", "last_args", "tool_calls")

    def __init__(self, id: str) -> None:
        self.id = id
        self.calls = 0
        self.tool_calls: dict[str, int] = {}
        self.last_args: dict[str, Mapping[str, Any]] = {}

    def record(self, tool_name: str, args: Mapping[str, Any]) -> None:
        """Count one executed call of ``tool_name`` and remember a shallow copy of its arguments."""
        self.calls += 1
        self.tool_calls[tool_name] = self.tool_calls.get(tool_name, 0) + 1
        self.last_args[tool_name] = dict(args)

    def cel_value(self) -> dict[str, Any]:
        """The value CEL sees as ``session``."""
        return {
            "id": self.id,
            "calls": self.calls,
            "tool_calls": self.tool_calls,
            "last_args": self.last_args,
        }

    def __repr__(self) -> str:
        return f"SessionState(id={self.id!r}, calls={self.calls})"

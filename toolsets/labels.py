"""`LabelSink`: where wrappers add data-flow labels to a call's session (the gateway's
`gateway.sessions.labels.SessionLabelSink` implements it), without importing the gateway."""

from __future__ import annotations

from typing import Protocol

from toolsets.context import CallContext

__all__ = ["LabelSink"]


class LabelSink(Protocol):
    """Adds labels to the session of a call."""

    async def add(self, ctx: CallContext, labels: frozenset[str], source: str) -> None:
        """Add ``labels`` to ``ctx``'s session, brought in by ``source`` (a tool name, or what
        found them, e.g. ``inspector:NAME``) in the call ``ctx.call_id``; saved with the
        session. Raises ``ValueError`` on an invalid label name."""
        ...

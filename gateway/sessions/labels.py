"""`SessionLabelSink`: adds data-flow labels to a call's session in the `SessionBook` (the
`toolsets.labels.LabelSink` wrappers and inspectors call)."""

from __future__ import annotations

import time

from gateway.sessions.book import SessionBook
from policies.session_labels import LabelSource
from toolsets.context import CallContext

__all__ = ["SessionLabelSink"]


class SessionLabelSink:
    """Implements `toolsets.labels.LabelSink` over a `SessionBook`."""

    def __init__(self, book: SessionBook) -> None:
        self.book = book

    async def add(self, ctx: CallContext, labels: frozenset[str], source: str) -> None:
        """Add ``labels`` to ``ctx``'s session (loaded first), brought in by ``source``."""
        if not labels:
            return
        state = await self.book.ensure(ctx)
        state.tenant = ctx.principal.tenant
        state.add_labels(labels, LabelSource(call_id=ctx.call_id, tool=source, at=time.time()))
        self.book.changed(ctx)

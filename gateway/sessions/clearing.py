"""`LabelClearing`: an approver clears a session's data-flow labels, on record.

Labels only grow while the agent works; clearing them is an approver's act (the REST API's
``POST /api/sessions/{id}/labels/clear``, ``lockgate sessions clear-labels``), never a tool the
agent can call. The ``session.labels_cleared`` event (who, why, which labels and the calls that
brought them in) is written to the audit log before the labels are dropped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

from gateway.events.model import Event
from gateway.sessions.book import SessionBook
from policies.session import SessionState
from policies.session_labels import label_problem
from toolsets.context import CallContext, Principal

__all__ = ["LABELS_CLEARED", "LabelClearing", "session_labels_json"]

LABELS_CLEARED: Final = "session.labels_cleared"

Record = Callable[[Event], Awaitable[None]]


def session_labels_json(book_state: Any) -> dict[str, Any]:
    """A session's labels as the API shows them: names, and per label the calls that brought
    it in (call id, tool, time)."""
    labels = book_state.label_book
    return {
        "labels": sorted(labels.names),
        "sources": {name: [s.to_json() for s in labels.sources(name)] for name in labels.names},
    }


class LabelClearing:
    """Clears labels of a session in ``book``, recording each clearing with ``record`` first
    (the gateway's `gateway.events.recorder.Recorder`: audit, then the bus)."""

    def __init__(self, book: SessionBook, record: Record) -> None:
        self.book = book
        self.record = record

    async def show(self, principal: str, session: str, *, who: Principal) -> dict[str, Any]:
        """The labels of ``principal``'s session ``session``, as approver ``who`` may see them
        (a session of another tenant shows none)."""
        state = await self.book.ensure(_context(principal, session))
        return session_labels_json(state if state.tenant == who.tenant else SessionState(""))

    async def clear(
        self,
        principal: str,
        session: str,
        *,
        by: Principal,
        reason: str,
        labels: Iterable[str] | None = None,
    ) -> frozenset[str]:
        """Clear ``labels`` (None: all) of ``principal``'s session ``session``; returns those it
        carried. Raises ``ValueError`` on an invalid label name or an empty reason."""
        names = None if labels is None else frozenset(labels)
        for name in names or ():
            if (problem := label_problem(name)) is not None:
                raise ValueError(problem)
        if not reason.strip():
            raise ValueError("a reason is required to clear a session's labels")
        ctx = _context(principal, session)
        state = await self.book.ensure(ctx)
        carried = state.labels if names is None else state.labels & names
        if not carried or state.tenant != by.tenant:  # another tenant's: as if it had none
            return frozenset()
        shown = session_labels_json(state)
        await self.record(
            Event(
                type=LABELS_CLEARED,
                data={
                    "principal": principal,
                    "session_id": session,
                    "labels": sorted(carried),
                    "sources": {name: shown["sources"][name] for name in sorted(carried)},
                    "cleared_by": by.id,
                    "reason": reason,
                    **({"tenant": state.tenant} if state.tenant is not None else {}),
                },
            )
        )
        state.clear_labels(carried)
        self.book.changed(ctx)
        await self.book.settle(ctx)
        await self.book.flush()
        return carried


def _context(principal: str, session: str) -> CallContext:
    return CallContext(principal=Principal(id=principal), session_id=session)

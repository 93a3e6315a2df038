"""`SessionBook`: every downstream session's state, as the policy reads it.

A session is keyed by its principal and session id (``principal:session``): a 2025-11-25
session's ``Mcp-Session-Id``, a stdio connection, or the key a 2026-07-28 client supplies
(`SESSION_HEADER` or ``_meta["lockgate/session"]``); without one, all of a principal's
2026-07-28 calls share one session. States are kept in memory (the most recent `MAX_SESSIONS`),
loaded from the store on first use, and written behind: changed states are saved together every
`FLUSH_INTERVAL` and when the gateway stops.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from types import TracebackType
from typing import Final, Self

import anyio
from anyio.abc import TaskGroup

from gateway.sessions.store import SessionStore
from policies.session import SessionState
from toolsets.context import CallContext

__all__ = ["FLUSH_INTERVAL", "MAX_SESSIONS", "SessionBook", "session_key"]

log = logging.getLogger("lockgate.sessions")
MAX_SESSIONS: Final = 10_000
"""Session states kept in memory; the least recently used are dropped (after being saved)."""
FLUSH_INTERVAL: Final = 0.2
"""Seconds between saves of changed states."""


def session_key(ctx: CallContext) -> str:
    """The key of ``ctx``'s session: a session never sees another principal's state."""
    return f"{ctx.principal.id}:{ctx.session_id or ''}"


class SessionBook:
    """Session states by key; `ensure` before a listing or call, then `get` is synchronous."""

    def __init__(self, store: SessionStore, *, limit: int = MAX_SESSIONS) -> None:
        self.store = store
        self._limit = limit
        self._states: OrderedDict[str, SessionState] = OrderedDict()
        self._dirty: dict[str, SessionState] = {}
        self._flushed = anyio.Event()
        self._tg: TaskGroup | None = None

    async def ensure(self, ctx: CallContext) -> SessionState:
        """The state of ``ctx``'s session, loaded from the store the first time."""
        key = session_key(ctx)
        state = self._states.get(key)
        if state is not None:
            self._states.move_to_end(key)
            return state
        saved = await self.store.load(key)
        state = self._states.get(key)  # another task may have loaded it meanwhile
        if state is None:
            state = SessionState.from_json(saved) if saved else SessionState(ctx.session_id or key)
            self._keep(key, state)
        return state

    def get(self, ctx: CallContext) -> SessionState:
        """The state of ``ctx``'s session (an empty one if it was never loaded)."""
        key = session_key(ctx)
        state = self._states.get(key)
        if state is None:
            state = SessionState(ctx.session_id or key)
            self._keep(key, state)
        return state

    def loaded(self) -> list[tuple[str, SessionState]]:
        """The sessions held in memory now (key and state), most recently used last."""
        return list(self._states.items())

    def changed(self, ctx: CallContext) -> None:
        """``ctx``'s state changed: save it with the next flush."""
        key = session_key(ctx)
        self._dirty[key] = self.get(ctx)

    async def settle(self, ctx: CallContext) -> None:
        """A call of ``ctx``'s session was answered: here nothing (written behind); a book
        shared by replicas saves it now (`gateway.postgres.session_book`)."""

    def _keep(self, key: str, state: SessionState) -> None:
        self._states[key] = state
        while len(self._states) > self._limit:
            self._states.popitem(last=False)  # a changed state is still in `_dirty` until saved

    async def flush(self) -> None:
        """Save every changed state now."""
        dirty, self._dirty = self._dirty, {}
        if not dirty:
            return
        try:
            await self.store.save_many({key: state.to_json() for key, state in dirty.items()})
        except Exception as exc:  # kept for the next flush; calls go on
            log.error("session state not saved (%d sessions): %r", len(dirty), exc)
            self._dirty = {**dirty, **self._dirty}

    async def _flush_forever(self) -> None:
        while True:
            await anyio.sleep(FLUSH_INTERVAL)
            await self.flush()

    async def __aenter__(self) -> Self:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._flush_forever, name="session flush")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg, self._tg = self._tg, None
        if tg is not None:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)
        with anyio.CancelScope(shield=True):
            await self.flush()
            await self.store.close()
        return None

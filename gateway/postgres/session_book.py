"""`SharedSessionBook`: session states that several replicas serve, kept in PostgreSQL.

A 2026-07-28 client has no protocol session, so a load balancer may send each call to another
replica; the session's history must still hold every call. While a decision can read session
state (``read_through()``: the policy's `uses_session`, or scripts and hooks, which read and set
session variables), unlike the embedded book (loaded once, written behind):

- **read-through**: before every listing or call (`ensure`) the stored version is read (one
  query; the state itself only when it changed) and a newer state replaces the cached one;
- **write-through**: when a call changed the state, it is saved before the call is answered
  (`settle`), checked against the version it was read at. If another replica saved meanwhile,
  this replica's changes are merged onto the stored state (`session_merge.merge`) and saved
  again. Nothing is lost when two replicas serve one session at once.

When no decision reads session state, a state is read once (like the embedded book) and
written behind (every `gateway.sessions.book.FLUSH_INTERVAL`) with the same checked save and
merge: the stored history still gains every replica's calls, a fraction of a second later,
and a policy reload that starts reading ``session`` finds them (the next `ensure` reads
through).

While the database is unreachable, ``on_outage: fail_closed`` refuses the call
(`StoreUnavailable`); ``serve_allowed`` goes on with the cached state and saves later (the
write-behind flush keeps trying).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any, Final

import anyio

from gateway.config.storage import OnOutage
from gateway.postgres.session_merge import merge
from gateway.postgres.sessions import PostgresSessionStore
from gateway.sessions.book import MAX_SESSIONS, SessionBook, session_key
from policies.session import SessionState
from toolsets.context import CallContext
from toolsets.errors import StoreUnavailable

__all__ = ["SharedSessionBook"]

log = logging.getLogger("lockgate.sessions")
_STRIPES: Final = 64
_MAX_MERGES: Final = 20


class SharedSessionBook(SessionBook):
    """See the module docstring.

    Args:
        store: The shared session store.
        on_outage: What `ensure` does while the database is unreachable.
        read_through: Whether a decision may read session state now (asked per call, so a
            policy reload takes effect at once); always, when omitted.
        limit: States cached in memory.
    """

    def __init__(
        self,
        store: PostgresSessionStore,
        *,
        on_outage: OnOutage,
        read_through: Callable[[], bool] = lambda: True,
        limit: int = MAX_SESSIONS,
    ) -> None:
        super().__init__(store, limit=limit)
        self._shared = store
        self._on_outage = on_outage
        self._read_through = read_through
        self._base: dict[str, tuple[int, dict[str, Any]]] = {}  # version and state as stored
        self._locks = tuple(anyio.Lock() for _ in range(_STRIPES))

    def _lock(self, key: str) -> anyio.Lock:
        return self._locks[hash(key) % _STRIPES]

    async def ensure(self, ctx: CallContext) -> SessionState:
        """``ctx``'s state as stored now (merged with this replica's unsaved changes).

        Raises:
            StoreUnavailable: The database is unreachable and ``on_outage`` is ``fail_closed``.
        """
        key = session_key(ctx)
        if key in self._states and not self._read_through():  # read once, written behind
            self._states.move_to_end(key)
            return self._states[key]
        async with self._lock(key):
            try:
                await self._refresh(key, ctx)
            except StoreUnavailable as exc:
                if self._on_outage == "fail_closed":
                    raise
                log.warning("session state not refreshed (serving cached state): %s", exc)
        return self.get(ctx)

    async def _refresh(self, key: str, ctx: CallContext) -> None:
        known = self._base.get(key)
        cached = self._states.get(key) or self._dirty.get(key)  # unsaved, though not cached
        found = await self._shared.load_if_changed(key, known[0] if known and cached else -1)
        version, stored = found if found is not None else (0, None)
        if stored is None:  # nothing stored yet, or unchanged since this replica read it
            if key not in self._states:
                self._keep(key, cached or SessionState(ctx.session_id or key))
            return
        fresh = stored
        if cached is not None and key in self._dirty:  # keep what is not saved yet
            fresh = merge(self._base_of(key, cached), cached.to_json(), stored)
        self._base[key] = (version, stored)
        state = SessionState.from_json(fresh)
        self._keep(key, state)
        if key in self._dirty:
            self._dirty[key] = state

    def _base_of(self, key: str, state: SessionState) -> dict[str, Any]:
        """The state as this replica last read or saved it (empty if never)."""
        known = self._base.get(key)
        return known[1] if known is not None else SessionState(state.id).to_json()

    async def settle(self, ctx: CallContext) -> None:
        """Save ``ctx``'s state now if its call changed it and decisions read it (never
        raises: on failure, and when no decision reads it, the write-behind flush saves it)."""
        key = session_key(ctx)
        if key in self._dirty and self._read_through():
            async with self._lock(key):
                await self._save_logged(key)

    async def flush(self) -> None:
        """Save every changed state now: in one statement, then one by one (merging) those
        another replica saved meanwhile."""
        keys = list(self._dirty)
        async with contextlib.AsyncExitStack() as stack:
            for stripe in sorted({hash(key) % _STRIPES for key in keys}):  # in one order
                await stack.enter_async_context(self._locks[stripe])
            for key in await self._save_together(keys):
                await self._save_logged(key)

    async def _save_together(self, keys: list[str]) -> list[str]:
        """Save ``keys``' states in one statement; the keys still to save one by one."""
        states = {key: self._dirty.pop(key) for key in keys if key in self._dirty}
        if not states:
            return []
        mine = {key: state.to_json() for key, state in states.items()}
        known = {key: self._base[key][0] if key in self._base else 0 for key in states}
        try:
            saved = await self._shared.save_all_if({k: (mine[k], known[k]) for k in states})
        except BaseException as exc:
            for key, state in states.items():
                self._unsaved(key, state)
            if not isinstance(exc, StoreUnavailable):
                raise
            log.error("session states not saved (kept for the next try): %s", exc)
            return []
        for key, state in states.items():
            if key in saved:
                self._saved(key, saved[key], mine[key], mine[key], state)
            else:  # another replica saved first: merged one by one
                self._unsaved(key, state)
        return [key for key in states if key not in saved]

    def _unsaved(self, key: str, state: SessionState) -> None:
        """``state`` (taken from ``_dirty`` to be saved) was not saved: it stays to be saved,
        unless a call changed the session meanwhile (then its newer state is there)."""
        self._dirty.setdefault(key, self._states.get(key, state))

    async def _save_logged(self, key: str) -> None:
        try:
            await self._save(key)
        except StoreUnavailable as exc:
            log.error("session state not saved (kept for the next try): %s", exc)

    async def _save(self, key: str) -> None:
        state = self._dirty.pop(key, None)
        if state is None:
            return
        try:
            await self._save_state(key, state)
        except BaseException:
            self._unsaved(key, state)
            raise

    async def _save_state(self, key: str, state: SessionState) -> None:
        version = self._base[key][0] if key in self._base else 0
        base, mine = self._base_of(key, state), state.to_json()
        taken = mine
        for _ in range(_MAX_MERGES):
            saved = await self._shared.save_if(key, mine, version)
            if saved is not None:
                self._saved(key, saved, mine, taken, state)
                return
            found = await self._shared.load_if_changed(key, -1)
            version, theirs = found if found is not None else (0, None)
            if theirs is None:  # deleted meanwhile: create it again
                continue
            if theirs == mine:  # an attempt whose answer was lost had committed
                self._saved(key, version, mine, taken, state)
                return
            mine, base = merge(base, mine, theirs), theirs
        raise StoreUnavailable(f"session {state.id!r}: too many concurrent writers; not saved")

    def _saved(
        self,
        key: str,
        version: int,
        stored: dict[str, Any],
        taken: dict[str, Any],
        state: SessionState,
    ) -> None:
        """``stored`` is saved at ``version``. When it merged other replicas' changes into
        ``taken`` (``state`` as it was saved), the cached state becomes ``stored`` plus what
        calls changed in ``state`` while it was being saved (they are not lost)."""
        self._base[key] = (version, stored)
        if stored is taken:
            return
        if key not in self._dirty:  # unchanged while it was saved
            self._keep(key, SessionState.from_json(stored))
            return
        rebased = SessionState.from_json(merge(taken, state.to_json(), stored))
        self._keep(key, rebased)
        self._dirty[key] = rebased

    def _keep(self, key: str, state: SessionState) -> None:
        self._states[key] = state
        self._states.move_to_end(key)
        while len(self._states) > self._limit:
            old, _ = self._states.popitem(last=False)
            if old not in self._dirty:  # a changed one stays in `_dirty`, with its base
                self._base.pop(old, None)

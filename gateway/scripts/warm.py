"""`WarmSessions`: sandbox sessions kept checked out between runs of one caller's session.

A run costs a worker checkout and a feed of the whole source; a warm session has the source fed
already, so the next run of the same code, by the same principal in the same session with the
same tools, is one feed of the call. At most ``limit`` sessions are kept (each holds a worker),
one per key, each for at most ``ttl`` seconds idle and ``max_runs`` runs; a run that fails (an
error, a hit limit, a cancellation) discards its session. A new session that would find every
one of the pool's ``workers`` held first closes the idle sessions in its way (the oldest first),
so a warm session never keeps a run waiting. Module globals of a script may
therefore survive between runs of one session; they never cross sessions or principals.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
from pydantic_monty import AsyncMontySession, ExternalModule

from gateway.scripts.feed import Answers, feed

__all__ = ["Bound", "NoWorker", "WarmSessions"]


class NoWorker(Exception):
    """No worker of the pool was free within its checkout timeout."""


class Bound(Answers, Protocol):
    """A session's host modules, the run they serve now and the host calls they answer on the
    event loop (`gateway.scripts.host.Dispatch`)."""

    modules: dict[str, ExternalModule]
    run: Any


@dataclass
class _Warm:
    session: AsyncMontySession
    bound: Bound
    since: float
    runs: int = 0


Checkout = Callable[[dict[str, ExternalModule]], AsyncMontySession]


class WarmSessions:
    """Idle, fed sessions by key."""

    def __init__(self, *, limit: int, workers: int, ttl: float = 30.0, max_runs: int = 500) -> None:
        self._limit, self._workers, self._ttl, self.max_runs = limit, workers, ttl, max_runs
        self._idle: dict[Hashable, _Warm] = {}
        self._busy = 0  # sessions feeding a run now

    async def feed(
        self,
        key: Hashable,
        *,
        checkout: Checkout,
        bind: Callable[[], Bound],
        run: Any,
        first: Callable[[], str],
        again: str,
        inputs: dict[str, Any],
    ) -> Any:
        """Feed ``again`` to the warm session of ``key`` (or ``first`` to a new one), with
        ``run`` serving its host modules.

        Raises:
            NoWorker: a new session found no free worker in the pool's checkout timeout.
        """
        await self._expire()
        self._busy += 1
        try:
            warm = self._idle.pop(key, None)
            if warm is not None and not _alive(warm.session.worker_pid):
                await _close(warm)  # its worker died while idle: the pool replaces it
                warm = None
            code = again if warm is not None else first
            warm = warm or await self._new(checkout, bind)
            warm.bound.run = run
            try:
                text = code if isinstance(code, str) else code()
                value = await feed(warm.session, text, inputs, warm.bound)
            except BaseException:
                await _close(warm)
                raise
            finally:
                warm.bound.run = None
        finally:
            self._busy -= 1
        await self._keep(key, warm)
        return value

    async def _new(self, checkout: Checkout, bind: Callable[[], Bound]) -> _Warm:
        """A new session, its worker checked out of the pool (once the idle sessions in its
        way are closed, the oldest first)."""
        while self._idle and self._busy - 1 + len(self._idle) >= self._workers:
            await _close(self._idle.pop(next(iter(self._idle))))
        bound = bind()
        session = checkout(bound.modules)
        try:
            await session.__aenter__()
        except TimeoutError:
            raise NoWorker from None
        return _Warm(session, bound, 0.0)

    async def _keep(self, key: Hashable, warm: _Warm) -> None:
        warm.runs += 1
        if self._limit <= 0 or key in self._idle or warm.runs >= self.max_runs:
            await _close(warm)
            return
        while len(self._idle) >= self._limit:
            await _close(self._idle.pop(next(iter(self._idle))))
        warm.since = time.monotonic()
        self._idle[key] = warm

    async def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, w in self._idle.items() if now - w.since > self._ttl]:
            await _close(self._idle.pop(key))

    async def close(self) -> None:
        """Return every idle session's worker to the pool."""
        idle, self._idle = self._idle, {}
        for warm in idle.values():
            await _close(warm)


def _alive(pid: int | None) -> bool:
    if pid is None:
        return True  # a remote worker: its failures surface on the feed
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _close(warm: _Warm) -> None:
    with anyio.CancelScope(shield=True):
        await warm.session.__aexit__(None, None, None)

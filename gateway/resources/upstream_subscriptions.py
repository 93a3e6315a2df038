"""`Subscriptions`: upstream resource subscriptions, one per server and URI, reference-counted.

Downstream sessions ``acquire`` and ``release`` (server, URI) pairs; the first holder subscribes
upstream, the last release unsubscribes (in the background: a session that ends never waits on
an upstream). A 2025-11-25 server is sent ``resources/subscribe``; a
2026-07-28 server gets a ``subscriptions/listen`` stream for the URI, a task of this object's task
group that lives until the release (or the connection). A server that is down meanwhile is
subscribed again when it comes back (`reconnected`); one that declared no ``subscribe`` is
never asked, and whatever updates it sends anyway still reach the holders. A server reached with
each caller's own credentials has no subscriptions here (`gateway.resources.session_subscriptions`
refuses them).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import TaskStatus

from gateway.background.owner import TaskOwner
from gateway.resources.routes import Route, Routes
from gateway.resources.upstream import UpstreamResources
from toolsets.errors import ResourceNotFound, UpstreamError

__all__ = ["Subscriptions"]

log = logging.getLogger("lockgate.surface")
Key = tuple[str, str]
"""A server and its own resource URI."""
MIN_RETRY, MAX_RETRY = 0.5, 30.0
"""Seconds between attempts to reopen a listen stream that ended (doubling)."""


class Subscriptions(TaskOwner):
    """Reference-counted upstream subscriptions (see the module docstring); enter to run."""

    def __init__(self, routes: Routes) -> None:
        self._routes = routes
        self._counts: dict[Key, int] = {}
        self._streams: dict[Key, anyio.CancelScope] = {}
        self._locks = {server: anyio.Lock() for server in routes.upstreams}

    def held(self, server: str, uri: str) -> bool:
        """Whether some session holds a subscription to ``server``'s ``uri``."""
        return (server, uri) in self._counts

    async def acquire(self, route: Route) -> None:
        """One more holder of ``route``'s resource; the first subscribes upstream.

        Raises:
            ResourceNotFound: the server has no such resource (nothing is held then).
            UpstreamError: the server refused the subscription (nothing is held then).
        """
        key, upstream = (route.server, route.target), self._routes.upstreams[route.server]
        async with self._locks[route.server]:
            if key not in self._counts:
                await self._open(upstream, route.target)
            self._counts[key] = self._counts.get(key, 0) + 1

    def release(self, route: Route) -> None:
        """One holder fewer; after the last, the upstream subscription ends in the background
        (a session's end never waits on its upstreams)."""
        key = (route.server, route.target)
        count = self._counts.pop(key, 0) - 1
        if count > 0:
            self._counts[key] = count
            return
        stream = self._streams.pop(key, None)
        if stream is not None:
            stream.cancel()
        elif count == 0 and self._tg is not None:
            self._tg.start_soon(self._unsubscribe, self._routes.upstreams[key[0]], route.target)

    async def _unsubscribe(self, upstream: UpstreamResources, uri: str) -> None:
        async with self._locks[upstream.name]:
            if (upstream.name, uri) in self._counts:  # held again meanwhile
                return
            if upstream.offers("subscribe") and not upstream.modern:
                try:
                    await upstream.subscribe(uri, on=False)
                except UpstreamError as exc:
                    log.info("server %s: unsubscribing from %r failed: %s", upstream.name, uri, exc)

    def reconnected(self, server: str, then: Callable[[], Awaitable[None]]) -> None:
        """``server`` has a new session: renew what is held there, then run ``then`` (both in
        the background; right away when not running)."""
        if self._tg is not None:
            self._tg.start_soon(self._renew, self._routes.upstreams[server], then)

    async def _renew(
        self, upstream: UpstreamResources, then: Callable[[], Awaitable[None]]
    ) -> None:
        try:
            await self._resubscribe(upstream)
            await then()
        except Exception:  # a background task: the service carries on
            log.exception("server %s: renewing after a reconnect failed", upstream.name)

    async def _resubscribe(self, upstream: UpstreamResources) -> None:
        async with self._locks[upstream.name]:
            for server, uri in list(self._counts):
                if server != upstream.name:
                    continue
                stale = self._streams.pop((server, uri), None)
                if stale is not None:
                    stale.cancel()
                try:
                    await self._open(upstream, uri)
                except (UpstreamError, ResourceNotFound) as exc:  # gone meanwhile: still held
                    log.warning("server %s: resubscribing to %r failed: %s", server, uri, exc)
                gone = (server, uri) not in self._counts  # let go meanwhile
                if gone and (stream := self._streams.pop((server, uri), None)) is not None:
                    stream.cancel()

    async def _open(self, upstream: UpstreamResources, uri: str) -> None:
        if not upstream.offers("subscribe"):  # down (renewed when up), or never offered
            return
        if not upstream.modern:
            await upstream.subscribe(uri)
        elif self._tg is not None:
            await self._tg.start(self._stream, upstream, uri)

    async def _stream(
        self, upstream: UpstreamResources, uri: str, *, task_status: TaskStatus[None]
    ) -> None:
        """Hold a listen stream for ``uri`` open, reopened with backoff should it end while the
        server is up (a restarted 2026-07-28 server keeps no session to lose); its events reach
        the `ResourceService` through the toolset's notification listeners. `tg.start` returns
        once the first stream is acknowledged, or raises why it was not."""
        key, delay = (upstream.name, uri), None
        with anyio.CancelScope() as scope:
            try:
                while delay is None or upstream.offers("subscribe"):  # down: renewed when up
                    if delay is not None:
                        await anyio.sleep(delay * (0.5 + random.random() / 2))
                    delay = await self._listen(upstream, uri, scope, task_status, delay)
            finally:
                if self._streams.get(key) is scope:
                    del self._streams[key]

    async def _listen(
        self,
        upstream: UpstreamResources,
        uri: str,
        scope: anyio.CancelScope,
        task_status: TaskStatus[None],
        delay: float | None,
    ) -> float:
        """One listen stream until it ends; the delay before the next (none before the first
        stream was acknowledged: its failure is raised)."""
        try:
            async with upstream.listen(uri) as subscription:
                if delay is None:
                    self._streams[(upstream.name, uri)] = scope
                    task_status.started()
                delay = 0.0
                async for _event in subscription:
                    pass
        except Exception as exc:
            if delay is None:
                raise
            log.info("server %s: the subscription to %r ended: %s", upstream.name, uri, exc)
        return min(max(2 * delay, MIN_RETRY), MAX_RETRY)

"""`PerPrincipalToolset`: one upstream connection per principal, for servers whose callers each
bring their own credentials (``credentials.mode`` other than ``shared``).

Each principal's connection is an `MCPServerToolset` made by the gateway's ``factory`` with that
principal's secret, opened on first use (or when the secret is set: `warm`), closed after
``idle_timeout`` seconds unused, and at most ``max_connections`` at once. A stdio server is one
process per principal. Each caller is served the catalogue their own connection listed where it
differs from the common one (`PrincipalCatalogues`: the first connection's, which callers not
connected yet get); before any principal has connected it is empty. Connections, catalogues
and vault entries are keyed by `principal_key`: (tenant, principal). With ``shared`` (a server
with shared credentials whose config relays roots: `gateway.wiring.own_sessions`), the server's
own session lists the common catalogue and each principal's calls go over a session of theirs.
A call from a principal with no secret is held by the ``connect`` gate until they connect
(without one it is refused ``not_connected``, naming how to connect); a secret replaced or
revoked closes the connection made with the old one.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Callable, Hashable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup
from mcp_types import LoggingLevel

from toolsets.abstract import ToolsChangedHandler, Toolset
from toolsets.context import CallContext, Principal
from toolsets.errors import LockgateError, UpstreamError
from toolsets.refusal import failure_result, refusal_result
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.client_requests import PrincipalLogHandler, naming
from toolsets.upstream.principal_catalogues import PrincipalCatalogues
from toolsets.upstream.principal_ports import (
    ConnectGate,
    NotConnected,
    PrincipalSecrets,
    no_secret,
)
from toolsets.upstream.server import MCPServerToolset

__all__ = [
    "TENANT_SEPARATOR",
    "ConnectGate",
    "ConnectionFactory",
    "NotConnected",
    "PerPrincipalToolset",
    "PrincipalSecrets",
    "principal_key",
]

log = logging.getLogger("lockgate.upstream")

FIRST_LISTING_WAIT = 10.0
"""Seconds a listing made just after start waits for the first listing (through the first
principal with a secret) to end, so a decision or a listing right after a restart finds the
server's tools instead of none."""
TENANT_SEPARATOR = "\x1f"
"""Between a tenant and an id in a `principal_key` (ids and tenants are printable: no clash)."""


def principal_key(principal: Principal) -> str:
    """What a principal's connections and vault entries are keyed by: its id, qualified by its
    tenant when it has one (``alice`` of tenant ``acme`` is not the untenanted ``alice``)."""
    if principal.tenant is None:
        return principal.id
    return f"{principal.tenant}{TENANT_SEPARATOR}{principal.id}"


ConnectionFactory = Callable[[str, str, ToolsChangedHandler], MCPServerToolset]
"""``factory(principal, secret, on_tools_changed)``: a principal's (unopened) connection."""


@dataclass(eq=False)
class _Entry:
    toolset: MCPServerToolset
    fingerprint: bytes
    last_used: float
    active: int = 0
    stop: anyio.Event = field(default_factory=anyio.Event)
    closed: anyio.Event = field(default_factory=anyio.Event)


def _fingerprint(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


class _Unopened(UpstreamError):
    """A principal's connection could not be had (the server full, or it did not connect)."""


class PerPrincipalToolset(Toolset):
    """The tools of one upstream, each caller over their own connection."""

    def __init__(
        self,
        name: str,
        factory: ConnectionFactory,
        secrets: PrincipalSecrets,
        *,
        idle_timeout: float = 300.0,
        max_connections: int = 100,
        connect_timeout: float = 20.0,
        on_tools_changed: ToolsChangedHandler | None = None,
        connect: ConnectGate | None = None,
        shared: MCPServerToolset | None = None,
    ) -> None:
        self.name = name
        self.connect = connect
        self.factory, self.secrets = factory, secrets
        self.idle_timeout, self.max_connections = idle_timeout, max_connections
        self.connect_timeout = connect_timeout
        self.on_tools_changed = on_tools_changed
        self.entries: dict[str, _Entry] = {}
        self.catalogues = PrincipalCatalogues()
        self.shared = shared
        """The server's own session, when it has one: its catalogue is the common one (calls
        still go over each principal's connection)."""
        self._rebased: Hashable = None
        self._tg: TaskGroup | None = None
        self._on_log: PrincipalLogHandler | None = None
        self._log_level: LoggingLevel | None = None
        self._first_listing: anyio.Event | None = None
        """Set once the listing at start ended (None: none was started)."""

    def follow_logs(self, handler: PrincipalLogHandler) -> None:
        """Send every connection's log messages to ``handler``, naming its principal (those
        opened later too)."""
        self._on_log = handler
        for principal, entry in list(self.entries.items()):
            entry.toolset.follow_logs(naming(handler, principal))

    async def set_log_level(self, level: LoggingLevel | None) -> None:
        """Ask every connection (those opened later too) for log messages at ``level`` and up;
        the shared session, when there is one, is asked on its own (it is an upstream)."""
        self._log_level = level
        for entry in list(self.entries.values()):
            await entry.toolset.set_log_level(level)

    @property
    def label(self) -> str:
        return self.name

    @property
    def version(self) -> Hashable:
        if self.shared is None:
            return self.catalogues.version
        return (self.shared.version, self._catalogues().version)

    def _catalogues(self) -> PrincipalCatalogues:
        """The catalogues, the common one as the shared session lists it now."""
        shared = self.shared
        if shared is not None and shared.version != self._rebased:
            self._rebased = shared.version
            self.catalogues.rebase(shared.tools)
        return self.catalogues

    def variant(self, ctx: CallContext) -> Hashable:
        return self._catalogues().variant(principal_key(ctx.principal))

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        first = self._first_listing
        if first is not None and not first.is_set():  # just started: the first listing is on
            with anyio.move_on_after(FIRST_LISTING_WAIT):
                await first.wait()
        return self._catalogues().tools(principal_key(ctx.principal))

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        key = principal_key(ctx.principal)
        try:
            secret = await self.secrets.secret(key)
            held = None
            if self.connect is not None and secret is None:  # held until the caller connects
                outcome = await self.connect.required(self.name, tool, args, ctx)
                if isinstance(outcome, ToolResult):
                    return outcome
                held, secret = outcome, await self.secrets.secret(key)
            elif self.connect is not None:
                held = await self.connect.reissued(self.name, tool, args, ctx)
        except LockgateError as exc:  # the vault unreadable: its error names the key and fix
            return failure_result(str(exc), "gateway_unavailable", server=self.name)
        if secret is None:
            self.drop(key)
            return refusal_result(no_secret(self.name), tool=tool)
        try:
            result = await self._call(secret, name, args, ctx, tool)
        except BaseException as exc:  # ended ``failed`` at once, as a released approval is
            if held is not None and self.connect is not None:
                with anyio.CancelScope(shield=True):
                    await self.connect.failed(held, exc)
            raise
        if held is not None and self.connect is not None:
            await self.connect.finished(held, result)
        return result

    async def _call(
        self, secret: str, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        """Run the call over ``ctx.principal``'s connection made with ``secret``."""
        try:
            async with self._opened(principal_key(ctx.principal), secret) as toolset:
                return await toolset.call_tool(name, args, ctx, tool)
        except _Unopened as exc:
            return failure_result(str(exc), "upstream_unavailable", server=self.name)

    @contextlib.asynccontextmanager
    async def connection(self, ctx: CallContext) -> AsyncIterator[MCPServerToolset]:
        """``ctx.principal``'s own connection, opened as a call opens it and ready, kept from
        closing idle while in use: what their resource reads, prompt gets and completions of
        this server go over (never held at the connect gate: refused at once).

        Raises:
            NotConnected: the principal has no secret for this server.
            UpstreamError: the server is at ``max_connections``, or did not connect.
        """
        principal = principal_key(ctx.principal)
        secret = await self.secrets.secret(principal)
        if secret is None:
            self.drop(principal)
            raise NotConnected(no_secret(self.name))
        async with self._opened(principal, secret) as toolset:
            yield toolset

    @contextlib.asynccontextmanager
    async def _opened(self, principal: str, secret: str) -> AsyncIterator[MCPServerToolset]:
        """``principal``'s connection made with ``secret``, ready, kept from closing idle
        while in use.

        Raises:
            _Unopened: the server is at ``max_connections``, or did not connect.
        """
        entry = self._open(principal, secret)
        if entry is None:
            raise _Unopened(
                f"{self.name!r} has {self.max_connections} connections open (its "
                "credentials.max_connections): try again when one closes, or raise the limit",
                server=self.name,
            )
        entry.active += 1
        try:
            if not await entry.toolset.wait_ready(self.connect_timeout):
                raise _Unopened(
                    f"{self.name!r} did not connect with {principal!r}'s credentials "
                    f"({entry.toolset.detail}): check them, set them again, or try later",
                    server=self.name,
                )
            yield entry.toolset
        finally:
            entry.active -= 1
            entry.last_used = anyio.current_time()

    def _open(self, principal: str, secret: str) -> _Entry | None:
        """``principal``'s connection made with ``secret``: the one open, or a new one (None
        when the server is at ``max_connections``)."""
        fingerprint = _fingerprint(secret)
        entry = self.entries.get(principal)
        if entry is not None and entry.fingerprint == fingerprint:
            entry.last_used = anyio.current_time()
            return entry
        if entry is not None:  # the secret changed: the old connection goes
            self.drop(principal)
        elif len(self.entries) >= self.max_connections:
            return None
        assert self._tg is not None, "the toolset is not entered"
        toolset = self.factory(principal, secret, self._relisted(principal))
        toolset.requests.log_level = self._log_level  # told the server when it connects
        if self._on_log is not None:
            toolset.follow_logs(naming(self._on_log, principal))
        entry = _Entry(toolset, fingerprint, anyio.current_time())
        self.entries[principal] = entry
        self._tg.start_soon(self._hold, principal, entry, name=f"upstream {self.name} {principal}")
        return entry

    async def warm(self, principal: str, *, notify: bool = True) -> bool:
        """Open ``principal``'s connection now (its secret was just set) and wait for its
        first outcome, its tools becoming the catalogue; True when it is up (False: no secret,
        the server full or down). A revoked secret closes the connection instead. From inside
        a listing (``notify=False``) a changed catalogue is not announced: the listing in
        progress reads it, and announcing would list again, re-entering it."""
        secret = await self.secrets.secret(principal)
        if secret is None or self._tg is None:
            self.drop(principal)
            return False
        entry = self._open(principal, secret)
        if entry is None or not await entry.toolset.wait_ready(self.connect_timeout):
            return False
        await self._adopt(principal, entry.toolset.tools, notify=notify)
        return True

    async def wait_closed(self, principal: str) -> None:
        """Return once ``principal``'s current connection has closed (at once if none)."""
        entry = self.entries.get(principal)
        if entry is not None:
            await entry.closed.wait()

    def drop(self, principal: str) -> None:
        """Close ``principal``'s connection (its secret was revoked or replaced)."""
        entry = self.entries.pop(principal, None)
        if entry is not None:
            entry.stop.set()

    async def _hold(self, principal: str, entry: _Entry) -> None:
        """Keep ``entry`` open until it is dropped or idle for ``idle_timeout`` seconds."""
        try:
            async with entry.toolset:
                if await entry.toolset.wait_ready(self.connect_timeout):
                    await self._adopt(principal, entry.toolset.tools)
                entry.last_used = max(entry.last_used, anyio.current_time())  # idle from now
                while not entry.stop.is_set():
                    idle_until = entry.last_used + self.idle_timeout
                    if entry.active == 0 and anyio.current_time() >= idle_until:
                        self._forget(principal, entry)  # at once: no call picks it up now
                        break
                    with anyio.move_on_after(max(idle_until - anyio.current_time(), 0.05)):
                        await entry.stop.wait()
        finally:
            self._forget(principal, entry)
            entry.closed.set()

    def _forget(self, principal: str, entry: _Entry) -> None:
        if self.entries.get(principal) is entry:
            del self.entries[principal]

    async def _adopt(self, principal: str, tools: dict[str, ToolDef], notify: bool = True) -> None:
        if not self.catalogues.adopt(principal, tools):
            return
        if notify and self.on_tools_changed is not None:
            await self.on_tools_changed(self.name)

    def _relisted(self, principal: str) -> ToolsChangedHandler:
        """What ``principal``'s connection calls when it re-listed its tools: they become
        ``principal``'s catalogue."""

        async def relisted(source: str) -> None:
            entry = self.entries.get(principal)
            if entry is not None:
                await self._adopt(principal, entry.toolset.tools)

        return relisted

    async def _first(self) -> None:
        """At start: learn the catalogue through the first principal with a secret; listings
        waiting for it go on before the change is announced (the announcement lists again)."""
        version = self.catalogues.version
        try:
            known = await self.secrets.principals()
            if known:
                await self.warm(known[0], notify=False)
        except Exception as exc:  # the vault unreadable: calls will say so, one by one
            log.warning("%s: no catalogue at start (%s)", self.name, exc)
        finally:
            if self._first_listing is not None:
                self._first_listing.set()
        if self.catalogues.version != version and self.on_tools_changed is not None:
            await self.on_tools_changed(self.name)

    async def __aenter__(self) -> Self:
        if self.shared is not None:
            await self.shared.__aenter__()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        if self.shared is None:
            self._first_listing = anyio.Event()
            self._tg.start_soon(self._first, name=f"upstream {self.name} first listing")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        for principal in list(self.entries):
            self.drop(principal)
        tg, self._tg = self._tg, None
        if tg is not None:
            await tg.__aexit__(None, None, None)
        if self.shared is not None:
            await self.shared.__aexit__(exc_type, exc, tb)
        return None

"""`ConnectGate`: a call to a per-caller server its caller has not connected yet is held like an
approval, in a pending record of kind ``connect``, until they connect.

- The record is durable (the pending store), on record (``credential.required``, audited) and
  re-found by an identical re-issued call, like an approval's.
- A client that declared URL-mode elicitation is sent the connect link (``elicitation/create``,
  mode ``url``) and waits up to ``connect.hold`` seconds: once the user connects, the call runs,
  once, and its result is the answer.
- Any other client (or one that waited out the hold) is answered at once with an error result
  carrying the link and the CLI command; when the user has connected, the re-issued call claims
  the record and runs once.

The vault tells the gate when a connection is made (`connected`, one of its listeners): every
record of that principal and server waiting for it becomes ``approved``.

A connected caller's call looks for a record to claim only when its principal may have one: the
gate keeps the set of principals with a ``pending`` or ``approved`` connect record, read from the
store again after any write to it is told of (the store's own writes here, the PostgreSQL
notifications of other replicas' writes, a reconnect of those) and at least every `REREAD`
seconds, so a call of a caller with none reads nothing. A record held on another replica is told
of when it is created, long before its caller connects and calls again.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio

from gateway.approvals.errors import PendingConflict, PendingNotFound
from gateway.approvals.pending import PendingCall
from gateway.approvals.store import PendingStore
from gateway.approvals.wire import result_to_wire
from gateway.config.connect import ConnectConfig
from gateway.connect.asking import ask_to_connect
from gateway.connect.links import ConnectLinks
from gateway.events.model import Event
from toolsets.canonical import sha256_hex
from toolsets.context import CallContext
from toolsets.refusal import Refusal, Unblock, refusal_result
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.per_principal import TENANT_SEPARATOR, principal_key

__all__ = ["ConnectGate", "Connected", "Record"]

log = logging.getLogger("lockgate.connect")
Record = Callable[[Event], Awaitable[None]]
Connected = Callable[[str, str], Awaitable[bool]]
"""``connected(server, principal)``: whether the principal has a credential for the server."""
INDEX_LIMIT: Final = 10_000
"""Held connect records the gate indexes in memory; with more, every call looks."""
REREAD: Final = 1.0
"""Seconds the index is trusted without a write told of (a notification lost in an outage)."""


class ConnectGate:
    """Holds calls until their caller connects (implements
    `toolsets.upstream.per_principal.ConnectGate`).

    Args:
        config: The ``connect`` section.
        links: Makes the connect links.
        modes: Each per-caller server's ``credentials.mode``.
    """

    def __init__(self, config: ConnectConfig, links: ConnectLinks, modes: Mapping[str, str]):
        self.config, self.links, self.modes = config, links, dict(modes)
        self._store: PendingStore | None = None
        self._record: Record | None = None
        self._connected: Connected | None = None
        self._holding: set[str] | None = None  # None: unknown, every call looks
        self._stale = True  # the store was written since `_holding` was read
        self._read_at = 0.0
        self._reading = anyio.Lock()

    def bind(self, store: PendingStore, record: Record, connected: Connected) -> None:
        """Give the gate what is built after the pools: the pending store, the recorder, and
        who is connected; it hears of every write to the store."""
        self._store, self._record, self._connected = store, record, connected
        store.waiters.observers.append(self._written)

    def _written(self, id: str | None) -> None:
        """The store's observer: a record changed (here or elsewhere), or changes may have been
        missed: the principals with a held record are read again before next use."""
        self._stale = True

    @property
    def store(self) -> PendingStore:
        assert self._store is not None, "the connect gate is not bound"
        return self._store

    async def required(
        self, server: str, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> ToolResult | str:
        call = await self._find(tool, args, ctx)
        if call is None or call.state != "pending":  # approved but not connected: revoked since
            call = await self._open(server, tool, args, ctx)
        key = principal_key(ctx.principal)  # what the vault keys the caller's secret by
        link = self.links.link(
            pending_id=call.id, principal=key, server=server, expires_at=call.expires_at
        )
        if ctx.client.elicitation_url and ctx.peer is not None and self.config.hold > 0:
            call = await ask_to_connect(ctx, self.store, call, link, hold=self.config.hold)
            if call.state == "approved" and (claimed := await self._claim(call)) is not None:
                return claimed
        return self._held_result(call, link, tool)

    async def reissued(
        self, server: str, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> str | None:
        # The store, not this process, knows: the caller may have connected on another
        # replica, or before a restart. Its writes since it was last read say whether to look.
        if not await self._may_hold(ctx.principal.id):
            return None
        call = await self._find(tool, args, ctx)
        return await self._claim(call) if call is not None and call.state == "approved" else None

    async def _may_hold(self, principal: str) -> bool:
        """Whether ``principal`` may have a held connect record to claim."""
        if self._due():
            async with self._reading:
                if self._due():
                    await self._read_held()
        return self._holding is None or principal in self._holding

    def _due(self) -> bool:
        return self._stale or anyio.current_time() - self._read_at > REREAD

    async def _read_held(self) -> None:
        # Not stale from here: a write told of during the read is read again.
        self._stale, self._read_at = False, anyio.current_time()
        try:
            found = await self.store.list(
                state=("pending", "approved"), kind="connect", limit=INDEX_LIMIT
            )
        except BaseException:
            self._stale = True
            raise
        self._holding = None if len(found) >= INDEX_LIMIT else {c.principal for c in found}

    async def finished(self, held: str, result: ToolResult) -> None:
        with contextlib.suppress(PendingConflict, PendingNotFound):
            await self.store.transition(
                held,
                expect={"executing"},
                to="failed" if result.is_error else "done",
                result=result_to_wire(result),
                delivered=True,
            )

    async def failed(self, held: str, error: BaseException) -> None:
        """The held call ``held`` raised ``error``: it ends ``failed`` now, not at recovery."""
        with contextlib.suppress(PendingConflict, PendingNotFound):
            await self.store.transition(
                held,
                expect={"executing"},
                to="failed",
                error=f"{type(error).__name__}: {error}",
                delivered=True,
            )

    async def connected(self, server: str, key: str) -> None:
        """The vault's listener: the principal of vault key ``key`` (`principal_key`)
        connected (or revoked) ``server``; its held records of that server become
        ``approved`` when it is connected now."""
        if server not in self.modes or self._store is None or self._connected is None:
            return
        if not await self._connected(server, key):
            return
        tenant, _, principal = key.rpartition(TENANT_SEPARATOR)
        waiting = await self.store.list(
            state="pending", kind="connect", principal=principal, limit=1000
        )
        for call in waiting:
            if call.server != server or (call.tenant or "") != tenant:
                continue
            with contextlib.suppress(PendingConflict, PendingNotFound):
                await self.store.transition(
                    call.id,
                    expect={"pending"},
                    to="approved",
                    decided_by=principal,
                    decision="approve",
                    channel="connect",
                )

    async def _find(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> PendingCall | None:
        """The held record an identical call left, if any."""
        principal, digest = ctx.principal.id, sha256_hex(args)
        return await self.store.find_reusable(principal, tool.name, digest, kind="connect")

    async def _claim(self, call: PendingCall) -> str | None:
        try:
            claimed = await self.store.transition(call.id, expect={"approved"}, to="executing")
        except (PendingConflict, PendingNotFound):  # another identical call claimed it first
            return None
        return claimed.id

    async def _open(
        self, server: str, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> PendingCall:
        """A new held record for this call, durable and on record before anyone is told."""
        mode = self.modes.get(server, "secret")
        call = PendingCall.new(
            args=args,
            ttl=self.config.link_ttl,
            approvers=(ctx.principal.id,),
            decisions=(),
            kind="connect",
            call_id=ctx.call_id,
            principal=ctx.principal.id,
            session_id=ctx.session_id,
            tool=tool.name,
            server=server,
            upstream_tool=tool.upstream_name,
            tool_pin=tool.pin,
            policy_version="",
            rule_id=None,
            reason=f"connect {server!r} ({mode})",
            principal_roles=tuple(sorted(ctx.principal.roles)),
            tenant=ctx.principal.tenant,
        )
        await self.store.create(call)
        if self._record is not None:
            await self._record(required_event(call, mode))
        return call

    def command(self, server: str) -> str:
        """The CLI command that connects ``server``."""
        verb = "set" if self.modes.get(server, "secret") == "secret" else "connect"
        return f"lockgate connections {verb} {server}"

    def _held_result(self, call: PendingCall, link: str, tool: ToolDef) -> ToolResult:
        minutes = max(1, round((call.expires_at - time.time()) / 60))
        server = call.server
        message = (
            f"{server!r} is reached with each caller's own credentials and you have not "
            f"connected it: open {link} to connect (the link works once, for about {minutes} "
            f"min), or run `{self.command(server)}`; then call again (call {call.id} is held "
            "until then)"
        )
        refusal = Refusal(
            kind="not_connected",
            message=message,
            unblock=Unblock(action="connect", url=link),
            approval=call.id,
            details={"server": server, "command": self.command(server)},
        )
        pending = {"lockgate/pending": {"id": call.id, "kind": "connect", "state": call.state}}
        return refusal_result(refusal, tool=tool, meta=pending)


def required_event(call: PendingCall, mode: str) -> Event:
    """``credential.required``: the held record, never the link (it is a credential)."""
    data = {
        "server": call.server,
        "principal": call.principal,
        "mode": mode,
        "pending_id": call.id,
        "call_id": call.call_id,
        "tool": call.tool,
        "session_id": call.session_id,
        "expires_at": call.expires_at,
    }
    return Event(type="credential.required", data=data)


def connect_expired_event(call: PendingCall) -> Event:
    """``credential.failed`` with reason ``expired``: the held connect record ``call`` expired
    before its caller connected (not an approval's outcome: approvers' channels never see it)."""
    data = {
        "server": call.server,
        "principal": call.principal,
        "reason": "expired",
        "pending_id": call.id,
        "call_id": call.call_id,
        "tool": call.tool,
        "session_id": call.session_id,
    }
    return Event(type="credential.failed", data=data)

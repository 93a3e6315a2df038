"""The fast path of the stdio face: plain ``tools/call`` and ``tools/list`` lines answered here.

The SDK's stdio transport reads each line in a worker thread, validates it into pydantic models,
and dispatches it through the server session; the answer goes back the same way. A plain call
(no progress token, no answer to an earlier question) needs none of that: its line is decoded
once, handed to the same `CallHandler` as the SDK handler, and its response written as one line.
A plain ``tools/list`` (no cursor, no progress token) is answered from
`gateway.mcp.listings.Listings`, under the same conditions as a call.

Every other line goes to the SDK server unchanged, in order, and the SDK stays the authority on
the session: ``initialize``, other listings, progress, ``ping``, protocol errors. A call is
only taken here once the handshake-era session is initialized (its negotiated version and declared
capabilities are read off the handshake as it passes), or when its 2026-07-28 envelope passes
the SDK's own validation ladder. A call that would ask a 2025-11-25 caller (`BackChannelRequired`,
raised before anything ran) goes to the SDK, whose session can ask. An upstream's request to the
client during a call taken here (from a 2025-11-25 client that declared the capability) is
written here as a line, and the client's answer taken off the wire (`gateway.mcp.relay.wire`).
``notifications/cancelled`` for a call taken here cancels it, and a cancelled call is never
answered.
``lockgate_mcp_requests_total{transport="stdio",path}`` counts which path answered.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED, PROTOCOL_VERSION_META_KEY, ErrorData

from gateway.approvals.errors import BackChannelRequired
from gateway.mcp.listings import Listings, listing_id
from gateway.mcp.raw_calls import (
    PlainCall,
    RequestId,
    invalid_id,
    modern_client,
    plain_call,
    refusal_bytes,
    response_bytes,
)
from gateway.mcp.relay import declared, named
from gateway.mcp.relay.wire import WirePeer, WireRequests
from gateway.mcp.server import GatewayServer
from gateway.metrics import Metrics
from gateway.telemetry import request_span
from toolsets import jsonwire, trace_context
from toolsets.context import CallContext, ClientInfo

__all__ = ["LineWriter", "StdioFastPath"]

log = logging.getLogger("lockgate.downstream")
LineWriter = Callable[[bytes], Awaitable[None]]
"""Writes one JSON-RPC message (without its newline) to the client."""
_CLOSED = ErrorData(code=CONNECTION_CLOSED, message="Connection closed")
_ToServer = MemoryObjectSendStream[SessionMessage | Exception]


def _parse(line: bytes) -> SessionMessage | Exception:
    """The line as the SDK's stdio transport would hand it to the server session."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except Exception as exc:  # the session answers a malformed line itself
        return exc


@dataclass(frozen=True, slots=True, kw_only=True)
class _Wire:
    """One connection's ends: the SDK server's input, the client's output, the calls running."""

    to_server: _ToServer
    write: LineWriter
    calls: TaskGroup


class _Handshake:
    """What a 2025-11-25 stdio session negotiated, read off its handshake as it passes: the
    client once both the ``initialize`` answer and ``notifications/initialized`` went by."""

    def __init__(self) -> None:
        self.request_id: RequestId | None = None
        self.capabilities: dict[str, bool] = {}
        self.named: tuple[str | None, str | None] = (None, None)
        self.version: str | None = None
        self.initialized = False
        self.client: ClientInfo | None = None

    def incoming(self, message: Mapping[str, Any]) -> None:
        method = message.get("method")
        if method == "initialize" and "id" in message:
            params = message.get("params")
            caps = params.get("capabilities") if isinstance(params, dict) else None
            self.request_id = message["id"]
            self.capabilities = declared(caps)
            self.named = named(params.get("clientInfo") if isinstance(params, dict) else None)
        elif method == "notifications/initialized":
            self.initialized = True
            self._settle()

    def outgoing(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse) and message.id == self.request_id:
            version = message.result.get("protocolVersion")
            self.version = version if isinstance(version, str) else None
            self._settle()

    def _settle(self) -> None:
        if self.initialized and self.version is not None:
            self.client = ClientInfo(
                era="legacy",
                protocol_version=self.version,
                transport="stdio",
                **self.capabilities,
                name=self.named[0],
                version=self.named[1],
            )


class StdioFastPath:
    """Serves one stdio connection: fast calls here, every other line to the SDK server."""

    def __init__(self, server: GatewayServer, metrics: Metrics) -> None:
        self.server = server
        self.handle = server.downstream.handle
        self.principal = server.downstream.principal
        self.session_id = server.downstream.connection_id
        self._stamp = server.server_info_stamp
        self._fast = metrics.mcp_requests.labels(transport="stdio", path="fast")
        self._sdk = metrics.mcp_requests.labels(transport="stdio", path="sdk")
        self._handshake = _Handshake()
        self._asked = WireRequests()
        self._inflight: dict[RequestId, anyio.CancelScope] = {}
        self._write_lock = anyio.Lock()
        self._listings = Listings(server)

    async def serve(self, lines: AsyncIterator[bytes], write: LineWriter) -> None:
        """Serve until ``lines`` ends; calls still running then are cancelled, as the SDK
        cancels its own."""
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception]()
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage]()

        async def write_line(data: bytes) -> None:
            async with self._write_lock:
                await write(data)

        async with anyio.create_task_group() as outer:
            outer.start_soon(self._outgoing, from_server, write_line)
            async with anyio.create_task_group() as calls:
                wire = _Wire(to_server=to_server, write=write_line, calls=calls)
                async with server_writes, anyio.create_task_group() as sdk:
                    options = self.server.create_initialization_options()
                    sdk.start_soon(self.server.run, server_reads, server_writes, options)
                    async with to_server:
                        async for line in lines:
                            await self._incoming(line.strip(), wire)
                calls.cancel_scope.cancel()

    async def _incoming(self, line: bytes, wire: _Wire) -> None:
        to_server = wire.to_server
        if not line:
            return
        try:
            message = jsonwire.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("jsonrpc") == "2.0":
            if (invalid := invalid_id(message)) is not None:
                await wire.write(refusal_bytes(invalid))
                return
            if self._asked.take(message):  # the client's answer to an upstream's request
                self._fast.inc()
                return
            self._handshake.incoming(message)
            call = plain_call(message)
            client = self._client(message) if call is not None else None
            if call is not None and client is not None:
                # Registered before the call starts: a cancel read next finds it.
                scope = self._inflight[call.id] = anyio.CancelScope()
                wire.calls.start_soon(self._answer, call, client, scope, line, wire)
                return
            request_id = listing_id(message) if call is None else None
            client = self._client(message) if request_id is not None else client
            if request_id is not None and client is not None:
                wire.calls.start_soon(self._list, request_id, client, line, wire)
                return
            if message.get("method") == "notifications/cancelled" and self._cancel(message):
                return
        self._sdk.inc()
        await to_server.send(_parse(line))

    def _client(self, message: Mapping[str, Any]) -> ClientInfo | None:
        """Who sent this call, when the SDK would take it as is; None sends it to the SDK."""
        meta = message.get("params", {}).get("_meta")
        if not (isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta):
            return self._handshake.client
        verdict = classify_inbound_request(message)
        if isinstance(verdict, InboundLadderRejection):
            return None
        return modern_client(verdict, "stdio")

    def _cancel(self, message: Mapping[str, Any]) -> bool:
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return False
        scope = self._inflight.get(request_id)
        if scope is None:
            return False
        scope.cancel()
        self._fast.inc()
        return True

    async def _list(
        self, request_id: RequestId, client: ClientInfo, line: bytes, wire: _Wire
    ) -> None:
        """``tools/list`` answered from `Listings`; an error in the listing goes to the SDK,
        which answers it."""
        ctx = CallContext(principal=self.principal, session_id=self.session_id, client=client)
        version = client.protocol_version or ""
        telemetry = self.server.downstream.gateway.parts.telemetry
        trace = trace_context.of_message(jsonwire.loads(line)) if telemetry is not None else {}
        try:
            with request_span(telemetry, "tools/list", ctx, trace=trace, request_id=request_id):
                body = await self._listings.answer(request_id, ctx, version)
        except Exception:
            await self._to_sdk(wire.to_server, line)
            return
        self._fast.inc()
        await wire.write(body)

    async def _to_sdk(self, to_server: _ToServer, line: bytes) -> None:
        """Hand a line taken here to the SDK after all (unless the input has ended meanwhile)."""
        self._sdk.inc()
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await to_server.send(_parse(line))

    async def _answer(
        self,
        call: PlainCall,
        client: ClientInfo,
        scope: anyio.CancelScope,
        line: bytes,
        wire: _Wire,
    ) -> None:
        to_server, write = wire.to_server, wire.write
        peer = WirePeer(self._asked, write) if client.era == "legacy" and client.relays else None
        with scope:
            try:
                outcome = await self.handle(
                    call.request,
                    principal=self.principal,
                    session_id=self.session_id,
                    client=client,
                    peer=peer,
                )
            except BackChannelRequired:  # the question travels on the session's back-channel
                await self._to_sdk(to_server, line)
                return
            except anyio.get_cancelled_exc_class():
                if not scope.cancel_called:  # the input ended: answered as the SDK does
                    with anyio.CancelScope(shield=True):
                        await write(response_bytes(call.id, _CLOSED, stamp=None))
                raise
            finally:
                self._inflight.pop(call.id, None)
        if scope.cancelled_caught:
            return  # a cancelled request is never answered
        self._fast.inc()
        log.debug("stdio: tools/call %s answered on the fast path", call.id)
        stamp = self._stamp if client.era == "modern" else None
        await write(response_bytes(call.id, outcome, stamp=stamp))

    async def _outgoing(
        self, from_server: MemoryObjectReceiveStream[SessionMessage], write: LineWriter
    ) -> None:
        async with from_server:
            async for session_message in from_server:
                message = session_message.message
                self._handshake.outgoing(message)
                await write(message.model_dump_json(by_alias=True, exclude_unset=True).encode())

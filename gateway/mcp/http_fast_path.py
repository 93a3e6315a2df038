"""The fast path of ``/mcp``: plain ``tools/call`` and ``tools/list`` POSTs answered here.

The SDK's streamable-HTTP transport takes every request through a session task, memory streams,
a JSON-RPC dispatcher, pydantic models and (handshake era) an SSE response: more CPU than the
gateway's whole chain for an echo call. Most calls need none of it: no progress, no back-channel
to the client, no answer to an earlier question. For those this path parses the body once, hands
the call to the same `CallHandler` as the SDK handler and writes one JSON body; a ``tools/list``
is answered from `gateway.mcp.listings.Listings` (the listing serialized once).

Everything else goes, body replayed, to the SDK app, which stays the authority on sessions and
protocol errors: other methods, progress tokens and log levels, answers to ``InputRequired``,
calls that would ask a handshake-era caller (`BackChannelRequired`: that needs the session's
back-channel; raised before anything ran), sessions not opened by this credential, and any
request the SDK would refuse (headers, envelope, ``Mcp-Param-*`` mismatches). When the upstream
of a handshake-era call taken here asks the client something, the response becomes an event
stream carrying the request, and the session's POST of the answer is taken here
(`gateway.mcp.relay.wire`). ``lockgate_mcp_requests_total{path}`` counts which path answered;
``tests/gateway/mcp/test_http_fast_path.py`` compares the answers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    X_MCP_HEADER_KEY,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp_types import ErrorData
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.approvals.errors import BackChannelRequired
from gateway.mcp.calls import SESSION_HEADER, session_of
from gateway.mcp.http_wire import accepts, on_disconnect, read_body, replay, send_json
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
from gateway.mcp.relay.wire import EventStream, WirePeer, WireRequests, is_response
from gateway.mcp.server import PRINCIPAL_SCOPE_KEY, GatewayServer
from gateway.metrics import Metrics
from gateway.telemetry import request_span
from toolsets import _sdk_compat as sdk
from toolsets import jsonwire, trace_context
from toolsets.context import CallContext, ClientInfo, Principal

__all__ = ["FastPath"]

MAX_BODY = 4 * 1024 * 1024
"""Bodies above this go to the SDK app, which refuses them (its own limit is the same)."""
_PARAM = "mcp-param-"
_HEADER_KEYWORD = f'"{X_MCP_HEADER_KEY}"'
"""The schema keyword that makes an argument travel in an ``Mcp-Param-*`` header too."""


def _requestor(scope: Scope) -> object:
    """Who the SDK takes this request to be from, as it compares with a session's owner."""
    user = scope.get("user")
    return authorization_context(user) if isinstance(user, AuthenticatedUser) else None


class FastPath:
    """ASGI app in front of the SDK's streamable-HTTP app (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        server: GatewayServer,
        manager: StreamableHTTPSessionManager,
        *,
        metrics: Metrics,
        max_body: int = MAX_BODY,
    ) -> None:
        self.app = app
        self.downstream = server.downstream
        self.handle = server.downstream.handle
        self.manager = manager
        self._fast = metrics.mcp_requests.labels(transport="http", path="fast")
        self._sdk = metrics.mcp_requests.labels(transport="http", path="sdk")
        self.max_body = max_body
        self._stamp = server.server_info_stamp
        self._inflight: dict[tuple[str, RequestId], anyio.CancelScope] = {}
        self._asked = WireRequests()
        self._header_free: dict[str, Mapping[str, Any]] = {}
        self._listings = Listings(server)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            self._sdk.inc()
            await self.app(scope, receive, send)
            return
        messages, body = await read_body(receive, self.max_body)
        if body is not None and await self._serve(scope, body, receive, send):
            self._fast.inc()
            return
        self._sdk.inc()
        await self.app(scope, replay(messages, receive), send)

    async def _serve(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> bool:
        """Answer the request when it is on the fast path; False hands it to the SDK."""
        raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        headers = dict(raw)
        if not headers.get("content-type", "").lower().startswith("application/json"):
            return False
        has_json, has_sse = accepts(headers.get("accept", ""))
        if not (has_json and has_sse):  # what the SDK requires of both eras' POSTs
            return False
        try:
            message = jsonwire.loads(body)
        except (ValueError, RecursionError):
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        if (invalid := invalid_id(message)) is not None:
            await send_json(send, 400, refusal_bytes(invalid), None)
            return True
        method = message.get("method")
        principal = scope.get(PRINCIPAL_SCOPE_KEY)
        if not isinstance(principal, Principal):
            return False
        if method == "notifications/cancelled" and "id" not in message:
            return await self._cancel(headers, message, scope, send)
        if is_response(message):  # the client's answer to an upstream's request?
            return await self._answered(headers, message, scope, send)
        return await self._request(
            message, headers, raw, principal, scope=scope, receive=receive, send=send
        )

    async def _request(
        self,
        message: dict[str, Any],
        headers: Mapping[str, str],
        raw: list[tuple[str, str]],
        principal: Principal,
        *,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> bool:
        """A plain ``tools/call`` or ``tools/list`` of either era; False for anything else."""
        version = headers.get("mcp-protocol-version")
        modern = version in MODERN_PROTOCOL_VERSIONS
        if not (modern or version is None or version in HANDSHAKE_PROTOCOL_VERSIONS):
            return False
        if modern and find_duplicated_routing_header(raw) is not None:
            return False
        call = plain_call(message)
        if call is None:
            request_id = listing_id(message)
            if request_id is None:
                return False
            if modern:
                return await self._modern_listing(message, headers, request_id, principal, send)
            session_id = self._session(headers, scope)
            client = self.downstream.sessions.get(session_id) if session_id else None
            trace = trace_context.of_message(message, headers)
            return await self._list(request_id, principal, session_id, client, send, trace=trace)
        if not call.request.trace and "traceparent" in headers:  # _meta's wins
            traced = replace(call.request, trace=trace_context.incoming(None, headers))
            call = PlainCall(call.id, traced)
        if modern:
            return await self._modern(message, headers, call, principal, receive=receive, send=send)
        return await self._legacy(headers, call, principal, scope, send)

    async def _modern_listing(
        self,
        message: Mapping[str, Any],
        headers: Mapping[str, str],
        request_id: RequestId,
        principal: Principal,
        send: Send,
    ) -> bool:
        verdict = classify_inbound_request(message, headers=headers)
        if isinstance(verdict, InboundLadderRejection):
            return False
        session_id = headers.get("mcp-session-id") or headers.get(SESSION_HEADER)
        session_id = session_id or session_of(message.get("params", {}).get("_meta"))
        client = modern_client(verdict, "http")
        trace = trace_context.of_message(message, headers)
        return await self._list(request_id, principal, session_id, client, send, trace=trace)

    async def _list(
        self,
        request_id: RequestId,
        principal: Principal,
        session_id: str | None,
        client: ClientInfo | None,
        send: Send,
        *,
        trace: Mapping[str, str],
    ) -> bool:
        """``tools/list`` answered from `Listings`, with the context the SDK's handler would
        build (a 2025-11-25 listing needs its session known here); an error in the listing
        goes to the SDK, which answers it."""
        if client is None or client.protocol_version is None:
            return False
        modern = client.era == "modern"
        ctx = CallContext(principal=principal, session_id=session_id, client=client)
        telemetry = self.downstream.gateway.parts.telemetry
        try:
            with request_span(telemetry, "tools/list", ctx, trace=trace, request_id=request_id):
                body = await self._listings.answer(request_id, ctx, client.protocol_version)
        except Exception:
            return False
        await send_json(send, 200, body, None if modern else session_id)
        return True

    def _session(self, headers: Mapping[str, str], scope: Scope) -> str | None:
        """The open 2025-11-25 session this request names, if this credential opened it (the
        SDK's own owner check: anyone else gets the SDK's 404)."""
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return None
        transport = sdk.open_session(self.manager, session_id)
        if transport is None or transport.is_terminated:
            return None
        if sdk.session_owner(self.manager, session_id) != _requestor(scope):
            return None
        return session_id

    async def _legacy(
        self,
        headers: Mapping[str, str],
        call: PlainCall,
        principal: Principal,
        scope: Scope,
        send: Send,
    ) -> bool:
        session_id = self._session(headers, scope)
        client = self.downstream.sessions.get(session_id) if session_id is not None else None
        if session_id is None or client is None:
            return False
        key = (session_id, call.id)
        stream = EventStream(send, session_id)
        peer = WirePeer(self._asked, stream.event, session_id) if client.relays else None
        with anyio.CancelScope() as cancel:
            self._inflight[key] = cancel
            try:
                outcome = await self.handle(
                    call.request,
                    principal=principal,
                    session_id=session_id,
                    client=client,
                    peer=peer,
                )
            except BackChannelRequired:
                return False  # the question travels on the session's back-channel: the SDK's
            finally:
                self._inflight.pop(key, None)
        body = None if cancel.cancelled_caught else response_bytes(call.id, outcome, stamp=None)
        if stream.started or body is None:
            # A cancelled request is never answered: the response ends without a message.
            await stream.close(body)
        else:
            await send_json(send, 200, body, session_id)
        return True

    async def _answered(
        self, headers: Mapping[str, str], message: Mapping[str, Any], scope: Scope, send: Send
    ) -> bool:
        """A session's answer to a request asked on a call's stream here: acknowledged 202.
        Only the session it was asked in can answer; anything else goes to the SDK."""
        session_id = self._session(headers, scope)
        if session_id is None or not self._asked.take(message, session_id):
            return False
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return True

    def _param_headers_mismatch(self, call: PlainCall, headers: Mapping[str, str]) -> bool:
        """The SDK's ``Mcp-Param-*`` check, skipped for schemas that declare no header (the
        answer is the same: nothing to compare) when the request sends none."""
        name, args = call.request.name, call.request.arguments
        schema = self.downstream.catalogue.input_schema(name)
        sends_params = any(k.startswith(_PARAM) for k in headers)
        if schema is None or not (args or sends_params):
            return False
        if self._header_free.get(name) is schema and not sends_params:
            return False
        if validate_mcp_param_headers(schema, dict(args), headers) is not None:
            return True
        if _HEADER_KEYWORD not in json.dumps(schema):
            self._header_free[name] = schema
        return False

    async def _cancel(
        self, headers: Mapping[str, str], message: Mapping[str, Any], scope: Scope, send: Send
    ) -> bool:
        """``notifications/cancelled`` for a call on this path: cancel it, acknowledge 202.
        Only the session's owner can; anyone else gets the SDK's answer (404)."""
        session_id = self._session(headers, scope)
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if session_id is None or isinstance(request_id, bool):
            return False
        if not isinstance(request_id, str | int):
            return False
        cancel = self._inflight.get((session_id, request_id))
        if cancel is None:
            return False
        cancel.cancel()
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return True

    async def _modern(
        self,
        message: Mapping[str, Any],
        headers: Mapping[str, str],
        call: PlainCall,
        principal: Principal,
        *,
        receive: Receive,
        send: Send,
    ) -> bool:
        verdict = classify_inbound_request(message, headers=headers)
        if isinstance(verdict, InboundLadderRejection):
            return False
        if self._param_headers_mismatch(call, headers):
            return False
        client = modern_client(verdict, "http")
        with anyio.CancelScope() as cancel:
            # Structural cancellation: the client closing the exchange cancels the call. A bare
            # asyncio task watches (uvicorn runs asyncio), a task group per call costs more.
            watcher = asyncio.get_running_loop().create_task(on_disconnect(receive, cancel))
            try:
                session_id = headers.get(SESSION_HEADER)  # else the request's _meta says
                outcome = await self.handle(
                    call.request, principal=principal, session_id=session_id, client=client
                )
            finally:
                watcher.cancel()
        if cancel.cancelled_caught:
            return True  # structural cancellation: nobody is left to answer
        status = 200
        if isinstance(outcome, ErrorData):
            status = ERROR_CODE_HTTP_STATUS.get(outcome.code, 200)
        await send_json(send, status, response_bytes(call.id, outcome, stamp=self._stamp), None)
        return True

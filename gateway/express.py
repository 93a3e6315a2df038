"""The express lane: plain ``tools/call`` POSTs answered straight from the gateway chain.

The SDK's streamable-HTTP transport takes every request through a session task, memory streams,
a JSON-RPC dispatcher, pydantic models and (handshake era) an SSE response: about a millisecond
of CPU for an echo call, several times the gateway's own chain. Most calls need none of that:
no progress, no back-channel to the client, no answers to an earlier question. For those this
lane parses the body once, calls the chain and writes the JSON-RPC response itself.

Everything else goes, body replayed, to the SDK app, which stays the authority on sessions and
protocol errors: other methods, progress tokens, answers to ``InputRequired``, calls the policy
would put to the caller over a handshake session (that needs the session's back-channel), unknown
tools, and any request the SDK would refuse (headers, envelope, ``Mcp-Param-*`` mismatches).
The answers are the same either way; ``tests/gateway/test_express.py`` compares them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    X_MCP_HEADER_KEY,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import INTERNAL_ERROR, SERVER_INFO_META_KEY, ErrorData
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.approvals.toolset import InputRequired
from gateway.caller_approval import input_required_result
from gateway.downstream import PRINCIPAL_SCOPE_KEY, GatewayServer
from toolsets.context import ANONYMOUS, CallContext, ClientInfo, Principal
from toolsets.errors import ToolNotFoundError
from toolsets.mcp_convert import tool_result_to_mcp

__all__ = ["ExpressLane"]

log = logging.getLogger("lockgate.downstream")

RequestId = str | int
MAX_BODY = 4 * 1024 * 1024
"""Bodies above this go to the SDK app, which refuses them (its own limit is the same)."""
_PLAIN_PARAMS = frozenset({"name", "arguments", "_meta"})
_SSE = (b"content-type", b"text/event-stream")
_PARAM = "mcp-param-"
_HEADER_KEYWORD = f'"{X_MCP_HEADER_KEY}"'
"""The schema keyword that makes an argument travel in an ``Mcp-Param-*`` header too."""


@dataclass(frozen=True, slots=True)
class _Call:
    id: RequestId
    name: str
    args: dict[str, Any]


def _plain_call(message: Mapping[str, Any]) -> _Call | None:
    """The call a plain ``tools/call`` request makes; None for anything the SDK should see."""
    request_id = message.get("id")
    params = message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return None
    if not isinstance(params, dict) or not params.keys() <= _PLAIN_PARAMS:
        return None
    name, args, meta = params.get("name"), params.get("arguments", {}), params.get("_meta")
    if args is None:
        args = {}
    if not isinstance(name, str) or not isinstance(args, dict):
        return None
    if meta is not None and (not isinstance(meta, dict) or "progressToken" in meta):
        return None
    return _Call(request_id, name, args)


async def _read_body(receive: Receive, limit: int) -> tuple[list[Message], bytes | None]:
    """The request's messages as received, and the whole body (None when it is too big)."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        size += len(message.get("body", b""))
        if size > limit:
            return messages, None
        if not message.get("more_body", False):
            break
    if len(messages) == 1:
        return messages, messages[0].get("body", b"")
    return messages, b"".join(m.get("body", b"") for m in messages)


async def _disconnect(receive: Receive, cancel: anyio.CancelScope) -> None:
    """Cancel ``cancel`` when the client goes away."""
    while (await receive())["type"] != "http.disconnect":
        pass
    cancel.cancel()


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that yields ``messages`` again, then the real stream."""
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed


async def _send_json(send: Send, status: int, body: bytes, session_id: str | None) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if session_id is not None:
        headers.append((b"mcp-session-id", session_id.encode("latin-1")))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _message(request_id: RequestId, outcome: Mapping[str, Any] | ErrorData) -> bytes:
    """The JSON-RPC response carrying ``outcome`` (a result, or an error)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if isinstance(outcome, ErrorData):
        message["error"] = outcome.model_dump(mode="json", by_alias=True, exclude_none=True)
    else:
        message["result"] = outcome
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


class ExpressLane:
    """ASGI app in front of the SDK's streamable-HTTP app (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        server: GatewayServer,
        manager: StreamableHTTPSessionManager,
        *,
        max_body: int = MAX_BODY,
    ) -> None:
        self.app = app
        self.downstream = server.downstream
        self.gateway = server.downstream.gateway
        self.manager = manager
        self.max_body = max_body
        self._stamp = server.server_info_stamp
        self._inflight: dict[tuple[str, RequestId], anyio.CancelScope] = {}
        self._header_free: dict[str, Mapping[str, Any]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        messages, body = await _read_body(receive, self.max_body)
        if body is not None and await self._serve(scope, body, receive, send):
            return
        await self.app(scope, _replay(messages, receive), send)

    async def _serve(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> bool:
        """Answer the request when it is on the express lane; False hands it to the SDK."""
        raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        headers = dict(raw)
        if not headers.get("content-type", "").lower().startswith("application/json"):
            return False
        has_json, has_sse = check_accept_headers(Request(scope))
        if not (has_json and has_sse):  # what the SDK requires of both eras' POSTs
            return False
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        method = message.get("method")
        version = headers.get("mcp-protocol-version")
        principal = scope.get(PRINCIPAL_SCOPE_KEY, ANONYMOUS)
        if not isinstance(principal, Principal):
            return False
        if method == "notifications/cancelled" and "id" not in message:
            return await self._cancel(headers, message, principal, send)
        call = _plain_call(message) if method == "tools/call" else None
        if call is None:
            return False
        if version in MODERN_PROTOCOL_VERSIONS:
            if find_duplicated_routing_header(raw) is not None:
                return False
            return await self._modern(
                message, headers, call, principal=principal, receive=receive, send=send
            )
        if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
            return await self._legacy(headers, call, principal, send)
        return False

    async def _legacy(
        self, headers: Mapping[str, str], call: _Call, principal: Principal, send: Send
    ) -> bool:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return False
        transport = self.manager._server_instances.get(session_id)  # the SDK's open sessions
        known = self.downstream.sessions.get(session_id)
        if transport is None or transport.is_terminated or known is None:
            return False
        if known.principal_id != principal.id:
            return False
        ctx = CallContext(principal=principal, session_id=session_id, client=known.client)
        if await self.gateway.asks_caller(call.name, call.args, ctx):
            return False  # the question travels on the session's back-channel: the SDK's
        key = (session_id, call.id)
        with anyio.CancelScope() as cancel:
            self._inflight[key] = cancel
            try:
                outcome = await self._run(call, ctx)
            finally:
                self._inflight.pop(key, None)
        if cancel.cancelled_caught:
            # A cancelled request is never answered: the response ends without a message.
            start = {"type": "http.response.start", "status": 200, "headers": [_SSE]}
            await send(start)
            await send({"type": "http.response.body", "body": b""})
            return True
        if outcome is None:
            return False
        await _send_json(send, 200, _message(call.id, outcome), session_id)
        return True

    async def _run(self, call: _Call, ctx: CallContext) -> dict[str, Any] | ErrorData | None:
        """The call through the chain: its wire result, its JSON-RPC error, or None when the
        SDK should answer instead (an unknown tool, before anything ran)."""
        try:
            result = await self.gateway.call_tool(call.name, call.args, ctx)
        except ToolNotFoundError:
            return None
        except InputRequired as held:
            asked = input_required_result(self.gateway, held, ctx)
            return asked.model_dump(mode="json", by_alias=True, exclude_none=True)
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                log.exception("tools/call %s failed", call.name)
                error = ErrorData(code=INTERNAL_ERROR, message="Internal server error")
            return error
        dumped = tool_result_to_mcp(result).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        if ctx.client.era == "modern":
            dumped["resultType"] = "complete"
        else:
            dumped.pop("resultType", None)  # 2026-07-28 vocabulary, not on a handshake wire
        return dumped

    def _param_headers_mismatch(self, call: _Call, headers: Mapping[str, str]) -> bool:
        """The SDK's ``Mcp-Param-*`` check, skipped for schemas that declare no header (the
        answer is the same: nothing to compare) when the request sends none."""
        schema = self.downstream.catalogue.input_schema(call.name)
        if schema is None or not (call.args or any(k.startswith(_PARAM) for k in headers)):
            return False
        if self._header_free.get(call.name) is schema and not any(
            k.startswith(_PARAM) for k in headers
        ):
            return False
        if validate_mcp_param_headers(schema, call.args, headers) is not None:
            return True
        if _HEADER_KEYWORD not in json.dumps(schema):
            self._header_free[call.name] = schema
        return False

    async def _cancel(
        self, headers: Mapping[str, str], message: Mapping[str, Any], who: Principal, send: Send
    ) -> bool:
        """``notifications/cancelled`` for a call on this lane: cancel it, acknowledge 202.
        Only the session's own agent can; anyone else gets the SDK's answer (404)."""
        session_id = headers.get("mcp-session-id")
        known = self.downstream.sessions.get(session_id) if session_id is not None else None
        if known is None or known.principal_id != who.id:
            return False
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
        call: _Call,
        *,
        principal: Principal,
        receive: Receive,
        send: Send,
    ) -> bool:
        verdict = classify_inbound_request(message, headers=headers)
        if isinstance(verdict, InboundLadderRejection):
            return False
        if self._param_headers_mismatch(call, headers):
            return False
        caps = verdict.client_capabilities
        client = ClientInfo(
            era="modern",
            protocol_version=verdict.protocol_version,
            elicitation=isinstance(caps, dict) and caps.get("elicitation") is not None,
            transport="http",
        )
        ctx = CallContext(principal=principal, client=client)
        with anyio.CancelScope() as cancel:
            # Structural cancellation: the client closing the exchange cancels the call. A bare
            # asyncio task watches (uvicorn runs asyncio), a task group per call costs more.
            watcher = asyncio.get_running_loop().create_task(_disconnect(receive, cancel))
            try:
                outcome = await self._run(call, ctx)
            finally:
                watcher.cancel()
        disconnected = cancel.cancelled_caught
        if disconnected:
            return True  # structural cancellation: nobody is left to answer
        if outcome is None:
            return False
        if isinstance(outcome, ErrorData):
            status = ERROR_CODE_HTTP_STATUS.get(outcome.code, 200)
            await _send_json(send, status, _message(call.id, outcome), None)
            return True
        meta = outcome.get("_meta")
        outcome["_meta"] = {**(meta or {}), SERVER_INFO_META_KEY: self._stamp}
        await _send_json(send, 200, _message(call.id, outcome), None)
        return True

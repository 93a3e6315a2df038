"""``tools/call`` as raw JSON-RPC, for the fast paths (HTTP and stdio): which requests are plain
enough to skip the SDK, and the response written for an outcome of `CallHandler`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mcp.shared.inbound import InboundModernRoute
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    INVALID_REQUEST,
    LOG_LEVEL_META_KEY,
    SERVER_INFO_META_KEY,
    ErrorData,
)

from gateway.mcp.calls import CallOutcome, ToolCallRequest, max_hold_of, session_of
from gateway.mcp.relay import declared, named
from toolsets import jsonwire, trace_context
from toolsets.context import ClientInfo
from toolsets.result import ToolResult
from toolsets.upstream.tasks import TASKS_EXTENSION

__all__ = [
    "PlainCall",
    "RequestId",
    "framed",
    "invalid_id",
    "modern_client",
    "plain_call",
    "plain_params",
    "refusal_bytes",
    "response_bytes",
]

RequestId = str | int
_PLAIN_PARAMS = frozenset({"name", "arguments", "_meta"})
_STREAMED = frozenset({"progressToken", LOG_LEVEL_META_KEY})
"""``_meta`` keys asking for notifications on the request's stream, which the SDK writes."""


@dataclass(frozen=True, slots=True)
class PlainCall:
    """A ``tools/call`` request the fast paths may answer: its JSON-RPC id and the call."""

    id: RequestId
    request: ToolCallRequest


def plain_call(message: Mapping[str, Any]) -> PlainCall | None:
    """The call a plain ``tools/call`` request makes; None for anything the SDK should see
    (other methods, progress tokens, log level opt-ins, answers to an earlier question,
    malformed params)."""
    if message.get("method") != "tools/call":
        return None
    request_id = plain_params(message, _PLAIN_PARAMS)
    if request_id is None:
        return None
    params = message.get("params", {})
    name, args, meta = params.get("name"), params.get("arguments", {}), params.get("_meta")
    if args is None:
        args = {}
    if not isinstance(name, str) or not isinstance(args, dict) or _asks_task(meta):
        return None
    request = ToolCallRequest(
        name=name,
        arguments=args,
        max_hold=max_hold_of(meta),
        session=session_of(meta),
        request_id=request_id,
        trace=trace_context.incoming(meta),
    )
    return PlainCall(request_id, request)


def _asks_task(meta: Any) -> bool:
    """Whether a 2026-07-28 call declares the Tasks extension (the SDK path may make a task)."""
    declared = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    extensions = declared.get("extensions") if isinstance(declared, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def plain_params(message: Mapping[str, Any], allowed: frozenset[str]) -> RequestId | None:
    """The id of a request whose params (absent, or an object) hold only ``allowed`` keys and
    ask for nothing the SDK streams (progress, log levels); None otherwise."""
    request_id = message.get("id")
    params = message.get("params", {})
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return None
    if not isinstance(params, dict) or not params.keys() <= allowed:
        return None
    meta = params.get("_meta")
    if meta is not None and (not isinstance(meta, dict) or meta.keys() & _STREAMED):
        return None
    return request_id


def invalid_id(message: Mapping[str, Any]) -> str | None:
    """Why a request's ``id`` is not one MCP allows (a string or an integer), or None.

    Such a request is refused with ``-32600`` on every face, never taken for a notification
    (which would be answered ``202`` or not at all)."""
    if "method" not in message or "id" not in message:
        return None
    request_id = message["id"]
    if isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    ):
        return None
    kind = _JSON_KINDS.get(type(request_id), "number")
    return f"Invalid Request: a request's id must be a string or an integer, not {kind}"


_JSON_KINDS = {dict: "an object", list: "an array", bool: "a boolean", type(None): "null"}


def refusal_bytes(reason: str) -> bytes:
    """The JSON-RPC error answering a request that is not a valid request (``id`` null)."""
    error = {"code": INVALID_REQUEST, "message": reason}
    return jsonwire.dumps({"jsonrpc": "2.0", "id": None, "error": error})


def modern_client(verdict: InboundModernRoute, transport: Literal["http", "stdio"]) -> ClientInfo:
    """The 2026-07-28 client a request's envelope (as the SDK's ladder read it) describes."""
    name, version = named(verdict.client_info)
    return ClientInfo(
        era="modern",
        protocol_version=verdict.protocol_version,
        transport=transport,
        **declared(verdict.client_capabilities),
        name=name,
        version=version,
    )


def framed(outcome: CallOutcome, *, stamp: Any | None) -> dict[str, Any]:
    """The JSON-RPC ``result`` or ``error`` member for ``outcome``; ``stamp`` (2026-07-28 only)
    is the gateway's ``serverInfo``, which 2026-07-28 results carry."""
    if isinstance(outcome, ErrorData):
        return {"error": outcome.model_dump(mode="json", by_alias=True, exclude_none=True)}
    if isinstance(outcome, ToolResult):
        result = dict(outcome.wire)
        if stamp is not None:
            result["resultType"] = "complete"
    else:
        result = outcome.model_dump(mode="json", by_alias=True, exclude_none=True)
    if stamp is not None:
        result["_meta"] = {**(result.get("_meta") or {}), SERVER_INFO_META_KEY: stamp}
    return {"result": result}


def response_bytes(request_id: RequestId, outcome: CallOutcome, *, stamp: Any | None) -> bytes:
    """The whole JSON-RPC response for ``outcome``, encoded once."""
    return jsonwire.dumps({"jsonrpc": "2.0", "id": request_id, **framed(outcome, stamp=stamp)})

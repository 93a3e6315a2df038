"""Errors mapped to the MCP face, once: a tool error result the model reads, or a JSON-RPC error.

Modelled on Starlette's exception handlers: one handler per exception class, found along the
exception's MRO. Both the SDK path and the fast path of ``tools/call`` answer through here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, ErrorData

from gateway.approvals.errors import SealedStateError
from toolsets.errors import (
    AuditUnavailable,
    PromptDenied,
    PromptNotFound,
    ResourceDenied,
    ResourceNotFound,
    StoreUnavailable,
    ToolNotFoundError,
    ToolQuarantined,
    UpstreamError,
    UpstreamRequestError,
)
from toolsets.refusal import Refusal, Unblock, failure_result, refusal_result
from toolsets.result import ToolResult
from toolsets.scoped import InsufficientScope

__all__ = ["EXCEPTION_HANDLERS", "REFUSED", "mcp_error"]

log = logging.getLogger("lockgate.downstream")

ExceptionHandler = Callable[[Any], ToolResult | ErrorData]
REFUSED = -32003
"""JSON-RPC code of a resource read or prompt get the policy (or an approver) refused, or that
waits for a decision: implementation-defined (-32000..-32019); the message says why."""


def _unknown_tool(exc: ToolNotFoundError) -> ErrorData:
    return ErrorData(code=INVALID_PARAMS, message=str(exc))


def _unknown_resource(exc: ResourceNotFound) -> ErrorData:
    # SEP-2164, as the SDK's own servers answer in both eras: not found is invalid params.
    return ErrorData(code=INVALID_PARAMS, message=str(exc), data={"uri": exc.uri})


def _unknown_prompt(exc: PromptNotFound) -> ErrorData:
    return ErrorData(code=INVALID_PARAMS, message=str(exc))


def _refused(exc: ResourceDenied | PromptDenied) -> ErrorData:
    # The rule's message, as a tool call's deny result carries it; data names a held read.
    return ErrorData(code=REFUSED, message=str(exc), data=exc.data or None)


def _quarantined(exc: ToolQuarantined) -> ToolResult:
    # Refused, not unknown: the model reads that the tool waits for review.
    unblock = Unblock(action="ask_approver")
    return refusal_result(Refusal(kind="quarantined", message=str(exc), unblock=unblock))


def _upstream(exc: UpstreamError) -> ToolResult:
    # The call reached no tool; the model reads why (server down, connection lost, timeout).
    # Not a refusal: ``lockgate/error`` tells it apart from one.
    return failure_result(str(exc), "upstream_unavailable", server=exc.server or None)


def _upstream_request(exc: UpstreamRequestError) -> ErrorData:
    return ErrorData(code=exc.code, message=str(exc), data=exc.data)


def _request_state(exc: SealedStateError) -> ErrorData:
    return ErrorData(code=INVALID_PARAMS, message=f"Invalid request_state: {exc}")


def _insufficient_scope(exc: InsufficientScope) -> ErrorData:
    # Not a result the model reads: the client asks for a larger token (HTTP answers 403 first).
    data = {"error": "insufficient_scope", "scope": " ".join(exc.scopes), "tool": exc.name}
    return ErrorData(code=REFUSED, message=str(exc), data=data)


def _audit(exc: AuditUnavailable) -> ToolResult:
    # Not executed, failing closed: the model (and its user) read the cause.
    return failure_result(f"Not executed: {exc}", "gateway_unavailable")


EXCEPTION_HANDLERS: dict[type[BaseException], ExceptionHandler] = {
    AuditUnavailable: _audit,
    StoreUnavailable: _audit,
    ToolNotFoundError: _unknown_tool,
    ResourceNotFound: _unknown_resource,
    PromptNotFound: _unknown_prompt,
    ResourceDenied: _refused,
    PromptDenied: _refused,
    ToolQuarantined: _quarantined,
    InsufficientScope: _insufficient_scope,
    UpstreamError: _upstream,
    UpstreamRequestError: _upstream_request,
    SealedStateError: _request_state,
}


def mcp_error(exc: Exception, method: str = "tools/call") -> ToolResult | ErrorData:
    """What the MCP face answers for ``exc``; anything unknown is an internal error, logged."""
    for kind in type(exc).__mro__:
        handler = EXCEPTION_HANDLERS.get(kind)
        if handler is not None:
            return handler(exc)
    error = handler_exception_to_error_data(exc)  # the SDK's own errors, mapped as it does
    if error is None:
        log.exception("%s failed", method, exc_info=exc)
        error = ErrorData(code=INTERNAL_ERROR, message="Internal server error")
    return error

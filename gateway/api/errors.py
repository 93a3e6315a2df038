"""HTTP edges of the REST API: reading JSON bodies, and every error mapped to a response, once.

Modelled on Starlette's exception handlers, as `gateway.mcp.errors` is: `HTTP_ERRORS` names one
handler per exception class and `error_response` uses the first one along the exception's MRO,
so a subclass answers as its nearest mapped base does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.approvals.errors import (
    DecisionInvalid,
    DecisionRefused,
    GrantConflict,
    GrantNotFound,
    InvalidHumanResponse,
    NotAnApprover,
    PendingConflict,
    PendingNotFound,
)
from toolsets.errors import (
    ApprovalConflict,
    AuditUnavailable,
    ConfigError,
    LockgateError,
    StoreUnavailable,
    ToolNotFoundError,
    ToolQuarantined,
    UpstreamError,
)

__all__ = ["HTTP_ERRORS", "MAX_BODY", "BadRequest", "error_response", "read_json"]

MAX_BODY = 1 << 20

Handler = Callable[[Any], JSONResponse]


class BadRequest(LockgateError):
    """A malformed request: wrong content type, too large, or not JSON."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


async def read_json(request: Request) -> Any:
    """The request's JSON body (``application/json`` only, at most 1 MiB)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise BadRequest("Content-Type must be application/json", 415)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise BadRequest("body too large", 413)
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"body is not JSON: {exc.msg}") from None


def _answer(status: int, error: str) -> Handler:
    """A handler answering ``{"error": error, "detail": str(exc)}`` with ``status``."""

    def handler(exc: Exception) -> JSONResponse:
        return JSONResponse({"error": error, "detail": str(exc)}, status_code=status)

    return handler


def _invalid_body(exc: ValidationError) -> JSONResponse:
    errors = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
    return JSONResponse({"error": "invalid_body", "detail": errors}, status_code=422)


def _bad_request(exc: BadRequest) -> JSONResponse:
    return JSONResponse({"error": "bad_request", "detail": str(exc)}, status_code=exc.status)


def _pending_conflict(exc: PendingConflict) -> JSONResponse:
    body = {"error": "conflict", "detail": str(exc), "state": exc.call.state}
    return JSONResponse(body, status_code=409)


HTTP_ERRORS: dict[type[BaseException], Handler] = {
    ValidationError: _invalid_body,
    BadRequest: _bad_request,
    InvalidHumanResponse: _answer(400, "bad_request"),
    DecisionInvalid: _answer(400, "bad_request"),
    NotAnApprover: _answer(403, "forbidden"),
    PendingNotFound: _answer(404, "not_found"),
    GrantNotFound: _answer(404, "not_found"),
    PendingConflict: _pending_conflict,
    GrantConflict: _answer(409, "conflict"),
    DecisionRefused: _answer(422, "refused"),
    ConfigError: _answer(400, "error"),
    ToolNotFoundError: _answer(404, "error"),
    ApprovalConflict: _answer(409, "error"),
    ToolQuarantined: _answer(409, "error"),
    UpstreamError: _answer(502, "error"),
    AuditUnavailable: _answer(503, "error"),
    StoreUnavailable: _answer(503, "error"),
    LockgateError: _answer(400, "error"),
}


def error_response(exc: LockgateError | ValidationError) -> JSONResponse:
    """The JSON error response for one of our errors (or a body validation error)."""
    handler = next(HTTP_ERRORS[kind] for kind in type(exc).__mro__ if kind in HTTP_ERRORS)
    return handler(exc)

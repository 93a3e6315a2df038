"""HTTP edges of the REST API: reading JSON bodies, and errors mapped to statuses in one place."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.approvals.errors import (
    DecisionInvalid,
    GrantConflict,
    GrantNotFound,
    PendingConflict,
    PendingNotFound,
)
from gateway.approvals.human_interrupt import InvalidHumanResponse
from gateway.approvals.service import DecisionRefused, NotAnApprover
from gateway.errors import http_status_for
from toolsets.errors import LockgateError

__all__ = ["MAX_BODY", "BadRequest", "error_response", "read_json"]

MAX_BODY = 1 << 20


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


def error_response(exc: Exception) -> JSONResponse:
    """The JSON error response for one of our errors (or a body validation error)."""
    if isinstance(exc, ValidationError):
        errors = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
        return JSONResponse({"error": "invalid_body", "detail": errors}, status_code=422)
    if isinstance(exc, BadRequest):
        return JSONResponse({"error": "bad_request", "detail": str(exc)}, status_code=exc.status)
    if isinstance(exc, InvalidHumanResponse):
        return JSONResponse({"error": "bad_request", "detail": str(exc)}, status_code=400)
    if isinstance(exc, PendingNotFound | GrantNotFound):
        return JSONResponse({"error": "not_found", "detail": str(exc)}, status_code=404)
    if isinstance(exc, DecisionInvalid):
        return JSONResponse({"error": "bad_request", "detail": str(exc)}, status_code=400)
    if isinstance(exc, GrantConflict):
        return JSONResponse({"error": "conflict", "detail": str(exc)}, status_code=409)
    if isinstance(exc, PendingConflict):
        body = {"error": "conflict", "detail": str(exc), "state": exc.call.state}
        return JSONResponse(body, status_code=409)
    if isinstance(exc, NotAnApprover):
        return JSONResponse({"error": "forbidden", "detail": str(exc)}, status_code=403)
    if isinstance(exc, DecisionRefused):
        return JSONResponse({"error": "refused", "detail": str(exc)}, status_code=422)
    assert isinstance(exc, LockgateError)
    return JSONResponse({"error": "error", "detail": str(exc)}, status_code=http_status_for(exc))

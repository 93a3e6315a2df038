"""``/api/sessions``: approvers see and clear a session's data-flow labels.

- ``GET /api/sessions/{id}/labels?principal=ID``: the labels of ``principal``'s session ``id``
  and the calls that brought each in;
- ``POST /api/sessions/{id}/labels/clear`` with ``{"principal": ID, "reason": "...",
  "labels": [...]}`` (``labels`` omitted: all) clears them, on record (a
  ``session.labels_cleared`` event in the audit log). Agents and workers get 403: labels are
  never cleared by the agent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.api.errors import BadRequest, read_json
from gateway.gateway import Gateway
from gateway.sessions.clearing import LabelClearing
from toolsets.context import Principal

__all__ = ["ClearLabelsBody", "session_routes"]

Handler = Callable[[Request, Principal], Awaitable[Response]]
Guard = Callable[[Handler], Callable[[Request], Awaitable[Response]]]


class ClearLabelsBody(BaseModel):
    """``POST /api/sessions/{id}/labels/clear``."""

    model_config = ConfigDict(extra="forbid")

    principal: str = Field(min_length=1, description="The session's caller, e.g. agent:bot.")
    reason: str = Field(min_length=1, description="Why (on record).")
    labels: list[str] | None = Field(None, description="The labels to clear (omitted: all).")


class _Sessions:
    def __init__(self, gateway: Gateway) -> None:
        parts = gateway.parts
        self.clearing = LabelClearing(parts.sessions, parts.events.recorder.record)

    async def labels(self, request: Request, who: Principal) -> Response:
        principal = request.query_params.get("principal")
        if not principal:
            raise BadRequest("the query parameter principal is required (the session's caller)")
        shown = await self.clearing.show(principal, request.path_params["id"], who=who)
        return JSONResponse(shown)

    async def clear(self, request: Request, who: Principal) -> Response:
        body = ClearLabelsBody.model_validate(await read_json(request))
        try:
            cleared = await self.clearing.clear(
                body.principal,
                request.path_params["id"],
                by=who,
                reason=body.reason,
                labels=body.labels,
            )
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        return JSONResponse({"cleared": sorted(cleared)})


def session_routes(gateway: Gateway, guard: Guard) -> list[BaseRoute]:
    """The session label routes; ``guard`` lets approvers in."""
    sessions = _Sessions(gateway)
    return [
        Route("/api/sessions/{id}/labels", guard(sessions.labels), methods=["GET"]),
        Route("/api/sessions/{id}/labels/clear", guard(sessions.clear), methods=["POST"]),
    ]

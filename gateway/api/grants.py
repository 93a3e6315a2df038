"""``/api/grants``: standing approvals, for approvers.

- ``GET /api/grants`` lists the active grants the approver may see (``?all=1`` adds expired
  and revoked ones): those of its tenant made by it, or by an approval of a call it may see;
- ``POST /api/grants/{id}/revoke`` revokes one (409 when it was revoked already or expired);
  calls it covered ask again from then on.

A grant is made with an approval: ``POST /api/approvals/{id}/decision`` with
``{"decision": "approve", "grant": {"scope": "session" | "tool", "duration": "30m",
"principal": true}}`` (`GrantBody`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.approvals.errors import DecisionInvalid
from gateway.approvals.grants import GrantRequest
from gateway.gateway import Gateway
from policies.durations import parse_duration
from toolsets.context import Principal

__all__ = ["GrantBody", "grant_routes"]

Handler = Callable[[Request, Principal], Awaitable[Response]]
Guard = Callable[[Handler], Callable[[Request], Awaitable[Response]]]
_YES = frozenset({"1", "true", "yes"})


class GrantBody(BaseModel):
    """The ``grant`` of a decision body: how far the approval reaches."""

    model_config = ConfigDict(extra="forbid")

    scope: Literal["once", "session", "tool"] = Field(
        description="session: later calls of the rule in the caller's session; tool: later "
        "calls of the rule on the tool; once: this call only (no grant)."
    )
    duration: str | float | None = Field(
        None, description="'30m', '1h' or seconds (default: the rule's grant_max)."
    )
    principal: bool = Field(False, description="tool: only calls by this call's caller.")

    def request(self) -> GrantRequest | None:
        """The grant asked for (None for ``once``).

        Raises:
            DecisionInvalid: the duration is not a duration.
        """
        if self.scope == "once":
            return None
        try:
            duration = None if self.duration is None else parse_duration(self.duration)
        except ValueError as exc:
            raise DecisionInvalid(f"grant.duration: {exc}") from None
        return GrantRequest(scope=self.scope, duration=duration, principal=self.principal)


class _Grants:
    def __init__(self, gateway: Gateway) -> None:
        self.grants = gateway.approvals.grants

    async def list(self, request: Request, who: Principal) -> Response:
        everything = request.query_params.get("all", "").lower() in _YES
        grants = await self.grants.visible(who, everything=everything)
        return JSONResponse({"items": [grant.to_json() for grant in grants]})

    async def revoke(self, request: Request, who: Principal) -> Response:
        revoked = await self.grants.revoke(request.path_params["id"], by=who)
        return JSONResponse(revoked.to_json())


def grant_routes(gateway: Gateway, guard: Guard) -> list[BaseRoute]:
    """The grant routes; ``guard`` lets approvers in."""
    grants = _Grants(gateway)
    return [
        Route("/api/grants", guard(grants.list), methods=["GET"]),
        Route("/api/grants/{id}/revoke", guard(grants.revoke), methods=["POST"]),
    ]

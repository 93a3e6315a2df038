"""``/api/pins``: approvers review changed tool definitions and accept them.

- ``GET /api/pins`` lists the definitions in quarantine (``?all=true``: every pin);
- ``GET /api/pins/{name}`` shows one, with the accepted and the changed definition and a diff;
- ``POST /api/pins/{name}/accept`` with ``{"pin": "<changed pin>"}`` accepts the definition
  that was reviewed (a definition that changed again since is refused with 409).

Only approvers that ``pins.approvers`` names see pins at all; to others they do not exist (404).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.api.errors import read_json
from gateway.gateway import Gateway
from toolsets.context import Principal
from toolsets.errors import ToolNotFoundError

__all__ = ["AcceptBody", "pin_routes"]

Handler = Callable[[Request, Principal], Awaitable[Response]]
Guard = Callable[[Handler], Callable[[Request], Awaitable[Response]]]


class AcceptBody(BaseModel):
    """``POST /api/pins/{name}/accept``."""

    model_config = ConfigDict(extra="forbid")

    pin: str = Field(description="The pin of the changed definition that was reviewed.")


class _Pins:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    def _allowed(self, request: Request, who: Principal) -> str:
        name: str = request.path_params.get("name", "")
        if not self.gateway.pins.may_accept(who):
            raise ToolNotFoundError(name)
        return name

    async def list(self, request: Request, who: Principal) -> Response:
        if not self.gateway.pins.may_accept(who):
            return JSONResponse({"items": []})
        everything = request.query_params.get("all", "false").lower() in {"1", "true", "yes"}
        pins = await self.gateway.pins.list(everything=everything)
        return JSONResponse({"items": [p.to_json() for p in pins]})

    async def get(self, request: Request, who: Principal) -> Response:
        record = await self.gateway.pins.get(self._allowed(request, who))
        return JSONResponse(record.to_json(diff=True))

    async def accept(self, request: Request, who: Principal) -> Response:
        name = self._allowed(request, who)
        body = AcceptBody.model_validate(await read_json(request))
        record = await self.gateway.accept_pin(name, pin=body.pin, by=who)
        return JSONResponse(record.to_json())


def pin_routes(gateway: Gateway, guard: Guard) -> list[BaseRoute]:
    """The pin routes; ``guard`` lets approvers in."""
    pins = _Pins(gateway)
    return [
        Route("/api/pins", guard(pins.list), methods=["GET"]),
        Route("/api/pins/{name}", guard(pins.get), methods=["GET"]),
        Route("/api/pins/{name}/accept", guard(pins.accept), methods=["POST"]),
    ]

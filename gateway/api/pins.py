"""``/api/pins``: approvers review changed tool definitions and accept them.

- ``GET /api/pins`` lists the definitions in quarantine (``?all=true``: every pin);
- ``GET /api/pins/{name}`` shows one, with the accepted and the changed definition, a diff, the
  ``review`` (flags of both versions, word diffs of the texts, the structural diff of the rest:
  `gateway.pins.review`) and ``hidden_after_accept``: what would still hide the tool once
  accepted (`gateway.pins.hiding`);
- ``POST /api/pins/{name}/accept`` with ``{"pin": "<changed pin>"}`` accepts the definition
  that was reviewed (a definition that changed again since is refused with 409); the answer's
  ``still_hidden`` says what hides the tool yet, and how to lift it.

Only approvers that ``pins.approvers`` names see pins at all; to others they do not exist (404).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.api.errors import read_json
from gateway.gateway import Gateway
from gateway.pins.hiding import still_hiding
from gateway.pins.record import PinRecord
from gateway.pins.review import definition_flags, pin_review
from toolsets.context import Principal
from toolsets.errors import ToolNotFoundError
from toolsets.tooldef import ToolDef

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
        shown = record.to_json(diff=True)
        if record.changed is not None:
            shown["review"] = pin_review(record)
            tool = _as_served(record, record.changed)
            shown["hidden_after_accept"] = still_hiding(self.gateway.policy.current, tool)
        return JSONResponse(shown)

    async def accept(self, request: Request, who: Principal) -> Response:
        name = self._allowed(request, who)
        body = AcceptBody.model_validate(await read_json(request))
        record = await self.gateway.accept_pin(name, pin=body.pin, by=who)
        tool = await self.gateway.approvals.tools.current(name)
        engine = self.gateway.policy.current
        hidden = still_hiding(engine, tool or _as_served(record, record.definition))
        return JSONResponse({**record.to_json(), "still_hidden": hidden})


def _as_served(record: PinRecord, definition: Mapping[str, Any]) -> ToolDef:
    """The tool ``record`` names with ``definition``, as far as policy looks at it."""
    annotations = definition.get("annotations")
    return ToolDef(
        name=record.name,
        server=record.server,
        upstream_name=record.tool,
        description=definition.get("description"),
        annotations=annotations if isinstance(annotations, Mapping) else None,
        flags=tuple(definition_flags(definition)),
    )


def pin_routes(gateway: Gateway, guard: Guard) -> list[BaseRoute]:
    """The pin routes; ``guard`` lets approvers in."""
    pins = _Pins(gateway)
    return [
        Route("/api/pins", guard(pins.list), methods=["GET"]),
        Route("/api/pins/{name}", guard(pins.get), methods=["GET"]),
        Route("/api/pins/{name}/accept", guard(pins.accept), methods=["POST"]),
    ]

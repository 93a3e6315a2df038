"""Resources, prompts and completions of every upstream, through the gateway.

`Surface` (one per `Gateway`, ``gw.surface``) aggregates them: resources under
``lockgate://{prefix}/{original-uri}`` (`toolsets.resource_uris`), prompts as
``{prefix}__{name}``, completions routed to the owner, resource subscriptions counted per
upstream. `SurfaceFace` serves them on a downstream MCP server; `SurfaceGuard` is what the
policy decides about them (`OPEN_GUARD` allows everything).
"""

from gateway.mcp.resource_handlers import SurfaceFace, surface_error
from gateway.resources.guard import OPEN_GUARD, OpenGuard, SurfaceGuard
from gateway.resources.routes import Route, Routes
from gateway.resources.service import Relay, Surface
from gateway.resources.upstream import UpstreamSurface

__all__ = [
    "OPEN_GUARD",
    "OpenGuard",
    "Relay",
    "Route",
    "Routes",
    "Surface",
    "SurfaceFace",
    "SurfaceGuard",
    "UpstreamSurface",
    "surface_error",
]

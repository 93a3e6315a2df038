"""Resources, prompts and completions of every upstream, through the gateway.

`ResourceService` (one per `Gateway`, ``gw.parts.resources``) aggregates them: resources under
``lockgate://{prefix}/{original-uri}`` (`toolsets.resource_uris`), prompts as
``{prefix}__{name}``, completions routed to the owner, resource subscriptions counted per
upstream; a server reached with each caller's own credentials serves each caller over their own
connection (`CallerResources`). `gateway.mcp.resource_handlers.ResourceHandlers` serves them on
a downstream MCP server; a `ResourceGuard` is what the policy decides about them (`OPEN_GUARD`
allows everything; `gateway.resources.policy_guard.PolicyResourceGuard` is the policy's).
"""

from gateway.resources.callers import CallerResources
from gateway.resources.guard import OPEN_GUARD, OpenGuard, ResourceGuard
from gateway.resources.routes import Route, Routes
from gateway.resources.service import ChangeListener, ResourceService
from gateway.resources.upstream import UpstreamResources

__all__ = [
    "OPEN_GUARD",
    "CallerResources",
    "ChangeListener",
    "OpenGuard",
    "ResourceGuard",
    "ResourceService",
    "Route",
    "Routes",
    "UpstreamResources",
]

"""`Completions`: ``completion/complete`` routed to the upstream that owns the reference.

A ``ref/prompt`` names an exposed prompt (``{prefix}__{name}``), a ``ref/resource`` a gateway
template URI (``lockgate://{prefix}/...``); both are mapped back to the server's own before it
is asked. What the caller may not see cannot be completed (it is not found, as a reference its
server does not have), and a server that declared no completions answers with none. A server
reached with each caller's own credentials is asked over the caller's own connection; a caller
not connected to it is refused ``not_connected``, naming how to connect.
"""

from __future__ import annotations

import mcp_types as types

from gateway.resources.guard import ResourceGuard
from gateway.resources.resource_list import not_connected_data
from gateway.resources.routes import Route, Routes
from toolsets.context import CallContext
from toolsets.errors import (
    LockgateError,
    PromptDenied,
    PromptNotFound,
    ResourceDenied,
    ResourceNotFound,
)
from toolsets.upstream.principal_ports import NotConnected

__all__ = ["Completions"]

Ref = types.PromptReference | types.ResourceTemplateReference


class Completions:
    """Completion requests over every upstream (see the module docstring)."""

    def __init__(self, routes: Routes, guard: ResourceGuard) -> None:
        self.routes = routes
        self._guard = guard

    async def complete(
        self,
        ref: Ref,
        argument: types.CompletionArgument,
        context: types.CompletionContext | None,
        ctx: CallContext,
    ) -> types.CompleteResult:
        """Completions of ``argument`` for ``ref``, from its server.

        Raises:
            PromptNotFound: the prompt is unknown to ``ctx`` (hidden, or its server has none).
            ResourceNotFound: the template is unknown to ``ctx`` (hidden, or its server has none).
            PromptDenied, ResourceDenied: ``ctx`` has no credentials for its (per-caller) server.
            UpstreamError: the server is down, failed or answered with an error.
        """
        route, own = self._route(ref, ctx)
        try:
            async with route.serving(ctx) as upstream:
                prompt = isinstance(ref, types.PromptReference)
                if upstream.lacks("prompts" if prompt else "resources"):
                    raise _unknown(ref)
                result = await upstream.complete(own, argument, context)
        except (PromptNotFound, ResourceNotFound):  # the server's own terms: as a hidden one
            raise _unknown(ref) from None
        except NotConnected as exc:
            raise _refused(ref, exc) from None
        return types.CompleteResult(completion=result.completion)

    def _route(self, ref: Ref, ctx: CallContext) -> tuple[Route, Ref]:
        """Where ``ref`` leads, and ``ref`` in its server's terms.

        Raises:
            PromptNotFound: the prompt is unknown to ``ctx``.
            ResourceNotFound: the template is unknown to ``ctx``.
        """
        guard = self._guard
        if isinstance(ref, types.PromptReference):
            route = self.routes.prompt(ref.name)
            if route.upstream.lacks("prompts") or not guard.prompt_visible(
                ref.name, route.server, ctx
            ):
                raise _unknown(ref)
            return route, ref.model_copy(update={"name": route.target})
        route = self.routes.uri(ref.uri)
        if route.upstream.lacks("resources") or not guard.resource_visible(
            route.target, route.server, ctx
        ):
            raise _unknown(ref)
        return route, ref.model_copy(update={"uri": route.target})


def _refused(ref: Ref, exc: NotConnected) -> LockgateError:
    """``ref``'s completion refused ``not_connected``, as the client named it."""
    if isinstance(ref, types.PromptReference):
        return PromptDenied(ref.name, str(exc), data=not_connected_data(exc))
    return ResourceDenied(ref.uri, str(exc), data=not_connected_data(exc))


def _unknown(ref: Ref) -> LockgateError:
    """``ref`` not found, as the client named it."""
    if isinstance(ref, types.PromptReference):
        return PromptNotFound(ref.name)
    return ResourceNotFound(ref.uri)

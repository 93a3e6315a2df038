"""`Prompts`: the upstreams' prompts as one listing, named ``{prefix}__{name}`` like tools.

A get maps the exposed name back to its server and that server's own name, goes through the
guard, and comes back with the resource links and embedded resources of its messages served
under gateway URIs (`toolsets.resource_uris`), so the client can read them through the gateway.
A server reached with each caller's own credentials lists and gets over the caller's own
connection (as `gateway.resources.resource_list` reads); a get by a caller not connected to it
is refused ``not_connected`` (`PromptDenied` carrying the refusal).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

import mcp_types as types

from gateway.resources.guard import ResourceGuard
from gateway.resources.paging import collect
from gateway.resources.resource_list import not_connected_data, served_entry, served_meta
from gateway.resources.routes import Route, Routes
from gateway.resources.upstream import UpstreamResources
from toolsets.context import CallContext
from toolsets.errors import PromptDenied, PromptNotFound
from toolsets.resource_uris import rewrite_block
from toolsets.upstream.principal_ports import NotConnected
from toolsets.upstream.sanitize import served_text

__all__ = ["Prompts"]


class Prompts:
    """Prompt listings and gets over every upstream (see the module docstring)."""

    def __init__(self, routes: Routes, guard: ResourceGuard) -> None:
        self.routes = routes
        self._guard = guard

    async def list(self, cursor: str | None, ctx: CallContext) -> types.ListPromptsResult:
        """One page of the prompts ``ctx`` may see."""
        guard = self._guard

        def keep(upstream: UpstreamResources, prompt: types.Prompt) -> types.Prompt | None:
            name = self.routes.exposed_name(upstream.name, prompt.name)
            if not guard.prompt_visible(name, upstream.name, ctx):
                return None
            arguments = [_argument(a, upstream) for a in prompt.arguments or ()]
            return served_entry(prompt, upstream, name=name, arguments=arguments or None)

        async with contextlib.AsyncExitStack() as stack:
            upstreams = await self.routes.serving(ctx, stack)
            entries, following = await collect("prompts", upstreams, cursor, keep)
        return types.ListPromptsResult(prompts=entries, next_cursor=following)

    async def get(
        self, name: str, arguments: Mapping[str, str], ctx: CallContext
    ) -> types.GetPromptResult:
        """Get the prompt exposed as ``name`` with ``arguments``, as the guard allows.

        Raises:
            PromptNotFound: ``name`` names no server, one without prompts, or a prompt the
                server does not have or the guard hides: one answer, naming ``name``.
            PromptDenied: the caller has no credentials for its (per-caller) server.
            UpstreamError: the server is down, failed or answered with an error.
            LockgateError: the guard refused the get.
        """
        route = self.routes.prompt(name)
        if route.upstream.lacks("prompts"):
            raise PromptNotFound(name)

        async def get() -> types.GetPromptResult:
            async with route.serving(ctx) as upstream:
                if upstream.lacks("prompts"):
                    raise PromptNotFound(route.target)
                return await self._get(route, upstream, arguments)

        try:
            return await self._guard.get_prompt(name, route.server, arguments, ctx, get)
        except PromptNotFound:  # in the server's own terms: hidden and missing get alike
            raise PromptNotFound(name) from None
        except NotConnected as exc:
            raise PromptDenied(name, str(exc), data=not_connected_data(exc)) from None

    async def _get(
        self, route: Route, upstream: UpstreamResources, arguments: Mapping[str, str]
    ) -> types.GetPromptResult:
        result = await upstream.get_prompt(route.target, arguments)
        messages = [
            message.model_copy(update={"content": _content(message.content, route.prefix)})
            for message in result.messages
        ]
        limit = upstream.toolset.max_description
        description = served_text(result.description, limit) if result.description else None
        meta = served_meta(result.meta, route.server)
        return types.GetPromptResult(description=description, messages=messages, _meta=meta)


def _argument(argument: types.PromptArgument, upstream: UpstreamResources) -> types.PromptArgument:
    limit = upstream.toolset.max_description
    changes = {
        text: served_text(value, limit)
        for text in ("title", "description")
        if (value := getattr(argument, text)) is not None
    }
    return argument.model_copy(update=changes) if changes else argument


def _content(block: types.ContentBlock, prefix: str) -> types.ContentBlock:
    if block.type not in {"resource_link", "resource"}:
        return block
    wire = block.model_dump(by_alias=True, mode="json", exclude_none=True)
    return type(block).model_validate(rewrite_block(wire, prefix))

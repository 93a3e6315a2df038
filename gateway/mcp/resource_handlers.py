"""`ResourceHandlers`: the downstream server's handlers for resources, prompts and completions.

Registered on the one low-level `Server` of each face (streamable HTTP and stdio, both eras),
beside the tool handlers of `gateway.mcp.server`. Each handler builds the caller's
`CallContext` as the tool path does, runs one operation of the gateway's `ResourceService`, and
maps what goes wrong to a JSON-RPC error once, in `resource_error`.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, ErrorData

from gateway.mcp.errors import mcp_error
from gateway.resources.listen_streams import SessionListen
from gateway.resources.service import ResourceService
from gateway.resources.session_subscriptions import SessionSubscriptions
from toolsets.context import CallContext
from toolsets.result import ToolResult

__all__ = ["ResourceHandlers", "resource_error"]

Ctx = ServerRequestContext[Any]
T = TypeVar("T")
Params = types.PaginatedRequestParams | None


def resource_error(exc: Exception, method: str) -> MCPError:
    """The JSON-RPC error answering a failed resource, prompt or completion request
    (`gateway.mcp.errors`; what a tool call would answer as an error result, such as a server
    being down, is an internal error carrying the same message)."""
    if isinstance(exc, MCPError):
        return exc
    outcome = mcp_error(exc, method)
    if isinstance(outcome, ToolResult):
        outcome = ErrorData(code=INTERNAL_ERROR, message=outcome.first_text())
    return MCPError.from_error_data(outcome)


class ResourceHandlers:
    """The resource, prompt and completion handlers of one downstream server.

    Args:
        service: The gateway's `ResourceService`.
        context: The `CallContext` of a request (principal, session, client), as for tools.
        connections: The face's 2025-11-25 connections (told of list changes).
        listen: The face's ``subscriptions/listen`` handler (2026-07-28 streams).
    """

    def __init__(
        self,
        service: ResourceService,
        *,
        context: Callable[[Ctx], CallContext],
        connections: weakref.WeakSet[Connection],
        listen: SessionListen,
    ) -> None:
        self.service = service
        self._context = context
        self.sessions = SessionSubscriptions(service, connections=connections, listen=listen)
        service.on_event(self.sessions.deliver)

    async def list_resources(self, ctx: Ctx, params: Params) -> types.ListResourcesResult:
        """``resources/list``: one page of what the caller may see."""
        cursor = params.cursor if params is not None else None
        return await self._run(
            ctx, "resources/list", lambda c: self.service.resources.list(cursor, c)
        )

    async def list_resource_templates(
        self, ctx: Ctx, params: Params
    ) -> types.ListResourceTemplatesResult:
        """``resources/templates/list``: one page of what the caller may see."""
        cursor = params.cursor if params is not None else None
        templates = self.service.resources.templates
        return await self._run(ctx, "resources/templates/list", lambda c: templates(cursor, c))

    async def read_resource(
        self, ctx: Ctx, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """``resources/read`` of a gateway URI, as the policy allows."""
        read = self.service.resources.read
        return await self._run(ctx, "resources/read", lambda c: read(params.uri, c))

    async def subscribe_resource(
        self, ctx: Ctx, params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/subscribe`` (2025-11-25): the session holds the resource."""
        await self._run(
            ctx, "resources/subscribe", lambda c: self.sessions.subscribe(ctx, params.uri, c)
        )
        return types.EmptyResult()

    async def unsubscribe_resource(
        self, ctx: Ctx, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/unsubscribe`` (2025-11-25): the session lets go of it."""
        await self._run(
            ctx, "resources/unsubscribe", lambda c: self.sessions.unsubscribe(ctx, params.uri)
        )
        return types.EmptyResult()

    async def listen(
        self, ctx: Ctx, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """``subscriptions/listen`` (2026-07-28): change events, and the resources it names."""
        return await self.sessions.listen(ctx, params, self._context(ctx))

    async def list_prompts(self, ctx: Ctx, params: Params) -> types.ListPromptsResult:
        """``prompts/list``: one page of what the caller may see."""
        cursor = params.cursor if params is not None else None
        return await self._run(ctx, "prompts/list", lambda c: self.service.prompts.list(cursor, c))

    async def get_prompt(
        self, ctx: Ctx, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        """``prompts/get`` of an exposed prompt, as the policy allows."""
        arguments = params.arguments or {}
        get = self.service.prompts.get
        return await self._run(ctx, "prompts/get", lambda c: get(params.name, arguments, c))

    async def complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        """``completion/complete``, answered by the upstream owning the reference."""
        complete = self.service.completions.complete
        return await self._run(
            ctx,
            "completion/complete",
            lambda c: complete(params.ref, params.argument, params.context, c),
        )

    async def _run(
        self, ctx: Ctx, method: str, operation: Callable[[CallContext], Awaitable[T]]
    ) -> T:
        try:
            await self.service.ready()
            return await operation(self._context(ctx))
        except Exception as exc:
            raise resource_error(exc, method) from None

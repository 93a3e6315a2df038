"""`UpstreamResources`: the requests beyond tools that lockgate sends one upstream server.

Each request goes over the upstream's current session (`MCPServerToolset.client`), in the era
that session speaks: a 2025-11-25 upstream is subscribed to with ``resources/subscribe``, a
2026-07-28 one with a ``subscriptions/listen`` stream per resource. What the server did not
declare (resources, prompts, completions, subscribe) is never asked of it. Every request is
bounded by the server's timeout; failures become `UpstreamError` naming the server, except that
what the server does not have is `ResourceNotFound` / `PromptNotFound` in its own terms
(`ResourceService` restates them in the gateway's, as it answers a hidden one).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Final, Literal, TypeVar

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.subscriptions import Subscription
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets.errors import PromptNotFound, ResourceNotFound, UpstreamError, UpstreamRequestError
from toolsets.upstream.server import MCPServerToolset

__all__ = ["Capability", "ListKind", "UpstreamResources"]

Capability = Literal["resources", "subscribe", "prompts", "completions"]
ListKind = Literal["resources", "templates", "prompts"]
Listed = types.Resource | types.ResourceTemplate | types.Prompt
T = TypeVar("T")
_LOST = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)
_NEEDS: Mapping[ListKind, Capability] = {
    "resources": "resources",
    "templates": "resources",
    "prompts": "prompts",
}
NOT_FOUND: Final = frozenset({types.INVALID_PARAMS, -32002})
"""Codes of a server's answer to a read or subscription of a URI it does not have: invalid
params (SEP-2164, both eras) and the -32002 of earlier protocol versions."""
MAX_PAGES: Final = 50
"""Pages of a listing read to learn whether the server has an entry, at most."""


class UpstreamResources:
    """Resources, prompts and completions of one upstream (see the module docstring)."""

    def __init__(self, toolset: MCPServerToolset) -> None:
        self.toolset = toolset

    @property
    def name(self) -> str:
        """The server's name."""
        return self.toolset.name

    @property
    def modern(self) -> bool:
        """True when the current session speaks 2026-07-28."""
        return self.toolset.protocol_version in MODERN_PROTOCOL_VERSIONS

    def offers(self, capability: Capability) -> bool:
        """Whether the server is up and declared ``capability``."""
        client = self.toolset.client
        if client is None:
            return False
        caps = client.server_capabilities
        if capability == "subscribe":
            return caps.resources is not None and bool(caps.resources.subscribe)
        return getattr(caps, capability) is not None

    def lacks(self, capability: Capability) -> bool:
        """Whether the server is up and did not declare ``capability`` (so has none of it)."""
        return self.toolset.client is not None and not self.offers(capability)

    async def page(self, kind: ListKind, cursor: str | None) -> tuple[Sequence[Listed], str | None]:
        """One page of the server's listing of ``kind`` (nothing when it offers none)."""
        if not self.offers(_NEEDS[kind]):
            return (), None
        if kind == "resources":
            resources = await self._ask(
                lambda c: c.list_resources(cursor=cursor, cache_mode="bypass")
            )
            return resources.resources, resources.next_cursor
        if kind == "templates":
            templates = await self._ask(
                lambda c: c.list_resource_templates(cursor=cursor, cache_mode="bypass")
            )
            return templates.resource_templates, templates.next_cursor
        prompts = await self._ask(lambda c: c.list_prompts(cursor=cursor, cache_mode="bypass"))
        return prompts.prompts, prompts.next_cursor

    async def read(self, uri: str) -> types.ReadResourceResult:
        """``resources/read`` of the server's own ``uri``.

        Raises:
            ResourceNotFound: the server answered that it has no ``uri`` (`NOT_FOUND`).
        """
        return await self._ask(lambda c: c.read_resource(uri, cache_mode="bypass"), missing=uri)

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> types.GetPromptResult:
        """``prompts/get`` of the server's own prompt ``name``.

        Raises:
            PromptNotFound: the server failed and does not list ``name`` (the SDK's servers
                answer an unknown prompt with an internal error, others with invalid params).
        """
        try:
            return await self._ask(lambda c: c.get_prompt(name, dict(arguments)))
        except UpstreamRequestError:
            if await self._unlisted("prompts", name):
                raise PromptNotFound(name) from None
            raise

    async def complete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: types.CompletionArgument,
        context: types.CompletionContext | None,
    ) -> types.CompleteResult:
        """``completion/complete`` for the server's own ``ref``; nothing when not offered.

        Raises:
            PromptNotFound: the server failed and does not list the prompt ``ref`` names.
            ResourceNotFound: the server failed and lists no template (or resource) ``ref.uri``.
        """
        if not self.offers("completions"):
            return types.CompleteResult(completion=types.Completion(values=[]))
        known = dict(context.arguments or {}) if context is not None else None
        value = {"name": argument.name, "value": argument.value}
        try:
            return await self._ask(lambda c: c.complete(ref, value, context_arguments=known))
        except UpstreamRequestError:
            if isinstance(ref, types.PromptReference):
                if await self._unlisted("prompts", ref.name):
                    raise PromptNotFound(ref.name) from None
            elif await self._unlisted("templates", ref.uri) and await self._unlisted(
                "resources", ref.uri
            ):
                raise ResourceNotFound(ref.uri) from None
            raise

    async def subscribe(self, uri: str, *, on: bool = True) -> None:
        """2025-11-25 ``resources/subscribe`` (``on``) or ``resources/unsubscribe`` of ``uri``.

        Raises:
            ResourceNotFound: the server refused to subscribe, having no ``uri`` (`NOT_FOUND`).
        """
        request: types.SubscribeRequest | types.UnsubscribeRequest
        if on:
            request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
        else:
            request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
        missing = uri if on else None
        await self._ask(lambda c: c.session.send_request(request, types.EmptyResult), missing)

    @contextlib.asynccontextmanager
    async def listen(self, uri: str) -> AsyncIterator[Subscription]:
        """A 2026-07-28 listen stream for updates of ``uri``, open once acknowledged (its events
        also reach the toolset's notification listeners)."""
        client = self._client()
        async with contextlib.AsyncExitStack() as stack:
            try:
                with anyio.fail_after(self.toolset.timeout):  # the stream's task is the client's
                    opened = client.listen(resource_subscriptions=[uri])
                    subscription = await stack.enter_async_context(opened)
            except Exception as exc:
                raise self._error(exc) from None
            yield subscription

    def _client(self) -> Client:
        client = self.toolset.client
        if client is None:
            message = f"Server {self.name!r} is unavailable ({self.toolset.status})."
            raise UpstreamError(message, server=self.name)
        return client

    async def _unlisted(self, kind: ListKind, key: str) -> bool:
        """Whether the server's listing of ``kind`` has no entry named ``key`` (a resource's
        URI, a template, a prompt's name); False when that cannot be told (the listing failed,
        or runs past `MAX_PAGES`)."""
        if not self.offers(_NEEDS[kind]):  # down meanwhile: not an answer
            return False
        cursor: str | None = None
        try:
            for _ in range(MAX_PAGES):
                entries, cursor = await self.page(kind, cursor)
                if any(_key(entry) == key for entry in entries):
                    return False
                if cursor is None:
                    return True
        except UpstreamError:
            pass
        return False

    async def _ask(
        self, request: Callable[[Client], Awaitable[T]], missing: str | None = None
    ) -> T:
        """``request`` over the current session; ``missing``: the URI it is about, which the
        server answering `NOT_FOUND` does not have."""
        client = self._client()
        try:
            with anyio.fail_after(self.toolset.timeout):
                return await request(client)
        except MCPError as exc:
            if missing is not None and exc.error.code in NOT_FOUND:
                raise ResourceNotFound(missing) from None
            raise self._error(exc) from None
        except Exception as exc:
            raise self._error(exc) from None

    def _error(self, exc: Exception) -> UpstreamError:
        """``exc`` of a request to this server, as lockgate's error naming the server."""
        if isinstance(exc, MCPError) and exc.error.code != types.CONNECTION_CLOSED:
            error = exc.error
            return UpstreamRequestError(
                f"Server {self.name!r}: {error.message}",
                server=self.name,
                code=error.code,
                data=error.data,
            )
        if isinstance(exc, TimeoutError):
            message = f"Server {self.name!r} did not answer within {self.toolset.timeout:g} s."
        elif isinstance(exc, MCPError | _LOST):
            message = f"Server {self.name!r} connection lost: {_describe(exc)}"
        else:
            message = f"Server {self.name!r} failed: {_describe(exc)}"
        return UpstreamError(message, server=self.name)


def _key(entry: Listed) -> str:
    if isinstance(entry, types.Resource):
        return entry.uri
    if isinstance(entry, types.ResourceTemplate):
        return entry.uri_template
    return entry.name


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__

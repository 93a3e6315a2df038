"""`ResourceGuard`: what the policy says about resources and prompts, as `ResourceService` asks.

`gateway.resources.service.ResourceService` filters listings with the ``*_visible`` methods,
runs every read and prompt get through the wrappers, and lets a session subscribe only to a
resource it may see. `OPEN_GUARD` allows everything; ``gw.parts.resource_guard`` is the guard in
force (`gateway.resources.policy_guard.PolicyResourceGuard`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, TypeVar

from toolsets.context import CallContext

__all__ = ["OPEN_GUARD", "OpenGuard", "ResourceGuard"]

T = TypeVar("T")


class ResourceGuard(Protocol):
    """Decides over resources and prompts (the policy's guard: `gateway.resources.policy_guard`)."""

    def resource_visible(self, uri: str, server: str, ctx: CallContext) -> bool:
        """Whether ``ctx`` may see the resource (or template) ``uri``: the upstream's original
        URI, of server ``server``."""
        ...

    def prompt_visible(self, name: str, server: str, ctx: CallContext) -> bool:
        """Whether ``ctx`` may see the prompt exposed as ``name``, of server ``server``."""
        ...

    async def read_resource(
        self, uri: str, server: str, ctx: CallContext, read: Callable[[], Awaitable[T]]
    ) -> T:
        """Decide, audit and publish a read of ``uri``; call ``read()`` only if allowed.

        Raises:
            LockgateError: a subclass saying why the read is refused (hidden: not found).
        """
        ...

    async def get_prompt(
        self,
        name: str,
        server: str,
        arguments: Mapping[str, str],
        ctx: CallContext,
        get: Callable[[], Awaitable[T]],
    ) -> T:
        """Decide, audit and publish a get of prompt ``name``; call ``get()`` only if allowed.

        Raises:
            LockgateError: a subclass saying why the get is refused (hidden: not found).
        """
        ...


class OpenGuard:
    """A guard that lets everything through, unrecorded (no resource policy in force)."""

    def resource_visible(self, uri: str, server: str, ctx: CallContext) -> bool:
        return True

    def prompt_visible(self, name: str, server: str, ctx: CallContext) -> bool:
        return True

    async def read_resource(
        self, uri: str, server: str, ctx: CallContext, read: Callable[[], Awaitable[T]]
    ) -> T:
        return await read()

    async def get_prompt(
        self,
        name: str,
        server: str,
        arguments: Mapping[str, str],
        ctx: CallContext,
        get: Callable[[], Awaitable[T]],
    ) -> T:
        return await get()


OPEN_GUARD: ResourceGuard = OpenGuard()
"""A guard for a gateway without a resource policy (and for tests)."""

"""Consumer tasks that each read their own bus subscription, owned by one task group."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Self

import anyio

from gateway.events.bus import EventBus, Subscription

__all__ = ["Consumer", "ConsumerTasks"]

Consumer = Callable[[Subscription], Awaitable[None]]


class ConsumerTasks:
    """Subscribes and runs consumers for the life of the ``async with`` block.

    On exit the subscriptions are closed, consumers get up to ``drain_timeout`` seconds to finish
    what is buffered, then they are cancelled.
    """

    def __init__(self, bus: EventBus, *, drain_timeout: float = math.inf) -> None:
        self._bus = bus
        self._drain_timeout = drain_timeout
        self._stack: AsyncExitStack | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._subscriptions: list[Subscription] = []

    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            self._group = await stack.enter_async_context(anyio.create_task_group())
            self._stack = stack.pop_all()
        return self

    async def add(
        self, patterns: Sequence[str], consumer: Consumer, *, name: str, buffer: int | None = None
    ) -> None:
        """Subscribe to ``patterns`` now and run ``consumer`` on the subscription."""
        if self._group is None:
            raise RuntimeError("ConsumerTasks.add() outside its `async with` block")
        subscribed = anyio.Event()

        async def run() -> None:
            async with self._bus.subscribe(patterns, buffer=buffer, name=name) as subscription:
                self._subscriptions.append(subscription)
                subscribed.set()
                await consumer(subscription)

        self._group.start_soon(run)
        await subscribed.wait()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        for subscription in self._subscriptions:
            subscription.close()
        stack, self._stack = self._stack, None
        if self._group is not None:
            self._group.cancel_scope.deadline = anyio.current_time() + self._drain_timeout
        if stack is not None:
            await stack.__aexit__(None, None, None)  # the body's error is not the group's
        return None

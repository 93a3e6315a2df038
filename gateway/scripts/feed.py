"""`feed`: one run's code fed to a sandbox session, its host calls answered on the event loop.

pydantic-monty would call a host function the sandbox calls synchronously (``tools.NAME(...)``,
``ctx.get_variable``) on one of its runtime's threads, blocked until the answer comes; the
runtime has a thread per core, so a few scripts waiting on sub-calls at once (scripts calling
scripts, sub-calls held for approval) would leave it none and stop every run of the gateway.
And it would run the coroutines of ``async_tools`` as tasks of its own, which outlive a run that
ends without awaiting them. So the feed is driven here, a host call at a time: the calls the
session's host modules answer (`Answers`) are awaited on the event loop, a coroutine's in a task
of this feed, cancelled when the feed ends; the rest (imports) are left to ``resume_auto``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup
from pydantic_monty import (
    AsyncFunctionSnapshot,
    AsyncFutureSnapshot,
    AsyncMontySession,
    AsyncNameLookupSnapshot,
    AsyncSnapshot,
    ExternalSettledResult,
    MontyComplete,
)

__all__ = ["Answer", "Answers", "feed"]

_Paused = AsyncFunctionSnapshot | AsyncNameLookupSnapshot | AsyncFutureSnapshot


@dataclass(frozen=True, slots=True)
class Answer:
    """How a host function is answered: ``call`` awaited on the event loop; ``coroutine``: the
    sandbox called a coroutine function (``async_tools``) and awaits its result later."""

    call: Callable[..., Awaitable[Any]]
    coroutine: bool = False


class Answers(Protocol):
    """The host functions a session's modules answer (`gateway.scripts.host.Dispatch`)."""

    def answer(self, function: str) -> Answer | None:
        """How ``function`` (``module.name``) is answered; None: left to Monty."""
        ...


async def feed(
    session: AsyncMontySession, code: str, inputs: dict[str, Any], answers: Answers
) -> Any:
    """The value of ``code`` run in ``session`` over the globals ``inputs``; the host calls it
    left running are cancelled when it ends.

    Raises:
        MontyError: the code raised or hit a limit, or the worker crashed.
    """
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        try:
            output = await _drive(session, code, inputs, answers, _Futures(tg))
        except Exception as exc:  # raised as it is, not in the task group's exception group
            failure = exc
        tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return output


async def _drive(
    session: AsyncMontySession,
    code: str,
    inputs: dict[str, Any],
    answers: Answers,
    futures: _Futures,
) -> Any:
    snapshot = await session.feed_start(code, inputs=inputs)
    while not isinstance(snapshot, MontyComplete):
        snapshot = await _step(snapshot, answers, futures)
    return snapshot.output


async def _step(snapshot: _Paused, answers: Answers, futures: _Futures) -> AsyncSnapshot:
    if isinstance(snapshot, AsyncFutureSnapshot) and futures.owns(snapshot.pending_call_ids):
        return await snapshot.resume(await futures.settled(snapshot.pending_call_ids))
    if not isinstance(snapshot, AsyncFunctionSnapshot) or snapshot.is_os_function:
        return await snapshot.resume_auto()
    answer = answers.answer(str(snapshot.function_name))
    if answer is None:
        return await snapshot.resume_auto()
    args, kwargs = snapshot.args, snapshot.kwargs
    if answer.coroutine and not snapshot.allow_eager_await:
        futures.start(snapshot.call_id, answer.call, args, kwargs)
        return await snapshot.resume({"future": ...})
    return await snapshot.resume(await _settle(answer.call, args, kwargs))


async def _settle(
    call: Callable[..., Awaitable[Any]], args: Iterable[Any], kwargs: Mapping[str, Any]
) -> ExternalSettledResult:
    try:
        return {"return_value": await call(*args, **kwargs)}
    except Exception as exc:  # the script reads it as the call's exception
        return {"exception": exc}


class _Futures:
    """The coroutine host calls of one feed, each a task of its group, by call id."""

    def __init__(self, tg: TaskGroup) -> None:
        self._tg = tg
        self._started: set[int] = set()
        self._settled: dict[int, ExternalSettledResult] = {}
        self._changed = anyio.Event()

    def owns(self, ids: Iterable[int]) -> bool:
        return any(i in self._started for i in ids)

    def start(
        self,
        call_id: int,
        call: Callable[..., Awaitable[Any]],
        args: Iterable[Any],
        kwargs: Mapping[str, Any],
    ) -> None:
        async def settle() -> None:
            self._settled[call_id] = await _settle(call, args, kwargs)
            self._changed.set()

        self._started.add(call_id)
        self._tg.start_soon(settle)

    async def settled(self, ids: Iterable[int]) -> dict[int, ExternalSettledResult]:
        """The results of those of ``ids`` that settled, once one has."""
        ids = list(ids)
        while not (ready := {i: self._settled.pop(i) for i in ids if i in self._settled}):
            self._changed = anyio.Event()
            await self._changed.wait()
        self._started.difference_update(ready)
        return ready

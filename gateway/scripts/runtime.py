"""`Sandbox`: runs script and hook functions in pydantic-monty worker processes.

Every run checks a worker out of the pool (started and stopped with the gateway) and feeds it
the source, an import of each host module it uses (``tools``, ``async_tools``, ``ctx``: see
`gateway.scripts.host`) and one call with JSON arguments, in one round trip. Limits are
enforced by the sandbox (time, memory, recursion) and by the host (sub-calls); a crashed worker
is replaced by the pool. What goes wrong is a `ScriptFailed` naming the limit or the error.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Hashable
from types import TracebackType
from typing import Any, Final, Self

import anyio
from pydantic_monty import (
    AsyncMonty,
    MontyCrashedError,
    MontyError,
    MontyRuntimeError,
    MontySyntaxError,
    ResourceLimits,
)

from gateway.config.scripts import SandboxConfig, ScriptLimits
from gateway.scripts.warm import Bound, NoWorker, WarmSessions
from toolsets.errors import LockgateError

__all__ = ["Sandbox", "ScriptFailed"]

log = logging.getLogger("lockgate.scripts")
SUSPENSIONS: Final = 1_000_000
"""Host calls a sandbox session may make in all (a backstop; see `_resource_limits`)."""
_LIMIT_NAMES: Final = {
    "TimeoutError": ("time", "timeout"),
    "MemoryError": ("memory", "memory_mb"),
    "RecursionError": ("recursion", "recursion"),
}


class ScriptFailed(LockgateError):
    """A script or hook raised, hit a limit, or its worker crashed; the message says which.

    Attributes:
        limit: The limit it hit (its config key, ``limits.timeout``, ``sandbox.runs_per_call``,
            ...), or None when it failed otherwise: a limit refuses the call, an error fails it.
    """

    def __init__(self, message: str, *, limit: str | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class Sandbox:
    """The pool of sandbox workers, for the ``async with`` block."""

    def __init__(self, config: SandboxConfig, *, longest: float = 60.0) -> None:
        self.config = config
        self._pool = AsyncMonty(
            min_processes=config.min_workers,
            max_processes=config.max_workers,
            checkout_timeout=config.checkout_timeout,
            request_timeout=longest + 5.0,  # backstop: a worker stuck past its limits is killed
        )
        # Warm sessions hold workers: two stay free for new runs, and a new run that finds
        # none free takes an idle one's worker.
        self._warm = WarmSessions(limit=max(config.max_workers - 2, 0), workers=config.max_workers)
        self._open = False

    async def __aenter__(self) -> Self:
        await self._pool.__aenter__()
        self._open = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._open = False
        await self._warm.close()
        await self._pool.__aexit__(exc_type, exc, tb)

    async def call(
        self,
        *,
        name: str,
        text: str,
        filename: str,
        expression: str,
        inputs: dict[str, Any],
        limits: ScriptLimits,
        key: Hashable,
        bind: Callable[[], Bound],
        run: Any,
    ) -> Any:
        """The value of ``expression`` (over the globals ``inputs``) after feeding ``text``
        (named ``filename``), in a worker: a warm session of ``key`` if there is one (see
        `WarmSessions`), else a new one whose host modules ``bind`` makes; ``run`` serves them.

        Raises:
            ScriptFailed: the code raised, hit a limit or crashed its worker.
        """
        if not self._open:
            raise ScriptFailed(f"{name}: the sandbox is not running")
        checkout = functools.partial(
            self._pool.checkout, script_name=filename, limits=_resource_limits(limits)
        )

        def bound() -> Bound:
            made = bind()
            imports.append("".join(f"import {module}\n" for module in made.modules))
            return made

        imports: list[str] = []
        try:
            # A new session gets one feed: the source (keeping its line numbers), an import of
            # each host module it uses, and the call; a warm one just the call.
            return await self._warm.feed(
                key,
                checkout=lambda modules: checkout(external_modules=modules),
                bind=bound,
                run=run,
                first=lambda: f"{text}\n{imports[0]}{expression}",
                again=expression,
                inputs=inputs,
            )
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:  # a value that does not convert, a pool error
            raise ScriptFailed(self._failure(name, exc, limits), limit=_limit_of(exc)) from None

    def _failure(self, name: str, exc: Exception, limits: ScriptLimits) -> str:
        """What a failed run says: the script's error, a limit, no worker, or anything else."""
        if isinstance(exc, MontyError):
            return _describe(name, exc, limits)
        if isinstance(exc, NoWorker):
            waited = f"{self.config.checkout_timeout:g} s, sandbox.checkout_timeout"
            return f"{name} found no free sandbox worker in {waited}"
        return f"{name} failed: {type(exc).__name__}: {exc}"


def _limit_of(exc: Exception) -> str | None:
    """The limit a failed run hit (its config key), or None when it failed otherwise."""
    if isinstance(exc, NoWorker):
        return "sandbox.checkout_timeout"
    if isinstance(exc, MontyCrashedError):
        return "limits.timeout" if exc.timed_out else None
    if not isinstance(exc, MontyRuntimeError):
        return None
    kind = type(exc.exception()).__name__
    if (kind in _LIMIT_NAMES and "limit" in exc.display("type-msg")) or kind == "RecursionError":
        return f"limits.{_LIMIT_NAMES[kind][1]}"
    return None


def _resource_limits(limits: ScriptLimits) -> ResourceLimits:
    return ResourceLimits(
        max_feed_duration_secs=limits.timeout,
        max_memory=limits.memory_mb << 20,
        max_recursion_depth=limits.recursion,
        # Counted per session, over all its runs: sub-calls are capped by the host per run, and
        # a warm session is retired long before this (`WarmSessions.max_runs`).
        max_suspensions=SUSPENSIONS,
    )


def _describe(name: str, exc: MontyError, limits: ScriptLimits) -> str:
    """The error message a model (and an operator) reads."""
    if isinstance(exc, MontyCrashedError):
        log.warning("%s: sandbox worker crashed (%s); it is replaced", name, exc)
        if exc.timed_out:
            return f"{name} hit its time limit ({limits.timeout:g} s, limits.timeout)"
        return f"{name} crashed its sandbox worker ({exc}); the worker was replaced"
    if isinstance(exc, MontySyntaxError):
        return f"{name} has a syntax error: {exc.display('type-msg')}"
    if not isinstance(exc, MontyRuntimeError):
        return f"{name} failed: {exc}"
    kind = type(exc.exception()).__name__
    text = exc.display("type-msg")
    if (kind in _LIMIT_NAMES and "limit" in text) or kind == "RecursionError":
        what, key = _LIMIT_NAMES[kind]
        value = {"timeout": f"{limits.timeout:g} s", "memory_mb": f"{limits.memory_mb} MiB"}
        shown = value.get(key, str(limits.recursion))
        return f"{name} hit its {what} limit ({shown}, limits.{key}): {text}"
    frames = exc.traceback()
    where = f" (line {frames[-1].line})" if frames else ""
    return f"{name} raised {text}{where}"

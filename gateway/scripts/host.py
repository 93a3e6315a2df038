"""What a script or hook may reach in the host: ``tools``, ``async_tools`` and ``ctx``.

``tools.NAME(**args)`` calls the gateway tool ``NAME`` and returns its result (raising
``RuntimeError`` with the error text when it fails); ``async_tools.NAME(**args)`` is the same as
an awaitable, so several can run at once (``asyncio.gather``). Every sub-call goes through the
whole gateway as the script's caller, in its session, with ``parent_call_id`` naming the
script's call: validated, decided by the policy (a held sub-call holds the script), recorded as
events. ``ctx`` holds ``principal``, ``session_id`` and the session's variables
(``get_variable``, ``set_variable``, ``remove_variable``), saved with the session's state.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import anyio.from_thread
import anyio.lowlevel
from pydantic_monty import ExternalModule

from gateway.scripts.feed import Answer
from gateway.scripts.runtime import ScriptFailed
from gateway.scripts.slots import CallTree
from policies.decider import SessionSource
from toolsets.context import CallContext
from toolsets.errors import LockgateError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = [
    "HOST_MODULES",
    "CallTool",
    "Dispatch",
    "Run",
    "ToolCalls",
    "host_modules_used",
    "result_value",
]

HOST_MODULES: Final = ("tools", "async_tools", "ctx")
_VARIABLES: Final = ("get_variable", "set_variable", "remove_variable")


@functools.lru_cache(maxsize=1024)
def host_modules_used(text: str) -> tuple[str, ...]:
    """The host modules ``text`` names (only those are built and imported for a run)."""
    names = {node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)}
    return tuple(module for module in HOST_MODULES if module in names)


CallTool = Callable[[str, Mapping[str, Any], CallContext], Awaitable[ToolResult]]
"""A tool call entering the chain at its top (`ToolCalls.call_tool`)."""


class ToolCalls(Protocol):
    """The top of the gateway's call chain (`gateway.runtime.CallEntry`), where a script's
    sub-calls enter as its caller and where it lists what that caller may call."""

    async def tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        """The tools visible to ``ctx`` by exposed name."""
        ...

    async def call_tool(self, name: str, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
        """Call ``name`` through the whole chain, as the caller in ``ctx``."""
        ...


def result_value(result: ToolResult) -> Any:
    """What a script sees of a tool result: its structured content, else its text. A value an
    MCP server wrapped as ``{"result": value}`` (how non-object results are sent) is unwrapped."""
    structured = result.structured_content
    if isinstance(structured, dict) and structured.keys() == {"result"}:
        return structured["result"]
    if structured is not None:
        return structured
    return result.first_text() if result.content else None


@dataclass
class Run:
    """One run of a script or hook, made by the call in ``ctx``, within the runs of ``tree``."""

    name: str
    ctx: CallContext
    call: CallTool
    sessions: SessionSource
    max_sub_calls: int
    tree: CallTree
    sub_calls: int = 0
    exceeded: str | None = field(default=None)

    def check(self) -> None:
        """Raise if the run went over a sub-call limit (even if the code caught the error)."""
        if self.exceeded is not None:
            raise ScriptFailed(f"{self.name} hit {self.exceeded}", limit="sub_calls")

    async def sub_call(self, name: str, /, **args: Any) -> Any:
        """``tools.NAME(**args)``: the tool's result, or ``RuntimeError`` with its error."""
        self.sub_calls += 1
        if self.sub_calls > self.max_sub_calls:
            self.exceeded = f"its sub-call limit ({self.max_sub_calls}, limits.sub_calls)"
        else:
            self.exceeded = self.exceeded or self.tree.take_sub_call()
        if self.exceeded is not None:
            raise RuntimeError(f"{name} was not called: {self.name} hit {self.exceeded}")
        sub = CallContext(
            principal=self.ctx.principal,
            session_id=self.ctx.session_id,
            parent_call_id=self.ctx.call_id,
        )
        try:
            result = await self.call(name, args, sub)
        except LockgateError as exc:
            raise RuntimeError(f"{name}: {exc}") from None
        if result.is_error:
            raise RuntimeError(f"{name}: {result.first_text()}")
        return result_value(result)

    def get_variable(self, name: str, default: Any = None) -> Any:
        return self.sessions.get(self.ctx).get_variable(name, default)

    def set_variable(self, name: str, value: Any) -> None:
        self.sessions.get(self.ctx).set_variable(name, value)
        self.sessions.changed(self.ctx)

    def remove_variable(self, name: str) -> bool:
        removed = self.sessions.get(self.ctx).remove_variable(name)
        self.sessions.changed(self.ctx)
        return removed


class Dispatch:
    """The host modules of one sandbox session; each feed points them at its `Run` (a session
    kept warm serves several runs of one caller's session, one after another). Their functions
    are answered on the event loop (`answer`, see `gateway.scripts.feed`); the module
    attributes, which block a thread on the loop, serve only a call the feed did not answer."""

    def __init__(self, ctx: CallContext, used: Iterable[str], names: Iterable[str]) -> None:
        self.run: Run | None = None
        self._token = anyio.lowlevel.current_token()
        names = list(names)
        self._names = frozenset(names)
        built: dict[str, Callable[[], dict[str, Any]]] = {
            "tools": lambda: {n: functools.partial(self._blocking, n) for n in names},
            "async_tools": lambda: {n: functools.partial(self._awaited, n) for n in names},
            "ctx": lambda: self._context(ctx),
        }
        self.modules = {module: ExternalModule(built[module]()) for module in used}

    def _current(self) -> Run:
        if self.run is None:
            raise RuntimeError("no script is running")
        return self.run

    def answer(self, function: str) -> Answer | None:
        """How the host function ``function`` (``module.name``) is answered on the loop."""
        module, _, name = function.partition(".")
        if module in {"tools", "async_tools"} and name in self._names:
            return Answer(functools.partial(self._awaited, name), module == "async_tools")
        if module == "ctx" and name in _VARIABLES:
            return Answer(functools.partial(self._variable, name))
        return None

    async def _variable(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._current(), method)(*args, **kwargs)

    def _blocking(self, name: str, /, **args: Any) -> Any:
        call = functools.partial(self._awaited, name, **args)
        return anyio.from_thread.run(call, token=self._token)

    async def _awaited(self, name: str, /, **args: Any) -> Any:
        return await self._current().sub_call(name, **args)

    def _context(self, ctx: CallContext) -> dict[str, Any]:
        def variables(method: str) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                bound = functools.partial(getattr(self._current(), method), *args, **kwargs)
                return anyio.from_thread.run_sync(bound, token=self._token)

            return call

        return {
            "principal": ctx.principal.id,
            "session_id": ctx.session_id,
            **{m: variables(m) for m in _VARIABLES},
        }

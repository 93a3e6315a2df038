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
from typing import Any, Final

import anyio.from_thread
import anyio.lowlevel
from pydantic_monty import ExternalModule

from gateway.scripts.runtime import ScriptFailed
from policies.decider import SessionSource
from toolsets.context import CallContext
from toolsets.errors import LockgateError
from toolsets.result import ToolResult

__all__ = ["HOST_MODULES", "CallTool", "Run", "host_modules_used", "result_value"]

HOST_MODULES: Final = ("tools", "async_tools", "ctx")


@functools.lru_cache(maxsize=1024)
def host_modules_used(text: str) -> tuple[str, ...]:
    """The host modules ``text`` names (only those are built and imported for a run)."""
    names = {node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)}
    return tuple(module for module in HOST_MODULES if module in names)


def _in_loop(token: Any, method: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run ``method`` on the gateway's event loop (sandbox callbacks come from other threads)."""
    return anyio.from_thread.run_sync(functools.partial(method, *args, **kwargs), token=token)


CallTool = Callable[[str, Mapping[str, Any], CallContext], Awaitable[ToolResult]]
"""`gateway.Gateway.call_tool`: the top of the chain."""


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
    """One run of a script or hook, made by the call in ``ctx``."""

    name: str
    ctx: CallContext
    call: CallTool
    sessions: SessionSource
    max_sub_calls: int
    sub_calls: int = 0
    over_limit: bool = field(default=False)

    def modules(self, used: Iterable[str], names: Iterable[str]) -> dict[str, ExternalModule]:
        """The host modules the code ``used``, with one function per tool ``names`` lists."""
        token = anyio.lowlevel.current_token()
        names = list(names)
        built: dict[str, Callable[[], dict[str, Any]]] = {
            "tools": lambda: {n: functools.partial(self._blocking, token, n) for n in names},
            "async_tools": lambda: {n: functools.partial(self._sub_call, n) for n in names},
            "ctx": lambda: self._context(token),
        }
        return {module: ExternalModule(built[module]()) for module in used}

    def _context(self, token: Any) -> dict[str, Any]:
        return {
            "principal": self.ctx.principal.id,
            "session_id": self.ctx.session_id,
            **{
                name: functools.partial(_in_loop, token, method)
                for name, method in (
                    ("get_variable", self._get_variable),
                    ("set_variable", self._set_variable),
                    ("remove_variable", self._remove_variable),
                )
            },
        }

    def check(self) -> None:
        """Raise if the run went over its sub-call cap (even if the code caught the error)."""
        if self.over_limit:
            raise ScriptFailed(
                f"{self.name} hit its sub-call limit ({self.max_sub_calls}, limits.sub_calls)"
            )

    def _blocking(self, token: Any, name: str, /, **args: Any) -> Any:
        return anyio.from_thread.run(functools.partial(self._sub_call, name, **args), token=token)

    async def _sub_call(self, name: str, /, **args: Any) -> Any:
        self.sub_calls += 1
        if self.sub_calls > self.max_sub_calls:
            self.over_limit = True
            raise RuntimeError(f"sub-call limit reached ({self.max_sub_calls} calls)")
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

    def _get_variable(self, name: str, default: Any = None) -> Any:
        return self.sessions.get(self.ctx).get_variable(name, default)

    def _set_variable(self, name: str, value: Any) -> None:
        self.sessions.get(self.ctx).set_variable(name, value)
        self.sessions.changed(self.ctx)

    def _remove_variable(self, name: str) -> bool:
        removed = self.sessions.get(self.ctx).remove_variable(name)
        self.sessions.changed(self.ctx)
        return removed

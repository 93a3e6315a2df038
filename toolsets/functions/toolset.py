"""`FunctionToolset`: local Python functions as tools, beside upstream MCP tools."""

from __future__ import annotations

import functools
import importlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self, TypeVar, cast, overload

import anyio
import anyio.to_thread
from mcp_types import TextContent
from pydantic import ValidationError

from toolsets import jsonwire
from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.errors import ImportPathError, ToolNotFoundError
from toolsets.functions.schema import FunctionSchema, function_schema
from toolsets.functions.tool_context import ToolContext
from toolsets.result import ToolResult
from toolsets.tooldef import TOOL_NAME_RE, ToolDef

__all__ = [
    "FunctionTool",
    "FunctionToolset",
    "SessionStateProvider",
    "import_function",
]

logger = logging.getLogger("lockgate.tools")

F = TypeVar("F", bound=Callable[..., Any])


class SessionStateProvider(Protocol):
    """Returns the session state object handed to tools as `ToolContext.session`."""

    def __call__(self, ctx: CallContext) -> object | None: ...


@dataclass(frozen=True, slots=True, init=False)
class FunctionTool:
    """A Python function ready to be a tool; its schema is computed once, here.

    Attributes:
        function: The function (sync or async).
        name: The tool's name, checked against ``[A-Za-z0-9_-]{1,64}``.
        description: The given description, else the docstring's.
        timeout: Seconds before the call is abandoned; ``None`` defers to the toolset.
        annotations: MCP tool annotations in wire form (camelCase keys).
        schema: The schemas and argument validator inferred from the function.
    """

    function: Callable[..., Any]
    name: str
    description: str | None
    timeout: float | None
    annotations: Mapping[str, Any] | None
    schema: FunctionSchema = field(repr=False)

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        annotations: Mapping[str, Any] | None = None,
    ) -> None:
        """Describe ``function`` as a tool.

        Raises:
            ValueError: the name is not a valid tool name, or the timeout is not positive.
            TypeError: the signature cannot be described by a JSON schema.
        """
        tool_name = name if name is not None else getattr(function, "__name__", "")
        if not TOOL_NAME_RE.fullmatch(tool_name):
            raise ValueError(f"invalid tool name {tool_name!r}: expected [A-Za-z0-9_-]{{1,64}}")
        schema = function_schema(function)
        object.__setattr__(self, "function", function)
        object.__setattr__(self, "name", tool_name)
        object.__setattr__(self, "description", description or schema.description)
        object.__setattr__(self, "timeout", _checked_timeout(timeout))
        object.__setattr__(self, "annotations", dict(annotations) if annotations else None)
        object.__setattr__(self, "schema", schema)

    def tool_def(self, server: str) -> ToolDef:
        """The tool's definition as served by ``server``."""
        return ToolDef(
            name=self.name,
            description=self.description,
            input_schema=self.schema.input_schema,
            output_schema=self.schema.output_schema,
            annotations=self.annotations,
            server=server,
        )


class FunctionToolset(Toolset):
    """Local Python functions as tools, going through the same wrappers as upstream tools.

    Sync functions run in a worker thread, async ones on the event loop. Arguments are validated
    against the inferred schema first. Whatever goes wrong in a call (invalid arguments, an
    exception, a timeout) comes back as an error result the model can read; nothing is raised but
    `ToolNotFoundError`.

    The timeout of a call is the tool's, else the toolset's (``timeout``, the server level), else
    the gateway default (``default_timeout``); ``None`` at every level means no limit. A timed-out
    sync function is abandoned, not stopped: its thread runs on until the function returns.
    """

    def __init__(
        self,
        functions: Sequence[Callable[..., Any] | FunctionTool] = (),
        *,
        server: str = "local",
        timeout: float | None = None,
        default_timeout: float | None = None,
        session_state: SessionStateProvider | None = None,
        max_result_bytes: int | None = None,
    ) -> None:
        """Create the toolset.

        Args:
            functions: Functions (or prepared `FunctionTool` values) to register.
            server: The server name the tools are served under.
            timeout: Seconds allowed to each call, unless the tool sets its own.
            default_timeout: The gateway default, used when neither tool nor toolset sets one.
            session_state: Gives the session state object passed as `ToolContext.session`.
            max_result_bytes: The largest result relayed, in bytes of MCP JSON (the server's
                ``max_result_bytes``, as over every other transport); None: no limit.
        """
        self._server = server
        self._timeout = _checked_timeout(timeout)
        self._default_timeout = _checked_timeout(default_timeout)
        self._session_state = session_state
        self._max_result_bytes = max_result_bytes
        self._tools: dict[str, FunctionTool] = {}
        self._defs: dict[str, ToolDef] = {}
        for function in functions:
            self.add_tool(
                function if isinstance(function, FunctionTool) else FunctionTool(function)
            )

    @classmethod
    def from_import_paths(
        cls,
        paths: Sequence[str],
        *,
        server: str = "local",
        timeout: float | None = None,
        default_timeout: float | None = None,
    ) -> Self:
        """A toolset of the functions named by ``package.module:function`` paths.

        Raises:
            ImportPathError: a path cannot be imported, names nothing callable, or names a
                function that cannot be a tool.
        """
        toolset = cls(server=server, timeout=timeout, default_timeout=default_timeout)
        for path in paths:
            function = import_function(path)
            try:
                toolset.add_tool(FunctionTool(function))
            except (TypeError, ValueError) as exc:
                raise ImportPathError(path, f"not usable as a tool: {exc}") from exc
        return toolset

    @property
    def label(self) -> str:
        return self._server

    @property
    def server(self) -> str:
        """The server name the tools are served under."""
        return self._server

    def set_default_timeout(self, seconds: float | None) -> None:
        """Set the gateway default timeout (the lowest priority level)."""
        self._default_timeout = _checked_timeout(seconds)

    def add_tool(self, tool: FunctionTool) -> None:
        """Register a prepared tool.

        Raises:
            ValueError: a tool of that name is already registered.
        """
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered in {self._server!r}")
        self._tools[tool.name] = tool
        self._defs[tool.name] = tool.tool_def(self._server)

    @overload
    def tool(
        self,
        func: F,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        annotations: Mapping[str, Any] | None = None,
    ) -> F: ...

    @overload
    def tool(
        self,
        func: None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        annotations: Mapping[str, Any] | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        func: F | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        annotations: Mapping[str, Any] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a function as a tool; usable as ``@ts.tool`` or ``@ts.tool(name=...)``.

        The function is returned unchanged.

        Args:
            func: The function to register.
            name: The tool's name; defaults to the function's name.
            description: Replaces the docstring's description.
            timeout: Seconds allowed to each call; beats the toolset's and the default.
            annotations: MCP tool annotations in wire form (``{"readOnlyHint": True}``).
        """

        def register(function: F) -> F:
            tool = FunctionTool(
                function,
                name=name,
                description=description,
                timeout=timeout,
                annotations=annotations,
            )
            self.add_tool(tool)
            return function

        return register if func is None else register(func)

    @property
    def version(self) -> int:
        return len(self._defs)  # tools are only ever added

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        return self._defs

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        function = self._tools.get(name)
        if function is None:
            raise ToolNotFoundError(name)
        session = self._session_state(ctx) if self._session_state is not None else None
        try:
            call_args, call_kwargs = function.schema.bind(args, ToolContext.from_call(ctx, session))
        except ValidationError as exc:
            return ToolResult.error(_invalid_arguments(name, exc))
        timeout = self._timeout_for(function)
        with anyio.move_on_after(timeout):
            result = await _execute(function, call_args, call_kwargs, ctx)
            return _bounded(name, result, self._max_result_bytes)
        logger.warning("tool %r timed out after %s s (call %s)", name, timeout, ctx.call_id)
        return ToolResult.error(f"Tool {name!r} timed out after {timeout} s")

    def _timeout_for(self, tool: FunctionTool) -> float | None:
        for timeout in (tool.timeout, self._timeout, self._default_timeout):
            if timeout is not None:
                return timeout
        return None


def import_function(path: str) -> Callable[..., Any]:
    """The callable named by ``package.module:function`` (``module:Class.method`` works too).

    Raises:
        ImportPathError: the path is malformed, the module cannot be imported, or the name is
            missing or not callable.
    """
    module_name, sep, qualname = path.partition(":")
    if not sep or not module_name or not qualname:
        raise ImportPathError(path, "expected 'package.module:function'")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or whatever the module raised while importing
        raise ImportPathError(path, f"{type(exc).__name__}: {exc}") from exc
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ImportPathError(path, f"{module_name!r} has no attribute {qualname!r}") from None
    if not callable(target):
        raise ImportPathError(path, f"{qualname!r} is not callable")
    return cast(Callable[..., Any], target)


async def _execute(
    tool: FunctionTool, args: tuple[Any, ...], kwargs: dict[str, Any], ctx: CallContext
) -> ToolResult:
    """Run the function and turn what it returns, or raises, into a result."""
    try:
        if tool.schema.is_async:
            value = await tool.function(*args, **kwargs)
        else:
            call = functools.partial(tool.function, *args, **kwargs)
            value = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        return _to_result(tool, value)
    except Exception as exc:
        logger.exception("tool %r failed (call %s)", tool.name, ctx.call_id)
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return ToolResult.error(f"Tool {tool.name!r} failed: {detail}")


def _to_result(tool: FunctionTool, value: Any) -> ToolResult:
    """A result from a return value: text for ``str``, JSON text plus structured content else."""
    if isinstance(value, ToolResult):
        return value
    schema = tool.schema
    if schema.output_schema is None and isinstance(value, str):
        return ToolResult.text(value)
    jsonable = schema.dump_output(value)
    wrap = (
        schema.wrap_output if schema.output_schema is not None else not isinstance(jsonable, dict)
    )
    text = json.dumps(jsonable, ensure_ascii=False)
    structured = {"result": jsonable} if wrap else jsonable
    return ToolResult(content=(TextContent(type="text", text=text),), structured_content=structured)


def _bounded(name: str, result: ToolResult, limit: int | None) -> ToolResult:
    """``result``, or an error naming the limit when its MCP JSON is over ``limit`` bytes (text
    longer than the limit is refused before anything is encoded)."""
    if limit is None:
        return result
    text = sum(len(block.get("text", "")) for block in result.wire.get("content", ()))
    size = text if text > limit else len(jsonwire.dumps(result.wire))
    if size <= limit:
        return result
    logger.warning("tool %r returned %d bytes or more, over max_result_bytes %d", name, size, limit)
    return ToolResult.error(
        f"Tool {name!r} returned {size} bytes or more, over the gateway's limit of {limit} "
        "bytes (max_result_bytes); not relayed"
    )


def _invalid_arguments(name: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return f"Tool {name!r} got invalid arguments: " + "; ".join(problems)


def _checked_timeout(seconds: float | None) -> float | None:
    if seconds is not None and not seconds > 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {seconds!r}")
    return None if seconds is None else float(seconds)

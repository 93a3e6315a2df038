"""FunctionToolset through the Toolset API: listing, calling, context, timeouts and errors."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import anyio.from_thread
import fixtures_functions
import pytest
from pydantic import BaseModel
from support import call as call_tool

from toolsets.context import CallContext, Principal
from toolsets.errors import ImportPathError, LockgateError, ToolNotFoundError
from toolsets.functions.tool_context import ToolContext
from toolsets.functions.toolset import FunctionTool, FunctionToolset
from toolsets.result import ToolResult

# Marked here, not only by tests/conftest.py: a marker added after collection leaves
# parametrized async tests without their parameters.
pytestmark = pytest.mark.anyio

FIXTURES = fixtures_functions.__name__
CTX = CallContext(principal=Principal(id="agent:test"), session_id="s-1", call_id="call-1")


class Point(BaseModel):
    x: int
    y: int = 0


async def call(toolset: FunctionToolset, name: str, **args: Any) -> ToolResult:
    async with toolset:
        with anyio.fail_after(30):
            return await call_tool(toolset, name, args, CTX)


async def test_tools_are_listed_with_server_description_and_schema() -> None:
    toolset = FunctionToolset([fixtures_functions.add], server="maths")
    async with toolset:
        tools = await toolset.get_tools(CTX)
    assert list(tools) == ["add"]
    tool = tools["add"]
    assert tool.server == "maths"
    assert tool.upstream_name == "add"
    assert tool.description == "Add two integers."
    assert tool.input_schema["properties"]["a"] == {
        "type": "integer",
        "description": "The first addend.",
    }
    assert tool.input_schema["required"] == ["a"]
    assert tool.output_schema is not None
    assert tool.output_schema["properties"]["result"] == {"type": "integer"}


async def test_decorator_registers_bare_and_with_options_and_returns_the_function() -> None:
    toolset = FunctionToolset()

    @toolset.tool
    def plain(x: int) -> int:
        """Plain."""
        return x

    @toolset.tool(name="renamed", description="Given.", annotations={"readOnlyHint": True})
    def original(x: int) -> int:
        """Docstring."""
        return x

    tools = await toolset.get_tools(CTX)
    assert sorted(tools) == ["plain", "renamed"]
    assert tools["renamed"].description == "Given."
    assert tools["renamed"].annotations == {"readOnlyHint": True}
    assert plain(2) == 2
    assert original(3) == 3


@pytest.mark.parametrize(
    ("register", "message"),
    [
        pytest.param(lambda ts: ts.tool(lambda: 1), "invalid tool name '<lambda>'", id="lambda"),
        pytest.param(
            lambda ts: ts.tool(name="has space")(fixtures_functions.add),
            "invalid tool name",
            id="space",
        ),
        pytest.param(
            lambda ts: ts.tool(name="x" * 65)(fixtures_functions.add),
            "invalid tool name",
            id="too-long",
        ),
        pytest.param(
            lambda ts: ts.tool(timeout=0)(fixtures_functions.add),
            "timeout must be",
            id="zero-timeout",
        ),
        pytest.param(
            lambda ts: [ts.tool(fixtures_functions.add), ts.tool(fixtures_functions.add)],
            "'add' is already registered in 'local'",
            id="duplicate",
        ),
    ],
)
def test_invalid_registration_is_refused(
    register: Callable[[FunctionToolset], object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        register(FunctionToolset())


async def test_unknown_tool_raises_not_found() -> None:
    with pytest.raises(ToolNotFoundError):
        await call(FunctionToolset(), "missing")


async def test_sync_and_async_functions_are_called() -> None:
    async def double(x: int) -> int:
        await anyio.lowlevel.checkpoint()
        return 2 * x

    toolset = FunctionToolset([fixtures_functions.add, double])
    added = await call(toolset, "add", a=2, b=3)
    doubled = await call(toolset, "double", x=4)
    assert (added.first_text(), added.structured_content) == ("5", {"result": 5})
    assert (doubled.first_text(), doubled.structured_content) == ("8", {"result": 8})


async def test_arguments_are_coerced_and_models_arrive_as_instances() -> None:
    seen: list[object] = []

    def place(point: Point, times: int = 1) -> str:
        seen.append(point)
        return f"{point.x},{point.y} x{times}"

    result = await call(FunctionToolset([place]), "place", point={"x": "3"}, times="2")
    assert result.first_text() == "3,0 x2"
    assert seen == [Point(x=3)]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        pytest.param({"b": 1}, ["a: Field required"], id="missing"),
        pytest.param({"a": "three"}, ["a: Input should be a valid integer"], id="wrong-type"),
        pytest.param({"a": 1, "c": 2}, ["c: Extra inputs are not permitted"], id="unknown"),
    ],
)
async def test_invalid_arguments_return_an_error_naming_the_parameter(
    args: dict[str, Any], fragments: list[str]
) -> None:
    result = await call(FunctionToolset([fixtures_functions.add]), "add", **args)
    assert result.is_error
    assert result.first_text().startswith("Tool 'add' got invalid arguments: ")
    for fragment in fragments:
        assert fragment in result.first_text()


async def test_tool_context_is_injected_with_principal_call_and_session() -> None:
    seen: list[ToolContext] = []
    state: dict[str, list[str]] = {"cart": []}

    def remember(ctx: ToolContext, item: str) -> str:
        seen.append(ctx)
        return item

    toolset = FunctionToolset([remember], session_state=lambda ctx: state)
    await call(toolset, "remember", item="apple")
    [ctx] = seen
    assert (ctx.principal.id, ctx.session_id, ctx.call_id) == ("agent:test", "s-1", "call-1")
    assert ctx.session is state


async def test_model_cannot_set_the_tool_context() -> None:
    toolset = FunctionToolset([fixtures_functions.whoami])
    result = await call(toolset, "whoami", ctx={"principal": {"id": "root"}})
    assert result.is_error
    assert "ctx: Extra inputs are not permitted" in result.first_text()


async def test_tool_context_from_string_annotations_is_injected() -> None:
    toolset = FunctionToolset([fixtures_functions.whoami])
    result = await call(toolset, "whoami", greeting="hi")
    assert result.first_text() == "hi agent:test (call-1)"


async def test_progress_reaches_the_caller_from_async_and_sync_tools() -> None:
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    async def fetch(ctx: ToolContext) -> str:
        await ctx.report_progress(1, 2, "half")
        return "done"

    def crunch(ctx: ToolContext) -> str:
        anyio.from_thread.run(ctx.report_progress, 2, 2)
        return "done"

    toolset = FunctionToolset([fetch, crunch])
    ctx = CallContext(principal=Principal(id="p"), progress=on_progress)
    await call_tool(toolset, "fetch", {}, ctx)
    await call_tool(toolset, "crunch", {}, ctx)
    await call_tool(toolset, "fetch", {}, CallContext())  # no progress asked: nothing happens
    assert reports == [(1, 2, "half"), (2, 2, None)]


async def test_exception_returns_a_readable_error_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def explode(x: int) -> int:
        raise ValueError(f"cannot handle {x}")

    result = await call(FunctionToolset([explode]), "explode", x=7)
    assert result.is_error
    assert result.first_text() == "Tool 'explode' failed: ValueError: cannot handle 7"
    assert "Traceback" not in result.first_text()
    [record] = [r for r in caplog.records if r.name == "lockgate.tools"]
    assert record.exc_info is not None


class Shape(BaseModel):
    name: str
    sides: int


def returning(value: object, annotation: object = None) -> FunctionTool:
    def produce():  # type: ignore[no-untyped-def]
        return value

    produce.__annotations__ = {} if annotation is None else {"return": annotation}
    return FunctionTool(produce)


@pytest.mark.parametrize(
    ("tool", "text", "structured"),
    [
        pytest.param(returning("plain"), "plain", None, id="str-is-text"),
        pytest.param(returning({"a": 1}), '{"a": 1}', {"a": 1}, id="dict"),
        pytest.param(returning([1, "é"]), '[1, "é"]', {"result": [1, "é"]}, id="list-wrapped"),
        pytest.param(returning(2.5), "2.5", {"result": 2.5}, id="float"),
        pytest.param(returning(True), "true", {"result": True}, id="bool"),
        pytest.param(returning(None), "null", {"result": None}, id="none"),
        pytest.param(
            returning(Shape(name="tri", sides=3), Shape),
            '{"name": "tri", "sides": 3}',
            {"name": "tri", "sides": 3},
            id="model",
        ),
        pytest.param(returning(3, int), "3", {"result": 3}, id="annotated-int"),
        pytest.param(
            returning({"k": 1.0}, dict[str, float]), '{"k": 1.0}', {"k": 1.0}, id="annotated-dict"
        ),
        pytest.param(
            returning("s", str | int), '"s"', {"result": "s"}, id="str-under-output-schema"
        ),
    ],
)
async def test_return_values_become_text_and_structured_content(
    tool: FunctionTool, text: str, structured: dict[str, Any] | None
) -> None:
    result = await call(FunctionToolset([tool]), "produce")
    assert not result.is_error
    assert result.first_text() == text
    assert result.structured_content == structured


async def test_tool_result_passes_through() -> None:
    given = ToolResult.error("nothing to do")
    result = await call(FunctionToolset([returning(given)]), "produce")
    assert result is given


async def test_value_not_matching_the_return_annotation_is_an_error_result() -> None:
    result = await call(FunctionToolset([returning("three", int)]), "produce")
    assert result.is_error
    assert result.first_text().startswith("Tool 'produce' failed: PydanticSerializationError")


@pytest.fixture
def blocked() -> Iterator[threading.Event]:
    """Released at teardown, so an abandoned worker thread can finish."""
    release = threading.Event()
    yield release
    release.set()


def hanging_tools(release: threading.Event) -> list[Callable[..., Any]]:
    def hang_sync() -> str:
        release.wait()
        return "released"

    async def hang_async() -> str:
        await anyio.Event().wait()
        return "never"

    return [hang_sync, hang_async]


@pytest.mark.parametrize("name", ["hang_sync", "hang_async"])
@pytest.mark.parametrize(
    ("timeouts", "applied"),
    [
        pytest.param((0.1, 0.05, 0.05), "0.1", id="tool-beats-toolset-and-default"),
        pytest.param((None, 0.1, 0.05), "0.1", id="toolset-beats-default"),
        pytest.param((None, None, 0.05), "0.05", id="default"),
    ],
)
async def test_timeout_returns_a_readable_error_with_tool_over_toolset_over_default(
    blocked: threading.Event,
    name: str,
    timeouts: tuple[float | None, float | None, float | None],
    applied: str,
) -> None:
    tool_timeout, toolset_timeout, default_timeout = timeouts
    tools = [FunctionTool(func, timeout=tool_timeout) for func in hanging_tools(blocked)]
    toolset = FunctionToolset(tools, timeout=toolset_timeout, default_timeout=default_timeout)
    result = await call(toolset, name)
    assert result.is_error
    assert result.first_text() == f"Tool {name!r} timed out after {applied} s"


async def test_default_timeout_can_be_set_later(blocked: threading.Event) -> None:
    toolset = FunctionToolset(hanging_tools(blocked))
    toolset.set_default_timeout(0.05)
    result = await call(toolset, "hang_sync")
    assert result.first_text() == "Tool 'hang_sync' timed out after 0.05 s"


async def test_call_finishing_within_its_timeout_succeeds() -> None:
    toolset = FunctionToolset([fixtures_functions.add], default_timeout=5)
    result = await call(toolset, "add", a=1)
    assert result.structured_content == {"result": 2}


def test_whole_second_timeout_is_kept_as_float_seconds() -> None:
    timeout = FunctionTool(fixtures_functions.add, timeout=2).timeout
    assert isinstance(timeout, float)
    assert timeout == 2.0


async def test_import_paths_register_functions() -> None:
    toolset = FunctionToolset.from_import_paths(
        [f"{FIXTURES}:add", f"{FIXTURES}:whoami"], server="fx", timeout=5
    )
    tools = await toolset.get_tools(CTX)
    assert sorted(tools) == ["add", "whoami"]
    assert tools["add"].server == "fx"
    result = await call(toolset, "add", a=40, b=2)
    assert result.structured_content == {"result": 42}


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        pytest.param("no_colon", "expected 'package.module:function'", id="no-colon"),
        pytest.param("no_such_module_xyz:f", "ModuleNotFoundError", id="no-module"),
        pytest.param(f"{FIXTURES}:missing", "has no attribute 'missing'", id="no-attribute"),
        pytest.param(
            f"{FIXTURES}:NOT_CALLABLE", "'NOT_CALLABLE' is not callable", id="not-callable"
        ),
        pytest.param(f"{FIXTURES}:variadic", "not usable as a tool", id="variadic"),
    ],
)
def test_bad_import_path_raises_import_path_error(path: str, reason: str) -> None:
    with pytest.raises(ImportPathError) as caught:
        FunctionToolset.from_import_paths([path])
    assert str(caught.value).startswith(f"cannot import {path!r}: ")
    assert reason in str(caught.value)
    assert isinstance(caught.value, LookupError)
    assert isinstance(caught.value, LockgateError)
    assert caught.value.path == path

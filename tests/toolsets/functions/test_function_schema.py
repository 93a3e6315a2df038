"""Schema inference for function tools: type hints and docstrings to JSON schema."""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal, Optional

import fixtures_functions
import pytest
from pydantic import BaseModel, Field

from toolsets.functions.schema import function_schema
from toolsets.functions.tool_context import ToolContext
from toolsets.result import ToolResult


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(BaseModel):
    x: int
    y: int = 0


POINT_SCHEMA = {
    "type": "object",
    "title": "Point",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
    "required": ["x"],
}


def with_param(annotation: object, default: object = inspect.Parameter.empty) -> Callable[..., Any]:
    """A function whose single parameter ``x`` has ``annotation`` (a real object, not a string)."""

    def tool(x):  # type: ignore[no-untyped-def]
        return x

    tool.__annotations__ = {"x": annotation}
    if default is not inspect.Parameter.empty:
        tool.__defaults__ = (default,)
    return tool


def inline_refs(schema: Any, defs: dict[str, Any]) -> Any:
    """``schema`` with every ``$ref`` into ``defs`` replaced by its target (non-recursive types)."""
    if isinstance(schema, list):
        return [inline_refs(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        target = defs[schema["$ref"].removeprefix("#/$defs/")]
        return inline_refs({**target, **siblings}, defs)
    return {key: inline_refs(value, defs) for key, value in schema.items()}


def property_schema(func: Callable[..., Any], name: str = "x") -> Any:
    schema = function_schema(func).input_schema
    return inline_refs(schema["properties"][name], schema.get("$defs", {}))


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        pytest.param(str, {"type": "string"}, id="str"),
        pytest.param(int, {"type": "integer"}, id="int"),
        pytest.param(float, {"type": "number"}, id="float"),
        pytest.param(bool, {"type": "boolean"}, id="bool"),
        pytest.param(list[int], {"type": "array", "items": {"type": "integer"}}, id="list-int"),
        pytest.param(
            list[list[str]],
            {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
            id="list-list-str",
        ),
        pytest.param(
            dict[str, int],
            {"type": "object", "additionalProperties": {"type": "integer"}},
            id="dict-str-int",
        ),
        pytest.param(
            dict[str, Any], {"type": "object", "additionalProperties": True}, id="dict-str-any"
        ),
        pytest.param(
            Optional[int],  # noqa: UP045 - the spelling under test
            {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            id="optional-int",
        ),
        pytest.param(
            str | None, {"anyOf": [{"type": "string"}, {"type": "null"}]}, id="pipe-none-str"
        ),
        pytest.param(
            Literal["fast", "slow"], {"type": "string", "enum": ["fast", "slow"]}, id="literal-str"
        ),
        pytest.param(Literal[1, 2], {"type": "integer", "enum": [1, 2]}, id="literal-int"),
        pytest.param(
            Color, {"type": "string", "enum": ["red", "blue"], "title": "Color"}, id="enum-str"
        ),
        pytest.param(
            Priority, {"type": "integer", "enum": [1, 2], "title": "Priority"}, id="enum-int"
        ),
        pytest.param(Point, POINT_SCHEMA, id="pydantic-model"),
        pytest.param(list[Point], {"type": "array", "items": POINT_SCHEMA}, id="list-model"),
        pytest.param(
            Annotated[int, Field(ge=0, description="Non-negative.")],
            {"type": "integer", "minimum": 0, "description": "Non-negative."},
            id="annotated-field",
        ),
        pytest.param(Any, {}, id="any"),
    ],
)
def test_type_hint_becomes_property_schema(annotation: object, expected: dict[str, Any]) -> None:
    assert property_schema(with_param(annotation)) == expected


def test_unannotated_parameter_accepts_anything() -> None:
    def tool(x):  # type: ignore[no-untyped-def]
        return x

    assert property_schema(tool) == {}


@pytest.mark.parametrize(
    ("annotation", "default", "expected"),
    [
        pytest.param(int, 3, {"type": "integer", "default": 3}, id="int"),
        pytest.param(
            Optional[int],  # noqa: UP045
            None,
            {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            id="optional-none",
        ),
        pytest.param(
            Color, Color.BLUE, {**property_schema(with_param(Color)), "default": "blue"}, id="enum"
        ),
        pytest.param(object, object(), {}, id="not-json-default-left-out"),
    ],
)
def test_parameter_with_default_is_optional_and_shows_default(
    annotation: object, default: object, expected: dict[str, Any]
) -> None:
    func = with_param(annotation, default)
    assert property_schema(func) == expected
    assert "required" not in function_schema(func).input_schema


def test_schema_is_a_closed_object_without_title_noise() -> None:
    def search(query: str, limit: int = 10) -> str:
        return query * limit

    assert function_schema(search).input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_parameter_names_that_shadow_pydantic_attributes_are_kept() -> None:
    def clash(json: str, model_config: int, _private: bool) -> str:
        return json

    schema = function_schema(clash).input_schema
    assert list(schema["properties"]) == ["json", "model_config", "_private"]
    assert schema["required"] == ["json", "model_config", "_private"]


def google_style(path: str, recursive: bool = False) -> str:
    """List a directory.

    Hidden files are included.

    Args:
        path: The directory to list.
        recursive: Whether to descend
            into subdirectories.

    Returns:
        One name per line.

    Raises:
        OSError: the directory cannot be read.
    """
    return path


def sphinx_style(path: str, recursive: bool = False) -> str:
    """List a directory.

    Hidden files are included.

    :param path: The directory to list.
    :param bool recursive: Whether to descend
        into subdirectories.
    :returns: One name per line.
    :raises OSError: the directory cannot be read.
    """
    return path


def numpy_style(path: str, recursive: bool = False) -> str:
    """List a directory.

    Hidden files are included.

    Parameters
    ----------
    path : str
        The directory to list.
    recursive : bool
        Whether to descend
        into subdirectories.

    Returns
    -------
    str
        One name per line.
    """
    return path


@pytest.mark.parametrize(
    "func",
    [
        pytest.param(google_style, id="google"),
        pytest.param(sphinx_style, id="sphinx"),
        pytest.param(numpy_style, id="numpy"),
    ],
)
def test_docstring_gives_description_and_parameter_descriptions(func: Callable[..., Any]) -> None:
    schema = function_schema(func)
    assert schema.description == "List a directory.\n\nHidden files are included."
    properties = schema.input_schema["properties"]
    assert properties["path"]["description"] == "The directory to list."
    assert properties["recursive"]["description"] == "Whether to descend\ninto subdirectories."


def test_plain_docstring_is_the_whole_description() -> None:
    def ping() -> str:
        """Check that the gateway answers."""
        return "pong"

    assert function_schema(ping).description == "Check that the gateway answers."


def test_no_docstring_means_no_description() -> None:
    def ping(x: int) -> str:
        return "pong"

    schema = function_schema(ping)
    assert schema.description is None
    assert "description" not in schema.input_schema["properties"]["x"]


def with_context(ctx: ToolContext, name: str) -> str:
    return name


def with_annotated_context(name: str, ctx: Annotated[ToolContext, "injected"]) -> str:
    return name


@pytest.mark.parametrize(
    ("func", "param"),
    [
        pytest.param(with_context, "ctx", id="plain"),
        pytest.param(with_annotated_context, "ctx", id="annotated"),
        pytest.param(fixtures_functions.whoami, "ctx", id="future-annotations-module"),
    ],
)
def test_tool_context_parameter_is_never_in_the_schema(
    func: Callable[..., Any], param: str
) -> None:
    schema = function_schema(func)
    assert schema.context_param == param
    assert param not in schema.input_schema["properties"]
    assert param not in schema.input_schema.get("required", [])


def test_two_tool_context_parameters_are_refused() -> None:
    def twice(a: ToolContext, b: ToolContext) -> None:
        return None

    with pytest.raises(TypeError, match="more than one ToolContext"):
        function_schema(twice)


@pytest.mark.parametrize(
    "func",
    [
        pytest.param(fixtures_functions.variadic, id="args"),
        pytest.param(lambda **options: options, id="kwargs"),
    ],
)
def test_variadic_parameters_are_refused(func: Callable[..., Any]) -> None:
    with pytest.raises(TypeError, match="variadic"):
        function_schema(func)


def test_unresolvable_string_annotation_is_refused() -> None:
    def broken(x: Undefined) -> None:  # type: ignore[name-defined]  # noqa: F821
        return None

    with pytest.raises(TypeError, match="cannot resolve the type hints of"):
        function_schema(broken)


@pytest.mark.parametrize(
    ("annotation", "expected", "wrapped"),
    [
        pytest.param(inspect.Parameter.empty, None, False, id="none-declared"),
        pytest.param(str, None, False, id="str"),
        pytest.param(None, None, False, id="None"),
        pytest.param(Any, None, False, id="any"),
        pytest.param(ToolResult, None, False, id="tool-result"),
        pytest.param(
            int,
            {
                "type": "object",
                "properties": {"result": {"type": "integer"}},
                "required": ["result"],
            },
            True,
            id="int-wrapped",
        ),
        pytest.param(
            list[str],
            {
                "type": "object",
                "properties": {"result": {"type": "array", "items": {"type": "string"}}},
                "required": ["result"],
            },
            True,
            id="list-wrapped",
        ),
        pytest.param(
            dict[str, float],
            {"type": "object", "additionalProperties": {"type": "number"}},
            False,
            id="dict-as-is",
        ),
        pytest.param(Point, POINT_SCHEMA, False, id="model-as-is"),
        pytest.param(
            list[Point],
            {
                "type": "object",
                "properties": {
                    "result": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
                },
                "required": ["result"],
                "$defs": {"Point": POINT_SCHEMA},
            },
            True,
            id="list-of-models-wrapped-defs-at-root",
        ),
    ],
)
def test_return_annotation_becomes_output_schema(
    annotation: object, expected: dict[str, Any] | None, wrapped: bool
) -> None:
    def tool() -> None:
        return None

    tool.__annotations__ = {} if annotation is inspect.Parameter.empty else {"return": annotation}
    schema = function_schema(tool)
    assert schema.output_schema == expected
    assert schema.wrap_output is wrapped


def test_sync_and_async_functions_are_told_apart() -> None:
    assert function_schema(fixtures_functions.whoami).is_async
    assert not function_schema(fixtures_functions.add).is_async


class Greeter:
    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    def greet(self, name: str) -> str:
        """Greet someone.

        Args:
            name: Who to greet.
        """
        return f"{self.greeting} {name}"

    async def __call__(self, name: str, ctx: ToolContext) -> str:
        """Greet someone, asynchronously."""
        return f"{self.greeting} {name}"


def scale(factor: float, value: float) -> float:
    """Scale a value.

    Args:
        factor: The factor.
        value: The value to scale.
    """
    return factor * value


@pytest.mark.parametrize(
    ("func", "properties", "description", "is_async"),
    [
        pytest.param(Greeter("hi").greet, ["name"], "Greet someone.", False, id="bound-method"),
        pytest.param(
            Greeter("hi"), ["name"], "Greet someone, asynchronously.", True, id="callable"
        ),
        pytest.param(
            functools.partial(scale, 2.0), ["value"], "Scale a value.", False, id="partial"
        ),
    ],
)
def test_other_callables_are_described_by_their_underlying_function(
    func: Callable[..., Any], properties: list[str], description: str, is_async: bool
) -> None:
    schema = function_schema(func)
    assert list(schema.input_schema["properties"]) == properties
    assert schema.description == description
    assert schema.is_async is is_async

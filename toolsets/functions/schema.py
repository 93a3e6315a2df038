"""From a Python function's signature and docstring to a tool's JSON schemas and argument validator.

Pure: nothing here runs the function. Computed once per registration, never per call.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, NamedTuple

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaWarningKind
from pydantic_core import to_jsonable_python

from toolsets.functions.tool_context import ToolContext
from toolsets.result import ToolResult

__all__ = ["FunctionSchema", "function_schema"]

_NO_OUTPUT_SCHEMA: tuple[object, ...] = (Any, str, None, type(None), inspect.Signature.empty)


class _Argument(NamedTuple):
    """How one parameter of the function is filled: from a model field, or with the context."""

    name: str
    field: str | None  # None: the ToolContext parameter
    positional_only: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionSchema:
    """What a function looks like as a tool.

    Attributes:
        description: The docstring without its parameter, return and raise sections.
        input_schema: JSON Schema of the arguments (an object; unknown keys are refused).
        output_schema: JSON Schema of the structured result, from the return annotation; ``None``
            when the function returns text, nothing, ``Any`` or a ``ToolResult``.
        wrap_output: True when the structured result is ``{"result": value}`` (the return type is
            not a JSON object).
        context_param: Name of the ``ToolContext`` parameter, if the function takes one.
        is_async: True for coroutine functions.
        validator: Pydantic model validating and coercing the arguments.
    """

    description: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wrap_output: bool
    context_param: str | None
    is_async: bool
    validator: type[BaseModel] = field(repr=False)
    output_adapter: TypeAdapter[Any] | None = field(repr=False)
    arguments: tuple[_Argument, ...] = field(repr=False)

    def bind(
        self, args: Mapping[str, Any], context: ToolContext
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Validate ``args`` and build the positional and keyword arguments of the call.

        Args:
            args: The arguments as the model sent them.
            context: Passed to the ``ToolContext`` parameter, if any.

        Raises:
            pydantic.ValidationError: the arguments do not match the schema.
        """
        model = self.validator.model_validate(dict(args))
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for arg in self.arguments:
            value = context if arg.field is None else getattr(model, arg.field)
            if arg.positional_only:
                positional.append(value)
            else:
                keywords[arg.name] = value
        return tuple(positional), keywords

    def dump_output(self, value: Any) -> Any:
        """The JSON-compatible form of a return value.

        Raises:
            pydantic_core.PydanticSerializationError: the value does not match the return
                annotation, or is not serializable.
        """
        if self.output_adapter is None:
            return to_jsonable_python(value)
        return self.output_adapter.dump_python(value, mode="json", warnings="error")


class _ToolJsonSchema(GenerateJsonSchema):
    """Pydantic's JSON schema without per-property titles, and without unusable defaults."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def emit_warning(self, kind: JsonSchemaWarningKind, detail: str) -> None:
        # A default that is not JSON is left out of the schema, which is what a model should see.
        if kind != "non-serializable-default":
            super().emit_warning(kind, detail)


def function_schema(func: Callable[..., Any]) -> FunctionSchema:
    """Describe ``func`` as a tool.

    Parameter types come from the type hints (string annotations are resolved); parameter
    descriptions from the docstring (Google, Sphinx or NumPy style). A parameter annotated with
    `ToolContext` is left out of the schema and filled at call time.

    Args:
        func: A function, coroutine function, bound method, ``functools.partial`` or callable
            object.

    Raises:
        TypeError: a parameter is ``*args`` or ``**kwargs``, a type hint cannot be resolved, or a
            type has no JSON schema.
    """
    target = _annotated_target(func)
    label = getattr(target, "__qualname__", repr(func))
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception as exc:
        raise TypeError(f"cannot resolve the type hints of {label!r}: {exc}") from exc
    description, param_docs = _parse_docstring(target)
    fields, arguments, context_param = _parameters(func, label, hints, param_docs)
    validator, input_schema = _input_model(label, fields)
    output_adapter, output_schema, wrap = _output(
        label, hints.get("return", inspect.Signature.empty)
    )
    return FunctionSchema(
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        wrap_output=wrap,
        context_param=context_param,
        is_async=inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(target),
        validator=validator,
        output_adapter=output_adapter,
        arguments=arguments,
    )


def _parameters(
    func: Callable[..., Any], label: str, hints: dict[str, Any], docs: dict[str, str]
) -> tuple[dict[str, Any], tuple[_Argument, ...], str | None]:
    """The model fields, the call arguments and the context parameter of ``func``."""
    fields: dict[str, Any] = {}
    arguments: list[_Argument] = []
    context_param: str | None = None
    for index, param in enumerate(inspect.signature(func).parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"{label!r}: parameter {param.name!r} is variadic; tools take named ones"
            )
        annotation = hints.get(param.name, Any)
        positional_only = param.kind is param.POSITIONAL_ONLY
        if _is_context(annotation):
            if context_param is not None:
                raise TypeError(f"{label!r}: more than one ToolContext parameter")
            context_param = param.name
            arguments.append(_Argument(param.name, None, positional_only))
            continue
        field_name = f"arg{index}"  # aliases keep parameter names clear of BaseModel attributes
        fields[field_name] = (annotation, _field_info(param, docs.get(param.name)))
        arguments.append(_Argument(param.name, field_name, positional_only))
    return fields, tuple(arguments), context_param


def _annotated_target(func: Callable[..., Any]) -> Callable[..., Any]:
    """The function whose annotations and docstring describe ``func``."""
    target: Any = func
    while isinstance(target, functools.partial):
        target = target.func
    if not inspect.isroutine(target) and callable(target):
        target = type(target).__call__
    return typing.cast(Callable[..., Any], target)


def _is_context(annotation: Any) -> bool:
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return isinstance(annotation, type) and issubclass(annotation, ToolContext)


def _field_info(param: inspect.Parameter, description: str | None) -> Any:
    extra: dict[str, Any] = {}
    if description is not None:
        extra["description"] = description
    if param.default is not param.empty:
        extra["default"] = param.default
    return Field(alias=param.name, **extra)


def _input_model(label: str, fields: dict[str, Any]) -> tuple[type[BaseModel], dict[str, Any]]:
    try:
        model: type[BaseModel] = create_model(
            "Arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = model.model_json_schema(schema_generator=_ToolJsonSchema)
    except Exception as exc:
        raise TypeError(f"cannot build the input schema of {label!r}: {exc}") from exc
    schema.pop("title", None)
    return model, schema


def _output(
    label: str, annotation: Any
) -> tuple[TypeAdapter[Any] | None, dict[str, Any] | None, bool]:
    """The adapter, output schema and wrapping of a return annotation."""
    if any(annotation is skip for skip in _NO_OUTPUT_SCHEMA) or (
        isinstance(annotation, type) and issubclass(annotation, ToolResult)
    ):
        return None, None, False
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        schema = adapter.json_schema(mode="serialization", schema_generator=_ToolJsonSchema)
    except Exception as exc:
        raise TypeError(f"cannot build the output schema of {label!r}: {exc}") from exc
    if schema.get("type") == "object":
        return adapter, schema, False
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if defs:
        wrapped["$defs"] = defs
    return adapter, wrapped, True


def _parse_docstring(target: Callable[..., Any]) -> tuple[str | None, dict[str, str]]:
    """The description and the parameter descriptions of a docstring, whatever its style."""
    doc = inspect.getdoc(target)
    if not doc:
        return None, {}
    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError:
        return doc, {}
    params = {p.arg_name: p.description for p in parsed.params if p.description}
    return (parsed.description or "").strip() or None, params

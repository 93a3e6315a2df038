"""A script's ``run(...)`` as a tool: JSON Schema and description read from its syntax tree.

Nothing here runs or imports the script; only annotations, literal defaults and the docstring
are read. The schemas have the shape `toolsets.functions.schema` gives Python functions.
"""

from __future__ import annotations

import ast
import json
from typing import Any, NamedTuple

import docstring_parser

__all__ = ["AnnotationError", "Problem", "find_function", "run_docs", "run_input_schema"]

_SIMPLE: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "None": {"type": "null"},
    "NoneType": {"type": "null"},
    "Any": {},
    "object": {},
    "list": {"type": "array", "items": {}},
    "List": {"type": "array", "items": {}},
    "dict": {"type": "object"},
    "Dict": {"type": "object"},
}
_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}
SUPPORTED = (
    "str, int, float, bool, None, Any, list[X], dict[str, X], X | Y, Optional[X], Literal[...]"
)


class Problem(NamedTuple):
    """Something wrong in a source, at a line and (1-based) column of it."""

    line: int
    column: int | None
    message: str


class AnnotationError(Exception):
    """A parameter of ``run`` cannot be described in JSON Schema."""

    def __init__(self, node: ast.AST, message: str) -> None:
        super().__init__(message)
        offset: int | None = getattr(node, "col_offset", None)
        column = offset + 1 if offset is not None else None
        self.problem = Problem(getattr(node, "lineno", 1), column, message)


Function = ast.FunctionDef | ast.AsyncFunctionDef


def find_function(tree: ast.Module, name: str) -> Function | None:
    """The module-level ``def name`` (the last one, as Python would bind it)."""
    found = [n for n in tree.body if isinstance(n, Function) and n.name == name]
    return found[-1] if found else None


def run_docs(func: Function) -> tuple[str | None, dict[str, str]]:
    """The first paragraph of ``func``'s docstring and its parameter descriptions, any style."""
    doc = ast.get_docstring(func)
    if not doc:
        return None, {}
    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError:
        return _first_paragraph(doc), {}
    params = {p.arg_name: p.description for p in parsed.params if p.description}
    return _first_paragraph(parsed.description or ""), params


def _first_paragraph(text: str) -> str | None:
    paragraph = text.strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split()) or None


def run_input_schema(func: Function) -> dict[str, Any]:
    """JSON Schema of ``func``'s parameters: an object refusing unknown keys.

    Raises:
        AnnotationError: a parameter is variadic or positional-only, or its annotation has no
            JSON Schema.
    """
    args = func.args
    if args.posonlyargs:
        raise AnnotationError(args.posonlyargs[0], "run() cannot take positional-only parameters")
    for variadic in (args.vararg, args.kwarg):
        if variadic is not None:
            message = f"run() parameter {variadic.arg!r} is variadic; tools take named ones"
            raise AnnotationError(variadic, message)
    _, docs = run_docs(func)
    defaults: list[ast.expr | None] = [None] * (len(args.args) - len(args.defaults))
    params = zip(
        [*args.args, *args.kwonlyargs], [*defaults, *args.defaults, *args.kw_defaults], strict=True
    )
    properties: dict[str, Any] = {}
    required: list[str] = []
    for arg, default in params:
        prop = annotation_schema(arg.annotation)
        if arg.arg in docs:
            prop["description"] = docs[arg.arg]
        if default is None:
            required.append(arg.arg)
        elif (value := _json_default(default)) is not _NO_DEFAULT:
            prop["default"] = value
        properties[arg.arg] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


_NO_DEFAULT = object()


def _json_default(node: ast.expr) -> Any:
    """The default as JSON, or `_NO_DEFAULT` when it is not a JSON literal (left out)."""
    try:
        return json.loads(json.dumps(ast.literal_eval(node)))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO_DEFAULT


def annotation_schema(node: ast.expr | None) -> dict[str, Any]:
    """The JSON Schema of one annotation (none: any value).

    Raises:
        AnnotationError: the annotation has no JSON Schema here.
    """
    if node is None:
        return {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _string_annotation(node)
    name = _typing_name(node)
    if name is not None and name in _SIMPLE:
        return dict(_SIMPLE[name])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([node.left, node.right])
    if isinstance(node, ast.Subscript):
        return _generic(node)
    if isinstance(node, ast.Constant) and node.value is None:
        return {"type": "null"}
    raise AnnotationError(node, _unsupported(node))


def _unsupported(node: ast.expr) -> str:
    return f"unsupported annotation {ast.unparse(node)!r} (use {SUPPORTED})"


def _typing_name(node: ast.expr) -> str | None:
    """``X`` for ``X`` and ``typing.X``; None for any other expression."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id in {"typing", "t"} else None
    return None


def _string_annotation(node: ast.Constant) -> dict[str, Any]:
    try:
        inner = ast.parse(str(node.value).strip(), mode="eval").body
    except SyntaxError:
        raise AnnotationError(node, f"annotation {node.value!r} is not an expression") from None
    try:
        return annotation_schema(inner)
    except AnnotationError as exc:  # positions inside the string mean nothing in the file
        raise AnnotationError(node, exc.problem.message) from None


def _generic(node: ast.Subscript) -> dict[str, Any]:
    """``list[X]``, ``dict[str, X]``, ``Optional[X]``, ``Union[...]``, ``Literal[...]``."""
    base = _typing_name(node.value)
    items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if base in {"list", "List"} and len(items) == 1:
        return {"type": "array", "items": annotation_schema(items[0])}
    if base in {"dict", "Dict"} and len(items) == 2:
        if _typing_name(items[0]) != "str":
            raise AnnotationError(node, f"{ast.unparse(node)!r}: JSON object keys are str")
        return {"type": "object", "additionalProperties": annotation_schema(items[1])}
    if base == "Optional" and len(items) == 1:
        return _union([items[0], ast.Constant(None)])
    if base == "Union":
        return _union(items)
    if base == "Literal":
        return _literal(node, items)
    if base == "Annotated":
        return annotation_schema(items[0])
    raise AnnotationError(node, _unsupported(node))


def _union(members: list[ast.expr]) -> dict[str, Any]:
    flat: list[ast.expr] = []
    while members:
        member = members.pop(0)
        if isinstance(member, ast.BinOp) and isinstance(member.op, ast.BitOr):
            members[:0] = [member.left, member.right]
        else:
            flat.append(member)
    options: list[dict[str, Any]] = []
    for member in flat:
        option = annotation_schema(member)
        if option == {}:
            return {}  # anything, or something: anything
        if option not in options:
            options.append(option)
    return options[0] if len(options) == 1 else {"anyOf": options}


def _literal(node: ast.Subscript, items: list[ast.expr]) -> dict[str, Any]:
    values: list[Any] = []
    for item in items:
        try:
            value = ast.literal_eval(item)
        except ValueError:
            value = ...
        if type(value) not in _JSON_TYPES:
            raise AnnotationError(item, f"Literal value {ast.unparse(item)!r} is not JSON")
        values.append(value)
    schema: dict[str, Any] = {"enum": values}
    kinds = {_JSON_TYPES[type(v)] for v in values}
    if len(kinds) == 1:
        schema["type"] = kinds.pop()
    return schema

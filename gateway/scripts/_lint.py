"""What a script or hook source gets wrong before it runs, read from its syntax tree.

Its entry points (``run``, ``before_call``, ``after_call``) and what it uses that the sandbox does
not have: modules, builtins, tool names. Which modules and builtins exist is Monty's answer
(`gateway.scripts._probe`); everything else is decided here.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from gateway.scripts._probe import SandboxSupport
from gateway.scripts._signature import AnnotationError, Problem, find_function, run_input_schema

__all__ = ["HOOKS", "HOST_MODULES", "Kind", "Usage", "entry_problems", "sandbox_problems"]

Kind = Literal["script", "hook"]

HOOKS = {"before_call": ("tool", "args", "ctx"), "after_call": ("tool", "args", "result", "ctx")}
HOST_MODULES = frozenset({"tools", "async_tools", "ctx"})
"""Modules the gateway gives every script and hook (already imported for them)."""
NO_HOST_ACCESS = frozenset({"os", "pathlib"})
"""Monty has them, but the gateway mounts no directory and lends no environment: refused here."""

_TOOL_MODULES = frozenset({"tools", "async_tools"})
_TOOL_ATTRIBUTE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}", re.ASCII)
_BUILTINS = frozenset(dir(builtins))


def entry_problems(tree: ast.Module, kind: Kind, *, schema: bool) -> list[Problem]:
    """A script without ``run`` (or, with ``schema``, one whose parameters have no JSON Schema);
    a hook without ``before_call``/``after_call``, or with other parameters."""
    if kind == "hook":
        return _hook_problems(tree)
    run = find_function(tree, "run")
    if run is None:
        message = (
            "a script tool defines 'def run(...)' at top level; its parameters are the arguments"
        )
        return [Problem(1, None, message)]
    if schema:
        try:
            run_input_schema(run)
        except AnnotationError as exc:
            return [exc.problem]
    return []


def _hook_problems(tree: ast.Module) -> list[Problem]:
    signatures = [f"{name}({', '.join(params)})" for name, params in HOOKS.items()]
    found = {name: find_function(tree, name) for name in HOOKS}
    if not any(found.values()):
        return [Problem(1, None, f"a hook defines {' and/or '.join(signatures)}; found neither")]
    problems: list[Problem] = []
    for name, func in found.items():
        if func is None:
            continue
        args = func.args
        names = tuple(a.arg for a in (*args.posonlyargs, *args.args))
        if names != HOOKS[name] or args.vararg or args.kwarg or args.kwonlyargs:
            message = f"{name}() takes ({', '.join(HOOKS[name])}), not ({ast.unparse(args)})"
            problems.append(Problem(func.lineno, func.col_offset + 1, message))
        if isinstance(func, ast.AsyncFunctionDef):
            message = f"{name}() is called as a plain function: write 'def', not 'async def'"
            problems.append(Problem(func.lineno, func.col_offset + 1, message))
    return problems


@dataclass
class Usage:
    """What a source needs from the sandbox, and the problems seen without asking it.

    Attributes:
        imports: Each import statement the sandbox must run, rebuilt, with where it is.
        names: Each use of a Python builtin the source does not define itself.
        problems: Relative imports, host-only modules, impossible tool names.
    """

    imports: list[tuple[str, ast.stmt]] = field(default_factory=list)
    names: list[ast.Name] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @classmethod
    def of(cls, tree: ast.Module) -> Usage:
        """The usage of the source ``tree``."""
        usage = cls()
        defined = _bound_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                usage._add_import(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if node.id in _BUILTINS and node.id not in defined:
                    usage.names.append(node)
            elif isinstance(node, ast.Attribute) and _is_tool_module(node.value):
                usage._check_tool_name(node, ast.unparse(node.value), node.attr)
        return usage

    def _add_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.ImportFrom) and (node.level or node.module is None):
            self._problem(node, "relative imports have no package to import from in the sandbox")
            return
        for statement, module, name in _statements(node):
            top = module.split(".")[0]
            if top in _TOOL_MODULES and name is not None:
                self._check_tool_name(node, top, name)
            elif top in NO_HOST_ACCESS:
                message = (
                    f"module {top!r} is not available in the sandbox: scripts have no files, "
                    "environment or processes (call the gateway's tools for those)"
                )
                self._problem(node, message)
            elif top not in HOST_MODULES:
                self.imports.append((statement, node))

    def _check_tool_name(self, node: ast.AST, module: str, name: str) -> None:
        if name != "*" and not _TOOL_ATTRIBUTE.fullmatch(name):
            message = (
                f"{module}.{name} cannot name a tool: tool names are at most 64 ASCII letters, "
                "digits, '_' and '-', and those starting with '_' are not exposed"
            )
            self._problem(node, message)

    def _problem(self, node: ast.AST, message: str) -> None:
        line, column = getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1
        self.problems.append(Problem(line, column, message))


def _is_tool_module(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in _TOOL_MODULES


def _statements(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str, str | None]]:
    """``(statement, module, imported name)`` for each name the import binds."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield f"import {alias.name}", alias.name, None
    else:
        module = node.module or ""
        for alias in node.names:
            yield f"from {module} import {alias.name}", module, alias.name


def sandbox_problems(usage: Usage, support: SandboxSupport | None) -> list[Problem]:
    """Every problem of ``usage``, in source order; imports and builtins only when the sandbox
    could be asked (``support`` is None when it could not)."""
    problems = list(usage.problems)
    if support is not None:
        for statement, node in usage.imports:
            if (error := support.import_errors.get(statement)) is not None:
                message = f"{statement!r} does not work in the sandbox: {error}"
                problems.append(Problem(node.lineno, node.col_offset + 1, message))
        for name in usage.names:
            if name.id in support.missing_names:
                message = f"{name.id!r} is not available in the sandbox (it has no such builtin)"
                problems.append(Problem(name.lineno, name.col_offset + 1, message))
    return sorted(problems, key=lambda p: (p.line, p.column or 0))


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name the source binds anywhere: those shadow builtins of the same name."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
    return bound

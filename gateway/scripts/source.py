"""Script and hook sources: read from their file or the config, and checked — never run.

Every problem is a `ConfigIssue` pointing where the user edits: the line of the ``.py`` file, or,
for a source written inline in the config, the line of the config file.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gateway.config.model import GatewayConfig
from gateway.config.scripts import ScriptConfig, SourceConfig
from gateway.scripts._lint import Kind, Usage, entry_problems, sandbox_problems
from gateway.scripts._probe import probe_sandbox
from gateway.scripts._signature import (
    AnnotationError,
    Problem,
    find_function,
    run_docs,
    run_input_schema,
)
from policies.yamlfile import Located
from toolsets.errors import ConfigError, ConfigIssue

__all__ = [
    "ScriptSource",
    "check_sources",
    "parse_source",
    "read_source",
    "run_description",
    "run_schema",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptSource:
    """The Python text of one script or hook, and where its lines are.

    Attributes:
        text: The source.
        filename: Its name in tracebacks: the ``.py`` path, or for an inline source the config
            file and key, e.g. ``gateway.yaml:servers.2.scripts.0``.
        key: The config key of the script or hook, e.g. ``servers.2.scripts.0`` or ``hooks.1``.
        file: The file the user edits: the ``.py`` file, or the config file.
        first_line: The line of ``file`` where the source starts.
        indent: Columns of ``file`` before the source's text (an inline source's indentation).
        verbatim: Whether the source's lines are lines of ``file``; not when the config quotes
            or folds the text, so that an issue can only name the source's own line.
    """

    text: str
    filename: str
    key: str
    file: str
    first_line: int = 1
    indent: int = 0
    verbatim: bool = True

    def issue(self, message: str, line: int = 1, column: int | None = None) -> ConfigIssue:
        """An issue at ``line`` and ``column`` (1-based) of the source, placed in `file`."""
        if not self.verbatim:
            message = f"source line {line}: {message}"
            return ConfigIssue(self.file, self.first_line, None, self.key, message)
        column = column + self.indent if column is not None else None
        return ConfigIssue(self.file, self.first_line + line - 1, column, self.key, message)

    def problem(self, problem: Problem) -> ConfigIssue:
        """`issue` for a `Problem` found in the source."""
        return self.issue(problem.message, problem.line, problem.column)


def read_source(
    config: GatewayConfig, entry: SourceConfig, where: str, located: Located | None = None
) -> ScriptSource:
    """The source of a script or hook of ``config``.

    Args:
        config: The gateway config; ``file`` paths are relative to its `base_dir`.
        entry: The script or hook.
        where: Its config key, e.g. ``servers.2.scripts.0`` or ``hooks.1``.
        located: The config file's positions, when loading it: an inline source's issues then
            point into the config file (without, into ``<servers.2.scripts.0>``).

    Raises:
        ConfigError: The file cannot be read, naming the config key and the path.
    """
    if entry.file is None:
        return _inline(entry.source or "", where, located)
    path = config.resolve(entry.file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        reason = "not found" if isinstance(exc, FileNotFoundError) else f"cannot be read ({exc})"
        message = f"file {str(path)!r} {reason} (paths are relative to the config file)"
        if located is None:
            raise ConfigError(
                [ConfigIssue(str(path), None, None, f"{where}.file", message)]
            ) from None
        raise ConfigError([located.issue((*_loc(where), "file"), message)]) from None
    return ScriptSource(text=text, filename=str(path), key=where, file=str(path))


def _loc(where: str) -> tuple[int | str, ...]:
    return tuple(int(part) if part.isdigit() else part for part in where.split("."))


def _inline(text: str, where: str, located: Located | None) -> ScriptSource:
    if located is None:
        return ScriptSource(text=text, filename=f"<{where}>", key=where, file=f"<{where}>")
    loc = (*_loc(where), "source")
    place = _inline_place(located.file, loc)
    if place is None:  # not found again: the key's line, from the loader
        place = (located.issue(loc, "").line or 1, 0, False)
    first_line, indent, verbatim = place
    return ScriptSource(
        text=text,
        filename=f"{located.file}:{where}",
        key=where,
        file=located.file,
        first_line=first_line,
        indent=indent,
        verbatim=verbatim,
    )


def _inline_place(file: str, loc: tuple[int | str, ...]) -> tuple[int, int, bool] | None:
    """``(first line, indentation, verbatim)`` of the text at ``loc`` in ``file``, if found.

    Only a literal block (``|``) or a one-line scalar keeps the source's lines as they are.
    """
    try:
        config_text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        return None
    node: Any = _compose(config_text)
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        else:
            return None
    if not isinstance(node, yaml.ScalarNode):
        return None
    start, one_line = node.start_mark, "\n" not in node.value.strip("\n")
    if node.style in ("|", ">"):  # a block: the text starts on the line after the indicator
        lines = config_text.splitlines()[start.line + 1 :]
        first = next((line for line in lines if line.strip()), "")
        indent = len(first) - len(first.lstrip(" "))
        return start.line + 2, indent, node.style == "|" or one_line
    return start.line + 1, start.column + (node.style is not None), one_line


@functools.lru_cache(maxsize=2)
def _compose(text: str) -> yaml.Node | None:
    """The YAML tree of a config (composed once for all its inline sources)."""
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None


def parse_source(source: ScriptSource) -> ast.Module:
    """The syntax tree of ``source``.

    Raises:
        ConfigError: The source is not valid Python, at the line and column of the error.
    """
    try:
        return ast.parse(source.text, filename=source.filename)
    except SyntaxError as exc:
        message = f"invalid Python: {exc.msg}"
        raise ConfigError([source.issue(message, exc.lineno or 1, exc.offset)]) from None


def run_schema(source: ScriptSource) -> dict[str, Any]:
    """The JSON Schema of a script's arguments, from ``def run(...)``'s parameters.

    ``str``, ``int``, ``float``, ``bool``, ``list[X]``, ``dict[str, X]``, ``X | None``,
    ``Optional[X]``, ``Union[...]`` and ``Literal[...]`` are understood; an unannotated parameter
    takes any value; one with a default is optional. Parameter descriptions come from the
    docstring's ``Args:`` section. Unknown keys are refused.

    Raises:
        ConfigError: The source does not parse, has no ``run``, or an annotation has no JSON
            Schema, at its line.
    """
    run = _run_function(source)
    try:
        return run_input_schema(run)
    except AnnotationError as exc:
        raise ConfigError([source.problem(exc.problem)]) from None


def run_description(source: ScriptSource) -> str | None:
    """The first paragraph of ``run``'s docstring (the description when the config gives none).

    Raises:
        ConfigError: The source does not parse, or has no ``run``.
    """
    return run_docs(_run_function(source))[0]


def _run_function(source: ScriptSource) -> ast.FunctionDef | ast.AsyncFunctionDef:
    tree = parse_source(source)
    run = find_function(tree, "run")
    if run is None:
        raise ConfigError([source.problem(entry_problems(tree, "script", schema=False)[0])])
    return run


def check_sources(config: GatewayConfig, located: Located | None = None) -> list[ConfigIssue]:
    """Every problem of every script (of enabled script servers) and hook of ``config``.

    Syntax errors; a script without ``run`` or whose parameters have no JSON Schema; a hook
    without ``before_call``/``after_call`` or with other parameters; imports and builtins the
    sandbox lacks (asked of Monty once; skipped if it cannot start); ``tools.X`` names no tool
    can have. Nothing is run.

    Args:
        config: The gateway config.
        located: Its positions, so that issues of inline sources point into the config file.
    """
    entries = list(_entries(config))
    found: list[list[ConfigIssue]] = [[] for _ in entries]  # by entry, in config order
    parsed: list[tuple[int, ScriptSource, ast.Module, Kind, bool]] = []
    for index, (where, entry, kind) in enumerate(entries):
        try:
            source = read_source(config, entry, where, located)
            tree = parse_source(source)
        except ConfigError as exc:
            found[index] += exc.issues
            continue
        need_schema = isinstance(entry, ScriptConfig) and entry.input_schema is None
        parsed.append((index, source, tree, kind, need_schema))
    usages = [Usage.of(tree) for _, _, tree, _, _ in parsed]
    support = probe_sandbox(  # one question to Monty for every source
        {statement for usage in usages for statement, _ in usage.imports},
        {name.id for usage in usages for name in usage.names},
    )
    for (index, source, tree, kind, need_schema), usage in zip(parsed, usages, strict=True):
        problems = entry_problems(tree, kind, schema=need_schema)
        problems += sandbox_problems(usage, support)
        problems.sort(key=lambda p: (p.line, p.column or 0))
        found[index] += [source.problem(p) for p in problems]
    return [issue for issues in found for issue in issues]


def _entries(config: GatewayConfig) -> Iterator[tuple[str, SourceConfig, Kind]]:
    """``(key, entry, kind)`` of each script of an enabled script server, then of each hook."""
    for i, server in enumerate(config.servers):
        if server.transport == "script" and server.enabled:
            for j, script in enumerate(server.scripts):
                yield f"servers.{i}.scripts.{j}", script, "script"
    for k, hook in enumerate(config.hooks):
        yield f"hooks.{k}", hook, "hook"

"""Strict YAML files validated by pydantic models, every error located by file, line and key."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from toolsets.errors import ConfigError, ConfigIssue

__all__ = ["Located", "load_yaml", "load_yaml_with_issues", "parse_model", "read_located"]

M = TypeVar("M", bound=BaseModel)
Loc = tuple[int | str, ...]


class Located:
    """YAML data plus the position of every key and value, by path."""

    def __init__(self, file: str, data: Any, marks: dict[Loc, tuple[int, int]]) -> None:
        self.file = file
        self.data = data
        self.marks = marks

    def issue(self, loc: Loc, message: str) -> ConfigIssue:
        """An issue at ``loc``, positioned at the nearest known ancestor."""
        probe = tuple(loc)
        while probe and probe not in self.marks:
            probe = probe[:-1]
        line, column = self.marks.get(probe, (None, None))
        key = ".".join(str(p) for p in loc)
        return ConfigIssue(self.file, line, column, key, message)


def _walk(node: yaml.Node, loc: Loc, marks: dict[Loc, tuple[int, int]], issues: list[Loc]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            child = (*loc, key)
            marks[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if key in seen:
                issues.append(child)
            seen.add(key)
            _walk(value_node, child, marks, issues)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*loc, index)
            marks[child] = (item.start_mark.line + 1, item.start_mark.column + 1)
            _walk(item, child, marks, issues)


def load_yaml_with_issues(text: str, file: str) -> tuple[Located, list[ConfigIssue]]:
    """Like `load_yaml`, but duplicate keys are returned as issues (the last value wins).

    Lets a caller report duplicate keys together with the validation errors of the same file.

    Raises:
        ConfigError: When the text is not valid YAML.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text) if root is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        column = mark.column + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(
            [ConfigIssue(file, line, column, "", f"invalid YAML: {problem}")]
        ) from None
    marks: dict[Loc, tuple[int, int]] = {}
    duplicates: list[Loc] = []
    if root is not None:
        marks[()] = (root.start_mark.line + 1, root.start_mark.column + 1)
        _walk(root, (), marks, duplicates)
    located = Located(file, data, marks)
    return located, [located.issue(loc, "duplicate key") for loc in duplicates]


def load_yaml(text: str, file: str) -> Located:
    """Parse ``text`` with the safe loader, recording positions; duplicate keys are errors."""
    located, duplicates = load_yaml_with_issues(text, file)
    if duplicates:
        raise ConfigError(duplicates)
    return located


def _message(error: Any) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown key"
    if error["type"] == "missing":
        return "required key is missing"
    return str(error["msg"])


def parse_model(located: Located, model: type[M], error_type: type[ConfigError] = ConfigError) -> M:
    """Validate located data against ``model``; all errors are reported at once."""
    try:
        return model.model_validate(located.data if located.data is not None else {})
    except ValidationError as exc:
        # "[key]": pydantic's marker for a bad mapping key; the key's own position locates it
        locs = [tuple(p for p in e["loc"] if p != "[key]") for e in exc.errors()]
        issues = [
            located.issue(loc, _message(e)) for loc, e in zip(locs, exc.errors(), strict=True)
        ]
        raise error_type(issues) from None


def read_located(path: str | Path, error_type: type[ConfigError] = ConfigError) -> Located:
    """Read and parse a YAML file, with positions; an unreadable file is a located error."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise error_type(
            [ConfigIssue(file, None, None, "", f"cannot read: {exc.strerror}")]
        ) from None
    return load_yaml(text, file)

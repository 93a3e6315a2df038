"""`Preview`: a rule's read-only tool an approver sees the result of beside a held call, e.g. the
current file before a write (``preview: {tool: files__read_file, args: {path: "{args.path}"}}``).

Each argument is a literal, or a template whose ``{args.NAME}`` (``{args.a.b}``) is the held
call's argument: a value that is only that placeholder keeps the argument's own type; mixed
with text it is spliced in as text. The gateway runs the preview under policy as the caller
(`gateway.approvals.preview`); a preview the policy does not allow shows as not run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import Field

from policies._fields import Strict

__all__ = ["Preview", "PreviewModel"]

_PLACEHOLDER: Final = re.compile(r"\{args((?:\.[A-Za-z_][A-Za-z0-9_-]*)+)\}")


class PreviewModel(Strict):
    """``preview`` on an ``ask`` rule: a read-only tool run for the approver, its arguments
    mapped from the held call's."""

    tool: str = Field(description="Exposed name of the read-only tool to run.")
    args: dict[str, Any] = Field(
        default_factory=dict,
        description="Its arguments; '{args.NAME}' in a value is the held call's argument.",
    )


@dataclass(frozen=True, slots=True)
class Preview:
    """A compiled `PreviewModel`."""

    tool: str
    args: Mapping[str, Any]

    def arguments(self, held: Mapping[str, Any]) -> dict[str, Any]:
        """The preview's arguments for a held call whose arguments are ``held`` (a missing
        argument is None, or empty text inside a template)."""
        return {name: _mapped(value, held) for name, value in self.args.items()}


def _mapped(value: Any, held: Mapping[str, Any]) -> Any:
    if isinstance(value, dict):
        return {k: _mapped(v, held) for k, v in value.items()}
    if isinstance(value, list):
        return [_mapped(v, held) for v in value]
    if not isinstance(value, str):
        return value
    whole = _PLACEHOLDER.fullmatch(value)
    if whole is not None:
        return _lookup(held, whole[1])
    return _PLACEHOLDER.sub(lambda m: _text(_lookup(held, m[1])), value)


def _lookup(held: Mapping[str, Any], path: str) -> Any:
    value: Any = held
    for part in path.strip(".").split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _text(value: Any) -> str:
    return "" if value is None else str(value)

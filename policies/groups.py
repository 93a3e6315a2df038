"""Tool groups across layered files, and the exact tool names policy options refer to.

``groups: {NAME: [TOOL, ...]}`` hides its tools until the group is loaded in the session (the
gateway's ``load_NAME`` tool). Later files add groups; a group defined again with other tools is
a located load error. ``unlock_after``, ``lock_after``, ``require_first`` and group members name
exact exposed tools, checked against the catalogue once the gateway knows it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from toolsets.errors import ConfigIssue

if TYPE_CHECKING:
    from policies.loader import LoadedFile

__all__ = [
    "GROUP_TOOL_PREFIX",
    "ToolReference",
    "group_conflicts",
    "group_tool_name",
    "merge_groups",
    "tool_references",
    "unknown_tools",
]

GROUP_TOOL_PREFIX: Final = "load_"
"""The gateway names the tool that loads group ``NAME`` ``load_NAME``."""


def group_tool_name(group: str) -> str:
    """The name of the tool that loads ``group``."""
    return GROUP_TOOL_PREFIX + group


def _where(issue: ConfigIssue) -> str:
    return f"{issue.file}:{issue.line}" if issue.line is not None else issue.file


def group_conflicts(files: Sequence[LoadedFile]) -> list[ConfigIssue]:
    """One located issue per group defined again, in a later file, with other tools."""
    first: dict[str, tuple[frozenset[str], ConfigIssue]] = {}
    issues = []
    for loaded in files:
        for name, tools in loaded.policy.groups.items():
            here = loaded.located.issue(("groups", name), "")
            if name not in first:
                first[name] = (frozenset(tools), here)
            elif frozenset(tools) != first[name][0]:
                message = (
                    f"group {name!r} is already defined with other tools "
                    f"at {_where(first[name][1])}"
                )
                issues.append(dataclasses.replace(here, message=message))
    return issues


def merge_groups(files: Sequence[LoadedFile]) -> dict[str, tuple[str, ...]]:
    """Every group of every file (as first defined), its tools without repeats."""
    groups: dict[str, tuple[str, ...]] = {}
    for loaded in files:
        for name, tools in loaded.policy.groups.items():
            groups.setdefault(name, tuple(dict.fromkeys(tools)))
    return groups


@dataclass(frozen=True, slots=True)
class ToolReference:
    """An exact tool name in a policy file.

    Attributes:
        name: The tool name.
        where: Its location (an issue with an empty message), e.g. key ``rules.3.unlock_after.0``.
    """

    name: str
    where: ConfigIssue


def _references(loaded: LoadedFile) -> Iterator[tuple[str, tuple[int | str, ...]]]:
    for index, rule in enumerate(loaded.policy.rules):
        for option in ("unlock_after", "lock_after"):
            for position, name in enumerate(getattr(rule, option) or ()):
                yield name, ("rules", index, option, position)
        if rule.require_first is not None:
            yield rule.require_first, ("rules", index, "require_first")
    for group, tools in loaded.policy.groups.items():
        for position, name in enumerate(tools):
            yield name, ("groups", group, position)


def tool_references(files: Sequence[LoadedFile]) -> tuple[ToolReference, ...]:
    """Every exact tool name the files' options name, located; by file, then position."""
    found: list[ToolReference] = []
    for loaded in files:
        here = [
            ToolReference(name, loaded.located.issue(loc, "")) for name, loc in _references(loaded)
        ]
        found.extend(sorted(here, key=lambda ref: (ref.where.line or 0, ref.where.column or 0)))
    return tuple(found)


def unknown_tools(references: Sequence[ToolReference], known: Collection[str]) -> list[ConfigIssue]:
    """One located issue ``unknown tool 'x'`` per reference to a name not in ``known``."""
    return [
        dataclasses.replace(ref.where, message=f"unknown tool {ref.name!r}")
        for ref in references
        if ref.name not in known
    ]

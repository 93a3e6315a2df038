"""`SessionLabels`: the data-flow labels a session has touched, and the calls that brought each in.

A label (``private``, ``untrusted``, any name) enters a session when a call of a tool that
carries it succeeds, or when an inspector finds it in a result. Labels only grow: an approver
clears them (`SessionLabels.clear`), never the agent. For each label the last
`SOURCES_PER_LABEL` calls that brought it in are kept, so a refusal can name them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "LABEL_NAME_RE",
    "SOURCES_PER_LABEL",
    "LabelSource",
    "SessionLabels",
    "label_problem",
    "merge_labels",
]

SOURCES_PER_LABEL: Final = 5
"""Calls remembered per label (the most recent ones)."""

LABEL_NAME_RE: Final = re.compile(r"[a-z0-9][a-z0-9_.:-]{0,63}")
"""A label name: lower-case letters, digits and ``_.:-``, up to 64."""


def label_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a label, or None."""
    if LABEL_NAME_RE.fullmatch(name):
        return None
    return f"invalid label {name!r} (lower-case letters, digits and '_.:-', up to 64)"


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelSource:
    """One call that brought a label into the session.

    Attributes:
        call_id: The call's id (events and audit entries carry it).
        tool: What brought it in: the exposed tool name (or ``resource:URI``, ``prompt:NAME``).
        at: When, in seconds since the epoch.
    """

    call_id: str
    tool: str
    at: float

    def to_json(self) -> dict[str, Any]:
        return {"call_id": self.call_id, "tool": self.tool, "at": self.at}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LabelSource:
        return cls(call_id=str(data["call_id"]), tool=str(data["tool"]), at=float(data["at"]))


class SessionLabels:
    """The labels of one session, each with the (bounded) list of calls that brought it in."""

    __slots__ = ("_sources",)

    def __init__(self) -> None:
        self._sources: dict[str, list[LabelSource]] = {}

    @property
    def names(self) -> frozenset[str]:
        """The labels the session carries."""
        return frozenset(self._sources)

    def sources(self, label: str) -> tuple[LabelSource, ...]:
        """The calls that brought ``label`` in, oldest first (empty when it is not carried)."""
        return tuple(self._sources.get(label, ()))

    def add(self, labels: Iterable[str], source: LabelSource) -> frozenset[str]:
        """Add ``labels`` brought in by ``source``; returns those the session did not carry.

        Raises:
            ValueError: When a name is not a valid label (see `label_problem`).
        """
        names = sorted(set(labels))
        for name in names:
            if (problem := label_problem(name)) is not None:
                raise ValueError(problem)
        new = frozenset(name for name in names if name not in self._sources)
        for name in names:
            kept = self._sources.setdefault(name, [])
            if not any(s.call_id == source.call_id for s in kept):
                kept.append(source)
                del kept[:-SOURCES_PER_LABEL]
        return new

    def clear(self, labels: Iterable[str] | None = None) -> frozenset[str]:
        """Drop ``labels`` (None: every label); returns those that were carried."""
        names = set(self._sources) if labels is None else set(labels) & set(self._sources)
        for name in names:
            del self._sources[name]
        return frozenset(names)

    def cel_sources(self) -> dict[str, list[str]]:
        """Label -> the tools that brought it in, distinct, oldest first
        (``session.label_sources``)."""
        return {
            name: list(dict.fromkeys(s.tool for s in kept))
            for name, kept in sorted(self._sources.items())
        }

    def describe(self, labels: Iterable[str]) -> str:
        """A sentence part naming the calls that brought ``labels`` in, e.g. ``untrusted via
        web__fetch and private via files__read`` (labels not carried are left out)."""
        parts = []
        for name in sorted(set(labels)):
            tools = self.cel_sources().get(name)
            if tools:
                parts.append(f"{name} via {', '.join(tools)}")
        return " and ".join(parts)

    def to_json(self) -> dict[str, list[dict[str, Any]]]:
        return {name: [s.to_json() for s in kept] for name, kept in sorted(self._sources.items())}

    @classmethod
    def from_json(cls, data: Mapping[str, Iterable[Mapping[str, Any]]]) -> SessionLabels:
        """The labels `to_json` wrote (each list cut to its last `SOURCES_PER_LABEL`).

        Raises:
            KeyError, TypeError, ValueError: When ``data`` is not such a value.
        """
        labels = cls()
        for name, kept in data.items():
            if (problem := label_problem(name)) is not None:
                raise ValueError(problem)
            labels._sources[name] = [LabelSource.from_json(s) for s in kept][-SOURCES_PER_LABEL:]
        return labels

    def __repr__(self) -> str:
        return f"SessionLabels({sorted(self._sources)})"


StoredLabels = Mapping[str, list[dict[str, Any]]]


def merge_labels(
    base: StoredLabels, mine: StoredLabels, theirs: StoredLabels
) -> dict[str, list[dict[str, Any]]]:
    """``theirs`` (the stored labels, `SessionLabels.to_json` form) plus what changed from
    ``base`` to ``mine``: labels ``mine`` added or got new sources for are added, labels it
    cleared are dropped (a label another replica brought in meanwhile stays)."""
    out = {name: list(kept) for name, kept in theirs.items()}
    for name in set(base) - set(mine):
        out.pop(name, None)
    for name, kept in mine.items():
        old = {s["call_id"] for s in base.get(name, ())}
        merged = out.setdefault(name, [])
        seen = {s["call_id"] for s in merged}
        merged.extend(s for s in kept if s["call_id"] not in old | seen)
        merged.sort(key=lambda s: s["at"])
        del merged[:-SOURCES_PER_LABEL]
    return dict(sorted(out.items()))

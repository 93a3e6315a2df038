"""`SessionState`: what earlier calls in one downstream session look like to policy conditions."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from policies.session_labels import LabelSource, SessionLabels
from toolsets.canonical import canonical_json, sha256_hex

__all__ = ["HISTORY_LIMIT", "GateKey", "LabelSource", "SessionState"]

HISTORY_LIMIT: Final = 200
"""Calls kept in `SessionState.history`; older ones are dropped first."""

GateKey = tuple[frozenset[str], frozenset[str]]
"""`SessionState.gate_key`: the tools that succeeded, and the loaded groups."""


class _Stored(BaseModel):
    """The JSON form of a `SessionState` (unknown keys are ignored: newer writers may add some)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    calls: int = Field(0, ge=0)
    tool_calls: dict[str, int] = Field(default_factory=dict)
    succeeded: dict[str, int] = Field(default_factory=dict)
    last_args: dict[str, dict[str, Any]] = Field(default_factory=dict)
    groups: list[str] = Field(default_factory=list)
    variables: dict[str, Any] = Field(default_factory=dict)
    history: list[dict[str, Any]] = Field(default_factory=list)
    labels: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    tenant: str | None = None


def _args_digest(args: Mapping[str, Any]) -> str | None:
    """SHA-256 of the canonical JSON of ``args``; None when they are not JSON (e.g. NaN)."""
    try:
        return sha256_hex(dict(args))
    except (TypeError, ValueError):
        return None


def _json_copy(value: Any, what: str) -> Any:
    try:
        return json.loads(canonical_json(value))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not a JSON value: {exc}") from None


class SessionState:
    """Per downstream session state, owned by the gateway and read by CEL as ``session``.

    Attributes:
        id: The session id (``session.id``).
        calls: Number of answered calls (``session.calls``).
        tool_calls: Answered calls per exposed tool name (``session.tool_calls``).
        succeeded: Calls per exposed tool name whose result was not an error
            (``session.succeeded``); what ``unlock_after``, ``lock_after`` and ``require_first``
            read.
        last_args: Arguments of the last answered call per tool name (``session.last_args``).
        groups: Tool groups loaded in this session (``session.groups``, a sorted list in CEL).
        variables: JSON values kept for the session (not visible to CEL).
        history: The last `HISTORY_LIMIT` calls, oldest first, each
            ``{"tool": NAME, "args_sha256": HEX or None, "ok": BOOL}``.
        label_book: The data-flow labels the session touched, with the calls that brought
            each in (``session.labels``, ``session.label_sources``); `labels` is their names.
        tenant: The tenant of the session's caller (set as calls are recorded): only its
            approvers see and clear the session's labels.
    """

    __slots__ = (
        "calls",
        "groups",
        "history",
        "id",
        "label_book",
        "last_args",
        "succeeded",
        "tenant",
        "tool_calls",
        "variables",
    )

    def __init__(self, id: str) -> None:
        self.id = id
        self.calls = 0
        self.tool_calls: dict[str, int] = {}
        self.succeeded: dict[str, int] = {}
        self.last_args: dict[str, Mapping[str, Any]] = {}
        self.groups: set[str] = set()
        self.variables: dict[str, Any] = {}
        self.history: list[dict[str, Any]] = []
        self.label_book = SessionLabels()
        self.tenant: str | None = None

    def record(self, tool_name: str, args: Mapping[str, Any], *, ok: bool = True) -> None:
        """Count one answered call of ``tool_name``; ``ok``: its result was not an error.

        Remembers a shallow copy of its arguments and appends it to ``history``.
        """
        self.calls += 1
        self.tool_calls[tool_name] = self.tool_calls.get(tool_name, 0) + 1
        if ok:
            self.succeeded[tool_name] = self.succeeded.get(tool_name, 0) + 1
        self.last_args[tool_name] = dict(args)
        self.history.append({"tool": tool_name, "args_sha256": _args_digest(args), "ok": ok})
        if len(self.history) > HISTORY_LIMIT:
            del self.history[: len(self.history) - HISTORY_LIMIT]

    @property
    def labels(self) -> frozenset[str]:
        """The labels the session carries."""
        return self.label_book.names

    def add_labels(self, labels: Iterable[str], source: LabelSource) -> frozenset[str]:
        """Add ``labels``, brought in by the call ``source``; returns the ones that are new.

        Raises:
            ValueError: When a name is not a valid label.
        """
        return self.label_book.add(labels, source)

    def clear_labels(self, labels: Iterable[str] | None = None) -> frozenset[str]:
        """Drop ``labels`` (None: all); returns those that were carried. Only an approver's
        action calls this, never the agent's."""
        return self.label_book.clear(labels)

    def has_succeeded(self, tool_name: str) -> bool:
        """Whether a call of ``tool_name`` succeeded in this session."""
        return self.succeeded.get(tool_name, 0) > 0

    def load_group(self, name: str) -> bool:
        """Load the tool group ``name``; True when it was not loaded yet."""
        if name in self.groups:
            return False
        self.groups.add(name)
        return True

    def get_variable(self, name: str, default: Any = None) -> Any:
        """A copy of the variable ``name``, or ``default`` when it is not set."""
        if name not in self.variables:
            return default
        return _json_copy(self.variables[name], f"variable {name!r}")

    def set_variable(self, name: str, value: Any) -> None:
        """Store a copy of the JSON ``value`` as ``name``.

        Raises:
            ValueError: When ``value`` is not a JSON value.
        """
        self.variables[name] = _json_copy(value, f"variable {name!r}")

    def remove_variable(self, name: str) -> bool:
        """Forget the variable ``name``; True when it was set."""
        return self.variables.pop(name, _MISSING) is not _MISSING

    def cel_value(self, fields: frozenset[str] | None = None) -> dict[str, Any]:
        """The value CEL sees as ``session``; only ``fields`` of it when given (conditions
        read a few, and building the others is the cost)."""
        parts: dict[str, Callable[[], Any]] = {
            "id": lambda: self.id,
            "calls": lambda: self.calls,
            "tool_calls": lambda: self.tool_calls,
            "succeeded": lambda: self.succeeded,
            "last_args": lambda: self.last_args,
            "groups": lambda: sorted(self.groups),
            "labels": lambda: sorted(self.label_book.names),
            "label_sources": self.label_book.cel_sources,
        }
        wanted = parts if fields is None else [name for name in fields if name in parts]
        return {name: parts[name]() for name in wanted}

    def gate_key(self) -> GateKey:
        """What session gates read: the tools that succeeded, and the loaded groups.

        Under one policy, sessions with equal keys pass the same ``unlock_after``,
        ``lock_after``, ``require_first`` and ``groups`` gates. Listing rules whose conditions
        read ``session`` may read more: `PolicyEngine.session_key` covers those too.
        """
        done = frozenset(name for name, count in self.succeeded.items() if count > 0)
        return done, frozenset(self.groups)

    def to_json(self) -> dict[str, Any]:
        """Everything, as JSON-ready data (`from_json` reads it back)."""
        return {
            "id": self.id,
            "calls": self.calls,
            "tool_calls": dict(self.tool_calls),
            "succeeded": dict(self.succeeded),
            "last_args": {name: dict(args) for name, args in self.last_args.items()},
            "groups": sorted(self.groups),
            "variables": dict(self.variables),
            "history": [dict(entry) for entry in self.history],
            "labels": self.label_book.to_json(),
            "tenant": self.tenant,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionState:
        """The state `to_json` wrote.

        Raises:
            ValueError: When ``data`` is not such a value (a pydantic ``ValidationError``).
        """
        stored = _Stored.model_validate(data)
        state = cls(stored.id)
        state.calls = stored.calls
        state.tool_calls = dict(stored.tool_calls)
        state.succeeded = dict(stored.succeeded)
        state.last_args = dict(stored.last_args)
        state.groups = set(stored.groups)
        state.variables = dict(stored.variables)
        state.history = list(stored.history[-HISTORY_LIMIT:])
        state.tenant = stored.tenant
        try:
            state.label_book = SessionLabels.from_json(stored.labels)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"session {stored.id!r}: unreadable labels: {exc!r}") from None
        return state

    def __repr__(self) -> str:
        return (
            f"SessionState(id={self.id!r}, calls={self.calls}, groups={sorted(self.groups)}, "
            f"labels={sorted(self.labels)})"
        )


_MISSING: Final = object()

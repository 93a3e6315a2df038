"""What every content inspector is: something that scans one text for one side of one call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gateway.inspectors.detectors import Span
from toolsets.errors import LockgateError
from toolsets.findings import Direction, FindingAction

__all__ = ["ContentInspector", "InspectorFailed", "Scan", "ScanRequest"]


class InspectorFailed(LockgateError):
    """An inspector could not give a verdict (unreachable, bad answer); ``on_error`` decides."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScanRequest:
    """Where a text comes from: the exposed tool, the side of the call, the caller's id."""

    tool: str
    direction: Direction
    principal: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Scan:
    """One inspector's answer for one text.

    Attributes:
        spans: What it found, in the text's character positions.
        labels: Session labels it asks for, whatever the spans.
        action: Its own suggested action (an external inspector's ``action``); None: none.
    """

    spans: tuple[Span, ...] = ()
    labels: frozenset[str] = frozenset()
    action: FindingAction | None = None


class ContentInspector(Protocol):
    """Scans a text; raises `InspectorFailed` when it cannot answer."""

    async def scan(self, text: str, request: ScanRequest) -> Scan: ...

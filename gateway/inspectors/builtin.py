"""`BuiltinInspector`: lockgate's own detectors (`gateway.inspectors.detectors`), in-process."""

from __future__ import annotations

import re
from collections.abc import Iterable

from gateway.inspectors.base import Scan, ScanRequest
from gateway.inspectors.detectors import DETECTORS, Detector, Span

__all__ = ["BuiltinInspector"]

RESULTS_ONLY = frozenset({"prompt-injection"})
"""Detectors that look at results only (an agent's arguments are not content it read)."""
DIGITS_NEEDED = frozenset({"card", "iban", "national-id", "phone"})
"""Detectors whose every match holds a digit: a text without one skips them."""
_DIGIT = re.compile(r"\d")


class BuiltinInspector:
    """Runs the named detectors in precedence order; overlapping later spans are dropped."""

    def __init__(self, detectors: Iterable[str]) -> None:
        chosen = set(detectors)
        self.detectors: tuple[tuple[str, Detector], ...] = tuple(
            (name, detect) for name, detect in DETECTORS.items() if name in chosen
        )

    async def scan(self, text: str, request: ScanRequest) -> Scan:
        spans: list[Span] = []
        digits = _DIGIT.search(text) is not None
        for name, detect in self.detectors:
            if name in RESULTS_ONLY and request.direction != "results":
                continue
            if name in DIGITS_NEEDED and not digits:
                continue
            for span in detect(text):
                if not any(span.start < kept.end and kept.start < span.end for kept in spans):
                    spans.append(span)
        return Scan(spans=tuple(sorted(spans, key=lambda span: span.start)))
